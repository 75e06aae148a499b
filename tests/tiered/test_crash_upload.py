"""SIGKILL a real broker-side process while the RemoteLogManager uploads or deletes a segment,
restart, and check that metadata (B2's event-sourced RLMM on SQLite) and data (the local remote
tier) are consistent: no remote data without its COPY_SEGMENT_STARTED, no COPY_SEGMENT_FINISHED
without complete data, nothing acknowledged lost; after reconciliation everything is tiered
again and every offset reads back with its original value.

The child pauses at a named point (a marker file tells the parent it is there) so each kill
lands at a chosen step; the ``random`` mode kills at an arbitrary moment of a busy loop."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from actors.rlmm.manager import EventSourcedRemoteLogMetadataManager
from events.rlmm_types import RemoteLogSegmentState, TopicIdPartition
from store import record_batch as rb
from store.event_log import open_event_log
from store.log.config import LogConfig
from store.log.log import PartitionLog
from store.remote_log_manager import RemoteLogManager
from store.remote_storage import LocalDirectoryRemoteStorageManager

ROOT = Path(__file__).resolve().parents[2]
TP = TopicIdPartition(uuid.UUID(int=0xC0FFEE), "crashy", 0)
PROPS = {"segment.bytes": "20000", "remote.storage.enable": "true", "local.retention.bytes": "0",
         "retention.ms": "-1", "index.interval.bytes": "1000"}
CS = RemoteLogSegmentState.COPY_SEGMENT_STARTED
CF = RemoteLogSegmentState.COPY_SEGMENT_FINISHED
DS = RemoteLogSegmentState.DELETE_SEGMENT_STARTED

CHILD = textwrap.dedent(
    """
    import os, sys, time, uuid
    from pathlib import Path
    import store.remote_storage as remote_storage
    from actors.rlmm.manager import EventSourcedRemoteLogMetadataManager
    from events.rlmm_types import RemoteLogSegmentState, TopicIdPartition
    from store import record_batch as rb
    from store.event_log import open_event_log
    from store.log.config import LogConfig
    from store.log.log import PartitionLog
    from store.remote_log_manager import RemoteLogManager

    data, mode, props = Path(sys.argv[1]), sys.argv[2], eval(sys.argv[3])
    marker = data / "at-kill-point"
    tp = TopicIdPartition(uuid.UUID(int=0xC0FFEE), "crashy", 0)

    def pause():
        marker.write_text(mode)
        time.sleep(120)

    class PausingRLMM(EventSourcedRemoteLogMetadataManager):
        def add_remote_log_segment_metadata(self, md):
            super().add_remote_log_segment_metadata(md)
            if mode == "after_copy_started" and md.start_offset > 0:
                pause()
        def update_remote_log_segment_metadata(self, u):
            if mode == "before_copy_finished" and u.state == RemoteLogSegmentState.COPY_SEGMENT_FINISHED and count[0] >= 1:
                pause()
            super().update_remote_log_segment_metadata(u)
            if u.state == RemoteLogSegmentState.COPY_SEGMENT_FINISHED:
                count[0] += 1
            if mode == "after_delete_started" and u.state == RemoteLogSegmentState.DELETE_SEGMENT_STARTED:
                pause()

    count = [0]
    real_copy = remote_storage._copy_file
    def slow_copy(src, dst):
        if mode == "mid_upload" and count[0] >= 1 and dst.name == "segment.log":
            with open(src, "rb") as f, open(dst, "wb") as g:
                g.write(f.read()[: os.path.getsize(src) // 2])
            pause()
        real_copy(src, dst)
    remote_storage._copy_file = slow_copy

    log = PartitionLog.open(data / "logs", tp.topic, tp.partition, LogConfig.from_properties(props))
    rlmm = PausingRLMM(open_event_log(f"sqlite:///{data / 'events.db'}"), num_partitions=3)
    rsm = remote_storage.LocalDirectoryRemoteStorageManager(data / "remote")
    rlm = RemoteLogManager(rsm, rlmm, broker_id=1)
    rlm.on_leadership_change({tp: log})
    now = 1_000
    while True:
        for _ in range(40):
            i = log.log_end_offset
            log.append_as_leader(rb.build_batch([(b"k%06d" % i, b"v%06d|" % i * 30)], base_timestamp=now), 0, now)
            log.update_high_watermark(log.log_end_offset)
            sys.stdout.write(f"{i}\\n"); sys.stdout.flush()
            now += 1
        if mode == "after_delete_started" and count[0] >= 2:
            # retention kicks in: expire everything copied so far
            log.update_config(LogConfig.from_properties(dict(props, **{"retention.ms": "1"})))
        rlm.run_once(now)
    """
)


def _run_child(data: Path, mode: str, timeout: float = 90.0) -> int:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(data), mode, repr(PROPS)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=ROOT)
    marker = data / "at-kill-point"
    deadline = time.monotonic() + timeout
    random_kill_at = None
    acked = -1
    os.set_blocking(proc.stdout.fileno(), False)
    buf = b""
    try:
        while time.monotonic() < deadline:
            chunk = proc.stdout.read()
            if chunk:
                buf += chunk
            if proc.poll() is not None:
                raise AssertionError(f"child exited early: {proc.stderr.read().decode()[-3000:]}")
            if mode == "random" and random_kill_at is None and buf.count(b"\n") >= 200:
                random_kill_at = time.monotonic() + random.uniform(0.0, 1.5)
            if random_kill_at is not None and time.monotonic() >= random_kill_at:
                break
            if mode != "random" and marker.exists():
                break
            time.sleep(0.005)
        else:
            raise AssertionError(f"child never reached kill point {mode}")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    chunk = proc.stdout.read()
    if chunk:
        buf += chunk
    lines = [ln for ln in buf.split(b"\n") if ln]
    if lines:
        acked = int(lines[-1])
    return acked


def _restart(data: Path):
    log = PartitionLog.open(data / "logs", TP.topic, TP.partition, LogConfig.from_properties(PROPS))
    rlmm = EventSourcedRemoteLogMetadataManager(open_event_log(f"sqlite:///{data / 'events.db'}"), num_partitions=3)
    rsm = LocalDirectoryRemoteStorageManager(data / "remote")
    rlm = RemoteLogManager(rsm, rlmm, broker_id=1)
    rlm.on_leadership_change({TP: log})
    return log, rlmm, rsm, rlm


def _check_segment_bytes(rsm, md) -> None:
    with rsm.fetch_log_segment(md, 0) as f:
        raw = f.read()
    assert len(raw) == md.segment_size_in_bytes
    end, headers = rb.valid_prefix(raw)
    assert end == len(raw)
    offs = [r.offset for h in headers for r in rb.iter_records(raw, h.position)]
    assert offs == list(range(md.start_offset, md.end_offset + 1))


def _check_all_offsets(log, rlm, acked) -> None:
    assert log.log_end_offset >= acked + 1
    off = log.log_start_offset
    while off < log.log_end_offset:
        r = rlm.read(TP, off, 1 << 20, max_offset=log.log_end_offset)
        recs = [x for h in rb.iter_batches(r.records) for x in rb.iter_records(r.records, h.position)]
        assert recs, f"nothing readable at offset {off}"
        for rec in recs:
            if rec.offset >= off:
                assert rec.offset == off and rec.value == b"v%06d|" % off * 30
                off += 1


@pytest.mark.parametrize("mode", ["after_copy_started", "mid_upload", "before_copy_finished", "after_delete_started", "random"])
def test_sigkill_during_upload_then_restart_is_consistent(tmp_path, mode):
    acked = _run_child(tmp_path, mode)
    assert acked >= 0
    log, rlmm, rsm, rlm = _restart(tmp_path)
    listed = {m.remote_log_segment_id.id: m for m in rlmm.list_remote_log_segments(TP)}
    data_ids = rsm.list_segments(TP)
    # invariant 1: no remote data without its COPY_SEGMENT_STARTED (every complete segment has metadata)
    assert set(data_ids) <= set(listed), "remote data without metadata"
    # invariant 2: no COPY_SEGMENT_FINISHED without complete data
    for md in listed.values():
        if md.state == CF:
            assert md.remote_log_segment_id.id in data_ids
            _check_segment_bytes(rsm, md)
    if mode == "after_copy_started":
        assert any(m.state == CS for m in listed.values())
    if mode == "mid_upload":
        staging = [p for p in rsm.partition_dir(TP).iterdir() if p.name.startswith(".staging-")]
        assert staging and any(m.state == CS for m in listed.values())
    if mode == "before_copy_finished":
        assert any(m.state == CS and m.remote_log_segment_id.id in data_ids for m in listed.values())
    if mode == "after_delete_started":
        assert any(m.state == DS for m in listed.values())
    # nothing acknowledged is lost, even before repair (remote CF + local cover the log)
    _check_all_offsets(log, rlm, acked)

    # restart repair, then the tasks resume
    rlm.run_once(10**12 if mode == "after_delete_started" else 5_000)
    states = [m.state for m in rlmm.list_remote_log_segments(TP)]
    assert CS not in states and DS not in states
    assert set(rsm.list_segments(TP)) == {m.remote_log_segment_id.id for m in rlmm.list_remote_log_segments(TP)}
    pdir = rsm.partition_dir(TP)
    assert not pdir.is_dir() or not [p for p in pdir.iterdir() if p.name.startswith(".")]
    for md in rlmm.list_remote_log_segments(TP):
        _check_segment_bytes(rsm, md)
    _check_all_offsets(log, rlm, acked)
    if mode != "after_delete_started":
        assert log.local_log_start_offset > 0 and log.log_start_offset == 0  # tiered and served
