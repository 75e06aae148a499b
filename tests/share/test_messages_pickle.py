"""Every ShareGroupActor message survives a pickle round trip (Thespian's multiproc bases pickle
messages) and compares equal by its fields."""

from __future__ import annotations

import inspect
import pickle

import pytest

from actors.share import messages as m

SAMPLES = [
    m.ShareGroupHeartbeatCmd("g", "m1", 0, "rack", ("foo", "bar"), {"foo": ("T", 3)}, "client", "/127.0.0.1"),
    m.ShareGroupHeartbeatReply("NONE", "", "m1", 3, 5000, (("T", (0, 1)),)),
    m.ShareGroupHeartbeatReply("FENCED_MEMBER_EPOCH", "too new"),
    m.ShareFetchPartition("T", 0, ((0, 4, (1,)), (5, 5, (0,))), 5, ((5, 9), (10, 20)), 0, 21, 3),
    m.ShareFetchCmd("g", "m1", 2, (m.ShareFetchPartition("T", 1),), 500, (("U", 0),), 1, True, 100),
    m.ShareFetchCmd("g", "m1", 2, (m.ShareFetchPartition("T", 1),), 500, (), 0, False, None, True),
    m.ShareFetchPartitionResult("T", 0, "NONE", "INVALID_RECORD_STATE", ((0, 9, 1),), 10, None, None, 0),
    m.ShareFetchReply("NONE", "", (m.ShareFetchPartitionResult("T", 0),), 30000),
    m.ShareAcknowledgePartition("T", 0, ((0, 9, (1,)),)),
    m.ShareAcknowledgeCmd("g", "m1", -1, (m.ShareAcknowledgePartition("T", 0, ((0, 9, (1,)),)),)),
    m.PartitionResult("T", 0, "INVALID_REQUEST", "bad"),
    m.ShareAcknowledgeReply("NONE", "", (m.PartitionResult("T", 0),), 30000),
    m.DescribeShareGroup("g"),
    m.MemberDescription("m1", None, 3, "c", "h", ("foo",), (("T", (0,)),)),
    m.ShareGroupDescription("g", "NONE", "", "Stable", 3, 3, "simple", (m.MemberDescription("m1", "r", 3, "c", "h", ("foo",), ()),)),
    m.DescribeShareGroupOffsets("g", (("T", 0),)),
    m.DescribeShareGroupOffsets("g"),
    m.SharePartitionOffset("T", 0, 42),
    m.ShareGroupOffsets("g", "NONE", (m.SharePartitionOffset("T", 0, -1),)),
    m.AlterGroupConfigs("g", {"share.session.timeout.ms": "50000", "share.auto.offset.reset": None}, True, True),
    m.GroupConfigsAltered("g", "INVALID_CONFIG", "no", {"a": "b"}),
    m.DescribeGroupConfigs("g"),
    m.GroupConfigsDescribed("g", {"share.session.timeout.ms": "45000"}, ("share.session.timeout.ms",)),
    m.DeleteShareGroupState("g", (("T", 0),)),
    m.AlterShareGroupOffsets("g", (("T", 0, 5),)),
    m.DeleteShareGroupOffsets("g", ("T",)),
    m.ShareGroupStateDeleted("g", "NON_EMPTY_GROUP", "x", (m.PartitionResult("T", 0),)),
    m.GetShareGroupState("g"),
    m.ShareGroupStateDump("g", 12, {"membership": {"a": [1, 2]}, "partitions": {"T:0": (1, 2, (3,))}}),
    m.Passivate("g"),
    m.RecordsFreed("g"),
]


def test_every_message_class_has_a_sample():
    classes = {c for _, c in inspect.getmembers(m, inspect.isclass) if c.__module__ == m.__name__}
    assert classes == {type(s) for s in SAMPLES}


@pytest.mark.parametrize("msg", SAMPLES, ids=lambda s: type(s).__name__)
def test_pickle_round_trip(msg):
    for proto in (2, pickle.HIGHEST_PROTOCOL):
        back = pickle.loads(pickle.dumps(msg, protocol=proto))
        assert type(back) is type(msg)
        assert back == msg
        assert repr(back) == repr(msg)
