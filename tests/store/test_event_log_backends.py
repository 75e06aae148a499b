"""Backend specifics: SQLite's WAL/synchronous settings, PostgreSQL's lock timeout."""

from __future__ import annotations

import threading

import pytest

from events import new_event
from store.event_log import NO_STREAM, WriteLockTimeout, open_event_log
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
