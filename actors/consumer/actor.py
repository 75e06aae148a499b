"""``ConsumerGroupActor``: one Thespian actor per classic consumer group.

A thin shell around the pure decider :class:`actors.consumer.classic.ClassicGroup`:

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
from actors.consumer.classic import ClassicConfig, ClassicGroup, Outcome
from actors.messages import Configure, Configured, Failure, NotReady
from events.codec import decode_recorded, new_event
from events.consumer_group import ConsumerGroupDeleted, OffsetsCommitted, OffsetsDeleted, stream_id_for
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
        self._group: ClassicGroup | None = None
        self._waiting: dict[tuple[str, str], Any] = {}
        self._timer_due: int | None = None
        self._recovery_gen = 0

    # ------------------------------------------------------------------ lifecycle

    def receiveMsg_Configure(self, msg: Configure, sender: Any) -> None:
        """Recover the group from its stream and answer ``Configured``; ``Failure(INVALID_CONFIG)``
        for a bad config, ``Failure(COORDINATOR_LOAD_IN_PROGRESS)`` when the log cannot be read."""
        try:
            self._config = ClassicConfig.from_config(msg.config)
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
                    acc["group"].apply(decode_recorded(rec))
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
        self._finish(self._group.tick(now), None, now)

    # ------------------------------------------------------------------ the common step

    def _finish(self, out: Outcome, sender: Any, now: int) -> None:
        """Register the parked request, append ``out.events``, then evolve and send the reply and
        the parked replies (or ``Failure`` to all of them when the append is refused)."""
        if out.parked is not None and sender is not None:
            self._waiting[out.parked] = sender

        def deliver(error: tuple[str, str] | None) -> None:
            for key, result in out.replies:
                to = self._waiting.pop(key, None)
                if to is not None:
                    self.send(to, result if error is None else Failure(*error))
            if sender is not None and out.reply is not None:
                self.send(sender, out.reply if error is None else Failure(*error))
            self._schedule(now)

        if not out.events:
            deliver(None)
            return
        req = AppendRequest(self._stream, [new_event(e) for e in out.events], self._version)

        def done(results: list[AppendResult] | PersistError) -> None:
            if isinstance(results, PersistError):
                if self._group is not None and any(isinstance(e, ConsumerGroupDeleted) for e in out.events):
                    self._group.undo_delete(now)
                if results.error == "CONCURRENCY":
                    self._ready = False
                    self._recovery_gen += 1
                    self._recover(self._recovery_gen, None)
                    deliver(("NOT_COORDINATOR", str(results)))
                else:
                    deliver(("COORDINATOR_NOT_AVAILABLE", str(results)))
                return
            assert self._group is not None
            for e in out.events:
                if isinstance(e, (OffsetsCommitted, OffsetsDeleted, ConsumerGroupDeleted)):
                    self._group.apply(e)
            self._version = results[0].last_version
            deliver(None)

        self.persist([req], done)

    def _run(self, msg: Any, sender: Any, decide: Any) -> None:
        if not self._ready or self._group is None:
            self.send(sender, NotReady(self._group_id))
            return
        now = _now_ms()
        try:
            out = self._group.tick(now)
            out.merge(decide(self._group, now))
        except Exception as exc:  # a bug must not kill the group
            log.exception("consumer group %s: %s failed", self._group_id, type(msg).__name__)
            self.send(sender, Failure("UNKNOWN_SERVER_ERROR", f"{type(exc).__name__}: {exc}"))
            return
        self._finish(out, sender, now)

    # ------------------------------------------------------------------ requests

    def receiveMsg_JoinGroupCmd(self, msg: m.JoinGroupCmd, sender: Any) -> None:
        """JoinGroup → ``JoinGroupResult`` (at once or when the generation completes)."""
        self._run(msg, sender, lambda g, now: g.join(
            now, member_id=msg.member_id, group_instance_id=msg.group_instance_id, protocol_type=msg.protocol_type,
            protocols=msg.protocols, session_timeout_ms=msg.session_timeout_ms,
            rebalance_timeout_ms=msg.rebalance_timeout_ms, client_id=msg.client_id, client_host=msg.client_host,
            api_version=msg.api_version))

    def receiveMsg_SyncGroupCmd(self, msg: m.SyncGroupCmd, sender: Any) -> None:
        """SyncGroup → ``SyncGroupResult`` (at once or when the leader's assignment is stored)."""
        self._run(msg, sender, lambda g, now: g.sync(
            now, member_id=msg.member_id, group_instance_id=msg.group_instance_id, generation=msg.generation,
            protocol_type=msg.protocol_type, protocol=msg.protocol, assignments=dict(msg.assignments)))

    def receiveMsg_HeartbeatCmd(self, msg: m.HeartbeatCmd, sender: Any) -> None:
        """Heartbeat → ``HeartbeatResult``."""
        self._run(msg, sender, lambda g, now: g.heartbeat(
            now, member_id=msg.member_id, group_instance_id=msg.group_instance_id, generation=msg.generation))

    def receiveMsg_LeaveGroupCmd(self, msg: m.LeaveGroupCmd, sender: Any) -> None:
        """LeaveGroup → ``LeaveGroupResult``."""
        self._run(msg, sender, lambda g, now: g.leave(now, list(msg.members)))

    def receiveMsg_OffsetCommitCmd(self, msg: m.OffsetCommitCmd, sender: Any) -> None:
        """OffsetCommit → ``OffsetCommitResult`` once the offsets are durable."""
        self._run(msg, sender, lambda g, now: g.commit(
            now, member_id=msg.member_id, group_instance_id=msg.group_instance_id, generation=msg.generation,
            partitions=list(msg.partitions), api_version=msg.api_version, retention_ms=msg.retention_ms))

    def receiveMsg_OffsetFetchCmd(self, msg: m.OffsetFetchCmd, sender: Any) -> None:
        """OffsetFetch → ``OffsetFetchReply`` (reads the applied, i.e. durable, offsets)."""
        self._run(msg, sender, lambda g, now: Outcome(reply=m.OffsetFetchReply(tuple(
            g.fetch_offsets(None if msg.partitions is None else list(msg.partitions))))))

    def receiveMsg_DescribeConsumerGroup(self, msg: m.DescribeConsumerGroup, sender: Any) -> None:
        """→ ``ConsumerGroupSummary`` (state, protocol type, member count)."""
        self._run(msg, sender, lambda g, now: Outcome(reply=m.ConsumerGroupSummary(
            g.group_id, g.describe_state(), g.protocol_type or "", g.exists, len(g.members))))

    # ------------------------------------------------------------------ group admin

    def receiveMsg_DescribeGroupCmd(self, msg: m.DescribeGroupCmd, sender: Any) -> None:
        """DescribeGroups → ``DescribedGroup`` (``Dead`` for a group that does not exist)."""
        self._run(msg, sender, lambda g, now: Outcome(reply=g.describe()))

    def receiveMsg_DeleteGroupCmd(self, msg: m.DeleteGroupCmd, sender: Any) -> None:
        """DeleteGroups → ``DeleteGroupResult`` once the tombstones are durable; the group is then
        forgotten (the id may be used again as a new group)."""
        self._run(msg, sender, lambda g, now: g.delete_group(now))

    def receiveMsg_OffsetDeleteCmd(self, msg: m.OffsetDeleteCmd, sender: Any) -> None:
        """OffsetDelete → ``OffsetDeleteResult`` once the tombstones are durable."""
        self._run(msg, sender, lambda g, now: g.delete_offsets(list(msg.partitions)))
