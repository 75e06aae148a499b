"""Committed offsets, shared by the classic (:mod:`actors.consumer.classic`) and the consumer
protocol (:mod:`actors.consumer.modern`) deciders: the per-partition part of OffsetCommit
(``OffsetMetadataManager.commitOffset``: metadata longer than ``offset.metadata.max.bytes``
characters is OFFSET_METADATA_TOO_LARGE for that partition only, null metadata is stored as "",
the commit time is now, a v2-v4 retention time sets the expiry) and OffsetFetch
(``fetchOffsets``/``fetchAllOffsets``: -1 / -1 / "" for a partition without an offset)."""

from __future__ import annotations

from typing import Any

from events.consumer_group import CommittedOffset

__all__ = ["fetch_committed", "validate_commit_partitions"]


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
    from actors.consumer.classic import FetchedOffset

    if partitions is None:
        return [FetchedOffset(o.topic, o.partition, o.offset, o.leader_epoch, o.metadata) for _, o in sorted(offsets.items())]
    out = []
    for t, p in partitions:
        o = offsets.get((t, p))
        out.append(FetchedOffset(t, p, -1, -1, "") if o is None else FetchedOffset(t, p, o.offset, o.leader_epoch, o.metadata))
    return out
