"""``ConsumerGroupActor`` under ``simpleSystemBase`` (fixture ``asys``): delayed JoinGroup and
SyncGroup replies, committed offsets that survive a restart, fail-closed before recovery."""

from __future__ import annotations

from thespian.actors import ActorExitRequest

from actors.consumer import messages as m
from actors.consumer.actor import ConsumerGroupActor
from actors.consumer.classic import CommitPartition, HeartbeatResult, JoinGroupResult, LeaveMember, SyncGroupResult
from actors.messages import Configure, Configured, NotReady
from events.codec import decode_recorded
from events.consumer_group import ClassicGroupMetadataRecorded, OffsetsCommitted, stream_id_for
from store.event_log import open_event_log

G = "cg"
TIMEOUT = 10
PROTOS = (("range", b"meta"),)


def start(asys, url):
    a = asys.createActor(ConsumerGroupActor)
    r = asys.ask(a, Configure({"event.log.url": url, "group.initial.rebalance.delay.ms": "0"}, G), TIMEOUT)
    assert isinstance(r, Configured), r
    return a


def join_cmd(mid=""):
    return m.JoinGroupCmd(G, mid, None, "consumer", PROTOS, 10000, 20000, "client", "127.0.0.1", 9)


def test_not_ready_before_configure(asys):
    a = asys.createActor(ConsumerGroupActor)
    assert isinstance(asys.ask(a, m.HeartbeatCmd(G, "x", None, 0), TIMEOUT), NotReady)


def test_join_sync_commit_and_recover(asys, tmp_path):
    url = f"sqlite:///{tmp_path}/events.db"
    a = start(asys, url)
    r = asys.ask(a, join_cmd(), TIMEOUT)
    assert isinstance(r, JoinGroupResult) and r.error == "MEMBER_ID_REQUIRED"
    mid = r.member_id
    # the join is parked; the actor answers it when its (0 ms) initial-delay timer fires
    j = asys.ask(a, join_cmd(mid), TIMEOUT)
    assert isinstance(j, JoinGroupResult) and j.error is None and j.generation == 1 and j.leader == mid
    assert [x.member_id for x in j.members] == [mid]
    s = asys.ask(a, m.SyncGroupCmd(G, mid, None, 1, "consumer", "range", ((mid, b"assigned"),)), TIMEOUT)
    assert isinstance(s, SyncGroupResult) and s.error is None and s.assignment == b"assigned"
    assert asys.ask(a, m.HeartbeatCmd(G, mid, None, 1), TIMEOUT) == HeartbeatResult(None)
    c = asys.ask(a, m.OffsetCommitCmd(G, mid, None, 1, (CommitPartition("t", 0, 42, 5, "md"),), 8), TIMEOUT)
    assert c.partitions == (("t", 0, None),)
    f = asys.ask(a, m.OffsetFetchCmd(G, (("t", 0), ("t", 1))), TIMEOUT)
    assert [(o.offset, o.leader_epoch, o.metadata) for o in f.offsets] == [(42, 5, "md"), (-1, -1, "")]
    # the stream holds the generation and the commit
    log = open_event_log(url)
    evs = [decode_recorded(e) for e in log.read_stream(stream_id_for(G))]
    assert [type(e) for e in evs] == [ClassicGroupMetadataRecorded, ClassicGroupMetadataRecorded, OffsetsCommitted]
    assert [e.state for e in evs[:2]] == ["Empty", "Stable"]  # created by the first join, then generation 1
    # a fresh actor on the same log recovers the offsets and the Stable member
    asys.tell(a, ActorExitRequest())
    b = start(asys, url)
    f = asys.ask(b, m.OffsetFetchCmd(G, None), TIMEOUT)
    assert [(o.topic, o.partition, o.offset) for o in f.offsets] == [("t", 0, 42)]
    assert asys.ask(b, m.HeartbeatCmd(G, mid, None, 1), TIMEOUT) == HeartbeatResult(None)
    d = asys.ask(b, m.DescribeConsumerGroup(G), TIMEOUT)
    assert (d.state, d.protocol_type, d.members) == ("Stable", "consumer", 1)
    lv = asys.ask(b, m.LeaveGroupCmd(G, (LeaveMember(mid),)), TIMEOUT)
    assert lv.error is None and lv.members == ((mid, None, None),)
    assert asys.ask(b, m.DescribeConsumerGroup(G), TIMEOUT).state == "Empty"


def test_second_member_parks_until_leader_rejoins(asys, tmp_path):
    url = f"sqlite:///{tmp_path}/events.db"
    a = start(asys, url)
    m1 = asys.ask(a, join_cmd(), TIMEOUT).member_id
    assert asys.ask(a, join_cmd(m1), TIMEOUT).generation == 1
    asys.ask(a, m.SyncGroupCmd(G, m1, None, 1, None, None, ((m1, b"all"),)), TIMEOUT)
    m2 = asys.ask(a, join_cmd(), TIMEOUT).member_id
    asys.tell(a, join_cmd(m2))  # parked: the leader has not rejoined
    assert asys.ask(a, m.HeartbeatCmd(G, m1, None, 1), TIMEOUT).error == "REBALANCE_IN_PROGRESS"
    # the leader rejoins: both parked joins are answered (the tell's reply comes to us too)
    replies = [asys.ask(a, join_cmd(m1), TIMEOUT), asys.listen(TIMEOUT)]
    by_member = {r.member_id: r for r in replies}
    assert set(by_member) == {m1, m2}
    assert by_member[m1].generation == by_member[m2].generation == 2
    assert len(by_member[m1].members) == 2 and by_member[m2].members == ()


def test_group_admin_delete_offsets_then_group_and_reuse_after_restart(asys, tmp_path):
    """DescribeGroups / OffsetDelete / DeleteGroups through the actor: tombstones are durable
    before the reply, a deleted group is forgotten live and after a restart, and the id is reused."""
    from actors.consumer.classic import DeleteGroupResult, DescribedGroup, OffsetDeleteResult
    from events.consumer_group import ConsumerGroupDeleted, OffsetsDeleted

    url = f"sqlite:///{tmp_path}/events.db"
    a = start(asys, url)
    assert asys.ask(a, m.DescribeGroupCmd(G), TIMEOUT) == DescribedGroup(G, "Dead", "", "", ())
    assert asys.ask(a, m.DeleteGroupCmd(G), TIMEOUT) == DeleteGroupResult("GROUP_ID_NOT_FOUND")
    c = asys.ask(a, m.OffsetCommitCmd(G, "", None, -1, (CommitPartition("t", 0, 1), CommitPartition("t", 1, 2)), 9), TIMEOUT)
    assert c.partitions == (("t", 0, None), ("t", 1, None))
    d = asys.ask(a, m.OffsetDeleteCmd(G, (("t", 0),)), TIMEOUT)
    assert d == OffsetDeleteResult(None, (("t", 0, None),))
    f = asys.ask(a, m.OffsetFetchCmd(G, None), TIMEOUT)
    assert [(o.topic, o.partition) for o in f.offsets] == [("t", 1)]
    assert asys.ask(a, m.DescribeGroupCmd(G), TIMEOUT).state == "Empty"
    assert asys.ask(a, m.DeleteGroupCmd(G), TIMEOUT) == DeleteGroupResult(None)
    assert asys.ask(a, m.DescribeGroupCmd(G), TIMEOUT).state == "Dead"
    assert asys.ask(a, m.OffsetFetchCmd(G, None), TIMEOUT).offsets == ()
    assert asys.ask(a, m.DescribeConsumerGroup(G), TIMEOUT).exists is False
    log = open_event_log(url)
    evs = [decode_recorded(e) for e in log.read_stream(stream_id_for(G))]
    assert [type(e) for e in evs[-3:]] == [OffsetsDeleted, OffsetsDeleted, ConsumerGroupDeleted]
    # after a restart the group is still gone, and the id can be used again
    asys.tell(a, ActorExitRequest())
    b = start(asys, url)
    assert asys.ask(b, m.DescribeGroupCmd(G), TIMEOUT).state == "Dead"
    r = asys.ask(b, join_cmd(), TIMEOUT)
    j = asys.ask(b, join_cmd(r.member_id), TIMEOUT)
    assert j.error is None and j.generation == 1
