"""RecordBatch v2 parsing/validation (store.record_batch) against Kafka's layout
(``DefaultRecordBatch``), kio's independent encoder/decoder, and each codec."""

from __future__ import annotations

import datetime
import gzip
import io
import struct

import cramjam
import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from store import record_batch as rb
from store.record_batch import CompressionType, Header, Record, TimestampType


def _varint(n: int) -> bytes:
    v = (n << 1) ^ (n >> 63)
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def hand_built_batch(base_offset=7, epoch=3, attrs=0, pid=1234, pepoch=5, seq=42, base_ts=1_700_000_000_000):
    """A 2-record batch laid out field by field per DefaultRecordBatch's javadoc, independent of
    the module under test."""
    recs = b""
    for i, (k, v) in enumerate([(b"key0", b"value0"), (None, b"v1")]):
        body = bytes([0]) + _varint(i * 10) + _varint(i)
        body += (_varint(-1) if k is None else _varint(len(k)) + k) + _varint(len(v)) + v
        body += _varint(1) + _varint(2) + b"h1" + _varint(1) + b"x"  # one header h1=x
        recs += _varint(len(body)) + body
    tail = struct.pack(">hiqqqhii", attrs, 1, base_ts, base_ts + 10, pid, pepoch, seq, 2) + recs
    crc = crc32c(tail)
    return struct.pack(">qiibI", base_offset, len(tail) + 9, epoch, 2, crc) + tail


def test_header_fields_match_kafka_layout():
    raw = hand_built_batch()
    h = rb.validate_batch(raw)
    assert (h.base_offset, h.partition_leader_epoch, h.magic) == (7, 3, 2)
    assert h.batch_length == len(raw) - rb.LOG_OVERHEAD
    assert h.size_in_bytes == len(raw)
    assert h.crc == crc32c(raw[21:])  # CRC-32C over attributes..end
    assert (h.last_offset_delta, h.last_offset, h.next_offset) == (1, 8, 9)
    assert (h.base_timestamp, h.max_timestamp) == (1_700_000_000_000, 1_700_000_000_010)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.records_count) == (1234, 5, 42, 2)
    assert h.compression == CompressionType.NONE and h.timestamp_type == TimestampType.CREATE_TIME
    assert not h.is_transactional and not h.is_control_batch


def test_records_decode_with_millisecond_timestamps_and_headers():
    recs = list(rb.iter_records(hand_built_batch()))
    assert recs == [
        Record(7, 1_700_000_000_000, b"key0", b"value0", (Header("h1", b"x"),), 0),
        Record(8, 1_700_000_000_010, None, b"v1", (Header("h1", b"x"),), 0),
    ]


def test_attribute_bits():
    h = rb.parse_header(hand_built_batch(attrs=0x08 | 0x10 | 0x20 | 0x04))
    assert h.compression == CompressionType.ZSTD
    assert h.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert h.is_transactional and h.is_control_batch
    with pytest.raises(rb.UnsupportedCompressionTypeError):
        rb.parse_header(hand_built_batch(attrs=0x05)).compression


def test_crc_covers_attributes_to_end_but_not_offset_or_epoch():
    raw = bytearray(hand_built_batch())
    rb.set_base_offset(raw, 1_000_000)
    rb.set_partition_leader_epoch(raw, 99)
    h = rb.validate_batch(raw)  # still valid: neither field is in the CRC
    assert (h.base_offset, h.partition_leader_epoch) == (1_000_000, 99)
    for pos in (rb.ATTRIBUTES_OFFSET, 30, len(raw) - 1):
        bad = bytearray(raw)
        bad[pos] ^= 0x01
        with pytest.raises(rb.CorruptRecordError):
            rb.validate_batch(bad)


def test_set_max_timestamp_recomputes_crc():
    raw = bytearray(hand_built_batch())
    rb.set_max_timestamp(raw, TimestampType.LOG_APPEND_TIME, 1_800_000_000_000)
    h = rb.validate_batch(raw)
    assert h.timestamp_type == TimestampType.LOG_APPEND_TIME and h.max_timestamp == 1_800_000_000_000
    assert [r.timestamp for r in rb.iter_records(raw)] == [1_800_000_000_000] * 2


def test_structural_errors():
    raw = hand_built_batch()
    with pytest.raises(rb.CorruptRecordError, match="truncated"):
        rb.parse_header(raw[:40])
    with pytest.raises(rb.CorruptRecordError, match="claims"):
        rb.validate_batch(raw[:-1])
    bad_magic = bytearray(raw)
    bad_magic[16] = 1
    with pytest.raises(rb.CorruptRecordError, match="magic"):
        rb.parse_header(bad_magic)
    with pytest.raises(rb.CorruptRecordError):
        list(rb.iter_batches(raw + raw[:30]))


def test_assign_offsets_rewrites_each_batch_and_keeps_crc():
    data = rb.build_batch([(b"a", b"1"), (b"b", b"2")]) + rb.build_batch([(b"c", b"3")], compression=CompressionType.GZIP)
    out, headers = rb.assign_offsets(data, 100, 4)
    assert [(h.base_offset, h.last_offset, h.partition_leader_epoch) for h in headers] == [(100, 101, 4), (102, 102, 4)]
    assert [h.base_offset for h in rb.iter_batches(out)] == [100, 102]
    assert [r.offset for h in headers for r in rb.iter_records(out, h.position)] == [100, 101, 102]


def test_assign_offsets_log_append_time():
    out, headers = rb.assign_offsets(rb.build_batch([(b"a", b"1")], base_timestamp=5), 0, 0, log_append_time_ms=777)
    assert headers[0].timestamp_type == TimestampType.LOG_APPEND_TIME and headers[0].max_timestamp == 777
    rb.validate_batch(out)


def test_assign_offsets_refuses_control_batches_and_empty_input():
    with pytest.raises(rb.InvalidRecordError):
        rb.assign_offsets(rb.build_batch([(b"k", b"v")], control=True), 0, 0)
    with pytest.raises(rb.InvalidRecordError):
        rb.assign_offsets(b"", 0, 0)


def test_valid_prefix_stops_at_torn_tail():
    a = rb.build_batch([(b"a", b"1")])
    b = rb.build_batch([(b"b", b"2")], base_offset=1)
    end, headers = rb.valid_prefix(a + b + b[:20])
    assert end == len(a) + len(b) and len(headers) == 2
    corrupt = bytearray(a + b)
    corrupt[len(a) + 30] ^= 0xFF
    end, headers = rb.valid_prefix(bytes(corrupt))
    assert end == len(a) and len(headers) == 1


# ----------------------------------------------------------------- kio cross-checks


def _kio_batch(n: int) -> bytes:
    from kio.records.schema import NewRecordBatch
    from kio.records.schema import Record as KRecord
    from kio.records.schema import RecordHeader
    from kio.records.writers import write_new_batch
    from kio.static.primitive import TZAwareMicros, i8, i16, i32, i64

    ts = TZAwareMicros.parse(datetime.datetime(2024, 5, 1, 12, 0, 0, tzinfo=datetime.UTC))
    batch = NewRecordBatch(
        producer_id=i64(77),
        producer_epoch=i16(1),
        base_sequence=i32(10),
        attributes=i16(0),
        records=tuple(
            KRecord(attributes=i8(0), timestamp=ts, offset=i64(i), key=b"k%d" % i, value=b"v" * i,
                    headers=(RecordHeader(key=b"hk", value=None),))
            for i in range(n)
        ),
    )
    buf = io.BytesIO()
    write_new_batch(buf, batch)
    return buf.getvalue()


def test_parses_batches_written_by_kio_encoder():
    raw = _kio_batch(5)
    h = rb.validate_batch(raw)
    assert (h.records_count, h.last_offset_delta, h.producer_id, h.base_sequence) == (5, 4, 77, 10)
    recs = list(rb.iter_records(raw))
    assert [r.offset for r in recs] == list(range(5))
    assert [r.value for r in recs] == [b"v" * i for i in range(5)]
    assert recs[0].headers == (Header("hk", None),)
    assert recs[0].timestamp == int(datetime.datetime(2024, 5, 1, 12, tzinfo=datetime.UTC).timestamp() * 1000)


def test_kio_reader_accepts_our_encoder():
    from kio.records.readers import read_batch

    raw = rb.build_batch([(b"a", b"x" * 10), (None, None)], base_offset=5, base_timestamp=1_714_564_800_000, producer_id=9)
    kb, size = read_batch(raw, 0)
    assert size == len(raw)
    assert (kb.base_offset, kb.last_offset_delta, kb.producer_id, kb.crc) == (5, 1, 9, rb.parse_header(raw).crc)
    assert [(r.offset, r.key, r.value) for r in kb.records] == [(5, b"a", b"x" * 10), (6, None, None)]


# ----------------------------------------------------------------- codecs


@pytest.mark.parametrize("codec", list(CompressionType))
def test_each_codec_round_trips(codec):
    records = [(b"key-%d" % i, (b"payload-%d-" % i) * 20) for i in range(50)]
    raw = rb.build_batch(records, compression=codec, base_timestamp=1_000)
    h = rb.validate_batch(raw)
    assert h.compression == codec
    got = list(rb.iter_records(raw))
    assert [(r.key, r.value) for r in got] == records
    assert [r.timestamp for r in got] == [1_000 + i for i in range(50)]
    if codec != CompressionType.NONE:
        assert h.size_in_bytes < len(rb.build_batch(records))


def _with_records_block(codec: CompressionType, block: bytes, count: int) -> bytes:
    """A batch whose (already compressed) records block comes from an outside compressor."""
    tail = struct.pack(">hiqqqhii", int(codec), count - 1, 0, count - 1, -1, -1, -1, count) + block
    return struct.pack(">qiibI", 0, len(tail) + 9, 0, 2, crc32c(tail)) + tail


def _plain_records_block(n: int) -> bytes:
    raw = rb.build_batch([(b"k", b"v%d" % i) for i in range(n)])
    return raw[rb.RECORD_BATCH_OVERHEAD :]


@pytest.mark.parametrize(
    "codec,compressor",
    [
        (CompressionType.GZIP, lambda b: gzip.compress(b)),  # Python's zlib, not cramjam
        (CompressionType.SNAPPY, lambda b: bytes(cramjam.snappy.compress_raw(b))),  # raw block (librdkafka)
        (CompressionType.LZ4, lambda b: bytes(cramjam.lz4.compress(b))),  # standard LZ4 frame, linked blocks
        (CompressionType.ZSTD, lambda b: bytes(cramjam.zstd.compress(b, level=19))),
    ],
)
def test_decodes_blocks_from_other_compressors(codec, compressor):
    raw = _with_records_block(codec, compressor(_plain_records_block(30)), 30)
    assert [r.value for r in rb.iter_records(raw)] == [b"v%d" % i for i in range(30)]


def test_snappy_xerial_framing_header_and_blocks():
    data = bytes(range(256)) * 600  # > one 32 KiB xerial block
    framed = rb.compress(CompressionType.SNAPPY, data)
    assert framed[:8] == b"\x82SNAPPY\x00" and struct.unpack(">ii", framed[8:16]) == (1, 1)
    assert rb.decompress(CompressionType.SNAPPY, framed) == data


def test_lz4_frame_is_block_independent_with_valid_descriptor_checksum():
    data = b"abcdefgh" * 40000
    frame = rb.compress(CompressionType.LZ4, data)
    assert frame[:4] == b"\x04\x22\x4d\x18"
    flg = frame[4]
    assert (flg >> 6) == 1 and (flg >> 5) & 1 == 1  # version 01, block independence (Kafka requires it)
    assert bytes(cramjam.lz4.decompress(frame)) == data  # a reference LZ4 frame decoder accepts it
    assert rb.decompress(CompressionType.LZ4, frame) == data


def test_corrupt_compressed_block_is_corrupt_record():
    raw = _with_records_block(CompressionType.GZIP, b"not gzip at all", 1)
    with pytest.raises(rb.CorruptRecordError):
        list(rb.iter_records(raw))


# ----------------------------------------------------------------- properties

_record = st.tuples(st.one_of(st.none(), st.binary(max_size=20)), st.one_of(st.none(), st.binary(max_size=200)))


@settings(max_examples=60, deadline=None)
@given(records=st.lists(_record, min_size=1, max_size=20), codec=st.sampled_from(list(CompressionType)),
       base=st.integers(0, 2**40), ts=st.integers(0, 2**41))
def test_property_build_then_iterate_round_trips(records, codec, base, ts):
    raw = rb.build_batch(records, base_offset=base, base_timestamp=ts, compression=codec)
    got = list(rb.iter_records(raw))
    assert [(r.key, r.value) for r in got] == records
    assert [r.offset for r in got] == list(range(base, base + len(records)))


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 5), min_size=1, max_size=6), cut=st.integers(0, 10_000))
def test_property_valid_prefix_is_whole_batches(sizes, cut):
    batches = [rb.build_batch([(b"k", b"v" * 30)] * n, base_offset=i * 10) for i, n in enumerate(sizes)]
    data = b"".join(batches)
    cut = min(cut, len(data))
    end, headers = rb.valid_prefix(data[:cut])
    boundaries = [0]
    for b in batches:
        boundaries.append(boundaries[-1] + len(b))
    expected_end = max(x for x in boundaries if x <= cut)
    assert end == expected_end
    assert len(headers) == boundaries.index(expected_end)


# ----------------------------------------------------------------- librdkafka (confluent-kafka) batches
#
# confluent-kafka cannot write batches to a file, so a minimal fake broker (ApiVersions, Metadata v4,
# Produce v7; just enough for librdkafka to send one Produce request) captures the RecordBatch bytes
# a real client encoder produces, per codec.

import socket  # noqa: E402
import threading  # noqa: E402


def _str(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class FakeBroker:
    """Answers ApiVersions, Metadata v4 and Produce v7 just enough for librdkafka to send one
    Produce request; keeps the raw record bytes of every partition it receives."""

    def __init__(self, topic):
        self.topic = topic
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.captured = []
        self.seen_apis = []
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self._stop = True
        self.sock.close()

    def _accept(self):
        while not self._stop:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _recv(self, c, n):
        out = b""
        while len(out) < n:
            chunk = c.recv(n - len(out))
            if not chunk:
                raise EOFError
            out += chunk
        return out

    def _serve(self, c):
        try:
            while True:
                (size,) = struct.unpack(">i", self._recv(c, 4))
                req = self._recv(c, size)
                key, ver, corr = struct.unpack_from(">hhi", req, 0)
                (clen,) = struct.unpack_from(">h", req, 8)
                pos = 10 + max(clen, 0)
                self.seen_apis.append((key, ver))
                if key == 18:
                    body = self._api_versions(ver)
                elif key == 3:
                    body = self._metadata()
                elif key == 0:
                    body = self._produce(req, pos)
                else:
                    return
                resp = struct.pack(">i", corr) + body
                c.sendall(struct.pack(">i", len(resp)) + resp)
        except (EOFError, OSError):
            pass
        finally:
            c.close()

    def _api_versions(self, ver):
        apis = [(0, 7, 7), (1, 4, 11), (3, 4, 4), (10, 0, 0), (18, 0, 3)]
        if ver >= 3:
            b = struct.pack(">h", 0) + bytes([len(apis) + 1])
            for k, lo, hi in apis:
                b += struct.pack(">hhh", k, lo, hi) + b"\x00"
            return b + struct.pack(">i", 0) + b"\x00"
        b = struct.pack(">hi", 0, len(apis))
        for k, lo, hi in apis:
            b += struct.pack(">hhh", k, lo, hi)
        return b

    def _metadata(self):
        b = struct.pack(">i", 0)  # throttle
        b += struct.pack(">i", 1) + struct.pack(">i", 1) + _str("127.0.0.1") + struct.pack(">i", self.port) + struct.pack(">h", -1)
        b += struct.pack(">h", -1) + struct.pack(">i", 1)  # cluster id null, controller 1
        b += struct.pack(">i", 1) + struct.pack(">h", 0) + _str(self.topic) + b"\x00"
        b += struct.pack(">i", 1) + struct.pack(">hii", 0, 0, 1) + struct.pack(">ii", 1, 1) + struct.pack(">ii", 1, 1)
        return b

    def _produce(self, req, pos):
        (tl,) = struct.unpack_from(">h", req, pos)
        pos += 2 + max(tl, 0)
        acks, timeout, ntopics = struct.unpack_from(">hii", req, pos)
        pos += 10
        resp_topics = b""
        for _ in range(ntopics):
            (nl,) = struct.unpack_from(">h", req, pos)
            name = req[pos + 2: pos + 2 + nl].decode()
            pos += 2 + nl
            (nparts,) = struct.unpack_from(">i", req, pos)
            pos += 4
            parts = b""
            for _ in range(nparts):
                idx, rlen = struct.unpack_from(">ii", req, pos)
                pos += 8
                self.captured.append(bytes(req[pos: pos + rlen]))
                pos += rlen
                parts += struct.pack(">ihqqq", idx, 0, 0, -1, 0)
            resp_topics += _str(name) + struct.pack(">i", nparts) + parts
        return struct.pack(">i", ntopics) + resp_topics + struct.pack(">i", 0)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_parses_batches_produced_by_librdkafka(codec, tmp_path):
    import confluent_kafka  # a project dependency (pyproject.toml): a missing install must fail, not skip
    broker = FakeBroker("rdk")
    try:
        p = confluent_kafka.Producer({"bootstrap.servers": f"127.0.0.1:{broker.port}", "compression.type": codec,
                                      "linger.ms": 50, "acks": 1, "enable.idempotence": False})
        for i in range(50):
            p.produce("rdk", key=b"key-%d" % i, value=b"value-%d-" % i * 20, headers=[("h", b"x"), ("n", None)],
                      partition=0, timestamp=1_700_000_000_000 + i)
        assert p.flush(20) == 0
    finally:
        broker.close()
    assert broker.captured, "librdkafka sent no Produce request"
    from store.log.config import LogConfig
    from store.log.log import PartitionLog

    log = PartitionLog.open(tmp_path, "rdk", 0, LogConfig())
    expected_codec = CompressionType[codec.upper()]
    got = []
    for raw in broker.captured:
        headers = list(rb.iter_batches(raw))
        assert all(h.magic == 2 and h.compression == expected_codec for h in headers)
        for h in headers:
            got += [(r.key, r.value, r.timestamp, r.headers) for r in rb.iter_records(raw, h.position)]
        info = log.append_as_leader(raw, 0, 0)  # offset assignment keeps librdkafka's CRC valid
        assert info.batch_count == len(headers)
    assert got == [(b"key-%d" % i, b"value-%d-" % i * 20, 1_700_000_000_000 + i, (Header("h", b"x"), Header("n", None)))
                   for i in range(50)]
    log.update_high_watermark(log.log_end_offset)
    data = log.read(0, 10**6).records
    assert [r.offset for h in rb.iter_batches(data) for r in rb.iter_records(data, h.position)] == list(range(50))


def _override(batch: bytes, *, last_offset_delta: int | None = None, count: int | None = None) -> bytes:
    """Rewrite ``lastOffsetDelta``/``recordsCount`` and re-seal the CRC (Kafka's
    ``LogValidatorTest#recordsWithCountOverrides`` does the same with a ByteBuffer)."""
    b = bytearray(batch)
    if last_offset_delta is not None:
        struct.pack_into(">i", b, rb.LAST_OFFSET_DELTA_OFFSET, last_offset_delta)
    if count is not None:
        struct.pack_into(">i", b, rb.RECORDS_COUNT_OFFSET, count)
    struct.pack_into(">I", b, rb.CRC_OFFSET, crc32c(bytes(b[rb.ATTRIBUTES_OFFSET:])))
    return bytes(b)


def test_record_batch_with_count_overrides():
    """LogValidatorTest#testRecordBatchWithCountOverrides: 3 records, lastOffsetDelta 2, count 3."""
    batch = _override(rb.build_batch([(b"k", b"v")] * 3), last_offset_delta=2, count=3)
    out, headers = rb.assign_offsets(batch, 10, 0)
    assert (headers[0].base_offset, headers[0].last_offset) == (10, 12)


@pytest.mark.parametrize("last_offset_delta,count", [(0, 3), (15, 3), (-3, 3), (2, 0)])
def test_inconsistent_count_and_offset(last_offset_delta, count):
    """LogValidatorTest#testInconsistentCountAndOffset (plus a zero count): a client batch whose
    offset range and record count disagree, or whose count is not positive, is INVALID_RECORD
    (``LogValidator#validateBatch``), never appended with a made-up offset range."""
    batch = _override(rb.build_batch([(b"k", b"v")] * 3), last_offset_delta=last_offset_delta, count=count)
    with pytest.raises((rb.InvalidRecordError, rb.CorruptRecordError)):
        rb.assign_offsets(batch, 0, 0)


def test_invalid_sequence_with_producer_id_is_invalid_record():
    """``LogValidator#validateBatch``: a batch with a producer id but a negative base sequence
    is INVALID_RECORD."""
    batch = rb.build_batch([(b"k", b"v")], producer_id=7, producer_epoch=0, base_sequence=-1)
    with pytest.raises(rb.InvalidRecordError):
        rb.assign_offsets(batch, 0, 0)
    ok = rb.build_batch([(b"k", b"v")], producer_id=7, producer_epoch=0, base_sequence=0)
    assert rb.assign_offsets(ok, 0, 0)[1][0].last_offset == 0


# ----------------------------------------------------------------- retained batches (share redelivery)

_kept_record = st.builds(
    lambda gap, ts, value: (gap, ts, value),
    st.integers(1, 3), st.integers(-5_000, 5_000), st.one_of(st.none(), st.binary(max_size=300)))


@settings(max_examples=100, deadline=None)
@given(recs=st.lists(_kept_record, min_size=1, max_size=40), contiguous=st.booleans(), codec=st.sampled_from(list(CompressionType)),
       log_append=st.booleans(), picks=st.lists(st.tuples(st.integers(0, 120), st.integers(0, 5)), max_size=6))
def test_property_retain_records_keeps_exactly_the_records_asked_and_the_batch_fields(recs, contiguous, codec, log_append, picks):
    base, base_ts = 1_000, 1_700_000_000_000
    offsets = []
    o = base - 1
    for gap, _ts, _v in recs:  # offsets one apart (as every produce appends), or with gaps
        o += 1 if contiguous else gap
        offsets.append(o)
    records = [Record(offset=off, timestamp=base_ts + ts, key=None, value=v) for off, (_g, ts, v) in zip(offsets, recs)]
    raw = rb.build_batch(records, base_offset=base, compression=codec, producer_id=77, producer_epoch=3, base_sequence=500,
                         partition_leader_epoch=9, timestamp_type=TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME)
    if log_append:
        raw = bytearray(raw)
        rb.set_max_timestamp(raw, TimestampType.LOG_APPEND_TIME, 1_800_000_000_000)
        raw = bytes(raw)
    h = rb.validate_batch(raw)
    keep = []  # ascending, non-overlapping offset ranges
    for start, length in sorted(picks):
        first = base + start
        if keep and first <= keep[-1][1]:
            first = keep[-1][1] + 1
        keep.append((first, first + length))
    kept = [r for r in rb.iter_records(raw) if any(a <= r.offset <= z for a, z in keep)]
    index = rb.index_records(raw)
    if not kept:
        with pytest.raises(ValueError):
            rb.retain_records(raw, 0, index, keep)
        return
    out = rb.retain_records(raw, 0, index, keep)
    g = rb.validate_batch(out)  # whole, CRC-valid
    assert g.size_in_bytes == len(out)
    assert list(rb.iter_records(out)) == kept  # offsets, timestamps, keys, values as in the original
    assert (g.base_offset, g.last_offset_delta, g.base_timestamp, g.producer_id, g.producer_epoch, g.base_sequence,
            g.partition_leader_epoch, g.attributes) == (h.base_offset, h.last_offset_delta, h.base_timestamp, 77, 3, 500, 9, h.attributes)
    assert g.records_count == len(kept)
    assert g.max_timestamp == (1_800_000_000_000 if log_append else max(r.timestamp for r in kept))
    if len(kept) == h.records_count:
        assert out == raw


def test_retain_records_reads_every_offset_delta_when_a_record_is_not_at_its_index():
    # 3 records, lastOffsetDelta 2, but the first two carry deltas 1 and 0
    records = [Record(offset=11, timestamp=5, key=None, value=b"b"), Record(offset=10, timestamp=7, key=None, value=b"a"),
               Record(offset=12, timestamp=6, key=None, value=b"c")]
    raw = rb.build_batch(records, base_offset=10)
    assert rb.parse_header(raw).last_offset_delta == 2
    out = rb.retain_records(raw, 0, rb.index_records(raw), [(10, 10)])
    assert [(r.offset, r.value, r.timestamp) for r in rb.iter_records(out)] == [(10, b"a", 7)]
    assert rb.parse_header(out).max_timestamp == 7


def test_index_records_finds_each_record_with_long_varints():
    # records over 8 KB (three-byte lengths), timestamp deltas over 63 ms, offset deltas past two varint bytes
    records = [Record(offset=10 + 5_000 * i, timestamp=1_000 + 70 * i * (-1) ** i, key=b"k", value=b"v" * (9_000 if i % 3 == 0 else 5))
               for i in range(7)]
    raw = rb.build_batch(records, base_offset=10)
    index = rb.index_records(raw)
    assert index.block is None and len(index.starts) == len(records) + 1
    assert index.starts[0] == 0 and index.starts[-1] == len(raw) - rb.RECORD_BATCH_OVERHEAD
    for i, r in enumerate(records):  # each record on its own
        one = rb.retain_records(raw, 0, index, [(r.offset, r.offset)])
        [got] = rb.iter_records(one)
        assert (got.offset, got.timestamp, got.value) == (r.offset, r.timestamp, r.value)
        assert len(one) == rb.RECORD_BATCH_OVERHEAD + index.starts[i + 1] - index.starts[i]


def test_index_records_refuses_records_that_do_not_fit_their_batch():
    raw = rb.build_batch([(None, b"v" * 50)] * 3)
    block = raw[rb.RECORD_BATCH_OVERHEAD:]
    with pytest.raises(rb.CorruptRecordError, match="runs past"):  # a length of 10 with 6 bytes left
        rb.index_records(_with_records_block(CompressionType.NONE, b"\x14" + b"\x00" * 6, 1))
    with pytest.raises(rb.CorruptRecordError, match="runs past"):  # a negative length
        rb.index_records(_with_records_block(CompressionType.NONE, b"\x7f" + b"\x00" * 6, 1))
    with pytest.raises(rb.CorruptRecordError):  # trailing bytes after the counted records
        rb.index_records(_with_records_block(CompressionType.NONE, block + b"\x00", 3))


def test_index_records_refuses_a_records_count_its_bytes_cannot_hold_before_allocating_for_it():
    # 69 bytes claiming 2**31 - 1 records: refused from the sizes, not after reserving 16 GiB
    raw = _with_records_block(CompressionType.NONE, b"\x00" * 8, 2**31 - 1)
    with pytest.raises(rb.CorruptRecordError, match="cannot fit"):
        rb.index_records(raw)
