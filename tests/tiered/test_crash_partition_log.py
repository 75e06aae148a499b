"""Crash recovery of store.log.log.PartitionLog with a real child process killed by SIGKILL while it
appends in a loop (Kafka ``LogSegment#recover`` / ``LogLoader`` semantics): after restart the
log ends at the last batch whose CRC checks, and every append that returned is present."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from store import record_batch as rb
from store.log.config import LogConfig
from store.log.log import PartitionLog

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import sys
    from store import record_batch as rb
    from store.log.config import LogConfig
    from store.log.log import PartitionLog
    log_dirs, flush_messages, segment_bytes = sys.argv[1], sys.argv[2], sys.argv[3]
    cfg = LogConfig.from_properties({"flush.messages": flush_messages, "segment.bytes": segment_bytes})
    log = PartitionLog.open(log_dirs, "crash", 0, cfg)
    i = log.log_end_offset
    while True:
        n = 1 + (i % 3)
        recs = [(b"k%d" % (i + j), b"value-%d-" % (i + j) * 8) for j in range(n)]
        info = log.append_as_leader(rb.build_batch(recs, base_timestamp=i), 0, i)
        assert info.first_offset == i
        i = info.last_offset + 1
        sys.stdout.write(f"{info.last_offset}\\n")
        sys.stdout.flush()
    """
)


def _run_and_kill(log_dirs: Path, flush_messages: str, min_acks: int, segment_bytes: int = 4096) -> int:
    """Start the appender, wait for ``min_acks`` acknowledged appends plus a random delay,
    SIGKILL it, and return the highest acknowledged offset."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(log_dirs), flush_messages, str(segment_bytes)],
        stdout=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    acked = -1
    count = 0
    deadline = time.monotonic() + 60
    kill_after = min_acks + random.randint(0, 50)
    try:
        while count < kill_after and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            acked = int(line)
            count += 1
        os.kill(proc.pid, signal.SIGKILL)
        # lines already written before the kill are acknowledged appends too
        for line in proc.stdout.read().splitlines():
            acked = int(line)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert acked >= 0, "child produced no acknowledged append"
    return acked


def _check_log(log: PartitionLog, acked: int) -> None:
    assert log.log_end_offset >= acked + 1
    log.update_high_watermark(log.log_end_offset)
    expected = 0
    for seg in log.segments():
        data = seg.pread(0, seg.size)
        end, headers = rb.valid_prefix(data)
        assert end == seg.size, "a segment still holds an invalid tail after recovery"
        for h in headers:
            for r in rb.iter_records(data, h.position):
                assert r.offset == expected
                assert r.value == b"value-%d-" % expected * 8
                expected += 1
    assert expected == log.log_end_offset


@pytest.mark.parametrize("flush_messages", ["1", "9223372036854775807"])
def test_sigkill_during_append_loop_keeps_every_acknowledged_append(tmp_path, flush_messages):
    acked = _run_and_kill(tmp_path, flush_messages, min_acks=200)
    log = PartitionLog.open(tmp_path, "crash", 0, LogConfig.from_properties({"segment.bytes": "4096"}))
    _check_log(log, acked)
    assert len(log.segments()) > 1  # the loop rolled segments
    # the log keeps working: the next append continues the offsets
    leo = log.log_end_offset
    info = log.append_as_leader(rb.build_batch([(b"k", b"value-%d-" % leo * 8)]), 0, 0)
    assert info.first_offset == leo
    _check_log(log, acked)


def test_torn_tail_after_sigkill_is_truncated_to_last_valid_crc(tmp_path):
    """A SIGKILL cannot split one write() of a batch, so the torn tail a power cut would leave
    is simulated on top of the killed child's files: half a batch, then a CRC-corrupt batch."""
    acked = _run_and_kill(tmp_path, "1", min_acks=100)
    seg_dir = tmp_path / "crash-0"
    active = sorted(seg_dir.glob("*.log"))[-1]
    good_size = active.stat().st_size
    whole = rb.build_batch([(b"x", b"torn" * 50)], base_offset=10**6)
    with open(active, "ab") as f:
        f.write(whole[: len(whole) // 2])
    log = PartitionLog.open(tmp_path, "crash", 0, LogConfig.from_properties({"segment.bytes": "4096"}))
    assert log.recovered_bytes_truncated == len(whole) // 2
    assert active.stat().st_size == good_size
    _check_log(log, acked)
    leo = log.log_end_offset
    log.close()

    corrupt = bytearray(rb.build_batch([(b"y", b"bad" * 30)], base_offset=leo))
    corrupt[-1] ^= 0xFF
    with open(active, "ab") as f:
        f.write(bytes(corrupt))
    log = PartitionLog.open(tmp_path, "crash", 0, LogConfig.from_properties({"segment.bytes": "4096"}))
    assert log.recovered_bytes_truncated == len(corrupt)
    assert log.log_end_offset == leo
    _check_log(log, acked)


def test_torn_tail_in_middle_segment_drops_later_segments(tmp_path):
    """Corruption inside an older, unflushed segment truncates there and drops every later
    segment (Kafka LogLoader: the log ends at the first invalid batch)."""
    log = PartitionLog.open(tmp_path, "t", 0, LogConfig(segment_bytes=600))
    for i in range(20):
        log.append_as_leader(rb.build_batch([(b"k", b"v" * 100)]), 0, 0)
    bases = [s.base_offset for s in log.segments()]
    assert len(bases) >= 3
    # simulate: nothing was ever flushed (recovery point 0), then a bit flip in the 2nd segment
    log._recovery_point = 0
    log._write_meta()
    for s in log.segments():
        s.close()
    second = tmp_path / "t-0" / f"{bases[1]:020d}.log"
    raw = bytearray(second.read_bytes())
    raw[70] ^= 0xFF  # inside the first batch of that segment
    second.write_bytes(bytes(raw))
    log = PartitionLog.open(tmp_path, "t", 0, LogConfig(segment_bytes=600))
    assert log.log_end_offset == bases[1]
    assert [s.base_offset for s in log.segments()] == [0, bases[1]]
    assert log.segments()[-1].size == 0
