"""``ConsumerGroupActor`` after a refused append that makes it reload the group from its stream:
every parked JoinGroup/SyncGroup (classic soft state the reload drops) is answered ``Failure`` at
once instead of hanging until its asker's timeout; a JoinGroup refused for its session timeout on
an empty consumer-protocol group converts nothing; LeaveGroup fences consumer-protocol members."""

from __future__ import annotations

from thespian.actors import ActorSystem

from actors.consumer import messages as m
from actors.consumer.classic import LeaveGroupResult, LeaveMember
from actors.consumer.modern import ConsumerHeartbeatResult
from actors.messages import Failure
from events.codec import new_event
from events.consumer_group import (
    CommittedOffset,
    ConsumerGroupEpochRecorded,
    OffsetsCommitted,
    stream_id_for,
)
from store.event_log import open_event_log
from tests.consumer.test_actor_group_commit import (
    TIMEOUT,
    G,
    commit,
    join_cmd,
    replies,
    stable_member,
    start,
    stream,
)


def test_a_reload_fails_the_parked_join_instead_of_dropping_it(asys: ActorSystem, tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    a, _j = start(asys, url)
    first = stable_member(asys, a)
    second = asys.ask(a, join_cmd(), TIMEOUT).member_id  # MEMBER_ID_REQUIRED: its id
    asys.tell(a, join_cmd(second))  # parked: the group waits for the first member to rejoin
    # another writer appends to the group's stream: the actor's next append is a version conflict
    elog = open_event_log(url)
    v = elog.stream_version(stream_id_for(G))
    elog.append(stream_id_for(G), [new_event(OffsetsCommitted(G, "", -1, (CommittedOffset("t", 9, 1, -1, "", 0),)))], v)
    asys.tell(a, commit(first, 1, 0, 5))
    got = replies(asys, 2)
    assert all(isinstance(r, Failure) and r.error == "NOT_COORDINATOR" for r in got), got


def _cg_heartbeat(member_id: str, epoch: int, **kw) -> m.ConsumerGroupHeartbeatCmd:
    return m.ConsumerGroupHeartbeatCmd(
        G, member_id, epoch, kw.get("instance_id"), None, 30000 if epoch == 0 else -1,
        ("t",) if epoch == 0 else None, None, () if epoch == 0 else None, "client", "127.0.0.1", (("t", "tid", 2),), 1)


def test_join_with_a_bad_session_timeout_does_not_convert_an_empty_consumer_group(asys: ActorSystem, tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    a, _j = start(asys, url, journal=False)
    r = asys.ask(a, _cg_heartbeat("m1", 0), TIMEOUT)
    assert isinstance(r, ConsumerHeartbeatResult) and r.error is None
    assert isinstance(asys.ask(a, _cg_heartbeat("m1", -1), TIMEOUT), ConsumerHeartbeatResult)  # now empty
    before = len(stream(url))
    bad = m.JoinGroupCmd(G, "", None, "consumer", (("range", b"x"),), 10, 20000, "client", "127.0.0.1", 9)
    assert asys.ask(a, bad, TIMEOUT).error == "INVALID_SESSION_TIMEOUT"
    assert len(stream(url)) == before  # no tombstones: still a consumer-protocol group
    assert asys.ask(a, m.DescribeConsumerGroup(G), TIMEOUT).group_type == "consumer"


def test_leave_group_fences_consumer_protocol_members(asys: ActorSystem, tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    a, _j = start(asys, url, journal=False)
    assert asys.ask(a, _cg_heartbeat("m1", 0), TIMEOUT).error is None
    assert asys.ask(a, _cg_heartbeat("m2", 0, instance_id="i2"), TIMEOUT).error is None
    epoch = [e.epoch for e in stream(url) if isinstance(e, ConsumerGroupEpochRecorded)][-1]
    r = asys.ask(a, m.LeaveGroupCmd(G, (LeaveMember("m1"), LeaveMember("", "i2"), LeaveMember("nobody"),
                                         LeaveMember("m9", "i2"))), TIMEOUT)
    assert r == LeaveGroupResult(None, (("m1", None, None), ("", "i2", None), ("nobody", None, "UNKNOWN_MEMBER_ID"),
                                        ("m9", "i2", "FENCED_INSTANCE_ID")))
    epochs = [e.epoch for e in stream(url) if isinstance(e, ConsumerGroupEpochRecorded)]
    assert epochs[-1] == epoch + 1 and epochs.count(epoch + 1) == 1  # both fenced with one bump
    s = asys.ask(a, m.DescribeConsumerGroup(G), TIMEOUT)
    assert (s.group_type, s.state, s.members) == ("consumer", "Empty", 0)
