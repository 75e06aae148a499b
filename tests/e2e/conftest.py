"""End-to-end harness: the real daemon (``app.py run``) as a subprocess, on a free loopback port,
with its own data dir and Thespian admin port; real confluent-kafka clients talk to it.

Cleanup is checked by PID: Thespian's admin daemonizes (setsid + fork) and forks one process per
actor, all with the daemon's command line — which names the test's unique data dir — so every
process of a daemon is found by scanning ``/proc/*/cmdline`` for that dir. After each daemon
stops, the harness asserts none is left (and kills stragglers so one failure does not leak into
the next test).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (bind to 0, read, close)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pids_with(marker: str) -> list[int]:
    """PIDs of live processes whose command line contains ``marker``."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (d / "stat").read_text().split(") ", 1)[1][0]
        except OSError:
            continue
        if marker in cmd and state != "Z":
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
        return pids_with(str(self.data_dir))

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
