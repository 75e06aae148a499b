"""The classic consumer-group protocol and committed offsets, as a pure decider.

Kafka 4.x ``GroupMetadataManager.classicGroup*`` / ``ClassicGroup`` / ``OffsetMetadataManager``
(see ``shared/reference/kafka-consumer-groups.md`` §4 and §7): JoinGroup (with KIP-394
MEMBER_ID_REQUIRED and KIP-345 static members), SyncGroup, Heartbeat, LeaveGroup (v3+ batch),
OffsetCommit and OffsetFetch, with rebalance generations, the initial rebalance delay, the join
(rebalance) timeout, the sync timeout and member session timeouts.

No I/O and no clock: every operation takes ``now_ms`` (ms since the epoch) and returns an
:class:`Outcome` — the events to append (``events.consumer_group``), the immediate reply (or
``None`` when the request is *parked*, Kafka's delayed JoinGroup/SyncGroup futures) and the
replies due to parked requests, keyed by ``(kind, member id)``. Timers are data: every deadline
is a field, :meth:`ClassicGroup.next_deadline` is the earliest, and :meth:`ClassicGroup.tick`
fires what is due at ``now_ms`` (the actor schedules one ``wakeupAfter`` for it).

As in Kafka, classic membership between GroupMetadata records is soft state changed in place
(parked requests, pending member ids, timers). Committed offsets change only through
:meth:`ClassicGroup.apply` of an :class:`~events.consumer_group.OffsetsCommitted` event, after the
actor has appended it; :meth:`ClassicGroup.apply` of a GroupMetadata event rebuilds the group on
recovery (members then get fresh session timers, as Kafka's ``onLoaded`` does).

Group admin (reference §7.3, §8): :meth:`ClassicGroup.describe` (DescribeGroups),
:meth:`ClassicGroup.delete_group` (DeleteGroups: :class:`~events.consumer_group.OffsetsDeleted`
then :class:`~events.consumer_group.ConsumerGroupDeleted`, after which the id is a new group) and
:meth:`ClassicGroup.delete_offsets` (OffsetDelete, with the members' ConsumerProtocol
subscriptions parsed by :func:`parse_subscription_topics`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from actors.consumer.offsets import FetchedOffset, decide_offset_delete, fetch_committed, validate_commit_partitions
from config import BROKER_DEFAULTS
from events.base import DomainEvent
from events.consumer_group import (
    ClassicGroupMetadataRecorded,
    ClassicMemberMetadata,
    CommittedOffset,
    ConsumerGroupDeleted,
    DeletedOffset,
    OffsetsCommitted,
    OffsetsDeleted,
)

__all__ = [
    "ClassicConfig",
    "ClassicGroup",
    "ClassicMember",
    "CommitPartition",
    "DeleteGroupResult",
    "DescribedGroup",
    "DescribedMember",
    "FetchedOffset",
    "OffsetDeleteResult",
    "HeartbeatResult",
    "JoinGroupResult",
    "JoinedMember",
    "LeaveMember",
    "LeaveGroupResult",
    "OffsetCommitResult",
    "Outcome",
    "SyncGroupResult",
]

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"
JOIN, SYNC = "join", "sync"

#: ``ClassicGroupMember.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS``: a new member's first timer
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


def _default(key: str) -> int:
    return int(BROKER_DEFAULTS[key])


@dataclass(frozen=True)
class ClassicConfig:
    """Broker configs of classic groups (Kafka's keys, ``GroupCoordinatorConfig``; defaults from
    ``config.BROKER_DEFAULTS``): ``group.min.session.timeout.ms``,
    ``group.max.session.timeout.ms``, ``group.initial.rebalance.delay.ms``, ``group.max.size``,
    ``offset.metadata.max.bytes`` (all ms or counts)."""

    min_session_timeout_ms: int = _default("group.min.session.timeout.ms")
    max_session_timeout_ms: int = _default("group.max.session.timeout.ms")
    initial_rebalance_delay_ms: int = _default("group.initial.rebalance.delay.ms")
    max_size: int = _default("group.max.size")
    offset_metadata_max_bytes: int = _default("offset.metadata.max.bytes")

    def session_timeout_valid(self, session_timeout_ms: int) -> bool:
        """Whether a JoinGroup's session timeout (ms) lies within ``group.min.session.timeout.ms``
        and ``group.max.session.timeout.ms`` (``GroupCoordinatorService.joinGroup``, checked
        before the group is looked up: INVALID_SESSION_TIMEOUT otherwise)."""
        return self.min_session_timeout_ms <= session_timeout_ms <= self.max_session_timeout_ms

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> "ClassicConfig":
        """Read the keys above from a broker config mapping (strings); missing keys keep the
        defaults. Raises ``ValueError`` for a non-integer value."""

        def get(key: str) -> int:
            return int(cfg.get(key, BROKER_DEFAULTS[key]))

        return cls(
            get("group.min.session.timeout.ms"),
            get("group.max.session.timeout.ms"),
            get("group.initial.rebalance.delay.ms"),
            get("group.max.size"),
            get("offset.metadata.max.bytes"),
        )


# ---------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class JoinedMember:
    """A member as the leader's JoinGroup response lists it: id, instance id, protocol metadata."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinGroupResult:
    """A JoinGroup response: ``error`` ``None`` for NONE, else Kafka's error name; ``members``
    non-empty for the leader only; ``skip_assignment`` for a replaced static leader (v9+)."""

    error: str | None
    generation: int = -1
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinedMember, ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True)
class SyncGroupResult:
    """A SyncGroup response: ``error`` (``None``: NONE), protocol type and name, the member's
    assignment bytes."""

    error: str | None
    protocol_type: str | None = None
    protocol: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True)
class HeartbeatResult:
    """A Heartbeat response: ``error`` ``None`` (NONE) or an error name."""

    error: str | None


@dataclass(frozen=True)
class LeaveMember:
    """One member of a LeaveGroup request (v3+ batch; v0-2 send one): ``member_id`` may be ""
    with a ``group_instance_id`` (an admin removal of a static member)."""

    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True)
class LeaveGroupResult:
    """LeaveGroup: top-level ``error`` and per member ``(member id, instance id, error)``."""

    error: str | None
    members: tuple[tuple[str, str | None, str | None], ...] = ()


@dataclass(frozen=True)
class CommitPartition:
    """One partition of an OffsetCommit request (``metadata`` ``None`` is stored as "")."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


@dataclass(frozen=True)
class OffsetCommitResult:
    """OffsetCommit: per partition ``(topic, partition, error)`` in request order."""

    partitions: tuple[tuple[str, int, str | None], ...]


@dataclass
class Outcome:
    """What one operation decided: ``events`` to append (in order), the immediate ``reply``
    (``None`` while the request is parked), ``parked`` ``(kind, member id)`` under which the
    request waits, and ``replies`` to parked requests ``[((kind, member id), result)]``, to send
    once the events are durable (in order; an earlier parked key may be answered in the same
    outcome that parks it)."""

    events: list[DomainEvent] = field(default_factory=list)
    reply: Any = None
    parked: tuple[str, str] | None = None
    replies: list[tuple[tuple[str, str], Any]] = field(default_factory=list)

    def merge(self, other: "Outcome") -> "Outcome":
        """Append ``other``'s events and parked replies to this one (its reply/parked are kept
        only when this one has none)."""
        self.events.extend(other.events)
        self.replies.extend(other.replies)
        if self.reply is None:
            self.reply = other.reply
        if self.parked is None:
            self.parked = other.parked
        return self


# ---------------------------------------------------------------------------------- the group


@dataclass
class ClassicMember:
    """A member of a classic group (Kafka ``ClassicGroupMember``): ``protocols`` the
    ``(name, metadata)`` list in preference order; ``assignment`` bytes; ``awaiting_join`` /
    ``awaiting_sync`` whether a JoinGroup / SyncGroup of it is parked; ``is_new`` until its
    first generation; ``deadline_ms`` its heartbeat (session) deadline."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    awaiting_join: bool = False
    awaiting_sync: bool = False
    is_new: bool = False
    deadline_ms: int = 0

    def metadata(self, protocol: str | None) -> bytes:
        """This member's metadata for ``protocol`` (b"" if it does not support it)."""
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""


class ClassicGroup:
    """One classic group (``ClassicGroup``) with its committed offsets.

    ``id_factory`` makes the UUID part of new member ids (injected so tests are deterministic;
    Kafka: ``<clientId or instanceId>-<UUID>``)."""

    def __init__(self, group_id: str, config: ClassicConfig | None = None, id_factory: Callable[[], str] | None = None) -> None:
        self.group_id = group_id
        self.config = config or ClassicConfig()
        self._new_id = id_factory or (lambda: str(uuid.uuid4()))
        self.exists = False
        self.state = EMPTY
        self.state_timestamp_ms = 0
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol: str | None = None
        self.leader: str | None = None
        self.members: dict[str, ClassicMember] = {}
        self.static: dict[str, str] = {}  # instance id -> member id
        self.pending: dict[str, int] = {}  # KIP-394 member id -> deadline (ms)
        self.join_deadline_ms: int | None = None
        self.initial_delay_remaining_ms: int | None = None  # set while in the initial delay
        self.new_member_during_delay = False
        self.sync_deadline_ms: int | None = None
        self.pending_sync: set[str] = set()
        self.offsets: dict[tuple[str, int], CommittedOffset] = {}

    # ------------------------------------------------------------------ folding

    def apply(self, ev: DomainEvent) -> None:
        """Fold one event of the group's stream. ``OffsetsCommitted`` stores the offsets (live and
        on recovery). ``ClassicGroupMetadataRecorded`` restores the group (recovery only: live, the
        decider has already changed the soft state it records): Stable with the recorded members if any (their session timers start
        at the next :meth:`touch_all`), otherwise Empty. ``OffsetsDeleted`` and
        ``ConsumerGroupDeleted``: :meth:`_apply_admin`. Other events are ignored."""
        if self._apply_admin(ev):
            return
        self.exists = True
        if isinstance(ev, OffsetsCommitted):
            for o in ev.offsets:
                self.offsets[(o.topic, o.partition)] = o
        elif isinstance(ev, ClassicGroupMetadataRecorded):
            self.generation = ev.generation
            self.protocol_type = ev.protocol_type
            self.protocol = ev.protocol
            self.leader = ev.leader
            self.state_timestamp_ms = ev.current_state_timestamp_ms
            self.members = {}
            self.static = {}
            for mm in ev.members:
                self.members[mm.member_id] = ClassicMember(
                    mm.member_id, mm.group_instance_id, mm.client_id, mm.client_host,
                    mm.session_timeout_ms, mm.rebalance_timeout_ms, ev.protocol_type or "",
                    ((ev.protocol or "", mm.subscription),), mm.assignment,
                )
                if mm.group_instance_id:
                    self.static[mm.group_instance_id] = mm.member_id
            self.state = STABLE if self.members else EMPTY

    def touch_all(self, now_ms: int) -> None:
        """Start every member's session timer at ``now_ms`` (after recovery)."""
        for m in self.members.values():
            m.deadline_ms = now_ms + m.session_timeout_ms

    # ------------------------------------------------------------------ helpers

    def _transition(self, state: str, now_ms: int) -> None:
        self.state = state
        self.state_timestamp_ms = now_ms

    def _metadata_event(self) -> ClassicGroupMetadataRecorded:
        return ClassicGroupMetadataRecorded(
            self.group_id, self.state, self.generation, self.protocol_type, self.protocol, self.leader,
            self.state_timestamp_ms,
            tuple(
                ClassicMemberMetadata(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                      m.session_timeout_ms, m.rebalance_timeout_ms, m.metadata(self.protocol), m.assignment)
                for _, m in sorted(self.members.items())
            ),
        )

    def _candidates(self) -> set[str]:
        """Protocols every member supports (``ClassicGroup.candidateProtocols``)."""
        sets = [set(n for n, _ in m.protocols) for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def _select_protocol(self) -> str:
        """Each member votes for its first candidate; most votes wins; ties broken by name
        (Kafka's are arbitrary)."""
        cands = self._candidates()
        votes: dict[str, int] = {}
        for m in self.members.values():
            for n, _ in m.protocols:
                if n in cands:
                    votes[n] = votes.get(n, 0) + 1
                    break
        return sorted(votes.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]

    def _supports(self, protocol_type: str, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        """``ClassicGroup.supportsProtocols``."""
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        names = {n for n, _ in protocols}
        return protocol_type == self.protocol_type and bool(names & self._candidates())

    def _validate_member(self, member_id: str, instance_id: str | None) -> str | None:
        """``ClassicGroup.validateMember``: UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID or ``None``."""
        if instance_id:
            known = self.static.get(instance_id)
            if known is None:
                return "UNKNOWN_MEMBER_ID"
            if known != member_id:
                return "FENCED_INSTANCE_ID"
        if member_id not in self.members:
            return "UNKNOWN_MEMBER_ID"
        return None

    def _max_rebalance_timeout(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def _join_result(self, m: ClassicMember, skip: bool = False) -> JoinGroupResult:
        members: tuple[JoinedMember, ...] = ()
        if m.member_id == self.leader:
            members = tuple(JoinedMember(x.member_id, x.group_instance_id, x.metadata(self.protocol)) for x in self.members.values())
        return JoinGroupResult(None, self.generation, self.protocol_type, self.protocol, self.leader or "", m.member_id, members, skip)

    def _remove_member(self, member_id: str, out: Outcome, error: str = "UNKNOWN_MEMBER_ID") -> None:
        m = self.members.pop(member_id, None)
        if m is None:
            return
        if m.group_instance_id and self.static.get(m.group_instance_id) == member_id:
            del self.static[m.group_instance_id]
        if m.awaiting_join:
            out.replies.append(((JOIN, member_id), JoinGroupResult(error, member_id=member_id)))
        if m.awaiting_sync:
            out.replies.append(((SYNC, member_id), SyncGroupResult(error)))
        self.pending_sync.discard(member_id)
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)

    # ------------------------------------------------------------------ rebalance

    def _prepare_rebalance(self, now_ms: int, out: Outcome) -> None:
        """``prepareRebalance``: from CompletingRebalance reset assignments and answer parked
        syncs REBALANCE_IN_PROGRESS; from Empty wait the initial delay; else the largest
        rebalance timeout."""
        if self.state == COMPLETING:
            for m in self.members.values():
                m.assignment = b""
                if m.awaiting_sync:
                    m.awaiting_sync = False
                    out.replies.append(((SYNC, m.member_id), SyncGroupResult("REBALANCE_IN_PROGRESS")))
        self.sync_deadline_ms = None
        self.pending_sync.clear()
        if self.state == EMPTY:
            delay = self.config.initial_rebalance_delay_ms
            self.initial_delay_remaining_ms = max(self._max_rebalance_timeout() - delay, 0)
            self.new_member_during_delay = False
            self.join_deadline_ms = now_ms + delay
        else:
            self.initial_delay_remaining_ms = None
            self.join_deadline_ms = now_ms + self._max_rebalance_timeout()
        self._transition(PREPARING, now_ms)

    def _all_joined(self) -> bool:
        return not self.pending and all(m.awaiting_join for m in self.members.values())

    def _maybe_complete_join(self, now_ms: int, out: Outcome) -> None:
        if self.state == PREPARING and self.initial_delay_remaining_ms is None and self._all_joined():
            self._complete_join(now_ms, out)

    def _complete_join(self, now_ms: int, out: Outcome) -> None:
        """``completeClassicGroupJoin``: drop dynamic members that did not rejoin, pick the
        leader, start the next generation and answer the parked joins."""
        for m in list(self.members.values()):
            if not m.awaiting_join and not m.group_instance_id:
                self._remove_member(m.member_id, out)
        if self.members and not any(m.awaiting_join for m in self.members.values()):
            self.join_deadline_ms = now_ms + self._max_rebalance_timeout()
            return
        self.join_deadline_ms = None
        self.initial_delay_remaining_ms = None
        if self.leader not in self.members or not self.members[self.leader].awaiting_join:
            self.leader = next((m.member_id for m in self.members.values() if m.awaiting_join), None)
        self.generation += 1
        if not self.members:
            self.protocol = None  # the protocol type stays (ListGroups shows an Empty "consumer" group)
            self.leader = None
            self._transition(EMPTY, now_ms)
            out.events.append(self._metadata_event())
            return
        self.protocol = self._select_protocol()
        self._transition(COMPLETING, now_ms)
        for m in self.members.values():
            if m.awaiting_join:
                m.awaiting_join = False
                out.replies.append(((JOIN, m.member_id), self._join_result(m)))
            m.is_new = False
            m.deadline_ms = now_ms + m.session_timeout_ms
        self.pending_sync = set(self.members)
        self.sync_deadline_ms = now_ms + self._max_rebalance_timeout()

    # ------------------------------------------------------------------ timers

    def next_deadline(self) -> int | None:
        """The earliest timer (ms since the epoch), or ``None``."""
        dues = [m.deadline_ms for m in self.members.values()]
        dues.extend(self.pending.values())
        if self.join_deadline_ms is not None:
            dues.append(self.join_deadline_ms)
        if self.sync_deadline_ms is not None:
            dues.append(self.sync_deadline_ms)
        return min(dues) if dues else None

    def tick(self, now_ms: int) -> Outcome:
        """Fire every timer due at ``now_ms``: pending member ids expire; members whose session
        (or new-member join timeout) passed are removed unless a Join or Sync of theirs is parked
        (new members always); the join timer completes the join (the initial delay re-arms while
        members keep arriving); the sync timer removes members that did not sync and rebalances."""
        out = Outcome()
        for mid, due in list(self.pending.items()):
            if due <= now_ms:
                del self.pending[mid]
                self._maybe_complete_join(now_ms, out)
        for m in list(self.members.values()):
            if m.deadline_ms <= now_ms and (m.is_new or not (m.awaiting_join or m.awaiting_sync)):
                self._remove_member(m.member_id, out)
                if self.state in (STABLE, COMPLETING):
                    self._prepare_rebalance(now_ms, out)
                else:
                    self._maybe_complete_join(now_ms, out)
        if self.join_deadline_ms is not None and self.join_deadline_ms <= now_ms and self.state == PREPARING:
            rem = self.initial_delay_remaining_ms
            if rem is not None and self.new_member_during_delay and rem > 0:
                step = min(self.config.initial_rebalance_delay_ms, rem)
                self.initial_delay_remaining_ms = rem - step
                self.new_member_during_delay = False
                self.join_deadline_ms = now_ms + step
            else:
                self.initial_delay_remaining_ms = None
                self._complete_join(now_ms, out)
        if self.sync_deadline_ms is not None and self.sync_deadline_ms <= now_ms and self.state == COMPLETING:
            for mid in sorted(self.pending_sync):
                self._remove_member(mid, out)
            self._prepare_rebalance(now_ms, out)
            self._maybe_complete_join(now_ms, out)
        return out

    # ------------------------------------------------------------------ JoinGroup

    def join(self, now_ms: int, *, member_id: str, group_instance_id: str | None, protocol_type: str,
             protocols: tuple[tuple[str, bytes], ...], session_timeout_ms: int, rebalance_timeout_ms: int,
             client_id: str = "", client_host: str = "", api_version: int = 9) -> Outcome:
        """JoinGroup: :meth:`_join`; a join that creates the group and records nothing else
        records the new Empty group (GMM ``classicGroupJoin``: "a new group whose join wrote
        nothing writes an empty GroupMetadata record"), so it outlives a restart."""
        was_new = not self.exists
        out = self._join(now_ms, member_id=member_id, group_instance_id=group_instance_id, protocol_type=protocol_type,
                         protocols=protocols, session_timeout_ms=session_timeout_ms,
                         rebalance_timeout_ms=rebalance_timeout_ms, client_id=client_id, client_host=client_host,
                         api_version=api_version)
        if was_new and self.exists and not out.events:
            out.events.append(ClassicGroupMetadataRecorded(
                self.group_id, EMPTY, self.generation, None, None, None, self.state_timestamp_ms, ()))
        return out

    def _join(self, now_ms: int, *, member_id: str, group_instance_id: str | None, protocol_type: str,
              protocols: tuple[tuple[str, bytes], ...], session_timeout_ms: int, rebalance_timeout_ms: int,
              client_id: str = "", client_host: str = "", api_version: int = 9) -> Outcome:
        """JoinGroup (``classicGroupJoinToClassicGroup``). ``rebalance_timeout_ms`` -1 (v0) means
        the session timeout. Errors: INVALID_SESSION_TIMEOUT, UNKNOWN_MEMBER_ID (a non-empty id
        unknown to the group), INCONSISTENT_GROUP_PROTOCOL, MEMBER_ID_REQUIRED (v4+ dynamic
        member with an empty id; the reply carries the new id), FENCED_INSTANCE_ID,
        GROUP_MAX_SIZE_REACHED. Parks the request until the generation completes."""
        out = Outcome()
        if rebalance_timeout_ms < 0:
            rebalance_timeout_ms = session_timeout_ms
        if not self.config.session_timeout_valid(session_timeout_ms):
            out.reply = JoinGroupResult("INVALID_SESSION_TIMEOUT", member_id=member_id)
            return out
        if member_id and not self.exists:
            out.reply = JoinGroupResult("UNKNOWN_MEMBER_ID", member_id=member_id)
            return out
        if self.state == DEAD:
            out.reply = JoinGroupResult("COORDINATOR_NOT_AVAILABLE", member_id=member_id)
            return out
        if not self._supports(protocol_type, protocols):
            out.reply = JoinGroupResult("INCONSISTENT_GROUP_PROTOCOL", member_id=member_id)
            return out
        self.exists = True

        def new_member(mid: str) -> Outcome:
            if len(self.members) >= self.config.max_size:
                return Outcome(reply=JoinGroupResult("GROUP_MAX_SIZE_REACHED", member_id=mid))
            m = ClassicMember(mid, group_instance_id, client_id, client_host, session_timeout_ms, rebalance_timeout_ms,
                              protocol_type, protocols, awaiting_join=True, is_new=True,
                              deadline_ms=now_ms + NEW_MEMBER_JOIN_TIMEOUT_MS)
            self.members[mid] = m
            if group_instance_id:
                self.static[group_instance_id] = mid
            if len(self.members) == 1:
                self.protocol_type = protocol_type  # the first member sets the group's type
            o = Outcome(parked=(JOIN, mid))
            if self.state == PREPARING:
                self.new_member_during_delay = True
            else:
                self._prepare_rebalance(now_ms, o)
            self._maybe_complete_join(now_ms, o)
            return o

        if not member_id:
            prefix = group_instance_id or client_id
            if group_instance_id and group_instance_id in self.static:
                return self._replace_static(now_ms, group_instance_id, f"{prefix}-{self._new_id()}", protocols,
                                            session_timeout_ms, rebalance_timeout_ms, client_id, client_host)
            mid = f"{prefix}-{self._new_id()}"
            if not group_instance_id and api_version >= 4:
                self.pending[mid] = now_ms + session_timeout_ms
                out.reply = JoinGroupResult("MEMBER_ID_REQUIRED", member_id=mid)
                return out
            return new_member(mid)
        if member_id in self.pending:
            del self.pending[member_id]
            return new_member(member_id)
        err = self._validate_member(member_id, group_instance_id)
        if err is not None:
            out.reply = JoinGroupResult(err, member_id=member_id)
            return out
        m = self.members[member_id]
        changed = m.protocols != protocols
        if self.state == EMPTY:
            out.reply = JoinGroupResult("UNKNOWN_MEMBER_ID", member_id=member_id)
            return out
        m.session_timeout_ms, m.rebalance_timeout_ms = session_timeout_ms, rebalance_timeout_ms
        m.client_id, m.client_host = client_id or m.client_id, client_host or m.client_host
        if self.state in (COMPLETING, STABLE) and not changed and not (self.state == STABLE and member_id == self.leader):
            out.reply = self._join_result(m)
            return out
        m.protocols = protocols
        m.awaiting_join = True
        out.parked = (JOIN, member_id)
        if self.state != PREPARING:
            self._prepare_rebalance(now_ms, out)
        self._maybe_complete_join(now_ms, out)
        return out

    def _replace_static(self, now_ms: int, instance_id: str, new_id: str, protocols: tuple[tuple[str, bytes], ...],
                        session_timeout_ms: int, rebalance_timeout_ms: int, client_id: str, client_host: str) -> Outcome:
        """``classicGroupJoinNewStaticMember`` / ``replaceStaticMember``: the member id is swapped
        in place; the old id's parked Join/Sync gets FENCED_INSTANCE_ID and leadership moves.
        Stable with the selected protocol unchanged: no rebalance (one GroupMetadata record)."""
        out = Outcome()
        old_id = self.static[instance_id]
        old = self.members.pop(old_id)
        if old.awaiting_join:
            out.replies.append(((JOIN, old_id), JoinGroupResult("FENCED_INSTANCE_ID", member_id=old_id)))
        if old.awaiting_sync:
            out.replies.append(((SYNC, old_id), SyncGroupResult("FENCED_INSTANCE_ID")))
        m = ClassicMember(new_id, instance_id, client_id, client_host, session_timeout_ms, rebalance_timeout_ms,
                          old.protocol_type, protocols, assignment=old.assignment, deadline_ms=now_ms + session_timeout_ms)
        self.members[new_id] = m
        self.static[instance_id] = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        was_leader = self.leader == old_id
        if was_leader:
            self.leader = new_id
        if self.state == STABLE and self._selectable_protocol() == self.protocol:
            out.events.append(self._metadata_event())
            r = self._join_result(m, skip=was_leader)
            out.reply = r
            return out
        m.awaiting_join = True
        out.parked = (JOIN, new_id)
        if self.state != PREPARING:
            self._prepare_rebalance(now_ms, out)
        self._maybe_complete_join(now_ms, out)
        return out

    def _selectable_protocol(self) -> str | None:
        """The protocol :meth:`_select_protocol` would pick now (``None``: no common one)."""
        try:
            return self._select_protocol()
        except IndexError:
            return None

    # ------------------------------------------------------------------ SyncGroup

    def sync(self, now_ms: int, *, member_id: str, group_instance_id: str | None, generation: int,
             protocol_type: str | None, protocol: str | None, assignments: dict[str, bytes]) -> Outcome:
        """SyncGroup (``classicGroupSyncToClassicGroup``): UNKNOWN_MEMBER_ID (unknown or Empty
        group), validateMember, ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL (compared when
        both sides have a value), REBALANCE_IN_PROGRESS (PreparingRebalance). In
        CompletingRebalance the request is parked; the leader's assignments complete the
        generation (a GroupMetadata event, then every parked sync is answered, Stable). Stable:
        the stored assignment."""
        out = Outcome()
        if not self.exists or self.state == EMPTY:
            out.reply = SyncGroupResult("UNKNOWN_MEMBER_ID")
            return out
        err = self._validate_member(member_id, group_instance_id)
        if err is None and generation != self.generation:
            err = "ILLEGAL_GENERATION"
        if err is None and ((protocol_type and self.protocol_type and protocol_type != self.protocol_type)
                            or (protocol and self.protocol and protocol != self.protocol)):
            err = "INCONSISTENT_GROUP_PROTOCOL"
        if err is not None:
            out.reply = SyncGroupResult(err)
            return out
        m = self.members[member_id]
        if self.state == PREPARING:
            out.reply = SyncGroupResult("REBALANCE_IN_PROGRESS")
            return out
        m.deadline_ms = now_ms + m.session_timeout_ms
        if self.state == STABLE:
            out.reply = SyncGroupResult(None, self.protocol_type, self.protocol, m.assignment)
            return out
        # CompletingRebalance
        m.awaiting_sync = True
        self.pending_sync.discard(member_id)
        out.parked = (SYNC, member_id)
        if member_id == self.leader:
            for x in self.members.values():
                x.assignment = assignments.get(x.member_id, b"")
            self.sync_deadline_ms = None
            self.pending_sync.clear()
            self._transition(STABLE, now_ms)
            out.events.append(self._metadata_event())
            for x in self.members.values():
                if x.awaiting_sync:
                    x.awaiting_sync = False
                    out.replies.append(((SYNC, x.member_id), SyncGroupResult(None, self.protocol_type, self.protocol, x.assignment)))
        return out

    # ------------------------------------------------------------------ Heartbeat

    def heartbeat(self, now_ms: int, *, member_id: str, group_instance_id: str | None, generation: int) -> Outcome:
        """Heartbeat (``classicGroupHeartbeatToClassicGroup``): UNKNOWN_MEMBER_ID,
        FENCED_INSTANCE_ID, ILLEGAL_GENERATION, then Empty → UNKNOWN_MEMBER_ID, PreparingRebalance
        → REBALANCE_IN_PROGRESS, CompletingRebalance/Stable → NONE. A known member's session is
        renewed in the last three cases."""
        if not self.exists:
            return Outcome(reply=HeartbeatResult("UNKNOWN_MEMBER_ID"))
        err = self._validate_member(member_id, group_instance_id)
        if err is None and generation != self.generation:
            err = "ILLEGAL_GENERATION"
        if err is not None:
            return Outcome(reply=HeartbeatResult(err))
        if self.state == EMPTY:
            return Outcome(reply=HeartbeatResult("UNKNOWN_MEMBER_ID"))
        m = self.members[member_id]
        m.deadline_ms = now_ms + m.session_timeout_ms
        if self.state == PREPARING:
            return Outcome(reply=HeartbeatResult("REBALANCE_IN_PROGRESS"))
        return Outcome(reply=HeartbeatResult(None))

    # ------------------------------------------------------------------ LeaveGroup

    def leave(self, now_ms: int, members: list[LeaveMember]) -> Outcome:
        """LeaveGroup (``classicGroupLeaveToClassicGroup``): an unknown group → top-level
        UNKNOWN_MEMBER_ID; per member: an empty id with an instance id removes that static
        member, a pending id is dropped, else validateMember. A removed member's parked Join gets
        UNKNOWN_MEMBER_ID. Any removal starts a rebalance, or completes one under way; when the
        last member leaves the group goes Empty with the generation bumped."""
        out = Outcome()
        if not self.exists:
            out.reply = LeaveGroupResult("UNKNOWN_MEMBER_ID")
            return out
        results = []
        removed = False
        for lm in members:
            mid = lm.member_id
            if not mid and lm.group_instance_id:
                mid = self.static.get(lm.group_instance_id, "")
                err = None if mid else "UNKNOWN_MEMBER_ID"
            elif mid in self.pending:
                del self.pending[mid]
                results.append((lm.member_id, lm.group_instance_id, None))
                removed = True
                continue
            else:
                err = self._validate_member(mid, lm.group_instance_id)
            if err is None:
                self._remove_member(mid, out)
                removed = True
            results.append((lm.member_id, lm.group_instance_id, err))
        if removed:
            if self.state == PREPARING:
                self._maybe_complete_join(now_ms, out)
            elif self.state in (STABLE, COMPLETING) or (self.state == EMPTY and self.members):
                self._prepare_rebalance(now_ms, out)
                self._maybe_complete_join(now_ms, out)
            if self.state == PREPARING and not self.members and not self.pending:
                self.initial_delay_remaining_ms = None
                self._complete_join(now_ms, out)
        out.reply = LeaveGroupResult(None, tuple(results))
        return out

    # ------------------------------------------------------------------ offsets

    def commit(self, now_ms: int, *, member_id: str, group_instance_id: str | None, generation: int,
               partitions: list[CommitPartition], api_version: int = 9, retention_ms: int = -1) -> Outcome:
        """OffsetCommit (``OffsetMetadataManager.commitOffset``, ``ClassicGroup.validateOffsetCommit``).
        A missing group with generation < 0 becomes a simple group; with ≥ 0 it is
        GROUP_ID_NOT_FOUND (v9+) or ILLEGAL_GENERATION. Then: generation < 0 on an Empty group
        is accepted; an id or generation ≥ 0 runs validateMember and the generation check;
        otherwise a non-Empty group is UNKNOWN_MEMBER_ID; CompletingRebalance is
        REBALANCE_IN_PROGRESS. Metadata longer than ``offset.metadata.max.bytes`` gives that
        partition OFFSET_METADATA_TOO_LARGE. One :class:`OffsetsCommitted` event (the caller
        applies it once durable). The commit renews the member's session in Stable and
        PreparingRebalance."""
        def all_err(e: str) -> Outcome:
            return Outcome(reply=OffsetCommitResult(tuple((p.topic, p.partition, e) for p in partitions)))

        if not self.exists:
            if generation >= 0:
                return all_err("GROUP_ID_NOT_FOUND" if api_version >= 9 else "ILLEGAL_GENERATION")
        elif self.state == DEAD:
            return all_err("COORDINATOR_NOT_AVAILABLE")
        elif generation < 0 and self.state == EMPTY:
            pass
        elif generation >= 0 or member_id or group_instance_id:
            err = self._validate_member(member_id, group_instance_id)
            if err is None and generation != self.generation:
                err = "ILLEGAL_GENERATION"
            if err is not None:
                return all_err(err)
        elif self.state != EMPTY:
            return all_err("UNKNOWN_MEMBER_ID")
        if self.exists and self.state == COMPLETING:
            return all_err("REBALANCE_IN_PROGRESS")
        m = self.members.get(member_id)
        if m is not None and self.state in (STABLE, PREPARING):
            m.deadline_ms = now_ms + m.session_timeout_ms
        results, stored = validate_commit_partitions(partitions, now_ms, self.config.offset_metadata_max_bytes, retention_ms)
        out = Outcome(reply=OffsetCommitResult(tuple(results)))
        if stored:
            out.events.append(OffsetsCommitted(self.group_id, member_id, generation, tuple(stored)))
        return out

    def fetch_offsets(self, partitions: list[tuple[str, int]] | None) -> list[FetchedOffset]:
        """OffsetFetch (``OffsetMetadataManager.fetchOffsets``/``fetchAllOffsets``): the
        requested partitions (offset -1, leader epoch -1, metadata "" when none; also for a
        missing group), or ``None`` for every committed offset (sorted)."""
        return fetch_committed(self.offsets, partitions)

    def describe_state(self) -> str:
        """The group state's display name (``ClassicGroupState``): Empty, PreparingRebalance,
        CompletingRebalance, Stable, Dead."""
        return self.state

    # ------------------------------------------------------------------ group admin
    # DescribeGroups (15), DeleteGroups (42), OffsetDelete (47): reference §7.3 and §8.

    def _apply_admin(self, ev: DomainEvent) -> bool:
        """Fold the group-admin events; ``True`` when ``ev`` was one. ``OffsetsDeleted`` drops the
        listed offsets; ``ConsumerGroupDeleted`` forgets the whole group (members, generation,
        protocol, offsets, timers), so the id starts afresh as a group that never existed."""
        if isinstance(ev, OffsetsDeleted):
            for d in ev.partitions:
                self.offsets.pop((d.topic, d.partition), None)
            return True
        if isinstance(ev, ConsumerGroupDeleted):
            self._forget()
            return True
        return False

    def _forget(self) -> None:
        """Back to the state of a group that was never created (the config and id factory stay)."""
        ClassicGroup.__init__(self, self.group_id, self.config, self._new_id)

    def describe(self) -> "DescribedGroup":
        """DescribeGroups (GMM ``describeGroups``): a missing (or Dead) group is state ``Dead``
        with no error. Stable: protocol data is the protocol name and members carry metadata
        and assignment; any other state: protocol data "" and members carry the assignment only."""
        if not self.exists or self.state == DEAD:
            return DescribedGroup(self.group_id, DEAD, "", "", ())
        stable = self.state == STABLE
        members = tuple(
            DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                            m.metadata(self.protocol) if stable else b"", m.assignment)
            for m in self.members.values()
        )
        return DescribedGroup(self.group_id, self.state, self.protocol_type or "",
                              (self.protocol or "") if stable else "", members)

    def delete_group(self, now_ms: int) -> Outcome:
        """DeleteGroups of this group (CG ``validateDeleteGroup``, GCSh ``deleteGroups``):
        missing or Dead → GROUP_ID_NOT_FOUND; not Empty → NON_EMPTY_GROUP; otherwise every
        committed offset is tombstoned (one :class:`OffsetsDeleted`, when there are any) and then
        the group (:class:`ConsumerGroupDeleted`). The group is Dead until those events are
        applied (a JoinGroup or OffsetCommit meanwhile gets COORDINATOR_NOT_AVAILABLE and
        retries); applying ``ConsumerGroupDeleted`` makes the id a new, never-created group."""
        if not self.exists or self.state == DEAD:
            return Outcome(reply=DeleteGroupResult("GROUP_ID_NOT_FOUND"))
        if self.state != EMPTY:
            return Outcome(reply=DeleteGroupResult("NON_EMPTY_GROUP"))
        out = Outcome(reply=DeleteGroupResult(None))
        if self.offsets:
            out.events.append(OffsetsDeleted(self.group_id, tuple(DeletedOffset(t, p) for t, p in sorted(self.offsets))))
        out.events.append(ConsumerGroupDeleted(self.group_id))
        self._transition(DEAD, now_ms)
        return out

    def undo_delete(self, now_ms: int) -> None:
        """The append of a :meth:`delete_group` decision was refused: the group is Empty again."""
        if self.state == DEAD and self.exists:
            self._transition(EMPTY, now_ms)

    def subscribed_topics(self) -> set[str] | None:
        """The topics the members subscribe to (CG ``computeSubscribedTopics``): ``None`` unless
        the protocol type is ``consumer``; the empty set without members; ``None`` while no
        protocol is selected or when a member's ConsumerProtocolSubscription cannot be parsed."""
        if self.protocol_type != "consumer":
            return None
        if not self.members:
            return set()
        if not self.protocol:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            parsed = parse_subscription_topics(m.metadata(self.protocol))
            if parsed is None:
                return None
            topics.update(parsed)
        return topics

    def is_subscribed_to(self, topic: str) -> bool:
        """CG ``isSubscribedToTopic``: when the subscriptions are unknown (:meth:`subscribed_topics`
        is ``None``) a ``consumer`` group counts as subscribed to every topic, any other group
        to none."""
        return _subscribed(topic, self.subscribed_topics(), self.protocol_type)

    def delete_offsets(self, partitions: list[tuple[str, int]]) -> Outcome:
        """OffsetDelete (OMM ``deleteOffsets``, CG ``validateOffsetDelete``): missing or Dead →
        GROUP_ID_NOT_FOUND; a non-Empty group whose protocol type is not ``consumer`` →
        NON_EMPTY_GROUP. Per topic: GROUP_SUBSCRIBED_TO_TOPIC on every partition of a topic the
        group is subscribed to; otherwise NONE, and a tombstone (one :class:`OffsetsDeleted` for
        the request) only where an offset exists. Reply :class:`OffsetDeleteResult` in request
        order."""
        if not self.exists or self.state == DEAD:
            return Outcome(reply=OffsetDeleteResult("GROUP_ID_NOT_FOUND"))
        if self.state != EMPTY and self.protocol_type != "consumer":
            return Outcome(reply=OffsetDeleteResult("NON_EMPTY_GROUP"))
        subscribed = self.subscribed_topics()
        results, deleted = decide_offset_delete(self.group_id, self.offsets, partitions,
                                                lambda t: _subscribed(t, subscribed, self.protocol_type))
        return Outcome(events=[deleted] if deleted else [], reply=OffsetDeleteResult(None, results))


# ---------------------------------------------------------------------------------- admin results


@dataclass(frozen=True)
class DescribedMember:
    """A member as DescribeGroups shows it (``metadata`` b"" unless the group is Stable)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class DescribedGroup:
    """DescribeGroups of one classic group: state display name (``Dead`` when missing), protocol
    type ("" when none), protocol data (the protocol name when Stable, else ""), members."""

    group_id: str
    state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedMember, ...]


@dataclass(frozen=True)
class DeleteGroupResult:
    """DeleteGroups of one group: ``error`` ``None`` (deleted), GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP."""

    error: str | None


@dataclass(frozen=True)
class OffsetDeleteResult:
    """OffsetDelete: a group-level ``error`` (then no partitions) or per partition
    ``(topic, partition, error)`` in request order."""

    error: str | None
    partitions: tuple[tuple[str, int, str | None], ...] = ()


def _subscribed(topic: str, subscribed: set[str] | None, protocol_type: str | None) -> bool:
    if subscribed is None:
        return protocol_type == "consumer"
    return topic in subscribed


def parse_subscription_topics(data: bytes) -> list[str] | None:
    """The topics of a ConsumerProtocolSubscription (``ConsumerProtocolSubscription.json``: a
    non-flexible schema, int16 version, then ``Topics`` as an int32 count of int16-length UTF-8
    strings; later fields are not needed). ``None`` when the bytes do not parse (Kafka's
    ``SchemaException``)."""
    try:
        if len(data) < 6:
            return None
        version = int.from_bytes(data[0:2], "big", signed=True)
        if version < 0:
            return None
        n = int.from_bytes(data[2:6], "big", signed=True)
        if n < 0:
            return None
        pos, out = 6, []
        for _ in range(n):
            if pos + 2 > len(data):
                return None
            ln = int.from_bytes(data[pos:pos + 2], "big", signed=True)
            pos += 2
            if ln < 0 or pos + ln > len(data):
                return None
            out.append(data[pos:pos + ln].decode("utf-8"))
            pos += ln
        return out
    except (UnicodeDecodeError, ValueError):
        return None
