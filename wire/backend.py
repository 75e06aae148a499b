"""What the Kafka handlers need from the rest of Shoal: the :class:`Backend` interface.

The handlers in :mod:`wire.admin`, :mod:`wire.records`, :mod:`wire.share`, :mod:`wire.groups` and
:mod:`wire.group_admin` translate kio requests into calls on a ``Backend`` and its plain results
back into kio responses. The daemon's
implementation (:class:`wire.daemon.ShoalBackend`) sends ONE actor message per request to the
controller or to a share-group actor (control plane) and reads/appends record bytes through the
partition logs in the listener's own process (data plane: record bytes never pass through an
actor). Errors are Kafka error names (``"UNKNOWN_TOPIC_OR_PARTITION"``), never exceptions.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from actors.controller.scram import AlterResult, DescribeResult, ScramCredential, ScramDeletion, ScramUpsertion

__all__ = [
    "AckBatch",
    "AcquiredRange",
    "Backend",
    "ConfigEntry",
    "FetchedPartition",
    "HeartbeatResult",
    "ProduceResult",
    "ShareFetchPartition",
    "ShareFetchResult",
    "SharePartitionAck",
    "TopicInfo",
    "TopicSpec",
    "RESOURCE_TOPIC",
    "RESOURCE_GROUP",
    "RESOURCE_BROKER",
]

#: Kafka ``ConfigResource.Type`` ids (DescribeConfigs / IncrementalAlterConfigs).
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_GROUP = 32


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """A topic as Metadata shows it: ``name``, ``topic_id`` (uuid4), ``partitions`` (count)."""

    name: str
    topic_id: uuid.UUID
    partitions: int
    internal: bool = False


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """A CreateTopics entry: ``partitions``/``replication_factor`` -1 mean the broker default."""

    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One DescribeConfigs result row. ``source`` is Kafka's ``ConfigSource`` id (1 dynamic topic,
    4 static broker, 5 default, 8 group …)."""

    name: str
    value: str | None
    read_only: bool = False
    is_default: bool = False
    source: int = 5
    sensitive: bool = False


@dataclass(frozen=True, slots=True)
class ProduceResult:
    """Result of appending one partition's records: ``base_offset`` of the first record,
    ``log_append_time_ms`` (-1 with CreateTime), ``log_start_offset``; ``error`` a Kafka name.
    ``required_offset`` (``acks=-1`` only, -1 otherwise): the high watermark the answer must wait
    for (last offset + 1, exclusive) through :meth:`Backend.await_replication`."""

    error: str | None
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    message: str | None = None
    required_offset: int = -1


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    """Bytes for one partition of a Fetch: whole RecordBatches starting at or before the fetch
    offset (clients skip the records below it); watermarks as Kafka reports them."""

    error: str | None
    high_watermark: int = -1
    log_start_offset: int = -1
    records: bytes = b""


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    """ShareGroupHeartbeat answer. ``assignment`` maps topic id → partitions, or ``None`` when the
    response carries no assignment (unchanged)."""

    error: str | None
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 5000
    assignment: dict[uuid.UUID, list[int]] | None = None


@dataclass(frozen=True, slots=True)
class AckBatch:
    """An acknowledgement batch: offsets ``first_offset``..``last_offset`` inclusive and either
    one type for all or one per offset (0 GAP, 1 ACCEPT, 2 RELEASE, 3 REJECT, 4 RENEW)."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SharePartitionAck:
    """Acknowledgements for one share-partition (topic id, partition)."""

    topic_id: uuid.UUID
    partition: int
    batches: tuple[AckBatch, ...]


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    """Offsets ``first_offset``..``last_offset`` inclusive acquired with ``delivery_count``."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareFetchPartition:
    """ShareFetch/ShareAcknowledge answer for one partition: the records' bytes (whole batches
    covering the acquired ranges), the acquired ranges, the acknowledgement outcome."""

    topic_id: uuid.UUID
    partition: int
    error: str | None = None
    error_message: str | None = None
    ack_error: str | None = None
    ack_error_message: str | None = None
    records: bytes = b""
    acquired: tuple[AcquiredRange, ...] = ()
    log_start_offset: int = -1
    high_watermark: int = -1


class Backend(Protocol):
    """The broker as the handlers see it. All times in ms, offsets inclusive unless named *end*.

    Control-plane calls are one actor message each; data-plane calls read or append segment
    files in the caller's process. Implementations are thread-safe (one listener thread per
    connection)."""

    node_id: int
    host: str
    port: int
    cluster_id: str
    #: the broker's metadata image (:class:`wire.cluster_view.ClusterView`)
    cluster: Any

    def metadata_brokers(self, listener: str | None) -> list[tuple[int, str, int, str | None]]:
        """``(node_id, host, port, rack)`` of every live broker, advertised on ``listener``."""

    def controller_id(self) -> int:
        """The active controller's node id (-1: none)."""

    def coordinator(self, group_id: str, listener: str | None) -> tuple[int, str, int] | None:
        """``(node_id, host, port)`` of ``group_id``'s coordinator on ``listener``; ``None`` if no node is live."""

    # -- control plane ------------------------------------------------------------------------
    def topics(self, names: Sequence[str] | None = None) -> list[TopicInfo]:
        """Known topics (all when ``names`` is None; unknown names are left out)."""

    def create_topics(self, specs: Sequence[TopicSpec], validate_only: bool) -> dict[str, tuple[str | None, str | None, TopicInfo | None]]:
        """Create topics; per name ``(error, message, info)``."""

    def delete_topics(self, names: Sequence[str]) -> dict[str, tuple[str | None, uuid.UUID | None]]:
        """Delete topics by name; per name ``(error, topic_id)``."""

    def create_partitions(
        self, topics: Sequence[tuple[str, int, Sequence[Sequence[int]] | None]], validate_only: bool
    ) -> dict[str, tuple[str | None, str | None]]:
        """CreatePartitions (API 37): ``topics`` are ``(name, new total count, assignments or
        None)``, the assignments one broker-id list per new partition. Returns per name
        ``(error, message)`` (error ``None`` on success); the new partitions' logs exist when it
        returns."""

    def describe_configs(self, resource_type: int, name: str, keys: Sequence[str] | None) -> tuple[str | None, str | None, list[ConfigEntry]]:
        """Describe one config resource: ``(error, message, entries)``."""

    def alter_configs(self, resource_type: int, name: str, ops: Sequence[tuple[str, int, str | None]], validate_only: bool) -> tuple[str | None, str | None]:
        """IncrementalAlterConfigs for one resource; ``ops`` are ``(key, op, value)`` with Kafka's
        op ids 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT. Returns ``(error, message)``."""

    def list_groups(self, types: Sequence[str], states: Sequence[str]) -> list[tuple[str, str, str]]:
        """``(group_id, group_type, state)`` of the known groups matching the filters."""

    # -- SCRAM credentials (KIP-554; types from actors.controller.scram) ---------------------------
    def alter_user_scram_credentials(self, deletions: Sequence[ScramDeletion], upsertions: Sequence[ScramUpsertion]) -> list[AlterResult]:
        """AlterUserScramCredentials: ``ScramDeletion``/``ScramUpsertion`` items; returns one
        ``AlterResult`` per user (a controller failure gives every user that error)."""
        return []

    def describe_user_scram_credentials(self, users: Sequence[str] | None) -> tuple[str | None, str | None, list[DescribeResult]]:
        """DescribeUserScramCredentials of ``users`` (``None``/empty: all): ``(error, message,
        [DescribeResult])``; a top-level error (controller not ready) comes with no results."""
        return "UNSUPPORTED_VERSION", None, []

    def scram_credential(self, user: str, mechanism: str) -> ScramCredential | None:
        """``user``'s ``ScramCredential`` (salt, stored_key, server_key, iterations) for
        ``mechanism`` ("SCRAM-SHA-256"/"SCRAM-SHA-512"), or ``None`` — what a SASL SCRAM server
        looks up. Never raises (an unreachable controller answers ``None``: fail closed)."""
        return None

    # -- data plane ---------------------------------------------------------------------------
    def produce(self, topic: str, partition: int, records: bytes, acks: int) -> ProduceResult:
        """Validate and append one partition's RecordBatches; returns the assigned base offset."""

    def fetch(self, topic: str, partition: int, offset: int, max_bytes: int, replica_id: int = -1, current_leader_epoch: int = -1) -> FetchedPartition:
        """Read whole batches from ``offset`` (local segments or the remote tier) on the leader;
        ``replica_id >= 0`` is a follower's fetch (read up to the LEO, its LEO recorded),
        ``current_leader_epoch`` (-1: none) is checked (FENCED/UNKNOWN_LEADER_EPOCH)."""

    def await_replication(self, pending: list[tuple[str, int, int]], timeout_ms: int) -> list[str | None]:
        """The ``acks=-1`` purgatory: wait until each ``(topic, partition, required_offset)`` is
        below the high watermark or ``timeout_ms`` passes; one error (or ``None``) per entry
        (REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER)."""
        return [None for _ in pending]

    def offset_for_leader_epoch(self, topic: str, partition: int, current_leader_epoch: int, leader_epoch: int) -> tuple[str | None, int, int]:
        """OffsetForLeaderEpoch (API 23) on one partition: ``(error, epoch, end_offset)``
        (KIP-101/KIP-279; Kafka ``Partition.lastOffsetForLeaderEpoch``)."""
        return "UNSUPPORTED_VERSION", -1, -1

    def list_offset(self, topic: str, partition: int, timestamp: int) -> tuple[str | None, int, int]:
        """ListOffsets for one partition: ``(error, offset, timestamp)``, optionally with a 4th
        element, the offset's leader epoch (KIP-320; without it the answer says 0);
        ``timestamp`` -1 latest, -2 earliest, -3 max-timestamp, -4 earliest-local,
        -5 latest-tiered, else by time."""

    def delete_records(self, topic: str, partition: int, offset: int) -> tuple[str | None, int]:
        """DeleteRecords (API 21) on one partition: move its log start offset up to ``offset``
        (``-1`` = the high watermark). Returns ``(error, low_watermark)``: UNKNOWN_TOPIC_OR_PARTITION,
        OFFSET_OUT_OF_RANGE (offset above the high watermark or below -1), POLICY_VIOLATION
        (``cleanup.policy`` without ``delete``)."""
        return "UNSUPPORTED_VERSION", -1

    def init_producer_id(self, transactional_id: str | None, producer_id: int, producer_epoch: int) -> tuple[str | None, int, int]:
        """InitProducerId: ``(error, producer_id, producer_epoch)``. Without a transactional id a
        new producer id with epoch 0 (Kafka ``TransactionCoordinator.handleInitProducerId``);
        transactions are not implemented (UNSUPPORTED_VERSION)."""
        return "UNSUPPORTED_VERSION", -1, -1

    def data_version(self, partitions: Sequence[tuple[str, int]]) -> Any:
        """An opaque token for :meth:`wait_for_data`, taken before ``partitions`` ((topic,
        partition) pairs) are read: what they hold now."""
        return 0

    def wait_for_data(self, timeout_ms: int, since: Any) -> None:
        """Block up to ``timeout_ms`` or until one of the partitions :meth:`data_version` was
        asked about gets new records or a new high watermark after it returned ``since`` — the
        long poll."""

    # -- share groups (one message to the group's ShareGroupActor each) ----------------------
    def share_heartbeat(self, group: str, member_id: str, epoch: int, rack: str | None, subscribed: list[str] | None, client_id: str, client_host: str) -> "HeartbeatResult":
        """ShareGroupHeartbeat (join with epoch 0, heartbeat, leave with -1)."""

    def share_fetch(self, group: str, member: str, epoch: int, wanted: Sequence[tuple[uuid.UUID, int]], forgotten: Sequence[tuple[uuid.UUID, int]], acks: Sequence[SharePartitionAck], max_records: int, max_wait_ms: int,
                    acquire_mode: int = 0, batch_size: int | None = None, is_renew_ack: bool = False, session_node: int = -1) -> "ShareFetchResult":
        """ShareFetch: ``wanted`` partitions added to the session, ``forgotten`` removed,
        piggy-backed ``acks``; when nothing is acquired it waits up to ``max_wait_ms`` for records
        (the purgatory). ``acquire_mode`` (v2 ``ShareAcquireMode``: 0 batch-optimized, 1
        record-limit), ``batch_size`` (v1+ ``BatchSize``), ``is_renew_ack`` (v2);
        ``session_node``: the node that forwarded the request (-1: a client of this node), whose
        share session it belongs to (:mod:`wire.forwarding`)."""

    def share_acknowledge(self, group: str, member: str, epoch: int, acks: Sequence[SharePartitionAck], session_node: int = -1) -> "ShareFetchResult":
        """ShareAcknowledge (epoch -1 also closes the share session); ``session_node`` as in
        :meth:`share_fetch`."""

    def share_group_describe(self, group: str) -> dict:
        """ShareGroupDescribe of one group: ``{"error"}`` or state, epochs, assignor, members."""

    def share_group_offsets(self, group: str, topics: Sequence[tuple[str, list[int]]] | None) -> tuple[str | None, str | None, list]:
        """DescribeShareGroupOffsets: ``(error, message, [(topic, topic id, [(partition, start offset, error)])])``."""

    # -- classic consumer groups (issue 16): commands and results of actors.consumer
    def consumer_join(self, cmd: Any) -> Any:
        """JoinGroup (``JoinGroupCmd`` → ``JoinGroupResult``); may wait for the rebalance."""

    def consumer_sync(self, cmd: Any) -> Any:
        """SyncGroup (``SyncGroupCmd`` → ``SyncGroupResult``); may wait for the leader."""

    def consumer_heartbeat(self, cmd: Any) -> Any:
        """Heartbeat (``HeartbeatCmd`` → ``HeartbeatResult``)."""

    def consumer_leave(self, cmd: Any) -> Any:
        """LeaveGroup (``LeaveGroupCmd`` → ``LeaveGroupResult``)."""

    def consumer_commit(self, cmd: Any) -> Any:
        """OffsetCommit (``OffsetCommitCmd`` → ``OffsetCommitResult``, unknown topics
        UNKNOWN_TOPIC_OR_PARTITION)."""

    def consumer_fetch_offsets(self, group: str, partitions: Sequence[tuple[str, int]] | None, member_id: str | None = None,
                               member_epoch: int = -1) -> tuple[str | None, list]:
        """OffsetFetch → ``(group error, [FetchedOffset])`` (``None``: all committed offsets);
        v9's member id and epoch are checked by a consumer-protocol group."""

    # -- KIP-848 consumer groups (actors.consumer.modern)
    def consumer_group_heartbeat(self, cmd: Any) -> Any:
        """ConsumerGroupHeartbeat (``ConsumerGroupHeartbeatCmd`` without the image →
        ``ConsumerHeartbeatResult``); the backend adds the topic image."""

    def consumer_group_describe(self, group: str) -> Any:
        """ConsumerGroupDescribe of one group → ``ConsumerGroupDescription``."""

    # -- group admin (wire.group_admin): DescribeGroups 15, DeleteGroups 42, OffsetDelete 47,
    #    AlterShareGroupOffsets 91, DeleteShareGroupOffsets 92
    def describe_group(self, group: str) -> tuple[str | None, str | None, Any]:
        """DescribeGroups of one group → ``(error, message, DescribedGroup)``
        (:class:`actors.consumer.classic.DescribedGroup`); a missing or non-classic group is state
        ``Dead`` with GROUP_ID_NOT_FOUND (the handler answers error 0 below v6)."""
        return "GROUP_ID_NOT_FOUND", None, None

    def delete_group(self, group: str) -> str | None:
        """DeleteGroups of one group, classic or share → error name (GROUP_ID_NOT_FOUND,
        NON_EMPTY_GROUP …) or ``None`` once it is deleted."""
        return "GROUP_ID_NOT_FOUND"

    def consumer_delete_offsets(self, group: str, partitions: Sequence[tuple[str, int]]) -> Any:
        """OffsetDelete → :class:`actors.consumer.classic.OffsetDeleteResult` (group error, or per
        partition errors in request order; unknown topics UNKNOWN_TOPIC_OR_PARTITION)."""

    def share_alter_offsets(self, group: str, topics: Sequence[tuple[str, Sequence[tuple[int, int]]]]) -> tuple[str | None, str | None, list]:
        """AlterShareGroupOffsets: ``topics`` ``(name, [(partition, start offset)])`` →
        ``(error, message, [(name, topic uuid or None, [(partition, error, message)])])``."""
        return "UNSUPPORTED_VERSION", None, []

    def share_delete_offsets(self, group: str, topics: Sequence[str]) -> tuple[str | None, str | None, list]:
        """DeleteShareGroupOffsets: topic names → ``(error, message, [(name, topic uuid or None,
        error, message)])``."""
        return "UNSUPPORTED_VERSION", None, []


@dataclass(frozen=True, slots=True)
class ShareFetchResult:
    """ShareFetch/ShareAcknowledge answer: a top-level ``error`` (SHARE_SESSION_NOT_FOUND,
    INVALID_SHARE_SESSION_EPOCH, UNKNOWN_MEMBER_ID, COORDINATOR_LOAD_IN_PROGRESS …) or the
    per-partition results; ``lock_timeout_ms`` is the acquisition lock duration in force."""

    error: str | None
    message: str | None = None
    lock_timeout_ms: int = 30000
    partitions: tuple[ShareFetchPartition, ...] = ()
