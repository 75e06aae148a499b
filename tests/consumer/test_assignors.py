"""Server-side assignors (``uniform``, ``range``): properties with Hypothesis plus Kafka's
RangeAssignorTest static-membership case (reference §9 #25)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.consumer.assignors import AssignorError, GroupSpec, MemberSpec, assign, range_assign, uniform_assign

TOPICS = ["a", "b", "c"]


@st.composite
def specs(draw, homogeneous: bool | None = None, with_targets: bool = True):
    topics = {t: draw(st.integers(0, 12)) for t in draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=3, unique=True))}
    n = draw(st.integers(1, 7))
    same = frozenset(draw(st.lists(st.sampled_from(sorted(topics)), min_size=1, unique=True)))
    hom = draw(st.booleans()) if homogeneous is None else homogeneous
    members = []
    for i in range(n):
        subs = same if hom else frozenset(draw(st.lists(st.sampled_from(sorted(topics)), min_size=1, unique=True)))
        target = {}
        if with_targets:
            for t in topics:
                ps = draw(st.lists(st.integers(0, 14), unique=True, max_size=5))
                if ps:
                    target[t] = frozenset(ps)
        members.append(MemberSpec(f"m{i}", subs, f"i{i}" if draw(st.booleans()) else None, None, target))
    return GroupSpec(tuple(members), topics)


def owners(result):
    out = {}
    for mid, parts in result.items():
        for t, ps in parts.items():
            for p in ps:
                assert (t, p) not in out, f"{t}-{p} assigned twice"
                out[(t, p)] = mid
    return out


def check_complete(spec, result):
    """Every subscribed partition is assigned exactly once, to a member subscribed to it."""
    own = owners(result)
    subs = {m.member_id: m.subscribed for m in spec.members}
    wanted = {(t, p) for t, n in spec.topics.items() if any(t in s for s in subs.values()) for p in range(n)}
    assert set(own) == wanted
    for (t, _p), mid in own.items():
        assert t in subs[mid]


def sizes(result):
    return {mid: sum(len(ps) for ps in parts.values()) for mid, parts in result.items()}


@settings(max_examples=300, deadline=None)
@given(specs())
def test_uniform_assigns_every_partition_once_and_balanced(spec):
    result = assign("uniform", spec)
    check_complete(spec, result)
    sz = sizes(result)
    if spec.homogeneous():
        assert max(sz.values()) - min(sz.values()) <= 1
    else:
        # heterogeneous balance: no partition can move to a subscriber holding two fewer
        subs = {m.member_id: m.subscribed for m in spec.members}
        for mid, parts in result.items():
            for t, ps in parts.items():
                if ps:
                    assert all(sz[o] + 1 >= sz[mid] for o in subs if o != mid and t in subs[o])


@settings(max_examples=200, deadline=None)
@given(specs())
def test_uniform_is_sticky(spec):
    """Run again from its own result: nothing moves. Homogeneous: a member keeps at least
    min(what it validly owned and no earlier member kept, the quota)."""
    first = uniform_assign(spec)
    again = uniform_assign(GroupSpec(tuple(MemberSpec(m.member_id, m.subscribed, m.instance_id, None, first.get(m.member_id, {}))
                                            for m in spec.members), spec.topics))
    assert owners(again) == owners(first)
    if spec.homogeneous():
        total = sum(spec.topics[t] for t in spec.members[0].subscribed)
        quota = total // len(spec.members)
        seen = set()
        for m in spec.members:
            valid = {(t, p) for t, ps in m.target.items() if t in m.subscribed for p in ps if p < spec.topics[t]} - seen
            kept = {(t, p) for t, ps in first[m.member_id].items() for p in ps}
            assert len(kept & valid) >= min(len(valid), quota)
            seen |= kept  # a partition two members claim stays with the first


@settings(max_examples=200, deadline=None)
@given(specs())
def test_range_contiguous_blocks(spec):
    result = assign("range", spec)
    check_complete(spec, result)
    for t, n in spec.topics.items():
        subs = [m for m in spec.members if t in m.subscribed]
        if not subs:
            continue
        got = sorted(len(result[m.member_id].get(t, ())) for m in subs)
        assert got[-1] - got[0] <= 1
        for m in subs:
            ps = sorted(result[m.member_id].get(t, ()))
            assert ps == list(range(ps[0], ps[0] + len(ps))) if ps else True


def test_range_static_membership():
    """#25 RangeAssignorTest.testStaticMembership: A (instanceA) replaced by A1 with the same
    instance id gets exactly A's partitions; B is unchanged."""
    topics = {"t1": 3, "t2": 3}
    a = MemberSpec("A", frozenset(topics), "instanceA")
    b = MemberSpec("B", frozenset(topics), "instanceB")
    before = range_assign(GroupSpec((a, b), topics))
    a1 = MemberSpec("A1", frozenset(topics), "instanceA")
    after = range_assign(GroupSpec((a1, b), topics))
    assert after["A1"] == before["A"] and after["B"] == before["B"]


def test_range_order_static_then_dynamic():
    topics = {"t": 4}
    r = range_assign(GroupSpec((MemberSpec("a-dyn", frozenset(topics)), MemberSpec("z-static", frozenset(topics), "i")), topics))
    assert r["z-static"] == {"t": frozenset({0, 1})} and r["a-dyn"] == {"t": frozenset({2, 3})}


def test_unknown_topic_raises():
    with pytest.raises(AssignorError):
        uniform_assign(GroupSpec((MemberSpec("m", frozenset({"nope"})),), {}))
    with pytest.raises(AssignorError):
        range_assign(GroupSpec((MemberSpec("m", frozenset({"nope"})),), {}))


def test_uniform_homogeneous_extras_in_member_order():
    topics = {"t": 5}
    ms = tuple(MemberSpec(f"m{i}", frozenset(topics)) for i in range(3))
    r = uniform_assign(GroupSpec(ms, topics))
    assert [len(r[f"m{i}"]["t"]) for i in range(3)] == [2, 2, 1]
