"""The event envelope and the registry of domain-event types.

A *domain event* is a frozen dataclass that records one decision (``share.RecordsAcquired``,
``rlmm.SegmentMetadataAdded`` …). It is registered under a stable type name and a schema version
with :func:`domain_event`; the name, never the Python class path, is what the log stores, so
classes can move between modules without breaking old logs.

The *envelope* is what the event log stores around a domain event, following the usual event-store
shape (EventStoreDB, eventsourcing's ``StoredEvent``):

===================  =========================================================================
``event_id``         UUID chosen by the writer; the idempotency key of a retried append
``stream_id``        the stream the event belongs to (``share-group:<group>``, ``rlmm:<p>`` …)
``stream_version``   1-based, contiguous per stream: the optimistic-concurrency version
``position``         global, assigned by the log at commit; strictly increasing in commit order
                     but readers never assume it is contiguous
``event_type``       the registered type name
``schema_version``   the version of ``data``'s schema; older versions are upcast on read
``recorded_at_ms``   wall-clock milliseconds since the epoch when the log recorded it
``data``             the encoded domain event (JSON bytes)
===================  =========================================================================
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, TypeVar

__all__ = [
    "DomainEvent",
    "EventEnvelope",
    "NewEvent",
    "RecordedEvent",
    "UnknownEventType",
    "domain_event",
    "event_class",
    "registered_event_types",
]


class UnknownEventType(LookupError):
    """Raised when a stored ``event_type`` has no registered class (an event from a newer Shoal,
    or a typo). Carries the name in ``args[0]``."""


class DomainEvent:
    """Base of every domain event.

    Subclasses are frozen dataclasses (``@dataclass(frozen=True, slots=True)``) decorated with
    :func:`domain_event`, which fills in ``event_type`` and ``schema_version``. Field types must be
    ones the codec can encode: ``int``, ``str``, ``bool``, ``float``, ``bytes``, ``None``, tuples
    and lists of those, nested frozen dataclasses, and ``dict`` with ``str`` keys.
    """

    __slots__ = ()
    event_type: ClassVar[str]
    schema_version: ClassVar[int]


_REGISTRY: dict[str, type[DomainEvent]] = {}

E = TypeVar("E", bound=type)


def domain_event(event_type: str, schema_version: int = 1) -> Callable[[E], E]:
    """Class decorator registering a frozen dataclass as a domain event.

    Takes the stable type name (``"<domain>.<PastTenseVerb>"``, e.g. ``"share.RecordsAcquired"``)
    and the current schema version (≥ 1; bump it when the shape of the data changes and register
    an upcaster for the old version with :func:`events.codec.register_upcaster`).
    Returns the class unchanged apart from the two class attributes.
    Raises ``ValueError`` if the name is taken by another class, the version is < 1, or the class
    is not a frozen dataclass.
    """

    if schema_version < 1:
        raise ValueError(f"schema_version must be >= 1, got {schema_version}")

    def register(cls: E) -> E:
        if not dataclasses.is_dataclass(cls) or not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
            raise ValueError(f"{cls.__name__} must be a frozen dataclass to be a domain event")
        existing = _REGISTRY.get(event_type)
        if existing is not None and existing.__qualname__ != cls.__qualname__:
            raise ValueError(f"event type {event_type!r} is already registered by {existing.__qualname__}")
        cls.event_type = event_type  # type: ignore[attr-defined]
        cls.schema_version = schema_version  # type: ignore[attr-defined]
        _REGISTRY[event_type] = cls  # type: ignore[assignment]
        return cls

    return register


def event_class(event_type: str) -> type[DomainEvent]:
    """Return the class registered under ``event_type``; raises :class:`UnknownEventType`."""
    try:
        return _REGISTRY[event_type]
    except KeyError:
        raise UnknownEventType(event_type) from None


def registered_event_types() -> dict[str, type[DomainEvent]]:
    """A copy of the registry: type name → class."""
    return dict(_REGISTRY)


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An encoded event on its way into the log (the log assigns version, position and time).

    ``data`` is the codec's JSON bytes. Build one with :func:`events.codec.new_event`.
    """

    event_id: uuid.UUID
    event_type: str
    schema_version: int
    data: bytes


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """An event as the log stored it: the envelope with ``data`` still encoded (JSON bytes).

    ``position`` is the global commit-ordered position (an int ≥ 1, not necessarily contiguous);
    ``stream_version`` is 1-based and contiguous within ``stream_id``.
    Decode ``data`` with :func:`events.codec.decode_event` (or :meth:`decode`).
    """

    event_id: uuid.UUID
    stream_id: str
    stream_version: int
    position: int
    event_type: str
    schema_version: int
    recorded_at_ms: int
    data: bytes

    def decode(self) -> DomainEvent:
        """The domain event, upcast to the current schema version.

        Raises :class:`events.codec.CorruptEventError` naming this event's position when the
        stored bytes cannot be decoded.
        """
        from events.codec import decode_recorded

        return decode_recorded(self)


@dataclass(frozen=True, slots=True)
class EventEnvelope:
    """A decoded recorded event: the envelope fields with ``data`` as the domain event object."""

    event_id: uuid.UUID
    stream_id: str
    stream_version: int
    position: int
    event_type: str
    schema_version: int
    recorded_at_ms: int
    data: Any

    @classmethod
    def of(cls, recorded: RecordedEvent) -> "EventEnvelope":
        """Decode ``recorded``; raises :class:`events.codec.CorruptEventError` on bad bytes."""
        return cls(
            recorded.event_id,
            recorded.stream_id,
            recorded.stream_version,
            recorded.position,
            recorded.event_type,
            recorded.schema_version,
            recorded.recorded_at_ms,
            recorded.decode(),
        )
