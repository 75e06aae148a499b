"""Crash safety of the RLMM: a real process writing segment lifecycles (with frequent snapshots)
is SIGKILLed; afterwards snapshot + tail equals a full replay of the log, and every write the
process reported as done is in the recovered state."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from actors.rlmm.manager import load_metadata_partition
from events.rlmm_types import uuid_from_kafka_str

WRITER = textwrap.dedent(
    """
    import sys, uuid
    sys.path.insert(0, {root!r})
    from actors.rlmm.manager import EventSourcedRemoteLogMetadataManager
    from events.rlmm_types import (RemoteLogSegmentId, RemoteLogSegmentMetadata,
        RemoteLogSegmentMetadataUpdate, RemoteLogSegmentState, TopicIdPartition, uuid_to_kafka_str)
    from store.event_log import open_event_log
    log = open_event_log({url!r})
    m = EventSourcedRemoteLogMetadataManager(log, num_partitions=3, snapshot_interval_events=3)
    tps = [TopicIdPartition(uuid.UUID(int=0xC0FFEE), "crash", p) for p in range(6)]
    m.on_partition_leadership_changes(set(tps), set())
    i = 0
    while True:
        tp = tps[i % len(tps)]
        s = RemoteLogSegmentMetadata(RemoteLogSegmentId(tp, uuid.uuid4()), i * 10, i * 10 + 9, -1, 1, i, 100, {{i // 7: i * 10}})
        m.add_remote_log_segment_metadata(s)
        m.update_remote_log_segment_metadata(RemoteLogSegmentMetadataUpdate(
            s.remote_log_segment_id, i, None, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, 1))
        print(uuid_to_kafka_str(s.remote_log_segment_id.id), flush=True)  # acknowledged
        i += 1
    """
)


def test_sigkill_during_writes_then_snapshot_plus_tail_equals_full_replay(tmp_path, sqlite_log, sqlite_url):
    root = str(Path(__file__).resolve().parents[2])
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(root=root, url=sqlite_url))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    acknowledged = []
    deadline = time.monotonic() + 60
    try:
        while len(acknowledged) < 40 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            acknowledged.append(line.strip())
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert len(acknowledged) >= 40, "writer did not make progress"
    seen = set()
    for p in range(3):
        if sqlite_log.stream_version(f"rlmm:{p}") == 0:
            continue
        assert sqlite_log.load_snapshot(f"rlmm:{p}") is not None
        resumed, _ = load_metadata_partition(sqlite_log, p)
        full, _ = load_metadata_partition(sqlite_log, p, use_snapshot=False)
        assert resumed == full
        for cache in full.caches.values():
            seen |= {m.remote_log_segment_id.id for m in cache.list_all_remote_log_segments()}
    assert {uuid_from_kafka_str(a) for a in acknowledged} <= seen
