"""The RemoteLogManager: moves rolled segments to the remote tier, expires them there, deletes
local copies after tiering, reconciles after a crash, and serves reads below the local log start.

Kafka source: ``core/src/main/java/kafka/log/remote/RemoteLogManager.java`` (``RLMCopyTask``,
``RLMExpirationTask``, ``read``, ``findOffsetByTimestamp``, ``deleteRemoteLogPartition``,
``isRemoteSegmentWithinLeaderEpochs``, ``findHighestRemoteOffset``, ``buildFilteredLeaderEpochMap``).

Structure (the project's rule: pure decisions, thin runner):

* **Pure functions** (no I/O, time passed in): :func:`candidate_segments`,
  :func:`find_highest_remote_offset`, :func:`build_filtered_leader_epoch_map`,
  :func:`is_remote_segment_within_leader_epochs`, :func:`plan_remote_expiry`,
  :func:`plan_reconciliation`.
* **The runner** :class:`RemoteLogManager` holds the registered partitions (their
  :class:`~store.log.log.PartitionLog`), a ``RemoteStorageManager`` and the
  ``RemoteLogMetadataManager`` (``actors.rlmm.manager``; its write calls return once the event
  is durable and applied, like Kafka's ``future.get()``), and executes the plans. Call
  :meth:`RemoteLogManager.run_once` with the current time, or :meth:`start` a background thread
  ticking every ``remote.log.manager.task.interval.ms``.

Crash consistency (checked by ``tests/tiered/test_crash_upload.py``): the COPY_SEGMENT_STARTED
event is durable before the first byte is uploaded; the remote write is atomic
(``store.remote_storage``); COPY_SEGMENT_FINISHED is written only after the upload returned; a
local segment is deleted only once its end offset is ``<=`` the highest offset in remote storage,
which only COPY_SEGMENT_FINISHED advances. On restart :meth:`RemoteLogManager.reconcile` deletes
(DELETE_SEGMENT_STARTED → delete → DELETE_SEGMENT_FINISHED) every segment left in
COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED, deletes remote data no metadata refers to, and
retires COPY_SEGMENT_FINISHED entries whose data is missing; the copy task then re-uploads the
segments that were left in COPY_SEGMENT_STARTED from the local segments (which were kept, since
they were never marked copied).

Limit (as in Kafka, which trusts its RemoteStorageManager): a COPY_SEGMENT_FINISHED segment whose
remote data vanished is retired but **not** re-uploaded, because the copied offset
(``highestOffsetForEpoch``, never lowered, and the log's highest offset in remote storage) already
covers it; its offsets stay unreadable from the remote tier and local retention may delete the
local copy. Remote data loss is an operator error that reconciliation logs, not repairs.
"""

from __future__ import annotations

import bisect
import logging
import struct
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Optional, Sequence

from events.rlmm_errors import RemoteStorageException
from events.rlmm_types import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    TopicIdPartition,
)
from store import record_batch as rb
from store.log.errors import OffsetOutOfRangeError
from store.log.log import FetchDataInfo, PartitionLog, TimestampAndOffset
from store.remote_storage import IndexType, LogSegmentData, RemoteStorageManager

__all__ = [
    "DEFAULT_TASK_INTERVAL_MS",
    "DEFAULT_CUSTOM_METADATA_MAX_BYTES",
    "CopyCandidate",
    "ExpiryPlan",
    "ReconciliationPlan",
    "candidate_segments",
    "find_highest_remote_offset",
    "build_filtered_leader_epoch_map",
    "is_remote_segment_within_leader_epochs",
    "plan_remote_expiry",
    "plan_reconciliation",
    "RemoteLogManager",
    "CustomMetadataSizeLimitExceededError",
]

log = logging.getLogger("shoal.remote_log_manager")

#: ``remote.log.manager.task.interval.ms`` (Kafka ``RemoteLogManagerConfig``), ms.
DEFAULT_TASK_INTERVAL_MS = 30_000
#: ``remote.log.metadata.custom.metadata.max.bytes`` (Kafka default 128).
DEFAULT_CUSTOM_METADATA_MAX_BYTES = 128

_CS = RemoteLogSegmentState.COPY_SEGMENT_STARTED
_CF = RemoteLogSegmentState.COPY_SEGMENT_FINISHED
_DS = RemoteLogSegmentState.DELETE_SEGMENT_STARTED
_DF = RemoteLogSegmentState.DELETE_SEGMENT_FINISHED


class CustomMetadataSizeLimitExceededError(RemoteStorageException):
    """The RSM returned custom metadata over ``remote.log.metadata.custom.metadata.max.bytes``
    (Kafka ``CustomMetadataSizeLimitExceededException``): the copy is undone and copying stops
    for the partition."""


# =========================================================================== pure decisions


@dataclass(frozen=True, slots=True)
class CopyCandidate:
    """A rolled local segment eligible for upload: ``base_offset`` and ``end_offset`` (inclusive,
    = next segment's base - 1)."""

    base_offset: int
    end_offset: int


def candidate_segments(segment_bases: Sequence[int], from_offset: int, last_stable_offset: int) -> list[CopyCandidate]:
    """Kafka ``RLMCopyTask#candidateLogSegments``: among the segments that hold offsets
    ``>= from_offset`` (``segment_bases`` ascending; the last is the active segment, never a
    candidate), each segment whose *next* segment's base offset is ``<= last_stable_offset``."""
    i = max(0, bisect.bisect_right(segment_bases, from_offset) - 1)
    bases = list(segment_bases[i:])
    out = []
    for prev, cur in zip(bases, bases[1:]):
        if cur <= last_stable_offset:
            out.append(CopyCandidate(prev, cur - 1))
    return out


def find_highest_remote_offset(
    epoch_entries: Sequence[tuple[int, int]],
    log_end_offset: int,
    highest_offset_for_epoch: Callable[[int], Optional[int]],
) -> tuple[int, int]:
    """Kafka ``RemoteLogManager#findHighestRemoteOffset``: walking the leader-epoch entries from
    the latest back, the first epoch with a copied offset gives ``(offset, epoch)``, capped at
    that epoch's end offset - 1; ``(-1, -1)`` when nothing was copied. ``epoch_entries`` are
    ``(epoch, start_offset)`` ascending; ``highest_offset_for_epoch`` is the RLMM query."""
    entries = list(epoch_entries)
    for idx in range(len(entries) - 1, -1, -1):
        epoch = entries[idx][0]
        highest = highest_offset_for_epoch(epoch)
        if highest is None:
            continue
        end_offset = log_end_offset if idx == len(entries) - 1 else entries[idx + 1][1]
        if end_offset <= highest:
            return end_offset - 1, epoch
        return highest, epoch
    return -1, -1


def build_filtered_leader_epoch_map(entries: Iterable[tuple[int, int]]) -> dict[int, int]:
    """Kafka ``buildFilteredLeaderEpochMap``: drop epochs with no records (an epoch whose start
    offset equals the next epoch's). Input/Output ``epoch → start offset``, ascending."""
    items = sorted(entries)
    out: dict[int, int] = {}
    for i, (epoch, start) in enumerate(items):
        if i + 1 < len(items) and items[i + 1][1] == start:
            continue
        out[epoch] = start
    return out


def is_remote_segment_within_leader_epochs(
    md: RemoteLogSegmentMetadata, log_end_offset: int, leader_epochs: Mapping[int, int]
) -> bool:
    """Kafka ``RemoteLogManager#isRemoteSegmentWithinLeaderEpochs``: is the segment part of the
    current leader-epoch lineage (``leader_epochs`` = filtered ``epoch → start offset``)?"""
    if not leader_epochs:
        return False
    seg_epochs = build_filtered_leader_epoch_map(md.segment_leader_epochs)
    keys = sorted(leader_epochs)
    seg_keys = sorted(seg_epochs)
    seg_last = seg_keys[-1]
    if seg_last < keys[0] or seg_last > keys[-1]:
        return False
    seg_first = next((e for e in seg_keys if e >= keys[0]), None)
    if seg_first is None:
        return False

    def higher(m_keys: list[int], m: Mapping[int, int], e: int) -> Optional[tuple[int, int]]:
        j = bisect.bisect_right(m_keys, e)
        return (m_keys[j], m[m_keys[j]]) if j < len(m_keys) else None

    for epoch in seg_keys:
        offset = seg_epochs[epoch]
        if epoch < seg_first:
            continue
        if epoch not in leader_epochs:
            return False
        lower_exists = bisect.bisect_left(keys, epoch) > 0
        if epoch == seg_first and lower_exists and offset < leader_epochs[epoch]:
            return False
        if epoch == seg_last:
            nxt = higher(keys, leader_epochs, epoch)
            if nxt is not None and md.end_offset > nxt[1] - 1:
                return False
        if epoch != seg_last and higher(keys, leader_epochs, epoch) != higher(seg_keys, seg_epochs, epoch):
            return False
    return md.end_offset < log_end_offset


@dataclass(frozen=True, slots=True)
class ExpiryPlan:
    """What one expiration run deletes: ``to_delete`` in order (retention/log-start breaches and
    retries of DELETE_SEGMENT_STARTED), ``unreferenced`` (segments whose epochs all precede the
    earliest local epoch: Kafka's leader-epoch-truncation cleanup), and the new log start offset
    (None: unchanged)."""

    to_delete: tuple[RemoteLogSegmentMetadata, ...]
    unreferenced: tuple[RemoteLogSegmentMetadata, ...]
    log_start_offset: Optional[int]


def plan_remote_expiry(
    *,
    segments_by_epoch: Callable[[int], Sequence[RemoteLogSegmentMetadata]],
    all_segments: Sequence[RemoteLogSegmentMetadata],
    epoch_entries: Sequence[tuple[int, int]],
    log_start_offset: int,
    log_end_offset: int,
    retention_ms: int,
    retention_bytes: int,
    only_local_log_segments_size: int,
    now_ms: int,
    being_copied: frozenset = frozenset(),
    retention_floor: Optional[int] = None,
) -> ExpiryPlan:
    """Kafka ``RLMExpirationTask#cleanupExpiredRemoteLogSegments`` as a pure function.

    ``segments_by_epoch(e)`` is ``rlmm.list_remote_log_segments(tp, e)`` (sorted by start
    offset), ``all_segments`` the unordered listing, ``epoch_entries`` the local leader-epoch
    cache ``(epoch, start)``. Times in ms, sizes in bytes; ``retention_ms``/``retention_bytes``
    of -1 disable that rule. Walking the filtered epochs in order, a segment is deleted if it
    is DELETE_SEGMENT_STARTED (retry), ends below the log start offset (all its epochs ``<=``
    the first epoch), or — if within the epoch lineage — breaches time (``max_timestamp_ms <=
    now - retention_ms``) or size (total local-only + remote CF bytes over ``retention_bytes``,
    oldest first). The walk stops at the first valid segment that is kept, or at one being
    copied. The new log start offset is the highest ``end_offset + 1`` deleted by time/size.
    ``retention_floor`` (the controller's read-hold "since", Shoal): a segment whose
    ``end_offset >= retention_floor`` is never deleted by time or size, and the walk stops there."""
    epoch_map = build_filtered_leader_epoch_map(epoch_entries)
    if not all_segments or not epoch_map:
        return ExpiryPlan((), (), None)
    remote_epochs = sorted({e for md in all_segments for e, _ in md.segment_leader_epochs})

    # retention size data (Kafka buildRetentionSizeData): only CF segments in the lineage count
    remaining_breached = 0
    size_enabled = False
    if retention_bytes > -1:
        visited = set()
        remote_size = 0
        for epoch in epoch_map:
            for md in segments_by_epoch(epoch):
                if md.state == _CF and md.remote_log_segment_id not in visited and is_remote_segment_within_leader_epochs(md, log_end_offset, epoch_map):
                    remote_size += md.segment_size_in_bytes
                    visited.add(md.remote_log_segment_id)
        total = only_local_log_segments_size + remote_size
        if total > retention_bytes:
            remaining_breached = total - retention_bytes
            size_enabled = True
    cleanup_until_ms = now_ms - retention_ms if retention_ms > -1 else None

    new_lso: Optional[int] = None
    to_delete: list[RemoteLogSegmentMetadata] = []
    first_epoch = min(epoch_map)
    can_process = True
    for epoch in epoch_map:
        if not can_process:
            break
        for md in segments_by_epoch(epoch):
            if not can_process:
                break
            if md.remote_log_segment_id in being_copied:
                can_process = False
                continue
            if md.state == _DS:
                if md not in to_delete:
                    to_delete.append(md)
                continue
            if md.state == _DF or any(m.remote_log_segment_id == md.remote_log_segment_id for m in to_delete):
                continue
            should_delete = all(e <= first_epoch for e, _ in md.segment_leader_epochs) and md.end_offset < log_start_offset
            is_valid = False
            if not should_delete:
                is_valid = is_remote_segment_within_leader_epochs(md, log_end_offset, epoch_map)
                if is_valid and retention_floor is not None and md.end_offset >= retention_floor:
                    can_process = False
                    continue
                if is_valid:
                    by_time = cleanup_until_ms is not None and md.max_timestamp_ms <= cleanup_until_ms
                    if by_time:
                        remaining_breached = max(0, remaining_breached - md.segment_size_in_bytes)
                        should_delete = True
                    elif size_enabled and remaining_breached > 0 and remaining_breached - md.segment_size_in_bytes >= 0:
                        remaining_breached -= md.segment_size_in_bytes
                        should_delete = True
                    if should_delete and (new_lso is None or new_lso < md.end_offset + 1):
                        new_lso = md.end_offset + 1
            if should_delete:
                to_delete.append(md)
            can_process = should_delete or not is_valid

    earliest_epoch = min(e for e, _ in epoch_entries) if epoch_entries else None
    unreferenced: list[RemoteLogSegmentMetadata] = []
    if earliest_epoch is not None:
        seen = {m.remote_log_segment_id for m in to_delete}
        for epoch in (e for e in remote_epochs if e < earliest_epoch):
            for md in segments_by_epoch(epoch):
                if md.remote_log_segment_id in seen:
                    continue
                if all(e < earliest_epoch for e, _ in md.segment_leader_epochs):
                    unreferenced.append(md)
                    seen.add(md.remote_log_segment_id)
    return ExpiryPlan(tuple(to_delete), tuple(unreferenced), new_lso)


@dataclass(frozen=True, slots=True)
class ReconciliationPlan:
    """Restart repair for one partition: ``delete`` = metadata to drive through
    DELETE_SEGMENT_STARTED → delete → DELETE_SEGMENT_FINISHED (left in COPY_SEGMENT_STARTED or
    DELETE_SEGMENT_STARTED by a crash, or COPY_SEGMENT_FINISHED whose data is missing);
    ``orphans`` = remote segment ids with data but no live metadata."""

    delete: tuple[RemoteLogSegmentMetadata, ...]
    orphans: tuple
    missing_data: tuple[RemoteLogSegmentMetadata, ...] = ()


def plan_reconciliation(
    listed: Sequence[RemoteLogSegmentMetadata],
    remote_data_ids: Iterable,
    being_copied: frozenset = frozenset(),
) -> ReconciliationPlan:
    """Pure restart reconciliation: compare the RLMM listing of a partition (every segment not
    DELETE_SEGMENT_FINISHED) with the segment ids that have complete data in the remote tier."""
    data = set(remote_data_ids)
    known = {md.remote_log_segment_id.id for md in listed}
    delete: list[RemoteLogSegmentMetadata] = []
    missing: list[RemoteLogSegmentMetadata] = []
    for md in sorted(listed, key=lambda m: m.start_offset):
        if md.remote_log_segment_id in being_copied:
            continue
        if md.state in (_CS, _DS):
            delete.append(md)
        elif md.state == _CF and md.remote_log_segment_id.id not in data:
            delete.append(md)
            missing.append(md)
    orphans = tuple(sorted(data - known, key=str))
    return ReconciliationPlan(tuple(delete), orphans, tuple(missing))


# =========================================================================== the runner


def parse_epoch_checkpoint(data: bytes) -> list[tuple[int, int]]:
    """The ``(epoch, start offset)`` entries of a leader-epoch checkpoint (Kafka's text format:
    version ``0``, a count, then ``epoch start_offset`` lines), as the ``LEADER_EPOCH`` index of a
    remote segment holds them. Raises ``ValueError`` for another version or a malformed file."""
    lines = data.decode().split("\n")
    if not lines or lines[0].strip() != "0":
        raise ValueError(f"unsupported leader-epoch checkpoint version {lines[0]!r}" if lines else "empty checkpoint")
    n = int(lines[1])
    out = []
    for line in lines[2 : 2 + n]:
        e, o = line.split()
        out.append((int(e), int(o)))
    if len(out) != n:
        raise ValueError(f"leader-epoch checkpoint lists {len(out)} entries, says {n}")
    return out


def segment_before_local_start(segments: Iterable[RemoteLogSegmentMetadata], local_log_start: int) -> Optional[RemoteLogSegmentMetadata]:
    """The COPY_SEGMENT_FINISHED remote segment that holds ``local_log_start - 1`` (the leader's
    last offset in the remote tier only), or ``None``: what a follower restores its leader-epoch
    cache from when the leader's local log starts above the follower's log end (Kafka
    ``ReplicaFetcherTierStateMachine#buildRemoteLogAuxState``)."""
    target = local_log_start - 1
    found = [md for md in segments if md.state == _CF and md.start_offset <= target <= md.end_offset]
    return max(found, key=lambda md: (max(e for e, _ in md.segment_leader_epochs), md.event_timestamp_ms), default=None)


def _epoch_checkpoint_bytes(entries: Sequence[tuple[int, int]]) -> bytes:
    """Kafka's leader-epoch checkpoint text for the uploaded ``LEADER_EPOCH`` index."""
    return (f"0\n{len(entries)}\n" + "".join(f"{e} {o}\n" for e, o in entries)).encode()


@dataclass
class _PartitionState:
    log: PartitionLog
    copied_offset: Optional[int] = None  # None until computed from the RLMM (findHighestRemoteOffset)
    copy_disabled: bool = False
    reconciled: bool = False


class RemoteLogManager:
    """Runs the tiering tasks for the partitions registered with it.

    ``rsm``: a ``RemoteStorageManager``; ``rlmm``: an ``actors.rlmm.manager.RemoteLogMetadataManager``;
    ``broker_id``: ``node.id``; ``clock``: ``() -> ms`` used only by the background runner
    (every task method takes ``now_ms``). Thread-safe: one lock per manager serialises tasks;
    reads do not take it (they use the log's and the RLMM's own locks)."""

    def __init__(
        self,
        rsm: RemoteStorageManager,
        rlmm,
        *,
        broker_id: int = 1,
        custom_metadata_max_bytes: int = DEFAULT_CUSTOM_METADATA_MAX_BYTES,
        task_interval_ms: int = DEFAULT_TASK_INTERVAL_MS,
        clock: Callable[[], int] = lambda: int(time.time() * 1000),
    ):
        self.rsm = rsm
        self.rlmm = rlmm
        self.broker_id = broker_id
        self.custom_metadata_max_bytes = custom_metadata_max_bytes
        self.task_interval_ms = task_interval_ms
        self.clock = clock
        self._partitions: dict[TopicIdPartition, _PartitionState] = {}
        #: the tiered partitions this node follows (a cluster): their highest offset in remote
        #: storage is followed from the RLMM, so local retention applies to them too
        self._followers: dict[TopicIdPartition, PartitionLog] = {}
        self._being_copied: set[RemoteLogSegmentId] = set()
        self._lock = threading.RLock()
        #: registrations (leader/follower/stop) take this one, not the pass lock :attr:`_lock`:
        #: a pass iterates copies of the registrations and skips a partition that left meanwhile
        self._reg_lock = threading.Lock()
        self._index_cache: dict[RemoteLogSegmentId, tuple[list[int], list[int]]] = {}
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()

    # ----------------------------------------------------------------- registration
    def on_leadership_change(self, leaders: Mapping[TopicIdPartition, PartitionLog],
                             followers: Mapping[TopicIdPartition, PartitionLog] | None = None) -> None:
        """Register partitions this broker leads (with ``remote.storage.enable=true``) and those
        it follows, and tell the RLMM (Kafka ``onLeadershipChange``): a leader copies, expires
        and serves reads (its copy state is recomputed on the next run); a follower follows the
        highest offset in remote storage from the RLMM (Kafka's ``RLMFollowerTask``), so its
        local retention deletes what is tiered, and can rebuild its log's start from the remote
        tier (:meth:`build_remote_log_aux_state`). A partition changes role by being named in
        the other mapping."""
        followers = dict(followers or {})
        with self._reg_lock:  # not the pass lock: a pass may upload for seconds, a registration must not wait
            for tp, plog in leaders.items():
                self._followers.pop(tp, None)
                st = self._partitions.get(tp)
                if st is None or st.log is not plog:
                    self._partitions[tp] = _PartitionState(plog)
            for tp, plog in followers.items():
                self._partitions.pop(tp, None)
                self._followers[tp] = plog
            self.rlmm.on_partition_leadership_changes(set(leaders), set(followers))

    def assign_role(self, tp: TopicIdPartition, plog: PartitionLog, role: str | None) -> None:
        """Make ``tp``'s registration ``role``: ``"leader"``, ``"follower"``
        (:meth:`on_leadership_change`) or ``None`` (no replica here any more:
        :meth:`stop_partitions`, its remote data kept for the others). Nothing changes when it
        already has that role."""
        if role == self.role(tp):
            return
        if role == "leader":
            self.on_leadership_change({tp: plog})
        elif role == "follower":
            self.on_leadership_change({}, {tp: plog})
        else:
            self.stop_partitions([tp])

    def role(self, tp: TopicIdPartition) -> str | None:
        """``"leader"``, ``"follower"`` or ``None`` (not registered). Never waits for a pass."""
        return "leader" if tp in self._partitions else "follower" if tp in self._followers else None

    def stop_partitions(self, partitions: Iterable[TopicIdPartition], *, delete: bool = False) -> None:
        """Stop tiering ``partitions`` (Kafka ``stopPartitions``); with ``delete=True`` (topic
        deleted) their remote data is deleted first (:meth:`delete_remote_log_partition`)."""
        parts = list(partitions)
        if delete:
            with self._lock:  # deleting remote data is a pass's work
                for tp in parts:
                    self.delete_remote_log_partition(tp, self.clock())
        with self._reg_lock:
            for tp in parts:
                self._partitions.pop(tp, None)
                self._followers.pop(tp, None)
            self.rlmm.on_stop_partitions(set(parts))

    def partition_log(self, tp: TopicIdPartition) -> PartitionLog:
        """The registered log of ``tp``; ``KeyError`` if not registered."""
        return self._partitions[tp].log

    # ----------------------------------------------------------------- the tasks
    def run_once(self, now_ms: int) -> dict[str, int]:
        """One pass over every registered partition: reconcile (first pass, and after a failed
        pass), copy, expire remote segments, then the local retention pass. Partitions whose RLMM is not
        ready are skipped (Kafka 4.0 KIP-1105). Errors are logged per partition and do not stop
        the others. Returns counts ``{"copied", "remote_deleted", "local_deleted"}``."""
        stats = {"copied": 0, "remote_deleted": 0, "local_deleted": 0}
        with self._lock:
            for tp in list(self._partitions):
                try:
                    st = self._partitions.get(tp)
                    if st is None or not self.rlmm.is_ready(tp):
                        continue  # unregistered meanwhile, or its RLMM is not ready
                    if not st.reconciled:
                        self.reconcile(tp, now_ms)
                    stats["copied"] += len(self.copy_log_segments_to_remote(tp, now_ms))
                    stats["remote_deleted"] += len(self.cleanup_expired_remote_log_segments(tp, now_ms))
                    stats["local_deleted"] += len(st.log.delete_old_segments(now_ms))
                except Exception:  # noqa: BLE001 - one partition's failure must not stop the others
                    log.exception("remote log manager task failed for %s", tp)
                    st = self._partitions.get(tp)
                    if st is not None:
                        # a failed step may have left COPY_SEGMENT_STARTED / DELETE_SEGMENT_STARTED
                        # metadata or data behind: the next pass reconciles again before copying
                        st.reconciled = False
            for tp in list(self._followers):
                try:
                    if tp in self._followers and self.rlmm.is_ready(tp):
                        stats["local_deleted"] += len(self.follower_task(tp, now_ms))
                except Exception:  # noqa: BLE001 - as above
                    log.exception("remote log manager follower task failed for %s", tp)
        return stats

    def follower_task(self, tp: TopicIdPartition, now_ms: int) -> list:
        """Kafka's ``RLMFollowerTask`` for a followed partition: its highest offset in remote
        storage from the RLMM (:func:`find_highest_remote_offset` over its own leader-epoch cache,
        capped at its log end), then the local retention pass, which deletes only segments
        already in the remote tier. Returns the local segments deleted."""
        with self._lock:
            plog = self._followers.get(tp)
            if plog is None:
                return []
            entries = [(e.epoch, e.start_offset) for e in plog.leader_epoch_cache.entries()]
            off, _ = find_highest_remote_offset(entries, plog.log_end_offset, lambda e: self.rlmm.highest_offset_for_epoch(tp, e))
            if off >= 0:
                plog.update_highest_offset_in_remote_storage(off)
            return plog.delete_old_segments(now_ms)

    def build_remote_log_aux_state(self, tp: TopicIdPartition, plog: PartitionLog, local_log_start: int, leader_log_start: int,
                                   now_ms: int) -> None:
        """A follower whose log ends below the leader's local log start (the leader answered its
        Fetch OFFSET_MOVED_TO_TIERED_STORAGE): restore the leader-epoch entries below
        ``local_log_start`` from the ``LEADER_EPOCH`` index of the remote segment that holds
        ``local_log_start - 1`` (:func:`segment_before_local_start`), restart the log empty at
        ``local_log_start`` with the leader's log start offset ``leader_log_start`` below it, and
        record the highest offset in remote storage (Kafka
        ``ReplicaFetcherTierStateMachine#buildRemoteLogAuxState``). Deviation: no producer-state
        snapshot is restored (Shoal uploads none); idempotent producers' state rebuilds from the
        batches fetched from then on. Raises :class:`RemoteStorageException` when the RLMM has no
        such segment or its index cannot be read (the fetcher backs off and tries again)."""
        with self._lock:
            md = segment_before_local_start(self.rlmm.list_remote_log_segments(tp), local_log_start) if local_log_start > leader_log_start else None
            entries: list[tuple[int, int]] = []
            if md is not None:
                with self.rsm.fetch_index(md, IndexType.LEADER_EPOCH) as f:
                    entries = [(e, o) for e, o in parse_epoch_checkpoint(f.read()) if o < local_log_start]
            elif local_log_start > leader_log_start:
                raise RemoteStorageException(f"{tp}: no remote segment holds offset {local_log_start - 1}, the leader's last tiered offset")
            plog.truncate_fully_and_start_at(local_log_start, now_ms, log_start_offset=leader_log_start)
            for e, o in entries:
                plog.leader_epoch_cache.assign(e, o)
            plog.leader_epoch_cache.flush()
            if md is not None:
                plog.update_highest_offset_in_remote_storage(local_log_start - 1)

    def copy_log_segments_to_remote(self, tp: TopicIdPartition, now_ms: int) -> list[RemoteLogSegmentMetadata]:
        """Kafka ``RLMCopyTask#copyLogSegmentsToRemote``: upload every rolled segment whose end
        is below the last stable offset and above the highest copied offset, oldest first; nothing while the topic has ``remote.log.copy.disable=true`` (KIP-950).
        Returns the metadata (COPY_SEGMENT_FINISHED) of the segments copied. Raises
        :class:`RemoteStorageException` if an upload fails (after deleting what it wrote)."""
        with self._lock:
            st = self._partitions[tp]
            plog = st.log
            if st.copy_disabled or plog.config.remote_log_copy_disable:
                # CustomMetadataSizeLimitExceeded stopped the task, or remote.log.copy.disable=true
                # (KIP-950: Kafka cancels the RLMCopyTask; expiry and remote reads go on)
                return []
            if st.copied_offset is None:
                entries = [(e.epoch, e.start_offset) for e in plog.leader_epoch_cache.entries()]
                off, _ = find_highest_remote_offset(
                    entries, plog.log_end_offset, lambda e: self.rlmm.highest_offset_for_epoch(tp, e)
                )
                st.copied_offset = off
                if off >= 0:
                    plog.update_highest_offset_in_remote_storage(off)
            lso = plog.last_stable_offset
            done: list[RemoteLogSegmentMetadata] = []
            if lso <= 0 or st.copied_offset >= lso:
                return done
            from_offset = max(st.copied_offset + 1, plog.log_start_offset)
            segments = {s.base_offset: s for s in plog.segments()}
            for cand in candidate_segments(sorted(segments), from_offset, lso):
                md = self._copy_log_segment(tp, st, segments[cand.base_offset], cand, now_ms)
                if md is not None:
                    done.append(md)
            return done

    def _copy_log_segment(self, tp, st: _PartitionState, segment, cand: CopyCandidate, now_ms: int):
        plog = st.log
        next_base = cand.end_offset + 1
        epochs = [(e.epoch, e.start_offset) for e in plog.leader_epoch_cache.epoch_entries_in_range(segment.base_offset, next_base)]
        if not epochs:
            log.warning("segment %s of %s has no leader epoch (appended with epoch -1); not tiered", segment.base_offset, tp)
            return None
        segment_id = RemoteLogSegmentId.generate_new(tp)
        md = RemoteLogSegmentMetadata(
            segment_id,
            segment.base_offset,
            cand.end_offset,
            segment.largest_timestamp,
            self.broker_id,
            now_ms,
            segment.size,
            dict(epochs),
        )
        self._being_copied.add(segment_id)
        try:
            self.rlmm.add_remote_log_segment_metadata(md)
            all_epochs = [(e.epoch, e.start_offset) for e in plog.leader_epoch_cache.epoch_entries_in_range(-1, next_base)]
            data = LogSegmentData(
                segment.log_path,
                segment.index_path,
                segment.time_index_path,
                None,
                None,
                _epoch_checkpoint_bytes(all_epochs),
            )
            try:
                custom = self.rsm.copy_log_segment_data(md, data)
            except RemoteStorageException:
                log.info("copy failed, cleaning segment %s", segment_id)
                try:
                    self._delete_remote_segment(md, now_ms)
                except RemoteStorageException as exc:
                    log.info("cleanup failed, will retry later with segment %s: %s", segment_id, exc)
                raise
            update = RemoteLogSegmentMetadataUpdate(segment_id, now_ms, custom, _CF, self.broker_id)
            if custom is not None and len(custom) > self.custom_metadata_max_bytes:
                st.copy_disabled = True
                try:
                    self._delete_remote_segment(md.create_with_updates(update), now_ms)
                except RemoteStorageException as exc:
                    log.info("cleanup failed, will retry later with segment %s: %s", segment_id, exc)
                raise CustomMetadataSizeLimitExceededError(
                    f"custom metadata of {len(custom)} bytes exceeds {self.custom_metadata_max_bytes}"
                )
            self.rlmm.update_remote_log_segment_metadata(update)
        finally:
            self._being_copied.discard(segment_id)
        st.copied_offset = cand.end_offset
        plog.update_highest_offset_in_remote_storage(cand.end_offset)
        return md.create_with_updates(update)

    def _delete_remote_segment(self, md: RemoteLogSegmentMetadata, now_ms: int) -> None:
        """Kafka ``deleteRemoteLogSegment``: DELETE_SEGMENT_STARTED → RSM delete → DELETE_SEGMENT_FINISHED."""
        sid = md.remote_log_segment_id
        self.rlmm.update_remote_log_segment_metadata(
            RemoteLogSegmentMetadataUpdate(sid, now_ms, md.custom_metadata, _DS, self.broker_id)
        )
        self.rsm.delete_log_segment_data(md)
        self._index_cache.pop(sid, None)
        self.rlmm.update_remote_log_segment_metadata(
            RemoteLogSegmentMetadataUpdate(sid, now_ms, md.custom_metadata, _DF, self.broker_id)
        )

    def cleanup_expired_remote_log_segments(self, tp: TopicIdPartition, now_ms: int) -> list[RemoteLogSegmentMetadata]:
        """Kafka ``RLMExpirationTask#cleanupExpiredRemoteLogSegments``: apply ``retention.ms`` /
        ``retention.bytes`` to the whole (remote + local) log, delete breaching remote segments
        and move the log start offset past them. Returns the segments deleted."""
        with self._lock:
            plog = self._partitions[tp].log
            all_segments = list(self.rlmm.list_remote_log_segments(tp))
            if not all_segments:
                return []
            entries = [(e.epoch, e.start_offset) for e in plog.leader_epoch_cache.entries()]
            plan = plan_remote_expiry(
                segments_by_epoch=lambda e: list(self.rlmm.list_remote_log_segments(tp, e)),
                all_segments=all_segments,
                epoch_entries=entries,
                log_start_offset=plog.log_start_offset,
                log_end_offset=plog.log_end_offset,
                retention_ms=plog.config.retention_ms,
                retention_bytes=plog.config.retention_bytes,
                only_local_log_segments_size=plog.only_local_log_segments_size(),
                now_ms=now_ms,
                being_copied=frozenset(self._being_copied),
                retention_floor=plog.compaction_floor,
            )
            if plan.log_start_offset is not None:
                plog.maybe_increment_log_start_offset(plan.log_start_offset)
            deleted = []
            for md in plan.to_delete + plan.unreferenced:
                try:
                    self._delete_remote_segment(md, now_ms)
                    deleted.append(md)
                except RemoteStorageException as exc:
                    log.info("remote segment %s could not be deleted: %s", md.remote_log_segment_id, exc)
            return deleted

    def delete_remote_log_partition(self, tp: TopicIdPartition, now_ms: int) -> int:
        """Topic deletion (Kafka ``deleteRemoteLogPartition``): every listed segment goes
        DELETE_SEGMENT_STARTED → delete → DELETE_SEGMENT_FINISHED (custom metadata passed along),
        any data left without metadata is removed, then the partition directory. Returns the
        number of segments deleted."""
        with self._lock:
            segments = list(self.rlmm.list_remote_log_segments(tp))
            for md in segments:
                self._delete_remote_segment(md, now_ms)
            remover = getattr(self.rsm, "delete_partition", None)
            if remover is not None:
                remover(tp)
            return len(segments)

    def reconcile(self, tp: TopicIdPartition, now_ms: int) -> ReconciliationPlan:
        """Restart repair (see the module docstring): removes staging leftovers, deletes segments
        left in COPY_SEGMENT_STARTED / DELETE_SEGMENT_STARTED and COPY_SEGMENT_FINISHED ones
        whose data is missing, and deletes remote data no live metadata refers to. Resets the
        copy position (recomputed from the RLMM) so the copy task re-uploads segments that never
        reached COPY_SEGMENT_FINISHED (see the module docstring for the missing-data limit).
        Returns the plan executed."""
        with self._lock:
            st = self._partitions[tp]
            cleanup = getattr(self.rsm, "cleanup_incomplete", None)
            if cleanup is not None:
                cleanup(tp)  # this partition's leftovers only: other leaders upload beside it
            lister = getattr(self.rsm, "list_segments", None)
            data_ids = set(lister(tp)) if lister is not None else None
            listed = list(self.rlmm.list_remote_log_segments(tp))
            if data_ids is None:  # an RSM that cannot list: only the metadata side can be repaired
                data_ids = {md.remote_log_segment_id.id for md in listed if md.state == _CF}
            plan = plan_reconciliation(listed, data_ids, frozenset(self._being_copied))
            for md in plan.delete:
                if md in plan.missing_data:
                    log.error("remote segment %s is COPY_SEGMENT_FINISHED but its data is missing", md.remote_log_segment_id)
                self._delete_remote_segment(md, now_ms)
            dropper = getattr(self.rsm, "delete_segment_by_id", None)
            for orphan in plan.orphans:
                log.warning("deleting remote data of %s segment %s that has no metadata", tp, orphan)
                if dropper is not None:
                    dropper(tp, orphan)
            st.copied_offset = None
            st.reconciled = True
            return plan

    # ----------------------------------------------------------------- runner thread
    def start(self) -> None:
        """Start the background thread: :meth:`run_once` every ``task_interval_ms``."""
        if self._thread is not None:
            return
        self._stop.clear()

        def loop() -> None:
            while not self._stop.wait(self.task_interval_ms / 1000.0):
                self.run_once(self.clock())

        self._thread = threading.Thread(target=loop, name="remote-log-manager", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the background thread (waits for a running pass to end)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    # ----------------------------------------------------------------- read path
    def read(
        self,
        tp: TopicIdPartition,
        fetch_offset: int,
        max_bytes: int,
        *,
        max_offset: Optional[int] = None,
        min_one_message: bool = True,
    ) -> FetchDataInfo:
        """The tiered read path (Kafka ``ReplicaManager#readFromLocalLog`` + ``RemoteLogManager#read``).

        Offsets ``>= local log start offset`` are read locally (:meth:`PartitionLog.read`); lower
        ones (but ``>= log start offset``) from the remote tier: the epoch of ``fetch_offset``
        comes from the local leader-epoch cache, the segment from
        ``rlmm.remote_log_segment_metadata(tp, epoch, offset)``, the position from the segment's
        remote offset index; whole batches are returned up to ``max_bytes`` (the first one whole
        when ``min_one_message``) and only below ``max_offset`` (default: high watermark). When a
        segment has nothing at or after the offset, the next one is tried.

        Raises :class:`OffsetOutOfRangeError` outside ``[log start, log end]`` or when no remote
        segment holds the offset; the RLMM's own errors (e.g. not ready, retriable) pass through."""
        plog = self._partitions[tp].log
        if fetch_offset < plog.log_start_offset or fetch_offset > plog.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {fetch_offset} out of range [{plog.log_start_offset}, {plog.log_end_offset}] for {tp}"
            )
        if fetch_offset >= plog.local_log_start_offset:
            try:
                return plog.read(fetch_offset, max_bytes, max_offset=max_offset, min_one_message=min_one_message)
            except OffsetOutOfRangeError:
                if fetch_offset >= plog.local_log_start_offset or fetch_offset < plog.log_start_offset:
                    raise
                # the local copy was deleted (after tiering) between the check and the read
        limit = plog.high_watermark if max_offset is None else max_offset
        offset = fetch_offset
        epoch = plog.leader_epoch_cache.epoch_for_offset(offset)
        md = self.rlmm.remote_log_segment_metadata(tp, epoch, offset) if epoch is not None else None
        if md is None:
            raise OffsetOutOfRangeError(
                f"Received request for offset {offset} for leader epoch {epoch if epoch is not None else 'NOT AVAILABLE'}"
                f" and partition {tp} which does not exist in remote tier."
            )
        while md is not None:
            records = self._read_remote_segment(md, offset, max_bytes, limit, min_one_message)
            if records is not None:
                return FetchDataInfo(
                    fetch_offset, records, plog.high_watermark, plog.log_start_offset, plog.log_end_offset, from_remote=True
                )
            nxt = md.end_offset + 1
            if nxt >= plog.local_log_start_offset:
                break
            e = plog.leader_epoch_cache.epoch_for_offset(nxt)
            md = self.rlmm.remote_log_segment_metadata(tp, e, nxt) if e is not None else None
            offset = nxt
        return FetchDataInfo(fetch_offset, b"", plog.high_watermark, plog.log_start_offset, plog.log_end_offset, from_remote=True)

    def _remote_offset_index(self, md: RemoteLogSegmentMetadata) -> tuple[list[int], list[int]]:
        sid = md.remote_log_segment_id
        cached = self._index_cache.get(sid)
        if cached is None:
            with self.rsm.fetch_index(md, IndexType.OFFSET) as f:
                raw = f.read()
            offs, poss = [], []
            for rel, pos in struct.iter_unpack(">ii", raw[: len(raw) - len(raw) % 8]):
                offs.append(md.start_offset + rel)
                poss.append(pos)
            cached = (offs, poss)
            if len(self._index_cache) > 1024:
                self._index_cache.pop(next(iter(self._index_cache)))
            self._index_cache[sid] = cached
        return cached

    def _read_remote_segment(self, md, offset: int, max_bytes: int, limit: int, min_one: bool) -> Optional[bytes]:
        """Whole batches of one remote segment from the batch holding ``offset``; None if the
        segment has no batch with last offset >= ``offset``."""
        offs, poss = self._remote_offset_index(md)
        i = bisect.bisect_right(offs, offset) - 1
        start = poss[i] if i >= 0 else 0
        out = bytearray()
        found = False
        with self.rsm.fetch_log_segment(md, start) as f:
            while True:
                head = f.read(rb.LOG_OVERHEAD)
                if len(head) < rb.LOG_OVERHEAD:
                    break
                (length,) = struct.unpack_from(">i", head, 8)
                body = f.read(length)
                if len(body) < length:
                    break
                batch = head + body
                h = rb.parse_header(batch)
                if h.last_offset < offset:
                    continue
                found = True
                if h.last_offset >= limit:
                    break
                if len(out) + len(batch) > max_bytes and not (not out and min_one):
                    break
                out += batch
        if not found:
            return None
        return bytes(out)

    def fetch_offset_by_timestamp(
        self, tp: TopicIdPartition, timestamp: int, *, isolation_level: Optional[int] = 0
    ) -> Optional[TimestampAndOffset]:
        """ListOffsets for a tiered partition (Kafka ``UnifiedLog#fetchOffsetByTimestamp`` with
        ``RemoteLogManager#findOffsetByTimestamp``): for ``timestamp >= 0`` the remote tier is
        searched first (COPY_SEGMENT_FINISHED segments in lineage, by epoch, whose max timestamp
        reaches ``timestamp``), then the local log. Special timestamps (-1…-5) go to
        :meth:`PartitionLog.fetch_offset_by_timestamp`. ``isolation_level`` as there. Returns
        None when nothing matches."""
        plog = self._partitions[tp].log
        if timestamp < 0:
            return plog.fetch_offset_by_timestamp(timestamp, isolation_level=isolation_level)
        start = plog.log_start_offset
        entries = [(e.epoch, e.start_offset) for e in plog.leader_epoch_cache.entries()]
        epoch_map = build_filtered_leader_epoch_map(entries)
        first_epoch = plog.leader_epoch_cache.epoch_for_offset(start)
        local_base = plog.local_log_start_offset
        for epoch in sorted(epoch_map):
            if first_epoch is not None and epoch < first_epoch:
                continue
            for md in self.rlmm.list_remote_log_segments(tp, epoch):
                if (
                    md.state == _CF
                    and md.max_timestamp_ms >= timestamp
                    and md.end_offset >= start
                    and is_remote_segment_within_leader_epochs(md, plog.log_end_offset, epoch_map)
                ):
                    if md.start_offset < local_base:
                        found = self._lookup_timestamp_remote(md, timestamp, start)
                        if found is not None:
                            if found[1] >= plog.last_fetchable_offset(isolation_level):
                                return None
                            return TimestampAndOffset(found[0], found[1], plog.leader_epoch_cache.epoch_for_offset(found[1]))
                    else:
                        return plog.fetch_offset_by_timestamp(timestamp, isolation_level=isolation_level)
        return plog.fetch_offset_by_timestamp(timestamp, isolation_level=isolation_level)

    def _lookup_timestamp_remote(self, md, timestamp: int, start_offset: int) -> Optional[tuple[int, int]]:
        """First record with timestamp >= ``timestamp`` and offset >= ``start_offset`` in one
        remote segment (Kafka ``RemoteLogManager#lookupTimestamp``): the remote time index gives
        a starting offset, the offset index its position, then batches are streamed one at a
        time (memory stays at one batch)."""
        start_pos = 0
        try:
            with self.rsm.fetch_index(md, IndexType.TIMESTAMP) as f:
                raw = f.read()
            entries = list(struct.iter_unpack(">qi", raw[: len(raw) - len(raw) % 12]))
            ts_keys = [t for t, _ in entries]
            i = bisect.bisect_left(ts_keys, timestamp) - 1  # every record up to it is < timestamp
            if i >= 0:
                from_offset = md.start_offset + entries[i][1]
                offs, poss = self._remote_offset_index(md)
                j = bisect.bisect_right(offs, from_offset) - 1
                start_pos = poss[j] if j >= 0 else 0
        except RemoteStorageException:
            start_pos = 0  # no usable time index: scan the whole segment
        with self.rsm.fetch_log_segment(md, start_pos) as f:
            while True:
                head = f.read(rb.LOG_OVERHEAD)
                if len(head) < rb.LOG_OVERHEAD:
                    return None
                (length,) = struct.unpack_from(">i", head, 8)
                body = f.read(length)
                if len(body) < length:
                    return None
                batch = head + body
                h = rb.parse_header(batch)
                if h.max_timestamp >= timestamp and h.last_offset >= start_offset:
                    for rec in rb.iter_records(batch):
                        if rec.timestamp >= timestamp and rec.offset >= start_offset:
                            return rec.timestamp, rec.offset
