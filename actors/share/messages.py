"""Messages of the :class:`actors.share.actor.ShareGroupActor`: one request message per Kafka request.

``msgspec.Struct``s on the foundation's ``_Msg`` base (equality by fields, picklable, a bounded repr).
Replies carry Kafka error *names* (``"NONE"`` for success), top-level and per partition, never
exception objects.

Record bytes never pass through the actor. The split for ShareFetch:

1. The caller (the wire layer) keeps, per share-partition, the ``next_fetch_offset`` the actor last
   answered (initially unknown). It reads the **batch boundaries** ``(base offset, last offset)`` of
   the log from that offset up to the high watermark (no payloads; the segment index has them) and
   sends them in :class:`ShareFetchPartition` with the log start offset and high watermark.
2. The actor acquires whole log batches (Kafka's soft ``max_records`` limit ends at a batch
   boundary) and answers :class:`ShareFetchPartitionResult` with the acquired ranges
   ``(first, last, delivery count)`` and the next fetch offset. The caller then reads the record
   bytes of those ranges from the segments and builds the response.
3. When the batches sent do not start at the partition's next fetch offset (released records
   became available again below it, or the caller did not know the offset yet), the actor acquires
   nothing there and answers ``refetch_from``: the caller reads from that offset and sends again.
   In steady sequential consumption there is one round trip per ShareFetch.
4. Share sessions are incremental (KIP-932): a ShareFetch fetches every partition of the session,
   including those the request does not name. The reply has a result for each of them; one the
   caller did not send comes back with ``refetch_from`` (its next fetch offset, or ``-1`` when the
   share-partition is not initialized yet: send it with its log start offset and high watermark).
   A caller that keeps the session's partition set (from the replies) and always sends all of
   them with their batches avoids the extra round trip.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from actors.messages import _Msg

__all__ = [
    "AlterGroupConfigs",
    "AlterShareGroupOffsets",
    "DeleteShareGroupOffsets",
    "DeleteShareGroupState",
    "DescribeGroupConfigs",
    "DescribeShareGroup",
    "DescribeShareGroupOffsets",
    "GetShareGroupState",
    "GroupConfigsAltered",
    "GroupConfigsDescribed",
    "MemberDescription",
    "PartitionResult",
    "Passivate",
    "RecordsFreed",
    "ShareAcknowledgeCmd",
    "ShareAcknowledgePartition",
    "ShareAcknowledgeReply",
    "ShareFetchCmd",
    "ShareFetchPartition",
    "ShareFetchPartitionResult",
    "ShareFetchReply",
    "ShareGroupDescription",
    "ShareGroupHeartbeatCmd",
    "ShareGroupHeartbeatReply",
    "ShareGroupOffsets",
    "ShareGroupStateDeleted",
    "ShareGroupStateDump",
    "SharePartitionOffset",
]

#: ``(first offset, last offset, (acknowledge type, ...))`` — Kafka's AcknowledgementBatch
#: (types: 0 GAP, 1 ACCEPT, 2 RELEASE, 3 REJECT, 4 RENEW).
AckBatch = tuple[int, int, tuple[int, ...]]


# ------------------------------------------------------------------------------ heartbeat

class ShareGroupHeartbeatCmd(_Msg):
    """ShareGroupHeartbeat (API 76). ``topics``: the broker's metadata image, topic name →
    ``(topic id, partition count)``, covering every topic name the group subscribes to (a missing
    name is a topic that does not exist), or ``None`` if unchanged since the last heartbeat. Reply:
    :class:`ShareGroupHeartbeatReply`."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None
    topics: dict[str, tuple[str, int]] | None = None
    client_id: str = ""
    client_host: str = ""

    def __post_init__(self) -> None:
        self.subscribed_topic_names = None if self.subscribed_topic_names is None else tuple(self.subscribed_topic_names)


class ShareGroupHeartbeatReply(_Msg):
    """The ShareGroupHeartbeat response: ``error`` (``"NONE"`` or a Kafka name), ``message``,
    ``member_id``, ``member_epoch``, ``heartbeat_interval_ms`` and ``assignment``
    (``((topic id, (partitions…)), …)`` or ``None`` when unchanged)."""

    error: str = "NONE"
    message: str = ""
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: tuple[tuple[str, tuple[int, ...]], ...] | None = None


# ------------------------------------------------------------------------------ share fetch / acknowledge

class ShareFetchPartition(_Msg):
    """One partition of a ShareFetch: its ``acknowledgement_batches`` (piggy-backed acks) and what
    the caller read from the log: ``log_batches`` (``((base offset, last offset), …)`` ascending,
    from ``fetch_offset``; ``None`` = not read), ``log_start_offset`` and ``high_watermark``
    (exclusive end). ``reset_offset``: the offset ListOffsets gave for the timestamp the actor
    asked for (``share.auto.offset.reset=by_duration``), else ``None``."""

    topic_id: str
    partition: int
    acknowledgement_batches: tuple[AckBatch, ...] = ()
    fetch_offset: int = -1
    log_batches: tuple[tuple[int, int], ...] | None = None
    log_start_offset: int = 0
    high_watermark: int = 0
    reset_offset: int | None = None

    def __post_init__(self) -> None:
        self.acknowledgement_batches = tuple(self.acknowledgement_batches)
        self.log_batches = None if self.log_batches is None else tuple(self.log_batches)


class ShareFetchCmd(_Msg):
    """ShareFetch (API 78): session epoch, ``max_records`` (Kafka's ``MaxRecords``, for the whole
    request), ``partitions`` (:class:`ShareFetchPartition`) and ``forgotten``
    (``((topic id, partition), …)``). ShareFetch v2 (Kafka 4.2): ``share_acquire_mode`` 0
    (batch-optimized: the limit is soft and ends at a log-batch boundary) or 1 (record-limit: at
    most ``max_records`` new records), and ``is_renew_ack`` (the request carries RENEW
    acknowledgements: they are processed and no records are acquired); ``batch_size`` (v1+
    ``BatchSize``: new records are split into in-flight batches of about that size; ``None``: one
    per acquisition).

    ``continuation``: the same ShareFetch again, from the purgatory (Kafka's ``DelayedShareFetch``
    trying to complete): the first attempt, with ``share_session_epoch``, did the session step and
    the acknowledgements and acquired nothing; this one only acquires, on the session that
    attempt left (no epoch bump), from the log batches read since. Acquires nothing when the
    session moved on meanwhile. ``session_node``: the node the client holds its share session with
    (-1: this one; another node's id when that node forwarded the request, :mod:`wire.forwarding`).
    Reply: :class:`ShareFetchReply`."""

    group_id: str
    member_id: str
    share_session_epoch: int
    partitions: tuple[ShareFetchPartition, ...]
    max_records: int = 500
    forgotten: tuple[tuple[str, int], ...] = ()
    share_acquire_mode: int = 0
    is_renew_ack: bool = False
    batch_size: int | None = None
    continuation: bool = False
    session_node: int = -1

    def __post_init__(self) -> None:
        self.partitions = tuple(self.partitions)
        self.forgotten = tuple(self.forgotten)


class ShareFetchPartitionResult(_Msg):
    """One partition of the ShareFetch response: ``error`` (fetch), ``acknowledge_error``,
    ``acquired`` (``((first, last, delivery count), …)``, inclusive), ``next_fetch_offset`` (where
    the caller should read next), ``refetch_from`` (read from here and send again; ``-1``: not
    initialized, send the partition's log offsets; ``None`` when not needed), ``reset_timestamp_ms`` (resolve this timestamp with ListOffsets and send it as
    ``reset_offset``; ``None`` when not needed), ``start_offset`` (the SPSO)."""

    topic_id: str
    partition: int
    error: str = "NONE"
    acknowledge_error: str = "NONE"
    acquired: tuple[tuple[int, int, int], ...] = ()
    next_fetch_offset: int = -1
    refetch_from: int | None = None
    reset_timestamp_ms: int | None = None
    start_offset: int = -1

    def __post_init__(self) -> None:
        self.acquired = tuple(self.acquired)


class ShareFetchReply(_Msg):
    """The ShareFetch response: top-level ``error``/``message`` (session errors such as
    SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH), ``partitions`` and
    ``acquisition_lock_timeout_ms`` (the response's ``AcquisitionLockTimeoutMs``: the group's
    ``share.record.lock.duration.ms`` in force; 0 on a top-level error)."""

    error: str = "NONE"
    message: str = ""
    partitions: tuple[ShareFetchPartitionResult, ...] = ()
    acquisition_lock_timeout_ms: int = 0

    def __post_init__(self) -> None:
        self.partitions = tuple(self.partitions)


class ShareAcknowledgePartition(_Msg):
    """One partition of a ShareAcknowledge: ``acknowledgement_batches``."""

    topic_id: str
    partition: int
    acknowledgement_batches: tuple[AckBatch, ...]

    def __post_init__(self) -> None:
        self.acknowledgement_batches = tuple(self.acknowledgement_batches)


class ShareAcknowledgeCmd(_Msg):
    """ShareAcknowledge (API 79); ``session_node`` as :class:`ShareFetchCmd`'s. Reply:
    :class:`ShareAcknowledgeReply`."""

    group_id: str
    member_id: str
    share_session_epoch: int
    partitions: tuple[ShareAcknowledgePartition, ...]
    session_node: int = -1

    def __post_init__(self) -> None:
        self.partitions = tuple(self.partitions)


class PartitionResult(_Msg):
    """A per-partition error name (``"NONE"`` on success) and message."""

    topic_id: str
    partition: int
    error: str = "NONE"
    message: str = ""


class ShareAcknowledgeReply(_Msg):
    """The ShareAcknowledge response: top-level session error, per-partition results and
    ``acquisition_lock_timeout_ms`` (v2's ``AcquisitionLockTimeoutMs``; 0 on a top-level error)."""

    error: str = "NONE"
    message: str = ""
    partitions: tuple[PartitionResult, ...] = ()
    acquisition_lock_timeout_ms: int = 0

    def __post_init__(self) -> None:
        self.partitions = tuple(self.partitions)


# ------------------------------------------------------------------------------ describe / admin

class DescribeShareGroup(_Msg):
    """ShareGroupDescribe (API 77) for this group. Reply: :class:`ShareGroupDescription`."""

    group_id: str


class MemberDescription(_Msg):
    """One member in a :class:`ShareGroupDescription`."""

    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: tuple[tuple[str, tuple[int, ...]], ...]

    def __post_init__(self) -> None:
        self.subscribed_topic_names = tuple(self.subscribed_topic_names)
        self.assignment = tuple(self.assignment)


class ShareGroupDescription(_Msg):
    """The described group: ``error`` (GROUP_ID_NOT_FOUND when it does not exist), ``group_state``
    (``Empty``/``Stable``/``Dead``), epochs, ``assignor_name`` (``simple``), ``members``."""

    group_id: str
    error: str = "NONE"
    message: str = ""
    group_state: str = "Dead"
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = "simple"
    members: tuple[MemberDescription, ...] = ()

    def __post_init__(self) -> None:
        self.members = tuple(self.members)


class DescribeShareGroupOffsets(_Msg):
    """DescribeShareGroupOffsets (API 90): the start offsets of ``partitions``
    (``((topic id, partition), …)``; ``None`` = every share-partition the group has).
    Reply: :class:`ShareGroupOffsets`."""

    group_id: str
    partitions: tuple[tuple[str, int], ...] | None = None

    def __post_init__(self) -> None:
        self.partitions = None if self.partitions is None else tuple(self.partitions)


class SharePartitionOffset(_Msg):
    """One partition's share-partition start offset (-1 when not initialized) and error."""

    topic_id: str
    partition: int
    start_offset: int = -1
    error: str = "NONE"


class ShareGroupOffsets(_Msg):
    """Reply to :class:`DescribeShareGroupOffsets`."""

    group_id: str
    error: str = "NONE"
    partitions: tuple[SharePartitionOffset, ...] = ()

    def __post_init__(self) -> None:
        self.partitions = tuple(self.partitions)


class AlterGroupConfigs(_Msg):
    """IncrementalAlterConfigs/AlterConfigs on the GROUP resource. ``configs``: key → value
    (``None`` deletes the override). ``incremental=False`` replaces the whole set (AlterConfigs).
    ``validate_only``: check only. Reply: :class:`GroupConfigsAltered`."""

    group_id: str
    configs: dict[str, str | None]
    incremental: bool = True
    validate_only: bool = False

    def __post_init__(self) -> None:
        self.configs = dict(self.configs)


class GroupConfigsAltered(_Msg):
    """Reply to :class:`AlterGroupConfigs`: ``error`` (``INVALID_CONFIG`` …), ``message`` and the
    overrides in force afterwards."""

    group_id: str
    error: str = "NONE"
    message: str = ""
    configs: dict[str, str] | None = None

    def __post_init__(self) -> None:
        self.configs = dict(self.configs or {})


class DescribeGroupConfigs(_Msg):
    """DescribeConfigs on the GROUP resource. Reply: :class:`GroupConfigsDescribed`."""

    group_id: str


class GroupConfigsDescribed(_Msg):
    """The effective share-group configs (key → value string) and which of them are overrides."""

    group_id: str
    configs: dict[str, str]
    overrides: tuple[str, ...]

    def __post_init__(self) -> None:
        self.configs = dict(self.configs)
        self.overrides = tuple(self.overrides)


class DeleteShareGroupState(_Msg):
    """Delete share-partition state: ``partitions`` ``((topic id, partition), …)``
    (DeleteShareGroupOffsets) or ``None`` for the whole group (DeleteGroups). Both need the group
    to be EMPTY (NON_EMPTY_GROUP). Reply: :class:`ShareGroupStateDeleted`."""

    group_id: str
    partitions: tuple[tuple[str, int], ...] | None = None

    def __post_init__(self) -> None:
        self.partitions = None if self.partitions is None else tuple(self.partitions)


class ShareGroupStateDeleted(_Msg):
    """Reply to :class:`DeleteShareGroupState`: top-level error and per-partition results."""

    group_id: str
    error: str = "NONE"
    message: str = ""
    partitions: tuple[PartitionResult, ...] = ()

    def __post_init__(self) -> None:
        self.partitions = tuple(self.partitions)


class AlterShareGroupOffsets(_Msg):
    """AlterShareGroupOffsets (91): set the share-partition start offset of ``partitions``
    ``((topic id, partition, start offset), …)`` (known partitions only: the listener answers the
    others). Needs the group to exist (GROUP_ID_NOT_FOUND) and be EMPTY (NON_EMPTY_GROUP). Each
    share-partition is re-initialised at the new start offset with no in-flight state (Kafka's
    ``InitializeShareGroupState``). Reply: :class:`ShareGroupStateDeleted` (top-level error and
    per-partition results)."""

    group_id: str
    partitions: tuple[tuple[str, int, int], ...]

    def __post_init__(self) -> None:
        self.partitions = tuple(self.partitions)


class DeleteShareGroupOffsets(_Msg):
    """DeleteShareGroupOffsets (92): delete the share-partition state of every initialised
    partition of ``topic_ids``; the group then initialises them again from
    ``share.auto.offset.reset``. Needs the group to exist and be EMPTY. Reply:
    :class:`ShareGroupStateDeleted` whose ``partitions`` hold one :class:`PartitionResult` per
    requested topic (partition -1): NONE, or UNKNOWN_TOPIC_OR_PARTITION "There is no offset
    information to delete." when the group has no state for the topic."""

    group_id: str
    topic_ids: tuple[str, ...]

    def __post_init__(self) -> None:
        self.topic_ids = tuple(self.topic_ids)


class GetShareGroupState(_Msg):
    """Audit/test: ask for the actor's durable state as a plain dict. Reply: :class:`ShareGroupStateDump`."""

    group_id: str


class ShareGroupStateDump(_Msg):
    """The durable state (membership and share partitions) as JSON-able dicts, and the stream version."""

    group_id: str
    stream_version: int
    state: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RecordsFreed:
    """From a group's actor to its supervisor: records of ``group_id`` became acquirable without an
    append to the log — released (RELEASE, a closed share session, a fenced or leaving member), an
    acquisition lock expired, or the start offset moved so that the in-flight window
    (``group.share.partition.max.record.locks``) has room again. A waiting ShareFetch of the group
    should try again (Kafka completes its ``DelayedShareFetch`` on the same events). Sent when the
    decision is made; the ShareFetch that follows is decided after it and answered once durable.
    ``partitions``: the ``(topic id, partition)`` share-partitions whose records were freed (only
    fetches whose share session holds one of them can use them; empty: not known, any may)."""

    group_id: str
    partitions: tuple[tuple[str, int], ...] = ()


class Passivate(_Msg):
    """Ask the actor to save a snapshot and exit now (the parent's memory pressure, tests). The
    actor answers nothing; the parent sees ``ChildActorExited``."""

    group_id: str = ""

