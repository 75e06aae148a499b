"""Supervision bookkeeping for the controller's child actors (no Thespian calls in here).

A registry of child *kinds* (``"rlmm"`` → ``actors.rlmm.actor.RlmmPartitionActor``,
``"consumer"`` → ``actors.consumer.actor.ConsumerGroupActor``, or any ShoalActor given by class
path; share groups run in the listener process, :mod:`actors.share.host`) and of the live
children by ``(kind, name)``. The :class:`~actors.controller.actor.ControllerActor` creates a
child on demand, sends it ``Configure(config, name, journal)``, and answers lookups once the child
has answered ``Configured`` (it recovers by replaying its own stream). When a child exits without
having been asked to, it is restarted (a *one-for-one* strategy, as Erlang/OTP and Akka name it),
unless it restarted more than ``max_restarts`` times within ``restart_window_ms``: then it is
given up (logged) and the next lookup starts it afresh.

Thespian addresses are not hashable, so children are found by address with ``==``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ChildRecord", "ChildSpec", "DEFAULT_CHILD_KINDS", "Supervisor"]

#: Child kinds the controller knows without configuration (other helpers' actors).
DEFAULT_CHILD_KINDS: dict[str, str] = {
    "rlmm": "actors.rlmm.actor.RlmmPartitionActor",
    # consumer groups (classic protocol, issue 16)
    "consumer": "actors.consumer.actor.ConsumerGroupActor",
}


@dataclass
class ChildSpec:
    """How to start a child of one kind: the actor ``class_path`` and extra ``config`` merged
    over the controller's config in the child's ``Configure``."""

    kind: str
    class_path: str
    config: dict[str, Any] = field(default_factory=dict)


@dataclass
class ChildRecord:
    """A supervised child: its current ``address``, ``ready`` once it answered ``Configured``,
    ``restarts`` so far and their times (ms), lookups waiting for readiness (``waiters``),
    ``previous`` addresses of crashed incarnations (dead letters to them are counted in
    ``dead_letters``; Thespian's ``DeadEnvelope`` does not carry the original sender, so they
    cannot be redelivered with a correct reply path: senders re-lookup after a timeout), and
    ``stopping`` when asked to exit (with the senders of ``StopChild`` in ``stop_waiters``)."""

    kind: str
    name: str
    address: Any
    ready: bool = False
    restarts: int = 0
    restart_times: list[int] = field(default_factory=list)
    waiters: list[Any] = field(default_factory=list)
    previous: list[Any] = field(default_factory=list)
    dead_letters: int = 0
    stopping: bool = False
    stop_waiters: list[Any] = field(default_factory=list)


class Supervisor:
    """Child kinds and live children; restart intensity ``max_restarts`` per
    ``restart_window_ms`` (defaults 10 per 60 s)."""

    def __init__(self, kinds: dict[str, str] | None = None, max_restarts: int = 10, restart_window_ms: int = 60_000) -> None:
        self.kinds: dict[str, ChildSpec] = {k: ChildSpec(k, v) for k, v in (kinds or DEFAULT_CHILD_KINDS).items()}
        self.children: dict[tuple[str, str], ChildRecord] = {}
        self.max_restarts = max_restarts
        self.restart_window_ms = restart_window_ms
        self.total_restarts = 0
        self.given_up = 0

    def register(self, kind: str, class_path: str, config: dict[str, Any] | None = None) -> None:
        """Add or replace a child kind."""
        self.kinds[kind] = ChildSpec(kind, class_path, dict(config or {}))

    def by_address(self, address: Any) -> ChildRecord | None:
        """The child currently at ``address`` (``None`` if none)."""
        for rec in self.children.values():
            if rec.address == address:
                return rec
        return None

    def by_any_address(self, address: Any) -> ChildRecord | None:
        """The child at ``address`` now or in a previous (crashed) incarnation."""
        for rec in self.children.values():
            if rec.address == address or any(a == address for a in rec.previous):
                return rec
        return None

    def may_restart(self, rec: ChildRecord, now_ms: int) -> bool:
        """Record a restart at ``now_ms`` if the intensity allows it; False means give up."""
        window = [t for t in rec.restart_times if now_ms - t < self.restart_window_ms]
        if len(window) >= self.max_restarts:
            rec.restart_times = window
            return False
        window.append(now_ms)
        rec.restart_times = window
        rec.restarts += 1
        self.total_restarts += 1
        return True
