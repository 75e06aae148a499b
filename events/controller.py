"""The controller's domain events (stream ``controller``).

Every decision the :class:`actors.controller.actor.ControllerActor` takes about cluster metadata and
storage collections is one of these events, appended before the reply leaves. The fold of the
stream is :func:`actors.controller.state.evolve` (topics, configs, partitions, frontiers, holds).

Conventions:

* A *frontier* (``since``, ``upper``, ``implied``, a hold's offset) is ``int | None``: the
  single-element antichain ``{n}`` over Kafka offsets, or ``None`` for the empty antichain ``{}``
  (sealed upper / dropped since). "Closed" is never encoded as a large number
  (reference ``controller.md`` §5.1, point 1).
* Events carry whole batches (all hold deltas of one command, all upper advances of one report),
  never one event per record or per offset.
* Every field is typed so that the DuckDB/Spark folds (``projections/domains/controller.py``) can
  flatten it: configs are lists of :class:`ConfigValue` (not dicts), hold deltas are
  :class:`HoldChange` objects (not positional arrays), and a read policy is its canonical JSON
  text (:func:`policy_text`: ``{"kind": "lag_writes", "lag": 10, "max_granularity": 1}`` with
  sorted keys), decoded by :func:`actors.controller.frontiers.policy_from_json`. The text is what
  the ``controller_frontiers`` snapshot shows, so the SQL folds copy it as is.

Schema history (upcasters at the end of the module turn version 1 into version 2, so old logs
decode, and the SQL engines, which upcast stale rows with the codec, read one shape):

* v1 → v2 of ``TopicCreated``, ``TopicConfigsAltered``, ``BrokerConfigsAltered``: configs were a
  JSON object ``{name: value}``; now a list of ``{"name", "value"}`` sorted by name.
* v1 → v2 of ``CollectionsCreated`` and ``ReadPoliciesSet``: ``policy`` was a JSON object; now its
  canonical text. ``CollectionSpec.transitive_dependencies`` is new (v1 logs get the direct
  dependencies, exact for every log Shoal wrote: it never created collections depending on
  collections that had dependencies themselves).
* v1 → v2 of ``ReadHoldsChanged``: a change was ``[collection_id, offset, delta]``; now an object.
* v1 → v2 of ``PartitionChanged``: ``replicas``, ``adding_replicas`` and ``removing_replicas``
  are new (partition reassignment, KIP-455); a v1 event changed none of them (``None``). The
  version is bumped although the codec would fill the defaults by itself, so that a Shoal from
  before reassignment refuses (``CorruptEventError``: newer schema) a log whose assignments it
  would fold wrongly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from events.base import DomainEvent, domain_event
from events.codec import register_upcaster

__all__ = [
    "BrokerConfigsAltered",
    "CollectionSpec",
    "CollectionsCreated",
    "CollectionsDropRequested",
    "ConfigValue",
    "FrontierUpdate",
    "HoldChange",
    "ImpliedCapability",
    "PartitionChanged",
    "PartitionsCreated",
    "PartitionSpec",
    "ProducerIdsAllocated",
    "PolicyChange",
    "ReadHoldsChanged",
    "ReadPoliciesSet",
    "SegmentInfo",
    "TopicConfigsAltered",
    "TopicCreated",
    "TopicDeleted",
    "UserScramCredentialRemoved",
    "UserScramCredentialSet",
    "WriteFrontiersAdvanced",
    "AclBinding",
    "AclsCreated",
    "AclsDeleted",
    "BrokerEndpoint",
    "BrokerFenced",
    "BrokerRegistered",
    "BrokerUnfenced",
    "ControllerElected",
    "STREAM_ID",
    "config_map",
    "config_values",
    "policy_text",
]

#: The controller's event stream.
STREAM_ID = "controller"


# --- cluster metadata ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConfigValue:
    """One config override: ``name`` and its ``value`` as text (Kafka's ``ConfigRecord`` without
    the resource, which the enclosing event names)."""

    name: str
    value: str


def config_values(configs: Mapping[str, str] | Iterable[ConfigValue | tuple[str, str]]) -> tuple[ConfigValue, ...]:
    """``configs`` (a mapping name → value, or :class:`ConfigValue` items or ``(name, value)``
    pairs) as the tuple events carry: one entry per name, sorted by name (a later item of the same
    name wins)."""
    if isinstance(configs, Mapping):
        items = {str(k): str(v) for k, v in configs.items()}
    else:
        items = {}
        for c in configs:
            name, value = (c.name, c.value) if isinstance(c, ConfigValue) else c
            items[str(name)] = str(value)
    return tuple(ConfigValue(k, items[k]) for k in sorted(items))


def config_map(configs: Iterable[ConfigValue]) -> dict[str, str]:
    """The configs of an event as a dict name → value (inverse of :func:`config_values`)."""
    return {c.name: c.value for c in configs}


def _normalise_configs(event: Any, field: str) -> None:
    value = getattr(event, field)
    if isinstance(value, Mapping) or (value and not isinstance(value[0], ConfigValue)):
        object.__setattr__(event, field, config_values(value))
    elif not isinstance(value, tuple):
        object.__setattr__(event, field, tuple(value))


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """One partition as created: ``replicas`` in assignment order (``replicas[0]`` is the
    preferred leader), ``isr``, ``leader`` (broker id, -1 = none), ``leader_epoch`` and
    ``partition_epoch`` (KRaft's ``PartitionRegistration`` fields)."""

    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0


@domain_event("controller.TopicCreated", schema_version=2)
@dataclass(frozen=True, slots=True)
class TopicCreated(DomainEvent):
    """A topic was created (Kafka's ``TopicRecord`` + ``PartitionRecord``s + ``ConfigRecord``s).

    ``topic_id`` is the UUID in canonical hex form (never reused); ``configs`` holds only the
    explicitly set topic overrides (source DYNAMIC_TOPIC_CONFIG), sorted by name (a mapping given
    to the constructor is converted with :func:`config_values`)."""

    topic_id: str
    name: str
    partitions: tuple[PartitionSpec, ...]
    configs: tuple[ConfigValue, ...]

    def __post_init__(self) -> None:
        _normalise_configs(self, "configs")


@domain_event("controller.TopicDeleted")
@dataclass(frozen=True, slots=True)
class TopicDeleted(DomainEvent):
    """A topic was deleted (Kafka's ``RemoveTopicRecord``). Its name may be reused at once; its
    id never is. Its collections are dropped (since → ``{}``) once their read holds drain."""

    topic_id: str
    name: str


@domain_event("controller.TopicConfigsAltered", schema_version=2)
@dataclass(frozen=True, slots=True)
class TopicConfigsAltered(DomainEvent):
    """Topic overrides changed: ``set`` the new values (sorted by name; a mapping given to the
    constructor is converted), ``deleted`` names reverted to their default (Kafka's
    ``ConfigRecord`` with a null value). A name is never in both."""

    topic_id: str
    name: str
    set: tuple[ConfigValue, ...]
    deleted: tuple[str, ...]

    def __post_init__(self) -> None:
        _normalise_configs(self, "set")


@domain_event("controller.BrokerConfigsAltered", schema_version=2)
@dataclass(frozen=True, slots=True)
class BrokerConfigsAltered(DomainEvent):
    """Dynamic broker configs changed. ``broker`` is the resource name: ``""`` for the cluster-wide
    default (DYNAMIC_DEFAULT_BROKER_CONFIG) or a broker id (DYNAMIC_BROKER_CONFIG). ``set`` as in
    :class:`TopicConfigsAltered`."""

    broker: str
    set: tuple[ConfigValue, ...]
    deleted: tuple[str, ...]

    def __post_init__(self) -> None:
        _normalise_configs(self, "set")


@domain_event("controller.PartitionChanged", schema_version=2)
@dataclass(frozen=True, slots=True)
class PartitionChanged(DomainEvent):
    """A partition's leadership, ISR or assignment changed (Kafka's ``PartitionChangeRecord``):
    the new ``leader`` (-1 = none), ``isr``, ``leader_epoch`` and ``partition_epoch`` after the
    change. ``reason``: ``"election"``, ``"preferred"``, ``"isr_shrink"``, ``"isr_expand"``,
    ``"broker_failed"``, ``"leader_update"``, and for partition reassignment (KIP-455)
    ``"reassign"`` (AlterPartitionReassignments started, replaced or completed one at once),
    ``"reassign_cancel"`` (reverted) and ``"reassign_complete"`` (an ISR change completed it).

    The assignment (``replicas`` in assignment order, ``adding_replicas``,
    ``removing_replicas``; Kafka's ``Replicas``/``AddingReplicas``/``RemovingReplicas``) is
    ``None`` when it did not change, as Kafka's null lists mean. Unlike Kafka's record, the
    controller's decider writes the three together whenever any of them changes (so a fold
    needs the latest event with a non-null ``replicas`` only; ``replicas`` is never empty when
    set, ``()`` for adding/removing means "none")."""

    topic_id: str
    partition: int
    leader: int
    isr: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int
    reason: str
    replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None


# --- topic admin: CreatePartitions (issue 16) -------------------------------------------------


@domain_event("controller.PartitionsCreated")
@dataclass(frozen=True, slots=True)
class PartitionsCreated(DomainEvent):
    """Partitions were added to a live topic by CreatePartitions (Kafka's ``PartitionRecord``s
    written by ``ReplicationControlManager.createPartitions``). ``partitions`` are the new ones
    only, numbered on from the topic's current count (``partitions[0].partition`` = the old
    count), in order; the topic's existing partitions are unchanged."""

    topic_id: str
    name: str
    partitions: tuple[PartitionSpec, ...]


@domain_event("controller.ProducerIdsAllocated")
@dataclass(frozen=True, slots=True)
class ProducerIdsAllocated(DomainEvent):
    """A block of producer ids ``[first_producer_id, first_producer_id + block_size)`` was handed
    to broker ``broker_id`` for InitProducerId (KIP-98; Kafka's ``ProducerIdsRecord`` written by
    ``ProducerIdControlManager``, blocks of 1000). Ids are never handed out twice: the next block
    starts where this one ends."""

    broker_id: int
    first_producer_id: int
    block_size: int


# --- storage collections ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """A log segment as reported by a partition log: offsets ``[base_offset, next_offset)``
    (``next_offset`` exclusive), ``size_bytes`` and the largest record timestamp in ms. A
    reporter lists every segment oldest first, the active one last: Kafka's ``retention.bytes``
    compares the size of the whole log, active segment included (``UnifiedLog#size``), and
    an active segment wholly below the high watermark may itself breach retention."""

    base_offset: int
    next_offset: int
    size_bytes: int
    max_timestamp_ms: int


def policy_text(policy: Mapping[str, Any]) -> str:
    """The canonical JSON text of a read policy's dict form (``ReadPolicy.to_dict()``): keys
    sorted, Python's default separators. Events carry this text and the ``controller_frontiers``
    snapshot shows it."""
    return json.dumps(dict(policy), sort_keys=True)


@dataclass(frozen=True, slots=True)
class CollectionSpec:
    """A new collection: ``since``/``upper`` frontiers (offsets; ``None`` = ``{}``), its read
    ``policy`` (canonical JSON text, :func:`policy_text`; a dict given to the constructor is
    converted), the ids it depends on (each holds its dependency's since, in this order) and
    ``transitive_dependencies``: every collection whose since it holds directly or through its
    dependencies' dependencies (sorted, distinct; recorded by the decider so that a fold can
    compute sinces without recursion)."""

    collection_id: str
    since: int | None
    upper: int | None
    policy: str
    dependencies: tuple[str, ...] = ()
    transitive_dependencies: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.policy, Mapping):
            object.__setattr__(self, "policy", policy_text(self.policy))


@domain_event("controller.CollectionsCreated", schema_version=2)
@dataclass(frozen=True, slots=True)
class CollectionsCreated(DomainEvent):
    """Collections were registered (Materialize ``create_collections``). Each starts with read
    capabilities ``{since: 1}`` (the implied capability) plus one hold on each dependency."""

    collections: tuple[CollectionSpec, ...]


@dataclass(frozen=True, slots=True)
class FrontierUpdate:
    """One collection's new ``upper`` and the ``implied`` capability its read policy derives
    from it (recorded, so the fold needs no clock); ``segments`` when reported (else None)."""

    collection_id: str
    upper: int | None
    implied: int | None
    segments: tuple[SegmentInfo, ...] | None = None


@domain_event("controller.WriteFrontiersAdvanced")
@dataclass(frozen=True, slots=True)
class WriteFrontiersAdvanced(DomainEvent):
    """Uppers advanced (high watermarks committed; ``None`` = sealed) and the implied read
    capabilities moved with them (Materialize ``update_write_frontiers``)."""

    updates: tuple[FrontierUpdate, ...]


@dataclass(frozen=True, slots=True)
class ImpliedCapability:
    """A collection's new implied capability (``None`` = released)."""

    collection_id: str
    implied: int | None


@dataclass(frozen=True, slots=True)
class PolicyChange:
    """A collection's new read policy (canonical JSON text, :func:`policy_text`; a dict given to
    the constructor is converted) and the implied capability it yields now (``implied`` equals
    the old one when the policy would move it backwards)."""

    collection_id: str
    policy: str
    implied: int | None

    def __post_init__(self) -> None:
        if isinstance(self.policy, Mapping):
            object.__setattr__(self, "policy", policy_text(self.policy))


@domain_event("controller.ReadPoliciesSet", schema_version=2)
@dataclass(frozen=True, slots=True)
class ReadPoliciesSet(DomainEvent):
    """Read policies changed or were re-evaluated at a later time (retention by time):
    Materialize ``set_read_policies``. ``at_ms`` is the decision time."""

    changes: tuple[PolicyChange, ...]
    at_ms: int


@dataclass(frozen=True, slots=True)
class HoldChange:
    """Add ``delta`` (±, never 0) holds at ``offset`` on ``collection_id`` (JSON: an object, so
    the SQL folds can type it; v1 logs stored ``[collection_id, offset, delta]``)."""

    collection_id: str
    offset: int
    delta: int


@domain_event("controller.ReadHoldsChanged", schema_version=2)
@dataclass(frozen=True, slots=True)
class ReadHoldsChanged(DomainEvent):
    """``holder``'s read holds changed by ``changes`` (a consolidated ChangeBatch; Materialize
    ``update_read_capabilities``). Validated before it was written: no count goes negative and
    no positive hold lies below its collection's since."""

    holder: str
    changes: tuple[HoldChange, ...]


@domain_event("controller.CollectionsDropRequested")
@dataclass(frozen=True, slots=True)
class CollectionsDropRequested(DomainEvent):
    """Drop requested (policy ``ValidFrom({})``): the implied capability is released. A collection
    disappears (since ``{}``) once every other hold on it has drained."""

    collection_ids: tuple[str, ...]



# --- SCRAM credentials (KIP-554) -------------------------------------------------------------


@domain_event("controller.UserScramCredentialSet")
@dataclass(frozen=True, slots=True)
class UserScramCredentialSet(DomainEvent):
    """``user``'s SCRAM credential for ``mechanism`` ("SCRAM-SHA-256" or "SCRAM-SHA-512") was
    created or replaced (Kafka's ``UserScramCredentialRecord``, written by
    ``ScramControlManager`` for AlterUserScramCredentials): the client's ``salt``, the derived
    ``stored_key`` and ``server_key`` (RFC 5802) and the PBKDF2 ``iterations``. Never the
    password, never the salted password. Bytes are base64 text in the JSON (msgspec's encoding).
    ``repr`` hides the salt and keys (as ``actors.controller.scram.ScramCredential`` does)."""

    user: str
    mechanism: str
    salt: bytes = field(repr=False)
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)
    iterations: int


@domain_event("controller.UserScramCredentialRemoved")
@dataclass(frozen=True, slots=True)
class UserScramCredentialRemoved(DomainEvent):
    """``user``'s credential for ``mechanism`` was deleted (Kafka's
    ``RemoveUserScramCredentialRecord``); it existed when the event was decided."""

    user: str
    mechanism: str


# --- ACLs (KIP-13 ACLs as KRaft keeps them: AccessControlEntryRecord / RemoveAccessControlEntryRecord) ---


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    """One ACL (Kafka's ``AclBinding`` = ``ResourcePattern`` + ``AccessControlEntry``), every enum
    by its Kafka name: ``resource_type`` TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID,
    DELEGATION_TOKEN or USER; ``resource_name`` (``"*"`` with LITERAL = every resource of the
    type; ``"kafka-cluster"`` for CLUSTER); ``pattern_type`` LITERAL or PREFIXED; ``principal``
    ``"User:alice"`` (``"User:*"`` = every principal); ``host`` an IP address or ``"*"``;
    ``operation`` (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION,
    DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, CREATE_TOKENS, DESCRIBE_TOKENS,
    TWO_PHASE_COMMIT or ALL); ``permission`` ALLOW or DENY. The binding is its own identity
    (Kafka's ``StandardAcl``: equal bindings are one ACL), so events need no ACL ids."""

    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str


@domain_event("controller.AclsCreated")
@dataclass(frozen=True, slots=True)
class AclsCreated(DomainEvent):
    """ACLs were created by one CreateAcls request (Kafka's ``AccessControlEntryRecord`` per ACL,
    written by ``AclControlManager.createAcls``): ``acls`` are new (none existed before), distinct,
    in request order."""

    acls: tuple[AclBinding, ...]


@domain_event("controller.AclsDeleted")
@dataclass(frozen=True, slots=True)
class AclsDeleted(DomainEvent):
    """ACLs were deleted by one DeleteAcls request (Kafka's ``RemoveAccessControlEntryRecord`` per
    ACL, ``AclControlManager.deleteAcls``): ``acls`` existed, distinct, sorted."""

    acls: tuple[AclBinding, ...]


# --- the cluster: brokers and the active controller (KRaft's ClusterControlManager records) ----


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    """One listener of a broker as it registered it (Kafka's ``BrokerRegistrationRequest``
    ``Listener``): the listener ``name`` (``PLAINTEXT``, ``SASL_SSL``, …), the advertised
    ``host`` and ``port``, and the ``security_protocol`` name."""

    name: str
    host: str
    port: int
    security_protocol: str


@domain_event("controller.BrokerRegistered")
@dataclass(frozen=True, slots=True)
class BrokerRegistered(DomainEvent):
    """Broker ``broker_id`` registered (Kafka's ``RegisterBrokerRecord``, written by
    ``ClusterControlManager.registerBroker``): its process ``incarnation_id`` (a new one every
    start), its ``broker_epoch`` (the controller stream version of this event: heartbeats must
    carry it), its ``endpoints`` in listener order (the first is the inter-broker listener) and
    ``rack``. A broker registers fenced; a heartbeat unfences it (:class:`BrokerUnfenced`). A
    registration replaces the broker's earlier one."""

    broker_id: int
    incarnation_id: str
    broker_epoch: int
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None = None


@domain_event("controller.BrokerFenced")
@dataclass(frozen=True, slots=True)
class BrokerFenced(DomainEvent):
    """Broker ``broker_id`` (registration ``broker_epoch``) was fenced (Kafka's
    ``FenceBrokerRecord``): its session expired (no heartbeat for ``broker.session.timeout.ms``),
    it asked to be fenced, or a new controller found it unreachable. ``reason``:
    ``"session_expired"``, ``"controlled_shutdown"``, ``"controller_unreachable"`` or
    ``"reregistered"``. The partitions it led get new leaders in the same append."""

    broker_id: int
    broker_epoch: int
    reason: str


@domain_event("controller.BrokerUnfenced")
@dataclass(frozen=True, slots=True)
class BrokerUnfenced(DomainEvent):
    """Broker ``broker_id`` (registration ``broker_epoch``) was unfenced by a heartbeat (Kafka's
    ``UnfenceBrokerRecord``): it may lead partitions and join ISRs again."""

    broker_id: int
    broker_epoch: int


@domain_event("controller.ControllerElected")
@dataclass(frozen=True, slots=True)
class ControllerElected(DomainEvent):
    """Node ``node_id`` became the active controller with ``controller_epoch`` (one more than the
    previous one). The append that writes it is fenced by the stream's expected version, so at
    most one node wins each epoch; every later append of the old controller is refused (KRaft's
    quorum leader epoch, kept on the shared log)."""

    node_id: int
    controller_epoch: int



# --- upcasters (v1 → v2) ---------------------------------------------------------------------


def _configs_v2(configs: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"name": k, "value": configs[k]} for k in sorted(configs)]


@register_upcaster("controller.TopicCreated", 1)
def _topic_created_v1(d: dict[str, Any]) -> dict[str, Any]:
    """v1 ``configs`` object → list of ``{"name", "value"}``."""
    return {**d, "configs": _configs_v2(d.get("configs") or {})}


@register_upcaster("controller.TopicConfigsAltered", 1)
def _topic_configs_altered_v1(d: dict[str, Any]) -> dict[str, Any]:
    """v1 ``set`` object → list of ``{"name", "value"}``."""
    return {**d, "set": _configs_v2(d.get("set") or {})}


@register_upcaster("controller.BrokerConfigsAltered", 1)
def _broker_configs_altered_v1(d: dict[str, Any]) -> dict[str, Any]:
    """v1 ``set`` object → list of ``{"name", "value"}``."""
    return {**d, "set": _configs_v2(d.get("set") or {})}


def _policy_v2(policy: Any) -> str:
    return policy if isinstance(policy, str) else policy_text(policy)


@register_upcaster("controller.CollectionsCreated", 1)
def _collections_created_v1(d: dict[str, Any]) -> dict[str, Any]:
    """v1 ``policy`` object → canonical text; ``transitive_dependencies`` := the direct ones."""
    out = []
    for c in d["collections"]:
        deps = list(c.get("dependencies") or ())
        out.append({**c, "policy": _policy_v2(c["policy"]), "transitive_dependencies": sorted(set(deps))})
    return {**d, "collections": out}


@register_upcaster("controller.ReadPoliciesSet", 1)
def _read_policies_set_v1(d: dict[str, Any]) -> dict[str, Any]:
    """v1 ``policy`` object → canonical text."""
    return {**d, "changes": [{**c, "policy": _policy_v2(c["policy"])} for c in d["changes"]]}


@register_upcaster("controller.ReadHoldsChanged", 1)
def _read_holds_changed_v1(d: dict[str, Any]) -> dict[str, Any]:
    """v1 ``[collection_id, offset, delta]`` arrays → ``HoldChange`` objects."""
    return {
        **d,
        "changes": [
            c if isinstance(c, dict) else {"collection_id": c[0], "offset": c[1], "delta": c[2]} for c in d["changes"]
        ],
    }


@register_upcaster("controller.PartitionChanged", 1)
def _partition_changed_v1(d: dict[str, Any]) -> dict[str, Any]:
    """v1 had no assignment fields: the assignment did not change (``None``)."""
    return {**d, "replicas": None, "adding_replicas": None, "removing_replicas": None}
