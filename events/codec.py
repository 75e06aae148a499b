"""The log codec: domain events ⇄ JSON bytes (msgspec), with upcasters for old schema versions.

Encoding is ``msgspec.json`` over the frozen dataclass, so field names are the JSON keys and the
DuckDB and Spark projections can read the same payloads with their JSON functions.

Decoding a stored event whose ``schema_version`` is older than the registered class's runs the
chain of upcasters ``v → v+1 → … → current`` on the JSON object (a ``dict``) before converting it
to the class, in the manner of eventsourcing's upcasting and Marten's transformations.
"""

from __future__ import annotations

import uuid
from typing import Any, Callable

import msgspec

from events.base import DomainEvent, NewEvent, RecordedEvent, UnknownEventType, event_class

__all__ = [
    "CorruptEventError",
    "decode_event",
    "decode_recorded",
    "encode_event",
    "new_event",
    "register_upcaster",
]

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

_UPCASTERS: dict[tuple[str, int], Upcaster] = {}
_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder()


class CorruptEventError(ValueError):
    """A stored event could not be decoded.

    ``position`` (global log position, or ``None`` when not known), ``event_type`` and the
    underlying ``reason`` are attributes; the message names all three so a reader loop can log and
    skip or stop with a precise pointer into the log.
    """

    def __init__(self, position: int | None, event_type: str, reason: str) -> None:
        self.position = position
        self.event_type = event_type
        self.reason = reason
        super().__init__(f"corrupt event at position {position} ({event_type}): {reason}")


def register_upcaster(event_type: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Decorator: register ``fn(data: dict) -> dict`` that turns ``event_type``'s JSON object of
    schema ``from_version`` into ``from_version + 1``. Raises ``ValueError`` on a duplicate."""

    def register(fn: Upcaster) -> Upcaster:
        key = (event_type, from_version)
        if key in _UPCASTERS and _UPCASTERS[key] is not fn:
            raise ValueError(f"upcaster for {event_type} v{from_version} already registered")
        _UPCASTERS[key] = fn
        return fn

    return register


def encode_event(event: DomainEvent) -> bytes:
    """JSON bytes of a registered domain event (its dataclass fields, in declaration order)."""
    return _ENCODER.encode(event)


def new_event(event: DomainEvent, event_id: uuid.UUID | None = None) -> NewEvent:
    """Encode ``event`` for appending. ``event_id`` defaults to a fresh ``uuid4``; pass the same id
    when retrying an append so the log can recognise the retry (idempotent append)."""
    return NewEvent(
        event_id=event_id or uuid.uuid4(),
        event_type=type(event).event_type,
        schema_version=type(event).schema_version,
        data=encode_event(event),
    )


def decode_event(
    event_type: str, schema_version: int, data: bytes | str, position: int | None = None
) -> DomainEvent:
    """Decode stored JSON into the registered class, upcasting from ``schema_version``.

    Raises :class:`CorruptEventError` (naming ``position``) when the bytes are not valid JSON for
    the type, the type is unknown, the stored version is newer than the code's, or an upcaster in
    the chain is missing.
    """
    try:
        cls = event_class(event_type)
    except UnknownEventType:
        raise CorruptEventError(position, event_type, "unknown event type") from None
    current = cls.schema_version
    try:
        if schema_version == current:
            return msgspec.json.decode(data, type=cls)
        if schema_version > current:
            raise CorruptEventError(
                position, event_type, f"schema version {schema_version} is newer than this code's {current}"
            )
        obj = _DECODER.decode(data)
        for version in range(schema_version, current):
            upcaster = _UPCASTERS.get((event_type, version))
            if upcaster is None:
                raise CorruptEventError(position, event_type, f"no upcaster from schema version {version}")
            obj = upcaster(obj)
        return msgspec.convert(obj, type=cls)
    except CorruptEventError:
        raise
    except (msgspec.DecodeError, msgspec.ValidationError, TypeError, ValueError, KeyError) as exc:
        raise CorruptEventError(position, event_type, str(exc)) from exc


def decode_recorded(recorded: RecordedEvent) -> DomainEvent:
    """:func:`decode_event` for a :class:`RecordedEvent` (its position goes into any error)."""
    return decode_event(recorded.event_type, recorded.schema_version, recorded.data, recorded.position)
