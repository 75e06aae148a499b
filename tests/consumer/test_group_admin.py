"""Group admin on the classic decider without an actor system: DescribeGroups, DeleteGroups and
OffsetDelete (shared/reference/kafka-consumer-groups.md §7.3, §8, scenarios #43 and #63)."""

from __future__ import annotations

import struct

from actors.consumer.classic import DEAD, EMPTY, PREPARING, STABLE, ClassicGroup, CommitPartition, LeaveMember, parse_subscription_topics
from events.consumer_group import ClassicGroupMetadataRecorded, ConsumerGroupDeleted, DeletedOffset, OffsetsCommitted, OffsetsDeleted
from tests.consumer.test_classic import group, join, stable_one


def subscription(*topics: str, version: int = 1) -> bytes:
    """A ConsumerProtocolSubscription (v1: topics, null user data, no owned partitions)."""
    out = struct.pack(">hi", version, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">ii", -1, 0)


def apply_all(g: ClassicGroup, out) -> None:
    for e in out.events:
        g.apply(e)


def commit(g: ClassicGroup, now: int, *parts: tuple[str, int, int], member: str = "", generation: int = -1) -> None:
    out = g.commit(now, member_id=member, group_instance_id=None, generation=generation,
                   partitions=[CommitPartition(t, p, o) for t, p, o in parts])
    assert all(e is None for _, _, e in out.reply.partitions)
    apply_all(g, out)


def test_parse_subscription_topics():
    assert parse_subscription_topics(subscription("foo", "bar")) == ["foo", "bar"]
    assert parse_subscription_topics(subscription(version=0)) == []
    assert parse_subscription_topics(b"") is None
    assert parse_subscription_topics(b"\x00\x01\x00\x00\x00\x05\x00\x03ab") is None  # truncated
    assert parse_subscription_topics(b"r") is None


def test_describe_missing_group_is_dead_without_members():
    d = group().describe()
    assert (d.state, d.protocol_type, d.protocol_data, d.members) == (DEAD, "", "", ())


def test_describe_stable_group_has_protocol_metadata_and_assignment():
    g = group()
    mid = stable_one(g)
    d = g.describe()
    assert (d.state, d.protocol_type, d.protocol_data) == (STABLE, "consumer", "range")
    [m] = d.members
    assert (m.member_id, m.client_id, m.metadata, m.assignment) == (mid, "c", b"r", b"A")


def test_describe_rebalancing_group_has_no_protocol_data_nor_metadata():
    """#43: PreparingRebalance: protocolData "", members with assignment but no metadata."""
    g = group()
    mid = stable_one(g)
    other = join(g, 4000).reply.member_id
    join(g, 4000, other)
    assert g.state == PREPARING
    d = g.describe()
    assert (d.state, d.protocol_type, d.protocol_data) == (PREPARING, "consumer", "")
    by_id = {m.member_id: m for m in d.members}
    assert by_id[mid].metadata == b"" and by_id[mid].assignment == b"A"


def test_delete_missing_group_is_group_id_not_found():
    out = group().delete_group(0)
    assert out.reply.error == "GROUP_ID_NOT_FOUND" and out.events == []


def test_delete_non_empty_group_is_refused():
    g = group()
    stable_one(g)
    out = g.delete_group(5000)
    assert out.reply.error == "NON_EMPTY_GROUP" and out.events == [] and g.state == STABLE


def test_delete_empty_group_tombstones_offsets_then_the_group_and_forgets_it():
    g = group()
    mid = stable_one(g)
    commit(g, 3500, ("t", 0, 10), ("t", 1, 11), ("u", 0, 5), member=mid, generation=1)
    out = g.leave(4000, [LeaveMember(mid)])
    apply_all(g, out)
    assert g.state == EMPTY and g.exists
    out = g.delete_group(4001)
    assert out.reply.error is None
    assert out.events == [
        OffsetsDeleted("g", (DeletedOffset("t", 0), DeletedOffset("t", 1), DeletedOffset("u", 0))),
        ConsumerGroupDeleted("g"),
    ]
    # Dead until the tombstones are applied: joins and commits are refused meanwhile
    assert g.state == DEAD and join(g, 4002).reply.error == "COORDINATOR_NOT_AVAILABLE"
    apply_all(g, out)
    assert not g.exists and g.offsets == {} and g.members == {} and g.generation == 0 and g.state == EMPTY
    assert g.describe().state == DEAD
    assert g.delete_group(4003).reply.error == "GROUP_ID_NOT_FOUND"
    assert g.fetch_offsets(None) == []
    # the same id starts afresh: a new first generation
    mid2 = stable_one(g, 10_000)
    assert g.generation == 1 and mid2 != mid


def test_a_refused_delete_append_leaves_the_group_empty_again():
    g = group()
    commit(g, 0, ("t", 0, 1))
    g.delete_group(1)
    assert g.state == DEAD
    g.undo_delete(2)
    assert g.state == EMPTY and g.exists and g.offsets


def test_delete_simple_group_without_offsets_writes_only_the_group_tombstone():
    g = group()
    g.apply(ClassicGroupMetadataRecorded("g", EMPTY, 0, None, None, None, 0, ()))
    out = g.delete_group(1)
    assert out.events == [ConsumerGroupDeleted("g")]


def test_recovery_replays_deletion_and_reuse():
    events = [
        OffsetsCommitted("g", "", -1, ()),
        OffsetsDeleted("g", (DeletedOffset("t", 0),)),
        ConsumerGroupDeleted("g"),
    ]
    g = ClassicGroup("g")
    for e in events:
        g.apply(e)
    assert not g.exists
    commit(g, 5, ("t", 0, 7))
    assert g.exists and g.fetch_offsets([("t", 0)])[0].offset == 7


def test_offset_delete_missing_group():
    assert group().delete_offsets([("t", 0)]).reply.error == "GROUP_ID_NOT_FOUND"


def test_offset_delete_empty_group_tombstones_only_existing_offsets():
    g = group()
    commit(g, 0, ("t", 0, 1), ("t", 1, 2))
    out = g.delete_offsets([("t", 0), ("t", 5), ("u", 0)])
    assert out.reply.error is None
    assert out.reply.partitions == (("t", 0, None), ("t", 5, None), ("u", 0, None))
    assert out.events == [OffsetsDeleted("g", (DeletedOffset("t", 0),))]
    apply_all(g, out)
    assert [(o.topic, o.partition) for o in g.fetch_offsets(None)] == [("t", 1)]
    assert g.exists  # the group stays
    assert g.delete_offsets([("u", 0)]).events == []


def _stable_with_subscription(g: ClassicGroup, ptype: str = "consumer", meta: bytes | None = None) -> str:
    protos = (("range", subscription("bar") if meta is None else meta),)
    mid = join(g, 0, ptype=ptype, protos=protos).reply.member_id
    join(g, 0, mid, ptype=ptype, protos=protos)
    g.tick(3000)
    g.sync(3000, member_id=mid, group_instance_id=None, generation=1, protocol_type=ptype, protocol="range", assignments={mid: b""})
    assert g.state == STABLE
    return mid


def test_offset_delete_subscribed_topic_is_refused_per_partition():
    """#63: a classic group subscribed to {bar}: bar1-0 NONE, bar-0 GROUP_SUBSCRIBED_TO_TOPIC; no tombstone."""
    g = group()
    mid = _stable_with_subscription(g)
    commit(g, 3100, ("bar", 0, 3), member=mid, generation=1)
    out = g.delete_offsets([("bar1", 0), ("bar", 0), ("bar", 1)])
    assert out.reply.partitions == (("bar1", 0, None), ("bar", 0, "GROUP_SUBSCRIBED_TO_TOPIC"), ("bar", 1, "GROUP_SUBSCRIBED_TO_TOPIC"))
    assert out.events == []
    assert g.is_subscribed_to("bar") and not g.is_subscribed_to("bar1")


def test_offset_delete_unparsable_subscription_counts_as_subscribed_to_every_topic():
    g = group()
    _stable_with_subscription(g, meta=b"\xff")
    assert g.subscribed_topics() is None
    assert g.delete_offsets([("anything", 0)]).reply.partitions == (("anything", 0, "GROUP_SUBSCRIBED_TO_TOPIC"),)


def test_offset_delete_non_empty_group_of_another_protocol_type_is_non_empty_group():
    g = group()
    _stable_with_subscription(g, ptype="connect", meta=b"\xff")
    assert g.delete_offsets([("t", 0)]).reply.error == "NON_EMPTY_GROUP"
    assert not g.is_subscribed_to("t")
