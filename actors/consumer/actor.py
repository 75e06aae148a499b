"""``ConsumerGroupActor``: one Thespian actor per consumer group id, classic or KIP-848.

A thin shell around the pure deciders :class:`actors.consumer.classic.ClassicGroup` and
:class:`actors.consumer.modern.ModernGroup` (one group id has one type; the actor holds whichever
the stream says, :func:`actors.consumer.group.evolve`):

    receive → read the clock once (``now_ms``) → fire due timers (``tick``) → decide →
    append (durable) → evolve (committed offsets) → reply, and answer parked requests

Delayed responses. JoinGroup and SyncGroup wait for the rest of the group (Kafka parks their
futures). The actor keeps the sender address of each parked request under ``(kind, member id)``
(``"join"``/``"sync"``) and sends the decider's result there when a later message or a timer
completes the generation — Thespian delivers a reply to a saved address at any later time, so the
asking wire thread simply waits (it asks with a timeout above the rebalance timeout). A parked
request's key replaced by a newer request of the same member is forgotten (its asker times out).

Timers are data in the decider (session, join, sync and KIP-394 pending-member deadlines); the
actor keeps one ``wakeupAfter`` for the earliest (a wakeup that is not the outstanding one is
stale and only re-arms), and also fires everything due at the start of every request.

Events go to ``consumer-group:<group id>`` (:func:`events.consumer_group.stream_id_for`) with the
exact expected version. Recovery replays the stream (``Configure`` → ``Configured``); until then
requests get ``NotReady``. Members restored from the last GroupMetadata event get fresh session
timers. If an append is refused, the requester and every parked request answered by that decision
get ``Failure`` (COORDINATOR_NOT_AVAILABLE; NOT_COORDINATOR when another writer appended, and the
actor then recovers again) — the classic soft state is not rolled back, so members rejoin.
Group admin (DescribeGroups, DeleteGroups, OffsetDelete) goes through the same step; a deleted
group's events are applied once durable and leave the actor with a never-created group.
Consumer-protocol groups (ConsumerGroupHeartbeat): the decider applies its records as it
decides, so when an append is refused the actor recovers the group from the stream (as it does
for a conversion between the types). A heartbeat at epoch 0 converts an empty classic group; a
JoinGroup converts an empty consumer group back (reference §6).

Group commit. While an append is in flight (through the JournalActor) the base class stashes
what arrives; when it is durable, a run of consecutive stashed OffsetCommit / Heartbeat requests
is decided together, in arrival order, on the state that append left, and their events (one
``OffsetsCommitted`` per commit) go out as ONE append; each requester is answered once it is
durable, or every one of them gets ``Failure`` when it is refused (:meth:`ConsumerGroupActor.receive_batch`,
the :meth:`~actors.base.EventSourcedActor.batchable` hook). Any other request ends the run and is
handled alone after it, so arrival order is kept. Kafka's coordinator does likewise:
``CoordinatorRuntime`` accumulates the records of several writes into one batch
(``group.coordinator.append.linger.ms``) and completes each write once the batch is committed.
The actor does not passivate and takes no snapshots (a classic group's stream is small:
one event per generation and per OffsetCommit request).
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import Any

from actors.base import EventSourcedActor, PersistError
from actors.consumer import messages as m
from actors.consumer.classic import ClassicConfig, ClassicGroup, HeartbeatResult, JoinGroupResult, Outcome, SyncGroupResult
from actors.consumer.group import classic_from, evolve, is_empty_classic, modern_from
from actors.consumer.modern import ConsumerGroupDescription, ConsumerHeartbeatResult, ModernConfig, ModernGroup
from actors.messages import Configure, Configured, Failure, NotReady
from events.codec import decode_recorded, new_event
from events.consumer_group import CONSUMER_GROUP_RECORDS, ConsumerGroupDeleted, OffsetsCommitted, OffsetsDeleted, stream_id_for
from store.event_log import AppendRequest, AppendResult

__all__ = ["ConsumerGroupActor"]

log = logging.getLogger("shoal.consumer.actor")

#: Thespian transports cannot sleep arbitrarily long: wake at least hourly and re-arm.
MAX_WAKEUP_DELAY_MS = 3_600_000


def _now_ms() -> int:
    """Wall clock, ms since the epoch (read once per message)."""
    return time.time_ns() // 1_000_000


class ConsumerGroupActor(EventSourcedActor):
    """The actor of one classic consumer group. Create it, send ``Configure`` with the group id
    as ``name``, then the commands of :mod:`actors.consumer.messages`."""

    RECOVERY_PAGE = 1000

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ready = False
        self._group_id = ""
        self._stream = ""
        self._version = 0
        self._config = ClassicConfig()
        self._mconfig = ModernConfig()
        self._group: ClassicGroup | ModernGroup | None = None
        self._waiting: dict[tuple[str, str], Any] = {}
        self._timer_due: int | None = None
        self._recovery_gen = 0

    # ------------------------------------------------------------------ lifecycle

    def receiveMsg_Configure(self, msg: Configure, sender: Any) -> None:
        """Recover the group from its stream and answer ``Configured``; ``Failure(INVALID_CONFIG)``
        for a bad config, ``Failure(COORDINATOR_LOAD_IN_PROGRESS)`` when the log cannot be read."""
        try:
            self._config = ClassicConfig.from_config(msg.config)
            self._mconfig = ModernConfig.from_config(msg.config)
        except ValueError as exc:
            self.send(sender, Failure("INVALID_CONFIG", str(exc)))
            return
        self._ready = False
        self._group_id = msg.name
        self._stream = stream_id_for(msg.name)
        self.attach_event_log(msg.config, msg.journal)
        self._recovery_gen += 1
        self._recover(self._recovery_gen, sender)

    def _recover(self, gen: int, configurer: Any) -> None:
        acc = {"group": ClassicGroup(self._group_id, self._config), "version": 0, "replayed": 0}

        def on_page(page: Any) -> None:
            if gen != self._recovery_gen:
                return
            if isinstance(page, PersistError):
                log.error("consumer group %s: recovery failed: %s", self._group_id, page)
                if configurer is not None:
                    self.send(configurer, Failure("COORDINATOR_LOAD_IN_PROGRESS", str(page)))
                return
            try:
                for rec in page.events:
                    acc["group"] = evolve(acc["group"], decode_recorded(rec), self._config, self._mconfig)
                    acc["version"] = rec.stream_version
                    acc["replayed"] += 1
            except Exception as exc:
                log.exception("consumer group %s: replay failed", self._group_id)
                if configurer is not None:
                    self.send(configurer, Failure("COORDINATOR_LOAD_IN_PROGRESS", f"{type(exc).__name__}: {exc}"))
                return
            if len(page.events) == self.RECOVERY_PAGE:
                self.read_events(self._stream, acc["version"] + 1, self.RECOVERY_PAGE, on_page)
                return
            now = _now_ms()
            self._group = acc["group"]
            self._group.touch_all(now)
            self._version = acc["version"]
            self._ready = True
            self._schedule(now)
            if configurer is not None:
                self.send(configurer, Configured(self._group_id, page.last_position, acc["replayed"]))

        self.read_events(self._stream, 1, self.RECOVERY_PAGE, on_page)

    # ------------------------------------------------------------------ timers

    def _schedule(self, now: int) -> None:
        if self._group is None:
            return
        due = self._group.next_deadline()
        if due is None or (self._timer_due is not None and now < self._timer_due <= due):
            return
        self._timer_due = due
        delay = min(max(0, due - now), MAX_WAKEUP_DELAY_MS)
        self.wakeupAfter(timedelta(milliseconds=delay), payload=("consumer-group-timer", due))

    def on_wakeup(self, payload: Any) -> None:
        """Fire the timers due now (a stale wakeup finds nothing due) and re-arm."""
        if not self._ready or self._group is None:
            return
        if isinstance(payload, tuple) and len(payload) == 2 and payload[1] == self._timer_due:
            self._timer_due = None
        now = _now_ms()
        self._finish([(self._group.tick(now), None)], now)

    # ------------------------------------------------------------------ the common step

    def _finish(self, decided: list[tuple[Outcome, Any]], now: int) -> None:
        """Register the parked requests, append the events of every outcome in ``decided``
        (``(outcome, requester)`` pairs in decision order; requester ``None`` for a timer) as ONE
        append at the exact expected version, then evolve and send each reply and parked reply —
        or, when the append is refused, ``Failure`` to every one of them."""
        for out, sender in decided:
            if out.parked is not None and sender is not None:
                self._waiting[out.parked] = sender

        def deliver(error: tuple[str, str] | None) -> None:
            for out, sender in decided:
                for key, result in out.replies:
                    to = self._waiting.pop(key, None)
                    if to is not None:
                        self.send(to, result if error is None else Failure(*error))
                if sender is not None and out.reply is not None:
                    self.send(sender, out.reply if error is None else Failure(*error))
            self._schedule(now)

        events = [e for out, _ in decided for e in out.events]
        if not events:
            deliver(None)
            return
        req = AppendRequest(self._stream, [new_event(e) for e in events], self._version)

        # the consumer-protocol decider (and a conversion) changed the group as it decided: a
        # refused append must reload it from the stream
        reload = isinstance(self._group, ModernGroup) or any(isinstance(e, CONSUMER_GROUP_RECORDS) for e in events)

        def done(results: list[AppendResult] | PersistError) -> None:
            if isinstance(results, PersistError):
                if isinstance(self._group, ClassicGroup) and any(isinstance(e, ConsumerGroupDeleted) for e in events):
                    self._group.undo_delete(now)
                if results.error == "CONCURRENCY" or reload:
                    error = ("NOT_COORDINATOR" if results.error == "CONCURRENCY" else "COORDINATOR_NOT_AVAILABLE", str(results))
                    deliver(error)
                    self._reload(error)
                else:
                    deliver(("COORDINATOR_NOT_AVAILABLE", str(results)))
                return
            assert self._group is not None
            for e in events:
                if isinstance(e, (OffsetsCommitted, OffsetsDeleted, ConsumerGroupDeleted)):
                    self._group.apply(e)
            self._version = results[0].last_version
            deliver(None)

        self.persist([req], done)

    def _decide(self, msg: Any, sender: Any, decide: Any, now: int) -> Outcome | None:
        """Fire the due timers, then ``decide(group, now)``; ``None`` (and ``Failure``
        UNKNOWN_SERVER_ERROR to ``sender``) when the decider raised — a consumer-protocol group,
        maybe half-changed, is then recovered from its stream."""
        assert self._group is not None
        try:
            out = self._group.tick(now)
            return out.merge(decide(self._group, now))
        except Exception as exc:  # a bug must not kill the group
            log.exception("consumer group %s: %s failed", self._group_id, type(msg).__name__)
            self.send(sender, Failure("UNKNOWN_SERVER_ERROR", f"{type(exc).__name__}: {exc}"))
            if isinstance(self._group, ModernGroup):  # it may be half-changed: reload it
                self._reload(("UNKNOWN_SERVER_ERROR", f"{type(exc).__name__}: {exc}"))
            return None

    def _reload(self, error: tuple[str, str]) -> None:
        """Drop the group's in-memory state and recover it from the stream. Every parked
        JoinGroup/SyncGroup belongs to the soft state being dropped: each gets ``Failure(error)``
        now (its member rejoins), rather than waiting for a reply that the reloaded group cannot
        send."""
        for to in self._waiting.values():
            self.send(to, Failure(*error))
        self._waiting.clear()
        self._ready = False
        self._recovery_gen += 1
        self._recover(self._recovery_gen, None)

    def _run(self, msg: Any, sender: Any, decide: Any) -> None:
        if not self._ready or self._group is None:
            self.send(sender, NotReady(self._group_id))
            return
        now = _now_ms()
        out = self._decide(msg, sender, decide, now)
        if out is not None:
            self._finish([(out, sender)], now)

    # ------------------------------------------------------------------ group commit

    def batchable(self, msg: Any) -> bool:
        """OffsetCommit and (classic) Heartbeat are decided together when several were stashed
        one after another while an append was in flight (:meth:`receive_batch`)."""
        return isinstance(msg, (m.OffsetCommitCmd, m.HeartbeatCmd))

    def receive_batch(self, batch: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
        """Group commit of a run of consecutive OffsetCommit / Heartbeat requests (stashed while
        the previous append was in flight; the base class hands them over once it is durable and
        applied): each is decided in arrival order on the live group — an OffsetCommit reads
        only membership (member id, generation or member epoch), which neither changes, and
        timers due in between fire first as for a single request — and all their events
        (``OffsetsCommitted`` per commit, plus any timer events) are appended as ONE request at
        the exact expected version. Each requester gets its own result once that append is
        durable, or ``Failure`` (COORDINATOR_NOT_AVAILABLE; NOT_COORDINATOR on a version
        conflict, after which the group recovers) when it is refused, like a single request.
        The one state an OffsetCommit reads that is applied only once durable is whether the group
        exists (a first commit with generation -1 creates a simple group when its offsets are
        applied): a batch ends after a commit that appends to a group that does not exist yet,
        and the rest is returned to the stash, to be decided on the created group.
        Not ready: ``NotReady`` to each. If a decider raises on a consumer-protocol group (which
        is then reloaded), that requester gets UNKNOWN_SERVER_ERROR and the rest of the batch
        COORDINATOR_NOT_AVAILABLE, nothing being appended."""
        if not self._ready or self._group is None:
            for _msg, sender in batch:
                self.send(sender, NotReady(self._group_id))
            return []
        now = _now_ms()
        decided: list[tuple[Outcome, Any]] = []
        for i, (msg, sender) in enumerate(batch):
            out = self._decide(msg, sender, self._decider(msg), now)
            if out is None and not self._ready:  # the group is being reloaded: drop the batch
                for _msg, other in batch[:i] + batch[i + 1:]:
                    self.send(other, Failure("COORDINATOR_NOT_AVAILABLE", f"consumer group {self._group_id} is reloading"))
                return []
            if out is not None:
                decided.append((out, sender))
                if out.events and not self._group.exists:
                    self._finish(decided, now)
                    return batch[i + 1:]
        self._finish(decided, now)
        return []

    def _decider(self, msg: Any) -> Any:
        """The ``decide(group, now) -> Outcome`` of a batchable request."""
        if isinstance(msg, m.OffsetCommitCmd):
            return self._commit_decider(msg)
        return self._heartbeat_decider(msg)

    @staticmethod
    def _commit_decider(msg: m.OffsetCommitCmd) -> Any:
        return lambda g, now: g.commit(
            now, member_id=msg.member_id, group_instance_id=msg.group_instance_id, generation=msg.generation,
            partitions=list(msg.partitions), api_version=msg.api_version, retention_ms=msg.retention_ms)

    @staticmethod
    def _heartbeat_decider(msg: m.HeartbeatCmd) -> Any:
        return lambda g, now: Outcome(reply=HeartbeatResult("UNKNOWN_MEMBER_ID")) if isinstance(g, ModernGroup) else g.heartbeat(
            now, member_id=msg.member_id, group_instance_id=msg.group_instance_id, generation=msg.generation)

    # ------------------------------------------------------------------ requests

    def receiveMsg_JoinGroupCmd(self, msg: m.JoinGroupCmd, sender: Any) -> None:
        """JoinGroup → ``JoinGroupResult`` (at once or when the generation completes). On an
        empty consumer group the group is deleted and becomes classic first (scenario #47); on a
        non-empty one INCONSISTENT_GROUP_PROTOCOL (classic members in a consumer group are not
        supported)."""
        def decide(g: Any, now: int) -> Outcome:
            pre = Outcome()
            if isinstance(g, ModernGroup):
                if not self._config.session_timeout_valid(msg.session_timeout_ms):
                    # checked before the group is looked up: a refused join converts nothing
                    return Outcome(reply=JoinGroupResult("INVALID_SESSION_TIMEOUT", member_id=msg.member_id))
                if not g.is_empty():
                    return Outcome(reply=JoinGroupResult("INCONSISTENT_GROUP_PROTOCOL", member_id=msg.member_id))
                pre.events.extend(g.delete_records())
                g = self._group = classic_from(g, self._config)
            return pre.merge(join(g, now))

        join = lambda g, now: g.join(  # noqa: E731
            now, member_id=msg.member_id, group_instance_id=msg.group_instance_id, protocol_type=msg.protocol_type,
            protocols=msg.protocols, session_timeout_ms=msg.session_timeout_ms,
            rebalance_timeout_ms=msg.rebalance_timeout_ms, client_id=msg.client_id, client_host=msg.client_host,
            api_version=msg.api_version)
        self._run(msg, sender, decide)

    def receiveMsg_SyncGroupCmd(self, msg: m.SyncGroupCmd, sender: Any) -> None:
        """SyncGroup → ``SyncGroupResult`` (at once or when the leader's assignment is stored)."""
        self._run(msg, sender, lambda g, now: Outcome(reply=SyncGroupResult("UNKNOWN_MEMBER_ID")) if isinstance(g, ModernGroup) else g.sync(
            now, member_id=msg.member_id, group_instance_id=msg.group_instance_id, generation=msg.generation,
            protocol_type=msg.protocol_type, protocol=msg.protocol, assignments=dict(msg.assignments)))

    def receiveMsg_HeartbeatCmd(self, msg: m.HeartbeatCmd, sender: Any) -> None:
        """Heartbeat → ``HeartbeatResult``."""
        self._run(msg, sender, self._heartbeat_decider(msg))

    def receiveMsg_LeaveGroupCmd(self, msg: m.LeaveGroupCmd, sender: Any) -> None:
        """LeaveGroup → ``LeaveGroupResult`` (on a consumer-protocol group: the members are fenced,
        :meth:`actors.consumer.modern.ModernGroup.leave_members`)."""
        self._run(msg, sender, lambda g, now: g.leave_members(list(msg.members)) if isinstance(g, ModernGroup)
                  else g.leave(now, list(msg.members)))

    def receiveMsg_OffsetCommitCmd(self, msg: m.OffsetCommitCmd, sender: Any) -> None:
        """OffsetCommit → ``OffsetCommitResult`` once the offsets are durable (several stashed
        behind an append in flight are group-committed: :meth:`receive_batch`)."""
        self._run(msg, sender, self._commit_decider(msg))

    def receiveMsg_OffsetFetchCmd(self, msg: m.OffsetFetchCmd, sender: Any) -> None:
        """OffsetFetch → ``OffsetFetchReply`` (reads the applied, i.e. durable, offsets); a
        consumer-protocol group checks v9's member id and epoch first (``Failure`` with
        UNKNOWN_MEMBER_ID / STALE_MEMBER_EPOCH, a group-level error)."""
        def fetch(g: Any, now: int) -> Outcome:
            if isinstance(g, ModernGroup):
                err = g.validate_offset_fetch(msg.member_id, msg.member_epoch)
                if err is not None:
                    return Outcome(reply=Failure(err, f"OffsetFetch by member {msg.member_id} at epoch {msg.member_epoch}"))
            return Outcome(reply=m.OffsetFetchReply(tuple(g.fetch_offsets(None if msg.partitions is None else list(msg.partitions)))))

        self._run(msg, sender, fetch)

    def receiveMsg_DescribeConsumerGroup(self, msg: m.DescribeConsumerGroup, sender: Any) -> None:
        """→ ``ConsumerGroupSummary`` (state, protocol type, member count, group type)."""
        def summary(g: Any, now: int) -> Outcome:
            if isinstance(g, ModernGroup):
                return Outcome(reply=m.ConsumerGroupSummary(g.group_id, g.state(), "consumer", g.exists, len(g.members), "consumer"))
            return Outcome(reply=m.ConsumerGroupSummary(g.group_id, g.describe_state(), g.protocol_type or "", g.exists, len(g.members)))

        self._run(msg, sender, summary)

    def receiveMsg_ConsumerGroupHeartbeatCmd(self, msg: m.ConsumerGroupHeartbeatCmd, sender: Any) -> None:
        """ConsumerGroupHeartbeat → ``ConsumerHeartbeatResult``. A classic group that is empty
        (or holds only offsets) becomes a consumer group when the heartbeat writes records; a
        non-empty classic group is GROUP_ID_NOT_FOUND (online upgrade is not supported)."""
        image = {name: (tid, n) for name, tid, n in msg.image}

        def decide(g: Any, now: int) -> Outcome:
            if isinstance(g, ClassicGroup):
                if not is_empty_classic(g):
                    return Outcome(reply=ConsumerHeartbeatResult(
                        "GROUP_ID_NOT_FOUND", f"Group {g.group_id} is not a consumer group.", msg.member_id, msg.member_epoch))
                g = modern_from(g, self._mconfig)
            out = g.heartbeat(
                now, member_id=msg.member_id, member_epoch=msg.member_epoch, instance_id=msg.instance_id,
                rack_id=msg.rack_id, rebalance_timeout_ms=msg.rebalance_timeout_ms,
                subscribed_topic_names=msg.subscribed_topic_names, server_assignor=msg.server_assignor,
                owned=None if msg.owned is None else {t: frozenset(ps) for t, ps in msg.owned},
                client_id=msg.client_id, client_host=msg.client_host, image=image, regex=msg.regex,
                api_version=msg.api_version)
            if out.events:
                self._group = g
            return out

        self._run(msg, sender, decide)

    def receiveMsg_ConsumerGroupDescribeCmd(self, msg: m.ConsumerGroupDescribeCmd, sender: Any) -> None:
        """ConsumerGroupDescribe → ``ConsumerGroupDescription``."""
        self._run(msg, sender, lambda g, now: Outcome(reply=g.describe() if isinstance(g, ModernGroup) and g.exists else
                                                      ConsumerGroupDescription(g.group_id, "GROUP_ID_NOT_FOUND")))

    # ------------------------------------------------------------------ group admin

    def receiveMsg_DescribeGroupCmd(self, msg: m.DescribeGroupCmd, sender: Any) -> None:
        """DescribeGroups → ``DescribedGroup`` (``Dead`` for a group that does not exist)."""
        self._run(msg, sender, lambda g, now: Outcome(reply=g.describe_classic() if isinstance(g, ModernGroup) else g.describe()))

    def receiveMsg_DeleteGroupCmd(self, msg: m.DeleteGroupCmd, sender: Any) -> None:
        """DeleteGroups → ``DeleteGroupResult`` once the tombstones are durable; the group is then
        forgotten (the id may be used again as a new group)."""
        def decide(g: Any, now: int) -> Outcome:
            out = g.delete_group(now)
            if isinstance(g, ModernGroup) and out.events:
                # its tombstones are applied as decided: the id is a classic group again, which
                # the OffsetsDeleted and ConsumerGroupDeleted then empty and forget once durable
                self._group = classic_from(g, self._config)
            return out

        self._run(msg, sender, decide)

    def receiveMsg_OffsetDeleteCmd(self, msg: m.OffsetDeleteCmd, sender: Any) -> None:
        """OffsetDelete → ``OffsetDeleteResult`` once the tombstones are durable."""
        self._run(msg, sender, lambda g, now: g.delete_offsets(list(msg.partitions)))
