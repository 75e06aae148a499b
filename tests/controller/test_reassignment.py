"""Partition reassignment (KIP-455), the pure decider: ``actors.controller.reassignment`` and
``AlterPartitionReassignments`` / AlterPartition / ``list_partition_reassignments`` in
``actors.controller.state``. Scenarios follow Kafka's ``ReplicationControlManagerTest``
(testReassignPartitions, testReassignPartitionsHandlesNewReassignmentThatRemovesPreviouslyAddingReplicas)
and ``PartitionChangeBuilderTest`` (testIsrEnlargementCompletesReassignment,
testLeaderEpochBumpOnNewReplicaSetDisjoint)."""

from __future__ import annotations

import json

from actors.controller import cluster as cl
from actors.controller import reassignment as rz
from actors.controller import state as S
from actors.controller import topics as tp
from events.codec import decode_event, encode_event, new_event
from events.controller import BrokerEndpoint, PartitionChanged


def _run(state: S.ControllerState, cmd, now_ms: int = 0):
    d = S.decide(state, cmd, now_ms)
    if isinstance(d, S.Decision):
        for e in d.events:
            S.apply(state, e)
            state.version += 1
    return d


def _cluster(n: int = 4) -> S.ControllerState:
    """Brokers 1..n registered and unfenced, node 1 the controller."""
    state = S.ControllerState(brokers=())
    _run(state, cl.ClaimController(1, 0))
    for b in range(1, n + 1):
        d = _run(state, cl.RegisterBroker(b, f"inc-{b}", "c", (BrokerEndpoint("PLAINTEXT", "h", 9000 + b, "PLAINTEXT"),), None, False))
        _run(state, cl.BrokerHeartbeat(b, d.reply[1], False))
    return state


def _topic(state: S.ControllerState, name: str, *assignments: tuple[int, ...], configs=()) -> None:
    cmd = tp.CreateTopics(
        (tp.CreatableTopic(name, assignments=tuple(enumerate(assignments)), configs=configs),), topic_ids=((name, tp.new_topic_id()),)
    )
    assert [r.error for r in _run(state, cmd).reply] == ["NONE"]


def _p(state: S.ControllerState, name: str = "t", idx: int = 0) -> tp.Partition:
    return state.topics.topics[name].partitions[idx]


def _reassign(state: S.ControllerState, *entries):
    return _run(state, S.AlterPartitionReassignments(tuple(entries)))


def _alter(state: S.ControllerState, isr, name: str = "t", idx: int = 0):
    p = _p(state, name, idx)
    return _run(state, S.AlterPartition(name, idx, p.leader, p.leader_epoch, p.partition_epoch, tuple(isr)))


# ----------------------------------------------------------------------------- the pure rules


def test_plan_is_target_then_removing_with_sorted_differences():
    assert rz.plan((1, 2), (2, 3)) == ((2, 3, 1), (3,), (1,))
    assert rz.plan((3, 2, 1), (0, 2, 1)) == ((0, 2, 1, 3), (0,), (3,))
    assert rz.plan((2, 3, 0, 1), (4, 5)) == ((4, 5, 0, 1, 2, 3), (4, 5), (0, 1, 2, 3))
    assert rz.plan((1, 2, 3), (3, 2, 1)) == ((3, 2, 1), (), ())


def test_validate_target_refuses_empty_duplicate_and_unregistered():
    assert rz.validate_target((), (1, 2)) is not None
    assert "more than once" in rz.validate_target((1, 1), (1, 2))
    assert "broker 9" in rz.validate_target((1, 9), (1, 2))
    assert rz.validate_target((2, 1), (1, 2)) is None


def test_maybe_complete_needs_every_target_replica_in_the_isr_without_removing():
    assert rz.maybe_complete((2, 3, 1), (3,), (1,), (1, 2)) is None
    assert rz.maybe_complete((2, 3, 1), (3,), (1,), (1, 2, 3)) == ((2, 3), (2, 3))
    assert rz.maybe_complete((2, 3, 1), (3,), (1,), (1,)) is None  # ISR without removing is empty
    assert rz.maybe_complete((1, 2), (), (), (1, 2)) is None  # nothing in progress


def test_change_completes_and_elects_from_the_target_with_an_epoch_bump():
    """PartitionChangeBuilderTest.testIsrEnlargementCompletesReassignment: replicas [1,2,3,4],
    ISR [1,2,3], removing [1], adding [4], leader 1, broker 3 not acceptable; ISR → [1,2,3,4]
    gives replicas [2,3,4], ISR [2,3,4], leader 2."""
    reg = rz.Registration((1, 2, 3, 4), (1, 2, 3), 1, 5, 7, (4,), (1,))
    new = rz.change(reg, (1, 2, 4), isr=(1, 2, 3, 4))
    assert (new.replicas, new.isr, new.leader, new.adding, new.removing) == ((2, 3, 4), (2, 3, 4), 2, (), ())
    assert (new.leader_epoch, new.partition_epoch) == (6, 8)


def test_change_bumps_the_leader_epoch_when_a_replica_leaves_even_with_the_same_leader():
    """testLeaderEpochBumpOnNewReplicaSetDisjoint: [2,1,3] → [2,1,4] keeps leader 1, epoch + 1."""
    reg = rz.Registration((2, 1, 3), (2, 1, 3, 4), 1, 3, 3)
    new = rz.change(reg, (1, 2, 3, 4), replicas=(2, 1, 4), isr=(2, 1, 4))
    assert (new.leader, new.leader_epoch, new.partition_epoch) == (1, 4, 4)
    assert rz.change(reg, (1, 2, 3, 4)) is reg  # no change, no epoch


def test_revert_drops_adding_keeps_interim_order_and_marks_an_empty_isr_unclean():
    reg = rz.Registration((0, 2, 1, 3), (3, 2, 1), 3, 0, 1, (0,), (3,))
    assert rz.revert(reg) == ((2, 1, 3), (3, 2, 1), False)
    only_adding = rz.Registration((4, 5, 1), (4,), 4, 2, 3, (4, 5), (1,))
    assert rz.revert(only_adding) == ((1,), (1,), True)


# ----------------------------------------------------------------------------- the decider


def test_start_writes_interim_replicas_adding_and_removing_without_moving_the_leader():
    state = _cluster()
    _topic(state, "t", (1, 2))
    le, pe = _p(state).leader_epoch, _p(state).partition_epoch
    d = _reassign(state, ("t", 0, (2, 3)))
    assert [r.error for r in d.reply] == ["NONE"]
    (e,) = d.events
    assert isinstance(e, PartitionChanged) and e.reason == "reassign"
    assert (e.replicas, e.adding_replicas, e.removing_replicas) == ((2, 3, 1), (3,), (1,))
    p = _p(state)
    assert (p.replicas, p.isr, p.leader, p.adding, p.removing) == ((2, 3, 1), (1, 2), 1, (3,), (1,))
    assert p.leader_epoch == le  # nobody left the replica list yet
    assert p.partition_epoch == pe + 1
    assert S.list_partition_reassignments(state) == [S.OngoingReassignment("t", 0, (2, 3, 1), (3,), (1,))]


def test_isr_expansion_completes_and_moves_leadership_off_the_removed_replica():
    state = _cluster()
    _topic(state, "t", (1, 2))
    _reassign(state, ("t", 0, (2, 3)))
    le, pe = _p(state).leader_epoch, _p(state).partition_epoch
    d = _alter(state, (1, 2, 3))  # leader 1 adds node 3 to the ISR
    (e,) = d.events
    assert e.reason == "reassign_complete" and (e.replicas, e.adding_replicas, e.removing_replicas) == ((2, 3), (), ())
    (r,) = d.reply
    assert r.error == "NEW_LEADER_ELECTED" and r.leader == 2  # written all the same
    p = _p(state)
    assert (p.replicas, p.isr, p.leader, p.adding, p.removing) == ((2, 3), (2, 3), 2, (), ())
    assert p.leader_epoch == le + 1 and p.partition_epoch == pe + 1
    assert S.list_partition_reassignments(state) == []


def test_completion_keeps_a_leader_that_stays_and_an_isr_change_short_of_the_target_does_not_complete():
    state = _cluster()
    _topic(state, "t", (2, 1))
    _reassign(state, ("t", 0, (2, 3, 4)))
    assert _p(state).replicas == (2, 3, 4, 1)
    d = _alter(state, (2, 1, 3))  # 4 still missing
    assert d.events[0].reason == "isr_expand" and d.events[0].replicas is None and d.reply[0].error == "NONE"
    assert _p(state).reassigning
    epoch = _p(state).leader_epoch
    d = _alter(state, (2, 1, 3, 4))
    assert d.reply[0].error == "NONE" and d.events[0].reason == "reassign_complete"
    p = _p(state)
    assert (p.replicas, p.isr, p.leader) == ((2, 3, 4), (2, 3, 4), 2)
    assert p.leader_epoch == epoch + 1  # replica 1 left the list: a forced bump, same leader


def test_a_target_the_isr_already_covers_completes_at_once():
    """A pure reorder (and a shrink to ISR members) completes in the submitting record."""
    state = _cluster()
    _topic(state, "t", (1, 2, 3), (3, 2, 1))
    d = _reassign(state, ("t", 0, (3, 2, 1)), ("t", 1, (3, 2)))
    assert [r.error for r in d.reply] == ["NONE", "NONE"]
    assert (_p(state).replicas, _p(state).leader) == ((3, 2, 1), 1)
    p1 = _p(state, "t", 1)
    assert (p1.replicas, p1.isr, p1.leader, p1.reassigning) == ((3, 2), (3, 2), 3, False)
    assert S.list_partition_reassignments(state) == []


def test_cancel_reverts_to_the_original_replicas_in_interim_order():
    """testReassignPartitions: foo p1 [3,2,1] → [0,2,1] is listed as [0,2,1,3] adding [0]
    removing [3]; its cancel gives replicas [2,1,3] (not the original [3,2,1]), empty adding and
    removing, the leader kept and its epoch bumped (replica 0 left the list)."""
    state = _cluster(4)
    _run(state, cl.RegisterBroker(0, "inc-0", "c", (BrokerEndpoint("PLAINTEXT", "h", 9000, "PLAINTEXT"),), None, False))
    _run(state, cl.BrokerHeartbeat(0, state.cluster.brokers[0].broker_epoch, False))
    _topic(state, "foo", (1, 2, 3), (3, 2, 1))
    d = _reassign(state, ("foo", 0, (3, 2, 1)), ("foo", 1, (0, 2, 1)), ("foo", 2, (0, 2, 1)), ("bar", 0, (1,)))
    assert [(r.partition, r.error) for r in d.reply] == [(0, "NONE"), (1, "NONE"), (2, "UNKNOWN_TOPIC_OR_PARTITION"), (0, "UNKNOWN_TOPIC_OR_PARTITION")]
    assert d.reply[2].message == "Unable to find partition foo:2."
    assert S.list_partition_reassignments(state) == [S.OngoingReassignment("foo", 1, (0, 2, 1, 3), (0,), (3,))]
    epoch = _p(state, "foo", 1).leader_epoch
    d = _reassign(state, ("foo", 0, None), ("foo", 1, None), ("foo", 2, None))
    assert [r.error for r in d.reply] == ["NO_REASSIGNMENT_IN_PROGRESS", "NONE", "UNKNOWN_TOPIC_OR_PARTITION"]
    (e,) = d.events
    assert e.reason == "reassign_cancel" and (e.replicas, e.adding_replicas, e.removing_replicas) == ((2, 1, 3), (), ())
    p = _p(state, "foo", 1)
    assert (p.replicas, p.isr, p.leader, p.leader_epoch) == ((2, 1, 3), (3, 2, 1), 3, epoch + 1)
    assert S.list_partition_reassignments(state) == []


def test_cancel_that_needs_an_unclean_election_is_refused_unless_the_topic_allows_it():
    state = _cluster()
    for name, unclean in (("safe", "false"), ("risky", "true")):
        _topic(state, name, (1,), configs=(("unclean.leader.election.enable", unclean),))
        _reassign(state, (name, 0, (2, 3)))  # replicas [2,3,1], adding [2,3], removing [1]
        _alter(state, (1, 2), name)  # 2 joins; not complete (3 missing)
        # the only ISR member that is not being added leaves: ISR [2] (an ISR change by hand)
        p = _p(state, name)
        S.apply(state, PartitionChanged(state.topics.topics[name].topic_id, 0, 2, (2,), p.leader_epoch + 1, p.partition_epoch + 1, "election"))
    refused = _reassign(state, ("safe", 0, None))
    assert refused.reply[0].error == "INVALID_REPLICA_ASSIGNMENT" and refused.events == []
    assert "unclean leader election" in refused.reply[0].message
    ok = _reassign(state, ("risky", 0, None))
    assert ok.reply[0].error == "NONE"
    p = _p(state, "risky")
    assert (p.replicas, p.isr, p.leader, p.reassigning) == ((1,), (1,), 1, False)


def test_a_new_target_replaces_a_running_reassignment():
    """testReassignPartitionsHandlesNewReassignmentThatRemovesPreviouslyAddingReplicas, scaled:
    [1,2] → [3,4] then, before it finishes, → [5]: replicas [5,1,2,3,4] removing [1,2,3,4]."""
    state = _cluster(5)
    _topic(state, "t", (1, 2))
    _reassign(state, ("t", 0, (3, 4)))
    assert S.list_partition_reassignments(state, [("t", 0), ("t", 9), ("nope", 0)]) == [S.OngoingReassignment("t", 0, (3, 4, 1, 2), (3, 4), (1, 2))]
    d = _reassign(state, ("t", 0, (5,)))
    assert d.reply[0].error == "NONE"
    assert S.list_partition_reassignments(state) == [S.OngoingReassignment("t", 0, (5, 1, 2, 3, 4), (5,), (1, 2, 3, 4))]
    _alter(state, (1, 2, 5))
    p = _p(state)
    assert (p.replicas, p.isr, p.leader, p.reassigning) == ((5,), (5,), 5, False)


def test_errors_invalid_assignments_and_unknown_partitions():
    state = _cluster(3)
    _topic(state, "t", (1, 2))
    d = _reassign(state, ("t", 0, ()), ("t", 0, (1, 1)), ("t", 0, (1, 7)), ("t", 5, (1,)), ("u", 0, (1,)), ("t", 0, None))
    assert [r.error for r in d.reply] == ["INVALID_REPLICA_ASSIGNMENT"] * 3 + ["UNKNOWN_TOPIC_OR_PARTITION"] * 2 + ["NO_REASSIGNMENT_IN_PROGRESS"]
    assert d.events == [] and not _p(state).reassigning


def test_a_fenced_but_registered_broker_is_a_valid_target():
    state = _cluster(3)
    _topic(state, "t", (1, 2))
    _run(state, cl.FenceBrokers((3,)))
    d = _reassign(state, ("t", 0, (2, 3)))
    assert d.reply[0].error == "NONE" and _p(state).adding == (3,)


def test_single_node_reassigning_to_itself_is_a_no_op_and_to_an_unknown_broker_invalid():
    state = S.ControllerState(brokers=(1,))
    _topic(state, "t", (1,))
    d = _reassign(state, ("t", 0, (1,)))
    assert d.reply[0].error == "NONE" and d.events == []
    assert _reassign(state, ("t", 0, (2,))).reply[0].error == "INVALID_REPLICA_ASSIGNMENT"


def test_partition_changed_v1_upcasts_and_snapshots_round_trip_the_assignment():
    v1 = {"topic_id": "x", "partition": 0, "leader": 1, "isr": [1], "leader_epoch": 1, "partition_epoch": 2, "reason": "election"}
    e = decode_event("controller.PartitionChanged", 1, json.dumps(v1).encode())
    assert (e.replicas, e.adding_replicas, e.removing_replicas) == (None, None, None)
    e2 = PartitionChanged("x", 0, 1, (1,), 1, 2, "reassign", (2, 1), (2,), ())
    assert decode_event("controller.PartitionChanged", 2, encode_event(e2)) == e2
    assert new_event(e2).schema_version == 2
    state = _cluster()
    _topic(state, "t", (1, 2), (1, 2))
    _reassign(state, ("t", 0, (2, 3)))
    d = state.to_dict()
    assert d["topics"]["topics"]["t"]["partitions"][1] == [1, [1, 2], [1, 2], 1, 0, 0]  # earlier shape kept
    again = S.ControllerState(brokers=())
    again.load_dict(json.loads(json.dumps(d)), state.version)
    assert again.to_dict() == d and again.topics.topics["t"].partitions[0].adding == (3,)
