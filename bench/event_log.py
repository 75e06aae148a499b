"""Event-log benchmark: prints one JSON document.

Figures (issue 2): append throughput at batch sizes 1, 100 and 1,000 and with 4 concurrent writer
processes, on SQLite (file, WAL, synchronous=FULL) and PostgreSQL; p50/p99 latency of single-event
appends; ``read_all`` throughput through Arrow (ADBC); and the raw ``sqlite3.executemany`` rate on
the same schema beside ours.

Usage: ``python bench/event_log.py [--events N] [--skip-postgres] [--pg-url URL] [--only CASE ...]``

``--only`` runs just the named cases (e.g. ``--only sqlite-batch100 pg-batch1``); the cases are
``{sqlite,pg}-{batch1,batch100,batch1000,concurrent,reads}``, ``sqlite-raw`` and ``pg-floor`` (the
bare durable commit: one autocommit ``INSERT`` of one row per transaction on a plain psycopg
connection, the lower bound of a single-event append's latency on this machine).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from events import domain_event, new_event  # noqa: E402
from store.event_log import ANY, EventLog, open_event_log  # noqa: E402

PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
PAYLOAD = "x" * 80  # ~100-byte events, as in the reference's baseline


@domain_event("bench.Happened")
@dataclass(frozen=True, slots=True)
class Happened:
    n: int
    note: str


def _events(k: int, start: int = 0):
    return [new_event(Happened(start + i, PAYLOAD)) for i in range(k)]


def bench_appends(log: EventLog, batch: int, total: int) -> dict:
    batches = [_events(batch, i * batch) for i in range(max(1, total // batch))]
    lat: list[float] = []
    t0 = time.perf_counter()
    for i, evs in enumerate(batches):
        s = time.perf_counter()
        log.append(f"b{batch}-{i % 50}", evs, ANY)
        lat.append(time.perf_counter() - s)
    dt = time.perf_counter() - t0
    n = len(batches) * batch
    lat.sort()
    return {"batch": batch, "events": n, "events_per_s": round(n / dt), **_percentiles_ms(lat)}


def _percentiles_ms(lat: list[float]) -> dict:
    """``p50_ms``/``p99_ms`` of the sorted latencies ``lat`` (seconds)."""
    return {
        "p50_ms": round(lat[len(lat) // 2] * 1000, 3),
        "p99_ms": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000, 3),
    }


def _writer(url: str, wid: int, batch: int, count: int, ready, go, results) -> None:  # a forked process
    try:
        log = open_event_log(url, create=False)
        evs = [_events(batch, j * batch) for j in range(count)]
        ready.put(wid)
        go.wait(120)
        t0 = time.perf_counter()
        for j in range(count):
            log.append(f"w{wid}-{j % 10}", evs[j], ANY)
        results.put((wid, time.perf_counter() - t0, None))
    except BaseException as exc:  # reported to the parent, never a silent hang
        ready.put(wid)
        results.put((wid, 0.0, repr(exc)))


def bench_concurrent(url: str, writers: int, batch: int, count: int) -> dict:
    """``writers`` OS processes append ``count`` batches of ``batch`` events each, all at once;
    the rate is total events over the wall time from the common start to the last finish."""
    ctx = mp.get_context("fork")
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_writer, args=(url, i, batch, count, ready, go, results)) for i in range(writers)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=120)
    t0 = time.perf_counter()
    go.set()
    outcomes = [results.get(timeout=600) for _ in procs]
    dt = time.perf_counter() - t0
    for p in procs:
        p.join(30)
    errors = [err for _, _, err in outcomes if err]
    if errors:
        raise RuntimeError(f"writer failed: {errors[0]}")
    n = writers * batch * count
    return {"writers": writers, "batch": batch, "events": n, "events_per_s": round(n / dt)}


def bench_arrow_read(log: EventLog, repeats: int = 3) -> dict:
    """``log.arrow_batches()`` of the whole log, ``repeats`` times in this process. The first
    read also loads the ADBC driver and (PostgreSQL) opens the pooled connections, ~35 ms each:
    reported apart as ``first_*``; ``events_per_s`` is the median of the later reads."""
    n = log.last_position()
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        table = log.arrow_batches().read_all()
        runs.append(time.perf_counter() - t0)
    later = sorted(runs[1:]) or runs
    dt = later[len(later) // 2]
    return {
        "events": table.num_rows,
        "events_per_s": round(table.num_rows / dt),
        "seconds": round(dt, 3),
        "first_events_per_s": round(table.num_rows / runs[0]),
        "first_seconds": round(runs[0], 3),
        "last_position": n,
    }


def bench_read_all_pages(log: EventLog) -> dict:
    t0 = time.perf_counter()
    n = sum(1 for _ in log.iter_all(page_size=1000))
    dt = time.perf_counter() - t0
    return {"events": n, "events_per_s": round(n / dt)}


def bench_raw_sqlite(path: str, batch: int, total: int, synchronous: str = "FULL") -> dict:
    """The same schema and the same per-append work (read max position and the stream version
    under BEGIN IMMEDIATE, then executemany) in plain sqlite3, without SQLAlchemy. (Ours inserts
    with multi-row INSERTs instead of executemany, so ``ours_vs_raw_batch_100`` can exceed 1.)"""
    log = open_event_log(f"sqlite:///{path}")  # create the schema exactly as ours
    log.close()
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute(f"PRAGMA synchronous={synchronous}")
    sql = ("INSERT INTO events (position, event_id, stream_id, stream_version, event_type, schema_version, "
           "recorded_at_ms, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
    # the very ids ours stores (new_event's time-ordered uuid7), so both insert the same keys
    batches = [[(str(e.event_id), e.data.decode()) for e in _events(batch, i * batch)] for i in range(total // batch)]
    t0 = time.perf_counter()
    for i, rows in enumerate(batches):
        stream = f"raw-{i % 50}"
        con.execute("BEGIN IMMEDIATE")
        pos = con.execute("SELECT max(position) FROM events").fetchone()[0] or 0
        ver = con.execute("SELECT max(stream_version) FROM events WHERE stream_id = ?", (stream,)).fetchone()[0] or 0
        now = time.time_ns() // 1_000_000
        con.executemany(sql, [(pos + 1 + k, eid, stream, ver + 1 + k, "bench.Happened", 1, now, data) for k, (eid, data) in enumerate(rows)])
        con.execute("COMMIT")
    dt = time.perf_counter() - t0
    n = len(batches) * batch
    con.close()
    return {"batch": batch, "events": n, "events_per_s": round(n / dt)}


def bench_pg_commit_floor(dsn: str, total: int) -> dict:
    """The floor under a durable single-event append: ``total`` autocommit ``INSERT`` statements of one
    ~100-byte row (one round trip and one WAL flush each, ``synchronous_commit`` as the server
    has it) on a plain psycopg connection, with p50/p99 latency."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as c:
        commit = c.execute("SHOW synchronous_commit").fetchone()[0]
        c.execute("DROP TABLE IF EXISTS floor_probe_durable")
        c.execute("CREATE TABLE floor_probe_durable (id bigint PRIMARY KEY, data text)")
        lat: list[float] = []
        t0 = time.perf_counter()
        for i in range(total):
            s = time.perf_counter()
            c.execute("INSERT INTO floor_probe_durable VALUES (%s, %s)", (i, PAYLOAD))
            lat.append(time.perf_counter() - s)
        dt = time.perf_counter() - t0
        c.execute("DROP TABLE floor_probe_durable")
    lat.sort()
    return {
        "commits": total,
        "synchronous_commit": commit,
        "commits_per_s": round(total / dt),
        **_percentiles_ms(lat),
    }


def run_backend(url: str, events: int, tmpdir: str | None, prefix: str = "", only: set[str] | None = None) -> dict:
    """Run the backend's cases (all, or those of ``only`` named ``<prefix>-<case>``) on a fresh
    log at ``url``; returns ``{figure name: result}``."""

    def wanted(case: str) -> bool:
        return only is None or f"{prefix}-{case}" in only

    log = open_event_log(url)
    out: dict = {}
    if wanted("batch1"):
        out["append_batch_1"] = bench_appends(log, 1, min(events // 10, 5000))
    if wanted("batch100"):
        out["append_batch_100"] = bench_appends(log, 100, events)
    if wanted("batch1000"):
        out["append_batch_1000"] = bench_appends(log, 1000, events)
    if wanted("concurrent"):
        out["concurrent_4_writers_batch_100"] = bench_concurrent(url, 4, 100, max(1, events // 400))
    if wanted("reads"):
        out["read_all_pages_1000"] = bench_read_all_pages(log)
        out["read_arrow"] = bench_arrow_read(log)
    log.close()
    return out


def _reset_pg(url: str) -> None:
    import sqlalchemy as sa

    eng = sa.create_engine(url)
    with eng.begin() as c:
        c.exec_driver_sql("DROP TABLE IF EXISTS events, snapshots")
    eng.dispose()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--skip-postgres", action="store_true")
    ap.add_argument("--pg-url", default=os.environ.get("SHOAL_BENCH_PG_URL", PG_URL))
    ap.add_argument("--only", nargs="+", metavar="CASE", help="run only these cases, e.g. sqlite-batch100 pg-batch1")
    args = ap.parse_args()
    only = set(args.only) if args.only else None
    known = {f"{b}-{c}" for b in ("sqlite", "pg") for c in ("batch1", "batch100", "batch1000", "concurrent", "reads")}
    known |= {"sqlite-raw", "pg-floor"}
    if only and only - known:
        ap.error(f"unknown case(s) {sorted(only - known)}; known: {sorted(known)}")
    result: dict = {"machine": {"cpus": os.cpu_count()}, "events_per_case": args.events}
    if only is None or any(c.startswith("sqlite-") for c in only):
        with tempfile.TemporaryDirectory() as d:
            result["sqlite"] = run_backend(f"sqlite:///{d}/events.db", args.events, d, "sqlite", only)
            if only is None or "sqlite-raw" in only:
                raw = bench_raw_sqlite(f"{d}/raw.db", 100, args.events)
                result["sqlite"]["raw_sqlite3_executemany_batch_100"] = raw
                if "append_batch_100" in result["sqlite"]:
                    result["sqlite"]["ours_vs_raw_batch_100"] = round(
                        result["sqlite"]["append_batch_100"]["events_per_s"] / raw["events_per_s"], 3
                    )
    if not args.skip_postgres and (only is None or any(c.startswith("pg-") for c in only)):
        pg = args.pg_url.replace("/test", "/shoal_bench") if args.pg_url.endswith("/test") else args.pg_url
        import psycopg
        import sqlalchemy as sa

        dsn = sa.engine.make_url(pg).set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect("host=127.0.0.1 port=5432 dbname=test user=postgres", autocommit=True) as c:
            c.execute("DROP DATABASE IF EXISTS shoal_bench WITH (FORCE)")
            c.execute("CREATE DATABASE shoal_bench")
        result["postgresql"] = run_backend(pg, args.events, None, "pg", only)
        if only is None or "pg-floor" in only:
            result["postgresql"]["bare_durable_commit"] = bench_pg_commit_floor(dsn, min(args.events // 10, 5000))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
