"""Is the daemon that owns an actor system still alive? (pure decision plus small /proc readers)

Thespian's ``multiprocTCPBase`` admin daemonizes (``setsid`` + ``fork`` in
``thespian/system/multiprocCommon.py:startAdmin``), so when the daemon's main process dies without
running any cleanup (SIGKILL, OOM kill) the admin and every actor process stay up. The
:class:`actors.watchdog.actor.OwnerWatchdogActor` polls the owner's liveness with
:func:`daemon_alive` and shuts the actor system down when the owner is gone; the restart path in
:mod:`wire.daemon` uses the same decision for a previous daemon named in the data dir.

A process is identified by its pid **and its start time** (``/proc/<pid>/stat`` field 22,
``starttime``, in clock ticks since boot), so a pid reused by an unrelated process after the owner
died is not mistaken for the owner. A zombie (state ``Z``: dead, not yet reaped by its parent) or a
dying process (``X``) counts as gone: no code of it will ever run again.

The decision is timeless: a process that is gone never comes back and the identity check makes the
observation conclusive, so one observation of "gone" suffices (no grace period, no clock).
Where ``/proc`` is missing (not Linux) the observation falls back to ``kill(pid, 0)`` and the start
time is unknown (``None``): the check degrades to the pid alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEAD_STATES",
    "boot_id",
    "read_cmdline",
    "ProcessObservation",
    "daemon_alive",
    "observe_process",
    "parse_proc_stat",
    "session_members",
]

#: ``/proc/<pid>/stat`` states of a process that will never run again: zombie, dead.
DEAD_STATES = frozenset("ZXx")

_PROC = Path("/proc")


@dataclass(frozen=True)
class ProcessObservation:
    """What ``/proc/<pid>/stat`` said about one process at one moment.

    ``pid``; ``start_time``: clock ticks after boot at which it started (``None``: unknown, no
    ``/proc``); ``state``: the one-letter state (``R``, ``S``, ``D``, ``Z`` …; ``""`` unknown);
    ``session``: its session id (``None``: unknown)."""

    pid: int
    start_time: int | None
    state: str
    session: int | None


def daemon_alive(pid: int, start_time: int | None, observed: ProcessObservation | None) -> bool:
    """Whether the daemon identified by ``pid`` and ``start_time`` (``None``: unknown, pid only)
    is still alive, given ``observed`` = what was seen at ``pid`` now (``None``: no such process).

    Pure. False when nothing lives at ``pid``, when the process there is a zombie or dead
    (:data:`DEAD_STATES`), when ``observed`` is about another pid, or when both start times are
    known and differ (the pid was reused). Raises nothing."""
    if observed is None or observed.pid != pid or pid <= 0:
        return False
    if observed.state in DEAD_STATES:
        return False
    if start_time is not None and observed.start_time is not None and observed.start_time != start_time:
        return False
    return True


def parse_proc_stat(pid: int, text: str) -> ProcessObservation:
    """Parse the text of ``/proc/<pid>/stat`` (proc(5)): the state is field 3, the session field 6,
    ``starttime`` field 22. The command name (field 2) is in parentheses and may itself contain
    spaces and ``)``, so fields are counted after the LAST ``)``. Raises ``ValueError`` on text
    that does not have that shape."""
    _, sep, rest = text.rpartition(")")
    if not sep:
        raise ValueError(f"not a /proc/<pid>/stat line: {text[:80]!r}")
    fields = rest.split()
    # fields[0] is field 3 (state); field n is fields[n - 3]
    if len(fields) < 20:
        raise ValueError(f"/proc/{pid}/stat has {len(fields) + 2} fields, expected at least 22")
    return ProcessObservation(pid=pid, start_time=int(fields[19]), state=fields[0], session=int(fields[3]))


def observe_process(pid: int, proc: Path = _PROC) -> ProcessObservation | None:
    """Observe process ``pid`` now: its :class:`ProcessObservation`, or ``None`` when there is no
    such process. Reads ``<proc>/<pid>/stat`` (Linux); without ``/proc`` falls back to
    ``os.kill(pid, 0)`` with unknown start time, state and session. Raises nothing."""
    if pid <= 0:
        return None
    if proc.is_dir():
        try:
            return parse_proc_stat(pid, (proc / str(pid) / "stat").read_text())
        except (OSError, ValueError):
            return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # it exists, owned by someone else
    return ProcessObservation(pid, None, "", None)


def session_members(session: int, proc: Path = _PROC) -> list[int]:
    """PIDs of the live (not zombie/dead) processes in session ``session``, read from ``/proc``
    (an empty list where there is no ``/proc``).

    Thespian's admin runs in a session of its own (``setsid`` in ``startAdmin``) and every actor
    process is forked from it or from another actor, so that session is exactly one actor system.
    Linux does not hand out a pid that is still in use as a session or process-group id, so the
    session id stays unambiguous while any member lives. Raises nothing."""
    out: list[int] = []
    if session <= 0 or not proc.is_dir():
        return out
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            obs = parse_proc_stat(int(d.name), (d / "stat").read_text())
        except (OSError, ValueError):
            continue  # exited while we looked
        if obs.session == session and obs.state not in DEAD_STATES:
            out.append(obs.pid)
    return sorted(out)


def boot_id(proc: Path = _PROC) -> str:
    """This boot's id (``/proc/sys/kernel/random/boot_id``; ``""`` where unknown). Pids and
    session ids mean nothing across a reboot: a record from another boot names no live process."""
    try:
        return (proc / "sys" / "kernel" / "random" / "boot_id").read_text().strip()
    except OSError:
        return ""


def read_cmdline(pid: int, proc: Path = _PROC) -> str | None:
    """The command line of ``pid`` as one string (arguments joined by a space; ``None`` when the
    process is gone or unreadable). A forked process keeps its parent's command line, so every
    Thespian process of a daemon shows the daemon's own."""
    try:
        return (proc / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None
