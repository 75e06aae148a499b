"""The follower's side of replication (Kafka ``ReplicaFetcherManager`` /
``ReplicaFetcherThread`` / ``AbstractFetcherThread``): one thread per source broker fetches,
with Kafka's own Fetch (API 1, ``replica_id`` = this node), the partitions this node follows
from that leader, appends what it gets with the leader's offsets and epochs
(:meth:`store.log.log.PartitionLog.append_as_follower`) and sets the local high watermark
to ``min(leader HW, local LEO)``.

On a new leader epoch a partition first truncates by leader epoch (KIP-101/KIP-279,
reference kafka-replication.md §7.2) with OffsetForLeaderEpoch (API 23): it sends the latest
epoch of its epoch cache, truncates to ``min(answered end offset, own end of that epoch, LEO)``,
and asks again with the answered epoch when the leader's is lower than its own (the #63 trace).
Deviation: Fetch v12's ``last_fetched_epoch`` is sent as -1, so divergence is only detected by
this truncation step (the leader never answers DivergingEpoch).

Between brokers only the Kafka protocol is spoken: requests are kio entities sent over
:class:`wire.cluster.BrokerChannel` (the inter-broker client the cluster metadata uses too).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from kio.schema.fetch.v12.response import FetchResponse
from kio.schema.offset_for_leader_epoch.v4.request import OffsetForLeaderEpochRequest, OffsetForLeaderPartition, OffsetForLeaderTopic
from kio.schema.offset_for_leader_epoch.v4.response import OffsetForLeaderEpochResponse
from kio.static.primitive import i32

from store.log.errors import OffsetOutOfRangeError
from store.log.log import EARLIEST_LOCAL_TIMESTAMP, PartitionLog
from store import record_batch as rb
from wire.cluster import FETCH_VERSION, LIST_OFFSETS_VERSION, BrokerChannel, RpcError, fetch_request, list_offset_answer, list_offset_request
from wire.cluster_view import NO_LEADER, ClusterView

__all__ = ["FetcherConfig", "ReplicaFetcherManager", "ReplicaFetcherThread", "StrayReplicaCleaner"]

log = logging.getLogger("shoal.wire.replica_fetcher")

OFFSET_FOR_LEADER_EPOCH_VERSION = 4

Key = tuple[str, int]


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class FetcherConfig:
    """Kafka's follower settings: ``replica.fetch.wait.max.ms`` (500), ``replica.fetch.min.bytes``
    (1), ``replica.fetch.max.bytes`` (1048576, per partition), ``replica.fetch.response.max.bytes``
    (10485760), ``replica.fetch.backoff.ms`` (1000), ``replica.socket.timeout.ms`` (30000)."""

    wait_max_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 1_048_576
    response_max_bytes: int = 10_485_760
    backoff_ms: int = 1000
    socket_timeout_ms: int = 30_000

    @classmethod
    def from_config(cls, cfg: Any) -> "FetcherConfig":
        """Read the ``replica.*`` keys of a broker config mapping (defaults as Kafka's)."""

        def get(k: str, d: int) -> int:
            try:
                return int(cfg.get(k, d))
            except (TypeError, ValueError):
                return d

        return cls(
            get("replica.fetch.wait.max.ms", 500),
            get("replica.fetch.min.bytes", 1),
            get("replica.fetch.max.bytes", 1_048_576),
            get("replica.fetch.response.max.bytes", 10_485_760),
            get("replica.fetch.backoff.ms", 1000),
            get("replica.socket.timeout.ms", 30_000),
        )


@dataclass
class _PartitionFetchState:
    """A followed partition in a fetcher thread: the leader epoch it follows, whether it still
    has to truncate, and until when it backs off after an error (monotonic s)."""

    leader_epoch: int
    truncating: bool = True
    delayed_until: float = 0.0


class ReplicaFetcherThread:
    """Fetches the partitions this node follows from one leader (``source`` broker id).
    ``log_of(topic, partition)`` opens the local log; ``endpoint()`` gives the leader's
    ``(host, port)`` (or ``None``); ``on_fenced(key, epoch)`` is told about FENCED_LEADER_EPOCH
    (the partition is removed until the metadata changes). NOT_LEADER_OR_FOLLOWER,
    UNKNOWN_LEADER_EPOCH and other errors back off ``replica.fetch.backoff.ms`` and retry (the
    leader may not have seen the new metadata yet)."""

    def __init__(
        self,
        node_id: int,
        source: int,
        endpoint: Callable[[], tuple[str, int] | None],
        log_of: Callable[[str, int], PartitionLog],
        config: FetcherConfig,
        on_fenced: Callable[[Key, int], None] = lambda _k, _e: None,
        follows: Callable[[Key, int], bool] = lambda _k, _e: True,
        on_high_watermark: Callable[[Key], None] = lambda _k: None,
        on_moved_to_tiered: Callable[[Key, int, int], bool] | None = None,
    ) -> None:
        self.node_id = node_id
        self.source = source
        #: ``on_moved_to_tiered(key, leader local log start, leader log start) -> bool``: rebuild
        #: the local log's start from the remote tier (KIP-405); ``None``: tiered storage is off
        self._on_tiered = on_moved_to_tiered
        #: ``follows(key, leader_epoch)``: the metadata image still has ``source`` leading ``key``
        #: at that epoch; checked right before an answer is appended, so a round in flight when
        #: this node became leader (or the leader moved) writes nothing (Kafka's partitionMapLock)
        self._follows = follows
        self._endpoint = endpoint
        self._log_of = log_of
        self.config = config
        self._on_fenced = on_fenced
        #: told after a round moved a partition's local high watermark (wakes this node's long
        #: polls on it: a share group's coordinator acquires from its follower replica)
        self._on_hw = on_high_watermark
        self._parts: dict[Key, _PartitionFetchState] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._conn: BrokerChannel | None = None
        self._thread = threading.Thread(target=self._run, name=f"shoal-replica-fetcher-{node_id}-from-{source}", daemon=True)
        self.rounds = 0  # completed fetch rounds (status/tests)

    # -- partitions ------------------------------------------------------------------------------
    def add(self, key: Key, leader_epoch: int) -> None:
        """Follow ``key`` at ``leader_epoch``; a new (higher) epoch restarts with truncation, the
        same epoch keeps the fetch state (``AbstractFetcherThread.addPartitions``)."""
        with self._lock:
            cur = self._parts.get(key)
            if cur is None or leader_epoch > cur.leader_epoch:
                self._parts[key] = _PartitionFetchState(leader_epoch)
        self._wake.set()

    def remove(self, key: Key) -> None:
        """Stop fetching ``key``."""
        with self._lock:
            self._parts.pop(key, None)

    def partitions(self) -> dict[Key, int]:
        """The followed partitions and their leader epochs."""
        with self._lock:
            return {k: s.leader_epoch for k, s in self._parts.items()}

    def start(self) -> "ReplicaFetcherThread":
        """Start the thread; returns self."""
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the thread and close the connection."""
        self._stop.set()
        self._wake.set()
        conn = self._conn
        if conn is not None:
            conn.abort()  # ends a long poll in flight
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout_s)

    # -- loop ------------------------------------------------------------------------------------
    def _connection(self) -> BrokerChannel | None:
        ep = self._endpoint()
        if ep is None:
            self._drop_connection()
            return None
        if self._conn is not None and (self._conn.host, self._conn.port) != tuple(ep):
            self._drop_connection()  # the leader re-registered elsewhere
        if self._conn is None:
            self._conn = BrokerChannel(ep[0], ep[1], f"shoal-replica-{self.node_id}", self.config.socket_timeout_ms + self.config.wait_max_ms)
        return self._conn

    def _drop_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            with self._lock:
                ready = {k: s for k, s in self._parts.items() if s.delayed_until <= now}
            if not ready:
                self._wake.wait(0.05 if self._parts else 1.0)
                self._wake.clear()
                continue
            try:
                conn = self._connection()
                if conn is None:
                    self._stop.wait(self.config.backoff_ms / 1000)
                    continue
                truncating = {k: s for k, s in ready.items() if s.truncating}
                if truncating:
                    self._truncate(conn, truncating)
                fetching = {k: s for k, s in ready.items() if not s.truncating}
                if fetching:
                    self._fetch(conn, fetching)
                self.rounds += 1
            except (RpcError, OSError, ValueError) as exc:
                if self._stop.is_set():
                    return
                log.info("replica fetcher %d<-%d: %s; reconnecting", self.node_id, self.source, exc)
                self._drop_connection()
                self._stop.wait(self.config.backoff_ms / 1000)
            except Exception:  # pragma: no cover - keep replicating whatever happens
                log.exception("replica fetcher %d<-%d", self.node_id, self.source)
                self._drop_connection()
                self._stop.wait(self.config.backoff_ms / 1000)
        self._drop_connection()

    def _current(self, key: Key, st: _PartitionFetchState) -> bool:
        """Whether ``key`` is still followed with the same state object (answers to an older
        request are dropped, as ``AbstractFetcherThread`` does)."""
        with self._lock:
            return self._parts.get(key) is st

    def _backoff(self, key: Key, st: _PartitionFetchState) -> None:
        with self._lock:
            if self._parts.get(key) is st:
                st.delayed_until = time.monotonic() + self.config.backoff_ms / 1000

    def _fenced(self, key: Key, st: _PartitionFetchState) -> None:
        with self._lock:
            if self._parts.get(key) is not st:
                return
            del self._parts[key]
        self._on_fenced(key, st.leader_epoch)

    # -- truncation (KIP-101 / KIP-279) ----------------------------------------------------------
    def _truncate(self, conn: BrokerChannel, parts: dict[Key, _PartitionFetchState]) -> None:
        """One OffsetForLeaderEpoch round for ``parts`` (``AbstractFetcherThread.truncateToEpochEndOffsets``)."""
        asks: dict[Key, int] = {}
        for key, st in parts.items():
            lg = self._log_of(*key)
            latest = lg.leader_epoch_cache.latest_epoch()
            if latest is None:
                # no epoch information: truncate to the high watermark and fetch (§7.1/§7.2)
                lg.truncate_to(lg.high_watermark)
                self._done_truncating(key, st)
            else:
                asks[key] = latest
        if not asks:
            return
        by_topic: dict[str, list[Any]] = {}
        for (topic, p), epoch in asks.items():
            by_topic.setdefault(topic, []).append(
                OffsetForLeaderPartition(partition=i32(p), current_leader_epoch=i32(parts[(topic, p)].leader_epoch), leader_epoch=i32(epoch))
            )
        req = OffsetForLeaderEpochRequest(
            replica_id=i32(self.node_id), topics=tuple(OffsetForLeaderTopic(topic=t, partitions=tuple(ps)) for t, ps in by_topic.items())
        )
        resp = conn.ask(23, OFFSET_FOR_LEADER_EPOCH_VERSION, req)
        if not isinstance(resp, OffsetForLeaderEpochResponse):
            raise ValueError(f"unexpected OffsetForLeaderEpoch reply {type(resp).__name__}")
        for t in resp.topics:
            for r in t.partitions:
                key = (t.topic, int(r.partition))
                st = parts.get(key)
                if st is None or not self._current(key, st):
                    continue
                err = r.error_code.name.upper() if int(r.error_code.value) else "NONE"
                if err != "NONE":
                    self._handle_error(key, st, err)
                    continue
                if self._apply_epoch_end_offset(key, asks[key], int(r.leader_epoch), int(r.end_offset)):
                    self._done_truncating(key, st)

    def _apply_epoch_end_offset(self, key: Key, asked: int, epoch: int, end_offset: int) -> bool:
        """Truncate ``key`` by the leader's answer ``(epoch, end_offset)`` to the request for
        ``asked`` (``AbstractFetcherThread.getOffsetTruncationState``, reference §7.2). Returns
        True when truncation is complete, False when another round is needed (the leader's
        epoch is one this log has with a different end, so ask again with the new latest)."""
        lg = self._log_of(*key)
        leo = lg.log_end_offset
        if end_offset < 0:
            lg.truncate_to(lg.high_watermark)
            return True
        if epoch < 0:
            lg.truncate_to(min(end_offset, leo))
            return True
        cache = lg.leader_epoch_cache
        local_epoch, local_end = cache.end_offset_for(epoch, leo)
        if local_epoch < 0:
            lg.truncate_to(min(end_offset, leo))  # no local epoch <= the leader's answer
            return True
        if local_epoch != epoch:
            lg.truncate_to(min(local_end, leo))
            return False  # the next round asks with the (now lower) latest local epoch
        lg.truncate_to(min(end_offset, local_end, leo))
        return True

    def _done_truncating(self, key: Key, st: _PartitionFetchState) -> None:
        with self._lock:
            if self._parts.get(key) is st:
                st.truncating = False

    # -- fetch -----------------------------------------------------------------------------------
    def _fetch(self, conn: BrokerChannel, parts: dict[Key, _PartitionFetchState]) -> None:
        """One Fetch round (``ReplicaFetcherThread.processPartitionData``): append, then HW =
        ``min(leader HW, local LEO)`` and the leader's log start offset."""
        offsets: dict[Key, int] = {}
        specs = []
        for key, st in parts.items():
            lg = self._log_of(*key)
            offsets[key] = lg.log_end_offset
            specs.append((key[0], key[1], offsets[key], self.config.max_bytes, st.leader_epoch, lg.log_start_offset))
        req = fetch_request(self.node_id, specs, self.config.wait_max_ms, self.config.min_bytes, self.config.response_max_bytes)
        resp = conn.ask(1, FETCH_VERSION, req)
        if not isinstance(resp, FetchResponse):
            raise ValueError(f"unexpected Fetch reply {type(resp).__name__}")
        if int(resp.error_code.value):
            raise ValueError(f"Fetch from {self.source} failed: {resp.error_code.name}")
        for t in resp.responses:
            for r in t.partitions:
                key = (t.topic, int(r.partition_index))
                st = parts.get(key)
                if st is None or not self._current(key, st):
                    continue
                err = r.error_code.name.upper() if int(r.error_code.value) else "NONE"
                if err != "NONE":
                    self._handle_error(key, st, err, int(r.log_start_offset), conn)
                    continue
                lg = self._log_of(*key)
                if lg.log_end_offset != offsets[key]:
                    continue  # the log moved meanwhile (truncated): the next round refetches
                if not self._follows(key, st.leader_epoch):
                    continue  # the image moved on while the request was out: drop the answer
                data = bytes(r.records or b"")
                if data:
                    data = self._from(data, offsets[key])
                    if data:
                        try:
                            lg.append_as_follower(data, _now_ms())
                        except rb.CorruptRecordError as exc:
                            log.warning("corrupt batch from %d for %s-%d: %s", self.source, key[0], key[1], exc)
                            self._backoff(key, st)
                            continue
                        except OffsetOutOfRangeError as exc:
                            # the first batch starts below our log end: the leader's log starts
                            # inside that batch (DeleteRecords) and ours was restarted at that
                            # offset. Kafka (UnexpectedAppendOffsetException) restarts the log at
                            # the batch's base offset and appends again.
                            base = next(rb.iter_batches(data, verify_crc=False)).base_offset
                            log.warning("follower append %s-%d: %s; restarting the log at %d", key[0], key[1], exc, base)
                            if base >= lg.log_end_offset or lg.log_start_offset > base:
                                lg.truncate_fully_and_start_at(base, _now_ms())
                                try:
                                    lg.append_as_follower(data, _now_ms())
                                except (OffsetOutOfRangeError, rb.CorruptRecordError) as again:
                                    log.warning("follower append %s-%d after the restart: %s", key[0], key[1], again)
                                    self._backoff(key, st)
                                    continue
                            else:
                                self._backoff(key, st)
                                continue
                leader_lso = int(r.log_start_offset)
                hw_before = lg.high_watermark
                lg.update_high_watermark(min(int(r.high_watermark), lg.log_end_offset))
                if lg.high_watermark > hw_before:
                    self._on_hw(key)
                if leader_lso > lg.log_start_offset:
                    lg.maybe_increment_log_start_offset(leader_lso)

    def _earliest_local_offset(self, conn: BrokerChannel, key: Key, leader_epoch: int) -> int | None:
        """The leader's local log start offset of ``key`` (ListOffsets EARLIEST_LOCAL_TIMESTAMP
        -4, KIP-405), or ``None`` when it could not be asked or refused."""
        try:
            resp = conn.ask(2, LIST_OFFSETS_VERSION, list_offset_request(key[0], key[1], EARLIEST_LOCAL_TIMESTAMP, self.node_id, leader_epoch))
        except RpcError as exc:
            log.info("ListOffsets EARLIEST_LOCAL of %s-%d from %d: %s", key[0], key[1], self.source, exc)
            return None
        err, offset = list_offset_answer(resp, *key)
        return offset if err is None and offset >= 0 else None

    @staticmethod
    def _from(data: bytes, offset: int) -> bytes:
        """``data`` without the leading batches that end below ``offset`` (the leader returns the
        batch holding the fetch offset, which starts at it after a batch-aligned truncation)."""
        pos = 0
        for h in rb.iter_batches(data, verify_crc=False):
            if h.last_offset >= offset:
                break
            pos = h.position + h.size_in_bytes
        return data[pos:]

    def _handle_error(self, key: Key, st: _PartitionFetchState, err: str, leader_lso: int = -1, conn: BrokerChannel | None = None) -> None:
        """A partition error from the leader (reference §7.3): FENCED_LEADER_EPOCH removes the
        partition until the metadata changes (``ReplicaFetcherManager.reconcile`` adds it back);
        OFFSET_OUT_OF_RANGE truncates fully to the leader's log start when the local log is
        wholly below it, else truncates by epoch again; OFFSET_MOVED_TO_TIERED_STORAGE (KIP-405:
        the local log ends below the leader's local log start) asks the leader for that start
        (ListOffsets EARLIEST_LOCAL) and rebuilds the log's start from the remote tier
        (``on_moved_to_tiered``); anything else backs off ``replica.fetch.backoff.ms``."""
        if err == "OFFSET_MOVED_TO_TIERED_STORAGE" and conn is not None and self._on_tiered is not None:
            local_start = self._earliest_local_offset(conn, key, st.leader_epoch)
            if local_start is None or not self._on_tiered(key, local_start, leader_lso):
                self._backoff(key, st)
        elif err == "FENCED_LEADER_EPOCH":
            self._fenced(key, st)
        elif err == "OFFSET_OUT_OF_RANGE":
            lg = self._log_of(*key)
            if leader_lso > lg.log_end_offset:
                lg.truncate_fully_and_start_at(leader_lso, _now_ms())
            else:
                with self._lock:
                    if self._parts.get(key) is st:
                        st.truncating = True
                self._backoff(key, st)
        else:
            self._backoff(key, st)


class ReplicaFetcherManager:
    """Keeps one :class:`ReplicaFetcherThread` per leader this node follows (Kafka
    ``ReplicaFetcherManager`` with ``num.replica.fetchers`` = 1). ``partitions()`` lists the
    ``(topic, partition)`` pairs to consider at :meth:`start` (the view has no listing of its
    own); afterwards :meth:`reconcile` runs on every ``ClusterView.on_change``. A partition is
    followed when this node is a replica and another live node leads it. ``on_high_watermark(key)``
    is called when a fetch round moved a followed partition's high watermark;
    ``on_moved_to_tiered`` is the fetchers' hook for OFFSET_MOVED_TO_TIERED_STORAGE
    (:class:`ReplicaFetcherThread`)."""

    def __init__(
        self,
        view: ClusterView,
        log_of: Callable[[str, int], PartitionLog],
        config: FetcherConfig = FetcherConfig(),
        partitions: Callable[[], Iterable[Key]] = lambda: (),
        on_high_watermark: Callable[[Key], None] = lambda _k: None,
        on_moved_to_tiered: Callable[[Key, int, int], bool] | None = None,
    ) -> None:
        self.view = view
        self._on_tiered = on_moved_to_tiered
        self.node_id = view.node_id
        self._log_of = log_of
        self.config = config
        self._partitions = partitions
        self._on_hw = on_high_watermark
        self._fetchers: dict[int, ReplicaFetcherThread] = {}
        self._following: dict[Key, int] = {}  # key -> source broker
        self._lock = threading.Lock()
        self._closed = False
        view.on_change(self.reconcile)

    def start(self) -> "ReplicaFetcherManager":
        """Reconcile every partition of ``partitions()``; returns self."""
        self.reconcile(list(self._partitions()))
        return self

    def reconcile(self, changed: Iterable[Key]) -> None:
        """Start, move or stop fetching ``changed`` partitions per their current registration
        (``ReplicaManager.applyDelta``: becoming follower adds the partition to the leader's
        fetcher, at a new leader epoch with truncation; becoming leader or leaving the replica
        set removes it)."""
        with self._lock:
            if self._closed:
                return
            for key in changed:
                key = (key[0], int(key[1]))
                ps = self.view.partition_state(*key)
                follow = ps is not None and ps.leader not in (NO_LEADER, self.node_id) and self.node_id in ps.replicas
                src = self._following.get(key)
                if src is not None and (not follow or ps is None or ps.leader != src):
                    f = self._fetchers.get(src)
                    if f is not None:
                        f.remove(key)
                    del self._following[key]
                if follow and ps is not None:
                    f = self._fetchers.get(ps.leader)
                    if f is None:
                        leader = ps.leader
                        f = ReplicaFetcherThread(
                            self.node_id, leader, lambda leader=leader: self.view.broker_endpoint(leader), self._log_of, self.config, self._fenced,
                            lambda k, e, leader=leader: (ps := self.view.partition_state(*k)) is not None and ps.leader == leader and ps.leader_epoch == e,
                            self._on_hw, self._on_tiered,
                        ).start()
                        self._fetchers[leader] = f
                    f.add(key, ps.leader_epoch)
                    self._following[key] = ps.leader
            for src in [s for s, f in self._fetchers.items() if not f.partitions()]:
                if src not in self._following.values():
                    self._fetchers.pop(src).stop(timeout_s=0)

    def _fenced(self, key: Key, epoch: int) -> None:
        """A fetcher dropped ``key`` (FENCED_LEADER_EPOCH): forget it, so
        the next metadata change for it starts again (``AbstractFetcherThread`` marks it failed)."""
        with self._lock:
            self._following.pop(key, None)

    def following(self, key: Key) -> bool:
        """Whether ``key`` is being fetched by one of the threads."""
        with self._lock:
            return key in self._following

    def fetcher(self, source: int) -> ReplicaFetcherThread | None:
        """The thread fetching from ``source`` (tests, status)."""
        with self._lock:
            return self._fetchers.get(source)

    def close(self) -> None:
        """Stop every fetcher thread."""
        with self._lock:
            self._closed = True
            fetchers = list(self._fetchers.values())
            self._fetchers.clear()
            self._following.clear()
        for f in fetchers:
            f.stop()


class StrayReplicaCleaner:
    """Deletes the logs of partitions this node no longer hosts: a completed or cancelled
    partition reassignment (KIP-455) took it out of the replica list. Kafka's brokers do the same
    when the metadata image drops them from a partition (``ReplicaManager.applyDelta`` →
    ``stopPartitions(deletePartition = true)``) and at start-up for stray logs.

    ``drop(topic, partition) -> bool`` deletes a log (:meth:`wire.logs.LogRegistry.drop_partition`);
    ``following(key)`` says whether a replica fetcher still fetches it. A removal is acted on
    ``delay_s`` after the image showed it (a fetch round in flight when the fetcher let the
    partition go must not re-create the log), and only if the image still leaves this node out
    then and no fetcher follows the partition. A partition missing from the image (a deleted
    topic) is left to the topic deletion. :meth:`check` runs the same rule at once (start-up,
    tests). ``deleted`` lists what was deleted, for status and tests."""

    def __init__(
        self,
        view: ClusterView,
        drop: Callable[[str, int], bool],
        following: Callable[[Key], bool] = lambda _k: False,
        delay_s: float = 2.0,
    ) -> None:
        self.view = view
        self.node_id = view.node_id
        self._drop = drop
        self._following = following
        self.delay_s = delay_s
        self._lock = threading.Lock()
        self._pending: set[Key] = set()
        self._timers: list[threading.Timer] = []
        self._closed = False
        self.deleted: list[Key] = []

    def _stray(self, key: Key) -> bool:
        ps = self.view.partition_state(*key)
        return ps is not None and self.node_id not in ps.replicas and not self._following(key)

    def check(self, keys: Iterable[Key]) -> list[Key]:
        """Delete the logs of ``keys`` that this node does not host now; returns those deleted."""
        out = []
        for key in keys:
            key = (key[0], int(key[1]))
            if self._stray(key) and self._drop(*key):
                log.info("node %d deleted its replica of %s-%d: no longer in the replica list", self.node_id, key[0], key[1])
                out.append(key)
        with self._lock:
            self.deleted.extend(out)
        return out

    def on_change(self, changed: Iterable[Key]) -> None:
        """ClusterView callback: schedule the partitions that left this node for deletion."""
        keys = [(k[0], int(k[1])) for k in changed]
        keys = [k for k in keys if (ps := self.view.partition_state(*k)) is not None and self.node_id not in ps.replicas]
        with self._lock:
            keys = [k for k in keys if k not in self._pending]
            if not keys or self._closed:
                return
            self._pending.update(keys)
            timer = threading.Timer(self.delay_s, self._fire, (keys,))
            timer.daemon = True
            self._timers = [t for t in self._timers if t.is_alive()] + [timer]
        timer.start()

    def _fire(self, keys: list[Key]) -> None:
        with self._lock:
            self._pending.difference_update(keys)
            if self._closed:
                return
        try:
            self.check(keys)
        except Exception:  # pragma: no cover - a failed deletion is retried at the next change
            log.exception("deleting stray replicas %s", keys)

    def close(self) -> None:
        """Cancel the pending deletions."""
        with self._lock:
            self._closed = True
            timers, self._timers = self._timers, []
        for t in timers:
            t.cancel()
