"""The event-sourced RemoteLogMetadataManager: the rlmm scenarios of reference §8 (L*, T*), named
after their Kafka tests, plus the NotReady/Swappable facades and snapshot restarts."""

from __future__ import annotations

import pytest

from events.rlmm_errors import (
    IllegalArgumentException,
    IllegalStateException,
    KafkaException,
    NullPointerException,
    RemoteLogMetadataManagerNotReadyException,
    RemoteResourceNotFoundException,
    RemoteStorageException,
)
from actors.rlmm.manager import (
    EventSourcedRemoteLogMetadataManager,
    NotReadyRemoteLogMetadataManager,
    SwappableRemoteLogMetadataManager,
    load_metadata_partition,
)
from events.rlmm_types import RemotePartitionDeleteMetadata, RemotePartitionDeleteState
from actors.rlmm.partitioner import metadata_partition_for
from events.rlmm import stream_id
from tests.rlmm.helpers import CF, DF, DS, seg, tp, upd

SEG_SIZE = 1048576


@pytest.fixture
def rlmm(sqlite_log):
    m = EventSourcedRemoteLogMetadataManager(sqlite_log)
    yield m
    m.close()


def registered(rlmm, *tps):
    rlmm.on_partition_leadership_changes(set(tps), set())
    return tps[0]


# ---------------------------------------------------------------- lifecycle through the RLMM
def test_testRemoteLogSegmentLifeCycle_rlmm(rlmm):
    """L1 RemoteLogSegmentLifecycleTest#testRemoteLogSegmentLifeCycle through the RLMM."""
    p = registered(rlmm, tp())
    s0 = seg(p, 0, 100, {0: 0, 1: 20, 2: 80})
    rlmm.add_remote_log_segment_metadata(s0)
    assert rlmm.remote_log_segment_metadata(p, 1, 40) is None
    assert [rlmm.highest_offset_for_epoch(p, e) for e in range(3)] == [None, None, None]
    rlmm.update_remote_log_segment_metadata(upd(s0, CF))
    fin = {}
    for name, s in (("s1", seg(p, 101, 200, {2: 101})), ("s2", seg(p, 201, 300, {2: 201, 3: 240})),
                    ("s3", seg(p, 250, 400, {3: 250, 4: 370}))):
        rlmm.add_remote_log_segment_metadata(s)
        rlmm.update_remote_log_segment_metadata(upd(s, CF))
        fin[name] = s.create_with_updates(upd(s, CF))
    look = lambda e, o: rlmm.remote_log_segment_metadata(p, e, o)  # noqa: E731
    assert look(1, 40) == s0.create_with_updates(upd(s0, CF))
    assert look(2, 110) == fin["s1"] and look(3, 240) == fin["s2"] and look(3, 250) == fin["s3"] and look(4, 375) == fin["s3"]
    assert look(1, 110) is None and look(4, 401) is None and look(5, 301) is None
    rlmm.update_remote_log_segment_metadata(upd(s0, DS))
    assert look(0, 10) is None
    rlmm.update_remote_log_segment_metadata(upd(s0, DF))
    assert look(0, 10) is None
    assert [rlmm.highest_offset_for_epoch(p, e) for e in range(6)] == [19, 79, 239, 369, 400, None]


def test_testCacheSegmentWithCopySegmentStartedState_rlmm(rlmm):
    """L2 through the RLMM."""
    p = registered(rlmm, tp())
    s = seg(p, 0, 50, {0: 0})
    rlmm.add_remote_log_segment_metadata(s)
    assert rlmm.remote_log_segment_metadata(p, 0, 0) is None
    assert next(rlmm.list_remote_log_segments(p, 0)) == s
    assert next(rlmm.list_remote_log_segments(p)) == s


def test_testCacheSegmentWithCopySegmentFinishedState_rlmm(rlmm):
    """L3 through the RLMM."""
    p = registered(rlmm, tp())
    s = seg(p, 101, 200, {0: 101})
    rlmm.add_remote_log_segment_metadata(s)
    rlmm.update_remote_log_segment_metadata(upd(s, CF))
    f = s.create_with_updates(upd(s, CF))
    assert rlmm.remote_log_segment_metadata(p, 0, 150) == f
    assert f in list(rlmm.list_remote_log_segments(p, 0)) and f in list(rlmm.list_remote_log_segments(p))


def test_testCacheListSegments_rlmm(rlmm):
    """L6 through the RLMM."""
    p = registered(rlmm, tp())
    out = []
    for s in (seg(p, 0, 100, {0: 0}), seg(p, 101, 200, {0: 101}), seg(p, 201, 400, {0: 201, 1: 301})):
        rlmm.add_remote_log_segment_metadata(s)
        rlmm.update_remote_log_segment_metadata(upd(s, CF))
        out.append(s.create_with_updates(upd(s, CF)))
    assert list(rlmm.list_remote_log_segments(p, 0)) == out
    assert set(rlmm.list_remote_log_segments(p)) == set(out)
    assert list(rlmm.list_remote_log_segments(p, 1)) == [out[2]]


def test_caller_side_checks(rlmm):
    """§1: add needs COPY_SEGMENT_STARTED, update must not target it; nothing is written."""
    p = registered(rlmm, tp())
    s = seg(p, 0, 10, {0: 0})
    with pytest.raises(IllegalArgumentException):
        rlmm.add_remote_log_segment_metadata(s.create_with_updates(upd(s, CF)))
    with pytest.raises(IllegalArgumentException):
        rlmm.update_remote_log_segment_metadata(upd(s, seg.__globals__["CS"]))
    with pytest.raises(NullPointerException):
        rlmm.add_remote_log_segment_metadata(None)
    assert rlmm.event_log.stream_version(stream_id(rlmm.metadata_partition(p))) == 0


def test_invalid_transition_is_stored_and_dropped(rlmm):
    """Surprise 3: update(...) succeeds for an invalid transition; the event is dropped when applied."""
    p = registered(rlmm, tp())
    s = seg(p, 0, 10, {0: 0})
    rlmm.add_remote_log_segment_metadata(s)
    rlmm.update_remote_log_segment_metadata(upd(s, DF))  # CS → DF is invalid: no exception
    assert [m.state for m in rlmm.list_remote_log_segments(p)] == [s.state]
    assert rlmm.event_log.stream_version(stream_id(rlmm.metadata_partition(p))) == 2


# ---------------------------------------------------------------------------- T scenarios
def test_testNewPartitionUpdates(rlmm):
    """T1 TopicBasedRemoteLogMetadataManagerTest#testNewPartitionUpdates."""
    leader, follower = tp("new-leader"), tp("new-follower")
    ls, fs = seg(leader, 0, 100, {0: 0}), seg(follower, 0, 100, {0: 0})
    for s in (ls, fs):
        with pytest.raises(KafkaException, match="not assigned to the target partition"):
            rlmm.add_remote_log_segment_metadata(s)
    for p in (leader, follower):
        with pytest.raises(RemoteResourceNotFoundException):
            rlmm.list_remote_log_segments(p)
    rlmm.on_partition_leadership_changes({leader}, {follower})
    assert rlmm.is_ready(leader) and rlmm.is_ready(follower)
    assert list(rlmm.list_remote_log_segments(leader)) == [ls]
    assert list(rlmm.list_remote_log_segments(follower)) == [fs]


def test_testMultiplePartitionSubscriptions(sqlite_log):
    """T2 TopicBasedRemoteLogMetadataManagerMultipleSubscriptionsTest (partitioner forced: the
    empty partition → 1, the others → 0)."""
    leader, follower, empty = tp("leader"), tp("follower"), tp("empty")
    rlmm = EventSourcedRemoteLogMetadataManager(sqlite_log, partitioner=lambda p: 1 if p == empty else 0)
    ls, fs = seg(leader, 0, 100, {0: 0}), seg(follower, 0, 100, {0: 0})
    for s in (ls, fs):
        with pytest.raises(KafkaException) as info:
            rlmm.add_remote_log_segment_metadata(s)
        assert info.value.java_string() == (
            "org.apache.kafka.common.KafkaException: This consumer is not assigned to the target partition 0. "
            "Currently assigned partitions: []")
    for p in (leader, follower):
        with pytest.raises(RemoteStorageException):
            rlmm.list_remote_log_segments(p)
    rlmm.on_partition_leadership_changes({leader}, set())
    assert rlmm.is_ready(leader)
    assert list(rlmm.list_remote_log_segments(leader)) == [ls]
    with pytest.raises(RemoteStorageException):
        rlmm.list_remote_log_segments(follower)
    rlmm.on_partition_leadership_changes({empty}, {follower})
    assert list(rlmm.list_remote_log_segments(follower)) == [fs]
    assert list(rlmm.list_remote_log_segments(leader)) == [ls]
    assert rlmm.is_ready(empty) and list(rlmm.list_remote_log_segments(empty)) == []
    assert rlmm.assigned_metadata_partitions() == {0, 1}


def _sizes(rlmm, p, specs):
    for (start, end, epochs, size) in specs:
        rlmm.add_remote_log_segment_metadata(seg(p, start, end, epochs, size=size))


def test_testRemoteLogSizeCalculationWithSegmentsOfTheSameEpoch(rlmm):
    """T3."""
    p = registered(rlmm, tp())
    _sizes(rlmm, p, [(0, 100, {0: 0}, SEG_SIZE), (100, 200, {0: 0}, 2 * SEG_SIZE), (200, 300, {0: 0}, 3 * SEG_SIZE)])
    assert rlmm.remote_log_size(p, 0) == 6 * SEG_SIZE


def test_testRemoteLogSizeCalculationWithSegmentsOfDifferentEpochs(rlmm):
    """T4."""
    p = registered(rlmm, tp())
    _sizes(rlmm, p, [(0, 100, {0: 0}, SEG_SIZE), (100, 200, {1: 100}, 2 * SEG_SIZE), (200, 300, {2: 200}, 3 * SEG_SIZE)])
    assert [rlmm.remote_log_size(p, e) for e in range(3)] == [SEG_SIZE, 2 * SEG_SIZE, 3 * SEG_SIZE]


def test_testRemoteLogSizeCalculationWithSegmentsHavingNonExistentEpochs(rlmm):
    """T5."""
    p = registered(rlmm, tp())
    _sizes(rlmm, p, [(0, 100, {0: 0}, SEG_SIZE), (100, 200, {1: 100}, 2 * SEG_SIZE)])
    assert rlmm.remote_log_size(p, 9001) == 0


def test_testRemoteLogSizeCalculationForUnknownTopicIdPartitionThrows(rlmm):
    """T6."""
    with pytest.raises(RemoteResourceNotFoundException):
        rlmm.remote_log_size(tp(), 0)


def test_testRLMMAPIsAfterRestart(sqlite_log):
    """T7 TopicBasedRemoteLogMetadataManagerRestartTest#testRLMMAPIsAfterRestart."""
    leader, follower = tp("leader"), tp("follower")
    first = EventSourcedRemoteLogMetadataManager(sqlite_log)
    first.on_partition_leadership_changes({leader}, {follower})
    ls, fs = seg(leader, 0, 100, {0: 0}), seg(follower, 0, 100, {0: 0})
    first.add_remote_log_segment_metadata(ls)
    first.add_remote_log_segment_metadata(fs)
    first.close()
    second = EventSourcedRemoteLogMetadataManager(sqlite_log)
    second.on_partition_leadership_changes({leader}, {follower})
    assert list(second.list_remote_log_segments(leader)) == [ls]
    assert list(second.list_remote_log_segments(follower)) == [fs]
    ls2 = seg(leader, 101, 200, {0: 101})
    second.add_remote_log_segment_metadata(ls2)
    assert set(second.list_remote_log_segments(leader)) == {ls, ls2}
    second.close()


def test_closed_instance_refuses_calls(rlmm):
    """T15 (code): after close, data calls → IllegalStateException; leadership changes → 'closing state'."""
    p = registered(rlmm, tp())
    rlmm.close()
    with pytest.raises(IllegalStateException, match="close: true"):
        rlmm.list_remote_log_segments(p)
    with pytest.raises(IllegalStateException, match="closing state"):
        rlmm.on_partition_leadership_changes({p}, set())
    with pytest.raises(NullPointerException):
        EventSourcedRemoteLogMetadataManager(rlmm.event_log).on_partition_leadership_changes(None, set())


def test_on_stop_partitions_unregisters(rlmm):
    p = registered(rlmm, tp())
    rlmm.add_remote_log_segment_metadata(seg(p, 0, 10, {0: 0}))
    rlmm.on_stop_partitions({p})
    assert not rlmm.is_ready(p)
    with pytest.raises(RemoteResourceNotFoundException):
        rlmm.list_remote_log_segments(p)
    rlmm.on_partition_leadership_changes({p}, set())
    assert len(list(rlmm.list_remote_log_segments(p))) == 1


def test_partition_delete_finished_removes_the_partition(rlmm):
    """§4: MARKED/STARTED hide nothing; FINISHED removes the cache → RemoteResourceNotFoundException."""
    p = registered(rlmm, tp())
    rlmm.add_remote_log_segment_metadata(seg(p, 0, 10, {0: 0}))
    for state in (RemotePartitionDeleteState.DELETE_PARTITION_MARKED, RemotePartitionDeleteState.DELETE_PARTITION_STARTED):
        rlmm.put_remote_partition_delete_metadata(RemotePartitionDeleteMetadata(p, state, 1, 0))
        assert len(list(rlmm.list_remote_log_segments(p))) == 1
    rlmm.put_remote_partition_delete_metadata(
        RemotePartitionDeleteMetadata(p, RemotePartitionDeleteState.DELETE_PARTITION_FINISHED, 2, 0))
    with pytest.raises(RemoteResourceNotFoundException, match="No resource found for partition"):
        rlmm.list_remote_log_segments(p)
    # deviation: a later event for the deleted partition is dropped (Kafka's consumer would die)
    rlmm.add_remote_log_segment_metadata(seg(p, 11, 20, {0: 11}))
    assert rlmm.state_of(rlmm.metadata_partition(p)).dropped_events == 1


def test_catch_up_sees_other_writers(sqlite_log):
    """Two managers on one log: reads are local; catch_up folds the other writer's events."""
    p = tp()
    a, b = EventSourcedRemoteLogMetadataManager(sqlite_log), EventSourcedRemoteLogMetadataManager(sqlite_log)
    for m in (a, b):
        m.on_partition_leadership_changes({p}, set())
    s = seg(p, 0, 10, {0: 0})
    a.add_remote_log_segment_metadata(s)
    assert list(b.list_remote_log_segments(p)) == []
    assert b.catch_up() == 1
    assert list(b.list_remote_log_segments(p)) == [s]


def test_restart_from_snapshot_plus_tail_equals_full_replay(sqlite_log):
    """Snapshots: periodic (every 5 events here) and on close; a restart resumes from the latest
    snapshot and folds only the tail; the result equals a full replay."""
    p = tp()
    m = EventSourcedRemoteLogMetadataManager(sqlite_log, snapshot_interval_events=5)
    m.on_partition_leadership_changes({p}, set())
    segs = [seg(p, i * 10, i * 10 + 9, {i // 4: i * 10}) for i in range(12)]
    for i, s in enumerate(segs):
        m.add_remote_log_segment_metadata(s)
        m.update_remote_log_segment_metadata(upd(s, CF))
        if i % 3 == 0:
            m.update_remote_log_segment_metadata(upd(s, DS))
    mp = m.metadata_partition(p)
    stream = stream_id(mp)
    snap = sqlite_log.load_snapshot(stream)
    assert snap is not None and 0 < snap.stream_version < sqlite_log.stream_version(stream)
    from_snapshot, replayed = load_metadata_partition(sqlite_log, mp)
    full, full_replayed = load_metadata_partition(sqlite_log, mp, use_snapshot=False)
    assert replayed == sqlite_log.stream_version(stream) - snap.stream_version
    assert full_replayed == sqlite_log.stream_version(stream)
    assert from_snapshot == full
    m.close()
    assert sqlite_log.load_snapshot(stream).stream_version == sqlite_log.stream_version(stream)
    again, n = load_metadata_partition(sqlite_log, mp)
    assert n == 0 and again == full


def test_corrupt_snapshot_falls_back_to_full_replay(sqlite_log):
    p = tp()
    m = EventSourcedRemoteLogMetadataManager(sqlite_log)
    m.on_partition_leadership_changes({p}, set())
    m.add_remote_log_segment_metadata(seg(p, 0, 9, {0: 0}))
    mp = m.metadata_partition(p)
    sqlite_log.save_snapshot(stream_id(mp), 1, b"\xffnot msgpack", 0)
    state, n = load_metadata_partition(sqlite_log, mp)
    assert n == 1 and state.segment_count() == 1


# ----------------------------------------------------------------------- NotReady / Swappable
def test_not_ready_facade_fails_closed():
    nr = NotReadyRemoteLogMetadataManager()
    p = tp()
    s = seg(p, 0, 9, {0: 0})
    calls = [
        lambda: nr.add_remote_log_segment_metadata(s), lambda: nr.update_remote_log_segment_metadata(upd(s, CF)),
        lambda: nr.remote_log_segment_metadata(p, 0, 0), lambda: nr.highest_offset_for_epoch(p, 0),
        lambda: nr.list_remote_log_segments(p), lambda: nr.list_remote_log_segments(p, 0),
        lambda: nr.remote_log_size(p, 0), lambda: nr.next_segment_with_txn_index(p, 0, 0),
        lambda: nr.put_remote_partition_delete_metadata(
            RemotePartitionDeleteMetadata(p, RemotePartitionDeleteState.DELETE_PARTITION_MARKED, 0, 0)),
    ]
    for call in calls:
        with pytest.raises(RemoteLogMetadataManagerNotReadyException):
            call()
    assert nr.is_ready(p) is False


def test_swappable_boots_on_not_ready_and_swaps_in_live_manager(sqlite_log):
    p, q = tp("p"), tp("q")
    facade = SwappableRemoteLogMetadataManager()
    facade.on_partition_leadership_changes({p, q}, set())  # remembered while not ready
    facade.on_stop_partitions({q})
    with pytest.raises(RemoteLogMetadataManagerNotReadyException):
        facade.list_remote_log_segments(p)
    assert not facade.is_ready(p)
    live = EventSourcedRemoteLogMetadataManager(sqlite_log)
    old = facade.swap(live)
    assert isinstance(old, NotReadyRemoteLogMetadataManager)
    assert facade.is_ready(p) and not facade.is_ready(q)
    s = seg(p, 0, 9, {0: 0})
    facade.add_remote_log_segment_metadata(s)
    facade.update_remote_log_segment_metadata(upd(s, CF))
    assert facade.remote_log_segment_metadata(p, 0, 5) == s.create_with_updates(upd(s, CF))
    assert facade.remote_log_size(p, 0) == s.segment_size_in_bytes
    assert facade.highest_offset_for_epoch(p, 0) == 9
    assert facade.next_segment_with_txn_index(p, 0, 5) is not None
    facade.close()


def test_num_partitions_config(sqlite_log):
    m = EventSourcedRemoteLogMetadataManager.from_config(sqlite_log, {"remote.log.metadata.topic.num.partitions": "5"})
    p = tp()
    m.on_partition_leadership_changes({p}, set())
    assert m.assigned_metadata_partitions() == {metadata_partition_for(p, 5)}
    with pytest.raises(ValueError):
        EventSourcedRemoteLogMetadataManager(sqlite_log, num_partitions=0)


def _upsert(rlmm, p, epochs, start, end, state):
    """RemoteLogSegmentLifecycleTest#upsertSegmentState: add, then one update to ``state``."""
    s = seg(p, start, end, epochs, size=SEG_SIZE)
    rlmm.add_remote_log_segment_metadata(s)
    rlmm.update_remote_log_segment_metadata(upd(s, state))
    return s.create_with_updates(upd(s, state))


def test_testCacheSegmentWithDeleteSegmentStartedState(rlmm):
    """L4 RemoteLogSegmentLifecycleTest#testCacheSegmentWithDeleteSegmentStartedState."""
    p = registered(rlmm, tp())
    s = _upsert(rlmm, p, {0: 201}, 201, 300, DS)
    assert rlmm.remote_log_segment_metadata(p, 0, 250) is None
    assert list(rlmm.list_remote_log_segments(p, 0)) == [s]
    assert list(rlmm.list_remote_log_segments(p)) == [s]


def test_testCacheSegmentsWithDeleteSegmentFinishedState(rlmm):
    """L5 RemoteLogSegmentLifecycleTest#testCacheSegmentsWithDeleteSegmentFinishedState."""
    p = registered(rlmm, tp())
    s = _upsert(rlmm, p, {0: 301}, 301, 400, DS)
    assert rlmm.remote_log_segment_metadata(p, 0, 350) is None
    rlmm.update_remote_log_segment_metadata(upd(s, DF))
    assert list(rlmm.list_remote_log_segments(p, 0)) == []
    assert list(rlmm.list_remote_log_segments(p)) == []


def test_testWithNoAssignedPartitions(sqlite_log):
    """TopicBasedRemoteLogMetadataManagerTest#testWithNoAssignedPartitions: a manager with no
    leader/follower partitions starts and closes cleanly (and writes nothing)."""
    m = EventSourcedRemoteLogMetadataManager(sqlite_log)
    assert m.assigned_metadata_partitions() == set()
    m.close()
    assert sqlite_log.last_position() == 0 and sqlite_log.stream_ids("rlmm:") == []
