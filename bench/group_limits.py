"""Bounded share groups under a flood of new group ids (issue 13's target: "10,000 requests each
naming a new group id: process count and PSS bounded by the configured group limits").

Starts the daemon (``app.py run``, through the e2e harness) with ``group.share.max.groups`` (default
50), creates one topic, then sends ``--requests`` requests on one connection, each naming a group
id never used before, cycling through ShareGroupHeartbeat joins (76), ShareGroupDescribe (77),
DescribeShareGroupOffsets (90) and DescribeConfigs on the GROUP resource (32). Prints one JSON
object: the daemon's process count and PSS (kB summed over its processes, from
``/proc/<pid>/smaps_rollup``) before and after, the answers by API and error name, the share groups
that exist afterwards (ListGroups) and the elapsed time.

Expected: only the first ``max.groups`` joins create a group (one actor process each); every other
join gets GROUP_MAX_SIZE_REACHED, every describe of an unknown group GROUP_ID_NOT_FOUND (configs:
the defaults), and no describe starts a process.

Run: ``.venv/bin/python bench/group_limits.py [--requests 10000] [--max-groups 50]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import KafkaConnection, pss_kb  # noqa: E402
from tests.e2e.conftest import free_port  # noqa: E402


def _sample(d) -> dict:
    pids = d.all_pids()
    return {"processes": len(pids), "pss_kb": pss_kb(pids)}




def _error_name(code) -> str:
    from kio.schema.errors import ErrorCode

    return ErrorCode(int(code)).name.upper()


def run(requests: int, max_groups: int) -> dict:
    from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
    from kio.schema.describe_share_group_offsets.v0.request import DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequestGroup
    from kio.schema.list_groups.v5.request import ListGroupsRequest
    from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
    from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
    from kio.static.primitive import i8, i32

    from tests.e2e.conftest import DaemonProcess  # the e2e harness starts and cleans up the daemon
    from tests.e2e.helpers import create_topic

    os.environ.setdefault("THESPIAN_BASE_IPADDR", "127.0.0.1")
    tmp = Path(tempfile.mkdtemp(prefix="shoal-bench-groups-"))
    overrides = {"log.dirs": str(tmp / "data" / "logs"), "group.share.max.groups": str(max_groups)}
    d = DaemonProcess(tmp / "data", free_port(), free_port(), overrides)
    out: dict = {"bench": "group_limits", "requests": requests, "group.share.max.groups": max_groups}
    try:
        d.start()
        create_topic(d.bootstrap, "t", 1)
        time.sleep(3)  # let start-up children settle before sampling
        out["before"] = _sample(d)
        conn = KafkaConnection(d.port)
        answers: dict[str, Counter] = {"ShareGroupHeartbeat": Counter(), "ShareGroupDescribe": Counter(), "DescribeShareGroupOffsets": Counter(), "DescribeConfigs": Counter()}
        t0 = time.perf_counter()
        for i in range(requests):
            group = f"flood-{i}"
            kind = i % 4
            if kind == 0:
                r = conn.ask(76, 1, ShareGroupHeartbeatRequest(group_id=group, member_id=str(uuid.uuid4()), member_epoch=i32(0), rack_id=None, subscribed_topic_names=("t",)))
                answers["ShareGroupHeartbeat"][_error_name(r.error_code)] += 1
            elif kind == 1:
                r = conn.ask(77, 1, ShareGroupDescribeRequest(group_ids=(group,), include_authorized_operations=False))
                answers["ShareGroupDescribe"][_error_name(r.groups[0].error_code)] += 1
            elif kind == 2:
                r = conn.ask(90, 0, DescribeShareGroupOffsetsRequest(groups=(DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None),)))
                answers["DescribeShareGroupOffsets"][_error_name(r.groups[0].error_code)] += 1
            else:
                r = conn.ask(32, 4, DescribeConfigsRequest(resources=(DescribeConfigsResource(resource_type=i8(32), resource_name=group, configuration_keys=None),), include_synonyms=False, include_documentation=False))
                answers["DescribeConfigs"][_error_name(r.results[0].error_code)] += 1
        out["elapsed_s"] = round(time.perf_counter() - t0, 1)
        out["requests_per_s"] = round(requests / (time.perf_counter() - t0))
        out["answers"] = {api: dict(c) for api, c in answers.items()}
        lg = conn.ask(16, 5, ListGroupsRequest(states_filter=(), types_filter=("share",)))
        out["share_groups_listed"] = len(lg.groups)
        time.sleep(3)
        out["after"] = _sample(d)
        out["process_growth"] = out["after"]["processes"] - out["before"]["processes"]
        out["pss_growth_kb"] = out["after"]["pss_kb"] - out["before"]["pss_kb"]
        conn.sock.close()
    finally:
        d.stop()
        d.assert_no_processes_left()
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--max-groups", type=int, default=50)
    args = ap.parse_args()
    print(json.dumps(run(args.requests, args.max_groups), indent=2))


if __name__ == "__main__":
    main()
