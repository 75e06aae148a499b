"""One log segment: the ``.log`` file with its sparse ``.index`` and ``.timeindex`` (Kafka
``LogSegment``, ``OffsetIndex``, ``TimeIndex``, ``LogFileUtils``; storage/src/main/java/org/apache/kafka/
storage/internals/log/): append with index entries every ``index.interval.bytes``, roll decision,
offset and timestamp lookups, truncation and crash recovery of a single segment."""

from __future__ import annotations

import bisect
import os
import struct
from dataclasses import replace
from pathlib import Path

from store import record_batch as rb
from store.log.config import LogConfig

__all__ = ["LogSegment", "segment_file_name"]

INT_MAX = 2**31 - 1

_OFFSET_ENTRY = struct.Struct(">ii")  # relativeOffset, position  (Kafka OffsetIndex, 8 bytes)
_TIME_ENTRY = struct.Struct(">qi")  # timestamp, relativeOffset  (Kafka TimeIndex, 12 bytes)


def segment_file_name(base_offset: int, suffix: str = ".log") -> str:
    """Kafka's 20-digit zero-padded file name for a segment file (``LogFileUtils#filenamePrefixFromOffset``)."""
    return f"{base_offset:020d}{suffix}"


class LogSegment:
    """One segment: the ``.log`` file plus its sparse ``.index`` and ``.timeindex`` (Kafka
    ``LogSegment``, ``OffsetIndex``, ``TimeIndex``). Index entries are also kept in memory
    (two parallel lists per index) for bisecting. Not thread-safe on its own; the owning
    :class:`PartitionLog` serialises access."""

    def __init__(self, directory: Path, base_offset: int, config: LogConfig, created_ms: int):
        self.dir = directory
        self.base_offset = base_offset
        self.config = config
        self.log_path = directory / segment_file_name(base_offset)
        self.index_path = directory / segment_file_name(base_offset, ".index")
        self.time_index_path = directory / segment_file_name(base_offset, ".timeindex")
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        # O_APPEND: index entries always land at the end, also after a truncation
        self._index_fd = os.open(self.index_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self._time_fd = os.open(self.time_index_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.size = os.fstat(self._fd).st_size
        self.created_ms = created_ms
        # offset index: key = last offset of the indexed batch, value = its position
        self._idx_offsets: list[int] = []
        self._idx_positions: list[int] = []
        # time index: (max timestamp so far, offset of it)
        self._ts_timestamps: list[int] = []
        self._ts_offsets: list[int] = []
        self.max_timestamp_so_far = rb.NO_TIMESTAMP
        self.offset_of_max_timestamp_so_far = -1
        self.rolling_based_timestamp: int | None = None
        self.next_offset = base_offset  # offset after the last batch (exclusive end)
        self._bytes_since_last_index_entry = 0

    # -- files
    @property
    def max_index_entries(self) -> int:
        """Capacity of the offset index (``segment.index.bytes / 8``); a full index forces a roll."""
        return max(1, self.config.segment_index_bytes // _OFFSET_ENTRY.size)

    def close(self) -> None:
        """Close the file descriptors (idempotent)."""
        for name in ("_fd", "_index_fd", "_time_fd"):
            fd = getattr(self, name)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)

    def delete_files(self) -> None:
        """Close and unlink the segment's files (Kafka deletes after ``file.delete.delay.ms``;
        Shoal deletes at once: readers hold bytes, not file handles)."""
        self.close()
        for p in (self.log_path, self.index_path, self.time_index_path):
            try:
                p.unlink()
            except FileNotFoundError:
                pass

    def flush(self) -> None:
        """fsync the log and both indexes."""
        os.fsync(self._fd)
        os.fsync(self._index_fd)
        os.fsync(self._time_fd)

    def pread(self, position: int, length: int) -> bytes:
        """Read ``length`` bytes at ``position`` of the ``.log`` file."""
        out = os.pread(self._fd, length, position)
        return out

    @property
    def fileno(self) -> int:
        """The ``.log`` file descriptor (for ``os.sendfile``; valid while the segment lives)."""
        return self._fd

    # -- loading
    def load_indexes(self) -> bool:
        """Load the index files, check them for sanity against the log size (Kafka
        ``OffsetIndex#sanityCheck``) and the last batch; returns False if they must be rebuilt."""
        raw = os.pread(self._index_fd, os.fstat(self._index_fd).st_size, 0)
        traw = os.pread(self._time_fd, os.fstat(self._time_fd).st_size, 0)
        if len(raw) % _OFFSET_ENTRY.size or len(traw) % _TIME_ENTRY.size:
            return False
        offs, poss = [], []
        for rel, pos in _OFFSET_ENTRY.iter_unpack(raw):
            if pos >= self.size or (offs and rel + self.base_offset <= offs[-1]):
                return False
            offs.append(self.base_offset + rel)
            poss.append(pos)
        tss, toffs = [], []
        for ts, rel in _TIME_ENTRY.iter_unpack(traw):
            tss.append(ts)
            toffs.append(self.base_offset + rel)
        # Last batch: read its header to know next_offset and the time statistics tail.
        start = poss[-1] if poss else 0
        try:
            headers = self._scan_headers(start, self.size)
        except rb.CorruptRecordError:
            return False
        self._idx_offsets, self._idx_positions = offs, poss
        self._ts_timestamps, self._ts_offsets = tss, toffs
        if tss:
            self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far = max(zip(tss, toffs), key=lambda t: t[0])
        for h in headers:
            self._note_batch_stats(h)
        if headers:
            self.next_offset = headers[-1].next_offset
        elif self.size == 0:
            self.next_offset = self.base_offset
        else:
            return False
        first = self._scan_headers(0, min(self.size, rb.RECORD_BATCH_OVERHEAD), limit=1) if self.size else []
        if first:
            self.rolling_based_timestamp = first[0].max_timestamp
        return True

    def _scan_headers(self, start: int, end: int, limit: int | None = None) -> list[rb.BatchHeader]:
        """Headers of the batches in ``[start, end)`` read with pread (structure only)."""
        out = []
        pos = start
        while pos < end and (limit is None or len(out) < limit):
            head = os.pread(self._fd, rb.RECORD_BATCH_OVERHEAD, pos)
            h = rb.parse_header(head)
            out.append(replace(h, position=pos))
            pos += h.size_in_bytes
        return out

    def recover(self) -> int:
        """Re-validate every batch (CRC-32C) reading one batch at a time, truncate the file at
        the first invalid or torn one, and rebuild both indexes (Kafka ``LogSegment#recover``).
        Returns the number of bytes truncated."""
        headers: list[rb.BatchHeader] = []
        pos = 0
        while pos < self.size:
            head = os.pread(self._fd, rb.RECORD_BATCH_OVERHEAD, pos)
            try:
                h = rb.parse_header(head)
                if pos + h.size_in_bytes > self.size:
                    break
                rb.validate_batch(os.pread(self._fd, h.size_in_bytes, pos))
            except (rb.CorruptRecordError, rb.UnsupportedCompressionTypeError):
                break
            headers.append(replace(h, position=pos))
            pos += h.size_in_bytes
        truncated = self.size - pos
        if truncated:
            os.ftruncate(self._fd, pos)
            self.size = pos
        self._rebuild_from(headers)
        return truncated

    def _rebuild_from(self, headers: list[rb.BatchHeader]) -> None:
        os.ftruncate(self._index_fd, 0)
        os.ftruncate(self._time_fd, 0)
        self._idx_offsets, self._idx_positions = [], []
        self._ts_timestamps, self._ts_offsets = [], []
        self.max_timestamp_so_far = rb.NO_TIMESTAMP
        self.offset_of_max_timestamp_so_far = -1
        self._bytes_since_last_index_entry = 0
        self.rolling_based_timestamp = headers[0].max_timestamp if headers else None
        self.next_offset = self.base_offset
        for h in headers:
            self._index_batch(h, h.position)
            self.next_offset = h.next_offset

    # -- appending
    def _note_batch_stats(self, h: rb.BatchHeader) -> None:
        if h.max_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = h.max_timestamp
            self.offset_of_max_timestamp_so_far = h.last_offset

    def _index_batch(self, h: rb.BatchHeader, position: int) -> None:
        self._note_batch_stats(h)
        if self._bytes_since_last_index_entry > self.config.index_interval_bytes:
            if not self._idx_offsets or h.last_offset > self._idx_offsets[-1]:
                self._idx_offsets.append(h.last_offset)
                self._idx_positions.append(position)
                os.write(self._index_fd, _OFFSET_ENTRY.pack(h.last_offset - self.base_offset, position))
            if not self._ts_timestamps or self.max_timestamp_so_far > self._ts_timestamps[-1]:
                self._ts_timestamps.append(self.max_timestamp_so_far)
                self._ts_offsets.append(self.offset_of_max_timestamp_so_far)
                os.write(
                    self._time_fd,
                    _TIME_ENTRY.pack(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far - self.base_offset),
                )
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += h.size_in_bytes

    def append(self, data: bytes | bytearray, headers: list[rb.BatchHeader]) -> None:
        """Append validated batches whose offsets are already assigned (``headers`` positions are
        relative to ``data``). Updates the in-memory and on-file indexes."""
        position = self.size
        os.lseek(self._fd, position, os.SEEK_SET)
        view = memoryview(data)
        written = 0
        while written < len(view):
            written += os.write(self._fd, view[written:])
        if self.rolling_based_timestamp is None and headers:
            self.rolling_based_timestamp = headers[0].max_timestamp
        for h in headers:
            self._index_batch(h, position + h.position)
        self.size += len(data)
        self.next_offset = headers[-1].next_offset

    def should_roll(self, incoming_bytes: int, max_timestamp_in_messages: int, max_offset_in_messages: int, now_ms: int) -> bool:
        """Kafka ``LogSegment#shouldRoll``: full by ``segment.bytes``, old by ``segment.ms``
        (measured from the first batch's timestamp to the incoming one's, or from creation when
        the segment has no timestamp), a full offset index, or offsets beyond int32 of the base."""
        reached_roll_ms = self.time_waited_for_roll(now_ms, max_timestamp_in_messages) > self.config.segment_ms - self.config.segment_jitter_ms
        return (
            self.size > self.config.segment_bytes - incoming_bytes
            or (self.size > 0 and reached_roll_ms)
            or len(self._idx_offsets) >= self.max_index_entries
            or max_offset_in_messages - self.base_offset > INT_MAX
        )

    def time_waited_for_roll(self, now_ms: int, message_timestamp: int) -> int:
        """Kafka ``LogSegment#timeWaitedForRoll`` (ms)."""
        if self.rolling_based_timestamp is not None and self.rolling_based_timestamp >= 0:
            return message_timestamp - self.rolling_based_timestamp
        return now_ms - self.created_ms

    # -- lookups
    def translate_offset(self, offset: int, start_position: int = 0) -> rb.BatchHeader | None:
        """The header (with its file position) of the first batch whose last offset is
        ``>= offset``, searching from the index entry at or below ``offset``; None if no such
        batch in this segment (Kafka ``LogSegment#translateOffset``)."""
        i = bisect.bisect_right(self._idx_offsets, offset) - 1
        pos = max(start_position, self._idx_positions[i] if i >= 0 else 0)
        while pos < self.size:
            head = os.pread(self._fd, rb.RECORD_BATCH_OVERHEAD, pos)
            h = rb.parse_header(head)
            if h.last_offset >= offset:
                return replace(h, position=pos)
            pos += h.size_in_bytes
        return None

    def find_offset_by_timestamp(self, timestamp: int, start_offset: int) -> tuple[int, int] | None:
        """``(timestamp, offset)`` of the first record at or after ``start_offset`` whose timestamp
        is ``>= timestamp``, or None (Kafka ``LogSegment#findOffsetByTimestamp``)."""
        i = bisect.bisect_left(self._ts_timestamps, timestamp) - 1
        # Every record up to this entry's offset has a timestamp < target (the entry holds the max
        # so far), so the scan may start there. (Kafka's TimeIndex#lookup takes <= target; with
        # equal timestamps that can skip an earlier record, so Shoal takes the strict bound.)
        from_offset = max(start_offset, self._ts_offsets[i] if i >= 0 else self.base_offset)
        h = self.translate_offset(from_offset)
        pos = h.position if h else self.size
        while pos < self.size:
            head = rb.parse_header(os.pread(self._fd, rb.RECORD_BATCH_OVERHEAD, pos))
            if head.max_timestamp >= timestamp:
                batch = os.pread(self._fd, head.size_in_bytes, pos)
                for rec in rb.iter_records(batch):
                    if rec.timestamp >= timestamp and rec.offset >= start_offset:
                        return rec.timestamp, rec.offset
            pos += head.size_in_bytes
        return None

    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding an offset ``>= offset`` (whole batches, as Kafka
        ``LogSegment#truncateTo``). Returns the bytes removed."""
        h = self.translate_offset(offset)
        if h is None:
            return 0
        cut = h.position  # the batch holding ``offset`` goes too (Kafka LogSegment#truncateTo)
        removed = self.size - cut
        if removed:
            os.ftruncate(self._fd, cut)
            self.size = cut
            headers = self._scan_headers(0, cut)
            self._rebuild_from(headers)
        return removed

    def offset_index_entries(self) -> list[tuple[int, int]]:
        """``(offset, position)`` pairs of the offset index (for tests and tiering)."""
        return list(zip(self._idx_offsets, self._idx_positions))

    def time_index_entries(self) -> list[tuple[int, int]]:
        """``(timestamp, offset)`` pairs of the time index."""
        return list(zip(self._ts_timestamps, self._ts_offsets))

    @property
    def largest_timestamp(self) -> int:
        """Max timestamp of the segment's batches, or the file's mtime in ms if it has none
        (Kafka ``LogSegment#largestTimestamp``; used by time retention)."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        return int(os.stat(self.log_path).st_mtime * 1000)
