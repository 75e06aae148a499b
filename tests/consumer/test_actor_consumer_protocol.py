"""``ConsumerGroupActor`` with KIP-848 consumer-protocol groups under ``simpleSystemBase``: a
heartbeat converts an empty classic group (keeping its offsets), a non-empty classic group is
GROUP_ID_NOT_FOUND, classic APIs on a consumer group, JoinGroup on an empty consumer group converts
it back (#47), the group and its timers come back from the stream."""

from __future__ import annotations

from thespian.actors import ActorExitRequest

from actors.consumer import messages as m
from actors.consumer.actor import ConsumerGroupActor
from actors.consumer.classic import CommitPartition, JoinGroupResult
from actors.consumer.modern import ConsumerGroupDescription, ConsumerHeartbeatResult
from actors.messages import Configure, Configured
from events.codec import decode_recorded
from events.consumer_group import ConsumerGroupEpochRecorded, stream_id_for
from store.event_log import open_event_log

G = "kg"
TIMEOUT = 10
TOPIC_ID = "00000000-0000-0000-0000-0000000000aa"
IMAGE = (("t", TOPIC_ID, 4),)


def start(asys, url, **cfg):
    a = asys.createActor(ConsumerGroupActor)
    r = asys.ask(a, Configure({"event.log.url": url, "group.initial.rebalance.delay.ms": "0", **cfg}, G), TIMEOUT)
    assert isinstance(r, Configured), r
    return a


def hb(mid, epoch, owned=None, topics=None, rto=-1):
    return m.ConsumerGroupHeartbeatCmd(G, mid, epoch, None, None, rto, topics, None, owned, "client", "127.0.0.1", IMAGE, 1)


def join(mid):
    return hb(mid, 0, owned=(), topics=("t",), rto=30000)


def test_heartbeat_converts_empty_classic_and_back(asys, tmp_path):
    url = f"sqlite:///{tmp_path}/events.db"
    a = start(asys, url)
    # a simple classic group: committed offsets only
    c = asys.ask(a, m.OffsetCommitCmd(G, "", None, -1, (CommitPartition("t", 0, 42),), 9), TIMEOUT)
    assert c.partitions == (("t", 0, None),)
    r = asys.ask(a, join("a"), TIMEOUT)
    assert isinstance(r, ConsumerHeartbeatResult) and r.error is None and r.member_epoch == 1
    assert dict(r.assignment) == {TOPIC_ID: (0, 1, 2, 3)}
    s = asys.ask(a, m.DescribeConsumerGroup(G), TIMEOUT)
    assert (s.group_type, s.state, s.protocol_type, s.members) == ("consumer", "Stable", "consumer", 1)
    d = asys.ask(a, m.ConsumerGroupDescribeCmd(G), TIMEOUT)
    assert isinstance(d, ConsumerGroupDescription) and d.error is None and d.members[0].assignment == ((TOPIC_ID, "t", (0, 1, 2, 3)),)
    f = asys.ask(a, m.OffsetFetchCmd(G, (("t", 0),)), TIMEOUT)
    assert f.offsets[0].offset == 42  # the offsets were kept
    # classic APIs on a consumer group
    assert asys.ask(a, m.JoinGroupCmd(G, "", None, "consumer", (("range", b""),), 10000, 20000, "c", "h", 9), TIMEOUT).error == "INCONSISTENT_GROUP_PROTOCOL"
    assert asys.ask(a, m.HeartbeatCmd(G, "a", None, 1), TIMEOUT).error == "UNKNOWN_MEMBER_ID"
    # commits follow the consumer-group rules
    assert asys.ask(a, m.OffsetCommitCmd(G, "a", None, 0, (CommitPartition("t", 0, 50),), 9), TIMEOUT).partitions[0][2] == "STALE_MEMBER_EPOCH"
    assert asys.ask(a, m.OffsetCommitCmd(G, "a", None, 1, (CommitPartition("t", 0, 50),), 9), TIMEOUT).partitions[0][2] is None
    # recovery: a fresh actor rebuilds the group (and arms the session timer)
    asys.tell(a, ActorExitRequest())
    b = start(asys, url)
    r = asys.ask(b, hb("a", 1), TIMEOUT)
    assert r.error is None and r.member_epoch == 1 and r.assignment is None
    # the member leaves; a JoinGroup converts the empty consumer group back to classic (#47)
    assert asys.ask(b, hb("a", -1), TIMEOUT).error is None
    j = asys.ask(b, m.JoinGroupCmd(G, "", None, "consumer", (("range", b""),), 10000, 20000, "c", "h", 9), TIMEOUT)
    assert isinstance(j, JoinGroupResult) and j.error == "MEMBER_ID_REQUIRED"
    s = asys.ask(b, m.DescribeConsumerGroup(G), TIMEOUT)
    assert s.group_type == "classic"
    assert asys.ask(b, m.ConsumerGroupDescribeCmd(G), TIMEOUT).error == "GROUP_ID_NOT_FOUND"
    assert asys.ask(b, m.OffsetFetchCmd(G, (("t", 0),)), TIMEOUT).offsets[0].offset == 50
    evs = [decode_recorded(e) for e in open_event_log(url).read_stream(stream_id_for(G))]
    assert isinstance(evs[-1], ConsumerGroupEpochRecorded) and evs[-1].tombstone
    asys.tell(b, ActorExitRequest())
    c2 = start(asys, url)
    assert asys.ask(c2, m.DescribeConsumerGroup(G), TIMEOUT).group_type == "classic"


def test_non_empty_classic_group_refuses_heartbeat(asys, tmp_path):
    url = f"sqlite:///{tmp_path}/events.db"
    a = start(asys, url)
    mid = asys.ask(a, m.JoinGroupCmd(G, "", None, "consumer", (("range", b""),), 10000, 20000, "c", "h", 9), TIMEOUT).member_id
    j = asys.ask(a, m.JoinGroupCmd(G, mid, None, "consumer", (("range", b""),), 10000, 20000, "c", "h", 9), TIMEOUT)
    assert j.error is None
    r = asys.ask(a, join("x"), TIMEOUT)
    assert r.error == "GROUP_ID_NOT_FOUND"
    assert asys.ask(a, hb("x", 3), TIMEOUT).error == "GROUP_ID_NOT_FOUND"


def test_session_timeout_fences_through_the_actor(asys, tmp_path):
    import time

    url = f"sqlite:///{tmp_path}/events.db"
    a = start(asys, url, **{"group.consumer.session.timeout.ms": "300", "group.consumer.min.session.timeout.ms": "300",
                            "group.consumer.heartbeat.interval.ms": "100", "group.consumer.min.heartbeat.interval.ms": "100"})
    assert asys.ask(a, join("a"), TIMEOUT).member_epoch == 1
    time.sleep(0.6)
    s = asys.ask(a, m.DescribeConsumerGroup(G), TIMEOUT)
    assert (s.state, s.members) == ("Empty", 0)
    assert asys.ask(a, hb("a", 1), TIMEOUT).error == "UNKNOWN_MEMBER_ID"


def test_offset_fetch_checks_the_member_epoch(asys, tmp_path):
    url = f"sqlite:///{tmp_path}/events.db"
    a = start(asys, url)
    assert asys.ask(a, join("a"), TIMEOUT).member_epoch == 1
    ok = asys.ask(a, m.OffsetFetchCmd(G, (("t", 0),), "a", 1), TIMEOUT)
    assert isinstance(ok, m.OffsetFetchReply)
    assert isinstance(asys.ask(a, m.OffsetFetchCmd(G, (("t", 0),)), TIMEOUT), m.OffsetFetchReply)  # admin
    assert asys.ask(a, m.OffsetFetchCmd(G, (("t", 0),), "a", 0), TIMEOUT).error == "STALE_MEMBER_EPOCH"
    assert asys.ask(a, m.OffsetFetchCmd(G, (("t", 0),), "x", 1), TIMEOUT).error == "UNKNOWN_MEMBER_ID"
