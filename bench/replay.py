"""Replay benchmark: events per second of each projection engine, and peak memory, printed as JSON.

    python bench/replay.py [--sizes 1000000,10000000] [--engines python,duckdb,spark]
                           [--dir /tmp/shoal-bench] [--spark-source parquet,jdbc] [--repeat N]

The log holds share-group events (the domain with a fold in all three engines) over 1,000 group
streams: members joining, epochs, target assignments, reconciliations, sessions, fences. It is
written with a bulk path (``sqlite3.executemany`` straight into the ``events`` table, journal off)
because appending 10 M events through the log's durable path would take most of an hour; the
rows are exactly what ``EventLog.append`` writes (same schema, codec, contiguous positions).
Each engine runs in its own process, so ``peak_rss_mb`` is that engine's alone (for Spark, the
driver's plus the JVM's high-water marks). Figures are per process, wall clock, including the
read of the log (ADBC for Python; DuckDB's own ``sqlite_scan`` for DuckDB; for Spark, each of
``--spark-source``: the log's Parquet export (``app.py export``, read from its typed part) or
JDBC). The export is made once per log (``export_seconds``, printed when it is made: not part of
the replay's time) and reused. ``class_data_archive`` says whether Spark's JVM started on the
class-data archive (``make bench`` builds it: projections/spark_cds.py). DuckDB's
``ingest_seconds`` (reading and staging the log) and ``sql_seconds`` (the folds), Spark's
``stage_seconds`` and ``sql_seconds``, are printed beside the totals.
"""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STREAMS = 1000


def _events_for(i: int):
    """The i-th event of the generated workload: ``(stream_id, event)``."""
    from events import share_group as sg

    g = i % STREAMS
    step = i // STREAMS
    gid = f"group-{g}"
    m = f"member-{(step // 6) % 7}"
    k = step % 6
    if k == 0:
        ev = sg.MemberSubscriptionUpdated(gid, m, "client", "/10.0.0.1", None if step % 2 else "rack-a", ("orders",))
    elif k == 1:
        ev = sg.GroupEpochBumped(gid, step)
    elif k == 2:
        ev = sg.TargetAssignmentUpdated(
            gid, step, (sg.MemberTarget(m, (sg.TopicPartitions("AAAAAAAAAAAAAAAAAAAAAQ", (0, 1, 2)),)),)
        )
    elif k == 3:
        ev = sg.MemberAssignmentReconciled(gid, m, step, step - 1, (sg.TopicPartitions("AAAAAAAAAAAAAAAAAAAAAQ", (step % 3,)),))
    elif k == 4:
        ev = sg.ShareSessionOpened(gid, m, (sg.TopicPartitions("AAAAAAAAAAAAAAAAAAAAAQ", (0,)),))
    else:
        ev = sg.MemberFenced(gid, f"member-{(step // 6 + 3) % 7}", "SESSION_TIMEOUT")
    return f"share-group:{gid}", ev


def build_log(path: Path, n: int) -> str:
    """Write ``n`` events to a fresh SQLite log at ``path`` (bulk path); returns its URL."""
    from events.codec import encode_event
    from store.event_log import open_event_log

    url = f"sqlite:///{path}"
    if path.exists():
        with sqlite3.connect(path) as c:
            if c.execute("SELECT count(*) FROM events").fetchone()[0] == n:
                return url
        path.unlink()
    open_event_log(url).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    versions: dict[str, int] = {}
    now = int(time.time() * 1000)
    rows = []
    for i in range(n):
        sid, ev = _events_for(i)
        v = versions.get(sid, 0) + 1
        versions[sid] = v
        rows.append((i + 1, str(uuid.UUID(int=i + 1)), sid, v, type(ev).event_type, 1, now + i // 1000, encode_event(ev).decode()))
        if len(rows) == 200_000:
            conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?,?)", rows)
            rows.clear()
    if rows:
        conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?,?)", rows)
    conn.commit()
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()
    return url


def _jvm_hwm_mb() -> float:
    """High-water RSS of this process's JVM children (Spark), from /proc."""
    me = os.getpid()
    total = 0.0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid != me:
                continue
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1]) / 1024
        except (OSError, ValueError, IndexError):
            continue
    return total


def run_engine(engine: str, url: str, spark_source: str) -> dict:
    """Fold the log at ``url`` with ``engine`` in this process; returns the figures."""
    from projections.model import domain_projections

    ps = domain_projections(["share_group"])
    jvm = 0.0
    extra = {}
    if engine == "python":
        from projections.python_fold import fold_python

        t0 = time.perf_counter()
        r = fold_python(url, ps)
    elif engine == "duckdb":
        from projections.duckdb_fold import fold_duckdb

        t0 = time.perf_counter()
        r = fold_duckdb(url, ps)
    else:
        from projections.spark_fold import fold_spark, get_spark, stop_spark

        source = url
        if spark_source == "parquet":
            from projections.source import export_parquet, read_typed_manifest

            d = Path(url.split(":///", 1)[1]).with_suffix(".parquet.d")
            if read_typed_manifest(d) is None:
                te = time.perf_counter()
                export_parquet(url, d)
                extra["export_seconds"] = round(time.perf_counter() - te, 2)
            source = str(d)
        from projections.spark_cds import archive_java_options

        extra["class_data_archive"] = bool(archive_java_options())
        spark = get_spark()
        t0 = time.perf_counter()
        r = fold_spark(source, ps, spark=spark)
        jvm = _jvm_hwm_mb()
        stop_spark()
    secs = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "engine": engine,
        "events": r.event_count,
        "seconds": round(secs, 3),
        "events_per_second": round(r.event_count / secs) if secs else None,
        "peak_rss_mb": round(rss + jvm, 1),
        "rows": {k: t.num_rows for k, t in r.tables.items()},
        **{k: v for k, v in r.extra.items() if k.endswith("_seconds") or k == "read_via"},
        **extra,
    }


def _run_once(eng: str, url: str, src: str) -> dict:
    """One engine run in a child process: its JSON figures, or the error it ended with."""
    p = subprocess.run(
        [sys.executable, __file__, "--run", eng, "--url", url, "--spark-source", src],
        capture_output=True, text=True, cwd=ROOT,
    )
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode == 0 and lines:
        return json.loads(lines[-1])
    # the cause (first lines naming an error) and the end of the trace
    causes = [l.strip() for l in p.stderr.splitlines() if "Error" in l or "Exception" in l][:6]
    return {"engine": eng, "error": " | ".join(causes)[:2000], "stderr_tail": p.stderr[-1000:]}


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--engines", default="python,duckdb,spark")
    ap.add_argument("--dir", default="/tmp/shoal-bench")
    ap.add_argument("--spark-source", default="parquet,jdbc", help="comma-separated: parquet (the typed export), jdbc")
    ap.add_argument("--repeat", type=int, default=1, help="runs per engine and size; the median run is reported, with every run's rate")
    ap.add_argument("--run", help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        print(json.dumps(run_engine(args.run, args.url, args.spark_source)))
        return
    out = {"machine": {"cpus": os.cpu_count()}, "workload": "share_group events over 1000 streams", "results": []}
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    for n in [int(s) for s in args.sizes.split(",") if s]:
        t0 = time.perf_counter()
        url = build_log(Path(args.dir) / f"events-{n}.db", n)
        out["results"].append({"size": n, "build_seconds": round(time.perf_counter() - t0, 1)})
        runs = []
        for eng in [e for e in args.engines.split(",") if e]:
            if eng == "spark":
                runs += [(eng, src) for src in args.spark_source.split(",") if src]
            else:
                runs.append((eng, "jdbc"))
        for eng, src in runs:
            figs = [_run_once(eng, url, src) for _ in range(max(1, args.repeat))]
            ok = [f for f in figs if "error" not in f]
            if not ok:
                fig = figs[0]
            else:  # the run with the median rate, and every run's rate beside it
                ok.sort(key=lambda f: f["events_per_second"])
                fig = dict(ok[len(ok) // 2])
                if len(figs) > 1:
                    fig["runs_events_per_second"] = [f.get("events_per_second") for f in figs]
            fig["size"] = n
            if eng == "spark":
                fig["source"] = src
            out["results"].append(fig)
            print(json.dumps(fig), file=sys.stderr, flush=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
