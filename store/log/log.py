"""One partition's local log (Kafka ``UnifiedLog``/``LocalLog``): RecordBatch v2 bytes in segment files, with Kafka's indexes,
leader-epoch cache, log start offset, high watermark, flush policy and crash recovery.

Layout of ``<log.dirs>/<topic>-<partition>/`` (Kafka ``LocalLog``/``LogSegment`` file names)::

    00000000000000000000.log        batches, in offset order, exactly as on the wire
    00000000000000000000.index      sparse offset index: (relativeOffset int32, position int32)
    00000000000000000000.timeindex  sparse time index: (timestamp int64, relativeOffset int32)
    leader-epoch-checkpoint         Kafka's checkpoint text: "0\\n<n>\\n<epoch> <startOffset>\\n…"
    partition-metadata.checkpoint   Shoal: "0\\n3\\nlog_start_offset N\\nrecovery_point N\\nhighest_offset_in_remote_storage N\\n"

Semantics follow Kafka's ``UnifiedLog``/``LocalLog``/``LogSegment``/``OffsetIndex``/``TimeIndex``/
``LeaderEpochFileCache`` (storage/src/main/java/org/apache/kafka/storage/internals/…):

* **append** (:meth:`PartitionLog.append_as_leader`) validates the Produce bytes (CRC, magic 2,
  ``max.message.bytes``), assigns offsets by rewriting each batch's ``baseOffset`` and stamps the
  leader epoch (neither is covered by the CRC), rolls the active segment first when
  ``segment.bytes``/``segment.ms`` say so (``LogSegment#shouldRoll``), writes, indexes every
  ``index.interval.bytes``, and fsyncs per ``flush.messages``/``flush.ms``.
* **read** (:meth:`PartitionLog.read`) returns whole batches from one offset up to ``max_bytes``
  (at least one batch, KIP-74), never above ``max_offset`` (the high watermark for consumers).
* **retention** (:meth:`PartitionLog.delete_old_segments`) by ``retention.*`` or, with
  ``remote.storage.enable=true``, by ``local.retention.*`` and only for segments already copied
  (``end offset <= highest offset in remote storage``, Kafka ``UnifiedLog#deleteOldSegments``).
* **recovery** after a crash re-validates every segment from the recovery point and truncates the
  log at the first torn or CRC-failing batch (``LogSegment#recover``), rebuilding its indexes.

Thread safety: every public method takes the log's lock; the wire layer and the
RemoteLogManager may call from different threads.

**For the wire layer** (Produce / Fetch / ListOffsets):

* Produce: ``info = log.append_as_leader(records_bytes, leader_epoch, now_ms)`` (raises errors
  carrying ``error_name``/``error_code``: CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE,
  RECORD_LIST_TOO_LARGE, UNSUPPORTED_COMPRESSION_TYPE, KAFKA_STORAGE_ERROR). acks=0/1/-1 on a
  single node: after the append (and ``log.flush()`` first if the durability rule demands an
  fsync before acknowledging) call ``log.update_high_watermark(log.log_end_offset)``; answer
  ``base_offset=info.first_offset``, ``log_append_time_ms=info.log_append_time_ms``,
  ``log_start_offset=info.log_start_offset``.
* Fetch: ``log.read(fetch_offset, max_bytes)`` (consumers; bounded by the high watermark) or
  ``max_offset=log.log_end_offset`` (replication). For ``remote.storage.enable=true`` topics call
  ``RemoteLogManager.read(topic_id_partition, fetch_offset, max_bytes)`` instead: same result
  type, and it serves offsets below ``local_log_start_offset`` from the remote tier.
  ``OffsetOutOfRangeError`` → OFFSET_OUT_OF_RANGE; answer ``high_watermark``,
  ``last_stable_offset`` (= HW), ``log_start_offset`` from the :class:`FetchDataInfo`.
* ListOffsets: ``log.fetch_offset_by_timestamp(ts)`` (``RemoteLogManager.fetch_offset_by_timestamp``
  for tiered topics) with -1 LATEST, -2 EARLIEST, -3 MAX_TIMESTAMP, -4 EARLIEST_LOCAL,
  -5 LATEST_TIERED or a timestamp; ``None`` → offset -1, timestamp -1.
"""


from __future__ import annotations

import bisect
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from store import record_batch as rb
from store.log.checkpoint import atomic_write, fsync_dir, read_checkpoint
from store.log.config import LogConfig
from store.log.epoch_cache import LeaderEpochFileCache
from store.log.errors import KafkaStorageError, OffsetOutOfRangeError, RecordBatchTooLargeError, RecordTooLargeError
from store.log.segment import LogSegment, segment_file_name
from store.producer_state import ProducerStateManager

__all__ = [
    "LogAppendInfo",
    "FetchDataInfo",
    "TimestampAndOffset",
    "PartitionLog",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "EARLIEST_LOCAL_TIMESTAMP",
    "LATEST_TIERED_TIMESTAMP",
    "log_dir_name",
    "record_limit_reached",
]

# ListOffsets special timestamps (Kafka ``ListOffsetsRequest``).
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5

_SEGMENT_RE = re.compile(r"^(\d{20})\.log$")


def record_limit_reached(batch_last_offset: int, fetch_offset: int, batches_read: int, max_records: int | None, min_batches: int) -> bool:
    """Whether a read for a share fetch ends after the batch whose last offset is
    ``batch_last_offset`` (the ``batches_read``-th from ``fetch_offset``): it holds the
    ``max_records``-th offset and ``min_batches`` were read (Kafka's soft ``maxFetchRecords``
    ends at a batch boundary). ``max_records`` ``None``: no record limit. Used by
    :meth:`PartitionLog.read` and by reads of another node's batches (``wire.leader_reads``)."""
    return max_records is not None and batches_read >= min_batches and batch_last_offset - fetch_offset + 1 >= max_records


def log_dir_name(topic: str, partition: int) -> str:
    """The partition directory name ``<topic>-<partition>`` (Kafka ``UnifiedLog#logDirName``)."""
    return f"{topic}-{partition}"


@dataclass(frozen=True, slots=True)
class LogAppendInfo:
    """Result of an append (Kafka ``LogAppendInfo``): offsets inclusive; ``log_append_time_ms``
    is -1 unless the topic uses LogAppendTime; ``flushed`` tells whether this append was
    fsynced per the flush policy before returning."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time_ms: int
    log_start_offset: int
    record_count: int
    batch_count: int
    valid_bytes: int
    flushed: bool
    #: the batch retried an idempotent producer's batch already written at these offsets:
    #: nothing was appended (KIP-98; Kafka answers the retry with the original offsets)
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class FetchDataInfo:
    """Result of a read: ``records`` are whole RecordBatch v2 bytes starting with the batch that
    holds ``fetch_offset`` (it may begin before it; clients skip lower offsets, as with Kafka).
    ``from_remote`` says whether they came from the remote tier. ``segment_base_offset`` and
    ``position`` locate the bytes in the local segment (for sendfile users); -1 for remote."""

    fetch_offset: int
    records: bytes
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    from_remote: bool = False
    segment_base_offset: int = -1
    position: int = -1

    @property
    def is_empty(self) -> bool:
        """True when no batch was returned."""
        return not self.records


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    """A ListOffsets answer (Kafka ``FileRecords.TimestampAndOffset``): timestamp -1 when not
    applicable, ``leader_epoch`` None when unknown."""

    timestamp: int
    offset: int
    leader_epoch: int | None


# --------------------------------------------------------------------------- the log


class PartitionLog:
    """The local log of one topic-partition (Kafka ``UnifiedLog`` minus replication).

    Open with :meth:`open`; it recovers the directory (see module docstring). Offsets are
    inclusive unless named ``end``/``next``: ``log_end_offset`` is the next offset to assign,
    ``high_watermark`` is exclusive (offsets below it are committed)."""

    def __init__(self, directory: Path, topic: str, partition: int, config: LogConfig):
        self.dir = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self._lock = threading.RLock()
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self.leader_epoch_cache = LeaderEpochFileCache(directory / "leader-epoch-checkpoint")
        self._log_start_offset = 0
        #: idempotent producers' epochs and last batches (KIP-98), rebuilt from the log at open
        self.producer_state = ProducerStateManager()
        self._recovery_point = 0
        self._high_watermark = 0
        self._highest_offset_in_remote_storage = -1
        self._compaction_floor: int | None = None
        self._unflushed_messages = 0
        self._last_flush_ms = 0
        self.recovered_bytes_truncated = 0
        self._closed = False

    # ----------------------------------------------------------------- lifecycle
    @classmethod
    def open(
        cls,
        log_dirs: str | os.PathLike[str],
        topic: str,
        partition: int,
        config: LogConfig | None = None,
        *,
        now_ms: int = 0,
    ) -> "PartitionLog":
        """Open (creating if needed) ``<log_dirs>/<topic>-<partition>/`` and recover it.

        Recovery (Kafka ``LogLoader``): leftover ``.tmp`` files are removed; segments from the
        one holding the recovery point onwards are re-validated batch by batch and the log is
        truncated at the first torn/corrupt batch; all later segments are dropped; indexes of
        the others are loaded (rebuilt if inconsistent). The leader-epoch cache is truncated to
        the recovered log end offset. The high watermark is set to the log end offset, as a
        single-replica leader does on ``makeLeader`` (ISR = {self}); callers with other rules
        call :meth:`update_high_watermark`. ``now_ms`` is the creation time for new segments."""
        directory = Path(log_dirs) / log_dir_name(topic, partition)
        directory.mkdir(parents=True, exist_ok=True)
        log = cls(directory, topic, partition, config or LogConfig())
        log._load(now_ms)
        return log

    def _meta_path(self) -> Path:
        return self.dir / "partition-metadata.checkpoint"

    def _write_meta(self) -> None:
        body = (
            "0\n3\n"
            f"log_start_offset {self._log_start_offset}\n"
            f"recovery_point {self._recovery_point}\n"
            f"highest_offset_in_remote_storage {self._highest_offset_in_remote_storage}\n"
        )
        atomic_write(self._meta_path(), body.encode())

    def _load(self, now_ms: int) -> None:
        for p in self.dir.glob("*.tmp"):
            p.unlink()
        meta = {parts[0]: int(parts[1]) for parts in read_checkpoint(self._meta_path()) if len(parts) == 2}
        self._log_start_offset = meta.get("log_start_offset", 0)
        self._recovery_point = meta.get("recovery_point", 0)
        self._highest_offset_in_remote_storage = meta.get("highest_offset_in_remote_storage", -1)
        bases = sorted(int(m.group(1)) for p in self.dir.iterdir() if (m := _SEGMENT_RE.match(p.name)))
        # Orphan index files without a .log are removed (Kafka LogLoader#removeTempFilesAndCollectSwapFiles).
        for p in self.dir.iterdir():
            if p.suffix in (".index", ".timeindex") and not (self.dir / (p.stem + ".log")).exists():
                p.unlink()
        truncated_tail = False
        for idx, base in enumerate(bases):
            seg = LogSegment(self.dir, base, self.config, created_ms=int(os.stat(self.dir / segment_file_name(base)).st_mtime * 1000))
            if truncated_tail:
                seg.delete_files()  # everything after a torn batch is gone (Kafka drops later segments)
                continue
            if self._segments and base < self._segments[-1].next_offset:
                seg.delete_files()  # overlapping leftover, e.g. from an interrupted roll
                continue
            next_base = bases[idx + 1] if idx + 1 < len(bases) else None
            needs_recovery = next_base is None or next_base > self._recovery_point
            if needs_recovery or not seg.load_indexes():
                removed = seg.recover()
                self.recovered_bytes_truncated += removed
                if removed:
                    truncated_tail = True
            if seg.size == 0 and self._segments:
                # an empty non-first segment left by a crash right after a roll: keep as active
                pass
            self._segments.append(seg)
            self._bases.append(base)
        if not self._segments:
            start = max(self._log_start_offset, self._highest_offset_in_remote_storage + 1)
            self._new_segment(start, now_ms)
        leo = self.log_end_offset
        self.leader_epoch_cache.truncate_from_end(leo)
        if self._log_start_offset > leo:
            self._log_start_offset = leo
        if self._log_start_offset < self._segments[0].base_offset and not self.config.remote_storage_enable:
            self._log_start_offset = self._segments[0].base_offset
        self._recovery_point = min(self._recovery_point, leo)
        self._high_watermark = leo
        self._last_flush_ms = now_ms
        self._rebuild_producer_state(now_ms)
        self._write_meta()

    def _rebuild_producer_state(self, now_ms: int) -> None:
        """Fold the producer id/epoch/sequence of every local batch at or above the log start
        offset into :attr:`producer_state` (Kafka ``UnifiedLog#rebuildProducerState``, without
        producer snapshots: the batch headers are read with pread, not the records)."""
        self.producer_state = ProducerStateManager()
        for seg in self._segments:
            if seg.size:
                self.producer_state.record(
                    (h for h in seg._scan_headers(0, seg.size) if h.producer_id >= 0 and h.last_offset >= self._log_start_offset), now_ms
                )

    def close(self) -> None:
        """Flush and close every segment (a clean shutdown)."""
        with self._lock:
            if self._closed:
                return
            self.flush()
            self._write_meta()
            for s in self._segments:
                s.close()
            self._closed = True

    def _new_segment(self, base_offset: int, now_ms: int) -> LogSegment:
        seg = LogSegment(self.dir, base_offset, self.config, created_ms=now_ms)
        self._segments.append(seg)
        self._bases.append(base_offset)
        fsync_dir(self.dir)
        return seg

    def update_config(self, config: LogConfig) -> None:
        """Apply new topic configs (AlterConfigs; Kafka ``UnifiedLog#updateConfig``). Takes
        effect for the next append, roll, flush and retention pass."""
        with self._lock:
            self.config = config
            for s in self._segments:
                s.config = config

    # ----------------------------------------------------------------- offsets
    @property
    def log_start_offset(self) -> int:
        """The earliest offset a consumer may read (local or remote)."""
        return self._log_start_offset

    @property
    def local_log_start_offset(self) -> int:
        """Base offset of the oldest local segment (Kafka ``UnifiedLog#localLogStartOffset``),
        never below the log start offset."""
        with self._lock:
            return max(self._segments[0].base_offset, self._log_start_offset)

    @property
    def log_end_offset(self) -> int:
        """The next offset to be assigned (exclusive end of the log)."""
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        """Offsets below this are committed and visible to consumers."""
        return self._high_watermark

    @property
    def last_stable_offset(self) -> int:
        """Equal to the high watermark: Shoal keeps no transaction state in the partition log
        (documented deviation: READ_COMMITTED is served like READ_UNCOMMITTED)."""
        return self._high_watermark

    @property
    def highest_offset_in_remote_storage(self) -> int:
        """The highest offset copied to the remote tier, -1 if none (Kafka
        ``UnifiedLog#highestOffsetInRemoteStorage``); local segments above it are never deleted."""
        return self._highest_offset_in_remote_storage

    @property
    def recovery_point(self) -> int:
        """Offsets below this were fsynced; recovery re-validates only from here."""
        return self._recovery_point

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark, clamped to ``[log_start_offset, log_end_offset]``; returns the
        new value (Kafka ``UnifiedLog#updateHighWatermark``). Single node, acks=1/all: the caller
        sets it to :attr:`log_end_offset` after the append is durable per its acks rule."""
        with self._lock:
            self._high_watermark = min(max(offset, self._log_start_offset), self.log_end_offset)
            return self._high_watermark

    @property
    def compaction_floor(self) -> int | None:
        """The controller's read-hold frontier ("since") for this partition: retention never
        makes offsets ``>= compaction_floor`` unreadable. None (the default) = no hold."""
        return self._compaction_floor

    def allow_compaction(self, since_offset: int | None) -> None:
        """The controller's ``AllowCompaction(id, since)`` (reference/controller.md §1): offsets
        below ``since_offset`` may be removed by retention, offsets at or above it must stay
        readable (locally or in the remote tier). ``None`` lifts the constraint. Applies to
        :meth:`delete_old_segments` without tiering and to remote expiry; local deletion of
        segments already in the remote tier does not need it (they stay readable)."""
        with self._lock:
            self._compaction_floor = since_offset

    def update_highest_offset_in_remote_storage(self, offset: int) -> None:
        """Record the highest offset the RemoteLogManager has copied (monotonic; persisted)."""
        with self._lock:
            if offset > self._highest_offset_in_remote_storage:
                self._highest_offset_in_remote_storage = offset
                self._write_meta()

    def maybe_increment_log_start_offset(self, new_log_start_offset: int) -> bool:
        """Move the log start offset forward (DeleteRecords, remote retention; Kafka
        ``UnifiedLog#maybeIncrementLogStartOffset``). Never moves it back or beyond the high
        watermark; truncates the epoch cache from the start. Returns True if it moved."""
        with self._lock:
            new = min(new_log_start_offset, self._high_watermark)
            if new <= self._log_start_offset:
                return False
            self._log_start_offset = new
            self.leader_epoch_cache.truncate_from_start(new)
            self.producer_state.truncate_head(new)
            self._write_meta()
            return True

    def delete_records(self, offset: int) -> int:
        """DeleteRecords on this (leader) partition (Kafka ``Partition.deleteRecordsOnLeader`` +
        ``UnifiedLog.maybeIncrementLogStartOffset``): ``offset`` ``-1`` means the high watermark;
        the log start offset moves up to it (never back), local segments wholly below it are
        deleted (under tiering only those already copied). Returns the low watermark (the log
        start offset after the call). Raises :class:`OffsetOutOfRangeError` for an offset below
        -1 or above the high watermark."""
        with self._lock:
            target = self._high_watermark if offset == -1 else offset
            if target < 0:
                raise OffsetOutOfRangeError(f"The offset {offset} for partition {self.topic}-{self.partition} is not valid")
            if target > self._high_watermark:
                raise OffsetOutOfRangeError(
                    f"Cannot increment the log start offset to {target} of partition {self.topic}-{self.partition} "
                    f"since it is larger than the high watermark {self._high_watermark}"
                )
            self.maybe_increment_log_start_offset(target)
            self.delete_segments_below(self._log_start_offset)
            return self._log_start_offset

    # ----------------------------------------------------------------- segments view
    def segments(self) -> list[LogSegment]:
        """Snapshot list of the local segments, oldest first (the last is the active one)."""
        with self._lock:
            return list(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        """The segment appends go to."""
        return self._segments[-1]

    def only_local_log_segments_size(self) -> int:
        """Bytes of the local segments whose data is not yet in remote storage (Kafka
        ``UnifiedLog#onlyLocalLogSegmentsSize``: segments with base offset > highest remote offset)."""
        with self._lock:
            return sum(s.size for s in self._segments if s.base_offset > self._highest_offset_in_remote_storage)

    def size_in_bytes(self) -> int:
        """Total bytes of all local segments."""
        with self._lock:
            return sum(s.size for s in self._segments)

    def segment_end_offset(self, segment: LogSegment) -> int:
        """Last offset (inclusive) of ``segment``: the next segment's base minus one, or the log
        end offset minus one for the active segment."""
        with self._lock:
            i = self._segments.index(segment)
            if i + 1 < len(self._segments):
                return self._segments[i + 1].base_offset - 1
            return self.log_end_offset - 1

    # ----------------------------------------------------------------- append
    def append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int, now_ms: int) -> LogAppendInfo:
        """Append the RecordBatch v2 bytes of one Produce partition as the leader.

        Validates (CRC-32C, magic 2, no control batches, each batch ``<= max.message.bytes``,
        ``<= segment.bytes``), assigns offsets from the log end offset, stamps ``leader_epoch``
        (and LogAppendTime = ``now_ms`` if configured), records a new epoch in the leader-epoch
        cache, rolls if needed, writes, and fsyncs per ``flush.messages``/``flush.ms``.
        Does not move the high watermark (see :meth:`update_high_watermark`).

        Returns :class:`LogAppendInfo`. Raises ``record_batch.CorruptRecordError`` (CORRUPT_MESSAGE),
        ``InvalidRecordError`` (INVALID_RECORD), ``UnsupportedCompressionTypeError``,
        :class:`RecordTooLargeError` (MESSAGE_TOO_LARGE), :class:`RecordBatchTooLargeError`
        (RECORD_LIST_TOO_LARGE), :class:`KafkaStorageError` (I/O),
        ``producer_state.InvalidProducerEpochError`` (INVALID_PRODUCER_EPOCH) and
        ``OutOfOrderSequenceError`` (OUT_OF_ORDER_SEQUENCE_NUMBER) for idempotent batches; a retry
        of an idempotent batch already written returns its original offsets with ``duplicate``
        set and writes nothing. Sources: Kafka ``UnifiedLog#append`` and
        ``analyzeAndValidateProducerState``, ``LogValidator``, ``LogSegment#append``."""
        log_append_time = now_ms if self.config.message_timestamp_type == "LogAppendTime" else None
        with self._lock:
            self._ensure_open()
            data, headers = rb.assign_offsets(records, self.log_end_offset, leader_epoch, log_append_time_ms=log_append_time)
            for h in headers:
                if h.size_in_bytes > self.config.max_message_bytes:
                    raise RecordTooLargeError(
                        f"batch of {h.size_in_bytes} bytes exceeds max.message.bytes={self.config.max_message_bytes}"
                    )
                if h.size_in_bytes > self.config.segment_bytes:
                    raise RecordBatchTooLargeError(
                        f"batch of {h.size_in_bytes} bytes exceeds segment.bytes={self.config.segment_bytes}"
                    )
            duplicate = self.producer_state.check(headers)  # raises on a fenced epoch or a sequence gap
            if duplicate is not None:
                return LogAppendInfo(
                    first_offset=duplicate.first_offset,
                    last_offset=duplicate.last_offset,
                    max_timestamp=-1,
                    offset_of_max_timestamp=-1,
                    log_append_time_ms=-1,
                    log_start_offset=self._log_start_offset,
                    record_count=0,
                    batch_count=0,
                    valid_bytes=0,
                    flushed=False,
                    duplicate=True,
                )
            first, last = headers[0].base_offset, headers[-1].last_offset
            max_ts_h = max(headers, key=lambda h: h.max_timestamp)
            try:
                seg = self._maybe_roll(len(data), max_ts_h.max_timestamp, last, now_ms)
                if leader_epoch >= 0:
                    self.leader_epoch_cache.assign(leader_epoch, first)
                seg.append(data, headers)
            except OSError as exc:
                raise KafkaStorageError(str(exc)) from exc
            self.producer_state.record(headers, now_ms)
            self.producer_state.expire(now_ms)
            return self._appended(first, last, headers, max_ts_h, log_append_time if log_append_time is not None else -1, len(data), now_ms)

    def append_as_follower(self, records: bytes | bytearray | memoryview, now_ms: int) -> LogAppendInfo:
        """Append RecordBatch v2 bytes fetched from the leader, with the offsets and partition
        leader epochs the leader assigned (Kafka ``UnifiedLog#appendAsFollower``: no offset
        assignment, no sequence validation, origin REPLICATION).

        Each batch is CRC/structure-checked; the first batch's base offset must equal
        :attr:`log_end_offset` and the batches must be contiguous, else
        :class:`OffsetOutOfRangeError`. Every batch's ``partitionLeaderEpoch`` (when >= 0) is
        assigned in the leader-epoch cache at its base offset (``LeaderEpochFileCache#assign``,
        a no-op unless the epoch is new). Producer state records the batches. Does not move the
        high watermark (the fetcher sets ``min(leader HW, LEO)``). Returns
        :class:`LogAppendInfo` (``log_append_time_ms`` -1). Raises
        ``record_batch.CorruptRecordError``, :class:`RecordBatchTooLargeError` (a batch larger
        than ``segment.bytes``), :class:`KafkaStorageError` (I/O) and
        :class:`OffsetOutOfRangeError` (not at the log end)."""
        data = bytes(records)
        with self._lock:
            self._ensure_open()
            headers = list(rb.iter_batches(data))
            if not headers:
                raise rb.InvalidRecordError("empty record set")
            expected = self.log_end_offset
            for h in headers:
                if h.base_offset != expected:
                    raise OffsetOutOfRangeError(
                        f"follower append at {h.base_offset} but the log end offset of {self.topic}-{self.partition} is {expected}"
                    )
                if h.size_in_bytes > self.config.segment_bytes:
                    raise RecordBatchTooLargeError(
                        f"batch of {h.size_in_bytes} bytes exceeds segment.bytes={self.config.segment_bytes}"
                    )
                expected = h.last_offset + 1
            first, last = headers[0].base_offset, headers[-1].last_offset
            max_ts_h = max(headers, key=lambda h: h.max_timestamp)
            try:
                seg = self._maybe_roll(len(data), max_ts_h.max_timestamp, last, now_ms)
                for h in headers:
                    if h.partition_leader_epoch >= 0:
                        latest = self.leader_epoch_cache.latest_epoch()
                        if latest is None or h.partition_leader_epoch > latest:
                            self.leader_epoch_cache.assign(h.partition_leader_epoch, h.base_offset)
                seg.append(data, headers)
            except OSError as exc:
                raise KafkaStorageError(str(exc)) from exc
            self.producer_state.record([h for h in headers if h.producer_id >= 0], now_ms)
            return self._appended(first, last, headers, max_ts_h, -1, len(data), now_ms)

    def _appended(self, first: int, last: int, headers: list[rb.BatchHeader], max_ts_h: rb.BatchHeader, log_append_time_ms: int, size: int, now_ms: int) -> LogAppendInfo:
        """After an append (lock held): count the unflushed records, flush per ``flush.messages``
        / ``flush.ms``, and describe the append (offsets ``first``..``last`` inclusive)."""
        n_records = sum(h.records_count for h in headers)
        self._unflushed_messages += n_records
        flushed = False
        if self._unflushed_messages >= self.config.flush_messages or now_ms - self._last_flush_ms >= self.config.flush_ms:
            self._flush_locked(now_ms)
            flushed = True
        return LogAppendInfo(
            first_offset=first,
            last_offset=last,
            max_timestamp=max_ts_h.max_timestamp,
            offset_of_max_timestamp=max_ts_h.last_offset,
            log_append_time_ms=log_append_time_ms,
            log_start_offset=self._log_start_offset,
            record_count=n_records,
            batch_count=len(headers),
            valid_bytes=size,
            flushed=flushed,
        )

    def _maybe_roll(self, size: int, max_ts: int, max_offset: int, now_ms: int) -> LogSegment:
        seg = self._segments[-1]
        if seg.should_roll(size, max_ts, max_offset, now_ms):
            return self._roll_locked(now_ms)
        return seg

    def roll(self, now_ms: int) -> LogSegment:
        """Close the active segment for appends and start a new one at the log end offset
        (Kafka ``UnifiedLog#roll``); a no-op returning the active segment if it is empty."""
        with self._lock:
            self._ensure_open()
            if self._segments[-1].size == 0:
                return self._segments[-1]
            return self._roll_locked(now_ms)

    def _roll_locked(self, now_ms: int) -> LogSegment:
        old = self._segments[-1]
        old.flush()  # Kafka flushes the rolled segment asynchronously; we do it at once
        self._recovery_point = max(self._recovery_point, old.next_offset)
        seg = self._new_segment(self.log_end_offset, now_ms)
        self._write_meta()
        return seg

    # ----------------------------------------------------------------- flush
    def flush(self, now_ms: int | None = None) -> None:
        """fsync everything appended so far and advance the recovery point."""
        with self._lock:
            self._flush_locked(now_ms if now_ms is not None else self._last_flush_ms)

    def maybe_flush(self, now_ms: int) -> bool:
        """The ``flush.ms`` scheduler tick (Kafka ``LogManager#flushDirtyLogs``): flush if
        there are unflushed messages and ``flush.ms`` has elapsed. Returns True if it flushed."""
        with self._lock:
            if self._unflushed_messages and now_ms - self._last_flush_ms >= self.config.flush_ms:
                self._flush_locked(now_ms)
                return True
            return False

    def _flush_locked(self, now_ms: int) -> None:
        if self._closed:
            return
        for s in self._segments:
            if s.next_offset > self._recovery_point or s is self._segments[-1]:
                s.flush()
        self._recovery_point = self.log_end_offset
        self._unflushed_messages = 0
        self._last_flush_ms = now_ms
        # The persisted recovery point is refreshed on roll/close/offset changes only; a stale
        # (lower) one just makes recovery re-validate more, so no extra fsyncs per flush.

    @property
    def unflushed_messages(self) -> int:
        """Records appended since the last fsync."""
        return self._unflushed_messages

    # ----------------------------------------------------------------- read
    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_message: bool = True,
        max_records: int | None = None,
        min_batches: int = 1,
    ) -> FetchDataInfo:
        """Read whole batches from the local log starting at the batch that holds
        ``fetch_offset``, at most ``max_bytes`` bytes (but the first batch whole even if larger,
        when ``min_one_message``; KIP-74), only batches whose last offset is below ``max_offset``
        (default: the high watermark; pass :attr:`log_end_offset` for replication-style reads),
        and — with ``max_records`` — no batch after the one that holds the ``max_records``-th
        offset from ``fetch_offset`` once ``min_batches`` batches are read (a share fetch acquires
        up to there: Kafka's soft ``maxFetchRecords`` ends at a batch boundary; the extra batches
        cover the records other members acquired since the caller learnt ``fetch_offset``). Reads
        from one segment, like Kafka ``LocalLog#read``.

        ``fetch_offset == max_offset`` or the log end offset returns empty records. Raises
        :class:`OffsetOutOfRangeError` if ``fetch_offset`` is below :attr:`local_log_start_offset`
        or above :attr:`log_end_offset` (the tiered read path catches the first case)."""
        with self._lock:
            self._ensure_open()
            hw = self._high_watermark
            limit = hw if max_offset is None else max_offset
            leo = self.log_end_offset
            local_start = self.local_log_start_offset
            if fetch_offset < local_start or fetch_offset > leo:
                raise OffsetOutOfRangeError(
                    f"offset {fetch_offset} out of range [{local_start}, {leo}] for {self.topic}-{self.partition}"
                )

            def empty() -> FetchDataInfo:
                return FetchDataInfo(fetch_offset, b"", hw, self._log_start_offset, leo)

            if fetch_offset >= limit:
                return empty()
            i = max(0, bisect.bisect_right(self._bases, fetch_offset) - 1)
            while i < len(self._segments):
                seg = self._segments[i]
                first = seg.translate_offset(fetch_offset)
                if first is None:
                    i += 1
                    continue
                start = first.position
                # One pread of up to max_bytes, then whole batches parsed from memory.
                chunk = seg.pread(start, max(0, min(max_bytes, seg.size - start)))
                pos = 0
                total = 0
                count = 0
                while pos < seg.size - start:
                    if pos + rb.RECORD_BATCH_OVERHEAD <= len(chunk):
                        h = rb.parse_header(chunk, pos)
                    else:
                        h = rb.parse_header(seg.pread(start + pos, rb.RECORD_BATCH_OVERHEAD))
                    if h.last_offset >= limit:
                        break
                    if total + h.size_in_bytes > max_bytes and not (total == 0 and min_one_message):
                        break
                    total += h.size_in_bytes
                    pos += h.size_in_bytes
                    count += 1
                    if record_limit_reached(h.last_offset, fetch_offset, count, max_records, min_batches):
                        break
                if total > len(chunk):
                    chunk = seg.pread(start, total)  # the first batch alone exceeds max_bytes (KIP-74)
                if total == 0:
                    return empty()
                return FetchDataInfo(
                    fetch_offset,
                    bytes(chunk[:total]),
                    hw,
                    self._log_start_offset,
                    leo,
                    segment_base_offset=seg.base_offset,
                    position=start,
                )
            return empty()

    # ----------------------------------------------------------------- list offsets
    def last_fetchable_offset(self, isolation_level: int | None) -> int:
        """Kafka ``Partition#fetchOffsetForTimestamp``'s bound: READ_UNCOMMITTED (0) → high
        watermark, READ_COMMITTED (1) → last stable offset (= HW here), None (a replica) → log
        end offset."""
        if isolation_level is None:
            return self.log_end_offset
        return self.last_stable_offset if isolation_level == 1 else self._high_watermark

    def fetch_offset_by_timestamp(self, timestamp: int, *, isolation_level: int | None = 0) -> TimestampAndOffset | None:
        """ListOffsets on the local log (Kafka ``UnifiedLog#fetchOffsetByTimestamp`` with
        ``Partition#fetchOffsetForTimestamp``'s isolation bound).

        ``timestamp``: -2 EARLIEST (log start offset; epoch = the earliest cached epoch if it
        starts at or before it), -1 LATEST (:meth:`last_fetchable_offset` for ``isolation_level``
        0 READ_UNCOMMITTED / 1 READ_COMMITTED / None replica; the latest epoch), -3 MAX_TIMESTAMP
        (offset of the record with the largest timestamp in the local log), -4 EARLIEST_LOCAL
        (local log start offset), -5 LATEST_TIERED (highest offset in remote storage; -1 with
        epoch -1 if none or tiering off), >= 0 the first local record with timestamp
        ``>= timestamp``. Answers for -3 and timestamps are dropped unless their offset is below
        the last fetchable offset. Returns None when no record matches (the wire answers offset
        -1). For tiered topics :meth:`RemoteLogManager.fetch_offset_by_timestamp` searches the
        remote tier first."""
        with self._lock:
            self._ensure_open()
            epoch_of = self.leader_epoch_cache.epoch_for_offset
            bound = self.last_fetchable_offset(isolation_level)
            if timestamp == EARLIEST_TIMESTAMP or (timestamp == EARLIEST_LOCAL_TIMESTAMP and not self.config.remote_storage_enable):
                first = self.leader_epoch_cache.earliest_entry()
                epoch = first.epoch if first is not None and first.start_offset <= self._log_start_offset else None
                return TimestampAndOffset(rb.NO_TIMESTAMP, self._log_start_offset, epoch)
            if timestamp == EARLIEST_LOCAL_TIMESTAMP:
                off = self.local_log_start_offset
                return TimestampAndOffset(rb.NO_TIMESTAMP, off, epoch_of(off))
            if timestamp == LATEST_TIMESTAMP:
                return TimestampAndOffset(rb.NO_TIMESTAMP, bound, self.leader_epoch_cache.latest_epoch())
            if timestamp == LATEST_TIERED_TIMESTAMP:
                if not self.config.remote_storage_enable:
                    return TimestampAndOffset(rb.NO_TIMESTAMP, -1, -1)
                off = self._highest_offset_in_remote_storage
                epoch = epoch_of(off)
                return TimestampAndOffset(rb.NO_TIMESTAMP, off, epoch if epoch is not None else (-1 if off == -1 else None))
            found = self._search_by_timestamp(timestamp)
            if found is not None and found.offset >= bound:
                return None
            return found

    def _search_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """MAX_TIMESTAMP or a timestamp search over the local segments (lock held)."""
        epoch_of = self.leader_epoch_cache.epoch_for_offset
        if timestamp == MAX_TIMESTAMP:
            best = None
            for s in self._segments:
                if s.max_timestamp_so_far >= 0 and (best is None or s.max_timestamp_so_far > best.max_timestamp_so_far):
                    best = s
            if best is None:
                return None
            found = best.find_offset_by_timestamp(best.max_timestamp_so_far, best.base_offset)
            if found is None:
                return None
            return TimestampAndOffset(found[0], found[1], epoch_of(found[1]))
        if timestamp < 0:
            raise ValueError(f"unsupported ListOffsets timestamp {timestamp}")
        start = max(self._log_start_offset, self.local_log_start_offset)
        for s in self._segments:
            if s.max_timestamp_so_far >= timestamp and s.next_offset > start:
                found = s.find_offset_by_timestamp(timestamp, start)
                if found is not None:
                    return TimestampAndOffset(found[0], found[1], epoch_of(found[1]))
        return None

    # ----------------------------------------------------------------- retention
    def delete_old_segments(self, now_ms: int) -> list[int]:
        """One retention pass (Kafka ``UnifiedLog#deleteOldSegments``): segments wholly below the
        log start offset, then by time (``now - largest timestamp > retention``), then by size
        (oldest first while the total exceeds the limit). With ``remote.storage.enable`` the
        limits are ``local.retention.ms``/``local.retention.bytes`` and a segment is eligible
        only if its end offset ``<= highest offset in remote storage``; the log start offset then
        stays (the remote tier still serves those offsets). Without it, the log start offset moves
        to the first remaining segment. Under tiering a non-empty active segment that breaches a
        rule (wholly below the high watermark) is rolled, not deleted, so that the copy task can
        tier it and a later pass delete it (Kafka ``UnifiedLog#deletableSegments``); without
        tiering it is rolled first when everything is deletable.
        Returns the base offsets of the deleted segments."""
        with self._lock:
            self._ensure_open()
            # Kafka: local.retention.* and "copied first" only while copying to the remote tier
            # (remoteLogEnabledAndRemoteCopyEnabled); the roll of a breaching active segment
            # whenever remote storage is enabled (remoteLogEnabled)
            remote = self.config.tiering
            rolls_active = self.config.remote_storage_enable
            retention_ms = self.config.local_retention_ms_effective if remote else self.config.retention_ms
            retention_bytes = self.config.local_retention_bytes_effective if remote else self.config.retention_bytes
            deleted: list[int] = []

            roll_active = False

            def below_hw(i: int) -> bool:
                # Kafka: never delete offsets at or beyond the high watermark
                is_last = i == len(self._segments) - 1
                end = (self._segments[i + 1].base_offset - 1) if not is_last else self.log_end_offset - 1
                return end < self._high_watermark

            def eligible(i: int) -> bool:
                seg = self._segments[i]
                is_last = i == len(self._segments) - 1
                end = (self._segments[i + 1].base_offset - 1) if not is_last else self.log_end_offset - 1
                if not remote and self._compaction_floor is not None and end >= self._compaction_floor:
                    return False  # a read hold (controller since) still covers it
                if remote:
                    # Kafka UnifiedLog#isSegmentEligibleForDeletion: copied to remote storage, or
                    # wholly below a log start offset that was moved past it
                    below_log_start = not is_last and self._log_start_offset >= self._segments[i + 1].base_offset
                    return not is_last and (end <= self._highest_offset_in_remote_storage or below_log_start)
                return seg.size > 0 or not is_last

            def delete_prefix(pred) -> None:
                nonlocal roll_active
                n = 0
                while n < len(self._segments) and below_hw(n) and pred(n):
                    if rolls_active and n == len(self._segments) - 1 and self._segments[n].size > 0:
                        # Kafka deletableSegments: a breaching active segment is rolled so that
                        # it can be copied and then deleted by a later pass
                        roll_active = True
                    if not eligible(n):
                        break
                    n += 1
                if n == 0:
                    return
                if n == len(self._segments):
                    self._roll_locked(now_ms)
                for seg in self._segments[:n]:
                    deleted.append(seg.base_offset)
                    seg.delete_files()
                del self._segments[:n]
                del self._bases[:n]

            # 1. below the log start offset (e.g. after DeleteRecords or remote expiry)
            delete_prefix(lambda i: (i + 1 < len(self._segments) and self._segments[i + 1].base_offset <= self._log_start_offset))
            # 2. time
            if retention_ms >= 0:
                delete_prefix(lambda i: now_ms - self._segments[i].largest_timestamp > retention_ms)
            # 3. size
            if retention_bytes >= 0:
                total = sum(s.size for s in self._segments)
                # Kafka's size predicate: diff = size - retention; delete while diff - seg.size >= 0
                diff = [total - retention_bytes]

                def over_kafka(i: int) -> bool:
                    if diff[0] - self._segments[i].size >= 0:
                        diff[0] -= self._segments[i].size
                        return True
                    return False

                if diff[0] > 0:
                    delete_prefix(over_kafka)
            if roll_active and self._segments[-1].size > 0:
                self._roll_locked(now_ms)
            if deleted:
                first = self._segments[0].base_offset
                if not remote and first > self._log_start_offset:
                    self._log_start_offset = first
                    self.leader_epoch_cache.truncate_from_start(first)
                    self.producer_state.truncate_head(first)
                self._write_meta()
            return deleted

    def delete_segments_below(self, offset: int) -> list[int]:
        """Delete local segments whose every offset is ``< offset`` (the next segment's base is
        ``<= offset``); the active segment stays. Under tiering, only segments already copied
        (end offset ``<= highest offset in remote storage``) go. The log start offset is not
        moved under tiering (the local log start offset is); without tiering it is raised to the
        first remaining base offset. Returns the deleted base offsets."""
        with self._lock:
            self._ensure_open()
            n = 0
            while n + 1 < len(self._segments) and self._segments[n + 1].base_offset <= offset:
                end = self._segments[n + 1].base_offset - 1
                if self.config.remote_storage_enable and end > self._highest_offset_in_remote_storage:
                    break
                n += 1
            deleted = [s.base_offset for s in self._segments[:n]]
            for s in self._segments[:n]:
                s.delete_files()
            del self._segments[:n]
            del self._bases[:n]
            if deleted and not self.config.remote_storage_enable and self._segments[0].base_offset > self._log_start_offset:
                self._log_start_offset = self._segments[0].base_offset
                self.leader_epoch_cache.truncate_from_start(self._log_start_offset)
                self.producer_state.truncate_head(self._log_start_offset)
            if deleted:
                self._write_meta()
            return deleted

    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding an offset ``>= offset`` (follower truncation, always at a
        batch boundary in practice; Kafka ``UnifiedLog#truncateTo``). Segments wholly above are deleted; the epoch cache, high
        watermark and recovery point are clamped."""
        with self._lock:
            self._ensure_open()
            if offset >= self.log_end_offset:
                return
            while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
                self._segments.pop().delete_files()
                self._bases.pop()
            self._segments[-1].truncate_to(offset)
            leo = self.log_end_offset
            self.leader_epoch_cache.truncate_from_end(leo)
            self._high_watermark = min(self._high_watermark, leo)
            self._recovery_point = min(self._recovery_point, leo)
            self._write_meta()
            self._rebuild_producer_state(self._last_flush_ms)  # Kafka truncateTo reloads producer state

    def truncate_fully_and_start_at(self, new_offset: int, now_ms: int, log_start_offset: int | None = None) -> None:
        """Delete every local segment and restart the (empty) log at ``new_offset``: log end,
        high watermark and recovery point become ``new_offset``, and so does the log start
        offset unless ``log_start_offset`` (≤ ``new_offset``) is given — a follower rebuilding
        from the remote tier keeps the leader's log start below its local log start; the epoch
        cache and producer state are cleared (Kafka ``UnifiedLog#truncateFullyAndStartAt(newOffset,
        logStartOffsetOpt)``, used by a follower whose whole log is below the leader's log start
        offset, or below its local log start: KIP-405's ``buildRemoteLogAuxState``)."""
        with self._lock:
            self._ensure_open()
            for s in self._segments:
                s.delete_files()
            self._segments.clear()
            self._bases.clear()
            self._new_segment(new_offset, now_ms)
            self.leader_epoch_cache.truncate_from_end(0)
            self.producer_state = ProducerStateManager()
            self._log_start_offset = new_offset if log_start_offset is None else min(log_start_offset, new_offset)
            self._high_watermark = new_offset
            self._recovery_point = new_offset
            self._write_meta()

    def delete(self) -> None:
        """Close and remove the whole partition directory (topic deletion)."""
        import shutil

        with self._lock:
            for s in self._segments:
                s.close()
            self._closed = True
            shutil.rmtree(self.dir, ignore_errors=True)

    def _ensure_open(self) -> None:
        if self._closed:
            raise KafkaStorageError(f"log {self.topic}-{self.partition} is closed")
