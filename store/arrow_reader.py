"""Bulk reads of the event log as Arrow record batches through ADBC (no row-by-row Python).

Used by the DuckDB and Spark projections and by ``bench/event_log.py``. The SQLAlchemy URL of the
log is turned into the ADBC driver's URI: ``sqlite:///path`` → the SQLite file path,
``postgresql+psycopg://…`` → ``postgresql://…``.
"""

from __future__ import annotations

import atexit
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

__all__ = [
    "EVENTS_SCHEMA",
    "adbc_connect",
    "close_idle_connections",
    "query_arrow",
    "read_events_arrow",
    "read_events_table",
    "sqlite_path",
    "with_connection",
]

#: The Arrow schema of the envelope columns, as every reader returns them.
EVENTS_SCHEMA = pa.schema(
    [
        ("position", pa.int64()),
        ("event_id", pa.string()),
        ("stream_id", pa.string()),
        ("stream_version", pa.int64()),
        ("event_type", pa.string()),
        ("schema_version", pa.int64()),
        ("recorded_at_ms", pa.int64()),
        ("data", pa.string()),
    ]
)

_COLUMNS = ", ".join(EVENTS_SCHEMA.names)


def sqlite_path(url: str) -> str | None:
    """The file path of a ``sqlite:///path`` URL (query string dropped), or ``None`` for an
    in-memory database or a URL without a path."""
    path = url.split(":///", 1)[1] if ":///" in url else ""
    path = path.split("?", 1)[0]
    return None if not path or path == ":memory:" else path


def adbc_connect(url: str):
    """A read-only ADBC DB-API connection for the SQLAlchemy ``url`` of an event log.

    Raises ``ValueError`` for an unsupported or in-memory URL (ADBC cannot share SQLAlchemy's
    private in-memory database)."""
    if url.startswith("sqlite"):
        path = sqlite_path(url)
        if path is None:
            raise ValueError("the Arrow reader needs a file-backed SQLite event log")
        from urllib.parse import quote

        import adbc_driver_sqlite.dbapi as sqlite_dbapi

        # Read-only, always: the driver links its own copy of SQLite, which does not see the
        # POSIX locks of the copy our writer uses in the same process. A read-write connection
        # of it would, on close, take itself for the file's last user, checkpoint and delete the
        # -wal/-shm files the writer still has open; later appends would go to a deleted WAL
        # (tests/store/test_foreign_sqlite_readers.py). A read-only connection never does.
        conn = sqlite_dbapi.connect(f"file:{quote(os.path.abspath(path))}?mode=ro")
        # The driver sets no busy timeout: a reader opening the file while another connection
        # rebuilds the WAL index (parallel slices open several at once) would fail at once with
        # "database is locked" instead of waiting its turn.
        cur = conn.cursor()
        try:
            cur.execute("PRAGMA busy_timeout = 30000")
        finally:
            cur.close()
        return conn
    if url.startswith("postgresql"):
        import adbc_driver_postgresql.dbapi as pg_dbapi

        uri = "postgresql://" + url.split("://", 1)[1]
        # autocommit: a read is its own transaction, so a connection kept idle in the pool
        # (with_connection) holds no snapshot and no lock
        return pg_dbapi.connect(uri, autocommit=True)
    raise ValueError(f"unsupported event log url {url!r}")


#: idle ADBC PostgreSQL connections kept per URL (see :func:`arrow_connection`)
MAX_IDLE_PG_CONNECTIONS = 8
_idle: dict[str, list] = {}
_idle_pid = os.getpid()
_idle_lock = threading.Lock()
#: connections inherited through fork: never used or closed by the child (closing would end the
#: parent's server session on the shared socket), only kept referenced
_INHERITED: list = []


def _checkout(url: str):
    """An idle pooled PostgreSQL connection for ``url``, or ``None``."""
    global _idle_pid
    with _idle_lock:
        if _idle_pid != os.getpid():
            for conns in _idle.values():
                _INHERITED.extend(conns)
            _idle.clear()
            _idle_pid = os.getpid()
        conns = _idle.get(url)
        return conns.pop() if conns else None


def _checkin(url: str, conn) -> None:
    with _idle_lock:
        conns = _idle.setdefault(url, [])
        if _idle_pid == os.getpid() and len(conns) < MAX_IDLE_PG_CONNECTIONS:
            conns.append(conn)
            return
    conn.close()


def close_idle_connections() -> None:
    """Close the pooled idle PostgreSQL connections of this process (also run at exit)."""
    with _idle_lock:
        conns = [c for cs in _idle.values() for c in cs] if _idle_pid == os.getpid() else []
        _idle.clear()
    for c in conns:
        try:
            c.close()
        except Exception:  # noqa: BLE001 - closing at exit is best effort
            pass


atexit.register(close_idle_connections)


def with_connection(url: str, run):
    """Call ``run(conn)`` with an ADBC connection to the event log at ``url`` and return what it
    returns.

    PostgreSQL connections are pooled per process (at most :data:`MAX_IDLE_PG_CONNECTIONS` idle
    per URL, in autocommit mode, so an idle one holds no snapshot or lock): opening one costs
    ~35 ms (the driver loads the server's type catalogue), a tenth of reading 300k events. A
    pooled connection that fails (the server restarted, the session was killed) is closed and
    ``run`` is retried once on a new one. SQLite connections are opened per call and closed: a
    read-only connection left open across a writer's close would keep reading the wal-index of
    a deleted WAL (see :func:`adbc_connect`). Raises what ``run`` or the driver raises."""
    if not url.startswith("postgresql"):
        conn = adbc_connect(url)
        try:
            return run(conn)
        finally:
            conn.close()
    conn = _checkout(url)
    if conn is not None:
        try:
            out = run(conn)
        except Exception:  # noqa: BLE001 - a stale pooled connection: retried on a fresh one below
            try:
                conn.close()
            except Exception:  # noqa: BLE001
                pass
        else:
            _checkin(url, conn)
            return out
    conn = adbc_connect(url)
    try:
        out = run(conn)
    except BaseException:
        conn.close()
        raise
    _checkin(url, conn)
    return out


def read_events_arrow(
    url: str, from_position: int = 0, until_position: int | None = None, batch_rows: int = 65_536
) -> pa.RecordBatchReader:
    """Events with ``from_position < position ≤ until_position`` (no upper bound when ``None``)
    in position order, as a ``pyarrow.RecordBatchReader`` with :data:`EVENTS_SCHEMA`.

    The whole result is read before the connection closes (ADBC readers are bound to their
    cursor), so the returned reader owns its memory; ``batch_rows`` sizes the batches.
    """
    table = read_events_table(url, from_position, until_position)
    return pa.RecordBatchReader.from_batches(EVENTS_SCHEMA, table.to_batches(max_chunksize=batch_rows))


#: position ranges at least this long are read as parallel slices
PARALLEL_MIN_POSITIONS = 200_000


def read_events_table(
    url: str, from_position: int = 0, until_position: int | None = None, slices: int | None = None
) -> pa.Table:
    """Events with ``from_position < position ≤ until_position`` (``None``: up to the last
    position) in position order, as one ``pyarrow.Table`` with :data:`EVENTS_SCHEMA`.

    A long range is cut into ``slices`` contiguous position ranges (default: one per CPU, at
    most 8) read by as many ADBC connections on threads — the drivers read with the GIL released,
    so the slices decode on separate cores — and concatenated in order. Positions may have holes;
    each slice is a ``WHERE position`` range, so none is lost or read twice."""
    upper = until_position
    if upper is None:
        last = query_arrow(url, "SELECT max(position) AS p FROM events", pa.schema([("p", pa.int64())]))
        upper = last.column(0)[0].as_py() if last.num_rows else None
        if upper is None:
            return EVENTS_SCHEMA.empty_table()
    lo, hi = int(from_position), int(upper)
    n = slices if slices is not None else min(8, os.cpu_count() or 1)
    if n <= 1 or hi - lo < PARALLEL_MIN_POSITIONS:
        bounds = [(lo, hi)]
    else:
        step = -(-(hi - lo) // n)
        bounds = [(a, min(hi, a + step)) for a in range(lo, hi, step)]

    def read(bound: tuple[int, int]) -> pa.Table:
        a, b = bound
        query = f"SELECT {_COLUMNS} FROM events WHERE position > {a} AND position <= {b} ORDER BY position"
        return query_arrow(url, query, EVENTS_SCHEMA)

    if len(bounds) == 1:
        return read(bounds[0])
    with ThreadPoolExecutor(max_workers=len(bounds), thread_name_prefix="arrow-read") as pool:
        return pa.concat_tables(list(pool.map(read, bounds)))


def query_arrow(url: str, query: str, schema: pa.Schema) -> pa.Table:
    """Run ``query`` (SQL over the ``events`` table) on the event log at ``url`` through ADBC and
    return the whole result as a ``pyarrow.Table`` cast to ``schema`` (an empty table of that
    schema when no row matches: ADBC cannot infer SQLite column types from zero rows)."""

    def run(conn) -> pa.Table:
        cur = conn.cursor()
        try:
            cur.execute(query)
            return cur.fetch_arrow_table()
        finally:
            cur.close()

    table = with_connection(url, run)
    return schema.empty_table() if table.num_rows == 0 else table.cast(schema)
