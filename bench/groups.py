"""Consumer-group benchmark of the daemon with confluent-kafka clients (librdkafka 2.16); prints
one JSON object.

Figures:

* ``group_consume``: ``--consumers`` (4) Consumers, each in its own process, subscribe one group
  to a ``--partitions`` (4) partition topic holding ``--records`` (1,000,000) pre-produced 100-byte
  records and drain it, each calling ``consume(num_messages=--batch)`` and
  ``commit(asynchronous=True)`` after every non-empty batch, all other client settings at their
  defaults (bootstrap, group id and ``auto.offset.reset=earliest`` aside). ``records_per_s`` is
  the records read over the span from the first record any member read to the last; the run ends
  when the group's committed offsets (OffsetFetch by a non-member) reach every partition's end.
  ``subscribe_to_drained_s`` is the wall time from the members' start to that point (joins and the
  initial rebalance delay included); ``commit_lag_s`` how long after the last read the committed
  offsets reached the end, and ``committed_records_per_s`` the records over the span from the
  first read to that point; ``redelivered`` counts records read again by another member after a
  rebalance, ``member_timeline_s`` each member's assignment, first and last read; ``duplicates``
  counts records one member read more than once (after a rebalance
  a partition resumes at its committed offset).
* ``rebalance``: at default client settings, ``first_join_s`` is the time from a consumer's
  ``subscribe()`` on a new group until its ``on_assign`` (Kafka's
  ``group.initial.rebalance.delay.ms``, 3 s, applies to this first join of an empty group), and
  ``member_join_s`` the time from a second consumer's ``subscribe()`` until both members have their
  new assignment (the second member's ``on_assign`` and the first member's ``on_assign`` after
  its revocation); ``--rounds`` rounds on fresh groups, B subscribing at phases spread over A's
  heartbeat interval (librdkafka's default ``heartbeat.interval.ms``, 3 s: A learns of the
  rebalance from its next Heartbeat, so that phase bounds the member-join time).

``--protocol consumer`` sets ``group.protocol=consumer`` (KIP-848) on every consumer; a figure the
daemon cannot produce (no assignment in time, a client error) is reported as an ``error`` field.

Run: ``.venv/bin/python bench/groups.py [--records 1000000] [--consumers 4] [--partitions 4]
[--batch 500] [--rounds 3] [--protocol classic|consumer]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import PRODUCER  # noqa: E402
from tests.e2e.conftest import free_port  # noqa: E402

#: One group member (``python -c``): argv is the client configuration (JSON), the topic, the batch
#: size, the stop file and the assignment timeout (s). It drains what it is assigned, committing
#: asynchronously after every batch, until the stop file exists; then it closes (LeaveGroup) and
#: prints one JSON line: records read, first/last record times (``time.time()``), distinct
#: (partition, offset) pairs read, and the client errors seen. No assignment within the timeout →
#: ``{"error": …}``.
_MEMBER = r"""
import json, os, sys, time
from confluent_kafka import Consumer
conf, topic, batch, stop_file, assign_timeout = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
errors = []
assigned = []
c = Consumer({**conf, "error_cb": lambda e: errors.append(str(e))})
c.subscribe([topic], on_assign=lambda cons, parts: assigned.append(time.time()))
started = time.time()
n = 0
first = last = None
seen = set()
while not os.path.exists(stop_file):
    msgs = c.consume(num_messages=batch, timeout=0.2)
    if not msgs:
        if not assigned and time.time() - started > assign_timeout:
            break
        continue
    for m in msgs:
        if m.error() is None:
            n += 1
            seen.add((m.partition(), m.offset()))
    now = time.time()
    first = first if first is not None else now
    last = now
    c.commit(asynchronous=True)
c.close()
out = {"records": n, "distinct": len(seen), "first": first, "last": last, "started": started,
       "assigned": assigned[:1], "errors": sorted(set(errors))[:5]}
if not assigned:
    out["error"] = f"no assignment within {assign_timeout:.0f} s"
print(json.dumps(out))
"""


def _client_conf(bootstrap: str, group: str, protocol: str) -> dict:
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
    if protocol != "classic":
        conf["group.protocol"] = protocol
    return conf


def bench_consume(bootstrap: str, tmp: Path, records: int, consumers: int, partitions: int, batch: int, protocol: str) -> dict:
    from tests.e2e.helpers import committed_offsets, create_topic

    topic, group = "bench-groups", f"bench-consume-{protocol}"
    create_topic(bootstrap, topic, partitions)
    pr = subprocess.run([sys.executable, "-c", PRODUCER, json.dumps({"bootstrap.servers": bootstrap}), topic, str(records), f"partitions={partitions}"],
                        capture_output=True, text=True, timeout=900)
    out: dict = {"records": records, "consumers": consumers, "partitions": partitions, "batch": batch,
                 "produce_records_per_s": round(float(pr.stdout.strip() or -1))}
    ends = {p: records // partitions + (1 if p < records % partitions else 0) for p in range(partitions)}
    stop_file = tmp / "stop-consume"
    conf = json.dumps(_client_conf(bootstrap, group, protocol))
    t0 = time.time()
    procs = [subprocess.Popen([sys.executable, "-c", _MEMBER, conf, topic, str(batch), str(stop_file), "60"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(consumers)]
    drained_at = None
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and any(p.poll() is None for p in procs):
        time.sleep(0.5)
        if committed_offsets(bootstrap, group, topic, partitions) == ends:
            drained_at = time.time()
            break
    stop_file.touch()
    res = []
    for p in procs:
        try:
            so, se = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            so, se = p.communicate()
        try:
            res.append(json.loads(so.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            res.append({"error": f"member exited with {p.returncode}: {se[-500:]}"})
    errs = sorted({r["error"] for r in res if "error" in r} | {e for r in res for e in r.get("errors", [])})
    total = sum(r.get("records", 0) for r in res)
    firsts = [r["first"] for r in res if r.get("first")]
    lasts = [r["last"] for r in res if r.get("last")]
    span = max(lasts) - min(firsts) if firsts and lasts else 0
    out.update({
        "records_read": total,
        "duplicates": total - sum(r.get("distinct", 0) for r in res),
        # re-read by another member after a rebalance (at-least-once: its owner's async commit
        # had not landed when the partition moved)
        "redelivered": total - records if drained_at else None,
        "records_per_member": [r.get("records", 0) for r in res],
        # per member, seconds after the members were started: first assignment, first and last read
        "member_timeline_s": [{k: round(v - t0, 2) for k, v in (("assigned", (r.get("assigned") or [None])[0]), ("first", r.get("first")),
                                                                 ("last", r.get("last"))) if v is not None} for r in res],
        "records_per_s": round(total / span) if span > 0 and drained_at else None,
        "subscribe_to_drained_s": round(drained_at - t0, 2) if drained_at else None,
        # the commits trail the reads: each group's OffsetCommits are appended one at a time
        "commit_lag_s": round(drained_at - max(lasts), 2) if drained_at and lasts else None,
        "committed_records_per_s": round(records / (drained_at - min(firsts))) if drained_at and firsts else None,
        "first_assignment_s": round(min(r["assigned"][0] for r in res if r.get("assigned")) - t0, 2) if any(r.get("assigned") for r in res) else None,
    })
    if drained_at is None:
        errs.append("the group's committed offsets never reached the end of every partition")
    if errs:
        out["error"] = "; ".join(errs)
    return out


def _rebalance_round(bootstrap: str, topic: str, group: str, protocol: str, wait_s: float, timeout_s: float = 60) -> dict:
    """One round: A subscribes to a new group (first join); ``wait_s`` after A's assignment, B
    subscribes (member join)."""
    from confluent_kafka import Consumer

    events: dict[str, list[tuple[str, float, int]]] = {"a": [], "b": []}
    errors: list[str] = []

    def member() -> Consumer:
        return Consumer({**_client_conf(bootstrap, group, protocol), "error_cb": lambda e: errors.append(str(e))})

    def cbs(name: str):
        return dict(on_assign=lambda c, parts: events[name].append(("assign", time.monotonic(), len(parts))),
                    on_revoke=lambda c, parts: events[name].append(("revoke", time.monotonic(), len(parts))))

    a, b = member(), member()
    out: dict = {}
    try:
        t0 = time.monotonic()
        a.subscribe([topic], **cbs("a"))
        while not any(e[0] == "assign" and e[2] for e in events["a"]) and time.monotonic() - t0 < timeout_s:
            a.poll(0.02)
        got = [e for e in events["a"] if e[0] == "assign" and e[2]]
        if not got:
            out["error"] = f"first member got no assignment within {timeout_s:.0f} s"
            return out
        out["first_join_s"] = round(got[0][1] - t0, 3)
        while time.monotonic() - got[0][1] < wait_s:
            a.poll(0.02)
        n_a = len(events["a"])
        t1 = time.monotonic()
        b.subscribe([topic], **cbs("b"))

        def settled() -> bool:
            b_assigned = any(e[0] == "assign" and e[2] for e in events["b"])
            # A's new assignment: an on_assign after the join began (eager: after its revocation)
            a_new = any(e[0] == "assign" for e in events["a"][n_a:])
            return b_assigned and a_new

        while not settled() and time.monotonic() - t1 < timeout_s:
            a.poll(0.01)
            b.poll(0.01)
        if not settled():
            out["error"] = f"the two members had no new assignments within {timeout_s:.0f} s"
            return out
        done = max(max(e[1] for e in events["b"] if e[0] == "assign"), max(e[1] for e in events["a"][n_a:] if e[0] == "assign"))
        out["b_subscribed_after_a_assigned_s"] = round(t1 - got[0][1], 3)
        out["member_join_s"] = round(done - t1, 3)
        out["assignment_sizes"] = [events["a"][-1][2], [e for e in events["b"] if e[0] == "assign"][-1][2]]
        return out
    finally:
        if errors:
            out["client_errors"] = sorted(set(errors))[:5]
        a.close()
        b.close()


def bench_rebalance(bootstrap: str, rounds: int, protocol: str) -> dict:
    from tests.e2e.helpers import create_topic

    topic = "bench-rebalance"
    create_topic(bootstrap, topic, 4)
    # B's subscribe at phases spread over A's heartbeat interval (librdkafka's default 3 s): A
    # learns of the rebalance from its next Heartbeat (REBALANCE_IN_PROGRESS), so the member-join
    # time depends on that phase — from a few ms up to one interval
    rs = []
    for i in range(rounds):
        rs.append(_rebalance_round(bootstrap, topic, f"bench-rebalance-{protocol}-{i}", protocol, wait_s=0.5 + 3.0 * i / rounds))
        if "error" in rs[-1]:
            break  # a failing protocol fails every round the same way
    out: dict = {"rounds": rs}
    for k in ("first_join_s", "member_join_s"):
        xs = sorted(r[k] for r in rs if k in r)
        if xs:
            out[k] = {"min": xs[0], "median": xs[len(xs) // 2], "max": xs[-1]}
    errs = sorted({r["error"] for r in rs if "error" in r})
    if errs:
        out["error"] = "; ".join(errs)
    return out


def run(args: argparse.Namespace) -> dict:
    from tests.e2e.conftest import DaemonProcess  # the e2e harness starts and cleans up the daemon

    os.environ.setdefault("THESPIAN_BASE_IPADDR", "127.0.0.1")
    tmp = Path(tempfile.mkdtemp(prefix="shoal-bench-groups-"))
    d = DaemonProcess(tmp / "data", free_port(), free_port(), {"log.dirs": str(tmp / "data" / "logs")})
    out: dict = {"bench": "groups", "protocol": args.protocol}
    try:
        d.start()
        if not args.skip_consume:
            try:
                out["group_consume"] = bench_consume(d.bootstrap, tmp, args.records, args.consumers, args.partitions, args.batch, args.protocol)
            except Exception as exc:  # report, then go on to the next figure
                out["group_consume"] = {"error": f"{type(exc).__name__}: {exc}"}
        if not args.skip_rebalance:
            try:
                out["rebalance"] = bench_rebalance(d.bootstrap, args.rounds, args.protocol)
            except Exception as exc:
                out["rebalance"] = {"error": f"{type(exc).__name__}: {exc}"}
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        d.stop()
        d.assert_no_processes_left()
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--consumers", type=int, default=4)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--batch", type=int, default=500, help="consume(num_messages=…) per poll; one async commit each")
    ap.add_argument("--rounds", type=int, default=6, help="rebalance rounds (fresh groups)")
    ap.add_argument("--protocol", choices=("classic", "consumer"), default="classic", help="group.protocol of every consumer")
    ap.add_argument("--skip-consume", action="store_true")
    ap.add_argument("--skip-rebalance", action="store_true")
    print(json.dumps(run(ap.parse_args()), indent=2))


if __name__ == "__main__":
    main()
