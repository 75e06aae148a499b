"""The pooled ADBC PostgreSQL connections of the Arrow reader (store.arrow_reader.with_connection):
reused across reads, holding no lock while idle, replaced when the server ends their session,
never shared with a forked child; SQLite connections are not pooled."""

from __future__ import annotations

import multiprocessing as mp

import psycopg

from store import arrow_reader
from store.event_log import ANY
from tests.store.test_event_log_contract import evs


def _fill(log, n: int = 10) -> None:
    log.append("s", evs(*range(n)), ANY)


def _dsn(pg_url: str) -> str:
    return "host=127.0.0.1 port=5432 user=postgres dbname=" + pg_url.rsplit("/", 1)[1]


def test_pg_connections_are_reused_and_hold_no_lock_when_idle(pg_log, pg_url):
    _fill(pg_log)
    arrow_reader.close_idle_connections()
    assert pg_log.arrow_batches().read_all().num_rows == 10
    idle = list(arrow_reader._idle[pg_url])
    assert len(idle) == 1
    assert pg_log.arrow_batches().read_all().num_rows == 10
    assert arrow_reader._idle[pg_url] == idle  # the same connection, back in the pool
    with psycopg.connect(_dsn(pg_url), autocommit=True) as c:
        # an idle pooled connection is not inside a transaction: nothing blocks an exclusive lock
        states = c.execute("SELECT state FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name NOT LIKE 'psql%'").fetchall()
        assert ("idle in transaction",) not in states
        c.execute("SET lock_timeout = '2s'")
        with c.transaction():
            c.execute("LOCK TABLE events IN ACCESS EXCLUSIVE MODE")


def test_a_pooled_connection_whose_session_ended_is_replaced(pg_log, pg_url):
    _fill(pg_log)
    arrow_reader.close_idle_connections()
    assert pg_log.arrow_batches().read_all().num_rows == 10
    with psycopg.connect(_dsn(pg_url), autocommit=True) as c:
        killed = c.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND query NOT ILIKE '%shoal_append%'"
            " AND application_name = ''"
        ).fetchone()[0]
    assert killed >= 1
    pg_log.close()  # its own writer may have been among the sessions ended
    assert arrow_reader.read_events_table(pg_url).num_rows == 10


def _child_reads(url: str, q) -> None:
    try:
        q.put(arrow_reader.read_events_table(url).num_rows)
    except BaseException as exc:  # reported to the parent
        q.put(repr(exc))


def test_a_forked_child_does_not_use_the_parents_pooled_connections(pg_log, pg_url):
    _fill(pg_log)
    arrow_reader.close_idle_connections()
    assert pg_log.arrow_batches().read_all().num_rows == 10
    parent_conn = arrow_reader._idle[pg_url][0]
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_reads, args=(pg_url, q))
    p.start()
    got = q.get(timeout=60)
    p.join(30)
    assert got == 10, got
    # the parent's connection still works: the child neither used nor closed it
    assert arrow_reader._idle[pg_url][0] is parent_conn
    assert pg_log.arrow_batches().read_all().num_rows == 10


def test_sqlite_connections_are_not_pooled(sqlite_log, sqlite_url):
    _fill(sqlite_log)
    assert sqlite_log.arrow_batches().read_all().num_rows == 10
    assert sqlite_url not in arrow_reader._idle
