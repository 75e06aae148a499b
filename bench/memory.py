"""The daemon's memory: idle, and per active share group (issue 14's memory targets: "idle daemon
≤ 300 MB PSS; each additional active share group ≤ 4 MB PSS").

Starts the daemon (``app.py run`` with its defaults, through the e2e harness) on a fresh data dir
and samples every process of it (``/proc/<pid>/smaps_rollup``, summed over the processes found by
:meth:`tests.e2e.conftest.DaemonProcess.all_pids`):

1. ``idle``: ``--settle-s`` seconds after the listener answers, before any request;
2. ``before_groups``: after one topic (``t``, 1 partition) was created and ``--records`` records
   produced to it;
3. ``groups``: after ``--groups`` share groups each joined one member (ShareGroupHeartbeat v1,
   member epoch 0) and fetched once (ShareFetch v1, a new share session, ``MaxWaitMs`` 0), so that
   each group's actor (hosted in the listener process, :mod:`actors.share.host`) exists and has
   served both a heartbeat and a fetch. With Kafka's
   default ``share.auto.offset.reset=latest`` a new group starts at the log end, so the fetch
   acquires nothing (``groups_that_acquired`` counts the groups whose fetch acquired records).

Prints one JSON object; sizes in kB (``pss_kb``, ``private_dirty_kb``, ``shared_kb`` =
Shared_Clean + Shared_Dirty) and MB (``*_mb``). ``per_group_pss_kb`` is
``(groups.pss_kb - before_groups.pss_kb) / groups``; ``per_group_processes`` likewise.
Each sample also gives the largest and the median per-process PSS.

Figures are indicative: other work on the machine shares its memory accounting only through page
sharing, but timing of collections and trims differs from run to run.

Run: ``.venv/bin/python bench/memory.py [--groups 10] [--records 100] [--settle-s 3]
[--override key=value ...]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import KafkaConnection  # noqa: E402
from tests.e2e.conftest import free_port  # noqa: E402

_FIELDS = {"Pss:": "pss_kb", "Private_Dirty:": "private_dirty_kb", "Shared_Clean:": "shared_kb", "Shared_Dirty:": "shared_kb", "Rss:": "rss_kb"}


def process_memory(pid: int) -> dict[str, int] | None:
    """``{"pss_kb", "private_dirty_kb", "shared_kb", "rss_kb"}`` of one process from
    ``/proc/<pid>/smaps_rollup`` (kB); ``None`` if the process is gone."""
    out = dict.fromkeys(set(_FIELDS.values()), 0)
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key = line.split(None, 1)[0] if line else ""
        if key in _FIELDS:
            out[_FIELDS[key]] += int(line.split()[1])
    return out


def sample(pids: list[int]) -> dict:
    """Sums over ``pids`` (kB and MB), the process count, the largest and median per-process PSS."""
    per = [m for m in (process_memory(p) for p in pids) if m is not None]
    total = {k: sum(m[k] for m in per) for k in ("pss_kb", "private_dirty_kb", "shared_kb", "rss_kb")}
    pss = sorted(m["pss_kb"] for m in per)
    return {
        "processes": len(per),
        **total,
        "pss_mb": round(total["pss_kb"] / 1024, 1),
        "max_process_pss_kb": pss[-1] if pss else 0,
        "median_process_pss_kb": int(statistics.median(pss)) if pss else 0,
    }




def _topic_id(conn: KafkaConnection, topic: str) -> uuid.UUID:
    from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

    r = conn.ask(3, 12, MetadataRequest(topics=(MetadataRequestTopic(topic_id=None, name=topic),), allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    return r.topics[0].topic_id


def join_and_fetch(conn: KafkaConnection, group: str, topic: str, topic_id: uuid.UUID) -> dict[str, int]:
    """One member joins ``group`` (ShareGroupHeartbeat, epoch 0, subscribed to ``topic``) and
    fetches partition 0 once (ShareFetch, new session, no wait). Returns the error codes and the
    number of acquired record batches."""
    from kio.schema.share_fetch.v1.request import FetchPartition, FetchTopic, ShareFetchRequest
    from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
    from kio.static.primitive import i32

    member = str(uuid.uuid4())
    hb = conn.ask(76, 1, ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=i32(0), rack_id=None, subscribed_topic_names=(topic,)))
    member = hb.member_id or member
    sf = conn.ask(78, 1, ShareFetchRequest(
        group_id=group, member_id=member, share_session_epoch=i32(0), max_wait=datetime.timedelta(0), min_bytes=i32(1), max_records=i32(500), batch_size=i32(500),
        topics=(FetchTopic(topic_id=topic_id, partitions=(FetchPartition(partition_index=i32(0), acknowledgement_batches=()),)),), forgotten_topics_data=()))
    acquired = sum(len(p.acquired_records) for t in sf.responses for p in t.partitions)
    return {"heartbeat_error": int(hb.error_code), "share_fetch_error": int(sf.error_code), "acquired_ranges": acquired}


def run(groups: int, records: int, settle_s: float, overrides: dict[str, str]) -> dict:
    from tests.e2e.conftest import DaemonProcess  # the e2e harness starts and cleans up the daemon
    from tests.e2e.helpers import create_topic, produce

    os.environ.setdefault("THESPIAN_BASE_IPADDR", "127.0.0.1")
    tmp = Path(tempfile.mkdtemp(prefix="shoal-bench-memory-"))
    ov = {"log.dirs": str(tmp / "data" / "logs"), **overrides}
    d = DaemonProcess(tmp / "data", free_port(), free_port(), ov)
    out: dict = {"bench": "memory", "groups": groups, "records": records, "overrides": overrides}
    try:
        t0 = time.perf_counter()
        d.start()
        out["start_s"] = round(time.perf_counter() - t0, 1)
        time.sleep(settle_s)
        out["idle"] = sample(d.all_pids())
        create_topic(d.bootstrap, "t", 1)
        if records:
            produce(d.bootstrap, "t", [f"r{i}" for i in range(records)])
        time.sleep(settle_s)
        out["before_groups"] = sample(d.all_pids())
        conn = KafkaConnection(d.port)
        tid = _topic_id(conn, "t")
        answers = [join_and_fetch(conn, f"mem-{i}", "t", tid) for i in range(groups)]
        out["errors"] = sorted({(a["heartbeat_error"], a["share_fetch_error"]) for a in answers})
        out["groups_that_acquired"] = sum(1 for a in answers if a["acquired_ranges"])
        conn.sock.close()
        time.sleep(settle_s)
        out["groups_sample"] = sample(d.all_pids())
        if groups:
            out["per_group_pss_kb"] = round((out["groups_sample"]["pss_kb"] - out["before_groups"]["pss_kb"]) / groups)
            out["per_group_private_dirty_kb"] = round((out["groups_sample"]["private_dirty_kb"] - out["before_groups"]["private_dirty_kb"]) / groups)
            out["per_group_processes"] = round((out["groups_sample"]["processes"] - out["before_groups"]["processes"]) / groups, 2)
    finally:
        d.stop()
        d.assert_no_processes_left()
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=10)
    ap.add_argument("--records", type=int, default=100)
    ap.add_argument("--settle-s", type=float, default=3.0)
    ap.add_argument("--override", action="append", default=[], help="key=value for the daemon, may repeat")
    args = ap.parse_args()
    overrides = dict(kv.split("=", 1) for kv in args.override)
    print(json.dumps(run(args.groups, args.records, args.settle_s, overrides), indent=2))


if __name__ == "__main__":
    main()
