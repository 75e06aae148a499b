"""The leader's side (wire/replica_manager.py through wire/logs.LogRegistry) with a fake
ClusterView: follower fetches move the HW, the ISR expands and shrinks through AlterPartition,
acks=-1 waits in the purgatory, leader and epoch checks (reference kafka-replication.md §6)."""

from __future__ import annotations

import threading

import pytest

from store import record_batch as rb
from tests.cluster.fakes import FakeClusterView
from wire.cluster_view import PartitionState
from wire.logs import LogRegistry

LAG = 30_000


def _batch(n: int = 1) -> bytes:
    return rb.build_batch([(None, b"x%d" % i) for i in range(n)])


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


@pytest.fixture
def node(tmp_path):
    """Node 1 leading t-0 with replicas (1, 2), ISR as the test sets; min.insync.replicas=2."""
    made = []

    def make(isr=(1, 2), replicas=(1, 2), leader=1, epoch=0, min_isr="2", accept=True):
        view = FakeClusterView(1, accept_alters=accept)
        view.set("t", 0, PartitionState(tuple(replicas), tuple(isr), leader, epoch, 0))
        clock = Clock()
        reg = LogRegistry(str(tmp_path / f"n{len(made)}"), lambda _t: {"min.insync.replicas": min_isr}, cluster=view, replica_lag_time_max_ms=LAG, clock=clock)
        made.append(reg)
        return reg, view, clock

    yield make
    for reg in made:
        reg.close()


def _wait_state(reg: LogRegistry, pred, timeout_s: float = 10.0) -> bool:
    rm = reg.replicas
    with rm._cond:  # noqa: SLF001 - the condition the manager notifies on every state change
        return rm._cond.wait_for(lambda: (st := rm._led.get(("t", 0))) is not None and pred(st.state), timeout=timeout_s)  # noqa: SLF001


def test_single_node_default_view_acks_all_answers_at_once(tmp_path):
    reg = LogRegistry(str(tmp_path / "logs"))
    try:
        r = reg.append("t", 0, _batch(3), acks=-1)
        assert r.error is None and r.base_offset == 0 and r.required_offset == -1
        assert reg.open("t", 0).high_watermark == 3
        assert reg.read("t", 0, 0, 1 << 20, current_leader_epoch=0).error is None
    finally:
        reg.close()


def test_follower_fetch_advances_the_high_watermark_and_completes_acks_all(node):
    reg, _view, _clock = node()
    r = reg.append("t", 0, _batch(2), acks=-1)
    assert r.error is None and r.required_offset == 2
    assert reg.read("t", 0, 0, 1 << 20).records == b""  # consumers see nothing above the HW (0)
    done: list = []
    waiter = threading.Thread(target=lambda: done.append(reg.await_replication([("t", 0, 2)], 60_000)))
    waiter.start()
    f = reg.read("t", 0, 0, 1 << 20, replica_id=2, current_leader_epoch=0)
    assert f.error is None and f.high_watermark == 0 and len(list(rb.iter_batches(f.records))) == 1  # up to the LEO
    f = reg.read("t", 0, 2, 1 << 20, replica_id=2, current_leader_epoch=0)  # the follower's LEO is 2
    assert f.error is None and f.high_watermark == 2 and f.records == b""
    waiter.join(10)
    assert done == [[None]]
    assert reg.open("t", 0).high_watermark == 2
    assert reg.read("t", 0, 0, 1 << 20).records != b""


def test_a_fenced_replica_does_not_hold_acks_all_when_the_controller_shrinks_the_isr(node):
    """A follower that was caught up when its broker died (SIGKILL) is fenced and leaves the ISR:
    the waiting acks=all produce completes on the remaining ISR at once, not after
    replica.lag.time.max.ms (Kafka ``Partition.isReplicaIsrEligible`` in
    ``maybeIncrementLeaderHW``; found by tests/e2e/test_cluster_e2e.py)."""
    reg, view, _clock = node(isr=(1, 2, 3), replicas=(1, 2, 3))
    reg.append("t", 0, _batch(2), acks=-1)
    for r in (2, 3):
        reg.read("t", 0, 2, 1 << 20, replica_id=r, current_leader_epoch=0)  # both caught up
    r = reg.append("t", 0, _batch(1), acks=-1)
    assert r.required_offset == 3
    reg.read("t", 0, 3, 1 << 20, replica_id=2, current_leader_epoch=0)  # node 2 has it, node 3 died
    assert reg.open("t", 0).high_watermark == 2
    view.fenced.add(3)  # the controller fences node 3 and removes it from the ISR in one record
    view.set("t", 0, PartitionState((1, 2, 3), (1, 2), 1, 0, 1))
    assert reg.await_replication([("t", 0, 3)], 60_000) == [None]
    assert reg.open("t", 0).high_watermark == 3


def test_acks_all_times_out_without_the_follower(node):
    reg, _view, _clock = node()
    r = reg.append("t", 0, _batch(), acks=-1)
    assert reg.await_replication([("t", 0, r.required_offset)], 20) == ["REQUEST_TIMED_OUT"]
    assert reg.open("t", 0).log_end_offset == 1  # the records stay (and may commit later)


def test_acks_one_answers_after_the_leader_append(node):
    reg, _view, _clock = node()
    r = reg.append("t", 0, _batch(), acks=1)
    assert r.error is None and r.required_offset == -1


def test_not_enough_replicas_before_the_append(node):
    reg, _view, _clock = node(isr=(1,))
    r = reg.append("t", 0, _batch(), acks=-1)
    assert r.error == "NOT_ENOUGH_REPLICAS"
    assert reg.open("t", 0).log_end_offset == 0
    assert reg.append("t", 0, _batch(), acks=1).error is None  # acks=1 is never gated
    # ...but the HW does not advance while the ISR is under min ISR (§6.6)
    assert reg.open("t", 0).high_watermark == 0


def test_min_isr_is_capped_by_the_replication_factor(node):
    reg, _view, _clock = node(isr=(1,), replicas=(1,), min_isr="3")
    r = reg.append("t", 0, _batch(), acks=-1)
    assert r.error is None and r.required_offset == -1


def test_losing_leadership_completes_waiting_produces(node):
    reg, view, _clock = node()
    r = reg.append("t", 0, _batch(), acks=-1)
    done: list = []
    waiter = threading.Thread(target=lambda: done.append(reg.await_replication([("t", 0, r.required_offset)], 60_000)))
    waiter.start()
    view.set("t", 0, PartitionState((1, 2), (2,), 2, 1, 1))
    waiter.join(10)
    assert done == [["NOT_LEADER_OR_FOLLOWER"]]
    assert reg.append("t", 0, _batch(), acks=1).error == "NOT_LEADER_OR_FOLLOWER"
    assert reg.read("t", 0, 0, 100).error == "NOT_LEADER_OR_FOLLOWER"
    assert reg.list_offset("t", 0, -1)[0] == "NOT_LEADER_OR_FOLLOWER"


def test_leader_epoch_checks(node):
    reg, _view, _clock = node(epoch=5)
    assert reg.read("t", 0, 0, 100, current_leader_epoch=4).error == "FENCED_LEADER_EPOCH"
    assert reg.read("t", 0, 0, 100, current_leader_epoch=6).error == "UNKNOWN_LEADER_EPOCH"
    assert reg.read("t", 0, 0, 100, current_leader_epoch=5).error is None
    assert reg.read("t", 0, 0, 100, replica_id=2, current_leader_epoch=4).error == "FENCED_LEADER_EPOCH"
    assert reg.offset_for_leader_epoch("t", 0, 6, 5)[0] == "UNKNOWN_LEADER_EPOCH"


def test_a_follower_ahead_of_the_leaders_image_makes_it_catch_up(node):
    """A new topic's follower can fold the metadata log before its leader does: its first
    OffsetForLeaderEpoch and Fetch must make the leader fold the log, not be refused with
    UNKNOWN_TOPIC_OR_PARTITION (which costs the follower replica.fetch.backoff.ms, 1 s, and every
    acks=all produce that long)."""
    reg, view, _clock = node()
    view.stage("new", 0, PartitionState((1, 2), (1, 2), 1, 0, 0))
    assert reg.offset_for_leader_epoch("new", 0, 0, 0) == (None, 0, 0)
    assert view.catch_ups == 1
    view.stage("new", 1, PartitionState((1, 2), (1, 2), 1, 0, 0))
    f = reg.read("new", 1, 0, 1 << 20, replica_id=2, current_leader_epoch=0)
    assert f.error is None and view.catch_ups == 2


def test_a_newer_leader_epoch_makes_the_leader_catch_up(node):
    """The leader was re-elected (epoch 1) and the follower saw it first: the leader folds the
    log and serves the follower at the new epoch instead of UNKNOWN_LEADER_EPOCH."""
    reg, view, _clock = node()
    view.stage("t", 0, PartitionState((1, 2), (1, 2), 1, 1, 1))
    f = reg.read("t", 0, 0, 1 << 20, replica_id=2, current_leader_epoch=1)
    assert f.error is None and view.catch_ups == 1
    # an epoch the log has not reached either stays UNKNOWN_LEADER_EPOCH (after one catch-up)
    assert reg.read("t", 0, 0, 1 << 20, replica_id=2, current_leader_epoch=2).error == "UNKNOWN_LEADER_EPOCH"
    assert view.catch_ups == 2
    # requests at the image's epoch, or without one, never fold the log
    assert reg.read("t", 0, 0, 1 << 20, replica_id=2, current_leader_epoch=1).error is None
    assert reg.read("t", 0, 0, 1 << 20).error is None
    assert view.catch_ups == 2


def test_fetch_from_a_non_replica(node):
    """#37: an unassigned replica gets UNKNOWN_LEADER_EPOCH with an epoch, else NOT_LEADER_OR_FOLLOWER."""
    reg, _view, _clock = node()
    assert reg.read("t", 0, 0, 100, replica_id=3, current_leader_epoch=0).error == "UNKNOWN_LEADER_EPOCH"
    assert reg.read("t", 0, 0, 100, replica_id=3).error == "NOT_LEADER_OR_FOLLOWER"


def test_isr_expands_when_the_follower_catches_up(node):
    reg, view, _clock = node(isr=(1,), min_isr="1")
    reg.append("t", 0, _batch(3), acks=1)
    assert reg.open("t", 0).high_watermark == 3  # ISR {1}: the leader alone
    reg.read("t", 0, 0, 1 << 20, replica_id=2)  # behind the HW: not yet
    assert view.alters == []
    reg.read("t", 0, 3, 1 << 20, replica_id=2)
    assert view.wait_alter(lambda a: a[4] == (1, 2))
    assert _wait_state(reg, lambda st: st.isr == (1, 2) and st.leadership.partition_epoch == 1 and st.pending_isr == ())


def test_isr_shrinks_after_replica_lag_time_max(node):
    reg, view, clock = node()
    reg.append("t", 0, _batch(2), acks=1)
    reg.read("t", 0, 0, 1 << 20, replica_id=2)  # fetched, but not at the LEO
    assert reg.replicas.check_isr(clock.ms + LAG) == 0  # within the lag: stays
    assert reg.replicas.check_isr(clock.ms + LAG + 1) == 1
    assert view.wait_alter(lambda a: a[4] == (1,))
    assert _wait_state(reg, lambda st: st.isr == (1,))


def test_a_follower_at_the_log_end_never_leaves_the_isr(node):
    reg, view, clock = node()
    reg.append("t", 0, _batch(2), acks=1)
    reg.read("t", 0, 2, 1 << 20, replica_id=2)
    assert reg.replicas.check_isr(clock.ms + 10 * LAG) == 0
    assert view.alters == []


def test_a_refused_expansion_stays_pending_until_new_metadata(node):
    """#43: INVALID_UPDATE_VERSION keeps the addition pending (it still holds the HW back)."""
    reg, view, _clock = node(isr=(1,), min_isr="1", accept=False)
    reg.append("t", 0, _batch(1), acks=1)
    reg.read("t", 0, 1, 1 << 20, replica_id=2)
    assert view.wait_alter(lambda a: a[4] == (1, 2))
    assert _wait_state(reg, lambda st: st.pending_isr == (2,))
    reg.read("t", 0, 1, 1 << 20, replica_id=2)
    assert len(view.alters) == 1  # no retry while pending
    view.set("t", 0, PartitionState((1, 2), (1, 2), 1, 0, 1))  # the controller's own change
    assert _wait_state(reg, lambda st: st.isr == (1, 2) and st.pending_isr == ())


def test_offset_for_leader_epoch_after_becoming_leader(node, tmp_path):
    """#39: epoch 0 at 0-1, epoch 5 at 2-3; leader at epoch 8 → (8, 4); older epochs end where the next starts."""
    reg, view, _clock = node(isr=(1,), min_isr="1", leader=2, epoch=5)
    lg = reg.open("t", 0)
    lg.append_as_follower(rb.build_batch([(None, b"a"), (None, b"b")], base_offset=0, partition_leader_epoch=0), 1)
    lg.append_as_follower(rb.build_batch([(None, b"c"), (None, b"d")], base_offset=2, partition_leader_epoch=5), 1)
    assert reg.offset_for_leader_epoch("t", 0, -1, 5)[0] == "NOT_LEADER_OR_FOLLOWER"
    view.set("t", 0, PartitionState((1, 2), (1,), 1, 8, 1))
    assert reg.offset_for_leader_epoch("t", 0, 8, 8) == (None, 8, 4)
    assert reg.offset_for_leader_epoch("t", 0, 8, 5) == (None, 5, 4)
    assert reg.offset_for_leader_epoch("t", 0, 8, 3) == (None, 0, 2)
    assert reg.offset_for_leader_epoch("t", 0, -1, 9) == (None, -1, -1)


def test_list_offsets_carries_the_leader_epoch_of_the_offset(node):
    """KIP-320: LATEST answers the latest epoch; EARLIEST the epoch of the log start."""
    reg, view, _clock = node(isr=(1,), min_isr="1", epoch=3)
    reg.append("t", 0, _batch(2), acks=1)
    view.set("t", 0, PartitionState((1, 2), (1,), 1, 4, 1))
    reg.append("t", 0, _batch(1), acks=1)
    assert reg.list_offset_with_epoch("t", 0, -1) == (None, 3, -1, 4)
    assert reg.list_offset_with_epoch("t", 0, -2) == (None, 0, -1, 3)
    assert [(e.epoch, e.start_offset) for e in reg.open("t", 0).leader_epoch_cache.entries()] == [(3, 0), (4, 2)]


def test_a_recreated_topic_starts_from_its_new_log(node):
    reg, _view, _clock = node(isr=(1,), min_isr="1")
    reg.append("t", 0, _batch(5), acks=1)
    reg.drop_topic("t")
    r = reg.append("t", 0, _batch(1), acks=-1)
    assert (r.error, r.base_offset, r.required_offset) == (None, 0, -1)
    assert reg.replicas.state("t", 0).hw == 1


def test_a_fenced_follower_is_not_proposed_for_the_isr(node):
    """Kafka's isReplicaIsrEligible: a caught-up follower the controller fenced stays out."""
    reg, view, _clock = node(isr=(1,), min_isr="1")
    view.fenced = {2}
    reg.append("t", 0, _batch(3), acks=1)
    reg.read("t", 0, 3, 1 << 20, replica_id=2)
    assert view.alters == []
    view.fenced = set()  # unfenced: its next fetch proposes it
    reg.read("t", 0, 3, 1 << 20, replica_id=2)
    assert view.wait_alter(lambda a: a[4] == (1, 2))


def test_a_lagging_image_does_not_roll_back_a_committed_isr(node):
    """The controller answered AlterPartition (ISR (1, 2), partition epoch 1) before the image
    shows it: a fetch that still sees the old registration keeps the committed one."""
    reg, view, _clock = node(isr=(1,), min_isr="1")
    reg.append("t", 0, _batch(3), acks=1)
    stale = view.partition_state("t", 0)
    reg.read("t", 0, 3, 1 << 20, replica_id=2)
    assert _wait_state(reg, lambda st: st.isr == (1, 2) and st.leadership.partition_epoch == 1)
    view.states[("t", 0)] = stale  # the image lags behind the answer
    view.accept_alters = False
    reg.read("t", 0, 3, 1 << 20, replica_id=2)
    assert _wait_state(reg, lambda st: st.isr == (1, 2) and st.leadership.partition_epoch == 1)
