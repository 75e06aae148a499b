"""End-to-end benchmark of the daemon with confluent-kafka clients in separate processes
(issue 6's figures); prints one JSON object.

Figures:

* ``ask_us``: p50/p99 of one Thespian external ``ask`` (``ActorGateway``: a per-thread
  ``asys.private()`` endpoint, reused) to the JournalActor on ``multiprocTCPBase`` — the fixed cost
  every control-plane request pays (one per request, never per record);
* ``private_endpoint_ms``: the cost of opening one ``asys.private()`` endpoint (paid once per
  listener thread, i.e. per connection);
* ``api_versions_us`` / ``metadata_us``: p50/p99 request round trips over a raw socket to the
  running daemon (ApiVersions: no actor; Metadata: one controller ask);
* ``produce_records_per_s``: confluent-kafka Producer (separate process, acks=all, 100-byte
  records, linger 5 ms) into a 3-partition topic;
* ``share_consume_ack_records_per_s``: 1 and 2 ShareConsumers (separate processes, explicit
  ACCEPT of every record, commit per poll) draining the topic.

* ``produce_to_deliver_ms_at_1000_per_s``: p50/p99 latency of a paced producer to a ShareConsumer
  that acknowledges explicitly and calls ``commit_async()`` after every poll (a ShareAcknowledge
  per poll); ``…_acks_on_next_fetch``: the same consumer without the commit, its acknowledgements
  riding on the next ShareFetch;
* ``daemon_rss_mb_all_processes`` (sum of every process's RSS: pages shared between the forked
  actor processes are counted once per process) and ``daemon_pss_mb_all_processes`` (proportional
  set size: shared pages divided among their sharers — the memory the daemon really uses).

Run: ``.venv/bin/python bench/e2e.py [--records N]``; only the latency (issue 14: 2 consumers,
1 partition, 1,000 records/s for 10 s, ``linger.ms=0``): ``bench/e2e.py --latency-only [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import PRODUCER  # noqa: E402
from tests.e2e.conftest import free_port  # noqa: E402


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def bench_ask(n: int = 2000) -> dict:
    os.environ.setdefault("THESPIAN_BASE_IPADDR", "127.0.0.1")
    from thespian.actors import ActorSystem

    from actors.journal import JournalActor
    from actors.messages import Configure, StatusRequest
    from config import load_config
    from wire.gateway import ActorGateway

    tmp = Path(tempfile.mkdtemp(prefix="shoal-bench-wire-"))
    port = free_port()
    asys = ActorSystem("multiprocTCPBase", {"Admin Port": port}, transientUnique=True)
    try:
        cfg = load_config(None, [], str(tmp))
        j = asys.createActor(JournalActor)
        asys.ask(j, Configure(cfg, "journal"), 30)
        gw = ActorGateway(asys)
        t0 = time.perf_counter()
        gw.ask(j, StatusRequest(), 10)
        first = time.perf_counter() - t0
        xs = []
        for _ in range(n):
            t = time.perf_counter()
            gw.ask(j, StatusRequest(), 10)
            xs.append(time.perf_counter() - t)
        gw.close()
        return {"ask_us": {"p50": round(_pct(xs, 0.5) * 1e6), "p99": round(_pct(xs, 0.99) * 1e6), "n": n}, "private_endpoint_ms": round((first - _pct(xs, 0.5)) * 1000, 2)}
    finally:
        asys.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


def _round_trips(port: int, frame: bytes, n: int) -> list[float]:
    xs = []
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(n):
            t = time.perf_counter()
            s.sendall(frame)
            (size,) = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))
            s.recv(size, socket.MSG_WAITALL)
            xs.append(time.perf_counter() - t)
    return xs


_CONSUMER = r"""
import sys, time
from confluent_kafka import ShareConsumer, AcknowledgeType
bs, topic, group, stop_at = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
c = ShareConsumer({"bootstrap.servers": bs, "group.id": group, "share.acknowledgement.mode": "explicit"})
c.subscribe([topic])
n = 0; first = None; last = None; idle = time.monotonic()
while time.monotonic() < stop_at:
    ms = c.poll(0.5)
    got = 0
    for m in ms:
        if m.error(): continue
        c.acknowledge(m, AcknowledgeType.ACCEPT); got += 1
    if got:
        c.commit_sync(30); n += got; now = time.monotonic(); first = first or now; last = now; idle = now
    elif first and time.monotonic() - idle > 3:
        break
c.close()
print(n, first or 0, last or 0)
"""


_LAT_CONSUMER = r"""
import sys, time, json
from confluent_kafka import ShareConsumer, AcknowledgeType
bs, topic, group, n, commit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "commit"
c = ShareConsumer({"bootstrap.servers": bs, "group.id": group, "share.acknowledgement.mode": "explicit"})
c.subscribe([topic])
lat = []; deadline = time.time() + 120; last = None
print("ready", flush=True)
while len(lat) < n and time.time() < deadline and not (last and time.time() - last > 3):
    ms = c.poll(0.1)
    now = time.time()
    for m in ms:
        if m.error(): continue
        lat.append((now - float(m.value().decode())) * 1000); c.acknowledge(m, AcknowledgeType.ACCEPT); last = now
    if ms and commit: c.commit_async()
c.close()
print(json.dumps(lat))
"""
"""One latency ShareConsumer as a ``python -c`` script: argv is bootstrap, topic, group, the
number of records to expect (it stops earlier when nothing came for 3 s after the first record,
as when other consumers of the group took the rest) and ``commit`` or ``next-fetch``. Prints the
produce-to-deliver latency of each record it got (ms, JSON list)."""


def _latency(bootstrap: str, rate: int = 1000, seconds: int = 5, commit_per_poll: bool = True,
             consumers: int = 1, partitions: int = 3, linger_ms: int = 0, tag: str = "") -> dict:
    """Produce-to-deliver latency (ms: p50, p99, max) of a paced Producer (``rate`` records/s for
    ``seconds``, ``linger.ms`` = ``linger_ms``, round robin over ``partitions``) to ``consumers``
    ShareConsumers of one group, each in its own process (clocks: the same machine). Each record is
    timed from its scheduled send to its delivery to the application. The consumers acknowledge
    every record explicitly (ACCEPT); with ``commit_per_poll`` they also call ``commit_async()``
    after each poll (one ShareAcknowledge per poll), otherwise the acknowledgements ride on the
    next ShareFetch (KIP-932's piggybacking, the client's default path). ``records`` counts the
    deliveries (a redelivery counts again)."""
    import json as _json

    from confluent_kafka import Producer

    from tests.e2e.helpers import create_topic, set_group_config

    topic = ("latency" if commit_per_poll else "latency-piggyback") + tag
    group = ("lat" if commit_per_poll else "lat-piggyback") + tag
    create_topic(bootstrap, topic, partitions)
    set_group_config(bootstrap, group, "share.auto.offset.reset", "earliest")
    n = rate * seconds
    cs = [subprocess.Popen([sys.executable, "-c", _LAT_CONSUMER, bootstrap, topic, group, str(n), "commit" if commit_per_poll else "next-fetch"],
                           stdout=subprocess.PIPE, text=True) for _ in range(consumers)]
    for c in cs:
        c.stdout.readline()
    time.sleep(3)  # let the consumers join and open their share sessions
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": linger_ms})
    t0, w0 = time.perf_counter(), time.time()
    for i in range(n):
        target = t0 + i / rate
        delay = target - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        p.produce(topic, str(w0 + i / rate).encode(), partition=i % partitions)  # the scheduled send
        p.poll(0)
    p.flush(30)
    lat: list[float] = []
    for c in cs:
        lat += _json.loads(c.communicate(timeout=180)[0].strip().splitlines()[-1])
    if not lat:
        return {"records": 0}
    return {"p50": round(_pct(lat, 0.5), 1), "p99": round(_pct(lat, 0.99), 1), "max": round(max(lat), 1), "records": len(lat)}


def bench_daemon(records: int, overrides: dict[str, str] | None = None, groups: int = 97) -> dict:
    from tests.e2e.conftest import DaemonProcess  # the e2e harness starts and cleans up the daemon
    from tests.e2e.helpers import create_topic, set_group_config
    from wire.protocol import encode_request, request_header

    tmp = Path(tempfile.mkdtemp(prefix="shoal-bench-wire-"))
    # group.share.max.groups at Kafka's maximum (100): the 3 throughput groups plus ``groups``
    d = DaemonProcess(tmp / "data", free_port(), free_port(), {"log.dirs": str(tmp / "data" / "logs"), "group.share.max.groups": "100", **(overrides or {})})
    out: dict = {}
    try:
        d.start()
        from kio.schema.api_versions.v3.request import ApiVersionsRequest
        from kio.schema.metadata.v12.request import MetadataRequest

        av = encode_request(request_header(18, 3, 1), ApiVersionsRequest(client_software_name="b", client_software_version="1"))
        md = encode_request(request_header(3, 12, 2), MetadataRequest(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False))
        for name, frame in (("api_versions_us", av), ("metadata_us", md)):
            xs = _round_trips(d.port, frame, 500)
            out[name] = {"p50": round(_pct(xs, 0.5) * 1e6), "p99": round(_pct(xs, 0.99) * 1e6)}
        rates = {}
        for consumers in (1, 2, 4):
            topic = f"bench{consumers}"
            create_topic(d.bootstrap, topic, 3)
            group = f"bench-g{consumers}"
            set_group_config(d.bootstrap, group, "share.auto.offset.reset", "earliest")
            pr = subprocess.run([sys.executable, "-c", PRODUCER, json.dumps({"bootstrap.servers": d.bootstrap}), topic, str(records)], capture_output=True, text=True, timeout=600)
            out.setdefault("produce_records_per_s", []).append(round(float(pr.stdout.strip() or -1)))
            stop_at = time.monotonic() + 300
            procs = [subprocess.Popen([sys.executable, "-c", _CONSUMER, d.bootstrap, topic, group, str(stop_at)], stdout=subprocess.PIPE, text=True) for _ in range(consumers)]
            res = [tuple(map(float, p.communicate(timeout=400)[0].split())) for p in procs]
            total = sum(r[0] for r in res)
            span = max(r[2] for r in res) - min(r[1] for r in res if r[1]) if total else 0
            rates[str(consumers)] = {"records": int(total), "records_per_s": round(total / span) if span > 0 else None}
        out["share_consume_ack_records_per_s"] = rates
        out["produce_to_deliver_ms_at_1000_per_s"] = _latency(d.bootstrap)  # commit_async per poll
        out["produce_to_deliver_ms_at_1000_per_s_acks_on_next_fetch"] = _latency(d.bootstrap, commit_per_poll=False)
        _join_share_groups(d.bootstrap, "bench1", groups)
        time.sleep(2.5)  # the status file is refreshed every 2 s
        groups_live = json.loads((d.data_dir / "shoal.status.json").read_text()).get("counts", {}).get("groups")
        rss = pss = 0
        for pid in d.all_pids():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        rss += int(line.split()[1])
                for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1])
            except OSError:
                pass
        out["share_groups_at_memory_sample"] = groups_live
        out["rlmm_partition_actors"] = int(d.overrides.get("remote.log.metadata.topic.num.partitions", 50))
        out["daemon_rss_mb_all_processes"] = round(rss / 1024)
        out["daemon_pss_mb_all_processes"] = round(pss / 1024)
        time.sleep(2.5)
        st = json.loads((d.data_dir / "shoal.status.json").read_text()).get("counts", {})
        out["daemon_actor_asks"] = st.get("actor_asks")
        out["daemon_actor_ask_ms_mean"] = st.get("actor_ask_ms_mean")
        out["daemon_requests"] = st.get("requests")
        out["daemon_processes"] = len(d.all_pids())
    finally:
        d.stop()
        d.assert_no_processes_left()
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def bench_latency(overrides: dict[str, str] | None, rate: int, seconds: int, consumers: int, partitions: int,
                  linger_ms: int, rounds: int, commit_per_poll: bool = True) -> dict:
    """Only the produce-to-deliver latency (:func:`_latency`), ``rounds`` times on one daemon (a
    new topic and group each round); returns ``{"latency_rounds": [{p50, p99, max, records}]}``
    plus the parameters."""
    from tests.e2e.conftest import DaemonProcess

    tmp = Path(tempfile.mkdtemp(prefix="shoal-bench-lat-"))
    d = DaemonProcess(tmp / "data", free_port(), free_port(), {"log.dirs": str(tmp / "data" / "logs"), **(overrides or {})})
    out: dict = {"rate": rate, "seconds": seconds, "consumers": consumers, "partitions": partitions, "linger_ms": linger_ms,
                 "commit_per_poll": commit_per_poll}
    try:
        d.start()
        out["latency_rounds"] = [_latency(d.bootstrap, rate, seconds, commit_per_poll, consumers, partitions, linger_ms, tag=f"-{r}")
                                 for r in range(rounds)]
    finally:
        d.stop()
        d.assert_no_processes_left()
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _join_share_groups(bootstrap: str, topic: str, n: int, seconds: float = 20.0) -> None:
    """Start ``n`` share groups: one ShareConsumer each subscribes and polls for ``seconds``
    (round robin), so the daemon has ``n`` ShareGroupActors when memory is sampled."""
    from confluent_kafka import ShareConsumer

    consumers = [ShareConsumer({"bootstrap.servers": bootstrap, "group.id": f"mem-{i}"}) for i in range(n)]
    for c in consumers:
        c.subscribe([topic])
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.01)
    for c in consumers:
        c.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--asks", type=int, default=2000)
    ap.add_argument("--groups", type=int, default=97, help="share groups live when memory is sampled (with the 3 throughput groups: group.share.max.groups=100)")
    ap.add_argument("--override", action="append", default=[], help="daemon key=value")
    ap.add_argument("--latency-only", action="store_true", help="measure only produce-to-deliver latency (the flags below)")
    ap.add_argument("--rate", type=int, default=1000, help="--latency-only: records/s")
    ap.add_argument("--seconds", type=int, default=10, help="--latency-only: seconds of producing")
    ap.add_argument("--consumers", type=int, default=2, help="--latency-only: ShareConsumer processes")
    ap.add_argument("--partitions", type=int, default=1, help="--latency-only: partitions of the topic")
    ap.add_argument("--linger-ms", type=int, default=0, help="--latency-only: the producer's linger.ms")
    ap.add_argument("--rounds", type=int, default=1, help="--latency-only: measurements on the same daemon")
    ap.add_argument("--acks-on-next-fetch", action="store_true", help="--latency-only: no commit_async per poll")
    args = ap.parse_args()
    overrides = dict(o.split("=", 1) for o in args.override)
    if args.latency_only:
        lat = bench_latency(overrides, args.rate, args.seconds, args.consumers, args.partitions, args.linger_ms, args.rounds,
                            not args.acks_on_next_fetch)
        print(json.dumps({"bench": "e2e-latency", "overrides": overrides, **lat}))
        return
    result = {"bench": "e2e", "records": args.records, "overrides": overrides}
    result.update(bench_ask(args.asks))
    result.update(bench_daemon(args.records, overrides, args.groups))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
