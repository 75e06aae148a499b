"""DeleteRecords on a partition log (Kafka ``Partition.deleteRecordsOnLeader`` /
``UnifiedLog.maybeIncrementLogStartOffset``): -1 means the high watermark, an offset above it or
below -1 is OFFSET_OUT_OF_RANGE, the log start offset never moves back, segments wholly below it go,
and the new start offset survives a reopen."""

from __future__ import annotations

import pytest

from store.log.errors import OffsetOutOfRangeError
from store.log.log import PartitionLog
from tests.tiered.test_partition_log import batch, open_log


def _filled(tmp_path, n: int = 6) -> PartitionLog:
    log = open_log(tmp_path, segment_bytes=len(batch()) * 2)
    for _ in range(n):
        log.append_as_leader(batch(), 0, 1)
    log.update_high_watermark(log.log_end_offset)
    return log


def test_delete_records_moves_the_log_start_offset_and_deletes_segments(tmp_path):
    log = _filled(tmp_path)
    assert log.delete_records(3) == 3 and log.log_start_offset == 3
    assert [s.base_offset for s in log.segments()] == [2, 4]  # [0,1] is wholly below 3
    assert log.delete_records(1) == 3  # never back
    log.close()
    again = open_log(tmp_path, segment_bytes=len(batch()) * 2)
    assert again.log_start_offset == 3


def test_minus_one_means_the_high_watermark(tmp_path):
    log = _filled(tmp_path)
    log.update_high_watermark(5)
    assert log.delete_records(-1) == 5


@pytest.mark.parametrize("offset", [7, -2])
def test_out_of_range(tmp_path, offset):
    log = _filled(tmp_path)
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records(offset)
    assert log.log_start_offset == 0
