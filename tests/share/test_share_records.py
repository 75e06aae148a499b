"""Kafka's binary encoding of ShareSnapshot / ShareUpdate records (``events.share_records``):
byte layouts checked against hand-built expected bytes from the schemas in
``shared/kafka-schemas/share/``, the StateBatch element cross-checked with kio's generated
serializer for the same fields, round trips (Hypothesis), and malformed input."""

from __future__ import annotations

import io
import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from events.share import ShareSnapshotWritten, ShareStateDeleted, ShareUpdateWritten
from events.share_records import (
    RecordDecodeError,
    decode_share_record,
    encode_share_record,
    kafka_uuid_from_string,
    kafka_uuid_to_string,
)

TOPIC = kafka_uuid_to_string(uuid.UUID(int=1))  # "AAAAAAAAAAAAAAAAAAAAAQ"


def test_snapshot_key_and_value_layout():
    # Kafka 4.x ShareSnapshotKey (coordinator-key, apiKey 0) / ShareSnapshotValue v0 (4.2 schema:
    # SnapshotEpoch int32, CreateTimestamp / WriteTimestamp int64, tagged DeliveryCompleteCount).
    rec = ShareSnapshotWritten("g1", TOPIC, 3, snapshot_epoch=2, state_epoch=5, leader_epoch=7, start_offset=10, state_batches=((10, 14, 2, 1),))
    key, value = encode_share_record(rec)
    expected_key = bytes.fromhex(
        "0000"  # record type 0 = ShareSnapshot (the coordinator-key apiKey)
        "0002" "6731"  # GroupId: int16 length, "g1"
        "00000000000000000000000000000001"  # TopicId uuid
        "00000003"  # Partition int32
    )
    expected_value = bytes.fromhex(
        "0000"  # value version 0
        "00000002"  # SnapshotEpoch int32
        "00000005"  # StateEpoch int32
        "00000007"  # LeaderEpoch int32
        "000000000000000a"  # StartOffset int64
        "ffffffffffffffff"  # CreateTimestamp int64 (-1: unknown, the event carries none)
        "ffffffffffffffff"  # WriteTimestamp int64
        "02"  # StateBatches: compact array, length + 1
        "000000000000000a" "000000000000000e" "02" "0001" "00"  # FirstOffset, LastOffset, DeliveryState, DeliveryCount, tags
        "00"  # top-level tagged fields (DeliveryCompleteCount left at its default -1: not written)
    )
    assert key == expected_key
    assert value == expected_value
    assert decode_share_record(key, value) == rec


def test_update_key_and_value_layout():
    # ShareUpdateKey: record type 1; ShareUpdateValue v0 — value version 0, not the late-2024
    # tree's SHARE_UPDATE_RECORD_VALUE_VERSION = 1 (the schema only has version 0; Kafka 4.x writes
    # ``new ApiMessageAndVersion(new ShareUpdateValue()…, (short) 0)`` and DumpLogSegments prints
    # ``"version":"0"`` for it).
    rec = ShareUpdateWritten("grp", TOPIC, 0, snapshot_epoch=65536, leader_epoch=-1, start_offset=-1, state_batches=())
    key, value = encode_share_record(rec)
    assert key == bytes.fromhex("0001" "0003" "677270" "00000000000000000000000000000001" "00000000")
    assert value == bytes.fromhex(
        "0000"  # value version 0
        "00010000"  # SnapshotEpoch int32 65536 (a uint16 until Kafka 4.0)
        "ffffffff"  # LeaderEpoch -1
        "ffffffffffffffff"  # StartOffset -1
        "01"  # empty compact array
        "00"  # tagged fields
    )
    assert decode_share_record(key, value) == rec


def test_delivery_complete_count_tag_is_read_and_skipped():
    # Kafka 4.2 (KIP-1226) writes DeliveryCompleteCount as tag 0 of the value's tagged fields.
    rec = ShareUpdateWritten("g", TOPIC, 1, 3, 4, 5, ((5, 6, 0, 2),))
    key, value = encode_share_record(rec)
    with_dcc = value[:-1] + bytes([1, 0, 4]) + (11).to_bytes(4, "big")
    assert decode_share_record(key, with_dcc) == rec


def test_state_batch_element_matches_kio_generated_serializer():
    # WriteShareGroupState v0's StateBatch has the same four fields and flexibility as the record's.
    from kio.schema.write_share_group_state.v0.request import StateBatch
    from kio.serial import entity_writer
    from kio.static.primitive import i8, i16, i64

    buf = io.BytesIO()
    entity_writer(StateBatch)(buf, StateBatch(first_offset=i64(10), last_offset=i64(14), delivery_state=i8(2), delivery_count=i16(1)))
    _, value = encode_share_record(ShareUpdateWritten("g", TOPIC, 0, 0, 0, 0, ((10, 14, 2, 1),)))
    # value = version(2) snapshotEpoch(4) leader(4) start(8) arrayLen(1) | element | tags(1)
    assert value[19:-1] == buf.getvalue()


def test_tombstone_is_snapshot_key_with_null_value():
    key, value = encode_share_record(ShareStateDeleted("g1", TOPIC, 3))
    assert value is None
    assert key[:2] == b"\x00\x00"
    assert decode_share_record(key, None) == ShareStateDeleted("g1", TOPIC, 3)


def test_topic_id_forms():
    u = uuid.UUID("5f2b8c1e-9a47-4d2b-8b36-0c3f2a1d4e55")
    b64 = kafka_uuid_to_string(u)
    assert len(b64) == 22 and "=" not in b64
    assert kafka_uuid_from_string(b64) == u == kafka_uuid_from_string(str(u))
    rec = ShareSnapshotWritten("g", str(u), 0, 0, 0, 0, 0, ())
    key, value = encode_share_record(rec)
    assert decode_share_record(key, value).topic_id == b64  # decoded in Kafka's form


def test_unknown_tagged_fields_are_skipped():
    rec = ShareUpdateWritten("g", TOPIC, 1, 3, 4, 5, ((5, 6, 0, 2),))
    key, value = encode_share_record(rec)
    # replace the final empty tag section with one unknown tag (tag 9, 2 bytes)
    tagged = value[:-1] + bytes([1, 9, 2, 0xAB, 0xCD])
    assert decode_share_record(key, tagged) == rec


@pytest.mark.parametrize(
    "key, value",
    [
        (b"\x00", None),  # truncated key version
        (bytes.fromhex("0002" "0001" "67") + bytes(16) + bytes(4), b"\x00\x00"),  # unknown record type 2
        (bytes.fromhex("0001" "0001" "67") + bytes(16) + bytes(4), None),  # tombstone with an update key
        (bytes.fromhex("0000" "0001" "67") + bytes(16) + bytes(4), bytes.fromhex("0001")),  # value version 1
        (bytes.fromhex("0000" "0001" "67") + bytes(16) + bytes(4), bytes.fromhex("0000" "0001" "00000001")),  # truncated value
        (bytes.fromhex("0000" "0001" "67") + bytes(16) + bytes(5), None),  # trailing key byte
    ],
)
def test_malformed_records_are_rejected(key, value):
    with pytest.raises(RecordDecodeError):
        decode_share_record(key, value)


_i16 = st.integers(-(2**15), 2**15 - 1)
_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)
_batches = st.lists(st.tuples(_i64, _i64, st.sampled_from([0, 2, 4]), _i16), max_size=20).map(tuple)
_groups = st.text(max_size=40)
_topics = st.uuids().map(kafka_uuid_to_string)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.builds(ShareSnapshotWritten, _groups, _topics, _i32, _i32, _i32, _i32, _i64, _batches),
        st.builds(ShareUpdateWritten, _groups, _topics, _i32, _i32, _i32, _i64, _batches),
        st.builds(ShareStateDeleted, _groups, _topics, _i32),
    )
)
def test_round_trip(record):
    key, value = encode_share_record(record)
    assert decode_share_record(key, value) == record
    # the key's group id is an int16-length string
    (n,) = struct.unpack(">h", key[2:4])
    assert key[4 : 4 + n].decode("utf-8") == record.group_id
