"""Benchmark of a 3-node Shoal cluster on this machine (issue 15); prints ONE JSON object.

Three ``app.py run`` daemons on 127.0.0.1 share a fresh PostgreSQL database as their event log
(``broker.session.timeout.ms=3000``, ``broker.heartbeat.interval.ms=500``), started and SIGKILLed
by the e2e harness (``tests.e2e.test_cluster_e2e.Cluster`` over ``tests.e2e.conftest``: a kill
takes the ``app.py run`` process and its whole Thespian actor system). Every topic has RF=3 and
``min.insync.replicas=2``. Keys name their unit (``_ms``, ``_s``, ``_mb_per_s``,
``_records_per_s``). The machine is shared (2 cores): figures are indicative.

Parts (``--part NAME``, repeatable; default all, in this order, on one cluster):

* ``throughput``: ``--records`` (300,000) 100-byte records, acks=all, ``linger.ms=5`` (the
  ``bench.common.PRODUCER`` script in its own process), 3 partitions: records/s from the first
  send to the flush.
* ``latency``: a paced Producer (acks=all, idempotent, ``linger.ms`` ``--linger-ms``, 0) at
  ``--rate`` (1,000) records/s for ``--seconds`` (10), 3 partitions, on a topic just created:
  ``warm_up_ms`` is how long the new producer's first record per partition took to be
  acknowledged (producer id, connections, metadata), then the paced run's produce→ack latency
  (ms: p50/p99/max), from the scheduled send to the delivery report; ``over_20_ms`` places the slow acks in time (per 250 ms of send time: how many, the
  slowest and its partition), which tells a start-up stall from a steady tail.
* ``failover``: the idempotent acks=all load of the e2e test (numbered records, round robin over 3
  partitions) runs while the node leading partition 0 is SIGKILLed ``--kills`` (20) times; after
  each kill the node is restarted on its data dir and waited for in every ISR. Per kill:
  ``ack_gap_s`` = from the SIGKILL until every partition has acknowledged a record sent after it
  (:meth:`Load.acked_beyond`, polled every 10 ms). At the end a fresh consumer reads every
  partition to its high watermark: ``lost`` (acknowledged, not found), ``duplicated`` (found more
  than once) and ``misplaced`` (found elsewhere than the acknowledged offset).
* ``share``: ``--share-records`` (100,000) 100-byte records in a 3-partition topic (leaders on
  every node), consumed by 2 ShareConsumers of one group (``bench.e2e``'s consumer script:
  ACCEPT each record, ``commit_async()`` per poll): accepted records/s from the first delivery to
  the last ACCEPT. The partitions the group's coordinator does not lead are served through
  forwarding (``wire/forwarding.py``); ``coordinator`` and ``leaders`` say which. Run with RF 3
  (``share``) and RF 1 (``share_rf1``: the coordinator keeps no replica of the partitions it does
  not lead and reads them from their leaders, ``wire/leader_reads.py``); ``--share-rf`` picks.
* ``catchup``: one follower node is stopped (SIGTERM), ``--catchup-mb`` (200) MB are written in
  10 KiB records (acks=all, ISR of 2), the node is restarted: ``catchup_mb_per_s`` = the bytes its
  logs lacked / the time from the restarted daemon answering ApiVersions until its log files are
  as long as the leader's (the same bytes: followers copy batches verbatim), and ``rejoin_isr_s``
  = from then until every partition's ISR holds it again (Metadata).

Run: ``.venv/bin/python bench/cluster.py`` (about 5–6 minutes); ``--kills 5`` for a short run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench.common import PRODUCER  # noqa: E402
from tests.e2e import test_cluster_e2e as ce  # noqa: E402
from tests.e2e.conftest import _Factory  # noqa: E402
from tests.e2e.helpers import wait_for  # noqa: E402

PG_ADMIN = "host=127.0.0.1 port=5432 dbname=test user=postgres"
PARTITIONS = 3


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))]


def _new_topic(cl: ce.Cluster, topic: str, rf: int = 3) -> None:
    """Create ``topic`` (3 partitions, replication factor ``rf``, min.insync.replicas=min(2, rf))
    and wait for full ISRs."""
    a = AdminClient({"bootstrap.servers": cl.bootstrap()})
    a.create_topics([NewTopic(topic, PARTITIONS, rf, config={"min.insync.replicas": str(min(2, rf))})])[topic].result(60)

    def ready() -> bool:
        md = cl.metadata()
        t = md.topics.get(topic) if md is not None else None
        return t is not None and t.error is None and len(t.partitions) == PARTITIONS and all(len(p.isrs) == rf for p in t.partitions.values())

    assert wait_for(ready, 60), f"{topic} never got full ISRs"


def part_throughput(cl: ce.Cluster, records: int) -> dict:
    """acks=all RF=3 produce throughput (records/s) of ``bench.common.PRODUCER`` in its own process."""
    _new_topic(cl, "tput")
    pr = subprocess.run([sys.executable, "-c", PRODUCER, json.dumps({"bootstrap.servers": cl.bootstrap()}), "tput", str(records),
                         "connect-first", f"partitions={PARTITIONS}"], capture_output=True, text=True, timeout=900, cwd=str(ROOT))
    rate = float(pr.stdout.strip().splitlines()[-1]) if pr.stdout.strip() else -1.0
    return {"records": records, "record_bytes": 100, "linger_ms": 5, "records_per_s": round(rate)}


def part_latency(cl: ce.Cluster, rate: int, seconds: int, linger_ms: int = 0) -> dict:
    """produce→ack latency (ms) of an idempotent acks=all producer paced at ``rate`` records/s."""
    _new_topic(cl, "lat")
    lat: list[float] = []
    slow: list[tuple[float, int, float]] = []
    errors: dict[str, int] = defaultdict(int)
    p = Producer({"bootstrap.servers": cl.bootstrap(), "acks": "all", "enable.idempotence": True, "linger.ms": linger_ms})
    p.list_topics(timeout=30)
    # the producer's start (its producer id, connections to the leaders, their metadata) is
    # timed apart: one record per partition, flushed, before the paced run
    w0 = time.perf_counter()
    for part in range(PARTITIONS):
        p.produce("lat", b"w", partition=part)
    left = p.flush(30)
    first_acks_ms = round((time.perf_counter() - w0) * 1000, 1) if left == 0 else None
    n = rate * seconds
    t0 = time.perf_counter()

    def cb(sent: float):
        def done(err, msg) -> None:
            if err is None:
                ms = (time.perf_counter() - sent) * 1000
                lat.append(ms)
                if ms > 20:
                    slow.append((round(sent - t0, 3), msg.partition(), round(ms, 1)))
            else:
                errors[err.name()] += 1
        return done

    for i in range(n):
        target = t0 + i / rate
        delay = target - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        p.produce("lat", b"x" * 100, partition=i % PARTITIONS, on_delivery=cb(target))
        p.poll(0)
    p.flush(60)
    out = {"rate_records_per_s": rate, "seconds": seconds, "linger_ms": linger_ms, "acked": len(lat), "errors": dict(errors),
           "warm_up_ms": first_acks_ms}
    if lat:
        out["produce_to_ack_ms"] = {"p50": round(_pct(lat, 0.5), 2), "p99": round(_pct(lat, 0.99), 2), "max": round(max(lat), 2)}
    # where the tail sits: per 250 ms of send time, [acks slower than 20 ms, the slowest ms, its partition]
    buckets: dict[float, list] = {}
    for at, part, ms in slow:
        b = buckets.setdefault(int(at * 4) / 4, [0, 0.0, -1])
        b[0] += 1
        if ms > b[1]:
            b[1], b[2] = ms, part
    out["over_20_ms"] = {"count": len(slow), "by_send_time_s": {str(k): v for k, v in sorted(buckets.items())}}
    return out


def part_failover(cl: ce.Cluster, kills: int) -> dict:
    """SIGKILL the leader of partition 0 ``kills`` times under the e2e test's idempotent load."""
    _new_topic(cl, ce.TOPIC)
    load = ce.Load(cl.bootstrap()).start()
    gaps: list[float] = []
    failover: list[float] = []
    rejoin: list[float] = []
    try:
        assert wait_for(lambda: load.acked_count() >= 200, 60), "no load"
        for _ in range(kills):
            victim = cl.partitions()[0][0]
            survivors = tuple(n for n in (1, 2, 3) if n != victim)
            mark = load.last_sent
            t0 = time.perf_counter()
            cl.kill(victim)
            assert wait_for(lambda: (p := cl.partitions(*survivors)) != {} and all(ld in survivors for ld, _r, _i in p.values()), 60, 0.01)
            failover.append(time.perf_counter() - t0)
            assert wait_for(lambda: load.acked_beyond(mark), 120, 0.01), f"no acks after killing node {victim}"
            gaps.append(time.perf_counter() - t0)
            cl.start(victim)
            t1 = time.perf_counter()
            assert wait_for(cl.all_in_sync, 120, 0.1), f"node {victim} did not rejoin"
            rejoin.append(time.perf_counter() - t1)
    finally:
        load.stop()
    log = ce.read_all(cl.bootstrap())
    where: dict[bytes, list[tuple[int, int]]] = defaultdict(list)
    for p, recs in log.items():
        for off, v in recs:
            where[v].append((p, off))
    lost = sum(1 for v in load.acked if v not in where)
    duplicated = sum(1 for w in where.values() if len(w) > 1)
    misplaced = sum(1 for v, a in load.acked.items() if v in where and a[1] is not None and where[v][0] != a)
    return {
        "kills": kills,
        "ack_gap_s": {"max": round(max(gaps), 2), "p50": round(_pct(gaps, 0.5), 2), "all": [round(g, 2) for g in gaps]},
        "new_leader_in_metadata_s_max": round(max(failover), 2),
        "restart_to_full_isr_s_max": round(max(rejoin), 2),
        "acked": len(load.acked), "failed_delivery": len(load.failed), "fatal": load.fatal,
        "read_back": sum(len(v) for v in log.values()), "lost": lost, "duplicated": duplicated, "misplaced": misplaced,
    }


def part_share(cl: ce.Cluster, records: int, rf: int = 3) -> dict:
    """Share-group consumption on the cluster: 2 ShareConsumers drain ``records`` from 3 partitions
    of replication factor ``rf`` (1: the coordinator reads the partitions it does not lead from
    their leaders, ``wire/leader_reads.py``)."""
    from bench.e2e import _drain_rate, _run_consumers
    from tests.e2e.helpers import set_group_config
    from wire.cluster_view import coordinator_node

    topic = group = f"shared-rf{rf}"
    _new_topic(cl, topic, rf)
    set_group_config(cl.bootstrap(), group, "share.auto.offset.reset", "earliest")
    md = cl.metadata()
    leaders = {p.id: p.leader for p in md.topics[topic].partitions.values()} if md is not None else {}
    pr = subprocess.run([sys.executable, "-c", PRODUCER, json.dumps({"bootstrap.servers": cl.bootstrap()}), topic, str(records),
                         "connect-first", f"partitions={PARTITIONS}"], capture_output=True, text=True, timeout=900, cwd=str(ROOT))
    produced = float(pr.stdout.strip().splitlines()[-1]) if pr.stdout.strip() else -1.0
    res = _run_consumers(cl.bootstrap(), topic, group, 2, idle_exit_s=5.0)
    return {"records": records, "consumers": 2, "partitions": PARTITIONS, "replication_factor": rf, "coordinator": coordinator_node(group, [1, 2, 3]),
            "leaders": leaders, "produce_records_per_s": round(produced), **_drain_rate(res)}


def _log_bytes(node_dir: Path, topic: str) -> dict[int, int]:
    """partition → total bytes of ``topic``'s segment files under ``node_dir`` (0 if none)."""
    out = {}
    for p in range(PARTITIONS):
        d = node_dir / "logs" / f"{topic}-{p}"
        out[p] = sum(f.stat().st_size for f in d.glob("*.log")) if d.exists() else 0
    return out


_BULK = r"""
import json, sys
from confluent_kafka import Producer
conf, topic, n, size = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
p = Producer({**conf, "acks": "all", "linger.ms": 5, "batch.size": 1000000, "queue.buffering.max.kbytes": 262144})
v = b"y" * size
for i in range(n):
    while True:
        try:
            p.produce(topic, v, partition=i % 3); break
        except BufferError:
            p.poll(0.05)
print(p.flush(300))
"""


def part_catchup(cl: ce.Cluster, mb: int) -> dict:
    """Stop a node, write ``mb`` MB, restart it: catch-up MB/s and time to rejoin every ISR."""
    topic = "catchup"
    _new_topic(cl, topic)
    parts = cl.partitions(topic=topic)
    # the node leading fewest of the topic's partitions (a stop fences it first: what it leads
    # moves to the others, so it returns as a pure follower)
    victim = min((3, 2, 1), key=lambda n: sum(ld == n for ld, _r, _i in parts.values()))
    node_dir = cl.base / f"node{victim}"
    cl.nodes[victim].stop()
    survivors = tuple(n for n in (1, 2, 3) if n != victim)
    assert wait_for(lambda: all(victim not in isr for _l, _r, isr in cl.partitions(*survivors, topic=topic).values()), 60)
    before = sum(_log_bytes(node_dir, topic).values())
    size = 10 * 1024
    n = mb * 1024 * 1024 // size
    t = time.perf_counter()
    pr = subprocess.run([sys.executable, "-c", _BULK, json.dumps({"bootstrap.servers": cl.bootstrap(*survivors)}), topic, str(n), str(size)],
                        capture_output=True, text=True, timeout=900)
    write_s = time.perf_counter() - t
    assert pr.stdout.strip().endswith("0"), f"bulk producer left records: {pr.stdout} {pr.stderr[-500:]}"
    leader_dir = {p: cl.base / f"node{ld}" for p, (ld, _r, _i) in cl.partitions(*survivors, topic=topic).items()}
    target = {p: _log_bytes(leader_dir[p], topic)[p] for p in range(PARTITIONS)}
    t_launch = time.perf_counter()
    cl.start(victim)
    t_ready = time.perf_counter()
    assert wait_for(lambda: _log_bytes(node_dir, topic) == target, 600, 0.05), "the restarted node never caught up"
    t_caught = time.perf_counter()

    def in_isr() -> bool:
        ps = cl.partitions(*survivors, topic=topic)
        return ps != {} and all(victim in isr for _l, _r, isr in ps.values())

    assert wait_for(in_isr, 300, 0.1), "the restarted node never rejoined the ISRs"
    t_isr = time.perf_counter()
    copied = sum(target.values()) - before
    return {
        "written_mb": round(n * size / 2**20, 1), "write_s": round(write_s, 2), "copied_mb": round(copied / 2**20, 1),
        "restart_s": round(t_ready - t_launch, 2), "catchup_s": round(t_caught - t_ready, 2),
        "catchup_mb_per_s": round(copied / 2**20 / max(t_caught - t_ready, 1e-6), 1),
        "rejoin_isr_s": round(t_isr - t_caught, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description="issue 15's cluster figures, one JSON object")
    ap.add_argument("--part", action="append", choices=["throughput", "latency", "failover", "share", "catchup"])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--linger-ms", type=int, default=0)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--catchup-mb", type=int, default=200)
    ap.add_argument("--share-records", type=int, default=100_000)
    ap.add_argument("--share-rf", type=int, action="append", help="replication factors of the share part (default 3 and 1)")
    args = ap.parse_args()
    parts = args.part or ["throughput", "latency", "failover", "share", "catchup"]

    import confluent_kafka
    import psycopg

    db = f"shoal_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{db}"')
    result: dict = {"bench": "cluster", "nodes": 3, "event_log": "postgresql",
                    "overrides": {"broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 500},
                    "clients": {"confluent_kafka": confluent_kafka.__version__, "librdkafka": confluent_kafka.libversion()[0]}}
    with tempfile.TemporaryDirectory(prefix="shoal-bench-cluster-") as tmp:
        f = _Factory(Path(tmp))
        try:
            cl = ce.Cluster(f, f"postgresql+psycopg://postgres@127.0.0.1:5432/{db}", Path(tmp))
            assert wait_for(lambda: (md := cl.metadata()) is not None and sorted(md.brokers) == [1, 2, 3], 60)
            if "throughput" in parts:
                result["throughput"] = part_throughput(cl, args.records)
            if "latency" in parts:
                result["latency"] = part_latency(cl, args.rate, args.seconds, args.linger_ms)
            if "failover" in parts:
                result["failover"] = part_failover(cl, args.kills)
            if "share" in parts:
                for rf in args.share_rf or [3, 1]:
                    result["share" if rf == 3 else f"share_rf{rf}"] = part_share(cl, args.share_records, rf)
            if "catchup" in parts:
                result["catchup"] = part_catchup(cl, args.catchup_mb)
        finally:
            try:
                f.close()
            except BaseException as exc:  # pytest.fail outside pytest: report, do not hide the figures
                result["teardown_error"] = str(exc)[:500]
            with psycopg.connect(PG_ADMIN, autocommit=True) as c:
                c.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
    print(json.dumps(result))


if __name__ == "__main__":
    main()
