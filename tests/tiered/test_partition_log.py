"""store.log (the partition log): appends, segment rolling, indexes, reads, ListOffsets, leader-epoch
cache, retention, flush policy and reopen/recovery (Kafka UnifiedLog/LogSegment/OffsetIndex/
TimeIndex/LeaderEpochFileCache semantics)."""

from __future__ import annotations


from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from config import ConfigError
from store import record_batch as rb
from store.log.config import LogConfig
from store.log.epoch_cache import EpochEntry, LeaderEpochFileCache
from store.log.errors import OffsetOutOfRangeError, RecordBatchTooLargeError, RecordTooLargeError
from store.log.log import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    PartitionLog,
)
from store.log.segment import segment_file_name


def batch(n=1, ts=1000, value=b"v" * 40, key=b"k"):
    return rb.build_batch([(key, value)] * n, base_timestamp=ts)


def open_log(tmp_path, **props):
    cfg = LogConfig.from_properties({k.replace("_", "."): str(v) for k, v in props.items()})
    return PartitionLog.open(tmp_path / "logs", "topic", 0, cfg)


def offsets_of(records: bytes) -> list[int]:
    return [r.offset for h in rb.iter_batches(records) for r in rb.iter_records(records, h.position)]


def test_config_defaults_and_validation():
    c = LogConfig.from_properties({})
    assert (c.segment_bytes, c.segment_ms, c.retention_ms, c.retention_bytes) == (1073741824, 604800000, 604800000, -1)
    assert (c.local_retention_ms, c.local_retention_bytes, c.flush_messages) == (-2, -2, 2**63 - 1)
    assert c.local_retention_ms_effective == 604800000 and c.local_retention_bytes_effective == -1
    with pytest.raises(ConfigError):
        LogConfig.from_properties({"segment.bytes": "13"})
    with pytest.raises(ConfigError):
        LogConfig.from_properties({"flush.messages": "0"})
    with pytest.raises(ConfigError):
        LogConfig.from_properties({"retention.ms": "1000", "local.retention.ms": "2000", "remote.storage.enable": "true"})
    with pytest.raises(ConfigError):
        LogConfig.from_properties({"segment.ms": "abc"})


def test_append_assigns_offsets_and_layout(tmp_path):
    log = open_log(tmp_path)
    a = log.append_as_leader(batch(3), 0, 1)
    b = log.append_as_leader(batch(2), 0, 2)
    assert (a.first_offset, a.last_offset, b.first_offset, b.last_offset) == (0, 2, 3, 4)
    assert log.log_end_offset == 5
    d = tmp_path / "logs" / "topic-0"
    assert (d / "00000000000000000000.log").exists() and (d / "00000000000000000000.index").exists()
    assert (d / "00000000000000000000.timeindex").exists()
    assert (d / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
    assert log.high_watermark == 0  # not moved by append
    log.update_high_watermark(log.log_end_offset)
    r = log.read(0, 10_000)
    assert offsets_of(r.records) == [0, 1, 2, 3, 4]


def test_segment_rolls_by_segment_bytes(tmp_path):
    one = len(batch())
    log = open_log(tmp_path, segment_bytes=one * 3)
    for _ in range(10):
        log.append_as_leader(batch(), 0, 1)
    segs = log.segments()
    assert [s.base_offset for s in segs] == [0, 3, 6, 9]
    assert all(s.size <= one * 3 for s in segs)
    names = sorted(p.name for p in (tmp_path / "logs" / "topic-0").glob("*.log"))
    assert names == [segment_file_name(b) for b in (0, 3, 6, 9)]


def test_segment_rolls_by_segment_ms_using_record_timestamps(tmp_path):
    log = open_log(tmp_path, segment_ms=100)
    log.append_as_leader(batch(ts=1000), 0, 1000)
    log.append_as_leader(batch(ts=1100), 0, 1100)  # waited exactly 100: no roll (needs > segment.ms)
    log.append_as_leader(batch(ts=1101), 0, 1101)
    assert [s.base_offset for s in log.segments()] == [0, 2]


def test_batch_larger_than_limits_is_refused(tmp_path):
    log = open_log(tmp_path, max_message_bytes=100)
    with pytest.raises(RecordTooLargeError):
        log.append_as_leader(batch(value=b"x" * 200), 0, 1)
    log2 = PartitionLog.open(tmp_path / "l2", "t", 0, LogConfig(segment_bytes=100))
    with pytest.raises(RecordBatchTooLargeError):
        log2.append_as_leader(batch(value=b"x" * 200), 0, 1)
    with pytest.raises(rb.CorruptRecordError):
        log.append_as_leader(batch()[:-3], 0, 1)
    assert log.log_end_offset == 0


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=40), interval=st.sampled_from([0, 50, 300, 4096]))
def test_property_translate_offset_matches_linear_scan(tmp_path_factory, sizes, interval):
    log = PartitionLog.open(tmp_path_factory.mktemp("l"), "t", 0, LogConfig(index_interval_bytes=interval, segment_bytes=900))
    for n in sizes:
        log.append_as_leader(batch(n), 0, 1)
    log.update_high_watermark(log.log_end_offset)
    for seg in log.segments():
        data = seg.pread(0, seg.size)
        headers = list(rb.iter_batches(data))
        for off in range(seg.base_offset, seg.next_offset):
            h = seg.translate_offset(off)
            expect = next(x for x in headers if x.last_offset >= off)
            assert (h.position, h.base_offset) == (expect.position, expect.base_offset)
        # every index entry points at a batch boundary whose last offset is the key
        for key, pos in seg.offset_index_entries():
            assert rb.parse_header(data, pos).last_offset == key
    for off in range(log.log_end_offset):
        r = log.read(off, 1)
        first = rb.parse_header(r.records)
        assert first.base_offset <= off <= first.last_offset


def test_read_whole_batches_max_bytes_min_one_message_and_hw(tmp_path):
    log = open_log(tmp_path)
    sizes = []
    for i in range(5):
        info = log.append_as_leader(batch(2), 0, 1)
        sizes.append(info.valid_bytes)
    log.update_high_watermark(6)  # batches [0-1][2-3][4-5] visible
    r = log.read(0, sizes[0] + sizes[1] + 5)
    assert offsets_of(r.records) == [0, 1, 2, 3]
    r = log.read(1, 1)  # first batch whole even if larger than max_bytes (KIP-74)
    assert offsets_of(r.records) == [0, 1]
    assert log.read(1, 1, min_one_message=False).is_empty
    r = log.read(0, 10**6)
    assert offsets_of(r.records) == [0, 1, 2, 3, 4, 5]
    assert log.read(6, 10**6).is_empty  # at the high watermark
    assert offsets_of(log.read(6, 10**6, max_offset=log.log_end_offset).records) == [6, 7, 8, 9]
    assert log.read(10, 100, max_offset=10).is_empty  # log end offset
    with pytest.raises(OffsetOutOfRangeError):
        log.read(11, 100)


def test_read_crosses_to_next_segment_when_offset_at_segment_end(tmp_path):
    log = open_log(tmp_path, segment_bytes=len(batch()) * 2)
    for _ in range(6):
        log.append_as_leader(batch(), 0, 1)
    log.update_high_watermark(log.log_end_offset)
    r = log.read(2, 10**6)
    assert r.segment_base_offset == 2 and offsets_of(r.records) == [2, 3]  # one segment per read, like Kafka


def test_list_offsets(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(rb.build_batch([(b"a", b"1"), (b"b", b"2")], base_timestamp=100), 0, 1)
    log.append_as_leader(rb.build_batch([(b"c", b"3")], base_timestamp=500), 1, 2)
    log.append_as_leader(rb.build_batch([(b"d", b"4"), (b"e", b"5")], base_timestamp=200), 1, 3)
    log.update_high_watermark(log.log_end_offset)
    f = log.fetch_offset_by_timestamp
    assert (f(EARLIEST_TIMESTAMP).offset, f(EARLIEST_TIMESTAMP).leader_epoch) == (0, 0)
    assert (f(LATEST_TIMESTAMP).offset, f(LATEST_TIMESTAMP).leader_epoch) == (5, 1)
    mx = f(MAX_TIMESTAMP)
    assert (mx.timestamp, mx.offset, mx.leader_epoch) == (500, 2, 1)
    assert f(EARLIEST_LOCAL_TIMESTAMP).offset == 0
    assert f(LATEST_TIERED_TIMESTAMP).offset == -1  # tiering off
    assert (f(101).timestamp, f(101).offset) == (101, 1)
    assert (f(150).timestamp, f(150).offset) == (500, 2)  # first record with ts >= 150
    assert (f(201).offset, f(201).timestamp) == (2, 500)
    assert f(501) is None


@settings(max_examples=25, deadline=None)
@given(ts=st.lists(st.integers(0, 50), min_size=1, max_size=30), target=st.integers(0, 55))
def test_property_offset_for_timestamp_is_first_record_at_or_after(tmp_path_factory, ts, target):
    log = PartitionLog.open(tmp_path_factory.mktemp("l"), "t", 0, LogConfig(index_interval_bytes=0, segment_bytes=400))
    for t in ts:
        log.append_as_leader(rb.build_batch([(b"k", b"v")], base_timestamp=t), 0, 1)
    log.update_high_watermark(log.log_end_offset)
    got = log.fetch_offset_by_timestamp(target)
    expect = next(((t, o) for o, t in enumerate(ts) if t >= target), None)
    assert (None if got is None else (got.timestamp, got.offset)) == expect


def test_leader_epoch_cache_semantics(tmp_path):
    p = tmp_path / "leader-epoch-checkpoint"
    c = LeaderEpochFileCache(p)
    c.assign(0, 0)
    c.assign(0, 5)  # same epoch, later offset: no change
    c.assign(2, 10)
    c.assign(4, 30)
    assert c.entries() == [EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(4, 30)]
    assert p.read_text() == "0\n3\n0 0\n2 10\n4 30\n"
    assert [c.epoch_for_offset(o) for o in (0, 9, 10, 29, 30, 99)] == [0, 0, 2, 2, 4, 4]
    assert c.end_offset_for(4, 55) == (4, 55)
    assert c.end_offset_for(2, 55) == (2, 30)
    assert c.end_offset_for(3, 55) == (2, 30)  # unknown epoch between: previous epoch, next start
    assert c.end_offset_for(5, 55) == (-1, -1)
    assert c.epoch_entries_in_range(12, 30) == [EpochEntry(2, 12)]
    assert c.epoch_entries_in_range(-1, 31) == c.entries()
    c.assign(3, 20)  # non-monotonic: removes epoch 4 (Kafka maybeTruncateNonMonotonicEntries)
    assert c.entries() == [EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(3, 20)]
    c.truncate_from_start(15)
    assert c.entries() == [EpochEntry(2, 15), EpochEntry(3, 20)]
    c.truncate_from_end(20)
    assert c.entries() == [EpochEntry(2, 15)]
    assert LeaderEpochFileCache(p).entries() == [EpochEntry(2, 15)]
    with pytest.raises(ValueError):
        c.assign(-1, 0)


def test_retention_by_time_and_size_without_tiering(tmp_path):
    log = open_log(tmp_path, segment_bytes=len(batch()) * 2, retention_ms=1000)
    for i in range(6):
        log.append_as_leader(batch(ts=1000 * (i + 1)), 0, 1)
    log.update_high_watermark(log.log_end_offset)
    # segments [0,1] max ts 2000, [2,3] 4000, [4,5] 6000 (active)
    assert log.delete_old_segments(now_ms=4500) == [0]
    assert log.log_start_offset == 2 and log.local_log_start_offset == 2
    with pytest.raises(OffsetOutOfRangeError):
        log.read(1, 100)
    log2 = PartitionLog.open(tmp_path / "b", "t", 0, LogConfig(segment_bytes=len(batch()) * 2, retention_bytes=len(batch()) * 3, retention_ms=-1))
    for i in range(6):
        log2.append_as_leader(batch(), 0, 1)
    log2.update_high_watermark(log2.log_end_offset)
    assert log2.delete_old_segments(now_ms=0) == [0]
    assert log2.size_in_bytes() == len(batch()) * 4


def test_local_retention_with_tiering_waits_for_remote_copy(tmp_path):
    log = open_log(tmp_path, segment_bytes=len(batch()) * 2, remote_storage_enable="true", local_retention_bytes=0)
    for i in range(6):
        log.append_as_leader(batch(), 0, 1)
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments(now_ms=0) == []  # nothing copied yet
    log.update_highest_offset_in_remote_storage(1)
    assert log.delete_old_segments(now_ms=0) == [0]
    assert log.log_start_offset == 0 and log.local_log_start_offset == 2  # remote still serves 0-1
    log.update_highest_offset_in_remote_storage(5)
    assert log.delete_old_segments(now_ms=0) == [2]  # active segment [4,5] stays
    assert log.fetch_offset_by_timestamp(EARLIEST_LOCAL_TIMESTAMP).offset == 4
    assert log.fetch_offset_by_timestamp(LATEST_TIERED_TIMESTAMP).offset == 5
    assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP).offset == 0


def test_delete_segments_below_and_log_start_offset(tmp_path):
    log = open_log(tmp_path, segment_bytes=len(batch()) * 2)
    for _ in range(6):
        log.append_as_leader(batch(), 0, 1)
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_segments_below(3) == [0]  # [2,3] holds 3: stays
    assert log.log_start_offset == 2
    assert log.maybe_increment_log_start_offset(3) and log.log_start_offset == 3
    assert not log.maybe_increment_log_start_offset(2)
    assert log.delete_old_segments(0) == []  # [2,3] still holds the log start offset 3
    assert log.maybe_increment_log_start_offset(4)
    assert log.delete_old_segments(0) == [2]  # now wholly below the log start offset
    assert log.local_log_start_offset == 4


def test_flush_messages_policy_and_recovery_point(tmp_path):
    log = open_log(tmp_path, flush_messages=3)
    assert not log.append_as_leader(batch(), 0, 1).flushed
    assert not log.append_as_leader(batch(), 0, 1).flushed
    assert log.unflushed_messages == 2 and log.recovery_point == 0
    assert log.append_as_leader(batch(), 0, 1).flushed
    assert log.recovery_point == 3 and log.unflushed_messages == 0


def test_flush_ms_policy(tmp_path):
    log = open_log(tmp_path, flush_ms=100)
    log.append_as_leader(batch(), 0, 0)
    assert not log.maybe_flush(50)
    assert log.maybe_flush(150) and log.recovery_point == 1
    assert not log.maybe_flush(1000)  # nothing unflushed


def test_log_append_time(tmp_path):
    log = open_log(tmp_path, message_timestamp_type="LogAppendTime")
    info = log.append_as_leader(batch(ts=5), 0, 123456)
    assert info.log_append_time_ms == 123456
    log.update_high_watermark(log.log_end_offset)
    assert [r.timestamp for r in rb.iter_records(log.read(0, 1000).records)] == [123456]


def test_reopen_restores_state_and_rebuilds_bad_index(tmp_path):
    log = open_log(tmp_path, segment_bytes=len(batch()) * 3, index_interval_bytes=0)
    for i in range(8):
        log.append_as_leader(batch(ts=i), i // 4, 1)
    log.update_high_watermark(log.log_end_offset)
    log.maybe_increment_log_start_offset(1)
    entries = log.segments()[0].offset_index_entries()
    log.close()
    d = tmp_path / "logs" / "topic-0"
    (d / "00000000000000000000.index").write_bytes(b"\x00\x01\x02")  # corrupt: not a multiple of 8
    log = open_log(tmp_path, segment_bytes=len(batch()) * 3, index_interval_bytes=0)
    assert log.log_end_offset == 8 and log.high_watermark == 8 and log.log_start_offset == 1
    assert log.segments()[0].offset_index_entries() == entries
    assert [e.epoch for e in log.leader_epoch_cache.entries()] == [0, 1]
    assert offsets_of(log.read(1, 10**6).records) == [1, 2]  # one segment per read
    info = log.append_as_leader(batch(), 1, 1)
    assert info.first_offset == 8


def test_truncate_to(tmp_path):
    log = open_log(tmp_path, segment_bytes=len(batch()) * 2)
    for e in range(6):
        log.append_as_leader(batch(), e, 1)
    log.truncate_to(3)
    assert log.log_end_offset == 3 and [s.base_offset for s in log.segments()] == [0, 2]
    assert [e.epoch for e in log.leader_epoch_cache.entries()] == [0, 1, 2]


def test_tiered_log_deletes_uncopied_segments_below_log_start_offset(tmp_path):
    """Kafka UnifiedLog#isSegmentEligibleForDeletion: with tiering, a segment not yet copied is
    still deletable once the log start offset (DeleteRecords) moved past it."""
    log = open_log(tmp_path, segment_bytes=len(batch()) * 2, remote_storage_enable="true")
    for _ in range(6):
        log.append_as_leader(batch(), 0, 1)
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments(0) == []
    log.maybe_increment_log_start_offset(2)
    assert log.delete_old_segments(0) == [0]
    assert log.local_log_start_offset == 2


def test_result_types_pickle_round_trip(tmp_path):
    import pickle

    log = open_log(tmp_path)
    info = log.append_as_leader(batch(), 0, 1)
    log.update_high_watermark(1)
    for obj in (info, log.read(0, 100), log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP), LogConfig()):
        assert pickle.loads(pickle.dumps(obj)) == obj


def test_read_hold_blocks_local_retention_without_tiering(tmp_path):
    log = open_log(tmp_path, segment_bytes=len(batch()) * 2, retention_ms=1)
    for _ in range(6):
        log.append_as_leader(batch(ts=0), 0, 1)
    log.update_high_watermark(log.log_end_offset)
    log.allow_compaction(3)
    assert log.delete_old_segments(now_ms=10_000) == [0]  # [2,3] holds offset 3 >= since
    log.allow_compaction(None)
    assert log.delete_old_segments(now_ms=10_000) == [2, 4]
    assert log.log_start_offset == 6 and log.log_end_offset == 6


def test_list_offsets_isolation_bound(tmp_path):
    """Kafka Partition#fetchOffsetForTimestamp: LATEST is the last fetchable offset for the
    isolation level; timestamp answers at or above it are dropped."""
    log = open_log(tmp_path)
    for t in (10, 20, 30):
        log.append_as_leader(rb.build_batch([(b"k", b"v")], base_timestamp=t), 2, 1)
    log.update_high_watermark(2)
    f = log.fetch_offset_by_timestamp
    assert f(LATEST_TIMESTAMP).offset == 2 and f(LATEST_TIMESTAMP, isolation_level=1).offset == 2
    assert f(LATEST_TIMESTAMP, isolation_level=None).offset == 3 and f(LATEST_TIMESTAMP).leader_epoch == 2
    assert f(25) is None and f(25, isolation_level=None).offset == 2
    assert f(MAX_TIMESTAMP) is None and f(MAX_TIMESTAMP, isolation_level=None).timestamp == 30
    assert f(15).offset == 1


def test_index_files_match_memory_after_truncate_append_and_reopen(tmp_path):
    import struct as _struct

    log = open_log(tmp_path, index_interval_bytes=0)
    for i in range(10):
        log.append_as_leader(batch(ts=i), 0, 1)
    log.truncate_to(6)
    for i in range(4):
        log.append_as_leader(batch(ts=100 + i), 0, 1)
    seg = log.segments()[0]
    on_file = [(seg.base_offset + rel, pos) for rel, pos in _struct.iter_unpack(">ii", seg.index_path.read_bytes())]
    assert on_file == seg.offset_index_entries()
    ts_file = [(ts, seg.base_offset + rel) for ts, rel in _struct.iter_unpack(">qi", seg.time_index_path.read_bytes())]
    assert ts_file == seg.time_index_entries()
    log.close()
    log = open_log(tmp_path, index_interval_bytes=0)
    assert log.segments()[0].offset_index_entries() == on_file


def test_active_segment_deletion_due_to_retention_time_breach_with_remote_storage(tmp_path):
    """Kafka ``UnifiedLogTest#testActiveSegmentDeletionDueToRetentionTimeBreachWithRemoteStorage``:
    under tiering, an active segment that breaches local retention is rolled so that it can be
    copied, and deleted locally once copied; the log start offset stays (remote serves it)."""
    log = open_log(tmp_path, retention_ms=3, local_retention_ms=1, remote_storage_enable="true")
    log.append_as_leader(batch(ts=1000), 0, 1000)
    log.update_high_watermark(log.log_end_offset)
    assert [s.base_offset for s in log.segments()] == [0]
    assert log.delete_old_segments(now_ms=1002) == []  # rolled, not deleted: not copied yet
    assert [s.base_offset for s in log.segments()] == [0, 1]
    log.update_highest_offset_in_remote_storage(1)
    assert log.delete_old_segments(now_ms=1002) == [0]
    assert [s.base_offset for s in log.segments()] == [1]
    assert (log.local_log_start_offset, log.log_end_offset, log.log_start_offset) == (1, 1, 0)


def test_active_segment_within_local_retention_is_not_rolled_with_remote_storage(tmp_path):
    """The roll of the previous test happens only on a retention breach of data below the HW."""
    log = open_log(tmp_path, retention_ms=3, local_retention_ms=1, remote_storage_enable="true")
    log.append_as_leader(batch(ts=1000), 0, 1000)
    assert log.delete_old_segments(now_ms=1002) == []  # breached, but not below the HW yet
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments(now_ms=1001) == []  # below the HW, but within local retention
    assert [s.base_offset for s in log.segments()] == [0]


def test_local_retention_rules_apply_only_with_remote_storage():
    """Kafka ``LogConfig#validateTopicLogConfigValues``: ``validateRemoteStorageRetentionSize`` /
    ``Time`` run only when ``remote.storage.enable=true``; there, local ``-1`` (unlimited) under
    a finite ``retention.*`` is refused too. A topic without tiering may carry any local value
    (the controller accepts it, so the log must open with it)."""
    ok = LogConfig.from_properties({"retention.ms": "1000", "local.retention.ms": "2000", "retention.bytes": "10", "local.retention.bytes": "20"})
    assert (ok.local_retention_ms, ok.local_retention_bytes) == (2000, 20)
    for bad in ({"retention.ms": "1000", "local.retention.ms": "-1"}, {"retention.bytes": "10", "local.retention.bytes": "-1"},
                {"retention.bytes": "10", "local.retention.bytes": "11"}):
        with pytest.raises(ConfigError):
            LogConfig.from_properties({**bad, "remote.storage.enable": "true"})
    assert LogConfig.from_properties({"retention.ms": "-1", "local.retention.ms": "-1", "remote.storage.enable": "true"}).local_retention_ms == -1


def test_retention_on_local_log_deletion_when_remote_log_copy_disabled(tmp_path):
    """Kafka ``UnifiedLogTest#testRetentionOnLocalLogDeletionWhenRemoteLogCopyDisabled``: with
    ``remote.log.copy.disable=true`` the local log follows ``retention.*`` (not ``local.*``),
    needs no remote copy to delete, and local deletion moves the log start offset."""
    one = len(batch(ts=1000))
    tiered = LogConfig(segment_bytes=one, local_retention_bytes=1, retention_bytes=one * 5, remote_storage_enable=True)
    log = PartitionLog.open(tmp_path / "logs", "t", 0, tiered)
    for _ in range(6):
        log.append_as_leader(batch(ts=1000), 0, 1000)
    assert len(log.segments()) == 6
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments(now_ms=1000) == []  # nothing in remote storage yet
    log.update_highest_offset_in_remote_storage(1)
    assert log.delete_old_segments(now_ms=1000) == [0, 1]
    assert (len(log.segments()), log.log_start_offset, log.local_log_start_offset) == (4, 0, 2)

    log.update_config(replace(tiered, remote_log_copy_disable=True))
    assert log.delete_old_segments(now_ms=1000) == []  # retention.bytes (5 segments) now applies
    assert (len(log.segments()), log.log_start_offset, log.local_log_start_offset) == (4, 0, 2)
    log.maybe_increment_log_start_offset(2)  # the remote tier expired everything below 2
    for _ in range(3):
        log.append_as_leader(batch(ts=1000), 0, 1000)
    assert len(log.segments()) == 7
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments(now_ms=1000) == [2, 3]  # 7 segments, retention.bytes = 5
    assert (len(log.segments()), log.log_start_offset, log.local_log_start_offset) == (5, 4, 4)

    log.update_config(replace(tiered, remote_log_copy_disable=True, local_retention_bytes=-2, retention_bytes=-1,
                              local_retention_ms=1, retention_ms=1000))
    assert log.delete_old_segments(now_ms=1010) == []  # retention.ms = 1000 not reached
    assert log.delete_old_segments(now_ms=2010) == [4, 5, 6, 7, 8]  # all expired (active rolled)
    assert (len(log.segments()), log.log_start_offset, log.local_log_start_offset) == (1, 9, 9)
    assert LogConfig.from_properties({"remote.log.copy.disable": "true"}).remote_log_copy_disable
