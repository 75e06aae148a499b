"""Kafka's binary encoding of the share coordinator's records (``__share_group_state``), for export
and import: :class:`events.share.ShareSnapshotWritten` / :class:`~events.share.ShareUpdateWritten`
/ :class:`~events.share.ShareStateDeleted` ⇄ (key bytes, value bytes | None).

Framing (Kafka 4.x ``CoordinatorRecordSerde``): a record key is an int16 *record type* — the
``apiKey`` of the ``coordinator-key`` schema, 0 = ShareSnapshot, 1 = ShareUpdate (the late-2024
tree used the key version for the same numbers) — followed by the key message; a value is an int16
value version followed by the value message; a tombstone has no value (``None``). Both values are
written as **version 0**: the only version either schema has. (The late-2024 tree declared
``SHARE_UPDATE_RECORD_VALUE_VERSION = 1`` for a schema whose ``validVersions`` is ``"0"``, a
constant the serde used as the record-type switch; Kafka 4.x writes ShareUpdateValue at version 0,
``DumpLogSegments`` prints ``"version":"0"``.)

Layouts, Kafka 4.2's ``share-coordinator/src/main/resources/common/message/Share*.json``
(big-endian):

* ``ShareSnapshotKey`` / ``ShareUpdateKey``, not flexible: ``GroupId`` string (int16 length +
  UTF-8), ``TopicId`` uuid (16 bytes), ``Partition`` int32.
* ``ShareSnapshotValue`` v0, flexible: ``SnapshotEpoch`` int32, ``StateEpoch`` int32,
  ``LeaderEpoch`` int32, ``StartOffset`` int64, ``CreateTimestamp`` int64, ``WriteTimestamp``
  int64, ``StateBatches`` compact array (unsigned varint length + 1) of {``FirstOffset`` int64,
  ``LastOffset`` int64, ``DeliveryState`` int8, ``DeliveryCount`` int16, tagged fields}, tagged
  fields (tag 0: ``DeliveryCompleteCount`` int32, default -1, Kafka 4.2 / KIP-1226).
* ``ShareUpdateValue`` v0, flexible: ``SnapshotEpoch`` int32, ``LeaderEpoch`` int32,
  ``StartOffset`` int64, ``StateBatches``, tagged fields (tag 0 as above).

The late-2024 schemas in ``shared/kafka-schemas/share/`` (``SnapshotEpoch`` uint16, no timestamps)
never shipped in a release; Kafka 4.x brokers read and write the layout above.

Not carried by the events, hence lossy on import: ``CreateTimestamp`` / ``WriteTimestamp`` (written
as -1, ``RecordBatch.NO_TIMESTAMP``) and ``DeliveryCompleteCount`` (not written, i.e. its default
-1: "unknown", which Kafka recomputes when it loads the partition). Tagged fields are skipped on read.
"""

from __future__ import annotations

import base64
import struct
import uuid
from typing import Optional, Union

from events.share import ShareSnapshotWritten, ShareStateDeleted, ShareUpdateWritten

__all__ = [
    "SHARE_SNAPSHOT_KEY_VERSION",
    "SHARE_SNAPSHOT_VALUE_VERSION",
    "SHARE_UPDATE_KEY_VERSION",
    "SHARE_UPDATE_VALUE_VERSION",
    "NO_TIMESTAMP",
    "RecordDecodeError",
    "decode_share_record",
    "encode_share_record",
    "kafka_uuid_from_string",
    "kafka_uuid_to_string",
]

#: Record type (the int16 key prefix) of a ShareSnapshot record (Kafka's key ``apiKey`` 0).
SHARE_SNAPSHOT_KEY_VERSION = 0
#: Record type of a ShareUpdate record (``apiKey`` 1).
SHARE_UPDATE_KEY_VERSION = 1
#: Value version of ShareSnapshotValue (its only version).
SHARE_SNAPSHOT_VALUE_VERSION = 0
#: Value version of ShareUpdateValue (its only version; see the module docstring).
SHARE_UPDATE_VALUE_VERSION = 0
#: ``CreateTimestamp`` / ``WriteTimestamp`` written for a snapshot (the events carry none).
NO_TIMESTAMP = -1

ShareRecord = Union[ShareSnapshotWritten, ShareUpdateWritten, ShareStateDeleted]

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")
_II = struct.Struct(">ii")
_QQQ = struct.Struct(">qqq")
_BATCH = struct.Struct(">qqbh")


def kafka_uuid_to_string(topic_id: Union[uuid.UUID, str]) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 of the 16 bytes without padding (22 chars).

    Accepts a ``uuid.UUID``, its canonical string, or an already-base64 Kafka string (returned
    unchanged after validation). Raises ``ValueError`` otherwise.
    """
    return base64.urlsafe_b64encode(kafka_uuid_from_string(topic_id).bytes).rstrip(b"=").decode("ascii")


def kafka_uuid_from_string(topic_id: Union[uuid.UUID, str]) -> uuid.UUID:
    """Parse a topic id given as ``uuid.UUID``, canonical UUID text, or Kafka's 22-char base64.
    Raises ``ValueError`` for anything else."""
    if isinstance(topic_id, uuid.UUID):
        return topic_id
    s = str(topic_id)
    if len(s) == 22:
        raw = base64.urlsafe_b64decode(s + "==")
        if len(raw) != 16:
            raise ValueError(f"not a Kafka Uuid: {topic_id!r}")
        return uuid.UUID(bytes=raw)
    return uuid.UUID(s)



class RecordDecodeError(ValueError):
    """The bytes are not a valid share-coordinator record (truncated, unknown record type or
    version, bad varint)."""


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = memoryview(buf)
        self.pos = 0

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise RecordDecodeError(f"truncated record: need {n} bytes at {self.pos}, have {len(self.buf) - self.pos}")
        v = self.buf[self.pos : self.pos + n]
        self.pos += n
        return v

    def unpack(self, s: struct.Struct):
        return s.unpack(self.take(s.size))

    def uvarint(self) -> int:
        result = shift = 0
        for _ in range(5):
            (b,) = self.take(1)
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
        raise RecordDecodeError("varint longer than 5 bytes")

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.take(self.uvarint())

    def done(self) -> None:
        if self.pos != len(self.buf):
            raise RecordDecodeError(f"{len(self.buf) - self.pos} trailing bytes")


def _encode_key(record_type: int, group_id: str, topic_id: str, partition: int) -> bytes:
    g = group_id.encode("utf-8")
    if len(g) > 0x7FFF:
        raise ValueError("group id longer than 32767 bytes")
    return _H.pack(record_type) + _H.pack(len(g)) + g + kafka_uuid_from_string(topic_id).bytes + _I.pack(partition)


def _encode_batches(batches) -> bytes:
    parts = [_uvarint(len(batches) + 1)]
    for first, last, state, count in batches:
        parts.append(_BATCH.pack(first, last, state, count))
        parts.append(b"\x00")
    return b"".join(parts)


def encode_share_record(record: ShareRecord) -> tuple[bytes, Optional[bytes]]:
    """``(key, value)`` bytes of a share-coordinator record as Kafka 4.x writes them to
    ``__share_group_state`` (layouts in the module docstring); ``value`` is ``None`` for a
    tombstone (:class:`ShareStateDeleted`, keyed as a ShareSnapshot). Raises ``TypeError`` for
    another type, ``ValueError`` for a group id over 32767 UTF-8 bytes and ``struct.error`` for a
    field out of its Kafka type's range."""
    if isinstance(record, ShareStateDeleted):
        return _encode_key(SHARE_SNAPSHOT_KEY_VERSION, record.group_id, record.topic_id, record.partition), None
    if isinstance(record, ShareSnapshotWritten):
        record_type, version = SHARE_SNAPSHOT_KEY_VERSION, SHARE_SNAPSHOT_VALUE_VERSION
        head = _I.pack(record.snapshot_epoch) + _I.pack(record.state_epoch) + _I.pack(record.leader_epoch)
        head += _Q.pack(record.start_offset) + _Q.pack(NO_TIMESTAMP) + _Q.pack(NO_TIMESTAMP)
    elif isinstance(record, ShareUpdateWritten):
        record_type, version = SHARE_UPDATE_KEY_VERSION, SHARE_UPDATE_VALUE_VERSION
        head = _I.pack(record.snapshot_epoch) + _I.pack(record.leader_epoch) + _Q.pack(record.start_offset)
    else:
        raise TypeError(f"not a share-coordinator record: {type(record).__name__}")
    key = _encode_key(record_type, record.group_id, record.topic_id, record.partition)
    return key, _H.pack(version) + head + _encode_batches(record.state_batches) + b"\x00"


def _read_batches(r: _Reader) -> tuple[tuple[int, int, int, int], ...]:
    n = r.uvarint()
    if n == 0:
        raise RecordDecodeError("null StateBatches array")
    out = []
    for _ in range(n - 1):
        first, last, state, count = r.unpack(_BATCH)
        r.skip_tagged_fields()
        out.append((first, last, state, count))
    return tuple(out)


def decode_share_record(key: bytes, value: Optional[bytes]) -> ShareRecord:
    """Decode a ``__share_group_state`` record; the topic id comes back in Kafka's base64 form
    (as :class:`actors.share.state_store.SharePartitionKey` uses). A ``None`` value is a tombstone
    (:class:`ShareStateDeleted`). Raises :class:`RecordDecodeError` on malformed bytes."""
    r = _Reader(key)
    (key_version,) = r.unpack(_H)
    if key_version not in (SHARE_SNAPSHOT_KEY_VERSION, SHARE_UPDATE_KEY_VERSION):
        raise RecordDecodeError(f"unknown record type {key_version}")
    (glen,) = r.unpack(_H)
    if glen < 0:
        raise RecordDecodeError("null group id")
    try:
        group_id = bytes(r.take(glen)).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordDecodeError(f"group id is not UTF-8: {exc}") from None
    topic_id = kafka_uuid_to_string(uuid.UUID(bytes=bytes(r.take(16))))
    (partition,) = r.unpack(_I)
    r.done()
    if value is None:
        if key_version != SHARE_SNAPSHOT_KEY_VERSION:
            raise RecordDecodeError("a tombstone must carry a ShareSnapshot key")
        return ShareStateDeleted(group_id, topic_id, partition)
    v = _Reader(value)
    (value_version,) = v.unpack(_H)
    if value_version != 0:
        raise RecordDecodeError(f"unsupported value version {value_version}")
    (snapshot_epoch,) = v.unpack(_I)
    if key_version == SHARE_SNAPSHOT_KEY_VERSION:
        state_epoch, leader_epoch = v.unpack(_II)
        start_offset, _create_ts, _write_ts = v.unpack(_QQQ)
    else:
        (leader_epoch,) = v.unpack(_I)
        (start_offset,) = v.unpack(_Q)
    batches = _read_batches(v)
    v.skip_tagged_fields()  # DeliveryCompleteCount (tag 0) and any unknown tag
    v.done()
    if key_version == SHARE_SNAPSHOT_KEY_VERSION:
        return ShareSnapshotWritten(group_id, topic_id, partition, snapshot_epoch, state_epoch, leader_epoch, start_offset, batches)
    return ShareUpdateWritten(group_id, topic_id, partition, snapshot_epoch, leader_epoch, start_offset, batches)
