"""The ``simple`` share-group assignor as Kafka 4.1/4.2 balances it (``SimpleAssignorTest``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.share.assignor import PartitionAssignorError, SimpleAssignor, assign

T1, T2, T3 = "topic1-id", "topic2-id", "topic3-id"
A, B, C = "memberA", "memberB", "memberC"


def every_partition_assigned(result, expected_count):
    """``assertEveryPartitionGetsAssignment``: the union of all members' partitions has that size."""
    seen = {(t, p) for a in result.values() for t, ps in a.items() for p in ps}
    return len(seen) == expected_count


def sizes(result):
    return sorted(sum(len(ps) for ps in a.values()) for a in result.values())


def test_name_is_simple():
    assert SimpleAssignor.name == "simple"


def test_SimpleAssignorTest_testAssignWithEmptySubscription():
    assert assign({}, {}, {T1: 3}) == {}
    assert assign({A: set()}, {}, {T1: 3}) == {A: {}}


def test_SimpleAssignorTest_testAssignWithSubscribedToNonExistentTopic():
    with pytest.raises(PartitionAssignorError, match="doesn't exist in the topic metadata"):
        assign({A: {T2}}, {}, {T1: 3})


def test_SimpleAssignorTest_testAssignWithTwoMembersAndTwoTopicsHomogeneous():
    # Scenario #91. At the late-2024 commit both members got every partition; Kafka 4.1+ balances:
    # 5 partitions over 2 members, each partition once, sizes 3 and 2.
    result = assign({A: {T1, T3}, B: {T1, T3}}, {}, {T1: 3, T3: 2})
    assert every_partition_assigned(result, 5)
    assert sizes(result) == [2, 3]
    owners = {}
    for m, a in result.items():
        for t, ps in a.items():
            for p in ps:
                owners.setdefault((t, p), []).append(m)
    assert all(len(v) == 1 for v in owners.values())


def test_SimpleAssignorTest_testAssignWithTwoMembersAndTwoTopicsHomogeneousWithNonAssignableTopic():
    result = assign({A: {T1, T3}, B: {T1, T3}}, {}, {T1: 3, T3: 2}, assignable=lambda t, p: t == T1)
    assert every_partition_assigned(result, 3)
    assert all(T3 not in a for a in result.values())


def test_SimpleAssignorTest_testAssignWithThreeMembersThreeTopicsHeterogeneous():
    result = assign({A: {T1, T2}, B: {T3}, C: {T2, T3}}, {}, {T1: 3, T2: 3, T3: 2})
    assert every_partition_assigned(result, 8)
    for m, subs in {A: {T1, T2}, B: {T3}, C: {T2, T3}}.items():
        assert set(result[m]) <= subs


def test_SimpleAssignorTest_testAssignWithThreeMembersThreeTopicsHeterogeneousWithNonAssignableTopic():
    result = assign({A: {T1, T2}, B: {T3}, C: {T2, T3}}, {}, {T1: 3, T2: 3, T3: 2}, assignable=lambda t, p: t != T3)
    assert result == {A: {T1: frozenset({0, 1, 2}), T2: frozenset({0, 2})}, B: {}, C: {T2: frozenset({1})}}


def test_SimpleAssignorTest_testAssignWithOneMemberNoAssignedTopicHeterogeneous():
    result = assign({A: {T1, T2}, B: set()}, {}, {T1: 3, T2: 2})
    assert result == {A: {T1: frozenset({0, 1, 2}), T2: frozenset({0, 1})}, B: {}}


def test_more_members_than_partitions_share_partitions():
    # desired sharing = ceil(M/P): 5 members on 2 partitions -> each partition shared by 3
    result = assign({m: {T1} for m in "abcde"}, {}, {T1: 2})
    assert every_partition_assigned(result, 2)
    assert sizes(result) == [1, 1, 1, 1, 2]


def test_stickiness_when_a_member_joins():
    first = assign({A: {T1}, B: {T1}}, {}, {T1: 6})
    second = assign({A: {T1}, B: {T1}, C: {T1}}, first, {T1: 6})
    assert sizes(second) == [2, 2, 2]
    # A and B keep partitions they had (balance allowing), C gets what was revoked
    assert second[A][T1] <= first[A][T1]
    assert second[B][T1] <= first[B][T1]


def test_unsubscribed_topic_is_revoked():
    first = assign({A: {T1, T2}, B: {T1, T2}}, {}, {T1: 2, T2: 2})
    second = assign({A: {T1}, B: {T1, T2}}, first, {T1: 2, T2: 2})
    assert T2 not in second[A]
    assert every_partition_assigned(second, 4)


def test_SimpleAssignorTest_testIncrementalAssignmentIncreasingMembersHomogeneous():
    members: dict[str, set[str]] = {}
    current: dict = {}
    for i in range(101):
        members[f"M{i}"] = {T1}
        current = assign(members, current, {T1: 24})
        assert every_partition_assigned(current, 24)
        s = sizes(current)
        assert s[-1] - s[0] <= 1


def test_SimpleAssignorTest_testIncrementalAssignmentDecreasingMembersHomogeneous():
    members = {f"M{i}": {T1} for i in range(101)}
    current = assign(members, {}, {T1: 24})
    for i in range(100, 0, -1):
        del members[f"M{i}"]
        current = assign(members, {m: current[m] for m in members}, {T1: 24})
        assert every_partition_assigned(current, 24)
        s = sizes(current)
        assert s[-1] - s[0] <= 1


@settings(max_examples=150, deadline=None)
@given(
    n_members=st.integers(1, 12),
    parts=st.lists(st.integers(0, 7), min_size=1, max_size=3),
    steps=st.lists(st.integers(0, 11), max_size=6),
)
def test_homogeneous_balance_and_coverage_property(n_members, parts, steps):
    """Every assignable partition is assigned, and member sizes differ by at most one (homogeneous),
    also when starting from a previous assignment after members leave."""
    topics = {f"t{i}": n for i, n in enumerate(parts)}
    total = sum(parts)
    members = {f"m{i}": set(topics) for i in range(n_members)}
    current = assign(members, {}, topics)
    for s in steps:
        victim = f"m{s}"
        if victim in members and len(members) > 1:
            del members[victim]
        else:
            members[f"n{s}"] = set(topics)
        current = assign(members, {m: current.get(m, {}) for m in members}, topics)
        assert every_partition_assigned(current, total)
        sz = sizes(current)
        if total:
            assert sz[-1] - sz[0] <= 1
        for a in current.values():
            for t, ps in a.items():
                assert ps <= set(range(topics[t]))
