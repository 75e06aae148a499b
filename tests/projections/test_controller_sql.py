"""The controller domain folded in SQL (DuckDB, Spark) equals the Python reference
(``actors.controller.state.evolve``) on every table: topics with their configs, partitions,
replicas, collections' since/upper/policy, dependencies and read holds.

The logs are written by the controller's own decider (``actors.controller.state.decide``) from
Hypothesis-generated commands, because the SQL fold relies on invariants the decider keeps (ids
never reused, holds never negative, dependency holds reserved, …; see the module docstring of
``projections/domains/controller.py``). ``test_since_follows_from_recorded_facts`` checks the
rule the SQL since rests on against ``evolve`` directly, event by event.
"""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.controller import frontiers as fr
from actors.controller import acls as ac
from actors.controller import cluster as cl
from actors.controller import scram as sc
from actors.controller import state as S
from actors.controller import topics as tp
from events import controller as ev
from events.base import NewEvent
from events.codec import decode_event, encode_event, new_event
from projections.duckdb_fold import fold_duckdb
from projections.model import domain_projections
from projections.python_fold import fold_python
from store.event_log import open_event_log
from tests.projections.test_differential import assert_duckdb_equals_python, assert_same, assert_spark_equals_python

# ----------------------------------------------------------------------------- generator

_NAMES = ["a", "b", "c"]
_HOLDERS = ["h1", "h2", "share:g1"]
_IDS = [f"x{i}" for i in range(6)]
_TOPIC_CONFIGS = [
    ("retention.ms", ["1000", "60000", "-1"]),
    ("retention.bytes", ["100", "1000", "-1"]),
    ("cleanup.policy", ["delete", "compact", "compact,delete"]),
    ("segment.bytes", ["1048576", "2097152"]),
    ("share.groups.hold.retention", ["true", "false"]),
    ("max.message.bytes", ["1000", "2000"]),
]
_POLICIES = [
    fr.LagWrites(0),
    fr.LagWrites(5, 2),
    fr.StepBack(),
    fr.ValidFrom(3),
    fr.NoPolicy(0),
    fr.Retention(1000, -1, True),
    fr.Retention(-1, 30, True),
    fr.Multiple([fr.LagWrites(3), fr.StepBack()]),
]

_small = st.integers(0, 50)
_upper_op = st.tuples(st.just("upper"), _small, st.integers(0, 40), st.sampled_from([False, False, False, True]), st.booleans(), st.booleans())
_hold_op = st.tuples(st.just("hold"), st.sampled_from(_HOLDERS), _small, st.integers(0, 30), st.integers(-2, 3))
# the cluster (KRaft's ClusterControlManager): brokers 1–4 register (a new incarnation or a retry;
# while the old session is alive or not), usually followed by the heartbeat that unfences them;
# registered brokers heartbeat with their epoch or a stale one, asking to be fenced or not; their
# sessions expire; nodes claim the controller over the current or a stale epoch, fencing
# unreachable brokers
_CLUSTER_OPS = [
    st.tuples(st.just("register"), st.integers(1, 4), st.sampled_from([True, True, False]), st.integers(0, 3),
              st.sampled_from([None, "r1", "r2"]), st.booleans(), st.sampled_from([True, True, True, False])),
    st.tuples(st.just("heartbeat"), _small, st.sampled_from([False, False, False, True]), st.sampled_from([False, False, True])),
    st.tuples(st.just("fence"), st.lists(_small, min_size=1, max_size=2)),
    st.tuples(st.just("claim"), st.integers(1, 4), st.sampled_from([False, False, False, True]), st.lists(_small, max_size=2)),
]
# partition reassignment (KIP-455): a target (some invalid: a broker twice, an unknown broker) or a
# cancel, and the ISR expansions by the leader that complete reassignments
_TARGETS = [(1, 2), (2, 3), (3, 1), (1,), (2, 3, 1), (3,), (3, 4), (2, 2), (9,)]
_REASSIGN_OPS = [
    st.tuples(st.just("reassign"), _small, _small, st.integers(0, len(_TARGETS) - 1), st.sampled_from([False, False, False, True])),
    st.tuples(st.just("expand"), _small, _small),
]
_op = st.one_of(
    _upper_op,
    *_REASSIGN_OPS,
    _hold_op,
    st.tuples(st.just("create_topic"), st.sampled_from(_NAMES), st.integers(1, 3),
              st.lists(st.tuples(st.integers(0, len(_TOPIC_CONFIGS) - 1), _small), max_size=3), st.booleans()),
    st.tuples(st.just("delete_topic"), _small),
    st.tuples(st.just("create_partitions"), _small, st.integers(1, 2)),
    st.tuples(st.just("alter_topic"), _small,
              st.lists(st.tuples(st.integers(0, len(_TOPIC_CONFIGS) - 1), st.sampled_from(["SET", "SET", "DELETE", "APPEND"]), _small),
                       min_size=1, max_size=3)),
    st.tuples(st.just("alter_broker"), st.sampled_from(["log.retention.ms", "log.retention.bytes"]), st.sampled_from(["5000", "-1", None])),
    st.tuples(st.just("partition"), _small, _small, st.sampled_from(["broker_failed", "leader", "elect"])),
    st.tuples(st.just("create_collection"), st.sampled_from(_IDS), st.lists(_small, max_size=2), _small, st.integers(0, len(_POLICIES) - 1)),
    st.tuples(st.just("prepare_export"), st.sampled_from(_IDS), _small, st.booleans()),
    st.tuples(st.just("upper"), _small, st.integers(0, 40), st.sampled_from([False, False, False, True]), st.booleans(), st.booleans()),
    st.tuples(st.just("policy"), _small, st.integers(0, len(_POLICIES) - 1)),
    st.tuples(st.just("retention"),),
    st.tuples(st.just("hold"), st.sampled_from(_HOLDERS), _small, st.integers(0, 30), st.integers(-2, 3)),
    st.tuples(st.just("acquire"), st.sampled_from(_HOLDERS), _small),
    st.tuples(st.just("downgrade"), st.sampled_from(_HOLDERS), _small, st.one_of(st.none(), st.integers(0, 60))),
    st.tuples(st.just("release"), st.sampled_from(_HOLDERS + ["export:x1", "collection:x0"])),
    st.tuples(st.just("drop"), _small),
    st.tuples(st.just("delete_records"), _small, st.integers(-1, 40)),
    st.tuples(st.just("producer_ids"), st.integers(1, 3)),
    # SCRAM credentials (KIP-554): upsertions/deletions of a few users, some refused by the decider
    st.tuples(st.just("scram"), st.lists(st.tuples(st.sampled_from(["upsert", "upsert", "delete"]), st.sampled_from(["u1", "u2", "u3"]),
                                                   st.sampled_from([1, 2, 2, 3]), st.sampled_from([4096, 8192, 100])), min_size=1, max_size=3)),
    st.tuples(st.just("scram_delete"), _small),  # an existing credential
    # ACLs: CreateAcls of a few bindings (some invalid, some present) or, two times in three when
    # ACLs exist, DeleteAcls by a MATCH filter on an existing ACL's resource (one kind of op, so the
    # other kinds keep their share of the examples)
    st.tuples(st.just("acl"), st.lists(st.tuples(st.sampled_from(["TOPIC", "GROUP", "ANY"]), st.sampled_from(["a", "ab", "*"]),
                                                 st.sampled_from(["LITERAL", "PREFIXED"]), st.sampled_from(["READ", "ALL"]),
                                                 st.sampled_from(["ALLOW", "DENY"])), min_size=1, max_size=3), _small),
    # the cluster (KRaft's ClusterControlManager): see _CLUSTER_OPS
    *_CLUSTER_OPS,
)

#: listeners a generated broker registers (its first ``n``), ``{b}``: the broker id
_LISTENERS = [("PLAINTEXT", "b{b}", 9092, "PLAINTEXT"), ("SASL_SSL", "b{b}.example", 9093, "SASL_SSL"), ("INTERNAL", "10.0.0.{b}", 9094, "PLAINTEXT")]


def _pick(seq, i):
    seq = sorted(seq)
    return seq[i % len(seq)] if seq else None


def _command(cs: S.ControllerState, op, used_ids: set[str], now_ms: int):
    """The decider command an abstract ``op`` stands for in state ``cs`` (``None``: nothing to do)."""
    kind = op[0]
    cols = cs.frontiers.collections
    if kind == "create_topic":
        _, name, n, cfgs, remote = op
        configs = {_TOPIC_CONFIGS[k][0]: _TOPIC_CONFIGS[k][1][v % len(_TOPIC_CONFIGS[k][1])] for k, v in cfgs}
        if remote:
            configs.update({"remote.storage.enable": "true", "local.retention.bytes": "-2"})
        tid = tp.new_topic_id(used_ids, rand=lambda: uuid.UUID(int=0x1000 + len(used_ids)))
        used_ids.add(tid)
        return tp.CreateTopics((tp.CreatableTopic(name, n, 2, configs=tuple(configs.items())),), False, ((name, tid),))
    if kind == "create_partitions":
        name = _pick(cs.topics.topics, op[1])
        if name is None:
            return None
        return tp.CreatePartitions((tp.CreatePartitionsTopic(name, len(cs.topics.topics[name].partitions) + op[2]),))
    if kind == "delete_topic":
        name = _pick(cs.topics.topics, op[1])
        return tp.DeleteTopics((name,)) if name else None
    if kind == "alter_topic":
        name = _pick(cs.topics.topics, op[1])
        if name is None:
            return None
        ops, seen = [], set()
        for k, what, v in op[2]:
            key, values = _TOPIC_CONFIGS[k]
            if key in seen or (what == "APPEND" and key != "cleanup.policy"):
                continue
            seen.add(key)
            ops.append((key, what, None if what == "DELETE" else values[v % len(values)]))
        return tp.IncrementalAlterConfigs((tp.AlterConfigResource("TOPIC", name, tuple(ops)),))
    if kind == "alter_broker":
        _, key, value = op
        return tp.IncrementalAlterConfigs((tp.AlterConfigResource("BROKER", "", ((key, "DELETE" if value is None else "SET", value),)),))
    if kind == "partition":
        _, t, p, what = op
        name = _pick(cs.topics.topics, t)
        if name is None:
            return None
        part = cs.topics.topics[name].partitions[p % len(cs.topics.topics[name].partitions)]
        if what == "broker_failed":
            return S.BrokerFailed(1 + p % 3)
        if what == "leader":
            return S.UpdatePartitionLeader(name, part.partition, part.replicas[-1], part.leader_epoch + 1)
        return S.ElectLeaders(((name, part.partition),), "preferred")
    if kind == "reassign":
        _, t, p, target, cancel = op
        ongoing = S.list_partition_reassignments(cs)
        if ongoing and p % 4 and (cancel or p % 4 == 1):  # a partition that is reassigning: cancel or replace
            o = ongoing[t % len(ongoing)]
            return S.AlterPartitionReassignments(((o.topic, o.partition, None if cancel else _TARGETS[target]),))
        name = _pick(cs.topics.topics, t)
        if name is None:
            return None
        idx = p % len(cs.topics.topics[name].partitions)
        return S.AlterPartitionReassignments(((name, idx, None if cancel else _TARGETS[target]),))
    if kind == "expand":  # the leader adds every live replica to the ISR (may complete a reassignment)
        ongoing = S.list_partition_reassignments(cs)
        if ongoing and op[2] % 4:  # mostly a partition that is reassigning
            o = ongoing[op[1] % len(ongoing)]
            name, p = o.topic, o.partition
        else:
            name, p = _pick(cs.topics.topics, op[1]), op[2]
        if name is None:
            return None
        part = cs.topics.topics[name].partitions[p % len(cs.topics.topics[name].partitions)]
        if part.leader == -1:
            return None
        isr = tuple(dict.fromkeys((part.leader,) + tuple(r for r in part.replicas if r in cs.topics.brokers)))
        return S.AlterPartition(name, part.partition, part.leader, part.leader_epoch, part.partition_epoch, isr)
    if kind == "create_collection":
        _, cid, deps, since, pol = op
        live = sorted(cols)
        dep_ids = tuple(dict.fromkeys(live[d % len(live)] for d in deps)) if live else ()
        prepared = cid in cs.frontiers.exports
        if prepared:
            dep_ids = (cs.frontiers.exports[cid],)
        return fr.CreateCollections((fr.NewCollection(cid, since % 7, since % 7 + 3, _POLICIES[pol], dep_ids, prepared=prepared),))
    if kind == "prepare_export":
        _, export_id, src, cancel = op
        if cancel and export_id in cs.frontiers.exports:
            return fr.ReleaseHolder(fr.EXPORT_HOLDER_PREFIX + export_id)
        from_id = _pick(cols, src)
        return fr.PrepareExport(export_id, from_id) if from_id else None
    if kind == "upper":
        # one collection, or every live one at once (a dependency chain moving in one event)
        _, c, step, seal, segments, every = op
        targets = sorted(cols) if every else [_pick(cols, c)]
        updates = []
        for cid in targets:
            if cid is None:
                return None
            cur = cols[cid].upper
            upper = None if seal or cur is None else cur + step
            segs = None
            if segments and upper is not None:
                segs = tuple(ev.SegmentInfo(b, min(b + 10, upper), 10, now_ms - 5000 + b) for b in range(0, upper, 10))
            updates.append((cid, upper, segs))
        return fr.UpdateWriteFrontiers(tuple(updates))
    if kind == "policy":
        cid = _pick(cols, op[1])
        return fr.SetReadPolicies(((cid, _POLICIES[op[2]]),)) if cid else None
    if kind == "retention":
        return fr.EnforceRetention()
    if kind == "hold":
        _, holder, c, off, delta = op
        cid = _pick(cols, c)
        if cid is None or delta == 0:
            return None
        col = cols[cid]
        if delta < 0:
            held = col.holds.get(holder)
            if not held:
                return None
            o = _pick(held, off)
            return fr.ChangeReadHolds(holder, ((cid, o, -min(-delta, held[o])),))
        if col.since is None:
            return None
        return fr.ChangeReadHolds(holder, ((cid, col.since + off % 5, delta),))
    if kind == "acquire":
        cid = _pick(cols, op[2])
        return fr.AcquireReadHolds(op[1], (cid,)) if cid else None
    if kind == "downgrade":
        _, holder, c, frontier = op
        cid = _pick(cols, c)
        return fr.DowngradeReadHold(holder, cid, frontier) if cid else None
    if kind == "release":
        return fr.ReleaseHolder(op[1])
    if kind == "drop":
        cid = _pick(cols, op[1])
        return fr.DropCollections((cid,)) if cid else None
    if kind == "delete_records":
        cid = _pick(cols, op[1])
        return fr.DeleteRecords(cid, op[2]) if cid else None
    if kind == "producer_ids":
        return S.AllocateProducerIds(op[1])
    if kind == "scram":
        dels = tuple(sc.ScramDeletion(user, mech) for what, user, mech, _ in op[1] if what == "delete")
        ups = tuple(sc.ScramUpsertion(user, mech, it, b"salt-" + user.encode(), b"salted-" + user.encode()) for what, user, mech, it in op[1] if what == "upsert")
        return sc.AlterUserScramCredentials(dels, ups)
    if kind == "scram_delete":
        key = _pick(cs.scram.credentials, op[1])
        return sc.AlterUserScramCredentials((sc.ScramDeletion(key[0], sc.MECHANISM_TYPES[key[1]]),)) if key else None
    if kind == "acl":
        present = sorted(cs.acls)
        if present and op[2] % 3:
            b = present[op[2] % len(present)]
            return ac.DeleteAcls((ac.AclBindingFilter(b.resource_type, b.resource_name, "MATCH"),))
        return ac.CreateAcls(tuple(ac.AclBinding(rt, name, pt, "User:u", "*", opn, perm) for rt, name, pt, opn, perm in op[1]))
    if kind == "register":
        _, b, new_incarnation, n, rack, session_alive, _unfence = op
        old = cs.cluster.brokers.get(b)
        incarnation = old.incarnation_id if old is not None and not new_incarnation else f"inc-{b}-v{cs.version}"
        endpoints = tuple(ev.BrokerEndpoint(name, host.format(b=b), port, proto) for name, host, port, proto in _LISTENERS[:n])
        return cl.RegisterBroker(b, incarnation, "shoal-test", endpoints, rack, session_alive)
    if kind == "heartbeat":  # from a registered broker (or broker 1 when there is none)
        _, i, stale, want_fence = op
        b = _pick(cs.cluster.brokers, i) or 1
        reg = cs.cluster.brokers.get(b)
        epoch = (reg.broker_epoch if reg else 1) - (1 if stale else 0)
        return cl.BrokerHeartbeat(b, epoch, want_fence)
    if kind == "fence":  # session expiry of registered brokers
        brokers = tuple(_pick(cs.cluster.brokers, i) for i in op[1])
        return cl.FenceBrokers(brokers) if cs.cluster.brokers else None
    if kind == "claim":
        _, node, stale, fence = op
        unreachable = tuple(_pick(cs.cluster.brokers, i) for i in fence) if cs.cluster.brokers else ()
        return cl.ClaimController(node, cs.cluster.controller_epoch - (1 if stale else 0), unreachable)
    raise AssertionError(kind)


def _commands(cs: S.ControllerState, op, used_ids: set[str], now_ms: int):
    """The decider commands an abstract ``op`` stands for, one after the other (a generator, so
    each is built from the state its predecessors left): a registration may be followed by the
    heartbeat that unfences the broker (with the epoch it was given)."""
    cmd = _command(cs, op, used_ids, now_ms)
    if cmd is None:
        return
    yield cmd
    if op[0] == "register" and op[-1]:
        reg = cs.cluster.brokers.get(op[1])
        if reg is not None and reg.incarnation_id == cmd.incarnation_id:
            yield cl.BrokerHeartbeat(op[1], reg.broker_epoch, False)


def run_commands(ops, on_event=None) -> list:
    """Decide ``ops`` one after the other on a fresh controller (brokers 1–3, tiered storage on),
    applying each accepted decision's events (and counting the stream version, which a
    registration's broker epoch is); returns ``[("controller", event), …]``.
    ``on_event(state, event)`` is called after each event is applied."""
    cs = S.ControllerState(static_config={"remote.log.storage.system.enable": "true"}, brokers=(1, 2, 3))
    used_ids: set[str] = set()
    out = []
    now_ms = 1_000_000
    for op in ops:
        now_ms += 1000
        for cmd in _commands(cs, op, used_ids, now_ms):
            d = S.decide(cs, cmd, now_ms)
            if isinstance(d, fr.Rejected):
                continue
            for e in d.events:
                S.apply(cs, e)
                cs.version += 1
                out.append(("controller", e))
                if on_event is not None:
                    on_event(cs, e)
    return out


_seed_op = st.one_of(
    st.tuples(st.just("create_topic"), st.sampled_from(_NAMES), st.integers(1, 3),
              st.lists(st.tuples(st.integers(0, len(_TOPIC_CONFIGS) - 1), _small), max_size=3), st.booleans()),
    st.tuples(st.just("create_collection"), st.sampled_from(_IDS), st.lists(_small, max_size=2), _small, st.integers(0, len(_POLICIES) - 1)),
)
# a few creations first, so that most later commands find something to act on
controller_ops = st.tuples(st.lists(_seed_op, min_size=2, max_size=6), st.lists(_op, min_size=4, max_size=40)).map(lambda t: t[0] + t[1])
controller_logs = controller_ops.map(run_commands)

# cluster-heavy logs: topics (so that fencing and unfencing move leaders), then mostly cluster
# commands with some partition changes in between
_cluster_heavy_op = st.one_of(
    *_CLUSTER_OPS,
    st.tuples(st.just("partition"), _small, _small, st.sampled_from(["broker_failed", "leader", "elect"])),
    st.tuples(st.just("create_topic"), st.sampled_from(_NAMES), st.integers(1, 3), st.just([]), st.just(False)),
)
cluster_ops = st.tuples(st.lists(_seed_op, min_size=1, max_size=3), st.lists(_cluster_heavy_op, min_size=4, max_size=30)).map(
    lambda t: t[0] + t[1]
)
cluster_logs = cluster_ops.map(run_commands)

# reassignment-heavy logs (KIP-455): topics, then reassignments, cancels, ISR expansions that
# complete them, and leader changes and broker failures in between
_reassign_heavy_op = st.one_of(
    *_REASSIGN_OPS,
    st.tuples(st.just("partition"), _small, _small, st.sampled_from(["broker_failed", "leader", "elect"])),
    st.tuples(st.just("create_topic"), st.sampled_from(_NAMES), st.integers(1, 3), st.just([]), st.just(False)),
)
reassign_ops = st.tuples(st.lists(_seed_op, min_size=1, max_size=3), st.lists(_reassign_heavy_op, min_size=4, max_size=30)).map(
    lambda t: t[0] + t[1]
)
reassign_logs = reassign_ops.map(run_commands)

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _kinds(entries) -> set[str]:
    return {type(e).__name__ for _, e in entries}


# ----------------------------------------------------------------------------- the generator covers the domain


def test_generated_logs_cover_every_controller_event():
    """Sanity check of the generator itself: across a thousand examples every controller event
    type appears, as do dependencies, export tokens, dependency holds and dropped collections
    (so the differential tests below exercise the SQL for all of them)."""
    seen: set[str] = set()
    dep_holds = exports = drops_gone = 0

    def watch(cs, e):
        nonlocal dep_holds, exports, drops_gone
        for c in cs.frontiers.collections.values():
            dep_holds += any(h.startswith(fr.DEPENDENCY_HOLDER_PREFIX) for h in c.holds)
            exports += any(h.startswith(fr.EXPORT_HOLDER_PREFIX) for h in c.holds)
        drops_gone += bool(cs.frontiers.dropped)

    @settings(max_examples=1000, deadline=None, database=None)
    @given(ops=controller_ops)
    def collect(ops):
        seen.update(_kinds(run_commands(ops, watch)))

    collect()
    expected = {
        c.__name__ for c in vars(ev).values() if isinstance(c, type) and getattr(c, "event_type", "").startswith("controller.")
    }
    assert expected - seen == set()
    assert dep_holds and exports and drops_gone


def test_generated_cluster_logs_cover_the_cluster_rules():
    """Sanity check of the cluster-heavy generator: across a few hundred examples brokers are
    fenced for every reason, unfenced again, registered again with a new incarnation, fenced
    brokers lose their leaderships, unfenced ones are elected, and controllers are elected more
    than once (so the SQL fold of ``controller_brokers``/``controller_cluster`` meets them all)."""
    reasons: set[str] = set()
    changes: set[str] = set()
    seen = {"refenced": 0, "reincarnated": 0, "reelected": 0}

    @settings(max_examples=300, deadline=None, database=None)
    @given(ops=cluster_ops)
    def collect(ops):
        fenced_once: set[tuple[int, int]] = set()
        incarnations: dict[int, str] = {}
        for _, e in run_commands(ops):
            if isinstance(e, ev.BrokerFenced):
                reasons.add(e.reason)
                seen["refenced"] += (e.broker_id, e.broker_epoch) in fenced_once
                fenced_once.add((e.broker_id, e.broker_epoch))
            elif isinstance(e, ev.BrokerRegistered):
                seen["reincarnated"] += incarnations.get(e.broker_id, e.incarnation_id) != e.incarnation_id
                incarnations[e.broker_id] = e.incarnation_id
            elif isinstance(e, ev.PartitionChanged):
                changes.add(e.reason)
            elif isinstance(e, ev.ControllerElected):
                seen["reelected"] += e.controller_epoch > 1

    collect()
    assert reasons == {"session_expired", "controlled_shutdown", "controller_unreachable", "reregistered"}
    assert {"broker_failed", "election"} <= changes
    assert all(seen.values()), seen


def test_generated_logs_cover_reassignments():
    """Sanity check of the generators for partition reassignment: reassignments start, complete
    through an ISR change (moving leadership away from a removed leader at times), get cancelled
    and replaced, and some partitions are still reassigning at the end of a log (so the SQL fold
    meets non-empty adding/removing lists)."""
    reasons: set[str] = set()
    seen = {"ongoing_at_end": 0, "leader_moved": 0, "replaced": 0}

    @settings(max_examples=300, deadline=None, database=None)
    @given(ops=reassign_ops)
    def collect(ops):
        last = None
        before: dict[tuple[str, int], tuple[int, bool]] = {}  # partition → (leader, reassigning)

        def watch(cs, e):
            nonlocal last
            last = cs
            if isinstance(e, ev.PartitionChanged):
                reasons.add(e.reason)
                leader, reassigning = before.get((e.topic_id, e.partition), (e.leader, False))
                seen["leader_moved"] += e.reason == "reassign_complete" and e.leader != leader
                seen["replaced"] += e.reason == "reassign" and reassigning and bool(e.adding_replicas or e.removing_replicas)
                if e.replicas is not None:
                    reassigning = bool(e.adding_replicas or e.removing_replicas)
                before[(e.topic_id, e.partition)] = (e.leader, reassigning)

        run_commands(ops, watch)
        if last is not None:
            seen["ongoing_at_end"] += bool(S.list_partition_reassignments(last))

    collect()
    assert {"reassign", "reassign_complete", "reassign_cancel"} <= reasons
    assert all(seen.values()), seen


# ----------------------------------------------------------------------------- the rule the SQL since rests on


def _own(c: fr.Collection):
    offs = [off for h, m in c.holds.items() if not h.startswith(fr.DEPENDENCY_HOLDER_PREFIX) for off, n in m.items() if n > 0]
    if c.implied is not None:
        offs.append(c.implied)
    return min(offs) if offs else None


@SETTINGS
@given(ops=controller_ops)
def test_since_follows_from_recorded_facts(ops):
    """After every event, each live collection's since (computed incrementally by ``evolve``) is
    the least "own" capability (implied capability and non-dependency holds) of itself and every
    collection recording it among its ``transitive_dependencies``; the recorded closure equals the
    closure of the dependency graph; each dependency hold sits at its dependent's since. This is
    exactly what ``controller_frontiers``/``controller_holds`` compute in SQL."""
    recorded: dict[str, tuple[str, ...]] = {}

    def check(cs, e):
        cols = cs.frontiers.collections
        if isinstance(e, ev.CollectionsCreated):
            for spec in e.collections:
                recorded[spec.collection_id] = spec.transitive_dependencies
                closure, stack = set(), list(spec.dependencies)
                while stack:
                    d = stack.pop()
                    if d not in closure:
                        closure.add(d)
                        stack.extend(cols[d].dependencies)
                assert set(spec.transitive_dependencies) == closure
                assert list(spec.transitive_dependencies) == sorted(closure)
        for cid, c in cols.items():
            contributors = [_own(c)] + [_own(cols[z]) for z, anc in recorded.items() if cid in anc and z in cols]
            assert c.since == min((o for o in contributors if o is not None), default=None), cid
            assert c.since is not None
            for dep in c.dependencies:
                assert cols[dep].holds[fr.DEPENDENCY_HOLDER_PREFIX + cid] == {c.since: c.dependencies.count(dep)}
        for z, anc in recorded.items():
            if z not in cols:
                assert _own_gone(cs, z)

    run_commands(ops, check)


def _own_gone(cs: S.ControllerState, cid: str) -> bool:
    """A gone collection is in ``dropped`` and no live collection records it as a dependency."""
    return cid in cs.frontiers.dropped and all(cid not in c.dependencies for c in cs.frontiers.collections.values())


# ----------------------------------------------------------------------------- Python vs DuckDB / Spark


@SETTINGS
@given(entries=controller_logs)
def test_controller_all_tables_duckdb_equals_python(tmp_path, entries):
    assert_duckdb_equals_python(tmp_path, entries, domain_projections(["controller"]))


@SETTINGS
@given(entries=cluster_logs)
def test_cluster_tables_duckdb_equals_python(tmp_path, entries):
    """Cluster-heavy logs (registrations, heartbeats, fencing, controller claims, with partitions
    whose leaders move): every controller table, DuckDB against Python."""
    assert_duckdb_equals_python(tmp_path, entries, domain_projections(["controller"]))


@SETTINGS
@given(entries=reassign_logs)
def test_reassignment_tables_duckdb_equals_python(tmp_path, entries):
    """Reassignment-heavy logs (interim replica lists, adding/removing, completions, cancels):
    every controller table, DuckDB against Python."""
    assert_duckdb_equals_python(tmp_path, entries, domain_projections(["controller"]))


def test_controller_every_table_is_folded_in_sql():
    (p,) = domain_projections(["controller"])
    assert {t.name for t in p.sql_tables} == {t.name for t in p.tables}


def _decide_all(cmds) -> list:
    """Decide raw commands in order (each must be accepted) and return the log entries."""
    cs = S.ControllerState(static_config={"remote.log.storage.system.enable": "true"}, brokers=(1, 2, 3))
    out = []
    for now, cmd in enumerate(cmds, start=1):
        d = S.decide(cs, cmd, 1000 * now)
        assert isinstance(d, S.Decision), (cmd, d)
        for e in d.events:
            S.apply(cs, e)
            cs.version += 1
            out.append(("controller", e))
    return out


def test_controller_sql_handles_an_example_with_every_feature(tmp_path):
    """A hand-written scenario (so a failure here is easy to read): topic configs set, appended
    and deleted, a dependency chain u ← v ← w with holds, a prepared export, a drop that waits for
    a hold, and a deleted topic. The tables are checked against literal values, then DuckDB
    against Python."""
    tid_a, tid_b = "00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"
    lag0 = fr.LagWrites(0)
    entries = _decide_all([
        tp.CreateTopics((tp.CreatableTopic("a", 1, 1, configs=(("retention.ms", "1000"), ("cleanup.policy", "delete"))),), False, (("a", tid_a),)),
        tp.IncrementalAlterConfigs((tp.AlterConfigResource("TOPIC", "a", (
            ("cleanup.policy", "APPEND", "compact"), ("retention.bytes", "SET", "100"), ("retention.ms", "DELETE", None))),)),
        tp.CreateTopics((tp.CreatableTopic("b", 2, 1),), False, (("b", tid_b),)),
        tp.DeleteTopics(("b",)),
        fr.CreateCollections((fr.NewCollection("u", 0, 10, lag0),)),
        fr.CreateCollections((fr.NewCollection("v", 2, 10, lag0, ("u",)),)),
        fr.CreateCollections((fr.NewCollection("w", 3, 10, lag0, ("v",)),)),
        fr.ChangeReadHolds("h", (("w", 5, 2),)),
        fr.UpdateWriteFrontiers((("u", 20, None), ("v", 20, None), ("w", 20, None))),  # implied 20 everywhere
        fr.PrepareExport("s1", "u"),
        fr.ChangeReadHolds("h", (("u", 20, 1),)),
        fr.DropCollections(("u",)),  # held by h and the chain: stays
    ])
    rows = _fold_both(tmp_path, entries)
    assert [(r["topic"], r["partitions"], r["configs"]) for r in rows["controller_topics"]] == [
        ("a", 1, "cleanup.policy=delete,compact;retention.bytes=100")]
    fronts = {r["collection_id"]: (r["since"], r["upper"]) for r in rows["controller_frontiers"]}
    # implied capabilities all at 20; w: h's hold at 5; v and u: held at 5 through the chain
    assert fronts == {f"{tid_a}:0": (0, 0), "u": (5, 20), "v": (5, 20), "w": (5, 20)}
    policies = {r["collection_id"]: r["policy"] for r in rows["controller_frontiers"]}
    assert policies["u"] == '{"kind": "valid_from", "since": null}'
    assert policies["w"] == '{"kind": "lag_writes", "lag": 0, "max_granularity": 1}'
    assert [(r["collection_id"], r["idx"], r["dependency"]) for r in rows["controller_dependencies"]] == [("v", 0, "u"), ("w", 0, "v")]
    holds = {(r["collection_id"], r["holder"], r["offset"], r["count"]) for r in rows["controller_holds"]}
    assert holds == {("w", "h", 5, 2), ("v", "collection:w", 5, 1), ("u", "collection:v", 5, 1),
                     ("u", "export:s1", 20, 1), ("u", "h", 20, 1)}


def test_controller_sql_folds_scram_credentials(tmp_path):
    """SCRAM credentials (KIP-554): replaced, removed and created again; the table shows the
    live ones with their iterations and nothing secret. DuckDB against literals and Python."""

    def up(user: str, mech: int, iterations: int) -> sc.ScramUpsertion:
        return sc.ScramUpsertion(user, mech, iterations, b"salt-" + user.encode(), b"salted-" + user.encode())

    entries = _decide_all([
        sc.AlterUserScramCredentials((), (up("alice", 1, 4096), up("bob", 2, 8192))),
        sc.AlterUserScramCredentials((), (up("alice", 2, 5000),)),
        sc.AlterUserScramCredentials((sc.ScramDeletion("bob", 2),), (up("carol", 1, 4096),)),
        sc.AlterUserScramCredentials((), (up("bob", 2, 10000),)),  # created again after its removal
        sc.AlterUserScramCredentials((), (up("alice", 1, 16384),)),  # replaced
        sc.AlterUserScramCredentials((sc.ScramDeletion("carol", 1),), ()),
    ])
    rows = _fold_both(tmp_path, entries)
    assert [(r["user"], r["mechanism"], r["iterations"]) for r in rows["controller_scram_credentials"]] == [
        ("alice", "SCRAM-SHA-256", 16384),
        ("alice", "SCRAM-SHA-512", 5000),
        ("bob", "SCRAM-SHA-512", 10000),
    ]
    assert set(rows["controller_scram_credentials"][0]) == {"stream_id", "user", "mechanism", "iterations"}


def _ep(name: str, host: str, port: int, proto: str = "PLAINTEXT") -> ev.BrokerEndpoint:
    return ev.BrokerEndpoint(name, host, port, proto)


def test_controller_sql_folds_the_cluster(tmp_path):
    """A hand-written cluster (so a failure here is easy to read): brokers 1 and 2 register and
    heartbeat, broker 1 shuts down (fenced) and registers again as a new incarnation after its
    session expired, node 2 becomes the controller, then node 3 over epoch 1. The new registration
    of broker 1 starts fenced whatever its old one was; broker 2 is unfenced. DuckDB against
    literals and Python."""
    sasl = _ep("SASL_SSL", "b2.example", 9093, "SASL_SSL")
    entries = _decide_all([
        cl.RegisterBroker(1, "i1", "c", (_ep("PLAINTEXT", "b1", 9092),), None, False),  # epoch 1
        cl.RegisterBroker(2, "i2", "c", (_ep("PLAINTEXT", "b2", 9092), sasl), "r2", False),  # epoch 2
        cl.BrokerHeartbeat(1, 1, False),
        cl.BrokerHeartbeat(2, 2, False),
        cl.ClaimController(2, 0),
        cl.BrokerHeartbeat(1, 1, True),  # controlled shutdown
        cl.RegisterBroker(1, "i1b", "c", (), "r1", False),
        cl.ClaimController(3, 1),
    ])
    kinds = [type(e).__name__ for _, e in entries]
    assert kinds == ["BrokerRegistered", "BrokerRegistered", "BrokerUnfenced", "BrokerUnfenced", "ControllerElected",
                     "BrokerFenced", "BrokerRegistered", "ControllerElected"]
    rows = _fold_both(tmp_path, entries)
    assert [(r["broker_id"], r["incarnation_id"], r["broker_epoch"], r["endpoints"], r["rack"], r["fenced"])
            for r in rows["controller_brokers"]] == [
        (1, "i1b", 7, "", "r1", True),
        (2, "i2", 2, "PLAINTEXT://b2:9092/PLAINTEXT,SASL_SSL://b2.example:9093/SASL_SSL", "r2", False),
    ]
    assert [(r["controller_id"], r["controller_epoch"]) for r in rows["controller_cluster"]] == [(3, 2)]


def test_controller_sql_ignores_stale_fencing_and_lists_many_listeners(tmp_path):
    """Events written straight to the log (not by the decider): a Fenced/Unfenced of an older
    registration's epoch is ignored (``ClusterState.evolve``), an Unfenced before the registration
    it names does not count, and a broker with more listeners than the SQL spells out shows the
    first ones and ``<more listeners>`` in every engine."""
    from projections.domains.controller import MAX_LISTED_ENDPOINTS, MORE_ENDPOINTS

    many = tuple(_ep(f"L{i}", "h", 9000 + i) for i in range(MAX_LISTED_ENDPOINTS + 2))
    entries = [("controller", e) for e in [
        ev.BrokerRegistered(1, "a", 1, (_ep("PLAINTEXT", "h1", 1),)),
        ev.BrokerUnfenced(1, 1),
        ev.BrokerUnfenced(2, 4),  # before broker 2's registration of epoch 4
        ev.BrokerRegistered(2, "b", 4, many),
        ev.BrokerRegistered(1, "a2", 5, (_ep("PLAINTEXT", "h1", 2),)),
        ev.BrokerUnfenced(1, 5),
        ev.BrokerFenced(1, 1, "session_expired"),  # stale: registration 1 was replaced
        ev.BrokerRegistered(3, "c", 8, (), None),
        ev.BrokerUnfenced(3, 8),
        ev.BrokerFenced(3, 8, "session_expired"),
    ]]
    rows = _fold_both(tmp_path, entries)
    brokers = {r["broker_id"]: r for r in rows["controller_brokers"]}
    assert {b: (r["broker_epoch"], r["fenced"]) for b, r in brokers.items()} == {1: (5, False), 2: (4, True), 3: (8, True)}
    listed = brokers[2]["endpoints"].split(",")
    assert listed[0] == "L0://h:9000/PLAINTEXT" and len(listed) == MAX_LISTED_ENDPOINTS + 1 and listed[-1] == MORE_ENDPOINTS
    assert rows["controller_cluster"] == []


def _fold_both(tmp_path, entries) -> dict:
    from tests.projections.test_differential import write_log

    ps = domain_projections(["controller"])
    url = write_log(tmp_path, entries)
    py, dk = fold_python(url, ps), fold_duckdb(url, ps)
    assert_same(ps, py, dk)
    return {name: t.to_pylist() for name, t in dk.tables.items()}


@pytest.mark.spark
@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(entries=controller_logs.filter(lambda e: len(_kinds(e)) >= 6))
def test_controller_all_tables_spark_equals_python(tmp_path, spark_session, entries):
    assert_spark_equals_python(tmp_path, spark_session, entries, domain_projections(["controller"]))


@pytest.mark.spark
@pytest.mark.slow
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(entries=reassign_logs.filter(lambda e: any(isinstance(x, ev.PartitionChanged) and x.removing_replicas for _, x in e)))
def test_reassignment_tables_spark_equals_python(tmp_path, spark_session, entries):
    assert_spark_equals_python(tmp_path, spark_session, entries, domain_projections(["controller"]))


@pytest.mark.spark
@pytest.mark.slow
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(entries=cluster_logs.filter(lambda e: {"BrokerFenced", "BrokerUnfenced", "ControllerElected", "PartitionChanged"} <= _kinds(e)))
def test_cluster_tables_spark_equals_python(tmp_path, spark_session, entries):
    assert_spark_equals_python(tmp_path, spark_session, entries, domain_projections(["controller"]))


# ----------------------------------------------------------------------------- old schema versions


_V1 = [
    (
        "controller.TopicCreated",
        {"topic_id": "00000000000000000000000000000001", "name": "a",
         "partitions": [{"partition": 0, "replicas": [1], "isr": [1], "leader": 1, "leader_epoch": 0, "partition_epoch": 0}],
         "configs": {"retention.ms": "1000", "cleanup.policy": "compact"}},
    ),
    (
        "controller.CollectionsCreated",
        {"collections": [
            {"collection_id": "00000000000000000000000000000001:0", "since": 0, "upper": 0,
             "policy": {"kind": "retention", "retention_ms": 1000, "retention_bytes": -1, "delete": False}, "dependencies": []},
            {"collection_id": "u", "since": 0, "upper": 10, "policy": {"kind": "lag_writes", "lag": 2, "max_granularity": 1}, "dependencies": []},
        ]},
    ),
    (
        "controller.CollectionsCreated",
        {"collections": [{"collection_id": "v", "since": 4, "upper": 10, "policy": {"kind": "no_policy", "initial_since": 4},
                          "dependencies": ["u"]}]},
    ),
    ("controller.TopicConfigsAltered", {"topic_id": "00000000000000000000000000000001", "name": "a", "set": {"retention.ms": "5"}, "deleted": ["cleanup.policy"]}),
    ("controller.BrokerConfigsAltered", {"broker": "", "set": {"log.retention.ms": "7"}, "deleted": []}),
    ("controller.ReadPoliciesSet", {"changes": [{"collection_id": "u", "policy": {"kind": "step_back"}, "implied": 9}], "at_ms": 5}),
    ("controller.ReadHoldsChanged", {"holder": "h", "changes": [["u", 3, 2], ["v", 6, 1]]}),
]


def test_v1_controller_events_upcast():
    """Each v1 shape decodes to the v2 event (configs as sorted ``ConfigValue``s, policies as
    canonical text, hold changes as objects)."""
    got = [decode_event(t, 1, json.dumps(d).encode()) for t, d in _V1]
    assert got[0].configs == (ev.ConfigValue("cleanup.policy", "compact"), ev.ConfigValue("retention.ms", "1000"))
    assert got[1].collections[0].policy == fr.policy_to_json(fr.Retention(1000, -1, False))
    assert got[2].collections[0].transitive_dependencies == ("u",)
    assert got[3].set == (ev.ConfigValue("retention.ms", "5"),) and got[3].deleted == ("cleanup.policy",)
    assert got[4].set == (ev.ConfigValue("log.retention.ms", "7"),)
    assert got[5].changes[0].policy == '{"kind": "step_back"}'
    assert got[6].changes == (ev.HoldChange("u", 3, 2), ev.HoldChange("v", 6, 1))
    for e in got:  # and the v2 encoding round-trips
        assert decode_event(type(e).event_type, type(e).schema_version, encode_event(e)) == e


def _v1_log(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'v1.db'}"
    log = open_event_log(url)
    for t, d in _V1:
        log.append("controller", [NewEvent(uuid.uuid4(), t, 1, json.dumps(d).encode())])
    log.append("controller", [new_event(ev.ReadHoldsChanged("h", (ev.HoldChange("u", 3, -1),)))])  # a v2 event after them
    log.close()
    return url


def test_v1_controller_log_folds_the_same_in_duckdb(tmp_path):
    """The SQL engines upcast stale rows with the codec, so a log written before v2 gives the
    same tables in DuckDB as in Python."""
    url = _v1_log(tmp_path)
    ps = domain_projections(["controller"])
    py = fold_python(url, ps)
    assert py.tables["controller_topics"].to_pylist()[0]["configs"] == "retention.ms=5"
    assert {(r["collection_id"], r["holder"], r["offset"], r["count"]) for r in py.tables["controller_holds"].to_pylist()} == {
        ("u", "h", 3, 1), ("v", "h", 6, 1), ("u", "collection:v", 4, 1)}
    assert_same(ps, py, fold_duckdb(url, ps))


@pytest.mark.spark
@pytest.mark.slow
def test_v1_controller_log_folds_the_same_in_spark(tmp_path, spark_session):
    from projections.spark_fold import fold_spark

    url = _v1_log(tmp_path)
    ps = domain_projections(["controller"])
    assert_same(ps, fold_python(url, ps), fold_spark(url, ps, spark=spark_session))


def test_config_events_accept_mappings_and_pairs():
    """Constructing config events from a dict (the pre-v2 API) or pairs gives the sorted tuple."""
    a = ev.TopicCreated("t", "n", (), {"b": "2", "a": "1"})
    b = ev.TopicConfigsAltered("t", "n", (("b", "2"), ("a", "1")), ())
    assert a.configs == b.set == (ev.ConfigValue("a", "1"), ev.ConfigValue("b", "2"))
    assert ev.config_map(a.configs) == {"a": "1", "b": "2"}
    assert ev.CollectionSpec("c", 0, 0, {"kind": "step_back"}).policy == fr.policy_to_json(fr.StepBack())
