"""Kafka's RLMM serde (reference §6): golden bytes written by Kafka 4.0.0, the byte layout built
by hand from the JSON schemas, the S* scenarios of RemoteLogMetadataSerdeTest and the transform
tests, and the parser's error paths."""

from __future__ import annotations

import json
import struct
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from events.rlmm_errors import IllegalArgumentException, MetadataParseException
from events.rlmm_types import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataSnapshot,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
    TopicIdPartition,
    uuid_to_kafka_str,
)
from events.rlmm_serde import RemoteLogMetadataSerde, deserialize, format_record, serialize

GOLDEN = json.loads((Path(__file__).parent / "fixtures" / "rlmm_golden_kafka_4_0_0.json").read_text())
CS, CF = RemoteLogSegmentState.COPY_SEGMENT_STARTED, RemoteLogSegmentState.COPY_SEGMENT_FINISHED

# -------------------------------------------------------------------- golden vectors (Kafka 4.0.0)
G_TP = TopicIdPartition(uuid.UUID(int=0xCA), "orders", 7)
G_SID = RemoteLogSegmentId(G_TP, uuid.UUID(int=0xFE))


def _g_add(**kw) -> RemoteLogSegmentMetadata:
    return RemoteLogSegmentMetadata(G_SID, 0, 99, 100, 42, 123, 4096, {0: 0, 1: 50}, **kw)


GOLDEN_CASES = {
    "add_with_custom": _g_add(custom_metadata=bytes([1, 2, 3, 4])),
    "add_no_custom": _g_add(),
    "add_txn_empty": _g_add(txn_idx_empty=True),
    "update_finish": RemoteLogSegmentMetadataUpdate(G_SID, 456, None, CF, 42),
    "partition_delete_marked": RemotePartitionDeleteMetadata(G_TP, RemotePartitionDeleteState.DELETE_PARTITION_MARKED, 789, 42),
}


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_golden_bytes_written_by_kafka_4_0(case):
    """Byte-exact with Kafka 4.0.0's serializer, both directions."""
    golden = bytes.fromhex(GOLDEN[case])
    assert serialize(GOLDEN_CASES[case]) == golden
    assert deserialize(golden) == GOLDEN_CASES[case]


# ------------------------------------------------------------------ layout built from the schemas
def uv(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def cstr(s: str) -> bytes:
    return uv(len(s.encode()) + 1) + s.encode()


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


NO_TAGS = b"\x00"
TOPIC_ID = uuid.UUID("0123456789abcdef0123456789abcdef")
SEG_UUID = uuid.UUID("fedcba9876543210fedcba9876543210")
TP = TopicIdPartition(TOPIC_ID, "foo", 3)
SID = RemoteLogSegmentId(TP, SEG_UUID)


def topic_id_partition_entry() -> bytes:
    # TopicIdPartitionEntry: Name (string), Id (uuid), Partition (int32), tagged fields
    return cstr("foo") + TOPIC_ID.bytes + i32(3) + NO_TAGS


def test_layout_remote_log_segment_metadata_record():
    """apiKey 0 (RemoteLogSegmentMetadataRecord.json), S1's values, with a 300-byte custom
    metadata so the length needs a two-byte unsigned varint."""
    custom = bytes(range(256)) + bytes(44)
    m = RemoteLogSegmentMetadata(SID, 0, 100, -1, 1, 1_700_000_000_000, 1024, {0: 0, 1: 20, 2: 80}, CS, custom)
    expected = (
        uv(1) + uv(0) + uv(0)  # frame version 1, api key 0, version 0
        + topic_id_partition_entry() + SEG_UUID.bytes + NO_TAGS  # RemoteLogSegmentIdEntry
        + i64(0) + i64(100)  # StartOffset, EndOffset
        + i32(1)  # BrokerId
        + i64(-1) + i64(1_700_000_000_000)  # MaxTimestampMs, EventTimestampMs
        + uv(3 + 1)  # SegmentLeaderEpochs: compact array of 3
        + i32(0) + i64(0) + NO_TAGS + i32(1) + i64(20) + NO_TAGS + i32(2) + i64(80) + NO_TAGS
        + i32(1024)  # SegmentSizeInBytes
        + bytes([0xAD, 0x02]) + custom  # CustomMetadata: uvarint(301) = 0xAD 0x02
        + struct.pack(">b", 0)  # RemoteLogSegmentState
        + NO_TAGS
    )
    assert serialize(m) == expected
    assert deserialize(expected) == m


def test_layout_remote_log_segment_metadata_update_record():
    """apiKey 1: RemoteLogSegmentIdEntry, BrokerId, EventTimestampMs, CustomMetadata (null), state."""
    u = RemoteLogSegmentMetadataUpdate(SID, 99, None, RemoteLogSegmentState.DELETE_SEGMENT_STARTED, 2)
    expected = (uv(1) + uv(1) + uv(0) + topic_id_partition_entry() + SEG_UUID.bytes + NO_TAGS
                + i32(2) + i64(99) + uv(0) + b"\x02" + NO_TAGS)
    assert serialize(u) == expected
    assert deserialize(expected) == u


def test_layout_remote_partition_delete_metadata_record():
    """apiKey 2: TopicIdPartitionEntry, BrokerId, EventTimestampMs, RemotePartitionDeleteState."""
    d = RemotePartitionDeleteMetadata(TP, RemotePartitionDeleteState.DELETE_PARTITION_FINISHED, 5, 0)
    expected = uv(1) + uv(2) + uv(0) + topic_id_partition_entry() + i32(0) + i64(5) + b"\x02" + NO_TAGS
    assert serialize(d) == expected
    assert deserialize(expected) == d


def test_layout_remote_log_segment_metadata_snapshot_record():
    """apiKey 3: SegmentId (uuid only), …, with the 4.0 TxnIndexEmpty tag (tag 0, size 1, true)."""
    snap = RemoteLogSegmentMetadataSnapshot(SEG_UUID, 10, 20, 30, 4, 50, 60, b"", CF, {7: 10}, True)
    expected = (uv(1) + uv(3) + uv(0) + SEG_UUID.bytes + i64(10) + i64(20) + i32(4) + i64(30) + i64(50)
                + uv(2) + i32(7) + i64(10) + NO_TAGS + i32(60) + uv(1) + b"\x01"
                + uv(1) + uv(0) + uv(1) + b"\x01")
    assert serialize(snap) == expected
    assert deserialize(expected) == snap


def test_reads_version_1_with_unknown_tagged_fields():
    """A newer Kafka's version 1 adds only tagged fields (BrokerLeaderEpoch tag 0, EndOffset tag 1
    on record 1); the reader accepts version 1 and skips the tags it does not know."""
    u = RemoteLogSegmentMetadataUpdate(SID, 99, b"x", CF, 2)
    v0 = serialize(u)
    body = v0[3:-1]  # strip frame/apiKey/version and the empty top-level tag section
    tags = uv(2) + uv(0) + uv(4) + i32(17) + uv(1) + uv(8) + i64(12345)
    v1 = uv(1) + uv(1) + uv(1) + body + tags
    assert deserialize(v1) == u


# ----------------------------------------------------------------------------- S scenarios
def test_testRemoteLogSegmentMetadataSerde():
    """S1 RemoteLogMetadataSerdeTest#testRemoteLogSegmentMetadataSerde."""
    m = RemoteLogSegmentMetadata(RemoteLogSegmentId.generate_new(TP), 0, 100, -1, 1, 1_700_000_000_000, 1024,
                                 {0: 0, 1: 20, 2: 80}, CS, bytes([0, 1, 2, 3]))
    serde = RemoteLogMetadataSerde()
    assert serde.deserialize(serde.serialize(m)) == m


def test_testRemoteLogSegmentMetadataUpdateSerde():
    """S2 …#testRemoteLogSegmentMetadataUpdateSerde."""
    u = RemoteLogSegmentMetadataUpdate(RemoteLogSegmentId.generate_new(TP), 1_700_000_000_000, bytes([0, 1, 2, 3]), CF, 2)
    assert deserialize(serialize(u)) == u


def test_testRemotePartitionDeleteMetadataSerde():
    """S3 …#testRemotePartitionDeleteMetadataSerde."""
    d = RemotePartitionDeleteMetadata(TP, RemotePartitionDeleteState.DELETE_PARTITION_MARKED, 1_700_000_000_000, 0)
    assert deserialize(serialize(d)) == d


def test_testInvalidRemoteStorageMetadata():
    """S4 …#testInvalidRemoteStorageMetadata: an unknown type cannot be serialized."""
    with pytest.raises(IllegalArgumentException, match="does not exist"):
        serialize(object())  # type: ignore[arg-type]


@pytest.mark.parametrize("custom", [bytes([0, 1, 2, 3]), b"", None])
def test_testToAndFromMessage(custom):
    """S5 RemoteLogSegmentMetadata{,Update,Snapshot}TransformTest#testToAndFromMessage: present,
    present-but-empty and absent custom metadata round-trip distinctly."""
    sid = RemoteLogSegmentId.generate_new(TP)
    m = RemoteLogSegmentMetadata(sid, 0, 100, -1, 1, 1, 1024, {0: 0}, CS, custom)
    u = RemoteLogSegmentMetadataUpdate(sid, 1, custom, CF, 2)
    s = RemoteLogSegmentMetadataSnapshot.create(m)
    for obj in (m, u, s):
        back = deserialize(serialize(obj))
        assert back == obj and back.custom_metadata == custom and type(back.custom_metadata) is type(custom)


def test_testFormat():
    """S7 RemoteLogMetadataFormatterTest#testFormat."""
    tip = TopicIdPartition(uuid.uuid4(), "foo", 0)
    sid = RemoteLogSegmentId(tip, uuid.uuid4())
    m = RemoteLogSegmentMetadata(sid, 0, 100, -1, 1, 123, 1024, {0: 0, 1: 20, 2: 80}, CS, bytes(10))
    expected = (
        f"partition: 0, offset: 0, value: RemoteLogSegmentMetadata{{remoteLogSegmentId=RemoteLogSegmentId{{"
        f"topicIdPartition={uuid_to_kafka_str(tip.topic_id)}:foo-0, id={uuid_to_kafka_str(sid.id)}}}, "
        "startOffset=0, endOffset=100, brokerId=1, maxTimestampMs=-1, eventTimestampMs=123, "
        "segmentLeaderEpochs={0=0, 1=20, 2=80}, segmentSizeInBytes=1024, customMetadata=Optional[CustomMetadata{10 bytes}], "
        "state=COPY_SEGMENT_STARTED}\n"
    )
    assert format_record(0, 0, serialize(m)) == expected


# ------------------------------------------------------------------------------- error paths
def test_rejects_frame_versions_other_than_1():
    good = serialize(GOLDEN_CASES["update_finish"])
    with pytest.raises(MetadataParseException, match="frame version 0"):
        deserialize(b"\x00" + good[1:])
    with pytest.raises(MetadataParseException, match="unknown frame version 2"):
        deserialize(b"\x02" + good[1:])


def test_rejects_garbage_truncation_unknown_key_and_version():
    good = serialize(GOLDEN_CASES["add_with_custom"])
    with pytest.raises(MetadataParseException, match="Found 2 byte\\(s\\) of garbage after 0"):
        deserialize(good + b"\x00\x00")
    for cut in (2, 10, len(good) - 1):
        with pytest.raises(MetadataParseException):
            deserialize(good[:cut])
    with pytest.raises(MetadataParseException):
        deserialize(b"\x01\x04\x00")
    with pytest.raises(MetadataParseException):
        deserialize(b"\x01\x00\x02" + good[3:])
    bad_state = bytearray(serialize(GOLDEN_CASES["update_finish"]))
    bad_state[-2] = 9
    with pytest.raises(MetadataParseException):
        deserialize(bytes(bad_state))


# ------------------------------------------------------------------------------ round trips
ints64 = st.integers(-(2**63), 2**63 - 1)
ints32 = st.integers(-(2**31), 2**31 - 1)
uuids = st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
tps = st.builds(TopicIdPartition, uuids, st.text(min_size=1, max_size=40), st.integers(0, 2**31 - 1))
customs = st.one_of(st.none(), st.binary(max_size=300))


@st.composite
def segment_metadata(draw):
    start = draw(st.integers(0, 2**62))
    end = draw(st.integers(start, 2**63 - 1))
    epochs = draw(st.dictionaries(st.integers(0, 2**31 - 1), ints64, min_size=1, max_size=5))
    return RemoteLogSegmentMetadata(
        RemoteLogSegmentId(draw(tps), draw(uuids)), start, end, draw(ints64), draw(ints32), draw(ints64), draw(ints32),
        epochs, draw(st.sampled_from(list(RemoteLogSegmentState))), draw(customs), draw(st.booleans()))


@settings(max_examples=200, deadline=None)
@given(st.one_of(
    segment_metadata(),
    st.builds(RemoteLogSegmentMetadataUpdate, st.builds(RemoteLogSegmentId, tps, uuids), ints64, customs,
              st.sampled_from(list(RemoteLogSegmentState)), ints32),
    st.builds(RemotePartitionDeleteMetadata, tps, st.sampled_from(list(RemotePartitionDeleteState)), ints64, ints32),
))
def test_round_trip_property(obj):
    data = serialize(obj)
    assert data[0] == 1
    assert deserialize(data) == obj


def test_kafka_records_import_as_events_and_fold():
    """Records written by Kafka 4.0 become Shoal events (and back, byte for byte); folding them
    gives the cache Kafka's consumer would build."""
    from actors.rlmm.store import MetadataPartitionState
    from events.rlmm_serde import event_of_record_value, record_value_of_event

    values = [bytes.fromhex(GOLDEN[k]) for k in ("add_no_custom", "update_finish", "partition_delete_marked")]
    events = [event_of_record_value(v) for v in values]
    assert [record_value_of_event(e) for e in events] == values
    st = MetadataPartitionState(0)
    for version, ev in enumerate(events, 1):
        st.evolve(ev, version)
    st.mark_initialized()
    cache = st.cache_for_read(G_TP, registered=True)
    finished = GOLDEN_CASES["add_no_custom"].create_with_updates(GOLDEN_CASES["update_finish"])
    assert cache.remote_log_segment_metadata(1, 60) == finished
    assert cache.remote_log_segment_metadata(0, 50) is None and cache.remote_log_segment_metadata(0, 49) == finished
    assert st.delete_metadata[G_TP] == GOLDEN_CASES["partition_delete_marked"]
    snap = serialize(RemoteLogSegmentMetadataSnapshot.create(finished))
    with pytest.raises(IllegalArgumentException):
        event_of_record_value(snap)
