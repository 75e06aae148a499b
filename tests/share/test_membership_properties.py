"""Hypothesis: random interleavings of join / heartbeat / subscription change / leave / session
expiry keep the membership invariants."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.share.assignor import assign
from actors.share.config import BrokerShareConfig
from actors.share.membership import (
    MembershipError,
    ShareGroupHeartbeat,
    ShareGroupMembership,
    decide_heartbeat,
    decide_session_expiry,
    evolve,
    touch,
)

TOPICS = {"a": ("A-ID", 3), "b": ("B-ID", 4), "c": ("C-ID", 1)}
MAX_SIZE = 4
BROKER = BrokerShareConfig.from_config({"group.share.max.size": str(MAX_SIZE)}, strict_ranges=False)

op = st.one_of(
    st.tuples(st.just("join"), st.integers(0, 6), st.sets(st.sampled_from(sorted(TOPICS)), min_size=1)),
    st.tuples(st.just("hb"), st.integers(0, 6), st.none()),
    st.tuples(st.just("resub"), st.integers(0, 6), st.sets(st.sampled_from(sorted(TOPICS)), min_size=1)),
    st.tuples(st.just("stale"), st.integers(0, 6), st.none()),
    st.tuples(st.just("leave"), st.integers(0, 6), st.none()),
    st.tuples(st.just("tick"), st.integers(1, 60_000), st.none()),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(op, max_size=40))
def test_membership_invariants(ops):
    state = ShareGroupMembership("g")
    log: list = []
    now = 0
    epochs: dict[str, int] = {}
    last_group_epoch = 0
    for kind, x, topics in ops:
        mid = f"member-{x}"
        member = state.members.get(mid)
        events: list = []
        if kind == "tick":
            now += x
            events = decide_session_expiry(state, now)
        else:
            if kind == "join":
                req = ShareGroupHeartbeat("g", mid, 0, subscribed_topic_names=tuple(topics))
            elif kind == "resub":
                req = ShareGroupHeartbeat("g", mid, member.member_epoch if member else 1, subscribed_topic_names=tuple(topics))
            elif kind == "hb":
                req = ShareGroupHeartbeat("g", mid, member.member_epoch if member else 1)
            elif kind == "stale":
                req = ShareGroupHeartbeat("g", mid, (member.member_epoch + 1) if member else 5)
            else:
                req = ShareGroupHeartbeat("g", mid, -1)
            before = state.comparable()
            try:
                d = decide_heartbeat(state, req, TOPICS, BROKER, now)
            except MembershipError as e:
                assert state.comparable() == before
                assert e.error in {"UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH", "GROUP_MAX_SIZE_REACHED",
                                   "UNKNOWN_SERVER_ERROR", "GROUP_ID_NOT_FOUND"}
                if kind == "stale" and member is not None:
                    assert e.error == "FENCED_MEMBER_EPOCH"
                if kind == "join" and member is None and len(state.members) >= MAX_SIZE:
                    assert e.error == "GROUP_MAX_SIZE_REACHED"
                continue
            events = list(d.events)
            if kind != "leave":
                assert d.response.member_epoch >= epochs.get(mid, 0)
                assert d.response.member_epoch <= state.group_epoch + 1
        for ev in events:
            evolve(state, ev)
        log.extend(events)
        if kind not in ("leave", "tick") and mid in state.members:
            touch(state, mid, now, BROKER)
        # invariants
        assert len(state.members) <= MAX_SIZE
        assert state.group_epoch >= last_group_epoch
        last_group_epoch = state.group_epoch
        assert state.assignment_epoch <= state.group_epoch
        for m_id, m in state.members.items():
            assert m.member_epoch >= epochs.get(m_id, 0)
            epochs[m_id] = m.member_epoch
            assert m.member_epoch <= state.assignment_epoch
            subscribed = {TOPICS[n][0] for n in m.subscribed_topic_names}
            assert set(m.assigned) <= subscribed
        for gone in set(epochs) - set(state.members):
            epochs.pop(gone)  # a fenced member rejoins from epoch 0
        # the target is exactly the simple assignor's result for the target's inputs
        if state.target and state.assignment_epoch == state.group_epoch:
            ids = {n: v[0] for n, v in state.subscription_metadata.items()}
            subs = {k: {ids[n] for n in m.subscribed_topic_names if n in ids} for k, m in state.members.items()}
            again = assign(subs, state.target, {v[0]: v[1] for v in state.subscription_metadata.values()})
            assert again == state.target  # stable: re-running the assignor keeps the target
        # replay of the events rebuilds the durable state exactly
        replayed = ShareGroupMembership("g")
        for ev in log:
            evolve(replayed, ev)
        assert replayed.comparable() == state.comparable()
