"""Committed offsets, shared by the classic (:mod:`actors.consumer.classic`) and the consumer
protocol (:mod:`actors.consumer.modern`) deciders: the per-partition part of OffsetCommit
(``OffsetMetadataManager.commitOffset``: metadata longer than ``offset.metadata.max.bytes``
characters is OFFSET_METADATA_TOO_LARGE for that partition only, null metadata is stored as "",
the commit time is now, a v2-v4 retention time sets the expiry) and OffsetFetch
(``fetchOffsets``/``fetchAllOffsets``: -1 / -1 / "" for a partition without an offset)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from typing import Callable

from events.consumer_group import CommittedOffset, DeletedOffset, OffsetsDeleted

__all__ = ["FetchedOffset", "decide_offset_delete", "fetch_committed", "validate_commit_partitions"]


@dataclass(frozen=True)
class FetchedOffset:
    """OffsetFetch of one partition: offset -1, leader epoch -1, metadata "" when none."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    error: str | None = None


def validate_commit_partitions(partitions: list[Any], now_ms: int, max_metadata_bytes: int,
                               retention_ms: int = -1) -> tuple[list[tuple[str, int, str | None]], list[CommittedOffset]]:
    """``(per partition (topic, partition, error) in request order, offsets to store)`` for the
    ``CommitPartition`` list of an OffsetCommit that passed the group checks."""
    results: list[tuple[str, int, str | None]] = []
    stored: list[CommittedOffset] = []
    for p in partitions:
        meta = p.metadata or ""
        if len(meta) > max_metadata_bytes:
            results.append((p.topic, p.partition, "OFFSET_METADATA_TOO_LARGE"))
            continue
        results.append((p.topic, p.partition, None))
        stored.append(CommittedOffset(p.topic, p.partition, p.offset, p.leader_epoch, meta, now_ms,
                                      now_ms + retention_ms if retention_ms >= 0 else None))
    return results, stored


def fetch_committed(offsets: dict[tuple[str, int], CommittedOffset], partitions: list[tuple[str, int]] | None) -> list[Any]:
    """OffsetFetch of ``partitions`` (``None``: every committed offset, sorted) as
    ``FetchedOffset`` values."""
    if partitions is None:
        return [FetchedOffset(o.topic, o.partition, o.offset, o.leader_epoch, o.metadata) for _, o in sorted(offsets.items())]
    out = []
    for t, p in partitions:
        o = offsets.get((t, p))
        out.append(FetchedOffset(t, p, -1, -1, "") if o is None else FetchedOffset(t, p, o.offset, o.leader_epoch, o.metadata))
    return out


def decide_offset_delete(group_id: str, offsets: dict[tuple[str, int], CommittedOffset], partitions: list[tuple[str, int]],
                         subscribed: Callable[[str], bool]) -> tuple[tuple[tuple[str, int, str | None], ...], OffsetsDeleted | None]:
    """The per-partition part of OffsetDelete (``OffsetMetadataManager.deleteOffsets``), once the
    group passed its own check: every partition of a topic for which ``subscribed(topic)`` holds
    is GROUP_SUBSCRIBED_TO_TOPIC; the others are NONE (``None``). Returns ``(per partition
    (topic, partition, error) in request order, one OffsetsDeleted for the partitions that had an
    offset, or None)``."""
    results: list[tuple[str, int, str | None]] = []
    gone: list[DeletedOffset] = []
    for t, p in partitions:
        if subscribed(t):
            results.append((t, p, "GROUP_SUBSCRIBED_TO_TOPIC"))
            continue
        results.append((t, p, None))
        if (t, p) in offsets and DeletedOffset(t, p) not in gone:
            gone.append(DeletedOffset(t, p))
    return tuple(results), (OffsetsDeleted(group_id, tuple(gone)) if gone else None)
