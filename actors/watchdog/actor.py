"""``OwnerWatchdogActor``: stops the whole actor system once the daemon that owns it is gone.

The daemon (:class:`wire.daemon.Daemon`) creates one, top-level, right after it starts the actor
system, and tells it :class:`WatchOwner` (its own pid and start time, and the poll interval
``shoal.actor.system.watchdog.ms``). Every interval the actor observes the owner's pid in
``/proc`` and asks :func:`actors.watchdog.liveness.daemon_alive`; when the owner is gone (SIGKILL,
OOM kill: no cleanup code ran in it) it calls Thespian's ``Actor.actorSystemShutdown()``. That
sends ``SystemShutdown`` to the admin, exactly what ``ActorSystem.shutdown()`` sends from outside:
the admin asks every top-level actor to exit recursively, waits for their ``ChildActorExited``
and then ends itself and its logger, so no process of the system is left.

The actor answers :class:`WatchingOwner` with its session id: Thespian's admin runs in a session of
its own (``setsid`` in ``startAdmin``) and every actor is forked inside it, so the daemon records
that session to find (and wait for) every process of this actor system after a crash.

The normal paths pay nothing for it: one ask at start-up, one ``/proc`` read per interval in a
process of its own.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from actors.base import ShoalActor
from actors.watchdog.liveness import daemon_alive, observe_process

__all__ = ["OwnerWatchdogActor", "WatchOwner", "WatchingOwner"]

log = logging.getLogger("shoal.watchdog")


@dataclass(frozen=True)
class WatchOwner:
    """To the watchdog: watch the process ``pid`` that started at ``start_time`` (clock ticks after
    boot, ``/proc/<pid>/stat`` field 22; ``None``: unknown, watch the pid alone) every
    ``interval_ms`` milliseconds (``<= 0``: do not watch, only answer). Answered with
    :class:`WatchingOwner`. A later ``WatchOwner`` replaces the earlier one."""

    pid: int
    start_time: int | None
    interval_ms: int


@dataclass(frozen=True)
class WatchingOwner:
    """Reply to :class:`WatchOwner`: the watchdog's own ``pid`` and ``session`` id (the actor
    system's session, see :func:`actors.watchdog.liveness.session_members`), and whether the owner
    was ``alive`` at the first check (False: the system is already shutting down)."""

    pid: int
    session: int
    alive: bool


class OwnerWatchdogActor(ShoalActor):
    """Polls the owner daemon's liveness (see the module docstring). Timers cannot be cancelled,
    so each :class:`WatchOwner` starts a new generation and wakeups of older ones are ignored."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._owner: WatchOwner | None = None
        self._generation = 0
        self._fired = False

    def receiveMsg_WatchOwner(self, msg: WatchOwner, sender: Any) -> None:
        """Start watching ``msg``'s owner; answer :class:`WatchingOwner`."""
        self._owner = msg
        self._generation += 1
        alive = self._check()
        self.send(sender, WatchingOwner(os.getpid(), os.getsid(0), alive))
        if alive and msg.interval_ms > 0:
            self.wakeupAfter(timedelta(milliseconds=msg.interval_ms), payload=("owner-watch", self._generation))

    def on_wakeup(self, payload: Any) -> None:
        """One poll: check the owner, and re-arm while it lives."""
        if payload != ("owner-watch", self._generation) or self._owner is None or self._fired:
            return
        if self._check():
            self.wakeupAfter(timedelta(milliseconds=self._owner.interval_ms), payload=payload)

    def _check(self) -> bool:
        """Observe the owner now; when it is gone, shut the actor system down (once). Returns
        whether the owner is alive."""
        owner = self._owner
        if owner is None:
            return True
        if daemon_alive(owner.pid, owner.start_time, observe_process(owner.pid)):
            return True
        if not self._fired:
            self._fired = True
            log.warning("the daemon (pid %d) that owns this actor system is gone: shutting the actor system down", owner.pid)
            self.actorSystemShutdown()
        return False
