"""A small event-sourced child actor for the controller's supervision tests.

It lives in an importable module (``tests.controller.child_actor``) because the Thespian admin
process of ``multiprocTCPBase`` must import actor classes by path. ``CounterActor`` keeps one
counter per name in stream ``test-counter:<name>``: ``Increment(n)`` appends ``Incremented``
and replies ``Count``; on ``Configure`` it recovers by replaying its stream, so a restarted
incarnation has the same count. ``WhoAreYou`` returns its process id (for SIGKILL tests).
``FrontierCollector`` subscribes to a controller's since changes and reports what it saw.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from actors.base import EventSourcedActor, PersistError, ShoalActor
from actors.controller.messages import SinceAdvanced, SubscribeFrontiers
from actors.messages import Configure, Configured, Failure, NotReady, _Msg
from events.base import DomainEvent, domain_event
from events.codec import new_event
from store.event_log import AppendRequest


@domain_event("testchild.Incremented")
@dataclass(frozen=True, slots=True)
class Incremented(DomainEvent):
    """The counter grew by ``by``."""

    by: int


class Increment(_Msg):
    """Add ``by``; reply :class:`Count`."""

    by: int = 1


class GetCount(_Msg):
    """Reply :class:`Count`."""


class Count(_Msg):
    """The counter ``value`` of ``name`` and the ``pid`` of the process holding it."""

    name: str
    value: int
    pid: int


class CounterActor(EventSourcedActor):
    """Event-sourced counter (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.name = ""
        self.value = 0
        self.version = 0
        self.ready = False

    def receiveMsg_Configure(self, msg: Configure, sender: Any) -> None:
        self.name = msg.name
        self.attach_event_log(msg.config, msg.journal)
        elog = self.event_log
        events = elog.read_stream(self._stream())
        for rec in events:
            ev = rec.decode()
            assert isinstance(ev, Incremented)
            self.value += ev.by
            self.version = rec.stream_version
        self.ready = True
        self.send(sender, Configured(self.name, elog.last_position(), len(events)))

    def _stream(self) -> str:
        return f"test-counter:{self.name}"

    def receiveMsg_Increment(self, msg: Increment, sender: Any) -> None:
        if not self.ready:
            self.send(sender, NotReady(self.name))
            return
        ev = Incremented(msg.by)

        def then(results: Any) -> None:
            if isinstance(results, PersistError):
                self.send(sender, Failure("UNKNOWN_SERVER_ERROR", str(results)))
                return
            self.value += ev.by
            self.version = results[0].last_version
            self.send(sender, Count(self.name, self.value, os.getpid()))

        self.persist([AppendRequest(self._stream(), [new_event(ev)], self.version)], then)

    def receiveMsg_GetCount(self, msg: GetCount, sender: Any) -> None:
        if not self.ready:
            self.send(sender, NotReady(self.name))
            return
        self.send(sender, Count(self.name, self.value, os.getpid()))


class FailingActor(ShoalActor):
    """A child that refuses to configure (answers ``Failure``)."""

    def receiveMsg_Configure(self, msg: Configure, sender: Any) -> None:
        self.send(sender, Failure("UNKNOWN_SERVER_ERROR", "this child never starts"))


class Seen(_Msg):
    """What a :class:`FrontierCollector` saw: ``(collection_id, old, new)`` triples."""

    changes: list[tuple[str, Any, Any]]


class Watch(_Msg):
    """Tell a :class:`FrontierCollector` to subscribe to ``controller`` with ``prefix``."""

    controller: Any
    prefix: str = ""


class WhatDidYouSee(_Msg):
    """Reply :class:`Seen`."""


class FrontierCollector(ShoalActor):
    """Subscribes to since changes and records them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[tuple[str, Any, Any]] = []
        self.asker: Any = None

    def receiveMsg_Watch(self, msg: Watch, sender: Any) -> None:
        self.asker = sender
        self.send(msg.controller, SubscribeFrontiers(msg.prefix))

    def receiveMsg_FrontierReply(self, msg: Any, sender: Any) -> None:
        if self.asker is not None:
            self.send(self.asker, msg)
            self.asker = None

    def receiveMsg_SinceAdvanced(self, msg: SinceAdvanced, sender: Any) -> None:
        self.seen.append((msg.collection_id, msg.old, msg.new))

    def receiveMsg_WhatDidYouSee(self, msg: WhatDidYouSee, sender: Any) -> None:
        self.send(sender, Seen(list(self.seen)))


class CrashOnConfigure(ShoalActor):
    """A child whose ``Configure`` handler raises (Thespian retries once, then returns a
    ``PoisonMessage`` to the sender)."""

    def receiveMsg_Configure(self, msg: Configure, sender: Any) -> None:
        raise RuntimeError("cannot configure")
