"""RemoteLogMetadataCache / RemoteLogLeaderEpochState / RemoteLogSegmentMetadata scenarios of
reference §8 (C*, E*, L* on the bare cache), named after their Kafka tests."""

from __future__ import annotations

import pytest

from actors.rlmm.cache import RemoteLogLeaderEpochState, RemoteLogMetadataCache
from events.rlmm_errors import IllegalArgumentException, NullPointerException, RemoteResourceNotFoundException
from events.rlmm_types import (
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemotePartitionDeleteState,
)
from tests.rlmm.helpers import CF, CS, DF, DS, seg, seg_id, tp, upd


@pytest.fixture
def cache() -> RemoteLogMetadataCache:
    c = RemoteLogMetadataCache()
    c.mark_initialized()
    return c


# ------------------------------------------------------------------------- transition tables
def test_is_valid_transition_table():
    """RemoteLogSegmentState#isValidTransition, the full table of reference §2.2."""
    table = {
        None: {CS: True, CF: False, DS: False, DF: False},
        CS: {CS: True, CF: True, DS: True, DF: False},
        CF: {CS: False, CF: True, DS: True, DF: False},
        DS: {CS: False, CF: False, DS: True, DF: True},
        DF: {CS: False, CF: False, DS: False, DF: True},
    }
    for src, row in table.items():
        for target, expected in row.items():
            assert RemoteLogSegmentState.is_valid_transition(src, target) is expected, (src, target)
    with pytest.raises(NullPointerException):
        RemoteLogSegmentState.is_valid_transition(CS, None)  # type: ignore[arg-type]
    assert [s.id for s in RemoteLogSegmentState] == [0, 1, 2, 3]
    assert RemoteLogSegmentState.for_id(4) is None


def test_partition_delete_state_transitions():
    """RemotePartitionDeleteState#isValidTransition (reference §4)."""
    M, S, F = (RemotePartitionDeleteState.DELETE_PARTITION_MARKED, RemotePartitionDeleteState.DELETE_PARTITION_STARTED,
               RemotePartitionDeleteState.DELETE_PARTITION_FINISHED)
    ok = {(None, M), (M, M), (S, S), (F, F), (M, S), (S, F)}
    for src in (None, M, S, F):
        for target in (M, S, F):
            assert RemotePartitionDeleteState.is_valid_transition(src, target) is ((src, target) in ok)
    with pytest.raises(NullPointerException):
        RemotePartitionDeleteState.is_valid_transition(M, None)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- C scenarios
def test_testDropEventOnInvalidStateTransition(cache):
    """C1 RemoteLogMetadataCacheTest#testDropEventOnInvalidStateTransition."""
    p = tp()
    s = seg(p, 10, 100, {5: 10})
    cache.add_copy_in_progress_segment(s)

    def check(state):
        listed = cache.list_remote_log_segments(5)
        assert len(listed) == 1 and listed[0].state is state

    for target, expected in [(DF, CS), (CF, CF), (DF, CF)]:
        cache.update_remote_log_segment_metadata(upd(s, target))
        check(expected)
    assert cache.update_remote_log_segment_metadata(upd(s, CS)) is False  # dropped, no exception
    check(CF)
    for target, expected in [(DS, DS), (CF, DS), (CS, DS)]:
        cache.update_remote_log_segment_metadata(upd(s, target))
        check(expected)
    cache.update_remote_log_segment_metadata(upd(s, DF))
    assert cache.list_remote_log_segments(5) == []


def test_testCacheAddMetadataOnInvalidArgs(cache):
    """C2 RemoteLogMetadataCacheTest#testCacheAddMetadataOnInvalidArgs."""
    with pytest.raises(NullPointerException):
        cache.add_copy_in_progress_segment(None)  # type: ignore[arg-type]
    s = seg(tp(), 0, 100, {0: 0})
    for state in (CF, DS, DF):
        with pytest.raises(IllegalArgumentException):
            cache.add_copy_in_progress_segment(s.create_with_updates(upd(s, state)))


@pytest.mark.parametrize("is_initialized", [True, False])
def test_testCacheUpdateMetadataOnInvalidArgs(is_initialized):
    """C3/C4 RemoteLogMetadataCacheTest#testCacheUpdateMetadataOnInvalidArgs[isInitialized]."""
    cache = RemoteLogMetadataCache()
    if is_initialized:
        cache.mark_initialized()
    with pytest.raises(NullPointerException):
        cache.update_remote_log_segment_metadata(None)  # type: ignore[arg-type]
    unknown = seg(tp(), 0, 100, {0: 0})
    for state in (CF, DS, DF):
        if is_initialized:
            with pytest.raises(RemoteResourceNotFoundException):
                cache.update_remote_log_segment_metadata(upd(unknown, state))
        else:
            assert cache.update_remote_log_segment_metadata(upd(unknown, state)) is False
    assert cache.list_all_remote_log_segments() == []


def test_update_to_copy_started_is_illegal(cache):
    """C5 (code): a CS→CS update passes the table, then the CS branch throws."""
    s = seg(tp(), 0, 10, {0: 0})
    cache.add_copy_in_progress_segment(s)
    with pytest.raises(IllegalArgumentException, match="can not be updated"):
        cache.update_remote_log_segment_metadata(upd(s, CS))


def test_re_add_after_finished_is_dropped(cache):
    """C6 (code): add A, A→CF, add A again (CS) is dropped; A→CF again keeps A."""
    a = seg(tp(), 0, 100, {0: 0})
    cache.add_copy_in_progress_segment(a)
    cache.update_remote_log_segment_metadata(upd(a, CF))
    assert cache.add_copy_in_progress_segment(a) is False
    found = cache.remote_log_segment_metadata(0, 5)
    assert found is not None and found.remote_log_segment_id == a.remote_log_segment_id and found.state is CF
    assert cache.update_remote_log_segment_metadata(upd(a, CF, ts=7)) is True
    assert cache.remote_log_segment_metadata(0, 5).event_timestamp_ms == 7
    assert [m.remote_log_segment_id for m in cache.list_remote_log_segments(0)] == [a.remote_log_segment_id]


def test_createWithUpdates():
    """C7 RemoteLogSegmentMetadataTest#createWithUpdates."""
    sid = seg_id(tp())
    original = RemoteLogSegmentMetadata(sid, 0, 100, -1, 0, 0, 123, {0: 0})
    custom = bytes([0, 1, 2, 3])
    update = RemoteLogSegmentMetadataUpdate(sid, 1, custom, CF, 1)
    updated = original.create_with_updates(update)
    assert updated == RemoteLogSegmentMetadata(sid, 0, 100, -1, 1, 1, 123, {0: 0}, CF, custom)
    assert original == RemoteLogSegmentMetadata(sid, 0, 100, -1, 0, 0, 123, {0: 0})
    assert original.state is CS and original.custom_metadata is None
    with pytest.raises(IllegalArgumentException):
        original.create_with_updates(RemoteLogSegmentMetadataUpdate(seg_id(tp()), 1, None, CF, 1))


def test_segment_metadata_constructor_checks():
    """RemoteLogSegmentMetadata constructor: negative start, end < start, empty epochs."""
    sid = seg_id(tp())
    with pytest.raises(IllegalArgumentException):
        RemoteLogSegmentMetadata(sid, -1, 10, -1, 0, 0, 1, {0: 0})
    with pytest.raises(IllegalArgumentException):
        RemoteLogSegmentMetadata(sid, 10, 9, -1, 0, 0, 1, {0: 0})
    with pytest.raises(IllegalArgumentException):
        RemoteLogSegmentMetadata(sid, 0, 9, -1, 0, 0, 1, {})
    with pytest.raises(NullPointerException):
        RemoteLogSegmentMetadata(None, 0, 9, -1, 0, 0, 1, {0: 0})  # type: ignore[arg-type]
    # no check that epoch offsets lie in [start, end] (Kafka's tests use {0:0} with start 100)
    assert RemoteLogSegmentMetadata(sid, 100, 200, -1, 0, 0, 1, {0: 0}).segment_leader_epochs == ((0, 0),)


# ----------------------------------------------------------------------------- E scenarios
def test_handleSegmentWithCopySegmentFinishedState():
    """E1 RemoteLogLeaderEpochStateTest#handleSegmentWithCopySegmentFinishedState."""
    st = RemoteLogLeaderEpochState()
    p = tp()
    s1, s2 = seg_id(p), seg_id(p)
    st.handle_segment_with_copy_segment_finished_state(10, s1, 100)
    st.handle_segment_with_copy_segment_finished_state(101, s2, 200)
    assert len(st.referenced_segment_ids()) == 2
    assert st.floor_entry(90) == s1 and st.floor_entry(150) == s2
    assert st.unreferenced_segment_ids() == []
    assert st.highest_log_offset == 200


def test_handleSegmentWithCopySegmentFinishedStateForMultipleOverlappingSegments():
    """E3 …ForMultipleOverlappingSegments."""
    st = RemoteLogLeaderEpochState()
    p = tp()
    s1, s2, s3, s4 = (seg_id(p) for _ in range(4))
    st.handle_segment_with_copy_segment_finished_state(10, s1, 100)
    st.handle_segment_with_copy_segment_finished_state(5, s2, 150)
    st.handle_segment_with_copy_segment_finished_state(148, s3, 155)
    st.handle_segment_with_copy_segment_finished_state(4, s4, 200)
    assert st.referenced_segment_ids() == [s4]
    assert st.floor_entry(11) == s4
    assert set(st.unreferenced_segment_ids()) == {s1, s2, s3}
    assert st.highest_log_offset == 200


def test_handleSegmentWithCopySegmentFinishedStateForSegmentsWithSameStartOffset():
    """E5 …ForSegmentsWithSameStartOffset."""
    st = RemoteLogLeaderEpochState()
    p = tp()
    s1, s2 = seg_id(p), seg_id(p)
    st.handle_segment_with_copy_segment_finished_state(10, s1, 100)
    st.handle_segment_with_copy_segment_finished_state(10, s2, 150)
    assert st.floor_entry(11) == s2 and st.floor_entry(111) == s2
    assert len(st.unreferenced_segment_ids()) == 1
    assert st.highest_log_offset == 150


def test_handleSegmentWithDeleteSegmentFinishedState():
    """E7 RemoteLogLeaderEpochStateTest#handleSegmentWithDeleteSegmentFinishedState."""
    st = RemoteLogLeaderEpochState()
    s = seg_id(tp())
    st.handle_segment_with_copy_segment_started_state(s)
    assert st.unreferenced_segment_ids() == [s]
    st.handle_segment_with_delete_segment_finished_state(s)
    assert st.unreferenced_segment_ids() == []


def test_testListAllRemoteLogSegmentsShouldThrowErrorForUnknownSegmentId():
    """E9 …#testListAllRemoteLogSegmentsShouldThrowErrorForUnknownSegmentId."""
    st = RemoteLogLeaderEpochState()
    s1 = seg_id(tp())
    st.handle_segment_with_copy_segment_finished_state(0, s1, 10)
    with pytest.raises(RemoteResourceNotFoundException):
        st.list_all_remote_log_segments({})


def test_overlap_lower_than_highest_only_replaces_exact_key(cache):
    """Reference §3.5 / surprise 6: a CF segment whose epoch end is below the epoch's highest
    offset displaces nothing; an exact key collision replaces the old id, which then ends up in
    neither map (KAFKA-20932)."""
    p = tp()
    a = seg(p, 0, 100, {0: 0})
    b = seg(p, 50, 200, {0: 50})
    c = seg(p, 50, 120, {0: 50})
    for s in (a, b, c):
        cache.add_copy_in_progress_segment(s)
    cache.update_remote_log_segment_metadata(upd(a, CF))
    cache.update_remote_log_segment_metadata(upd(b, CF))
    cache.update_remote_log_segment_metadata(upd(c, CF))  # end 120 < highest 200: no displacement
    st = cache.leader_epoch_entries[0]
    assert st.referenced_segment_ids() == [a.remote_log_segment_id, c.remote_log_segment_id]
    assert b.remote_log_segment_id not in st.unreferenced_segment_ids()  # orphaned
    assert cache.remote_log_segment_metadata(0, 150) is None  # c ends at 120, b unreachable
    assert cache.highest_offset_for_epoch(0) == 200
    assert {m.remote_log_segment_id for m in cache.list_all_remote_log_segments()} == {
        a.remote_log_segment_id, b.remote_log_segment_id, c.remote_log_segment_id}


def test_repeated_finished_reinserts_displaced_segment(cache):
    """Surprise 16 (D7): a repeated CF of a displaced segment re-inserts it at its start offset
    and drops the displacing segment from the epoch index."""
    p = tp()
    s0 = seg(p, 0, 100, {0: 0})
    s1 = seg(p, 0, 200, {0: 0})
    for s in (s0, s1):
        cache.add_copy_in_progress_segment(s)
    cache.update_remote_log_segment_metadata(upd(s0, CF))
    cache.update_remote_log_segment_metadata(upd(s1, CF))
    st = cache.leader_epoch_entries[0]
    assert st.referenced_segment_ids() == [s1.remote_log_segment_id]
    assert st.unreferenced_segment_ids() == [s0.remote_log_segment_id]
    cache.update_remote_log_segment_metadata(upd(s0, CF))  # self transition
    assert st.referenced_segment_ids() == [s0.remote_log_segment_id]
    assert st.unreferenced_segment_ids() == []
    assert cache.remote_log_segment_metadata(0, 150) is None


# ------------------------------------------------------------------------ L scenarios (cache)
def _add_cf(cache, s):
    cache.add_copy_in_progress_segment(s)
    cache.update_remote_log_segment_metadata(upd(s, CF))
    return s.create_with_updates(upd(s, CF))


def test_testRemoteLogSegmentLifeCycle(cache):
    """L1 RemoteLogSegmentLifecycleTest#testRemoteLogSegmentLifeCycle (on the bare cache, as in 3.5)."""
    p = tp()
    s0 = seg(p, 0, 100, {0: 0, 1: 20, 2: 80})
    cache.add_copy_in_progress_segment(s0)
    assert cache.remote_log_segment_metadata(1, 40) is None
    assert [cache.highest_offset_for_epoch(e) for e in range(3)] == [None, None, None]
    s0f = s0.create_with_updates(upd(s0, CF))
    cache.update_remote_log_segment_metadata(upd(s0, CF))
    s1f = _add_cf(cache, seg(p, 101, 200, {2: 101}))
    s2f = _add_cf(cache, seg(p, 201, 300, {2: 201, 3: 240}))
    s3f = _add_cf(cache, seg(p, 250, 400, {3: 250, 4: 370}))
    look = cache.remote_log_segment_metadata
    assert look(1, 40) == s0f and look(2, 110) == s1f and look(3, 240) == s2f
    assert look(3, 250) == s3f and look(4, 375) == s3f
    assert look(1, 110) is None and look(4, 401) is None and look(5, 301) is None
    # extra computed lookups of the reference
    assert look(0, 19) == s0f and look(0, 20) is None and look(2, 80) == s0f
    assert look(3, 300) == s3f and look(3, 370) is None
    cache.update_remote_log_segment_metadata(upd(s0, DS))
    assert look(0, 10) is None
    cache.update_remote_log_segment_metadata(upd(s0, DF))
    assert look(0, 10) is None
    assert [cache.highest_offset_for_epoch(e) for e in range(6)] == [19, 79, 239, 369, 400, None]


def test_testCacheSegmentWithCopySegmentStartedState(cache):
    """L2 …#testCacheSegmentWithCopySegmentStartedState."""
    s = seg(tp(), 0, 50, {0: 0})
    cache.add_copy_in_progress_segment(s)
    assert cache.remote_log_segment_metadata(0, 0) is None
    assert cache.list_remote_log_segments(0)[0] == s
    assert cache.list_all_remote_log_segments()[0] == s


def test_testCacheSegmentWithCopySegmentFinishedState(cache):
    """L3 …#testCacheSegmentWithCopySegmentFinishedState."""
    s = _add_cf(cache, seg(tp(), 101, 200, {0: 101}))
    assert cache.remote_log_segment_metadata(0, 150) == s
    assert s in cache.list_remote_log_segments(0) and s in cache.list_all_remote_log_segments()


def test_testCacheListSegments(cache):
    """L6 …#testCacheListSegments."""
    p = tp()
    s0 = _add_cf(cache, seg(p, 0, 100, {0: 0}))
    s1 = _add_cf(cache, seg(p, 101, 200, {0: 101}))
    s2 = _add_cf(cache, seg(p, 201, 400, {0: 201, 1: 301}))
    assert cache.list_remote_log_segments(0) == [s0, s1, s2]
    assert set(cache.list_all_remote_log_segments()) == {s0, s1, s2}
    assert cache.list_remote_log_segments(1) == [s2]


def test_listing_sorts_by_start_offset_when_unreferenced(cache):
    """§3.4: with unreferenced ids present the epoch listing is sorted by segment start offset."""
    p = tp()
    late = _add_cf(cache, seg(p, 300, 400, {0: 300}))
    early = seg(p, 0, 100, {0: 0})  # CS only: unreferenced
    cache.add_copy_in_progress_segment(early)
    assert cache.list_remote_log_segments(0) == [early, late]
    assert cache.list_remote_log_segments(7) == []


def test_next_segment_with_txn_index(cache):
    """Kafka 4.0 nextSegmentWithTxnIndex: skips segments whose txn index is empty, within one epoch."""
    p = tp()
    a = _add_cf(cache, seg(p, 0, 99, {0: 0}, txn_idx_empty=True))
    b = _add_cf(cache, seg(p, 100, 199, {0: 100}, txn_idx_empty=True))
    c = _add_cf(cache, seg(p, 200, 299, {0: 200}))
    assert cache.next_segment_with_txn_index(0, 5) == c
    assert cache.next_segment_with_txn_index(0, 150) == c
    assert cache.remote_log_segment_metadata(0, 5) == a and b.txn_idx_empty
    d = _add_cf(cache, seg(p, 300, 399, {0: 300}, txn_idx_empty=True))
    assert cache.next_segment_with_txn_index(0, 300) is None and d.end_offset == 399


def test_kafka_to_string_formats():
    """toString of the value types (RemoteLogMetadataFormatterTest's shape)."""
    s = seg(tp("foo", 0), 0, 100, {0: 0, 1: 20, 2: 80}, broker=1, ts=123)
    text = str(s)
    assert text.startswith("RemoteLogSegmentMetadata{remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition=")
    assert ":foo-0, id=" in text
    assert text.endswith("segmentLeaderEpochs={0=0, 1=20, 2=80}, segmentSizeInBytes=1024, "
                         "customMetadata=Optional.empty, state=COPY_SEGMENT_STARTED}")


# ------------------------------------------------- the rest of RemoteLogLeaderEpochStateTest
def test_testListAllRemoteLogSegmentsOnEmpty():
    assert RemoteLogLeaderEpochState().list_all_remote_log_segments({}) == []


def test_testListAllRemoteLogSegmentsShouldReturnSortedSegments():
    """Referenced and unreferenced (CS, displaced CF) segments come back sorted by start offset."""
    st = RemoteLogLeaderEpochState()
    p = tp()
    ids = [seg_id(p) for _ in range(4)]
    starts = {ids[0]: 0, ids[1]: 5, ids[2]: 11, ids[3]: 9}
    st.handle_segment_with_copy_segment_started_state(ids[0])
    st.handle_segment_with_copy_segment_finished_state(5, ids[1], 10)
    st.handle_segment_with_copy_segment_finished_state(11, ids[2], 100)
    st.handle_segment_with_copy_segment_finished_state(9, ids[3], 150)  # displaces ids[2]
    md = {sid: seg(p, starts[sid], starts[sid] + 1, {0: starts[sid]}, sid=sid) for sid in ids}
    assert [m.remote_log_segment_id for m in st.list_all_remote_log_segments(md)] == [ids[0], ids[1], ids[3], ids[2]]


def test_handleSegmentWithCopySegmentStartedState():
    st = RemoteLogLeaderEpochState()
    s = seg_id(tp())
    st.handle_segment_with_copy_segment_started_state(s)
    assert st.unreferenced_segment_ids() == [s]


def test_handleSegmentWithCopySegmentFinishedStateForOverlappingSegments():
    st = RemoteLogLeaderEpochState()
    p = tp()
    s1, s2 = seg_id(p), seg_id(p)
    st.handle_segment_with_copy_segment_finished_state(10, s1, 100)
    st.handle_segment_with_copy_segment_finished_state(5, s2, 150)
    assert st.referenced_segment_ids() == [s2] and st.floor_entry(11) == s2
    assert st.unreferenced_segment_ids() == [s1] and st.highest_log_offset == 150


def test_handleSegmentWithCopySegmentFinishedStateForDuplicateSegments():
    st = RemoteLogLeaderEpochState()
    p = tp()
    s1, s2 = seg_id(p), seg_id(p)
    st.handle_segment_with_copy_segment_finished_state(10, s1, 100)
    st.handle_segment_with_copy_segment_finished_state(10, s2, 100)
    assert st.floor_entry(11) == s2
    assert st.unreferenced_segment_ids() == [s1] and st.highest_log_offset == 100


def test_handleSegmentWithDeleteSegmentStartedState():
    st = RemoteLogLeaderEpochState()
    p = tp()
    s1, s2 = seg_id(p), seg_id(p)
    st.handle_segment_with_copy_segment_finished_state(10, s1, 100)
    st.handle_segment_with_copy_segment_finished_state(101, s2, 200)
    assert len(st.referenced_segment_ids()) == 2
    st.handle_segment_with_delete_segment_started_state(10, s1)
    st.handle_segment_with_delete_segment_started_state(101, s2)
    assert st.referenced_segment_ids() == [] and set(st.unreferenced_segment_ids()) == {s1, s2}
    assert st.floor_entry(150) is None and st.highest_log_offset == 200


def test_delete_started_only_removes_its_own_mapping():
    """``offsetToId.remove(start, id)``: a DS of a segment no longer mapped at its key leaves
    the current mapping alone."""
    st = RemoteLogLeaderEpochState()
    p = tp()
    s1, s2 = seg_id(p), seg_id(p)
    st.handle_segment_with_copy_segment_finished_state(10, s1, 100)
    st.handle_segment_with_copy_segment_finished_state(10, s2, 150)
    st.handle_segment_with_delete_segment_started_state(10, s1)
    assert st.referenced_segment_ids() == [s2] and st.unreferenced_segment_ids() == [s1]


def test_KAFKA_20932_exact_start_offset_replacement_loses_the_old_segment(cache):
    """Reference §3.5 D1/D2 (open bug KAFKA-20932, PR #23148's regression case), Kafka HEAD
    behaviour kept: S0 [0-100], S1 [101-200], S2 [0-150] all COPY_SEGMENT_FINISHED, then a replay
    of S2's completion. S2 (end 150 < highest 200) displaces nothing but overwrites key 0, so S0
    is in neither the referenced map nor the unreferenced set — it drops out of the epoch listing
    while staying in the partition's segment map."""
    p = tp()
    s0, s1, s2 = seg(p, 0, 100, {0: 0}), seg(p, 101, 200, {0: 101}), seg(p, 0, 150, {0: 0})
    for s in (s0, s1, s2):
        _add_cf(cache, s)
    cache.update_remote_log_segment_metadata(upd(s2, CF))  # replay of the completion update
    st = cache.leader_epoch_entries[0]
    ids = lambda ms: [m.remote_log_segment_id for m in ms]  # noqa: E731
    assert st.referenced_segment_ids() == [s2.remote_log_segment_id, s1.remote_log_segment_id]
    assert st.unreferenced_segment_ids() == []
    assert ids(cache.list_remote_log_segments(0)) == [s2.remote_log_segment_id, s1.remote_log_segment_id]
    assert s0.remote_log_segment_id in ids(cache.list_all_remote_log_segments())
    assert cache.remote_log_segment_metadata(0, 50).remote_log_segment_id == s2.remote_log_segment_id
    assert cache.remote_log_segment_metadata(0, 120).remote_log_segment_id == s1.remote_log_segment_id
    assert cache.highest_offset_for_epoch(0) == 200
