"""Group admin on a real daemon: confluent-kafka 2.16's AdminClient ``list_consumer_groups`` (type
and state filters), ``describe_consumer_groups`` of a classic group with a member,
``delete_consumer_groups`` (NON_EMPTY_GROUP, then deleted and the id used again) and
``list_consumer_group_offsets``; OffsetDelete (47), AlterShareGroupOffsets (91),
DeleteShareGroupOffsets (92) and DescribeShareGroupOffsets (90) over raw kio requests
(confluent-kafka 2.16 has no Python call for them); deleting an empty share group, which then
starts afresh and no longer counts against ``group.share.max.groups``."""

from __future__ import annotations

import time
import uuid

import pytest
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i64

from tests.e2e.helpers import admin, create_topic, outcomes, produce, raw_request, set_group_config, wait_for
from wire.protocol import decode_response, encode_request, request_header

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]


def _ask(port: int, api: int, version: int, body, timeout_s: float = 15):
    resp = raw_request(port, encode_request(request_header(api, version, 7), body), timeout_s=timeout_s)
    assert resp is not None, f"no response to api {api}"
    return decode_response(resp, api, version)[1]


def _offset_delete(port: int, group: str, topic: str, partitions: list[int]):
    from kio.schema.offset_delete.v0.request import OffsetDeleteRequest, OffsetDeleteRequestPartition, OffsetDeleteRequestTopic

    return _ask(port, 47, 0, OffsetDeleteRequest(group_id=group, topics=(
        OffsetDeleteRequestTopic(name=topic, partitions=tuple(OffsetDeleteRequestPartition(partition_index=i32(p)) for p in partitions)),)))


def _share_offsets(port: int, group: str, topic: str) -> tuple[int, dict[int, int]]:
    from kio.schema.describe_share_group_offsets.v0.request import (
        DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequestGroup, DescribeShareGroupOffsetsRequestTopic,
    )

    r = _ask(port, 90, 0, DescribeShareGroupOffsetsRequest(groups=(DescribeShareGroupOffsetsRequestGroup(
        group_id=group, topics=(DescribeShareGroupOffsetsRequestTopic(topic_name=topic, partitions=(i32(0),)),)),)))
    g = r.groups[0]
    return g.error_code, {p.partition_index: p.start_offset for t in g.topics for p in t.partitions}


def _alter_share(port: int, group: str, topic: str, offset: int):
    from kio.schema.alter_share_group_offsets.v0.request import (
        AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic,
    )

    return _ask(port, 91, 0, AlterShareGroupOffsetsRequest(group_id=group, topics=(AlterShareGroupOffsetsRequestTopic(
        topic_name=topic, partitions=(AlterShareGroupOffsetsRequestPartition(partition_index=i32(0), start_offset=i64(offset)),)),)))


def _delete_share(port: int, group: str, *topics: str):
    from kio.schema.delete_share_group_offsets.v0.request import DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsRequestTopic

    return _ask(port, 92, 0, DeleteShareGroupOffsetsRequest(group_id=group, topics=tuple(
        DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics)))


def _list_groups(port: int, states: tuple[str, ...] = (), types: tuple[str, ...] = ()) -> dict[str, tuple[str, str, str]]:
    from kio.schema.list_groups.v5.request import ListGroupsRequest

    r = _ask(port, 16, 5, ListGroupsRequest(states_filter=states, types_filter=types))
    assert r.error_code == ErrorCode.none
    return {g.group_id: (g.group_type, g.protocol_type, g.group_state) for g in r.groups}


def _consumer(bootstrap: str, group: str):
    from confluent_kafka import Consumer

    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False})


def _read(c, n: int, timeout_s: float = 60) -> list[str]:
    out: list[str] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < n and time.monotonic() < deadline:
        msg = c.poll(0.3)
        if msg is not None and not msg.error():
            out.append(msg.value().decode())
    return out


def _listed(a, **filters) -> dict[str, tuple]:
    r = a.list_consumer_groups(request_timeout=30, **filters).result(30)
    return {g.group_id: (g.state, g.type) for g in r.valid}


def test_classic_group_admin_with_admin_client(daemon_factory):
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType, KafkaError, TopicPartition
    from confluent_kafka import ConsumerGroupTopicPartitions

    d = daemon_factory()
    topic, other, group = f"t-{uuid.uuid4().hex[:6]}", f"o-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    create_topic(d.bootstrap, topic, 2)
    create_topic(d.bootstrap, other, 1)
    values = [f"v{i}" for i in range(6)]
    assert len(produce(d.bootstrap, topic, values, partitioner=lambda i: i % 2)) == 6
    a = admin(d.bootstrap)

    # an admin commit of another topic (the group does not subscribe to it) creates the group
    fs = a.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, [TopicPartition(other, 0, 3)])])
    assert not isinstance(outcomes(fs)[group], int)
    c = _consumer(d.bootstrap, group)
    c.subscribe([topic])
    assert sorted(_read(c, 6)) == sorted(values)
    c.commit(asynchronous=False)

    # ListGroups: type and state filters, case-insensitively on the broker
    assert _listed(a)[group] == (ConsumerGroupState.STABLE, ConsumerGroupType.CLASSIC)
    assert group in _listed(a, types={ConsumerGroupType.CLASSIC})
    assert group not in _listed(a, types={ConsumerGroupType.CONSUMER})
    assert group in _listed(a, states={ConsumerGroupState.STABLE})
    assert group not in _listed(a, states={ConsumerGroupState.EMPTY})

    # DescribeGroups: the member with its assignment
    desc = a.describe_consumer_groups([group], request_timeout=30)[group].result(30)
    assert desc.state == ConsumerGroupState.STABLE and desc.is_simple_consumer_group is False
    assert desc.partition_assignor == "range"
    [member] = desc.members
    assert sorted(tp.partition for tp in member.assignment.topic_partitions if tp.topic == topic) == [0, 1]

    # DeleteGroups of a group with a member: NON_EMPTY_GROUP
    assert outcomes(a.delete_consumer_groups([group], request_timeout=30)) == {group: KafkaError.NON_EMPTY_GROUP}

    # OffsetDelete: the subscribed topic is refused, the other one is deleted
    r = _offset_delete(d.port, group, topic, [0])
    assert r.error_code == ErrorCode.none and r.topics[0].partitions[0].error_code == ErrorCode.group_subscribed_to_topic
    r = _offset_delete(d.port, group, other, [0])
    assert r.error_code == ErrorCode.none and r.topics[0].partitions[0].error_code == ErrorCode.none
    offs = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, [TopicPartition(other, 0), TopicPartition(topic, 0)])])
    got = {(tp.topic, tp.partition): tp.offset for tp in offs[group].result(30).topic_partitions}
    assert got[(other, 0)] < 0 and got[(topic, 0)] == 3  # deleted; the subscribed topic's offset kept
    r = _offset_delete(d.port, group, "no-such-topic", [0])
    assert r.topics[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition
    r = _offset_delete(d.port, "no-such-group", other, [0])
    assert r.error_code == ErrorCode.group_id_not_found
    assert _offset_delete(d.port, "", other, [0]).error_code == ErrorCode.invalid_group_id
    r = _offset_delete(d.port, "no-such-group", "no-such-topic", [0])  # KafkaApis' own answers are merged in
    assert r.error_code == ErrorCode.group_id_not_found and r.topics[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition

    c.close()  # leaves the group: Empty
    assert wait_for(lambda: _listed(a).get(group, (None,))[0] == ConsumerGroupState.EMPTY, 30)
    assert group in _listed(a, states={ConsumerGroupState.EMPTY})
    r = _offset_delete(d.port, group, topic, [0])
    assert r.topics[0].partitions[0].error_code == ErrorCode.none
    offs = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0), TopicPartition(topic, 1), TopicPartition(other, 0)])])
    got = {(tp.topic, tp.partition): tp.offset for tp in offs[group].result(30).topic_partitions}
    assert got[(topic, 0)] < 0 and got[(topic, 1)] >= 0 and got[(other, 0)] < 0

    # DeleteGroups of the Empty group: deleted, gone from the list; a missing one is GROUP_ID_NOT_FOUND
    assert outcomes(a.delete_consumer_groups([group, "never-there"], request_timeout=30)) == {group: None, "never-there": KafkaError.GROUP_ID_NOT_FOUND}
    assert group not in _listed(a)
    assert outcomes(a.delete_consumer_groups([group], request_timeout=30)) == {group: KafkaError.GROUP_ID_NOT_FOUND}

    # the same id as a new group: no committed offsets, so it reads everything again
    c2 = _consumer(d.bootstrap, group)
    c2.subscribe([topic])
    assert sorted(_read(c2, 6)) == sorted(values)
    assert _listed(a)[group][0] == ConsumerGroupState.STABLE
    c2.close()


def _share_read(bootstrap: str, group: str, topic: str, n: int, timeout_s: float = 30) -> list[str]:
    from confluent_kafka import ShareConsumer

    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    c.subscribe([topic])
    got: list[str] = []
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and len(got) < n:
            got += [m.value().decode() for m in c.poll(0.3) if not m.error()]
        c.commit_sync()
    finally:
        c.close()
    return got


def _share_empty(port: int, group: str) -> bool:
    from tests.e2e.helpers import describe_share_group

    g = describe_share_group(port, group)
    return g.error_code == ErrorCode.none and g.group_state == "Empty"


def describe_after_delete(port: int, group: str) -> int:
    from tests.e2e.helpers import describe_share_group

    return describe_share_group(port, group).error_code


def test_share_group_offsets_admin_and_delete(daemon_factory):
    from confluent_kafka import KafkaError

    d = daemon_factory(**{"group.share.max.groups": "1"})
    topic, group = f"s-{uuid.uuid4().hex[:6]}", f"sg-{uuid.uuid4().hex[:6]}"
    create_topic(d.bootstrap, topic, 1)
    set_group_config(d.bootstrap, group, "share.auto.offset.reset", "earliest")
    values = [f"r{i}" for i in range(5)]
    assert len(produce(d.bootstrap, topic, values, partitioner=lambda i: 0)) == 5
    assert sorted(_share_read(d.bootstrap, group, topic, 5)) == sorted(values)
    assert wait_for(lambda: _share_empty(d.port, group), 30)
    err, offs = _share_offsets(d.port, group, topic)
    assert err == ErrorCode.none and offs == {0: 5}

    # with a member: NON_EMPTY_GROUP for the offsets admin and for DeleteGroups
    from confluent_kafka import ShareConsumer
    from tests.e2e.helpers import describe_share_group

    member = ShareConsumer({"bootstrap.servers": d.bootstrap, "group.id": group})
    member.subscribe([topic])
    try:
        assert wait_for(lambda: member.poll(0.2) is not None and describe_share_group(d.port, group).group_state == "Stable", 30)
        assert _alter_share(d.port, group, topic, 0).error_code == ErrorCode.non_empty_group
        assert _delete_share(d.port, group, topic).error_code == ErrorCode.non_empty_group
        assert outcomes(admin(d.bootstrap).delete_consumer_groups([group], request_timeout=30)) == {group: KafkaError.NON_EMPTY_GROUP}
    finally:
        member.close()
    assert wait_for(lambda: _share_empty(d.port, group), 30)
    assert _share_offsets(d.port, group, topic)[1] == {0: 5}

    # AlterShareGroupOffsets: back to 2; the records from 2 on are delivered again
    r = _alter_share(d.port, group, topic, 2)
    assert r.error_code == ErrorCode.none and r.responses[0].partitions[0].error_code == ErrorCode.none
    assert _share_offsets(d.port, group, topic)[1] == {0: 2}
    assert sorted(_share_read(d.bootstrap, group, topic, 3)) == ["r2", "r3", "r4"]
    assert wait_for(lambda: _share_empty(d.port, group), 30)
    r = _alter_share(d.port, group, "no-such-topic", 0)
    assert r.responses[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition
    assert _alter_share(d.port, "no-such-group", topic, 0).error_code == ErrorCode.group_id_not_found
    assert _alter_share(d.port, "no-such-group", "no-such-topic", 0).error_code == ErrorCode.group_id_not_found
    assert _alter_share(d.port, "", topic, 0).error_code == ErrorCode.invalid_group_id
    assert _delete_share(d.port, "no-such-group", topic).error_code == ErrorCode.group_id_not_found

    # DeleteShareGroupOffsets: the state is gone; the group starts again from share.auto.offset.reset
    r = _delete_share(d.port, group, topic, "no-such-topic")
    assert r.error_code == ErrorCode.none
    assert {t.topic_name: t.error_code for t in r.responses} == {topic: ErrorCode.none, "no-such-topic": ErrorCode.unknown_topic_or_partition}
    assert _share_offsets(d.port, group, topic)[1] == {0: -1}
    r = _delete_share(d.port, group, topic)
    assert r.responses[0].error_code == ErrorCode.unknown_topic_or_partition  # nothing left to delete
    assert r.responses[0].error_message == "There is no offset information to delete."
    assert sorted(_share_read(d.bootstrap, group, topic, 5)) == sorted(values)
    assert wait_for(lambda: _share_empty(d.port, group), 30)

    # ListGroups v5: the type and state filters are case-insensitive; unknown values match nothing
    assert _list_groups(d.port, types=("SHARE",))[group] == ("share", "share", "Empty")
    assert group in _list_groups(d.port, states=("empty",), types=("share", "classic"))
    assert group not in _list_groups(d.port, types=("classic",))
    assert _list_groups(d.port, types=("bogus",)) == {} and _list_groups(d.port, states=("bogus",)) == {}

    # group.share.max.groups=1: another share group cannot be created while this one exists
    other = f"sg2-{uuid.uuid4().hex[:6]}"
    a = admin(d.bootstrap)
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    res = ConfigResource(ResourceType.GROUP, other, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    assert list(outcomes(a.incremental_alter_configs([res])).values()) == [KafkaError.GROUP_MAX_SIZE_REACHED]

    # DeleteGroups of the empty share group: deleted, gone from ListGroups, then re-usable afresh
    assert outcomes(a.delete_consumer_groups([group], request_timeout=30)) == {group: None}
    assert group not in _list_groups(d.port)
    assert describe_after_delete(d.port, group) == ErrorCode.group_id_not_found
    assert _share_offsets(d.port, group, topic)[0] == ErrorCode.group_id_not_found
    assert outcomes(a.delete_consumer_groups([group], request_timeout=30)) == {group: KafkaError.GROUP_ID_NOT_FOUND}
    # the census no longer counts it: the other group can now be created
    assert list(outcomes(a.incremental_alter_configs([res])).values()) == [None]
    # a group that only has configs can be deleted too (that frees its place); then the deleted
    # id is a new group: no share-partition state left, so it reads from the earliest offset again
    assert outcomes(a.delete_consumer_groups([other], request_timeout=30)) == {other: None}
    set_group_config(d.bootstrap, group, "share.auto.offset.reset", "earliest")
    assert sorted(_share_read(d.bootstrap, group, topic, 5)) == sorted(values)


def test_deleted_share_group_is_fresh_and_uncounted_after_restart(daemon_factory):
    """A deleted share group's stream ends with ``ShareGroupDeleted``: a restarted daemon's census
    does not count it (another group fits under ``group.share.max.groups=1``) and the id is
    unknown until it is used again."""
    from confluent_kafka import KafkaError

    d = daemon_factory(**{"group.share.max.groups": "1"})
    topic, group = f"s-{uuid.uuid4().hex[:6]}", f"sg-{uuid.uuid4().hex[:6]}"
    create_topic(d.bootstrap, topic, 1)
    set_group_config(d.bootstrap, group, "share.auto.offset.reset", "earliest")
    assert len(produce(d.bootstrap, topic, ["a", "b"], partitioner=lambda i: 0)) == 2
    assert sorted(_share_read(d.bootstrap, group, topic, 2)) == ["a", "b"]
    assert wait_for(lambda: _share_empty(d.port, group), 30)
    a = admin(d.bootstrap)
    assert outcomes(a.delete_consumer_groups([group], request_timeout=30)) == {group: None}
    d.stop()
    d2 = daemon_factory(data_dir=d.data_dir, **{"group.share.max.groups": "1"})
    a2 = admin(d2.bootstrap)
    other = f"sg2-{uuid.uuid4().hex[:6]}"
    set_group_config(d2.bootstrap, other, "share.auto.offset.reset", "earliest")  # the only share group now
    assert describe_after_delete(d2.port, group) == ErrorCode.group_id_not_found
    assert outcomes(a2.delete_consumer_groups([other, group], request_timeout=30)) == {other: None, group: KafkaError.GROUP_ID_NOT_FOUND}
