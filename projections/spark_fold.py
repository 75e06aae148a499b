"""The Spark engine (PySpark): the same SQL folds as DuckDB, run by Spark SQL.

The log is read through JDBC — SQLite with the xerial driver (``/usr/share/java/sqlite-jdbc.jar``,
Debian ``libxerial-sqlite-jdbc-java``), PostgreSQL with ``/usr/share/java/postgresql.jar``
(``libpostgresql-jdbc-java``) — partitioned on ``position`` for parallel reads, or from a Parquet
export of the log (:func:`projections.source.export_parquet`), which is what a cluster should read.
``local[*]`` by default; pass ``master`` (``spark://host:7077``) for a cluster.

The JSON payloads are flattened with ``from_json`` into the views the shared SQL expects
(:mod:`projections.flatten`); ``spark.sql.ansi.doubleQuotedIdentifiers`` lets the SQL quote
identifiers the way DuckDB does. Events stored under an older schema version are upcast on the
driver (those rows only).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from typing import Callable, Sequence

import pyarrow as pa

from projections.duckdb_fold import refusal_reason, streams_sql, used_views
from projections.flatten import spark_view_select, tree_of
from projections.model import STREAMS_TABLE, DomainProjection, domains_by_event_type, event_views, sort_table, sql_projections
from projections.python_fold import ProjectionResult
from projections.source import FOLD_COLUMNS, LogSource, ReplayBounds

__all__ = ["DEFAULT_JARS", "fold_spark", "get_spark", "jdbc_options", "stop_spark"]

DEFAULT_JARS = ("/usr/share/java/sqlite-jdbc.jar", "/usr/share/java/postgresql.jar")
#: Debian's sqlite-jdbc loads its native library from here (package libxerial-sqlite-jdbc-jni).
_JNI_DIR = "/usr/lib/x86_64-linux-gnu/jni"

_log = logging.getLogger(__name__)
_lock = threading.Lock()
_session = None
_session_master: str | None = None


def get_spark(master: str | None = None, shuffle_partitions: int | None = None):
    """The process's SparkSession for ``master`` (default ``local[*]``), created once with the
    JDBC jars, the UI off and Arrow transfers on. A different ``master`` than the running
    session's stops it and starts a new one. Raises ``RuntimeError`` if Java is missing."""
    global _session, _session_master
    master = master or os.environ.get("SHOAL_SPARK_MASTER", "local[*]")
    with _lock:
        if _session is not None and _session_master == master:
            return _session
        if _session is not None:
            _session.stop()
            _session = None
        from pyspark.sql import SparkSession

        jars = ",".join(j for j in DEFAULT_JARS if os.path.exists(j))
        cores = os.cpu_count() or 2
        jopts = f"-Djava.library.path={_JNI_DIR} -Dorg.sqlite.lib.path={_JNI_DIR} -Dorg.sqlite.lib.name=libsqlitejdbc.so"
        # the Python workers run this interpreter (the project's virtualenv), not the system's
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        builder = (
            SparkSession.builder.master(master)
            .appName("shoal-replay")
            .config("spark.jars", jars)
            .config("spark.driver.extraJavaOptions", jopts)
            .config("spark.executor.extraJavaOptions", jopts)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", str(shuffle_partitions or max(16, 4 * cores)))
            .config("spark.sql.adaptive.enabled", "true")
            # nested-column aliasing through posexplode over nested lists loses attributes
            # (INTERNAL_ERROR_ATTRIBUTE_NOT_FOUND on the RLMM segment-epoch view): turn it off
            .config("spark.sql.optimizer.expression.nestedPruning.enabled", "false")
            .config("spark.sql.optimizer.nestedSchemaPruning.enabled", "false")
            .config("spark.sql.ansi.doubleQuotedIdentifiers", "true")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.sql.session.timeZone", "UTC")
            # local mode runs the executors in the driver's JVM: 3 GB lets a 10 M-event replay
            # read over JDBC (cached, then flattened) finish; 2 GB ran out of heap there
            # (bench/replay.py; the whole process peaked at 3.7 GB). SHOAL_SPARK_DRIVER_MEMORY overrides.
            .config("spark.driver.memory", os.environ.get("SHOAL_SPARK_DRIVER_MEMORY", "3g"))
        )
        _session = builder.getOrCreate()
        _session.sparkContext.setLogLevel("ERROR")
        _session_master = master
        return _session


def stop_spark() -> None:
    """Stop the process's SparkSession, if any."""
    global _session, _session_master
    with _lock:
        if _session is not None:
            _session.stop()
        _session = None
        _session_master = None


def jdbc_options(url: str) -> dict[str, str]:
    """JDBC ``url``/``driver`` options for an event log's SQLAlchemy URL. Raises ``ValueError``
    for an in-memory or unsupported URL."""
    if url.startswith("sqlite"):
        path = url.split(":///", 1)[1] if ":///" in url else ""
        if not path or path == ":memory:":
            raise ValueError("Spark needs a file-backed SQLite event log")
        return {"url": f"jdbc:sqlite:{os.path.abspath(path)}", "driver": "org.sqlite.JDBC"}
    if url.startswith("postgresql"):
        from sqlalchemy.engine import make_url

        u = make_url(url)
        jdbc = f"jdbc:postgresql://{u.host or '127.0.0.1'}:{u.port or 5432}/{u.database}"
        opts = {"url": jdbc, "driver": "org.postgresql.Driver", "user": u.username or "postgres"}
        if u.password:
            opts["password"] = u.password
        return opts
    raise ValueError(f"unsupported event log url {url!r}")


_CUSTOM_SCHEMA = ", ".join(
    f"{f.name} {'BIGINT' if f.type == pa.int64() else 'STRING'}" for f in FOLD_COLUMNS
)


def _read_raw(spark, src: LogSource, bounds: ReplayBounds, types: Sequence[str]):
    from pyspark.sql import functions as F

    if src.parquet is not None:
        df = spark.read.parquet(src.parquet)
        cond = F.col("position") > F.lit(bounds.from_position)
        if bounds.until_position is not None:
            cond &= F.col("position") <= F.lit(bounds.until_position)
        if bounds.until_time_ms is not None:
            cond &= F.col("recorded_at_ms") <= F.lit(bounds.until_time_ms)
        return df.where(cond & F.col("event_type").isin(list(types))).select(*FOLD_COLUMNS.names)
    first, last = src.position_range(bounds)
    types_sql = ", ".join(f"'{t}'" for t in types)
    query = (
        f"(SELECT {', '.join(FOLD_COLUMNS.names)} FROM events WHERE {bounds.sql_where()} "
        f"AND event_type IN ({types_sql})) AS e"
    )
    span = max(1, last - first + 1)
    parts = max(1, min(64, span // 250_000 + 1, (os.cpu_count() or 2) * 4))
    reader = spark.read.format("jdbc").options(**jdbc_options(src.url)).option("dbtable", query)
    reader = reader.option("customSchema", _CUSTOM_SCHEMA).option("fetchsize", "10000")
    if parts > 1:
        reader = (
            reader.option("partitionColumn", "position")
            .option("lowerBound", str(first))
            .option("upperBound", str(last + 1))
            .option("numPartitions", str(parts))
        )
    return reader.load()


def _upcast_stale(spark, raw, types: Sequence[str]):
    """Re-encode the rows stored under an older schema version at the current one.

    Old versions are rare (they exist only between a schema change and the next compaction of
    the log), so the stale rows are brought to the driver, upcast with the codec there (the
    upcasters are Python functions registered in this process) and put back; the current rows
    never leave Spark."""
    from pyspark.sql import functions as F

    from events.base import event_class
    from events.codec import decode_event, encode_event

    current = {t: event_class(t).schema_version for t in types}
    stale_cond = None
    for t, v in current.items():
        c = (F.col("event_type") == t) & (F.col("schema_version") != v)
        stale_cond = c if stale_cond is None else stale_cond | c
    if stale_cond is None:
        return raw
    stale = raw.where(stale_cond).collect()
    if not stale:
        return raw
    fixed = []
    for r in stale:
        d = r.asDict()
        d["data"] = encode_event(decode_event(d["event_type"], d["schema_version"], d["data"], d["position"])).decode()
        d["schema_version"] = current[d["event_type"]]
        fixed.append(d)
    upcast = spark.createDataFrame(fixed, schema=raw.schema)
    return raw.where(~stale_cond).unionByName(upcast)


def fold_spark(
    source: "str | LogSource",
    projections: Sequence[DomainProjection],
    bounds: ReplayBounds = ReplayBounds(),
    progress: Callable[[int], None] | None = None,
    master: str | None = None,
    spark=None,
) -> ProjectionResult:
    """Fold the log with Spark SQL and return the snapshot tables (engine ``"spark"``).

    ``spark``: an existing SparkSession (tests share one); otherwise :func:`get_spark(master)`.
    ``progress(n)`` is called once with the number of events folded.
    """
    if bounds.from_position:
        raise ValueError("a projection folds whole streams: from_position must be 0")
    t0 = time.perf_counter()
    projections, skipped = sql_projections(projections)
    if not projections:
        return ProjectionResult("spark", {STREAMS_TABLE.name: STREAMS_TABLE.schema.empty_table()}, 0, 0, 0.0, {"skipped_domains": skipped})
    spark = spark or get_spark(master)
    spark.conf.set("spark.sql.ansi.doubleQuotedIdentifiers", "true")
    src = LogSource.of(source)
    domains_of = domains_by_event_type(projections)
    types = list(domains_of)
    raw = _upcast_stale(spark, _read_raw(spark, src, bounds, types), types)
    if src.parquet is None:
        raw = raw.cache()  # one JDBC read; a Parquet source is cheaper to re-scan than to cache
    raw.createOrReplaceTempView("shoal_raw")
    # one envelope row per (event, domain folding its type)
    env_parts = [
        "SELECT position, stream_id, stream_version, recorded_at_ms, event_type, "
        f"'{p.name}' AS domain FROM shoal_raw WHERE event_type IN ({', '.join(repr(t) for t in p.event_type_names)})"
        for p in projections
    ]
    spark.sql(" UNION ALL ".join(env_parts)).createOrReplaceTempView("events_env")
    flattened = []
    used = used_views(projections)
    seen: set[str] = set()
    for p in projections:
        for cls in p.event_types:
            vs = [v for v in event_views(cls) if v.name in used and v.name not in seen]
            tree = tree_of(cls)
            for v in vs:
                seen.add(v.name)
                df = spark.sql(spark_view_select(v, tree, "shoal_raw"))
                df.createOrReplaceTempView(v.name)
                flattened.append(df)
    refused: dict[str, str] = {}
    try:
        out: dict[str, pa.Table] = {}
        for p in projections:
            for name, sql in p.sql_views:
                spark.sql(sql).createOrReplaceTempView(name)
            if p.sql_refusal:
                reason = refusal_reason([tuple(r) for r in spark.sql(p.sql_refusal).collect()])
                if reason is not None:
                    refused[p.name] = reason
                    _log.warning("spark: domain %s left out: %s", p.name, reason)
                    continue
            for t in p.sql_tables:
                out[t.name] = sort_table(t, _to_arrow(spark.sql(p.sql[t.name]), t.schema))
        out[STREAMS_TABLE.name] = sort_table(STREAMS_TABLE, _to_arrow(spark.sql(streams_sql(list(refused))), STREAMS_TABLE.schema))
    finally:
        for df in flattened:
            df.unpersist()
        raw.unpersist()
    n = int(sum(out[STREAMS_TABLE.name]["event_count"].to_pylist()))
    last = max(out[STREAMS_TABLE.name]["last_position"].to_pylist(), default=0)
    if progress is not None:
        progress(n)
    return ProjectionResult(
        "spark", out, int(last or 0), n, time.perf_counter() - t0,
        {"skipped_domains": skipped + sorted(refused), "skipped_reasons": refused},
    )


def _to_arrow(df, schema: pa.Schema) -> pa.Table:
    t = df.toArrow()
    if t.num_rows == 0:
        return schema.empty_table()
    return t
