"""The Spark engine (PySpark): the same SQL folds as DuckDB, run by Spark SQL.

The log is read through JDBC — SQLite with the xerial driver (``/usr/share/java/sqlite-jdbc.jar``,
Debian ``libxerial-sqlite-jdbc-java``), PostgreSQL with ``/usr/share/java/postgresql.jar``
(``libpostgresql-jdbc-java``) — partitioned on ``position`` for parallel reads, or from a Parquet
export of the log (:func:`projections.source.export_parquet`), which is what a cluster should read.
``local[*]`` by default; pass ``master`` (``spark://host:7077``) for a cluster.

From the typed part of a Parquet export (each event type's payloads already Parquet structs,
upcast: :func:`projections.source.export_parquet`) the flattened views the shared SQL expects
(:mod:`projections.model`) read the payload fields they need straight from the files: no JSON is
parsed and nothing is cached. Otherwise (JDBC, or an export without a typed part that matches the
event classes) one pass over the log parses each event's JSON payload once (``from_json``, only
the fields the domains' SQL names) into a cached DataFrame and the views are projections of it
(:class:`_Stage`). Either way a domain's helper views that several of its queries read, and
``event_streams``, are computed once (:func:`fold_spark`). The JVM starts on a class-data archive
when one is built (:mod:`projections.spark_cds`).
``spark.sql.ansi.doubleQuotedIdentifiers`` lets the SQL quote identifiers the way DuckDB does.
Events stored under an older schema version are upcast on the driver (those rows only).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import pyarrow as pa

from projections.duckdb_fold import STREAMS_SQL, refusal_reason, streams_sql, used_views
from projections.model import (
    ENVELOPE,
    STREAMS_TABLE,
    Column,
    DomainProjection,
    EventView,
    domains_by_event_type,
    event_views,
    sort_table,
    sql_projections,
)
from projections.python_fold import ProjectionResult
from projections.source import FOLD_COLUMNS, LogSource, ReplayBounds

__all__ = ["DEFAULT_JARS", "fold_spark", "get_spark", "jdbc_options", "stop_spark"]

DEFAULT_JARS = ("/usr/share/java/sqlite-jdbc.jar", "/usr/share/java/postgresql.jar")
#: Debian's sqlite-jdbc loads its native library from here (package libxerial-sqlite-jdbc-jni).
_JNI_DIR = "/usr/lib/x86_64-linux-gnu/jni"

_log = logging.getLogger(__name__)
_VIEW_REF = re.compile(r"\bev_[A-Za-z0-9_]+")
_lock = threading.Lock()
_session = None
_session_master: str | None = None


def get_spark(master: str | None = None, shuffle_partitions: int | None = None):
    """The process's SparkSession for ``master`` (default ``local[*]``), created once with the
    JDBC jars, the UI off and Arrow transfers on; its JVM starts on the class-data archive when
    one is built (:mod:`projections.spark_cds`), with ``$SHOAL_SPARK_JAVA_OPTIONS`` appended. A different ``master`` than the running
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
        # the throughput collector: a replay is a batch job; G1's concurrent work and barriers cost
        # ~10 % of the CPU of a 10 M-event fold (bench/replay.py)
        jopts += " -XX:+UseParallelGC"
        # Spark's classes already parsed and verified (projections.spark_cds), when built
        from projections.spark_cds import archive_java_options

        jopts += " " + archive_java_options()
        jopts += " " + os.environ.get("SHOAL_SPARK_JAVA_OPTIONS", "")
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
            # the folds' shuffles carry per-stream aggregates (small); adaptive execution
            # coalesces them further
            .config("spark.sql.shuffle.partitions", str(shuffle_partitions or max(4, 2 * cores)))
            .config("spark.sql.adaptive.enabled", "true")
            # nested-column aliasing through posexplode over nested lists loses attributes
            # (INTERNAL_ERROR_ATTRIBUTE_NOT_FOUND on the RLMM segment-epoch view): turn it off
            .config("spark.sql.optimizer.expression.nestedPruning.enabled", "false")
            .config("spark.sql.optimizer.nestedSchemaPruning.enabled", "false")
            .config("spark.sql.ansi.doubleQuotedIdentifiers", "true")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.sql.session.timeZone", "UTC")
            # local mode runs the executors in the driver's JVM: the staged events of a 10 M-event
            # replay (cached, sorted by type) fit in 3 GB; bench/replay.py peaked at 3.4 GB (driver
            # and JVM) from Parquet, 2.5 GB over JDBC. SHOAL_SPARK_DRIVER_MEMORY overrides.
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
        from store.arrow_reader import sqlite_path

        path = sqlite_path(url)
        if path is None:
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


def _bounds_condition(bounds: ReplayBounds):
    """A Column: the row (``position``, ``recorded_at_ms``) lies inside ``bounds``."""
    from pyspark.sql import functions as F

    cond = F.col("position") > F.lit(bounds.from_position)
    if bounds.until_position is not None:
        cond &= F.col("position") <= F.lit(bounds.until_position)
    if bounds.until_time_ms is not None:
        cond &= F.col("recorded_at_ms") <= F.lit(bounds.until_time_ms)
    return cond


def _read_raw(spark, src: LogSource, bounds: ReplayBounds, types: Sequence[str]):
    from pyspark.sql import functions as F

    if src.parquet is not None:
        df = spark.read.parquet(src.parquet)
        df = df.where(_bounds_condition(bounds) & F.col("event_type").isin(list(types))).select(*FOLD_COLUMNS.names)
        # a Parquet row group is read by one task: a log exported in few, large row groups (1 M
        # events per file) would be parsed on one core; split each of them into ``k`` tasks that
        # each read it and keep every k-th position (reading is cheap next to parsing the JSON)
        k = spark.sparkContext.defaultParallelism // max(1, df._jdf.rdd().getNumPartitions())
        if k > 1:
            parts = [df.where(F.pmod(F.col("position"), F.lit(k)) == F.lit(i)) for i in range(k)]
            df = parts[0]
            for part in parts[1:]:
                df = df.unionAll(part)
        return df
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


# --------------------------------------------------------------------------- the staged events

_SPARK_TYPES = {pa.int64(): "BIGINT", pa.string(): "STRING", pa.bool_(): "BOOLEAN", pa.float64(): "DOUBLE"}
_ENV = [n for n, _ in ENVELOPE]


def _bq(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _sql_str(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass
class _List:
    """A JSON array in a parse tree; ``elem`` is a dict (object), a ``_List`` or an Arrow type."""

    elem: Any = None


def _merge(node: Any, new: Any) -> Any:
    """``node`` with the locations of ``new`` added (parse-tree union)."""
    if node is None:
        return new
    if isinstance(node, dict) and isinstance(new, dict):
        for k, v in new.items():
            node[k] = _merge(node.get(k), v)
        return node
    if isinstance(node, _List) and isinstance(new, _List):
        node.elem = _merge(node.elem, new.elem)
        return node
    if node == new:
        return node
    raise TypeError(f"conflicting JSON shapes {node!r} and {new!r}")


def _nest(path: tuple[str, ...], leaf: Any) -> Any:
    for k in reversed(path):
        leaf = {k: leaf}
    return leaf


def _level_elem(view: EventView, level: int, wanted: Sequence[Column]) -> Any:
    """The parse tree of one element at list ``level`` (>= 1) of ``view``, with the ``wanted``
    columns of that level and the deeper lists."""
    if level < view.depth and view.list_path[level] == ():
        return _List(_level_elem(view, level + 1, wanted))  # a list of lists
    mine = [c for c in view.columns if c.level == level]
    for c in mine:
        if c.path == ():
            return c.type  # a list of scalars: the element is the value
    node: dict[str, Any] = {}
    for c in wanted:
        if c.level == level:
            node = _merge(node, _nest(c.path, c.type))
    if level < view.depth:
        node = _merge(node, _nest(view.list_path[level], _List(_level_elem(view, level + 1, wanted))))
    return node


def _view_tree(view: EventView, wanted: Sequence[Column]) -> dict[str, Any]:
    """The parse tree (JSON locations) that building ``view``'s ``wanted`` columns needs."""
    tree: dict[str, Any] = {}
    for c in wanted:
        if c.level == 0:
            tree = _merge(tree, _nest(c.path, c.type))
    if view.depth:
        tree = _merge(tree, _nest(view.list_path[0], _List(_level_elem(view, 1, wanted))))
    return tree


def _ddl(node: Any) -> str:
    if isinstance(node, dict):
        return "STRUCT<" + ", ".join(f"{_bq(k)}: {_ddl(v)}" for k, v in node.items()) + ">"
    if isinstance(node, _List):
        return f"ARRAY<{_ddl(node.elem)}>"
    return _SPARK_TYPES[node]


def _access(root: str, path: tuple[str, ...]) -> str:
    return root + "".join("." + _bq(p) for p in path)


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: a star select (``SELECT *``, ``t.*``) or a natural join reads columns the text does not name
_STAR = re.compile(r"\*\s*(?:FROM|,)|\.\*|\bNATURAL\b", re.IGNORECASE)


def _sql_texts(p: DomainProjection) -> list[str]:
    return list((p.sql or {}).values()) + [s for _, s in p.sql_views] + [p.sql_refusal or ""]


class _Stage:
    """How the Spark engine stages the events it folds.

    One pass over the log parses each event's JSON once (``from_json`` with only the fields the
    domains' SQL names) into one cached DataFrame, ``shoal_w``: the envelope, ``tcode`` (the
    event type's index in :attr:`types`), ``stale`` (stored under an older schema version: not
    parsed here, upcast later) and one STRUCT column per parsed event type (NULL on the other
    types' rows). Its rows are sorted by ``tcode`` within each partition, so a scan of one type
    skips the cached batches of the others (min/max statistics of the in-memory columnar cache).
    The views the SQL reads (:mod:`projections.model`) are projections and ``posexplode``s of it,
    ``events_env`` too, with the schemas :func:`projections.model.view_schema` gives.

    Column pruning: a view column is parsed only if its name occurs as a word in the SQL of a
    domain that reads the view; a domain whose SQL has a star select or a natural join gets every
    column. Pruned columns stay in the views as typed NULLs, so the SQL sees the same schema.
    """

    def __init__(self, projections: Sequence[DomainProjection]):
        from events.base import event_class

        self.projections = list(projections)
        self.domains_of = domains_by_event_type(self.projections)
        #: the event types folded, in ``tcode`` order
        self.types = list(self.domains_of)
        self.tcode = {t: i for i, t in enumerate(self.types)}
        self.current = {t: event_class(t).schema_version for t in self.types}
        used = used_views(self.projections)
        readers: dict[str, list[DomainProjection]] = {}
        for p in self.projections:
            for v in set(_VIEW_REF.findall("\n".join(_sql_texts(p)))):
                readers.setdefault(v, []).append(p)
        #: (view, the columns parsed)
        self.views: list[tuple[EventView, tuple[Column, ...]]] = []
        trees: dict[str, dict[str, Any]] = {}
        seen: set[str] = set()
        for p in self.projections:
            for cls in p.event_types:
                for v in event_views(cls):
                    if v.name not in used or v.name in seen:
                        continue
                    seen.add(v.name)
                    texts = [t for r in readers.get(v.name, []) for t in _sql_texts(r)]
                    if any(_STAR.search(t) for t in texts):
                        wanted = v.columns
                    else:
                        words = {w for t in texts for w in _WORD.findall(t)}
                        wanted = tuple(c for c in v.columns if c.name in words)
                    self.views.append((v, wanted))
                    trees[v.event_type] = _merge(trees.get(v.event_type, {}), _view_tree(v, wanted))
        #: event type -> the parse tree of its payload (only types with something to parse)
        self.schemas = {t: tree for t, tree in trees.items() if tree}

    def struct(self, event_type: str) -> str:
        """The ``shoal_w`` column holding ``event_type``'s parsed payload."""
        return f"p{self.tcode[event_type]}"

    def w_select(self, source: str) -> str:
        """The ``SELECT`` building ``shoal_w`` from the raw rows (``FOLD_COLUMNS``) in ``source``."""
        tcode = "CASE event_type " + " ".join(f"WHEN {_sql_str(t)} THEN {i}" for t, i in self.tcode.items()) + " END"
        stale = " OR ".join(f"(event_type = {_sql_str(t)} AND schema_version <> {v})" for t, v in self.current.items())
        parses = "".join(
            f", CASE WHEN event_type = {_sql_str(t)} AND schema_version = {self.current[t]} "
            f"THEN from_json(data, {_sql_str(_from_json_ddl(tree))}) END AS {self.struct(t)}"
            for t, tree in self.schemas.items()
        )
        env = ", ".join(_bq(n) for n in _ENV)
        return f"SELECT {env}, {tcode} AS tcode, ({stale}) AS stale{parses} FROM {source}"

    def view_select(self, view: EventView, wanted: Sequence[Column], source: str = "shoal_w") -> str:
        """The ``SELECT`` of ``view`` over ``shoal_w`` (view ``source``); the columns not in
        ``wanted`` are typed NULLs."""
        wanted_names = {c.name for c in wanted}
        e0 = self.struct(view.event_type) if view.event_type in self.schemas else None
        frm = f"(SELECT * FROM {source} WHERE tcode = {self.tcode[view.event_type]}) AS w"
        for k in range(1, view.depth + 1):
            idx = view.index_columns[k - 1]
            frm += f" LATERAL VIEW posexplode({_access(f'e{k - 1}' if k > 1 else e0, view.list_path[k - 1])}) x{k} AS {idx}, e{k}"
        cols = [_bq(n) for n in _ENV]
        cols += [f"CAST({i} AS BIGINT) AS {i}" for i in view.index_columns]
        for c in view.columns:
            if c.name not in wanted_names:
                expr = f"CAST(NULL AS {_SPARK_TYPES[c.type]})"
            else:
                expr = _access(e0 if c.level == 0 else f"e{c.level}", c.path)
            cols.append(f"{expr} AS {_bq(c.name)}")
        return f"SELECT {', '.join(cols)} FROM {frm}"

    def env_select(self, source: str = "shoal_w") -> str:
        """``events_env`` over ``shoal_w``: one row per (event, domain folding its type)."""
        etype = "CASE tcode " + " ".join(f"WHEN {i} THEN {_sql_str(t)}" for t, i in self.tcode.items()) + " END"
        return " UNION ALL ".join(
            f"SELECT position, stream_id, stream_version, recorded_at_ms, {etype} AS event_type, "
            f"{_sql_str(p.name)} AS domain FROM {source} "
            f"WHERE tcode IN ({', '.join(str(self.tcode[t]) for t in p.event_type_names)})"
            for p in self.projections
        )


def _typed_view(stage: "_Stage", event_type: str) -> str:
    return f"shoal_t{stage.tcode[event_type]}"


def _typed_part(src: LogSource, stage: "_Stage") -> str | None:
    """The ``_typed`` directory of the Parquet export ``src`` when it can serve every event type
    ``stage`` folds: its manifest records each type at the schema version and payload structure
    the running code has (:func:`projections.source.typed_shapes`). ``None`` otherwise (not an
    export directory, no typed part, or an event class changed since the export): the fold then
    parses the raw part's JSON."""
    from projections.source import TYPED_DIR, read_typed_manifest, typed_shapes

    if src.parquet is None:
        return None
    manifest = read_typed_manifest(src.parquet)
    if manifest is None:
        return None
    shapes = typed_shapes()
    for t in stage.types:
        if manifest["types"].get(t) != shapes.get(t):
            _log.warning("spark: the typed export does not match event type %s as this code defines it; parsing the raw JSON", t)
            return None
    return os.path.join(src.parquet, TYPED_DIR)


def _typed_frame(spark, typed: str, event_type: str, stage: "_Stage", bounds: ReplayBounds):
    """The events of ``event_type`` inside ``bounds`` from the typed export ``typed``: the
    envelope, ``tcode`` and (when the SQL reads its payload) the payload struct named
    :meth:`_Stage.struct`."""
    from pyspark.sql import functions as F

    # The schema is given, not inferred (no job reading footers), and holds only the payload
    # fields the SQL reads (the stage's parse tree): the Parquet reader skips the other columns,
    # nested ones included.
    schema = "position BIGINT, stream_id STRING, stream_version BIGINT, recorded_at_ms BIGINT"
    if event_type in stage.schemas:
        schema += ", payload " + _ddl(stage.schemas[event_type])
    df = spark.read.schema(schema).parquet(os.path.join(typed, event_type))
    cols = [F.col(n) for n in _ENV] + [F.lit(stage.tcode[event_type]).alias("tcode")]
    if event_type in stage.schemas:
        cols.append(F.col("payload").alias(stage.struct(event_type)))
    return df.where(_bounds_condition(bounds)).select(*cols)


def _from_json_ddl(tree: dict[str, Any]) -> str:
    return ", ".join(f"{_bq(k)} {_ddl(v)}" for k, v in tree.items())


def _reused_views(p: DomainProjection) -> set[str]:
    """The names of ``p``'s helper views (:attr:`DomainProjection.sql_views`) that two or more of
    its other queries (tables, views, refusal) read: the Spark engine computes those once."""
    texts = [sql for _, sql in p.sql_views] + list((p.sql or {}).values()) + [p.sql_refusal or ""]
    out = set()
    for i, (name, _) in enumerate(p.sql_views):
        word = re.compile(r"\b" + re.escape(name) + r"\b")
        if sum(1 for j, t in enumerate(texts) if j != i and word.search(t)) >= 2:
            out.add(name)
    return out


def _stale_condition(current: dict[str, int]):
    """A Column: the row's ``schema_version`` is not its type's current one (``current``: event
    type -> current schema version; not empty)."""
    from pyspark.sql import functions as F

    cond = None
    for t, v in current.items():
        c = (F.col("event_type") == t) & (F.col("schema_version") != v)
        cond = c if cond is None else cond | c
    return cond


def _upcast_rows(rows) -> list[dict]:
    """Raw rows (``FOLD_COLUMNS``) re-encoded at their type's current schema version, with the
    codec's upcasters (Python functions registered in this process)."""
    from events.base import event_class
    from events.codec import decode_event, encode_event

    fixed = []
    for r in rows:
        d = r.asDict()
        d["data"] = encode_event(decode_event(d["event_type"], d["schema_version"], d["data"], d["position"])).decode()
        d["schema_version"] = event_class(d["event_type"]).schema_version
        fixed.append(d)
    return fixed


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

    ``source``: an event log URL (read through JDBC) or a Parquet export directory (its typed
    part when it matches the event classes, else its raw part). From the raw rows, one pass
    reads the log and parses each event once into a cached DataFrame (:class:`_Stage`); events
    stored under an older schema version are found in it, re-read, upcast on the driver (those
    rows only) and parsed again. The views and the domains' SQL then run over the cache (or over
    the typed files). ``extra`` reports ``read_via`` (``jdbc``, ``parquet``, ``typed_parquet``),
    ``stage_seconds`` (read, parse and cache; for a typed export only the views' set-up) and
    ``sql_seconds``.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    if bounds.from_position:
        raise ValueError("a projection folds whole streams: from_position must be 0")
    t0 = time.perf_counter()
    projections, skipped = sql_projections(projections)
    if not projections:
        return ProjectionResult("spark", {STREAMS_TABLE.name: STREAMS_TABLE.schema.empty_table()}, 0, 0, 0.0, {"skipped_domains": skipped})
    spark = spark or get_spark(master)
    spark.conf.set("spark.sql.ansi.doubleQuotedIdentifiers", "true")
    src = LogSource.of(source)
    stage = _Stage(projections)
    typed = _typed_part(src, stage)
    w = None
    refused: dict[str, str] = {}
    checkpoints = []
    try:
        if typed is not None:
            # a typed export: each event type's payload is already a Parquet struct (no JSON to
            # parse, no stage to cache; every query reads the columns it needs from the files)
            for t in stage.types:
                _typed_frame(spark, typed, t, stage, bounds).createOrReplaceTempView(_typed_view(stage, t))
            env = ", ".join(_bq(n) for n in _ENV)
            spark.sql(
                " UNION ALL ".join(f"SELECT {env}, tcode FROM {_typed_view(stage, t)}" for t in stage.types)
            ).createOrReplaceTempView("shoal_typed_env")
            env_source, view_source = "shoal_typed_env", lambda v: _typed_view(stage, v.event_type)
        else:
            raw = _read_raw(spark, src, bounds, stage.types)
            raw.createOrReplaceTempView("shoal_raw")
            w = spark.sql(stage.w_select("shoal_raw")).sortWithinPartitions("tcode").persist(StorageLevel.MEMORY_AND_DISK)
            # this job fills the cache and finds the events stored under an older schema version
            stale = [r[0] for r in w.where("stale").select("position").collect()]
            if stale:
                fixed = _upcast_rows(raw.where(_stale_condition(stage.current) & F.col("position").between(min(stale), max(stale))).collect())
                spark.createDataFrame(fixed, schema=raw.schema).createOrReplaceTempView("shoal_upcast")
                w_all = w.where("NOT stale").unionByName(spark.sql(stage.w_select("shoal_upcast")))
            else:
                w_all = w
            w_all.createOrReplaceTempView("shoal_w")
            env_source, view_source = "shoal_w", lambda v: "shoal_w"
        t_sql = time.perf_counter()
        spark.sql(stage.env_select(env_source)).createOrReplaceTempView("events_env")
        for v, wanted in stage.views:
            spark.sql(stage.view_select(v, wanted, source=view_source(v))).createOrReplaceTempView(v.name)
        # event_streams (projections.model): one pass over the envelopes, read by streams_sql and
        # by any domain's SQL
        es = spark.sql(STREAMS_SQL).localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)
        checkpoints.append(es)
        es.createOrReplaceTempView("event_streams")
        out: dict[str, pa.Table] = {}
        for p in projections:
            reused = _reused_views(p)
            for name, sql in p.sql_views:
                vdf = spark.sql(sql)
                if name in reused:
                    # a helper view several of the domain's queries read: computed once (a
                    # checkpoint, not a cache: Spark does not match a cached plan inside a CTE)
                    vdf = vdf.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)
                    checkpoints.append(vdf)
                vdf.createOrReplaceTempView(name)
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
        for vdf in checkpoints:
            _release_checkpoint(vdf)
        if w is not None:
            w.unpersist()
    n = int(sum(out[STREAMS_TABLE.name]["event_count"].to_pylist()))
    last = max(out[STREAMS_TABLE.name]["last_position"].to_pylist(), default=0)
    if progress is not None:
        progress(n)
    t1 = time.perf_counter()
    return ProjectionResult(
        "spark", out, int(last or 0), n, t1 - t0,
        {
            "skipped_domains": skipped + sorted(refused),
            "skipped_reasons": refused,
            "read_via": "typed_parquet" if typed is not None else ("parquet" if src.parquet is not None else "jdbc"),
            "stage_seconds": round(t_sql - t0, 3),
            "sql_seconds": round(t1 - t_sql, 3),
        },
    )


def _release_checkpoint(df) -> None:
    """Drop the blocks of a DataFrame made by ``localCheckpoint`` (its plan is a LogicalRDD)."""
    try:
        df._jdf.queryExecution().logical().rdd().unpersist(False)
    except Exception:  # noqa: BLE001 - best effort: the context cleaner frees them eventually
        _log.debug("spark: could not release a checkpoint", exc_info=True)


def _to_arrow(df, schema: pa.Schema) -> pa.Table:
    t = df.toArrow()
    if t.num_rows == 0:
        return schema.empty_table()
    return t
