"""Backend specifics: SQLite's WAL/synchronous settings, PostgreSQL's lock timeout and its
single-statement append (``shoal_append_v1``)."""

from __future__ import annotations

import threading

import psycopg
import pytest

from events import new_event
from store.event_log import ANY, NO_STREAM, AppendRequest, ConcurrencyError, WriteLockTimeout, open_event_log
from tests.events.sample import Noted


def test_sqlite_file_log_uses_wal_and_full_sync(sqlite_url: str) -> None:
    log = open_event_log(sqlite_url)
    with log.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar().lower() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
    log.close()


def test_sqlite_synchronous_normal_is_an_option(sqlite_url: str) -> None:
    log = open_event_log(sqlite_url, synchronous="NORMAL")
    with log.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1
    log.close()
    with pytest.raises(ValueError):
        open_event_log(sqlite_url, synchronous="OFF")


def test_unsupported_url_is_rejected() -> None:
    with pytest.raises(ValueError):
        open_event_log("mysql://nope")


def test_postgres_append_times_out_on_the_write_lock(pg_url: str) -> None:
    """eventsourcing's test_insert_lock_timeout_actually_works: a writer holding the table lock
    makes another append fail after lock_timeout, writing nothing."""
    holder = open_event_log(pg_url)
    waiter = open_event_log(pg_url, lock_timeout_ms=200)
    locked = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with holder.engine.connect() as conn:
            with conn.begin():
                conn.exec_driver_sql("LOCK TABLE events IN EXCLUSIVE MODE")
                locked.set()
                release.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    assert locked.wait(10)
    try:
        with pytest.raises(WriteLockTimeout):
            waiter.append("a", [new_event(Noted(1))], NO_STREAM)
    finally:
        release.set()
        t.join()
    assert waiter.append("a", [new_event(Noted(1))], NO_STREAM).positions == (1,)
    holder.close()
    waiter.close()


def test_parallel_arrow_slices_wait_for_a_reader_rebuilding_the_wal_index(tmp_path, monkeypatch) -> None:
    """Sliced reads open several ADBC connections at once on a log nobody has open; the first one
    rebuilds SQLite's WAL index while holding a lock. Without a busy timeout the others failed
    with "database is locked" (seen in CI, ~3% of reads); now every read succeeds."""
    import store.arrow_reader as ar

    monkeypatch.setattr(ar, "PARALLEL_MIN_POSITIONS", 1)
    for i in range(40):
        url = f"sqlite:///{tmp_path}/log{i}.db"
        log = open_event_log(url)
        log.append("a", [new_event(Noted(k)) for k in range(5)])
        log.close()
        assert ar.read_events_table(url, slices=4).column("position").to_pylist() == [1, 2, 3, 4, 5]


# ------------------------------------------------- PostgreSQL's single-statement append


def test_postgres_appends_in_one_statement_and_falls_back_on_conflict(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Appends that pass their version checks go through ``shoal_append_v1`` alone (one round
    trip); a conflict goes to the general path, which decides it (here: refused)."""
    import store.event_log as el

    log = open_event_log(pg_url)

    def general_path(*_args, **_kwargs):
        raise AssertionError("general path used")

    monkeypatch.setattr(el.EventLog, "_validate_and_insert", general_path)
    assert log.append("a", [new_event(Noted(1))], NO_STREAM).positions == (1,)
    results = log.append_batch([AppendRequest("a", [new_event(Noted(2))], 1), AppendRequest("b", [new_event(Noted(3))], ANY)])
    assert [(r.first_version, r.positions) for r in results] == [(2, (2,)), (1, (3,))]
    with pytest.raises(AssertionError, match="general path"):
        log.append("a", [new_event(Noted(4))], 1)
    monkeypatch.undo()
    with pytest.raises(ConcurrencyError):
        log.append("a", [new_event(Noted(4))], 1)
    assert log.last_position() == 3
    log.close()


def test_postgres_log_without_the_append_function_still_appends(pg_url: str) -> None:
    """A database created before ``shoal_append_v1`` existed, opened with ``create=False``,
    appends through the general path; opening it with ``create=True`` adds the function."""
    open_event_log(pg_url).close()
    with psycopg.connect(_dsn(pg_url), autocommit=True) as c:
        c.execute("DROP FUNCTION shoal_append_v1")
    old = open_event_log(pg_url, create=False)
    assert old.append("a", [new_event(Noted(1)), new_event(Noted(2))], NO_STREAM).positions == (1, 2)
    assert old.append("a", [new_event(Noted(3))], 2).positions == (3,) and old._pg_function is False
    with pytest.raises(ConcurrencyError):
        old.append("a", [new_event(Noted(4))], 2)
    old.close()
    new = open_event_log(pg_url)
    assert new.append("a", [new_event(Noted(4))], 3).positions == (4,) and new._pg_function is True
    new.close()


def test_postgres_append_survives_a_lost_writer_connection(pg_url: str) -> None:
    """The server drops the writer's connection between appends (a restart, an idle timeout):
    the next append succeeds on a new connection, exactly once."""
    log = open_event_log(pg_url)
    log.append("a", [new_event(Noted(1))], NO_STREAM)
    backend = log._writer.info.backend_pid
    with psycopg.connect(_dsn(pg_url), autocommit=True) as c:
        c.execute("SELECT pg_terminate_backend(%s)", (backend,))
    assert log.append("a", [new_event(Noted(2))], 1).positions == (2,)
    assert log._writer.info.backend_pid != backend
    assert [r.stream_version for r in log.read_stream("a")] == [1, 2]
    log.close()


def test_postgres_batch_append_times_out_on_the_write_lock(pg_url: str) -> None:
    """The lock timeout holds on the single-statement path with several requests too."""
    log = open_event_log(pg_url, lock_timeout_ms=200)
    with psycopg.connect(_dsn(pg_url)) as holder:
        holder.execute("LOCK TABLE events IN EXCLUSIVE MODE")
        with pytest.raises(WriteLockTimeout):
            log.append_batch([AppendRequest("a", [new_event(Noted(1))], NO_STREAM), AppendRequest("b", [new_event(Noted(2))], ANY)])
        holder.rollback()
    assert log.last_position() == 0
    assert log.append("a", [new_event(Noted(1))], NO_STREAM).positions == (1,)
    log.close()


def test_postgres_role_that_cannot_create_the_function_still_appends(pg_url: str) -> None:
    """An application role with table privileges only (no CREATE on the schema, PostgreSQL 15's
    default for ``public``) opens an existing log that lacks the function: a warning, and
    appends take the general path with the same results."""
    import uuid

    open_event_log(pg_url).close()
    role = f"shoal_t_app_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(_dsn(pg_url), autocommit=True) as c:
        c.execute("DROP FUNCTION shoal_append_v1")
        c.execute(f'CREATE ROLE "{role}" LOGIN')
        c.execute(f'REVOKE CREATE ON SCHEMA public FROM PUBLIC, "{role}"')
        c.execute(f'GRANT SELECT, INSERT, UPDATE ON events, snapshots TO "{role}"')
    try:
        url = pg_url.replace("postgres@", f"{role}@")
        with pytest.warns(UserWarning, match="shoal_append_v1 not created"):
            log = open_event_log(url)
        assert log.append("a", [new_event(Noted(1))], NO_STREAM).positions == (1,)
        assert log.append("a", [new_event(Noted(2))], 1).positions == (2,) and log._pg_function is False
        log.close()
    finally:
        with psycopg.connect(_dsn(pg_url), autocommit=True) as c:
            c.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,))
            c.execute(f'DROP OWNED BY "{role}"')
            c.execute(f'DROP ROLE "{role}"')


def _dsn(url: str) -> str:
    """A libpq connection string for a SQLAlchemy ``postgresql+psycopg://`` URL."""
    import sqlalchemy as sa

    return sa.engine.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def test_an_announced_append_reaches_the_listeners_of_other_processes(pg_url: str) -> None:
    """EventLog.announce → AppendListener.wait (PostgreSQL LISTEN/NOTIFY): how the cluster's
    nodes fold a controller append at once instead of at their next poll."""
    writer, follower = open_event_log(pg_url), open_event_log(pg_url)
    listener = follower.append_listener()
    assert listener is not None
    try:
        assert listener.wait(0.05) == set()  # nothing announced: a timeout
        writer.append("controller", [new_event(Noted(n=1))], expected_version=NO_STREAM)
        assert writer.announce("controller") is True
        assert listener.wait(10) == {"controller"}
        writer.announce("x")
        writer.announce("y")
        got: set[str] = set()
        while got != {"x", "y"}:
            more = listener.wait(10)
            assert more, f"only {got} arrived"
            got |= more
        assert listener.wait(0.05) == set()  # each announcement arrives once
    finally:
        listener.close()
        listener.close()  # idempotent
        writer.close()
        follower.close()


def test_sqlite_has_nothing_to_announce(sqlite_url: str) -> None:
    log = open_event_log(sqlite_url)
    try:
        assert log.append_listener() is None
        assert log.announce("controller") is False
    finally:
        log.close()
