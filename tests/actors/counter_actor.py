"""A tiny event-sourced actor for testing the base classes and the JournalActor.

Importable by the Thespian admin process (multiproc bases need that)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from actors.base import EventSourcedActor, PersistError
from actors.messages import Configure, Configured, Failure, _Msg
from events import domain_event, new_event
from store.event_log import AppendRequest


@domain_event("test.CounterAdded")
@dataclass(frozen=True, slots=True)
class CounterAdded:
    amount: int


class Add(_Msg):
    amount: int
    expected_version: int | None = None


class Added(_Msg):
    total: int
    version: int


class CounterActor(EventSourcedActor):
    """Keeps a running total in stream ``counter:<name>``; recovers by replay on Configure."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.total = 0
        self.version = 0
        self.stream = ""

    def receiveMsg_Configure(self, msg: Configure, sender: Any) -> None:
        self.attach_event_log(msg.config, msg.journal)
        elog = self.event_log
        self.stream = f"counter:{msg.name}"
        for rec in elog.read_stream(self.stream):
            self.total += rec.decode().amount
            self.version = rec.stream_version
        self.send(sender, Configured(msg.name, elog.last_position(), self.version))

    def receiveMsg_Add(self, msg: Add, sender: Any) -> None:
        if msg.amount < 0:
            self.send(sender, Failure("INVALID_REQUEST", "negative amount"))  # decided: no event
            return
        expected = self.version if msg.expected_version is None else msg.expected_version
        event = CounterAdded(msg.amount)

        def then(result: Any) -> None:
            if isinstance(result, PersistError):
                self.send(sender, Failure(result.error, str(result)))
                return
            self.total += event.amount
            self.version = result[0].last_version
            self.send(sender, Added(self.total, self.version))

        self.persist([AppendRequest(self.stream, [new_event(event)], expected)], then)
