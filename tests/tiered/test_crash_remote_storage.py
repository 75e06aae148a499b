"""SIGKILL a real process while it uploads segments to the local-directory remote tier: every
segment directory that exists afterwards is complete and byte-identical to its source, and the
staging leftovers are removed by ``cleanup_incomplete``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

from events.rlmm_types import RemoteLogSegmentId, RemoteLogSegmentMetadata, TopicIdPartition
from store.remote_storage import LocalDirectoryRemoteStorageManager

ROOT = Path(__file__).resolve().parents[2]
TOPIC_ID = uuid.UUID(int=0xABCDEF)

CHILD = textwrap.dedent(
    """
    import sys, uuid
    from pathlib import Path
    from events.rlmm_types import RemoteLogSegmentId, RemoteLogSegmentMetadata, TopicIdPartition
    from store.remote_storage import LocalDirectoryRemoteStorageManager, LogSegmentData
    src, root = Path(sys.argv[1]), Path(sys.argv[2])
    tp = TopicIdPartition(uuid.UUID(int=0xABCDEF), "t", 0)
    rsm = LocalDirectoryRemoteStorageManager(root)
    i = 0
    while True:
        md = RemoteLogSegmentMetadata(RemoteLogSegmentId(tp, uuid.UUID(int=i + 1)), i * 10, i * 10 + 9, -1, 1, 0, 1, {0: i * 10})
        rsm.copy_log_segment_data(md, LogSegmentData(src / "seg.log", src / "seg.index", src / "seg.timeindex", None, None, b"0\\n0\\n"))
        sys.stdout.write(f"{i}\\n"); sys.stdout.flush()
        i += 1
    """
)


def test_sigkill_during_uploads_never_leaves_a_partial_segment_that_looks_complete(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    payload = os.urandom(1 << 20) * 24  # 24 MiB: an upload takes long enough to be interrupted
    (src / "seg.log").write_bytes(payload)
    (src / "seg.index").write_bytes(b"i" * 800)
    (src / "seg.timeindex").write_bytes(b"t" * 1200)
    root = tmp_path / "remote"
    tp = TopicIdPartition(TOPIC_ID, "t", 0)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for attempt in range(3):
        proc = subprocess.Popen([sys.executable, "-c", CHILD, str(src), str(root)], stdout=subprocess.PIPE, env=env, cwd=ROOT)
        staging_seen = False
        deadline = time.monotonic() + 60
        pdir = LocalDirectoryRemoteStorageManager(root).partition_dir(tp)
        # wait for one finished upload, then kill while the next is staged
        proc.stdout.readline()
        while time.monotonic() < deadline:
            if pdir.is_dir() and any(p.name.startswith(".staging-") for p in pdir.iterdir()):
                staging_seen = True
                break
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        rsm = LocalDirectoryRemoteStorageManager(root)
        segments = rsm.list_segments(tp)
        assert segments, "at least one upload completed"
        for sid, start in segments.items():
            md = RemoteLogSegmentMetadata(RemoteLogSegmentId(tp, sid), start, start + 9, -1, 1, 0, 1, {0: start})
            with rsm.fetch_log_segment(md, 0) as f:
                assert f.read() == payload
        rsm.cleanup_incomplete()
        assert not any(p.name.startswith(".") for p in pdir.iterdir())
        if staging_seen:
            return
    raise AssertionError("never caught an upload in progress")
