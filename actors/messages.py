"""Messages shared by every Shoal actor: configuration, the journal protocol, readiness.

``msgspec.Struct``s (Thespian's multiproc bases pickle every message; fields in order, equality by
fields). Errors travel as a Kafka error-code name plus a message string, never as
exception objects (the receiving process may not have the class; elastic/rally does the same).
"""

from __future__ import annotations

from typing import Any, Sequence

import msgspec

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


class _Msg(msgspec.Struct):
    """The base of every actor message: a ``msgspec.Struct`` (fields in declaration order, equality
    by fields, picklable: Thespian's multiproc bases pickle every message), with a bounded repr."""

    def __repr__(self) -> str:
        # Bounded: Thespian formats every message it transmits (``TransmitIntent.identify`` for a
        # debug log line, even when debug logging is off), so a page of 1,000 events must not be
        # spelled out on each send.
        def short(v: Any) -> str:
            if isinstance(v, (list, tuple, dict, set, bytes, bytearray)) and len(v) > 4:
                return f"<{type(v).__name__} of {len(v)}>"
            text = repr(v)
            return text if len(text) <= 200 else text[:200] + "…"

        fields = ", ".join(f"{s}={short(getattr(self, s))}" for s in self.__struct_fields__)
        return f"{type(self).__name__}({fields})"


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

    config: dict[str, Any]
    name: str = ""
    journal: Any = None
    supervisor: Any = None
    timer: Any = None


class Configured(_Msg):
    """Reply to :class:`Configure`: the actor has recovered ``events_replayed`` events up to
    global ``position`` and is ready."""

    name: str
    position: int = 0
    events_replayed: int = 0


class NotReady(_Msg):
    """The actor has not finished recovery (COORDINATOR_LOAD_IN_PROGRESS on the wire)."""

    name: str


class Passivating(_Msg):
    """From a child to the actor that configured it, just before it exits on its own to free
    memory (an idle share group): the parent forgets the child without restarting it, and the next
    lookup starts a fresh one that rehydrates from snapshot + tail. ``name`` is the child's name."""

    name: str


class Failure(_Msg):
    """A request failed: ``error`` is a Kafka error name (``"INVALID_REQUEST"``…) or
    ``"UNKNOWN_SERVER_ERROR"``; ``message`` is for humans; ``request`` echoes the request's
    correlation data when there is any."""

    error: str
    message: str = ""
    request: Any = None


class AppendEvents(_Msg):
    """To the JournalActor: append ``requests`` atomically; reply :class:`EventsAppended` or
    :class:`AppendFailed` carrying ``correlation_id``. ``after``: the correlation id of the same
    sender's earlier append this one was decided on (a pipelined append, see
    :meth:`actors.base.EventSourcedActor.persist_pipelined`), ``0`` for none; when that one was
    refused, this one is refused too (CONCURRENCY) whatever its expected versions say."""

    correlation_id: int
    requests: Sequence[AppendRequest]
    after: int = 0

    def __post_init__(self) -> None:
        self.requests = list(self.requests)


class EventsAppended(_Msg):
    """From the JournalActor: the append with ``correlation_id`` is durable at ``results``."""

    correlation_id: int
    results: Sequence[AppendResult]

    def __post_init__(self) -> None:
        self.results = list(self.results)


class AppendFailed(_Msg):
    """From the JournalActor: nothing of the append ``correlation_id`` was written.
    ``error`` is ``"CONCURRENCY"``, ``"INVALID"`` or ``"STORAGE"``; ``message`` says why."""

    correlation_id: int
    error: str
    message: str


class StatusRequest(_Msg):
    """Ask an actor for its :class:`StatusReply`."""


class StatusReply(_Msg):
    """An actor's readiness and counters (``counts``: name → int)."""

    name: str
    ready: bool
    counts: dict[str, int]


class ReadStream(_Msg):
    """To the JournalActor: read events of ``stream_id`` from ``from_version`` (inclusive), at
    most ``limit``; with ``with_snapshot`` first load the stream's latest snapshot and start after
    it when it is newer. Buffered appends are committed first, so the page sees every append the
    journal acknowledged. Reply :class:`StreamPage`, or :class:`AppendFailed` (``"STORAGE"``)."""

    correlation_id: int
    stream_id: str
    from_version: int
    limit: int
    with_snapshot: bool = False


class StreamPage(_Msg):
    """From the JournalActor: ``snapshot`` (a ``store.event_log.Snapshot`` or ``None``; only when
    asked), ``events`` (``RecordedEvent`` list in version order) and the log's ``last_position``."""

    correlation_id: int
    snapshot: Any
    events: Sequence[Any]
    last_position: int

    def __post_init__(self) -> None:
        self.events = list(self.events)


class SaveSnapshot(_Msg):
    """To the JournalActor: store ``state`` (bytes) as the snapshot of ``stream_id`` at
    ``stream_version`` (global ``position`` if known). No reply; a failure is logged there (a
    snapshot is only an optimisation)."""

    stream_id: str
    stream_version: int
    state: bytes
    position: int = 0

