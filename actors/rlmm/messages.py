"""Messages of :class:`actors.rlmm.actor.RlmmPartitionActor` (one actor per metadata partition).

Plain picklable classes (``actors.messages._Msg``: ``__slots__``, ``__eq__``, ``__getstate__``).
Requests carry Kafka's value types from :mod:`events.rlmm_types` (frozen dataclasses, which
pickle). Replies are :class:`MetadataStored`, :class:`RlmmReply`, :class:`AssignmentReconciled`,
:class:`SnapshotTaken`, or the shared ``NotReady`` (still recovering: fail closed) and
``Failure(error, message)`` whose ``error`` is a Kafka exception class name from
:mod:`events.rlmm_errors` (rebuild it with ``exception_for``).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from actors.messages import _Msg
from events.rlmm_types import (
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemotePartitionDeleteMetadata,
    TopicIdPartition,
)

__all__ = [
    "AddRemoteLogSegmentMetadata",
    "AssignmentReconciled",
    "GetHighestOffsetForEpoch",
    "GetNextSegmentWithTxnIndex",
    "GetRemoteLogSegmentMetadata",
    "GetRemoteLogSize",
    "IsReady",
    "ListRemoteLogSegments",
    "MetadataStored",
    "PutRemotePartitionDeleteMetadata",
    "ReconcileAssignment",
    "RecoverStep",
    "RlmmReply",
    "SnapshotTaken",
    "TakeSnapshot",
    "UpdateRemoteLogSegmentMetadata",
]


class AddRemoteLogSegmentMetadata(_Msg):
    """``addRemoteLogSegmentMetadata``: reply :class:`MetadataStored` once durable and applied."""

    __slots__ = ("metadata",)

    def __init__(self, metadata: RemoteLogSegmentMetadata) -> None:
        self.metadata = metadata


class UpdateRemoteLogSegmentMetadata(_Msg):
    """``updateRemoteLogSegmentMetadata``: reply :class:`MetadataStored`."""

    __slots__ = ("update",)

    def __init__(self, update: RemoteLogSegmentMetadataUpdate) -> None:
        self.update = update


class PutRemotePartitionDeleteMetadata(_Msg):
    """``putRemotePartitionDeleteMetadata``: reply :class:`MetadataStored`."""

    __slots__ = ("metadata",)

    def __init__(self, metadata: RemotePartitionDeleteMetadata) -> None:
        self.metadata = metadata


class MetadataStored(_Msg):
    """A write is durable and applied: it is record ``offset`` (stream version − 1) of
    ``metadata_partition``; ``applied`` is whether it changed the caches (``False``: dropped,
    e.g. an invalid transition — Kafka's future succeeds all the same)."""

    __slots__ = ("metadata_partition", "offset", "applied")

    def __init__(self, metadata_partition: int, offset: int, applied: bool) -> None:
        self.metadata_partition = metadata_partition
        self.offset = offset
        self.applied = applied


class GetRemoteLogSegmentMetadata(_Msg):
    """``remoteLogSegmentMetadata(tp, leader_epoch, offset)`` → :class:`RlmmReply` (metadata or ``None``)."""

    __slots__ = ("topic_id_partition", "leader_epoch", "offset")

    def __init__(self, topic_id_partition: TopicIdPartition, leader_epoch: int, offset: int) -> None:
        self.topic_id_partition = topic_id_partition
        self.leader_epoch = leader_epoch
        self.offset = offset


class GetNextSegmentWithTxnIndex(GetRemoteLogSegmentMetadata):
    """``nextSegmentWithTxnIndex(tp, leader_epoch, offset)`` → :class:`RlmmReply`."""

    __slots__ = ()


class GetHighestOffsetForEpoch(_Msg):
    """``highestOffsetForEpoch(tp, leader_epoch)`` → :class:`RlmmReply` (int or ``None``)."""

    __slots__ = ("topic_id_partition", "leader_epoch")

    def __init__(self, topic_id_partition: TopicIdPartition, leader_epoch: int) -> None:
        self.topic_id_partition = topic_id_partition
        self.leader_epoch = leader_epoch


class GetRemoteLogSize(GetHighestOffsetForEpoch):
    """``remoteLogSize(tp, leader_epoch)`` → :class:`RlmmReply` (bytes)."""

    __slots__ = ()


class ListRemoteLogSegments(_Msg):
    """``listRemoteLogSegments(tp[, leader_epoch])`` → :class:`RlmmReply` (a list)."""

    __slots__ = ("topic_id_partition", "leader_epoch")

    def __init__(self, topic_id_partition: TopicIdPartition, leader_epoch: Optional[int] = None) -> None:
        self.topic_id_partition = topic_id_partition
        self.leader_epoch = leader_epoch


class IsReady(_Msg):
    """``isReady(tp)`` → :class:`RlmmReply` (bool). Answered even while recovering (``False``)."""

    __slots__ = ("topic_id_partition",)

    def __init__(self, topic_id_partition: TopicIdPartition) -> None:
        self.topic_id_partition = topic_id_partition


class RlmmReply(_Msg):
    """The answer to a query: ``value`` (metadata, list, int, bool or ``None``)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class ReconcileAssignment(_Msg):
    """The user partitions this broker leads or follows whose metadata partition is this
    actor's (``onPartitionLeadershipChanges`` / ``onStopPartitions`` reduced to the full set).
    Partitions of other metadata partitions are ignored. Reply :class:`AssignmentReconciled`."""

    __slots__ = ("user_partitions",)

    def __init__(self, user_partitions: Sequence[TopicIdPartition]) -> None:
        self.user_partitions = list(user_partitions)


class AssignmentReconciled(_Msg):
    """Reply to :class:`ReconcileAssignment`: the registered partitions now (sorted by str),
    and those ignored as belonging to another metadata partition."""

    __slots__ = ("metadata_partition", "registered", "ignored")

    def __init__(self, metadata_partition: int, registered: Sequence[TopicIdPartition], ignored: Sequence[TopicIdPartition]) -> None:
        self.metadata_partition = metadata_partition
        self.registered = list(registered)
        self.ignored = list(ignored)


class TakeSnapshot(_Msg):
    """Save a snapshot of the actor's state now; reply :class:`SnapshotTaken`."""

    __slots__ = ()


class SnapshotTaken(_Msg):
    """A snapshot of metadata partition ``metadata_partition`` at stream ``version`` (global
    ``position``) is stored (or already was)."""

    __slots__ = ("metadata_partition", "version", "position")

    def __init__(self, metadata_partition: int, version: int, position: int) -> None:
        self.metadata_partition = metadata_partition
        self.version = version
        self.position = position


class RecoverStep(_Msg):
    """To itself: fold the next page of the stream during recovery (so requests arriving in
    between are answered ``NotReady`` instead of waiting)."""

    __slots__ = ("generation",)

    def __init__(self, generation: int) -> None:
        self.generation = generation
