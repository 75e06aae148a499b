"""Where projections read the event log from: the live log through ADBC (Arrow, no row-by-row
Python) or a Parquet export of it; and the bounds of a replay.

The log is read in *position chunks* (``chunk_positions`` positions per query) so that a replay of
10 M events never holds the whole log in memory, and only the columns and event types a fold
needs are selected.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from projections.sqlkit import quote_ident, sql_literal

__all__ = ["FOLD_COLUMNS", "TYPED_DIR", "LogSource", "ReplayBounds", "export_parquet", "read_typed_manifest", "typed_shapes"]

#: The envelope columns a fold reads (``event_id`` is not needed by any fold).
FOLD_COLUMNS = pa.schema(
    [
        ("position", pa.int64()),
        ("stream_id", pa.string()),
        ("stream_version", pa.int64()),
        ("event_type", pa.string()),
        ("schema_version", pa.int64()),
        ("recorded_at_ms", pa.int64()),
        ("data", pa.string()),
    ]
)


@dataclass(frozen=True)
class ReplayBounds:
    """Which events a replay folds: ``from_position < position ≤ until_position`` (``None``: no
    upper bound) and ``recorded_at_ms ≤ until_time_ms`` (``None``: no time bound). Both bounds are
    inclusive, like Kafka's offsets-for-times lookups of "state as of T"."""

    from_position: int = 0
    until_position: int | None = None
    until_time_ms: int | None = None

    def sql_where(self) -> str:
        """The bounds as a SQL predicate over the ``events`` columns (engine-neutral)."""
        parts = [f"position > {int(self.from_position)}"]
        if self.until_position is not None:
            parts.append(f"position <= {int(self.until_position)}")
        if self.until_time_ms is not None:
            parts.append(f"recorded_at_ms <= {int(self.until_time_ms)}")
        return " AND ".join(parts)


def _fetch_one(url: str, query: str) -> tuple:
    """The first row of ``query`` on the log at ``url`` (through ADBC, pooled where it pays:
    :func:`store.arrow_reader.with_connection`)."""
    from store.arrow_reader import with_connection

    def run(conn) -> tuple:
        cur = conn.cursor()
        try:
            cur.execute(query)
            return tuple(cur.fetchone())
        finally:
            cur.close()

    return with_connection(url, run)


def _type_list(event_types: Sequence[str]) -> str:
    for t in event_types:
        if "'" in t:
            raise ValueError(f"bad event type name {t!r}")
    return ", ".join(f"'{t}'" for t in event_types)


class LogSource:
    """A readable event log: ``url`` is a SQLAlchemy URL (``sqlite:///…``, ``postgresql+psycopg://…``)
    read through ADBC, or a directory/file of Parquet written by :func:`export_parquet`.

    Build it with :meth:`of`. ``chunk_positions`` bounds how many positions one read covers.
    """

    def __init__(self, url: str | None = None, parquet: str | None = None, chunk_positions: int = 250_000, prefetch: int = 2):
        if (url is None) == (parquet is None):
            raise ValueError("give exactly one of url and parquet")
        self.url = url
        self.parquet = parquet
        self.chunk_positions = chunk_positions
        self.prefetch = prefetch

    @classmethod
    def of(cls, where: "str | os.PathLike[str] | LogSource") -> "LogSource":
        """A source for a URL, a Parquet path, or an existing source (returned as is)."""
        if isinstance(where, LogSource):
            return where
        where = str(where)
        if "://" in where or where.startswith("sqlite:"):
            return cls(url=where)
        return cls(parquet=where)

    def __repr__(self) -> str:
        return f"LogSource({self.url or self.parquet!r})"

    # ------------------------------------------------------------------ bounds of the log

    def position_range(self, bounds: ReplayBounds = ReplayBounds()) -> tuple[int, int]:
        """``(first, last)`` positions inside ``bounds`` (``(0, 0)`` when none)."""
        if self.parquet is not None:
            t = ds.dataset(self.parquet, format="parquet").to_table(columns=["position", "recorded_at_ms"], filter=self._filter(bounds, None))
            if t.num_rows == 0:
                return 0, 0
            import pyarrow.compute as pc

            mm = pc.min_max(t["position"]).as_py()
            return mm["min"], mm["max"]
        lo, hi = _fetch_one(self.url, f"SELECT min(position), max(position) FROM events WHERE {bounds.sql_where()}")
        return (int(lo or 0), int(hi or 0))

    def last_position(self) -> int:
        """The log's last position (0 when empty). Every position at or below it is committed
        (positions are assigned in commit order), so it bounds a consistent read."""
        if self.parquet is not None:
            return self.position_range()[1]
        (hi,) = _fetch_one(self.url, "SELECT max(position) FROM events")
        return int(hi or 0)

    def count(self, bounds: ReplayBounds = ReplayBounds(), event_types: Sequence[str] | None = None) -> int:
        """How many events inside ``bounds`` (of ``event_types`` only, if given)."""
        if self.parquet is not None:
            return ds.dataset(self.parquet, format="parquet").count_rows(filter=self._filter(bounds, event_types))
        where = bounds.sql_where()
        if event_types is not None:
            if not event_types:
                return 0
            where += f" AND event_type IN ({_type_list(event_types)})"
        (n,) = _fetch_one(self.url, f"SELECT count(*) FROM events WHERE {where}")
        return int(n)

    # ------------------------------------------------------------------ reading

    def _filter(self, bounds: ReplayBounds, event_types: Sequence[str] | None, lo: int | None = None, hi: int | None = None):
        f = ds.field("position") > (bounds.from_position if lo is None else lo)
        upper = bounds.until_position if hi is None else hi
        if upper is not None:
            f = f & (ds.field("position") <= upper)
        if bounds.until_time_ms is not None:
            f = f & (ds.field("recorded_at_ms") <= bounds.until_time_ms)
        if event_types is not None:
            f = f & ds.field("event_type").isin(list(event_types))
        return f

    def batches(
        self, bounds: ReplayBounds = ReplayBounds(), event_types: Sequence[str] | None = None
    ) -> Iterator[pa.Table]:
        """The events inside ``bounds`` (of ``event_types`` only, if given) in position order, as
        Arrow tables with :data:`FOLD_COLUMNS`, one per chunk of ``chunk_positions`` positions
        (empty chunks are skipped). The next ``prefetch`` chunks are read on a thread while the
        caller works on the current one."""
        if event_types is not None and not event_types:
            return
        first, last = self.position_range(bounds)
        if last == 0:
            return
        spans = []
        lo = max(bounds.from_position, first - 1)
        while lo < last:
            hi = min(last, lo + self.chunk_positions)
            spans.append((lo, hi))
            lo = hi
        if self.prefetch <= 0 or len(spans) == 1:
            for lo, hi in spans:
                t = self._read(bounds, event_types, lo, hi)
                if t.num_rows:
                    yield t
            return
        # Read ahead on a thread (the drivers release the GIL while they read), so the next chunk
        # is fetched while the caller folds this one.
        import queue
        import threading

        q: "queue.Queue[object]" = queue.Queue(self.prefetch)
        stop = threading.Event()

        def reader() -> None:
            try:
                for lo, hi in spans:
                    if stop.is_set():
                        return
                    q.put(self._read(bounds, event_types, lo, hi))
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer
                q.put(exc)
            q.put(None)

        th = threading.Thread(target=reader, name="shoal-log-reader", daemon=True)
        th.start()
        try:
            while True:
                item = q.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                if item.num_rows:  # type: ignore[union-attr]
                    yield item  # type: ignore[misc]
        finally:
            stop.set()
            while th.is_alive():
                try:
                    q.get_nowait()
                except queue.Empty:
                    th.join(0.05)

    def _read(self, bounds: ReplayBounds, event_types: Sequence[str] | None, lo: int, hi: int) -> pa.Table:
        if self.parquet is not None:
            t = ds.dataset(self.parquet, format="parquet").to_table(
                columns=FOLD_COLUMNS.names, filter=self._filter(bounds, event_types, lo, hi)
            )
            t = t.cast(FOLD_COLUMNS)
            return t.sort_by("position") if t.num_rows else t
        from store.arrow_reader import query_arrow

        where = ReplayBounds(lo, hi, bounds.until_time_ms).sql_where()
        if event_types is not None:
            where += f" AND event_type IN ({_type_list(event_types)})"
        query = f"SELECT {', '.join(FOLD_COLUMNS.names)} FROM events WHERE {where} ORDER BY position"
        return query_arrow(self.url, query, FOLD_COLUMNS)


#: The typed part of an export (:func:`export_parquet`): ``<export>/_typed/<event type>/part-*.parquet``
#: and ``<export>/_typed/_manifest.json``. The leading underscore keeps it out of readers of the raw
#: part (pyarrow datasets and Spark skip ``_``-prefixed paths; DuckDB reads ``<export>/*.parquet``).
TYPED_DIR = "_typed"
TYPED_FORMAT = 1
_TYPE_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def typed_shapes() -> dict[str, dict]:
    """For each registered event type: ``{"schema_version": current version, "structure": the
    DuckDB ``json_transform`` structure of its payload}`` (from the event class,
    :func:`projections.flatten.tree_of`; dict-valued fields are not part of it). A typed export
    records these in its manifest; a reader uses its typed part only where they still match."""
    from events.base import registered_event_types
    from projections.flatten import duckdb_structure, tree_of
    from projections.model import domain_projections

    domain_projections()  # imports (registers) the events of every built-in domain
    return {
        name: {"schema_version": cls.schema_version, "structure": duckdb_structure(tree_of(cls))}
        for name, cls in sorted(registered_event_types().items())
    }


def read_typed_manifest(path: str | os.PathLike[str]) -> dict | None:
    """The manifest of the typed part of the export at ``path`` (``None`` when ``path`` is not an
    export directory with a typed part of a format this code reads)."""
    m = Path(path) / TYPED_DIR / "_manifest.json"
    if not m.is_file():
        return None
    doc = json.loads(m.read_text())
    return doc if doc.get("format") == TYPED_FORMAT else None


def export_parquet(
    url: str,
    path: str | os.PathLike[str],
    bounds: ReplayBounds = ReplayBounds(),
    chunk_positions: int = 1_000_000,
    typed: bool = True,
) -> int:
    """Write the log's events inside ``bounds`` to Parquet under directory ``path`` for Spark
    clusters or offline analysis. Returns the number of events written.

    Two parts:

    - **raw**: ``path/part-<first position>.parquet``, one file per chunk of ``chunk_positions``
      positions, with :data:`FOLD_COLUMNS` exactly as stored (the payload as its JSON text, any
      schema version): lossless, read in position order by :class:`LogSource`.
    - **typed** (``typed=True``): ``path/_typed/<event type>/part-<first position>.parquet``, one
      directory per registered event type, with the envelope (:data:`projections.model.ENVELOPE`)
      and ``payload``: the event parsed into a Parquet struct (lists as lists) after upcasting to
      the type's current schema version. A columnar engine reads the fields it needs without
      parsing JSON (the Spark fold does). Every registered type gets a directory, with a file of
      no rows when the log has none of its events. ``_typed/_manifest.json`` records the format,
      the last position exported and each type's schema version and structure
      (:func:`typed_shapes`), written last: a typed part without it is incomplete and not read.

    Rewriting an existing export first deletes its files (``part-*.parquet`` and ``_typed/``;
    nothing else in ``path``). Raises ``OSError`` when ``path`` cannot be written and
    :class:`events.codec.CorruptEventError` (naming the position) for a stored payload that is
    not valid JSON; the typed part is then left without its manifest (not read)."""
    import duckdb

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tdir = out / TYPED_DIR
    # an earlier export's files go first (a shorter export must not leave its later chunks)
    shutil.rmtree(tdir, ignore_errors=True)
    for old in out.glob("part-*.parquet"):
        old.unlink()
    if typed:
        shapes = typed_shapes()
        for etype in shapes:
            if not _TYPE_NAME.match(etype):
                raise ValueError(f"event type {etype!r} cannot name a directory")
        con = duckdb.connect()
        con.execute("SET preserve_insertion_order = true")
    n = 0
    last = 0
    written: set[str] = set()
    try:
        for t in LogSource(url=url, chunk_positions=chunk_positions).batches(bounds):
            first = t["position"][0].as_py()
            last = t["position"][-1].as_py()
            pq.write_table(t, out / f"part-{first:020d}.parquet", compression="zstd")
            n += t.num_rows
            if typed:
                _write_typed(con, upcast_chunk(t), tdir, f"part-{first:020d}.parquet", shapes, written)
        if typed:
            empty = FOLD_COLUMNS.empty_table()
            for etype in shapes.keys() - written:
                _write_typed(con, empty, tdir, "part-empty.parquet", {etype: shapes[etype]}, written, always=True)
            (tdir / "_manifest.json").write_text(
                json.dumps({"format": TYPED_FORMAT, "last_position": last, "event_count": n, "types": shapes}, indent=1)
            )
    finally:
        if typed:
            con.close()
    return n


def _write_typed(con, chunk: pa.Table, tdir: Path, name: str, shapes: dict[str, dict], written: set[str], always: bool = False) -> None:
    """Write the rows of ``chunk`` (current schema versions) of each type in ``shapes`` to
    ``tdir/<type>/name`` with their payload parsed into a struct (``always``: also with no rows)."""
    import duckdb
    import pyarrow.compute as pc

    present = set(pc.unique(chunk["event_type"]).to_pylist()) if chunk.num_rows else set()
    env = ", ".join(quote_ident(f) for f in ("position", "stream_id", "stream_version", "recorded_at_ms"))
    con.register("shoal_chunk", chunk)
    try:
        for etype, shape in shapes.items():
            if etype not in present and not always:
                continue
            d = tdir / etype
            d.mkdir(parents=True, exist_ok=True)
            structure = json.dumps(shape["structure"])
            rows = f"FROM shoal_chunk WHERE event_type = {sql_literal(etype)}"
            try:
                con.execute(
                    f"COPY (SELECT {env}, json_transform(data, {sql_literal(structure)}) AS payload {rows} ORDER BY position) "
                    f"TO {sql_literal(str(d / name))} (FORMAT parquet, COMPRESSION zstd)"
                )
            except duckdb.Error as exc:
                bad = con.execute(f"SELECT min(position) {rows} AND NOT json_valid(data)").fetchone()[0]
                if bad is None:
                    raise
                from events.codec import CorruptEventError

                raise CorruptEventError(bad, etype, f"payload is not valid JSON ({exc})") from exc
            written.add(etype)
    finally:
        con.unregister("shoal_chunk")


def upcast_chunk(chunk: pa.Table) -> pa.Table:
    """``chunk`` with every event stored under an older schema version re-encoded at the current
    one (the codec's upcasters run in Python, on those rows only), so the SQL engines flatten one
    shape per event type. Rows already current pass through untouched (no per-row Python)."""
    import pyarrow.compute as pc

    from events.base import registered_event_types
    from events.codec import decode_event, encode_event

    current = {name: cls.schema_version for name, cls in registered_event_types().items()}
    if chunk.num_rows == 0 or all(v == 1 for v in current.values()) and pc.all(pc.equal(chunk["schema_version"], 1)).as_py():
        return chunk
    types_ = chunk["event_type"].to_pylist()
    versions = chunk["schema_version"].to_pylist()
    stale = [i for i, (t, v) in enumerate(zip(types_, versions)) if t in current and v != current[t]]
    if not stale:
        return chunk
    data = chunk["data"].to_pylist()
    positions = chunk["position"].to_pylist()
    new_versions = list(versions)
    for i in stale:
        ev = decode_event(types_[i], versions[i], data[i], positions[i])
        data[i] = encode_event(ev).decode()
        new_versions[i] = current[types_[i]]
    chunk = chunk.set_column(chunk.schema.get_field_index("data"), "data", pa.array(data, pa.string()))
    return chunk.set_column(chunk.schema.get_field_index("schema_version"), "schema_version", pa.array(new_versions, pa.int64()))
