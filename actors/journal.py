"""The JournalActor: one writer that group-commits the appends of many actors.

Every event-sourced actor in the daemon sends :class:`AppendEvents` here instead of opening its own
write transaction, so actors never fight over SQLite's write lock. The journal buffers requests and
flushes them as one transaction (``EventLog.append_many``, per-request outcomes) when
``event.log.journal.max.batch`` requests are waiting or after ``event.log.journal.linger.ms``
(default 0: at the next turn of the actor's loop, which lets messages that already arrived join).
Each sender gets :class:`EventsAppended` or :class:`AppendFailed` for exactly its own request.
An append that names an earlier append of the same sender it was decided on
(``AppendEvents.after``, a pipelined actor) is refused when that one was refused.

It also serves the other actors' reads (:class:`ReadStream` → :class:`StreamPage`: snapshot and
stream pages at recovery) and snapshot saves (:class:`SaveSnapshot`), so in the daemon an RLMM or
consumer-group actor process holds no database connection — the memory of ~150 actor processes,
and as many PostgreSQL connections. Share-group actors use it on PostgreSQL; on SQLite they write
their streams themselves by default (``shoal.share.group.append.path``,
:meth:`actors.share.config.BrokerShareConfig.appends_through_journal`): the share path's latency.
"""

from __future__ import annotations

import collections
import logging
from datetime import timedelta
from typing import Any

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

__all__ = ["JournalActor"]

_FLUSH = "journal-flush"

log = logging.getLogger("shoal.journal")


class JournalActor(ShoalActor):
    """Group-commit writer of the event log. Configure with :class:`Configure` (``config`` holds
    ``event.log.url``); then send :class:`AppendEvents`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._log = None
        self._buffer: list[tuple[AppendEvents, Any]] = []
        #: sender (its address as text) → correlation ids of its refused appends (:meth:`_after_refused`)
        self._refused: dict[str, collections.deque[int]] = {}
        self._flush_scheduled = False
        self._max_batch = 256
        self._linger = timedelta(0)
        self.batches = 0

    def receiveMsg_Configure(self, msg: Configure, sender: Any) -> None:
        self._log = event_log_for(msg.config)
        self._max_batch = int(msg.config.get("event.log.journal.max.batch", 256))
        self._linger = timedelta(milliseconds=float(msg.config.get("event.log.journal.linger.ms", 0)))
        self.send(sender, Configured(msg.name or "journal", self._log.last_position()))

    def receiveMsg_AppendEvents(self, msg: AppendEvents, sender: Any) -> None:
        if self._log is None:
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
        if self._log is None:
            self.send(sender, AppendFailed(msg.correlation_id, "STORAGE", "journal not configured"))
            return
        self._flush()
        try:
            snap, events, last = self._log.read_page(msg.stream_id, msg.from_version, msg.limit, msg.with_snapshot)
        except Exception as exc:  # storage failure: the reader stays not ready and may retry
            log.exception("journal: reading %s failed", msg.stream_id)
            self.send(sender, AppendFailed(msg.correlation_id, "STORAGE", f"{type(exc).__name__}: {exc}"))
            return
        self.send(sender, StreamPage(msg.correlation_id, snap, events, last))

    def receiveMsg_SaveSnapshot(self, msg: SaveSnapshot, sender: Any) -> None:
        """Store an actor's snapshot (best effort, logged on failure: the events are the truth)."""
        if self._log is None:
            return
        try:
            self._log.save_snapshot(msg.stream_id, msg.stream_version, msg.state, msg.position)
        except Exception:
            log.exception("journal: snapshot of %s at version %s failed", msg.stream_id, msg.stream_version)

    def on_wakeup(self, payload: Any) -> None:
        if payload == _FLUSH:
            self._flush_scheduled = False
            self._flush()

    def on_exit(self) -> None:
        self._flush()

    def _flush(self) -> None:
        if not self._buffer or self._log is None:
            return
        batch, self._buffer = self._buffer, []
        # Flatten: each AppendEvents is atomic by itself, so group its requests and commit the
        # whole buffer in one transaction; a failing AppendEvents must not write any of its parts.
        outcomes = self._commit(batch)
        self.batches += 1
        for (msg, sender), outcome in zip(batch, outcomes):
            if isinstance(outcome, list):
                self.send(sender, EventsAppended(msg.correlation_id, outcome))
            else:
                self._note_refused(sender, msg.correlation_id)
                self.send(sender, outcome)

    def _commit(self, batch: list[tuple[AppendEvents, Any]]) -> list[list[AppendResult] | AppendFailed]:
        """One transaction for the whole buffer; if any message is refused (a version conflict, an
        empty append, or it was decided on a refused one: :meth:`_after_refused`), fall back to
        one transaction per message, in order, so each is answered alone."""
        assert self._log is not None
        if any(self._after_refused(msg, sender) for msg, sender in batch):
            return self._commit_each(batch)
        try:
            results = self._log.append_batch([r for msg, _ in batch for r in msg.requests])
        except (ConcurrencyError, ValueError):
            return self._commit_each(batch)
        except Exception as exc:  # storage failure: every message in the batch fails
            return [AppendFailed(msg.correlation_id, "STORAGE", f"{type(exc).__name__}: {exc}") for msg, _ in batch]
        it = iter(results)
        return [[next(it) for _ in msg.requests] for msg, _ in batch]

    def _commit_each(self, batch: list[tuple[AppendEvents, Any]]) -> list[list[AppendResult] | AppendFailed]:
        """One transaction per message, in order; a message decided on one refused before it
        (``AppendEvents.after``) is refused without being tried."""
        out: list[list[AppendResult] | AppendFailed] = []
        for msg, sender in batch:
            if self._after_refused(msg, sender):
                outcome: list[AppendResult] | AppendFailed = AppendFailed(
                    msg.correlation_id, "CONCURRENCY", f"the append it was decided on ({msg.after}) was refused")
            else:
                outcome = self._commit_one(msg)
            if not isinstance(outcome, list):
                self._note_refused(sender, msg.correlation_id)
            out.append(outcome)
        return out

    #: refused correlation ids remembered per sender (a pipelined append names the one before it)
    REFUSED_MEMORY = 64

    def _note_refused(self, sender: Any, correlation_id: int) -> None:
        ids = self._refused.setdefault(str(sender), collections.deque(maxlen=self.REFUSED_MEMORY))
        if correlation_id not in ids:
            ids.append(correlation_id)

    def _after_refused(self, msg: AppendEvents, sender: Any) -> bool:
        """Whether ``msg`` was decided on an append of the same sender that was refused."""
        return bool(msg.after) and msg.after in self._refused.get(str(sender), ())  # addresses need not hash

    def _commit_one(self, msg: AppendEvents) -> list[AppendResult] | AppendFailed:
        assert self._log is not None
        try:
            return self._log.append_batch(msg.requests)
        except ConcurrencyError as exc:
            return AppendFailed(msg.correlation_id, "CONCURRENCY", str(exc))
        except ValueError as exc:
            return AppendFailed(msg.correlation_id, "INVALID", str(exc))
        except Exception as exc:
            return AppendFailed(msg.correlation_id, "STORAGE", f"{type(exc).__name__}: {exc}")

    def receiveMsg_StatusRequest(self, msg: Any, sender: Any) -> None:
        from actors.messages import StatusReply

        self.send(sender, StatusReply("journal", self._log is not None, {"batches": self.batches, "buffered": len(self._buffer)}))

    def receiveMsg_Failure(self, msg: Failure, sender: Any) -> None:
        pass
