"""Replication rules: the odd-numbered Rivven (R) scenarios and the Kafka anchors (K) of the
reference (controller.md §4), with Kafka's rule asserted wherever Rivven deviates."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.controller import replication as rp
from actors.controller import state as S
from actors.controller import topics as tp

N1, N2, N3 = 1, 2, 3


def leader_state(replicas=(N1, N2), isr=None, epoch=1, min_isr=1, now=0, leo=0, hw=0) -> rp.ReplicationState:
    lead = rp.PartitionLeadership(tuple(replicas), tuple(isr or replicas), N1, epoch)
    return rp.become_leader(N1, lead, now, leo=leo, hw=hw, min_insync_replicas=min_isr)


def append(s: rp.ReplicationState, n: int = 1, acks: int = 1, now: int = 0):
    s2, out = rp.append_as_leader(s, acks, n, now)
    return s2, out


# --- R1–R7: high watermark and ISR -------------------------------------------------------------


def test_r1_test_hwm_advancement():
    s = leader_state()
    for _ in range(3):
        s, out = append(s)
        assert out.error == "NONE"
    assert s.leo == 3 and s.hw == 0  # n2 is in the ISR and has not fetched
    s, err, proposal = rp.update_follower_fetch(s, N2, 2, now_ms=10)
    assert err == "NONE" and proposal is None and N2 in s.isr
    assert s.hw == 2
    s, _, _ = rp.update_follower_fetch(s, N2, 3, now_ms=20)
    assert s.hw == 3


def test_r3_isr_shrink_by_lag_then_rejoin_kafka_rules():
    s = leader_state(now=0)
    s, _ = append(s, 20_000)
    s, _, _ = rp.update_follower_fetch(s, N2, 5_000, now_ms=1_000)
    # Kafka shrinks by time (replica.lag.time.max.ms), not by a message count
    assert rp.maybe_shrink_isr(s, now_ms=20_000)[1] is None
    s, proposal = rp.maybe_shrink_isr(s, now_ms=30_001)
    assert proposal == (N1,)
    s = rp.commit_isr(s, proposal, now_ms=30_001)
    assert s.isr == (N1,) and s.leadership.partition_epoch == 1
    assert s.hw == 20_000  # the HW now ignores n2
    # Rivven re-admits at 19999 at once; Kafka also needs LEO >= HW and >= epoch start
    s, _, proposal = rp.update_follower_fetch(s, N2, 19_999, now_ms=30_002)
    assert proposal is None
    s, _, proposal = rp.update_follower_fetch(s, N2, 20_000, now_ms=30_003)
    assert proposal == (N1, N2) and N2 in s.maximal_isr


def test_r5_min_isr_gate_only_for_acks_all():
    s = leader_state(min_isr=2)
    s = rp.commit_isr(s, (N1,), now_ms=0)
    s, ok = append(s, 1, acks=1)
    assert ok.error == "NONE"  # Rivven would refuse every ack mode
    s, ok0 = append(s, 1, acks=0)
    assert ok0.error == "NONE"
    s2, bad = append(s, 1, acks=-1)
    assert bad.error == "NOT_ENOUGH_REPLICAS" and rp.error_code(bad.error) == 19 and rp.is_retriable(bad.error)
    assert s2 == s  # checked before the append
    assert s.hw == 0  # under min ISR the HW does not advance
    assert append(s, 1, acks=2)[1].error == "INVALID_REQUIRED_ACKS"


def test_r7_the_hwm_never_regresses():
    s = leader_state()
    s, _ = append(s, 3)
    s, _, _ = rp.update_follower_fetch(s, N2, 3, now_ms=1)
    assert s.hw == 3
    s, _, _ = rp.update_follower_fetch(s, N2, 1, now_ms=2)  # a stale report
    assert s.hw == 3


def test_acks_all_completes_at_last_offset_plus_one():
    s = leader_state(replicas=(N1, N2, N3), min_isr=2)
    s, out = append(s, 5, acks=-1)
    assert (out.base_offset, out.last_offset, out.required_offset) == (0, 4, 5)
    assert rp.check_enough_replicas_reach_offset(s, out.required_offset) == (False, "NONE")
    s, _, _ = rp.update_follower_fetch(s, N2, 4, now_ms=1)
    s, _, _ = rp.update_follower_fetch(s, N3, 4, now_ms=1)
    assert s.hw == 4 and rp.check_enough_replicas_reach_offset(s, 5) == (False, "NONE")  # not off-by-one
    s, _, _ = rp.update_follower_fetch(s, N2, 5, now_ms=2)
    s, _, _ = rp.update_follower_fetch(s, N3, 5, now_ms=2)
    assert rp.check_enough_replicas_reach_offset(s, 5) == (True, "NONE")
    # the HW was reached but the ISR shrank below min.insync.replicas meanwhile
    shrunk = rp.commit_isr(s, (N1,), now_ms=3)
    assert rp.check_enough_replicas_reach_offset(shrunk, 5) == (True, "NOT_ENOUGH_REPLICAS_AFTER_APPEND")
    assert rp.is_retriable("NOT_ENOUGH_REPLICAS_AFTER_APPEND")  # Kafka; Rivven says fatal


# --- R9–R11: election and epochs -----------------------------------------------------------------


def test_r9_fallback_election():
    p = rp.PartitionLeadership((N1, N2, N3), (N3, N2), N1, 4)
    leader, unclean = rp.elect_leader(p, live=[N2, N3])
    assert (leader, unclean) == (N2, False)
    assert p.change(leader=leader).leader_epoch == 5
    # Kafka: first in assignment order; Rivven would take the smallest id (n2) here
    assert rp.elect_leader(rp.PartitionLeadership((N1, N3, N2), (N3, N2), N1, 4), live=[N2, N3])[0] == N3
    empty = rp.PartitionLeadership((N1, N2, N3), (), N1, 4)
    assert rp.elect_leader(empty, live=[N1, N2, N3]) == (rp.NO_LEADER, False)
    assert rp.elect_leader(empty, live=[N2, N3], unclean=True) == (N2, True)


def test_r9_elect_leaders_through_the_controller():
    cs = S.ControllerState(brokers=(N1, N2, N3))
    _create(cs, "t", rf=3)
    # preferred leader already leads
    d = S.decide(cs, S.ElectLeaders((("t", 0),), "preferred"), 0)
    assert d.reply[0].error == "ELECTION_NOT_NEEDED" and d.events == []
    _apply(cs, S.decide(cs, S.BrokerFailed(N1), 0))
    assert cs.topics.topics["t"].partitions[0].leader == N2
    d = S.decide(cs, S.ElectLeaders((("t", 0),), "preferred", live=(N2, N3)), 0)
    assert d.reply[0].error == "PREFERRED_LEADER_NOT_AVAILABLE"
    # n1 is back and in sync again: the preferred election moves leadership back
    p = cs.topics.topics["t"].partitions[0]
    _apply(cs, S.decide(cs, S.AlterPartition("t", 0, N2, p.leader_epoch, p.partition_epoch, (N2, N3, N1)), 0))
    d = S.decide(cs, S.ElectLeaders((("t", 0),), "preferred"), 0)
    assert d.reply[0].error == "NONE" and d.reply[0].leader == N1
    before = cs.topics.topics["t"].partitions[0].leader_epoch
    _apply(cs, d)
    assert cs.topics.topics["t"].partitions[0].leader_epoch == before + 1
    d = S.decide(cs, S.ElectLeaders((("nope", 0), ("t", 9)), "preferred"), 0)
    assert [r.error for r in d.reply] == ["UNKNOWN_TOPIC_OR_PARTITION"] * 2


def test_r11_test_partition_leader_update():
    cs = S.ControllerState(brokers=(N1, N2))
    _create(cs, "t", rf=2)
    p = cs.topics.topics["t"].partitions[0]
    assert (p.leader, p.leader_epoch) == (N1, 0)  # Kafka starts at epoch 0 (Rivven: 1)
    d = S.decide(cs, S.UpdatePartitionLeader("t", 0, N2, p.leader_epoch), 0)
    assert d.events == [] and d.reply[0].error == "FENCED_LEADER_EPOCH" and "stale epoch" in d.reply[0].message
    d = S.decide(cs, S.UpdatePartitionLeader("t", 0, N2, p.leader_epoch + 1), 0)
    _apply(cs, d)
    p = cs.topics.topics["t"].partitions[0]
    assert (p.leader, p.leader_epoch) == (N2, 1)


# --- R13–R17: failover, membership, request handling ---------------------------------------------


def test_r13_dead_leader():
    p = rp.PartitionLeadership((N1, N2, N3), (N1, N3, N2), N1, 3)
    new = rp.handle_broker_failure(p, N1, live=[N1, N2, N3])
    assert (new.leader, new.leader_epoch) == (N2, 4) and set(new.isr) == {N2, N3}
    only = rp.PartitionLeadership((N1, N2, N3), (N1,), N1, 3)
    off = rp.handle_broker_failure(only, N1, live=[N2, N3])
    # Kafka: offline with no leader, epoch bumped, the last ISR member kept (Rivven keeps n1)
    assert (off.leader, off.leader_epoch, off.isr) == (rp.NO_LEADER, 4, (N1,))


def test_r13_broker_failure_through_the_controller_shrinks_follower_isr():
    cs = S.ControllerState(brokers=(N1, N2, N3))
    _create(cs, "t", rf=3, partitions=3)
    d = S.decide(cs, S.BrokerFailed(N3), 0)
    _apply(cs, d)
    for p in cs.topics.topics["t"].partitions:
        assert N3 not in p.isr and p.leader != N3


def test_r15_test_node_state_transitions():
    n = rp.NodeLiveness()
    assert n.status == rp.NodeStatus.UNKNOWN
    n, ok = n.mark_alive(1)
    assert ok and n.status == rp.NodeStatus.ALIVE
    n, ok = n.mark_suspect()
    assert ok and n.status == rp.NodeStatus.SUSPECT
    n, ok = n.mark_dead()
    assert ok and n.status == rp.NodeStatus.DEAD
    assert n.mark_suspect() == (n, False)
    assert n.mark_alive(1) == (n, False)
    n, ok = n.mark_alive(2)
    assert ok and n.status == rp.NodeStatus.ALIVE and n.incarnation == 2
    assert rp.NodeLiveness(rp.NodeStatus.ALIVE, 1).mark_dead()[1] is False  # only from Suspect


def test_r17_produce_fencing_and_routing():
    p = rp.PartitionLeadership((N1, N2), (N1, N2), N2, 3)
    err, msg = rp.check_produce(p, N2, 2, "t", 0)
    assert err == "FENCED_LEADER_EPOCH" and msg == "client epoch 2 < current epoch 3 for t/0"
    assert rp.check_produce(p, N2, 4, "t", 0)[0] == "UNKNOWN_LEADER_EPOCH"  # Rivven accepts it
    err, msg = rp.check_produce(p, N1, 3, "t", 0)
    assert err == "NOT_LEADER_OR_FOLLOWER" and msg.endswith("Leader is node 2")
    assert rp.check_produce(p, N2, -1, "t", 0) == ("NONE", "")
    off = rp.PartitionLeadership((N1,), (N1,), rp.NO_LEADER, 3)
    assert rp.check_produce(off, N1, 3, "t", 0)[0] == "LEADER_NOT_AVAILABLE"


# --- K1–K7: Kafka anchors ------------------------------------------------------------------------


def test_k1_hw_is_min_over_the_isr():
    s = leader_state(replicas=(N1, N2, N3), now=0)
    s, _ = append(s, 6)
    s, _, _ = rp.update_follower_fetch(s, N2, 6, now_ms=0)
    s, _, _ = rp.update_follower_fetch(s, N3, 6, now_ms=0)
    s, _ = append(s, 2)
    s, _, _ = rp.update_follower_fetch(s, N2, 8, now_ms=20_000)  # F1 caught up at 20 s
    s, _ = append(s, 2)
    assert (s.leo, s.hw) == (10, 6)  # F2 at 6 pins the HW: consumers see 0–5
    s, proposal = rp.maybe_shrink_isr(s, now_ms=31_000)  # F2 last caught up at 0
    assert proposal == (N1, N2)
    s = rp.commit_isr(s, proposal, now_ms=31_000)
    assert s.hw == 8


def test_k3_isr_expand_needs_hw_and_epoch_start():
    lead = rp.PartitionLeadership((N1, N2), (N1,), N1, 5)
    s = rp.become_leader(N1, lead, 0, leo=500, hw=480)
    assert s.leader_epoch_start_offset == 500
    s, _, proposal = rp.update_follower_fetch(s, N2, 490, now_ms=1)
    assert proposal is None  # below the epoch start, although above the HW
    s, _, proposal = rp.update_follower_fetch(s, N2, 500, now_ms=2)
    assert proposal == (N1, N2)
    assert N2 in s.maximal_isr and s.isr == (N1,)  # pending: counts for HW and acks at once
    assert s.hw == 500


def test_k3b_a_fenced_caught_up_replica_neither_holds_the_hw_nor_rejoins():
    """Kafka ``Partition.isReplicaIsrEligible`` (KRaft): a replica whose broker is fenced is not
    waited for by ``maybeIncrementLeaderHW`` although it was caught up within
    replica.lag.time.max.ms, and ``canAddReplicaToIsr`` refuses it. Found by the 3-node SIGKILL
    test: without it every acks=all produce stalled for replica.lag.time.max.ms after a kill."""
    s = leader_state(replicas=(N1, N2, N3), min_isr=2, now=0)
    s, _ = append(s, 10)
    for r in (N2, N3):
        s, _, _ = rp.update_follower_fetch(s, r, 10, now_ms=1_000)
    assert s.hw == 10
    # N3's broker is SIGKILLed and fenced: the controller shrinks the ISR to (N1, N2)
    s = rp.commit_isr(replace(s, ineligible=(N3,)), (N1, N2), now_ms=1_500)
    s, _ = append(s, 5, acks=-1, now=1_600)
    s, _, proposal = rp.update_follower_fetch(s, N2, 15, now_ms=1_700)
    assert proposal is None
    assert s.hw == 15  # N3, caught up 700 ms ago but fenced, does not pin the HW at 10
    ok, err = rp.check_enough_replicas_reach_offset(s, 15)
    assert (ok, err) == (True, "NONE")
    # an eligible caught-up replica outside the ISR is still waited for (shouldWaitForReplicaToJoinIsr)
    eligible = replace(s, ineligible=(), hw=10)
    assert rp.maybe_increment_hw(eligible, now_ms=1_700).hw == 10
    # a fenced replica that fetches at the HW is not proposed for the ISR; unfenced it is
    s2, _, proposal = rp.update_follower_fetch(s, N3, 15, now_ms=1_800)
    assert proposal is None and N3 not in s2.maximal_isr
    s3, _, proposal = rp.update_follower_fetch(replace(s, ineligible=()), N3, 15, now_ms=1_800)
    assert proposal == (N1, N2, N3)


def test_k5_stale_or_advanced_epochs_on_fetch():
    s = leader_state(epoch=5)
    s2, err, _ = rp.update_follower_fetch(s, N2, 0, now_ms=1, current_leader_epoch=4)
    assert err == "FENCED_LEADER_EPOCH" and rp.error_code(err) == 74 and rp.is_retriable(err) and s2 == s
    _, err, _ = rp.update_follower_fetch(s, N2, 0, now_ms=1, current_leader_epoch=6)
    assert err == "UNKNOWN_LEADER_EPOCH" and rp.error_code(err) == 75 and rp.is_retriable(err)
    assert rp.update_follower_fetch(s, N2, 0, now_ms=1, current_leader_epoch=5)[1] == "NONE"


def test_k7_log_start_offset():
    s = leader_state(replicas=(N1,), leo=300, hw=150)
    s2, err = rp.delete_records(s, 200)
    assert err == "OFFSET_OUT_OF_RANGE" and s2 == s
    s, err = rp.delete_records(s, 100)
    assert err == "NONE" and s.log_start_offset == 100
    assert rp.check_fetch_offset(s, 50) == "OFFSET_OUT_OF_RANGE" and not rp.is_retriable("OFFSET_OUT_OF_RANGE")
    assert rp.check_fetch_offset(s, 100) == "NONE" and rp.check_fetch_offset(s, 150) == "NONE"
    assert rp.check_fetch_offset(s, 151) == "OFFSET_OUT_OF_RANGE"
    assert rp.check_fetch_offset(s, 300, from_follower=True) == "NONE"
    s, err = rp.delete_records(s, -1)  # -1 = up to the HW
    assert err == "NONE" and s.log_start_offset == 150


def test_alter_partition_validation():
    p = rp.PartitionLeadership((N1, N2, N3), (N1, N2), N1, 2, 7)
    live = (N1, N2, N3)
    assert rp.alter_partition(p, N2, 2, 7, (N1,), live)[1] == "NOT_LEADER_OR_FOLLOWER"
    assert rp.alter_partition(p, N1, 1, 7, (N1,), live)[1] == "FENCED_LEADER_EPOCH"
    assert rp.alter_partition(p, N1, 2, 6, (N1,), live)[1] == "INVALID_UPDATE_VERSION"
    assert rp.alter_partition(p, N1, 2, 7, (N2,), live)[1] == "INVALID_REQUEST"
    assert rp.alter_partition(p, N1, 2, 7, (N1, 9), live)[1] == "INELIGIBLE_REPLICA"
    new, err = rp.alter_partition(p, N1, 2, 7, (N1, N2, N3), live)
    assert err == "NONE" and new.isr == (N1, N2, N3) and new.partition_epoch == 8 and new.leader_epoch == 2


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["append", "f2", "f3", "shrink"]), st.integers(0, 30), st.integers(0, 40_000)), max_size=40))
def test_property_hw_monotone_and_bounded(steps):
    s = leader_state(replicas=(N1, N2, N3), min_isr=2)
    now = 0
    for kind, n, dt in steps:
        now += dt
        hw = s.hw
        if kind == "append":
            s, _ = rp.append_as_leader(s, 1, n, now)
        elif kind in ("f2", "f3"):
            s, _, proposal = rp.update_follower_fetch(s, N2 if kind == "f2" else N3, min(n * 10, s.leo), now)
            if proposal:
                s = rp.commit_isr(s, proposal, now)
        else:
            s, proposal = rp.maybe_shrink_isr(s, now)
            if proposal:
                s = rp.commit_isr(s, proposal, now)
        assert s.hw >= hw and s.hw <= s.leo and N1 in s.isr


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["append", "f2", "f3", "shrink"]), st.integers(0, 30), st.integers(0, 40_000)), max_size=40),
       st.sampled_from([(N1,), (N1, N2), (N1, N2, N3)]), st.integers(1, 3), st.integers(0, 60))
def test_property_the_leaders_log_end_move_is_the_hw_rule_on_the_moved_state(steps, replicas, min_isr, moved):
    """``leader_log_end_moved`` (the produce path's one-step form) returns what
    ``maybe_increment_hw`` returns on the state with the leader's new LEO, from any state the
    replication rules reach (remotes lagging, ISR shrunk below min ISR, fenced brokers none)."""
    s = leader_state(replicas=replicas, min_isr=min_isr)
    now = 0
    for kind, n, dt in steps:
        now += dt
        if kind == "append":
            s, _ = rp.append_as_leader(s, 1, n, now)
        elif kind in ("f2", "f3") and (N2 if kind == "f2" else N3) in replicas:
            s, _, proposal = rp.update_follower_fetch(s, N2 if kind == "f2" else N3, min(n * 10, s.leo), now)
            if proposal:
                s = rp.commit_isr(s, proposal, now)
        elif kind == "shrink":
            s, proposal = rp.maybe_shrink_isr(s, now)
            if proposal:
                s = rp.commit_isr(s, proposal, now)
        leo = s.leo + moved
        assert rp.leader_log_end_moved(s, leo, now) == rp.maybe_increment_hw(replace(s, leo=leo), now)
    assert rp.leader_log_end_moved(s, s.leo, now) == rp.maybe_increment_hw(s, now)


# --- helpers -------------------------------------------------------------------------------------


def _create(cs: S.ControllerState, name: str, rf: int = 1, partitions: int = 1) -> None:
    cmd = tp.CreateTopics((tp.CreatableTopic(name, partitions, rf),), topic_ids=((name, tp.new_topic_id(cs.topics.used_ids)),))
    d = S.decide(cs, cmd, 0)
    assert d.reply[0].error == "NONE", d.reply
    _apply(cs, d)


def _apply(cs: S.ControllerState, d) -> None:
    assert isinstance(d, S.Decision), d
    for e in d.events:
        S.apply(cs, e)
