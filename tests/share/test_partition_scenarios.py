"""The odd-numbered SharePartitionTest scenarios of the reference's §6 (#1–#59), as unit tests of
the pure model, each named after the Kafka test method it comes from
(``core/src/test/java/kafka/server/share/SharePartitionTest.java``).

Defaults as Kafka's ``SharePartitionBuilder``: delivery-count limit 5, max in-flight 200, lock
30000 ms (100 ms in timeout tests), group ``test-group``, members ``member-1`` / ``member-2``,
partition not initialised (start = end = 0). Every scenario also checks that replaying the events
it produced rebuilds the same state (``replay(events) == live``).
"""

from __future__ import annotations

import pytest

from actors.share.errors import INVALID_RECORD_STATE, INVALID_REQUEST, ShareError, persister_error_to_share_error
from actors.share.partition import (
    EMPTY_MEMBER_ID,
    RecordState,
    SharePartition,
    replay,
    validate_transition,
)

A, ACQ, ACK, ARCH = RecordState.AVAILABLE, RecordState.ACQUIRED, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
M1, M2 = "member-1", "member-2"
TOPIC = "5f2b8c1e-0000-4000-8000-000000000001"


class Harness:
    """A SharePartition plus the log of every event it applied (for the replay check)."""

    def __init__(self, mdc: int = 5, max_in_flight: int = 200, lock_ms: int = 30000) -> None:
        self.sp = SharePartition("test-group", TOPIC, 0, delivery_count_limit=mdc, max_in_flight_records=max_in_flight)
        self.mdc, self.max_in_flight, self.lock_ms = mdc, max_in_flight, lock_ms
        self.now = 1_000
        self.events: list = []

    def acq(self, member: str, *log_batches: tuple[int, int], max_records: int = 1 << 31) -> list[tuple[int, int, int]]:
        acquired, evs = self.sp.acquire(member, list(log_batches), max_records, self.now, self.lock_ms)
        self.events += evs
        return [(a.first_offset, a.last_offset, a.delivery_count) for a in acquired]

    def ack(self, member: str, *batches) -> None:
        norm = [(f, l, t if isinstance(t, (list, tuple)) else [t]) for f, l, t in batches]
        self.events += self.sp.acknowledge(member, norm, self.now, self.lock_ms)

    def rel(self, member: str) -> None:
        self.events += self.sp.release_member(member)

    def lso(self, offset: int) -> None:
        self.events += self.sp.update_log_start_offset(offset)

    def timeout(self) -> None:
        """Advance the clock past every lock and fire the expiry."""
        self.now += self.lock_ms
        self.events += self.sp.expire_locks(self.now)

    def state(self, offset: int):
        st = self.sp.record_state(offset)
        assert st is not None, f"offset {offset} not cached"
        return st

    def assert_replays(self) -> None:
        rebuilt = replay(self.events, "test-group", TOPIC, 0, delivery_count_limit=self.mdc, max_in_flight_records=self.max_in_flight)
        assert rebuilt.snapshot() == self.sp.snapshot()

    @property
    def nfo(self) -> int:
        return self.sp.next_fetch_offset()

    @property
    def keys(self) -> list[int]:
        return [b.first_offset for b in self.sp.cached_batches()]


def test_testRecordStateValidateTransition():
    for old in RecordState:
        for new in RecordState:
            allowed = (old, new) in {(A, ACQ), (ACQ, A), (ACQ, ACK), (ACQ, ARCH)}
            if allowed:
                assert validate_transition(old, new) == new
            else:
                with pytest.raises(ValueError):
                    validate_transition(old, new)


def test_testMaybeInitializeWithEmptyStateBatches():
    h = Harness()
    h.events += h.sp.initialize(10, state_epoch=5, state_batches=[])
    assert (h.sp.start_offset, h.sp.end_offset, h.nfo, h.sp.state_epoch) == (10, 10, 10, 5)
    assert h.sp.cached_batches() == []
    h.assert_replays()


def test_testMaybeInitializeWithErrorPartitionResponse():
    # The read's error maps through SharePartition.fetchPersisterError; the partition does not
    # initialise (no event is decided from an error answer).
    expected = {
        "NOT_COORDINATOR": "COORDINATOR_NOT_AVAILABLE",
        "COORDINATOR_NOT_AVAILABLE": "COORDINATOR_NOT_AVAILABLE",
        "COORDINATOR_LOAD_IN_PROGRESS": "COORDINATOR_NOT_AVAILABLE",
        "GROUP_ID_NOT_FOUND": "GROUP_ID_NOT_FOUND",
        "UNKNOWN_TOPIC_OR_PARTITION": "UNKNOWN_TOPIC_OR_PARTITION",
        # Kafka 4.2 (SharePartitionTest asserts NotLeaderOrFollowerException); 4.0 had FencedStateEpochException
        "FENCED_STATE_EPOCH": "NOT_LEADER_OR_FOLLOWER",
        "FENCED_LEADER_EPOCH": "NOT_LEADER_OR_FOLLOWER",
        "INVALID_REQUEST": "UNKNOWN_SERVER_ERROR",
        "UNKNOWN_SERVER_ERROR": "UNKNOWN_SERVER_ERROR",
    }
    for read_error, surfaced in expected.items():
        err = persister_error_to_share_error(read_error, "read failed")
        assert err.error_name == surfaced
    # A persisted batch below the start offset fails initialisation (Kafka: FAILED, IllegalStateException).
    h = Harness()
    with pytest.raises(ShareError) as exc:
        h.sp.decide_initialize(10, 1, [(5, 9, 0, 1)])
    assert exc.value.error_name == INVALID_REQUEST
    assert (h.sp.start_offset, h.sp.end_offset) == (0, 0)


def test_testMaybeInitializeWithNoOpShareStatePersister():
    h = Harness()
    h.events += h.sp.initialize(0, 0, [])
    assert (h.sp.start_offset, h.sp.end_offset, h.nfo, h.sp.state_epoch) == (0, 0, 0, 0)
    h.assert_replays()


def test_testAcquireWithMaxFetchRecords():
    h = Harness()
    assert h.acq(M1, (0, 4), max_records=10) == [(0, 4, 1)]
    # one log batch 5..24: the soft limit ends at the end of the log batch holding offset 14
    assert h.acq(M1, (5, 24), max_records=10) == [(5, 24, 1)]
    assert h.nfo == 25
    assert h.keys == [0, 5]
    h.assert_replays()


def test_testAcquireMultipleRecordsWithOverlapAndNewBatch():
    h = Harness()
    assert h.acq(M1, (0, 4)) == [(0, 4, 1)]
    assert h.acq(M1, (0, 9)) == [(5, 9, 1)]
    assert h.nfo == 10
    assert h.keys == [0, 5]
    h.assert_replays()


def test_testAcknowledgeSingleRecordBatch():
    h = Harness()
    h.acq(M1, (0, 0))
    h.acq(M1, (1, 1))
    h.ack(M1, (1, 1, ACCEPT))
    assert h.nfo == 2
    assert len(h.keys) == 2
    assert h.state(1) == (ACK, 1, EMPTY_MEMBER_ID, None)
    assert h.sp.start_offset == 0
    h.assert_replays()


def test_testAcknowledgeMultipleRecordBatchWithGapOffsets():
    h = Harness()
    h.acq(M1, (5, 6))
    # log batch 10..18 with records at 10-14 and 18 only: all 9 offsets are acquired
    assert h.acq(M1, (10, 18)) == [(10, 18, 1)]
    h.ack(M1, (5, 6, RELEASE), (10, 18, [RELEASE] * 5 + [GAP] * 3 + [ACCEPT]))
    assert h.nfo == 5
    assert h.state(5) == (A, 1, EMPTY_MEMBER_ID, None)
    for o in range(10, 15):
        assert h.state(o)[:2] == (A, 1)
    for o in range(15, 18):
        assert h.state(o)[:2] == (ARCH, 1)
    assert h.state(18)[:2] == (ACK, 1)
    h.assert_replays()


def test_testAcknowledgeOutOfRangeCachedData():
    h = Harness()
    with pytest.raises(ShareError) as exc:
        h.ack(M1, (0, 15, REJECT))
    assert exc.value.error_name == INVALID_RECORD_STATE
    h.acq(M1, (5, 9))
    with pytest.raises(ShareError) as exc:
        h.ack(M1, (20, 25, REJECT))
    assert exc.value.error_name == INVALID_REQUEST
    assert [type(e).__name__ for e in h.events] == ["RecordsAcquired"]  # no event for the failures
    h.assert_replays()


def test_testAcknowledgeWithAnotherMember():
    h = Harness()
    h.acq(M1, (5, 9))
    with pytest.raises(ShareError) as exc:
        h.ack(M2, (5, 9, REJECT))
    assert exc.value.error_name == INVALID_RECORD_STATE
    assert h.state(5)[:3] == (ACQ, 1, M1)


def test_testAcknowledgeRollbackWithFullBatchError():
    h = Harness()
    h.acq(M1, (5, 9))
    h.acq(M1, (10, 14))
    h.acq(M1, (15, 19))
    before = h.sp.snapshot()
    with pytest.raises(ShareError) as exc:
        h.ack(M1, (5, 9, RELEASE), (10, 14, ACCEPT), (15, 19, ACCEPT), (15, 19, ACCEPT))
    assert exc.value.error_name == INVALID_RECORD_STATE
    assert h.sp.snapshot() == before
    for o in (5, 10, 15):
        assert h.state(o)[:3] == (ACQ, 1, M1)
    h.assert_replays()


def test_testAcknowledgeWithAnotherMemberRollbackBatchError():
    h = Harness()
    h.acq(M1, (5, 9))
    h.acq(M2, (10, 14))
    h.acq(M1, (15, 19))
    before = h.sp.snapshot()
    with pytest.raises(ShareError) as exc:
        h.ack(M1, (5, 9, RELEASE), (10, 14, ACCEPT), (15, 19, ACCEPT))
    assert exc.value.error_name == INVALID_RECORD_STATE
    assert h.sp.snapshot() == before
    assert h.state(5)[:3] == (ACQ, 1, M1)
    assert h.state(10)[:3] == (ACQ, 1, M2)
    assert h.state(15)[:3] == (ACQ, 1, M1)


def test_testAcquireReleasedRecord():
    h = Harness()
    h.acq(M1, (10, 14))
    h.ack(M1, (12, 13, RELEASE))
    assert h.nfo == 12
    for o in (10, 11, 14):
        assert h.state(o)[:3] == (ACQ, 1, M1)
    for o in (12, 13):
        assert h.state(o)[:3] == (A, 1, EMPTY_MEMBER_ID)
    # Kafka answers one AcquiredRecords per offset of an exploded batch; contiguous offsets with
    # equal delivery counts are one range here.
    assert h.acq(M1, (10, 14)) == [(12, 13, 2)]
    assert h.nfo == 15
    for o in (12, 13):
        assert h.state(o)[:3] == (ACQ, 2, M1)
    h.assert_replays()


def test_testAcquisitionLockForAcquiringSingleRecord():
    h = Harness(lock_ms=100)
    h.acq(M1, (0, 0))
    assert h.sp.next_lock_deadline_ms() == h.now + 100
    h.timeout()
    assert h.state(0) == (A, 1, EMPTY_MEMBER_ID, None)
    assert h.sp.next_lock_deadline_ms() is None
    assert h.nfo == 0
    h.assert_replays()


def test_testAcquisitionLockTimeoutCauseSPSOMoveForward():
    h = Harness(mdc=2, lock_ms=100)
    h.acq(M1, (0, 9))
    h.timeout()
    assert h.acq(M1, (0, 4)) == [(0, 4, 2)]
    h.timeout()
    for o in range(0, 5):
        assert h.state(o)[:2] == (ARCH, 2)
    for o in range(5, 10):
        assert h.state(o)[:2] == (A, 1)
    assert h.sp.start_offset == 5
    assert h.nfo == 5
    assert h.keys == [0]
    h.assert_replays()


def test_testAcknowledgeAfterAcquisitionLockTimeout():
    h = Harness(lock_ms=100)
    h.acq(M1, (5, 9))
    h.timeout()
    for t in (ACCEPT, REJECT):
        with pytest.raises(ShareError) as exc:
            h.ack(M1, (5, 9, t))
        assert exc.value.error_name == INVALID_RECORD_STATE
    assert h.state(5)[:2] == (A, 1)


def test_testReleaseAcquiredRecordsWithAnotherMember():
    h = Harness()
    h.acq(M2, (5, 5))
    h.acq(M1, (10, 20))
    h.ack(M1, (10, 18, [ACCEPT, ACCEPT, GAP, GAP, ACCEPT, GAP, ACCEPT, GAP, ACCEPT]))
    h.rel(M1)
    assert h.state(19)[:3] == (A, 1, EMPTY_MEMBER_ID)
    assert h.state(20)[:3] == (A, 1, EMPTY_MEMBER_ID)
    assert h.state(5)[:3] == (ACQ, 1, M2)
    assert h.nfo == 19
    h.rel(M2)
    assert h.state(5)[:3] == (A, 1, EMPTY_MEMBER_ID)
    assert h.nfo == 5
    h.assert_replays()


def test_testMaxDeliveryCountLimitExceededForRecordsSubsetAfterReleaseAcquiredRecords():
    h = Harness(mdc=2)
    h.acq(M1, (0, 9))
    h.acq(M1, (10, 14))
    h.ack(M1, (10, 14, RELEASE))
    assert h.acq(M1, (10, 14)) == [(10, 14, 2)]
    h.rel(M1)
    assert h.state(0)[:3] == (A, 1, EMPTY_MEMBER_ID)
    assert h.state(10)[:3] == (ARCH, 2, EMPTY_MEMBER_ID)
    assert h.nfo == 0
    assert len(h.keys) == 2
    h.assert_replays()


def test_testMaxDeliveryCountLimitExceededForRecordsSubsetAndCachedStateNotCleared():
    h = Harness(mdc=2)
    h.acq(M1, (0, 4))
    h.ack(M1, (0, 1, RELEASE))
    assert h.acq(M1, (0, 1)) == [(0, 1, 2)]
    h.ack(M1, (0, 4, RELEASE))
    for o in (0, 1):
        assert h.state(o)[:2] == (ARCH, 2)
    for o in (2, 3, 4):
        assert h.state(o)[:3] == (A, 1, EMPTY_MEMBER_ID)
    assert h.nfo == 2
    assert len(h.keys) == 1
    assert h.sp.start_offset == 2  # from maybeUpdateCachedStateAndOffsets; the partially terminal batch stays
    h.assert_replays()


def test_testLsoMovementForArchivingBatches():
    h = Harness()
    for f in (2, 7, 12, 17, 22, 27, 32):
        h.acq(M1, (f, f + 4))
    h.ack(M1, (2, 6, ACCEPT), (12, 16, RELEASE), (22, 26, RELEASE), (27, 31, REJECT))
    assert h.sp.start_offset == 7
    assert h.keys[0] == 7
    h.lso(20)
    assert h.nfo == 22
    assert (h.sp.start_offset, h.sp.end_offset) == (20, 36)
    assert len(h.keys) == 6
    assert h.state(7)[0] == ACQ and h.state(7)[3] is not None
    assert h.state(12)[0] == ARCH
    assert h.state(17)[0] == ACQ and h.state(17)[3] is not None
    assert h.state(22)[0] == A
    assert h.state(27)[0] == ARCH
    assert h.state(32)[0] == ACQ
    h.assert_replays()


def test_testLsoMovementAheadOfEndOffset():
    h = Harness()
    h.acq(M1, (2, 6))
    h.acq(M1, (7, 11))
    h.lso(14)
    assert (h.sp.start_offset, h.sp.end_offset, h.nfo) == (14, 14, 14)
    assert h.keys == [2, 7]
    assert h.state(2)[0] == ACQ and h.state(7)[0] == ACQ
    h.assert_replays()


def test_testLsoMovementPostGapsInAcknowledgments():
    h = Harness()
    h.acq(M1, (5, 6))
    h.acq(M1, (10, 18))
    h.ack(M1, (5, 6, RELEASE), (10, 18, [RELEASE] * 5 + [GAP] * 3 + [RELEASE]))
    h.lso(18)
    assert (h.sp.start_offset, h.sp.end_offset, h.nfo) == (18, 18, 18)
    assert h.state(5)[0] == ARCH
    for o in range(10, 18):
        assert h.state(o)[0] == ARCH
    assert h.state(18)[0] == A
    h.assert_replays()


def test_testAcquisitionLockTimeoutForBatchesPostStartOffsetMovementToStartOfBatch():
    h = Harness(lock_ms=100)
    h.acq(M1, (5, 9))
    h.acq(M1, (10, 14))
    h.lso(10)
    h.timeout()
    assert h.state(5)[:3] == (ARCH, 1, EMPTY_MEMBER_ID)
    assert h.state(10)[:3] == (A, 1, EMPTY_MEMBER_ID)
    h.assert_replays()


def test_testAcknowledgeBatchAndOffsetPostLsoMovement():
    h = Harness()
    h.acq(M1, (2, 6))
    h.acq(M1, (10, 14))
    h.lso(12)
    h.ack(M1, (2, 6, RELEASE), (10, 14, RELEASE))
    assert h.state(2)[0] == ACQ and h.state(2)[3] is not None
    for o in (10, 11):
        assert h.state(o)[0] == ACQ and h.state(o)[3] is not None
    for o in (12, 13, 14):
        assert h.state(o)[:3] == (A, 1, EMPTY_MEMBER_ID)
    assert h.nfo == 12
    h.assert_replays()


def test_testMaybeUpdateCachedStateWhenAcknowledgementsFromBeginningForBatchSubset():
    h = Harness(max_in_flight=20)
    h.acq(M1, (0, 14))
    assert h.sp.can_acquire_records()
    h.acq(M1, (15, 29))
    assert not h.sp.can_acquire_records()
    h.ack(M1, (0, 12, ACCEPT))
    assert h.state(12)[0] == ACK
    assert h.state(13)[0] == ACQ
    assert (h.sp.start_offset, h.sp.end_offset, h.nfo) == (13, 29, 30)
    assert h.sp.can_acquire_records()
    h.assert_replays()


def test_testMaybeUpdateCachedStateMultipleAcquisitionsAndAcknowledgements():
    h = Harness(max_in_flight=100)
    h.acq(M1, (0, 19))
    h.acq(M1, (20, 39))
    h.acq(M1, (40, 59))
    h.ack(M1, (0, 19, ACCEPT))
    assert (h.sp.start_offset, h.sp.end_offset, h.nfo) == (20, 59, 60)
    h.acq(M1, (60, 79))
    h.ack(M1, (20, 49, ACCEPT))
    assert (h.sp.start_offset, h.sp.end_offset, h.nfo) == (50, 79, 80)
    assert h.acq(M1, (80, 179)) == [(80, 179, 1)]
    assert not h.sp.can_acquire_records()
    h.ack(M1, (50, 179, REJECT))
    assert h.sp.cached_batches() == []
    assert (h.sp.start_offset, h.sp.end_offset, h.nfo) == (180, 180, 180)
    h.acq(M1, (180, 199))
    assert (h.sp.start_offset, h.sp.end_offset, h.nfo) == (180, 199, 200)
    h.assert_replays()


@pytest.mark.parametrize("ack_type, start", [(RELEASE, 0), (ACCEPT, 90), (REJECT, 90)])
def test_testCanAcquireRecordsAfterReleaseAcknowledgement(ack_type, start):
    h = Harness()
    h.acq(M1, (0, 149))
    h.acq(M1, (150, 249))
    assert not h.sp.can_acquire_records()
    h.ack(M1, (0, 89, ack_type))
    assert (h.sp.start_offset, h.sp.end_offset) == (start, 249)
    if ack_type == RELEASE:
        assert h.nfo == 0  # re-delivery inside the cache: NFO != end + 1
    else:
        assert h.nfo == 250  # 160 in flight < 200
    assert h.sp.can_acquire_records()
    h.assert_replays()


def test_testReacquireSubsetWithAnotherMember():
    h = Harness()
    h.acq(M1, (5, 9))
    h.acq(M1, (10, 21))
    h.ack(M1, (5, 11, RELEASE), (12, 13, GAP), (14, 15, RELEASE), (17, 20, RELEASE))
    h.acq(M2, (5, 9))
    assert h.nfo == 10
    h.acq(M2, (10, 16))
    assert h.nfo == 17
    assert h.state(5)[:3] == (ACQ, 2, M2)
    for o in (10, 11, 14, 15):
        assert h.state(o)[:3] == (ACQ, 2, M2)
    for o in (12, 13):
        assert h.state(o)[:3] == (ARCH, 1, EMPTY_MEMBER_ID)
    assert h.state(16)[:3] == (ACQ, 1, M1)
    for o in range(17, 21):
        assert h.state(o)[:3] == (A, 1, EMPTY_MEMBER_ID)
    assert h.state(21)[:3] == (ACQ, 1, M1)
    h.assert_replays()


def test_testAcquisitionLockOnBatchWithWriteShareGroupStateFailure():
    # Kafka: the timeout's transition stands even when the persister write fails. In Shoal the event
    # log is the persister and nothing is applied before it is durable, so a failed append of the
    # expiry must be retryable: deciding again gives the same event, and applying it makes the
    # records AVAILABLE (the actor retries on its next wakeup).
    h = Harness(lock_ms=100)
    h.acq(M1, (5, 14))
    h.now += 100
    first = h.sp.decide_expire_locks(h.now)
    assert h.state(5)[:3] == (ACQ, 1, M1)  # the append "failed": nothing applied
    retry = h.sp.decide_expire_locks(h.now)
    assert retry == first and len(retry) == 1
    for ev in retry:
        h.sp.apply(ev)
    h.events += retry
    assert h.state(5) == (A, 1, EMPTY_MEMBER_ID, None)
    h.assert_replays()


def test_testReleaseBatchWithWriteShareGroupStateFailure():
    # Kafka: a release whose write fails is rolled back (INVALID_REQUEST) and 5 stays ACQUIRED by
    # member-1. In Shoal a release whose append fails is never applied: the decision leaves the
    # state untouched until its event is durable.
    h = Harness()
    h.acq(M1, (5, 14))
    before = h.sp.snapshot()
    events = h.sp.decide_release_member(M1)
    assert len(events) == 1 and events[0].ranges == ((5, 14),)
    assert h.sp.snapshot() == before
    assert h.state(5)[:3] == (ACQ, 1, M1)
