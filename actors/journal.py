"""The JournalActor: one writer that group-commits the appends of many actors.

Every event-sourced actor process of the daemon sends :class:`AppendEvents` here instead of
opening its own write transaction, so those processes do not fight over SQLite's write lock (the
listener process, which hosts the share groups, has one writer of its own: the
:class:`JournalWriter`). The journal buffers requests and
flushes them as one transaction (``EventLog.append_many``, per-request outcomes) when
``event.log.journal.max.batch`` requests are waiting or after ``event.log.journal.linger.ms``
(default 0: at the next turn of the actor's loop, which lets messages that already arrived join).
Each sender gets :class:`EventsAppended` or :class:`AppendFailed` for exactly its own request.
An append that names an earlier append of the same sender it was decided on
(``AppendEvents.after``, a pipelined actor) is refused when that one was refused.

The commit rules live once, in :class:`GroupCommit`: the JournalActor (an actor process of the
daemon's Thespian system) and the :class:`JournalWriter` (a thread of the listener process that
commits for the actors hosted there, :mod:`actors.inproc`) both use it.

It also serves the other actors' reads (:class:`ReadStream` → :class:`StreamPage`: snapshot and
stream pages at recovery) and snapshot saves (:class:`SaveSnapshot`), so in the daemon an RLMM or
consumer-group actor process holds no database connection — the memory of ~150 actor processes,
and as many PostgreSQL connections. Share-group actors, hosted in the listener
process, group-commit through the :class:`JournalWriter` there (:mod:`actors.share.host`).
"""

from __future__ import annotations

import collections
import logging
import threading
from datetime import timedelta
from typing import Any, Callable

from actors.base import ShoalActor, event_log_for
from actors.messages import (
    AppendEvents,
    AppendFailed,
    Configure,
    Configured,
    EventsAppended,
    Failure,
    ReadStream,
    SaveSnapshot,
    StreamPage,
)
from store.event_log import AppendResult, ConcurrencyError

__all__ = ["GroupCommit", "JournalActor", "JournalWriter"]

_FLUSH = "journal-flush"

log = logging.getLogger("shoal.journal")


class GroupCommit:
    """The journal's commit rules over one :class:`store.event_log.EventLog` (``log``), for any
    number of writers (actors) identified by a hashable ``writer`` key.

    :meth:`commit` appends a batch of :class:`AppendEvents` in ONE transaction and answers each with
    its own outcome; when any of them is refused (a version conflict, an empty append, or it was
    decided on a refused append of the same writer: ``AppendEvents.after``) it falls back to one
    transaction per message, in order, so each is answered alone. :meth:`read` serves
    :class:`ReadStream` and :meth:`save` :class:`SaveSnapshot`. Not thread-safe: one caller."""

    #: refused correlation ids remembered per writer (a pipelined append names the one before it)
    REFUSED_MEMORY = 64

    def __init__(self, log: Any) -> None:
        self.log = log
        #: writer → correlation ids of its refused appends (:meth:`_after_refused`)
        self._refused: dict[Any, collections.deque[int]] = {}
        #: transactions committed by :meth:`commit` (one per batch, or one per message on fallback)
        self.batches = 0

    def commit(self, batch: list[tuple[AppendEvents, Any]]) -> list[list[AppendResult] | AppendFailed]:
        """``batch``: ``(AppendEvents, writer)`` pairs in arrival order → one outcome each: the
        list of :class:`AppendResult` of its requests, or :class:`AppendFailed` (``CONCURRENCY``,
        ``INVALID`` or ``STORAGE``; nothing of it was written)."""
        self.batches += 1
        if any(self._after_refused(msg, writer) for msg, writer in batch):
            return self._commit_each(batch)
        try:
            results = self.log.append_batch([r for msg, _ in batch for r in msg.requests])
        except (ConcurrencyError, ValueError):
            return self._commit_each(batch)
        except Exception as exc:  # storage failure: every message in the batch fails
            log.warning("journal: append of %d messages failed: %s", len(batch), exc)
            out: list[list[AppendResult] | AppendFailed] = []
            for msg, writer in batch:
                self._note_refused(writer, msg.correlation_id)
                out.append(AppendFailed(msg.correlation_id, "STORAGE", f"{type(exc).__name__}: {exc}"))
            return out
        it = iter(results)
        return [[next(it) for _ in msg.requests] for msg, _ in batch]

    def _commit_each(self, batch: list[tuple[AppendEvents, Any]]) -> list[list[AppendResult] | AppendFailed]:
        """One transaction per message, in order; a message decided on one refused before it
        (``AppendEvents.after``) is refused without being tried."""
        out: list[list[AppendResult] | AppendFailed] = []
        for msg, writer in batch:
            if self._after_refused(msg, writer):
                outcome: list[AppendResult] | AppendFailed = AppendFailed(
                    msg.correlation_id, "CONCURRENCY", f"the append it was decided on ({msg.after}) was refused")
            else:
                outcome = self._commit_one(msg)
            if not isinstance(outcome, list):
                self._note_refused(writer, msg.correlation_id)
            out.append(outcome)
        return out

    def _note_refused(self, writer: Any, correlation_id: int) -> None:
        ids = self._refused.setdefault(writer, collections.deque(maxlen=self.REFUSED_MEMORY))
        if correlation_id not in ids:
            ids.append(correlation_id)

    def _after_refused(self, msg: AppendEvents, writer: Any) -> bool:
        """Whether ``msg`` was decided on an append of the same writer that was refused."""
        return bool(msg.after) and msg.after in self._refused.get(writer, ())

    def _commit_one(self, msg: AppendEvents) -> list[AppendResult] | AppendFailed:
        try:
            return self.log.append_batch(msg.requests)
        except ConcurrencyError as exc:
            return AppendFailed(msg.correlation_id, "CONCURRENCY", str(exc))
        except ValueError as exc:
            return AppendFailed(msg.correlation_id, "INVALID", str(exc))
        except Exception as exc:
            return AppendFailed(msg.correlation_id, "STORAGE", f"{type(exc).__name__}: {exc}")

    def read(self, msg: ReadStream) -> StreamPage | AppendFailed:
        """Serve a recovery read: :class:`StreamPage`, or :class:`AppendFailed` (``STORAGE``)."""
        try:
            snap, events, last = self.log.read_page(msg.stream_id, msg.from_version, msg.limit, msg.with_snapshot)
        except Exception as exc:  # storage failure: the reader stays not ready and may retry
            log.exception("journal: reading %s failed", msg.stream_id)
            return AppendFailed(msg.correlation_id, "STORAGE", f"{type(exc).__name__}: {exc}")
        return StreamPage(msg.correlation_id, snap, events, last)

    def save(self, msg: SaveSnapshot) -> None:
        """Store a snapshot (best effort, logged on failure: the events are the truth)."""
        try:
            self.log.save_snapshot(msg.stream_id, msg.stream_version, msg.state, msg.position)
        except Exception:
            log.exception("journal: snapshot of %s at version %s failed", msg.stream_id, msg.stream_version)


class JournalActor(ShoalActor):
    """Group-commit writer of the event log. Configure with :class:`Configure` (``config`` holds
    ``event.log.url``); then send :class:`AppendEvents`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._core: GroupCommit | None = None
        self._buffer: list[tuple[AppendEvents, Any]] = []
        self._flush_scheduled = False
        self._max_batch = 256
        self._linger = timedelta(0)

    @property
    def batches(self) -> int:
        """Transactions committed so far."""
        return self._core.batches if self._core is not None else 0

    def receiveMsg_Configure(self, msg: Configure, sender: Any) -> None:
        elog = event_log_for(msg.config)
        self._core = GroupCommit(elog)
        self._max_batch = int(msg.config.get("event.log.journal.max.batch", 256))
        self._linger = timedelta(milliseconds=float(msg.config.get("event.log.journal.linger.ms", 0)))
        self.send(sender, Configured(msg.name or "journal", elog.last_position()))

    def receiveMsg_AppendEvents(self, msg: AppendEvents, sender: Any) -> None:
        if self._core is None:
            self.send(sender, AppendFailed(msg.correlation_id, "STORAGE", "journal not configured"))
            return
        self._buffer.append((msg, sender))
        if len(self._buffer) >= self._max_batch:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self.wakeupAfter(self._linger, payload=_FLUSH)

    def receiveMsg_ReadStream(self, msg: ReadStream, sender: Any) -> None:
        """Serve an actor's recovery read (actor processes never open the log themselves: no
        connection, page cache or SQLAlchemy state in each of them). Pending appends commit first."""
        if self._core is None:
            self.send(sender, AppendFailed(msg.correlation_id, "STORAGE", "journal not configured"))
            return
        self._flush()
        self.send(sender, self._core.read(msg))

    def receiveMsg_SaveSnapshot(self, msg: SaveSnapshot, sender: Any) -> None:
        """Store an actor's snapshot (best effort, logged on failure: the events are the truth)."""
        if self._core is not None:
            self._core.save(msg)

    def on_wakeup(self, payload: Any) -> None:
        if payload == _FLUSH:
            self._flush_scheduled = False
            self._flush()

    def on_exit(self) -> None:
        self._flush()

    def _flush(self) -> None:
        if not self._buffer or self._core is None:
            return
        batch, self._buffer = self._buffer, []
        # each AppendEvents is atomic by itself; the whole buffer commits in one transaction and
        # a refused AppendEvents writes none of its parts (GroupCommit). Senders are keyed by
        # their address text: Thespian addresses need not hash.
        outcomes = self._core.commit([(msg, str(sender)) for msg, sender in batch])
        for (msg, sender), outcome in zip(batch, outcomes):
            if isinstance(outcome, list):
                self.send(sender, EventsAppended(msg.correlation_id, outcome))
            else:
                self.send(sender, outcome)

    def receiveMsg_StatusRequest(self, msg: Any, sender: Any) -> None:
        from actors.messages import StatusReply

        self.send(sender, StatusReply("journal", self._core is not None, {"batches": self.batches, "buffered": len(self._buffer)}))

    def receiveMsg_Failure(self, msg: Failure, sender: Any) -> None:
        pass


class JournalWriter:
    """The journal as a thread of this process: group-commits the appends of the actors hosted
    in-process (:mod:`actors.inproc`) while they go on deciding, so an fsync never blocks the
    actors, and the appends that arrive during one commit go into the next as one transaction
    (Akka's ``persistAsync`` with a batching journal).

    ``submit(msg, reply_to)`` queues :class:`AppendEvents`, :class:`ReadStream` or
    :class:`SaveSnapshot` from any thread. The writer thread commits every queued append in arrival
    order (at most ``max_batch`` per transaction, :class:`GroupCommit`), serves reads after the
    appends queued before them (a page sees every append the journal acknowledged) and hands each
    outcome to ``deliver(reply_to, reply)`` — :class:`EventsAppended`, :class:`AppendFailed` or
    :class:`StreamPage` — on the writer thread. ``writer_key(reply_to)`` keys the refused-append
    memory (default: the address text). :meth:`close` commits what is queued and stops."""

    def __init__(self, log: Any, deliver: Callable[[Any, Any], None], max_batch: int = 256,
                 writer_key: Callable[[Any], Any] = str, name: str = "shoal-journal") -> None:
        self._core = GroupCommit(log)
        self._deliver = deliver
        self._max_batch = max(1, int(max_batch))
        self._key = writer_key
        self._queue: collections.deque[tuple[Any, Any]] = collections.deque()
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def batches(self) -> int:
        """Transactions committed so far."""
        return self._core.batches

    def submit(self, msg: Any, reply_to: Any) -> None:
        """Queue ``msg`` (AppendEvents, ReadStream or SaveSnapshot); the reply goes to
        ``deliver(reply_to, …)``. After :meth:`close` an append or read is refused at once
        (``AppendFailed`` STORAGE) and a snapshot dropped."""
        with self._cond:
            if not self._closed:
                self._queue.append((msg, reply_to))
                self._cond.notify()
                return
        if isinstance(msg, (AppendEvents, ReadStream)):
            self._deliver(reply_to, AppendFailed(msg.correlation_id, "STORAGE", "the journal is closed"))

    def close(self, timeout_s: float = 10.0) -> None:
        """Commit what is queued, then stop the thread (waits up to ``timeout_s``)."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                items = list(self._queue)
                self._queue.clear()
            try:
                self._serve(items)
            except Exception:  # pragma: no cover - a bug must not stop the journal
                log.exception("journal writer: serving %d requests failed", len(items))

    def _serve(self, items: list[tuple[Any, Any]]) -> None:
        """Serve ``items`` in arrival order: runs of appends as group commits (``max_batch`` each),
        reads and snapshots in between (after the appends before them)."""
        run: list[tuple[AppendEvents, Any]] = []

        def flush() -> None:
            if not run:
                return
            outcomes = self._core.commit([(msg, self._key(to)) for msg, to in run])
            for (msg, to), outcome in zip(run, outcomes):
                self._deliver(to, EventsAppended(msg.correlation_id, outcome) if isinstance(outcome, list) else outcome)
            run.clear()

        for msg, to in items:
            if isinstance(msg, AppendEvents):
                run.append((msg, to))
                if len(run) >= self._max_batch:
                    flush()
                continue
            flush()
            if isinstance(msg, ReadStream):
                self._deliver(to, self._core.read(msg))
            elif isinstance(msg, SaveSnapshot):
                self._core.save(msg)
            else:
                log.warning("journal writer: cannot serve %s", type(msg).__name__)
        flush()
