"""Talking to actors from the listener's threads: Thespian's external API.

``ActorSystem.ask`` waits for "a reply from any actor" on the caller's endpoint, so concurrent
listener threads must not share one endpoint. Each thread gets its own endpoint from
``asys.private()`` (an ``external_clone`` of the system base), created once per thread and reused
for every request the thread serves. If an ask times out, the endpoint is thrown away (a late
reply must not be read as the answer to the next request) and the call raises
:class:`ActorTimeout`; the wire answers REQUEST_TIMED_OUT / COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

__all__ = ["ActorGateway", "ActorTimeout"]

log = logging.getLogger("shoal.wire.gateway")


class ActorTimeout(TimeoutError):
    """No reply within the timeout (the actor is busy, recovering or gone)."""


class ActorGateway:
    """Per-thread private endpoints on an ``ActorSystem`` (``asys``).

    :meth:`ask` sends ``msg`` to ``addr`` and returns the reply (any object), raising
    :class:`ActorTimeout` after ``timeout_s`` seconds. ``asks``/``ask_seconds`` accumulate the
    number and total wall time of asks (for ``status`` and the benchmark)."""

    def __init__(self, asys: Any, default_timeout_s: float = 30.0) -> None:
        self.asys = asys
        self.default_timeout_s = default_timeout_s
        self._local = threading.local()
        self._all: list[tuple[Any, Any]] = []
        self._lock = threading.Lock()
        self.asks = 0
        self.ask_seconds = 0.0

    def _context(self) -> Any:
        ctx = getattr(self._local, "ctx", None)
        if ctx is None:
            cm = self.asys.private()
            ctx = cm.__enter__()
            self._local.ctx = ctx
            self._local.cm = cm
            with self._lock:
                self._all.append((cm, ctx))
        return ctx

    def _discard(self) -> None:
        cm = getattr(self._local, "cm", None)
        ctx = getattr(self._local, "ctx", None)
        self._local.ctx = None
        self._local.cm = None
        if cm is not None:
            with self._lock:
                self._all = [(c, x) for c, x in self._all if c is not cm]
            try:
                cm.__exit__(None, None, None)
            except Exception:  # pragma: no cover - the endpoint is being dropped anyway
                log.debug("closing a private endpoint failed", exc_info=True)
        _ = ctx

    def ask(self, addr: Any, msg: Any, timeout_s: float | None = None) -> Any:
        """Send ``msg`` to ``addr`` and wait for the reply. Raises :class:`ActorTimeout`."""
        t0 = time.perf_counter()
        ctx = self._context()
        reply = ctx.ask(addr, msg, self.default_timeout_s if timeout_s is None else timeout_s)
        self.asks += 1
        self.ask_seconds += time.perf_counter() - t0
        if reply is None:
            self._discard()
            raise ActorTimeout(f"no reply from {addr} to {type(msg).__name__} within {timeout_s or self.default_timeout_s}s")
        return reply

    def release_thread(self) -> None:
        """Close the calling thread's endpoint (called when a connection thread ends)."""
        self._discard()

    def tell(self, addr: Any, msg: Any) -> None:
        """Send ``msg`` without waiting."""
        self._context().tell(addr, msg)

    def close(self) -> None:
        """Close every endpoint this gateway opened (any thread's)."""
        with self._lock:
            items, self._all = self._all, []
        for cm, _ctx in items:
            try:
                cm.__exit__(None, None, None)
            except Exception:  # pragma: no cover
                pass

