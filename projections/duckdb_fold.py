"""The DuckDB engine: the domains' SQL folds run by DuckDB over the events it stages from the log.

Staging copies the log's rows (envelope + payload JSON) into DuckDB, no row-by-row Python:

* a SQLite log is read by DuckDB itself with ``sqlite_scan`` (its ``sqlite_scanner`` extension,
  shipped for the pinned DuckDB by the ``duckdb-extension-sqlite-scanner`` wheel), in parallel
  rowid ranges; a Parquet export with ``read_parquet``;
* otherwise (PostgreSQL, or no extension) through ADBC as Arrow chunks, which DuckDB scans in place.

Events stored under an older schema version are upcast in Python (those rows only), so the stage
holds one payload shape per event type. The flattened views the SQL reads (``ev_<type>…``,
:mod:`projections.flatten`) parse the payloads with ``json_transform`` as the query runs, and the
snapshot tables are ``SELECT``s over them.

Incremental: the stage and the checkpoint (the last position ingested) live in one DuckDB database
file, updated in **one transaction** per ingest (the projection and its tracking record commit
together, Akka's exactly-once rule). A later run reads only the log after the checkpoint; the SQL
fold then re-aggregates the staged rows. A run with an earlier ``until_position``/``until_time``
than the stored one, or a changed set of domains, event types or schema versions, rebuilds from
scratch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from pathlib import Path
from typing import Callable, Sequence

import duckdb
import pyarrow as pa

from events.base import event_class
from projections.flatten import duckdb_view_select, tree_of
from projections.model import (
    STREAMS_TABLE,
    DomainProjection,
    domains_by_event_type,
    event_views,
    sort_table,
    sql_projections,
    view_schema,
)
from projections.python_fold import ProjectionResult
from projections.source import FOLD_COLUMNS, LogSource, ReplayBounds, upcast_chunk
from projections.sqlkit import quote_ident, sql_literal
from store.arrow_reader import sqlite_path

__all__ = [
    "DuckDBFold", "fold_duckdb", "refusal_reason", "sqlite_scanner_path", "STREAMS_SQL", "streams_sql", "used_views",
]

_VIEW_REF = re.compile(r"\bev_[A-Za-z0-9_]+")
_log = logging.getLogger(__name__)


def used_views(projections: Sequence[DomainProjection]) -> set[str]:
    """The flattened views the projections' SQL reads (only those are staged)."""
    names: set[str] = set()
    for p in projections:
        for sql in list((p.sql or {}).values()) + [s for _, s in p.sql_views] + [p.sql_refusal or ""]:
            names.update(_VIEW_REF.findall(sql))
    return names


def streams_sql(refused: Sequence[str] = ()) -> str:
    """The ``streams`` table: the ``event_streams`` relation (:data:`STREAMS_SQL`, which each
    engine computes once per snapshot) without the domains in ``refused`` (left out of this run)."""
    if not refused:
        return "SELECT * FROM event_streams"
    names = ", ".join(sql_literal(d) for d in sorted(refused))
    return f"SELECT * FROM event_streams WHERE domain NOT IN ({names})"


def refusal_reason(rows: Sequence[Sequence]) -> str | None:
    """The reason a domain's ``sql_refusal`` query gave (its rows' first column), or ``None``."""
    reasons = [str(r[0]) for r in rows if r and r[0] is not None]
    return "; ".join(reasons) if reasons else None

#: ``event_streams`` (:mod:`projections.model`): one row per (stream, domain) of ``events_env``;
#: the generic ``streams`` table is read from it (:func:`streams_sql`).
STREAMS_SQL = """
SELECT stream_id, domain,
       max_by(stream_version, position) AS stream_version,
       max(position) AS last_position,
       count(*) AS event_count,
       max_by(recorded_at_ms, position) AS last_recorded_at_ms
FROM events_env
GROUP BY stream_id, domain
"""

_DUCK_TYPES = {pa.int64(): "BIGINT", pa.string(): "VARCHAR", pa.bool_(): "BOOLEAN", pa.float64(): "DOUBLE"}
#: the staged events: the log's rows as stored (payload JSON at the current schema version)
#: (``event_type`` is the ENUM ``stage_event_type`` of the folded types: one byte a row)
_STAGE_DDL = ", ".join(
    f"{f.name} {'stage_event_type' if f.name == 'event_type' else _DUCK_TYPES[f.type]}" for f in FOLD_COLUMNS
)
_STAGE_COLUMNS = ", ".join(
    "CAST(event_type AS stage_event_type) AS event_type" if n == "event_type" else n for n in FOLD_COLUMNS.names
)


def sqlite_scanner_path() -> str | None:
    """The path of DuckDB's ``sqlite_scanner`` extension for the running DuckDB version, as shipped
    by the ``duckdb-extension-sqlite-scanner`` wheel (DuckDB's signed build; DuckDB checks the
    signature on ``LOAD``), or ``None`` when it is not installed for this version."""
    try:
        import duckdb_extension_sqlite_scanner as pkg
    except ImportError:
        return None
    ext = Path(pkg.__file__).parent / "extensions" / f"v{duckdb.__version__}" / "sqlite_scanner.duckdb_extension"
    return str(ext) if ext.exists() else None



class DuckDBFold:
    """A DuckDB projection database for ``projections``.

    ``path``: the database file (``None``: in memory, nothing survives the object).
    ``threads``: DuckDB worker threads (default: DuckDB's, i.e. the cores).
    ``direct_scan``: let DuckDB read a SQLite log or a Parquet export itself (``sqlite_scan``,
    ``read_parquet``) instead of through ADBC Arrow chunks. ``None`` (the default): whenever it
    can — for SQLite that needs DuckDB's ``sqlite_scanner`` extension (:func:`sqlite_scanner_path`);
    without it, or for PostgreSQL, the log is read through ADBC.
    Use :meth:`update` to ingest the log after the checkpoint and compute the snapshots.
    """

    def __init__(
        self,
        projections: Sequence[DomainProjection],
        path: str | os.PathLike[str] | None = None,
        threads: int | None = None,
        direct_scan: bool | None = None,
    ):
        self.projections, self.skipped = sql_projections(projections)
        self.path = str(path) if path is not None else ":memory:"
        #: positions per read when the log is read through ADBC (bigger chunks amortise DuckDB's
        #: per-statement cost)
        self.chunk_positions = 500_000
        self.con = duckdb.connect(self.path, config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        # bound DuckDB's memory (the staged events spill to disk beyond it): 3 GB holds a 10 M-event
        # stage (~2 GB) and its queries without spilling, and keeps the process under 4 GB
        # (bench/replay.py); SHOAL_DUCKDB_MEMORY_LIMIT overrides
        self.con.execute(f"SET memory_limit = '{os.environ.get('SHOAL_DUCKDB_MEMORY_LIMIT', '3GB')}'")
        self.con.execute("SET preserve_insertion_order = false")
        self.domains_of = domains_by_event_type(self.projections)
        self.current_versions = {t: event_class(t).schema_version for t in self.domains_of}
        self.direct_scan = direct_scan
        self._scanner_loaded: bool | None = None
        #: domain -> why its SQL fold refused the staged events (set by :meth:`snapshot`)
        self.refused: dict[str, str] = {}
        used = used_views(self.projections)
        self.views = []  # (EventView, tree, domain) of the views the SQL reads, each once
        seen: set[str] = set()
        for p in self.projections:
            for cls in p.event_types:
                tree = tree_of(cls)
                for v in event_views(cls):
                    if v.name in used and v.name not in seen:
                        seen.add(v.name)
                        self.views.append((v, tree, p.name))
        # the stage holds raw payloads at the current schema versions: a change of domains, event
        # types or versions invalidates it
        self.fingerprint = hashlib.sha256(
            json.dumps(
                ["stage-v2"]
                + [[p.name, list(p.event_type_names)] for p in self.projections]
                + sorted([t, v] for t, v in self.current_versions.items())
            ).encode()
        ).hexdigest()[:16]

    def close(self) -> None:
        """Close the database."""
        self.con.close()

    # ------------------------------------------------------------------ staging

    def checkpoint(self) -> tuple[int, int | None] | None:
        """``(last position ingested, until_time_ms of the run)`` or ``None`` before the first
        ingest (or after a change of domains, which invalidates the stage)."""
        try:
            rows = self.con.execute("SELECT position, until_time_ms, fingerprint FROM _checkpoint").fetchall()
        except duckdb.CatalogException:
            return None
        row = rows[0] if rows else None
        if row is None or row[2] != self.fingerprint:
            return None
        return int(row[0]), (None if row[1] is None else int(row[1]))

    def _reset(self) -> None:
        con = self.con
        con.execute("BEGIN")
        con.execute("DROP TABLE IF EXISTS _checkpoint")
        con.execute("CREATE TABLE _checkpoint (position BIGINT, until_time_ms BIGINT, fingerprint VARCHAR)")
        con.execute(f"INSERT INTO _checkpoint VALUES (0, NULL, '{self.fingerprint}')")
        for t in [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary AND table_name LIKE 'stage_%'").fetchall()]:
            con.execute(f"DROP TABLE {quote_ident(t)}")
        con.execute("DROP TYPE IF EXISTS stage_event_type")
        labels = list(self.domains_of) or [""]  # an ENUM needs a label
        con.execute(f"CREATE TYPE stage_event_type AS ENUM ({', '.join(sql_literal(t) for t in labels)})")
        con.execute(f"CREATE TABLE stage_events ({_STAGE_DDL})")
        con.execute("COMMIT")

    def _version_check(self) -> str:
        """SQL: true when a row's ``schema_version`` is its event type's current one."""
        versions = set(self.current_versions.values())
        if len(versions) == 1:  # the usual case: one integer compare a row
            return f"schema_version = {int(versions.pop())}"
        whens = " ".join(f"WHEN {sql_literal(t)} THEN {int(v)}" for t, v in self.current_versions.items())
        return f"schema_version = CASE event_type {whens} END"

    def _set_checkpoint(self, last: int, until_time_ms: int | None) -> None:
        ut = "NULL" if until_time_ms is None else str(int(until_time_ms))
        self.con.execute(f"UPDATE _checkpoint SET position = {int(last)}, until_time_ms = {ut}")

    def _insert_arrow(self, chunk: pa.Table) -> None:
        """Stage ``chunk`` (columns :data:`FOLD_COLUMNS`), its stale rows upcast first."""
        chunk = upcast_chunk(chunk)
        self.con.register("chunk", chunk)
        try:
            self.con.execute(f"INSERT INTO stage_events SELECT {_STAGE_COLUMNS} FROM chunk")
        finally:
            self.con.unregister("chunk")

    def _ingest(self, chunk: pa.Table, until_time_ms: int | None) -> None:
        """Stage one Arrow chunk of the log and move the checkpoint past it, in one transaction."""
        con = self.con
        con.execute("BEGIN")
        try:
            self._insert_arrow(chunk)
            self._set_checkpoint(chunk["position"][-1].as_py(), until_time_ms)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def _ingest_scan(self, relation: str, bounds: ReplayBounds, last: int, types: Sequence[str]) -> int:
        """Stage the events of ``relation`` (a DuckDB table function over the log's ``events``
        rows) inside ``bounds`` up to position ``last``, in one statement run by DuckDB's threads;
        rows stored under an older schema version are then upcast in Python (those rows only).
        Moves the checkpoint to ``last``; all in one transaction. Returns the rows staged."""
        con = self.con
        where = ReplayBounds(bounds.from_position, last, bounds.until_time_ms).sql_where()
        where += f" AND event_type IN ({', '.join(sql_literal(t) for t in types)})"
        con.execute("BEGIN")
        try:
            (n,) = con.execute(
                f"INSERT INTO stage_events SELECT {_STAGE_COLUMNS} FROM {relation} WHERE {where}"
            ).fetchone()
            fresh = f"position > {int(bounds.from_position)}"
            stale = con.execute(
                f"SELECT {', '.join(FOLD_COLUMNS.names)} FROM stage_events WHERE {fresh} AND NOT ({self._version_check()}) ORDER BY position"
            ).to_arrow_table()
            if stale.num_rows:
                con.execute(f"DELETE FROM stage_events WHERE {fresh} AND NOT ({self._version_check()})")
                self._insert_arrow(stale.cast(FOLD_COLUMNS))
            self._set_checkpoint(last, bounds.until_time_ms)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return int(n)

    def _scan_relation(self, src: LogSource) -> tuple[str, str] | None:
        """``(relation, how)``: the DuckDB relation reading ``src`` directly and its name for
        ``read_via``, or ``None`` (read through ADBC).

        A SQLite log is ATTACHed **read-only** (the extension's SQLite is a second copy of the
        library in this process: read-write, it would delete the WAL our writer has open when
        it closes; see ``store/arrow_reader.adbc_connect``) and scanned in parallel rowid ranges."""
        if self.direct_scan is False:
            return None
        if src.parquet is not None:
            p = Path(src.parquet)
            # the raw part of an export (projections.source.export_parquet), not its _typed/ part
            glob = str(p / "*.parquet") if p.is_dir() else str(p)
            return f"read_parquet({sql_literal(glob)})", "read_parquet"
        if src.url is not None and src.url.startswith("sqlite"):
            path = sqlite_path(src.url)
            if path is None or not self._load_scanner():
                return None
            self.con.execute("DETACH DATABASE IF EXISTS shoal_log")
            self.con.execute(f"ATTACH {sql_literal(os.path.abspath(path))} AS shoal_log (TYPE sqlite, READ_ONLY)")
            return "shoal_log.events", "sqlite_scan"
        return None

    def _load_scanner(self) -> bool:
        if self._scanner_loaded is None:
            ext = sqlite_scanner_path()
            self._scanner_loaded = False
            if ext is None:
                msg = f"no sqlite_scanner extension for DuckDB {duckdb.__version__} (package duckdb-extension-sqlite-scanner)"
            else:
                try:
                    # signature checked by DuckDB (unsigned extensions stay refused)
                    self.con.execute(f"LOAD {sql_literal(ext)}")
                    self._scanner_loaded = True
                except duckdb.Error as exc:
                    msg = f"loading {ext} failed: {exc}"
            if not self._scanner_loaded:
                if self.direct_scan:
                    raise RuntimeError(msg)
                _log.warning("duckdb: reading the SQLite log through ADBC: %s", msg)
        return self._scanner_loaded

    # ------------------------------------------------------------------ folding

    def update(
        self,
        source: "str | LogSource",
        bounds: ReplayBounds = ReplayBounds(),
        progress: Callable[[int], None] | None = None,
    ) -> ProjectionResult:
        """Ingest the log inside ``bounds`` after the stored checkpoint, then compute every
        snapshot table. ``bounds.from_position`` must be 0 (a projection folds whole streams).
        Returns the :class:`ProjectionResult` (engine ``"duckdb"``; ``extra['ingested']`` is how
        many events this call read, ``extra['incremental']`` whether it resumed,
        ``extra['read_via']`` how the log was read: ``sqlite_scan``, ``read_parquet``, ``adbc``)."""
        if bounds.from_position:
            raise ValueError("a projection folds whole streams: from_position must be 0")
        t0 = time.perf_counter()
        src = LogSource.of(source)
        if isinstance(source, str):
            src.chunk_positions = self.chunk_positions
        cp = self.checkpoint()
        incremental = (
            cp is not None
            and cp[1] == bounds.until_time_ms
            and (bounds.until_position is None or cp[0] <= bounds.until_position)
        )
        if not incremental:
            self._reset()
            cp = (0, None)
        types = list(self.domains_of)
        ingested = 0
        after = ReplayBounds(cp[0], bounds.until_position, bounds.until_time_ms)
        scan = self._scan_relation(src) if types else None
        read_via = "adbc" if src.parquet is None else "pyarrow"
        if scan is not None:
            relation, read_via = scan
            try:
                last = src.last_position()
                if bounds.until_position is not None:
                    last = min(last, bounds.until_position)
                if last > cp[0]:
                    ingested = self._ingest_scan(relation, after, last, types)
                    if progress is not None:
                        progress(ingested)
            finally:
                self.con.execute("DETACH DATABASE IF EXISTS shoal_log")
        else:
            for chunk in src.batches(after, types):
                self._ingest(chunk, bounds.until_time_ms)
                ingested += chunk.num_rows
                if progress is not None:
                    progress(chunk.num_rows)
        t_sql = time.perf_counter()
        tables = self.snapshot()
        sql_seconds = time.perf_counter() - t_sql
        last = self.checkpoint()
        n = tables[STREAMS_TABLE.name]["event_count"].to_pylist()
        return ProjectionResult(
            "duckdb", tables, last[0] if last else 0, int(sum(n)), time.perf_counter() - t0,
            {
                "ingested": ingested,
                "incremental": incremental,
                "read_via": read_via,
                "skipped_domains": self.skipped + sorted(self.refused),
                "skipped_reasons": dict(self.refused),
                "ingest_seconds": round(t_sql - t0, 3),
                "sql_seconds": round(sql_seconds, 3),
            },
        )

    def snapshot(self, until_position: int | None = None) -> dict[str, pa.Table]:
        """The snapshot tables of the staged events (only those at or before ``until_position``
        when given: used to bisect a divergence). A domain whose ``sql_refusal`` query returns a
        reason is left out (its tables and its ``streams`` rows); :attr:`refused` maps it to the
        reason, which is also logged."""
        con = self.con
        where = "" if until_position is None else f" WHERE position <= {int(until_position)}"
        con.execute(f"CREATE OR REPLACE TEMP VIEW stage_bounded AS SELECT * FROM stage_events{where}")
        # one envelope row per (event, domain folding its type); a filter on the domain reaches
        # only its branch, which needs no filter of its own when the domain folds every staged type
        staged = set(self.domains_of)

        def of_domain(p: DomainProjection) -> str:
            if set(p.event_type_names) >= staged:
                return ""
            return f" WHERE event_type IN ({', '.join(sql_literal(t) for t in p.event_type_names)})"

        env = [
            "SELECT position, stream_id, stream_version, recorded_at_ms, CAST(event_type AS VARCHAR) AS event_type, "
            f"{sql_literal(p.name)} AS domain FROM stage_bounded{of_domain(p)}"
            for p in self.projections
        ] or ["SELECT position, stream_id, stream_version, recorded_at_ms, '' AS event_type, '' AS domain FROM stage_bounded WHERE false"]
        con.execute("CREATE OR REPLACE TEMP VIEW events_env AS " + " UNION ALL ".join(env))
        # the views parse their event type's payloads (only the fields they read) as the query
        # runs: cheaper than storing the parsed rows once (measured), even for a view read twice
        for v, tree, _ in self.views:
            con.execute(f"CREATE OR REPLACE TEMP VIEW {quote_ident(v.name)} AS {duckdb_view_select(v, tree, 'stage_bounded')}")
        con.execute(f"CREATE OR REPLACE TEMP TABLE event_streams AS {STREAMS_SQL}")
        out: dict[str, pa.Table] = {}
        self.refused = {}
        for p in self.projections:
            for name, sql in p.sql_views:
                # the domain's shared intermediate results are computed once per snapshot
                con.execute(f"CREATE OR REPLACE TEMP TABLE {quote_ident(name)} AS {sql}")
            if p.sql_refusal:
                reason = refusal_reason(con.execute(p.sql_refusal).fetchall())
                if reason is not None:
                    self.refused[p.name] = reason
                    _log.warning("duckdb: domain %s left out: %s", p.name, reason)
                    continue
            for t in p.sql_tables:
                out[t.name] = sort_table(t, con.sql(p.sql[t.name]).to_arrow_table())
        out[STREAMS_TABLE.name] = sort_table(STREAMS_TABLE, con.sql(streams_sql(list(self.refused))).to_arrow_table())
        return out


def fold_duckdb(
    source: "str | LogSource",
    projections: Sequence[DomainProjection],
    bounds: ReplayBounds = ReplayBounds(),
    progress: Callable[[int], None] | None = None,
    db_path: str | os.PathLike[str] | None = None,
    threads: int | None = None,
    direct_scan: bool | None = None,
) -> ProjectionResult:
    """Fold the log with DuckDB (in memory, or incrementally in ``db_path``) and return the
    snapshot tables (see :class:`DuckDBFold` for ``direct_scan``)."""
    fold = DuckDBFold(projections, db_path, threads, direct_scan)
    try:
        return fold.update(source, bounds, progress)
    finally:
        fold.close()
