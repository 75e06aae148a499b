"""The cluster's metadata (issue 15): the pure rules of registration, heartbeats, fencing and the
active controller (actors/controller/cluster.py, state.py), two ControllerActors sharing one
PostgreSQL log (one active holding the controller lease, fenced appends, the deposed one steps
down), and group placement."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from actors.controller import cluster as cl
from actors.controller import messages as M
from actors.controller import state as S
from actors.controller import topics as tp
from actors.controller.actor import ControllerActor
from actors.messages import Configure, Configured, Failure
from events.controller import BrokerEndpoint, BrokerFenced, BrokerRegistered, BrokerUnfenced, ControllerElected, PartitionChanged
from wire.cluster_view import NO_LEADER, coordinator_node

T = 30


def _ep(n: int) -> tuple[BrokerEndpoint, ...]:
    return (BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9090 + n, "PLAINTEXT"),)


def _run(state: S.ControllerState, cmd, now_ms: int = 0):
    """Decide ``cmd`` and fold its events, counting stream versions as the actor does."""
    d = S.decide(state, cmd, now_ms)
    if isinstance(d, S.Decision):
        for e in d.events:
            S.apply(state, e)
            state.version += 1
    return d


def _create(state: S.ControllerState, name: str, partitions: int, rf: int, configs=()) -> None:
    d = _run(state, tp.CreateTopics((tp.CreatableTopic(name, partitions, rf, configs=configs),), topic_ids=((name, tp.new_topic_id()),)))
    assert [r.error for r in d.reply] == ["NONE"]


def _cluster_of(n: int) -> S.ControllerState:
    state = S.ControllerState(brokers=())
    assert isinstance(_run(state, cl.ClaimController(1, 0)), S.Decision)
    for b in range(1, n + 1):
        d = _run(state, cl.RegisterBroker(b, f"inc-{b}", "c", _ep(b), None, False))
        assert d.reply == (None, state.version)  # the broker epoch is the registration's stream version
        _run(state, cl.BrokerHeartbeat(b, d.reply[1], False))
    return state


def test_registration_starts_fenced_and_a_heartbeat_unfences():
    state = S.ControllerState(brokers=())
    d = _run(state, cl.RegisterBroker(1, "a", "c", _ep(1), None, False))
    assert [type(e) for e in d.events] == [BrokerRegistered]
    assert state.cluster.brokers[1].fenced and state.topics.brokers == ()
    hb = _run(state, cl.BrokerHeartbeat(1, d.reply[1], False))
    assert [type(e) for e in hb.events] == [BrokerUnfenced] and hb.reply == (None, False)
    assert state.topics.brokers == (1,)
    assert _run(state, cl.RegisterBroker(1, "a", "c", _ep(1), None, True)).events == []  # a retry: same epoch back


def test_stale_epochs_unknown_brokers_and_duplicate_registrations_are_refused():
    state = _cluster_of(2)
    epoch = state.cluster.brokers[2].broker_epoch
    assert S.decide(state, cl.BrokerHeartbeat(2, epoch - 1, False), 0).kafka_error == "STALE_BROKER_EPOCH"
    assert S.decide(state, cl.BrokerHeartbeat(9, 1, False), 0).kafka_error == "BROKER_ID_NOT_REGISTERED"
    dup = S.decide(state, cl.RegisterBroker(2, "other", "c", _ep(2), None, True), 0)
    assert dup.kafka_error == "DUPLICATE_BROKER_REGISTRATION"


def test_a_new_incarnation_after_the_session_moves_the_old_ones_partitions_first():
    state = _cluster_of(3)
    _create(state, "t", 3, 3)
    led_by_2 = [p.partition for p in state.topics.topics["t"].partitions if p.leader == 2]
    assert led_by_2
    d = _run(state, cl.RegisterBroker(2, "restarted", "c", _ep(2), None, False))
    assert isinstance(d.events[0], BrokerFenced) and d.events[0].reason == "reregistered"
    assert isinstance(d.events[-1], BrokerRegistered) and d.reply[1] == state.version
    for p in state.topics.topics["t"].partitions:
        assert p.leader != 2 and 2 not in p.isr
    assert state.cluster.brokers[2].fenced


def test_fencing_moves_leaders_in_replica_order_and_unfencing_elects_leaderless_partitions():
    state = _cluster_of(3)
    _create(state, "t", 1, 3)
    p = state.topics.topics["t"].partitions[0]
    first, epoch = p.leader, p.leader_epoch
    d = _run(state, cl.FenceBrokers((first,)))
    assert [type(e) for e in d.events] == [BrokerFenced, PartitionChanged]
    p = state.topics.topics["t"].partitions[0]
    live_in_order = [r for r in p.replicas if r != first]
    assert p.leader == live_in_order[0] and p.leader_epoch == epoch + 1 and first not in p.isr
    # fence the other two: the last ISR member stays in the ISR with no leader (KRaft)
    _run(state, cl.FenceBrokers(tuple(live_in_order)))
    p = state.topics.topics["t"].partitions[0]
    assert p.leader == NO_LEADER and p.isr == (live_in_order[-1],)
    # the returning ISR member is elected by its heartbeat; a returning non-member is not
    back = live_in_order[-1]
    out = _run(state, cl.BrokerHeartbeat(first, state.cluster.brokers[first].broker_epoch, False))
    assert state.topics.topics["t"].partitions[0].leader == NO_LEADER and not any(isinstance(e, PartitionChanged) for e in out.events)
    _run(state, cl.BrokerHeartbeat(back, state.cluster.brokers[back].broker_epoch, False))
    assert state.topics.topics["t"].partitions[0].leader == back


def test_unclean_election_only_when_the_topic_enables_it():
    state = _cluster_of(2)
    _create(state, "u", 1, 2, (("unclean.leader.election.enable", "true"),))
    p = state.topics.topics["u"].partitions[0]
    other = next(r for r in p.replicas if r != p.leader)
    _run(state, cl.FenceBrokers((other,)))  # leaves the ISR
    _run(state, cl.FenceBrokers((state.topics.topics["u"].partitions[0].leader,)))  # the last ISR member
    assert state.topics.topics["u"].partitions[0].leader == NO_LEADER
    _run(state, cl.BrokerHeartbeat(other, state.cluster.brokers[other].broker_epoch, False))
    p = state.topics.topics["u"].partitions[0]
    assert p.leader == other and p.isr == (other,)


def test_a_claim_over_a_stale_epoch_is_refused_and_a_winning_claim_fences_the_unreachable():
    state = _cluster_of(3)
    assert state.cluster.controller_id == 1 and state.cluster.controller_epoch == 1
    assert S.decide(state, cl.ClaimController(2, 0), 0).kafka_error == "NOT_CONTROLLER"
    d = _run(state, cl.ClaimController(2, 1, (1,)))
    assert isinstance(d.events[0], ControllerElected) and d.events[0].controller_epoch == 2
    assert state.cluster.controller_id == 2 and state.cluster.brokers[1].fenced


def test_the_state_round_trips_through_a_snapshot():
    state = _cluster_of(3)
    _run(state, cl.FenceBrokers((3,)))
    copy = S.ControllerState(brokers=())
    copy.load_dict(state.to_dict(), state.version)
    assert copy.to_dict() == state.to_dict() and copy.topics.brokers == (1, 2)


def test_heartbeat_sessions_expire():
    hb = cl.HeartbeatTracker()
    hb.reset((1, 2), 0)
    hb.touch(2, 5_000)
    assert hb.expired((1, 2), 9_000, 9_000) == [1]
    assert hb.alive(2, 9_000, 9_000) and not hb.alive(1, 9_000, 9_000)
    assert hb.expired((3,), 9_000, 9_000) == []  # never heard of: a session starts now


@given(st.text(min_size=1, max_size=12), st.sets(st.integers(1, 20), min_size=2, max_size=8))
def test_a_node_failure_moves_only_that_nodes_groups(group, live):
    owner = coordinator_node(group, live)
    assert owner in live and coordinator_node(group, sorted(live, reverse=True)) == owner
    gone = next(iter(live - {owner}))
    assert coordinator_node(group, live - {gone}) == owner
    assert coordinator_node(group, live - {owner}) in live - {owner}
    assert coordinator_node(group, ()) == NO_LEADER


# -- two controllers on one PostgreSQL log ------------------------------------------------------------


def _config(url: str, node: int) -> dict[str, str]:
    return {"event.log.url": url, "node.id": str(node), "log.retention.check.interval.ms": "0", "shoal.cluster.enable": "true",
            "shoal.cluster.metadata.poll.ms": "50", "listeners": f"PLAINTEXT://127.0.0.1:{9090 + node}"}


def test_two_controllers_one_active_the_other_follows_and_a_deposed_one_steps_down(asys, pg_url):
    c1, c2 = asys.createActor(ControllerActor), asys.createActor(ControllerActor)
    for n, c in ((1, c1), (2, c2)):
        assert isinstance(asys.ask(c, Configure(_config(pg_url, n), "controller"), T), Configured)
    assert asys.ask(c1, M.ClaimControllerRequest(0), T) == M.ClusterStatus(True, 1, 1, asys.ask(c1, M.ClusterStatusRequest(), T).version)
    lost = asys.ask(c2, M.ClaimControllerRequest(0), T)
    assert not lost.active and lost.error == "NOT_CONTROLLER" and lost.controller_id == 1
    refused = asys.ask(c2, M.CreateTopicsRequest([tp.CreatableTopic("t", 1, 1)]), T)
    assert isinstance(refused, Failure) and refused.error == "NOT_CONTROLLER"

    for b in (1, 2, 3):
        reg = asys.ask(c1, M.BrokerRegistrationRequest(b, uuid.uuid4().hex, "shoal-cluster", _ep(b)), T)
        assert reg.error is None
        assert asys.ask(c1, M.BrokerHeartbeatRequest(b, reg.broker_epoch), T) == M.BrokerHeartbeatReply(None, None, False)
    wrong = asys.ask(c1, M.BrokerRegistrationRequest(4, "x", "another-cluster", _ep(4)), T)
    assert wrong.error == "INCONSISTENT_CLUSTER_ID"
    created = asys.ask(c1, M.CreateTopicsRequest([tp.CreatableTopic("t", 3, 3)]), T)
    assert all(r.error == "NONE" for r in created.results)

    status = asys.ask(c2, M.ClusterStatusRequest(), T)  # the standby folds what the active one wrote
    assert status.version == asys.ask(c1, M.ClusterStatusRequest(), T).version
    dumped = asys.ask(c2, M.StateDumpRequest(), T).state
    assert "t" in dumped["topics"]["topics"] and [b["fenced"] for b in dumped["cluster"]["brokers"]] == [False, False, False]

    # c1 is alive and holds the controller lease: a peer that cannot reach it still cannot take over
    held = asys.ask(c2, M.ClaimControllerRequest(1, (1,)), T)
    assert not held.active and held.error == "NOT_CONTROLLER" and held.controller_id == 1
    # c1's database session dies (as when its process is killed): the lease goes with it
    import psycopg

    dbname = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(f"host=127.0.0.1 port=5432 dbname={dbname} user=postgres", autocommit=True) as conn:
        killed = conn.execute("SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
            " WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()").fetchall()
    assert killed == [(True,)]
    won = asys.ask(c2, M.ClaimControllerRequest(1, (1,)), T)
    assert won.active and won.controller_id == 2 and won.controller_epoch == 2
    late = asys.ask(c1, M.CreateTopicsRequest([tp.CreatableTopic("late", 1, 1)]), T)  # its append is fenced
    assert isinstance(late, Failure) and late.error == "NOT_CONTROLLER"
    status1 = asys.ask(c1, M.ClusterStatusRequest(), T)
    assert not status1.active and status1.controller_id == 2
    dumped = asys.ask(c1, M.StateDumpRequest(), T).state
    assert "late" not in dumped["topics"]["topics"]
    assert all(p[3] != 1 for p in dumped["topics"]["topics"]["t"]["partitions"])  # broker 1 leads nothing now
