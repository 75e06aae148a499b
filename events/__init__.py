"""Shoal's events: the envelope, domain-event registration and the log codec.

Domain modules (``events.share``, ``events.rlmm``, ``events.controller``) declare their events as
frozen dataclasses decorated with :func:`domain_event`; the event log stores them as JSON through
:mod:`events.codec`.
"""

from events.base import (
    DomainEvent,
    EventEnvelope,
    NewEvent,
    RecordedEvent,
    UnknownEventType,
    domain_event,
    event_class,
    registered_event_types,
)
from events.codec import (
    CorruptEventError,
    decode_event,
    encode_event,
    new_event,
    register_upcaster,
)

__all__ = [
    "CorruptEventError",
    "DomainEvent",
    "EventEnvelope",
    "NewEvent",
    "RecordedEvent",
    "UnknownEventType",
    "decode_event",
    "domain_event",
    "encode_event",
    "event_class",
    "new_event",
    "register_upcaster",
    "registered_event_types",
]
