"""Bounded share groups on a real daemon (``app.py run``), with raw kio requests: describes,
offsets, DescribeConfigs, ListGroups and FindCoordinator naming unknown groups start no actor
process (counted by PID, as the harness does); ``group.share.max.groups`` refuses the join that
would create one group too many — also after a restart — and ``group.share.max.size`` the member
one too many, with Kafka's GROUP_MAX_SIZE_REACHED (81)."""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from tests.e2e.helpers import create_topic, describe_share_group, raw_request, wait_for
from wire.protocol import decode_response, encode_request, request_header

FAST = {
    "group.share.session.timeout.ms": "6000",
    "group.share.min.session.timeout.ms": "6000",
    "group.share.heartbeat.interval.ms": "1000",
    "group.share.min.heartbeat.interval.ms": "1000",
}


def _ask(port: int, api: int, version: int, body) -> object:
    resp = raw_request(port, encode_request(request_header(api, version, 5), body))
    assert resp is not None, f"no response to api {api}"
    return decode_response(resp, api, version)[1]


def heartbeat(port: int, group: str, member: str, epoch: int = 0, topics=("t",)):
    from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
    from kio.static.primitive import i32

    return _ask(port, 76, 1, ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=i32(epoch), rack_id=None, subscribed_topic_names=tuple(topics)))


def _unknown_group_requests(port: int, group: str) -> None:
    from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
    from kio.schema.describe_share_group_offsets.v0.request import DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequestGroup
    from kio.schema.find_coordinator.v6.request import FindCoordinatorRequest
    from kio.static.primitive import i8

    g = describe_share_group(port, group)
    assert g.error_code == ErrorCode.group_id_not_found
    r = _ask(port, 90, 0, DescribeShareGroupOffsetsRequest(groups=(DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None),)))
    assert r.groups[0].error_code == ErrorCode.group_id_not_found
    r = _ask(port, 32, 4, DescribeConfigsRequest(resources=(DescribeConfigsResource(resource_type=i8(32), resource_name=group, configuration_keys=None),), include_synonyms=False, include_documentation=False))
    assert r.results[0].error_code == ErrorCode.none
    assert {c.name: c.value for c in r.results[0].configs}["share.session.timeout.ms"] == "6000"
    r = _ask(port, 10, 6, FindCoordinatorRequest(key_type=i8(0), coordinator_keys=(group,)))
    assert r.coordinators[0].error_code == ErrorCode.none


def _list_groups(port: int) -> dict[str, str]:
    from kio.schema.list_groups.v5.request import ListGroupsRequest

    r = _ask(port, 16, 5, ListGroupsRequest(states_filter=(), types_filter=()))
    return {g.group_id: g.group_state for g in r.groups}


def test_requests_naming_unknown_groups_start_no_actor_process(daemon_factory):
    d = daemon_factory(**FAST)
    create_topic(d.bootstrap, "t", 1)
    assert heartbeat(d.port, "real", str(uuid.uuid4())).error_code == ErrorCode.none
    settled = len(d.all_pids())
    for i in range(30):
        _unknown_group_requests(d.port, f"ghost-{i}")
    assert set(_list_groups(d.port)) == {"real"}
    assert len(d.all_pids()) == settled, "an unknown group started an actor process"
    # a heartbeat that is not a join does not create the group either
    assert heartbeat(d.port, "ghost-x", str(uuid.uuid4()), epoch=3).error_code == ErrorCode.group_id_not_found
    assert len(d.all_pids()) == settled


def test_max_groups_refuses_the_join_of_one_group_too_many_also_after_a_restart(daemon_factory):
    ov = dict(FAST, **{"group.share.max.groups": "2"})
    d = daemon_factory(**ov)
    create_topic(d.bootstrap, "t", 1)
    for g in ("g1", "g2"):
        assert heartbeat(d.port, g, str(uuid.uuid4())).error_code == ErrorCode.none
    before = len(d.all_pids())
    r = heartbeat(d.port, "g3", str(uuid.uuid4()))
    assert r.error_code == ErrorCode.group_max_size_reached and "group.share.max.groups" in r.error_message
    assert len(d.all_pids()) == before
    port, data_dir = d.port, d.data_dir
    assert d.stop() == 0
    d2 = daemon_factory(data_dir=data_dir, port=port, **ov)
    assert heartbeat(d2.port, "g3", str(uuid.uuid4())).error_code == ErrorCode.group_max_size_reached
    assert heartbeat(d2.port, "g1", str(uuid.uuid4())).error_code == ErrorCode.none  # existing groups stay usable
    assert set(_list_groups(d2.port)) == {"g1", "g2"}


def test_max_size_refuses_the_member_one_too_many(daemon_factory):
    d = daemon_factory(**dict(FAST, **{"group.share.max.size": "2"}))
    create_topic(d.bootstrap, "t", 1)
    for _ in range(2):
        assert heartbeat(d.port, "small", str(uuid.uuid4())).error_code == ErrorCode.none
    r = heartbeat(d.port, "small", str(uuid.uuid4()))
    assert r.error_code == ErrorCode.group_max_size_reached
    assert r.error_message == "The share group has reached its maximum capacity of 2 members."
    assert wait_for(lambda: len(describe_share_group(d.port, "small").members) == 2, 10)
