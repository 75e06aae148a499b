"""Long polls that end when what they wait for changes: :class:`WaitSet`.

A waiting request (a ShareFetch in purgatory, Kafka's ``DelayedShareFetch``) names the *keys* it
waits on — each partition it may acquire from, its share group — and is woken only by a change of
one of them: an append that moves a partition's high watermark, records of the group freed (a
RELEASE, a closed share session, a member that left, an acquisition lock that expired, a start
offset that opened the in-flight window). A produce to one partition wakes only fetches waiting on
that partition, not every long poll of the listener.

Wake-ups are handed out one waiter at a time, per key and per *party* (a share group: the waiters
of one group compete for the same share-partition, those of two groups do not): a change wakes the
party's longest-waiting fetch, and that fetch passes the wake-up on to the next one
(:meth:`WaitSet.pass_on`) when records are left after its own acquisition. So 32 consumers waiting
on one partition cost one attempt per change, not 32 (Kafka completes the delayed fetches of a
partition in order the same way), and the records go to the waiters in the order they came.

No wake-up is lost as long as the waiters keep two rules (:meth:`wire.share_client.ShareClient.fetch`
does): read the keys' versions (:meth:`WaitSet.versions`) *before* looking at the state waited on
— :meth:`WaitSet.wait` returns at once when any version moved since then — and decide which keys
to wait on from that same state; and a waiter that holds wake-ups (``wait`` returned keys) passes
them on whenever it leaves records behind or leaves without having tried.
"""

from __future__ import annotations

import threading
from typing import Hashable, Iterable

__all__ = ["WaitSet"]


class _Waiter:
    __slots__ = ("event", "party", "woken_by")

    def __init__(self, party: Hashable) -> None:
        self.event = threading.Event()
        self.party = party
        #: the keys whose change woke this waiter (it holds their wake-ups until it passes them on)
        self.woken_by: set[Hashable] = set()


class WaitSet:
    """Versions and waiters per key (any hashable: ``("partition", topic, p)``, ``("group", g)``).
    Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._versions: dict[Hashable, int] = {}
        #: key → party → waiters in arrival order (a dict keeps insertion order)
        self._waiters: dict[Hashable, dict[Hashable, dict[_Waiter, None]]] = {}

    def versions(self, keys: Iterable[Hashable]) -> dict[Hashable, int]:
        """The current version of each key (0 for a key never bumped): take them before looking
        at the state, then pass them to :meth:`wait`."""
        with self._lock:
            return {k: self._versions.get(k, 0) for k in keys}

    def bump(self, key: Hashable) -> None:
        """``key`` changed: bump its version and wake, in each party waiting on it, the waiter
        that has waited longest (and is not woken yet)."""
        with self._lock:
            self._versions[key] = self._versions.get(key, 0) + 1
            parties = self._waiters.get(key)
            if parties:
                for waiters in parties.values():
                    self._wake_first(key, waiters)

    @staticmethod
    def _wake_first(key: Hashable, waiters: dict[_Waiter, None]) -> bool:
        for w in waiters:
            if not w.event.is_set():
                w.woken_by.add(key)
                w.event.set()
                return True
        return False

    def pass_on(self, keys: Iterable[Hashable], party: Hashable) -> None:
        """A woken waiter of ``party`` is done and leaves records (or never tried): wake the next
        waiter of the party on each of ``keys``."""
        with self._lock:
            for key in keys:
                waiters = self._waiters.get(key, {}).get(party)
                if waiters:
                    self._wake_first(key, waiters)

    def wait(self, seen: dict[Hashable, int], timeout_s: float, party: Hashable = None) -> set[Hashable] | bool:
        """Block until one of the keys of ``seen`` (key → version from :meth:`versions`) moves past
        its version, or ``timeout_s`` passes. Returns the keys whose change woke this waiter — it
        holds their wake-ups and must :meth:`pass_on` them if it leaves records or does not try —
        ``True`` when a version had already moved before it slept (nothing to pass on), or an empty
        set after the timeout."""
        w = _Waiter(party)
        with self._lock:
            if any(self._versions.get(k, 0) != v for k, v in seen.items()):
                return True
            for k in seen:
                self._waiters.setdefault(k, {}).setdefault(party, {})[w] = None
        try:
            w.event.wait(max(0.0, timeout_s))
        finally:
            with self._lock:
                for k in seen:
                    parties = self._waiters.get(k)
                    if parties is None:
                        continue
                    waiters = parties.get(party)
                    if waiters is not None:
                        waiters.pop(w, None)
                        if not waiters:
                            del parties[party]
                    if not parties:
                        del self._waiters[k]
        return set(w.woken_by)
