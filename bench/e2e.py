"""End-to-end benchmark of the daemon with real clients in separate processes; prints ONE JSON
object with every figure issue 14 names (each part its own function, its own fresh daemon started
by the e2e harness ``tests.e2e.conftest.DaemonProcess`` on ``make run``'s defaults: SQLite event
log at ``synchronous=FULL``; only ``log.dirs`` points into the run's temporary data dir, and the
``groups`` part raises ``group.share.max.groups``, see below). Keys name their unit (``_ms``,
``_records_per_s``, ``_mb``). The machine is shared (2 cores): figures are indicative.

Client settings (printed under ``clients``): confluent-kafka 2.16.1 (librdkafka 2.16.0).
Producer ``acks=all``, ``enable.idempotence=true``, 100-byte records, one partition. ShareConsumer
``share.acknowledgement.mode=explicit``, ``max.poll.records=100``: it acknowledges every record
and calls ``commit_async()`` after every poll (issue 14's workload), each in its own process.

Parts (``--part NAME``, repeatable; default: all but ``issue6``):

* ``latency``: produce-to-deliver latency (ms: p50/p99/max) of a paced Producer (issue 14's:
  idempotent, ``acks=all``, here ``linger.ms=0``; warmed up before the clock starts) at 1,000
  records/s for ``--seconds`` (10) to 2 ShareConsumers of one group, 1 partition; each record is
  timed from its scheduled send to its delivery to the application (:func:`_latency`).
* ``latency_10k``: the same at 10,000 records/s.
* ``release``: consume accept-only vs consume with 10% RELEASE, 2 consumers, 1 partition,
  ``--records`` (200,000) each, two topics/groups on one daemon: records/s of distinct records
  fully accepted (first delivery to last ACCEPT over both consumers) and the ratio. RELEASE hits
  the records with ``offset % 10 == 0`` on their first delivery (``delivery_count() == 1``); the
  redelivery is accepted.
* ``scaling``: 1 partition, accept-only, 1 / 2 / 4 / 8 consumers, ``--records`` each (a topic and
  group per count, prefilled before the consumers start): records/s.
* ``slow``: 32 consumers that each spend 5 ms per record (``time.sleep``) on 1 partition; ideal
  32 × 200 = 6,400 records/s. Measured twice (a topic and group each): on a backlog prefilled
  before the consumers start (``backlog``), and with a producer paced at ``--slow-rate`` (8,000)
  records/s, more than the consumers can take (``paced``); both producers use the client's
  default ``linger.ms`` (5). Each figure is the records accepted in a ``--slow-seconds`` (20)
  window after every consumer joined; ``records_per_s`` is the paced one. Consumers use ``max.poll.records=10`` (librdkafka 2.16 sends it as ShareFetch
  ``MaxRecords``; it documents the limit as best effort, and Shoal, like Kafka's default acquire
  mode, ends an acquisition at a log-batch boundary). A slow worker wants few records per poll so
  that the others get work; librdkafka 2.16 has no ``share.acquire.mode`` (KIP-1206). A third
  figure, ``backlog_record_limit``, takes the same backlog with 32 raw ShareFetch v2 members that
  ask for KIP-1206's ``record_limit`` mode (``MaxRecords`` 10), as a Kafka 4.2 Java client with
  ``share.acquire.mode=record_limit`` does: each sleeps 5 ms per record it got and ACCEPTs them
  with its next fetch; the figure is the ACCEPTs the broker confirmed in the window.
* ``groups``: memory and share-group request latency. PSS (MB: the sum of ``Pss`` in
  ``/proc/<pid>/smaps_rollup`` over every process of the daemon, ``DaemonProcess.all_pids``) and the
  process count idle (after start and a 3 s settle, nothing created beyond one prefilled topic),
  then with 10 and with 200 active share groups, and the per-group increment
  ``(pss_N - pss_idle) / N``. Each group has one member driven by raw Kafka requests
  (:func:`_drive_share_groups`, a few driver processes of one thread and one connection per
  group; 200 librdkafka processes are too heavy for 2 cores): it joins with ShareGroupHeartbeat,
  heartbeats at the interval the broker returns (5 s), and sends one ShareFetch every
  ``--group-poll-ms`` (500: the rate of an idle librdkafka consumer's long polls,
  ``fetch.wait.max.ms``) with ``MaxRecords=10`` and ACCEPTs of the previous fetch's records
  piggybacked, on a topic prefilled with batches of 10 records so each fetch finds records and
  its round trip is the broker's time, not a long-poll wait. ``heartbeat_ms`` and
  ``share_fetch_ms`` are p50/p99/max of the round trips (send to response, timed by the driver
  over its socket) during a ``--group-seconds`` (20) window with 200 groups active;
  ``empty_fetches`` counts fetches that found nothing (those waited ``MaxWaitMs``).
  ``group.share.max.groups`` is set to 200 for this part (Kafka's default is 10).
* ``issue6``: issue 6's figures (Thespian ``ask`` cost, ApiVersions/Metadata round trips,
  produce and 3-partition share-consume throughput, memory with 97 groups); not run by default.

Every part's daemon is sampled for PSS every 5 s; ``peak_pss_mb`` is the largest sample of each
part and ``peak_pss_mb_all_parts`` their maximum.

Run: ``.venv/bin/python bench/e2e.py`` (all parts, about 5 minutes);
one part: ``bench/e2e.py --part slow``. The old single-purpose form stays:
``bench/e2e.py --latency-only [--rate 1000 --seconds 10 --consumers 2 --partitions 1 --rounds 3]``.
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
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import PRODUCER, KafkaConnection, pss_kb  # noqa: E402
from tests.e2e.conftest import free_port  # noqa: E402

#: What every ShareConsumer of the issue-14 parts is configured with (besides bootstrap/group).
SHARE_CONSUMER_CONFIG = {"share.acknowledgement.mode": "explicit", "max.poll.records": 100}
#: The slow-consumer part's ShareConsumer settings.
SLOW_CONSUMER_CONFIG = {"share.acknowledgement.mode": "explicit", "max.poll.records": 10}
#: The producer settings of the throughput parts (bench.common.PRODUCER adds acks=all, linger 5 ms).
PRODUCER_CONFIG = {"enable.idempotence": True}
#: The latency parts' producer (issue 14's producer; ``linger.ms`` is the part's).
LATENCY_PRODUCER_CONFIG = {"acks": "all", "enable.idempotence": True}


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def _summary_ms(xs: list[float]) -> dict:
    """p50/p99/max (ms, one decimal) and the sample count of ``xs`` (ms)."""
    if not xs:
        return {"n": 0}
    return {"p50": round(_pct(xs, 0.5), 1), "p99": round(_pct(xs, 0.99), 1), "max": round(max(xs), 1), "n": len(xs)}


class _Daemon:
    """A fresh daemon for one part (context manager): ``app.py run`` through the e2e harness on
    its defaults plus ``overrides``, in a temporary data dir removed afterwards. A thread samples
    the PSS of all its processes every ``sample_s`` seconds; ``peak_pss_mb`` is the largest."""

    def __init__(self, overrides: dict[str, str] | None = None, sample_s: float = 5.0) -> None:
        from tests.e2e.conftest import DaemonProcess

        self.tmp = Path(tempfile.mkdtemp(prefix="shoal-bench-e2e-"))
        self.d = DaemonProcess(self.tmp / "data", free_port(), free_port(), {"log.dirs": str(self.tmp / "data" / "logs"), **(overrides or {})})
        self.peak_pss_kb = 0
        self.stop_error = ""
        self._stop = threading.Event()
        self._sample_s = sample_s
        self._thread = threading.Thread(target=self._sampler, daemon=True)

    @property
    def bootstrap(self) -> str:
        return self.d.bootstrap

    def sample(self) -> dict:
        """``{"processes": n, "pss_mb": x}`` now (and update the peak)."""
        pids = self.d.all_pids()
        kb = pss_kb(pids)
        self.peak_pss_kb = max(self.peak_pss_kb, kb)
        return {"processes": len(pids), "pss_mb": round(kb / 1024, 1)}

    @property
    def peak_pss_mb(self) -> float:
        return round(self.peak_pss_kb / 1024, 1)

    def _sampler(self) -> None:
        while not self._stop.wait(self._sample_s):
            self.sample()

    def __enter__(self) -> "_Daemon":
        try:
            self.d.start()
        except BaseException:
            self.d.stop()
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise
        self._thread.start()
        return self

    def footer(self) -> dict:
        """What every part reports about its daemon: ``peak_pss_mb``, and ``stop_error`` when
        processes outlived the stop (the harness then killed them)."""
        return {"peak_pss_mb": self.peak_pss_mb, **({"stop_error": self.stop_error} if self.stop_error else {})}

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)
        try:
            self.d.stop(60)
            self.d.assert_no_processes_left(60)
        except AssertionError as err:  # stragglers were killed; keep the part's figures
            self.stop_error = str(err)
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)


def _produce(bootstrap: str, topic: str, n: int, conf: dict | None = None) -> float:
    """``n`` 100-byte records into partition 0 of ``topic`` with :data:`bench.common.PRODUCER`
    (separate process; acks=all, linger 5 ms, plus ``conf``); returns its records/s (-1: failed)."""
    cfg = {"bootstrap.servers": bootstrap, **PRODUCER_CONFIG, **(conf or {})}
    pr = subprocess.run([sys.executable, "-c", PRODUCER, json.dumps(cfg), topic, str(n), "partitions=1"], capture_output=True, text=True, timeout=600)
    return float(pr.stdout.strip() or -1)


def _new_topic(bootstrap: str, topic: str, group: str | None = None, partitions: int = 1) -> None:
    """Create ``topic`` and set ``share.auto.offset.reset=earliest`` on ``group`` (when given)."""
    from tests.e2e.helpers import create_topic, set_group_config

    create_topic(bootstrap, topic, partitions)
    if group:
        set_group_config(bootstrap, group, "share.auto.offset.reset", "earliest")


# --------------------------------------------------------------------------------------------
# latency (issue 14: 1,000 and 10,000 records/s)
# --------------------------------------------------------------------------------------------

_LAT_CONSUMER = r"""
import sys, time, json
from confluent_kafka import ShareConsumer, AcknowledgeType
bs, topic, group, n, commit = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "commit"
c = ShareConsumer({"bootstrap.servers": bs, "group.id": group, **json.loads(sys.argv[6])})
c.subscribe([topic])
lat = []; deadline = time.time() + 180; last = None
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
as when other consumers of the group took the rest), ``commit`` or ``next-fetch``, and the
consumer settings (JSON, :data:`SHARE_CONSUMER_CONFIG`). Prints the produce-to-deliver latency of
each record it got (ms, JSON list)."""


def _latency(bootstrap: str, rate: int = 1000, seconds: int = 5, commit_per_poll: bool = True,
             consumers: int = 1, partitions: int = 3, linger_ms: int = 0, tag: str = "", idempotent: bool = True) -> dict:
    """Produce-to-deliver latency (ms: p50, p99, max) of a paced Producer (``rate`` records/s for
    ``seconds``, ``linger.ms`` = ``linger_ms``, round robin over ``partitions``) to ``consumers``
    ShareConsumers of one group, each in its own process (clocks: the same machine). Each record is
    timed from its scheduled send to its delivery to the application. The consumers acknowledge
    every record explicitly (ACCEPT); with ``commit_per_poll`` they also call ``commit_async()``
    after each poll (one ShareAcknowledge per poll), otherwise the acknowledgements ride on the
    next ShareFetch (KIP-932's piggybacking, the client's default path). The producer is
    :data:`LATENCY_PRODUCER_CONFIG` (issue 14's: idempotent, ``acks=all``), warmed up before the
    clock starts; ``idempotent=False`` turns idempotence off (librdkafka then keeps up to 1,000,000
    requests in flight, so with ``linger.ms=0`` every record travels alone however far the broker
    falls behind). ``records`` counts the deliveries (a redelivery counts again)."""
    from confluent_kafka import Producer

    topic = ("latency" if commit_per_poll else "latency-piggyback") + tag
    group = ("lat" if commit_per_poll else "lat-piggyback") + tag
    _new_topic(bootstrap, topic, group, partitions)
    n = rate * seconds
    cs = [subprocess.Popen([sys.executable, "-c", _LAT_CONSUMER, bootstrap, topic, group, str(n), "commit" if commit_per_poll else "next-fetch",
                            json.dumps(SHARE_CONSUMER_CONFIG)], stdout=subprocess.PIPE, text=True) for _ in range(consumers)]
    for c in cs:
        c.stdout.readline()
    time.sleep(3)  # let the consumers join and open their share sessions
    p = Producer({"bootstrap.servers": bootstrap, **LATENCY_PRODUCER_CONFIG, "linger.ms": linger_ms, "enable.idempotence": idempotent})
    # Warm the producer up before the clock starts: an idempotent librdkafka producer holds every
    # record until it has a producer id, and asks for one only on a 500 ms timer when no broker
    # connection is up yet (its "Coordinator not up" PID timer), so the first ~500 records of a
    # cold start would time the client's start-up. One record to another topic and a metadata
    # request for this one connect it, acquire the producer id and learn the partition's leader.
    _new_topic(bootstrap, topic + "-warm-up")
    p.produce(topic + "-warm-up", b"warm-up")
    if p.flush(30) or not p.list_topics(topic, timeout=30).topics.get(topic):
        raise RuntimeError("the latency producer did not warm up")
    t0, w0 = time.perf_counter(), time.time()
    behind = 0.0
    for i in range(n):
        target = t0 + i / rate
        delay = target - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        else:
            behind = max(behind, -delay)
        p.produce(topic, str(w0 + i / rate).encode(), partition=i % partitions)  # the scheduled send
        p.poll(0)
    produced = time.perf_counter() - t0
    p.flush(30)
    flushed = time.perf_counter() - t0
    lat: list[float] = []
    for c in cs:
        lat += json.loads(c.communicate(timeout=240)[0].strip().splitlines()[-1])
    # how far the paced loop itself fell behind its schedule (a late send counts in the latency),
    # and when the last record was handed to the client / acknowledged by the broker (s from start)
    prod = {"producer_behind_schedule_ms_max": round(behind * 1000, 1), "producer_last_send_s": round(produced, 2),
            "producer_flushed_s": round(flushed, 2)}
    if not lat:
        return {"records": 0, **prod}
    return {"p50": round(_pct(lat, 0.5), 1), "p99": round(_pct(lat, 0.99), 1), "max": round(max(lat), 1), "records": len(lat), **prod}


def part_latency(rate: int, seconds: int = 10, overrides: dict[str, str] | None = None) -> dict:
    """Issue 14's latency figure at ``rate`` records/s: 2 consumers, 1 partition,
    ``linger.ms=0``, ``commit_async()`` per poll, on a fresh daemon. Returns
    ``{"produce_to_deliver_ms": {p50, p99, max, records}, "rate_records_per_s", "seconds", "peak_pss_mb"}``."""
    with _Daemon(overrides) as d:
        lat = _latency(d.bootstrap, rate, seconds, True, consumers=2, partitions=1, linger_ms=0)
    return {"rate_records_per_s": rate, "seconds": seconds, "consumers": 2, "partitions": 1, "linger_ms": 0,
            "produce_to_deliver_ms": lat, **d.footer()}


def bench_latency(overrides: dict[str, str] | None, rate: int, seconds: int, consumers: int, partitions: int,
                  linger_ms: int, rounds: int, commit_per_poll: bool = True, idempotent: bool = True) -> dict:
    """Only the produce-to-deliver latency (:func:`_latency`), ``rounds`` times on one daemon (a
    new topic and group each round); returns ``{"latency_rounds": [{p50, p99, max, records}]}``
    plus the parameters (``--latency-only``)."""
    out: dict = {"rate": rate, "seconds": seconds, "consumers": consumers, "partitions": partitions, "linger_ms": linger_ms,
                 "commit_per_poll": commit_per_poll, "idempotent_producer": idempotent}
    with _Daemon(overrides) as d:
        out["latency_rounds"] = [_latency(d.bootstrap, rate, seconds, commit_per_poll, consumers, partitions, linger_ms, tag=f"-{r}",
                                          idempotent=idempotent) for r in range(rounds)]
    return out


# --------------------------------------------------------------------------------------------
# throughput: RELEASE, consumer scaling, slow consumers
# --------------------------------------------------------------------------------------------

_SHARE_CONSUMER = r"""
import json, os, sys, time
from confluent_kafka import ShareConsumer, AcknowledgeType
a = json.loads(sys.argv[1])
c = ShareConsumer({"bootstrap.servers": a["bootstrap"], "group.id": a["group"], **a["config"]})
c.subscribe([a["topic"]])
release_every, work_s, stop_file = a["release_every"], a["work_ms"] / 1000, a["stop_file"]
accepted = released = deliveries = 0; first = last = None; started = idle = time.time(); per_s = {}
print("ready", flush=True)
while time.time() < a["stop_at"] and not (stop_file and os.path.exists(stop_file)):
    ms = c.poll(0.5)
    got = 0
    for m in ms:
        if m.error(): continue
        got += 1
        if first is None: first = time.time()
        if work_s: time.sleep(work_s)
        if release_every and m.delivery_count() == 1 and m.offset() % release_every == 0:
            c.acknowledge(m, AcknowledgeType.RELEASE); released += 1
        else:
            c.acknowledge(m, AcknowledgeType.ACCEPT); accepted += 1; last = time.time()
            per_s[int(last)] = per_s.get(int(last), 0) + 1
    if got:
        deliveries += got; c.commit_async(); idle = time.time()
    elif time.time() - idle > a["idle_exit_s"] and (first is not None or time.time() - started > a["join_grace_s"]):
        break
c.close()
print(json.dumps({"accepted": accepted, "released": released, "deliveries": deliveries, "first": first, "last": last, "accepts_per_s": per_s}))
"""
"""One ShareConsumer as a ``python -c`` script; argv[1] is JSON: ``bootstrap``, ``topic``,
``group``, ``config`` (ShareConsumer settings), ``release_every`` (0: ACCEPT all; k: RELEASE the
records with ``offset % k == 0`` on their first delivery), ``work_ms`` (sleep per record),
``stop_at`` (wall clock), ``stop_file`` (stop once it exists; "" for none), ``idle_exit_s`` (stop
when nothing came for that long, counted from the first record or, for a consumer that got none
because the others took everything, from ``join_grace_s`` after start). It ACCEPTs or RELEASEs each record and
calls ``commit_async()`` after every poll that returned records. Prints ``ready``, then one JSON
line: accepted, released, deliveries, first (wall clock of the first delivery), last (of the last
ACCEPT) and accepts_per_s (whole wall-clock second → ACCEPTs in it)."""


def _run_consumers(bootstrap: str, topic: str, group: str, n: int, *, config: dict | None = None, release_every: int = 0,
                   work_ms: float = 0, stop_at: float | None = None, stop_file: str = "", idle_exit_s: float = 3.0,
                   join_grace_s: float = 10.0, after_ready=None) -> list[dict]:
    """Start ``n`` :data:`_SHARE_CONSUMER` processes of ``group`` on ``topic``, wait for each to
    print ``ready``, run ``after_ready()`` (if given), then wait for them; returns their JSON
    results."""
    arg = {"bootstrap": bootstrap, "topic": topic, "group": group, "config": config or SHARE_CONSUMER_CONFIG,
           "release_every": release_every, "work_ms": work_ms, "stop_at": stop_at or time.time() + 300,
           "stop_file": stop_file, "idle_exit_s": idle_exit_s, "join_grace_s": join_grace_s}
    procs = [subprocess.Popen([sys.executable, "-c", _SHARE_CONSUMER, json.dumps(arg)], stdout=subprocess.PIPE, text=True) for _ in range(n)]
    for p in procs:
        p.stdout.readline()
    if after_ready is not None:
        after_ready()
    return [json.loads(p.communicate(timeout=600)[0].strip().splitlines()[-1]) for p in procs]


def _drain_rate(res: list[dict]) -> dict:
    """Records/s of distinct records accepted: all ACCEPTs over (last ACCEPT - first delivery)."""
    total = sum(r["accepted"] for r in res)
    firsts = [r["first"] for r in res if r["first"]]
    lasts = [r["last"] for r in res if r["last"]]
    span = max(lasts) - min(firsts) if firsts and lasts else 0
    return {"records_per_s": round(total / span) if span > 0 else None, "accepted": total,
            "released": sum(r["released"] for r in res), "deliveries": sum(r["deliveries"] for r in res), "seconds": round(span, 2)}


def part_release(records: int, overrides: dict[str, str] | None = None) -> dict:
    """Accept-only vs 10% RELEASE (each released record redelivered, then accepted): 2 consumers,
    1 partition, ``records`` each, two topics/groups on one fresh daemon, measured one after the
    other. Returns both drain figures (:func:`_drain_rate`) and ``release_over_accept_ratio``."""
    out: dict = {"records": records, "consumers": 2, "partitions": 1, "release_every": 10}
    with _Daemon(overrides) as d:
        for name, every in (("accept_only", 0), ("release_10pct", 10)):
            topic, group = f"rel-{name}", f"rel-{name}"
            _new_topic(d.bootstrap, topic, group)
            out[f"{name}_produce_records_per_s"] = round(_produce(d.bootstrap, topic, records))
            out[name] = _drain_rate(_run_consumers(d.bootstrap, topic, group, 2, release_every=every))
    a, r = out["accept_only"]["records_per_s"], out["release_10pct"]["records_per_s"]
    out["release_over_accept_ratio"] = round(r / a, 3) if a and r else None
    out.update(d.footer())
    return out


def part_scaling(records: int, counts: tuple[int, ...] = (1, 2, 4, 8), overrides: dict[str, str] | None = None) -> dict:
    """1 partition, accept-only, ``counts`` consumers (a topic and group each, prefilled with
    ``records`` before the consumers start), one fresh daemon: ``{count: drain figures}``."""
    out: dict = {"records": records, "partitions": 1, "consumers": {}}
    with _Daemon(overrides) as d:
        for n in counts:
            topic, group = f"scale-{n}", f"scale-{n}"
            _new_topic(d.bootstrap, topic, group)
            _produce(d.bootstrap, topic, records)
            out["consumers"][str(n)] = _drain_rate(_run_consumers(d.bootstrap, topic, group, n))
    out.update(d.footer())
    return out


_PACED_PRODUCER = r"""
import json, sys, time
from confluent_kafka import Producer
conf, topic, rate, seconds = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
p = Producer(conf); payload = b"x" * 100
p.list_topics(timeout=30); time.sleep(1)  # connected, producer id acquired: no start-up burst in one batch
t0 = time.perf_counter(); i = 0; n = int(rate * seconds)
while i < n:
    due = min(n, int((time.perf_counter() - t0) * rate) + 1)
    while i < due:
        p.produce(topic, payload, partition=0); i += 1
    p.poll(0)
    time.sleep(0.001)
print(p.flush(30))
"""
"""A paced Producer as a ``python -c`` script: argv is its config (JSON), topic, records/s and
seconds; 100-byte records into partition 0, the records due handed to the client every
millisecond (a per-record sleep at 8,000 records/s would burn most of a core of the shared
machine in the pacing loop itself). The clock starts once it is connected and (with idempotence)
holds its producer id: records produced before that would leave in one batch of thousands, which
one share consumer acquires whole. Prints the records left unsent after the flush."""


def _wait_members(d: "_Daemon", n: int, timeout_s: float = 60) -> int:
    """Wait until the daemon's status file (``shoal.status.json``, refreshed every 2 s) counts at
    least ``n`` share-group members (or ``timeout_s``); returns the last count."""
    deadline = time.monotonic() + timeout_s
    members = 0
    while time.monotonic() < deadline:
        try:
            members = int(json.loads((d.d.data_dir / "shoal.status.json").read_text()).get("counts", {}).get("members") or 0)
        except (OSError, ValueError):
            members = 0
        if members >= n:
            break
        time.sleep(0.5)
    return members


def _slow_once(d: "_Daemon", feed: str, consumers: int, work_ms: float, rate: int, seconds: int, producer_conf: dict) -> dict:
    """One slow-consumer measurement on daemon ``d`` (a topic and group named ``slow-<feed>``):
    ``feed`` is ``backlog`` (the topic is prefilled with ``rate × (seconds + 15)`` records before
    the consumers start, with the producer's default batching) or ``paced`` (a paced producer
    writes ``rate`` records/s from 2 s after every consumer joined — the status file counts
    ``consumers`` members — until the window ends). The window is the ``seconds`` whole seconds
    starting 6 s after that; the figure is the ACCEPTs inside it per
    second."""
    topic = group = f"slow-{feed}"
    _new_topic(d.bootstrap, topic, group)
    if feed == "backlog":
        _produce(d.bootstrap, topic, rate * (seconds + 15), {k: v for k, v in producer_conf.items() if k != "acks"})
    stop_file = d.tmp / f"{topic}.stop"
    state: dict = {}

    def feed_then_stop() -> None:
        state["joined"] = _wait_members(d, consumers)
        time.sleep(2)
        state["ws"] = int(time.time()) + 6
        if feed == "paced":
            prod = subprocess.Popen([sys.executable, "-c", _PACED_PRODUCER, json.dumps({"bootstrap.servers": d.bootstrap, **producer_conf}),
                                     topic, str(rate), str(6 + seconds + 1)], stdout=subprocess.PIPE, text=True)
            prod.communicate(timeout=seconds + 120)
        else:
            time.sleep(6 + seconds + 1)
        stop_file.touch()

    res = _run_consumers(d.bootstrap, topic, group, consumers, config=SLOW_CONSUMER_CONFIG, work_ms=work_ms,
                         stop_file=str(stop_file), idle_exit_s=3600, after_ready=feed_then_stop)
    ws = state["ws"]
    per = [sum(n for sec, n in r["accepts_per_s"].items() if ws <= int(sec) < ws + seconds) for r in res]
    accepted = sum(per)
    return {"records_per_s": round(accepted / seconds), "accepted_in_window": accepted, "members_joined_before_feed": state["joined"],
            "per_consumer_in_window": sorted(per), "deliveries": sum(r["deliveries"] for r in res),
            # when each consumer got its first record, in s from the window's start
            "first_delivery_s_from_window_start": sorted(round(r["first"] - ws, 1) for r in res if r["first"]),
            "consumers_without_records": sum(1 for r in res if not r["first"])}


def _slow_record_limit(d: "_Daemon", consumers: int, work_ms: float, rate: int, seconds: int, producer_conf: dict, drivers: int = 2) -> dict:
    """:func:`_slow_once`'s backlog with consumers in KIP-1206's ``record_limit`` acquire mode:
    ``consumers`` raw ShareFetch v2 members (:func:`_drive_record_limit_members`, in ``drivers``
    processes; ``MaxRecords`` 10, as :data:`SLOW_CONSUMER_CONFIG`) on a topic prefilled with
    ``rate × (seconds + 15)`` records by the producer's default batches. The window is the
    ``seconds`` whole seconds starting 8 s after the status file counts every member; the
    figure is the ACCEPTs the broker confirmed inside it per second."""
    topic = group = "slow-backlog-record-limit"
    _new_topic(d.bootstrap, topic, group)
    _produce(d.bootstrap, topic, rate * (seconds + 15), {k: v for k, v in producer_conf.items() if k != "acks"})
    stop_file = d.tmp / f"{topic}.stop"
    kw = {"port": int(d.bootstrap.rsplit(":", 1)[1]), "topic": topic, "group": group, "work_ms": work_ms, "max_records": 10,
          "stop_at": time.time() + 120 + seconds, "stop_file": str(stop_file)}
    share = [consumers // drivers + (1 if i < consumers % drivers else 0) for i in range(drivers)]
    procs = [subprocess.Popen([sys.executable, "-c", _RECORD_LIMIT_DRIVER, str(ROOT), json.dumps({**kw, "members": n})],
                              stdout=subprocess.PIPE, text=True) for n in share if n]
    joined = _wait_members(d, consumers)
    ws = int(time.time()) + 8
    time.sleep(max(0.0, ws + seconds + 1 - time.time()))
    stop_file.touch()
    res = [json.loads(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in procs]
    accepted = sum(n for r in res for sec, n in r["accepts_per_s"].items() if ws <= int(sec) < ws + seconds)
    errors: dict[str, int] = {}
    for r in res:
        for k, v in r["errors"].items():
            errors[k] = errors.get(k, 0) + v
    firsts = sorted(f for r in res for f in r["firsts"])
    return {"records_per_s": round(accepted / seconds), "accepted_in_window": accepted, "members_joined_before_feed": joined,
            "acquire_mode": "record_limit", "max_records": 10, "client": "raw ShareFetch v2 (bench.e2e._drive_record_limit_members)",
            "first_delivery_s_from_window_start": [round(firsts[0] - ws, 1), round(firsts[-1] - ws, 1)] if firsts else [],
            "consumers_without_records": consumers - len(firsts), "errors": errors}


def part_slow(consumers: int = 32, work_ms: float = 5.0, rate: int = 8000, seconds: int = 20,
              overrides: dict[str, str] | None = None, feeds: tuple[str, ...] = ("paced", "backlog", "backlog_record_limit")) -> dict:
    """``consumers`` ShareConsumers (:data:`SLOW_CONSUMER_CONFIG`) of one group that each sleep
    ``work_ms`` per record, on 1 partition of a fresh daemon, once per ``feeds`` (see
    :func:`_slow_once`: a prefilled backlog, and a producer paced at ``rate`` records/s, above the
    ideal ``consumers × 1000 / work_ms`` so the consumers never starve). ``records_per_s`` is the
    paced figure (a live stream, issue 14's workload), ``fraction_of_ideal`` relates it to the
    ideal. The backlog figure shows what the producer's default batches (up to 10,000 records,
    1 MB) do: Shoal, like Kafka's default acquire mode, acquires whole log batches, so one
    consumer may hold a batch far larger than ``max.poll.records``; ``backlog_record_limit`` is
    the same backlog taken by consumers that ask for KIP-1206's ``record_limit`` mode
    (:func:`_slow_record_limit`)."""
    ideal = consumers * 1000 / work_ms
    producer_conf = {"acks": "all", "enable.idempotence": True}  # linger.ms: the client's default (5)
    out: dict = {"consumers": consumers, "work_ms_per_record": work_ms, "partitions": 1, "ideal_records_per_s": round(ideal),
                 "producer_rate_records_per_s": rate, "window_s": seconds,
                 "consumer_config": SLOW_CONSUMER_CONFIG, "producer_config": producer_conf}
    with _Daemon(overrides) as d:
        for feed in feeds:
            if feed == "backlog_record_limit":
                out[feed] = _slow_record_limit(d, consumers, work_ms, rate, seconds, producer_conf)
            else:
                out[feed] = _slow_once(d, feed, consumers, work_ms, rate, seconds, producer_conf)
    out["records_per_s"] = out[feeds[0]]["records_per_s"]
    out["fraction_of_ideal"] = round(out["records_per_s"] / ideal, 3)
    out.update(d.footer())
    return out


# --------------------------------------------------------------------------------------------
# memory and request latency with many active share groups
# --------------------------------------------------------------------------------------------



def _drive_share_groups(port: int, topic: str, groups: list[str], poll_ms: int, max_records: int, max_wait_ms: int = 500) -> None:
    """A share-group driver process: one thread and one connection per group in ``groups``, each
    a member that joins (ShareGroupHeartbeat v1, epoch 0, subscribed to ``topic``), heartbeats
    every ``heartbeat_interval`` the broker returns, and once assigned sends a ShareFetch v1
    every ``poll_ms`` (``MaxRecords``/``BatchSize`` = ``max_records``, ``MaxWaitMs`` =
    ``max_wait_ms``, ``MinBytes`` 1) carrying the ACCEPTs of the previous fetch's acquired ranges
    (epoch 0 opens the share session; a session error reopens it). Protocol on stdio: prints
    ``ready <n>`` (members that completed a fetch, or all after 120 s), reads one line
    ``<window start> <window end>`` (wall clock, s), records the round trip (ms, send to
    response) of each request sent inside the window, stops at its end (each member leaves with
    epoch -1) and prints one JSON line ``{"heartbeat_ms": [...], "share_fetch_ms": [...],
    "empty_fetches": n, "errors": {name: n}}``."""
    import datetime
    import uuid
    from collections import Counter

    from kio.schema.share_fetch.v1.request import AcknowledgementBatch, FetchPartition, FetchTopic, ShareFetchRequest
    from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
    from kio.static.primitive import i8, i32

    window = [float("inf"), float("inf")]
    stop = threading.Event()
    lock = threading.Lock()
    ready: set[str] = set()
    hb_ms: list[float] = []
    fetch_ms: list[float] = []
    errors: Counter = Counter()
    empty = [0]

    def member(group: str) -> None:
        try:
            conn = KafkaConnection(port)
        except OSError as exc:
            with lock:
                errors[type(exc).__name__] += 1
            return
        member_id, epoch, interval, next_hb = str(uuid.uuid4()), 0, 5.0, 0.0
        topic_id, session, acks = None, 0, ()
        while not stop.is_set():
            now = time.monotonic()
            try:
                if now >= next_hb:
                    sent = time.time()
                    t0 = time.perf_counter()
                    r = conn.ask(76, 1, ShareGroupHeartbeatRequest(group_id=group, member_id=member_id, member_epoch=i32(epoch), rack_id=None,
                                                                   subscribed_topic_names=(topic,) if epoch == 0 else None))
                    dt = (time.perf_counter() - t0) * 1000
                    with lock:
                        if window[0] <= sent <= window[1]:
                            hb_ms.append(dt)
                        if int(r.error_code):
                            errors[f"heartbeat:{int(r.error_code)}"] += 1
                    if int(r.error_code):
                        epoch, next_hb = 0, now + 1.0
                        continue
                    epoch = int(r.member_epoch)
                    interval = r.heartbeat_interval.total_seconds() or 5.0
                    next_hb = now + interval
                    if r.assignment is not None and r.assignment.topic_partitions:
                        topic_id = r.assignment.topic_partitions[0].topic_id
                if topic_id is None:
                    stop.wait(0.2)
                    next_hb = min(next_hb, time.monotonic() + 0.5)  # the assignment comes with a later heartbeat
                    continue
                parts = (FetchTopic(topic_id=topic_id, partitions=(FetchPartition(partition_index=i32(0), acknowledgement_batches=acks),)),) \
                    if session == 0 or acks else ()
                sent = time.time()
                t0 = time.perf_counter()
                r = conn.ask(78, 1, ShareFetchRequest(group_id=group, member_id=member_id, share_session_epoch=i32(session),
                                                      max_wait=datetime.timedelta(milliseconds=max_wait_ms), min_bytes=i32(1),
                                                      max_records=i32(max_records), batch_size=i32(max_records), topics=parts,
                                                      forgotten_topics_data=()))
                dt = (time.perf_counter() - t0) * 1000
                acquired = [a for t in r.responses for p in t.partitions for a in p.acquired_records]
                with lock:
                    if window[0] <= sent <= window[1]:
                        fetch_ms.append(dt)
                        empty[0] += not acquired
                    if int(r.error_code):
                        errors[f"share_fetch:{int(r.error_code)}"] += 1
                    for t in r.responses:
                        for p in t.partitions:
                            if int(p.error_code) or int(p.acknowledge_error_code):
                                errors[f"share_fetch_partition:{int(p.error_code)}/{int(p.acknowledge_error_code)}"] += 1
                    if acquired:
                        ready.add(group)
                if int(r.error_code):
                    session, acks = 0, ()
                else:
                    session = session + 1 if session < 2**31 - 1 else 1
                    acks = tuple(AcknowledgementBatch(first_offset=a.first_offset, last_offset=a.last_offset, acknowledge_types=(i8(1),))
                                 for a in acquired)
                stop.wait(max(0.0, poll_ms / 1000 - (time.perf_counter() - t0)))
            except (OSError, ConnectionError) as exc:
                with lock:
                    errors[type(exc).__name__] += 1
                return
        try:
            conn.ask(76, 1, ShareGroupHeartbeatRequest(group_id=group, member_id=member_id, member_epoch=i32(-1), rack_id=None,
                                                       subscribed_topic_names=None))
            conn.sock.close()
        except (OSError, ConnectionError):
            pass

    threads = [threading.Thread(target=member, args=(g,), daemon=True) for g in groups]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    while len(ready) < len(groups) and time.monotonic() < deadline:
        time.sleep(0.2)
    print(f"ready {len(ready)}", flush=True)
    ws, we = map(float, sys.stdin.readline().split())
    with lock:
        window[0], window[1] = ws, we
    time.sleep(max(0.0, we - time.time()))
    stop.set()
    for t in threads:
        t.join(10)
    print(json.dumps({"heartbeat_ms": hb_ms, "share_fetch_ms": fetch_ms, "empty_fetches": empty[0], "errors": dict(errors)}), flush=True)


_DRIVER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from bench.e2e import _drive_share_groups
_drive_share_groups(**json.loads(sys.argv[2]))
"""
"""Runs :func:`_drive_share_groups` in its own process: argv is the repo root and the keyword
arguments (JSON)."""


def _drive_record_limit_members(port: int, topic: str, group: str, members: int, work_ms: float, max_records: int, stop_at: float,
                                stop_file: str) -> None:
    """A driver process of ``members`` share consumers of ``group`` that ask for KIP-1206's
    ``record_limit`` acquire mode, as a Kafka 4.2 Java client with
    ``share.acquire.mode=record_limit`` does (librdkafka 2.16 cannot): one thread and one
    connection each; it joins (ShareGroupHeartbeat v1, heartbeats at the interval the broker
    returns), then loops: ShareFetch v2 (``ShareAcquireMode`` 1, ``MaxRecords`` ``max_records``,
    ``MaxWaitMs`` 500) carrying the ACCEPTs of the records it got last, then sleeps ``work_ms``
    per record it got (the work). Stops at ``stop_at`` (wall clock) or once ``stop_file`` exists
    (each member ACCEPTs what it holds as it closes its share session, then leaves with epoch
    -1) and prints one JSON line: ``accepts_per_s`` (whole wall-clock second → records whose
    ACCEPT the broker confirmed in it), ``firsts`` (wall clock of each member's first record)
    and ``errors``."""
    import datetime
    import uuid
    from collections import Counter

    from kio.schema.share_fetch.v2.request import AcknowledgementBatch, FetchPartition, FetchTopic, ShareFetchRequest
    from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
    from kio.static.primitive import i8, i32

    lock = threading.Lock()
    per_s: Counter = Counter()
    errors: Counter = Counter()
    firsts: list[float] = []

    def accepts(held: tuple[tuple[int, int], ...]) -> tuple:
        return tuple(AcknowledgementBatch(first_offset=a, last_offset=z, acknowledge_types=(i8(1),)) for a, z in held)

    def heartbeat(conn: KafkaConnection, member_id: str, epoch: int, join: bool):
        return conn.ask(76, 1, ShareGroupHeartbeatRequest(group_id=group, member_id=member_id, member_epoch=i32(epoch), rack_id=None,
                                                          subscribed_topic_names=(topic,) if join else None))

    def member() -> None:
        conn = KafkaConnection(port)
        member_id, epoch, topic_id, next_hb = str(uuid.uuid4()), 0, None, 0.0
        session, held, seen_any = 0, (), False
        while time.time() < stop_at and not os.path.exists(stop_file):
            if time.monotonic() >= next_hb:
                r = heartbeat(conn, member_id, epoch, epoch == 0)
                if int(r.error_code):
                    with lock:
                        errors[f"heartbeat:{int(r.error_code)}"] += 1
                    epoch, next_hb = 0, time.monotonic() + 1.0
                    continue
                epoch = int(r.member_epoch)
                next_hb = time.monotonic() + (r.heartbeat_interval.total_seconds() or 5.0)
                if r.assignment is not None and r.assignment.topic_partitions:
                    topic_id = r.assignment.topic_partitions[0].topic_id
            if topic_id is None:
                time.sleep(0.2)
                next_hb = min(next_hb, time.monotonic() + 0.5)
                continue
            acks = accepts(held)
            parts = (FetchTopic(topic_id=topic_id, partitions=(FetchPartition(partition_index=i32(0), acknowledgement_batches=acks),)),) \
                if session == 0 or acks else ()
            r = conn.ask(78, 2, ShareFetchRequest(group_id=group, member_id=member_id, share_session_epoch=i32(session),
                                                  max_wait=datetime.timedelta(milliseconds=500), min_bytes=i32(1), max_records=i32(max_records),
                                                  batch_size=i32(max_records), share_acquire_mode=i8(1), topics=parts, forgotten_topics_data=()))
            now = time.time()
            if int(r.error_code):
                with lock:
                    errors[f"share_fetch:{int(r.error_code)}"] += 1
                session, held = 0, ()
                continue
            session = session + 1 if session < 2**31 - 1 else 1
            got = [(int(a.first_offset), int(a.last_offset)) for t in r.responses for p in t.partitions for a in p.acquired_records]
            ack_ok = all(int(p.acknowledge_error_code) == 0 for t in r.responses for p in t.partitions)
            with lock:
                if held and ack_ok:
                    per_s[int(now)] += sum(z - a + 1 for a, z in held)
                elif held:
                    errors["acknowledge"] += 1
                if got and not seen_any:
                    firsts.append(now)
            seen_any = seen_any or bool(got)
            held = tuple(got)
            time.sleep(work_ms / 1000 * sum(z - a + 1 for a, z in got))
        try:
            if held:  # the last records' ACCEPTs, with the share session's close
                acks = accepts(held)
                conn.ask(78, 2, ShareFetchRequest(group_id=group, member_id=member_id, share_session_epoch=i32(-1),
                                                  max_wait=datetime.timedelta(0), min_bytes=i32(0), max_records=i32(0), batch_size=i32(0),
                                                  topics=(FetchTopic(topic_id=topic_id, partitions=(FetchPartition(partition_index=i32(0), acknowledgement_batches=acks),)),),
                                                  forgotten_topics_data=()))
            heartbeat(conn, member_id, -1, False)
            conn.sock.close()
        except (OSError, ConnectionError):
            pass

    def run() -> None:
        try:
            member()
        except (OSError, ConnectionError) as exc:
            with lock:
                errors[type(exc).__name__] += 1

    threads = [threading.Thread(target=run, daemon=True) for _ in range(members)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"accepts_per_s": {str(k): v for k, v in per_s.items()}, "firsts": sorted(firsts), "errors": dict(errors)}), flush=True)


_RECORD_LIMIT_DRIVER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from bench.e2e import _drive_record_limit_members
_drive_record_limit_members(**json.loads(sys.argv[2]))
"""
"""Runs :func:`_drive_record_limit_members` in its own process: argv is the repo root and the
keyword arguments (JSON)."""


def part_groups(active: tuple[int, int] = (10, 200), seconds: int = 20, poll_ms: int = 500, groups_per_driver: int = 50,
                overrides: dict[str, str] | None = None) -> dict:
    """Memory idle and with ``active[0]`` and ``active[1]`` active share groups, and heartbeat and
    ShareFetch round trips with ``active[1]`` (see the module doc), on one fresh daemon with
    ``group.share.max.groups`` = ``active[1]``. The groups of the first step stay active in the
    second; PSS with N groups is the largest of three samples 2 s apart once all N are active."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    from tests.e2e.helpers import admin

    few, many = active
    ov = {"group.share.max.groups": str(many), **(overrides or {})}
    topic, max_records = "groups", 10
    out: dict = {"active_groups": list(active), "overrides": {"group.share.max.groups": str(many)}, "poll_ms": poll_ms,
                 "max_records": max_records, "window_s": seconds}
    drivers: list[subprocess.Popen] = []
    with _Daemon(ov) as d:
        _new_topic(d.bootstrap, topic)
        # prefill: batches of 10 records, enough for every group to fetch all along
        prefill = max(5000, int(max_records * (seconds + 60) * 1000 / poll_ms))
        _produce(d.bootstrap, topic, prefill, {"batch.num.messages": max_records, "linger.ms": 1})
        out["prefill_records"] = prefill
        a = admin(d.bootstrap)

        def sample3() -> dict:
            samples = []
            for _ in range(3):
                time.sleep(2)
                samples.append(d.sample())
            return max(samples, key=lambda s: s["pss_mb"])

        time.sleep(1)
        out["idle"] = sample3()

        def start(ids: list[str]) -> None:
            rs = [ConfigResource(ResourceType.GROUP, g, incremental_configs=[ConfigEntry("share.auto.offset.reset", "earliest",
                  incremental_operation=AlterConfigOpType.SET)]) for g in ids]
            for f in a.incremental_alter_configs(rs).values():
                f.result(60)
            new = []
            for i in range(0, len(ids), groups_per_driver):
                kw = {"port": d.d.port, "topic": topic, "groups": ids[i:i + groups_per_driver], "poll_ms": poll_ms, "max_records": max_records}
                new.append(subprocess.Popen([sys.executable, "-c", _DRIVER, str(ROOT), json.dumps(kw)], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, text=True))
            out.setdefault("ready", []).extend(int(p.stdout.readline().split()[1]) for p in new)
            drivers.extend(new)

        try:
            start([f"g-{i}" for i in range(few)])
            out[f"with_{few}"] = sample3()
            start([f"g-{i}" for i in range(few, many)])
            ws = time.time() + 1
            for p in drivers:
                p.stdin.write(f"{ws} {ws + seconds}\n")
                p.stdin.flush()
            out[f"with_{many}"] = sample3()
            hb: list[float] = []
            sf: list[float] = []
            empty, errors = 0, {}
            for p in drivers:
                r = json.loads(p.communicate(timeout=seconds + 60)[0].strip().splitlines()[-1])
                hb += r["heartbeat_ms"]
                sf += r["share_fetch_ms"]
                empty += r["empty_fetches"]
                for k, v in r["errors"].items():
                    errors[k] = errors.get(k, 0) + v
        finally:
            for p in drivers:
                if p.poll() is None:
                    p.kill()
                    p.wait(10)
        idle = out["idle"]["pss_mb"]
        for n in active:
            out[f"pss_mb_per_group_at_{n}"] = round((out[f"with_{n}"]["pss_mb"] - idle) / n, 2)
        out[f"heartbeat_ms_at_{many}"] = _summary_ms(hb)
        out[f"share_fetch_ms_at_{many}"] = _summary_ms(sf)
        out["empty_fetches"] = empty
        out["errors"] = errors
    out.update(d.footer())
    return out


# --------------------------------------------------------------------------------------------
# issue 6's figures (``--part issue6``; not in the default run)
# --------------------------------------------------------------------------------------------

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


def bench_daemon(records: int, overrides: dict[str, str] | None = None, groups: int = 97) -> dict:
    from tests.e2e.conftest import DaemonProcess  # the e2e harness starts and cleans up the daemon
    from tests.e2e.helpers import create_topic, set_group_config
    from wire.protocol import encode_request, request_header

    tmp = Path(tempfile.mkdtemp(prefix="shoal-bench-wire-"))
    # group.share.max.groups 100: the 3 throughput groups plus ``groups``
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


PARTS = ("latency", "latency_10k", "release", "scaling", "slow", "groups")
"""The parts of the default run, in order (``issue6`` is on request only)."""


def main() -> None:
    ap = argparse.ArgumentParser(description="issue 14's end-to-end figures, one JSON object")
    ap.add_argument("--part", action="append", choices=PARTS + ("issue6",), help="run only this part (repeatable); default: all but issue6")
    ap.add_argument("--records", type=int, default=200_000, help="release/scaling: records per topic")
    ap.add_argument("--seconds", type=int, default=10, help="latency parts (and --latency-only): seconds of producing")
    ap.add_argument("--slow-consumers", type=int, default=32)
    ap.add_argument("--slow-rate", type=int, default=8000, help="slow: producer records/s")
    ap.add_argument("--slow-seconds", type=int, default=20, help="slow: measurement window")
    ap.add_argument("--groups", type=int, default=200, help="groups: active share groups of the second step (the first has 10)")
    ap.add_argument("--group-seconds", type=int, default=20, help="groups: latency window")
    ap.add_argument("--group-poll-ms", type=int, default=500, help="groups: one ShareFetch per group every this many ms")
    ap.add_argument("--override", action="append", default=[], help="daemon key=value (every part)")
    ap.add_argument("--issue6-records", type=int, default=50_000, help="issue6: records per throughput topic")
    ap.add_argument("--latency-only", action="store_true", help="only produce-to-deliver latency with the flags below")
    ap.add_argument("--rate", type=int, default=1000, help="--latency-only: records/s")
    ap.add_argument("--consumers", type=int, default=2, help="--latency-only: ShareConsumer processes")
    ap.add_argument("--partitions", type=int, default=1, help="--latency-only: partitions of the topic")
    ap.add_argument("--linger-ms", type=int, default=0, help="--latency-only: the producer's linger.ms")
    ap.add_argument("--rounds", type=int, default=1, help="--latency-only: measurements on the same daemon")
    ap.add_argument("--acks-on-next-fetch", action="store_true", help="--latency-only: no commit_async per poll")
    ap.add_argument("--no-idempotence", action="store_true", help="--latency-only: a producer without idempotence")
    args = ap.parse_args()
    overrides = dict(o.split("=", 1) for o in args.override)
    if args.latency_only:
        lat = bench_latency(overrides, args.rate, args.seconds, args.consumers, args.partitions, args.linger_ms, args.rounds,
                            not args.acks_on_next_fetch, not args.no_idempotence)
        print(json.dumps({"bench": "e2e-latency", "overrides": overrides, **lat}))
        return
    import confluent_kafka

    parts = args.part or list(PARTS)
    result: dict = {"bench": "e2e", "issue": 14, "overrides": overrides, "machine": {"cpus": os.cpu_count(), "shared": True},
                    "clients": {"confluent_kafka": confluent_kafka.__version__, "librdkafka": confluent_kafka.libversion()[0],
                                "share_consumer": SHARE_CONSUMER_CONFIG, "slow_share_consumer": SLOW_CONSUMER_CONFIG,
                                "producer": {"acks": "all", "linger.ms": 5, **PRODUCER_CONFIG}, "latency_producer": {**LATENCY_PRODUCER_CONFIG, "linger.ms": 0},
                                "commit": "commit_async() after every poll"}}
    runs = {
        "latency": lambda: part_latency(1000, args.seconds, overrides),
        "latency_10k": lambda: part_latency(10_000, args.seconds, overrides),
        "release": lambda: part_release(args.records, overrides),
        "scaling": lambda: part_scaling(args.records, overrides=overrides),
        "slow": lambda: part_slow(args.slow_consumers, 5.0, args.slow_rate, args.slow_seconds, overrides),
        "groups": lambda: part_groups((10, args.groups), args.group_seconds, args.group_poll_ms, overrides=overrides),
        "issue6": lambda: {**bench_ask(), **bench_daemon(args.issue6_records, overrides)},
    }
    t0 = time.monotonic()
    for name in parts:
        t = time.monotonic()
        try:
            result[name] = runs[name]()
        except Exception as exc:  # one failed part must not lose the others' figures
            result[name] = {"error": f"{type(exc).__name__}: {exc}"}
        result[name]["elapsed_s"] = round(time.monotonic() - t, 1)
    result["peak_pss_mb_all_parts"] = max((r.get("peak_pss_mb", 0) for r in (result[n] for n in parts)), default=None)
    result["elapsed_s"] = round(time.monotonic() - t0, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
