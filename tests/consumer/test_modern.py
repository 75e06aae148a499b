"""The KIP-848 consumer-group decider without an actor system: Kafka's scenarios (reference §9
#1, #3, #5, #7, #9, #11, #13, #15, #17, #19, #21, #23, #47) plus replay and offsets."""

from __future__ import annotations

import itertools

import pytest

from actors.consumer.classic import ClassicGroup, CommitPartition
from actors.consumer.group import evolve
from actors.consumer.modern import (
    STABLE,
    UNKNOWN,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    ConsumerHeartbeatResult,
    HeartbeatError,
    ModernConfig,
    ModernGroup,
    ModernMember,
    reconcile,
)
from events.consumer_group import (
    ConsumerGroupCurrentMemberAssignmentRecorded as CurrentAssignment,
    ConsumerGroupEpochRecorded as GroupEpoch,
    ConsumerGroupMemberSubscriptionRecorded as Subscription,
    ConsumerGroupSubscriptionMetadataRecorded as Metadata,
    ConsumerGroupTargetAssignmentEpochRecorded as AssignmentEpoch,
    ConsumerGroupTargetAssignmentMemberRecorded as Target,
    ConsumerTopicMetadata,
    ConsumerTopicPartition,
    OffsetsCommitted,
)

FOO, BAR = "foo-id", "bar-id"
IMAGE = {"foo": (FOO, 6), "bar": (BAR, 3)}
G = "grp"


def tp(**parts):
    """tp(foo=[0, 1], bar=[2]) → {FOO: frozenset({0, 1}), BAR: frozenset({2})}"""
    ids = {"foo": FOO, "bar": BAR, "t1": "t1", "t2": "t2"}
    return {ids[k]: frozenset(v) for k, v in parts.items() if v}


def pairs(parts):
    return tuple(ConsumerTopicPartition(t, p) for t in sorted(parts) for p in sorted(parts[t]))


def ids():
    c = itertools.count(1)
    return lambda: f"gen-{next(c)}"


def new_group(**kw) -> ModernGroup:
    return ModernGroup(G, kw.pop("config", ModernConfig()), ids(), **kw)


def join(g, now=0, member_id="", topics=("foo", "bar"), **kw):
    return g.heartbeat(now, member_id=member_id, member_epoch=0, rebalance_timeout_ms=kw.pop("rebalance_timeout_ms", 5000),
                       subscribed_topic_names=tuple(topics), owned=kw.pop("owned", {}), image=kw.pop("image", IMAGE), **kw)


def hb(g, member_id, epoch, now=0, owned=None, **kw):
    return g.heartbeat(now, member_id=member_id, member_epoch=epoch, owned=owned, image=kw.pop("image", IMAGE), **kw)


def seed(g, epoch, members, targets=None, instance_ids=None, rebalance_timeout_ms=5000):
    """A group at ``epoch`` whose members are STABLE at ``epoch`` with ``members`` (id → parts)."""
    targets = targets if targets is not None else members
    instance_ids = instance_ids or {}
    g.apply(Metadata(G, (ConsumerTopicMetadata(BAR, "bar", 3), ConsumerTopicMetadata(FOO, "foo", 6))))
    for mid in members:
        g.apply(Subscription(G, mid, instance_ids.get(mid), None, "client", "host", ("bar", "foo"), rebalance_timeout_ms))
    g.apply(GroupEpoch(G, epoch))
    for mid, parts in targets.items():
        g.apply(Target(G, mid, pairs(parts)))
    g.apply(AssignmentEpoch(G, epoch))
    for mid, parts in members.items():
        g.apply(CurrentAssignment(G, mid, epoch, epoch - 1, STABLE, pairs(parts)))
    g.image = dict(IMAGE)
    g.touch_all(0)
    return g


def replayed(g: ModernGroup, events) -> ModernGroup:
    """A fresh group folded from ``events`` (recovery)."""
    r = ModernGroup(G, g.config)
    for e in events:
        r.apply(e)
    return r


def same(a: ModernGroup, b: ModernGroup) -> None:
    assert (a.group_epoch, a.assignment_epoch, a.subscription_metadata) == (b.group_epoch, b.assignment_epoch, b.subscription_metadata)
    assert {k: v for k, v in a.members.items()} == {k: v for k, v in b.members.items()}
    assert {k: dict(v) for k, v in a.targets.items()} == {k: dict(v) for k, v in b.targets.items()}
    assert a.static == b.static


# ---------------------------------------------------------------------------------- #1 validation


@pytest.mark.parametrize("kw, err", [
    (dict(member_epoch=0, rebalance_timeout_ms=-1, subscribed_topic_names=("foo",), owned={}), "INVALID_REQUEST"),
    (dict(member_epoch=0, rebalance_timeout_ms=5000, subscribed_topic_names=("foo",), owned=None), "INVALID_REQUEST"),
    (dict(member_epoch=0, rebalance_timeout_ms=5000, subscribed_topic_names=("foo",), owned={FOO: frozenset({0})}), "INVALID_REQUEST"),
    (dict(member_epoch=0, rebalance_timeout_ms=5000, subscribed_topic_names=None, owned={}), "INVALID_REQUEST"),
    (dict(member_epoch=0, rebalance_timeout_ms=5000, subscribed_topic_names=(), owned={}), "INVALID_REQUEST"),
    (dict(member_epoch=1), "INVALID_REQUEST"),
    (dict(member_epoch=-1), "INVALID_REQUEST"),
    (dict(member_epoch=0, rebalance_timeout_ms=5000, subscribed_topic_names=("foo",), owned={}, instance_id=""), "INVALID_REQUEST"),
    (dict(member_epoch=0, rebalance_timeout_ms=5000, subscribed_topic_names=("foo",), owned={}, rack_id=" "), "INVALID_REQUEST"),
    (dict(member_epoch=-2, member_id="m"), "INVALID_REQUEST"),
    (dict(member_epoch=-3, member_id="m"), "INVALID_REQUEST"),
    (dict(member_epoch=0, rebalance_timeout_ms=5000, subscribed_topic_names=("foo",), owned={}, regex="foo.*"), "INVALID_REQUEST"),
    (dict(member_epoch=0, rebalance_timeout_ms=5000, subscribed_topic_names=("foo",), owned={}, server_assignor="bar"), "UNSUPPORTED_ASSIGNOR"),
])
def test_heartbeat_validation(kw, err):
    """#1 testConsumerHeartbeatRequestValidation (range as the only assignor)."""
    g = new_group(config=ModernConfig(assignors=("range",)))
    kw.setdefault("member_id", "")
    out = g.heartbeat(0, image=IMAGE, **kw)
    assert out.reply.error == err
    assert out.events == [] and not g.exists


def test_blank_group_id_is_invalid_request():
    g = ModernGroup(" ")
    assert join(g).reply.error == "INVALID_REQUEST"


def test_v1_requires_member_id_and_accepts_client_generated_one():
    g = new_group()
    assert join(g, api_version=1).reply.error == "INVALID_REQUEST"
    r = join(g, member_id="client-made", api_version=1, regex="").reply  # librdkafka sends "" 
    assert (r.error, r.member_id, r.member_epoch) == (None, "client-made", 1)


# ---------------------------------------------------------------------------------- #3, #5 joins


def test_member_id_generation():
    """#3 testMemberIdGeneration: an empty image; generated id, epoch 1, interval 5000, empty
    (non-null) assignment. Kafka's test runs at Kafka's default interval (5000 ms); Shoal's
    default is 500 ms (config.py), which the group hands out when not configured."""
    g = new_group(config=ModernConfig(heartbeat_interval_ms=5000))
    r = join(g, image={}).reply
    assert r == ConsumerHeartbeatResult(None, None, "gen-1", 1, 5000, ())
    assert join(new_group(), image={}).reply.heartbeat_interval_ms == 500


def test_member_joins_empty_group():
    """#5 testMemberJoinsEmptyConsumerGroup: records in Kafka's order."""
    g = new_group()
    out = join(g, member_id="m")
    r = out.reply
    assert (r.member_id, r.member_epoch) == ("m", 1)
    assert dict(r.assignment) == {FOO: (0, 1, 2, 3, 4, 5), BAR: (0, 1, 2)}
    assert [type(e) for e in out.events] == [Subscription, Metadata, GroupEpoch, Target, AssignmentEpoch, CurrentAssignment]
    assert out.events[1].topics == (ConsumerTopicMetadata(BAR, "bar", 3), ConsumerTopicMetadata(FOO, "foo", 6))
    assert out.events[2].epoch == 1 and out.events[4].assignment_epoch == 1
    last = out.events[-1]
    assert (last.member_epoch, last.previous_member_epoch, last.state) == (1, 0, STABLE)
    same(g, replayed(g, out.events))
    assert g.state() == "Stable"


# ---------------------------------------------------------------------------------- #7, #9 static


def test_static_member_gets_back_assignment_upon_rejoin():
    """#7 testStaticMemberGetsBackAssignmentUponRejoin."""
    g = seed(new_group(), 10, {"m1": tp(foo=[0, 1, 2], bar=[0, 1]), "m2": tp(foo=[3, 4, 5], bar=[2])},
             instance_ids={"m1": "i1", "m2": "i2"})
    out = hb(g, "m2", -2, instance_id="i2")
    assert out.reply.error is None and out.reply.member_epoch == -2
    assert [type(e) for e in out.events] == [CurrentAssignment]
    assert g.members["m2"].member_epoch == -2 and g.members["m2"].assigned == tp(foo=[3, 4, 5], bar=[2])
    assert g.group_epoch == 10
    out = join(g, member_id="m2-new", instance_id="i2")
    r = out.reply
    assert (r.error, r.member_id, r.member_epoch) == (None, "m2-new", 10)
    assert dict(r.assignment) == {FOO: (3, 4, 5), BAR: (2,)}
    kinds = [(type(e).__name__, getattr(e, "member_id", None), getattr(e, "tombstone", False)) for e in out.events]
    assert kinds == [
        ("ConsumerGroupCurrentMemberAssignmentRecorded", "m2", True),
        ("ConsumerGroupTargetAssignmentMemberRecorded", "m2", True),
        ("ConsumerGroupMemberSubscriptionRecorded", "m2", True),
        ("ConsumerGroupMemberSubscriptionRecorded", "m2-new", False),
        ("ConsumerGroupTargetAssignmentMemberRecorded", "m2-new", False),
        ("ConsumerGroupCurrentMemberAssignmentRecorded", "m2-new", False),
        ("ConsumerGroupCurrentMemberAssignmentRecorded", "m2-new", False),
    ]
    assert out.events[5].member_epoch == 0 and out.events[6].member_epoch == 10
    assert not any(isinstance(e, GroupEpoch) for e in out.events)
    assert g.static == {"i1": "m1", "i2": "m2-new"}


def test_unreleased_instance_id():
    g = seed(new_group(), 10, {"m1": tp(foo=[0, 1, 2])}, instance_ids={"m1": "i1"})
    assert join(g, member_id="other", instance_id="i1").reply.error == "UNRELEASED_INSTANCE_ID"


def test_fenced_instance_id():
    """#9 testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdJoins."""
    g = seed(new_group(), 10, {"m1": tp(foo=[0, 1, 2])}, instance_ids={"m1": "i1"})
    assert hb(g, "other", 11, instance_id="i1").reply.error == "FENCED_INSTANCE_ID"
    assert hb(g, "m1", 10, instance_id="unknown").reply.error == "UNKNOWN_MEMBER_ID"


# ---------------------------------------------------------------------------------- #11 reconciliation


def test_reconciliation_process():
    """#11 testReconciliationProcess, with the assignor's prepared result."""
    prepared = {"m1": tp(foo=[0, 1], bar=[0]), "m2": tp(foo=[2, 3], bar=[2]), "m3": tp(foo=[4, 5], bar=[1])}
    g = seed(new_group(assignor=lambda name, spec: {m.member_id: prepared[m.member_id] for m in spec.members}),
             10, {"m1": tp(foo=[0, 1, 2], bar=[0, 1]), "m2": tp(foo=[3, 4, 5], bar=[2])})
    r = join(g, member_id="m3").reply
    assert (r.member_epoch, r.assignment) == (11, ())
    assert g.members["m3"].state == UNRELEASED_PARTITIONS
    r = hb(g, "m1", 10).reply  # owned null → still owns everything
    assert r.member_epoch == 10 and dict(r.assignment) == {FOO: (0, 1), BAR: (0,)}
    assert g.members["m1"].state == UNREVOKED_PARTITIONS
    r = hb(g, "m2", 10).reply
    assert r.member_epoch == 10 and dict(r.assignment) == {FOO: (3,), BAR: (2,)}
    assert g.state() == "Reconciling"
    r = hb(g, "m1", 10, owned=tp(foo=[0, 1], bar=[0])).reply  # m1 acknowledges
    assert (r.member_epoch, r.assignment) == (11, None)
    assert g.members["m1"].state == STABLE
    r = hb(g, "m3", 11, owned={}).reply
    assert r.member_epoch == 11 and dict(r.assignment) == {BAR: (1,)}
    assert g.members["m3"].state == UNRELEASED_PARTITIONS
    r = hb(g, "m2", 10, owned=tp(foo=[3], bar=[2])).reply
    assert r.member_epoch == 11 and dict(r.assignment) == {FOO: (2, 3), BAR: (2,)}
    assert g.members["m2"].state == STABLE
    r = hb(g, "m3", 11, owned=tp(bar=[1])).reply
    assert r.member_epoch == 11 and dict(r.assignment) == {FOO: (4, 5), BAR: (1,)}
    assert g.members["m3"].state == STABLE
    assert g.state() == "Stable"


# ---------------------------------------------------------------------------------- #13 states


def test_group_states():
    """#13 testConsumerGroupStates."""
    g = new_group()
    g.apply(GroupEpoch(G, 10))
    g.apply(AssignmentEpoch(G, 10))
    assert g.state() == "Empty"
    g.apply(Subscription(G, "m1", subscribed_topic_names=("foo",)))
    g.apply(GroupEpoch(G, 11))
    assert g.state() == "Assigning"
    g.apply(Target(G, "m1", pairs(tp(foo=[1, 2, 3]))))
    g.apply(AssignmentEpoch(G, 11))
    assert g.state() == "Reconciling"
    g.apply(CurrentAssignment(G, "m1", 11, 10, UNREVOKED_PARTITIONS, pairs(tp(foo=[1, 2])), pairs(tp(foo=[3]))))
    assert g.state() == "Reconciling"
    g.apply(CurrentAssignment(G, "m1", 11, 10, STABLE, pairs(tp(foo=[1, 2, 3]))))
    assert g.state() == "Stable"


# ---------------------------------------------------------------------------------- #15, #17 timers


def test_session_timeout_expiration():
    """#15 testSessionTimeoutExpiration."""
    g = new_group()
    join(g, member_id="m", now=0, topics=("foo",))
    assert g.next_deadline() == 45000
    assert g.tick(45000 - 1).events == []
    out = g.tick(45001)
    kinds = [(type(e), getattr(e, "tombstone", None)) for e in out.events]
    assert kinds == [(CurrentAssignment, True), (Target, True), (Subscription, True), (Metadata, False), (GroupEpoch, False)]
    assert out.events[3].topics == () and out.events[4].epoch == 2
    assert g.members == {} and g.state() == "Empty" and g.next_deadline() is None


def test_session_expiry_after_recovery_keeps_the_remaining_members_metadata():
    """After a recovery no topic image is known until a heartbeat brings one: a session expiry
    fired by the timer alone fences only the expired member and keeps the subscription metadata
    of the members left (no spurious "every topic is gone" record, no second epoch bump)."""
    live = new_group()
    events = list(join(live, member_id="a", now=0).events) + list(join(live, member_id="b", now=40_000).events)
    g = replayed(live, events)  # recovery: image unknown
    g.touch_all(0)  # a's session expires at 45000, b's at 45000 too after touch_all(0): move b's
    g.session_deadlines["b"] = 90_000
    out = g.tick(45_001)
    md = [e for e in out.events if isinstance(e, Metadata)]
    assert [e.member_id for e in out.events if isinstance(e, Subscription) and e.tombstone] == ["a"]
    assert not md or {t.topic_name for t in md[-1].topics} == {"foo", "bar"}
    assert g.subscription_metadata == {"bar": (BAR, 3), "foo": (FOO, 6)}
    epoch = g.group_epoch
    hb(g, "b", g.members["b"].member_epoch, now=45_002, owned=g.members["b"].assigned)  # same image: no bump
    assert g.group_epoch == epoch


def test_rebalance_timeout_expiration():
    """#17 testRebalanceTimeoutExpiration."""
    g = new_group(assignor=lambda name, spec: {m.member_id: ({"m1": tp(foo=[0, 1]), "m2": tp(foo=[2])}[m.member_id]) for m in spec.members})
    g.image = {"foo": (FOO, 3)}
    first = ModernGroup(G, ModernConfig(), ids(), assignor=lambda name, spec: {"m1": tp(foo=[0, 1, 2])})
    out = first.heartbeat(0, member_id="m1", member_epoch=0, rebalance_timeout_ms=10000, subscribed_topic_names=("foo",), owned={}, image={"foo": (FOO, 3)})
    for e in out.events:
        g.apply(e)
    g.touch_all(0)
    r = g.heartbeat(0, member_id="m2", member_epoch=0, rebalance_timeout_ms=10000, subscribed_topic_names=("foo",), owned={}, image={"foo": (FOO, 3)}).reply
    assert r.member_epoch == 2
    r = g.heartbeat(0, member_id="m1", member_epoch=1, owned=tp(foo=[0, 1, 2]), image={"foo": (FOO, 3)}).reply
    assert g.members["m1"].state == UNREVOKED_PARTITIONS and r.member_epoch == 1 and dict(r.assignment) == {FOO: (0, 1)}
    assert g.tick(9999).events == []
    out = g.tick(10001)
    assert [(type(e), e.tombstone) for e in out.events[:3]] == [(CurrentAssignment, True), (Target, True), (Subscription, True)]
    assert out.events[-1] == GroupEpoch(G, 3)
    assert "m1" not in g.members


# ---------------------------------------------------------------------------------- #19, #21, #23 CAB


def free(t, p):
    return -1


def test_stable_to_unrevoked_partitions():
    """#19 CurrentAssignmentBuilderTest.testStableToUnrevokedPartitions."""
    m = ModernMember("m", state=STABLE, member_epoch=10, previous_member_epoch=10,
                     assigned=tp(t1=[1, 2, 3], t2=[4, 5, 6]))
    n = reconcile(m, 11, tp(t1=[2, 3, 4], t2=[5, 6, 7]), None, free)
    assert (n.state, n.member_epoch) == (UNREVOKED_PARTITIONS, 10)
    assert n.assigned == tp(t1=[2, 3], t2=[5, 6]) and n.pending_revocation == tp(t1=[1], t2=[4])


def test_remains_in_unrevoked_partitions():
    """#21 CurrentAssignmentBuilderTest.testRemainsInUnrevokedPartitions."""
    m = ModernMember("m", state=UNREVOKED_PARTITIONS, member_epoch=10, previous_member_epoch=10,
                     assigned=tp(t1=[2, 3], t2=[5, 6]), pending_revocation=tp(t1=[1], t2=[4]))
    target = tp(t1=[3], t2=[6])
    for owned in (None, tp(t1=[1, 2, 3], t2=[5, 6]), tp(t1=[2, 3], t2=[4, 5, 6])):
        assert reconcile(m, 12, target, owned, free) is m
    n = reconcile(m, 12, target, tp(t1=[2, 3], t2=[5, 6]), free)
    assert n.member_epoch == 11  # min(epoch + 1, target) — then it still has partitions to revoke
    assert n.state == UNREVOKED_PARTITIONS and n.pending_revocation == tp(t1=[2], t2=[5])


def test_unknown_state():
    """#23 CurrentAssignmentBuilderTest.testUnknownState."""
    m = ModernMember("m", state=UNKNOWN, member_epoch=11, previous_member_epoch=10,
                     assigned=tp(t1=[3], t2=[6]))
    with pytest.raises(HeartbeatError) as exc:
        reconcile(m, 11, tp(t1=[3], t2=[6]), None, free)
    assert exc.value.error == "FENCED_MEMBER_EPOCH"
    n = reconcile(m, 11, tp(t1=[3], t2=[6]), {}, free)
    assert (n.state, n.member_epoch) == (STABLE, 11)


# ---------------------------------------------------------------------------------- epochs, leave


def test_member_epoch_checks_and_rejoin_with_known_id():
    g = seed(new_group(), 10, {"m1": tp(foo=[0, 1, 2], bar=[0, 1, 2]), "m2": tp(foo=[3, 4, 5])})
    assert hb(g, "m1", 11).reply.error == "FENCED_MEMBER_EPOCH"
    assert hb(g, "m1", 8).reply.error == "FENCED_MEMBER_EPOCH"
    # the previous epoch with owned partitions a subset of the assigned ones: the lost response
    assert hb(g, "m1", 9, owned=tp(foo=[0])).reply.error is None
    assert hb(g, "m1", 9, owned=None).reply.error == "FENCED_MEMBER_EPOCH"
    assert hb(g, "nobody", 10).reply.error == "UNKNOWN_MEMBER_ID"
    # KAFKA-19233: epoch 0 with a known id lets the member through with its partitions
    r = join(g, member_id="m1").reply
    assert r.error is None and r.member_epoch == 10 and dict(r.assignment) == {FOO: (0, 1, 2), BAR: (0, 1, 2)}


def test_leave_fences_and_bumps():
    g = seed(new_group(), 10, {"m1": tp(foo=[0, 1, 2], bar=[0, 1, 2]), "m2": tp(foo=[3, 4, 5])})
    out = hb(g, "m1", -1)
    assert out.reply == ConsumerHeartbeatResult(None, None, "m1", -1, 0)
    assert out.events[-1] == GroupEpoch(G, 11) and "m1" not in g.members
    assert hb(g, "m1", -1).reply.error == "UNKNOWN_MEMBER_ID"
    # the next heartbeat computes the new target: m2 gets everything
    r = hb(g, "m2", 10, owned=tp(foo=[3, 4, 5])).reply
    assert r.member_epoch == 11 and dict(r.assignment) == {FOO: (0, 1, 2, 3, 4, 5), BAR: (0, 1, 2)}


def test_unknown_group_and_max_size():
    g = new_group()
    assert hb(g, "m", 1).reply.error == "GROUP_ID_NOT_FOUND"
    g = new_group(config=ModernConfig(max_size=1))
    join(g, member_id="a")
    assert join(g, member_id="b").reply.error == "GROUP_MAX_SIZE_REACHED"


def test_topic_resize_bumps_epoch():
    g = new_group()
    join(g, member_id="m", topics=("foo",))
    r = hb(g, "m", 1, image={"foo": (FOO, 8)}, owned=tp(foo=range(6))).reply
    assert g.group_epoch == 2 and r.member_epoch == 2 and dict(r.assignment) == {FOO: tuple(range(8))}
    r = hb(g, "m", 2, image={}, owned=tp(foo=range(8))).reply  # deleted
    assert g.group_epoch == 3 and g.subscription_metadata == {}


def test_two_members_rebalance_to_disjoint_cover():
    g = new_group()
    a = join(g, member_id="a", topics=("foo",)).reply
    b = join(g, member_id="b", topics=("foo",)).reply
    assert a.member_epoch == 1 and b.member_epoch == 2 and b.assignment == ()
    r = hb(g, "a", 1, owned=tp(foo=range(6))).reply
    kept = dict(r.assignment)[FOO]
    assert len(kept) == 3 and r.member_epoch == 1
    r = hb(g, "a", 1, owned={FOO: frozenset(kept)}).reply
    assert r.member_epoch == 2
    r = hb(g, "b", 2, owned={}).reply
    assert set(dict(r.assignment)[FOO]) == set(range(6)) - set(kept)
    assert g.state() == "Stable"


def test_replay_rebuilds_group_exactly():
    g = new_group()
    events = []
    for step in (
        lambda: join(g, member_id="a", topics=("foo",)),
        lambda: join(g, member_id="b", topics=("foo", "bar"), instance_id="ib"),
        lambda: hb(g, "a", 1, owned=tp(foo=range(6))),
        lambda: hb(g, "b", 2, owned={}),
        lambda: hb(g, "b", -2, instance_id="ib"),
    ):
        events.extend(step().events)
    r = replayed(g, events)
    same(g, r)


# ---------------------------------------------------------------------------------- offsets, types


def test_offset_commit_rules():
    g = seed(new_group(), 10, {"m1": tp(foo=[0])})
    parts = [CommitPartition("foo", 0, 42)]
    assert g.commit(0, member_id="x", group_instance_id=None, generation=10, partitions=parts).reply.partitions[0][2] == "UNKNOWN_MEMBER_ID"
    assert g.commit(0, member_id="m1", group_instance_id=None, generation=10, partitions=parts, api_version=8).reply.partitions[0][2] == "UNSUPPORTED_VERSION"
    assert g.commit(0, member_id="m1", group_instance_id=None, generation=9, partitions=parts).reply.partitions[0][2] == "STALE_MEMBER_EPOCH"
    out = g.commit(0, member_id="m1", group_instance_id=None, generation=10, partitions=parts)
    assert out.reply.partitions[0][2] is None and isinstance(out.events[0], OffsetsCommitted)
    g.apply(out.events[0])
    assert g.fetch_offsets([("foo", 0)])[0].offset == 42
    assert g.validate_offset_fetch("m1", 9) == "STALE_MEMBER_EPOCH"
    assert g.validate_offset_fetch(None, -1) is None
    empty = new_group()
    assert empty.commit(0, member_id="", group_instance_id=None, generation=-1, partitions=parts).reply.partitions[0][2] is None


def test_classic_to_consumer_and_back_keeps_offsets():
    """Conversion of an empty classic group (offsets only) and #47: JoinGroup on an empty
    consumer group deletes it (epoch tombstones) and the id is classic again."""
    c = ClassicGroup(G)
    out = c.commit(0, member_id="", group_instance_id=None, generation=-1, partitions=[CommitPartition("foo", 0, 7)])
    stream = list(out.events)
    c.apply(out.events[0])
    from actors.consumer.group import is_empty_classic, modern_from

    assert is_empty_classic(c)
    m = modern_from(c, ModernConfig())
    hb_out = join(m, member_id="a", topics=("foo",))
    stream += hb_out.events
    stream += hb(m, "a", -1).events
    assert m.is_empty()
    stream += m.delete_records()
    folded = ClassicGroup(G)
    kinds = []
    for e in stream:
        folded = evolve(folded, e)
        kinds.append(type(folded).__name__)
    assert "ModernGroup" in kinds and kinds[-1] == "ClassicGroup"
    assert folded.exists and folded.state == "Empty" and folded.fetch_offsets([("foo", 0)])[0].offset == 7


def test_config_bounds_and_assignors():
    assert ModernConfig.from_config({}) == ModernConfig()
    assert ModernConfig.from_config({"group.consumer.assignors": "range,uniform"}).assignors == ("range", "uniform")
    assert ModernConfig.from_config({"group.consumer.assignors": "org.apache.kafka.coordinator.group.assignor.RangeAssignor"}).assignors == ("range",)
    for bad in ({"group.consumer.session.timeout.ms": "1000"}, {"group.consumer.heartbeat.interval.ms": "100"},
                {"group.consumer.assignors": "sticky"}, {"group.consumer.assignors": ""},
                {"group.consumer.heartbeat.interval.ms": "15000", "group.consumer.session.timeout.ms": "45000",
                 "group.consumer.max.heartbeat.interval.ms": "60000", "group.consumer.min.session.timeout.ms": "1000"} | {"group.consumer.session.timeout.ms": "15000"}):
        with pytest.raises(ValueError):
            ModernConfig.from_config(bad)


def test_range_assignor_chosen_by_members():
    g = new_group()
    join(g, member_id="a", topics=("foo",), server_assignor="range")
    assert g.preferred_assignor() == "range"
    assert g.describe().assignor_name == "range"
