"""Benchmark: segment copy throughput to the remote tier vs a plain file copy on the same disk.

Prints one JSON object. Figures (MiB/s, best and median of ``--repeat`` runs):

* ``plain_copy``: ``copy_file_range`` of the segment file + fsync (what any copy of the bytes costs);
* ``rsm_copy``: ``LocalDirectoryRemoteStorageManager.copy_log_segment_data`` (segment + offset and
  time index + leader-epoch checkpoint into a staging directory, fsync each, rename, fsync dir);
* ``rlm_copy``: the whole ``RemoteLogManager`` copy of one segment, incl. the COPY_SEGMENT_STARTED
  and COPY_SEGMENT_FINISHED events appended to a SQLite event log through the RLMM;
* ``ratio_rsm``/``ratio_rlm``: median throughput relative to ``plain_copy`` (target >= 0.80).

Usage: ``python bench/tiering.py [--size-mib 256] [--repeat 5] [--dir /path/on/the/disk]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from actors.rlmm.manager import EventSourcedRemoteLogMetadataManager  # noqa: E402
from events.rlmm_types import RemoteLogSegmentId, RemoteLogSegmentMetadata, TopicIdPartition  # noqa: E402
from store import record_batch as rb  # noqa: E402
from store.event_log import open_event_log  # noqa: E402
from store.log.config import LogConfig  # noqa: E402
from store.log.log import PartitionLog  # noqa: E402
from store.remote_log_manager import RemoteLogManager  # noqa: E402
from store.remote_storage import LocalDirectoryRemoteStorageManager, LogSegmentData, _copy_file  # noqa: E402

MIB = 1024 * 1024


def build_log(root: Path, size_mib: int) -> tuple[PartitionLog, TopicIdPartition]:
    """One rolled segment of ``size_mib`` MiB of 1 MiB batches (random, incompressible payload)."""
    cfg = LogConfig(segment_bytes=(size_mib + 8) * MIB, max_message_bytes=2 * MIB, remote_storage_enable=True,
                    index_interval_bytes=4096, retention_ms=-1)
    log = PartitionLog.open(root / "logs", "bench", 0, cfg)
    payload = os.urandom(MIB - 200)
    for i in range(size_mib):
        log.append_as_leader(rb.build_batch([(b"k", payload)], base_timestamp=i), 0, i)
    log.roll(size_mib)
    log.append_as_leader(rb.build_batch([(b"k", b"tail")]), 0, size_mib)
    log.update_high_watermark(log.log_end_offset)
    log.flush()
    return log, TopicIdPartition(uuid.uuid4(), "bench", 0)


def main() -> None:
    """Measure segment copy throughput against a plain file copy on the same disk; print JSON."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=None, help="directory on the disk to measure (default: a temp dir)")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="shoal-bench-tiering-", dir=args.dir))
    try:
        log, tp = build_log(root, args.size_mib)
        seg = log.segments()[0]
        size = seg.size
        data = LogSegmentData(seg.log_path, seg.index_path, seg.time_index_path, None, None, b"0\n1\n0 0\n")
        plain, rsm_t, rlm_t = [], [], []
        for r in range(args.repeat):

            def plain_round() -> None:
                dst = root / f"plain-{r}.bin"
                t0 = time.perf_counter()
                _copy_file(seg.log_path, dst)
                plain.append(time.perf_counter() - t0)
                dst.unlink()

            def rsm_round() -> None:
                rsm = LocalDirectoryRemoteStorageManager(root / f"remote-rsm-{r}")
                md = RemoteLogSegmentMetadata(RemoteLogSegmentId(tp, uuid.uuid4()), 0, seg.next_offset - 1, 0, 1, 0, size, {0: 0})
                t0 = time.perf_counter()
                rsm.copy_log_segment_data(md, data)
                rsm_t.append(time.perf_counter() - t0)
                shutil.rmtree(root / f"remote-rsm-{r}")

            def rlm_round() -> None:
                el = open_event_log(f"sqlite:///{root / f'events-{r}.db'}")
                rlmm = EventSourcedRemoteLogMetadataManager(el, num_partitions=3)
                rlm = RemoteLogManager(LocalDirectoryRemoteStorageManager(root / f"remote-rlm-{r}"), rlmm)
                rlm.on_leadership_change({tp: log})
                rlm._partitions[tp].copied_offset = -1  # each round re-copies the same segment
                t0 = time.perf_counter()
                copied = rlm.copy_log_segments_to_remote(tp, 0)
                rlm_t.append(time.perf_counter() - t0)
                assert len(copied) == 1 and copied[0].segment_size_in_bytes == size
                el.close()
                shutil.rmtree(root / f"remote-rlm-{r}")

            rounds = [plain_round, rsm_round, rlm_round]
            for k in range(3):  # rotate the order each repetition so no variant always runs first
                rounds[(r + k) % 3]()

        def mibs(ts):
            return {"best_mib_s": round(size / MIB / min(ts), 1), "median_mib_s": round(size / MIB / statistics.median(ts), 1)}

        out = {
            "benchmark": "tiering.segment_copy",
            "segment_bytes": size,
            "repeat": args.repeat,
            "dir": str(root.parent),
            "plain_copy": mibs(plain),
            "rsm_copy": mibs(rsm_t),
            "rlm_copy": mibs(rlm_t),
            "ratio_rsm": round(statistics.median(plain) / statistics.median(rsm_t), 3),
            "ratio_rlm": round(statistics.median(plain) / statistics.median(rlm_t), 3),
            "target_ratio": 0.8,
        }
        out["meets_target"] = out["ratio_rlm"] >= 0.8
        print(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
