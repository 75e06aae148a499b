"""The restart path's guards (:meth:`wire.daemon.Daemon._shutdown_orphaned_actor_system`) on real
processes, without an actor system: a stand-in "orphan" is a sleeping process in a session of its
own (as Thespian's admin is), named by a ``shoal.actors.json`` record of a daemon that is gone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from actors.watchdog.liveness import boot_id, observe_process, read_cmdline, session_members
from tests.e2e.conftest import free_port
from wire.daemon import ACTOR_SYSTEM_FILE, Daemon

pytestmark = pytest.mark.usefixtures("linux_proc")


@pytest.fixture
def orphan():
    """A process in a new session (its own leader, like an orphaned admin), killed afterwards."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "shoal-orphan-stand-in"], start_new_session=True)
    deadline = time.monotonic() + 10
    while "shoal-orphan-stand-in" not in (read_cmdline(p.pid) or "") and time.monotonic() < deadline:  # exec done
        time.sleep(0.01)
    yield p
    if p.poll() is None:
        p.kill()
    p.wait(10)


def _record(data_dir: Path, session: int, **over) -> None:
    """A record of a gone daemon: this process's pid with a start time it never had."""
    me = observe_process(os.getpid())
    assert me is not None and me.start_time is not None
    rec = {
        "pid": os.getpid(),
        "start_time": me.start_time + 1,  # so the owner is provably not this process: gone
        "admin_port": free_port(),  # nothing listens there
        "session": session,
        "watchdog_ms": 0,
        "boot_id": boot_id(),
        "cmdline": None,
    }
    rec.update(over)
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / ACTOR_SYSTEM_FILE).write_text(json.dumps(rec))


def test_a_straggler_with_the_old_daemons_command_line_is_killed(tmp_path: Path, orphan) -> None:
    _record(tmp_path, orphan.pid, cmdline=read_cmdline(orphan.pid))
    Daemon({"shoal.data.dir": str(tmp_path)})._shutdown_orphaned_actor_system(timeout_s=0.5)
    assert orphan.wait(10) == -signal.SIGKILL
    assert session_members(orphan.pid) == []


def test_a_process_without_the_old_daemons_command_line_is_left_alone(tmp_path: Path, orphan) -> None:
    """Same session id but not provably ours (e.g. the id was reused): waited for, not killed."""
    _record(tmp_path, orphan.pid, cmdline="python app.py run --data-dir /somewhere/else")
    Daemon({"shoal.data.dir": str(tmp_path)})._shutdown_orphaned_actor_system(timeout_s=0.5)
    assert orphan.poll() is None and session_members(orphan.pid) == [orphan.pid]


def test_a_record_from_another_boot_is_ignored(tmp_path: Path, orphan) -> None:
    _record(tmp_path, orphan.pid, cmdline=read_cmdline(orphan.pid), boot_id="another-boot")
    Daemon({"shoal.data.dir": str(tmp_path)})._shutdown_orphaned_actor_system(timeout_s=0.5)
    assert orphan.poll() is None


def test_a_live_owner_is_left_alone(tmp_path: Path, orphan) -> None:
    """The record names a daemon that still runs (this process, right start time): nothing is done."""
    me = observe_process(os.getpid())
    _record(tmp_path, orphan.pid, cmdline=read_cmdline(orphan.pid), start_time=me.start_time if me else None)
    Daemon({"shoal.data.dir": str(tmp_path)})._shutdown_orphaned_actor_system(timeout_s=0.5)
    assert orphan.poll() is None


def test_this_processs_own_session_is_never_a_target(tmp_path: Path) -> None:
    """A record naming the caller's own session (e.g. a base that does not daemonize its admin)
    must not make the daemon kill itself or its shell."""
    _record(tmp_path, os.getsid(0), cmdline=read_cmdline(os.getpid()))
    Daemon({"shoal.data.dir": str(tmp_path)})._shutdown_orphaned_actor_system(timeout_s=0.5)
    assert observe_process(os.getpid()) is not None  # still here to assert it
