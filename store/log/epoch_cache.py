"""The leader-epoch cache of a partition log (Kafka ``LeaderEpochFileCache`` and ``EpochEntry``,
storage/src/main/java/org/apache/kafka/storage/internals/epoch/LeaderEpochFileCache.java): epoch → start
offset, persisted to ``leader-epoch-checkpoint``; answers OffsetForLeaderEpoch (KIP-101, KIP-279)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from store.log.checkpoint import atomic_write, read_checkpoint

__all__ = ["EpochEntry", "LeaderEpochFileCache", "UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET"]

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


@dataclass(frozen=True, slots=True, order=True)
class EpochEntry:
    """A leader epoch and the first offset written in it (Kafka ``EpochEntry``)."""

    epoch: int
    start_offset: int


class LeaderEpochFileCache:
    """Kafka's ``LeaderEpochFileCache``: epoch → start offset, monotonic in both, persisted to
    ``leader-epoch-checkpoint`` on every assignment (synchronously, as Kafka's ``assign``)."""

    def __init__(self, path: Path | None):
        self._path = path
        self._entries: list[EpochEntry] = []
        if path is not None:
            for parts in read_checkpoint(path):
                if len(parts) == 2:
                    self._entries.append(EpochEntry(int(parts[0]), int(parts[1])))

    # -- queries
    def entries(self) -> list[EpochEntry]:
        """All entries, ascending."""
        return list(self._entries)

    def latest_entry(self) -> EpochEntry | None:
        """The newest entry or None."""
        return self._entries[-1] if self._entries else None

    def latest_epoch(self) -> int | None:
        """The newest epoch or None."""
        return self._entries[-1].epoch if self._entries else None

    def earliest_entry(self) -> EpochEntry | None:
        """The oldest entry or None."""
        return self._entries[0] if self._entries else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch the record at ``offset`` was written in, or None if ``offset`` precedes
        every entry (Kafka ``epochForOffset``)."""
        prev = None
        for e in self._entries:
            if e.start_offset == offset:
                return e.epoch
            if e.start_offset > offset:
                return prev
            prev = e.epoch
        return prev

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end offset exclusive)`` for OffsetForLeaderEpoch (Kafka ``endOffsetFor``):
        the latest epoch ends at the log end offset; an older epoch ends where the next one starts;
        an unknown-larger epoch gives ``(-1, -1)``."""
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self._entries and self._entries[-1].epoch == requested_epoch:
            return requested_epoch, log_end_offset
        higher = next((e for e in self._entries if e.epoch > requested_epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = None
        for e in self._entries:
            if e.epoch <= requested_epoch:
                floor = e
        if floor is None:
            return requested_epoch, higher.start_offset
        return floor.epoch, higher.start_offset

    def epoch_entries_in_range(self, start_offset: int, end_offset: int) -> list[EpochEntry]:
        """Entries covering ``[start_offset, end_offset)``: a copy truncated from the start at
        ``start_offset`` and from the end at ``end_offset`` (Kafka ``epochEntriesInRange``, which
        RemoteLogManager uses for a segment's ``segmentLeaderEpochs``)."""
        entries = list(self._entries)
        if start_offset >= 0:
            entries = self._truncated_from_start(entries, start_offset)
        return self._truncated_from_end(entries, end_offset)

    # -- updates
    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; entries that would break
        monotonicity are removed first. Returns True if the cache changed (then it is flushed).
        Raises ``ValueError`` for negative values (Kafka ``assign``)."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"Received invalid partition leader epoch entry EpochEntry({epoch}, {start_offset})")
        last = self.latest_entry()
        if last is not None and not (epoch != last.epoch or start_offset < last.start_offset):
            return False
        while self._entries and (self._entries[-1].epoch >= epoch or self._entries[-1].start_offset >= start_offset):
            self._entries.pop()
        self._entries.append(EpochEntry(epoch, start_offset))
        self.flush()
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """Remove entries with ``start_offset >= end_offset`` (log truncation)."""
        new = self._truncated_from_end(self._entries, end_offset)
        if new != self._entries:
            self._entries = new
            self.flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries wholly below ``start_offset``, moving the last of them to start there
        (Kafka ``truncateFromStart``: exclusive, keeps an entry at ``start_offset``)."""
        new = self._truncated_from_start(self._entries, start_offset)
        if new != self._entries:
            self._entries = new
            self.flush()

    @staticmethod
    def _truncated_from_start(entries: list[EpochEntry], start_offset: int) -> list[EpochEntry]:
        removed = [e for e in entries if e.start_offset <= start_offset]
        # entries are monotonic, so the removed ones are a prefix
        rest = entries[len(removed) :]
        if removed:
            rest = [EpochEntry(removed[-1].epoch, start_offset)] + rest
        return rest

    @staticmethod
    def _truncated_from_end(entries: list[EpochEntry], end_offset: int) -> list[EpochEntry]:
        if end_offset >= 0 and entries and entries[-1].start_offset >= end_offset:
            return [e for e in entries if e.start_offset < end_offset]
        return list(entries)

    def flush(self) -> None:
        """Persist the cache atomically (Kafka's checkpoint text format, version 0)."""
        if self._path is None:
            return
        body = f"0\n{len(self._entries)}\n" + "".join(f"{e.epoch} {e.start_offset}\n" for e in self._entries)
        atomic_write(self._path, body.encode())
