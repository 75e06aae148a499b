"""The owner-liveness decision (pure) and the /proc readers, on real processes where it matters."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.watchdog.liveness import (
    DEAD_STATES,
    ProcessObservation,
    daemon_alive,
    observe_process,
    parse_proc_stat,
    session_members,
)

needs_proc = pytest.mark.usefixtures("linux_proc")


def _stat_line(pid: int, comm: str, state: str, session: int, start_time: int) -> str:
    """A /proc/<pid>/stat line (52 fields) with the given comm, state, session and starttime."""
    fields = [str(pid), f"({comm})", state, "1", str(session), str(session)] + ["0"] * 15 + [str(start_time)] + ["0"] * 30
    return " ".join(fields) + "\n"


# -- the pure decision ------------------------------------------------------------------------------
def test_nothing_at_the_pid_means_gone() -> None:
    assert daemon_alive(1234, 500, None) is False


def test_same_pid_and_start_time_running_is_alive() -> None:
    assert daemon_alive(1234, 500, ProcessObservation(1234, 500, "S", 77)) is True


def test_a_reused_pid_with_another_start_time_is_not_the_owner() -> None:
    assert daemon_alive(1234, 500, ProcessObservation(1234, 501, "S", 77)) is False


def test_a_zombie_owner_is_gone() -> None:
    """SIGKILLed but not yet reaped by its parent: it will never run code again."""
    assert daemon_alive(1234, 500, ProcessObservation(1234, 500, "Z", 77)) is False


def test_unknown_start_times_fall_back_to_the_pid() -> None:
    assert daemon_alive(1234, None, ProcessObservation(1234, 999, "R", 1)) is True
    assert daemon_alive(1234, 500, ProcessObservation(1234, None, "", None)) is True


def test_an_observation_of_another_pid_says_nothing_alive() -> None:
    assert daemon_alive(1234, 500, ProcessObservation(4321, 500, "S", 1)) is False


@given(
    pid=st.integers(1, 2**22),
    start=st.one_of(st.none(), st.integers(0, 2**40)),
    seen_start=st.one_of(st.none(), st.integers(0, 2**40)),
    state=st.sampled_from(sorted(DEAD_STATES)),
)
def test_no_dead_state_is_ever_alive(pid: int, start: int | None, seen_start: int | None, state: str) -> None:
    assert daemon_alive(pid, start, ProcessObservation(pid, seen_start, state, 1)) is False


@given(pid=st.integers(1, 2**22), start=st.integers(0, 2**40), other=st.integers(0, 2**40), state=st.sampled_from("RSDTt"))
def test_alive_exactly_when_the_start_time_matches(pid: int, start: int, other: int, state: str) -> None:
    assert daemon_alive(pid, start, ProcessObservation(pid, other, state, 1)) is (start == other)


# -- parsing ----------------------------------------------------------------------------------------
def test_parse_counts_fields_after_the_last_parenthesis() -> None:
    """A command name may contain spaces and ')' (proc(5))."""
    obs = parse_proc_stat(42, _stat_line(42, "we) ird (name", "S", 4711, 987654))
    assert obs == ProcessObservation(42, 987654, "S", 4711)


def test_parse_refuses_a_truncated_line() -> None:
    with pytest.raises(ValueError):
        parse_proc_stat(1, "1 (x) S 1 2 3")
    with pytest.raises(ValueError):
        parse_proc_stat(1, "garbage without parenthesis")


def test_observe_reads_a_fake_proc_tree(tmp_path: Path) -> None:
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "stat").write_text(_stat_line(7, "py", "R", 7, 123))
    (tmp_path / "8").mkdir()
    (tmp_path / "8" / "stat").write_text(_stat_line(8, "py", "S", 7, 124))
    (tmp_path / "9").mkdir()
    (tmp_path / "9" / "stat").write_text(_stat_line(9, "py", "Z", 7, 125))
    (tmp_path / "10").mkdir()
    (tmp_path / "10" / "stat").write_text(_stat_line(10, "py", "S", 3, 126))
    assert observe_process(8, tmp_path) == ProcessObservation(8, 124, "S", 7)
    assert observe_process(11, tmp_path) is None
    assert session_members(7, tmp_path) == [7, 8]  # the zombie is not a member any more


# -- real processes ---------------------------------------------------------------------------------
@needs_proc
def test_observe_this_process() -> None:
    obs = observe_process(os.getpid())
    assert obs is not None and obs.pid == os.getpid() and obs.session == os.getsid(0)
    assert obs.start_time == parse_proc_stat(os.getpid(), Path("/proc/self/stat").read_text()).start_time
    assert daemon_alive(os.getpid(), obs.start_time, observe_process(os.getpid()))


@needs_proc
def test_sigkilled_process_is_gone_before_and_after_it_is_reaped() -> None:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        first = observe_process(p.pid)
        assert first is not None and daemon_alive(p.pid, first.start_time, first)
        os.kill(p.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while daemon_alive(p.pid, first.start_time, observe_process(p.pid)) and time.monotonic() < deadline:
            time.sleep(0.02)
        # not reaped yet: a zombie (or already gone), either way not alive
        assert not daemon_alive(p.pid, first.start_time, observe_process(p.pid))
    finally:
        p.kill()
        p.wait(10)
    assert observe_process(p.pid) is None or observe_process(p.pid).start_time != first.start_time


@needs_proc
def test_session_members_finds_a_forked_tree_and_nothing_after_it_died() -> None:
    """A process in a new session forks a child (as Thespian's admin forks actors): both are members."""
    code = "import os, time\nif os.fork() == 0:\n    time.sleep(600)\nelse:\n    time.sleep(600)\n"
    p = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(session_members(p.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        members = session_members(p.pid)
        assert p.pid in members and len(members) == 2
        assert os.getpid() not in members
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(10)
    deadline = time.monotonic() + 10
    while session_members(p.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert session_members(p.pid) == []
