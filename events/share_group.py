"""Share-group membership, share-session and group-config events (stream ``share-group:<group id>``).

These are the decisions of the membership decider (:mod:`actors.share.membership`) and of the
:class:`actors.share.actor.ShareGroupActor`. They mirror the records Kafka's group coordinator
writes to ``__consumer_offsets`` for a share group (``ShareGroupMemberMetadata``,
``ShareGroupPartitionMetadata``, ``ShareGroupMetadata`` (group epoch),
``ShareGroupTargetAssignmentMember/Metadata``, ``ShareGroupCurrentMemberAssignment`` and their
tombstones; ``GroupMetadataManager`` / ``GroupCoordinatorRecordHelpers``), bundled per decision:
one heartbeat appends its events in one atomic append.

The share-partition events (records acquired, acknowledged, …) live in :mod:`events.share`; the
actor appends them to the same stream so one group's history is one ordered stream.

Share sessions are broker memory in Kafka (``ShareSessionCache``); ``ShareSessionOpened`` and
``ShareSessionClosed`` are recorded for audit only — the fold does not rebuild sessions (a client
whose session was lost gets SHARE_SESSION_NOT_FOUND and opens a new one, as after a broker restart).
"""

from __future__ import annotations

from dataclasses import dataclass

from events.base import DomainEvent, domain_event

__all__ = [
    "GroupConfigAltered",
    "GroupEpochBumped",
    "MemberAssignmentReconciled",
    "MemberFenced",
    "MemberSubscriptionUpdated",
    "MemberTarget",
    "ShareGroupDeleted",
    "ShareSessionClosed",
    "ShareSessionOpened",
    "SubscriptionMetadataUpdated",
    "TargetAssignmentUpdated",
    "TopicMeta",
    "TopicPartitions",
    "stream_id_for",
]


def stream_id_for(group_id: str) -> str:
    """The event stream of share group ``group_id``: ``"share-group:<group id>"``."""
    return f"share-group:{group_id}"


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    """Partitions of one topic: ``topic_id`` (Kafka's base64 Uuid string) and sorted ``partitions``."""

    topic_id: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicMeta:
    """One subscribed topic as the group saw it: ``name``, ``topic_id``, ``num_partitions``."""

    name: str
    topic_id: str
    num_partitions: int


@dataclass(frozen=True, slots=True)
class MemberTarget:
    """One member's target assignment."""

    member_id: str
    partitions: tuple[TopicPartitions, ...]


@domain_event("share_group.MemberSubscriptionUpdated")
@dataclass(frozen=True, slots=True)
class MemberSubscriptionUpdated(DomainEvent):
    """A member joined or changed its metadata (``ShareGroupMemberMetadata`` record).
    ``subscribed_topic_names`` sorted; ``rack_id`` ``None`` when not given."""

    group_id: str
    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...]


@domain_event("share_group.SubscriptionMetadataUpdated")
@dataclass(frozen=True, slots=True)
class SubscriptionMetadataUpdated(DomainEvent):
    """The set of subscribed topics with their ids and partition counts changed
    (``ShareGroupPartitionMetadata`` record). ``topics`` sorted by name; the full new set."""

    group_id: str
    topics: tuple[TopicMeta, ...]


@domain_event("share_group.GroupEpochBumped")
@dataclass(frozen=True, slots=True)
class GroupEpochBumped(DomainEvent):
    """The group epoch became ``group_epoch`` (``ShareGroupMetadata`` record)."""

    group_id: str
    group_epoch: int


@domain_event("share_group.TargetAssignmentUpdated")
@dataclass(frozen=True, slots=True)
class TargetAssignmentUpdated(DomainEvent):
    """The simple assignor computed the target assignment for ``assignment_epoch``
    (``ShareGroupTargetAssignmentMember`` + ``…Metadata`` records). ``members``: the full target,
    one entry per member, sorted by member id."""

    group_id: str
    assignment_epoch: int
    members: tuple[MemberTarget, ...]


@domain_event("share_group.MemberAssignmentReconciled")
@dataclass(frozen=True, slots=True)
class MemberAssignmentReconciled(DomainEvent):
    """A member moved to ``member_epoch`` with ``partitions`` (``ShareGroupCurrentMemberAssignment``;
    share groups have no revocation phase, ``ShareGroupAssignmentBuilder``)."""

    group_id: str
    member_id: str
    member_epoch: int
    previous_member_epoch: int
    partitions: tuple[TopicPartitions, ...]


@domain_event("share_group.MemberFenced")
@dataclass(frozen=True, slots=True)
class MemberFenced(DomainEvent):
    """A member left the group: ``reason`` is ``"LEAVE"`` (heartbeat with epoch -1) or
    ``"SESSION_TIMEOUT"`` (no heartbeat within the session timeout). Tombstones of its member
    metadata, target and current assignment (``shareGroupFenceMember``)."""

    group_id: str
    member_id: str
    reason: str


@domain_event("share_group.GroupConfigAltered")
@dataclass(frozen=True, slots=True)
class GroupConfigAltered(DomainEvent):
    """The group's dynamic configs are now exactly ``configs`` (key → value strings, validated)."""

    group_id: str
    configs: dict[str, str]


@domain_event("share_group.ShareSessionOpened")
@dataclass(frozen=True, slots=True)
class ShareSessionOpened(DomainEvent):
    """A ShareFetch with epoch 0 opened a share session for ``member_id`` (audit only) with node
    ``node_id`` (-1: the node the group's actor runs on; a client keeps one session per node it
    fetches from, see :mod:`actors.share.sessions`)."""

    group_id: str
    member_id: str
    partitions: tuple[TopicPartitions, ...]
    node_id: int = -1


@domain_event("share_group.ShareSessionClosed")
@dataclass(frozen=True, slots=True)
class ShareSessionClosed(DomainEvent):
    """A share session ended: ``reason`` ``"FINAL_EPOCH"`` (epoch -1), ``"REPLACED"`` (a new epoch
    0), ``"MEMBER_FENCED"`` or ``"EVICTED"`` (audit only); ``node_id`` as in
    :class:`ShareSessionOpened`."""

    group_id: str
    member_id: str
    reason: str
    node_id: int = -1


@domain_event("share_group.ShareGroupDeleted")
@dataclass(frozen=True, slots=True)
class ShareGroupDeleted(DomainEvent):
    """DeleteGroups removed the (empty) share group: its membership, configs and share state."""

    group_id: str

