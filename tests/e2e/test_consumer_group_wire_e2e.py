"""The classic consumer-group APIs over raw kio requests on a real daemon: KIP-394
MEMBER_ID_REQUIRED, a generation, SyncGroup, OffsetCommit (an unknown topic gets
UNKNOWN_TOPIC_OR_PARTITION), OffsetFetch in its v7 (one group) and v8+ (several groups) forms,
ListGroups listing the classic group with its state, a v3+ batch LeaveGroup, INVALID_GROUP_ID
for an empty group id, and INCONSISTENT_GROUP_PROTOCOL for a share group's id."""

from __future__ import annotations

import datetime
import uuid

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i64

from tests.e2e.helpers import create_topic, raw_request
from wire.protocol import decode_response, encode_request, request_header


def _ask(port: int, api: int, version: int, body, timeout_s: float = 15) -> object:
    resp = raw_request(port, encode_request(request_header(api, version, 7), body), timeout_s=timeout_s)
    assert resp is not None, f"no response to api {api}"
    return decode_response(resp, api, version)[1]


def _join(port: int, group: str, member: str):
    from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol

    ms = datetime.timedelta(milliseconds=10000)
    return _ask(port, 11, 9, JoinGroupRequest(group_id=group, session_timeout=ms, rebalance_timeout=ms, member_id=member,
                                              group_instance_id=None, protocol_type="consumer",
                                              protocols=(JoinGroupRequestProtocol(name="range", metadata=b"sub"),), reason=None))


def _list_groups(port: int) -> dict[str, tuple[str, str, str]]:
    from kio.schema.list_groups.v5.request import ListGroupsRequest

    r = _ask(port, 16, 5, ListGroupsRequest(states_filter=(), types_filter=()))
    return {g.group_id: (g.group_type, g.protocol_type, g.group_state) for g in r.groups}


def test_classic_group_apis_over_the_wire(daemon_factory):
    from kio.schema.heartbeat.v4.request import HeartbeatRequest
    from kio.schema.leave_group.v5.request import LeaveGroupRequest, MemberIdentity
    from kio.schema.offset_commit.v9.request import OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic
    from kio.schema.offset_fetch.v7.request import OffsetFetchRequest as OffsetFetchV7, OffsetFetchRequestTopic
    from kio.schema.offset_fetch.v9.request import OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopics
    from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment

    d = daemon_factory(**{"group.initial.rebalance.delay.ms": "0"})
    topic, group = f"t-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    create_topic(d.bootstrap, topic, 2)

    r = _join(d.port, group, "")
    assert r.error_code == ErrorCode.member_id_required and r.member_id
    mid = r.member_id
    r = _join(d.port, group, mid)
    assert r.error_code == ErrorCode.none and r.generation_id == 1 and r.leader == mid and r.protocol_name == "range"
    assert [(m.member_id, m.metadata) for m in r.members] == [(mid, b"sub")]
    r = _ask(d.port, 14, 5, SyncGroupRequest(group_id=group, generation_id=i32(1), member_id=mid, group_instance_id=None,
                                             protocol_type="consumer", protocol_name="range",
                                             assignments=(SyncGroupRequestAssignment(member_id=mid, assignment=b"asg"),)))
    assert r.error_code == ErrorCode.none and r.assignment == b"asg"
    r = _ask(d.port, 12, 4, HeartbeatRequest(group_id=group, generation_id=i32(0), member_id=mid, group_instance_id=None))
    assert r.error_code == ErrorCode.illegal_generation
    r = _ask(d.port, 12, 4, HeartbeatRequest(group_id="", generation_id=i32(1), member_id=mid, group_instance_id=None))
    assert r.error_code == ErrorCode.invalid_group_id

    part = OffsetCommitRequestPartition(partition_index=i32(1), committed_offset=i64(17), committed_leader_epoch=i32(3), committed_metadata="md")
    r = _ask(d.port, 8, 9, OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=i32(1), member_id=mid, group_instance_id=None,
                                               topics=(OffsetCommitRequestTopic(name=topic, partitions=(part,)),
                                                       OffsetCommitRequestTopic(name="no-such-topic", partitions=(part,)))))
    assert {t.name: t.partitions[0].error_code for t in r.topics} == {topic: ErrorCode.none, "no-such-topic": ErrorCode.unknown_topic_or_partition}

    r = _ask(d.port, 9, 9, OffsetFetchRequest(groups=(
        OffsetFetchRequestGroup(group_id=group, member_id=None, member_epoch=i32(-1),
                                topics=(OffsetFetchRequestTopics(name=topic, partition_indexes=(i32(0), i32(1))),)),
        OffsetFetchRequestGroup(group_id="never-seen", member_id=None, member_epoch=i32(-1), topics=None),
    ), require_stable=False))
    by_group = {g.group_id: g for g in r.groups}
    parts = {p.partition_index: (p.committed_offset, p.committed_leader_epoch, p.metadata) for p in by_group[group].topics[0].partitions}
    assert parts == {0: (-1, -1, ""), 1: (17, 3, "md")}
    assert by_group["never-seen"].error_code == ErrorCode.none and by_group["never-seen"].topics == ()
    r = _ask(d.port, 9, 7, OffsetFetchV7(group_id=group, topics=None, require_stable=False))
    assert r.error_code == ErrorCode.none
    assert [(t.name, [(p.partition_index, p.committed_offset) for p in t.partitions]) for t in r.topics] == [(topic, [(1, 17)])]

    assert _list_groups(d.port)[group] == ("classic", "consumer", "Stable")
    r = _ask(d.port, 13, 5, LeaveGroupRequest(group_id=group, members=(
        MemberIdentity(member_id=mid, group_instance_id=None, reason=None),
        MemberIdentity(member_id="ghost", group_instance_id=None, reason=None))))
    assert r.error_code == ErrorCode.none
    assert [(m.member_id, m.error_code) for m in r.members] == [(mid, ErrorCode.none), ("ghost", ErrorCode.unknown_member_id)]
    assert _list_groups(d.port)[group] == ("classic", "consumer", "Empty")
    # the group is empty again: its old member is unknown, its offsets stay
    assert _join(d.port, group, mid).error_code == ErrorCode.unknown_member_id

    # one type per group id: a share group's id cannot be joined as a consumer group
    from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest

    share = f"s-{uuid.uuid4().hex[:6]}"
    hb = _ask(d.port, 76, 1, ShareGroupHeartbeatRequest(group_id=share, member_id=str(uuid.uuid4()), member_epoch=i32(0),
                                                          rack_id=None, subscribed_topic_names=(topic,)))
    assert hb.error_code == ErrorCode.none
    assert _join(d.port, share, "").error_code == ErrorCode.inconsistent_group_protocol
