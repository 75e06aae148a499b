"""Keeping the listener process's memory near its start under connection churn (issue 13).

The listener serves one thread per connection. glibc's malloc gives threads their own arenas (up
to 8 × cores of them) and keeps freed memory inside each arena, so a burst of short-lived
connections leaves the process's RSS at its high-water mark even when nothing is live. With the
listener on the in-memory backend, two rounds of 20,000 fuzz frames left RSS +36 MB / +43 MB
above its start with glibc's defaults, +17 MB with at most two arenas and a trim, and +0.0 MB
with one arena and a trim (the GIL serialises Python's allocations anyway, so one arena costs
no throughput). Two glibc knobs (``mallopt(3)``, ``malloc_trim(3)``) do it; nothing here changes
what Python allocates.

Configuration (Shoal's own keys, in ``config.BROKER_DEFAULTS``):

- ``shoal.malloc.arena.max`` (default 1; 0 leaves glibc's default): ``M_ARENA_MAX``, set once
  by ``app.py run`` before it starts the daemon (before the listener makes threads); a
  :class:`wire.daemon.Daemon` started inside another process (a test run) leaves that
  process's malloc alone;
- ``shoal.malloc.trim.interval.ms`` (default 5000; 0 disables): how often the daemon's ticker
  returns free heap pages to the OS with ``malloc_trim(0)``.

On a libc without these functions (musl, macOS) both are no-ops that return ``False``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

__all__ = ["MallocTrimmer", "limit_malloc_arenas", "malloc_trim"]

log = logging.getLogger("shoal.wire")

_M_ARENA_MAX = -8  # glibc malloc.h

try:
    _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    _MALLOPT = getattr(_LIBC, "mallopt", None)
    _MALLOC_TRIM = getattr(_LIBC, "malloc_trim", None)
except OSError:  # pragma: no cover - no loadable libc
    _MALLOPT = _MALLOC_TRIM = None


def limit_malloc_arenas(n: int) -> bool:
    """Cap glibc's malloc arenas at ``n`` (``mallopt(M_ARENA_MAX, n)``). ``n <= 0`` changes
    nothing. Returns True if the cap was set, False if ``n <= 0`` or the libc has no ``mallopt``
    or refused it. Call it before the process starts many threads."""
    if n <= 0 or _MALLOPT is None:
        return False
    ok = bool(_MALLOPT(ctypes.c_int(_M_ARENA_MAX), ctypes.c_int(n)))
    if not ok:  # pragma: no cover - glibc accepts any positive value
        log.warning("mallopt(M_ARENA_MAX, %d) refused", n)
    return ok


def malloc_trim() -> bool:
    """Return free heap memory of every arena to the OS (``malloc_trim(0)``). Returns True if
    glibc released something, False if nothing was released or the libc has no ``malloc_trim``."""
    if _MALLOC_TRIM is None:
        return False
    return bool(_MALLOC_TRIM(ctypes.c_size_t(0)))


class MallocTrimmer:
    """Decides when to trim: :meth:`tick` is called by the daemon's ticker with the monotonic time
    in ms and trims when ``interval_ms`` passed since the last trim (never if ``interval_ms`` ≤ 0).
    ``trim`` is the function that trims (default :func:`malloc_trim`; tests pass their own)."""

    def __init__(self, interval_ms: int, trim=malloc_trim) -> None:
        self.interval_ms = interval_ms
        self._trim = trim
        self._last_ms: int | None = None
        self.trims = 0

    def tick(self, now_ms: int) -> bool:
        """Trim if due at ``now_ms``; returns True if it trimmed. The first tick only starts the clock."""
        if self.interval_ms <= 0:
            return False
        if self._last_ms is None:
            self._last_ms = now_ms
            return False
        if now_ms - self._last_ms < self.interval_ms:
            return False
        self._last_ms = now_ms
        self._trim()
        self.trims += 1
        return True
