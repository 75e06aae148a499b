"""store.remote_log_manager: the pure decisions (scenarios named after Kafka's
``RemoteLogManagerTest``) and the runner against B2's event-sourced RemoteLogMetadataManager
(``actors.rlmm.manager.EventSourcedRemoteLogMetadataManager`` over SQLite)."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from events.rlmm_errors import RemoteStorageException
from actors.rlmm.manager import EventSourcedRemoteLogMetadataManager
from events.rlmm_types import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    TopicIdPartition,
)
from store import record_batch as rb
from store.event_log import open_event_log
from store.log.config import LogConfig
from store.log.errors import OffsetOutOfRangeError
from store.log.log import EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIERED_TIMESTAMP, PartitionLog
from store.remote_log_manager import (
    CopyCandidate,
    CustomMetadataSizeLimitExceededError,
    RemoteLogManager,
    build_filtered_leader_epoch_map,
    candidate_segments,
    find_highest_remote_offset,
    is_remote_segment_within_leader_epochs,
    plan_reconciliation,
    plan_remote_expiry,
)
from store.remote_storage import LocalDirectoryRemoteStorageManager

CS = RemoteLogSegmentState.COPY_SEGMENT_STARTED
CF = RemoteLogSegmentState.COPY_SEGMENT_FINISHED
DS = RemoteLogSegmentState.DELETE_SEGMENT_STARTED
TP = TopicIdPartition(uuid.UUID(int=77), "tiered", 0)


def seg(start, end, epochs, state=CF, size=100, max_ts=-1, tp=TP):
    md = RemoteLogSegmentMetadata(RemoteLogSegmentId(tp, uuid.uuid4()), start, end, max_ts, 1, 0, size, epochs)
    if state != CS:
        md = md.create_with_updates(RemoteLogSegmentMetadataUpdate(md.remote_log_segment_id, 0, None, state, 1))
    return md


# ============================================================== pure decisions (Kafka scenarios)


def test_candidate_log_segments_skips_active_segment():
    """RemoteLogManagerTest#testCandidateLogSegmentsSkipsActiveSegment"""
    assert candidate_segments([5, 10, 15], 5, 20) == [CopyCandidate(5, 9), CopyCandidate(10, 14)]


def test_candidate_log_segments_skips_segments_after_last_stable_offset():
    """RemoteLogManagerTest#testCandidateLogSegmentsSkipsSegmentsAfterLastStableOffset"""
    assert candidate_segments([5, 10, 15, 20], 5, 15) == [CopyCandidate(5, 9), CopyCandidate(10, 14)]
    assert candidate_segments([0, 5, 10, 15], 7, 100) == [CopyCandidate(5, 9), CopyCandidate(10, 14)]


def test_find_highest_remote_offset_on_empty_remote_storage():
    """RemoteLogManagerTest#testFindHighestRemoteOffsetOnEmptyRemoteStorage"""
    assert find_highest_remote_offset([(0, 0), (1, 500)], 600, lambda e: None) == (-1, -1)


def test_find_highest_remote_offset():
    """RemoteLogManagerTest#testFindHighestRemoteOffset"""
    assert find_highest_remote_offset([(0, 0), (1, 500)], 600, lambda e: 200 if e == 0 else None) == (200, 0)


def test_find_highest_remote_offset_with_unclean_leader_election():
    """RemoteLogManagerTest#testFindHighestRemoteOffsetWithUncleanLeaderElection"""
    got = find_highest_remote_offset([(0, 0), (1, 150), (2, 300)], 400, lambda e: 200 if e == 0 else None)
    assert got == (149, 0)


def test_build_filtered_leader_epoch_map():
    """RemoteLogManagerTest#testBuildFilteredLeaderEpochMap"""
    m = {0: 0, 1: 0, 2: 0, 3: 30, 4: 40, 5: 60, 6: 60, 7: 70, 8: 70}
    assert build_filtered_leader_epoch_map(m.items()) == {2: 0, 3: 30, 4: 40, 6: 60, 8: 70}


def test_remote_segment_within_leader_epochs():
    """RemoteLogManagerTest#testRemoteSegmentWithinLeaderEpochs"""
    leo = 90
    lineage = {0: 0, 1: 10, 2: 20, 3: 30, 4: 40, 5: 50, 7: 70}
    within = lambda s, e, epochs: is_remote_segment_within_leader_epochs(seg(s, e, epochs), leo, lineage)  # noqa: E731
    assert within(15, 35, {1: 15, 2: 20, 3: 30})
    assert within(15, 19, {1: 15})
    assert within(0, 5, {0: 0})
    assert within(70, 75, {7: 70})
    assert within(15, 29, {1: 15, 2: 20})
    assert not within(55, 85, {5: 55, 6: 60, 7: 70})
    assert not within(15, 45, {1: 15, 2: 20, 4: 40})
    assert not within(15, 95, lineage)
    assert not within(15, 90, lineage)
    assert not within(5, 25, {1: 5, 2: 20})
    assert not within(15, 35, {1: 15, 2: 20})


def test_remote_segment_within_leader_epochs_for_overlapping_segments():
    """RemoteLogManagerTest#testRemoteSegmentWithinLeaderEpochsForOverlappingSegments"""
    lineage = {7: 51, 9: 100}
    f = lambda s, e, epochs: is_remote_segment_within_leader_epochs(seg(s, e, epochs), 210, lineage)  # noqa: E731
    assert f(14, 150, {5: 14, 7: 15, 9: 100})
    assert not f(2, 7, {2: 5, 3: 6})
    assert not f(15, 250, {7: 15, 9: 100, 10: 200})
    assert not f(75, 100, {8: 75})
    assert not f(15, 150, {7: 15, 9: 101})
    assert not f(99, 150, {9: 99})


def _plan(segments, **kw):
    by_epoch = lambda e: sorted((m for m in segments if e in dict(m.segment_leader_epochs)), key=lambda m: m.start_offset)  # noqa: E731
    args = dict(
        segments_by_epoch=by_epoch,
        all_segments=segments,
        epoch_entries=[(0, 0)],
        log_start_offset=0,
        log_end_offset=1000,
        retention_ms=-1,
        retention_bytes=-1,
        only_local_log_segments_size=0,
        now_ms=10_000,
    )
    args.update(kw)
    return plan_remote_expiry(**args)


def test_delete_log_segment_due_to_retention_time_breach():
    """RemoteLogManagerTest#testDeleteLogSegmentDueToRetentionTimeBreach (shape): the oldest
    segments whose max timestamp is older than retention.ms go; the log start offset follows."""
    segs = [seg(0, 99, {0: 0}, max_ts=1000), seg(100, 199, {0: 100}, max_ts=2000), seg(200, 299, {0: 200}, max_ts=9000)]
    plan = _plan(segs, retention_ms=7000)  # cleanup until 3000
    assert [m.start_offset for m in plan.to_delete] == [0, 100]
    assert plan.log_start_offset == 200


def test_delete_log_segment_due_to_retention_size_breach():
    """RemoteLogManagerTest#testDeleteLogSegmentDueToRetentionSizeBreach (shape): total = local
    only + remote CF; delete oldest while the breach covers a whole segment."""
    segs = [seg(0, 99, {0: 0}, size=100), seg(100, 199, {0: 100}, size=100), seg(200, 299, {0: 200}, size=100)]
    plan = _plan(segs, retention_bytes=250, only_local_log_segments_size=100)  # total 400, breach 150
    assert [m.start_offset for m in plan.to_delete] == [0]
    assert plan.log_start_offset == 100


def test_remote_log_size_retention_should_filter_out_copy_segment_start_state():
    """RemoteLogManagerTest#testRemoteLogSizeRetentionShouldFilterOutCopySegmentStartState"""
    segs = [seg(0, 99, {0: 0}, size=100), seg(100, 199, {0: 100}, size=100, state=CS)]
    assert _plan(segs, retention_bytes=100).to_delete == ()  # only 100 bytes CF: no breach
    assert _plan(segs, retention_bytes=99).to_delete == ()  # breach of 1 byte < a whole segment (Kafka)
    plan = _plan(segs, retention_bytes=0)
    assert [m.start_offset for m in plan.to_delete] == [0]  # the CS segment is never a retention victim


def test_deletion_skipped_for_segments_being_copied():
    """RemoteLogManagerTest#testDeletionSkippedForSegmentsBeingCopied"""
    a, b = seg(0, 99, {0: 0}, max_ts=0), seg(100, 199, {0: 100}, max_ts=0)
    plan = _plan([a, b], retention_ms=1, being_copied=frozenset({a.remote_log_segment_id}))
    assert plan.to_delete == ()


def test_failed_delete_is_retried_from_delete_segment_started():
    """RemoteLogManagerTest#testFailedDeleteExpiredSegments (shape): a DELETE_SEGMENT_STARTED
    segment is deleted again by the next run, whatever the retention."""
    a = seg(0, 99, {0: 0}, state=DS)
    assert _plan([a]).to_delete == (a,)


def test_log_start_offset_breach_and_unreferenced_epochs():
    old = seg(0, 49, {0: 0})  # ends below the log start offset
    orphan_epoch = seg(0, 9, {0: 0})
    keep = seg(50, 99, {1: 50})
    plan = _plan([old, keep], epoch_entries=[(0, 40), (1, 50)], log_start_offset=50)
    assert plan.to_delete == (old,)
    plan = _plan([orphan_epoch, keep], epoch_entries=[(1, 50)], log_start_offset=50)
    assert plan.unreferenced == (orphan_epoch,)


def test_plan_reconciliation():
    started, deleting, fin, lost = seg(0, 9, {0: 0}, CS), seg(10, 19, {0: 10}, DS), seg(20, 29, {0: 20}), seg(30, 39, {0: 30})
    orphan = uuid.uuid4()
    data = {started.remote_log_segment_id.id, fin.remote_log_segment_id.id, orphan}
    plan = plan_reconciliation([lost, fin, deleting, started], data)
    assert plan.delete == (started, deleting, lost)
    assert plan.missing_data == (lost,)
    assert plan.orphans == (orphan,)


# ============================================================== the runner with B2's RLMM


def batch(i, ts=None):
    return rb.build_batch([(b"k%03d" % i, b"value-%03d" % i * 10)], base_timestamp=1000 + i if ts is None else ts)


class Env:
    def __init__(self, tmp_path, rsm=None, **props):
        self.one = len(batch(0))
        base = {"segment.bytes": str(self.one * 4), "remote.storage.enable": "true", "index.interval.bytes": "0", "retention.ms": "-1"}
        base.update({k: str(v) for k, v in props.items()})
        self.log = PartitionLog.open(tmp_path / "logs", TP.topic, TP.partition, LogConfig.from_properties(base))
        self.event_log = open_event_log(f"sqlite:///{tmp_path / 'events.db'}")
        self.rlmm = EventSourcedRemoteLogMetadataManager(self.event_log, num_partitions=3)
        self.rsm = rsm or LocalDirectoryRemoteStorageManager(tmp_path / "remote")
        self.rlm = RemoteLogManager(self.rsm, self.rlmm, broker_id=1)
        self.rlm.on_leadership_change({TP: self.log})

    def produce(self, n, epoch=0):
        for _ in range(n):
            i = self.log.log_end_offset
            self.log.append_as_leader(batch(i), epoch, 1000 + i)
            self.log.update_high_watermark(self.log.log_end_offset)

    def states(self):
        return sorted((m.start_offset, m.state) for m in self.rlmm.list_remote_log_segments(TP))


def values(records: bytes):
    return [(r.offset, r.value) for h in rb.iter_batches(records) for r in rb.iter_records(records, h.position)]


def test_copy_log_segments_to_remote_should_copy_expected_log_segment(tmp_path):
    """RemoteLogManagerTest#testCopyLogSegmentsToRemoteShouldCopyExpectedLogSegment: rolled
    segments below the LSO are copied with COPY_SEGMENT_STARTED then FINISHED; the active one is not."""
    env = Env(tmp_path)
    env.produce(10)  # segments [0-3] [4-7] [8-9 active]
    copied = env.rlm.copy_log_segments_to_remote(TP, 5000)
    assert [(m.start_offset, m.end_offset, m.state) for m in copied] == [(0, 3, CF), (4, 7, CF)]
    assert env.states() == [(0, CF), (4, CF)]
    assert env.log.highest_offset_in_remote_storage == 7
    md = copied[0]
    assert md.segment_leader_epochs == ((0, 0),) and md.segment_size_in_bytes == env.one * 4
    assert md.max_timestamp_ms == 1003 and md.broker_id == 1
    assert env.rlm.copy_log_segments_to_remote(TP, 5001) == []  # nothing new
    with env.rsm.fetch_log_segment(md, 0) as f:
        assert f.read() == env.log.segments()[0].pread(0, md.segment_size_in_bytes)


def test_remote_log_copy_disable_stops_copying_but_keeps_the_remote_tier(tmp_path):
    """``remote.log.copy.disable=true`` (KIP-950): the copy task uploads nothing more (Kafka
    cancels ``RLMCopyTask``) while what is already remote stays readable and listed."""
    env = Env(tmp_path)
    env.produce(6)  # [0-3] rolled, [4-5] active
    assert [m.start_offset for m in env.rlm.copy_log_segments_to_remote(TP, 0)] == [0]
    env.produce(4)  # [4-7] rolled
    env.log.update_config(replace(env.log.config, remote_log_copy_disable=True))
    assert env.rlm.copy_log_segments_to_remote(TP, 1) == []
    assert env.rlm.run_once(2)["copied"] == 0
    assert env.states() == [(0, CF)]
    env.log.update_config(replace(env.log.config, remote_log_copy_disable=False))
    assert [m.start_offset for m in env.rlm.copy_log_segments_to_remote(TP, 3)] == [4]


def test_copy_respects_high_watermark(tmp_path):
    env = Env(tmp_path)
    env.produce(10)
    env.log.update_high_watermark(5)  # segment [4-7] ends above the HW
    assert [m.start_offset for m in env.rlm.copy_log_segments_to_remote(TP, 0)] == [0]


def test_tiers_old_segments_and_serves_them_back_through_the_read_path(tmp_path):
    """A topic with remote.storage.enable=true: old segments move to the remote tier, local
    copies go by local.retention.bytes, and reads/ListOffsets below the local log start are
    answered from the remote tier with the original bytes."""
    env = Env(tmp_path, **{"local.retention.bytes": "0"})
    env.produce(14, epoch=0)
    env.produce(6, epoch=3)
    before = {off: env.log.read(off, 10**6).records for off in range(env.log.log_end_offset) if off % 4 == 0}
    stats = env.rlm.run_once(10_000)
    assert stats["copied"] == 4 and stats["local_deleted"] == 4
    assert env.log.local_log_start_offset == 16 and env.log.log_start_offset == 0
    assert env.log.fetch_offset_by_timestamp(LATEST_TIERED_TIMESTAMP).offset == 15
    for off in range(0, 16):
        r = env.rlm.read(TP, off, 10**6)
        assert r.from_remote
        got = values(r.records)
        assert got[0][0] <= off <= got[-1][0]
        assert all(v == b"value-%03d" % o * 10 for o, v in got)
        if off in before:
            assert r.records == before[off]
    r = env.rlm.read(TP, 17, 10**6)
    assert not r.from_remote and values(r.records)[0][0] == 17
    # max_bytes and min-one-message hold on the remote path too
    assert len(values(env.rlm.read(TP, 0, 1).records)) == 1
    assert env.rlm.read(TP, 0, 1, min_one_message=False).records == b""
    # ListOffsets by timestamp finds remote records; specials see both tiers
    t = env.rlm.fetch_offset_by_timestamp(TP, 1005)
    assert (t.offset, t.timestamp, t.leader_epoch) == (5, 1005, 0)
    t = env.rlm.fetch_offset_by_timestamp(TP, 1015)
    assert (t.offset, t.leader_epoch) == (15, 3)
    assert env.rlm.fetch_offset_by_timestamp(TP, 1018).offset == 18
    assert env.rlm.fetch_offset_by_timestamp(TP, EARLIEST_TIMESTAMP).offset == 0
    assert env.rlm.fetch_offset_by_timestamp(TP, EARLIEST_LOCAL_TIMESTAMP).offset == 16
    with pytest.raises(OffsetOutOfRangeError):
        env.rlm.read(TP, 21, 100)


def test_remote_retention_by_time_moves_log_start_offset(tmp_path):
    """RemoteLogManagerTest#testDeleteRetentionMsOnExpiredSegment (shape) end to end."""
    env = Env(tmp_path, **{"retention.ms": "5", "local.retention.ms": "5"})
    env.produce(12)
    env.rlm.run_once(1003 + 5)  # copies [0-3] [4-7]; local deletion of copied ones by local.retention.ms
    env.rlm.run_once(1007 + 6)  # both remote segments older than retention.ms now
    assert env.states() == []
    assert env.log.log_start_offset == 8
    with pytest.raises(OffsetOutOfRangeError):
        env.rlm.read(TP, 3, 100)
    assert values(env.rlm.read(TP, 8, 10**6).records)[0][0] == 8
    assert env.rsm.list_segments(TP) == {}


def test_remote_retention_by_size(tmp_path):
    env = Env(tmp_path)
    env.produce(12)
    env.rlm.run_once(0)
    assert env.states() == [(0, CF), (4, CF)]
    env.log.update_config(LogConfig.from_properties(
        {"segment.bytes": str(env.one * 4), "remote.storage.enable": "true", "retention.bytes": str(env.one * 8), "local.retention.bytes": "0", "retention.ms": "-1"}))
    deleted = env.rlm.cleanup_expired_remote_log_segments(TP, 0)
    assert [m.start_offset for m in deleted] == [0]  # local-only 4 + remote 8 batches: breach of 4 = one whole segment
    assert env.log.log_start_offset == 4


def test_failed_copy_should_delete_the_dangling_segment(tmp_path):
    """RemoteLogManagerTest#testFailedCopyShouldDeleteTheDanglingSegment"""

    class FailingRSM(LocalDirectoryRemoteStorageManager):
        def copy_log_segment_data(self, md, data):
            raise RemoteStorageException("boom")

    env = Env(tmp_path, rsm=FailingRSM(tmp_path / "remote"))
    env.produce(6)
    with pytest.raises(RemoteStorageException):
        env.rlm.copy_log_segments_to_remote(TP, 0)
    assert env.states() == []  # CS → DS → DF
    assert env.log.highest_offset_in_remote_storage == -1


def test_custom_metadata_size_exceeds_limit(tmp_path):
    """RemoteLogManagerTest#testCustomMetadataSizeExceedsLimit"""

    class BigCustomRSM(LocalDirectoryRemoteStorageManager):
        def copy_log_segment_data(self, md, data):
            super().copy_log_segment_data(md, data)
            return b"x" * 200

    env = Env(tmp_path, rsm=BigCustomRSM(tmp_path / "remote"))
    env.produce(10)
    with pytest.raises(CustomMetadataSizeLimitExceededError):
        env.rlm.copy_log_segments_to_remote(TP, 0)
    assert env.states() == [] and env.rsm.list_segments(TP) == {}
    assert env.rlm.copy_log_segments_to_remote(TP, 0) == []  # copying stopped for the partition


def test_rlm_task_does_not_upload_segments_when_rlmm_is_not_initialized(tmp_path):
    """RemoteLogManagerTest#testRLMTaskDoesNotUploadSegmentsWhenRemoteLogMetadataManagerIsNotInitialized"""
    env = Env(tmp_path)
    env.produce(10)
    env.rlmm.on_stop_partitions({TP})  # not registered → is_ready False
    assert env.rlm.run_once(0) == {"copied": 0, "remote_deleted": 0, "local_deleted": 0}
    assert env.rsm.list_segments(TP) == {}


def test_stop_partitions_with_deletion(tmp_path):
    """RemoteLogManagerTest#testStopPartitionsWithDeletion: a deleted topic's remote data goes."""
    env = Env(tmp_path)
    env.produce(12)
    env.rlm.run_once(0)
    assert len(env.rsm.list_segments(TP)) == 2
    env.rlm.stop_partitions({TP}, delete=True)
    assert not env.rsm.partition_dir(TP).exists()
    env.rlmm.on_partition_leadership_changes({TP}, set())
    assert env.states() == []


def test_reconcile_after_restart_cleans_started_and_orphans(tmp_path):
    env = Env(tmp_path)
    env.produce(12)
    # a copy that crashed after COPY_SEGMENT_STARTED and a full upload, but before FINISHED
    dangling = RemoteLogSegmentMetadata(RemoteLogSegmentId(TP, uuid.uuid4()), 0, 3, 1003, 1, 0, env.one * 4, {0: 0})
    env.rlmm.add_remote_log_segment_metadata(dangling)
    s0 = env.log.segments()[0]
    from store.remote_storage import LogSegmentData

    env.rsm.copy_log_segment_data(dangling, LogSegmentData(s0.log_path, s0.index_path, s0.time_index_path, None, None, b""))
    orphan = RemoteLogSegmentMetadata(RemoteLogSegmentId(TP, uuid.uuid4()), 4, 7, 1007, 1, 0, 1, {0: 4})
    s1 = env.log.segments()[1]
    env.rsm.copy_log_segment_data(orphan, LogSegmentData(s1.log_path, s1.index_path, s1.time_index_path, None, None, b""))
    plan = env.rlm.reconcile(TP, 0)
    assert [m.remote_log_segment_id for m in plan.delete] == [dangling.remote_log_segment_id]
    assert plan.orphans == (orphan.remote_log_segment_id.id,)
    assert env.states() == [] and env.rsm.list_segments(TP) == {}
    env.rlm.run_once(0)
    assert env.states() == [(0, CF), (4, CF)]


def test_background_runner_tiers_without_explicit_calls(tmp_path):
    import time

    env = Env(tmp_path, **{"local.retention.bytes": "0"})
    env.rlm.task_interval_ms = 10
    env.produce(10)
    env.rlm.start()
    try:
        deadline = time.monotonic() + 30
        while env.log.local_log_start_offset < 8 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        env.rlm.close()
    assert env.states() == [(0, CF), (4, CF)]
    assert env.log.local_log_start_offset == 8


def test_read_hold_blocks_remote_expiry():
    """Shoal: the controller's since (read hold) is a floor for retention."""
    segs = [seg(0, 99, {0: 0}, max_ts=0), seg(100, 199, {0: 100}, max_ts=0), seg(200, 299, {0: 200}, max_ts=0)]
    assert [m.start_offset for m in _plan(segs, retention_ms=1).to_delete] == [0, 100, 200]
    plan = _plan(segs, retention_ms=1, retention_floor=150)
    assert [m.start_offset for m in plan.to_delete] == [0] and plan.log_start_offset == 100


def test_concurrent_appends_tiering_and_reads_stay_consistent(tmp_path):
    """A producer thread, the RLM background runner and a reader thread at once: every read of an
    offset in [log start, high watermark) returns that offset's original value, whichever tier
    serves it (the log's lock orders local deletion against local reads)."""
    import random
    import threading

    env = Env(tmp_path, **{"local.retention.bytes": "0"})
    env.rlm.task_interval_ms = 1
    errors: list[BaseException] = []
    done = threading.Event()
    remote_reads = [0]

    def produce():
        try:
            for _ in range(300):
                env.produce(1)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            done.set()

    def read():
        rnd = random.Random(7)
        try:
            while not done.is_set():
                hw = env.log.high_watermark
                if hw == 0:
                    continue
                off = rnd.randrange(env.log.log_start_offset, hw)
                r = env.rlm.read(TP, off, 10**6)
                got = values(r.records)
                assert got and got[0][0] <= off <= got[-1][0]
                assert all(v == b"value-%03d" % o * 10 for o, v in got)
                remote_reads[0] += r.from_remote
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    env.rlm.start()
    threads = [threading.Thread(target=produce), threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    env.rlm.close()
    assert not errors, errors
    assert remote_reads[0] > 0  # the reader did hit the remote tier while it was changing
    env.rlm.run_once(0)
    assert env.log.local_log_start_offset >= 296 and env.log.log_start_offset == 0
    for off in range(0, 300, 7):
        assert values(env.rlm.read(TP, off, 1).records)[0][0] == off


def test_tiering_through_the_rlmm_partition_actors(tmp_path, asys, sqlite_url):
    """The same tiering and read-back, with the RLMM served by B2's RlmmPartitionActor s (one
    per metadata partition, simpleSystemBase) behind ActorRemoteLogMetadataManager."""
    from actors.rlmm.actor import start_rlmm_actors
    from actors.rlmm.manager import ActorRemoteLogMetadataManager

    cfg = {"event.log.url": sqlite_url, "remote.log.metadata.topic.num.partitions": "3"}
    actors = start_rlmm_actors(asys, cfg)
    rlmm = ActorRemoteLogMetadataManager(lambda addr, msg: asys.ask(addr, msg, 30), actors, num_partitions=3)
    one = len(batch(0))
    log = PartitionLog.open(tmp_path / "logs", TP.topic, TP.partition, LogConfig.from_properties(
        {"segment.bytes": str(one * 4), "remote.storage.enable": "true", "local.retention.bytes": "0", "retention.ms": "-1"}))
    for i in range(10):
        log.append_as_leader(batch(i), 0, 0)
    log.update_high_watermark(log.log_end_offset)
    rlm = RemoteLogManager(LocalDirectoryRemoteStorageManager(tmp_path / "remote"), rlmm)
    rlm.on_leadership_change({TP: log})
    stats = rlm.run_once(0)
    assert stats["copied"] == 2 and stats["local_deleted"] == 2
    assert sorted((m.start_offset, m.state) for m in rlmm.list_remote_log_segments(TP)) == [(0, CF), (4, CF)]
    for off in range(0, 8):
        got = values(rlm.read(TP, off, 10**6).records)
        assert got[0][0] <= off <= got[-1][0] and all(v == b"value-%03d" % o * 10 for o, v in got)


def test_failure_after_upload_is_repaired_by_the_next_pass(tmp_path):
    """The RLMM refuses COPY_SEGMENT_FINISHED once (e.g. the event log is briefly unavailable):
    the uploaded data stays behind a COPY_SEGMENT_STARTED; the next pass reconciles it away
    and copies the segment again."""

    env = Env(tmp_path)
    real_update = env.rlmm.update_remote_log_segment_metadata
    failed = []

    def flaky_update(u):
        if u.state == CF and not failed:
            failed.append(u)
            raise RuntimeError("event log unavailable")
        return real_update(u)

    env.rlmm.update_remote_log_segment_metadata = flaky_update
    env.produce(6)
    assert env.rlm.run_once(0)["copied"] == 0
    assert env.states() == [(0, CS)] and len(env.rsm.list_segments(TP)) == 1
    assert env.rlm.run_once(0)["copied"] == 1
    assert env.states() == [(0, CF)] and len(env.rsm.list_segments(TP)) == 1


@settings(max_examples=15, deadline=None)
@given(ts=st.lists(st.integers(0, 40), min_size=6, max_size=24), target=st.integers(0, 45))
def test_property_offset_for_timestamp_across_tiers(tmp_path_factory, ts, target):
    """ListOffsets by timestamp over remote + local segments equals a scan of all records
    (Kafka: first record with timestamp >= target)."""
    env = Env(tmp_path_factory.mktemp("t"), **{"local.retention.bytes": "0", "index.interval.bytes": "0"})
    for i, t in enumerate(ts):
        env.log.append_as_leader(batch(i, ts=t), 0, 0)
    env.log.update_high_watermark(env.log.log_end_offset)
    env.rlm.run_once(0)
    assert env.log.local_log_start_offset > 0
    got = env.rlm.fetch_offset_by_timestamp(TP, target)
    expect = next(((t, o) for o, t in enumerate(ts) if t >= target), None)
    assert (None if got is None else (got.timestamp, got.offset)) == expect
