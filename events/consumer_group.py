"""Classic consumer-group events (stream ``consumer-group:<group id>``).

They mirror the records Kafka's group coordinator writes to ``__consumer_offsets`` for a classic
group: ``GroupMetadata`` (type 2, the whole group after a generation completes or the leader's
assignment is stored; ``GroupMetadataManager.completeClassicGroupJoin`` / ``classicGroupSync``)
and ``OffsetCommit`` (type 1, ``OffsetMetadataManager.commitOffset``), bundled per request: one
OffsetCommit request is one :class:`OffsetsCommitted` event.

Classic membership between those records (parked JoinGroup/SyncGroup requests, pending KIP-394
member ids, timers) is soft state in Kafka and in Shoal (:mod:`actors.consumer.classic`).
"""

from __future__ import annotations

from dataclasses import dataclass

from events.base import DomainEvent, domain_event

__all__ = [
    "ClassicGroupMetadataRecorded",
    "ClassicMemberMetadata",
    "CommittedOffset",
    "ConsumerGroupDeleted",
    "DeletedOffset",
    "OffsetsCommitted",
    "OffsetsDeleted",
    "stream_id_for",
]


def stream_id_for(group_id: str) -> str:
    """The event stream of consumer group ``group_id``: ``"consumer-group:<group id>"``."""
    return f"consumer-group:{group_id}"


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """One member of a classic group as Kafka's ``GroupMetadataValue.MemberMetadata`` holds it:
    ids, timeouts (ms), the metadata for the selected protocol and the assignment (bytes)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    """One committed partition offset (``OffsetCommitValue``): ``leader_epoch`` -1 means none;
    ``expire_timestamp_ms`` ``None`` unless the request carried a retention time (v2-v4)."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None


@domain_event("consumer_group.ClassicGroupMetadataRecorded")
@dataclass(frozen=True, slots=True)
class ClassicGroupMetadataRecorded(DomainEvent):
    """The classic group as a whole (Kafka's ``GroupMetadata`` record, type 2): ``state`` is the
    state it was recorded in (``Empty``, ``CompletingRebalance``, ``Stable``), ``generation``
    Kafka's generation id, ``protocol_type``/``protocol`` ``None`` when the group is empty,
    ``leader`` the leader's member id, ``members`` sorted by member id."""

    group_id: str
    state: str
    generation: int
    protocol_type: str | None
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int
    members: tuple[ClassicMemberMetadata, ...]


@domain_event("consumer_group.OffsetsCommitted")
@dataclass(frozen=True, slots=True)
class OffsetsCommitted(DomainEvent):
    """An OffsetCommit request stored ``offsets`` (one per partition that passed validation) for
    ``member_id`` at ``generation`` (-1 and "" for an admin / simple-group commit)."""

    group_id: str
    member_id: str
    generation: int
    offsets: tuple[CommittedOffset, ...]


# -- group admin (DeleteGroups 42, OffsetDelete 47): appended after the records above -----------


@dataclass(frozen=True, slots=True)
class DeletedOffset:
    """One partition whose committed offset was tombstoned."""

    topic: str
    partition: int


@domain_event("consumer_group.OffsetsDeleted")
@dataclass(frozen=True, slots=True)
class OffsetsDeleted(DomainEvent):
    """Committed offsets tombstoned (Kafka's ``OffsetCommit`` record with a null value,
    ``OffsetMetadataManager.deleteOffsets`` for OffsetDelete, and every offset of a group that
    DeleteGroups removes, ``GroupCoordinatorShard.deleteGroups``). Only partitions that had an
    offset are listed."""

    group_id: str
    partitions: tuple[DeletedOffset, ...]


@domain_event("consumer_group.ConsumerGroupDeleted")
@dataclass(frozen=True, slots=True)
class ConsumerGroupDeleted(DomainEvent):
    """DeleteGroups removed the (Empty) classic group: Kafka's ``GroupMetadata`` tombstone. Its
    offsets were tombstoned by an :class:`OffsetsDeleted` just before it; folding this event
    forgets the group entirely, so the same id can be used again as a new group."""

    group_id: str
