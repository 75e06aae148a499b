"""The follower's partition log: ``append_as_follower`` keeps the leader's offsets and epochs
(Kafka ``UnifiedLog.appendAsFollower``, ``LeaderEpochFileCache.assign``) and truncation by
leader epoch, including KIP-101's divergent-log scenario (reference kafka-replication.md §7.2,
#63) driven through the fetcher's truncation rule."""

from __future__ import annotations

import pytest

from store.log.errors import OffsetOutOfRangeError
from store import record_batch as rb
from store.log.epoch_cache import EpochEntry
from store.log.log import PartitionLog
from wire.replica_fetcher import FetcherConfig, ReplicaFetcherThread


def _batch(n: int, base: int = 0, epoch: int = 0, **kw) -> bytes:
    return rb.build_batch([(None, f"v{base + i}".encode()) for i in range(n)], base_offset=base, partition_leader_epoch=epoch, **kw)


@pytest.fixture
def logs(tmp_path):
    opened = []

    def make(name: str) -> PartitionLog:
        lg = PartitionLog.open(tmp_path / name, "t", 0)
        opened.append(lg)
        return lg

    yield make
    for lg in opened:
        lg.close()


def test_follower_append_keeps_the_leaders_offsets_and_epochs(logs):
    leader, follower = logs("leader"), logs("follower")
    leader.append_as_leader(_batch(3), 0, 1)
    leader.append_as_leader(_batch(2), 4, 2)  # a later leader epoch
    leader.update_high_watermark(leader.log_end_offset)
    data = leader.read(0, 1 << 20, max_offset=leader.log_end_offset).records
    info = follower.append_as_follower(data, 10)
    assert (info.first_offset, info.last_offset, info.record_count, info.batch_count) == (0, 4, 5, 2)
    assert follower.log_end_offset == 5
    assert follower.leader_epoch_cache.entries() == [EpochEntry(0, 0), EpochEntry(4, 3)]
    assert follower.high_watermark == 0  # the fetcher sets min(leader HW, LEO)
    follower.update_high_watermark(5)
    assert follower.read(0, 1 << 20).records == data  # byte-identical replica


def test_follower_append_must_start_at_the_log_end(logs):
    follower = logs("f")
    follower.append_as_follower(_batch(2, base=0, epoch=1), 1)
    with pytest.raises(OffsetOutOfRangeError):
        follower.append_as_follower(_batch(2, base=5, epoch=1), 1)  # a gap
    with pytest.raises(OffsetOutOfRangeError):
        follower.append_as_follower(_batch(1, base=1, epoch=1), 1)  # an overlap
    assert follower.log_end_offset == 2


def test_follower_append_refuses_a_corrupt_batch(logs):
    follower = logs("f")
    bad = bytearray(_batch(2))
    bad[-1] ^= 0xFF
    with pytest.raises(rb.CorruptRecordError):
        follower.append_as_follower(bytes(bad), 1)
    assert follower.log_end_offset == 0


def test_follower_append_records_producer_state(logs):
    follower = logs("f")
    follower.append_as_follower(_batch(2, producer_id=7, producer_epoch=0, base_sequence=0), 1)
    # the same producer's next batch is accepted in sequence once this replica leads
    follower.append_as_leader(_batch(1, producer_id=7, producer_epoch=0, base_sequence=2), 1, 2)
    with pytest.raises(Exception):  # a gap in the sequence is refused
        follower.append_as_leader(_batch(1, producer_id=7, producer_epoch=0, base_sequence=9), 1, 3)


def test_truncate_to_clamps_the_epoch_cache_and_then_appends_again(logs):
    follower = logs("f")
    follower.append_as_follower(_batch(2, base=0, epoch=1), 1)
    follower.append_as_follower(_batch(2, base=2, epoch=3), 1)
    follower.truncate_to(2)
    assert follower.log_end_offset == 2
    assert follower.leader_epoch_cache.entries() == [EpochEntry(1, 0)]
    follower.append_as_follower(_batch(1, base=2, epoch=2), 1)
    assert follower.leader_epoch_cache.entries() == [EpochEntry(1, 0), EpochEntry(2, 2)]


def test_truncate_fully_and_start_at(logs):
    follower = logs("f")
    follower.append_as_follower(_batch(3, epoch=1), 1)
    follower.truncate_fully_and_start_at(100, 5)
    assert (follower.log_start_offset, follower.log_end_offset, follower.high_watermark) == (100, 100, 100)
    assert follower.leader_epoch_cache.entries() == []
    follower.append_as_follower(_batch(1, base=100, epoch=2), 6)
    assert follower.log_end_offset == 101


def _kip101_logs(logs):
    """#63: follower {0@0, 2@1, 4@2} (LEO 3); leader {1@0, 3@1, 5@2} (LEO 3)."""
    follower, leader = logs("f"), logs("l")
    for i, (fe, le) in enumerate([(0, 1), (2, 3), (4, 5)]):
        follower.append_as_follower(_batch(1, base=i, epoch=fe), 1)
        leader.append_as_follower(_batch(1, base=i, epoch=le), 1)
    return follower, leader


def test_kip101_divergent_log_truncates_to_zero_by_epoch_rounds(logs):
    """The #63 trace: ask 4 → (3, 2) cut to 2; ask 2 → (1, 1) cut to 1; ask 0 → (0, 0) cut to 0."""
    follower, leader = _kip101_logs(logs)
    t = ReplicaFetcherThread(2, 1, lambda: None, lambda _t, _p: follower, FetcherConfig())
    asked = []
    while True:
        epoch = follower.leader_epoch_cache.latest_epoch()
        if epoch is None:
            break
        asked.append(epoch)
        e, end = leader.leader_epoch_cache.end_offset_for(epoch, leader.log_end_offset)
        if t._apply_epoch_end_offset(("t", 0), epoch, e, end):  # noqa: SLF001 - the rule under test
            break
    assert asked == [4, 2, 0]
    assert follower.log_end_offset == 0
    # then it fetches everything from 0 and is identical to the leader
    leader.update_high_watermark(3)
    follower.append_as_follower(leader.read(0, 1 << 20, max_offset=3).records, 2)
    assert follower.leader_epoch_cache.entries() == leader.leader_epoch_cache.entries()


def test_truncation_keeps_a_common_prefix(logs):
    """Follower written in epochs 1 (0-1) and 2 (2-3); the leader took over at epoch 3 from
    offset 3: ask 2 → (2, 3): only offset 3 goes."""
    follower, leader = logs("f"), logs("l")
    for lg in (follower, leader):
        lg.append_as_follower(_batch(2, base=0, epoch=1), 1)
        lg.append_as_follower(_batch(1, base=2, epoch=2), 1)
    follower.append_as_follower(_batch(1, base=3, epoch=2), 1)
    leader.append_as_follower(_batch(2, base=3, epoch=3), 1)
    t = ReplicaFetcherThread(2, 1, lambda: None, lambda _t, _p: follower, FetcherConfig())
    e, end = leader.leader_epoch_cache.end_offset_for(2, leader.log_end_offset)
    assert (e, end) == (2, 3)
    assert t._apply_epoch_end_offset(("t", 0), 2, e, end)  # noqa: SLF001
    assert follower.log_end_offset == 3
