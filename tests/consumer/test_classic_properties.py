"""Hypothesis: random sequences of JoinGroup/SyncGroup/Heartbeat/LeaveGroup/OffsetCommit and timer
ticks on the classic decider keep Kafka's invariants: generations never go back, an Empty group
has no members, the leader is a member, each parked request is answered at most once and only
parked requests are answered, and a GroupMetadata event describes the live group (the creation record: the empty group)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings, target
from hypothesis import strategies as st

from actors.consumer.classic import EMPTY, ClassicConfig, ClassicGroup, CommitPartition, LeaveMember
from events.consumer_group import ClassicGroupMetadataRecorded

CLIENTS = ["a", "b", "c"]
ops = st.lists(
    st.tuples(
        st.sampled_from(["join", "rejoin", "sync", "leader_sync", "heartbeat", "leave", "commit", "tick", "static_join"]),
        st.integers(0, 2),
        st.integers(0, 12_000),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(ops=ops)
def test_invariants(ops):
    ids = itertools.count()
    g = ClassicGroup("g", ClassicConfig(initial_rebalance_delay_ms=1000), id_factory=lambda: str(next(ids)))
    known: list[str] = []  # member ids the "clients" hold
    parked: set[tuple[str, str]] = set()
    now = 0
    last_gen = 0
    for op, who, dt in ops:
        now += dt
        mid = known[who % len(known)] if known else ""
        if op == "join":
            o = g.join(now, member_id="", group_instance_id=None, protocol_type="consumer", protocols=(("range", b""),),
                       session_timeout_ms=6000, rebalance_timeout_ms=8000, client_id=CLIENTS[who])
            if o.reply is not None and o.reply.member_id:
                known.append(o.reply.member_id)
        elif op == "static_join":
            o = g.join(now, member_id="", group_instance_id=f"i{who}", protocol_type="consumer", protocols=(("range", b""),),
                       session_timeout_ms=6000, rebalance_timeout_ms=8000, client_id=CLIENTS[who])
            if o.parked:
                known.append(o.parked[1])
            elif o.reply is not None and o.reply.member_id:
                known.append(o.reply.member_id)
        elif op == "rejoin":
            o = g.join(now, member_id=mid, group_instance_id=None, protocol_type="consumer", protocols=(("range", b""),),
                       session_timeout_ms=6000, rebalance_timeout_ms=8000, client_id=CLIENTS[who])
        elif op in ("sync", "leader_sync"):
            who_syncs = g.leader if op == "leader_sync" and g.leader else mid
            inst = g.members[who_syncs].group_instance_id if who_syncs in g.members else None
            o = g.sync(now, member_id=who_syncs or "", group_instance_id=inst, generation=g.generation, protocol_type=None,
                       protocol=None, assignments={m: b"x" for m in g.members})
        elif op == "heartbeat":
            o = g.heartbeat(now, member_id=mid, group_instance_id=None, generation=g.generation)
        elif op == "leave":
            o = g.leave(now, [LeaveMember(mid)])
        elif op == "commit":
            o = g.commit(now, member_id=mid, group_instance_id=None, generation=g.generation if mid else -1,
                         partitions=[CommitPartition("t", who, now)])
            for e in o.events:
                g.apply(e)
        else:
            o = g.tick(now)
        if o.parked is not None:
            parked.add(o.parked)
        for key, _result in o.replies:
            assert key in parked, (key, parked)
            parked.discard(key)
        for e in o.events:
            if isinstance(e, ClassicGroupMetadataRecorded):
                assert e.generation == g.generation
                if e.generation == 0:  # Kafka's newEmptyGroupMetadataRecord: the group as created
                    assert e.state == EMPTY and e.members == ()
                else:
                    assert {m.member_id for m in e.members} == set(g.members)
        assert g.generation >= last_gen
        last_gen = g.generation
        if g.state == EMPTY:
            assert not g.members
        if g.members and g.state != "PreparingRebalance":
            assert g.leader in g.members
        assert set(g.static.values()) <= set(g.members)
    target(float(g.generation))  # steer towards logs with many generations
