"""ShareGroupHeartbeat as a pure decider: scenarios named after ``GroupMetadataManagerTest``."""

from __future__ import annotations

import pytest

from actors.share.config import BrokerShareConfig, validate_group_configs
from actors.share.membership import (
    EMPTY,
    STABLE,
    HeartbeatDecision,
    MembershipError,
    ShareGroupHeartbeat,
    ShareGroupMembership,
    decide_heartbeat,
    decide_session_expiry,
    evolve,
    touch,
)
from events.share_group import (
    GroupConfigAltered,
    GroupEpochBumped,
    MemberAssignmentReconciled,
    MemberFenced,
    MemberSubscriptionUpdated,
    SubscriptionMetadataUpdated,
    TargetAssignmentUpdated,
    TopicMeta,
    TopicPartitions,
)

BROKER = BrokerShareConfig()
TOPICS = {"foo": ("FOO-ID", 6), "bar": ("BAR-ID", 3), "zar": ("ZAR-ID", 2)}


def hb(member, epoch, topics=None, group="grp", **kw) -> ShareGroupHeartbeat:
    return ShareGroupHeartbeat(group, member, epoch, subscribed_topic_names=topics, **kw)


def apply(state: ShareGroupMembership, decision: HeartbeatDecision) -> ShareGroupMembership:
    for ev in decision.events:
        evolve(state, ev)
    return state


def run(state, req, now=0, topics=TOPICS, broker=BROKER):
    d = decide_heartbeat(state, req, topics, broker, now)
    apply(state, d)
    if req.member_epoch != -1:
        touch(state, d.response.member_id, now, broker)
    return d


def err(state, req, topics=TOPICS, broker=BROKER) -> MembershipError:
    before = state.comparable()
    with pytest.raises(MembershipError) as exc:
        decide_heartbeat(state, req, topics, broker, 0)
    assert state.comparable() == before  # a refused heartbeat changes nothing
    return exc.value


def test_GroupMetadataManagerTest_testShareGroupHeartbeatRequestValidation():
    st = ShareGroupMembership("grp")
    cases = [
        (ShareGroupHeartbeat("", "m", 0, subscribed_topic_names=("foo",)), "GroupId can't be empty."),
        (ShareGroupHeartbeat("   ", "m", 0, subscribed_topic_names=("foo",)), "GroupId can't be empty."),
        (ShareGroupHeartbeat("grp", "m", 0, rack_id="", subscribed_topic_names=("foo",)), "RackId can't be empty."),
        (ShareGroupHeartbeat("grp", "", 1), "MemberId can't be empty."),
        (ShareGroupHeartbeat("grp", " ", -1), "MemberId can't be empty."),
        (ShareGroupHeartbeat("grp", "m", 0), "SubscribedTopicNames must be set in first request."),
        (ShareGroupHeartbeat("grp", "m", 0, subscribed_topic_names=()), "SubscribedTopicNames must be set in first request."),
        (ShareGroupHeartbeat("grp", "m", -2), "MemberEpoch is invalid."),
    ]
    for req, message in cases:
        e = err(st, req)
        assert (e.error, e.message) == ("INVALID_REQUEST", message), req


def test_member_id_chosen_by_the_client_is_kept():
    st = ShareGroupMembership("grp")
    d = run(st, hb("client-uuid-1", 0, ("foo",)))
    assert d.response.member_id == "client-uuid-1"
    assert set(st.members) == {"client-uuid-1"}


def test_GroupMetadataManagerTest_testShareGroupUnknownMemberIdJoins():
    st = ShareGroupMembership("grp")
    run(st, hb("m1", 0, ("foo",)))
    e = err(st, hb("random-member", 1))
    assert e.error == "UNKNOWN_MEMBER_ID"
    assert e.message == "Member random-member is not a member of group grp."


def test_GroupMetadataManagerTest_testShareGroupUnknownGroupId():
    # Kafka 4.x GroupMetadataManager.getOrMaybeCreateShareGroup(groupId, createIfNotExists=false)
    # throws GroupIdNotFoundException("Share group … not found.") (late 2024 it was an
    # IllegalStateException, i.e. UNKNOWN_SERVER_ERROR on the wire).
    e = err(ShareGroupMembership("grp"), hb("m1", 100))
    assert e.error == "GROUP_ID_NOT_FOUND"
    assert e.message == "Share group grp not found."
    # a deleted group is a missing group
    st = ShareGroupMembership("grp")
    run(st, hb("m1", 0, ("foo",)))
    run(st, hb("m1", -1))
    from events.share_group import ShareGroupDeleted
    evolve(st, ShareGroupDeleted("grp"))
    assert err(st, hb("m1", 1)).error == "GROUP_ID_NOT_FOUND"


def test_join_creates_group_bumps_epoch_and_assigns():
    st = ShareGroupMembership("grp")
    assert st.state == EMPTY and not st.exists
    d = run(st, hb("m1", 0, ("foo",)))
    kinds = [type(e) for e in d.events]
    assert kinds == [MemberSubscriptionUpdated, SubscriptionMetadataUpdated, GroupEpochBumped,
                     TargetAssignmentUpdated, MemberAssignmentReconciled]
    assert d.response.member_epoch == 1
    assert d.response.heartbeat_interval_ms == 5000
    assert d.response.assignment == (TopicPartitions("FOO-ID", (0, 1, 2, 3, 4, 5)),)
    assert (st.state, st.group_epoch, st.assignment_epoch) == (STABLE, 1, 1)


def test_second_member_rebalances_without_revocation_phase():
    st = ShareGroupMembership("grp")
    run(st, hb("m1", 0, ("foo",)))
    d2 = run(st, hb("m2", 0, ("foo",)))
    assert d2.response.member_epoch == 2 and st.group_epoch == 2
    assert len(d2.response.assignment[0].partitions) == 3
    # m1 heartbeats with its epoch 1: it jumps to epoch 2 with its new (smaller) target at once
    d1 = run(st, hb("m1", 1))
    assert d1.response.member_epoch == 2
    assert d1.response.assignment is not None
    got = set(d1.response.assignment[0].partitions) | set(d2.response.assignment[0].partitions)
    assert got == set(range(6))
    # a steady heartbeat: no events, no assignment in the response
    d = run(st, hb("m1", 2))
    assert d.events == () and d.response.assignment is None and d.response.member_epoch == 2


def test_full_request_at_a_known_epoch_gets_the_assignment():
    """Kafka 4.2 ``GroupMetadataManager.shareGroupHeartbeat``: the assignment is in the response
    when the request epoch is 0, when the request is *full* (``SubscribedTopicNames`` set, as a
    client sends after an error or a timeout) or when the member's assignment changed."""
    st = ShareGroupMembership("grp")
    run(st, hb("m1", 0, ("foo",)))
    d = run(st, hb("m1", 1, ("foo",)))  # full request, nothing changed
    assert d.events == ()
    assert d.response.assignment == (TopicPartitions("FOO-ID", (0, 1, 2, 3, 4, 5)),)
    assert run(st, hb("m1", 1)).response.assignment is None  # incremental, unchanged: omitted


def test_fenced_member_epoch_greater_and_smaller_than_known():
    st = ShareGroupMembership("grp")
    run(st, hb("m1", 0, ("foo",)))
    run(st, hb("m2", 0, ("foo",)))
    run(st, hb("m1", 1))  # m1: epoch 2, previous 1
    e = err(st, hb("m1", 3))
    assert e.error == "FENCED_MEMBER_EPOCH" and "greater member epoch (3)" in e.message
    # the previous epoch is accepted (the response carrying the bump may have been lost)
    assert decide_heartbeat(st, hb("m1", 1), None, BROKER, 0).response.member_epoch == 2
    e = err(st, hb("m1", 0, ("foo",)))
    assert e.error == "FENCED_MEMBER_EPOCH" and "smaller member epoch (0)" in e.message


def test_group_max_size_reached_only_for_new_members():
    broker = BrokerShareConfig.from_config({"group.share.max.size": "2"}, strict_ranges=False)
    st = ShareGroupMembership("grp")
    run(st, hb("m1", 0, ("foo",)), broker=broker)
    run(st, hb("m2", 0, ("foo",)), broker=broker)
    e = err(st, hb("m3", 0, ("foo",)), broker=broker)
    assert e.error == "GROUP_MAX_SIZE_REACHED"
    assert e.message == "The share group has reached its maximum capacity of 2 members."
    # an existing member still heartbeats
    assert decide_heartbeat(st, hb("m2", 2), None, broker, 0).response.member_epoch == 2


def test_GroupMetadataManagerTest_testShareGroupLeavingMemberBumpsGroupEpoch():
    # Scenario #87: group epoch 10, m1 on foo+bar, m2 on zar; m2 leaves with -1.
    st = ShareGroupMembership("grp")
    for ev in [
        MemberSubscriptionUpdated("grp", "m1", "client", "localhost", None, ("bar", "foo")),
        MemberSubscriptionUpdated("grp", "m2", "client", "localhost", None, ("zar",)),
        SubscriptionMetadataUpdated("grp", (TopicMeta("bar", "BAR-ID", 3), TopicMeta("foo", "FOO-ID", 6), TopicMeta("zar", "ZAR-ID", 2))),
        GroupEpochBumped("grp", 10),
        MemberAssignmentReconciled("grp", "m1", 10, 9, (TopicPartitions("BAR-ID", (0, 1, 2)), TopicPartitions("FOO-ID", (0, 1, 2, 3, 4, 5)))),
        MemberAssignmentReconciled("grp", "m2", 10, 9, (TopicPartitions("ZAR-ID", (0, 1)),)),
    ]:
        evolve(st, ev)
    d = decide_heartbeat(st, hb("m2", -1), None, BROKER, 0)
    assert (d.response.member_id, d.response.member_epoch) == ("m2", -1)
    assert d.events == (
        MemberFenced("grp", "m2", "LEAVE"),
        SubscriptionMetadataUpdated("grp", (TopicMeta("bar", "BAR-ID", 3), TopicMeta("foo", "FOO-ID", 6))),
        GroupEpochBumped("grp", 11),
    )
    apply(st, d)
    assert set(st.members) == {"m1"} and st.group_epoch == 11 and "zar" not in st.subscription_metadata


def test_leave_of_unknown_member_and_last_member_empties_group():
    st = ShareGroupMembership("grp")
    assert err(st, hb("m1", -1)).error == "GROUP_ID_NOT_FOUND"
    run(st, hb("m1", 0, ("foo",)))
    assert err(st, hb("ghost", -1)).error == "UNKNOWN_MEMBER_ID"
    run(st, hb("m1", -1))
    assert st.state == EMPTY and st.exists and st.group_epoch == 2
    assert "m1" not in st.deadlines


def test_GroupMetadataManagerTest_testShareGroupDynamicConfigs():
    # Scenario #89.
    st = ShareGroupMembership("grp")
    d = run(st, hb("m1", 0, ("foo",)), now=1000)
    assert d.response.heartbeat_interval_ms == 5000
    assert st.deadlines["m1"] == 1000 + 45000
    cfg = validate_group_configs({"share.session.timeout.ms": "50000", "share.heartbeat.interval.ms": "10000"}, BROKER)
    evolve(st, GroupConfigAltered("grp", cfg.as_dict()))
    d = run(st, hb("m1", 1), now=2000)
    assert d.response.heartbeat_interval_ms == 10000
    assert st.deadlines["m1"] == 2000 + 50000
    run(st, hb("m1", -1), now=3000)
    assert "m1" not in st.deadlines


def test_session_timeout_expiry_fences_members():
    st = ShareGroupMembership("grp")
    run(st, hb("m1", 0, ("foo",)), now=0)
    run(st, hb("m2", 0, ("bar",)), now=10_000)
    assert decide_session_expiry(st, 44_999) == []
    evs = decide_session_expiry(st, 45_000)
    assert evs[0] == MemberFenced("grp", "m1", "SESSION_TIMEOUT")
    assert evs[-1] == GroupEpochBumped("grp", st.group_epoch + 1)
    for ev in evs:
        evolve(st, ev)
    assert set(st.members) == {"m2"} and "foo" not in st.subscription_metadata
    evs = decide_session_expiry(st, 100_000)
    for ev in evs:
        evolve(st, ev)
    assert st.state == EMPTY


def test_topic_partition_count_change_bumps_group_epoch():
    st = ShareGroupMembership("grp")
    run(st, hb("m1", 0, ("foo",)))
    d = run(st, hb("m1", 1), topics={"foo": ("FOO-ID", 8)})
    assert st.group_epoch == 2 and d.response.member_epoch == 2
    assert d.response.assignment == (TopicPartitions("FOO-ID", tuple(range(8))),)


def test_subscribing_to_an_unknown_topic_assigns_nothing_until_it_exists():
    st = ShareGroupMembership("grp")
    d = run(st, hb("m1", 0, ("nope",)), topics={})
    assert d.response.assignment == ()
    d = run(st, hb("m1", d.response.member_epoch), topics={"nope": ("NOPE-ID", 1)})
    assert d.response.assignment == (TopicPartitions("NOPE-ID", (0,)),)


def test_snapshot_round_trip():
    st = ShareGroupMembership("grp")
    run(st, hb("m1", 0, ("foo", "bar"), rack_id="r1", client_id="c", client_host="/1.2.3.4"))
    run(st, hb("m2", 0, ("foo",)))
    evolve(st, GroupConfigAltered("grp", {"share.record.lock.duration.ms": "20000"}))
    back = ShareGroupMembership.from_dict(st.to_dict())
    assert back.comparable() == st.comparable()
    assert back.configs.record_lock_duration_ms == 20000


def test_deleted_topic_leaves_subscription_metadata_and_assignment():
    st = ShareGroupMembership("grp")
    run(st, hb("m1", 0, ("foo", "bar")))
    d = run(st, hb("m1", 1), topics={"foo": TOPICS["foo"]})
    assert "bar" not in st.subscription_metadata
    assert d.response.assignment == (TopicPartitions("FOO-ID", tuple(range(6))),)
