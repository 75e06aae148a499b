"""A share group's coordinator reading partitions it keeps no replica of, from their leader, with
Kafka's Fetch (API 1).

On a cluster a share group's state is one event stream folded by one ``ShareGroupActor`` on the
group's coordinator node (:mod:`wire.forwarding`). That actor acquires offsets; the coordinator's
listener reads the batch boundaries it acquires from, and the bytes it answers with. Where the
coordinator keeps a replica of the partition (its leader or a follower) it reads that replica
(:meth:`wire.logs.LogRegistry.batch_bounds`). Where it keeps none (the replication factor is
below the number of nodes: Kafka's ``default.replication.factor`` is 1), it reads from the
partition's leader as a consumer does: a Fetch (v12) with ``replica_id`` -1, ``isolation_level``
READ_UNCOMMITTED (records below the leader's high watermark, as Kafka's ``SharePartition``
reads), ``max_wait`` 0 (:meth:`LeaderReads.read`).

The purgatory (``DelayedShareFetch``) of a fetch that acquired nothing waits on ``("partition",
topic, partition)`` in the listener's :class:`wire.waits.WaitSet`, which this node's appends and
high-watermark moves bump. A leader elsewhere bumps nothing here, so :meth:`LeaderReads.watch`
hands the partition to a watcher: one thread per leader node that keeps one long-polling Fetch
(``min_bytes`` 1, from the high watermark last seen, ``max_wait`` ``replica.fetch.wait.max.ms``)
in flight for every watched partition of that leader. The leader answers it when its high
watermark moves (Kafka's fetch purgatory), and the watcher bumps the partition's key: the
waiting share fetch wakes on the append, not on a timer. A partition not watched for
``_WATCH_IDLE_S`` leaves the watcher; a newly watched one restarts the poll in flight at once. A
watcher left with nothing to watch for ``_WATCH_IDLE_S`` ends its thread (a leader that left the
cluster keeps none).

Deviation from Kafka: there the partition's leader holds the share-partition itself and reads its
own log; here the coordinator reads over the network, one round trip more per fetch.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from kio.schema.fetch.v12.response import FetchResponse

from store import record_batch as rb
from store.log.log import record_limit_reached
from wire.cluster import FETCH_VERSION, LIST_OFFSETS_VERSION, BrokerChannel, ChannelPool, RpcError, fetch_request, list_offset_answer, list_offset_request
from wire.waits import WaitSet

__all__ = ["LeaderRead", "LeaderReads", "trim_batches"]

log = logging.getLogger("shoal.wire.leader_reads")

#: a watched partition no share fetch asked about for this long leaves its watcher (s)
_WATCH_IDLE_S = 60.0


@dataclass(frozen=True)
class LeaderRead:
    """One partition read from its leader: ``error`` (a Kafka error name, ``None`` on success),
    ``high_watermark`` and ``log_start_offset`` (offsets; -1 when unknown), ``records`` (whole
    record batches from the requested offset, below the high watermark)."""

    error: str | None
    high_watermark: int = -1
    log_start_offset: int = -1
    records: bytes = b""


def trim_batches(data: bytes, offset: int, max_records: int | None, min_batches: int = 1) -> bytes:
    """``data`` (whole record batches) without the batches that end below ``offset`` and — with
    ``max_records`` — without those after the batch that holds the ``max_records``-th offset from
    ``offset``, once ``min_batches`` are kept: what a local read with the same arguments returns
    (:meth:`store.log.log.PartitionLog.read`)."""
    end = start = None
    count = 0
    for h in rb.iter_batches(data, verify_crc=False):
        if h.last_offset < offset:
            continue
        if start is None:
            start = h.position
        end = h.position + h.size_in_bytes
        count += 1
        if record_limit_reached(h.last_offset, offset, count, max_records, min_batches):
            break
    return b"" if start is None else data[start:end]


def _answers(resp: object) -> dict[tuple[str, int], LeaderRead]:
    """The per-partition answers of a Fetch response; raises :class:`RpcError` for a reply that is
    not a FetchResponse or carries a top-level error."""
    if not isinstance(resp, FetchResponse):
        raise RpcError(f"unexpected Fetch reply {type(resp).__name__}")
    if int(resp.error_code.value):
        raise RpcError(f"Fetch failed: {resp.error_code.name}")
    out = {}
    for t in resp.responses:
        for r in t.partitions:
            err = r.error_code.name.upper() if int(r.error_code.value) else None
            out[(str(t.topic), int(r.partition_index))] = LeaderRead(err, int(r.high_watermark), int(r.log_start_offset), bytes(r.records or b""))
    return out


class _Watcher:
    """One leader node's watched partitions and the thread that long-polls them (see the module
    doc). ``seen``: (topic, partition) → [high watermark last seen, last asked (monotonic s)]."""

    def __init__(self, owner: "LeaderReads", node: int) -> None:
        self.owner = owner
        self.node = node
        self.seen: dict[tuple[str, int], list[float]] = {}
        self.cond = threading.Condition()
        self.channel: BrokerChannel | None = None
        self.in_flight: frozenset[tuple[str, int]] = frozenset()
        self.restart = False
        self.stopped = False
        self.thread = threading.Thread(target=self._run, name=f"shoal-share-leader-watch-{node}", daemon=True)
        self.thread.start()

    def watch(self, key: tuple[str, int], high_watermark: int) -> bool | None:
        """Watch ``key`` from ``high_watermark``; ``True`` when the leader is already known to be
        past it (the caller's wait is over at once); ``None`` when this watcher has ended (idle,
        or stopped): the caller watches with a new one."""
        with self.cond:
            if self.stopped:
                return None
            entry = self.seen.get(key)
            if entry is None:
                self.seen[key] = [high_watermark, time.monotonic()]
                ch = self.channel if self.in_flight else None
                if ch is not None:
                    self.restart = True
                    # the poll in flight does not name the new partition: restart it now (under
                    # the lock: the channel goes back to the pool only after the poll ends)
                    ch.abort()
                self.cond.notify_all()
            else:
                entry[1] = time.monotonic()
                if entry[0] > high_watermark:
                    return True
                entry[0] = high_watermark  # the next poll asks from here (an older offset would answer at once)
        return False

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            if self.channel is not None:
                self.channel.abort()
            self.cond.notify_all()

    def _run(self) -> None:
        backoff_s = 0.05
        while True:
            with self.cond:
                now = time.monotonic()
                for key in [k for k, (_hw, at) in self.seen.items() if now - at > _WATCH_IDLE_S]:
                    del self.seen[key]
                while not self.seen and not self.stopped:
                    if not self.cond.wait(_WATCH_IDLE_S) and not self.seen:
                        self.stopped = True  # nothing asked of this leader for that long (it may be gone): end
                if self.stopped:
                    self.owner._ended(self)  # noqa: SLF001 - the owner's registry of watchers
                    return
                parts = [(t, p, int(hw), 1, -1, -1) for (t, p), (hw, _at) in self.seen.items()]
                self.in_flight = frozenset((spec[0], spec[1]) for spec in parts)
            ep = self.owner.endpoint_of(self.node)
            ch = self.owner.pool.take(ep) if ep is not None else None
            if ch is None:
                self._wake(list(self.in_flight))  # the leader went away: let the fetches look again
                time.sleep(1.0)
                continue
            with self.cond:
                self.channel = ch
            ok = False
            try:
                req = fetch_request(-1, parts, self.owner.wait_max_ms, 1, len(parts))
                answers = _answers(ch.ask(1, FETCH_VERSION, req, timeout_ms=self.owner.timeout_ms + self.owner.wait_max_ms))
                ok = True
                backoff_s = 0.05
            except RpcError as exc:
                answers = {}
                if not self.stopped:
                    log.debug("watching partitions on node %d: %s", self.node, exc)
            finally:
                with self.cond:
                    self.channel = None
                    self.in_flight = frozenset()
                    restarted = self.restart  # an abort for a new partition, not a failure
                self.owner.pool.give_back(ch, ok and not restarted)
            moved = []
            with self.cond:
                restarted, self.restart = self.restart, False
                for key, a in answers.items():
                    entry = self.seen.get(key)
                    if entry is None:
                        continue
                    if a.error is not None:
                        moved.append(key)  # a new leader, a deleted partition: the fetch reads again and sees it
                        entry[1] = 0.0  # and stops being watched here until a fetch asks again
                    elif a.high_watermark > entry[0]:
                        entry[0] = a.high_watermark
                        moved.append(key)
            self._wake(moved)
            if not ok and not self.stopped and not restarted:
                time.sleep(backoff_s)  # a restart for a new partition, or a failed leader
                backoff_s = min(1.0, backoff_s * 2)

    def _wake(self, keys: list[tuple[str, int]]) -> None:
        for t, p in keys:
            self.owner.waits.bump(("partition", t, p))


class LeaderReads:
    """Reads and watches of partitions this node keeps no replica of (module doc).

    ``leader_of(topic, partition)``: the leader's node id (-1 when none); ``endpoint_of(node)``:
    its inter-broker ``(host, port)`` or ``None``; ``waits``: the listener's
    :class:`wire.waits.WaitSet`; ``node_id``: this node (the channels' client id);
    ``wait_max_ms``: the watchers' long-poll bound (``replica.fetch.wait.max.ms``);
    ``timeout_ms``: a request's bound beyond it (``replica.socket.timeout.ms``). Thread-safe."""

    def __init__(self, leader_of: Callable[[str, int], int], endpoint_of: Callable[[int], tuple[str, int] | None], waits: WaitSet,
                 node_id: int, wait_max_ms: int = 500, timeout_ms: int = 30_000) -> None:
        self.leader_of = leader_of
        self.endpoint_of = endpoint_of
        self.waits = waits
        self.wait_max_ms = wait_max_ms
        self.timeout_ms = timeout_ms
        self.pool = ChannelPool(f"shoal-share-read-{node_id}", timeout_ms)
        self._watchers: dict[int, _Watcher] = {}
        self._lock = threading.Lock()
        self._closed = False

    def _ask(self, topic: str, partition: int, api_key: int, version: int, body: Any) -> Any:
        """One request about ``topic``-``partition`` to its leader over a pooled channel; the
        response body, or ``None`` when there is no leader or it cannot be reached."""
        leader = self.leader_of(topic, partition)
        ep = self.endpoint_of(leader) if leader >= 0 else None
        if ep is None:
            return None
        try:
            return self.pool.ask(ep, api_key, version, body)
        except RpcError as exc:
            log.info("asking node %d about %s-%d: %s", leader, topic, partition, exc)
            return None

    def read(self, topic: str, partition: int, offset: int, max_bytes: int) -> LeaderRead:
        """Fetch ``topic``-``partition`` from its leader at ``offset`` (an offset below the
        leader's log start reads from its log start), at most ``max_bytes`` (the first batch
        whole, KIP-74). Returns a :class:`LeaderRead`; its ``error`` is NOT_LEADER_OR_FOLLOWER
        when the partition has no leader or the leader cannot be reached, else the leader's
        answer (OFFSET_OUT_OF_RANGE past its log end, NOT_LEADER_OR_FOLLOWER after a move …)."""
        a = LeaderRead("NOT_LEADER_OR_FOLLOWER")
        for _attempt in range(2):
            resp = self._ask(topic, partition, 1, FETCH_VERSION, fetch_request(-1, [(topic, partition, max(0, offset), max_bytes, -1, -1)], 0, 0, max_bytes))
            if resp is None:
                return LeaderRead("NOT_LEADER_OR_FOLLOWER")
            try:
                a = _answers(resp).get((topic, partition), LeaderRead("UNKNOWN_SERVER_ERROR"))
            except RpcError as exc:
                log.info("reading %s-%d from its leader: %s", topic, partition, exc)
                return LeaderRead("NOT_LEADER_OR_FOLLOWER")
            if a.error == "OFFSET_OUT_OF_RANGE" and 0 <= offset < a.log_start_offset:
                offset = a.log_start_offset  # below the log start (retention, DeleteRecords): read from it
                continue
            break
        return a

    def list_offset(self, topic: str, partition: int, timestamp: int) -> tuple[str | None, int]:
        """ListOffsets of ``timestamp`` (ms, or Kafka's -1 latest / -2 earliest) on
        ``topic``-``partition``'s leader: ``(error, offset)``, offset -1 when no record is that
        recent; NOT_LEADER_OR_FOLLOWER when the leader cannot be asked."""
        resp = self._ask(topic, partition, 2, LIST_OFFSETS_VERSION, list_offset_request(topic, partition, timestamp))
        return ("NOT_LEADER_OR_FOLLOWER", -1) if resp is None else list_offset_answer(resp, topic, partition)

    def watch(self, topic: str, partition: int, high_watermark: int) -> None:
        """Have the waits key ``("partition", topic, partition)`` bumped when the leader's high
        watermark passes ``high_watermark`` (at once when it is already known to be past it)."""
        leader = self.leader_of(topic, partition)
        if leader < 0:
            self.waits.bump(("partition", topic, partition))
            return
        while True:
            with self._lock:
                if self._closed:
                    return
                w = self._watchers.get(leader)
                if w is None:
                    w = self._watchers[leader] = _Watcher(self, leader)
            past = w.watch((topic, partition), high_watermark)
            if past is not None:
                break
            self._ended(w)  # it ended between the lookup and the watch: a new one takes the partition
        if past:
            self.waits.bump(("partition", topic, partition))

    def _ended(self, w: _Watcher) -> None:
        """``w`` has ended: forget it (a later watch of its leader starts a new one)."""
        with self._lock:
            if self._watchers.get(w.node) is w:
                del self._watchers[w.node]

    def close(self) -> None:
        """Stop the watchers and close the pooled channels."""
        with self._lock:
            self._closed = True
            watchers, self._watchers = list(self._watchers.values()), {}
        for w in watchers:
            w.stop()
        self.pool.close()
