"""SQLite WAL checkpoints off the append path (``wal_autocheckpoint=0`` +
:meth:`store.event_log.EventLog.checkpoint`, the daemon's ``event.log.sqlite.checkpoint.interval.ms``):
appends never checkpoint, so the WAL keeps every frame until a checkpoint copies them into the
database file; with SQLite's default a committing connection checkpoints at 1000 pages. Also the
WAL's restart under steady appends, its size limit, and the SQLite writer connection that every
append of a process reuses."""

from __future__ import annotations

import threading

from events import new_event
from store.event_log import ANY, open_event_log
from tests.events.sample import Noted

APPENDS = 1200  # each append writes at least one WAL frame: past SQLite's 1000-page threshold


def _fill(elog) -> None:
    for i in range(APPENDS):
        elog.append("s", [new_event(Noted(i))], ANY)


def test_appends_leave_checkpoints_to_checkpoint(tmp_path) -> None:
    elog = open_event_log(f"sqlite:///{tmp_path}/events.db", synchronous="NORMAL", wal_autocheckpoint=0)
    _fill(elog)
    busy, frames, done = elog.checkpoint()
    assert busy == 0 and frames >= APPENDS and done == frames  # nothing was checkpointed before
    assert [e.decode().n for e in elog.read_stream("s")] == list(range(APPENDS))
    # the next checkpoint finds the WAL empty again once a writer restarted it
    elog.append("s", [new_event(Noted(APPENDS))], ANY)
    assert elog.checkpoint()[1] < 10


def test_under_back_to_back_appends_the_append_after_a_checkpoint_starts_the_wal_over(tmp_path) -> None:
    # SQLite restarts the WAL only when a write transaction begins on a fully checkpointed WAL.
    # With one append always open while a checkpoint ends (a busy journal), a checkpoint that ran
    # beside the appends never let that happen and the WAL grew without bound.
    elog = open_event_log(f"sqlite:///{tmp_path}/events.db", synchronous="NORMAL", wal_autocheckpoint=0)
    stop, appended = threading.Event(), [0]

    def writer() -> None:
        while not stop.is_set():
            elog.append("s", [new_event(Noted(appended[0]))], ANY)
            appended[0] += 1

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        while appended[0] < 2000 and t.is_alive():
            stop.wait(0.01)
        assert appended[0] >= 2000
        elog.checkpoint()  # beside the writer's appends
    finally:
        stop.set()
        t.join(30)
    elog.append("s", [new_event(Noted(-1))], ANY)
    # the WAL holds only what was appended after the checkpoint, not the 2,000 appends before it
    assert elog.checkpoint()[1] < 100
    assert len(elog.read_stream("s")) == appended[0] + 1


def test_a_wal_grown_by_a_burst_is_cut_back_when_the_next_append_starts_it_over(tmp_path) -> None:
    limit = 64 * 1024
    elog = open_event_log(f"sqlite:///{tmp_path}/events.db", synchronous="NORMAL", wal_autocheckpoint=0, wal_size_limit_bytes=limit)
    wal = tmp_path / "events.db-wal"
    _fill(elog)
    assert wal.stat().st_size > 4 * limit
    elog.checkpoint()
    elog.append("s", [new_event(Noted(APPENDS))], ANY)  # starts the WAL over
    assert wal.stat().st_size <= limit
    assert len(elog.read_stream("s")) == APPENDS + 1


def test_by_default_a_committing_connection_checkpoints(tmp_path) -> None:
    elog = open_event_log(f"sqlite:///{tmp_path}/events.db", synchronous="NORMAL")
    _fill(elog)
    busy, frames, done = elog.checkpoint()
    assert frames < 1000 + 10  # the WAL restarted after SQLite's own checkpoint at 1000 pages



def test_an_append_whose_rollback_fails_leaves_no_transaction_open_for_the_next(tmp_path) -> None:
    """The SQLite writer connection outlives each append: when an append fails after its
    insert and its rollback fails too (an I/O error), the connection is dropped, so the next
    append neither hits "cannot start a transaction within a transaction" nor do readers see
    the failed append's rows."""
    import sqlite3

    elog = open_event_log(f"sqlite:///{tmp_path}/events.db", synchronous="NORMAL")
    elog.append("s", [new_event(Noted(0))], ANY)
    real = elog._writer  # noqa: SLF001 - the connection under test

    class FailingRollback:
        def __getattr__(self, name):
            return getattr(real, name)

        def rollback(self):
            raise sqlite3.OperationalError("disk I/O error (simulated)")

    elog._writer = FailingRollback()  # noqa: SLF001
    insert = elog._insert_sqlite  # noqa: SLF001

    def insert_then_fail(cur, rows):
        insert(cur, rows)
        raise RuntimeError("failure after the insert")

    elog._insert_sqlite = insert_then_fail  # noqa: SLF001
    try:
        elog.append("s", [new_event(Noted(1))], ANY)
    except (RuntimeError, sqlite3.OperationalError):
        pass
    else:
        raise AssertionError("the append should have failed")
    del elog._insert_sqlite  # noqa: SLF001 - the class's method again
    assert elog.stream_version("s") == 1  # the failed append's row is not visible
    elog.append("s", [new_event(Noted(2))], ANY)
    assert [e.decode().n for e in elog.read_stream("s")] == [0, 2]
