"""KIP-848 rebalance time: how long after a second member's first heartbeat both members of a
consumer-protocol group are STABLE at the new epoch.

Starts the daemon (``app.py run``, through the e2e harness), creates a topic (``--partitions``,
default 6), lets member A (confluent-kafka ``Consumer({"group.protocol": "consumer"})``, default
client settings) own every partition, then subscribes member B and polls both while watching the
group with ConsumerGroupDescribe (AdminClient ``describe_consumer_groups``) in a side thread.
``--runs`` rebalances (B joins, then leaves) are measured. Prints one JSON object:

- ``seen_to_stable_ms``: from the first describe that lists B (B's join heartbeat has been
  handled) until the describe shows the group Stable with both members at the assignment epoch
  and owning disjoint partitions covering the topic (the server's view; describe polled every
  ``--describe-ms``);
- ``subscribe_to_stable_ms``: from ``B.subscribe()`` (client side: includes B's connection and
  FindCoordinator) to the same point;
- the server's heartbeat interval (``group.consumer.heartbeat.interval.ms``, a daemon override
  when ``--interval-ms`` is given). A's revocation waits for its next heartbeat, so the figure is
  bounded by that interval (Kafka behaves the same: the coordinator never pushes).

Run: ``.venv/bin/python bench/rebalance.py [--runs 5] [--interval-ms 5000]`` (without ``--interval-ms``: Shoal's default, 500 ms).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from config import BROKER_DEFAULTS  # noqa: E402
from tests.e2e.conftest import DaemonProcess, free_port  # noqa: E402
from tests.e2e.helpers import admin, create_topic  # noqa: E402


def _stable(desc, partitions: int) -> bool:
    state = str(getattr(desc.state, "name", desc.state)).upper()
    if state != "STABLE" or len(desc.members) != 2:
        return False
    owned = [{tp.partition for tp in (m.assignment.topic_partitions if m.assignment else [])} for m in desc.members]
    return not owned[0] & owned[1] and owned[0] | owned[1] == set(range(partitions)) and all(owned)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--interval-ms", type=int, default=None)
    ap.add_argument("--describe-ms", type=int, default=20)
    args = ap.parse_args()
    from confluent_kafka import Consumer

    overrides = {}
    if args.interval_ms is not None:
        overrides = {"group.consumer.heartbeat.interval.ms": str(args.interval_ms),
                     "group.consumer.min.heartbeat.interval.ms": str(min(args.interval_ms, int(BROKER_DEFAULTS["group.consumer.min.heartbeat.interval.ms"])))}
    base = Path(tempfile.mkdtemp(prefix="shoal-bench-rebalance-"))
    d = DaemonProcess(base / "data", free_port(), free_port(), overrides).start()
    seen_to_stable, subscribe_to_stable = [], []
    try:
        topic, group = f"rb-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
        create_topic(d.bootstrap, topic, args.partitions)
        conf = {"bootstrap.servers": d.bootstrap, "group.id": group, "group.protocol": "consumer", "auto.offset.reset": "earliest"}
        a = Consumer(conf)
        a.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(a.assignment()) < args.partitions and time.monotonic() < deadline:
            a.poll(0.05)
        adm = admin(d.bootstrap)
        for _ in range(args.runs):
            marks: dict[str, float] = {}
            stop = threading.Event()

            def watch() -> None:
                while not stop.is_set():
                    try:
                        desc = adm.describe_consumer_groups([group], request_timeout=10)[group].result(10)
                    except Exception:
                        time.sleep(args.describe_ms / 1000)
                        continue
                    now = time.monotonic()
                    if len(desc.members) == 2:
                        marks.setdefault("seen", now)
                        if _stable(desc, args.partitions):
                            marks["stable"] = now
                            return
                    time.sleep(args.describe_ms / 1000)

            b = Consumer(conf)
            t = threading.Thread(target=watch, daemon=True)
            t.start()
            t_sub = time.monotonic()
            b.subscribe([topic])
            deadline = time.monotonic() + 60
            while "stable" not in marks and time.monotonic() < deadline:
                a.poll(0.01)
                b.poll(0.01)
            stop.set()
            t.join(15)
            if "stable" in marks and "seen" in marks:
                seen_to_stable.append((marks["stable"] - marks["seen"]) * 1000)
                subscribe_to_stable.append((marks["stable"] - t_sub) * 1000)
            b.close()
            deadline = time.monotonic() + 30
            while len(a.assignment()) < args.partitions and time.monotonic() < deadline:
                a.poll(0.05)
        a.close()
    finally:
        d.stop()

    def summary(xs: list[float]) -> dict:
        return {"runs": len(xs), "median": round(statistics.median(xs), 1) if xs else None,
                "max": round(max(xs), 1) if xs else None, "all": [round(x, 1) for x in xs]}

    print(json.dumps({
        "bench": "kip848_rebalance",
        "partitions": args.partitions,
        "server_heartbeat_interval_ms": args.interval_ms or int(BROKER_DEFAULTS["group.consumer.heartbeat.interval.ms"]),
        "seen_to_stable_ms": summary(seen_to_stable),
        "subscribe_to_stable_ms": summary(subscribe_to_stable),
    }))


if __name__ == "__main__":
    main()
