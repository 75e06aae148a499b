"""``ShareGroupActor``: one Thespian actor per share group (KIP-932).

It owns the group's membership (:mod:`actors.share.membership`), its share-partitions
(:class:`actors.share.partition.SharePartition`) and its share sessions
(:mod:`actors.share.sessions`), and answers one message per Kafka request
(:mod:`actors.share.messages`). It is a thin shell around the pure deciders:

    receive → read the clock once (``now_ms``) → decide → evolve → append → reply once durable

Persistence is pipelined (:meth:`ShareGroupActor._commit`, Akka's ``persistAsync``): the decided
events evolve the state at once and their append is sent; the next request is decided on that
state while the append travels, and every reply is held until the appends issued before it are
durable. Appends carry exact expected versions, so a refused append refuses every later one; the
actor then fails the held replies and reloads the durable state. Through the JournalActor
(PostgreSQL, or ``shoal.share.group.append.path=journal``) the appends of requests that arrive
meanwhile are group-committed; directly (SQLite's default) each append is one commit in this
process and the pipeline never holds more than one.

Events go to the group's stream ``share-group:<group id>`` (:func:`events.share_group.stream_id_for`)
with the exact expected version, so two live actors for one group cannot both write.

Lifecycle
  * ``Configure(config, name=<group id>, journal)`` recovers from the latest snapshot plus the
    stream's tail and answers ``Configured``; until then every request gets ``NotReady``
    (COORDINATOR_LOAD_IN_PROGRESS on the wire) — fail closed.
  * Timers: acquisition-lock deadlines, member session deadlines and the idle deadline are served
    by one ``wakeupAfter`` for the earliest of them (a wakeup carries its due time; a wakeup that is
    not the one outstanding is stale and ignored). Everything due is also processed at the start
    of every request, so correctness does not depend on wakeup delivery.
  * Passivation: after ``shoal.share.group.passivate.ms`` without requests, with no open share
    session and no member (a passivated group's session timers do not run, so members that stopped
    heartbeating are fenced first), the actor saves a snapshot and exits (``ActorExitRequest`` to
    itself); the parent re-creates it and sends ``Configure`` before the next message.
  * A snapshot is saved every ``shoal.share.group.snapshot.every.events`` events and at passivation
    (versioned JSON of plain data, :meth:`ShareGroupState.dumps`, format :data:`SNAPSHOT_FORMAT`).
    Snapshots are caches: an unreadable snapshot (corrupt, unknown format) is ignored and the
    stream replayed from the start.
  * A member whose session times out is fenced; its share session is closed and the records it
    holds are released — all in ONE atomic append, so no crash leaves a fenced member holding
    records until their locks expire. A member that leaves (epoch -1) is fenced; if it still has a
    share session (Kafka keeps sessions apart from membership) its final ShareAcknowledge or
    ShareFetch (epoch -1) applies its last acknowledgements and releases the rest, otherwise the
    leave releases its records in the same append. Every release (leave, session
    timeout, FINAL share-session epoch) is Kafka 4.2's ``SharePartition.releaseAcquiredRecords``
    with ``DeliveryCountOps.DECREASE``: the records were acquired but not delivered, so their
    delivery count drops by one and the delivery-count limit does not archive them.
  * Share sessions are broker memory that follows the durable decisions: a session is removed
    when the ``ShareSessionClosed`` event that ends it has been appended.
  * Each message reads the clock once (``now_ms``) and hands it to the pure deciders.

Parent contract (the controller): create one ``ShareGroupActor`` per group on demand, send it
``Configure(config, name=<group id>, journal=<JournalActor or None>)`` first, then forward the
requests in order. On ``ChildActorExited`` forget the address; the next request for the group
re-creates it (Configure again, then the request). A request that reaches a passivating actor is
answered ``NotReady``: re-send it to the re-created actor.

Events per request: a ShareFetch appends at most one ``share.ShareFetchProcessed`` per
share-partition (its piggy-backed acknowledgements and its acquisition together,
``SharePartition.decide_share_fetch``) plus, rarely, ``SharePartitionInitialized`` /
``LogStartOffsetMoved`` / session audit events — all in ONE atomic append. The steady state of a
share consumer (acknowledge the last batch, acquire the next) is one event per round trip.
Record bytes never pass through the actor (see :mod:`actors.share.messages`).

Share sessions and session deadlines are broker memory, as in Kafka: they are not rebuilt on
recovery (clients re-open sessions with epoch 0; every member's session timer restarts at
``now + share.session.timeout.ms``).
"""

from __future__ import annotations

import collections
import logging
import os
import time
from datetime import timedelta
from typing import Any, Callable, Iterable

from thespian.actors import ActorExitRequest

from actors.base import EventSourcedActor, PersistError
from actors.messages import Configure, Configured, Failure, NotReady, Passivating, StatusReply, StatusRequest
from actors.share import messages as m
from actors.share.config import (
    BrokerShareConfig,
    InvalidConfig,
    effective_group_configs,
    validate_group_configs,
)
from actors.share.errors import ShareError
from actors.share.group_state import SNAPSHOT_FORMAT, ShareGroupState
from actors.share.membership import (
    HeartbeatDecision,
    ShareGroupHeartbeat,
    decide_heartbeat,
    decide_session_expiry,
    touch,
)
from actors.share.partition import SharePartition, validate_acknowledgement_batches
from actors.share.sessions import (
    SessionDecision,
    ShareSessions,
    decide_share_acknowledge,
    decide_share_fetch,
    next_epoch,
)
from events.base import DomainEvent
from events.codec import decode_recorded, new_event
from events.share import SHARE_PARTITION_EVENTS, ShareStateDeleted
from events.share_group import (
    GroupConfigAltered,
    MemberFenced,
    ShareGroupDeleted,
    ShareSessionClosed,
    ShareSessionOpened,
    TopicPartitions,
    stream_id_for,
)
from store.event_log import AppendRequest, AppendResult

__all__ = ["ShareGroupActor", "ShareGroupState", "SNAPSHOT_FORMAT"]

log = logging.getLogger("shoal.share.actor")

TP = tuple[str, int]


def _now_ms() -> int:
    """The wall clock in ms since the epoch: read once per message and passed to the deciders."""
    return time.time_ns() // 1_000_000


#: The longest single ``wakeupAfter`` the actor arms (ms); longer deadlines re-arm on waking.
MAX_WAKEUP_DELAY_MS = 3_600_000
#: How long a group whose reload (after a refused append) could not read the log waits before
#: trying again (ms).
RELOAD_RETRY_MS = 500

class ShareGroupActor(EventSourcedActor):
    """The actor of one share group (see the module doc). Create it, send ``Configure`` with the
    group id as ``name``, then the request messages of :mod:`actors.share.messages`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ready = False
        self._group_id = ""
        self._stream = ""
        self._version = 0
        self._snap_version = 0
        self._broker = BrokerShareConfig()
        self._state: ShareGroupState | None = None
        self._sessions = ShareSessions()
        self._timer_due: int | None = None
        self._last_activity_ms = 0
        self._passivated = False
        #: DeleteGroups deleted the whole group: requests get NotReady until the actor is stopped
        self._retired = False
        self._counts = {"events": 0, "appends": 0, "requests": 0, "replayed": 0, "wakeups": 0, "stale_wakeups": 0}
        #: the pipeline (:meth:`_commit`): appends issued and not yet durable (sequence numbers, in
        #: issue order), replies held until they are, and the generation bumped by a refused append
        self._issued = 0
        self._inflight: collections.deque[int] = collections.deque()
        self._held: collections.deque[tuple[int, Any, Any, Callable[[str, str], None] | None]] = collections.deque()
        self._pipeline_gen = 0
        self._durable_version = 0
        self._passivate_when_durable = False
        #: :class:`Passivating` was sent to the supervisor; its ``Passivate`` ends the actor
        self._passivation_requested = False

    # ------------------------------------------------------------------ lifecycle

    def receiveMsg_Configure(self, msg: Configure, sender: Any) -> None:
        """Recover (snapshot + tail) and answer ``Configured``; ``Failure(INVALID_CONFIG)`` on a bad
        broker config, ``Failure(COORDINATOR_LOAD_IN_PROGRESS)`` when the event log cannot be opened
        or read (the actor then stays not ready: every request gets ``NotReady``; send
        ``Configure`` again to retry)."""
        self._retired = False
        try:
            self._broker = BrokerShareConfig.from_config(msg.config)
        except InvalidConfig as exc:
            self.send(sender, Failure("INVALID_CONFIG", str(exc)))
            return
        self._ready = False  # (re-)configuring: fail closed until recovered
        self._reset_pipeline()
        self._supervisor = msg.supervisor  # told before a passivation exit, so it does not restart us
        self._timer_service = msg.timer  # in-process hosting: the host's timers
        self._group_id = msg.name
        self._stream = stream_id_for(msg.name)
        self._sessions = ShareSessions(self._broker.max_share_sessions)
        # shoal.share.group.append.path: direct appends on SQLite (no journal hop), see
        # BrokerShareConfig.appends_through_journal
        url = str(msg.config.get("event.log.url", ""))
        self.attach_event_log(msg.config, msg.journal if self._broker.appends_through_journal(url) else None)
        self._recovery_gen = getattr(self, "_recovery_gen", 0) + 1
        self._recover(self._recovery_gen, msg.name, sender)

    #: events per recovery page
    RECOVERY_PAGE = 1000

    def _recover(self, gen: int, name: str, configurer: Any) -> None:
        """Recover from the latest snapshot and the stream's tail, a page at a time through
        :meth:`read_events` (through the journal when appends go there: this process then opens no database), then
        become ready and answer ``Configured`` — or ``Failure(COORDINATOR_LOAD_IN_PROGRESS)`` when
        the log cannot be read or an event cannot be applied (the actor stays not ready); with
        ``configurer`` ``None`` (a reload after another writer's append) nobody is answered.
        Messages arriving meanwhile wait in the stash; a newer ``Configure`` (``gen``) supersedes."""
        acc = {"state": ShareGroupState(self._group_id, self._broker), "version": 0, "snap": None, "replayed": 0}

        def failed(text: str) -> None:
            log.error("share group %s: recovery failed: %s", name, text)
            if configurer is not None:
                self.send(configurer, Failure("COORDINATOR_LOAD_IN_PROGRESS", f"recovery failed: {text}"))
            else:  # a reload after a refused append: try again (requests meanwhile get NotReady)
                self.schedule_wakeup(timedelta(milliseconds=RELOAD_RETRY_MS), ("share-group-reload", gen))

        def on_page(page: Any, first: bool) -> None:
            if gen != self._recovery_gen:
                return  # a later Configure restarted recovery
            if isinstance(page, PersistError):
                failed(str(page))
                return
            if first and page.snapshot is not None:
                snap = page.snapshot
                try:
                    acc["state"] = ShareGroupState.loads(snap.state, self._group_id, self._broker)
                    acc["version"], acc["snap"] = snap.stream_version, snap
                except Exception:
                    log.warning("share group %s: unreadable snapshot at version %s, replaying from the start",
                                self._group_id, snap.stream_version, exc_info=True)
                    self.read_events(self._stream, 1, self.RECOVERY_PAGE, lambda p: on_page(p, False))
                    return
            try:
                for rec in page.events:
                    acc["state"].apply(decode_recorded(rec))
                    acc["version"] = rec.stream_version
                    acc["replayed"] += 1
            except Exception as exc:
                failed(f"{type(exc).__name__}: {exc}")
                return
            if len(page.events) == self.RECOVERY_PAGE:
                self.read_events(self._stream, acc["version"] + 1, self.RECOVERY_PAGE, lambda p: on_page(p, False))
                return
            self._recovered(acc["state"], acc["version"], acc["snap"], acc["replayed"])
            if configurer is not None:
                self.send(configurer, Configured(name, page.last_position, acc["replayed"]))

        self.read_events(self._stream, 1, self.RECOVERY_PAGE, lambda p: on_page(p, True), with_snapshot=True)

    def _recovered(self, state: ShareGroupState, version: int, snap: Any, replayed: int) -> None:
        now = _now_ms()
        self._state = state
        self._version = self._durable_version = version
        self._timer_due = None  # a wakeup dropped while not ready must not block re-arming
        self._snap_version = snap.stream_version if snap is not None else 0
        self._counts["replayed"] += replayed
        for mid in state.membership.members:
            touch(state.membership, mid, now, self._broker)
        self._ready = True
        self._last_activity_ms = now
        self._schedule(now)

    def on_exit(self) -> None:
        """``ActorExitRequest`` (not a passivation): save a snapshot when events were appended since
        the last one (best effort; the events are the truth); replies still held for appends in
        flight are answered ``NotReady`` (the client asks again; what those appends decided stays
        in the log: acquisitions come back when their locks expire)."""
        if self._ready and not self._passivated and self._state is not None and not self._inflight and self._version > self._snap_version:
            try:
                self._save_snapshot()
            except Exception:  # best effort: the events are the truth
                log.warning("share group %s: snapshot at exit failed", self._group_id, exc_info=True)
        if self._held:
            self._reset_pipeline()

    def receiveMsg_Passivate(self, msg: m.Passivate, sender: Any) -> None:
        """Save a snapshot and exit now (once the appends in flight are durable; at once when not
        ready — recovering after a refused append — without a snapshot): the parent's answer to
        :class:`Passivating`, or its memory pressure."""
        if self._inflight:
            self._passivate_when_durable = True
        else:
            self._passivate()

    def _request_passivation(self) -> None:
        """Idle: with a supervisor, ask it (:class:`Passivating`) and go on serving until it answers
        :class:`~actors.share.messages.Passivate` — it first stops routing requests here, so none
        reaches an actor that has exited (an in-process system drops messages to exited actors).
        Without a supervisor, passivate now."""
        if getattr(self, "_supervisor", None) is None:
            self._passivate()
        elif not self._passivation_requested:
            self._passivation_requested = True
            self.send(self._supervisor, Passivating(self._group_id))

    def _passivate(self) -> None:
        """Save a snapshot (best effort: the events are the truth, a missing snapshot only means a
        longer replay at rehydration) and exit."""
        durable = self._ready and self._state is not None and self._version == self._durable_version
        if durable and self._version > self._snap_version:
            try:
                self._save_snapshot()
            except Exception:
                log.warning("share group %s: snapshot at passivation failed", self._group_id, exc_info=True)
        self._passivated = True
        self._ready = False
        self.send(self.myAddress, ActorExitRequest())

    def _save_snapshot(self) -> None:
        """Save the state as the stream's snapshot, only when every append is durable (the
        snapshot must not get ahead of the log: the journal stores it at once, while an append in
        flight may still be refused)."""
        assert self._state is not None
        if self._version < 1 or self._inflight:
            return
        self.store_snapshot(self._stream, self._version, self._state.dumps())
        self._snap_version = self._version

    def receiveMsg_StatusRequest(self, msg: StatusRequest, sender: Any) -> None:
        """Answer ``StatusReply``: readiness and counters (events, appends, requests, members,
        partitions, sessions, wakeups, and ``in_flight_records``: records ACQUIRED now, over every
        share-partition — Kafka's ``SharePartition`` in-flight count)."""
        st = self._state
        counts = dict(self._counts)
        counts.update(
            stream_version=self._version,
            members=len(st.membership.members) if st else 0,
            partitions=len(st.partitions) if st else 0,
            in_flight_records=sum(sp.in_flight_count() for sp in st.partitions.values()) if st else 0,
            sessions=len(self._sessions.sessions),
            pid=os.getpid(),
        )
        self.send(sender, StatusReply(self._group_id, self._ready, counts))

    # ------------------------------------------------------------------ timers

    def on_wakeup(self, payload: Any) -> None:
        """The timer ``("share-group-timer", due_ms)``: ignored unless it is the one outstanding
        (stale wakeups are counted and dropped); otherwise read the clock once, process everything
        due (lock expiries, member session expiries) and passivate when idle, else re-arm."""
        if isinstance(payload, tuple) and len(payload) == 2 and payload[0] == "share-group-reload":
            if payload[1] == getattr(self, "_recovery_gen", 0) and not self._ready and self._state is not None:
                self._reload()
            return
        if not (isinstance(payload, tuple) and len(payload) == 2 and payload[0] == "share-group-timer"):
            return
        if not self._ready or payload[1] != self._timer_due:
            self._counts["stale_wakeups"] += 1
            return
        self._counts["wakeups"] += 1
        self._timer_due = None
        now = _now_ms()
        self._run_due(now, lambda: self._passivate_if_idle(now))

    def _idle(self, now: int) -> bool:
        """Passivation is allowed: no request for ``shoal.share.group.passivate.ms``, no open share
        session and no member whose session timer runs (a passivated group's timers do not fire,
        so a member that stopped heartbeating must be fenced first)."""
        assert self._state is not None
        return (now - self._last_activity_ms >= self._broker.passivate_ms and not self._inflight
                and not self._sessions.sessions and not self._state.membership.members)

    def _passivate_if_idle(self, now: int) -> None:
        if self._ready and self._idle(now):
            self._request_passivation()
        else:
            self._schedule(now)

    def _schedule(self, now: int) -> None:
        """Arm one wakeup for the earliest of: a lock deadline, a member session deadline, the
        idle (passivation) deadline."""
        if not self._ready or self._state is None:
            return
        dues: list[int] = []
        for sp in self._state.partitions.values():
            d = sp.next_lock_deadline_ms()
            if d is not None:
                dues.append(d)
        dues.extend(self._state.membership.deadlines.values())
        idle_due = self._last_activity_ms + self._broker.passivate_ms
        if not self._sessions.sessions and not self._state.membership.members:
            dues.append(idle_due)  # otherwise idleness is re-checked when a session/member goes
        if not dues:
            return
        due = min(dues)
        if self._timer_due is not None and self._timer_due <= due:
            return
        self._timer_due = due
        # Thespian's transports cannot sleep arbitrarily long (a year-long timer made every group
        # actor exit at start, seen in the daemon): wake at least hourly; an early wakeup finds
        # nothing due and re-arms.
        delay_ms = min(max(0, due - now), MAX_WAKEUP_DELAY_MS)
        self.schedule_wakeup(timedelta(milliseconds=delay_ms), ("share-group-timer", due))

    # ------------------------------------------------------------------ the persist / evolve step

    def _commit(self, events: list[DomainEvent], then: Callable[[], None], fail: Callable[[str, str], None]) -> None:
        """Persist ``events`` at the exact expected version, evolve the state with them and call
        ``then`` (which decides any next step on that state and replies through :meth:`_reply`);
        when the append is refused, call ``fail(error name, message)`` instead.

        Through the journal the step is pipelined (Akka's ``persistAsync`` with replies held
        back): the state is evolved NOW, the append is sent and ``then`` runs at once, so the next
        request is decided while the append travels and the journal group-commits the appends of
        requests that arrive meanwhile; every reply waits until the appends issued before it are
        durable, and a refused append fails the replies still held and reloads the durable state
        (:meth:`_pipeline_failed`). ``fail`` is then never called: the held replies carry their
        own failure answers.

        Directly (no journal, SQLite's default) the append is one commit in this process: it is
        made first, and the state evolves only once it is durable, so a refused append (a storage
        error) fails only this request and changes nothing (a version conflict, i.e. another
        writer, also reloads the stream)."""
        if not events:
            then()
            return
        assert self._state is not None
        req = AppendRequest(self._stream, [new_event(e) for e in events], self._version)
        if self._journal is None:
            self.persist([req], lambda results: self._durable(events, results, then, fail))
            return
        self._evolve(events)
        self._version += len(events)
        self._issued += 1
        seq, gen = self._issued, self._pipeline_gen
        self._inflight.append(seq)
        self.persist_pipelined([req], lambda results: self._appended(gen, seq, len(events), results))
        then()

    def _evolve(self, events: list[DomainEvent]) -> None:
        """Apply decided ``events`` to the state. Share sessions are broker memory that follows
        the decision (a fenced member's session is closed by its own ShareSessionClosed event).
        An event that fails to apply (a bug) leaves a state that is not the fold of the stream:
        the durable state is reloaded before anything else is decided, and the error raised."""
        assert self._state is not None
        watch = getattr(self, "_supervisor", None) is not None
        before = self._acquirability(events) if watch else {}
        try:
            for e in events:
                self._state.apply(e)
                if isinstance(e, ShareSessionClosed):
                    self._sessions.remove(e.member_id, e.node_id)
        except Exception:
            log.exception("share group %s: applying a decided event failed; reloading", self._group_id)
            self._reload()
            raise
        freed = self._freed_partitions(before) if watch else ()
        if freed:
            self.send(self._supervisor, m.RecordsFreed(self._group_id, freed))

    def _acquirability(self, events: list[DomainEvent]) -> dict[TP, tuple[int, bool]]:
        """For each share-partition the events touch: its next fetch offset and whether its
        in-flight window has room (:meth:`SharePartition.can_acquire_records`), before they apply."""
        assert self._state is not None
        out: dict[TP, tuple[int, bool]] = {}
        for e in events:
            if isinstance(e, SHARE_PARTITION_EVENTS):
                key = (e.topic_id, e.partition)  # type: ignore[attr-defined]
                sp = self._state.partitions.get(key)
                if key not in out and sp is not None:
                    out[key] = (sp.next_fetch_offset(), sp.can_acquire_records())
        return out

    def _freed_partitions(self, before: dict[TP, tuple[int, bool]]) -> tuple[TP, ...]:
        """The share-partitions whose records became acquirable without an append to the log
        (:class:`RecordsFreed`): a next fetch offset moved back (records released, locks expired)
        or a full in-flight window got room."""
        assert self._state is not None
        out = []
        for key, (nfo, could) in before.items():
            sp = self._state.partitions.get(key)
            if sp is not None and (sp.next_fetch_offset() < nfo or (not could and sp.can_acquire_records())):
                out.append(key)
        return tuple(out)

    def _durable(self, events: list[DomainEvent], results: list[AppendResult] | PersistError,
                 then: Callable[[], None], fail: Callable[[str, str], None]) -> None:
        """Direct mode: the outcome of the append of ``events`` (see :meth:`_commit`)."""
        if isinstance(results, PersistError):
            if results.error == "CONCURRENCY":
                # someone else wrote this group's stream: reload before answering anything else
                self._reload()
                fail("NOT_COORDINATOR", str(results))
            else:
                fail("UNKNOWN_SERVER_ERROR", str(results))
            return
        self._evolve(events)
        self._version = self._durable_version = results[0].last_version
        self._note_durable(len(events))
        then()

    def _note_durable(self, n_events: int) -> None:
        """Count an append of ``n_events`` events that became durable; save a snapshot when due
        and every append is durable."""
        self._counts["events"] += n_events
        self._counts["appends"] += 1
        if not self._inflight and self._version - self._snap_version >= self._broker.snapshot_every_events:
            try:
                self._save_snapshot()
            except Exception:
                log.warning("share group %s: snapshot failed", self._group_id, exc_info=True)

    def _appended(self, gen: int, seq: int, n_events: int, results: list[AppendResult] | PersistError) -> None:
        """The outcome of pipelined append ``seq`` of pipeline generation ``gen``: release the
        replies held behind it, or fail the pipeline. Outcomes of an older generation (appends
        that were in flight when an earlier one was refused: the journal refuses them too,
        ``AppendEvents.after``) are ignored."""
        if gen != self._pipeline_gen:
            return
        if isinstance(results, PersistError):
            self._pipeline_failed(results)
            return
        assert self._inflight and self._inflight[0] == seq, (self._inflight, seq)
        self._inflight.popleft()
        self._durable_version = results[0].last_version
        held = self._held
        while held and held[0][0] <= seq:
            _s, to, reply, _fail = held.popleft()
            self.send(to, reply)
        self._note_durable(n_events)
        if not self._inflight:
            if self._durable_version != self._version:  # cannot happen: one writer per stream
                log.error("share group %s: durable version %s != evolved version %s", self._group_id,
                          self._durable_version, self._version)
            if self._passivate_when_durable:
                self._passivate_when_durable = False
                self._passivate()

    def _pipeline_failed(self, err: PersistError) -> None:
        """An append was refused: nothing from it on is durable. Fail every held reply (its
        request's own failure answer: NOT_COORDINATOR after a version conflict — another writer
        appended to the stream —, UNKNOWN_SERVER_ERROR for a storage failure), start a new
        pipeline generation and reload the durable state (share sessions are broker memory:
        they are dropped, so clients re-open them, as after a restart)."""
        name = "NOT_COORDINATOR" if err.error == "CONCURRENCY" else "UNKNOWN_SERVER_ERROR"
        log.warning("share group %s: append refused (%s); reloading", self._group_id, err)
        exiting = self._passivate_when_durable  # the parent already stopped routing here
        self._reset_pipeline(name, str(err))
        if exiting:
            self._ready = False  # nothing evolved since the refused append is durable: no snapshot
            self._passivate()
            return
        self._reload()

    def _reset_pipeline(self, error: str | None = None, text: str = "") -> None:
        """Forget the appends in flight (their outcomes are ignored from now on) and answer every
        held reply with its request's failure ``error`` (``None``: ``NotReady``)."""
        self._pipeline_gen += 1
        self._passivate_when_durable = False
        held, self._held = self._held, collections.deque()
        self._inflight.clear()
        for _s, to, _reply, fail in held:
            if fail is not None and error is not None:
                fail(error, text)
            else:
                self.send(to, NotReady(self._group_id))

    def _reload(self) -> None:
        """Recover the durable state again (after a refused append); until it is back every
        request is stashed (the reads are in flight) or answered ``NotReady``. When the log cannot
        be read, retry after :data:`RELOAD_RETRY_MS`."""
        self._ready = False
        self._retired = False  # a refused ShareGroupDeleted: the group is still there
        self._sessions = ShareSessions(self._broker.max_share_sessions)
        self._recovery_gen = getattr(self, "_recovery_gen", 0) + 1
        self._recover(self._recovery_gen, self._group_id, None)

    def _reply(self, to: Any, reply: Any, fail: Callable[[str, str], None] | None = None) -> None:
        """Answer a request once every append issued so far is durable (at once when none is in
        flight): the answer may depend on any decision made before it. ``fail(error name,
        message)`` answers instead if one of those appends is refused (``None``: ``NotReady``,
        which the wire retries on the reloaded group)."""
        if self._inflight:
            self._held.append((self._issued, to, reply, fail))
        else:
            self.send(to, reply)

    def _chain(self, steps: list[Callable[[], list[DomainEvent]]], then: Callable[[], None],
               fail: Callable[[str, str], None]) -> None:
        """Decide and commit ``steps`` one after another (each decided on the state the previous
        one left), then call ``then``."""
        if not steps:
            then()
            return
        first, rest = steps[0], steps[1:]
        self._commit(first(), lambda: self._chain(rest, then, fail), fail)

    def _due_steps(self, now: int) -> list[Callable[[], list[DomainEvent]]]:
        """Steps for everything due at ``now``: expired acquisition locks, then expired member
        sessions (each fenced member: fence + close session, then release its records)."""
        assert self._state is not None
        st = self._state
        steps: list[Callable[[], list[DomainEvent]]] = []
        if any((d := sp.next_lock_deadline_ms()) is not None and d <= now for sp in st.partitions.values()):
            steps.append(lambda: [e for sp in list(st.partitions.values()) for e in sp.decide_expire_locks(now)])
        expired = sorted(mid for mid, dl in st.membership.deadlines.items() if dl <= now and mid in st.membership.members)
        if expired:
            def fence() -> list[DomainEvent]:
                # one atomic append: every expired member fenced, its share session closed and
                # its records released (the release depends on the share-partitions only)
                evs = list(decide_session_expiry(st.membership, now))
                fenced = [ev.member_id for ev in evs if isinstance(ev, MemberFenced)]
                evs.extend(ShareSessionClosed(self._group_id, mid, "MEMBER_FENCED", s.node_id)
                           for mid in fenced for s in self._sessions.of_member(mid))
                # each release is decided on the state the previous ones left (its outcome must
                # describe the records as they are then: an earlier release may move the start
                # offset and change what this one archives)
                scratch: dict[TP, SharePartition] = {}
                for mid in fenced:
                    evs.extend(self._decide_release(mid, scratch))
                return evs
            steps.append(fence)
        return steps

    def _run_due(self, now: int, then: Callable[[], None], failed: Callable[[str, str], None] | None = None) -> None:
        """Process everything due at ``now`` (:meth:`_due_steps`), then call ``then``; when an
        append of those steps is refused call ``failed`` (default: ``then``) instead. Before the
        armed timer's due time nothing can be due (it is armed for the earliest deadline, and
        deadlines only ever get later or go away between two :meth:`_schedule` calls), so the
        scan is skipped."""
        if self._timer_due is not None and now < self._timer_due:
            then()
            return
        self._chain(self._due_steps(now), then, failed or (lambda err, text: then()))

    def _begin(self, msg: Any, sender: Any) -> int | None:
        """Common request prologue: fail closed when not ready (or retired by DeleteGroups);
        returns ``now_ms`` or ``None``."""
        if not self._ready or self._state is None or self._retired:
            self.send(sender, NotReady(self._group_id or getattr(msg, "group_id", "")))
            return None
        gid = getattr(msg, "group_id", self._group_id)
        if gid and gid != self._group_id:
            self.send(sender, Failure("INVALID_REQUEST", f"this actor serves group {self._group_id!r}, not {gid!r}"))
            return None
        self._counts["requests"] += 1
        now = _now_ms()
        self._last_activity_ms = now
        return now

    def _handle(self, msg: Any, sender: Any, body: Callable[[int], None]) -> None:
        now = self._begin(msg, sender)
        if now is None:
            return
        def due_failed(err: str, text: str) -> None:
            # the due steps could not be appended (storage down, or another writer): answer from
            # a recovered state only, otherwise fail closed
            if self._ready:
                self._guarded(msg, sender, body, now)
            else:
                self.send(sender, NotReady(self._group_id))

        self._run_due(now, lambda: self._guarded(msg, sender, body, now), due_failed)

    def _guarded(self, msg: Any, sender: Any, body: Callable[[int], None], now: int) -> None:
        try:
            body(now)
        except Exception as exc:  # a bug must not kill the group: answer and keep going
            log.exception("share group %s: %s failed", self._group_id, type(msg).__name__)
            self._reply(sender, Failure("UNKNOWN_SERVER_ERROR", f"{type(exc).__name__}: {exc}"))
        self._schedule(now)

    # ------------------------------------------------------------------ ShareGroupHeartbeat

    def receiveMsg_ShareGroupHeartbeatCmd(self, msg: m.ShareGroupHeartbeatCmd, sender: Any) -> None:
        """ShareGroupHeartbeat: decide (:func:`decide_heartbeat`), persist, evolve, reschedule the member's session timer, reply :class:`ShareGroupHeartbeatReply`. A leave of a member without an open share session also
        releases its records; with one, its final ShareAcknowledge/ShareFetch does (as in Kafka)."""
        self._handle(msg, sender, lambda now: self._heartbeat(msg, sender, now))

    def _heartbeat(self, msg: m.ShareGroupHeartbeatCmd, sender: Any, now: int) -> None:
        assert self._state is not None
        st = self._state
        req = ShareGroupHeartbeat(msg.group_id, msg.member_id, msg.member_epoch, msg.rack_id,
                                  msg.subscribed_topic_names, msg.client_id, msg.client_host)
        try:
            decision: HeartbeatDecision = decide_heartbeat(st.membership, req, msg.topics, self._broker, now)
        except ShareError as exc:
            self._reply(sender, m.ShareGroupHeartbeatReply(exc.error_name, exc.message, msg.member_id, msg.member_epoch))
            return
        events = list(decision.events)
        leaving = any(isinstance(e, MemberFenced) for e in events)
        # Kafka keeps share sessions apart from group membership: a client closing down sends the
        # leave heartbeat and THEN its final ShareAcknowledge/ShareFetch (epoch -1) carrying the
        # last acknowledgements (librdkafka 2.16 does exactly this). With a share session still
        # open, the leave only fences; the final epoch acknowledges and releases the rest (or the
        # acquisition locks expire). Without one, the leave releases the member's records itself.
        release_now = leaving and not self._sessions.of_member(msg.member_id)
        r = decision.response

        def reply() -> None:
            if not leaving:
                touch(st.membership, r.member_id, now, self._broker)
            assignment = None if r.assignment is None else tuple((tp.topic_id, tp.partitions) for tp in r.assignment)
            self._reply(sender, m.ShareGroupHeartbeatReply("NONE", "", r.member_id, r.member_epoch,
                                                           r.heartbeat_interval_ms, assignment), fail)

        def fail(err: str, text: str) -> None:
            self.send(sender, m.ShareGroupHeartbeatReply(err, text, msg.member_id, msg.member_epoch))

        if release_now:  # one atomic append: fenced and records released
            events.extend(self._decide_release(msg.member_id))
        self._commit(events, reply, fail)

    # ------------------------------------------------------------------ ShareFetch

    def receiveMsg_ShareFetchCmd(self, msg: m.ShareFetchCmd, sender: Any) -> None:
        """ShareFetch: session step, then per partition initialize (``share.auto.offset.reset``), log-start-offset move, acknowledge, acquire; one append; reply :class:`ShareFetchReply` (FINAL epoch: acknowledge, then close the session and release the member's records)."""
        self._handle(msg, sender, lambda now: self._fetch(msg, sender, now))

    def _fetch(self, msg: m.ShareFetchCmd, sender: Any, now: int) -> None:
        assert self._state is not None
        st = self._state
        has_acks = any(p.acknowledgement_batches for p in msg.partitions)
        if msg.continuation:
            # the purgatory's next attempt: acquisition only, on the session the first attempt
            # left (its epoch moved once, to next_epoch(share_session_epoch)); nothing when the
            # session moved on since (another request of the member) or the attempt carries acks
            cur = self._sessions.get(msg.member_id, msg.session_node)
            if cur is None or cur.epoch != next_epoch(msg.share_session_epoch) or has_acks or msg.share_session_epoch == -1:
                self._reply(sender, m.ShareFetchReply("NONE", "", (), st.membership.configs.effective_record_lock_duration_ms(self._broker)))
                return
            sd = SessionDecision(msg.member_id, "CONTINUE", cur.epoch, partitions=tuple(sorted(cur.partitions)), node_id=msg.session_node)
        else:
            try:
                sd = decide_share_fetch(self._sessions, msg.member_id, msg.share_session_epoch,
                                        [(p.topic_id, p.partition) for p in msg.partitions], msg.forgotten, has_acks, msg.session_node)
            except ShareError as exc:
                self._reply(sender, m.ShareFetchReply(exc.error_name, exc.message))
                return
        lock_ms = st.membership.configs.effective_record_lock_duration_ms(self._broker)
        reset = st.membership.configs.effective_auto_offset_reset()
        pre: list[DomainEvent] = []        # initializations and log-start-offset moves
        fetched_events: list[DomainEvent] = []  # one ShareFetchProcessed per partition at most
        results: list[m.ShareFetchPartitionResult] = []
        budget = max(0, min(msg.max_records, self._broker.max_fetch_records))
        final = sd.kind == "FINAL"
        seen: set[TP] = set()
        for p in msg.partitions:
            key = (p.topic_id, p.partition)
            res = m.ShareFetchPartitionResult(p.topic_id, p.partition)
            results.append(res)
            if key in seen:
                res.error = res.acknowledge_error = "INVALID_REQUEST"
                continue
            seen.add(key)
            sp = st.partitions.get(key)
            work: SharePartition | None = None
            if sp is None:
                # Initialize with share.auto.offset.reset (earliest / latest / by_duration).
                if reset.strategy == "earliest":
                    start = p.log_start_offset
                elif reset.strategy == "latest":
                    start = p.high_watermark
                elif p.reset_offset is not None:
                    start = max(p.log_start_offset, min(p.reset_offset, p.high_watermark))
                else:
                    res.reset_timestamp_ms = reset.timestamp_ms(now)
                    if p.acknowledgement_batches:
                        res.acknowledge_error = "INVALID_RECORD_STATE"
                    continue
                work = SharePartition(self._group_id, p.topic_id, p.partition,
                                      delivery_count_limit=self._broker.delivery_count_limit,
                                      max_in_flight_records=self._broker.partition_max_record_locks)
                try:
                    evs = work.decide_initialize(start)
                except ShareError as exc:
                    res.error = exc.error_name
                    continue
                for e in evs:
                    work.apply(e)
                pre.extend(evs)
            base = work if work is not None else sp
            assert base is not None
            if p.log_start_offset > base.start_offset:
                evs = base.decide_update_log_start_offset(p.log_start_offset)
                if evs:
                    if work is None:
                        work = _scratch(base)
                    for e in evs:
                        work.apply(e)
                    pre.extend(evs)
            cur = work if work is not None else base
            acks: list[tuple[int, int, tuple[int, ...]]] = []
            if p.acknowledgement_batches:
                acks = _ack_batches(p.acknowledgement_batches)
                if validate_acknowledgement_batches(acks) is not None:  # KafkaApis validation
                    res.acknowledge_error = "INVALID_REQUEST"
                    acks = []
            refetch: list[int] = []

            def read_log(offset: int, p: m.ShareFetchPartition = p, refetch: list[int] = refetch) -> list[tuple[int, int]]:
                """The caller's batches from ``offset`` on; when the caller did not read there —
                it started above ``offset``, or its read ended below ``offset`` while the log goes
                on (it read from a next fetch offset that other members' acquisitions have since
                moved past) — ask it to (``refetch_from``) and acquire nothing now."""
                if p.log_batches is None:
                    refetch.append(offset)
                    return []
                batches = [(a, b) for a, b in p.log_batches if b >= offset]
                if p.fetch_offset > offset and (not batches or batches[0][0] > offset):
                    refetch.append(offset)
                    return []
                if not batches and offset < p.high_watermark:
                    refetch.append(offset)
                    return []
                if batches and msg.share_acquire_mode == 1:
                    batches = _record_limit(batches, offset, budget)
                return batches

            limit = 0 if (final or msg.is_renew_ack) else budget
            decision = cur.decide_share_fetch(msg.member_id, acks, read_log, limit, now, lock_ms, msg.batch_size)
            if decision.ack_error is not None:
                res.acknowledge_error = decision.ack_error.error_name
            if refetch:
                res.refetch_from = refetch[0]
            fetched_events.extend(decision.events)
            res.acquired = tuple((a.first_offset, a.last_offset, a.delivery_count) for a in decision.acquired)
            budget -= sum(a.last_offset - a.first_offset + 1 for a in decision.acquired)

        if not final:
            # Share sessions are incremental: a ShareFetch fetches every partition of the session,
            # also those the request did not name. The caller did not read them: ask it to.
            named = {(p.topic_id, p.partition) for p in msg.partitions}
            for t, pn in sd.partitions:
                if (t, pn) in named:
                    continue
                known = st.partitions.get((t, pn))
                nfo = known.next_fetch_offset() if known is not None else -1
                results.append(m.ShareFetchPartitionResult(t, pn, next_fetch_offset=nfo, refetch_from=nfo,
                                                           start_offset=known.start_offset if known is not None else -1))
        events: list[DomainEvent] = list(pre)
        if sd.kind == "NEW":
            if sd.replaced:
                events.append(ShareSessionClosed(self._group_id, msg.member_id, "REPLACED", msg.session_node))
            events.append(ShareSessionOpened(self._group_id, msg.member_id,
                                             _tps(sd.partitions), msg.session_node))
        events.extend(fetched_events)

        def reply() -> None:
            # the events are applied now: report the live next fetch offset and start offset
            for res in results:
                sp_ = st.partitions.get((res.topic_id, res.partition))
                if sp_ is not None and res.error == "NONE":
                    res.next_fetch_offset = sp_.next_fetch_offset()
                    res.start_offset = sp_.start_offset
            self._reply(sender, m.ShareFetchReply("NONE", "", tuple(results), lock_ms), fail)

        def fail(err: str, text: str) -> None:
            self.send(sender, m.ShareFetchReply(err, text))

        rest: list[Callable[[], list[DomainEvent]]] = []
        if final:
            rest.append(lambda: self._close_session_events(msg.member_id, msg.session_node))
        self._commit(events, lambda: self._after_session(sd, now, rest, reply, fail), fail)

    def _after_session(self, sd: SessionDecision, now: int, rest: list[Callable[[], list[DomainEvent]]],
                       reply: Callable[[], None], fail: Callable[[str, str], None]) -> None:
        if sd.kind not in ("FINAL", "CONTINUE"):
            self._sessions.apply(sd, now)
        self._chain(rest, reply, fail)

    def _close_session_events(self, member_id: str, node_id: int = -1) -> list[DomainEvent]:
        """FINAL epoch: close the member's session with ``node_id`` and release its acquired
        records: those in the session's partitions while the member keeps a session with another
        node (Kafka's ``releaseSession`` releases what the closing broker's share-partitions
        hold), all of them otherwise."""
        cur = self._sessions.get(member_id, node_id)  # removed when the close is decided (_commit)
        evs: list[DomainEvent] = [ShareSessionClosed(self._group_id, member_id, "FINAL_EPOCH", node_id)] if cur is not None else []
        others = [x for x in self._sessions.of_member(member_id) if x.node_id != node_id]
        evs.extend(self._decide_release(member_id, partitions=set(cur.partitions) if cur is not None and others else None))
        return evs

    def _decide_release(self, member_id: str, scratch: dict[TP, SharePartition] | None = None,
                        partitions: set[TP] | None = None) -> list[DomainEvent]:
        """Release every record ``member_id`` holds, in every share-partition of the group (or of
        ``partitions``), as Kafka 4.2's ``SharePartition.releaseAcquiredRecords`` does: with
        ``DeliveryCountOps.DECREASE`` (the records were acquired but not delivered, so the delivery
        count drops by one and the delivery-count limit does not archive them).

        ``scratch``: when several releases go into one append, the private copies (by partition)
        that earlier releases were applied to; this one is decided on them and applied to them."""
        assert self._state is not None
        out: list[DomainEvent] = []
        for key, sp in list(self._state.partitions.items()):
            if partitions is not None and key not in partitions:
                continue
            base = scratch.get(key, sp) if scratch is not None else sp
            evs = base.decide_release_member(member_id, decrement_delivery_count=True)
            if evs and scratch is not None:
                work = scratch.get(key)
                if work is None:
                    work = scratch[key] = _scratch(sp)
                for e in evs:
                    work.apply(e)
            out.extend(evs)
        return out

    # ------------------------------------------------------------------ ShareAcknowledge

    def receiveMsg_ShareAcknowledgeCmd(self, msg: m.ShareAcknowledgeCmd, sender: Any) -> None:
        """ShareAcknowledge: session step, per-partition all-or-nothing acknowledgements in one append, reply :class:`ShareAcknowledgeReply` (FINAL epoch closes the session and releases the member's records)."""
        self._handle(msg, sender, lambda now: self._acknowledge(msg, sender, now))

    def _acknowledge(self, msg: m.ShareAcknowledgeCmd, sender: Any, now: int) -> None:
        assert self._state is not None
        st = self._state
        try:
            sd = decide_share_acknowledge(self._sessions, msg.member_id, msg.share_session_epoch, msg.session_node)
        except ShareError as exc:
            self._reply(sender, m.ShareAcknowledgeReply(exc.error_name, exc.message))
            return
        lock_ms = st.membership.configs.effective_record_lock_duration_ms(self._broker)
        acks: list[DomainEvent] = []
        results: list[m.PartitionResult] = []
        seen: set[TP] = set()
        for p in msg.partitions:
            key = (p.topic_id, p.partition)
            sp = st.partitions.get(key)
            if key in seen:
                results.append(m.PartitionResult(p.topic_id, p.partition, "INVALID_REQUEST", "partition named twice"))
                continue
            seen.add(key)
            if not p.acknowledgement_batches:
                results.append(m.PartitionResult(p.topic_id, p.partition))
                continue
            if sp is None:
                results.append(m.PartitionResult(p.topic_id, p.partition, "UNKNOWN_TOPIC_OR_PARTITION",
                                                 "The share-partition is not known to this group."))
                continue
            batches = _ack_batches(p.acknowledgement_batches)
            bad = validate_acknowledgement_batches(batches)
            if bad is not None:
                results.append(m.PartitionResult(p.topic_id, p.partition, "INVALID_REQUEST", bad))
                continue
            try:
                evs = sp.decide_acknowledge(msg.member_id, batches, now, lock_ms)
            except ShareError as exc:
                results.append(m.PartitionResult(p.topic_id, p.partition, exc.error_name, exc.message))
                continue
            acks.extend(evs)
            results.append(m.PartitionResult(p.topic_id, p.partition))
        events: list[DomainEvent] = list(acks)

        def reply() -> None:
            self._reply(sender, m.ShareAcknowledgeReply("NONE", "", tuple(results), lock_ms), fail)

        def fail(err: str, text: str) -> None:
            self.send(sender, m.ShareAcknowledgeReply(err, text))

        rest: list[Callable[[], list[DomainEvent]]] = []
        if sd.kind == "FINAL":
            rest.append(lambda: self._close_session_events(msg.member_id, msg.session_node))
        self._commit(events, lambda: self._after_session(sd, now, rest, reply, fail), fail)

    # ------------------------------------------------------------------ describe / admin

    def receiveMsg_DescribeShareGroup(self, msg: m.DescribeShareGroup, sender: Any) -> None:
        """ShareGroupDescribe: reply :class:`ShareGroupDescription` (GROUP_ID_NOT_FOUND when the group does not exist)."""
        self._handle(msg, sender, lambda now: self._reply(sender, self._describe()))

    def _describe(self) -> m.ShareGroupDescription:
        assert self._state is not None
        ms = self._state.membership
        if not ms.exists:
            return m.ShareGroupDescription(self._group_id, "GROUP_ID_NOT_FOUND", f"Group {self._group_id} not found.")
        members = tuple(
            m.MemberDescription(x.member_id, x.rack_id, x.member_epoch, x.client_id, x.client_host,
                                x.subscribed_topic_names,
                                tuple((t, tuple(sorted(ps))) for t, ps in sorted(x.assigned.items())))
            for _, x in sorted(ms.members.items())
        )
        return m.ShareGroupDescription(self._group_id, "NONE", "", ms.state, ms.group_epoch, ms.assignment_epoch,
                                       "simple", members)

    def receiveMsg_DescribeShareGroupOffsets(self, msg: m.DescribeShareGroupOffsets, sender: Any) -> None:
        """DescribeShareGroupOffsets: the share-partition start offsets (-1 when not initialized)."""
        def body(now: int) -> None:
            assert self._state is not None
            st = self._state
            if not st.membership.exists and not st.partitions:
                self._reply(sender, m.ShareGroupOffsets(self._group_id, "GROUP_ID_NOT_FOUND"))
                return
            keys = sorted(st.partitions) if msg.partitions is None else list(msg.partitions)
            out = tuple(m.SharePartitionOffset(t, p, st.partitions[(t, p)].start_offset if (t, p) in st.partitions else -1)
                        for t, p in keys)
            self._reply(sender, m.ShareGroupOffsets(self._group_id, "NONE", out))

        self._handle(msg, sender, body)

    def receiveMsg_AlterGroupConfigs(self, msg: m.AlterGroupConfigs, sender: Any) -> None:
        """(Incremental)AlterConfigs on the group: validate against the broker bounds (INVALID_CONFIG), persist ``GroupConfigAltered``, reply :class:`GroupConfigsAltered`."""
        def body(now: int) -> None:
            assert self._state is not None
            current = self._state.membership.configs.as_dict()
            new = dict(current) if msg.incremental else {}
            for k, v in msg.configs.items():
                if v is None:
                    new.pop(k, None)
                else:
                    new[k] = str(v)
            try:
                validated = validate_group_configs(new, self._broker)
            except InvalidConfig as exc:
                self._reply(sender, m.GroupConfigsAltered(self._group_id, exc.error, str(exc), current))
                return
            if msg.validate_only or validated.as_dict() == current:
                self._reply(sender, m.GroupConfigsAltered(self._group_id, "NONE", "", validated.as_dict()))
                return
            def fail(err: str, text: str) -> None:
                self.send(sender, m.GroupConfigsAltered(self._group_id, err, text, current))

            self._commit([GroupConfigAltered(self._group_id, validated.as_dict())],
                         lambda: self._reply(sender, m.GroupConfigsAltered(self._group_id, "NONE", "", validated.as_dict()), fail),
                         fail)

        self._handle(msg, sender, body)

    def receiveMsg_DescribeGroupConfigs(self, msg: m.DescribeGroupConfigs, sender: Any) -> None:
        """DescribeConfigs on the group: the effective share configs and which are overrides."""
        def body(now: int) -> None:
            assert self._state is not None
            cfg = self._state.membership.configs
            eff = effective_group_configs(cfg, self._broker)
            self._reply(sender, m.GroupConfigsDescribed(self._group_id, eff, tuple(sorted(cfg.as_dict()))))

        self._handle(msg, sender, body)

    def receiveMsg_DeleteShareGroupState(self, msg: m.DeleteShareGroupState, sender: Any) -> None:
        """DeleteShareGroupOffsets / DeleteGroups: only for an EMPTY group (NON_EMPTY_GROUP otherwise); persists ``ShareStateDeleted`` per partition (and ``ShareGroupDeleted`` for the whole group)."""
        def body(now: int) -> None:
            assert self._state is not None
            st = self._state
            # a group that only has configs (Shoal's alter of an unknown group creates it, see
            # actors.share.limits) can be deleted too: that is how its place in the census is freed
            configured = msg.partitions is None and bool(st.membership.configs.as_dict())
            if not st.membership.exists and not st.partitions and not configured:
                self._reply(sender, m.ShareGroupStateDeleted(self._group_id, "GROUP_ID_NOT_FOUND", f"Group {self._group_id} not found."))
                return
            if st.membership.members:
                self._reply(sender, m.ShareGroupStateDeleted(self._group_id, "NON_EMPTY_GROUP",
                                                           f"Share group {self._group_id} is not empty."))
                return
            keys = sorted(st.partitions) if msg.partitions is None else list(msg.partitions)
            events: list[DomainEvent] = [ShareStateDeleted(self._group_id, t, p) for t, p in keys if (t, p) in st.partitions]
            if msg.partitions is None:
                events.append(ShareGroupDeleted(self._group_id))
            results = tuple(m.PartitionResult(t, p) for t, p in keys)

            def deleted() -> None:
                if msg.partitions is None:
                    # the group is gone: until its parent stops this actor (the listener's
                    # ShareGroupHost.stop_group), every request gets NotReady, so the wire looks the
                    # group up again and a new join creates it afresh through the census instead
                    # of in this retired actor
                    self._retired = True
                self._reply(sender, m.ShareGroupStateDeleted(self._group_id, "NONE", "", results), fail)

            def fail(err: str, text: str) -> None:
                self.send(sender, m.ShareGroupStateDeleted(self._group_id, err, text))

            self._commit(events, deleted, fail)

        self._handle(msg, sender, body)

    def _admin_refusal(self) -> m.ShareGroupStateDeleted | None:
        """The group-level refusal of an offsets admin request (Kafka ``ShareGroup.validateEmptyGroup``
        after ``GroupMetadataManager.shareGroup``): GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, or ``None``."""
        assert self._state is not None
        st = self._state
        if not st.membership.exists and not st.partitions:
            return m.ShareGroupStateDeleted(self._group_id, "GROUP_ID_NOT_FOUND", f"Group {self._group_id} not found.")
        if st.membership.members:
            return m.ShareGroupStateDeleted(self._group_id, "NON_EMPTY_GROUP", f"Share group {self._group_id} is not empty.")
        return None

    def _offsets_admin(self, msg: Any, sender: Any,
                       decide: Callable[[], tuple[list[DomainEvent], list[m.PartitionResult]]]) -> None:
        """The common step of AlterShareGroupOffsets / DeleteShareGroupOffsets: the group-level
        refusal (:meth:`_admin_refusal`), else ``decide() -> (events, results)``, one append, and
        :class:`ShareGroupStateDeleted` with the results (or the append's error)."""
        def body(now: int) -> None:
            refusal = self._admin_refusal()
            if refusal is not None:
                self._reply(sender, refusal)
                return
            events, results = decide()
            def fail(err: str, text: str) -> None:
                self.send(sender, m.ShareGroupStateDeleted(self._group_id, err, text))

            self._commit(events, lambda: self._reply(sender, m.ShareGroupStateDeleted(self._group_id, "NONE", "", tuple(results)), fail), fail)

        self._handle(msg, sender, body)

    def receiveMsg_AlterShareGroupOffsets(self, msg: m.AlterShareGroupOffsets, sender: Any) -> None:
        """AlterShareGroupOffsets: one ``SharePartitionInitialized`` per partition at the new start
        offset (state batches dropped, state epoch the group epoch), in one append; a negative
        offset is INVALID_REQUEST for its partition. Reply :class:`ShareGroupStateDeleted`."""
        def decide() -> tuple[list[DomainEvent], list[m.PartitionResult]]:
            assert self._state is not None
            events: list[DomainEvent] = []
            results = []
            epoch = self._state.membership.group_epoch
            for tid, p, start in msg.partitions:
                if start < 0:
                    results.append(m.PartitionResult(tid, p, "INVALID_REQUEST", f"start offset {start} is negative"))
                    continue
                work = SharePartition(self._group_id, tid, p, delivery_count_limit=self._broker.delivery_count_limit,
                                      max_in_flight_records=self._broker.partition_max_record_locks)
                events.extend(work.decide_initialize(start, state_epoch=epoch))
                results.append(m.PartitionResult(tid, p))
            return events, results

        self._offsets_admin(msg, sender, decide)

    def receiveMsg_DeleteShareGroupOffsets(self, msg: m.DeleteShareGroupOffsets, sender: Any) -> None:
        """DeleteShareGroupOffsets: ``ShareStateDeleted`` for every initialised partition of the
        topics, in one append. Reply :class:`ShareGroupStateDeleted` (one result per topic)."""
        def decide() -> tuple[list[DomainEvent], list[m.PartitionResult]]:
            assert self._state is not None
            events: list[DomainEvent] = []
            results = []
            for tid in dict.fromkeys(msg.topic_ids):
                keys = sorted(k for k in self._state.partitions if k[0] == tid)
                if not keys:
                    results.append(m.PartitionResult(tid, -1, "UNKNOWN_TOPIC_OR_PARTITION", "There is no offset information to delete."))
                    continue
                events.extend(ShareStateDeleted(self._group_id, t, p) for t, p in keys)
                results.append(m.PartitionResult(tid, -1))
            return events, results

        self._offsets_admin(msg, sender, decide)

    def receiveMsg_GetShareGroupState(self, msg: m.GetShareGroupState, sender: Any) -> None:
        """Audit/test: reply :class:`ShareGroupStateDump` with the durable state and stream version."""
        def body(now: int) -> None:
            assert self._state is not None
            self._reply(sender, m.ShareGroupStateDump(self._group_id, self._version, self._state.to_dict()))

        self._handle(msg, sender, body)


def _ack_batches(batches: Iterable[tuple[int, int, Iterable[int]]]) -> list[tuple[int, int, tuple[int, ...]]]:
    """A request's acknowledgement batches as ``(first, last, (type, …))`` tuples of plain ints
    (one ``map`` per batch: a mixed acknowledgement carries a type per offset)."""
    return [(int(a), int(b), tuple(map(int, ts))) for a, b, ts in batches]


def _record_limit(batches: list[tuple[int, int]], from_offset: int, limit: int) -> list[tuple[int, int]]:
    """ShareFetch v2 record-limit acquire mode (KIP-1206): present the log batches cut so that at
    most ``limit`` offsets from ``from_offset`` on can be acquired (the last batch is cut short)."""
    end = from_offset + limit - 1
    out: list[tuple[int, int]] = []
    for a, b in batches:
        if a > end:
            break
        out.append((a, min(b, end)))
    return out


def _scratch(sp: SharePartition) -> SharePartition:
    """A private copy of a share-partition to decide a request's later steps on (an acquire after
    a log-start-offset move in the same ShareFetch) before anything is persisted."""
    return SharePartition.from_snapshot(sp.snapshot())


def _tps(parts: Iterable[TP]) -> tuple[TopicPartitions, ...]:
    by: dict[str, list[int]] = {}
    for t, p in parts:
        by.setdefault(t, []).append(p)
    return tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in sorted(by.items()))
