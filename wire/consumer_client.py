"""Classic consumer-group requests from the listener threads to the group's
:class:`actors.consumer.actor.ConsumerGroupActor` (one message per request).

The controller starts the actor through its child registry (kind ``"consumer"``,
:class:`actors.controller.messages.ChildLookup`); the address is cached per group. JoinGroup and
SyncGroup may wait for the rest of the group (the actor parks them), so they are asked with a
timeout above the request's rebalance timeout (``rebalance timeout + shoal.wire.actor.timeout.ms``);
everything else with ``shoal.wire.actor.timeout.ms``. A timeout or a ``NotReady`` answers
COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS (retriable for clients); an actor
``Failure`` gives its error.

A group id used by a share group is refused here (INCONSISTENT_GROUP_PROTOCOL for JoinGroup,
GROUP_ID_NOT_FOUND for a joining ConsumerGroupHeartbeat: Kafka's one-type-per-group-id rule,
reference §1). KIP-848 consumer groups (ConsumerGroupHeartbeat/Describe) live in the same actor.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from actors.base import event_log_for
from actors.consumer import messages as m
from actors.consumer.classic import (
    DeleteGroupResult,
    DescribedGroup,
    FetchedOffset,
    OffsetDeleteResult,
    HeartbeatResult,
    JoinGroupResult,
    LeaveGroupResult,
    OffsetCommitResult,
    SyncGroupResult,
)
from actors.consumer.modern import ConsumerGroupDescription, ConsumerHeartbeatResult
from actors.controller.messages import ChildLookup
from actors.messages import Failure, NotReady
from wire.gateway import ActorTimeout
from wire.group_types import GroupTypes

__all__ = ["ConsumerGroupClient", "STREAM_PREFIX"]

log = logging.getLogger("shoal.wire.consumer")

#: prefix of a consumer group's event stream (``events.consumer_group.stream_id_for``)
STREAM_PREFIX = "consumer-group:"


class ConsumerGroupClient:
    """``gateway`` asks actors; ``controller`` (:class:`wire.controller_client.ControllerClient`)
    starts and finds the group actors; ``cfg`` the broker config."""

    def __init__(self, gateway: Any, controller: Any, cfg: dict) -> None:
        self.gateway = gateway
        self.controller = controller
        self.cfg = cfg
        #: one type per group id (:class:`wire.group_types.GroupTypes`)
        self.group_types = GroupTypes(cfg)
        self.timeout_s = float(cfg.get("shoal.wire.actor.timeout.ms", "30000")) / 1000
        self._lock = threading.Lock()
        self._children: dict[str, Any] = {}
        #: ``is_coordinator(group) -> bool``: whether this node coordinates the group (a cluster
        #: places each group on one node, ``ShoalBackend.is_coordinator``); others answer NOT_COORDINATOR
        self.is_coordinator: Callable[[str], bool] = lambda _group: True

    # ------------------------------------------------------------------ plumbing

    def _actor(self, group: str) -> Any:
        with self._lock:
            addr = self._children.get(group)
        if addr is not None:
            return addr
        r = self.controller.ask(ChildLookup("consumer", group, True), max(self.timeout_s, 60))
        if type(r).__name__ != "ChildAddress":
            raise ActorTimeout(f"consumer group {group}: {getattr(r, 'error', r)!r} {getattr(r, 'message', '')}")
        with self._lock:
            self._children[group] = r.address
        return r.address

    def _ask(self, group: str, msg: Any, timeout_s: float | None = None) -> tuple[str | None, Any]:
        """``(error, reply)``: error ``None`` with the actor's reply, else a Kafka error name
        (NOT_COORDINATOR when another node of the cluster coordinates ``group``)."""
        if not self.is_coordinator(group):
            with self._lock:
                self._children.pop(group, None)
            return "NOT_COORDINATOR", None
        try:
            r = self.gateway.ask(self._actor(group), msg, timeout_s or self.timeout_s)
        except ActorTimeout as exc:
            with self._lock:
                self._children.pop(group, None)
            log.info("consumer group %s: %s", group, exc)
            return "COORDINATOR_NOT_AVAILABLE", None
        if isinstance(r, NotReady):
            return "COORDINATOR_LOAD_IN_PROGRESS", None
        if isinstance(r, Failure):
            return r.error, None
        return None, r

    # ------------------------------------------------------------------ requests

    def join(self, cmd: m.JoinGroupCmd) -> JoinGroupResult:
        """JoinGroup; waits up to the rebalance timeout plus the actor timeout."""
        if self.group_types.is_share_group(cmd.group_id):
            return JoinGroupResult("INCONSISTENT_GROUP_PROTOCOL", member_id=cmd.member_id)
        wait = max(cmd.rebalance_timeout_ms, cmd.session_timeout_ms) / 1000 + self.timeout_s
        err, r = self._ask(cmd.group_id, cmd, wait)
        return r if isinstance(r, JoinGroupResult) else JoinGroupResult(err or "UNKNOWN_SERVER_ERROR", member_id=cmd.member_id)

    def sync(self, cmd: m.SyncGroupCmd, rebalance_timeout_ms: int = 300_000) -> SyncGroupResult:
        """SyncGroup; waits up to the (largest) rebalance timeout plus the actor timeout."""
        err, r = self._ask(cmd.group_id, cmd, rebalance_timeout_ms / 1000 + self.timeout_s)
        return r if isinstance(r, SyncGroupResult) else SyncGroupResult(err or "UNKNOWN_SERVER_ERROR")

    def heartbeat(self, cmd: m.HeartbeatCmd) -> HeartbeatResult:
        """Heartbeat."""
        err, r = self._ask(cmd.group_id, cmd)
        return r if isinstance(r, HeartbeatResult) else HeartbeatResult(err or "UNKNOWN_SERVER_ERROR")

    def leave(self, cmd: m.LeaveGroupCmd) -> LeaveGroupResult:
        """LeaveGroup."""
        err, r = self._ask(cmd.group_id, cmd)
        return r if isinstance(r, LeaveGroupResult) else LeaveGroupResult(err or "UNKNOWN_SERVER_ERROR")

    def commit(self, cmd: m.OffsetCommitCmd) -> OffsetCommitResult:
        """OffsetCommit of known partitions."""
        err, r = self._ask(cmd.group_id, cmd)
        if isinstance(r, OffsetCommitResult):
            return r
        return OffsetCommitResult(tuple((p.topic, p.partition, err or "UNKNOWN_SERVER_ERROR") for p in cmd.partitions))

    def fetch_offsets(self, group: str, partitions: list[tuple[str, int]] | None, member_id: str | None = None,
                      member_epoch: int = -1) -> tuple[str | None, list[FetchedOffset]]:
        """OffsetFetch → ``(group error, offsets)``."""
        err, r = self._ask(group, m.OffsetFetchCmd(group, None if partitions is None else tuple(partitions), member_id, member_epoch))
        if isinstance(r, m.OffsetFetchReply):
            return None, list(r.offsets)
        return err or "UNKNOWN_SERVER_ERROR", []

    def consumer_group_heartbeat(self, cmd: m.ConsumerGroupHeartbeatCmd) -> ConsumerHeartbeatResult:
        """ConsumerGroupHeartbeat (the command carries the topic image). A joining member (epoch
        0) of a share group's id gets GROUP_ID_NOT_FOUND."""
        if cmd.member_epoch == 0 and self.group_types.is_share_group(cmd.group_id):
            return ConsumerHeartbeatResult("GROUP_ID_NOT_FOUND", f"Group {cmd.group_id} is not a consumer group.",
                                           cmd.member_id, cmd.member_epoch)
        err, r = self._ask(cmd.group_id, cmd)
        if isinstance(r, ConsumerHeartbeatResult):
            return r
        return ConsumerHeartbeatResult(err or "UNKNOWN_SERVER_ERROR", None, cmd.member_id, cmd.member_epoch)

    def consumer_group_describe(self, group: str) -> ConsumerGroupDescription:
        """ConsumerGroupDescribe of one group."""
        err, r = self._ask(group, m.ConsumerGroupDescribeCmd(group))
        if isinstance(r, ConsumerGroupDescription):
            return r
        return ConsumerGroupDescription(group, err or "UNKNOWN_SERVER_ERROR")

    def list_groups(self) -> list[tuple[str, str, str, str]]:
        """``(group id, "classic" or "consumer", state, protocol type)`` of every consumer group
        in the event log or started this run; the state is asked from the group's actor (started
        if needed: a classic group's actor holds its soft state and never passivates)."""
        groups = set(self._children)
        try:
            groups |= {s[len(STREAM_PREFIX):] for s in event_log_for(self.cfg).stream_ids(STREAM_PREFIX)}
        except Exception:  # pragma: no cover
            log.debug("listing consumer-group streams failed", exc_info=True)
        out = []
        for gid in sorted(groups):
            err, r = self._ask(gid, m.DescribeConsumerGroup(gid))
            if isinstance(r, m.ConsumerGroupSummary):
                if r.exists:
                    out.append((gid, r.group_type, r.state, r.protocol_type))
            else:
                out.append((gid, "classic", "Unknown", ""))
        return out

    # ------------------------------------------------------------------ group admin (15, 42, 47)

    def known(self, group: str) -> bool:
        """Whether ``group`` may exist: its actor was started this run or its stream has events
        (a deleted group's stream still has, and its actor answers that it does not exist). A
        group that is neither gets its admin answers without starting an actor."""
        with self._lock:
            if group in self._children:
                return True
        try:
            return event_log_for(self.cfg).stream_version(STREAM_PREFIX + group) > 0
        except Exception:  # pragma: no cover - without a log, ask the actor
            return True

    def describe(self, group: str) -> tuple[str | None, DescribedGroup | None]:
        """DescribeGroups of one group → ``(error, DescribedGroup)``; a group that never existed is
        ``Dead`` without starting an actor."""
        if not self.known(group):
            return None, DescribedGroup(group, "Dead", "", "", ())
        err, r = self._ask(group, m.DescribeGroupCmd(group))
        if isinstance(r, DescribedGroup):
            return None, r
        return err or "UNKNOWN_SERVER_ERROR", None

    def delete_group(self, group: str) -> str | None:
        """DeleteGroups of one classic group → error name or ``None`` (deleted)."""
        if not self.known(group):
            return "GROUP_ID_NOT_FOUND"
        err, r = self._ask(group, m.DeleteGroupCmd(group))
        if isinstance(r, DeleteGroupResult):
            return r.error
        return err or "UNKNOWN_SERVER_ERROR"

    def delete_offsets(self, group: str, partitions: list[tuple[str, int]]) -> OffsetDeleteResult:
        """OffsetDelete of known partitions → :class:`OffsetDeleteResult`."""
        if not self.known(group):
            return OffsetDeleteResult("GROUP_ID_NOT_FOUND")
        err, r = self._ask(group, m.OffsetDeleteCmd(group, tuple(partitions)))
        if isinstance(r, OffsetDeleteResult):
            return r
        return OffsetDeleteResult(err or "UNKNOWN_SERVER_ERROR")
