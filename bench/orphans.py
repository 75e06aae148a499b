"""Benchmark of "a node dies cleanly" (issue 13): how long the actor system of a daemon whose main
process was SIGKILLed keeps running. Prints one JSON object.

Target (issue 13): every Thespian process of the daemon (admin, logger, journal, controller, the
RLMM actors, share-group actors) gone within ~5 s of the SIGKILL, with the default
``shoal.actor.system.watchdog.ms`` = 1000.

Each round starts ``app.py run`` on a fresh data dir (the e2e harness, real ports and processes),
creates a topic, produces, starts one share group (one ShareGroupActor process), counts the
daemon's processes, SIGKILLs the main process only (no cleanup code runs in it) and polls ``/proc``
every 10 ms until no process of the daemon is left. ``seconds_to_gone`` is per round; ``restart_s``
is the time for the same data dir to start again (ports reused) and answer ApiVersions.

Run: ``.venv/bin/python bench/orphans.py [--rounds N] [--watchdog-ms MS]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.e2e.conftest import DaemonProcess, free_port  # noqa: E402
from tests.e2e.helpers import create_topic, produce, set_group_config  # noqa: E402


def one_round(base: Path, i: int, watchdog_ms: str) -> dict:
    """One start → SIGKILL → all-gone → restart round; returns its figures."""
    d = DaemonProcess(base / f"data{i}", free_port(), free_port(), {"shoal.actor.system.watchdog.ms": watchdog_ms})
    d.start()
    create_topic(d.bootstrap, "t", 1)
    produce(d.bootstrap, "t", ["a", "b"], partitioner=lambda _i: 0)
    from confluent_kafka import ShareConsumer

    set_group_config(d.bootstrap, "g", "share.auto.offset.reset", "earliest")
    c = ShareConsumer({"bootstrap.servers": d.bootstrap, "group.id": "g"})
    c.subscribe(["t"])  # a share-group actor process as well, with a member and acquired records
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not [m for m in c.poll(0.3) if not m.error()]:
        pass
    c.close()
    processes = len(d.all_pids())
    os.kill(d.proc.pid, signal.SIGKILL)
    t0 = time.monotonic()
    d.proc.wait(10)
    while d.all_pids() and time.monotonic() - t0 < 60:
        time.sleep(0.01)
    gone_s = time.monotonic() - t0
    left = d.all_pids()
    t1 = time.monotonic()
    d2 = DaemonProcess(d.data_dir, d.port, d.admin_port, {})
    d2.start()
    restart_s = time.monotonic() - t1
    d2.stop()
    d2.assert_no_processes_left()
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return {"processes": processes, "seconds_to_gone": round(gone_s, 3), "left_after_60s": len(left), "restart_s": round(restart_s, 3)}


def main() -> None:
    """Parse the arguments, run the rounds, print the JSON summary."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--watchdog-ms", default="1000")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="shoal-orphans-"))
    try:
        rounds = [one_round(base, i, args.watchdog_ms) for i in range(args.rounds)]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    gone = [r["seconds_to_gone"] for r in rounds]
    print(json.dumps({
        "watchdog_ms": int(args.watchdog_ms),
        "rounds": rounds,
        "seconds_to_gone_p50": statistics.median(gone),
        "seconds_to_gone_max": max(gone),
        "restart_s_p50": statistics.median(r["restart_s"] for r in rounds),
        "load_avg_1m": os.getloadavg()[0],
    }))


if __name__ == "__main__":
    main()
