"""wire/groups.py handlers at every advertised version: each builds a response kio can encode,
maps the backend's results to Kafka's fields, and applies the request guards of
``GroupCoordinatorService``/``KafkaApis`` (empty group id, SyncGroup v5+ without protocol)."""

from __future__ import annotations

import datetime
from types import SimpleNamespace as NS

import pytest
from kio.schema.errors import ErrorCode

from actors.consumer.classic import (
    FetchedOffset, HeartbeatResult, JoinedMember, JoinGroupResult, LeaveGroupResult, OffsetCommitResult, SyncGroupResult,
)
from wire import groups
from wire.dispatch import SUPPORTED
from wire.protocol import DecodedRequest, encode_response


class Backend:
    def __init__(self) -> None:
        self.cmds: list = []

    def consumer_join(self, cmd):
        self.cmds.append(cmd)
        return JoinGroupResult(None, 3, "consumer", "range", "m1", "m1", (JoinedMember("m1", None, b"meta"),))

    def consumer_sync(self, cmd):
        self.cmds.append(cmd)
        return SyncGroupResult(None, "consumer", "range", b"asg")

    def consumer_heartbeat(self, cmd):
        self.cmds.append(cmd)
        return HeartbeatResult("REBALANCE_IN_PROGRESS")

    def consumer_leave(self, cmd):
        self.cmds.append(cmd)
        return LeaveGroupResult(None, tuple((m.member_id, m.group_instance_id, "UNKNOWN_MEMBER_ID" if m.member_id == "x" else None) for m in cmd.members))

    def consumer_commit(self, cmd):
        self.cmds.append(cmd)
        return OffsetCommitResult(tuple((p.topic, p.partition, None if p.topic == "t" else "UNKNOWN_TOPIC_OR_PARTITION") for p in cmd.partitions))

    def consumer_fetch_offsets(self, group, partitions, member_id=None, member_epoch=-1):
        self.cmds.append((group, partitions))
        return None, [FetchedOffset(t, p, 9 if p == 0 else -1, 2 if p == 0 else -1, "md" if p == 0 else "") for t, p in (partitions or [("t", 0)])]


def req(key: int, v: int, **body) -> DecodedRequest:
    return DecodedRequest(key, v, 1, "client", None, NS(**body))


def versions(key: int) -> list[int]:
    lo, hi = SUPPORTED[key]
    return list(range(lo, hi + 1))


MS = datetime.timedelta(milliseconds=10000)


@pytest.mark.parametrize("v", versions(11))
def test_join_group(v):
    b = Backend()
    r = groups.join_group(req(11, v, group_id="g", session_timeout=MS, rebalance_timeout=MS, member_id="", group_instance_id=None,
                              protocol_type="consumer", protocols=(NS(name="range", metadata=b"x"),)), b, "10.0.0.1")
    encode_response(1, r)
    assert r.error_code == ErrorCode.none and r.generation_id == 3 and r.leader == "m1" and r.members[0].metadata == b"meta"
    cmd = b.cmds[0]
    assert (cmd.session_timeout_ms, cmd.rebalance_timeout_ms, cmd.client_host, cmd.api_version) == (10000, 10000, "10.0.0.1", v)
    bad = groups.join_group(req(11, v, group_id="", session_timeout=MS, rebalance_timeout=MS, member_id="", group_instance_id=None,
                                protocol_type="consumer", protocols=()), b, "")
    encode_response(1, bad)
    assert bad.error_code == ErrorCode.invalid_group_id and len(b.cmds) == 1


@pytest.mark.parametrize("v", versions(14))
def test_sync_group(v):
    b = Backend()
    r = groups.sync_group(req(14, v, group_id="g", generation_id=3, member_id="m1", group_instance_id=None, protocol_type="consumer",
                              protocol_name="range", assignments=(NS(member_id="m1", assignment=b"a"),)), b)
    encode_response(1, r)
    assert r.error_code == ErrorCode.none and r.assignment == b"asg"
    assert b.cmds[0].assignments == (("m1", b"a"),)


def test_sync_group_v5_needs_protocol_type_and_name():
    b = Backend()
    r = groups.sync_group(req(14, 5, group_id="g", generation_id=3, member_id="m1", group_instance_id=None, protocol_type=None,
                              protocol_name="range", assignments=()), b)
    assert r.error_code == ErrorCode.inconsistent_group_protocol and b.cmds == []


@pytest.mark.parametrize("v", versions(12))
def test_heartbeat(v):
    r = groups.heartbeat(req(12, v, group_id="g", generation_id=3, member_id="m1", group_instance_id=None), Backend())
    encode_response(1, r)
    assert r.error_code == ErrorCode.rebalance_in_progress


@pytest.mark.parametrize("v", versions(13))
def test_leave_group(v):
    b = Backend()
    body = dict(group_id="g", member_id="x", members=(NS(member_id="m1", group_instance_id=None), NS(member_id="x", group_instance_id="i")))
    r = groups.leave_group(req(13, v, **body), b)
    encode_response(1, r)
    if v >= 3:
        assert r.error_code == ErrorCode.none
        assert [(m.member_id, m.error_code) for m in r.members] == [("m1", ErrorCode.none), ("x", ErrorCode.unknown_member_id)]
    else:  # one member; its error is the response's
        assert [m.member_id for m in b.cmds[0].members] == ["x"] and r.error_code == ErrorCode.unknown_member_id


@pytest.mark.parametrize("v", versions(8))
def test_offset_commit(v):
    b = Backend()
    parts = (NS(partition_index=0, committed_offset=5, committed_leader_epoch=1, committed_metadata=None),)
    r = groups.offset_commit(req(8, v, group_id="g", generation_id=3, generation_id_or_member_epoch=3, member_id="m1",
                                 group_instance_id=None, retention_time=datetime.timedelta(milliseconds=-1),
                                 topics=(NS(name="t", partitions=parts), NS(name="u", partitions=parts))), b)
    encode_response(1, r)
    assert [(t.name, t.partitions[0].error_code) for t in r.topics] == [("t", ErrorCode.none), ("u", ErrorCode.unknown_topic_or_partition)]
    cmd = b.cmds[0]
    assert (cmd.generation, cmd.retention_ms, cmd.partitions[0].metadata) == (3, -1, None)


@pytest.mark.parametrize("v", versions(9))
def test_offset_fetch(v):
    b = Backend()
    topics = (NS(name="t", partition_indexes=(0, 1)),)
    if v >= 8:
        r = groups.offset_fetch(req(9, v, groups=(NS(group_id="g", member_id=None, member_epoch=-1, topics=topics),), require_stable=False), b)
        encode_response(1, r)
        parts = r.groups[0].topics[0].partitions
        assert r.groups[0].error_code == ErrorCode.none
    else:
        r = groups.offset_fetch(req(9, v, group_id="g", topics=topics, require_stable=False), b)
        encode_response(1, r)
        parts = r.topics[0].partitions
    assert [(p.partition_index, p.committed_offset, p.metadata) for p in parts] == [(0, 9, "md"), (1, -1, "")]
    assert b.cmds == [("g", [("t", 0), ("t", 1)])]
