"""Shared fixtures: event logs on both backends, Thespian systems, and the CI skip policy.

* ``sqlite_url`` / ``sqlite_log``: a file-backed SQLite event log in ``tmp_path`` (WAL, FULL).
* ``pg_url`` / ``pg_log``: a fresh schema-isolated PostgreSQL database on 127.0.0.1:5432
  (trust auth, database ``test``). When PostgreSQL is unreachable the test is skipped with the
  reason printed, except under ``CI=true``, where it fails.
* ``event_log``: parametrized over both backends.
* ``asys``: a ``simpleSystemBase`` actor system (``logDefs=False``), shut down after the test.
* ``mp_asys``: a ``multiprocTCPBase`` system on a free admin port (``QUIET_LOG_DEFS``; note
  that ``logDefs=False`` breaks multiproc child start-up), shut down after the test.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

os.environ.setdefault("THESPIAN_BASE_IPADDR", "127.0.0.1")

PG_ADMIN_URL = os.environ.get("SHOAL_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() == "true"


def require(condition: bool, reason: str) -> None:
    """Skip the calling test with ``reason`` unless under CI, where a missing service fails."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture()
def linux_proc() -> None:
    """Tests that read ``/proc`` (process start times, sessions, command lines): skipped with a
    reason without it, failed under CI."""
    require(Path("/proc/self/stat").exists(), "needs Linux /proc (process start times and sessions)")


@pytest.fixture()
def libc() -> None:
    """Tests that call glibc through ctypes: skipped with a reason without it, failed under CI."""
    import ctypes.util

    require(ctypes.util.find_library("c") is not None, "no libc to load through ctypes")


def _pg_available() -> str | None:
    try:
        import psycopg

        with psycopg.connect("host=127.0.0.1 port=5432 dbname=test user=postgres", connect_timeout=3):
            return None
    except Exception as exc:  # pragma: no cover - depends on the machine
        return f"PostgreSQL on 127.0.0.1:5432 unreachable: {exc}"


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The admin URL of the test PostgreSQL server (skips outside CI when unreachable)."""
    problem = _pg_available()
    require(problem is None, problem or "")
    return PG_ADMIN_URL


@pytest.fixture
def pg_url(pg_server: str):
    """A fresh PostgreSQL database for one test; dropped afterwards."""
    import psycopg

    name = f"shoal_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect("host=127.0.0.1 port=5432 dbname=test user=postgres", autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    with psycopg.connect("host=127.0.0.1 port=5432 dbname=test user=postgres", autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'events.db'}"


@pytest.fixture
def sqlite_log(sqlite_url):
    from store.event_log import open_event_log

    log = open_event_log(sqlite_url)
    yield log
    log.close()


@pytest.fixture
def pg_log(pg_url):
    from store.event_log import open_event_log

    log = open_event_log(pg_url)
    yield log
    log.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def event_log_url(request) -> str:
    """The URL of a fresh event log on each backend in turn."""
    if request.param == "sqlite":
        return request.getfixturevalue("sqlite_url")
    return request.getfixturevalue("pg_url")


@pytest.fixture
def event_log(event_log_url):
    """A fresh :class:`store.event_log.EventLog` on each backend in turn."""
    from store.event_log import open_event_log

    log = open_event_log(event_log_url)
    yield log
    log.close()


#: Thespian logging config for multiproc bases (``logDefs=False`` breaks their child start-up).
QUIET_LOG_DEFS = {
    "version": 1,
    "handlers": {"null": {"class": "logging.NullHandler"}},
    "root": {"handlers": ["null"], "level": "WARNING"},
}


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (for Thespian admin ports and listeners)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def mp_asys():
    """A ``multiprocTCPBase`` actor system on a free admin port, shut down after the test."""
    from thespian.actors import ActorSystem

    system = ActorSystem("multiprocTCPBase", {"Admin Port": free_port()}, logDefs=QUIET_LOG_DEFS, transientUnique=True)
    yield system
    system.shutdown()


@pytest.fixture
def asys():
    """A synchronous ``simpleSystemBase`` actor system for unit-testing one actor."""
    from thespian.actors import ActorSystem

    system = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    yield system
    system.shutdown()
