"""The data plane of the listener process: the open :class:`store.log.log.PartitionLog`
of every partition, Produce appends, Fetch reads (local, or the remote tier through the
RemoteLogManager) and ListOffsets — with Kafka's error names.

Record bytes stay in this process: they go from the request into the segment file and from the
segment file (or the remote tier) into the response; actors only ever see offsets.

Who leads which partition comes from a :class:`wire.cluster_view.ClusterView`; the default
:class:`~wire.cluster_view.StaticClusterView` makes this node the leader of every partition with
ISR = {itself}, so after an append the high watermark is the log end offset (a single node, as
Shoal always was). With other replicas, the :class:`wire.replica_manager.ReplicaManager` keeps
the followers' state and the high watermark, and ``acks=-1`` produces wait for it
(:meth:`LogRegistry.await_replication`).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from store.log.config import LogConfig
from store.log.errors import KafkaStorageError, OffsetOutOfRangeError, RecordBatchTooLargeError, RecordTooLargeError
from store.log.log import PartitionLog
from store import record_batch as rb
from store.producer_state import InvalidProducerEpochError, OutOfOrderSequenceError
from wire.backend import FetchedPartition, ProduceResult
from wire.cluster_view import ClusterView, StaticClusterView
from wire.hw_checkpoints import HighWatermarkCheckpoints
from wire.leader_reads import trim_batches
from wire.replica_manager import ReplicaManager
from wire.waits import WaitSet

__all__ = ["LogRegistry", "LEADER_EPOCH"]

log = logging.getLogger("shoal.wire.logs")

#: The leader epoch every partition has on a single node (:class:`StaticClusterView`).
LEADER_EPOCH = 0


def _now_ms() -> int:
    return int(time.time() * 1000)


class LogRegistry:
    """Opens, caches and closes partition logs under ``log_dirs``.

    ``topic_config(topic) -> Mapping[str, str]`` supplies a topic's configs (merged over the
    broker's) for :meth:`store.log.config.LogConfig.from_properties`. ``remote_read`` (optional)
    is called as ``remote_read(log, offset, max_bytes) -> bytes`` for offsets below the local
    log start (the RemoteLogManager's read path). ``cluster`` (default ``StaticClusterView(0)``:
    this node leads everything) says who leads each partition; ``replica_lag_time_max_ms`` is
    ``replica.lag.time.max.ms``; ``clock()`` (ms, default wall time) is the replica manager's
    time. ``hw_checkpoints`` (a cluster node's; ``None`` on a single node, where every log opens
    with HW = its log end offset): the :class:`wire.hw_checkpoints.HighWatermarkCheckpoints`
    each log's high watermark is restored from when it is opened and written to by
    :meth:`checkpoint_high_watermarks` and :meth:`close`. Thread-safe."""

    def __init__(
        self,
        log_dirs: str,
        topic_config: Callable[[str], Mapping[str, str]] | None = None,
        cluster: ClusterView | None = None,
        replica_lag_time_max_ms: int = 30_000,
        clock: Callable[[], int] | None = None,
        hw_checkpoints: HighWatermarkCheckpoints | None = None,
    ) -> None:
        self.log_dirs = log_dirs
        self.hw_checkpoints = hw_checkpoints
        Path(log_dirs).mkdir(parents=True, exist_ok=True)
        self._topic_config = topic_config or (lambda _t: {})
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._lock = threading.Lock()
        #: per-partition long polls (:class:`wire.waits.WaitSet`), bumped by :meth:`notify`
        self.waits = WaitSet()
        self.remote_read: Callable[[PartitionLog, int, int], bytes] | None = None
        self.on_open: Callable[[PartitionLog], None] | None = None
        #: ``on_drop(log, topic_deleted)``: before a log is deleted — its topic was deleted
        #: (:meth:`drop_topic`), or only this replica went (:meth:`drop_partition`)
        self.on_drop: Callable[[PartitionLog, bool], None] | None = None
        self.offset_by_timestamp: Callable[[PartitionLog, int], Any] | None = None
        self.cluster: ClusterView = cluster if cluster is not None else StaticClusterView(0)
        #: a cluster node's :class:`wire.leader_reads.LeaderReads`: how a share group's
        #: coordinator reads partitions it keeps no replica of (``None``: it cannot)
        self.leader_reads: Any = None
        self.replicas = ReplicaManager(self.cluster, self.open, self._min_isr, self.notify, replica_lag_time_max_ms, clock or _now_ms)

    def use_cluster(self, cluster: ClusterView) -> None:
        """Follow ``cluster`` from now on (a daemon builds its metadata image after the logs):
        a new :class:`ReplicaManager` on it replaces the current one, which is closed (its
        waiting produces answer NOT_LEADER_OR_FOLLOWER)."""
        old = self.replicas
        self.cluster = cluster
        self.replicas = ReplicaManager(cluster, self.open, self._min_isr, self.notify, old.lag_ms, old._clock)  # noqa: SLF001
        old.close()

    def _min_isr(self, topic: str) -> int:
        """``min.insync.replicas`` of ``topic`` (topic config merged over the broker's; 1 if unset)."""
        try:
            return max(1, int(self._topic_config(topic).get("min.insync.replicas", "1")))
        except (TypeError, ValueError):
            return 1

    # -- lifecycle ---------------------------------------------------------------------------
    def open(self, topic: str, partition: int) -> PartitionLog:
        """The log of ``topic``-``partition``, opened (and recovered) on first use."""
        key = (topic, partition)
        lg = self._logs.get(key)
        if lg is not None:
            return lg
        with self._lock:
            lg = self._logs.get(key)
            if lg is None:
                cfg = LogConfig.from_properties(self._topic_config(topic))
                lg = PartitionLog.open(self.log_dirs, topic, partition, cfg, now_ms=_now_ms())
                if self.hw_checkpoints is not None:
                    self.hw_checkpoints.restore(lg)  # before anyone reads it (Kafka Partition.createLog)
                self._logs[key] = lg
                if self.on_open is not None:
                    self.on_open(lg)
            return lg

    def get(self, topic: str | None, partition: int) -> PartitionLog | None:
        """The open log of ``topic``-``partition``, or ``None`` (never opens one; no copy)."""
        return self._logs.get((topic, partition))  # type: ignore[arg-type]

    def logs(self) -> dict[tuple[str, int], PartitionLog]:
        """A copy of the open logs, keyed by (topic, partition)."""
        with self._lock:
            return dict(self._logs)

    def config_of(self, topic: str) -> LogConfig:
        """The :class:`LogConfig` a log of ``topic`` opens with now (its topic configs merged
        over the broker's)."""
        return LogConfig.from_properties(self._topic_config(topic))

    def reconfigure(self, topic: str) -> None:
        """Re-read ``topic``'s configs into its open logs (after IncrementalAlterConfigs)."""
        cfg = self.config_of(topic)
        for (t, _p), lg in self.logs().items():
            if t == topic:
                lg.config = cfg

    def drop_topic(self, topic: str) -> None:
        """Close and delete the logs of a deleted topic (also those not opened since the start,
        so a topic re-created with the same name starts empty)."""
        for d in Path(self.log_dirs).glob(f"{topic}-*"):
            suffix = d.name[len(topic) + 1 :]
            if d.is_dir() and suffix.isdigit():
                self.open(topic, int(suffix))
        self.replicas.forget(topic)
        if self.hw_checkpoints is not None:
            self.hw_checkpoints.forget(topic)
        with self._lock:
            keys = [k for k in self._logs if k[0] == topic]
            victims = [self._logs.pop(k) for k in keys]
        for lg in victims:
            try:
                if self.on_drop is not None:
                    self.on_drop(lg, True)
                lg.delete()
            except Exception:  # pragma: no cover - best effort on a deleted topic
                log.exception("deleting %s-%d", lg.topic, lg.partition)

    def checkpoint_high_watermarks(self) -> dict[tuple[str, int], int] | None:
        """Write every replica's high watermark to the ``replication-offset-checkpoint`` file
        (Kafka ``ReplicaManager.checkpointHighWatermarks``; the daemon calls it every
        ``replica.high.watermark.checkpoint.interval.ms``). Returns the offsets written
        (``(topic, partition) → HW``, exclusive), ``None`` without ``hw_checkpoints``. Raises
        ``OSError`` when the file cannot be written."""
        if self.hw_checkpoints is None:
            return None
        return self.hw_checkpoints.checkpoint(self.logs())

    def drop_partition(self, topic: str, partition: int) -> bool:
        """Close and delete the log of ``topic``-``partition`` (also one not opened since the
        start): a replica a reassignment removed from this node (Kafka's ``ReplicaManager``
        deletes the log of a partition the broker no longer hosts, ``stopPartitions`` with
        ``deletePartition``). Returns whether there was a log to delete."""
        key = (topic, partition)
        if key not in self._logs and not (Path(self.log_dirs) / f"{topic}-{partition}").is_dir():
            return False
        lg = self.open(topic, partition)
        with self._lock:
            if self._logs.get(key) is lg:
                del self._logs[key]
        try:
            if self.on_drop is not None:
                self.on_drop(lg, False)
            lg.delete()
        except Exception:  # pragma: no cover - best effort, as for a deleted topic
            log.exception("deleting %s-%d", topic, partition)
        return True

    def close(self) -> None:
        """Stop the replica manager, checkpoint the high watermarks (with ``hw_checkpoints``),
        then flush and close every log (clean shutdown)."""
        self.replicas.close()
        try:
            self.checkpoint_high_watermarks()
        except (OSError, ValueError):  # pragma: no cover - a full disk must not keep the logs from closing
            log.exception("high watermark checkpoint at shutdown")
        with self._lock:
            victims = list(self._logs.values())
            self._logs.clear()
        for lg in victims:
            try:
                lg.close()
            except Exception:  # pragma: no cover
                log.exception("closing %s-%d", lg.topic, lg.partition)

    # -- data plane --------------------------------------------------------------------------
    def append(self, topic: str, partition: int, records: bytes, acks: int = 1) -> ProduceResult:
        """Validate and append one Produce partition as its leader, stamping the leader epoch,
        then advance the high watermark (``min`` LEO over the ISR; the LEO on a single node).
        Errors: NOT_LEADER_OR_FOLLOWER (this node does not lead), NOT_ENOUGH_REPLICAS (``acks=-1``
        with ISR < min.insync.replicas, nothing appended), CORRUPT_MESSAGE (CRC, structure),
        INVALID_RECORD, UNSUPPORTED_COMPRESSION_TYPE, MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE,
        KAFKA_STORAGE_ERROR, and for idempotent producers INVALID_PRODUCER_EPOCH and
        OUT_OF_ORDER_SEQUENCE_NUMBER; a retried idempotent batch gets the offset it was first
        written at. For ``acks=-1`` whose records are not below the HW yet, the result's
        ``required_offset`` (last offset + 1) is set: pass it to :meth:`await_replication`
        (Kafka ``ReplicaManager.appendRecords`` → ``DelayedProduce``)."""
        err, leader_epoch = self.replicas.before_append(topic, partition, acks)
        if err != "NONE":
            return ProduceResult(err)
        lg = self.open(topic, partition)
        try:
            info = lg.append_as_leader(records, leader_epoch, _now_ms())
        except rb.CorruptRecordError as exc:
            return ProduceResult("CORRUPT_MESSAGE", message=str(exc))
        except rb.InvalidRecordError as exc:
            return ProduceResult("INVALID_RECORD", message=str(exc))
        except rb.UnsupportedCompressionTypeError as exc:
            return ProduceResult("UNSUPPORTED_COMPRESSION_TYPE", message=str(exc))
        except RecordTooLargeError as exc:
            return ProduceResult("MESSAGE_TOO_LARGE", message=str(exc))
        except RecordBatchTooLargeError as exc:
            return ProduceResult("RECORD_LIST_TOO_LARGE", message=str(exc))
        except KafkaStorageError as exc:
            return ProduceResult("KAFKA_STORAGE_ERROR", message=str(exc))
        except InvalidProducerEpochError as exc:
            return ProduceResult("INVALID_PRODUCER_EPOCH", message=str(exc))
        except OutOfOrderSequenceError as exc:
            return ProduceResult("OUT_OF_ORDER_SEQUENCE_NUMBER", message=str(exc))
        now_state = self.cluster.partition_state(topic, partition)
        if now_state is None or now_state.leader != self.cluster.node_id or now_state.leader_epoch != leader_epoch:
            # leadership moved while the batch was appended: it may be truncated by the new
            # leader, so it is not acknowledged (the client retries on the new leader)
            return ProduceResult("NOT_LEADER_OR_FOLLOWER")
        if info.duplicate:
            res = ProduceResult(None, info.first_offset, -1, info.log_start_offset)
            hw = lg.high_watermark
        else:
            hw = self.replicas.after_append(topic, partition)
            self.notify(topic, partition)  # consumers (HW moved) and followers (LEO moved) long-polling
            res = ProduceResult(None, info.first_offset, info.log_append_time_ms, info.log_start_offset)
        if acks == -1 and hw < info.last_offset + 1:
            res = replace(res, required_offset=info.last_offset + 1)
        return res

    def await_replication(self, pending: list[tuple[str, int, int]], timeout_ms: int) -> list[str | None]:
        """The produce purgatory: wait until every ``(topic, partition, required_offset)`` is
        below its partition's high watermark, or ``timeout_ms`` passes (one deadline for all, as
        Kafka's ``DelayedProduce``). Returns one error per entry: ``None``,
        NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER or REQUEST_TIMED_OUT (the
        records stay in the log and may still commit)."""
        deadline = time.monotonic() + max(0, timeout_ms) / 1000
        out: list[str | None] = []
        for topic, partition, required in pending:
            err = self.replicas.wait_for_hw(topic, partition, required, deadline)
            out.append(None if err == "NONE" else err)
        return out

    def read(self, topic: str, partition: int, offset: int, max_bytes: int, replica_id: int = -1, current_leader_epoch: int = -1,
             max_records: int | None = None, min_batches: int = 1) -> FetchedPartition:
        """Whole batches from ``offset`` up to the high watermark, ``max_bytes`` (at least one
        batch). Below the local log start the remote tier serves the read; outside
        [log start, log end] the answer is OFFSET_OUT_OF_RANGE. Only the leader serves reads:
        FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH for a ``current_leader_epoch`` (``-1``: none)
        older / newer than the leader's, NOT_LEADER_OR_FOLLOWER on a non-leader. A follower
        (``replica_id >= 0``) reads up to the log end offset, its ``offset`` is recorded as its
        LEO and the answer carries the leader's high watermark (:meth:`_read_as_follower`).
        ``max_records``, ``min_batches``: see :meth:`store.log.log.PartitionLog.read` (local reads
        only)."""
        if replica_id >= 0:
            return self._read_as_follower(topic, partition, offset, max_bytes, replica_id, current_leader_epoch)
        err, _ = self.replicas.leader_check(topic, partition, current_leader_epoch)
        if err != "NONE":
            return FetchedPartition(err)
        lg = self.open(topic, partition)
        try:
            info = lg.read(offset, max_bytes, max_records=max_records, min_batches=min_batches)
            return FetchedPartition(None, info.high_watermark, info.log_start_offset, info.records)
        except OffsetOutOfRangeError:
            if self.remote_read is not None and lg.log_start_offset <= offset < lg.local_log_start_offset:
                data = self.remote_read(lg, offset, max_bytes)
                return FetchedPartition(None, lg.high_watermark, lg.log_start_offset, data)
            return FetchedPartition("OFFSET_OUT_OF_RANGE", lg.high_watermark, lg.log_start_offset)

    def _read_as_follower(self, topic: str, partition: int, offset: int, max_bytes: int, replica_id: int, current_leader_epoch: int) -> FetchedPartition:
        """A follower fetch (Kafka ``Partition.fetchRecords`` with ``FetchIsolation.LOG_END``):
        checks (:meth:`ReplicaManager.follower_fetch_check`), a read up to the LEO, then the
        follower's state update; OFFSET_OUT_OF_RANGE outside the local log, or
        OFFSET_MOVED_TO_TIERED_STORAGE below the local log start of a tiered partition (KIP-405)."""
        err = self.replicas.follower_fetch_check(topic, partition, replica_id, current_leader_epoch)
        if err != "NONE":
            return FetchedPartition(err)
        lg = self.open(topic, partition)
        try:
            info = lg.read(offset, max_bytes, max_offset=lg.log_end_offset)
        except OffsetOutOfRangeError:
            if lg.config.remote_storage_enable and lg.log_start_offset <= offset < lg.local_log_start_offset:
                # KIP-405: the follower rebuilds its log start from the remote tier, then fetches
                # from this log's local start (ReplicaFetcherTierStateMachine)
                return FetchedPartition("OFFSET_MOVED_TO_TIERED_STORAGE", lg.high_watermark, lg.log_start_offset)
            return FetchedPartition("OFFSET_OUT_OF_RANGE", lg.high_watermark, lg.log_start_offset)
        err, hw = self.replicas.update_follower(topic, partition, replica_id, offset, current_leader_epoch)
        if err != "NONE":
            return FetchedPartition(err)
        return FetchedPartition(None, hw, info.log_start_offset, info.records)

    def offset_for_leader_epoch(self, topic: str, partition: int, current_leader_epoch: int, leader_epoch: int) -> tuple[str | None, int, int]:
        """OffsetForLeaderEpoch on the leader (Kafka ``Partition.lastOffsetForLeaderEpoch``):
        the epoch checks and NOT_LEADER_OR_FOLLOWER, then ``(None, epoch, end offset)`` from the
        leader-epoch cache (``LeaderEpochFileCache.endOffsetFor``: the latest epoch ends at the
        LEO, an older one where the next begins; ``(-1, -1)`` for an unknown larger epoch)."""
        err, _ = self.replicas.leader_check(topic, partition, current_leader_epoch)
        if err != "NONE":
            return err, -1, -1
        lg = self.open(topic, partition)
        epoch, end = lg.leader_epoch_cache.end_offset_for(leader_epoch, lg.log_end_offset)
        return None, epoch, end

    def hosts(self, topic: str, partition: int) -> bool:
        """Whether this node keeps a replica of ``topic``-``partition`` (its leader or a follower;
        always, on a single node)."""
        ps = self.cluster.partition_state(topic, partition)
        return ps is not None and ps.role(self.cluster.node_id) is not None

    def batch_bounds(self, topic: str, partition: int, offset: int, max_bytes: int, max_records: int | None = None,
                     min_batches: int = 1, any_replica: bool = False) -> tuple[list[tuple[int, int]], bytes]:
        """The batches from ``offset`` (up to the high watermark, ``max_bytes``, and — with
        ``max_records`` — up to the batch that holds the ``max_records``-th offset, at least
        ``min_batches``) as ``[(base_offset, last_offset)]`` plus their bytes — what a
        share-partition acquires from. Below the local log start (the remote tier) ``max_records``
        does not apply. ``any_replica``: on a node that follows the partition, read the local
        replica up to its own high watermark (``min(leader HW, log end)`` as of its last fetch:
        committed records only) — how a share group's coordinator acquires from partitions
        another node leads (:mod:`wire.forwarding`); nothing from a node without a replica."""
        r = self.read(topic, partition, offset, max_bytes, max_records=max_records, min_batches=min_batches)
        if r.error == "NOT_LEADER_OR_FOLLOWER" and any_replica and self.hosts(topic, partition):
            try:
                info = self.open(topic, partition).read(offset, max_bytes, max_records=max_records, min_batches=min_batches)
            except OffsetOutOfRangeError:
                return [], b""
            r = FetchedPartition(None, info.high_watermark, info.log_start_offset, info.records)
        if r.error or not r.records:
            return [], b""
        bounds = [(h.base_offset, h.last_offset) for h in rb.iter_batches(r.records, verify_crc=False)]
        return bounds, r.records

    def share_readable(self, topic: str, partition: int) -> bool:
        """Whether a share group's coordinator on this node can acquire from ``topic``-``partition``:
        it keeps a replica of it, or it reads it from its leader (:attr:`leader_reads`)."""
        return self.leader_reads is not None or self.hosts(topic, partition)

    def share_read(self, topic: str, partition: int, offset: int, max_bytes: int, max_records: int | None = None,
                   min_batches: int = 1) -> tuple[FetchedPartition, list[tuple[int, int]]]:
        """What a share group's coordinator acquires from: the batches of ``topic``-``partition``
        from ``offset`` (-1 or below the log start: from the log start) below the high
        watermark, at most ``max_bytes`` and — with ``max_records``/``min_batches`` — as
        :meth:`batch_bounds` limits them. Read from this node's replica (leader or follower:
        :meth:`batch_bounds` with ``any_replica``) or, without one, from the partition's leader
        with Fetch (:meth:`wire.leader_reads.LeaderReads.read`). Returns ``(FetchedPartition(error,
        high watermark, log start offset, records), [(base offset, last offset)] of those
        records)``; the error is NOT_LEADER_OR_FOLLOWER when no replica and no leader can be read.
        A follower replica reads below its local log start (a tiered partition) from the leader
        too."""
        ps = self.cluster.partition_state(topic, partition)
        role = ps.role(self.cluster.node_id) if ps is not None else None
        if role is not None:
            lg = self.open(topic, partition)
            hw, lso = lg.high_watermark, lg.log_start_offset
            start = max(offset, lso)
            # a follower replica holds nothing below its local log start (tiered away): the
            # leader reads those offsets from the remote tier
            if role == "leader" or self.leader_reads is None or start >= lg.local_log_start_offset:
                if start >= hw:
                    return FetchedPartition(None, hw, lso), []
                bounds, data = self.batch_bounds(topic, partition, start, max_bytes, max_records, min_batches, any_replica=True)
                return FetchedPartition(None, hw, lso, data), bounds
        if self.leader_reads is None:
            return FetchedPartition("NOT_LEADER_OR_FOLLOWER"), []
        r = self.leader_reads.read(topic, partition, max(0, offset), max_bytes)
        if r.error is not None:
            return FetchedPartition(r.error, r.high_watermark, r.log_start_offset), []
        data = trim_batches(r.records, max(offset, r.log_start_offset), max_records, min_batches)
        return FetchedPartition(None, r.high_watermark, r.log_start_offset, data), [(h.base_offset, h.last_offset) for h in rb.iter_batches(data, verify_crc=False)]

    def share_offsets(self, topic: str, partition: int) -> tuple[int, int]:
        """``(log start offset, high watermark)`` of ``topic``-``partition`` for a share group's
        coordinator that does not read it now (an acknowledgement-only partition): this node's
        replica's, else the leader's (one small read); ``(-1, -1)`` when neither is known."""
        if self.hosts(topic, partition):
            lg = self.open(topic, partition)
            return lg.log_start_offset, lg.high_watermark
        fp, _ = self.share_read(topic, partition, -1, 1)
        return (fp.log_start_offset, fp.high_watermark) if fp.error is None else (-1, -1)

    def share_list_offset(self, topic: str, partition: int, timestamp: int) -> tuple[str | None, int]:
        """ListOffsets for a share group's coordinator (``share.auto.offset.reset=by_duration``):
        ``(error, offset)`` from this node when it leads ``topic``-``partition``, else from the
        leader (:meth:`wire.leader_reads.LeaderReads.list_offset`)."""
        err, off, _ts = self.list_offset(topic, partition, timestamp)
        if err == "NOT_LEADER_OR_FOLLOWER" and self.leader_reads is not None:
            return self.leader_reads.list_offset(topic, partition, timestamp)
        return err, off

    def watch_share(self, topic: str, partition: int, high_watermark: int) -> None:
        """A share fetch is about to wait for ``topic``-``partition`` to grow past
        ``high_watermark``: on a partition read from its leader, have the leader's progress bump
        ``("partition", topic, partition)`` in :attr:`waits` (this node's appends and high
        watermark moves bump it for a local replica, :meth:`notify`)."""
        if self.leader_reads is not None and not self.hosts(topic, partition):
            self.leader_reads.watch(topic, partition, high_watermark)

    def list_offset(self, topic: str, partition: int, timestamp: int) -> tuple[str | None, int, int]:
        """ListOffsets on one partition → ``(error, offset, timestamp)`` (offset -1 if none);
        NOT_LEADER_OR_FOLLOWER on a non-leader (see :meth:`list_offset_with_epoch`)."""
        return self.list_offset_with_epoch(topic, partition, timestamp)[:3]  # type: ignore[return-value]

    def list_offset_with_epoch(self, topic: str, partition: int, timestamp: int) -> tuple[str | None, int, int, int]:
        """ListOffsets on one partition → ``(error, offset, timestamp, leader_epoch)``: the epoch
        is the one the answer's offset was written in (the latest epoch for LATEST; -1 when
        unknown), which KIP-320 clients validate their position against (Kafka
        ``UnifiedLog.fetchOffsetByTimestamp``). NOT_LEADER_OR_FOLLOWER on a non-leader."""
        err, _ = self.replicas.leader_check(topic, partition)
        if err != "NONE":
            return err, -1, -1, -1
        lg = self.open(topic, partition)
        try:
            if self.offset_by_timestamp is not None:
                found = self.offset_by_timestamp(lg, timestamp)
            else:
                found = lg.fetch_offset_by_timestamp(timestamp)
        except ValueError:
            return "INVALID_REQUEST", -1, -1, -1
        if found is None:
            return None, -1, -1, -1
        epoch = getattr(found, "leader_epoch", None)
        return None, found.offset, found.timestamp, -1 if epoch is None else int(epoch)

    def delete_records(self, topic: str, partition: int, offset: int) -> tuple[str | None, int]:
        """DeleteRecords on one partition → ``(error, low_watermark)``
        (:meth:`store.log.log.PartitionLog.delete_records`; OFFSET_OUT_OF_RANGE with low
        watermark -1 for a bad offset). A share group sees the new log start offset at its next
        ShareFetch and archives below it (``LogStartOffsetMoved``). NOT_LEADER_OR_FOLLOWER on a
        non-leader."""
        err, _ = self.replicas.leader_check(topic, partition)
        if err != "NONE":
            return err, -1
        lg = self.open(topic, partition)
        try:
            low = lg.delete_records(offset)
        except OffsetOutOfRangeError:
            return "OFFSET_OUT_OF_RANGE", -1
        self.notify(topic, partition)  # readers waiting on the log see the change
        return None, low

    def data_version(self, partitions: Sequence[tuple[str, int]]) -> dict:
        """What :meth:`wait` compares against: the versions of the ``partitions``' keys in
        :attr:`waits` (``("partition", topic, partition)``, bumped by :meth:`notify`). Take it
        *before* looking at the logs."""
        return self.waits.versions([("partition", t, p) for t, p in partitions])

    def notify(self, topic: str, partition: int) -> None:
        """Wake the long polls waiting on ``topic``-``partition`` in :attr:`waits` (the Fetch and
        ShareFetch purgatories). :meth:`append` calls it after the high watermark moved, the
        replica manager when followers moved it."""
        self.waits.bump(("partition", topic, partition))

    def wait(self, timeout_ms: int, since: dict) -> None:
        """Block until one of the partitions ``since`` (from :meth:`data_version`) covers changes,
        or ``timeout_ms`` passes (Kafka's ``DelayedFetch`` is keyed by partition: an append to
        another partition does not wake it). Take ``since`` *before* checking the logs, or a
        change between the check and the wait is missed and the long poll sleeps its whole
        ``timeout_ms`` with data waiting."""
        self.waits.wait(since, max(0, timeout_ms) / 1000, party=object())  # its own party: every waiter wakes

    def end_offsets(self) -> dict[tuple[str, int], int]:
        """High watermark of every open log."""
        return {k: lg.high_watermark for k, lg in self.logs().items()}

