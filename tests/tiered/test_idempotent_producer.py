"""Idempotent producers on a partition log (KIP-98): duplicates answered with the original offsets,
fenced epochs, sequence gaps, state rebuilt from the log after a restart. Kafka's
``ProducerStateManagerTest`` / ``UnifiedLogTest.testDuplicateAppends`` / ``testOldProducerEpoch``
in spirit."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store import record_batch as rb
from store.log.config import LogConfig
from store.log.log import PartitionLog
from store.producer_state import (
    BATCHES_TO_RETAIN,
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
    ProducerStateManager,
    last_sequence,
)

NOW = 1_700_000_000_000


def pbatch(pid: int, epoch: int, seq: int, n: int = 1, value: bytes = b"v") -> bytes:
    return rb.build_batch([(None, value + bytes([i % 256])) for i in range(n)], base_timestamp=NOW, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def open_log(tmp_path, **props) -> PartitionLog:
    cfg = LogConfig.from_properties({k.replace("_", "."): str(v) for k, v in props.items()})
    return PartitionLog.open(tmp_path / "logs", "topic", 0, cfg)


def values(lg: PartitionLog) -> list[bytes]:
    lg.update_high_watermark(lg.log_end_offset)
    data = lg.read(0, 1 << 24).records
    return [r.value for h in rb.iter_batches(data) for r in rb.iter_records(data, h.position)]


def test_last_sequence_wraps_past_int32_max() -> None:
    assert last_sequence(5, 2) == 7
    assert last_sequence(2**31 - 1, 0) == 2**31 - 1
    assert last_sequence(2**31 - 2, 3) == 1  # Kafka DefaultRecordBatch.incrementSequence


def test_a_retried_batch_gets_its_original_offsets_and_is_not_written_twice(tmp_path) -> None:
    lg = open_log(tmp_path)
    a = lg.append_as_leader(pbatch(7, 0, 0, 3), 0, NOW)
    b = lg.append_as_leader(pbatch(7, 0, 3, 2), 0, NOW)
    again = lg.append_as_leader(pbatch(7, 0, 0, 3), 0, NOW)  # retry of a (lost response)
    assert (again.duplicate, again.first_offset, again.last_offset) == (True, a.first_offset, a.last_offset)
    assert (a.duplicate, b.duplicate) == (False, False)
    assert lg.log_end_offset == 5 and len(values(lg)) == 5
    # a plain (non-idempotent) producer is never deduplicated
    lg.append_as_leader(rb.build_batch([(None, b"x")]), 0, NOW)
    lg.append_as_leader(rb.build_batch([(None, b"x")]), 0, NOW)
    assert lg.log_end_offset == 7


def test_sequence_gaps_and_old_epochs_are_refused(tmp_path) -> None:
    lg = open_log(tmp_path)
    lg.append_as_leader(pbatch(7, 0, 0, 2), 0, NOW)
    with pytest.raises(OutOfOrderSequenceError):
        lg.append_as_leader(pbatch(7, 0, 5), 0, NOW)  # gap: expected 2
    with pytest.raises(OutOfOrderSequenceError):
        lg.append_as_leader(pbatch(7, 1, 3), 0, NOW)  # a new epoch starts at 0
    lg.append_as_leader(pbatch(7, 1, 0), 0, NOW)  # epoch bump
    with pytest.raises(InvalidProducerEpochError):
        lg.append_as_leader(pbatch(7, 0, 2), 0, NOW)  # the old epoch is fenced
    lg.append_as_leader(pbatch(9, 4, 1234), 0, NOW)  # an unknown producer may start anywhere
    assert lg.log_end_offset == 4  # the refused batches wrote nothing


def test_only_the_last_five_batches_are_recognised_as_duplicates(tmp_path) -> None:
    lg = open_log(tmp_path)
    for seq in range(BATCHES_TO_RETAIN + 1):
        lg.append_as_leader(pbatch(3, 0, seq), 0, NOW)
    assert lg.append_as_leader(pbatch(3, 0, 1), 0, NOW).duplicate
    with pytest.raises(OutOfOrderSequenceError):  # seq 0 fell out of the retained batches
        lg.append_as_leader(pbatch(3, 0, 0), 0, NOW)


def test_producer_state_is_rebuilt_from_the_log_after_a_restart(tmp_path) -> None:
    lg = open_log(tmp_path)
    first = lg.append_as_leader(pbatch(11, 2, 0, 4), 0, NOW)
    lg.append_as_leader(pbatch(11, 2, 4, 1), 0, NOW)
    lg.close()
    lg = open_log(tmp_path)
    again = lg.append_as_leader(pbatch(11, 2, 0, 4), 0, NOW)  # retry after the broker restarted
    assert again.duplicate and again.first_offset == first.first_offset
    with pytest.raises(OutOfOrderSequenceError):
        lg.append_as_leader(pbatch(11, 2, 9), 0, NOW)
    with pytest.raises(InvalidProducerEpochError):
        lg.append_as_leader(pbatch(11, 1, 0), 0, NOW)
    assert lg.append_as_leader(pbatch(11, 2, 5), 0, NOW).first_offset == 5


def test_deleted_records_take_their_producers_state_along(tmp_path) -> None:
    lg = open_log(tmp_path)
    lg.append_as_leader(pbatch(5, 0, 0, 2), 0, NOW)
    lg.update_high_watermark(lg.log_end_offset)
    assert lg.maybe_increment_log_start_offset(2)
    assert 5 not in lg.producer_state.producers
    lg.append_as_leader(pbatch(5, 0, 77), 0, NOW)  # no state left: any sequence is accepted (KIP-360)


def test_idle_producers_expire() -> None:
    m = ProducerStateManager(expiration_ms=1000)
    h = rb.parse_header(pbatch(1, 0, 0))
    m.record([h], now_ms=0)
    assert m.expire(now_ms=500, check_interval_ms=0) == 0
    assert m.expire(now_ms=2000, check_interval_ms=0) == 1 and not m.producers


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1, 2]), st.integers(1, 3), st.booleans()), min_size=1, max_size=25))
def test_retries_never_duplicate_records(tmp_path_factory, script) -> None:
    """Two producers send batches in sequence order; any batch may be retried right after it was
    written (its response was lost). The log holds each record exactly once, in send order per
    producer, and every retry is answered with the offsets of the first attempt."""
    lg = open_log(tmp_path_factory.mktemp("p"))
    seq = {1: 0, 2: 0}
    sent: dict[int, list[bytes]] = {1: [], 2: []}
    for pid, n, retry in script:
        vals = [b"%d-%d" % (pid, seq[pid] + i) for i in range(n)]
        data = rb.build_batch([(None, v) for v in vals], base_timestamp=NOW, producer_id=pid, producer_epoch=0, base_sequence=seq[pid])
        first = lg.append_as_leader(data, 0, NOW)
        if retry:
            again = lg.append_as_leader(data, 0, NOW)
            assert again.duplicate and (again.first_offset, again.last_offset) == (first.first_offset, first.last_offset)
        seq[pid] += n
        sent[pid].extend(vals)
    got = values(lg)
    assert len(got) == len(sent[1]) + len(sent[2])
    for pid in (1, 2):
        assert [v for v in got if v.startswith(b"%d-" % pid)] == sent[pid]
