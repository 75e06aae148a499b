"""End-to-end harness: the real daemon (``app.py run``) as a subprocess, on a free loopback port,
with its own data dir and Thespian admin port; real confluent-kafka clients talk to it.

Cleanup is checked by PID: Thespian's admin daemonizes (setsid + fork) and forks one process per
actor, all with the daemon's command line — which names the test's unique data dir — and all in the
admin's session. Every process of a daemon is found by scanning ``/proc`` for that dir in the
command line and for the actor system's session (recorded by the daemon in
``shoal.actors.json``; the session still finds the actors should their command line ever change,
e.g. with ``setproctitle`` installed). After each daemon stops, the harness asserts none is left
(and kills stragglers so one failure does not leak into the next test).

Ports come from outside the kernel's ephemeral range (``net.ipv4.ip_local_port_range``): a port
from inside it can be taken by any outgoing connection or port-0 bind — each Thespian actor binds
one — between the moment a test picks it and the moment the daemon binds it, or between a SIGKILL
and a restart that reuses the killed daemon's ports.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _ephemeral_range() -> tuple[int, int]:
    """The kernel's ephemeral port range (inclusive); Linux's default where unknown."""
    try:
        lo, hi = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(lo), int(hi)
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now and outside the ephemeral range (so no outgoing
    connection or port-0 bind can take it before the daemon binds it): random below the range
    (from 10000; above it when that is too small), checked with a bind without ``SO_REUSEADDR``."""
    lo, hi = _ephemeral_range()
    choices = [(10000, lo - 1)] if lo - 1 - 10000 >= 1000 else [(hi + 1, 65535)]
    rng = random.Random()
    for _ in range(200):
        a, b = rng.choice(choices)
        port = rng.randint(a, b)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port outside the ephemeral range")


def session_pids(session: int) -> list[int]:
    """PIDs of the live (not zombie) processes in session ``session``."""
    from actors.watchdog.liveness import session_members

    return session_members(session)


def pids_with(marker: str) -> list[int]:
    """PIDs of live (not zombie) processes with ``marker`` as one whole argument of their command
    line (a whole argument, so ``…/data1`` does not also find the processes of ``…/data10``)."""
    want = marker.encode()
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            args = (d / "cmdline").read_bytes().split(b"\0")
            state = (d / "stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if want in args and state not in ("Z", "X"):
            out.append(int(d.name))
    return out


class DaemonProcess:
    """One ``app.py run`` subprocess. ``bootstrap`` is ``host:port`` for clients."""

    def __init__(self, data_dir: Path, port: int, admin_port: int, overrides: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.port = port
        self.admin_port = admin_port
        self.overrides = dict(overrides)
        self.proc: subprocess.Popen | None = None
        self.killed = False
        self.log_path = data_dir.parent / f"{data_dir.name}-daemon.log"
        #: The actor system's session id (from ``shoal.actors.json`` once started; 0 unknown).
        self.session = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 60) -> "DaemonProcess":
        args = [sys.executable, str(ROOT / "app.py"), "run", "--data-dir", str(self.data_dir)]
        ov = {"listeners": f"PLAINTEXT://127.0.0.1:{self.port}", "shoal.actor.system.admin.port": str(self.admin_port)}
        ov.update(self.overrides)
        for k, v in ov.items():
            args += ["--override", f"{k}={v}"]
        env = dict(os.environ, THESPIAN_BASE_IPADDR="127.0.0.1", PYTHONUNBUFFERED="1")
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, cwd=str(ROOT), stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout_s
        from wire.status import probe_api_versions

        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited with {self.proc.returncode}: {self.log_tail()}")
            if probe_api_versions("127.0.0.1", self.port, 1.0):
                try:
                    self.session = int(json.loads((self.data_dir / "shoal.actors.json").read_text())["session"] or 0)
                except (OSError, ValueError, KeyError, TypeError):
                    self.session = 0
                return self
            time.sleep(0.2)
        raise RuntimeError(f"daemon not ready after {timeout_s}s: {self.log_tail()}")

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self, timeout_s: float = 30) -> int | None:
        """SIGTERM and wait; returns the exit code (None if it had to be killed)."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            return None

    def kill(self) -> None:
        """SIGKILL the daemon process AND every Thespian process of it (a machine crash)."""
        self.killed = True
        for pid in self.all_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc is not None:
            self.proc.wait(10)
        deadline = time.monotonic() + 10
        while self.all_pids() and time.monotonic() < deadline:
            time.sleep(0.1)

    def all_pids(self) -> list[int]:
        """Every live process of this daemon: its data dir in the command line, or in its actor
        system's session (sorted, no zombies)."""
        found = set(pids_with(str(self.data_dir)))
        if self.session:
            found.update(session_pids(self.session))
        return sorted(found)

    def actor_pids(self) -> list[int]:
        """The live processes of this daemon's actor system (its session): admin, logger, actors."""
        return session_pids(self.session) if self.session else []

    def assert_no_processes_left(self, timeout_s: float = 20) -> None:
        deadline = time.monotonic() + timeout_s
        left = self.all_pids()
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = self.all_pids()
        if left:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            raise AssertionError(f"daemon processes left behind: {left}")


class _Factory:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.made: list[DaemonProcess] = []

    def __call__(self, data_dir: Path | None = None, port: int | None = None, admin_port: int | None = None, **overrides: str) -> DaemonProcess:
        d = DaemonProcess(data_dir or (self.base / f"data{len(self.made)}"), port or free_port(), admin_port or free_port(), dict(overrides))
        self.made.append(d)
        return d.start()

    def close(self) -> None:
        errors = []
        for d in reversed(self.made):  # later daemons may share an earlier one's data dir
            code = d.stop()
            if not d.killed and code != 0:
                errors.append(f"daemon on {d.bootstrap} exited with {code} after SIGTERM: {d.log_tail(1500)}")
        for d in self.made:
            try:
                d.assert_no_processes_left()
            except AssertionError as exc:
                errors.append(str(exc))
        if errors:
            pytest.fail("; ".join(errors))


@pytest.fixture()
def daemon_factory(tmp_path: Path) -> Iterator[_Factory]:
    """``make(**overrides) -> DaemonProcess`` (started). Every daemon is stopped at teardown
    and checked to leave no process behind."""
    f = _Factory(tmp_path)
    yield f
    f.close()


#: Overrides of the shared daemon: short locks, sessions and heartbeats, a low delivery limit and
#: fast tiering, all inside Kafka's ranges.
SHARED_OVERRIDES = {
    "group.share.record.lock.duration.ms": "2000",
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.delivery.count.limit": "3",
    "group.share.session.timeout.ms": "6000",
    "group.share.min.session.timeout.ms": "6000",
    "group.share.heartbeat.interval.ms": "1000",
    "group.share.min.heartbeat.interval.ms": "1000",
    "remote.log.manager.task.interval.ms": "500",
    "shoal.share.group.passivate.ms": "3600000",
    # the module's tests make more share groups than Kafka's default group.share.max.groups (10)
    "group.share.max.groups": "100",
}


@pytest.fixture(scope="module")
def shared_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    """One daemon for a test module (with :data:`SHARED_OVERRIDES`)."""
    f = _Factory(tmp_path_factory.mktemp("shared"))
    d = f(**SHARED_OVERRIDES)
    yield d
    f.close()
