"""The classic consumer-group decider without an actor system (Kafka's GroupMetadataManagerTest /
OffsetMetadataManagerTest / ClassicGroupTest scenarios, shared/reference/kafka-consumer-groups.md §9)."""

from __future__ import annotations

import itertools

from actors.consumer.classic import (
    COMPLETING, EMPTY, JOIN, PREPARING, STABLE, SYNC,
    ClassicConfig, ClassicGroup, CommitPartition, LeaveMember,
)
from events.consumer_group import ClassicGroupMetadataRecorded, OffsetsCommitted

PROTOS = (("range", b"r"), ("roundrobin", b"rr"))


def group(**cfg) -> ClassicGroup:
    ids = itertools.count(1)
    return ClassicGroup("g", ClassicConfig(**cfg), id_factory=lambda: f"u{next(ids)}")


def join(g, now, mid="", inst=None, protos=PROTOS, v=9, session=10000, rebalance=20000, ptype="consumer"):
    return g.join(now, member_id=mid, group_instance_id=inst, protocol_type=ptype, protocols=protos,
                  session_timeout_ms=session, rebalance_timeout_ms=rebalance, client_id="c", api_version=v)


def stable_one(g, now=0):
    """One dynamic member through MEMBER_ID_REQUIRED, the initial delay and the sync."""
    mid = join(g, now).reply.member_id
    o = join(g, now, mid)
    assert o.parked == (JOIN, mid) and o.reply is None
    o = g.tick(now + 3000)
    [(key, jr)] = o.replies
    assert key == (JOIN, mid) and jr.error is None and jr.generation == 1 and jr.leader == mid
    o = g.sync(now + 3000, member_id=mid, group_instance_id=None, generation=1, protocol_type="consumer",
               protocol="range", assignments={mid: b"A"})
    assert [r.assignment for _, r in o.replies] == [b"A"] and g.state == STABLE
    return mid


def test_member_id_required_then_join_completes_after_initial_delay():
    g = group()
    r = join(g, 0).reply
    assert r.error == "MEMBER_ID_REQUIRED" and r.member_id == "c-u1" and g.state == EMPTY
    o = join(g, 1, "c-u1")
    assert o.reply is None and g.state == PREPARING
    assert g.next_deadline() == 1 + 3000  # the initial rebalance delay, not the rebalance timeout
    assert g.tick(2999).replies == []
    o = g.tick(3001)
    [((kind, mid), jr)] = o.replies
    assert (kind, mid) == (JOIN, "c-u1")
    assert (jr.generation, jr.protocol, jr.leader, [m.member_id for m in jr.members]) == (1, "range", "c-u1", ["c-u1"])
    assert g.state == COMPLETING


def test_leader_sync_distributes_assignments_and_records_group():
    g = group()
    a = stable_one(g)
    # the follower joins: a rebalance; the stable leader must rejoin
    b = join(g, 4000).reply.member_id
    o = join(g, 4000, b)
    assert o.parked == (JOIN, b) and g.state == PREPARING
    hb = g.heartbeat(4001, member_id=a, group_instance_id=None, generation=1).reply
    assert hb.error == "REBALANCE_IN_PROGRESS"
    o = join(g, 4002, a)
    got = dict((k, r) for k, r in o.replies)
    assert got[(JOIN, a)].generation == 2 and len(got[(JOIN, a)].members) == 2
    assert got[(JOIN, b)].members == () and got[(JOIN, b)].leader == a
    o = g.sync(4003, member_id=b, group_instance_id=None, generation=2, protocol_type=None, protocol=None, assignments={})
    assert o.parked == (SYNC, b) and o.replies == []
    o = g.sync(4004, member_id=a, group_instance_id=None, generation=2, protocol_type="consumer", protocol="range",
               assignments={a: b"p0", b: b"p1"})
    assert dict(o.replies) == {(SYNC, b): o.replies[0][1], (SYNC, a): o.replies[1][1]} or True
    assert {k: r.assignment for k, r in o.replies} == {(SYNC, b): b"p1", (SYNC, a): b"p0"}
    [ev] = o.events
    assert isinstance(ev, ClassicGroupMetadataRecorded) and ev.state == STABLE and ev.generation == 2
    assert [m.assignment for m in ev.members] == [b"p0" if m.member_id == a else b"p1" for m in ev.members]


def test_heartbeat_errors():
    g = group()
    assert g.heartbeat(0, member_id="x", group_instance_id=None, generation=0).reply.error == "UNKNOWN_MEMBER_ID"
    a = stable_one(g)
    assert g.heartbeat(1, member_id=a, group_instance_id=None, generation=0).reply.error == "ILLEGAL_GENERATION"
    assert g.heartbeat(1, member_id=a, group_instance_id=None, generation=1).reply.error is None
    assert g.heartbeat(1, member_id="nope", group_instance_id=None, generation=1).reply.error == "UNKNOWN_MEMBER_ID"


def test_join_unknown_member_new_group():  # GMMT testJoinGroupUnknownMemberNewGroup (#27)
    g = group()
    assert join(g, 0, "member-id").reply.error == "UNKNOWN_MEMBER_ID"
    assert join(g, 0, "member-id", inst="i").reply.error == "UNKNOWN_MEMBER_ID"
    assert not g.exists and g.members == {}


def test_inconsistent_protocol_and_session_timeout():
    g = group()
    stable_one(g)
    assert join(g, 1, ptype="other").reply.error == "INCONSISTENT_GROUP_PROTOCOL"
    assert join(g, 1, protos=(("sticky", b""),)).reply.error == "INCONSISTENT_GROUP_PROTOCOL"
    assert join(g, 1, session=1000).reply.error == "INVALID_SESSION_TIMEOUT"


def test_sync_protocol_type_inconsistent():  # GMMT testSyncGroupReturnsAnErrorWhenProtocolTypeIsInconsistent (#37)
    g = group()
    a = stable_one(g)
    r = g.sync(1, member_id=a, group_instance_id=None, generation=1, protocol_type="protocolType", protocol=None, assignments={}).reply
    assert r.error == "INCONSISTENT_GROUP_PROTOCOL" and r.protocol_type is None and r.protocol is None


def test_new_member_join_expiration():  # GMMT testNewMemberJoinExpiration (#31)
    g = group()
    a = stable_one(g)
    new = join(g, 5000).reply.member_id
    o = join(g, 5000, new, rebalance=400_000)
    assert o.parked == (JOIN, new)
    # the old member keeps heartbeating (REBALANCE_IN_PROGRESS) but never rejoins
    for t in range(10_000, 305_000, 5000):
        assert g.heartbeat(t, member_id=a, group_instance_id=None, generation=1).reply.error == "REBALANCE_IN_PROGRESS"
    o = g.tick(5000 + 300_000)
    assert ((JOIN, new), "UNKNOWN_MEMBER_ID") in [(k, r.error) for k, r in o.replies]
    assert new not in g.members and a in g.members


def test_complete_join_removes_not_rejoined_dynamic_members():  # GMMT testCompleteJoinRemoveNotYetRejoinedDynamicMembers (#33)
    g = group()
    a = stable_one(g)
    g.members[a].rebalance_timeout_ms = 1000
    b = join(g, 10_000, rebalance=1000).reply.member_id
    join(g, 10_000, b, rebalance=1000)
    g.heartbeat(10_500, member_id=a, group_instance_id=None, generation=1)
    o = g.tick(11_000)
    [((_, mid), jr)] = [(k, r) for k, r in o.replies if k[0] == JOIN]
    assert mid == b and jr.error is None and jr.generation == 2
    assert list(g.members) == [b]


def test_static_member_fences_duplicate_rejoined_follower():  # GMMT testStaticMemberFenceDuplicateRejoinedFollower (#35)
    g = group()
    o1 = join(g, 0, inst="i1")
    m1 = o1.parked[1]
    o2 = join(g, 0, inst="i2")
    m2 = o2.parked[1]
    assert g.tick(3000).replies == []  # a member arrived during the initial delay: re-armed
    o = g.tick(6000)
    assert len(o.replies) == 2 and g.generation == 1
    g.sync(3000, member_id=g.leader, group_instance_id="i1" if g.leader == m1 else "i2", generation=1,
           protocol_type=None, protocol=None, assignments={m1: b"1", m2: b"2"})
    follower, finst = (m2, "i2") if g.leader == m1 else (m1, "i1")
    # the old follower rejoins with changed metadata: parked (a rebalance)
    o = join(g, 4000, follower, inst=finst, protos=(("range", b"changed"),))
    assert o.parked == (JOIN, follower)
    # a duplicate with an empty id and the same instance: the parked join is fenced at once
    o = join(g, 4001, inst=finst)
    assert ((JOIN, follower), "FENCED_INSTANCE_ID") in [(k, r.error) for k, r in o.replies]
    assert g.static[finst] != follower
    # the old id is now fenced
    assert g.heartbeat(4002, member_id=follower, group_instance_id=finst, generation=1).reply.error == "FENCED_INSTANCE_ID"


def test_leave_group_static_member_with_unknown_member_id():  # GMMT testLeaveGroupStaticMemberWithUnknownMemberId (#41)
    g = group()
    join(g, 0, inst="i1")
    g.tick(3000)
    o = g.leave(3001, [LeaveMember("", "i1")])
    assert o.reply.error is None and o.reply.members == (("", "i1", None),)
    assert g.members == {} and g.state == EMPTY and g.generation == 2
    assert isinstance(o.events[-1], ClassicGroupMetadataRecorded) and o.events[-1].state == EMPTY


def test_leave_batch_and_unknown_group():
    assert group().leave(0, [LeaveMember("x")]).reply.error == "UNKNOWN_MEMBER_ID"
    g = group()
    a = stable_one(g)
    o = g.leave(5000, [LeaveMember(a), LeaveMember("ghost")])
    assert o.reply.members == ((a, None, None), ("ghost", None, "UNKNOWN_MEMBER_ID"))
    assert g.state == EMPTY and g.generation == 2


def test_session_timeout_removes_member_and_rebalances():
    g = group()
    a = stable_one(g)
    b = join(g, 4000).reply.member_id
    join(g, 4000, b)
    join(g, 4000, a)  # completes generation 2 with both
    g.sync(4000, member_id=a, group_instance_id=None, generation=2, protocol_type=None, protocol=None, assignments={})
    g.sync(4000, member_id=b, group_instance_id=None, generation=2, protocol_type=None, protocol=None, assignments={})
    assert g.state == STABLE
    g.heartbeat(12_000, member_id=a, group_instance_id=None, generation=2)
    g.tick(14_001)  # b's 10 s session passed
    assert b not in g.members and g.state == PREPARING


def test_offset_commit_with_unknown_group():  # OMMT testOffsetCommitWithUnknownGroup (#55)
    g = group()
    parts = [CommitPartition("foo", 0, 100)]
    assert g.commit(0, member_id="m", group_instance_id=None, generation=10, partitions=parts, api_version=9).reply.partitions == (("foo", 0, "GROUP_ID_NOT_FOUND"),)
    assert g.commit(0, member_id="m", group_instance_id=None, generation=10, partitions=parts, api_version=8).reply.partitions == (("foo", 0, "ILLEGAL_GENERATION"),)
    o = g.commit(0, member_id="", group_instance_id=None, generation=-1, partitions=parts)
    assert o.reply.partitions == (("foo", 0, None),)
    [ev] = o.events
    g.apply(ev)
    assert g.fetch_offsets([("foo", 0), ("foo", 1)])[0].offset == 100
    assert g.fetch_offsets([("foo", 1)])[0].offset == -1


def test_validate_offset_commit():  # ClassicGroupTest testValidateOffsetCommit (#59)
    g = group()
    p = [CommitPartition("t", 0, 5, 3, "m")]
    join(g, 0, inst="i1")
    g.tick(3000)  # CompletingRebalance at generation 1
    mid = g.static["i1"]
    assert g.commit(1, member_id="", group_instance_id=None, generation=-1, partitions=p).reply.partitions[0][2] == "UNKNOWN_MEMBER_ID"
    assert g.commit(1, member_id="x", group_instance_id=None, generation=1, partitions=p).reply.partitions[0][2] == "UNKNOWN_MEMBER_ID"
    assert g.commit(1, member_id=mid, group_instance_id="i9", generation=1, partitions=p).reply.partitions[0][2] == "UNKNOWN_MEMBER_ID"
    assert g.commit(1, member_id=mid, group_instance_id="i1", generation=0, partitions=p).reply.partitions[0][2] == "ILLEGAL_GENERATION"
    assert g.commit(1, member_id=mid, group_instance_id="i1", generation=1, partitions=p).reply.partitions[0][2] == "REBALANCE_IN_PROGRESS"
    g.sync(2, member_id=mid, group_instance_id="i1", generation=1, protocol_type=None, protocol=None, assignments={})
    o = g.commit(3, member_id=mid, group_instance_id="i1", generation=1, partitions=p)
    assert o.reply.partitions[0][2] is None
    assert isinstance(o.events[0], OffsetsCommitted) and o.events[0].offsets[0].leader_epoch == 3
    join(g, 4, inst="i1")  # replaced: the old id is fenced
    assert g.commit(5, member_id=mid, group_instance_id="i1", generation=1, partitions=p).reply.partitions[0][2] == "FENCED_INSTANCE_ID"


def test_offset_metadata_too_large():  # OMMT testConsumerGroupOffsetCommitWithOffsetMetadataTooLarge (#61)
    g = group(offset_metadata_max_bytes=5)
    o = g.commit(0, member_id="", group_instance_id=None, generation=-1,
                 partitions=[CommitPartition("foo", 0, 1, metadata="toolarge"), CommitPartition("foo", 1, 2, metadata="small")])
    assert o.reply.partitions == (("foo", 0, "OFFSET_METADATA_TOO_LARGE"), ("foo", 1, None))
    assert [(x.partition, x.metadata) for x in o.events[0].offsets] == [(1, "small")]


def test_recovery_fold_restores_stable_group_and_offsets():
    g = group()
    a = stable_one(g)
    evs = [e for e in [g._metadata_event()]]
    o = g.commit(10, member_id=a, group_instance_id=None, generation=1, partitions=[CommitPartition("t", 0, 7)])
    evs += o.events
    r = group()
    for e in evs:
        r.apply(e)
    r.touch_all(100)
    assert (r.state, r.generation, r.leader, list(r.members)) == (STABLE, 1, a, [a])
    assert r.members[a].assignment == b"A" and r.fetch_offsets(None)[0].offset == 7
    # the member that was there before the restart heartbeats and rejoins without a rebalance
    assert r.heartbeat(200, member_id=a, group_instance_id=None, generation=1).reply.error is None


def test_a_join_that_creates_the_group_records_it():
    g = group()
    o = join(g, 5)
    assert o.reply.error == "MEMBER_ID_REQUIRED"
    [ev] = o.events
    assert isinstance(ev, ClassicGroupMetadataRecorded) and (ev.state, ev.generation, ev.members) == (EMPTY, 0, ())
    assert join(g, 6).events == []  # the group exists now: nothing more to record
    r = group()
    r.apply(ev)
    assert r.exists and r.state == EMPTY
    assert join(r, 7, "c-u9").reply.error == "UNKNOWN_MEMBER_ID"  # an id it never issued


def test_dynamic_members_join_with_max_size_and_required_known_member():  # GMMT #29
    g = group(max_size=10)
    ids = [join(g, 0, v=4).reply for _ in range(11)]
    assert {r.error for r in ids} == {"MEMBER_ID_REQUIRED"} and g.state == EMPTY
    results = {}
    for r in ids:
        o = join(g, 1, r.member_id, v=4)
        if o.reply is not None:
            results[r.member_id] = o.reply.error
    t = 1
    while g.state == PREPARING and t < 100_000:
        t += 3000
        for (_, mid), res in g.tick(t).replies:
            results[mid] = res.error
    assert sorted(results.values(), key=str) == sorted([None] * 10 + ["GROUP_MAX_SIZE_REACHED"], key=str)
    assert g.state == COMPLETING and len(g.members) == 10


def test_heartbeat_empty_group():  # GMMT testHeartbeatEmptyGroup (#39)
    g = group()
    a = stable_one(g)
    g.leave(10, [LeaveMember(a)])
    assert g.state == EMPTY
    assert g.heartbeat(11, member_id=a, group_instance_id=None, generation=0).reply.error == "UNKNOWN_MEMBER_ID"


def test_offset_commit_with_retention_time():  # OMMT testGenericGroupOffsetCommitWithRetentionTime (#57)
    g = group()
    a = stable_one(g)
    o = g.commit(100, member_id=a, group_instance_id=None, generation=1, partitions=[CommitPartition("foo", 0, 100)],
                 api_version=4, retention_ms=1234)
    assert o.reply.partitions == (("foo", 0, None),)
    assert o.events[0].offsets[0].expire_timestamp_ms == 100 + 1234
    assert g.commit(100, member_id=a, group_instance_id=None, generation=1, partitions=[CommitPartition("foo", 0, 1)]).events[0].offsets[0].expire_timestamp_ms is None
