"""Messages of :class:`actors.rlmm.actor.RlmmPartitionActor` (one actor per metadata partition).

``msgspec.Struct``s on ``actors.messages._Msg`` (equality by fields, picklable, a bounded repr).
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

    metadata: RemoteLogSegmentMetadata


class UpdateRemoteLogSegmentMetadata(_Msg):
    """``updateRemoteLogSegmentMetadata``: reply :class:`MetadataStored`."""

    update: RemoteLogSegmentMetadataUpdate


class PutRemotePartitionDeleteMetadata(_Msg):
    """``putRemotePartitionDeleteMetadata``: reply :class:`MetadataStored`."""

    metadata: RemotePartitionDeleteMetadata


class MetadataStored(_Msg):
    """A write is durable and applied: it is record ``offset`` (stream version − 1) of
    ``metadata_partition``; ``applied`` is whether it changed the caches (``False``: dropped,
    e.g. an invalid transition — Kafka's future succeeds all the same)."""

    metadata_partition: int
    offset: int
    applied: bool


class GetRemoteLogSegmentMetadata(_Msg):
    """``remoteLogSegmentMetadata(tp, leader_epoch, offset)`` → :class:`RlmmReply` (metadata or ``None``)."""

    topic_id_partition: TopicIdPartition
    leader_epoch: int
    offset: int


class GetNextSegmentWithTxnIndex(GetRemoteLogSegmentMetadata):
    """``nextSegmentWithTxnIndex(tp, leader_epoch, offset)`` → :class:`RlmmReply`."""


class GetHighestOffsetForEpoch(_Msg):
    """``highestOffsetForEpoch(tp, leader_epoch)`` → :class:`RlmmReply` (int or ``None``)."""

    topic_id_partition: TopicIdPartition
    leader_epoch: int


class GetRemoteLogSize(GetHighestOffsetForEpoch):
    """``remoteLogSize(tp, leader_epoch)`` → :class:`RlmmReply` (bytes)."""


class ListRemoteLogSegments(_Msg):
    """``listRemoteLogSegments(tp[, leader_epoch])`` → :class:`RlmmReply` (a list)."""

    topic_id_partition: TopicIdPartition
    leader_epoch: Optional[int] = None


class IsReady(_Msg):
    """``isReady(tp)`` → :class:`RlmmReply` (bool). Answered even while recovering (``False``)."""

    topic_id_partition: TopicIdPartition


class RlmmReply(_Msg):
    """The answer to a query: ``value`` (metadata, list, int, bool or ``None``)."""

    value: Any


class ReconcileAssignment(_Msg):
    """The user partitions this broker leads or follows whose metadata partition is this
    actor's (``onPartitionLeadershipChanges`` / ``onStopPartitions`` reduced to the full set).
    Partitions of other metadata partitions are ignored. Reply :class:`AssignmentReconciled`."""

    user_partitions: Sequence[TopicIdPartition]

    def __post_init__(self) -> None:
        self.user_partitions = list(self.user_partitions)


class AssignmentReconciled(_Msg):
    """Reply to :class:`ReconcileAssignment`: the registered partitions now (sorted by str),
    and those ignored as belonging to another metadata partition."""

    metadata_partition: int
    registered: Sequence[TopicIdPartition]
    ignored: Sequence[TopicIdPartition]

    def __post_init__(self) -> None:
        self.registered = list(self.registered)
        self.ignored = list(self.ignored)


class TakeSnapshot(_Msg):
    """Save a snapshot of the actor's state now; reply :class:`SnapshotTaken`."""


class SnapshotTaken(_Msg):
    """A snapshot of metadata partition ``metadata_partition`` at stream ``version`` (global
    ``position``) is stored (or already was)."""

    metadata_partition: int
    version: int
    position: int


class RecoverStep(_Msg):
    """To itself: fold the next page of the stream during recovery (so requests arriving in
    between are answered ``NotReady`` instead of waiting)."""

    generation: int

