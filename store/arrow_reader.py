"""Bulk reads of the event log as Arrow record batches through ADBC (no row-by-row Python).

Used by the DuckDB and Spark projections and by ``bench/event_log.py``. The SQLAlchemy URL of the
log is turned into the ADBC driver's URI: ``sqlite:///path`` → the SQLite file path,
``postgresql+psycopg://…`` → ``postgresql://…``.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["adbc_connect", "query_arrow", "read_events_arrow", "EVENTS_SCHEMA"]

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


def adbc_connect(url: str):
    """An ADBC DB-API connection for the SQLAlchemy ``url`` of an event log.

    Raises ``ValueError`` for an unsupported or in-memory URL (ADBC cannot share SQLAlchemy's
    private in-memory database)."""
    if url.startswith("sqlite"):
        path = url.split(":///", 1)[1] if ":///" in url else ""
        if not path or path == ":memory:":
            raise ValueError("the Arrow reader needs a file-backed SQLite event log")
        import adbc_driver_sqlite.dbapi as sqlite_dbapi

        return sqlite_dbapi.connect(path)
    if url.startswith("postgresql"):
        import adbc_driver_postgresql.dbapi as pg_dbapi

        uri = "postgresql://" + url.split("://", 1)[1]
        return pg_dbapi.connect(uri)
    raise ValueError(f"unsupported event log url {url!r}")


def read_events_arrow(
    url: str, from_position: int = 0, until_position: int | None = None, batch_rows: int = 65_536
) -> pa.RecordBatchReader:
    """Events with ``from_position < position ≤ until_position`` (no upper bound when ``None``)
    in position order, as a ``pyarrow.RecordBatchReader`` with :data:`EVENTS_SCHEMA`.

    The whole result is read before the connection closes (ADBC readers are bound to their
    cursor), so the returned reader owns its memory; ``batch_rows`` sizes the batches.
    """
    upper = until_position if until_position is not None else (1 << 62)
    query = f"SELECT {_COLUMNS} FROM events WHERE position > {int(from_position)} AND position <= {int(upper)} ORDER BY position"
    table = query_arrow(url, query, EVENTS_SCHEMA)
    return pa.RecordBatchReader.from_batches(EVENTS_SCHEMA, table.to_batches(max_chunksize=batch_rows))


def query_arrow(url: str, query: str, schema: pa.Schema) -> pa.Table:
    """Run ``query`` (SQL over the ``events`` table) on the event log at ``url`` through ADBC and
    return the whole result as a ``pyarrow.Table`` cast to ``schema`` (an empty table of that
    schema when no row matches: ADBC cannot infer SQLite column types from zero rows)."""
    conn = adbc_connect(url)
    try:
        cur = conn.cursor()
        try:
            cur.execute(query)
            table = cur.fetch_arrow_table()
        finally:
            cur.close()
    finally:
        conn.close()
    return schema.empty_table() if table.num_rows == 0 else table.cast(schema)
