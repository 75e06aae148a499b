"""Messages shared by every Shoal actor: configuration, the journal protocol, readiness.

Plain picklable classes (Thespian's multiproc bases pickle every message), with ``__slots__`` and
``__eq__`` for tests. Errors travel as a Kafka error-code name plus a message string, never as
exception objects (the receiving process may not have the class; elastic/rally does the same).
"""

from __future__ import annotations

from typing import Any, Sequence

from store.event_log import AppendRequest, AppendResult

__all__ = [
    "AppendEvents",
    "AppendFailed",
    "Configure",
    "Configured",
    "EventsAppended",
    "Failure",
    "NotReady",
    "Passivating",
    "ReadStream",
    "SaveSnapshot",
    "StatusRequest",
    "StreamPage",
    "StatusReply",
]


class _Msg:
    __slots__: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    def __repr__(self) -> str:
        # Bounded: Thespian formats every message it transmits (``TransmitIntent.identify`` for a
        # debug log line, even when debug logging is off), so a page of 1,000 events must not be
        # spelled out on each send.
        def short(v: Any) -> str:
            if isinstance(v, (list, tuple, dict, set, bytes, bytearray)) and len(v) > 4:
                return f"<{type(v).__name__} of {len(v)}>"
            text = repr(v)
            return text if len(text) <= 200 else text[:200] + "…"

        fields = ", ".join(f"{s}={short(getattr(self, s))}" for s in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def __getstate__(self) -> dict[str, Any]:
        return {s: getattr(self, s) for s in self.__slots__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)


class Configure(_Msg):
    """First message every Shoal actor gets from its creator.

    ``config``: a flat ``dict[str, str|int|bool]`` of Kafka/Shoal config keys (``event.log.url``,
    ``group.share.record.lock.duration.ms`` …); ``name``: the actor's logical name (group id,
    metadata partition …); ``journal``: the JournalActor's address, or ``None`` for direct appends;
    ``supervisor``: the actor to tell (:class:`Passivating`) before a self-initiated exit, or
    ``None``; ``timer``: for an actor hosted in-process (:mod:`actors.inproc`), the address that
    serves its wakeups (:meth:`actors.base.ShoalActor.schedule_wakeup`), else ``None`` (Thespian's
    ``wakeupAfter``). The actor answers :class:`Configured` once it has recovered (or ``Failure``).
    """

    __slots__ = ("config", "name", "journal", "supervisor", "timer")

    def __init__(self, config: dict[str, Any], name: str = "", journal: Any = None, supervisor: Any = None,
                 timer: Any = None) -> None:
        self.config = config
        self.name = name
        self.journal = journal
        self.supervisor = supervisor
        self.timer = timer


class Configured(_Msg):
    """Reply to :class:`Configure`: the actor has recovered ``events_replayed`` events up to
    global ``position`` and is ready."""

    __slots__ = ("name", "position", "events_replayed")

    def __init__(self, name: str, position: int = 0, events_replayed: int = 0) -> None:
        self.name = name
        self.position = position
        self.events_replayed = events_replayed


class NotReady(_Msg):
    """The actor has not finished recovery (COORDINATOR_LOAD_IN_PROGRESS on the wire)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class Passivating(_Msg):
    """From a child to the actor that configured it, just before it exits on its own to free
    memory (an idle share group): the parent forgets the child without restarting it, and the next
    lookup starts a fresh one that rehydrates from snapshot + tail. ``name`` is the child's name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class Failure(_Msg):
    """A request failed: ``error`` is a Kafka error name (``"INVALID_REQUEST"``…) or
    ``"UNKNOWN_SERVER_ERROR"``; ``message`` is for humans; ``request`` echoes the request's
    correlation data when there is any."""

    __slots__ = ("error", "message", "request")

    def __init__(self, error: str, message: str = "", request: Any = None) -> None:
        self.error = error
        self.message = message
        self.request = request


class AppendEvents(_Msg):
    """To the JournalActor: append ``requests`` atomically; reply :class:`EventsAppended` or
    :class:`AppendFailed` carrying ``correlation_id``. ``after``: the correlation id of the same
    sender's earlier append this one was decided on (a pipelined append, see
    :meth:`actors.base.EventSourcedActor.persist_pipelined`), ``0`` for none; when that one was
    refused, this one is refused too (CONCURRENCY) whatever its expected versions say."""

    __slots__ = ("correlation_id", "requests", "after")

    def __init__(self, correlation_id: int, requests: Sequence[AppendRequest], after: int = 0) -> None:
        self.correlation_id = correlation_id
        self.requests = list(requests)
        self.after = after


class EventsAppended(_Msg):
    """From the JournalActor: the append with ``correlation_id`` is durable at ``results``."""

    __slots__ = ("correlation_id", "results")

    def __init__(self, correlation_id: int, results: Sequence[AppendResult]) -> None:
        self.correlation_id = correlation_id
        self.results = list(results)


class AppendFailed(_Msg):
    """From the JournalActor: nothing of the append ``correlation_id`` was written.
    ``error`` is ``"CONCURRENCY"``, ``"INVALID"`` or ``"STORAGE"``; ``message`` says why."""

    __slots__ = ("correlation_id", "error", "message")

    def __init__(self, correlation_id: int, error: str, message: str) -> None:
        self.correlation_id = correlation_id
        self.error = error
        self.message = message


class StatusRequest(_Msg):
    """Ask an actor for its :class:`StatusReply`."""

    __slots__ = ()


class StatusReply(_Msg):
    """An actor's readiness and counters (``counts``: name → int)."""

    __slots__ = ("name", "ready", "counts")

    def __init__(self, name: str, ready: bool, counts: dict[str, int]) -> None:
        self.name = name
        self.ready = ready
        self.counts = counts


class ReadStream(_Msg):
    """To the JournalActor: read events of ``stream_id`` from ``from_version`` (inclusive), at
    most ``limit``; with ``with_snapshot`` first load the stream's latest snapshot and start after
    it when it is newer. Buffered appends are committed first, so the page sees every append the
    journal acknowledged. Reply :class:`StreamPage`, or :class:`AppendFailed` (``"STORAGE"``)."""

    __slots__ = ("correlation_id", "stream_id", "from_version", "limit", "with_snapshot")

    def __init__(self, correlation_id: int, stream_id: str, from_version: int, limit: int, with_snapshot: bool = False) -> None:
        self.correlation_id = correlation_id
        self.stream_id = stream_id
        self.from_version = from_version
        self.limit = limit
        self.with_snapshot = with_snapshot


class StreamPage(_Msg):
    """From the JournalActor: ``snapshot`` (a ``store.event_log.Snapshot`` or ``None``; only when
    asked), ``events`` (``RecordedEvent`` list in version order) and the log's ``last_position``."""

    __slots__ = ("correlation_id", "snapshot", "events", "last_position")

    def __init__(self, correlation_id: int, snapshot: Any, events: Sequence[Any], last_position: int) -> None:
        self.correlation_id = correlation_id
        self.snapshot = snapshot
        self.events = list(events)
        self.last_position = last_position


class SaveSnapshot(_Msg):
    """To the JournalActor: store ``state`` (bytes) as the snapshot of ``stream_id`` at
    ``stream_version`` (global ``position`` if known). No reply; a failure is logged there (a
    snapshot is only an optimisation)."""

    __slots__ = ("stream_id", "stream_version", "state", "position")

    def __init__(self, stream_id: str, stream_version: int, state: bytes, position: int = 0) -> None:
        self.stream_id = stream_id
        self.stream_version = stream_version
        self.state = state
        self.position = position
