"""The typed base actors every Shoal actor derives from.

``ShoalActor`` (after elastic/rally's ``BaseActor``): one ``receiveMsg_<Type>`` per message type,
explicit handling of Thespian's system messages (``ActorExitRequest``, ``ChildActorExited``,
``PoisonMessage``, ``DeadEnvelope``) and of unknown messages, which are logged and answered with a
``Failure`` instead of crashing the actor.

``EventSourcedActor`` adds the persistence step of *receive → decide → append → evolve → reply*:
:meth:`EventSourcedActor.persist` appends the decided events either directly to the event log
(``journal=None``: simple base, tests, a single writer) or through the :class:`JournalActor`, which
group-commits the appends of many actors in one transaction. While a journal append is in flight
the actor stashes every other message and replays them afterwards, as Akka's ``PersistentActor``
does, so commands are decided against durable state only. A subclass may let a run of consecutive
stashed commands be decided together and persisted as one append (group commit:
:meth:`EventSourcedActor.batchable` / :meth:`EventSourcedActor.receive_batch`).
"""

from __future__ import annotations

import gc
import itertools
import logging
import os
from datetime import timedelta
from typing import Any, Callable, Sequence

from thespian.actors import (
    ActorExitRequest,
    ActorTypeDispatcher,
    ChildActorExited,
    DeadEnvelope,
    PoisonMessage,
    WakeupMessage,
)

from actors.inproc import ScheduleWakeup, hosted_in_process
from actors.messages import AppendEvents, AppendFailed, EventsAppended, Failure, ReadStream, SaveSnapshot, StreamPage
from store.event_log import AppendRequest, AppendResult, ConcurrencyError, EventLog, open_event_log

__all__ = ["EventSourcedActor", "PersistError", "ShoalActor", "event_log_for", "freeze_inherited_heap"]

log = logging.getLogger("shoal.actors")

#: URL → the EventLog of this process. Thespian forks actor processes from their parent actor, so a
#: child finds its parent's entries here: it keeps the engine (cheaper than a new one) but must not
#: use the parent's pooled connections (SQLite forbids carrying a connection across ``fork``).
_EVENT_LOGS: dict[str, EventLog] = {}
#: URL → the process id that owns the pool of ``_EVENT_LOGS[url]``
_EVENT_LOG_PIDS: dict[str, int] = {}
_FROZEN_PID: int | None = None


def event_log_for(config: dict[str, Any]) -> EventLog:
    """The process-wide :class:`EventLog` for ``config['event.log.url']`` (opened once per process
    and URL; ``event.log.sqlite.synchronous`` applies, and with
    ``event.log.sqlite.checkpoint.interval.ms`` > 0 appends never checkpoint the WAL themselves:
    the daemon does, in the background). Raises ``KeyError`` without a URL.

    An EventLog inherited from the parent process is made fork-safe first
    (:meth:`store.event_log.EventLog.after_fork`: new pool, parent's connections left open)."""
    url = str(config["event.log.url"])
    pid = os.getpid()
    elog = _EVENT_LOGS.get(url)
    if elog is None:
        background = int(config.get("event.log.sqlite.checkpoint.interval.ms", "0") or 0) > 0
        elog = open_event_log(url, synchronous=str(config.get("event.log.sqlite.synchronous", "FULL")),
                              wal_autocheckpoint=0 if background else None)
        _EVENT_LOGS[url] = elog
    elif _EVENT_LOG_PIDS.get(url, pid) != pid and hasattr(elog, "after_fork"):
        elog.after_fork()
    _EVENT_LOG_PIDS[url] = pid
    return elog


def freeze_inherited_heap() -> bool:
    """Move every object this process holds now into the collector's permanent generation
    (``gc.freeze``), once per process; returns whether it froze now.

    Thespian's multiproc bases fork each actor process from its parent actor, so the child starts
    with the parent's heap shared copy-on-write. A full collection in the child would write to
    every inherited object's GC header and so copy every inherited heap page (measured: a share
    group actor grew from ~8 MB to ~32 MB private memory after its first full collection). Frozen
    objects are never scanned; the actor's own new objects are collected as usual. The cost is
    that inherited garbage is never freed, which is the parent's, already counted there.

    Actors hosted in-process (:mod:`actors.inproc`) share the listener's heap, which is not
    inherited garbage: nothing is frozen for them (returns ``False``)."""
    global _FROZEN_PID
    if hosted_in_process():
        return False
    pid = os.getpid()
    if _FROZEN_PID == pid:
        return False
    _FROZEN_PID = pid
    gc.freeze()
    return True


class PersistError(RuntimeError):
    """An append was refused: ``error`` is ``"CONCURRENCY"``, ``"INVALID"`` or ``"STORAGE"``."""

    def __init__(self, error: str, message: str) -> None:
        self.error = error
        super().__init__(f"{error}: {message}")


class ShoalActor(ActorTypeDispatcher):
    """Base actor: logs and survives system and unknown messages.

    Subclasses define ``receiveMsg_<Type>(self, msg, sender)`` handlers and may override
    :meth:`on_child_exited` and :meth:`on_exit`.

    Constructing the first actor of a process freezes the heap it inherited
    (:func:`freeze_inherited_heap`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        freeze_inherited_heap()
        super().__init__(*args, **kwargs)

    def receiveMsg_ActorExitRequest(self, msg: ActorExitRequest, sender: Any) -> None:
        log.debug("%s: exit requested", type(self).__name__)
        self.on_exit()

    def receiveMsg_ChildActorExited(self, msg: ChildActorExited, sender: Any) -> None:
        self.on_child_exited(msg.childAddress)

    def receiveMsg_PoisonMessage(self, msg: PoisonMessage, sender: Any) -> None:
        log.warning("%s: a message it sent failed twice in %s: %r (%s)", type(self).__name__, sender, msg.poisonMessage, msg.details)
        self.on_poison(msg, sender)

    def receiveMsg_DeadEnvelope(self, msg: DeadEnvelope, sender: Any) -> None:
        log.info("%s: dead letter to %s: %r", type(self).__name__, msg.deadAddress, msg.deadMessage)

    def receiveMsg_WakeupMessage(self, msg: WakeupMessage, sender: Any) -> None:
        self.on_wakeup(msg.payload)

    def receiveUnrecognizedMessage(self, msg: Any, sender: Any) -> None:
        log.warning("%s: unrecognized message from %s: %r", type(self).__name__, sender, msg)
        if sender is not None and sender != self.myAddress and not isinstance(msg, (Failure, PoisonMessage)):
            self.send(sender, Failure("INVALID_REQUEST", f"{type(self).__name__} does not handle {type(msg).__name__}"))

    # hooks --------------------------------------------------------------------------------
    def on_exit(self) -> None:
        """Called on ``ActorExitRequest``; release resources here (the exit cannot be refused)."""

    def on_child_exited(self, child: Any) -> None:
        """Called when a child actor exited (``ChildActorExited``)."""

    def on_poison(self, msg: PoisonMessage, sender: Any) -> None:
        """Called when a message this actor sent failed twice in its target."""

    def on_wakeup(self, payload: Any) -> None:
        """Called for each ``wakeupAfter`` timer with its payload (timers cannot be cancelled:
        ignore stale ones)."""

    #: the address serving this actor's wakeups when it is hosted in-process (``Configure.timer``)
    _timer_service: Any = None

    def schedule_wakeup(self, delay: timedelta, payload: Any = None) -> None:
        """``wakeupAfter(delay, payload)``, through the in-process host's timer when the actor was
        configured with one (:class:`actors.inproc.ScheduleWakeup`: one heap for every hosted
        actor, instead of ``simpleSystemBase``'s scan of every pending wakeup on every message).
        Either way :meth:`on_wakeup` gets ``payload``; neither can be cancelled."""
        if self._timer_service is None:
            self.wakeupAfter(delay, payload=payload)
        else:
            self.send(self._timer_service, ScheduleWakeup(max(0, int(delay.total_seconds() * 1000)), payload))


class EventSourcedActor(ShoalActor):
    """A ShoalActor that persists decisions as events before it replies.

    Call :meth:`attach_event_log` when configured. Then in a handler::

        events = decide(state, command, now_ms)
        self.persist([AppendRequest(stream, [new_event(e) for e in events], expected)],
                     lambda results: self._applied(events, results, sender))

    ``then`` receives the list of :class:`AppendResult` (or a :class:`PersistError`) once the
    events are durable. With the direct log it runs before ``persist`` returns.

    Reads go the same way: :meth:`read_events` (recovery pages, with the snapshot) and
    :meth:`store_snapshot` use the journal when there is one, so the actor's process never opens
    the log; :attr:`event_log` opens it on first use for actors that read it directly.
    """

    _event_log: EventLog | None = None
    _log_config: dict[str, Any] | None = None
    _journal: Any = None

    def attach_event_log(self, config: dict[str, Any], journal: Any = None) -> None:
        """Use the event log of ``config`` and the JournalActor at ``journal`` (``None``: append
        and read directly). Nothing is opened here: :attr:`event_log` opens the process's log on
        first use (never, for an actor that reads and writes through the journal only)."""
        self._log_config = dict(config)
        self._event_log = None
        self._journal = journal

    @property
    def event_log(self) -> EventLog:
        """The process's :class:`EventLog` (opened on first use). Raises ``RuntimeError`` before
        :meth:`attach_event_log`."""
        if self._event_log is None:
            if self._log_config is None:
                raise RuntimeError(f"{type(self).__name__} has no event log yet (not configured)")
            self._event_log = event_log_for(self._log_config)
        return self._event_log

    def read_events(
        self,
        stream_id: str,
        from_version: int,
        limit: int,
        then: Callable[[StreamPage | PersistError], None],
        with_snapshot: bool = False,
    ) -> None:
        """Read up to ``limit`` events of ``stream_id`` from ``from_version`` (inclusive) — after
        the latest snapshot when ``with_snapshot`` and it is newer — and call ``then`` with a
        :class:`StreamPage` (``snapshot``, ``events``, ``last_position``) or a
        :class:`PersistError` (``"STORAGE"``). Through the journal (messages meanwhile are stashed,
        as for :meth:`persist`) or, without one, directly before returning."""
        if self._journal is None:
            try:
                page = StreamPage(0, *self.event_log.read_page(stream_id, from_version, limit, with_snapshot))
            except Exception as exc:  # storage down
                log.exception("reading %s failed", stream_id)
                then(PersistError("STORAGE", f"{type(exc).__name__}: {exc}"))
                return
            then(page)
            return
        corr = self._await(then)
        self.send(self._journal, ReadStream(corr, stream_id, from_version, limit, with_snapshot))

    def store_snapshot(self, stream_id: str, stream_version: int, state: bytes, position: int = 0) -> None:
        """Save ``state`` as the snapshot of ``stream_id`` at ``stream_version``: through the
        journal (asynchronous, failures logged there) or directly (raises on failure)."""
        if self._journal is None:
            self.event_log.save_snapshot(stream_id, stream_version, state, position)
        else:
            self.send(self._journal, SaveSnapshot(stream_id, stream_version, bytes(state), position))

    def _await(self, then: Callable[..., None]) -> int:
        """Register ``then`` for the journal's reply; returns its correlation id."""
        self._init_pending()
        corr = next(self._ids)
        self._pending[corr] = then
        return corr

    def _init_pending(self) -> None:
        """Create the bookkeeping of appends and reads in flight (on first use)."""
        if not hasattr(self, "_pending"):
            self._pending: dict[int, Callable[..., None]] = {}
            self._pipelined: dict[int, Callable[..., None]] = {}
            self._stash: list[tuple[Any, Any]] = []
            self._ids = itertools.count(1)

    def persist(
        self, requests: Sequence[AppendRequest], then: Callable[[list[AppendResult] | PersistError], None]
    ) -> None:
        """Append ``requests`` atomically (all streams or none) and call ``then`` with the results
        or a :class:`PersistError`. Messages arriving meanwhile are stashed (journal mode)."""
        if self._journal is None:
            try:
                results = self.event_log.append_batch(list(requests))
            except ConcurrencyError as exc:
                then(PersistError("CONCURRENCY", str(exc)))
                return
            except ValueError as exc:
                then(PersistError("INVALID", str(exc)))
                return
            except Exception as exc:  # the store itself failed (disk full, connection lost)
                log.exception("append failed")
                then(PersistError("STORAGE", f"{type(exc).__name__}: {exc}"))
                return
            then(results)
            return
        corr = self._await(then)
        self.send(self._journal, AppendEvents(corr, list(requests)))

    def persist_pipelined(
        self, requests: Sequence[AppendRequest], then: Callable[[list[AppendResult] | PersistError], None]
    ) -> None:
        """Like :meth:`persist`, but messages arriving meanwhile are NOT stashed: the actor goes on
        deciding while the append travels (Akka's ``persistAsync``). For an actor that evolves its
        state as soon as it decides and holds each reply until the appends issued before it are
        durable (:class:`actors.share.actor.ShareGroupActor`). Appends are sent to the journal in
        issue order, and the journal commits and answers them in that order; each names the append
        in flight before it (``AppendEvents.after``), and the journal refuses an append whose
        predecessor it refused, so no decision built on a lost one can become durable (its exact
        expected version alone would not do: another writer may have appended just as many
        events).

        ``then`` gets the list of :class:`AppendResult` or a :class:`PersistError`, at once in
        direct mode (no journal), else when the journal answers."""
        if self._journal is None:
            self.persist(requests, then)
            return
        self._init_pending()
        corr = next(self._ids)
        # the newest append still in flight: this one was decided on its outcome
        after = max(self._pipelined) if self._pipelined else 0
        self._pipelined[corr] = then
        self.send(self._journal, AppendEvents(corr, list(requests), after))

    #: the longest run of stashed messages handed to :meth:`receive_batch` at once
    MAX_BATCH = 500

    def batchable(self, msg: Any) -> bool:
        """Whether ``msg``, stashed while an append or read was in flight, may be handled together
        with the batchable messages stashed right after it, by one :meth:`receive_batch` call.

        The group-commit hook: a subclass returns ``True`` for commands whose decisions it can
        make one after another on the current state and persist in ONE append (e.g. the consumer
        group's OffsetCommit). Only runs of consecutive stashed messages are batched, so arrival
        order is kept: a non-batchable message ends the run and is replayed alone after it.
        Default: ``False`` (every stashed message is replayed alone, each waiting for the append
        of the one before it)."""
        return False

    def receive_batch(self, batch: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
        """Handle ``batch``, a run of 2 to :attr:`MAX_BATCH` consecutive stashed ``(message,
        sender)`` pairs (in arrival order) for which :meth:`batchable` is true, as one step:
        decide each, persist all their events with one :meth:`persist`, reply to each sender once
        durable. Called after the append in flight completed, on the state it left.

        Returns the tail of ``batch`` it did not handle (``[]`` normally): a subclass stops early
        when a decision's effect on later decisions is only applied once durable; the tail goes
        back to the front of the stash and is replayed (batched again) after this append.
        Subclasses that make :meth:`batchable` true must override it; the default raises
        ``NotImplementedError``."""
        raise NotImplementedError(f"{type(self).__name__}.batchable() is true but receive_batch() is not defined")

    def _replay_stash(self) -> None:
        """Replay stashed messages in arrival order until one starts a new append or read: a run
        of two or more consecutive :meth:`batchable` messages goes to :meth:`receive_batch`."""
        while not self._pending and self._stash:
            run = 0
            while run < min(len(self._stash), self.MAX_BATCH) and self.batchable(self._stash[run][0]):
                run += 1
            if run >= 2:
                batch = self._stash[:run]
                del self._stash[:run]
                rest = self.receive_batch(batch)
                if len(rest) >= len(batch):  # no progress: replay the first alone (never loop)
                    rest = list(rest)
                    self._stash[:0] = rest[1:]
                    super().receiveMessage(*rest[0])
                    continue
                if rest:
                    self._stash[:0] = rest
                continue
            stashed, stashed_sender = self._stash.pop(0)
            super().receiveMessage(stashed, stashed_sender)

    def receiveMessage(self, msg: Any, sender: Any) -> None:  # noqa: N802 (Thespian's name)
        pending = getattr(self, "_pending", None)
        if isinstance(msg, (EventsAppended, AppendFailed)) and msg.correlation_id in getattr(self, "_pipelined", ()):
            then = self._pipelined.pop(msg.correlation_id)
            then(PersistError(msg.error, msg.message) if isinstance(msg, AppendFailed) else msg.results)
            self._replay_stash()
            return
        if isinstance(msg, (EventsAppended, AppendFailed, StreamPage)) and pending is not None:
            then = pending.pop(msg.correlation_id, None)
            if then is not None:
                if isinstance(msg, AppendFailed):
                    then(PersistError(msg.error, msg.message))
                else:
                    then(msg.results if isinstance(msg, EventsAppended) else msg)
            self._replay_stash()
            return
        if pending and not isinstance(msg, (ActorExitRequest, ChildActorExited, PoisonMessage, DeadEnvelope)):
            self._stash.append((msg, sender))
            return
        super().receiveMessage(msg, sender)
