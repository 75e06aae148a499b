"""The DuckDB engine: the domains' SQL folds over Arrow batches read from the log with ADBC.

No row-by-row Python: each chunk of the log arrives as an Arrow table, DuckDB scans it in place,
parses the JSON with ``json_transform`` into the typed *staged* event tables (one per flattened
view, :mod:`projections.flatten`), and the snapshot tables are ``SELECT``s over those.

Incremental: the staged tables and the checkpoint (the last position ingested) live in one DuckDB
database file, updated in **one transaction** per chunk (the projection and its tracking record
commit together, Akka's exactly-once rule). A later run reads only the log after the checkpoint;
the SQL fold then re-aggregates the staged rows, which DuckDB does in milliseconds for a million
events. A run with an earlier ``until_position``/``until_time`` than the stored one, or a changed
set of domains or event shapes, rebuilds from scratch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from typing import Callable, Sequence

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from projections.flatten import duckdb_parse_select, duckdb_view_select, tree_of
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
from projections.source import LogSource, ReplayBounds, upcast_chunk

__all__ = ["DuckDBFold", "fold_duckdb", "refusal_reason", "STREAMS_SQL", "streams_sql", "used_views"]

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
    """:data:`STREAMS_SQL` without the domains in ``refused`` (left out of this run)."""
    if not refused:
        return STREAMS_SQL
    names = ", ".join("'" + d.replace("'", "''") + "'" for d in sorted(refused))
    return f"SELECT * FROM ({STREAMS_SQL}) AS s WHERE domain NOT IN ({names})"


def refusal_reason(rows: Sequence[Sequence]) -> str | None:
    """The reason a domain's ``sql_refusal`` query gave (its rows' first column), or ``None``."""
    reasons = [str(r[0]) for r in rows if r and r[0] is not None]
    return "; ".join(reasons) if reasons else None

#: The generic ``streams`` table: one row per (stream, domain) folded.
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


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class DuckDBFold:
    """A DuckDB projection database for ``projections``.

    ``path``: the database file (``None``: in memory, nothing survives the object).
    ``threads``: DuckDB worker threads (default: DuckDB's, i.e. the cores).
    Use :meth:`update` to ingest the log after the checkpoint and compute the snapshots.
    """

    def __init__(self, projections: Sequence[DomainProjection], path: str | os.PathLike[str] | None = None, threads: int | None = None):
        self.projections, self.skipped = sql_projections(projections)
        self.path = str(path) if path is not None else ":memory:"
        #: positions per read when given a URL (bigger chunks amortise DuckDB's per-statement cost)
        self.chunk_positions = 500_000
        self.con = duckdb.connect(self.path, config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        # bound DuckDB's memory (the staged events spill to disk beyond it) so a 10 M-event replay
        # stays within a few GB; SHOAL_DUCKDB_MEMORY_LIMIT overrides
        self.con.execute(f"SET memory_limit = '{os.environ.get('SHOAL_DUCKDB_MEMORY_LIMIT', '2GB')}'")
        self.con.execute("SET preserve_insertion_order = false")
        self.domains_of = domains_by_event_type(self.projections)
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
        self.fingerprint = hashlib.sha256(
            json.dumps(
                [[p.name, list(p.event_type_names)] for p in self.projections]
                + [[v.name, str(view_schema(v))] for v, _, _ in self.views]
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
        con.execute("DROP TABLE IF EXISTS stage_events_env")
        con.execute(
            "CREATE TABLE stage_events_env (position BIGINT, stream_id VARCHAR, stream_version BIGINT, "
            "recorded_at_ms BIGINT, event_type VARCHAR, domain VARCHAR)"
        )
        for v, _, _ in self.views:
            cols = ", ".join(f"{_q(f.name)} {_DUCK_TYPES[f.type]}" for f in view_schema(v))
            con.execute(f"DROP TABLE IF EXISTS {_q('stage_' + v.name)}")
            con.execute(f"CREATE TABLE {_q('stage_' + v.name)} ({cols})")
        con.execute("COMMIT")

    def _ingest(self, chunk: pa.Table, until_time_ms: int | None) -> None:
        con = self.con
        chunk = upcast_chunk(chunk)
        con.register("chunk", chunk)
        try:
            con.execute("BEGIN")
            # the domain of each row, computed on the dictionary of event types (a handful), not per
            # row; an event type several domains fold gets one envelope row per domain
            dict_types = pc.unique(chunk["event_type"]).to_pylist()
            for k in range(max(len(self.domains_of[t]) for t in dict_types)):
                part = chunk
                if k:
                    more = [t for t in dict_types if len(self.domains_of[t]) > k]
                    part = chunk.filter(pc.is_in(chunk["event_type"], value_set=pa.array(more, pa.string())))
                enc = pc.dictionary_encode(part["event_type"]).combine_chunks()
                doms = pa.array([self.domains_of[t][k] for t in enc.dictionary.to_pylist()], pa.string())
                env = pa.table(
                    {
                        "position": part["position"],
                        "stream_id": part["stream_id"],
                        "stream_version": part["stream_version"],
                        "recorded_at_ms": part["recorded_at_ms"],
                        "event_type": part["event_type"],
                        "domain": pa.DictionaryArray.from_arrays(enc.indices, doms),
                    }
                )
                con.register("env", env)
                try:
                    con.execute("INSERT INTO stage_events_env SELECT * FROM env")
                finally:
                    con.unregister("env")
            by_type: dict[str, list] = {}
            for v, tree, _ in self.views:
                by_type.setdefault(v.event_type, []).append((v, tree))
            for etype, views in by_type.items():
                sub = chunk.filter(pc.equal(chunk["event_type"], etype))
                if sub.num_rows == 0:
                    continue
                con.register("sub", sub)
                try:
                    parse = duckdb_parse_select(etype, views[0][1], "sub", False)
                    if len(views) == 1:
                        v, tree = views[0]
                        con.execute(f"INSERT INTO {_q('stage_' + v.name)} {duckdb_view_select(v, tree, '(' + parse + ')', parsed=True)}")
                        continue
                    # parse each payload once, then cut the views out of the parsed structs
                    con.execute(f"CREATE OR REPLACE TEMP TABLE parsed AS {parse}")
                    for v, tree in views:
                        con.execute(f"INSERT INTO {_q('stage_' + v.name)} {duckdb_view_select(v, tree, 'parsed', parsed=True)}")
                finally:
                    con.unregister("sub")
            last = chunk["position"][-1].as_py()
            ut = "NULL" if until_time_ms is None else str(int(until_time_ms))
            con.execute(f"UPDATE _checkpoint SET position = {int(last)}, until_time_ms = {ut}")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        finally:
            con.unregister("chunk")

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
        many events this call read, ``extra['incremental']`` whether it resumed)."""
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
        for chunk in src.batches(ReplayBounds(cp[0], bounds.until_position, bounds.until_time_ms), types):
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
        con.execute(f"CREATE OR REPLACE TEMP VIEW events_env AS SELECT * FROM stage_events_env{where}")
        for v, _, _ in self.views:
            con.execute(f"CREATE OR REPLACE TEMP VIEW {_q(v.name)} AS SELECT * FROM {_q('stage_' + v.name)}{where}")
        out: dict[str, pa.Table] = {}
        self.refused = {}
        for p in self.projections:
            for name, sql in p.sql_views:
                con.execute(f"CREATE OR REPLACE TEMP VIEW {_q(name)} AS {sql}")
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
) -> ProjectionResult:
    """Fold the log with DuckDB (in memory, or incrementally in ``db_path``) and return the
    snapshot tables."""
    fold = DuckDBFold(projections, db_path, threads)
    try:
        return fold.update(source, bounds, progress)
    finally:
        fold.close()
