"""Where projections read the event log from: the live log through ADBC (Arrow, no row-by-row
Python) or a Parquet export of it; and the bounds of a replay.

The log is read in *position chunks* (``chunk_positions`` positions per query) so that a replay of
10 M events never holds the whole log in memory, and only the columns and event types a fold
needs are selected.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

__all__ = ["FOLD_COLUMNS", "LogSource", "ReplayBounds", "export_parquet"]

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
        from store.arrow_reader import adbc_connect

        conn = adbc_connect(self.url)
        try:
            cur = conn.cursor()
            cur.execute(f"SELECT min(position), max(position) FROM events WHERE {bounds.sql_where()}")
            lo, hi = cur.fetchone()
            cur.close()
        finally:
            conn.close()
        return (int(lo or 0), int(hi or 0))

    def last_position(self) -> int:
        """The log's last position (0 when empty). Every position at or below it is committed
        (positions are assigned in commit order), so it bounds a consistent read."""
        if self.parquet is not None:
            return self.position_range()[1]
        from store.arrow_reader import adbc_connect

        conn = adbc_connect(self.url)
        try:
            cur = conn.cursor()
            cur.execute("SELECT max(position) FROM events")
            (hi,) = cur.fetchone()
            cur.close()
        finally:
            conn.close()
        return int(hi or 0)

    def count(self, bounds: ReplayBounds = ReplayBounds(), event_types: Sequence[str] | None = None) -> int:
        """How many events inside ``bounds`` (of ``event_types`` only, if given)."""
        if self.parquet is not None:
            return ds.dataset(self.parquet, format="parquet").count_rows(filter=self._filter(bounds, event_types))
        from store.arrow_reader import adbc_connect

        where = bounds.sql_where()
        if event_types is not None:
            if not event_types:
                return 0
            where += f" AND event_type IN ({_type_list(event_types)})"
        conn = adbc_connect(self.url)
        try:
            cur = conn.cursor()
            cur.execute(f"SELECT count(*) FROM events WHERE {where}")
            (n,) = cur.fetchone()
            cur.close()
        finally:
            conn.close()
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


def export_parquet(url: str, path: str | os.PathLike[str], bounds: ReplayBounds = ReplayBounds(), chunk_positions: int = 1_000_000) -> int:
    """Write the log's events inside ``bounds`` to Parquet under directory ``path`` (one file per
    chunk: ``part-<first position>.parquet``) for Spark clusters or offline analysis. Returns the
    number of events written. The export has :data:`FOLD_COLUMNS` plus nothing else."""
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for t in LogSource(url=url, chunk_positions=chunk_positions).batches(bounds):
        first = t["position"][0].as_py()
        pq.write_table(t, out / f"part-{first:020d}.parquet", compression="zstd")
        n += t.num_rows
    return n


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
