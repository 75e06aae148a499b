"""The partition leader's side of replication (Kafka ``ReplicaManager`` + ``Partition``): per
partition led by this node, the followers' fetch state, the high watermark, ISR changes and the
produce purgatory for ``acks=-1``.

The rules are the pure ones of :mod:`actors.controller.replication` (``become_leader``,
``update_follower_fetch``, ``maybe_increment_hw``, ``maybe_shrink_isr``,
``check_enough_replicas_reach_offset``); this module only keeps one
:class:`~actors.controller.replication.ReplicationState` per led partition, follows the
:class:`wire.cluster_view.ClusterView` (leader and partition epochs), sends AlterPartition through
``ClusterView.alter_partition`` on a background thread (it may block up to the controller request
timeout), and wakes waiting produces when a high watermark moves or leadership changes.

Deviation from Kafka: a follower fetch is answered with the high watermark computed *after* its
fetch offset was recorded (Kafka samples it before, #55 of the reference), which saves the
follower one round trip before it learns of an advance its own fetch caused. A follower's HW is
``min(leader HW, its LEO)`` either way.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import replace
from typing import Callable

from actors.controller.replication import (
    DEFAULT_REPLICA_LAG_TIME_MAX_MS,
    PartitionLeadership,
    ReplicaState,
    ReplicationState,
    become_leader,
    check_enough_replicas_reach_offset,
    check_leader_epoch,
    effective_min_isr,
    leader_log_end_moved,
    maybe_increment_hw,
    maybe_shrink_isr,
    update_follower_fetch,
)
from store.log.log import PartitionLog
from wire.cluster_view import ClusterView, PartitionState, requested_partition_state

__all__ = ["ReplicaManager"]

log = logging.getLogger("shoal.wire.replica_manager")

Key = tuple[str, int]

#: AlterPartition errors after which the change stays pending until new metadata arrives
#: (reference kafka-replication.md §6.5, #43); other errors are forgotten so a later fetch or
#: shrink check proposes the change again.
#: AlterPartition answers that say nothing about whether the change was committed: resubmitted
_RESUBMIT = frozenset({"REQUEST_TIMED_OUT", "UNKNOWN_SERVER_ERROR", "NOT_CONTROLLER", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"})
_STAY_PENDING = frozenset({"UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_ID", "FENCED_LEADER_EPOCH", "INVALID_UPDATE_VERSION", "INVALID_REQUEST", "NEW_LEADER_ELECTED"})


def _leadership(ps: PartitionState) -> PartitionLeadership:
    return PartitionLeadership(tuple(ps.replicas), tuple(ps.isr), ps.leader, ps.leader_epoch, ps.partition_epoch)


class _Led:
    """One led partition: its replication state and whether an AlterPartition is in flight."""

    __slots__ = ("state", "inflight")

    def __init__(self, state: ReplicationState) -> None:
        self.state = state
        self.inflight = False


class ReplicaManager:
    """Leader-side replication for the partitions this node leads.

    ``view``: the :class:`ClusterView`; ``log_of(topic, partition)`` returns the open
    :class:`store.log.log.PartitionLog`; ``min_isr_of(topic)`` the topic's
    ``min.insync.replicas`` (topic config, else broker config); ``notify(topic, partition)`` wakes the Fetch long
    polls (called after every high-watermark advance); ``replica_lag_time_max_ms`` is Kafka's
    ``replica.lag.time.max.ms``; ``clock()`` gives wall time in ms. Thread-safe. Background
    threads (the ISR-shrink ticker every ``lag / 2`` and the AlterPartition sender) start only
    once a led partition has other replicas; :meth:`close` stops them."""

    def __init__(
        self,
        view: ClusterView,
        log_of: Callable[[str, int], PartitionLog],
        min_isr_of: Callable[[str], int] = lambda _t: 1,
        notify: Callable[[str, int], None] = lambda _t, _p: None,
        replica_lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS,
        clock: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.view = view
        self.node_id = view.node_id
        self._log_of = log_of
        self._min_isr_of = min_isr_of
        self._notify = notify
        self.lag_ms = replica_lag_time_max_ms
        self._clock = clock
        self._led: dict[Key, _Led] = {}
        self._cond = threading.Condition()  # guards _led; the produce purgatory waits on it
        self._alters: "queue.Queue[tuple[Key, int, int, tuple[int, ...]] | None]" = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        view.on_change(self._on_change)

    # -- metadata ------------------------------------------------------------------------------
    def _sync(self, key: Key, now_ms: int) -> tuple[str, _Led | None]:
        """Bring ``key``'s leader state in line with the view (lock held). Returns
        ``("NONE", led)`` when this node leads, else ``(error, None)`` with
        NOT_LEADER_OR_FOLLOWER or UNKNOWN_TOPIC_OR_PARTITION (Kafka ``Partition.makeLeader`` on a
        new leader epoch resets the followers; a new partition epoch alone keeps them)."""
        ps = self.view.partition_state(*key)
        cur = self._led.get(key)
        if ps is None or ps.leader != self.node_id:
            if cur is not None:
                del self._led[key]
                self._cond.notify_all()  # pending produces complete with NOT_LEADER_OR_FOLLOWER
            return ("UNKNOWN_TOPIC_OR_PARTITION" if ps is None else "NOT_LEADER_OR_FOLLOWER"), None
        ineligible = self._ineligible(ps)
        if cur is not None and cur.state.leadership.leader_epoch == ps.leader_epoch:
            if cur.state.ineligible != ineligible:  # a broker was fenced or unfenced
                st = cur.state
                cur.state = maybe_increment_hw(replace(st, ineligible=ineligible), now_ms)
                if cur.state.hw > st.hw:
                    self._publish_hw(key, st.hw, cur.state.hw)
                    self._cond.notify_all()
            # only a newer registration replaces ours: the image may lag an ISR change the
            # controller already answered (Kafka's makeLeader skips stale partition epochs)
            if cur.state.leadership.partition_epoch < ps.partition_epoch:
                st = cur.state
                lead = _leadership(ps)
                known = {r.broker_id for r in st.remotes}
                remotes = tuple(r for r in st.remotes if r.broker_id in lead.replicas) + tuple(
                    ReplicaState(r) for r in lead.replicas if r != self.node_id and r not in known
                )
                # the committed registration replaces any pending change (Kafka makeLeader at the
                # same leader epoch: CommittedPartitionState)
                cur.state = maybe_increment_hw(replace(st, leadership=lead, remotes=remotes, pending_isr=()), now_ms)
                cur.inflight = False
                self._publish_hw(key, st.hw, cur.state.hw)
                self._cond.notify_all()
            return "NONE", cur
        lg = self._log_of(*key)
        epoch_cache = lg.leader_epoch_cache
        latest = epoch_cache.latest_epoch()
        if latest is None or ps.leader_epoch > latest:
            epoch_cache.assign(ps.leader_epoch, lg.log_end_offset)  # Kafka makeLeader (#39)
        min_isr = self._min_isr_of(key[0]) if len(ps.replicas) > 1 else 1
        st = become_leader(
            self.node_id, _leadership(ps), now_ms, lg.log_end_offset, lg.high_watermark, lg.log_start_offset, min_isr, self.lag_ms
        )
        st = maybe_increment_hw(replace(st, ineligible=ineligible), now_ms)
        led = _Led(st)
        self._led[key] = led
        self._publish_hw(key, lg.high_watermark, st.hw)
        if len(ps.replicas) > 1:
            self._start_threads()
        self._cond.notify_all()
        return "NONE", led

    def _ineligible(self, ps: PartitionState) -> tuple[int, ...]:
        """The replicas of ``ps`` (other than this node) whose brokers are not live — fenced,
        shut down or never registered — in the view: they may not join the ISR nor hold the HW
        back (Kafka ``Partition.isReplicaIsrEligible``)."""
        if len(ps.replicas) <= 1:
            return ()
        live = set(self.view.live_brokers())
        return tuple(r for r in ps.replicas if r != self.node_id and r not in live)

    def _on_change(self, changed) -> None:
        """ClusterView callback: re-sync the changed partitions this node knows and wake the
        purgatory (a lost leadership completes waiting produces)."""
        now = self._clock()
        with self._cond:
            for key in changed:
                key = (key[0], int(key[1]))
                if key in self._led:
                    self._sync(key, now)
                else:
                    ps = self.view.partition_state(*key)
                    if ps is not None and ps.leader == self.node_id:
                        self._sync(key, now)  # makeLeader: epoch cache, follower states
            self._cond.notify_all()

    def _publish_hw(self, key: Key, old: int, new: int, notify: bool = True) -> None:
        if new > old:
            self._log_of(*key).update_high_watermark(new)
            if notify:
                self._notify(*key)

    def leader_check(self, topic: str, partition: int, current_leader_epoch: int = -1) -> tuple[str, int]:
        """``(error, leader_epoch)`` for a request on ``topic``-``partition``: the epoch check
        (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH, ``-1`` accepted; Kafka
        ``Partition.checkCurrentLeaderEpoch``) then NOT_LEADER_OR_FOLLOWER when this node does
        not lead (or UNKNOWN_TOPIC_OR_PARTITION); ``"NONE"`` otherwise. A ``current_leader_epoch``
        above the image's, or for a partition the image lacks, first makes the image catch up
        with the metadata log (:meth:`~wire.cluster_view.ClusterView.catch_up`): the requester
        learnt it from that log, so this node is behind, not the requester."""
        ps = requested_partition_state(self.view, topic, partition, current_leader_epoch)
        if ps is None:
            return "UNKNOWN_TOPIC_OR_PARTITION", -1
        err = check_leader_epoch(ps.leader_epoch, current_leader_epoch)
        if err != "NONE":
            return err, ps.leader_epoch
        if ps.leader != self.node_id:
            return "NOT_LEADER_OR_FOLLOWER", ps.leader_epoch
        key = (topic, partition)
        led = self._led.get(key)
        if led is None or led.state.leadership.leader_epoch != ps.leader_epoch:
            with self._cond:
                self._sync(key, self._clock())
        return "NONE", ps.leader_epoch

    # -- produce ---------------------------------------------------------------------------------
    def before_append(self, topic: str, partition: int, acks: int) -> tuple[str, int]:
        """Gate a produce (Kafka ``Partition.appendRecordsToLeader``): ``(error, leader_epoch)``;
        NOT_LEADER_OR_FOLLOWER on a non-leader; NOT_ENOUGH_REPLICAS for ``acks=-1`` when the
        committed ISR is smaller than ``min(min.insync.replicas, replication factor)``."""
        key = (topic, partition)
        with self._cond:
            err, led = self._sync(key, self._clock())
            if led is None:
                return err, -1
            st = led.state
            if acks == -1 and len(st.leadership.replicas) > 1:
                st = led.state = replace(st, min_insync_replicas=self._min_isr_of(topic))
                if len(st.isr) < effective_min_isr(st):
                    return "NOT_ENOUGH_REPLICAS", st.leadership.leader_epoch
            return "NONE", st.leadership.leader_epoch

    def after_append(self, topic: str, partition: int) -> int:
        """Record the leader's new LEO after an append and advance the HW (``maybeIncrementLeaderHW``
        after ``appendRecordsToLeader``). Returns the HW (exclusive). Does not call ``notify()``:
        the caller wakes the long polls once for the append (followers wait for new data, not
        for an HW move)."""
        key = (topic, partition)
        now = self._clock()
        with self._cond:
            led = self._led.get(key)
            if led is None:
                return self._log_of(*key).high_watermark
            st = led.state
            leo = self._log_of(*key).log_end_offset
            new = leader_log_end_moved(st, leo, now)
            led.state = new
            if new.hw > st.hw:
                self._publish_hw(key, st.hw, new.hw, notify=False)
                self._cond.notify_all()
            return new.hw

    def wait_for_hw(self, topic: str, partition: int, required_offset: int, deadline: float) -> str:
        """The produce purgatory of one ``acks=-1`` partition (Kafka ``DelayedProduce`` with
        ``Partition.checkEnoughReplicasReachOffset``): blocks on a condition woken by HW
        advances and leadership changes until the HW is ``>= required_offset`` (``last offset +
        1``) → NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND (the maximal ISR fell below min ISR),
        NOT_LEADER_OR_FOLLOWER (leadership lost), REQUEST_TIMED_OUT at ``deadline``
        (``time.monotonic()`` seconds)."""
        key = (topic, partition)
        result = ["REQUEST_TIMED_OUT"]

        def done() -> bool:
            led = self._led.get(key)
            if led is None:
                result[0] = "NOT_LEADER_OR_FOLLOWER"
                return True
            ok, err = check_enough_replicas_reach_offset(led.state, required_offset)
            if ok:
                result[0] = err
            return ok

        with self._cond:
            self._cond.wait_for(done, timeout=max(0.0, deadline - time.monotonic()))
        return result[0]

    # -- follower fetches ------------------------------------------------------------------------
    def follower_fetch_check(self, topic: str, partition: int, replica_id: int, current_leader_epoch: int) -> str:
        """The checks of a follower fetch before reading (Kafka ``Partition.fetchRecords`` /
        ``ReplicaManager.readFromLog``, reference §6.2): epoch (FENCED/UNKNOWN_LEADER_EPOCH),
        leadership (NOT_LEADER_OR_FOLLOWER), and that ``replica_id`` is an assigned replica
        (else UNKNOWN_LEADER_EPOCH when an epoch was sent, NOT_LEADER_OR_FOLLOWER otherwise; #37)."""
        err, _ = self.leader_check(topic, partition, current_leader_epoch)
        if err != "NONE":
            return err
        with self._cond:
            err, led = self._sync((topic, partition), self._clock())
            if led is None:
                return err
            if replica_id == self.node_id or led.state.remote(replica_id) is None:
                return "UNKNOWN_LEADER_EPOCH" if current_leader_epoch >= 0 else "NOT_LEADER_OR_FOLLOWER"
        return "NONE"

    def update_follower(self, topic: str, partition: int, replica_id: int, fetch_offset: int, current_leader_epoch: int = -1) -> tuple[str, int]:
        """Record a follower's fetch at ``fetch_offset`` (its LEO) with
        :func:`~actors.controller.replication.update_follower_fetch`, advance the HW and, when the
        follower has caught up outside the ISR, send AlterPartition (ISR expansion) in the
        background. Returns ``(error, high watermark)``."""
        key = (topic, partition)
        now = self._clock()
        with self._cond:
            err, led = self._sync(key, now)
            if led is None:
                return err, -1
            old = led.state
            st = replace(old, leo=self._log_of(*key).log_end_offset)
            st, err, proposal = update_follower_fetch(st, replica_id, fetch_offset, now, current_leader_epoch)
            if err != "NONE":
                return err, old.hw
            led.state = st
            if proposal is not None:
                if led.inflight:
                    led.state = replace(st, pending_isr=tuple(b for b in st.pending_isr if b in old.pending_isr))
                else:
                    self._submit(key, led, proposal)
            if led.state.hw > old.hw:
                self._publish_hw(key, old.hw, led.state.hw)
                self._cond.notify_all()
            return "NONE", led.state.hw

    # -- ISR changes -------------------------------------------------------------------------------
    def check_isr(self, now_ms: int | None = None) -> int:
        """The ``isr-expiration`` task (Kafka ``ReplicaManager.maybeShrinkIsr``): for every led
        partition, propose the ISR without the followers that are not caught up within
        ``replica.lag.time.max.ms`` (:func:`~actors.controller.replication.maybe_shrink_isr`).
        Returns the number of AlterPartition requests queued."""
        now = self._clock() if now_ms is None else now_ms
        n = 0
        with self._cond:
            for key, led in list(self._led.items()):
                if led.inflight or len(led.state.leadership.replicas) <= 1:
                    continue
                led.state = replace(led.state, leo=self._log_of(*key).log_end_offset)
                _, proposal = maybe_shrink_isr(led.state, now)
                if proposal is not None:
                    self._submit(key, led, proposal)
                    n += 1
        return n

    def _submit(self, key: Key, led: _Led, new_isr: tuple[int, ...]) -> None:
        led.inflight = True
        lead = led.state.leadership
        self._start_threads()
        self._alters.put((key, lead.leader_epoch, lead.partition_epoch, tuple(new_isr)))

    def _alter_loop(self) -> None:
        while not self._stop.is_set():
            item = self._alters.get()
            if item is None:
                return
            key, leader_epoch, partition_epoch, new_isr = item
            try:
                err, ps = self.view.alter_partition(key[0], key[1], leader_epoch, partition_epoch, new_isr)
            except Exception as exc:  # pragma: no cover - a view failure must not kill the sender
                log.warning("AlterPartition %s-%d failed: %s", key[0], key[1], exc)
                err, ps = "UNKNOWN_SERVER_ERROR", None
            if err in _RESUBMIT and not self._stop.wait(0.2):
                # the change may have been committed or not: keep it pending and send it again
                # (reference §6.5; reverting could let the HW pass a member of the committed ISR)
                self._alters.put(item)
                continue
            self._alter_done(key, leader_epoch, partition_epoch, err, ps)

    def _alter_done(self, key: Key, leader_epoch: int, partition_epoch: int, err: str | None, ps: PartitionState | None) -> None:
        """Apply an AlterPartition answer (Kafka ``Partition.handleAlterPartitionUpdate``,
        reference §6.5): ignored if the local leader epoch or partition epoch changed meanwhile;
        success commits the answered registration and re-checks the HW; INELIGIBLE_REPLICA and
        transient errors revert the pending addition (a later fetch retries); the errors of
        ``_STAY_PENDING`` keep it pending until new metadata."""
        now = self._clock()
        with self._cond:
            led = self._led.get(key)
            if led is None:
                return
            lead = led.state.leadership
            if lead.leader_epoch != leader_epoch or lead.partition_epoch != partition_epoch:
                return
            if err is None or err == "NONE":
                if ps is not None and ps.leader_epoch == leader_epoch and ps.partition_epoch > partition_epoch:
                    old = led.state
                    led.state = maybe_increment_hw(replace(old, leadership=_leadership(ps), pending_isr=()), now)
                    led.inflight = False
                    self._publish_hw(key, old.hw, led.state.hw)
                    self._cond.notify_all()
                return
            log.info("AlterPartition %s-%d: %s", key[0], key[1], err)
            if err in _STAY_PENDING:
                return  # cleared by the next metadata change (see _sync)
            led.state = replace(led.state, pending_isr=())
            led.inflight = False

    # -- threads -----------------------------------------------------------------------------------
    def _start_threads(self) -> None:
        if self._threads or self._stop.is_set():
            return
        for name, target in (("alter-partition", self._alter_loop), ("isr-expiration", self._isr_loop)):
            t = threading.Thread(target=target, name=f"shoal-{name}-{self.node_id}", daemon=True)
            t.start()
            self._threads.append(t)

    def _isr_loop(self) -> None:
        period = max(0.01, self.lag_ms / 2000)
        while not self._stop.wait(period):
            try:
                self.check_isr()
            except Exception:  # pragma: no cover
                log.exception("isr-expiration")

    def forget(self, topic: str) -> None:
        """Drop the leader state of every partition of ``topic`` (deleted: a topic re-created
        with the same name starts from its new, empty log) and wake its waiting produces."""
        with self._cond:
            for key in [k for k in self._led if k[0] == topic]:
                del self._led[key]
            self._cond.notify_all()

    def state(self, topic: str, partition: int) -> ReplicationState | None:
        """The current leader state of ``topic``-``partition`` (``None`` when not led here)."""
        with self._cond:
            led = self._led.get((topic, partition))
            return led.state if led is not None else None

    def close(self) -> None:
        """Stop the background threads and wake every waiting produce."""
        self._stop.set()
        self._alters.put(None)
        with self._cond:
            self._led.clear()
            self._cond.notify_all()
        for t in self._threads:
            t.join(timeout=5)
