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
* ``recorded_at_ms`` comes from the log's clock and never decreases along positions (an append
  whose clock reads earlier than the last event's time gets that time), so "the log as of time
  T" (``recorded_at_ms ≤ T``) is a prefix of it.
* Snapshots are an optimisation only: ``snapshot + events after it == all events``.

Write path: appends speak the driver's SQL on a DBAPI connection (SQLAlchemy remains the schema,
DDL and general access layer). SQLite: a pooled connection, ``BEGIN IMMEDIATE``, one read of the
last position and the stream's version, multi-row ``INSERT`` statements, ``COMMIT``. PostgreSQL: one
connection per process and log (the *writer*, opened through the engine, detached from its pool,
in autocommit mode); an append whose expected versions hold is one statement —
``shoal_append_v1``, a PL/pgSQL function created with the schema that locks, checks, assigns
positions and inserts — so it costs one round trip plus the commit's WAL flush; conflicts,
retries and logs without the function take the general path (an explicit transaction: lock,
read, check, ``COPY``).

Durability: SQLite runs in WAL mode with ``synchronous=FULL`` by default
(``event.log.sqlite.synchronous=NORMAL`` trades the last transactions on power loss — not on a
process crash — for speed). PostgreSQL commits are durable with the server's defaults.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import threading
import time
import uuid
import warnings
from collections.abc import Iterator, Sequence
from itertools import chain
from dataclasses import dataclass
from typing import Any, Callable, Final

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.engine import Engine

from events.base import EventEnvelope, NewEvent, RecordedEvent

_log = logging.getLogger("shoal.store.event_log")

__all__ = [
    "ANY",
    "NO_STREAM",
    "APPEND_CHANNEL",
    "AppendListener",
    "AppendRequest",
    "Lease",
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



class Lease:
    """An exclusive lease taken by :meth:`EventLog.acquire_lease` (``conn`` ``None``: SQLite's
    always-held one). :meth:`alive` checks the holding connection; :meth:`release` gives the
    lease up (idempotent)."""

    def __init__(self, conn: Any, key: int) -> None:
        self._conn = conn
        self._key = key

    def alive(self) -> bool:
        """True while the lease is held: its connection still answers (a lost connection has
        lost the lock with it)."""
        if self._conn is None:
            return self._key == 0
        try:
            self._conn.execute("SELECT 1").fetchone()
            return True
        except Exception:
            return False

    def release(self) -> None:
        """Give the lease up and close its connection."""
        conn, self._conn, self._key = self._conn, None, -1
        if conn is not None:
            try:
                conn.close()  # the session ends: PostgreSQL drops its advisory locks
            except Exception:
                pass

#: The PostgreSQL notification channel of :meth:`EventLog.announce` (payload: the stream id).
APPEND_CHANNEL: Final = "shoal_stream_appended"


class AppendListener:
    """A PostgreSQL ``LISTEN`` on :data:`APPEND_CHANNEL` over a connection of its own (taken out
    of the engine's pool), made by :meth:`EventLog.append_listener`: how a follower of a stream
    learns of an append at once instead of at its next poll (KRaft brokers long-poll the metadata
    log in the same way). Notifications are hints: a follower still reads the stream itself, and
    polls on a timeout, so a lost notification only delays it.

    :meth:`wait` blocks until a notification arrives or ``timeout_s`` passes; :meth:`close` ends
    the session. Not thread-safe: one thread waits."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def wait(self, timeout_s: float) -> set[str]:
        """The stream ids announced within ``timeout_s`` seconds (those already queued, or the first
        to arrive, plus any queued with it); an empty set on timeout. Raises the driver's
        ``OperationalError`` when the connection is lost (make a new listener)."""
        got = {n.payload for n in self._conn.notifies(timeout=max(0.0, timeout_s), stop_after=1)}
        if got:
            got.update(n.payload for n in self._conn.notifies(timeout=0))
        return got

    def close(self) -> None:
        """End the session (idempotent)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - a broken connection is closed best effort
                pass


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


#: the largest multi-row INSERT of a SQLite append (a power of two; 8 columns → 512 parameters)
_SQLITE_ROWS_PER_INSERT: Final = 64


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
        # The hot path speaks the driver's SQL directly on a DBAPI connection: compiling Core
        # constructs, and even SQLAlchemy's per-statement execution context, cost more than the
        # insert itself.
        mark = self._mark = "?" if engine.dialect.paramstyle == "qmark" else "%s"
        cols = ("position", "event_id", "stream_id", "stream_version", "event_type", "schema_version", "recorded_at_ms", "data")
        row = f"({', '.join([mark] * len(cols))})"
        # SQLite: multi-row inserts of 1, 2, 4 … _SQLITE_ROWS_PER_INSERT rows (see _insert_sqlite)
        self._sql_insert_rows = {
            1 << e: f"INSERT INTO events ({', '.join(cols)}) VALUES {', '.join([row] * (1 << e))}"
            for e in range(_SQLITE_ROWS_PER_INSERT.bit_length())
        }
        self._sql_copy = f"COPY events ({', '.join(cols)}) FROM STDIN"
        self._sql_max_position = "SELECT max(position) FROM events"
        self._sql_stream_version = f"SELECT max(stream_version) FROM events WHERE stream_id = {mark}"
        # the last event's position and time (recorded_at_ms never decreases along positions)
        self._sql_last_event = "SELECT position, recorded_at_ms FROM events ORDER BY position DESC LIMIT 1"
        # the common single-stream append reads those and the stream's version in one round trip
        self._sql_position_and_version = (
            "SELECT (SELECT max(position) FROM events), (SELECT recorded_at_ms FROM events ORDER BY position DESC LIMIT 1), "
            f"(SELECT max(stream_version) FROM events WHERE stream_id = {mark})"
        )
        self._write_mutex = threading.Lock()
        # an in-memory SQLite database: every connection of the pool is a database of its own
        self._in_memory = self.dialect == "sqlite" and _sqlite_in_memory(str(url or ""))
        # The writer: one DBAPI connection per process, taken out of the pool for good (see
        # ``_writer_connection``); ``_writer_pid`` is the process that opened it.
        self._writer: Any = None
        self._writer_pid = 0
        self._pg_function = False  # whether the writer found shoal_append_v1 in the database

    # ------------------------------------------------------------------ writing

    def append(self, stream_id: str, events: Sequence[NewEvent], expected_version: int = ANY) -> AppendResult:
        """Append ``events`` to ``stream_id`` atomically.

        Returns the :class:`AppendResult`. Raises ``ValueError`` for an empty list or a bad
        ``expected_version``; :class:`ConcurrencyError` on a version conflict or when some but
        not all event ids were stored before; :class:`WriteLockTimeout` when the write lock was
        not granted in time. A retry of a committed append (same event ids) returns the original
        result.
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
        Raises :class:`WriteLockTimeout` when the log's write lock was not granted in time
        (nothing written) and the driver's errors for storage failures.
        """
        if not requests:
            raise ValueError("append_many needs at least one request")
        for req in requests:
            if not req.events:
                exc = ValueError(f"empty append to stream {req.stream_id!r} is rejected")
                if atomic:
                    raise exc
        dbapi = self.engine.dialect.loaded_dbapi
        with self._write_mutex:
            try:
                try:
                    return self._append_once(requests, atomic, check_ids=False)
                except (sa.exc.IntegrityError, dbapi.IntegrityError):
                    # An event id is already stored (an ANY-append retried, or a retry racing its
                    # original in another process): again, checking every request's ids.
                    return self._append_once(requests, atomic, check_ids=True)
                except (sa.exc.OperationalError, dbapi.OperationalError):
                    if not self._writer_lost():
                        raise
                    # The server closed the writer's connection (a restart, an idle timeout):
                    # once more on a new one. Whether the lost append committed or not, the
                    # retry by event ids returns the original positions or appends now.
                    return self._append_once(requests, atomic, check_ids=True)
            except (sa.exc.OperationalError, dbapi.OperationalError) as exc:
                cause = getattr(exc, "orig", None) or exc  # SQLAlchemy wraps, the DBAPI does not
                text = str(cause).lower()
                if getattr(cause, "sqlstate", None) == "55P03" or ("lock" in text and ("timeout" in text or "locked" in text)):
                    raise WriteLockTimeout(f"the event log's write lock was not granted: {cause}") from exc
                raise

    def _own_connection(self) -> Any:
        """PostgreSQL: a DBAPI connection opened through the engine (its URL, connect args) and
        detached from the pool, in autocommit mode: a session of its own for the writer, a lease
        or a LISTEN, which the pool never checks, resets or hands to another caller. The caller
        closes it. Raises the driver's errors."""
        raw = self.engine.raw_connection()
        raw.detach()
        conn = raw.dbapi_connection
        conn.autocommit = True
        return conn

    def _writer_connection(self) -> Any:
        """The DBAPI connection appends run on (call with the write mutex held).

        Opened through the engine, then detached from its pool: appends skip the pool's
        checkout and its reset on return (a rollback; together 10-25% of a one-event SQLite
        append's CPU, and a lock every thread of the process contends for) and, on PostgreSQL,
        its pre-ping (a round trip). A SQLite writer is a connection of the pool's kind (its
        pragmas set on connect), used by one thread at a time under the write mutex; an
        in-memory database keeps using the pool (each new connection would be another
        database). PostgreSQL's runs in autocommit mode so that ``_append_pg_function`` is one
        statement and its own transaction (the general path opens a transaction explicitly), and
        its ``lock_timeout`` is the log's write-lock timeout. A writer inherited through ``fork``
        is left alone (kept referenced, never closed here) and a new one is opened.
        """
        pid = os.getpid()
        if self._writer is not None and self._writer_pid != pid:
            _INHERITED_WRITERS.append(self._writer)
            self._writer = None
        if self._writer is None and self.dialect != "postgresql":
            raw = self.engine.raw_connection()
            raw.detach()
            self._writer, self._writer_pid = raw.dbapi_connection, pid
        if self._writer is None:
            conn = self._own_connection()
            # the writer only appends and reads: its lock waits are the write lock's
            conn.execute(f"SET lock_timeout = '{int(self.lock_timeout_ms)}ms'")
            self._pg_function = bool(conn.execute("SELECT to_regprocedure(%s) IS NOT NULL", (_PG_APPEND_SIGNATURE,)).fetchone()[0])
            self._writer, self._writer_pid = conn, pid
        return self._writer

    def _writer_lost(self) -> bool:
        """Whether the PostgreSQL writer's connection is gone (closed or broken); if so it is
        dropped and the next use opens a new one."""
        conn = self._writer
        if self.dialect != "postgresql" or conn is None or not (conn.closed or getattr(conn, "broken", False)):
            return False
        self._drop_writer()
        return True

    def _append_once(self, requests: Sequence[AppendRequest], atomic: bool, check_ids: bool) -> list[AppendResult | Exception]:
        if self.dialect == "postgresql":
            conn = self._writer_connection()
            if self._pg_function and not check_ids:
                results = self._append_pg_function(conn, requests)
                if results is not None:
                    return results
            with conn.transaction():
                cur = conn.cursor()
                cur.execute("LOCK TABLE events IN EXCLUSIVE MODE")  # lock_timeout: see _writer_connection
                return self._validate_and_insert(cur, requests, atomic, check_ids)
        # SQLite: on the DBAPI level (SQLAlchemy's transaction and execution machinery costs
        # much more), on the writer's own connection for a database file.
        raw = self.engine.raw_connection() if self._in_memory else None
        try:
            conn = raw.dbapi_connection if raw is not None else self._writer_connection()
            cur = conn.cursor()
            # BEGIN IMMEDIATE takes SQLite's write lock at once, so allocation order and commit
            # order cannot diverge.
            cur.execute("BEGIN IMMEDIATE")
            try:
                results = self._validate_and_insert(cur, requests, atomic, check_ids)
                cur.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                raise
            finally:
                cur.close()
                if raw is None and conn.in_transaction:
                    # the rollback failed (an I/O error): this connection would keep the failed
                    # append's transaction open, refuse every later BEGIN and show readers the
                    # uncommitted rows; closing it rolls back, the next append opens a new one
                    self._drop_writer()
            return results
        finally:
            if raw is not None:
                raw.close()

    def _drop_writer(self) -> None:
        """Close and forget this process's writer connection (call with the write mutex held);
        the next append opens a new one. Closing a connection rolls back what it left open."""
        conn, self._writer = self._writer, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - already failing; closing is best effort
                pass

    def _append_pg_function(self, conn: Any, requests: Sequence[AppendRequest]) -> list[AppendResult | Exception] | None:
        """The PostgreSQL fast path: the whole append in one round trip and one transaction
        (autocommit), through ``shoal_append_v1`` (see ``_PG_APPEND_FUNCTION``), which takes the
        write lock, checks every request's expected version against the stream's (running)
        version and inserts all events at ``max(position) + 1 …`` — or inserts nothing.

        Returns the results, or ``None`` when the general path must decide: a request is invalid
        or its expected version does not match (the general path raises or reports the conflict,
        or recognises a retry of a committed append by its event ids). A duplicate event id
        raises the driver's ``IntegrityError`` (nothing written); a lock timeout its
        ``OperationalError``.
        """
        streams: list[str] = []
        expected: list[int] = []
        counts: list[int] = []
        for req in requests:
            exp = req.expected_version
            if not req.events or not isinstance(exp, int) or exp < ANY:
                return None
            streams.append(req.stream_id)
            expected.append(exp)
            counts.append(len(req.events))
        if len(requests) > 1:
            events = [ev for req in requests for ev in req.events]
            sql, head = _PG_APPEND_CALL, (streams, expected, counts)
        else:  # scalars where they suffice: psycopg inspects every list it adapts
            events = requests[0].events
            sql, head = _PG_APPEND_CALL_ONE_STREAM, (streams[0], expected[0], counts[0])
        if len(events) == 1:  # one request of one event
            ev = events[0]
            sql = _PG_APPEND_CALL_ONE_EVENT
            params = (*head, ev.event_id, ev.event_type, ev.schema_version, ev.data.decode(), self.clock())
        else:
            params = (
                *head,
                [ev.event_id for ev in events],
                [ev.event_type for ev in events],
                [ev.schema_version for ev in events],
                [ev.data.decode() for ev in events],
                self.clock(),
            )
        row = conn.execute(sql, params, prepare=True).fetchone()
        first, versions = row
        if first is None:
            return None
        results: list[AppendResult | Exception] = []
        for req, current, n in zip(requests, versions, counts):
            positions = tuple(range(first, first + n))
            results.append(AppendResult(req.stream_id, current + 1, current + n, first, first + n - 1, positions))
            first += n
        return results

    def _validate_and_insert(
        self, cur: Any, requests: Sequence[AppendRequest], atomic: bool, check_ids: bool
    ) -> list[AppendResult | Exception]:
        """The general append on ``cur``, inside the open transaction that holds the write lock:
        read the log's last position and time (and the stream's version for a single request),
        check each request, insert the rows of those that pass. Returns one result or exception
        per request (raises the first with ``atomic``)."""
        versions: dict[str, int] = {}
        if len(requests) == 1:
            cur.execute(self._sql_position_and_version, (requests[0].stream_id,))
            position, last_ms, version = cur.fetchone()
            versions[requests[0].stream_id] = version or 0
        else:
            cur.execute(self._sql_last_event)
            position, last_ms = cur.fetchone() or (0, None)
            self._read_versions(cur, requests, versions)
        position = position or 0
        results: list[AppendResult | Exception] = []
        rows: list[tuple[Any, ...]] = []
        now = self.clock()
        if last_ms is not None and last_ms > now:  # a clock behind the last event's time
            now = last_ms
        for req in requests:
            outcome = self._check_request(cur, req, versions, check_ids)
            if isinstance(outcome, Exception):
                if atomic:
                    raise outcome
                results.append(outcome)
                continue
            if isinstance(outcome, AppendResult):  # idempotent retry of a committed append
                results.append(outcome)
                continue
            current = outcome
            n = len(req.events)
            first = position + 1
            stream_id = req.stream_id
            base = current - position  # stream_version = position + base
            rows.extend(
                (p, str(ev.event_id), stream_id, p + base, ev.event_type, ev.schema_version, now, ev.data.decode())
                for p, ev in zip(range(first, first + n), req.events)
            )
            position += n
            versions[stream_id] = current + n
            results.append(AppendResult(stream_id, current + 1, current + n, first, position, tuple(range(first, position + 1))))
        if rows:
            if self.dialect == "postgresql":
                # COPY streams the rows in one statement: 1.4x executemany's pipelined INSERTs
                # for 100-event appends (bench/event_log.py)
                with cur.copy(self._sql_copy) as copy:
                    for row in rows:
                        copy.write_row(row)
            else:
                self._insert_sqlite(cur, rows)
        return results

    #: streams whose versions one statement reads (well below SQLite's bound on parameters)
    _VERSIONS_PER_QUERY = 256

    def _read_versions(self, cur: Any, requests: Sequence[AppendRequest], versions: dict[str, int]) -> None:
        """Fill ``versions`` with the current version of every stream ``requests`` name (0 for a
        stream without events), a few statements for the whole group commit instead of one per
        stream (the journal commits the appends of many share groups together)."""
        streams = list(dict.fromkeys(req.stream_id for req in requests))
        mark = self._mark
        for i in range(0, len(streams), self._VERSIONS_PER_QUERY):
            chunk = streams[i : i + self._VERSIONS_PER_QUERY]
            cur.execute(
                f"SELECT stream_id, max(stream_version) FROM events WHERE stream_id IN ({', '.join([mark] * len(chunk))}) GROUP BY stream_id",
                chunk,
            )
            found = dict(cur.fetchall())
            for sid in chunk:
                versions[sid] = found.get(sid) or 0

    def _insert_sqlite(self, cur: Any, rows: list[tuple[Any, ...]]) -> None:
        """Insert ``rows`` (tuples in column order) with multi-row ``INSERT … VALUES (…), (…)``
        statements of power-of-two sizes up to ``_SQLITE_ROWS_PER_INSERT`` (a 100-event append is
        64 + 32 + 4 rows): a few statements, compiled once and kept in the connection's
        statement cache, insert rows ~1.5x faster than ``executemany``'s one step per row."""
        i, n = 0, len(rows)
        while i < n:
            left = n - i
            k = _SQLITE_ROWS_PER_INSERT if left >= _SQLITE_ROWS_PER_INSERT else 1 << (left.bit_length() - 1)
            cur.execute(self._sql_insert_rows[k], list(chain.from_iterable(rows[i : i + k])))
            i += k

    def _check_request(
        self, cur: Any, req: AppendRequest, versions: dict[str, int], check_ids: bool
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
            stored = self._stored_ids(cur, req)
            if stored:
                if len(stored) == len(req.events):
                    return self._original_result(req, stored)
                return ConcurrencyError(
                    req.stream_id, expected, current, f"{len(stored)} of {len(req.events)} event ids already stored"
                )
        if expected != ANY and current != wanted:
            return ConcurrencyError(req.stream_id, expected, current)
        return current

    def _stored_ids(self, cur: Any, req: AppendRequest) -> list[tuple[str, str, int, int]]:
        """``(event_id, stream_id, stream_version, position)`` of those of ``req``'s event ids
        that are stored already."""
        ids = [str(e.event_id) for e in req.events]
        sql = "SELECT event_id, stream_id, stream_version, position FROM events WHERE event_id"
        if self.dialect == "postgresql":
            cur.execute(f"{sql} = ANY(%s)", (ids,))
            return [tuple(r) for r in cur.fetchall()]
        found: list[tuple[str, str, int, int]] = []
        for i in range(0, len(ids), 500):  # below SQLite's bound on host parameters
            chunk = ids[i : i + 500]
            cur.execute(f"{sql} IN ({', '.join('?' * len(chunk))})", chunk)
            found.extend(tuple(r) for r in cur.fetchall())
        return found

    def _original_result(self, req: AppendRequest, stored: list[tuple[str, str, int, int]]) -> AppendResult | Exception:
        by_id = {r[0]: r for r in stored}
        ordered = [by_id[str(e.event_id)] for e in req.events]
        versions = [r[2] for r in ordered]
        if any(r[1] != req.stream_id for r in ordered) or versions != list(range(versions[0], versions[0] + len(versions))):
            return ConcurrencyError(req.stream_id, req.expected_version, -1, "event ids already stored elsewhere")
        positions = tuple(r[3] for r in ordered)
        return AppendResult(req.stream_id, versions[0], versions[-1], positions[0], positions[-1], positions)

    # ------------------------------------------------------------------ reading

    def stream_version(self, stream_id: str) -> int:
        """The stream's current version (0 for a stream with no events)."""
        return self._fetch_driver(self._sql_stream_version, (stream_id,))[0][0] or 0

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
        """All rows of one read-only driver-SQL query.

        It runs on the writer's connection when no append holds it (each statement is its own
        transaction there: PostgreSQL's autocommit, SQLite's implicit read transaction), so a
        process that reads and appends — an actor recovering and then persisting, the journal —
        keeps one database connection (on SQLite one page cache), and on PostgreSQL a read
        costs one round trip (a pooled connection adds the pool's pre-ping, BEGIN and the
        reset's ROLLBACK). While another thread appends, and for an in-memory SQLite database, a
        pooled connection serves the read."""
        if not self._in_memory and self._write_mutex.acquire(blocking=False):
            try:
                dbapi = self.engine.dialect.loaded_dbapi
                for attempt in (1, 2):
                    cur = self._writer_connection().cursor()
                    try:
                        cur.execute(sql, tuple(params))
                        return cur.fetchall()
                    except dbapi.OperationalError:
                        if attempt == 2 or not self._writer_lost():
                            raise
                    finally:
                        cur.close()
            finally:
                self._write_mutex.release()
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
        return self._fetch_driver(self._sql_max_position, ())[0][0] or 0

    def stream_ids(self, prefix: str = "") -> list[str]:
        """The ids of the streams that have events (sorted, the column's collation), optionally
        only those starting with ``prefix``.

        A loose index scan of ``uq_events_stream_version`` (stream id, stream version): one index
        seek per stream (``min(stream_id) WHERE stream_id > previous``), so its cost follows the
        number of streams, not of events. A ``SELECT DISTINCT`` reads every event's index entry:
        35 ms for 500,000 events here, on a log that grows by ~2,000 events/s under a share
        consumer at 1,000 records/s, read by the daemon's status tick every 2 s. On SQLite the
        column compares bytewise (BINARY), so the ids with ``prefix`` are one run of the index,
        from ``prefix`` on; PostgreSQL's collation need not keep them together, so there every
        stream is visited and the prefix filtered. The prefix compares exactly (case included)."""
        if self.dialect == "sqlite":
            m, n = self._mark, len(prefix)
            sql = (
                "WITH RECURSIVE s(id) AS ("
                f" SELECT (SELECT min(stream_id) FROM events WHERE stream_id >= {m})"
                " UNION ALL"
                " SELECT (SELECT min(stream_id) FROM events WHERE stream_id > s.id) FROM s"
                f" WHERE s.id IS NOT NULL AND substr(s.id, 1, {m}) = {m})"
                f" SELECT id FROM s WHERE id IS NOT NULL AND substr(id, 1, {m}) = {m} ORDER BY id"
            )
            params: tuple[Any, ...] = (prefix, n, prefix, n, prefix)
        else:
            sql = (
                "WITH RECURSIVE s(id) AS ("
                " SELECT min(stream_id) FROM events"
                " UNION ALL"
                " SELECT (SELECT min(stream_id) FROM events WHERE stream_id > s.id) FROM s WHERE s.id IS NOT NULL)"
                " SELECT id FROM s WHERE id IS NOT NULL ORDER BY id"
            )
            params = ()
        # a pooled connection, not the writer's: on PostgreSQL the walk visits every stream, and
        # the appends of this process must not wait for it (a listing, not the request path)
        with self.engine.connect() as conn:
            rows = conn.exec_driver_sql(sql, params).fetchall()
        return [row[0] for row in rows if row[0].startswith(prefix)]

    def arrow_batches(self, from_position: int = 0, until_position: int | None = None, batch_rows: int = 65_536):
        """The log's rows after ``from_position`` (exclusive) up to ``until_position`` (inclusive)
        as a ``pyarrow.RecordBatchReader`` read through ADBC (no row-by-row Python).

        Columns: the envelope fields with ``data`` as a JSON string and ``event_id`` as a string.
        """
        from store.arrow_reader import read_events_arrow

        if until_position is None:
            # the last position through the log's own pool (an open connection), not a query on
            # a new ADBC connection (~35 ms to open on PostgreSQL)
            until_position = self.last_position()
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

    def acquire_lease(self, name: str) -> "Lease | None":
        """Take the exclusive lease ``name`` for this process, or ``None`` if another session
        holds it. On PostgreSQL a session-level advisory lock (``pg_try_advisory_lock``) on a
        connection of its own, detached from the pool: the database releases it when the holder
        releases it, closes the connection, or dies (the server sees the socket close), so the
        lease is as alive as its holder's link to the log. On SQLite (one node, one writer
        process group) the lease is always granted. The cluster's active controller holds
        ``"controller"`` (``actors/controller/actor.py``)."""
        if self.dialect != "postgresql":
            return Lease(None, 0)
        key = int.from_bytes(hashlib.blake2b(f"shoal:{name}".encode(), digest_size=8).digest(), "big", signed=True)
        conn = self._own_connection()
        try:
            # a holder whose host vanishes (not just its process) is noticed within ~10 s, not
            # after the kernel's two-hour keepalive default
            conn.execute("SET tcp_keepalives_idle = 5")
            conn.execute("SET tcp_keepalives_interval = 2")
            conn.execute("SET tcp_keepalives_count = 3")
            got = bool(conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0])
        except Exception:
            conn.close()
            raise
        if not got:
            conn.close()
            return None
        return Lease(conn, key)

    def announce(self, stream_id: str) -> bool:
        """Tell the :class:`AppendListener` sessions of other processes that ``stream_id`` has
        new committed events (PostgreSQL ``pg_notify`` on :data:`APPEND_CHANNEL`, sent by the
        writer's session after the append committed). Call it after an append whose followers
        must not wait for their next poll: the cluster's controller stream. Returns whether the
        notification was sent (always ``False`` on SQLite, whose one node has no followers);
        a failure is logged, not raised: followers still poll."""
        if self.dialect != "postgresql":
            return False
        try:
            with self._write_mutex:
                self._writer_connection().execute("SELECT pg_notify(%s, %s)", (APPEND_CHANNEL, stream_id))
            return True
        except Exception as exc:  # noqa: BLE001 - a hint; the next append or poll recovers
            _log.warning("announcing an append to %s failed: %s", stream_id, exc)
            if self._writer is not None and (self._writer.closed or getattr(self._writer, "broken", False)):
                with self._write_mutex:
                    self._writer_lost()
            return False

    def append_listener(self) -> AppendListener | None:
        """A new :class:`AppendListener` (PostgreSQL), or ``None`` on SQLite. Raises the
        driver's errors when the database cannot be reached."""
        if self.dialect != "postgresql":
            return None
        conn = self._own_connection()
        try:
            conn.execute(f"LISTEN {APPEND_CHANNEL}")
        except Exception:
            conn.close()
            raise
        return AppendListener(conn)

    def checkpoint(self) -> tuple[int, int, int] | None:
        """SQLite: checkpoint the WAL so that the next append starts it over, and return SQLite's
        ``(busy, WAL frames, frames checkpointed)`` of the last checkpoint run; ``None`` on
        PostgreSQL. For a log opened with ``wal_autocheckpoint=0``, whose appends never
        checkpoint themselves: a checkpoint that extends and syncs the database file took
        130-140 ms here, the whole time of the append that ran it. Raises the driver's errors.

        Two PASSIVE checkpoints (they copy committed frames into the database file without
        blocking writers or readers). The first, the long one, runs beside this process's
        appends. SQLite starts the WAL over only when a write transaction *begins* with every
        frame already checkpointed, so under a steady stream of appends, one of which is always
        open while the first checkpoint ends, the WAL would never be reset and would grow without
        bound (200 MB in 8 s of back-to-back appends here, while every checkpoint reported all
        its frames copied). The second checkpoint therefore runs under the append mutex
        whenever the WAL is not empty: it copies only the frames appended meanwhile and no
        append of this process is open while it runs, so this process's next append begins on
        a fully checkpointed WAL and resets it — unless a reader still uses older frames or
        another process (the actor system's journal) appends at that moment; then a later
        checkpoint does. It holds the appends of this process for its own time (about 1 ms
        here, including the database file's sync)."""
        if self.dialect != "sqlite":
            return None
        row = self._checkpoint_passive()
        if row is not None and row[1] > 0:
            with self._write_mutex:
                row = self._checkpoint_passive()
        return row

    def _checkpoint_passive(self) -> tuple[int, int, int] | None:
        """One ``PRAGMA wal_checkpoint(PASSIVE)``: ``(busy, WAL frames, frames checkpointed)``."""
        with self.engine.connect() as conn:
            row = conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return (int(row[0]), int(row[1]), int(row[2])) if row is not None else None

    def close(self) -> None:
        """Release the engine's connections and the writer's."""
        with self._write_mutex:
            writer, self._writer = self._writer, None
            if writer is not None and self._writer_pid == os.getpid():
                writer.close()
            elif writer is not None:  # inherited through fork: the parent's, never closed here
                _INHERITED_WRITERS.append(writer)
        self.engine.dispose()

    def after_fork(self) -> None:
        """Make an EventLog inherited through ``fork`` usable in the child: its pool is replaced
        without closing the parent's connections (SQLAlchemy's ``dispose(close=False)``; SQLite
        forbids using a connection across ``fork``), the parent's writer connection is left
        open and unused, and the write mutex is new. The engine and its dialect are kept, which
        costs the child far less memory than a new engine."""
        self.engine.dispose(close=False)
        self._write_mutex = threading.Lock()
        if self._writer is not None and self._writer_pid != os.getpid():
            _INHERITED_WRITERS.append(self._writer)
            self._writer = None


#: Writer connections inherited through ``fork``: kept referenced so that the child never closes
#: them (closing would end the parent's PostgreSQL session on the shared socket; SQLite forbids
#: using or closing a connection across ``fork``).
_INHERITED_WRITERS: list[Any] = []

#: The PostgreSQL append in one statement (see ``EventLog._append_pg_function``). Arguments: per
#: request (in order) the stream id, the expected version (ANY = -2, NO_STREAM = -1, else exact)
#: and its event count; per event (in order) the id, type, schema version and data; and
#: ``recorded_at_ms`` (the caller's clock, read before the lock: the later of it and the last
#: event's time is stored, as on the general path). Returns the first position assigned and each request's stream version
#: before it, or a NULL position, having written nothing, when an expected version does not
#: match. Takes the table's EXCLUSIVE lock (readers go on, writers queue; the caller's
#: ``lock_timeout`` applies) in the caller's transaction — autocommit makes it one.
_PG_APPEND_FUNCTION = r"""
CREATE FUNCTION shoal_append_v1(
    p_streams text[], p_expected bigint[], p_counts int[],
    p_ids uuid[], p_types text[], p_schemas int[], p_data text[], p_recorded_at_ms bigint,
    OUT o_first_position bigint, OUT o_versions bigint[])
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    n int := cardinality(p_streams);
    i int;
    j int;
    v bigint;
    last_position bigint;
    last_recorded bigint;
    recorded bigint;
    req int[];
    ord int[];
BEGIN
    LOCK TABLE events IN EXCLUSIVE MODE;
    -- read after the lock: each statement of a VOLATILE function takes a new snapshot
    SELECT position, recorded_at_ms INTO last_position, last_recorded FROM events ORDER BY position DESC LIMIT 1;
    last_position := coalesce(last_position, 0);
    recorded := greatest(p_recorded_at_ms, last_recorded);  -- never before the last event
    o_versions := array_fill(0::bigint, ARRAY[n]);
    FOR i IN 1 .. n LOOP
        v := NULL;
        FOR j IN REVERSE i - 1 .. 1 LOOP  -- an earlier request of this call on the same stream
            IF p_streams[j] = p_streams[i] THEN
                v := o_versions[j] + p_counts[j];
                EXIT;
            END IF;
        END LOOP;
        IF v IS NULL THEN
            SELECT coalesce(max(stream_version), 0) INTO v FROM events WHERE stream_id = p_streams[i];
        END IF;
        IF p_expected[i] <> -2 AND v <> greatest(p_expected[i], 0) THEN
            RETURN;  -- o_first_position stays NULL: nothing written
        END IF;
        o_versions[i] := v;
    END LOOP;
    IF n = 1 THEN
        INSERT INTO events (position, event_id, stream_id, stream_version, event_type, schema_version, recorded_at_ms, data)
        SELECT last_position + u.k, u.id::text, p_streams[1], o_versions[1] + u.k, u.t, u.s, recorded, u.d
        FROM unnest(p_ids, p_types, p_schemas, p_data) WITH ORDINALITY AS u(id, t, s, d, k);
    ELSE
        -- event k belongs to request req[k] and is its ord[k]-th event
        SELECT array_agg(r ORDER BY r, o), array_agg(o ORDER BY r, o) INTO req, ord
        FROM generate_subscripts(p_counts, 1) AS r, generate_series(1, p_counts[r]) AS o;
        INSERT INTO events (position, event_id, stream_id, stream_version, event_type, schema_version, recorded_at_ms, data)
        SELECT last_position + u.k, u.id::text, p_streams[req[u.k]], o_versions[req[u.k]] + ord[u.k], u.t, u.s, recorded, u.d
        FROM unnest(p_ids, p_types, p_schemas, p_data) WITH ORDINALITY AS u(id, t, s, d, k);
    END IF;
    o_first_position := last_position + 1;
END
$fn$
"""
_PG_APPEND_SIGNATURE = "shoal_append_v1(text[], bigint[], integer[], uuid[], text[], integer[], text[], bigint)"
# Binary parameters (%b): psycopg's text-format array dumper escapes every element in Python,
# which cost more than the append itself for 100 events. One stream (and one event) pass
# scalars that the server wraps in arrays: adapting a Python list costs a few µs each.
_PG_APPEND_CALL = (
    "SELECT o_first_position, o_versions FROM shoal_append_v1(%b::text[], %b::bigint[], %b::int[], "
    "%b::uuid[], %b::text[], %b::int[], %b::text[], %b::bigint)"
)
_PG_APPEND_CALL_ONE_STREAM = (
    "SELECT o_first_position, o_versions FROM shoal_append_v1(ARRAY[%b::text], ARRAY[%b::bigint], ARRAY[%b::int], "
    "%b::uuid[], %b::text[], %b::int[], %b::text[], %b::bigint)"
)
_PG_APPEND_CALL_ONE_EVENT = (
    "SELECT o_first_position, o_versions FROM shoal_append_v1(ARRAY[%b::text], ARRAY[%b::bigint], ARRAY[%b::int], "
    "ARRAY[%b::uuid], ARRAY[%b::text], ARRAY[%b::int], ARRAY[%b::text], %b::bigint)"
)


def _ensure_pg_append_function(engine: Engine) -> None:
    """Create ``shoal_append_v1`` unless the database has it (logs created before it existed
    get it on their next open with ``create=True``). Concurrent openers serialise on an advisory
    lock; the function's name carries its version, so a changed function gets a new name. A role
    without the privilege to create it gets a warning, and its appends take the general path."""
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7383101)")  # any fixed key
            exists = conn.exec_driver_sql("SELECT to_regprocedure(%(sig)s) IS NOT NULL", {"sig": _PG_APPEND_SIGNATURE}).scalar()
            if not exists:
                conn.exec_driver_sql(_PG_APPEND_FUNCTION)
    except sa.exc.ProgrammingError as exc:
        if getattr(exc.orig, "sqlstate", None) != "42501":  # insufficient_privilege
            raise
        warnings.warn(f"event log: shoal_append_v1 not created ({exc.orig}); appends take the slower general path", stacklevel=3)


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


#: SQLite's ``journal_size_limit`` for the event log (bytes): when an append starts the WAL over,
#: a file larger than this is truncated to it, so a burst does not leave a WAL of its size on
#: disk for good. Above the WAL of one checkpoint interval at steady load (8-10 MB at 1,000
#: share records/s), so the steady state reuses the file's blocks instead of regrowing it.
WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024


def _sqlite_in_memory(url: str) -> bool:
    """Whether SQLite ``url`` names an in-memory database (each connection its own database)."""
    return ":memory:" in url or "mode=memory" in url or url.rstrip("/") in ("sqlite:", "sqlite://")


def _sqlite_engine(url: str, synchronous: str, wal_autocheckpoint: int | None = None,
                   wal_size_limit_bytes: int = WAL_SIZE_LIMIT_BYTES) -> Engine:
    if synchronous.upper() not in ("FULL", "NORMAL", "EXTRA"):
        raise ValueError(f"event.log.sqlite.synchronous must be FULL, NORMAL or EXTRA, not {synchronous!r}")
    engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False}, poolclass=sa.pool.QueuePool, pool_size=4, max_overflow=8)

    @sa_event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):  # noqa: ANN001
        # Let SQLAlchemy not manage transactions implicitly; we issue BEGIN ourselves (appends:
        # BEGIN IMMEDIATE on the DBAPI connection, see EventLog._append_once).
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        if not _sqlite_in_memory(url):
            cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA synchronous={synchronous.upper()}")
        cur.execute("PRAGMA busy_timeout=30000")
        if wal_autocheckpoint is not None:
            cur.execute(f"PRAGMA wal_autocheckpoint={int(wal_autocheckpoint)}")
        cur.execute(f"PRAGMA journal_size_limit={int(wal_size_limit_bytes)}")
        cur.close()

    @sa_event.listens_for(engine, "begin")
    def _on_begin(conn):  # noqa: ANN001
        # reads and snapshot writes use a deferred BEGIN (appends bypass this, see above)
        conn.exec_driver_sql("BEGIN")

    return engine


def open_event_log(
    url: str,
    *,
    synchronous: str = "FULL",
    clock: Callable[[], int] = _now_ms,
    lock_timeout_ms: int = 10_000,
    create: bool = True,
    wal_autocheckpoint: int | None = None,
    wal_size_limit_bytes: int = WAL_SIZE_LIMIT_BYTES,
) -> EventLog:
    """Open (and by default create the tables of) the event log at SQLAlchemy ``url``:
    ``sqlite:///path/events.db`` or ``postgresql+psycopg://user@host:port/db``.

    ``synchronous`` applies to SQLite only (``FULL`` default, ``NORMAL`` documented option).
    ``lock_timeout_ms`` bounds how long a PostgreSQL append waits for the log's write lock.
    ``wal_autocheckpoint`` (SQLite): the WAL size in pages at which a committing connection
    checkpoints (SQLite's default 1000 when ``None``); ``0`` leaves checkpoints to
    :meth:`EventLog.checkpoint` (the daemon's background tick), so no append pays for one.
    ``wal_size_limit_bytes`` (SQLite): the size the WAL file is cut back to when an append
    starts it over (``journal_size_limit``, :data:`WAL_SIZE_LIMIT_BYTES` by default).
    Raises ``ValueError`` for an unsupported dialect.
    """
    if url.startswith("sqlite"):
        engine = _sqlite_engine(url, synchronous, wal_autocheckpoint, wal_size_limit_bytes)
        log = EventLog(engine, url=url, clock=clock, lock_timeout_ms=lock_timeout_ms)
    elif url.startswith("postgresql"):
        engine = sa.create_engine(url, pool_size=8, max_overflow=8, pool_pre_ping=True)
        log = EventLog(engine, url=url, clock=clock, lock_timeout_ms=lock_timeout_ms)
    else:
        raise ValueError(f"unsupported event log url {url!r}: use sqlite:/// or postgresql+psycopg://")
    if create:
        metadata.create_all(engine)
        if log.dialect == "postgresql":
            _ensure_pg_append_function(engine)
    return log
