"""Messages to and from the :class:`~actors.controller.actor.ControllerActor`.

``msgspec.Struct``s (Thespian's multiproc bases pickle every message) on the shared ``_Msg`` base
(equality by fields, a bounded repr). Payloads are the pure model's frozen
dataclasses (:mod:`actors.controller.topics`, :mod:`actors.controller.frontiers`,
:mod:`actors.controller.state`), which pickle as they are. Errors travel as Kafka error names.

Every request may also be answered with :class:`actors.messages.NotReady` (the controller has not
finished recovery: COORDINATOR_LOAD_IN_PROGRESS / retriable on the wire) or
:class:`actors.messages.Failure` (``error``, ``message``) when the event log refused the append
(``UNKNOWN_SERVER_ERROR``, or ``NOT_CONTROLLER`` when another writer advanced the stream).

=============================  ===================================================================
request                        reply
=============================  ===================================================================
CreateTopicsRequest            CreateTopicsReply(results: list[CreateTopicResult])
DeleteTopicsRequest            DeleteTopicsReply(results: list[DeleteTopicResult])
MetadataRequest                MetadataReply(cluster_id, controller_id, brokers, topics)
DescribeConfigsRequest         DescribeConfigsReply(results: list[ConfigResult])
IncrementalAlterConfigsRequest IncrementalAlterConfigsReply(results: list[ConfigResult])
ElectLeadersRequest            PartitionResults(results: list[PartitionResult])
AlterPartitionRequest          PartitionResults
AlterPartitionReassignmentsRequest  PartitionResults (one per entry, request order)
ListPartitionReassignmentsRequest   ListPartitionReassignmentsReply(reassignments)
BrokerFailedNotice             PartitionResults
ReadHoldsChange                FrontierReply
FrontierUpdates                FrontierReply
FrontierCommand                FrontierReply
FrontiersRequest               FrontiersReply(frontiers: {collection_id: (since, upper)})
SubscribeFrontiers             FrontierReply(ok) now; then SinceAdvanced on every since change
ChildLookup                    ChildAddress once the child answered Configured; Failure otherwise
RegisterChildKind              ChildKindRegistered
StopChild                      ChildStopped once it exited
StateDumpRequest               StateDump(version, state: the JSON-able dict of the evented state)
AlterUserScramCredentialsRequest    AlterUserScramCredentialsReply(results: tuple[AlterResult])
DescribeUserScramCredentialsRequest DescribeUserScramCredentialsReply(results: tuple[DescribeResult])
ScramCredentialsRequest        ScramCredentialsReply(credentials: ((user, mechanism, ScramCredential), …))
StatusRequest                  StatusReply(name, ready, counts)
CreateAclsRequest              CreateAclsReply(results: tuple[AclCreateResult, ...], token)
DeleteAclsRequest              DeleteAclsReply(results: tuple[AclDeleteResult, ...], token)
AclsRequest                    AclsReply(token, acls: tuple[AclBinding, ...] | None)
=============================  ===================================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from actors.controller.acls import AclBinding, AclBindingFilter, AclCreateResult, AclDeleteResult
from actors.controller.scram import AlterResult, DescribeResult, ScramCredential, ScramDeletion, ScramUpsertion
from actors.messages import _Msg

__all__ = [
    "AdmitShareGroup",
    "ForgetShareGroup",
    "ShareGroupAdmitted",
    "CreatePartitionsReply",
    "CreatePartitionsRequest",
    "AlterUserScramCredentialsReply",
    "AlterUserScramCredentialsRequest",
    "DescribeUserScramCredentialsReply",
    "DescribeUserScramCredentialsRequest",
    "ScramCredentialsReply",
    "ScramCredentialsRequest",
    "AclsReply",
    "AclsRequest",
    "CreateAclsReply",
    "CreateAclsRequest",
    "DeleteAclsReply",
    "DeleteAclsRequest",
    "AllocateProducerIdsReply",
    "AllocateProducerIdsRequest",
    "AlterPartitionRequest",
    "AlterPartitionReassignmentsRequest",
    "BrokerFailedNotice",
    "ListPartitionReassignmentsReply",
    "ListPartitionReassignmentsRequest",
    "ChildAddress",
    "ChildKindRegistered",
    "ChildLookup",
    "ChildStopped",
    "CreateTopicsReply",
    "CreateTopicsRequest",
    "DeleteTopicsReply",
    "DeleteTopicsRequest",
    "DescribeConfigsReply",
    "DescribeConfigsRequest",
    "ElectLeadersRequest",
    "FrontierCommand",
    "FrontierReply",
    "FrontierUpdates",
    "FrontiersReply",
    "FrontiersRequest",
    "IncrementalAlterConfigsReply",
    "IncrementalAlterConfigsRequest",
    "MetadataReply",
    "MetadataRequest",
    "PartitionMetadata",
    "PartitionResults",
    "ReadHoldsChange",
    "RegisterChildKind",
    "SinceAdvanced",
    "StateDump",
    "StateDumpRequest",
    "StopChild",
    "SubscribeFrontiers",
    "TopicMetadata",
]


# --- topics and configs ---------------------------------------------------------------------


class CreateTopicsRequest(_Msg):
    """CreateTopics: ``topics`` (:class:`~actors.controller.topics.CreatableTopic`),
    ``validate_only``. Reply :class:`CreateTopicsReply` (per topic: NONE, TOPIC_ALREADY_EXISTS,
    INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG, INVALID_TOPIC_EXCEPTION,
    INVALID_REQUEST, INVALID_REPLICA_ASSIGNMENT)."""

    topics: Sequence[Any]
    validate_only: bool = False

    def __post_init__(self) -> None:
        self.topics = list(self.topics)


class CreateTopicsReply(_Msg):
    """Per-topic :class:`~actors.controller.topics.CreateTopicResult`, in request order."""

    results: Sequence[Any]

    def __post_init__(self) -> None:
        self.results = list(self.results)


class AllocateProducerIdsRequest(_Msg):
    """A broker's InitProducerId ran out of producer ids: allocate the next block to
    ``broker_id`` (Kafka's AllocateProducerIds). Reply :class:`AllocateProducerIdsReply`."""

    broker_id: int


class AllocateProducerIdsReply(_Msg):
    """``error`` (a Kafka error name or ``None``) and the block ``[first_producer_id,
    first_producer_id + block_size)``, persisted before this reply."""

    error: str | None
    first_producer_id: int = -1
    block_size: int = 0


class DeleteTopicsRequest(_Msg):
    """DeleteTopics by ``names`` and/or ``topic_ids`` (hex or Kafka base64). Reply
    :class:`DeleteTopicsReply` (per topic: NONE, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID)."""

    names: Sequence[str] = ()
    topic_ids: Sequence[str] = ()

    def __post_init__(self) -> None:
        self.names = list(self.names)
        self.topic_ids = list(self.topic_ids)


class DeleteTopicsReply(_Msg):
    """Per-topic :class:`~actors.controller.topics.DeleteTopicResult`."""

    results: Sequence[Any]

    def __post_init__(self) -> None:
        self.results = list(self.results)


class MetadataRequest(_Msg):
    """Metadata for ``topics`` (names; ``None`` = all) and/or ``topic_ids``.
    ``allow_auto_topic_creation``: create missing topics when ``auto.create.topics.enable`` (with
    ``num.partitions`` and ``default.replication.factor``). Reply :class:`MetadataReply`."""

    topics: Sequence[str] | None = None
    allow_auto_topic_creation: bool = False
    topic_ids: Sequence[str] = ()

    def __post_init__(self) -> None:
        self.topics = None if self.topics is None else list(self.topics)
        self.topic_ids = list(self.topic_ids)


class PartitionMetadata(_Msg):
    """One partition in a Metadata reply: ``error`` (``"NONE"``/``"LEADER_NOT_AVAILABLE"``),
    ``partition``, ``leader`` (-1 = none), ``leader_epoch``, ``replicas``, ``isr``,
    ``offline_replicas``."""

    error: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: Sequence[int]
    isr: Sequence[int]
    offline_replicas: Sequence[int] = ()

    def __post_init__(self) -> None:
        self.replicas = list(self.replicas)
        self.isr = list(self.isr)
        self.offline_replicas = list(self.offline_replicas)


class TopicMetadata(_Msg):
    """One topic in a Metadata reply: ``error`` (``"NONE"``, ``"UNKNOWN_TOPIC_OR_PARTITION"``,
    ``"INVALID_TOPIC_EXCEPTION"``, ``"UNKNOWN_TOPIC_ID"``), ``name``, ``topic_id`` (hex; Kafka
    base64 in ``topic_id_base64``; ``None`` when unknown), ``is_internal``, ``partitions``."""

    error: str
    name: str | None
    topic_id: str | None
    topic_id_base64: str | None
    is_internal: bool
    partitions: Sequence[PartitionMetadata]

    def __post_init__(self) -> None:
        self.partitions = list(self.partitions)


class MetadataReply(_Msg):
    """``cluster_id``, ``controller_id`` (node id), ``brokers`` (``(node_id, host, port, rack)``
    tuples) and ``topics`` (:class:`TopicMetadata`, in request order; sorted by name for all)."""

    cluster_id: str
    controller_id: int
    brokers: Sequence[tuple[int, str, int, str | None]]
    topics: Sequence[TopicMetadata]

    def __post_init__(self) -> None:
        self.brokers = list(self.brokers)
        self.topics = list(self.topics)


class DescribeConfigsRequest(_Msg):
    """DescribeConfigs: ``resources`` as ``(resource_type, name, keys_or_None)`` with type
    ``"TOPIC"`` or ``"BROKER"``; ``include_synonyms``. Reply :class:`DescribeConfigsReply`."""

    resources: Sequence[tuple[str, str, Sequence[str] | None]]
    include_synonyms: bool = False

    def __post_init__(self) -> None:
        self.resources = [(t, n, None if k is None else list(k)) for t, n, k in self.resources]


class DescribeConfigsReply(_Msg):
    """Per-resource :class:`~actors.controller.topics.ConfigResult` with ``entries``
    (:class:`~actors.controller.topics.ConfigEntry`: value, source, synonyms, type)."""

    results: Sequence[Any]

    def __post_init__(self) -> None:
        self.results = list(self.results)


class IncrementalAlterConfigsRequest(_Msg):
    """IncrementalAlterConfigs: ``resources``
    (:class:`~actors.controller.topics.AlterConfigResource`), ``validate_only``.
    Reply :class:`IncrementalAlterConfigsReply`."""

    resources: Sequence[Any]
    validate_only: bool = False

    def __post_init__(self) -> None:
        self.resources = list(self.resources)


class IncrementalAlterConfigsReply(_Msg):
    """Per-resource :class:`~actors.controller.topics.ConfigResult` (``error`` NONE,
    INVALID_CONFIG, INVALID_REQUEST, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION)."""

    results: Sequence[Any]

    def __post_init__(self) -> None:
        self.results = list(self.results)


# --- partitions -----------------------------------------------------------------------------


class ElectLeadersRequest(_Msg):
    """ElectLeaders: ``partitions`` (``(topic, partition)``; ``None`` = all), ``election``
    ``"preferred"`` or ``"unclean"``. Reply :class:`PartitionResults`."""

    partitions: Sequence[tuple[str, int]] | None = None
    election: str = "preferred"

    def __post_init__(self) -> None:
        self.partitions = None if self.partitions is None else [tuple(p) for p in self.partitions]


class AlterPartitionRequest(_Msg):
    """AlterPartition from a partition leader (``broker_id``) with the epochs it saw and the new
    ``isr``. Reply :class:`PartitionResults`."""

    topic: str
    partition: int
    broker_id: int
    leader_epoch: int
    partition_epoch: int
    isr: Sequence[int]

    def __post_init__(self) -> None:
        self.isr = list(self.isr)


@dataclass(frozen=True, slots=True)
class AlterPartitionReassignmentsRequest:
    """AlterPartitionReassignments (API 45, KIP-455): ``reassignments`` as ``(topic, partition,
    replicas)`` (``None`` replicas: cancel), decided by
    :class:`actors.controller.state.AlterPartitionReassignments` on the active controller (a
    standby answers ``Failure`` NOT_CONTROLLER). Reply :class:`PartitionResults`, one
    :class:`~actors.controller.state.PartitionResult` per entry in request order, once the
    ``PartitionChanged`` events are durable. The listener requires ALTER on CLUSTER first."""

    reassignments: tuple[tuple[str, int, tuple[int, ...] | None], ...]


@dataclass(frozen=True, slots=True)
class ListPartitionReassignmentsRequest:
    """ListPartitionReassignments (API 46, KIP-455) of ``partitions`` (``(topic, partition)``;
    ``None``: every reassigning partition). A query on the active controller (a standby answers
    ``Failure`` NOT_CONTROLLER). Reply :class:`ListPartitionReassignmentsReply`. The listener
    requires DESCRIBE on CLUSTER first."""

    partitions: tuple[tuple[str, int], ...] | None = None


@dataclass(frozen=True, slots=True)
class ListPartitionReassignmentsReply:
    """The reassigning partitions asked for
    (:class:`~actors.controller.state.OngoingReassignment`: interim replicas, adding, removing),
    sorted by topic and partition when all were asked for, else in request order."""

    reassignments: tuple[Any, ...]


class BrokerFailedNotice(_Msg):
    """Broker ``broker_id`` was fenced/died (membership). Reply :class:`PartitionResults` for the
    partitions whose leadership or ISR changed."""

    broker_id: int


class PartitionResults(_Msg):
    """Per-partition :class:`~actors.controller.state.PartitionResult`."""

    results: Sequence[Any]

    def __post_init__(self) -> None:
        self.results = list(self.results)


# --- frontiers ------------------------------------------------------------------------------


class ReadHoldsChange(_Msg):
    """``holder``'s read-hold deltas ``(collection_id, offset, delta)``. Reply
    :class:`FrontierReply`; errors CollectionMissing, SinceViolation, NegativeReadCapability,
    InvalidHolder (never written as events). Holders: ``tiering``, ``replay:<session>``,
    ``share:<group>`` (applied only with ``share.groups.hold.retention=true``: else
    ``ignored=True``)."""

    holder: str
    changes: Sequence[tuple[str, int, int]]

    def __post_init__(self) -> None:
        self.changes = [tuple(c) for c in self.changes]


class FrontierUpdates(_Msg):
    """Upper (high watermark) reports from partition logs: ``(collection_id, upper,
    segments_or_None)``; ``upper=None`` seals. ``segments``: the closed segments for retention,
    as :class:`events.controller.SegmentInfo` or plain ``(base_offset, next_offset, size_bytes,
    max_timestamp_ms)`` tuples. Reply :class:`FrontierReply`."""

    updates: Sequence[tuple[str, int | None, Any]]

    def __post_init__(self) -> None:
        self.updates = [tuple(u) for u in self.updates]


class FrontierCommand(_Msg):
    """Any :mod:`actors.controller.frontiers` command (``AcquireReadHolds``,
    ``DowngradeReadHold``, ``ReleaseHolder``, ``SetReadPolicies``, ``DeleteRecords``, ``DropCollections``,
    ``CreateCollections``, ``EnforceRetention``, ``PrepareExport`` …). Reply
    :class:`FrontierReply`."""

    command: Any


class FrontierReply(_Msg):
    """Outcome of a frontier command: ``ok``; on refusal ``error`` (model name), ``kafka_error``
    and ``message``; ``ignored`` for a share hold without the opt-in; ``since_changes``
    (``(collection_id, old, new)``) it caused."""

    ok: bool
    error: str | None = None
    kafka_error: str | None = None
    message: str | None = None
    ignored: bool = False
    since_changes: Sequence[tuple[str, int | None, int | None]] = ()

    def __post_init__(self) -> None:
        self.since_changes = [tuple(c) for c in self.since_changes]


class FrontiersRequest(_Msg):
    """Ask ``(since, upper)`` of ``collection_ids`` (``None`` = all). Reply
    :class:`FrontiersReply`; unknown ids are absent."""

    collection_ids: Sequence[str] | None = None

    def __post_init__(self) -> None:
        self.collection_ids = None if self.collection_ids is None else list(self.collection_ids)


class FrontiersReply(_Msg):
    """``frontiers``: collection id → ``(since, upper)`` (``None`` = ``{}``); ``dropped``: ids
    asked for that were dropped."""

    frontiers: dict[str, tuple[int | None, int | None]]
    dropped: Sequence[str] = ()

    def __post_init__(self) -> None:
        self.frontiers = dict(self.frontiers)
        self.dropped = list(self.dropped)


class SubscribeFrontiers(_Msg):
    """Subscribe the sender to :class:`SinceAdvanced` for collections whose id starts with
    ``prefix`` (``""`` = all): the partition log deletes segments, the tiering task deletes local
    copies, only below the since it is told."""

    prefix: str = ""


class SinceAdvanced(_Msg):
    """Notification (Materialize's ``AllowCompaction``): ``collection_id``'s since moved from
    ``old`` to ``new``; data below ``new`` may be deleted. ``new=None``: dropped, delete all."""

    collection_id: str
    old: int | None
    new: int | None


# --- supervision ----------------------------------------------------------------------------


class ChildLookup(_Msg):
    """Ask for the child of ``kind`` named ``name`` (e.g. ``("rlmm", "7")``, ``("consumer",
    group_id)``); ``create``: start it if absent. Reply :class:`ChildAddress` once the child
    answered ``Configured`` (it has recovered), or ``Failure`` (UNKNOWN_SERVER_ERROR: unknown
    kind, class not importable, configure failed; UNKNOWN_TOPIC_OR_PARTITION when absent and
    ``create`` is false). Share groups are not the controller's children: see
    :class:`AdmitShareGroup`."""

    kind: str
    name: str
    create: bool = True


class ChildAddress(_Msg):
    """The address of child ``(kind, name)`` and its ``restarts`` so far."""

    kind: str
    name: str
    address: Any
    restarts: int = 0


class RegisterChildKind(_Msg):
    """Register (or replace) child kind ``kind``: the actor class by dotted ``class_path``
    (importable by the Thespian admin process) and extra ``config`` merged into the controller's
    config for the child's ``Configure``. Reply :class:`ChildKindRegistered`."""

    kind: str
    class_path: str
    config: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.config = dict(self.config or {})


class ChildKindRegistered(_Msg):
    """Reply to :class:`RegisterChildKind`."""

    kind: str


@dataclass(frozen=True, slots=True)
class AdmitShareGroup:
    """May share group ``name`` run? The census of ``group.share.max.groups``: a group that exists
    (in the controller's census) is admitted even without ``create``; an unknown one without
    ``create`` is refused GROUP_ID_NOT_FOUND, and with ``create`` beyond the limit
    GROUP_MAX_SIZE_REACHED (:func:`actors.share.limits.admit_share_group`); an admitted new group
    joins the census. Reply :class:`ShareGroupAdmitted` or ``Failure``. The group's actor itself
    runs in the listener process (:mod:`actors.share.host`)."""

    name: str
    create: bool = True


@dataclass(frozen=True, slots=True)
class ShareGroupAdmitted:
    """Reply to :class:`AdmitShareGroup`: ``name`` is in the census."""

    name: str


class ForgetShareGroup(_Msg):
    """Share group ``name`` was deleted (DeleteGroups appended ``ShareGroupDeleted`` to its
    stream): drop it from the census (it no longer counts against ``group.share.max.groups``, and
    only a request that may create a group starts it again). Reply :class:`ChildStopped`."""

    name: str


class StopChild(_Msg):
    """Stop child ``(kind, name)`` on purpose (no restart). Reply :class:`ChildStopped` when it
    has exited (at once if it did not exist)."""

    kind: str
    name: str


class ChildStopped(_Msg):
    """Reply to :class:`StopChild`."""

    kind: str
    name: str


# --- audit ------------------------------------------------------------------------------------


class StateDumpRequest(_Msg):
    """Ask for the controller's whole evented state (audit, tests: "survives a restart
    exactly"). Reply :class:`StateDump`."""


class StateDump(_Msg):
    """The stream ``version`` folded and ``state``: ``ControllerState.to_dict()`` (topics with ids,
    partitions, epochs and config overrides; dynamic broker configs; every collection's
    frontiers, policy, capabilities and holds; dropped ids)."""

    version: int
    state: dict[str, Any]


# --- SCRAM credentials (KIP-554) --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AlterUserScramCredentialsRequest:
    """AlterUserScramCredentials (API 51): ``deletions`` and ``upsertions`` (the pure model's
    :class:`~actors.controller.scram.ScramDeletion` / :class:`~actors.controller.scram.ScramUpsertion`,
    mechanism as Kafka's type id). The controller derives the stored and server keys and appends
    the credential events before it replies :class:`AlterUserScramCredentialsReply`. With an
    authorizer on, the listener requires ALTER on CLUSTER first (Kafka ``KafkaApis``)."""

    deletions: tuple[ScramDeletion, ...] = ()
    upsertions: tuple[ScramUpsertion, ...] = ()


@dataclass(frozen=True, slots=True)
class AlterUserScramCredentialsReply:
    """One :class:`~actors.controller.scram.AlterResult` per user (accepted deletions, accepted
    upsertions, then errors), the events already durable."""

    results: tuple[AlterResult, ...]


@dataclass(frozen=True, slots=True)
class DescribeUserScramCredentialsRequest:
    """DescribeUserScramCredentials (API 50) of ``users`` (``None`` or empty: every user with a
    credential). A query: nothing is appended. Reply :class:`DescribeUserScramCredentialsReply`.
    With an authorizer on, the listener requires DESCRIBE on CLUSTER first."""

    users: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class DescribeUserScramCredentialsReply:
    """One :class:`~actors.controller.scram.DescribeResult` per user (mechanisms and iterations only)."""

    results: tuple[DescribeResult, ...]


@dataclass(frozen=True, slots=True)
class ScramCredentialsRequest:
    """Every stored SCRAM credential, for the listener's authentication cache
    (:meth:`wire.controller_client.ControllerClient.scram_credential`). Reply :class:`ScramCredentialsReply`."""


@dataclass(frozen=True, slots=True)
class ScramCredentialsReply:
    """``credentials``: ``(user, mechanism name, ScramCredential)`` sorted by user and mechanism,
    as of the controller stream ``version``."""

    version: int
    credentials: tuple[tuple[str, str, ScramCredential], ...]


# --- ACLs (CreateAcls 30, DeleteAcls 31, DescribeAcls 29 and the listeners' authorizer cache) -----


@dataclass(frozen=True, slots=True)
class CreateAclsRequest:
    """CreateAcls: ``creations`` (:class:`~actors.controller.acls.AclBinding`, enums by name) in
    request order. Reply :class:`CreateAclsReply`."""

    creations: tuple[AclBinding, ...]


@dataclass(frozen=True, slots=True)
class CreateAclsReply:
    """Per creation :class:`~actors.controller.acls.AclCreateResult` (request order), and the ACL
    ``token`` after the change (see :class:`AclsReply`)."""

    results: tuple[AclCreateResult, ...]
    token: str


@dataclass(frozen=True, slots=True)
class DeleteAclsRequest:
    """DeleteAcls: ``filters`` (:class:`~actors.controller.acls.AclBindingFilter`) in request
    order. Reply :class:`DeleteAclsReply`."""

    filters: tuple[AclBindingFilter, ...]


@dataclass(frozen=True, slots=True)
class DeleteAclsReply:
    """Per filter :class:`~actors.controller.acls.AclDeleteResult` (request order) and the ACL
    ``token`` after the change."""

    results: tuple[AclDeleteResult, ...]
    token: str


@dataclass(frozen=True, slots=True)
class AclsRequest:
    """Ask for the current ACLs unless they are still those of ``known_token`` (a token from an
    earlier :class:`AclsReply`; ``None`` = always send them). Reply :class:`AclsReply`."""

    known_token: str | None = None


@dataclass(frozen=True, slots=True)
class AclsReply:
    """``token``: names the ACL set (the controller incarnation and the changes applied to its
    ACL set: equal tokens, equal sets); ``acls``: every ACL (sorted), or ``None`` when the asker's
    token is current."""

    token: str
    acls: tuple[AclBinding, ...] | None


# --- topic admin: CreatePartitions (issue 16) -------------------------------------------------


@dataclass(frozen=True)
class CreatePartitionsRequest:
    """CreatePartitions: ``topics`` (:class:`~actors.controller.topics.CreatePartitionsTopic`),
    ``validate_only``. Reply :class:`CreatePartitionsReply`."""

    topics: tuple[Any, ...]
    validate_only: bool = False


@dataclass(frozen=True)
class CreatePartitionsReply:
    """Per-topic :class:`~actors.controller.topics.CreatePartitionsResult`, in request order."""

    results: tuple[Any, ...]


# --- the cluster: broker registration, heartbeats, the active controller (issue 15) ----------


@dataclass(frozen=True, slots=True)
class BrokerRegistrationRequest:
    """BrokerRegistration (API 62) as the active controller's listener received it:
    ``endpoints`` are :class:`~events.controller.BrokerEndpoint` in listener order. Reply
    :class:`BrokerRegistrationReply`; a controller that is not active answers NOT_CONTROLLER."""

    broker_id: int
    incarnation_id: str
    cluster_id: str
    endpoints: tuple[Any, ...]
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class BrokerRegistrationReply:
    """``error`` (Kafka error name or ``None``), ``message``, and the ``broker_epoch`` the
    registration got (-1 on error)."""

    error: str | None
    message: str | None
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class BrokerHeartbeatRequest:
    """BrokerHeartbeat (API 63): ``broker_epoch`` of the registration, ``want_fence``. Reply
    :class:`BrokerHeartbeatReply`."""

    broker_id: int
    broker_epoch: int
    want_fence: bool = False


@dataclass(frozen=True, slots=True)
class BrokerHeartbeatReply:
    """``error``, ``message``, ``is_fenced`` after the heartbeat was decided."""

    error: str | None
    message: str | None
    is_fenced: bool


@dataclass(frozen=True, slots=True)
class ClaimControllerRequest:
    """This node's broker lifecycle asks its ControllerActor to become the active controller
    over ``seen_epoch`` (no active controller yet, or the active one was unreachable for a whole
    ``broker.session.timeout.ms``); ``fence``: broker ids to fence in the same append. Reply
    :class:`ClusterStatus`."""

    seen_epoch: int
    fence: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ClusterStatusRequest:
    """The controller's view of the cluster; reply :class:`ClusterStatus`. Catches up with the
    controller stream first."""


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    """``active``: this node is the active controller; ``controller_id``/``controller_epoch``
    as folded (``controller_id`` -1: none yet); ``version``: the controller stream version folded;
    ``error``: why a :class:`ClaimControllerRequest` was refused (``None`` otherwise)."""

    active: bool
    controller_id: int
    controller_epoch: int
    version: int
    error: str | None = None
