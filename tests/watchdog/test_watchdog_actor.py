"""The OwnerWatchdogActor: answers with its session under ``simpleSystemBase``, and — the crash
test — stops a real ``multiprocTCPBase`` actor system (admin, logger, actors) after its owner
process is SIGKILLed, without any cleanup code running in the owner."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from actors.watchdog.actor import OwnerWatchdogActor, WatchingOwner, WatchOwner
from actors.watchdog.liveness import observe_process, session_members
from tests.e2e.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
needs_proc = pytest.mark.usefixtures("linux_proc")


def test_watch_a_live_owner_answers_with_the_session(asys) -> None:
    me = observe_process(os.getpid())
    w = asys.createActor(OwnerWatchdogActor)
    reply = asys.ask(w, WatchOwner(os.getpid(), me.start_time if me else None, 0), 5)
    # simpleSystemBase runs the actor in this process
    assert reply == WatchingOwner(os.getpid(), os.getsid(0), True)


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _start_owner(interval_ms: int) -> tuple[subprocess.Popen, int, dict]:
    admin_port = free_port()
    env = dict(os.environ, THESPIAN_BASE_IPADDR="127.0.0.1", PYTHONPATH=str(ROOT))
    p = subprocess.Popen(
        [sys.executable, "-m", "tests.watchdog.owner_process", str(admin_port), str(interval_ms)],
        cwd=str(ROOT), stdout=subprocess.PIPE, env=env, text=True,
    )
    line = p.stdout.readline() if p.stdout else ""
    if not line:
        p.kill()
        p.wait(10)
        raise AssertionError(f"owner process did not start (exit {p.poll()})")
    return p, admin_port, json.loads(line)


def _wait_until(pred, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not pred():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


@needs_proc
def test_sigkill_of_the_owner_stops_every_process_of_the_actor_system() -> None:
    p, admin_port, info = _start_owner(interval_ms=200)
    session = info["session"]
    try:
        assert info["alive"] is True
        members = session_members(session)
        # the admin, its logger and the watchdog at least; none of them is the owner
        assert len(members) >= 3 and info["pid"] in members and p.pid not in members
        assert _port_open(admin_port)
        os.kill(p.pid, signal.SIGKILL)  # not reaped until the end: the owner stays a zombie meanwhile
        assert _wait_until(lambda: not session_members(session), 20), f"left: {session_members(session)}"
        assert not _port_open(admin_port)
    finally:
        for pid in session_members(session):
            os.kill(pid, signal.SIGKILL)
        p.kill()
        p.wait(10)


@needs_proc
def test_a_live_owner_keeps_its_actor_system() -> None:
    """Several intervals pass with the owner alive: nothing is shut down; SIGTERM of the owner (no
    handler: it dies without cleanup, like SIGKILL) then ends the system too."""
    p, admin_port, info = _start_owner(interval_ms=100)
    session = info["session"]
    try:
        members = session_members(session)
        time.sleep(1.0)  # ten watchdog intervals
        assert session_members(session) == members and _port_open(admin_port)
        p.terminate()
        p.wait(10)
        assert _wait_until(lambda: not session_members(session), 20), f"left: {session_members(session)}"
    finally:
        for pid in session_members(session):
            os.kill(pid, signal.SIGKILL)
        p.kill()
        p.wait(10)
