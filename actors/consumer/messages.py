"""Messages of the :class:`~actors.consumer.actor.ConsumerGroupActor` (frozen dataclasses,
pickled by Thespian). One command per Kafka request; the replies are the decider's result types
(:mod:`actors.consumer.classic`: ``JoinGroupResult``, ``SyncGroupResult``, ``HeartbeatResult``,
``LeaveGroupResult``, ``OffsetCommitResult``) plus :class:`OffsetFetchReply` and
:class:`ConsumerGroupSummary`. Any command may also be answered ``NotReady`` (recovering) or
``Failure`` (append refused: COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR)."""

from __future__ import annotations

from dataclasses import dataclass

from actors.consumer.classic import CommitPartition, FetchedOffset, LeaveMember

__all__ = [
    "ConsumerGroupDescribeCmd",
    "ConsumerGroupHeartbeatCmd",
    "ConsumerGroupSummary",
    "DeleteGroupCmd",
    "DescribeConsumerGroup",
    "DescribeGroupCmd",
    "HeartbeatCmd",
    "JoinGroupCmd",
    "LeaveGroupCmd",
    "OffsetCommitCmd",
    "OffsetFetchCmd",
    "OffsetDeleteCmd",
    "OffsetFetchReply",
    "SyncGroupCmd",
]


@dataclass(frozen=True)
class JoinGroupCmd:
    """JoinGroup (11): ``protocols`` ``(name, metadata)`` in preference order; timeouts in ms
    (``rebalance_timeout_ms`` -1 for v0). Answered when the generation completes (parked)."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str
    client_host: str
    api_version: int


@dataclass(frozen=True)
class SyncGroupCmd:
    """SyncGroup (14): the leader's ``assignments`` (member id → bytes); others send none.
    Answered when the leader's assignment is stored (parked in CompletingRebalance)."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    generation: int
    protocol_type: str | None
    protocol: str | None
    assignments: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class HeartbeatCmd:
    """Heartbeat (12)."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    generation: int


@dataclass(frozen=True)
class LeaveGroupCmd:
    """LeaveGroup (13): one member (v0-2) or a batch (v3+)."""

    group_id: str
    members: tuple[LeaveMember, ...]


@dataclass(frozen=True)
class OffsetCommitCmd:
    """OffsetCommit (8) of partitions of known topics (the wire answers unknown ones itself);
    ``retention_ms`` -1 unless v2-v4 carried one."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    generation: int
    partitions: tuple[CommitPartition, ...]
    api_version: int
    retention_ms: int = -1


@dataclass(frozen=True)
class OffsetFetchCmd:
    """OffsetFetch (9): ``partitions`` ``(topic, partition)`` or ``None`` for all."""

    group_id: str
    partitions: tuple[tuple[str, int], ...] | None
    #: v9 (KIP-848): checked by a consumer-protocol group (``None`` / -1: an admin fetch)
    member_id: str | None = None
    member_epoch: int = -1


@dataclass(frozen=True)
class OffsetFetchReply:
    """The committed offsets asked for (:class:`FetchedOffset`, -1 when none)."""

    offsets: tuple[FetchedOffset, ...]


@dataclass(frozen=True)
class DescribeConsumerGroup:
    """Ask the group's state (ListGroups)."""

    group_id: str


@dataclass(frozen=True)
class ConsumerGroupSummary:
    """``state`` (ClassicGroupState display name), ``protocol_type`` ("" when none), ``exists``
    (False: nothing was ever recorded for the group), member count."""

    group_id: str
    state: str
    protocol_type: str
    exists: bool
    members: int
    #: "classic" or "consumer" (KIP-848 consumer protocol; ``state`` is then the
    #: ConsumerGroupState: Empty, Assigning, Reconciling, Stable)
    group_type: str = "classic"


# -- group admin (DescribeGroups 15, DeleteGroups 42, OffsetDelete 47) ----------------------------


@dataclass(frozen=True)
class DescribeGroupCmd:
    """DescribeGroups of one group → :class:`actors.consumer.classic.DescribedGroup`."""

    group_id: str


@dataclass(frozen=True)
class DeleteGroupCmd:
    """DeleteGroups of one group → :class:`actors.consumer.classic.DeleteGroupResult` once the
    tombstones are durable."""

    group_id: str


@dataclass(frozen=True)
class OffsetDeleteCmd:
    """OffsetDelete: ``partitions`` ``(topic, partition)`` of known topics →
    :class:`actors.consumer.classic.OffsetDeleteResult` once the tombstones are durable."""

    group_id: str
    partitions: tuple[tuple[str, int], ...]



@dataclass(frozen=True)
class ConsumerGroupHeartbeatCmd:
    """ConsumerGroupHeartbeat (68), KIP-848. ``owned`` the request's TopicPartitions as
    ``(topic id, partitions)`` (``None``: null); ``image`` the topic metadata the wire knows,
    ``(topic name, topic id, partition count)`` of every topic (the decider recomputes the
    subscription metadata of all members from it). Answered ``ConsumerHeartbeatResult``."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: tuple[str, ...] | None
    server_assignor: str | None
    owned: tuple[tuple[str, tuple[int, ...]], ...] | None
    client_id: str
    client_host: str
    image: tuple[tuple[str, str, int], ...]
    api_version: int = 0
    regex: str | None = None


@dataclass(frozen=True)
class ConsumerGroupDescribeCmd:
    """ConsumerGroupDescribe (69) of one group → ``ConsumerGroupDescription`` (error
    GROUP_ID_NOT_FOUND for a group that is not a consumer-protocol group)."""

    group_id: str
