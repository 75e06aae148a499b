"""The AuthorizingBackend's consumer-group rules (Kafka ``KafkaApis``): READ on the group for
JoinGroup/SyncGroup/Heartbeat/LeaveGroup/OffsetCommit plus READ on each committed topic; DESCRIBE
on the group and on the topics for OffsetFetch."""

from __future__ import annotations

from actors.consumer.classic import (
    CommitPartition, FetchedOffset, HeartbeatResult, JoinGroupResult, LeaveGroupResult, LeaveMember,
    OffsetCommitResult, SyncGroupResult,
)
from actors.consumer.messages import HeartbeatCmd, JoinGroupCmd, LeaveGroupCmd, OffsetCommitCmd, SyncGroupCmd
from wire.authz import AuthorizingBackend
from tests.wire.fake_backend import FakeBackend
from tests.wire.test_authz import allow, make


class Inner(FakeBackend):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list = []

    def consumer_join(self, cmd):
        self.calls.append(cmd)
        return JoinGroupResult(None, 1, "consumer", "range", "m", "m")

    def consumer_sync(self, cmd):
        self.calls.append(cmd)
        return SyncGroupResult(None, "consumer", "range", b"a")

    def consumer_heartbeat(self, cmd):
        self.calls.append(cmd)
        return HeartbeatResult(None)

    def consumer_leave(self, cmd):
        self.calls.append(cmd)
        return LeaveGroupResult(None, ())

    def consumer_commit(self, cmd):
        self.calls.append(cmd)
        return OffsetCommitResult(tuple((p.topic, p.partition, None) for p in cmd.partitions))

    def consumer_fetch_offsets(self, group, partitions, member_id=None, member_epoch=-1):
        self.calls.append((group, partitions))
        return None, [FetchedOffset(t, p, 7, 1, "md") for t, p in (partitions or [("a", 0), ("b", 0)])]


def _cmds(g: str):
    return (
        ("consumer_join", JoinGroupCmd(g, "", None, "consumer", (("range", b""),), 10000, 10000, "c", "h", 9)),
        ("consumer_sync", SyncGroupCmd(g, "m", None, 1, None, None, ())),
        ("consumer_heartbeat", HeartbeatCmd(g, "m", None, 1)),
        ("consumer_leave", LeaveGroupCmd(g, (LeaveMember("m"),))),
    )


def test_membership_calls_need_read_on_the_group():
    inner = Inner()
    denied = AuthorizingBackend(inner, make([allow("GROUP", "g", "DESCRIBE")])[0])
    for name, cmd in _cmds("g"):
        assert getattr(denied, name)(cmd).error == "GROUP_AUTHORIZATION_FAILED", name
    assert inner.calls == []
    ok = AuthorizingBackend(inner, make([allow("GROUP", "g", "READ")])[0])
    for name, cmd in _cmds("g"):
        assert getattr(ok, name)(cmd).error is None, name
    assert len(inner.calls) == 4


def test_commit_needs_read_on_group_and_topic():
    inner = Inner()
    cmd = OffsetCommitCmd("g", "m", None, 1, (CommitPartition("a", 0, 5), CommitPartition("b", 0, 6)), 8)
    no_group = AuthorizingBackend(inner, make([allow("TOPIC", "a", "READ")])[0])
    assert no_group.consumer_commit(cmd).partitions == (("a", 0, "GROUP_AUTHORIZATION_FAILED"), ("b", 0, "GROUP_AUTHORIZATION_FAILED"))
    assert inner.calls == []
    b = AuthorizingBackend(inner, make([allow("GROUP", "g", "READ"), allow("TOPIC", "a", "READ")])[0])
    assert b.consumer_commit(cmd).partitions == (("a", 0, None), ("b", 0, "TOPIC_AUTHORIZATION_FAILED"))
    assert [p.topic for p in inner.calls[0].partitions] == ["a"]  # the denied topic is not committed


def test_offset_fetch_needs_describe():
    inner = Inner()
    assert AuthorizingBackend(inner, make([allow("GROUP", "g", "READ"), allow("TOPIC", "a", "READ")])[0]).consumer_fetch_offsets("g", None)[1][0].topic == "a"
    denied = AuthorizingBackend(inner, make([allow("TOPIC", "*", "DESCRIBE")])[0])
    assert denied.consumer_fetch_offsets("g", None) == ("GROUP_AUTHORIZATION_FAILED", [])
    b = AuthorizingBackend(inner, make([allow("GROUP", "g", "DESCRIBE"), allow("TOPIC", "a", "DESCRIBE")])[0])
    err, offs = b.consumer_fetch_offsets("g", [("a", 0), ("b", 0)])
    assert err is None
    assert [(o.topic, o.offset, o.error) for o in offs] == [("a", 7, None), ("b", -1, "TOPIC_AUTHORIZATION_FAILED")]
    err, offs = b.consumer_fetch_offsets("g", None)
    assert [o.topic for o in offs] == ["a"]  # all offsets: denied topics left out
