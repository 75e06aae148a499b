"""The durable append-only event log on SQLAlchemy 2 Core: SQLite (embedded) and PostgreSQL.

Contract (the intent of eventsourcing's recorder test cases, Akka's JournalSpec and EventStoreDB's
expected-version rules; see ``shared/reference/event-store.md``):

* ``append`` is atomic. ``expected_version`` is :data:`NO_STREAM` (the stream must not exist),
  :data:`ANY`, or the exact current version (an int ≥ 0; 0 means "no events yet", like NO_STREAM).
  A mismatch raises :class:`ConcurrencyError` and writes nothing. An empty append raises
  ``ValueError`` and touches nothing (Marten #5539).
* Idempotent retries: an append whose event ids are all already stored in that stream, at the same
  versions, returns the original :class:`AppendResult` and stores nothing twice (EventStoreDB).
* ``append_batch`` appends to several streams in one transaction: all or nothing.
* Positions are global, assigned at commit, strictly increasing in commit order. Appends run under
  the log's write lock (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: ``LOCK TABLE … IN EXCLUSIVE MODE``
  with ``lock_timeout``) and take ``max(position) + 1 …``, so positions are gap-free *and* in commit
  order: a reader that saw position p can never later see a smaller one commit. Readers still page
  by ``position > checkpoint`` and never assume contiguity (holes may come from imports or manual
  repair; the contract suite injects one).
* Snapshots are an optimisation only: ``snapshot + events after it == all events``.

Durability: SQLite runs in WAL mode with ``synchronous=FULL`` by default
(``event.log.sqlite.synchronous=NORMAL`` trades the last transactions on power loss — not on a
process crash — for speed). PostgreSQL commits are durable with the server's defaults.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Final

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.engine import Connection, Engine

from events.base import EventEnvelope, NewEvent, RecordedEvent

__all__ = [
    "ANY",
    "NO_STREAM",
    "AppendRequest",
    "AppendResult",
    "ConcurrencyError",
    "EventLog",
    "EventLogError",
    "WriteLockTimeout",
    "Snapshot",
    "metadata",
    "open_event_log",
]

#: ``expected_version``: append whatever the stream's version is.
ANY: Final = -2
#: ``expected_version``: the stream must not exist yet.
NO_STREAM: Final = -1

metadata = sa.MetaData()

_BigInt = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

events_table = sa.Table(
    "events",
    metadata,
    # On SQLite an INTEGER PRIMARY KEY is the rowid; positions are assigned explicitly.
    sa.Column("position", _BigInt, primary_key=True, autoincrement=False),
    sa.Column("event_id", sa.String(36), nullable=False, unique=True),
    sa.Column("stream_id", sa.String(255), nullable=False),
    sa.Column("stream_version", sa.BigInteger(), nullable=False),
    sa.Column("event_type", sa.String(255), nullable=False),
    sa.Column("schema_version", sa.Integer(), nullable=False),
    sa.Column("recorded_at_ms", sa.BigInteger(), nullable=False),
    sa.Column("data", sa.Text(), nullable=False),
    sa.UniqueConstraint("stream_id", "stream_version", name="uq_events_stream_version"),
)

snapshots_table = sa.Table(
    "snapshots",
    metadata,
    sa.Column("stream_id", sa.String(255), primary_key=True),
    sa.Column("stream_version", sa.BigInteger(), primary_key=True),
    sa.Column("position", sa.BigInteger(), nullable=False),
    sa.Column("saved_at_ms", sa.BigInteger(), nullable=False),
    sa.Column("state", sa.LargeBinary(), nullable=False),
)


class EventLogError(RuntimeError):
    """Base of the event log's errors."""


class WriteLockTimeout(EventLogError):
    """The log's write lock was not granted in time (PostgreSQL ``lock_timeout``, SQLite
    ``busy_timeout``); nothing was written and the append may be retried with the same ids."""


class ConcurrencyError(EventLogError):
    """``expected_version`` did not match the stream's current version; nothing was written.

    ``stream_id``, ``expected`` and ``actual`` (the stream's version at the time) are attributes.
    """

    def __init__(self, stream_id: str, expected: int, actual: int, detail: str = "") -> None:
        self.stream_id = stream_id
        self.expected = expected
        self.actual = actual
        what = {ANY: "ANY", NO_STREAM: "NO_STREAM"}.get(expected, str(expected))
        super().__init__(
            f"stream {stream_id!r}: expected version {what}, actual {actual}" + (f" ({detail})" if detail else "")
        )


@dataclass(frozen=True, slots=True)
class AppendRequest:
    """One stream's part of an append: ``events`` (non-empty) and its ``expected_version``."""

    stream_id: str
    events: Sequence[NewEvent]
    expected_version: int = ANY


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Where an append landed: the stream's versions and the global positions (both inclusive).

    ``next_expected_version`` is the stream's version after the append (== ``last_version``),
    to pass as ``expected_version`` of the next append.
    """

    stream_id: str
    first_version: int
    last_version: int
    first_position: int
    last_position: int
    positions: tuple[int, ...]

    @property
    def next_expected_version(self) -> int:
        return self.last_version


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A stored snapshot: ``state`` (opaque bytes) folds the stream's events up to and including
    ``stream_version``; ``position`` is that event's global position."""

    stream_id: str
    stream_version: int
    position: int
    saved_at_ms: int
    state: bytes


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class EventLog:
    """The event log over one SQLAlchemy engine. Thread-safe; open one per process.

    Build it with :func:`open_event_log`. ``clock`` returns wall-clock milliseconds and stamps
    ``recorded_at_ms`` (inject a fake one in tests).
    """

    #: rows fetched per round trip by the readers
    page_size: int = 1000

    def __init__(self, engine: Engine, *, url: str, clock: Callable[[], int] = _now_ms, lock_timeout_ms: int = 10_000):
        self.engine = engine
        self.url = url
        self.clock = clock
        self.lock_timeout_ms = lock_timeout_ms
        self.dialect = engine.dialect.name
        # The hot path speaks the driver's SQL directly (still through SQLAlchemy's connection):
        # compiling Core constructs per append costs more than the insert itself.
        mark = self._mark = "?" if engine.dialect.paramstyle == "qmark" else "%s"
        cols = ("position", "event_id", "stream_id", "stream_version", "event_type", "schema_version", "recorded_at_ms", "data")
        self._sql_insert = f"INSERT INTO events ({', '.join(cols)}) VALUES ({', '.join([mark] * len(cols))})"
        self._sql_copy = f"COPY events ({', '.join(cols)}) FROM STDIN"
        self._sql_max_position = "SELECT max(position) FROM events"
        self._sql_stream_version = f"SELECT max(stream_version) FROM events WHERE stream_id = {mark}"
        # the common single-stream append reads both in one round trip
        self._sql_position_and_version = (
            f"SELECT (SELECT max(position) FROM events), (SELECT max(stream_version) FROM events WHERE stream_id = {mark})"
        )
        self._write_mutex = threading.Lock()

    # ------------------------------------------------------------------ writing

    def append(self, stream_id: str, events: Sequence[NewEvent], expected_version: int = ANY) -> AppendResult:
        """Append ``events`` to ``stream_id`` atomically.

        Returns the :class:`AppendResult`. Raises ``ValueError`` for an empty list or a bad
        ``expected_version``; :class:`ConcurrencyError` on a version conflict or when some but
        not all event ids were stored before. A retry of a committed append (same event ids)
        returns the original result.
        """
        return self.append_batch([AppendRequest(stream_id, events, expected_version)])[0]

    def append_batch(self, requests: Sequence[AppendRequest]) -> list[AppendResult]:
        """Append to several streams in one transaction (group commit), all or nothing.

        Returns one :class:`AppendResult` per request, in order. Raises like :meth:`append`; on
        any error nothing of the batch is written. Several requests may name the same stream;
        their expected versions are checked in order against the batch's running version.
        """
        results = self.append_many(requests, atomic=True)
        return [r for r in results if isinstance(r, AppendResult)]  # atomic: all are results

    def append_many(self, requests: Sequence[AppendRequest], *, atomic: bool = False) -> list[AppendResult | Exception]:
        """The journal's group commit: validate each request in order, insert all that pass in one
        transaction, commit once.

        With ``atomic=False`` a failing request (conflict, bad input) yields its exception in the
        returned list and the others still commit; with ``atomic=True`` the first failure is raised
        and nothing commits. Returns one ``AppendResult`` or exception per request, in order.
        """
        if not requests:
            raise ValueError("append_many needs at least one request")
        for req in requests:
            if not req.events:
                exc = ValueError(f"empty append to stream {req.stream_id!r} is rejected")
                if atomic:
                    raise exc
        dbapi = self.engine.dialect.loaded_dbapi
        try:
            try:
                return self._append_many_once(requests, atomic, check_ids=False)
            except (sa.exc.IntegrityError, dbapi.IntegrityError):
                # An event id is already stored (an ANY-append retried, or a retry racing its
                # original in another process): again, checking every request's ids.
                return self._append_many_once(requests, atomic, check_ids=True)
        except (sa.exc.OperationalError, dbapi.OperationalError) as exc:
            cause = getattr(exc, "orig", None) or exc  # SQLAlchemy wraps, the DBAPI cursor does not
            text = str(cause).lower()
            if "lock" in text and ("timeout" in text or "locked" in text):
                raise WriteLockTimeout(f"the event log's write lock was not granted: {cause}") from exc
            raise

    def _append_many_once(
        self, requests: Sequence[AppendRequest], atomic: bool, check_ids: bool
    ) -> list[AppendResult | Exception]:
        with self._write_mutex, self.engine.connect() as conn:
            conn.info["shoal_write"] = True
            try:
                with conn.begin():
                    if not (self.dialect == "postgresql" and len(requests) == 1):
                        self._lock_for_write(conn)  # (a single-stream PostgreSQL append locks below)
                    # The hot path runs on the pooled DBAPI cursor inside SQLAlchemy's
                    # transaction: SQLAlchemy's per-statement execution context cost more than
                    # the statements themselves (three per append).
                    cur = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
                    try:
                        return self._validate_and_insert(conn, cur, requests, atomic, check_ids)
                    finally:
                        cur.close()
            finally:
                conn.info.pop("shoal_write", None)

    def _lock_for_write(self, conn: Connection) -> None:
        """Take the log's write lock inside the open transaction (SQLite's BEGIN IMMEDIATE already
        holds it; see ``_sqlite_engine``)."""
        if self.dialect == "postgresql":  # one round trip for both statements
            conn.exec_driver_sql(
                f"SET LOCAL lock_timeout = '{int(self.lock_timeout_ms)}ms'; LOCK TABLE events IN EXCLUSIVE MODE"
            )

    def _validate_and_insert(
        self, conn: Connection, cur: Any, requests: Sequence[AppendRequest], atomic: bool, check_ids: bool
    ) -> list[AppendResult | Exception]:
        versions: dict[str, int] = {}
        if len(requests) == 1 and self.dialect == "postgresql":
            # lock, position and version in one round trip (a simple-query string, so the stream
            # id goes in as a quoted literal)
            from psycopg import sql as pgsql

            stream = pgsql.Literal(requests[0].stream_id).as_string(cur.connection)
            cur.execute(
                f"SET LOCAL lock_timeout = '{int(self.lock_timeout_ms)}ms'; LOCK TABLE events IN EXCLUSIVE MODE; "
                f"SELECT (SELECT max(position) FROM events), (SELECT max(stream_version) FROM events WHERE stream_id = {stream})"
            )
            while cur.description is None and cur.nextset():
                pass
            position, version = cur.fetchone()
            position = position or 0
            versions[requests[0].stream_id] = version or 0
        elif len(requests) == 1:
            cur.execute(self._sql_position_and_version, (requests[0].stream_id,))
            position, version = cur.fetchone()
            position = position or 0
            versions[requests[0].stream_id] = version or 0
        else:
            cur.execute(self._sql_max_position)
            position = cur.fetchone()[0] or 0
        results: list[AppendResult | Exception] = []
        rows: list[tuple[Any, ...]] = []
        now = self.clock()
        for req in requests:
            outcome = self._check_request(conn, cur, req, versions, check_ids)
            if isinstance(outcome, Exception):
                if atomic:
                    raise outcome
                results.append(outcome)
                continue
            if isinstance(outcome, AppendResult):  # idempotent retry of a committed append
                results.append(outcome)
                continue
            current = outcome
            positions = tuple(range(position + 1, position + 1 + len(req.events)))
            stream_id = req.stream_id
            base = current + 1 - positions[0]
            rows.extend(
                (p, str(ev.event_id), stream_id, p + base, ev.event_type, ev.schema_version, now, ev.data.decode())
                for p, ev in zip(positions, req.events)
            )
            position = positions[-1]
            versions[req.stream_id] = current + len(req.events)
            results.append(
                AppendResult(req.stream_id, current + 1, current + len(req.events), positions[0], positions[-1], positions)
            )
        if rows:
            if self.dialect == "postgresql":
                # COPY streams the rows in one statement: 1.4x executemany's pipelined INSERTs
                # for 100-event appends (bench/event_log.py)
                with cur.copy(self._sql_copy) as copy:
                    for row in rows:
                        copy.write_row(row)
            else:
                cur.executemany(self._sql_insert, rows)
        return results

    def _check_request(
        self, conn: Connection, cur: Any, req: AppendRequest, versions: dict[str, int], check_ids: bool
    ) -> int | AppendResult | Exception:
        """Return the stream's current version if ``req`` may be appended, the original result if
        it is a retry of a committed append, or the exception that rejects it."""
        if not req.events:
            return ValueError(f"empty append to stream {req.stream_id!r} is rejected")
        expected = req.expected_version
        if not isinstance(expected, int) or expected < ANY:
            return ValueError(f"bad expected_version {expected!r}")
        current = versions.get(req.stream_id)
        if current is None:
            cur.execute(self._sql_stream_version, (req.stream_id,))
            current = cur.fetchone()[0] or 0
        wanted = 0 if expected == NO_STREAM else expected
        if check_ids or (expected != ANY and current != wanted):
            stored = self._stored_ids(conn, req)
            if stored:
                if len(stored) == len(req.events):
                    return self._original_result(req, stored)
                return ConcurrencyError(
                    req.stream_id, expected, current, f"{len(stored)} of {len(req.events)} event ids already stored"
                )
        if expected != ANY and current != wanted:
            return ConcurrencyError(req.stream_id, expected, current)
        return current

    def _stored_ids(self, conn: Connection, req: AppendRequest) -> list[tuple[str, str, int, int]]:
        ids = [str(e.event_id) for e in req.events]
        t = events_table.c
        rows = conn.execute(
            sa.select(t.event_id, t.stream_id, t.stream_version, t.position).where(t.event_id.in_(ids))
        ).all()
        return [tuple(r) for r in rows]  # type: ignore[misc]

    def _original_result(self, req: AppendRequest, stored: list[tuple[str, str, int, int]]) -> AppendResult | Exception:
        by_id = {r[0]: r for r in stored}
        ordered = [by_id[str(e.event_id)] for e in req.events]
        versions = [r[2] for r in ordered]
        if any(r[1] != req.stream_id for r in ordered) or versions != list(range(versions[0], versions[0] + len(versions))):
            return ConcurrencyError(req.stream_id, req.expected_version, -1, "event ids already stored elsewhere")
        positions = tuple(r[3] for r in ordered)
        return AppendResult(req.stream_id, versions[0], versions[-1], positions[0], positions[-1], positions)

    def _stream_version(self, conn: Connection, stream_id: str) -> int:
        return conn.exec_driver_sql(self._sql_stream_version, (stream_id,)).scalar() or 0

    # ------------------------------------------------------------------ reading

    def stream_version(self, stream_id: str) -> int:
        """The stream's current version (0 for a stream with no events)."""
        with self.engine.connect() as conn:
            return self._stream_version(conn, stream_id)

    def read_stream(
        self,
        stream_id: str,
        from_version: int = 1,
        to_version: int | None = None,
        limit: int | None = None,
    ) -> list[RecordedEvent]:
        """Events of ``stream_id`` with ``from_version ≤ stream_version ≤ to_version`` (both
        inclusive; ``to_version=None`` means no upper bound), at most ``limit`` of them, in version
        order. An unknown stream, ``limit=0`` or ``from_version > to_version`` give ``[]``.
        Raises ``ValueError`` for a negative ``limit``."""
        if limit is not None and limit < 0:
            raise ValueError("limit must be >= 0")
        if limit == 0 or (to_version is not None and from_version > to_version):
            return []
        # Driver SQL on the DBAPI cursor: recovery reads run in every actor process, and
        # compiling a Core select there costs megabytes of copy-on-write pages per process.
        m = self._mark
        sql = f"SELECT {_EVENT_COLUMNS} FROM events WHERE stream_id = {m} AND stream_version >= {m}"
        params: list[Any] = [stream_id, from_version]
        if to_version is not None:
            sql += f" AND stream_version <= {m}"
            params.append(to_version)
        sql += " ORDER BY stream_version"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [_recorded_tuple(r) for r in self._fetch_driver(sql, params)]

    def _fetch_driver(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """All rows of one driver-SQL query on a pooled DBAPI connection (read-only)."""
        with self.engine.connect() as conn:
            cur = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
            try:
                cur.execute(sql, tuple(params))
                return cur.fetchall()
            finally:
                cur.close()

    def read_all(self, from_position: int = 0, limit: int | None = None) -> list[RecordedEvent]:
        """Events with ``position > from_position`` (exclusive, like a checkpoint), in commit
        order, at most ``limit``. Positions may have holes; page with the last position seen."""
        if limit is not None and limit < 0:
            raise ValueError("limit must be >= 0")
        if limit == 0:
            return []
        t = events_table.c
        q = sa.select(events_table).where(t.position > from_position).order_by(t.position)
        if limit is not None:
            q = q.limit(limit)
        with self.engine.connect() as conn:
            return [_recorded(r) for r in conn.execute(q)]

    def read_page(
        self, stream_id: str, from_version: int, limit: int, with_snapshot: bool = False
    ) -> tuple[Snapshot | None, list[RecordedEvent], int]:
        """One recovery page: ``(snapshot, events, last_position)``. With ``with_snapshot`` the
        stream's latest snapshot is loaded and the events start after it when it is newer than
        ``from_version``; at most ``limit`` events in version order; ``last_position`` is the
        log's last position. Raises what the reads raise (storage errors)."""
        snap = self.load_snapshot(stream_id) if with_snapshot else None
        start = max(from_version, snap.stream_version + 1) if snap is not None else from_version
        return snap, self.read_stream(stream_id, start, limit=limit), self.last_position()

    def iter_all(self, from_position: int = 0, page_size: int | None = None, until_position: int | None = None) -> Iterator[RecordedEvent]:
        """All events after ``from_position`` (exclusive) up to ``until_position`` (inclusive, or
        the end), in commit order, fetched ``page_size`` at a time."""
        page = page_size or self.page_size
        checkpoint = from_position
        while True:
            batch = self.read_all(checkpoint, page)
            for rec in batch:
                if until_position is not None and rec.position > until_position:
                    return
                yield rec
            if len(batch) < page:
                return
            checkpoint = batch[-1].position

    def iter_envelopes(
        self,
        from_position: int = 0,
        until_position: int | None = None,
        on_corrupt: Callable[[Exception], None] | None = None,
    ) -> Iterator[EventEnvelope]:
        """Decoded events after ``from_position`` (exclusive) up to ``until_position`` (inclusive).

        A stored payload that cannot be decoded raises :class:`events.codec.CorruptEventError`
        naming its position; with ``on_corrupt`` the error is passed to it instead and the loop
        goes on with the next event."""
        from events.codec import CorruptEventError

        for rec in self.iter_all(from_position, until_position=until_position):
            try:
                yield EventEnvelope.of(rec)
            except CorruptEventError as exc:
                if on_corrupt is None:
                    raise
                on_corrupt(exc)

    def last_position(self) -> int:
        """The highest committed position (0 for an empty log)."""
        with self.engine.connect() as conn:
            return conn.execute(sa.select(sa.func.max(events_table.c.position))).scalar() or 0

    def stream_ids(self, prefix: str = "") -> list[str]:
        """The ids of the streams that have events, optionally only those starting with ``prefix``."""
        t = events_table.c
        q = sa.select(t.stream_id).distinct().order_by(t.stream_id)
        if prefix:
            q = q.where(t.stream_id.startswith(prefix, autoescape=True))
        with self.engine.connect() as conn:
            return list(conn.execute(q).scalars())

    def arrow_batches(self, from_position: int = 0, until_position: int | None = None, batch_rows: int = 65_536):
        """The log's rows after ``from_position`` (exclusive) up to ``until_position`` (inclusive)
        as a ``pyarrow.RecordBatchReader`` read through ADBC (no row-by-row Python).

        Columns: the envelope fields with ``data`` as a JSON string and ``event_id`` as a string.
        """
        from store.arrow_reader import read_events_arrow

        return read_events_arrow(self.url, from_position, until_position, batch_rows)

    # ---------------------------------------------------------------- snapshots

    def save_snapshot(self, stream_id: str, stream_version: int, state: bytes, position: int = 0) -> None:
        """Store ``state`` (opaque bytes) as the fold of ``stream_id`` up to ``stream_version``
        (inclusive; ``position`` is that event's global position if known). Saving again at the
        same version overwrites. Raises ``ValueError`` if ``stream_version`` < 1."""
        if stream_version < 1:
            raise ValueError("a snapshot folds at least one event: stream_version >= 1")
        row = {
            "stream_id": stream_id,
            "stream_version": stream_version,
            "position": position,
            "saved_at_ms": self.clock(),
            "state": bytes(state),
        }
        t = snapshots_table.c
        with self.engine.begin() as conn:
            conn.execute(
                snapshots_table.delete().where(t.stream_id == stream_id, t.stream_version == stream_version)
            )
            conn.execute(snapshots_table.insert(), row)

    def load_snapshot(self, stream_id: str, max_version: int | None = None) -> Snapshot | None:
        """The most recent snapshot of ``stream_id`` (at or below ``max_version`` if given), or
        ``None``."""
        m = self._mark
        sql = f"SELECT stream_id, stream_version, position, saved_at_ms, state FROM snapshots WHERE stream_id = {m}"
        params: list[Any] = [stream_id]
        if max_version is not None:
            sql += f" AND stream_version <= {m}"
            params.append(max_version)
        rows = self._fetch_driver(sql + " ORDER BY stream_version DESC LIMIT 1", params)
        if not rows:
            return None
        sid, version, position, saved_at_ms, state = rows[0]
        return Snapshot(sid, version, position, saved_at_ms, bytes(state))

    def delete_snapshots(self, stream_id: str, below_version: int | None = None) -> int:
        """Delete ``stream_id``'s snapshots (only those below ``below_version`` if given); returns
        how many. Events are never deleted."""
        t = snapshots_table.c
        q = snapshots_table.delete().where(t.stream_id == stream_id)
        if below_version is not None:
            q = q.where(t.stream_version < below_version)
        with self.engine.begin() as conn:
            return conn.execute(q).rowcount

    def close(self) -> None:
        """Release the engine's connections."""
        self.engine.dispose()

    def after_fork(self) -> None:
        """Make an EventLog inherited through ``fork`` usable in the child: its pool is replaced
        without closing the parent's connections (SQLAlchemy's ``dispose(close=False)``; SQLite
        forbids using a connection across ``fork``) and its write mutex is new. The engine and
        its dialect are kept, which costs the child far less memory than a new engine."""
        self.engine.dispose(close=False)
        self._write_mutex = threading.Lock()


_EVENT_COLUMNS = "event_id, stream_id, stream_version, position, event_type, schema_version, recorded_at_ms, data"


def _recorded_tuple(row: tuple[Any, ...]) -> RecordedEvent:
    """A :class:`RecordedEvent` from a driver row in ``_EVENT_COLUMNS`` order."""
    event_id, stream_id, stream_version, position, event_type, schema_version, recorded_at_ms, data = row
    return RecordedEvent(
        event_id=uuid.UUID(str(event_id)),
        stream_id=stream_id,
        stream_version=stream_version,
        position=position,
        event_type=event_type,
        schema_version=schema_version,
        recorded_at_ms=recorded_at_ms,
        data=data.encode() if isinstance(data, str) else bytes(data),
    )


def _recorded(row: Any) -> RecordedEvent:
    data = row.data
    return RecordedEvent(
        event_id=uuid.UUID(row.event_id),
        stream_id=row.stream_id,
        stream_version=row.stream_version,
        position=row.position,
        event_type=row.event_type,
        schema_version=row.schema_version,
        recorded_at_ms=row.recorded_at_ms,
        data=data.encode() if isinstance(data, str) else bytes(data),
    )


def _sqlite_engine(url: str, synchronous: str) -> Engine:
    if synchronous.upper() not in ("FULL", "NORMAL", "EXTRA"):
        raise ValueError(f"event.log.sqlite.synchronous must be FULL, NORMAL or EXTRA, not {synchronous!r}")
    engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False}, poolclass=sa.pool.QueuePool, pool_size=4, max_overflow=8)

    @sa_event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):  # noqa: ANN001
        # Let SQLAlchemy not manage transactions implicitly; we issue BEGIN ourselves.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        if ":memory:" not in url and url.rstrip("/") not in ("sqlite:", "sqlite://"):
            cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA synchronous={synchronous.upper()}")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @sa_event.listens_for(engine, "begin")
    def _on_begin(conn):  # noqa: ANN001
        # Appends take the write lock at BEGIN so allocation order and commit order cannot
        # diverge; reads and snapshot writes use a deferred BEGIN.
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.info.get("shoal_write") else "BEGIN")

    return engine


def open_event_log(
    url: str,
    *,
    synchronous: str = "FULL",
    clock: Callable[[], int] = _now_ms,
    lock_timeout_ms: int = 10_000,
    create: bool = True,
) -> EventLog:
    """Open (and by default create the tables of) the event log at SQLAlchemy ``url``:
    ``sqlite:///path/events.db`` or ``postgresql+psycopg://user@host:port/db``.

    ``synchronous`` applies to SQLite only (``FULL`` default, ``NORMAL`` documented option).
    ``lock_timeout_ms`` bounds how long a PostgreSQL append waits for the log's write lock.
    Raises ``ValueError`` for an unsupported dialect.
    """
    if url.startswith("sqlite"):
        engine = _sqlite_engine(url, synchronous)
        log = EventLog(engine, url=url, clock=clock, lock_timeout_ms=lock_timeout_ms)
    elif url.startswith("postgresql"):
        engine = sa.create_engine(url, pool_size=8, max_overflow=8, pool_pre_ping=True)
        log = EventLog(engine, url=url, clock=clock, lock_timeout_ms=lock_timeout_ms)
    else:
        raise ValueError(f"unsupported event log url {url!r}: use sqlite:/// or postgresql+psycopg://")
    if create:
        metadata.create_all(engine)
    return log
