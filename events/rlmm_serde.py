"""Kafka's binary serde for the four RLMM record types (``RemoteLogMetadataSerde``), byte-exact.

A record value in ``__remote_log_metadata`` is (``AbstractApiMessageSerde#write``)::

    frameVersion: uvarint (= 1) | apiKey: uvarint | version: uvarint | message body

======  ======================================  =======================================
apiKey  message (``storage/src/main/resources/message``)  Python type (``events.rlmm_types``)
======  ======================================  =======================================
0       ``RemoteLogSegmentMetadataRecord``        :class:`RemoteLogSegmentMetadata`
1       ``RemoteLogSegmentMetadataUpdateRecord``  :class:`RemoteLogSegmentMetadataUpdate`
2       ``RemotePartitionDeleteMetadataRecord``   :class:`RemotePartitionDeleteMetadata`
3       ``RemoteLogSegmentMetadataSnapshotRecord`` :class:`RemoteLogSegmentMetadataSnapshot`
======  ======================================  =======================================

Every schema is ``validVersions "0"``, ``flexibleVersions "0+"`` (reference §6), so bodies use the
flexible encoding: int8/int32/int64 big-endian, ``uuid`` = 16 bytes (MSB then LSB), compact
``string`` = uvarint(len + 1) + UTF-8, nullable ``bytes`` = uvarint(len + 1) (0 = null), arrays =
uvarint(n + 1), and every struct, array element and the top level ends with a tagged-field
section (uvarint count, then per field uvarint tag, uvarint size, bytes). Fields come in the JSON
order (``TopicIdPartitionEntry`` is Name, Id, Partition). Kafka 4.0 (KAFKA-16780) adds the tagged
field ``TxnIndexEmpty`` (bool, tag 0) to records 0 and 3, written only when true.

The writer always writes version 0 (Kafka 4.0's highest). The reader accepts versions 0 and 1
(version 1 of a newer Kafka only adds tagged fields: ``BrokerLeaderEpoch``/``EndOffset``) and skips
unknown tags; it rejects frame version 0 or any other than 1, unknown api keys, truncated bodies
and trailing bytes with :class:`MetadataParseException`, with Kafka's messages.
"""

from __future__ import annotations

import struct
import uuid
from typing import Union

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
)

__all__ = [
    "DEFAULT_FRAME_VERSION",
    "REMOTE_LOG_SEGMENT_METADATA_API_KEY",
    "REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_API_KEY",
    "REMOTE_LOG_SEGMENT_METADATA_UPDATE_API_KEY",
    "REMOTE_PARTITION_DELETE_API_KEY",
    "RemoteLogMetadata",
    "RemoteLogMetadataSerde",
    "deserialize",
    "event_of_record_value",
    "format_record",
    "record_value_of_event",
    "serialize",
]

DEFAULT_FRAME_VERSION = 1
REMOTE_LOG_SEGMENT_METADATA_API_KEY = 0
REMOTE_LOG_SEGMENT_METADATA_UPDATE_API_KEY = 1
REMOTE_PARTITION_DELETE_API_KEY = 2
REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_API_KEY = 3
#: The version the writer uses (``highestSupportedVersion()`` of Kafka 4.0's schemas).
WRITE_VERSION = 0
#: Versions the reader accepts.
READ_VERSIONS = (0, 1)

RemoteLogMetadata = Union[
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemotePartitionDeleteMetadata,
    RemoteLogSegmentMetadataSnapshot,
]

_I8 = struct.Struct(">b")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


# ---------------------------------------------------------------------------------- writing
class _Writer:
    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def uvarint(self, v: int) -> None:
        if v < 0:
            raise ValueError("unsigned varint of a negative value")
        buf = self.buf
        while v >= 0x80:
            buf.append((v & 0x7F) | 0x80)
            v >>= 7
        buf.append(v)

    def i8(self, v: int) -> None:
        self.buf += _I8.pack(v)

    def i32(self, v: int) -> None:
        self.buf += _I32.pack(v)

    def i64(self, v: int) -> None:
        self.buf += _I64.pack(v)

    def uuid(self, u: uuid.UUID) -> None:
        self.buf += u.bytes

    def compact_string(self, s: str) -> None:
        raw = s.encode("utf-8")
        if len(raw) > 0x7FFF:
            raise IllegalArgumentException(f"'{s[:20]}…' is longer than 32767 bytes")
        self.uvarint(len(raw) + 1)
        self.buf += raw

    def compact_nullable_bytes(self, b: bytes | None) -> None:
        if b is None:
            self.uvarint(0)
        else:
            self.uvarint(len(b) + 1)
            self.buf += b

    def no_tags(self) -> None:
        self.buf.append(0)

    def topic_id_partition(self, tp: TopicIdPartition) -> None:
        self.compact_string(tp.topic)
        self.uuid(tp.topic_id)
        self.i32(tp.partition)
        self.no_tags()

    def epochs(self, epochs: tuple[tuple[int, int], ...]) -> None:
        self.uvarint(len(epochs) + 1)
        for epoch, offset in epochs:
            self.i32(epoch)
            self.i64(offset)
            self.no_tags()

    def segment_id(self, sid: RemoteLogSegmentId) -> None:
        """``RemoteLogSegmentIdEntry`` (records 0 and 1): topic partition, segment uuid, tags."""
        self.topic_id_partition(sid.topic_id_partition)
        self.uuid(sid.id)
        self.no_tags()

    def segment_body(self, m: RemoteLogSegmentMetadata | RemoteLogSegmentMetadataSnapshot) -> None:
        """The fields records 0 and 3 share after the id, in JSON order, with the top-level tags."""
        self.i64(m.start_offset)
        self.i64(m.end_offset)
        self.i32(m.broker_id)
        self.i64(m.max_timestamp_ms)
        self.i64(m.event_timestamp_ms)
        self.epochs(m.segment_leader_epochs)
        self.i32(m.segment_size_in_bytes)
        self.compact_nullable_bytes(m.custom_metadata)
        self.i8(m.state.id)
        self.txn_tag(m.txn_idx_empty)

    def txn_tag(self, txn_idx_empty: bool) -> None:
        if txn_idx_empty:
            self.uvarint(1)  # one tagged field
            self.uvarint(0)  # tag 0: TxnIndexEmpty
            self.uvarint(1)  # size
            self.buf.append(1)
        else:
            self.no_tags()


def serialize(metadata: RemoteLogMetadata) -> bytes:
    """``RemoteLogMetadataSerde#serialize``: the record value bytes of ``metadata`` (frame
    version 1, its api key, version 0, flexible body). Raises :class:`IllegalArgumentException`
    for any other type ("RemoteLogMetadataTransform for given RemoteStorageMetadata class … does
    not exist.")."""
    w = _Writer()
    w.uvarint(DEFAULT_FRAME_VERSION)
    if isinstance(metadata, RemoteLogSegmentMetadata):
        w.uvarint(REMOTE_LOG_SEGMENT_METADATA_API_KEY)
        w.uvarint(WRITE_VERSION)
        w.segment_id(metadata.remote_log_segment_id)
        w.segment_body(metadata)
    elif isinstance(metadata, RemoteLogSegmentMetadataUpdate):
        w.uvarint(REMOTE_LOG_SEGMENT_METADATA_UPDATE_API_KEY)
        w.uvarint(WRITE_VERSION)
        w.segment_id(metadata.remote_log_segment_id)
        w.i32(metadata.broker_id)
        w.i64(metadata.event_timestamp_ms)
        w.compact_nullable_bytes(metadata.custom_metadata)
        w.i8(metadata.state.id)
        w.no_tags()
    elif isinstance(metadata, RemotePartitionDeleteMetadata):
        w.uvarint(REMOTE_PARTITION_DELETE_API_KEY)
        w.uvarint(WRITE_VERSION)
        w.topic_id_partition(metadata.topic_id_partition)
        w.i32(metadata.broker_id)
        w.i64(metadata.event_timestamp_ms)
        w.i8(metadata.state.id)
        w.no_tags()
    elif isinstance(metadata, RemoteLogSegmentMetadataSnapshot):
        w.uvarint(REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_API_KEY)
        w.uvarint(WRITE_VERSION)
        w.uuid(metadata.segment_id)
        w.segment_body(metadata)
    else:
        raise IllegalArgumentException(
            f"RemoteLogMetadataTransform for given RemoteStorageMetadata class: {type(metadata)} does not exist."
        )
    return bytes(w.buf)


# ---------------------------------------------------------------------------------- reading
class _Truncated(Exception):
    pass


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.pos = 0

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise _Truncated(f"need {n} byte(s) at position {self.pos}, have {self.remaining()}")
        out = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return out

    def uvarint(self) -> int:
        value = 0
        shift = 0
        while True:
            if self.pos >= len(self.data):
                raise _Truncated("varint runs past the end")
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise MetadataParseException("Varint is too long, the most significant bit in the 5th byte is set")

    def i8(self) -> int:
        return _I8.unpack(self.take(1))[0]

    def i32(self) -> int:
        return _I32.unpack(self.take(4))[0]

    def i64(self) -> int:
        return _I64.unpack(self.take(8))[0]

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self.take(16))

    def compact_string(self, field: str) -> str:
        n = self.uvarint() - 1
        if n < 0:
            raise MetadataParseException(f"non-nullable field {field} was serialized as null")
        if n > 0x7FFF:
            raise MetadataParseException(f"string field {field} had invalid length {n}")
        return self.take(n).decode("utf-8")

    def compact_nullable_bytes(self) -> bytes | None:
        n = self.uvarint() - 1
        return None if n < 0 else self.take(n)

    def tags(self, known: dict[int, str] | None = None) -> dict[str, bytes]:
        """Read a tagged-field section; return ``name → raw value bytes`` for the known tags
        (unknown tags are skipped, as Kafka keeps them only as opaque unknown fields)."""
        found: dict[str, bytes] = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            size = self.uvarint()
            raw = self.take(size)
            if known and tag in known:
                found[known[tag]] = raw
        return found

    def topic_id_partition(self) -> TopicIdPartition:
        name = self.compact_string("name")
        tid = self.uuid()
        partition = self.i32()
        self.tags()
        return TopicIdPartition(tid, name, partition)

    def epochs(self) -> tuple[tuple[int, int], ...]:
        n = self.uvarint() - 1
        if n < 0:
            raise MetadataParseException("non-nullable field segmentLeaderEpochs was serialized as null")
        out: dict[int, int] = {}
        for _ in range(n):
            epoch = self.i32()
            offset = self.i64()
            self.tags()
            out[epoch] = offset
        return tuple(sorted(out.items()))


def _segment_state(state_id: int) -> RemoteLogSegmentState:
    st = RemoteLogSegmentState.for_id(state_id)
    if st is None:
        raise MetadataParseException(f"unknown RemoteLogSegmentState id {state_id}")
    return st


def _txn_empty(tags: dict[str, bytes]) -> bool:
    raw = tags.get("TxnIndexEmpty")
    return bool(raw) and raw[0] != 0


_SEGMENT_TAGS = {0: "TxnIndexEmpty"}


def _read_segment_id(r: _Reader) -> RemoteLogSegmentId:
    """``RemoteLogSegmentIdEntry`` (records 0 and 1)."""
    tp = r.topic_id_partition()
    seg_uuid = r.uuid()
    r.tags()
    return RemoteLogSegmentId(tp, seg_uuid)


def _read_segment_body(r: _Reader) -> tuple:
    """The fields records 0 and 3 share after the id: ``(start, end, broker, max_ts, event_ts,
    epochs, size, custom, state, txn_idx_empty)``."""
    start, end, broker, max_ts, event_ts = r.i64(), r.i64(), r.i32(), r.i64(), r.i64()
    epochs = r.epochs()
    size = r.i32()
    custom = r.compact_nullable_bytes()
    state = _segment_state(r.i8())
    return start, end, broker, max_ts, event_ts, epochs, size, custom, state, _txn_empty(r.tags(_SEGMENT_TAGS))


def _read_body(r: _Reader, api_key: int) -> RemoteLogMetadata:
    if api_key == REMOTE_LOG_SEGMENT_METADATA_API_KEY:
        sid = _read_segment_id(r)
        start, end, broker, max_ts, event_ts, epochs, size, custom, state, txn_empty = _read_segment_body(r)
        return RemoteLogSegmentMetadata(sid, start, end, max_ts, broker, event_ts, size, epochs, state, custom, txn_empty)
    if api_key == REMOTE_LOG_SEGMENT_METADATA_UPDATE_API_KEY:
        sid = _read_segment_id(r)
        broker, event_ts = r.i32(), r.i64()
        custom = r.compact_nullable_bytes()
        state = _segment_state(r.i8())
        r.tags()
        return RemoteLogSegmentMetadataUpdate(sid, event_ts, custom, state, broker)
    if api_key == REMOTE_PARTITION_DELETE_API_KEY:
        tp = r.topic_id_partition()
        broker, event_ts = r.i32(), r.i64()
        state_id = r.i8()
        r.tags()
        state = RemotePartitionDeleteState.for_id(state_id)
        if state is None:
            raise MetadataParseException(f"unknown RemotePartitionDeleteState id {state_id}")
        return RemotePartitionDeleteMetadata(tp, state, event_ts, broker)
    if api_key == REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_API_KEY:
        seg_uuid = r.uuid()
        start, end, broker, max_ts, event_ts, epochs, size, custom, state, txn_empty = _read_segment_body(r)
        return RemoteLogSegmentMetadataSnapshot(seg_uuid, start, end, max_ts, broker, event_ts, size, custom, state, epochs, txn_empty)
    raise MetadataParseException(f"Unknown metadata id {api_key}")


def deserialize(data: bytes) -> RemoteLogMetadata:
    """``RemoteLogMetadataSerde#deserialize``: the metadata object of a record value.

    Raises :class:`MetadataParseException` for frame version 0 or ≠ 1, an api key other than
    0–3, an unsupported version, a truncated or malformed body, or trailing bytes ("Found N
    byte(s) of garbage after <apiKey>")."""
    r = _Reader(bytes(data))
    try:
        frame = r.uvarint()
    except _Truncated as exc:
        raise MetadataParseException(f"Error while reading frame version: {exc}") from None
    if frame == 0:
        raise MetadataParseException(
            "Could not deserialize metadata record with frame version 0. Note that upgrades from the preview "
            "release of KRaft in 2.8 to newer versions are not supported."
        )
    if frame != DEFAULT_FRAME_VERSION:
        raise MetadataParseException(
            f"Could not deserialize metadata record due to unknown frame version {frame}"
            f"(only frame version {DEFAULT_FRAME_VERSION} is supported)"
        )
    try:
        api_key = r.uvarint()
        version = r.uvarint()
    except _Truncated as exc:
        raise MetadataParseException(f"Error while reading type/version: {exc}") from None
    if api_key > 0x7FFF or version > 0x7FFF:
        raise MetadataParseException("Value for type/version was too large.")
    if api_key not in (0, 1, 2, 3):
        raise MetadataParseException(f"Unknown metadata id {api_key}")
    if version not in READ_VERSIONS:
        raise MetadataParseException(
            f"Failed to deserialize record with type {api_key}: Can't read version {version} of record type {api_key}"
        )
    try:
        obj = _read_body(r, api_key)
    except MetadataParseException:
        raise
    except (_Truncated, ValueError, TypeError, UnicodeDecodeError) as exc:
        raise MetadataParseException(f"Failed to deserialize record with type {api_key}: {exc}") from exc
    if r.remaining() > 0:
        raise MetadataParseException(f"Found {r.remaining()} byte(s) of garbage after {api_key}")
    return obj


def format_record(partition: int, offset: int, value: bytes) -> str:
    """``RemoteLogMetadataSerde.RemoteLogMetadataFormatter#writeTo``: ``"partition: %d, offset:
    %d, value: <toString>\\n"`` for one ``__remote_log_metadata`` record (scenario S7)."""
    return f"partition: {partition}, offset: {offset}, value: {deserialize(value)}\n"


class RemoteLogMetadataSerde:
    """Kafka's class shape: ``serialize(metadata) -> bytes`` and ``deserialize(bytes) -> metadata``."""

    @staticmethod
    def serialize(metadata: RemoteLogMetadata) -> bytes:
        """See :func:`serialize`."""
        return serialize(metadata)

    @staticmethod
    def deserialize(data: bytes) -> RemoteLogMetadata:
        """See :func:`deserialize`."""
        return deserialize(data)


def record_value_of_event(event: object) -> bytes:
    """The ``__remote_log_metadata`` record value (Kafka's bytes) of a Shoal RLMM event, for
    exporting Shoal's streams to a Kafka cluster or printing them with Kafka's formatter."""
    from events.rlmm import metadata_of

    return serialize(metadata_of(event))  # type: ignore[arg-type]


def event_of_record_value(value: bytes) -> object:
    """The Shoal RLMM event recording a ``__remote_log_metadata`` record value written by Kafka
    (api keys 0–2), for importing a Kafka cluster's tiered-storage metadata. Raises
    :class:`MetadataParseException` for bad bytes and :class:`IllegalArgumentException` for a
    snapshot record (api key 3), which names no partition and so cannot become an event."""
    from events.rlmm import event_for

    md = deserialize(value)
    if isinstance(md, RemoteLogSegmentMetadataSnapshot):
        raise IllegalArgumentException("a RemoteLogSegmentMetadataSnapshot record has no topic partition")
    return event_for(md)
