"""The share groups of this node, hosted in the listener process (KIP-932's group coordinator and
share-partition leaders, with Kafka's one-thread-per-shard shape).

Every share group is still one :class:`actors.share.actor.ShareGroupActor`, deciding its requests
one at a time and appending each decision before it answers. They run in an
:class:`actors.inproc.InProcessActorSystem` (Thespian's ``simpleSystemBase`` in the listener
process, run under one lock by the connection threads that ask it and by its host thread), not
one process each:

* a ShareFetch or ShareAcknowledge costs no pickled TCP hop (1.5–3 ms each way on a loaded 2-core
  machine, measured with Thespian 4.0.1; the in-process hand-off is ~0.1 ms);
* a group costs its state, not a process (5–6 MB of copied-on-write pages per actor process,
  measured in issue 14's first stop);
* the appends of every group go through one :class:`actors.journal.JournalWriter` thread, which
  group-commits the decisions made while the previous commit runs — the actors keep deciding
  meanwhile (pipelined persistence, :meth:`ShareGroupActor._commit`), and each reply still leaves
  only once its events are durable.

:class:`ShareCoordinatorActor` is the groups' parent in that system (Kafka's share coordinator
shard holds many groups the same way): it starts a group's actor on demand, configures it (journal,
timer, supervisor), publishes its address once it has recovered, and retires it on passivation
(a handshake, so no request is ever routed to an actor that has exited) or on DeleteGroups.

:class:`ShareGroupHost` is what the wire uses: :meth:`ShareGroupHost.ask` routes a request to a
group's actor by group id through the caller thread's endpoint; a group that is not running answers
:class:`GroupNotRunning` and the caller starts it with :meth:`ShareGroupHost.start_group` (after
the controller admitted it: ``group.share.max.groups``). A group's census and its type stay with
the controller; its placement on a node (cluster) with the wire.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable

from thespian.actors import ActorExitRequest, ActorTypeDispatcher, ChildActorExited

from actors.base import event_log_for
from actors.inproc import Forward, InProcessActorSystem
from actors.journal import JournalWriter
from actors.messages import AppendEvents, Configure, Configured, Failure, Passivating, ReadStream, SaveSnapshot
from actors.share.config import BrokerShareConfig
from actors.share.messages import Passivate, RecordsFreed

__all__ = [
    "GroupNotRunning",
    "ShareCoordinatorActor",
    "ShareGroupHost",
    "ShareGroupStarted",
    "ShareGroupStopped",
    "StartShareGroup",
    "StopShareGroup",
]

log = logging.getLogger("shoal.share.host")


# ------------------------------------------------------------------------------ messages

@dataclass(frozen=True, slots=True)
class StartShareGroup:
    """To the coordinator: start (or find) ``group_id``'s actor. Reply :class:`ShareGroupStarted`
    once it has recovered, or ``Failure`` (its recovery failed)."""

    group_id: str


@dataclass(frozen=True, slots=True)
class ShareGroupStarted:
    """The group's actor runs and has recovered; requests routed to ``group_id`` now reach it."""

    group_id: str


@dataclass(frozen=True, slots=True)
class StopShareGroup:
    """To the coordinator: stop ``group_id``'s actor (DeleteGroups). Reply :class:`ShareGroupStopped`
    once it has exited (at once when it was not running)."""

    group_id: str


@dataclass(frozen=True, slots=True)
class ShareGroupStopped:
    """Reply to :class:`StopShareGroup`."""

    group_id: str


@dataclass(frozen=True, slots=True)
class GroupNotRunning:
    """The answer to a request routed to a group whose actor is not running (never started,
    passivated, stopped): start it and send again."""

    group_id: str


@dataclass(frozen=True, slots=True)
class _Route:
    """Host-internal: an endpoint sends ``msg`` to ``group_id``'s actor, or answers itself
    :class:`GroupNotRunning`."""

    group_id: str
    msg: Any


@dataclass(frozen=True, slots=True)
class _Setup:
    """Host-internal: the coordinator's configuration and the objects it shares with the host
    thread (``routes``: group id → address of a recovered actor, read by the endpoints;
    ``on_freed(group_id, partitions)``: called in the system (holding its turn) for each :class:`RecordsFreed`)."""

    config: dict
    journal: Any
    timer: Any
    routes: dict
    on_freed: Callable[[str, tuple[tuple[str, int], ...]], None]


@dataclass(frozen=True, slots=True)
class _StopAll:
    """Host-internal: exit every group's actor (each saves its snapshot), then answer."""


@dataclass
class _Child:
    group_id: str
    address: Any
    ready: bool = False
    stopping: bool = False
    waiters: list = field(default_factory=list)
    #: lookups that arrived while the actor was stopping: a fresh actor is started once it exited
    restart_waiters: list = field(default_factory=list)
    stop_waiters: list = field(default_factory=list)


# ------------------------------------------------------------------------------ the actors

class ShareCoordinatorActor(ActorTypeDispatcher):
    """The parent of this node's share-group actors in the in-process system (see module doc).
    Thin: it keeps the children's lifecycle and the routes; every decision is the groups'."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._config: dict = {}
        self._journal: Any = None
        self._timer: Any = None
        self._routes: dict[str, Any] = {}
        self._children: dict[str, _Child] = {}
        self._stop_all_waiter: Any = None
        self._on_freed: Callable[[str], None] = lambda _g: None
        self.passivations = 0

    def receiveMsg__Setup(self, msg: _Setup, sender: Any) -> None:
        self._config, self._journal, self._timer, self._routes = dict(msg.config), msg.journal, msg.timer, msg.routes
        self._on_freed = msg.on_freed
        self.send(sender, Configured("share-coordinator"))

    def receiveMsg_RecordsFreed(self, msg: RecordsFreed, sender: Any) -> None:
        """A child freed records: wake the ShareFetches of the group waiting in the purgatory."""
        try:
            self._on_freed(msg.group_id, msg.partitions)
        except Exception:  # a listener's bug must not stop the coordinator
            log.exception("share coordinator: waking the fetches of %s failed", msg.group_id)

    def receiveMsg_StartShareGroup(self, msg: StartShareGroup, sender: Any) -> None:
        if self._stop_all_waiter is not None:  # the node is stopping: no new group actor
            self.send(sender, Failure("COORDINATOR_NOT_AVAILABLE", "the share coordinator is stopping"))
            return
        child = self._children.get(msg.group_id)
        if child is None:
            child = self._start(msg.group_id)
        if child.stopping:
            child.restart_waiters.append(sender)
        elif child.ready:
            self.send(sender, ShareGroupStarted(msg.group_id))
        else:
            child.waiters.append(sender)

    def _start(self, group_id: str) -> _Child:
        from actors.share.actor import ShareGroupActor

        child = _Child(group_id, self.createActor(ShareGroupActor))
        self._children[group_id] = child
        self.send(child.address, Configure(self._config, group_id, self._journal, self.myAddress, self._timer))
        return child

    def _by_address(self, address: Any) -> _Child | None:
        return next((c for c in self._children.values() if c.address == address), None)

    def receiveMsg_Configured(self, msg: Configured, sender: Any) -> None:
        child = self._by_address(sender)
        if child is None or child.stopping:
            return
        child.ready = True
        self._routes[child.group_id] = child.address
        waiters, child.waiters = child.waiters, []
        for w in waiters:
            self.send(w, ShareGroupStarted(child.group_id))

    def receiveMsg_Failure(self, msg: Failure, sender: Any) -> None:
        """A child refused its ``Configure`` (bad config, the log unreadable): fail its lookups and
        stop it (the next lookup starts a fresh one)."""
        child = self._by_address(sender)
        if child is None or child.ready:
            return
        log.error("share group %s failed to start: %s %s", child.group_id, msg.error, msg.message)
        waiters, child.waiters = child.waiters, []
        for w in waiters:
            self.send(w, Failure(msg.error, f"share group {child.group_id!r} failed to start: {msg.message}"))
        self._retire(child)

    def receiveMsg_Passivating(self, msg: Passivating, sender: Any) -> None:
        """An idle child asks to passivate: stop routing to it, then let it go (it saves its
        snapshot and exits; a later lookup starts a fresh actor that rehydrates)."""
        child = self._by_address(sender)
        if child is None or child.stopping:
            return
        self.passivations += 1
        self._retire(child)

    def _retire(self, child: _Child, message: Any = None) -> None:
        child.stopping = True
        if self._routes.get(child.group_id) == child.address:
            del self._routes[child.group_id]
        self.send(child.address, message if message is not None else Passivate(child.group_id))

    def receiveMsg_StopShareGroup(self, msg: StopShareGroup, sender: Any) -> None:
        child = self._children.get(msg.group_id)
        if child is None:
            self.send(sender, ShareGroupStopped(msg.group_id))
            return
        child.stop_waiters.append(sender)
        if not child.stopping:
            self._retire(child, ActorExitRequest())

    def receiveMsg_ChildActorExited(self, msg: ChildActorExited, sender: Any) -> None:
        child = self._by_address(msg.childAddress)
        if child is None:
            return
        del self._children[child.group_id]
        if self._routes.get(child.group_id) == child.address:
            del self._routes[child.group_id]
        for w in child.stop_waiters:
            self.send(w, ShareGroupStopped(child.group_id))
        for w in child.waiters:  # exited before it recovered
            self.send(w, Failure("COORDINATOR_NOT_AVAILABLE", f"share group {child.group_id!r} exited while starting"))
        if child.restart_waiters and self._stop_all_waiter is None:
            fresh = self._start(child.group_id)
            fresh.waiters.extend(child.restart_waiters)
        else:
            for w in child.restart_waiters:
                self.send(w, Failure("COORDINATOR_NOT_AVAILABLE", "the share coordinator is stopping"))
        if self._stop_all_waiter is not None and not self._children:
            self.send(self._stop_all_waiter, ShareGroupStopped("*"))
            self._stop_all_waiter = None

    def receiveMsg__StopAll(self, msg: _StopAll, sender: Any) -> None:
        if not self._children:
            self.send(sender, ShareGroupStopped("*"))
            return
        self._stop_all_waiter = sender
        for child in list(self._children.values()):
            if not child.stopping:
                self._retire(child, ActorExitRequest())

    def receiveMsg_str(self, msg: str, sender: Any) -> None:
        if msg == "status":
            self.send(sender, {"groups": len(self._children), "routed": len(self._routes), "passivations": self.passivations})

    def receiveUnrecognizedMessage(self, msg: Any, sender: Any) -> None:
        log.warning("share coordinator: unrecognized message %r from %s", msg, sender)


class _JournalEndpoint(ActorTypeDispatcher):
    """The in-process journal's address: hands :class:`AppendEvents`, :class:`ReadStream` and
    :class:`SaveSnapshot` to the :class:`JournalWriter` thread with the sender to answer."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._writer: JournalWriter | None = None

    def receiveMsg__JournalBind(self, msg: "_JournalBind", sender: Any) -> None:
        self._writer = msg.writer

    def receiveMsg_AppendEvents(self, msg: AppendEvents, sender: Any) -> None:
        self._submit(msg, sender)

    def receiveMsg_ReadStream(self, msg: ReadStream, sender: Any) -> None:
        self._submit(msg, sender)

    def receiveMsg_SaveSnapshot(self, msg: SaveSnapshot, sender: Any) -> None:
        self._submit(msg, sender)

    def _submit(self, msg: Any, sender: Any) -> None:
        if self._writer is None:
            log.error("in-process journal: not bound; %s dropped", type(msg).__name__)
            return
        self._writer.submit(msg, sender)


@dataclass(frozen=True, slots=True)
class _JournalBind:
    writer: JournalWriter


# ------------------------------------------------------------------------------ the facade

class ShareGroupHost:
    """This node's share groups in this process (see module doc). ``config``: the broker config
    (``event.log.url`` and the share keys); ``timeout_s``: the default ask timeout.

    Thread-safe: the listener's threads call :meth:`ask`, :meth:`start_group`,
    :meth:`stop_group` and :meth:`running`. :meth:`close` saves every group's snapshot and stops."""

    def __init__(self, config: dict, timeout_s: float = 30.0) -> None:
        self.config = dict(config)
        self.timeout_s = timeout_s
        BrokerShareConfig.from_config(self.config)  # fail at start on a bad share config (INVALID_CONFIG)
        self.system = InProcessActorSystem("shoal-share-groups").start()
        url = str(self.config.get("event.log.url", ""))
        self._direct = not BrokerShareConfig.from_config(self.config).appends_through_journal(url)
        self.journal_writer: JournalWriter | None = None
        journal = None
        if not self._direct:
            system = self.system
            self.journal_writer = JournalWriter(
                # the writer runs at most one job of the system per reply it hands over: its
                # own thread commits, it must not become the system's executor
                event_log_for(self.config), lambda to, reply: system.tell(to, reply, budget=1),
                int(self.config.get("event.log.journal.max.batch", 256)), name="shoal-share-journal")
            journal = self.system.create(_JournalEndpoint)
            self.system.tell(journal, _JournalBind(self.journal_writer))
        #: group id → address of its recovered actor; written by the coordinator in the system,
        #: read there by the endpoints (:meth:`ask`) and by :meth:`running` (a dict read)
        self._routes: dict[str, Any] = {}
        #: called in the system (holding its turn) with a group id whose records were freed and the
        #: ``(topic id, partition)`` pairs they were freed in (:class:`RecordsFreed`)
        self.on_records_freed: Callable[[str, tuple[tuple[str, int], ...]], None] = lambda _g, _p: None
        self.coordinator = self.system.create(ShareCoordinatorActor)
        setup = _Setup(self.config, journal, self.system.timer, self._routes, lambda g, parts: self.on_records_freed(g, parts))
        r = self.system.ask(self.coordinator, setup, timeout_s)
        if not isinstance(r, Configured):
            raise RuntimeError(f"the share coordinator did not start: {r!r}")

    def running(self, group: str) -> bool:
        """Whether ``group``'s actor runs and has recovered (it would answer without a start)."""
        return group in self._routes

    def running_groups(self) -> list[str]:
        """The ids of the groups whose actors run."""
        return list(self._routes)

    def ask(self, group: str, msg: Any, timeout_s: float | None = None) -> Any:
        """Send ``msg`` to ``group``'s actor and return its reply; :class:`GroupNotRunning` when
        it does not run (start it with :meth:`start_group`, then ask again); ``None`` when no
        reply came within ``timeout_s`` (default :attr:`timeout_s`)."""
        routes = self._routes

        def route(asys: Any, endpoint: Any) -> None:
            addr = routes.get(group)
            asys.tell(endpoint, Forward(addr, msg) if addr is not None else Forward(endpoint, GroupNotRunning(group)))

        return self.system.ask_via(route, self.timeout_s if timeout_s is None else timeout_s)

    def start_group(self, group: str, timeout_s: float | None = None) -> str | None:
        """Start ``group``'s actor (recovering its stream) unless it runs. Returns ``None`` once it
        runs, else an error name (COORDINATOR_NOT_AVAILABLE: no answer in time; the actor's
        ``Failure``)."""
        if group in self._routes:
            return None
        r = self.system.ask(self.coordinator, StartShareGroup(group), self.timeout_s if timeout_s is None else timeout_s)
        if isinstance(r, ShareGroupStarted):
            return None
        if isinstance(r, Failure):
            return r.error
        return "COORDINATOR_NOT_AVAILABLE"

    def stop_group(self, group: str, timeout_s: float | None = None) -> bool:
        """Stop ``group``'s actor (DeleteGroups); ``True`` once it exited (or was not running)."""
        r = self.system.ask(self.coordinator, StopShareGroup(group), self.timeout_s if timeout_s is None else timeout_s)
        return isinstance(r, ShareGroupStopped)

    def status(self) -> dict:
        """Counters: running groups, passivations, asks, timeouts, journal transactions."""
        r = self.system.ask(self.coordinator, "status", 5)
        out = dict(r) if isinstance(r, dict) else {}
        out.update(asks=self.system.asks, ask_timeouts=self.system.timeouts)
        if self.journal_writer is not None:
            out["journal_batches"] = self.journal_writer.batches
        return out

    def release_thread(self) -> None:
        """The calling (connection) thread ends: its endpoint goes back to the pool."""
        self.system.release_thread()

    def close(self, timeout_s: float = 10.0) -> None:
        """Exit every group's actor (each saves its snapshot once its appends are durable), commit
        what the journal holds, and stop the host thread."""
        if not self.system.running:
            return
        self.system.ask(self.coordinator, _StopAll(), timeout_s)
        if self.journal_writer is not None:
            self.journal_writer.close(timeout_s)
        self.system.stop(timeout_s=timeout_s)
