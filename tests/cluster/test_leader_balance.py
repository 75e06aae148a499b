"""Automatic preferred leader election (actors/controller/balance.py): the imbalance ratio per
preferred broker and its threshold ``leader.imbalance.per.broker.percentage``, the preferred
replica only when live and in the ISR, ``auto.leader.rebalance.enable``, the check interval as
an argument; and the active ControllerActor's follow timer electing the preferred leader back
(PostgreSQL, as every cluster)."""

from __future__ import annotations

import time
import uuid
from dataclasses import replace

import pytest

from actors.controller import balance as bal
from actors.controller import cluster as cl
from actors.controller import messages as M
from actors.controller import state as S
from actors.controller import topics as tp
from actors.controller.actor import ControllerActor
from actors.messages import Configure, Configured
from config import ConfigError
from events.controller import PartitionChanged
from tests.cluster.test_controller_cluster import _cluster_of, _create, _ep, _run

T = 30
CFG = bal.LeaderBalanceConfig(True, 300_000, 10)


def _set(state: S.ControllerState, topic: str, idx: int, replicas, isr, leader) -> None:
    """Overwrite a partition's registration (what a failover left behind)."""
    parts = state.topics.topics[topic].partitions
    parts[idx] = replace(parts[idx], replicas=tuple(replicas), isr=tuple(isr), leader=leader)


def _state_with(n_preferred_by_1: int, moved: int, brokers: int = 3) -> S.ControllerState:
    """``n_preferred_by_1`` partitions of ``t`` with replicas (1, 2, 3), all in the ISR, the
    first ``moved`` of them led by broker 2 (a failover moved them), the others by broker 1."""
    state = _cluster_of(brokers)
    _create(state, "t", n_preferred_by_1, 3)
    for i in range(n_preferred_by_1):
        _set(state, "t", i, (1, 2, 3), (1, 2, 3), 2 if i < moved else 1)
    return state


# -- the pure decider -------------------------------------------------------------------------


def test_imbalance_ratio_per_preferred_broker():
    state = _state_with(10, 3)
    _create(state, "u", 2, 3)
    _set(state, "u", 0, (2, 1, 3), (1, 2, 3), 2)
    _set(state, "u", 1, (2, 1, 3), (1, 2, 3), -1)  # leaderless counts as not led by its preferred
    assert bal.leader_imbalance_ratios(state) == {1: 0.3, 2: 0.5}


def test_no_election_at_or_below_the_percentage():
    state = _state_with(10, 1)  # ratio 0.1 is not above 10 %
    assert bal.preferred_leader_candidates(state, (1, 2, 3), 10) == []
    cmd, nxt = bal.maybe_balance_partition_leaders(state, CFG, 1_000_000, 1_000_000)
    assert cmd is None and nxt == 1_000_000 + 300_000


def test_above_the_percentage_the_preferred_leaders_are_elected():
    state = _state_with(10, 2)  # ratio 0.2
    cmd, nxt = bal.maybe_balance_partition_leaders(state, CFG, 5_000, 5_000)
    assert cmd == S.ElectLeaders((("t", 0), ("t", 1)), "preferred", (1, 2, 3)) and nxt == 305_000
    before = state.topics.topics["t"].partitions[0].leader_epoch
    d = _run(state, cmd, 5_000)  # the same path as the ElectLeaders API's preferred election
    assert [type(e) for e in d.events] == [PartitionChanged, PartitionChanged]
    assert all(e.reason == "preferred" and e.leader == 1 for e in d.events)
    after = state.topics.topics["t"].partitions[0]
    assert after.leader == 1 and after.leader_epoch == before + 1
    assert bal.leader_imbalance_ratios(state) == {1: 0.0}
    assert bal.maybe_balance_partition_leaders(state, CFG, 305_000, 305_000)[0] is None


def test_percentage_zero_elects_any_imbalance_as_kraft_does():
    state = _state_with(10, 1)
    cmd, _ = bal.maybe_balance_partition_leaders(state, replace(CFG, leader_imbalance_per_broker_percentage=0), 0, 0)
    assert cmd is not None and cmd.partitions == (("t", 0),)


def test_a_preferred_replica_outside_the_isr_is_skipped():
    state = _state_with(10, 3)
    _set(state, "t", 0, (1, 2, 3), (2, 3), 2)  # broker 1 has not caught up on t-0
    assert bal.preferred_leader_candidates(state, (1, 2, 3), 10) == [("t", 1), ("t", 2)]


def test_a_fenced_preferred_replica_is_skipped():
    state = _state_with(10, 3)
    _run(state, cl.FenceBrokers((1,)))  # broker 1 is fenced: every partition moves to 2, 1 leaves the ISR
    assert bal.leader_imbalance_ratios(state) == {1: 1.0}
    assert bal.preferred_leader_candidates(state, state.cluster.live(), 10) == []
    # fenced but still in the ISR (the image lags): not live, not elected
    _set(state, "t", 0, (1, 2, 3), (1, 2, 3), 2)
    assert bal.maybe_balance_partition_leaders(state, CFG, 0, 0)[0] is None


def test_disabled_or_not_due_decides_nothing():
    state = _state_with(10, 5)
    off = replace(CFG, auto_leader_rebalance_enable=False)
    assert bal.maybe_balance_partition_leaders(state, off, 10**9, 0) == (None, 0)
    assert bal.maybe_balance_partition_leaders(state, CFG, 999, 1_000) == (None, 1_000)
    assert bal.maybe_balance_partition_leaders(state, CFG, 1_000, 1_000)[0] is not None


def test_at_most_max_elections_per_check_and_the_rest_at_once(monkeypatch):
    monkeypatch.setattr(bal, "MAX_ELECTIONS_PER_IMBALANCE", 2)
    state = _state_with(10, 4)
    cmd, nxt = bal.maybe_balance_partition_leaders(state, CFG, 7, 7)
    assert cmd.partitions == (("t", 0), ("t", 1)) and nxt == 7  # more are left: check again now
    _run(state, cmd)
    cmd, nxt = bal.maybe_balance_partition_leaders(state, CFG, 8, nxt)
    assert cmd.partitions == (("t", 2), ("t", 3)) and nxt == 8 + 300_000  # the ratio is re-evaluated (0.2)


def test_config_defaults_and_errors():
    from config import BROKER_DEFAULTS

    assert bal.LeaderBalanceConfig.from_config({}) == bal.LeaderBalanceConfig(True, 300_000, 10)
    assert bal.LeaderBalanceConfig.from_config(BROKER_DEFAULTS) == bal.LeaderBalanceConfig(True, 300_000, 10)
    assert bal.LeaderBalanceConfig.from_config(
        {"auto.leader.rebalance.enable": "FALSE", "leader.imbalance.check.interval.seconds": "1", "leader.imbalance.per.broker.percentage": "0"}
    ) == bal.LeaderBalanceConfig(False, 1000, 0)
    for bad in (
        {"auto.leader.rebalance.enable": "yes"},
        {"leader.imbalance.check.interval.seconds": "0"},
        {"leader.imbalance.check.interval.seconds": "5m"},
        {"leader.imbalance.per.broker.percentage": "-1"},
    ):
        with pytest.raises(ConfigError):
            bal.LeaderBalanceConfig.from_config(bad)


# -- the active controller's timer (ControllerActor on PostgreSQL) ----------------------------


def _config(url: str, **extra: str) -> dict[str, str]:
    cfg = {"event.log.url": url, "node.id": "1", "log.retention.check.interval.ms": "0", "shoal.cluster.enable": "true",
           "shoal.cluster.metadata.poll.ms": "50", "listeners": "PLAINTEXT://127.0.0.1:9091", "broker.session.timeout.ms": "600000",
           "leader.imbalance.check.interval.seconds": "1"}
    cfg.update(extra)
    return cfg


def _partition(asys, c, topic: str, idx: int) -> list:
    """``[partition, replicas, isr, leader, leader_epoch, ...]`` from the controller's state dump."""
    return asys.ask(c, M.StateDumpRequest(), T).state["topics"]["topics"][topic]["partitions"][idx]


def _move_leadership_off_and_back_into_the_isr(asys, c, epochs: dict[int, int]) -> tuple[int, int]:
    """Broker 1 shuts down (controlled: fenced, leaves the ISRs) and comes back; the new leader
    of t-0 puts it back into the ISR (AlterPartition). Returns t-0's leader and leader epoch."""
    assert asys.ask(c, M.BrokerHeartbeatRequest(1, epochs[1], True), T).is_fenced
    assert not asys.ask(c, M.BrokerHeartbeatRequest(1, epochs[1], False), T).is_fenced
    p = _partition(asys, c, "t", 0)
    leader, leader_epoch = p[3], p[4]
    assert leader != 1 and 1 not in p[2]
    res = asys.ask(c, M.AlterPartitionRequest("t", 0, leader, leader_epoch, p[5], list(p[2]) + [1]), T)
    assert res.results[0].error == "NONE"
    return leader, leader_epoch


def _setup(asys, pg_url: str, **extra: str):
    c = asys.createActor(ControllerActor)
    assert isinstance(asys.ask(c, Configure(_config(pg_url, **extra), "controller"), T), Configured)
    assert asys.ask(c, M.ClaimControllerRequest(0), T).active
    epochs = {}
    for b in (1, 2, 3):
        reg = asys.ask(c, M.BrokerRegistrationRequest(b, uuid.uuid4().hex, "shoal-cluster", _ep(b)), T)
        epochs[b] = reg.broker_epoch
        assert not asys.ask(c, M.BrokerHeartbeatRequest(b, reg.broker_epoch), T).is_fenced
    created = asys.ask(c, M.CreateTopicsRequest([tp.CreatableTopic("t", assignments=((0, (1, 2, 3)),))]), T)
    assert all(r.error == "NONE" for r in created.results)
    assert _partition(asys, c, "t", 0)[1:4] == [[1, 2, 3], [1, 2, 3], 1]
    return c, epochs


def _wait_leader(asys, c, want: int, timeout_s: float) -> list:
    deadline = time.monotonic() + timeout_s
    while True:
        p = _partition(asys, c, "t", 0)
        if p[3] == want or time.monotonic() > deadline:
            return p
        asys.listen(0.1)  # simpleSystemBase runs the actor's timers while the system is listened to


def test_the_active_controller_elects_the_preferred_leader_back_on_its_timer(asys, pg_url):
    c, epochs = _setup(asys, pg_url)
    _leader, leader_epoch = _move_leadership_off_and_back_into_the_isr(asys, c, epochs)
    p = _wait_leader(asys, c, 1, 10)
    assert p[3] == 1 and p[4] == leader_epoch + 1  # back on its preferred replica, one election


def test_no_automatic_election_when_disabled(asys, pg_url):
    c, epochs = _setup(asys, pg_url, **{"auto.leader.rebalance.enable": "false"})
    leader, leader_epoch = _move_leadership_off_and_back_into_the_isr(asys, c, epochs)
    p = _wait_leader(asys, c, 1, 2.5)  # more than two check intervals
    assert p[3] == leader and p[4] == leader_epoch
