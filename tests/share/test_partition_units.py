"""Share-partition behaviour beyond the §6 scenarios: RENEW (Kafka 4.2), the combined ShareFetch
decision, lock deadlines, initialisation from persisted state, ``share.auto.offset.reset``,
the start offset never moving back, event shape (ranges, one event per request), pickling and the
JSON log codec."""

from __future__ import annotations

import pickle

import pytest

from actors.share.errors import INVALID_RECORD_STATE, INVALID_REQUEST, ShareError, error_code
from actors.share.partition import (
    EMPTY_MEMBER_ID,
    AcquiredRecords,
    RecordState,
    SharePartition,
    replay,
    resolve_auto_offset_reset,
    validate_acknowledgement_batches,
)
from events.codec import decode_event, new_event
from events.share import (
    AckBatch,
    AcquisitionLocksExpired,
    MemberRecordsReleased,
    RecordsAcknowledged,
    RecordsAcquired,
    ShareFetchProcessed,
    StateRange,
)

A, ACQ, ACK, ARCH = RecordState.AVAILABLE, RecordState.ACQUIRED, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED
TOPIC = "5f2b8c1e-0000-4000-8000-000000000002"
M1, M2 = "member-1", "member-2"


def sp_(**kw) -> SharePartition:
    return SharePartition("g", TOPIC, 0, **kw)


def test_error_names_and_codes_come_from_kafka():
    assert error_code("INVALID_RECORD_STATE") == 121
    assert error_code("INVALID_REQUEST") == 42
    assert error_code("FENCED_STATE_EPOCH") == 124
    assert error_code("FENCED_LEADER_EPOCH") == 74
    err = ShareError("INVALID_RECORD_STATE", "x")
    assert (err.error_name, err.code, str(err)) == ("INVALID_RECORD_STATE", 121, "INVALID_RECORD_STATE: x")
    assert pickle.loads(pickle.dumps(err)).error_name == "INVALID_RECORD_STATE"
    with pytest.raises(ValueError):
        ShareError("NOT_A_KAFKA_ERROR")


def test_acquire_500_records_is_one_event_with_one_range():
    sp = sp_(max_in_flight_records=500)
    acquired, events = sp.acquire(M1, [(i, i + 99) for i in range(0, 500, 100)], 500, 1000, 30000)
    assert acquired == [AcquiredRecords(0, 499, 1)]
    # the request (one range) and its outcome (one range ACQUIRED by M1, end offset 499)
    assert events == [
        RecordsAcquired("g", TOPIC, 0, M1, ((0, 499),), 31000, outcome=(StateRange(0, 499, 1, 1, M1, 31000),),
                        start_offset_after=0, end_offset_after=499)
    ]
    events = sp.acknowledge(M1, [(0, 499, [1])], 1001)
    # all acknowledged: the start offset moves past them and the cache empties (nothing left to report)
    assert events == [
        RecordsAcknowledged("g", TOPIC, 0, M1, (AckBatch(0, 499, (1,)),), None, outcome=(),
                            start_offset_after=500, end_offset_after=500, evicted_below=500)
    ]
    assert sp.cached_batches() == [] and sp.start_offset == 500 and sp.next_fetch_offset() == 500


def test_soft_limit_cuts_at_log_batch_boundary_and_gap_between_log_batches():
    sp = sp_()
    # max 15 → offset 14 lies in log batch 10..19: acquire to 19
    acquired, _ = sp.acquire(M1, [(0, 9), (10, 19), (20, 29)], 15, 0, 1000)
    assert acquired == [AcquiredRecords(0, 19, 1)]
    # limit falling in a gap between log batches (compaction): cut at the limit itself
    sp2 = sp_()
    acquired, _ = sp2.acquire(M1, [(0, 4), (10, 19)], 7, 0, 1000)
    assert acquired == [AcquiredRecords(0, 6, 1)]


def test_renew_extends_the_lock_and_keeps_the_delivery_count():
    sp = sp_()
    sp.acquire(M1, [(0, 9)], 10, 1000, 30000)
    assert sp.next_lock_deadline_ms() == 31000
    events = sp.acknowledge(M1, [(0, 9, [4])], 20000, 30000)
    assert events[0].renew_deadline_ms == 50000
    assert sp.record_state(0) == (ACQ, 1, M1, 50000)
    assert sp.expire_locks(31000) == []  # the old deadline no longer applies
    # per-offset renew mixed with accept
    sp.acknowledge(M1, [(0, 9, [1, 4, 1, 1, 1, 1, 1, 1, 1, 1])], 30000, 30000)
    assert sp.record_state(1) == (ACQ, 1, M1, 60000)
    assert sp.record_state(0)[0] == ACK and sp.start_offset == 1
    # another member cannot renew
    with pytest.raises(ShareError) as exc:
        sp.decide_acknowledge(M2, [(1, 1, [4])], 30001, 30000)
    assert exc.value.error_name == INVALID_RECORD_STATE
    expired = sp.expire_locks(60000)
    assert expired == [
        AcquisitionLocksExpired("g", TOPIC, 0, 60000, ((1, 1),), outcome=(StateRange(1, 1, 0, 1),),
                                start_offset_after=1, end_offset_after=9)
    ]
    assert sp.record_state(1) == (A, 1, EMPTY_MEMBER_ID, None)


def test_renew_of_a_record_not_acquired_fails():
    sp = sp_()
    sp.acquire(M1, [(0, 4)], 10, 0, 100)
    sp.expire_locks(100)
    with pytest.raises(ShareError) as exc:
        sp.decide_acknowledge(M1, [(0, 4, [4])], 101, 100)
    assert exc.value.error_name == INVALID_RECORD_STATE


def test_acknowledge_request_validation():
    sp = sp_()
    sp.acquire(M1, [(0, 9)], 10, 0, 1000)
    for bad in ([(5, 4, [1])], [(0, 9, [])], [(0, 9, [1, 1])], [(0, 9, [5])]):
        with pytest.raises(ShareError) as exc:
            sp.decide_acknowledge(M1, bad, 0, 1000)
        assert exc.value.error_name == INVALID_REQUEST
    assert validate_acknowledgement_batches([(0, 4, [1]), (4, 9, [2])]) is None  # one-offset overlap passes here …
    with pytest.raises(ShareError) as exc:  # … and fails in the partition
        sp.decide_acknowledge(M1, [(0, 4, [1]), (4, 9, [2])], 0, 1000)
    assert exc.value.error_name == INVALID_RECORD_STATE
    assert validate_acknowledgement_batches([(0, 4, [1]), (3, 9, [2])]) is not None
    assert validate_acknowledgement_batches([(0, 4, [1, 2])]) is not None
    assert validate_acknowledgement_batches([(0, 1, [1, 9])]) is not None
    assert validate_acknowledgement_batches([(2, 1, [1])]) is not None
    assert validate_acknowledgement_batches([(0, 1, [])]) is not None
    # acknowledgements wholly below the start offset are ignored: no event
    sp.acknowledge(M1, [(0, 9, [1])], 0)
    assert sp.decide_acknowledge(M1, [(0, 9, [1])], 0) == []


def test_share_fetch_acknowledges_then_acquires_in_one_event():
    sp = sp_(max_in_flight_records=1000)
    log = [(i, i + 99) for i in range(0, 1000, 100)]

    def read_log(offset):
        return [b for b in log if b[1] >= offset][:5]

    d1 = sp.share_fetch(M1, [], read_log, 500, 0, 30000)
    assert d1.acquired == [AcquiredRecords(0, 499, 1)] and d1.fetch_offset == 0
    # release 10..19, accept the rest: the next fetch re-delivers 10..19 first
    acks = [(0, 9, [1]), (10, 19, [2]), (20, 499, [1])]
    d2 = sp.decide_share_fetch(M1, acks, read_log, 500, 5, 30000)
    assert len(d2.events) == 1 and isinstance(d2.events[0], ShareFetchProcessed)
    assert d2.fetch_offset == 10
    assert d2.acquired == [AcquiredRecords(10, 19, 2)]
    for ev in d2.events:
        sp.apply(ev)
    assert sp.record_state(10) == (ACQ, 2, M1, 30005)
    # a bad acknowledgement is reported, the fetch still proceeds
    d3 = sp.share_fetch(M2, [(10, 19, [1])], read_log, 100, 6, 30000)
    assert d3.ack_error is not None and d3.ack_error.error_name == INVALID_RECORD_STATE
    assert d3.acquired == [AcquiredRecords(500, 599, 1)]
    assert d3.events[0].acknowledgements == ()
    # nothing to do: no event
    d4 = sp.share_fetch(M2, [], lambda off: [], 100, 7, 30000)
    assert d4.events == [] and d4.acquired == []
    events = d1.events + d2.events + d3.events
    assert replay(events, "g", TOPIC, 0, max_in_flight_records=1000).snapshot() == sp.snapshot()
    # with the default in-flight limit (200) the span 10..599 blocks new acquisitions
    limited = replay(events, "g", TOPIC, 0)
    assert not limited.can_acquire_records()
    assert limited.decide_share_fetch(M2, [], read_log, 100, 8, 30000).events == []


def test_acquire_is_capped_by_in_flight_capacity_at_log_batch_boundaries():
    # Kafka 4.2 lastOffsetAndMaxRecordsToAcquire: min(max records, limit - in flight), still soft
    sp = sp_(max_in_flight_records=250)
    acquired, _ = sp.acquire(M1, [(i, i + 99) for i in range(0, 500, 100)], 500, 0, 1000)
    assert acquired == [AcquiredRecords(0, 299, 1)]  # 250 falls in log batch 200..299
    assert not sp.can_acquire_records()
    assert sp.decide_acquire(M1, [(300, 399)], 500, 0, 1000) == ([], [])
    # released records inside the cache can be re-delivered, only up to the end offset
    sp.acknowledge(M1, [(0, 19, [2]), (20, 299, [1])], 1)
    assert (sp.next_fetch_offset(), sp.start_offset) == (0, 0)  # 300 in flight ≥ 250
    acquired, _ = sp.acquire(M1, [(0, 99), (100, 199), (200, 299), (300, 399)], 500, 2, 1000)
    assert acquired == [AcquiredRecords(0, 19, 2)]  # nothing past the end offset 299
    # with room again, a fetch past the cache acquires new records
    sp.acknowledge(M1, [(0, 19, [1])], 3)
    assert sp.cached_batches() == [] and sp.start_offset == 300
    acquired, _ = sp.acquire(M1, [(300, 399)], 500, 4, 1000)
    assert acquired == [AcquiredRecords(300, 399, 1)]


def test_max_in_flight_gates_new_acquisitions():
    sp = sp_(max_in_flight_records=100)
    sp.acquire(M1, [(0, 149)], 1000, 0, 1000)  # one fetch may overshoot
    assert not sp.can_acquire_records()
    assert sp.decide_acquire(M1, [(150, 199)], 1000, 0, 1000) == ([], [])
    sp.acknowledge(M1, [(0, 9, [2])], 1)  # released records can be re-delivered
    assert sp.can_acquire_records() and sp.next_fetch_offset() == 0


def test_initialize_from_persisted_state_advances_start_and_redelivers():
    sp = sp_()
    sp.initialize(10, 3, [(10, 14, 2, 1), (15, 19, 0, 2), (20, 24, 4, 5), (25, 29, 1, 1)])
    assert sp.state_epoch == 3
    assert sp.start_offset == 15  # the acknowledged prefix is skipped and pruned
    assert sp.end_offset == 29
    assert sp.next_fetch_offset() == 15
    assert sp.record_state(25) == (A, 1, EMPTY_MEMBER_ID, None)  # a lock does not survive a restart
    acquired, _ = sp.acquire(M1, [(15, 29)], 100, 0, 1000)
    assert acquired == [AcquiredRecords(15, 19, 3), AcquiredRecords(25, 29, 2)]
    # the acquisitions are not part of the durable state: the previous delivery counts are
    assert sp.state_batches() == [(15, 19, 0, 2), (20, 24, 4, 5), (25, 29, 0, 1)]
    # an AVAILABLE batch already at the limit (limit lowered since) starts ARCHIVED
    low = sp_(delivery_count_limit=2)
    low.initialize(0, 1, [(0, 4, 0, 2), (5, 9, 0, 1)])
    assert low.start_offset == 5 and low.record_state(0) is None  # archived, then pruned
    with pytest.raises(ShareError):
        sp_().decide_initialize(-1)
    with pytest.raises(ShareError):
        sp_().decide_initialize(0, 0, [(0, 5, 0, 1), (5, 9, 0, 1)])  # overlapping


def test_resolve_auto_offset_reset():
    assert resolve_auto_offset_reset("earliest", log_start_offset=5, log_end_offset=50) == 5
    assert resolve_auto_offset_reset("latest", log_start_offset=5, log_end_offset=50) == 50
    assert resolve_auto_offset_reset("by_duration:PT1H", log_start_offset=5, log_end_offset=50, offset_for_duration=17) == 17
    assert resolve_auto_offset_reset("by_duration:PT1H", log_start_offset=5, log_end_offset=50, offset_for_duration=99) == 50
    for bad in ("none", "by_duration:PT1H"):
        with pytest.raises(ShareError):
            resolve_auto_offset_reset(bad, log_start_offset=0, log_end_offset=1)


def test_start_offset_never_moves_back_after_lso_and_timeouts():
    # Kafka would move the start offset back to 12 here (records ACQUIRED below an LSO-moved start
    # offset archived later, then the whole cache terminal): Shoal keeps it at 14.
    sp = sp_()
    sp.acquire(M1, [(2, 6)], 100, 0, 100)
    sp.acquire(M1, [(7, 11)], 100, 0, 100)
    sp.update_log_start_offset(14)
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (14, 14, 14)
    sp.expire_locks(100)
    assert sp.cached_batches() == []
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (14, 14, 14)
    assert sp.decide_update_log_start_offset(10) == []


def test_lock_timeout_of_batch_straddling_start_archives_the_part_below():
    sp = sp_()
    sp.acquire(M1, [(0, 9)], 100, 0, 100)
    sp.update_log_start_offset(5)
    sp.expire_locks(100)
    assert [sp.record_state(o)[0] for o in range(10)] == [ARCH] * 5 + [A] * 5
    assert sp.next_fetch_offset() == 5


def test_release_member_stops_at_record_of_other_member_in_exploded_batch():
    sp = sp_()
    sp.acquire(M1, [(0, 9)], 100, 0, 1000)
    sp.acknowledge(M1, [(3, 5, [2])], 1)  # explode; 3..5 AVAILABLE
    sp.acquire(M2, [(3, 5)], 100, 2, 1000)  # M2 holds 3..5
    events = sp.release_member(M1)
    # 6..9 abandoned, as Kafka
    assert events == [
        MemberRecordsReleased("g", TOPIC, 0, M1, ((0, 2),), outcome=(StateRange(0, 2, 0, 1),),
                              start_offset_after=0, end_offset_after=9)
    ]
    assert sp.record_state(6)[:3] == (ACQ, 1, M1)
    assert sp.decide_release_member("nobody") == []


def test_events_round_trip_through_the_log_codec_and_pickle():
    sp = sp_()
    events = []
    events += sp.initialize(0)
    events += sp.acquire(M1, [(0, 9)], 100, 0, 1000)[1]
    events += sp.acknowledge(M1, [(0, 4, [1, 2, 3, 0, 4]), (5, 9, [2])], 10, 1000)
    events += sp.expire_locks(5000)
    events += sp.update_log_start_offset(3)
    for ev in events:
        ne = new_event(ev)
        assert decode_event(ne.event_type, ne.schema_version, ne.data) == ev
    clone = pickle.loads(pickle.dumps(sp))
    assert clone == sp and clone.snapshot() == sp.clone().snapshot()
    assert replay(events, "g", TOPIC, 0) == sp


def test_clone_is_independent():
    sp = sp_()
    sp.acquire(M1, [(0, 9)], 100, 0, 1000)
    sp.acknowledge(M1, [(0, 1, [2])], 1)
    c = sp.clone()
    c.acknowledge(M1, [(2, 9, [1])], 2)
    assert sp.record_state(5)[0] == ACQ and c.record_state(5)[0] == ACK


def test_apply_rejects_foreign_events():
    sp = sp_()
    other = SharePartition("g", TOPIC, 1)
    ev = other.acquire(M1, [(0, 0)], 1, 0, 1)[1][0]
    with pytest.raises(ValueError):
        sp.apply(ev)
    from events.share import ShareStateDeleted

    with pytest.raises(TypeError):
        sp.apply(ShareStateDeleted("g", TOPIC, 0))


def test_release_member_kafka_42_decrements_the_delivery_count():
    # Kafka 4.2 releaseAcquiredRecords uses DeliveryCountOps.DECREASE: same history as scenario
    # #39 (limit 2), but the released records go back to AVAILABLE with one delivery fewer.
    sp = sp_(delivery_count_limit=2)
    log = []
    log += sp.acquire(M1, [(0, 9)], 100, 0, 1000)[1]
    log += sp.acquire(M1, [(10, 14)], 100, 0, 1000)[1]
    log += sp.acknowledge(M1, [(10, 14, [2])], 1)
    log += sp.acquire(M1, [(10, 14)], 100, 2, 1000)[1]
    events = sp.release_member(M1, decrement_delivery_count=True)
    assert events[0].delivery_count_decremented is True
    assert sp.record_state(0) == (A, 0, EMPTY_MEMBER_ID, None)
    assert sp.record_state(10) == (A, 1, EMPTY_MEMBER_ID, None)
    assert replay(log + events, "g", TOPIC, 0, delivery_count_limit=2) == sp


def test_snapshot_round_trips_through_json():
    import msgspec

    sp = sp_()
    sp.acquire(M1, [(0, 9)], 100, 0, 1000)
    sp.acquire(M2, [(10, 19)], 100, 5, 1000)
    sp.acknowledge(M1, [(0, 9, [1, 1, 2, 3, 0, 4, 1, 1, 1, 2])], 7, 1000)
    data = msgspec.json.encode(sp.snapshot())
    back = SharePartition.from_snapshot(msgspec.json.decode(data))
    assert back == sp
    # and it keeps working the same way
    assert back.decide_expire_locks(10_000) == sp.decide_expire_locks(10_000)
    with pytest.raises(ValueError):
        SharePartition.from_snapshot(("g", TOPIC, 0))


def test_acknowledging_a_batch_again_in_the_same_request_fails_even_outside_its_range():
    # Kafka sees the batch's in-request transition (no owner any more) when a later batch of the
    # same request starts in the hole right after it.
    sp = sp_()
    sp.acquire(M1, [(5, 9)], 100, 0, 1000)
    sp.acquire(M1, [(12, 14)], 100, 0, 1000)  # hole 10..11 (compaction)
    with pytest.raises(ShareError) as exc:
        sp.decide_acknowledge(M1, [(5, 9, [1]), (10, 14, [1])], 1)
    assert exc.value.error_name == INVALID_RECORD_STATE
    # separately they are fine (the hole inside the range is tolerated)
    assert len(sp.decide_acknowledge(M1, [(10, 14, [1])], 1)) == 1


def test_records_compacted_out_of_the_log_are_archived_at_the_next_fetch():
    # Kafka 4.2 maybeArchiveStaleBatches: a released batch whose log batch was compacted away is
    # archived when the fetch from the next fetch offset returns a later first batch.
    sp = sp_()
    sp.acquire(M1, [(0, 4), (5, 9)], 100, 0, 1000)
    sp.acknowledge(M1, [(0, 9, [2])], 1)  # all released; next fetch offset 0
    assert sp.next_fetch_offset() == 0
    events, acquired = sp.decide_acquire(M2, [(5, 9), (10, 14)], 100, 2, 1000)
    assert events[0].stale_ranges == ((0, 4),)
    assert acquired == [AcquiredRecords(5, 9, 2), AcquiredRecords(10, 14, 1)]
    for ev in events:
        sp.apply(ev)
    assert [sp.record_state(o)[0] for o in (0, 4, 5, 10)] == [ARCH, ARCH, ACQ, ACQ]
    # through a ShareFetch too
    sp2 = sp_()
    first = sp2.acquire(M1, [(0, 4), (5, 9)], 100, 0, 1000)[1]
    d = sp2.share_fetch(M1, [(0, 9, [2])], lambda off: [(5, 9)], 100, 1, 1000)
    assert d.events[0].stale_ranges == ((0, 4),) and d.acquired == [AcquiredRecords(5, 9, 2)]
    assert sp2.record_state(0)[0] == ARCH
    assert replay(first + d.events, "g", TOPIC, 0) == sp2


def test_batch_size_splits_new_records_at_log_batch_boundaries():
    # Kafka 4.2 createBatches: a new in-flight batch every time a log batch starts ≥ batch_size
    # records after the current one's first offset.
    sp = sp_(max_in_flight_records=1000)
    fetched = [(0, 29), (30, 59), (60, 99), (100, 119), (120, 199)]
    events, acquired = sp.decide_acquire(M1, fetched, 500, 0, 1000, batch_size=50)
    assert acquired == [AcquiredRecords(0, 59, 1), AcquiredRecords(60, 119, 1), AcquiredRecords(120, 199, 1)]
    assert events[0].ranges == ((0, 59), (60, 119), (120, 199))
    for ev in events:
        sp.apply(ev)
    assert [(b.first_offset, b.last_offset) for b in sp.cached_batches()] == [(0, 59), (60, 119), (120, 199)]
    assert (sp.start_offset, sp.end_offset) == (0, 199)
    # acknowledging one in-flight batch whole needs no per-offset state
    sp.acknowledge(M1, [(60, 119, [1])], 1)
    assert all(b.offset_state is None for b in sp.cached_batches())
    assert [b.last_offset for b in replay(events, "g", TOPIC, 0, max_in_flight_records=1000).cached_batches()] == [59, 119, 199]


def test_saturated_acquire_uses_the_callers_fetch_offset():
    # Kafka 4.2 ``acquire(…, fetchOffset, …)``: at the in-flight limit the window and the stale-batch
    # check both use the offset the log was read from, not a recomputed next fetch offset. Reading
    # from 7 says nothing about offset 5 (released, still in the log): it must stay AVAILABLE.
    sp = sp_(max_in_flight_records=100)
    sp.acquire(M1, [(o, o) for o in range(100)], 100, 0, 1000)
    sp.acknowledge(M1, [(5, 5, [2])], 1)
    assert sp.next_fetch_offset() == 5 and not sp.decide_acquire(M1, [(200, 200)], 10, 2, 1000)[1]
    events, acquired = sp.decide_acquire(M1, [(7, 7), (8, 8)], 10, 2, 1000, fetch_offset=7)
    assert (events, acquired) == ([], [])
    assert sp.record_state(5)[0] == A
    # read from the next fetch offset, the released record is re-delivered (and only up to the end)
    events, acquired = sp.decide_acquire(M1, [(5, 5), (6, 6)], 10, 2, 1000, fetch_offset=5)
    assert acquired == [AcquiredRecords(5, 5, 2)] and events[0].stale_ranges == ()


def _coalesced(first: int, types: list[int]) -> list[tuple[int, int, tuple[int]]]:
    """Per-offset types as confluent-kafka sends them: one batch per run of equal types."""
    out: list[tuple[int, int, tuple[int]]] = []
    for i, t in enumerate(types):
        if out and out[-1][2] == (t,):
            out[-1] = (out[-1][0], first + i, (t,))
        else:
            out.append((first + i, first + i, (t,)))
    return out


def test_mixed_acknowledgement_keeps_runs_not_offsets_and_the_cache_empties_after_redelivery():
    # 500 records, every 10th RELEASEd: the batch splits into runs (one per type change), the 50
    # released records are redelivered in one fetch with delivery count 2, and once they are
    # ACCEPTed the start offset moves past the batch and the cache is empty again.
    sp = sp_(max_in_flight_records=1000)
    sp.acquire(M1, [(i, i + 99) for i in range(0, 500, 100)], 500, 0, 30000)
    types = [2 if o % 10 == 9 else 1 for o in range(500)]
    sp.acknowledge(M1, _coalesced(0, types), 1)
    (b,) = sp.cached_batches()
    assert len(b.runs) == 100  # 50 ACCEPT runs and 50 RELEASE runs, not 500 offsets
    assert sp.record_state(8) == (ACK, 1, EMPTY_MEMBER_ID, None) and sp.record_state(9) == (A, 1, EMPTY_MEMBER_ID, None)
    assert sp.start_offset == 9 and sp.next_fetch_offset() == 9
    d = sp.share_fetch(M2, [], lambda o: [(i, i + 99) for i in range(o - o % 100, 500, 100)], 500, 2, 30000)
    assert d.acquired == [AcquiredRecords(o, o, 2) for o in range(9, 500, 10)]
    assert d.events[0].ranges == tuple((o, o) for o in range(9, 500, 10))
    sp.acknowledge(M2, [(o, o, (1,)) for o in range(9, 500, 10)], 3)
    assert sp.cached_batches() == [] and (sp.start_offset, sp.end_offset) == (500, 500)


def test_runs_merge_back_when_neighbours_reach_the_same_state():
    sp = sp_()
    sp.acquire(M1, [(0, 9)], 10, 0, 30000)
    sp.acknowledge(M1, [(0, 4, (4,))], 5, 30000)  # RENEW half: two runs with different deadlines
    assert [(r.first, r.last, r.deadline_ms) for r in sp.cached_batches()[0].runs] == [(0, 4, 30005), (5, 9, 30000)]
    sp.acknowledge(M1, [(5, 9, (4,))], 5, 30000)  # same deadline again: one run
    assert [(r.first, r.last, r.deadline_ms) for r in sp.cached_batches()[0].runs] == [(0, 9, 30005)]
    assert sp.cached_batches()[0].offset_state is not None  # still exploded (one-way, as in Kafka)
    events = sp.acknowledge(M1, [(0, 9, (1,))], 6)
    assert sp.cached_batches() == [] and sp.start_offset == 10 and events[0].evicted_below == 10


def test_apply_takes_the_decided_state_only_for_that_event_on_that_state():
    # ``apply`` of the event just decided reuses the decider's state; any other event, or the same
    # event after another apply, is applied from scratch; either way live == replay.
    base = sp_()
    base.acquire(M1, [(0, 9)], 10, 0, 30000)
    base.acquire(M2, [(10, 19)], 10, 0, 30000)
    applied = []
    sp = SharePartition.from_snapshot(base.snapshot())
    (ack1,) = sp.decide_acknowledge(M1, [(0, 4, (1,)), (5, 5, (2,))], 1)
    (ack2,) = sp.decide_acknowledge(M2, [(10, 19, (1,))], 1)  # decided on the same state: replaces ack1's
    sp.apply(ack1)
    applied.append(ack1)
    assert sp.record_state(5)[0] == A and sp.record_state(10)[0] == ACQ
    sp.apply(ack2)  # ack2 was decided before ack1 was applied: applied from scratch
    applied.append(ack2)
    assert sp.record_state(10)[0] == ACK
    (exp,) = sp.decide_expire_locks(40000)
    sp.apply(exp)
    applied.append(exp)
    rebuilt = SharePartition.from_snapshot(base.snapshot())
    for ev in applied:
        rebuilt.apply(ev)
    assert rebuilt.snapshot() == sp.snapshot()
    assert sp.record_state(6) == (A, 1, EMPTY_MEMBER_ID, None) and sp.start_offset == 5
