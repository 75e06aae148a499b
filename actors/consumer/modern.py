"""The KIP-848 consumer-protocol group (ConsumerGroupHeartbeat 68), as a pure decider.

Kafka 4.x ``GroupMetadataManager.consumerGroupHeartbeat`` / ``ConsumerGroup`` /
``CurrentAssignmentBuilder`` / ``TargetAssignmentBuilder`` (``shared/reference/
kafka-consumer-groups.md`` §5, §6, §7.1):

- **Epochs.** The group epoch (bumped when a subscription or the subscribed topics' metadata
  change, and when a member is fenced or leaves) and the assignment epoch (the epoch of the target
  assignment, computed by the server-side assignor, :mod:`actors.consumer.assignors`, when the
  group epoch is ahead of it).
- **Members** reconcile towards their target one step per heartbeat (:func:`reconcile`, Kafka's
  ``CurrentAssignmentBuilder``): partitions are revoked before new ones are given, and a partition
  is given only once its previous owner has released it.
- **Static members** (instance ids): epoch -2 leaves keeping the partitions; a new member id with
  the same instance id takes over the old member's target and assignment.
- **Timers are data**: each member's session deadline and, while it must revoke partitions, its
  rebalance deadline; :meth:`ModernGroup.next_deadline` / :meth:`ModernGroup.tick` as in
  :class:`actors.consumer.classic.ClassicGroup`.

Records (``events.consumer_group`` types 3-8) are applied to the group as they are decided
(Kafka replays its records on write too), so :meth:`ModernGroup.apply` alone rebuilds the group
from the stream. A heartbeat that fails after some records were decided (the assignor throws)
restores the group as it was and writes nothing. Committed offsets change only when the actor
applies the :class:`~events.consumer_group.OffsetsCommitted` event after it is durable.

Topic metadata is an input: every heartbeat and tick takes the caller's topic image (topic
name → (topic id, partition count)); the group keeps the last one for timers.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

from actors.consumer.assignors import ASSIGNORS, AssignorError, GroupSpec, MemberSpec, assign
from actors.consumer.classic import DeleteGroupResult, DescribedGroup, LeaveGroupResult, LeaveMember, OffsetCommitResult, OffsetDeleteResult, Outcome
from actors.consumer.offsets import decide_offset_delete, fetch_committed, validate_commit_partitions
from config import BROKER_DEFAULTS
from events.base import DomainEvent
from events.consumer_group import (
    CommittedOffset,
    ConsumerGroupCurrentMemberAssignmentRecorded,
    ConsumerGroupEpochRecorded,
    ConsumerGroupMemberSubscriptionRecorded,
    ConsumerGroupSubscriptionMetadataRecorded,
    ConsumerGroupTargetAssignmentEpochRecorded,
    ConsumerGroupTargetAssignmentMemberRecorded,
    ConsumerTopicMetadata,
    ConsumerTopicPartition,
    ConsumerGroupDeleted,
    DeletedOffset,
    OffsetsCommitted,
    OffsetsDeleted,
)

__all__ = [
    "ConsumerGroupDescription",
    "ConsumerHeartbeatResult",
    "DescribedMember",
    "HeartbeatError",
    "ModernConfig",
    "ModernGroup",
    "ModernMember",
    "STABLE",
    "UNKNOWN",
    "UNRELEASED_PARTITIONS",
    "UNREVOKED_PARTITIONS",
    "reconcile",
    "validate_heartbeat",
]

#: ``MemberState`` values (the type-8 record's ``state``)
STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS, UNKNOWN = 0, 1, 2, 127
STATE_NAMES = {STABLE: "STABLE", UNREVOKED_PARTITIONS: "UNREVOKED_PARTITIONS", UNRELEASED_PARTITIONS: "UNRELEASED_PARTITIONS", UNKNOWN: "UNKNOWN"}
LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2

#: topic id → partitions
Partitions = Mapping[str, frozenset[int]]
#: topic name → (topic id, partition count)
TopicImage = Mapping[str, tuple[str, int]]


def _default(key: str) -> str:
    return BROKER_DEFAULTS[key]


@dataclass(frozen=True)
class ModernConfig:
    """Broker configs of consumer-protocol groups (Kafka's ``GroupCoordinatorConfig`` keys,
    defaults from ``config.BROKER_DEFAULTS``): ``group.consumer.session.timeout.ms``,
    ``group.consumer.heartbeat.interval.ms``, ``group.consumer.max.size``,
    ``group.consumer.assignors`` (names; the first is the default) and
    ``offset.metadata.max.bytes``."""

    session_timeout_ms: int = int(_default("group.consumer.session.timeout.ms"))
    heartbeat_interval_ms: int = int(_default("group.consumer.heartbeat.interval.ms"))
    max_size: int = int(_default("group.consumer.max.size"))
    assignors: tuple[str, ...] = tuple(_default("group.consumer.assignors").split(","))
    offset_metadata_max_bytes: int = int(_default("offset.metadata.max.bytes"))

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> "ModernConfig":
        """Read and check the keys (missing keys keep the defaults). Raises ``ValueError`` for
        a non-integer value, a session timeout or heartbeat interval outside its
        ``.min``/``.max`` bounds, an interval not below the session timeout, or an unknown or
        empty assignor list (``GroupCoordinatorConfig``'s constructor checks)."""

        def get(key: str) -> int:
            return int(cfg.get(key, BROKER_DEFAULTS[key]))

        session = get("group.consumer.session.timeout.ms")
        interval = get("group.consumer.heartbeat.interval.ms")
        lo, hi = get("group.consumer.min.session.timeout.ms"), get("group.consumer.max.session.timeout.ms")
        if not lo <= session <= hi:
            raise ValueError(f"group.consumer.session.timeout.ms {session} outside [{lo}, {hi}]")
        lo, hi = get("group.consumer.min.heartbeat.interval.ms"), get("group.consumer.max.heartbeat.interval.ms")
        if not lo <= interval <= hi:
            raise ValueError(f"group.consumer.heartbeat.interval.ms {interval} outside [{lo}, {hi}]")
        if interval >= session:
            raise ValueError("group.consumer.heartbeat.interval.ms must be below group.consumer.session.timeout.ms")
        names = tuple(n.strip().lower() for n in str(cfg.get("group.consumer.assignors", _default("group.consumer.assignors"))).split(",") if n.strip())
        # Kafka takes class names; accept those of its two assignors too
        names = tuple({"org.apache.kafka.coordinator.group.assignor.uniformassignor": "uniform",
                       "org.apache.kafka.coordinator.group.assignor.rangeassignor": "range"}.get(n, n) for n in names)
        if not names or any(n not in ASSIGNORS for n in names):
            raise ValueError(f"group.consumer.assignors {names!r}: known assignors are {sorted(ASSIGNORS)}")
        return cls(session, interval, get("group.consumer.max.size"), names, get("offset.metadata.max.bytes"))


class HeartbeatError(Exception):
    """A ConsumerGroupHeartbeat answered with ``error`` (Kafka's error name)."""

    def __init__(self, error: str, message: str = "") -> None:
        super().__init__(f"{error}: {message}")
        self.error = error
        self.message = message


@dataclass(frozen=True)
class ConsumerHeartbeatResult:
    """A ConsumerGroupHeartbeat response: ``error`` ``None`` for NONE; ``assignment`` topic id →
    sorted partitions, or ``None`` when the response carries none."""

    error: str | None
    message: str | None = None
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: tuple[tuple[str, tuple[int, ...]], ...] | None = None


@dataclass(frozen=True)
class DescribedMember:
    """One member in ConsumerGroupDescribe: assignments as ``(topic id, topic name, partitions)``."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: tuple[tuple[str, str, tuple[int, ...]], ...]
    target_assignment: tuple[tuple[str, str, tuple[int, ...]], ...]
    state: str


@dataclass(frozen=True)
class ConsumerGroupDescription:
    """ConsumerGroupDescribe of one group (``error`` GROUP_ID_NOT_FOUND when it is not a
    consumer group)."""

    group_id: str
    error: str | None
    state: str = "Dead"
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedMember, ...] = ()


@dataclass(frozen=True)
class ModernMember:
    """A member of a consumer group (``ConsumerGroupMember``): its subscription (type 5) and
    current assignment (type 8). Immutable: changes make a new value."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    state: int = STABLE
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: Mapping[str, frozenset[int]] = field(default_factory=dict)
    pending_revocation: Mapping[str, frozenset[int]] = field(default_factory=dict)

    def subscription_key(self) -> tuple:
        """The fields Kafka's MemberMetadata record (type 5) holds: a change writes that record."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host, self.subscribed_topic_names,
                self.rebalance_timeout_ms, self.server_assignor)

    def assignment_key(self) -> tuple:
        """The fields Kafka's CurrentMemberAssignment record (type 8) holds: a change writes that record."""
        return (self.state, self.member_epoch, self.previous_member_epoch, _norm(self.assigned), _norm(self.pending_revocation))


def _norm(parts: Partitions) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple((t, tuple(sorted(ps))) for t, ps in sorted(parts.items()) if ps)


def _pairs(parts: Partitions) -> tuple[ConsumerTopicPartition, ...]:
    return tuple(ConsumerTopicPartition(t, p) for t, ps in _norm(parts) for p in ps)


def _from_pairs(pairs: tuple[ConsumerTopicPartition, ...]) -> dict[str, frozenset[int]]:
    out: dict[str, set[int]] = {}
    for tp in pairs:
        out.setdefault(tp.topic_id, set()).add(tp.partition)
    return {t: frozenset(ps) for t, ps in out.items()}


def _owns_any(owned: Partitions | None, parts: Partitions) -> bool:
    """``CurrentAssignmentBuilder.ownsRevokedPartitions``: a null owned list owns everything."""
    if owned is None:
        return True
    return any(owned.get(t, frozenset()) & ps for t, ps in parts.items())


def _is_subset(owned: Partitions | None, assigned: Partitions) -> bool:
    if owned is None:
        return False
    return all(ps <= assigned.get(t, frozenset()) for t, ps in owned.items())


# ---------------------------------------------------------------------------------- reconciliation


def _next_assignment(member: ModernMember, member_epoch: int, target_epoch: int, target: Partitions,
                     owned: Partitions | None, partition_epoch: Callable[[str, int], int]) -> ModernMember:
    """``CurrentAssignmentBuilder.computeNextAssignment``."""
    assigned = member.assigned
    new_assigned: dict[str, frozenset[int]] = {}
    revoke: dict[str, frozenset[int]] = {}
    to_assign: dict[str, frozenset[int]] = {}
    has_unreleased = False
    for t in set(target) | set(assigned):
        tgt = target.get(t, frozenset())
        cur = assigned.get(t, frozenset())
        kept = cur & tgt
        rev = cur - kept
        missing = tgt - kept
        unreleased = frozenset(p for p in missing if partition_epoch(t, p) != -1)
        give = missing - unreleased
        has_unreleased = has_unreleased or bool(unreleased)
        if kept:
            new_assigned[t] = kept
        if rev:
            revoke[t] = rev
        if give:
            to_assign[t] = give
    if revoke and _owns_any(owned, revoke):
        return replace(member, state=UNREVOKED_PARTITIONS, **_epoch(member, member_epoch), assigned=new_assigned,
                       pending_revocation=revoke)
    if to_assign:
        merged = {t: new_assigned.get(t, frozenset()) | to_assign.get(t, frozenset()) for t in set(new_assigned) | set(to_assign)}
        return replace(member, state=UNRELEASED_PARTITIONS if has_unreleased else STABLE, **_epoch(member, target_epoch),
                       assigned=merged, pending_revocation={})
    return replace(member, state=UNRELEASED_PARTITIONS if has_unreleased else STABLE, **_epoch(member, target_epoch),
                   assigned=new_assigned, pending_revocation={})


def _epoch(member: ModernMember, epoch: int) -> dict[str, int]:
    """``ConsumerGroupMember.Builder.updateMemberEpoch``: the old epoch becomes the previous one."""
    return {"member_epoch": epoch, "previous_member_epoch": member.member_epoch}


def reconcile(member: ModernMember, target_epoch: int, target: Partitions, owned: Partitions | None,
              partition_epoch: Callable[[str, int], int]) -> ModernMember:
    """One reconciliation step (``CurrentAssignmentBuilder.build``): ``owned`` is what the member
    reported (``None``: not reported), ``partition_epoch(topic id, partition)`` the epoch of the
    member holding a partition (-1 when free). Raises ``HeartbeatError(FENCED_MEMBER_EPOCH)`` for
    a member in state UNKNOWN that does not report an empty owned list."""
    if member.state == STABLE:
        if member.member_epoch != target_epoch:
            return _next_assignment(member, member.member_epoch, target_epoch, target, owned, partition_epoch)
        return member
    if member.state == UNREVOKED_PARTITIONS:
        if owned is None or _owns_any(owned, member.pending_revocation):
            return member
        return _next_assignment(member, min(member.member_epoch + 1, target_epoch), target_epoch, target, owned, partition_epoch)
    if member.state == UNRELEASED_PARTITIONS:
        return _next_assignment(member, member.member_epoch, target_epoch, target, owned, partition_epoch)
    if owned is None or any(owned.values()):
        raise HeartbeatError("FENCED_MEMBER_EPOCH", f"The member {member.member_id} is in an unknown state.")
    return _next_assignment(member, target_epoch, target_epoch, target, owned, partition_epoch)


# ---------------------------------------------------------------------------------- validation


def _blank(s: str | None) -> bool:
    return s is not None and not s.strip()


def validate_heartbeat(*, group_id: str, member_id: str, member_epoch: int, instance_id: str | None, rack_id: str | None,
                       rebalance_timeout_ms: int, subscribed_topic_names: tuple[str, ...] | None,
                       owned: Partitions | None, server_assignor: str | None, assignors: tuple[str, ...],
                       regex: str | None = None, api_version: int = 0) -> None:
    """``throwIfConsumerGroupHeartbeatRequestIsInvalid`` (reference §5.3): raises
    :class:`HeartbeatError` with INVALID_REQUEST or UNSUPPORTED_ASSIGNOR. A regex subscription is
    refused (INVALID_REQUEST) in every version; an empty regex counts as none."""
    def bad(msg: str) -> HeartbeatError:
        return HeartbeatError("INVALID_REQUEST", msg)

    if not group_id or not group_id.strip():
        raise bad("GroupId can't be empty.")
    if _blank(instance_id):
        raise bad("InstanceId can't be empty.")
    if _blank(rack_id):
        raise bad("RackId can't be empty.")
    if api_version >= 1 and not member_id:
        raise bad("MemberId can't be empty.")
    if regex:  # librdkafka sends "" when it subscribes by names only
        raise bad("SubscribedTopicRegex is not supported.")
    if member_epoch > 0 or member_epoch == LEAVE_EPOCH:
        if not member_id:
            raise bad("MemberId can't be empty.")
    elif member_epoch == 0:
        if rebalance_timeout_ms == -1:
            raise bad("RebalanceTimeoutMs must be provided in first request.")
        if owned is None or any(owned.values()) or len(owned) > 0:
            raise bad("TopicPartitions must be empty when (re-)joining.")
        if subscribed_topic_names is None or (api_version == 0 and not subscribed_topic_names):
            raise bad("SubscribedTopicNames must be set in first request.")
    elif member_epoch == STATIC_LEAVE_EPOCH:
        if not member_id:
            raise bad("MemberId can't be empty.")
        if instance_id is None:
            raise bad("InstanceId can't be null.")
    else:
        raise bad(f"MemberEpoch is invalid: {member_epoch}")
    if server_assignor is not None and server_assignor not in assignors:
        raise HeartbeatError("UNSUPPORTED_ASSIGNOR", f"ServerAssignor {server_assignor} is not supported. Supported assignors: {', '.join(assignors)}.")


# ---------------------------------------------------------------------------------- the group


class ModernGroup:
    """One consumer-protocol group with its committed offsets. ``id_factory`` makes new member
    ids (injected so tests are deterministic; Kafka: a UUID)."""

    group_type = "consumer"

    def __init__(self, group_id: str, config: ModernConfig | None = None, id_factory: Callable[[], str] | None = None,
                 assignor: Callable[[str, GroupSpec], Any] | None = None) -> None:
        self.group_id = group_id
        self.config = config or ModernConfig()
        self._new_id = id_factory or (lambda: str(uuid.uuid4()))
        #: (assignor name, spec) → member id → topic id → partitions (tests inject a prepared one)
        self._assign = assignor or assign
        self.exists = False
        self.deleted = False
        self.group_epoch = 0
        self.assignment_epoch = 0
        #: subscribed topic name → (topic id, partitions) of the topics that exist (type 4)
        self.subscription_metadata: dict[str, tuple[str, int]] = {}
        self.members: dict[str, ModernMember] = {}
        self.targets: dict[str, dict[str, frozenset[int]]] = {}
        self.static: dict[str, str] = {}
        self.offsets: dict[tuple[str, int], CommittedOffset] = {}
        #: timers (soft state): member id → session deadline; member id → (deadline, epoch)
        self.session_deadlines: dict[str, int] = {}
        self.rebalance_deadlines: dict[str, tuple[int, int]] = {}
        #: the last topic image given (timers recompute the subscription metadata with it)
        self.image: dict[str, tuple[str, int]] = {}
        #: whether a caller gave an image since this object was made (not after a recovery, until
        #: the first heartbeat): until then the recorded subscription metadata stands in for it
        self.image_known = False

    # ------------------------------------------------------------------ folding

    def apply(self, ev: DomainEvent) -> None:
        """Fold one event (Kafka's ``GroupMetadataManager.replay`` of records 3-8, and the
        committed offsets of ``OffsetsCommitted``)."""
        self.exists = True
        if isinstance(ev, OffsetsCommitted):
            for o in ev.offsets:
                self.offsets[(o.topic, o.partition)] = o
        elif isinstance(ev, OffsetsDeleted):
            for d in ev.partitions:
                self.offsets.pop((d.topic, d.partition), None)
        elif isinstance(ev, ConsumerGroupEpochRecorded):
            if ev.tombstone:
                if self.members or self.targets:
                    raise ValueError(f"group {self.group_id}: group epoch tombstone with members left")
                self.deleted = True
                self.group_epoch = 0
            else:
                self.deleted = False
                self.group_epoch = ev.epoch
        elif isinstance(ev, ConsumerGroupSubscriptionMetadataRecorded):
            self.subscription_metadata = {} if ev.tombstone else {t.topic_name: (t.topic_id, t.num_partitions) for t in ev.topics}
        elif isinstance(ev, ConsumerGroupMemberSubscriptionRecorded):
            old = self.members.get(ev.member_id)
            if ev.tombstone:
                if old is not None:
                    if old.instance_id and self.static.get(old.instance_id) == ev.member_id:
                        del self.static[old.instance_id]
                    del self.members[ev.member_id]
                self.session_deadlines.pop(ev.member_id, None)
                self.rebalance_deadlines.pop(ev.member_id, None)
                return
            base = old or ModernMember(ev.member_id)
            if old is not None and old.instance_id and old.instance_id != ev.instance_id and self.static.get(old.instance_id) == ev.member_id:
                del self.static[old.instance_id]
            self.members[ev.member_id] = replace(
                base, instance_id=ev.instance_id, rack_id=ev.rack_id, client_id=ev.client_id, client_host=ev.client_host,
                subscribed_topic_names=tuple(ev.subscribed_topic_names), rebalance_timeout_ms=ev.rebalance_timeout_ms,
                server_assignor=ev.server_assignor)
            if ev.instance_id:
                self.static[ev.instance_id] = ev.member_id
        elif isinstance(ev, ConsumerGroupTargetAssignmentEpochRecorded):
            self.assignment_epoch = 0 if ev.tombstone else ev.assignment_epoch
        elif isinstance(ev, ConsumerGroupTargetAssignmentMemberRecorded):
            if ev.tombstone:
                self.targets.pop(ev.member_id, None)
            else:
                self.targets[ev.member_id] = _from_pairs(ev.partitions)
        elif isinstance(ev, ConsumerGroupCurrentMemberAssignmentRecorded):
            base = self.members.get(ev.member_id)
            if base is None:
                if ev.tombstone:
                    return
                base = ModernMember(ev.member_id)
            if ev.tombstone:
                self.members[ev.member_id] = replace(base, member_epoch=LEAVE_EPOCH, previous_member_epoch=LEAVE_EPOCH,
                                                     state=STABLE, assigned={}, pending_revocation={})
            else:
                self.members[ev.member_id] = replace(
                    base, member_epoch=ev.member_epoch, previous_member_epoch=ev.previous_member_epoch, state=ev.state,
                    assigned=_from_pairs(ev.assigned), pending_revocation=_from_pairs(ev.pending_revocation))

    def touch_all(self, now_ms: int) -> None:
        """Arm the timers after recovery (Kafka's ``onLoaded``): every member's session, and the
        rebalance timer of each member that must revoke partitions."""
        for mid, m in self.members.items():
            self.session_deadlines[mid] = now_ms + self.config.session_timeout_ms
            if m.state == UNREVOKED_PARTITIONS:
                self.rebalance_deadlines[mid] = (now_ms + max(0, m.rebalance_timeout_ms), m.member_epoch)

    # ------------------------------------------------------------------ derived state

    def state(self) -> str:
        """The group state (``ConsumerGroup.maybeUpdateGroupState``): Empty, Assigning,
        Reconciling or Stable."""
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        for m in self.members.values():
            if m.state != STABLE or m.member_epoch != self.assignment_epoch:
                return "Reconciling"
        return "Stable"

    def describe_state(self) -> str:
        """The state's display name (ListGroups): :meth:`state`."""
        return self.state()

    def is_empty(self) -> bool:
        """Whether the group has no members (``ConsumerGroup.isEmpty``)."""
        return not self.members

    def partition_epochs(self) -> dict[tuple[str, int], int]:
        """(topic id, partition) → epoch of the member holding it (assigned or pending revocation)."""
        out: dict[tuple[str, int], int] = {}
        for m in self.members.values():
            for parts in (m.assigned, m.pending_revocation):
                for t, ps in parts.items():
                    for p in ps:
                        out[(t, p)] = m.member_epoch
        return out

    def preferred_assignor(self) -> str:
        """``ConsumerGroup.computePreferredServerAssignor``: the one most members name (ties: the
        first in the configured order), else the first configured."""
        counts: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        if not counts:
            return self.config.assignors[0]
        order = {n: i for i, n in enumerate(self.config.assignors)}
        return sorted(counts.items(), key=lambda kv: (-kv[1], order.get(kv[0], len(order)), kv[0]))[0][0]

    def next_deadline(self) -> int | None:
        """The earliest timer deadline (ms), ``None`` when no timer is armed."""
        ds = list(self.session_deadlines.values()) + [d for d, _ in self.rebalance_deadlines.values()]
        return min(ds) if ds else None

    # ------------------------------------------------------------------ record helpers

    def _emit(self, out: Outcome, ev: DomainEvent) -> None:
        self.apply(ev)
        out.events.append(ev)

    def _subscription_record(self, m: ModernMember) -> ConsumerGroupMemberSubscriptionRecorded:
        return ConsumerGroupMemberSubscriptionRecorded(
            self.group_id, m.member_id, m.instance_id, m.rack_id, m.client_id, m.client_host,
            tuple(m.subscribed_topic_names), m.rebalance_timeout_ms, m.server_assignor)

    def _assignment_record(self, m: ModernMember) -> ConsumerGroupCurrentMemberAssignmentRecorded:
        return ConsumerGroupCurrentMemberAssignmentRecorded(
            self.group_id, m.member_id, m.member_epoch, m.previous_member_epoch, m.state,
            _pairs(m.assigned), _pairs(m.pending_revocation))

    def _compute_metadata(self, members: Mapping[str, ModernMember]) -> dict[str, tuple[str, int]]:
        names = {n for m in members.values() for n in m.subscribed_topic_names}
        # after a recovery no image is known until a heartbeat brings one: a timer that fences a
        # member must not read "every topic is gone" from the empty image
        known = self.image if self.image_known else self.subscription_metadata
        return {n: known[n] for n in sorted(names) if n in known}

    def _metadata_record(self, md: Mapping[str, tuple[str, int]]) -> ConsumerGroupSubscriptionMetadataRecorded:
        return ConsumerGroupSubscriptionMetadataRecorded(
            self.group_id, tuple(ConsumerTopicMetadata(tid, n, cnt) for n, (tid, cnt) in sorted(md.items())))

    def _remove_member_records(self, out: Outcome, member_id: str) -> None:
        """``removeMember``: current assignment, target, subscription tombstones (in that order)."""
        self._emit(out, ConsumerGroupCurrentMemberAssignmentRecorded(self.group_id, member_id, tombstone=True))
        self._emit(out, ConsumerGroupTargetAssignmentMemberRecorded(self.group_id, member_id, tombstone=True))
        self._emit(out, ConsumerGroupMemberSubscriptionRecorded(self.group_id, member_id, tombstone=True))

    def _fence(self, out: Outcome, member_id: str) -> None:
        """``consumerGroupFenceMember``: three tombstones, the metadata if it changed, epoch + 1."""
        self._remove_member_records(out, member_id)
        md = self._compute_metadata(self.members)
        if md != self.subscription_metadata:
            self._emit(out, self._metadata_record(md))
        self._emit(out, ConsumerGroupEpochRecorded(self.group_id, self.group_epoch + 1))

    def _snapshot(self) -> tuple:
        return (self.exists, self.deleted, self.group_epoch, self.assignment_epoch, dict(self.subscription_metadata),
                dict(self.members), dict(self.targets), dict(self.static), dict(self.session_deadlines),
                dict(self.rebalance_deadlines), dict(self.image))

    def _restore(self, snap: tuple) -> None:
        (self.exists, self.deleted, self.group_epoch, self.assignment_epoch, self.subscription_metadata, self.members,
         self.targets, self.static, self.session_deadlines, self.rebalance_deadlines, self.image) = snap

    # ------------------------------------------------------------------ timers

    def tick(self, now_ms: int, image: TopicImage | None = None) -> Outcome:
        """Fire the timers due at ``now_ms``: an expired session fences its member; an expired
        rebalance timer fences its member if it is still at the epoch the timer was armed for."""
        if image is not None:
            self.image = dict(image)
            self.image_known = True
        out = Outcome()
        for mid, due in sorted(self.session_deadlines.items(), key=lambda kv: kv[1]):
            if due <= now_ms and mid in self.members:
                self._fence(out, mid)
        for mid, (due, epoch) in sorted(self.rebalance_deadlines.items(), key=lambda kv: kv[1][0]):
            if due > now_ms:
                continue
            self.rebalance_deadlines.pop(mid, None)
            m = self.members.get(mid)
            if m is not None and m.member_epoch == epoch:
                self._fence(out, mid)
        return out

    # ------------------------------------------------------------------ ConsumerGroupHeartbeat

    def heartbeat(self, now_ms: int, *, member_id: str, member_epoch: int, instance_id: str | None = None,
                  rack_id: str | None = None, rebalance_timeout_ms: int = -1,
                  subscribed_topic_names: tuple[str, ...] | None = None, server_assignor: str | None = None,
                  owned: Partitions | None = None, client_id: str = "", client_host: str = "",
                  image: TopicImage | None = None, regex: str | None = None, api_version: int = 0) -> Outcome:
        """ConsumerGroupHeartbeat (``GroupMetadataManager.consumerGroupHeartbeat``). ``owned``
        is the request's TopicPartitions (topic id → partitions; ``None`` when null), ``image``
        the topic metadata. The reply is a :class:`ConsumerHeartbeatResult`; a refused request
        changes nothing and writes nothing."""
        if image is not None:
            self.image = dict(image)
            self.image_known = True
        snap = self._snapshot()
        try:
            validate_heartbeat(group_id=self.group_id, member_id=member_id, member_epoch=member_epoch,
                               instance_id=instance_id, rack_id=rack_id, rebalance_timeout_ms=rebalance_timeout_ms,
                               subscribed_topic_names=subscribed_topic_names, owned=owned,
                               server_assignor=server_assignor, assignors=self.config.assignors, regex=regex,
                               api_version=api_version)
            if member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(now_ms, member_id, member_epoch, instance_id)
            return self._heartbeat(now_ms, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                                   subscribed_topic_names, server_assignor, owned, client_id, client_host)
        except HeartbeatError as exc:
            self._restore(snap)
            return Outcome(reply=ConsumerHeartbeatResult(exc.error, exc.message or None, member_id, member_epoch))

    def _leave(self, now_ms: int, member_id: str, member_epoch: int, instance_id: str | None) -> Outcome:
        """``consumerGroupLeave``: -1 fences the member, -2 (static) keeps it at epoch -2 with
        its partitions (one type-8 record, no epoch bump, the session timer keeps running)."""
        if not self.exists or self.deleted:
            raise HeartbeatError("GROUP_ID_NOT_FOUND", f"Group {self.group_id} not found.")
        out = Outcome()
        if instance_id is None:
            if member_id not in self.members:
                raise HeartbeatError("UNKNOWN_MEMBER_ID", f"Member {member_id} is not a member of group {self.group_id}.")
            self._fence(out, member_id)
        else:
            known = self.static.get(instance_id)
            if known is None:
                raise HeartbeatError("UNKNOWN_MEMBER_ID", f"Instance id {instance_id} is unknown.")
            if known != member_id:
                raise HeartbeatError("FENCED_INSTANCE_ID", f"Instance id {instance_id} is owned by another member.")
            if member_epoch == STATIC_LEAVE_EPOCH:
                m = replace(self.members[member_id], member_epoch=STATIC_LEAVE_EPOCH, pending_revocation={})
                self._emit(out, self._assignment_record(m))
                self.rebalance_deadlines.pop(member_id, None)
            else:
                self._fence(out, member_id)
        out.reply = ConsumerHeartbeatResult(None, None, member_id, member_epoch, 0)
        return out

    def leave_members(self, members: list[LeaveMember]) -> Outcome:
        """LeaveGroup (13) on a consumer-protocol group (``classicGroupLeaveToConsumerGroup``, the
        admin path ``kafka-consumer-groups --delete --members`` uses): each entry names a dynamic
        member by id (UNKNOWN_MEMBER_ID if absent) or a static member by instance id
        (UNKNOWN_MEMBER_ID if the instance is unknown; FENCED_INSTANCE_ID if a non-empty member id
        is not the instance's). The valid members are fenced together
        (``consumerGroupFenceMembers``): three tombstones each, the subscription metadata if it
        changed, and ONE group-epoch bump; none valid → no records. Reply ``LeaveGroupResult``
        with per-member errors in request order."""
        results: list[tuple[str, str | None, str | None]] = []
        leaving: list[str] = []
        for x in members:
            if x.group_instance_id is None:
                mid = x.member_id if x.member_id in self.members else None
                err = None if mid is not None else "UNKNOWN_MEMBER_ID"
            else:
                mid = self.static.get(x.group_instance_id)
                if mid is None:
                    err = "UNKNOWN_MEMBER_ID"
                elif x.member_id and x.member_id != mid:
                    err, mid = "FENCED_INSTANCE_ID", None
                else:
                    err = None
            results.append((x.member_id, x.group_instance_id, err))
            if mid is not None and mid not in leaving:
                leaving.append(mid)
        out = Outcome(reply=LeaveGroupResult(None, tuple(results)))
        if leaving:
            for mid in leaving:
                self._remove_member_records(out, mid)
            md = self._compute_metadata(self.members)
            if md != self.subscription_metadata:
                self._emit(out, self._metadata_record(md))
            self._emit(out, ConsumerGroupEpochRecorded(self.group_id, self.group_epoch + 1))
        return out

    def _check_epoch(self, m: ModernMember, received: int, owned: Partitions | None) -> None:
        """``throwIfConsumerGroupMemberEpochIsInvalid``."""
        if received > m.member_epoch:
            raise HeartbeatError("FENCED_MEMBER_EPOCH", f"The consumer group member has a greater member epoch ({received}) than the one known by the group coordinator ({m.member_epoch}).")
        if received < m.member_epoch and (received != m.previous_member_epoch or not _is_subset(owned, m.assigned)):
            raise HeartbeatError("FENCED_MEMBER_EPOCH", f"The consumer group member has a smaller member epoch ({received}) than the one known by the group coordinator ({m.member_epoch}).")

    def _heartbeat(self, now_ms: int, member_id: str, member_epoch: int, instance_id: str | None, rack_id: str | None,
                   rebalance_timeout_ms: int, subscribed: tuple[str, ...] | None, server_assignor: str | None,
                   owned: Partitions | None, client_id: str, client_host: str) -> Outcome:
        out = Outcome()
        if member_epoch != 0 and (not self.exists or self.deleted):
            raise HeartbeatError("GROUP_ID_NOT_FOUND", f"Group {self.group_id} not found.")
        if len(self.members) >= self.config.max_size and (not member_id or member_id not in self.members):
            raise HeartbeatError("GROUP_MAX_SIZE_REACHED", f"The consumer group has reached its maximum capacity of {self.config.max_size} members.")
        if self.deleted:
            self.deleted = False
        self.exists = True
        # -- find (or create) the member
        if not member_id:
            member_id = self._new_id()
        if instance_id is None:
            m = self.members.get(member_id)
            if m is None:
                if member_epoch != 0:
                    raise HeartbeatError("UNKNOWN_MEMBER_ID", f"Member {member_id} is not a member of group {self.group_id}.")
                m = ModernMember(member_id)
            elif member_epoch != 0:  # KAFKA-19233: a known id rejoining at epoch 0 is let through
                self._check_epoch(m, member_epoch, owned)
        else:
            known = self.static.get(instance_id)
            if member_epoch == 0:
                if known is None:
                    m = self.members.get(member_id) or ModernMember(member_id)
                elif known == member_id:
                    m = self.members[member_id]
                elif self.members[known].member_epoch != STATIC_LEAVE_EPOCH:
                    raise HeartbeatError("UNRELEASED_INSTANCE_ID", f"Static member {known} with instance id {instance_id} is not released yet.")
                else:
                    m = self._replace_static(out, known, member_id)
            else:
                if known is None:
                    raise HeartbeatError("UNKNOWN_MEMBER_ID", f"Instance id {instance_id} is unknown.")
                if known != member_id:
                    raise HeartbeatError("FENCED_INSTANCE_ID", f"Instance id {instance_id} is owned by another member.")
                m = self.members[member_id]
                self._check_epoch(m, member_epoch, owned)
        old_assigned = _norm(m.assigned)
        is_new = member_id not in self.members
        # -- update the member from the non-null fields
        updated = replace(
            m,
            instance_id=instance_id if instance_id is not None else m.instance_id,
            rack_id=rack_id if rack_id is not None else m.rack_id,
            rebalance_timeout_ms=rebalance_timeout_ms if rebalance_timeout_ms != -1 else m.rebalance_timeout_ms,
            server_assignor=server_assignor if server_assignor is not None else m.server_assignor,
            subscribed_topic_names=tuple(sorted(set(subscribed))) if subscribed is not None else m.subscribed_topic_names,
            client_id=client_id or m.client_id,
            client_host=client_host or m.client_host,
        )
        bump = False
        if is_new or updated.subscription_key() != m.subscription_key():
            self._emit(out, self._subscription_record(updated))
            if is_new or updated.subscribed_topic_names != m.subscribed_topic_names:
                bump = True
        md = self._compute_metadata(self.members)
        if md != self.subscription_metadata:
            self._emit(out, self._metadata_record(md))
            bump = True
        if bump:
            self._emit(out, ConsumerGroupEpochRecorded(self.group_id, self.group_epoch + 1))
        # -- target assignment
        if self.group_epoch > self.assignment_epoch:
            self._compute_target(out)
        # -- reconcile
        member = self.members[member_id]
        epochs = self.partition_epochs()
        nxt = reconcile(member, self.assignment_epoch, self.targets.get(member_id, {}), owned,
                        lambda t, p: epochs.get((t, p), -1))
        if nxt.assignment_key() != member.assignment_key() or is_new:
            self._emit(out, self._assignment_record(nxt))
        member = self.members[member_id]
        if member.state == UNREVOKED_PARTITIONS:
            cur = self.rebalance_deadlines.get(member_id)
            if cur is None or cur[1] != member.member_epoch:
                self.rebalance_deadlines[member_id] = (now_ms + max(0, member.rebalance_timeout_ms), member.member_epoch)
        else:
            self.rebalance_deadlines.pop(member_id, None)
        self.session_deadlines[member_id] = now_ms + self.config.session_timeout_ms
        full = member_epoch == 0 or (rebalance_timeout_ms != -1 and subscribed is not None and owned is not None)
        assignment = None
        if full or _norm(member.assigned) != old_assigned:
            assignment = _norm(member.assigned)
        out.reply = ConsumerHeartbeatResult(None, None, member_id, member.member_epoch, self.config.heartbeat_interval_ms, assignment)
        return out

    def _replace_static(self, out: Outcome, old_id: str, new_id: str) -> ModernMember:
        """A new member id takes over a static member at epoch -2: the old id's tombstones, then
        the copy's subscription, the inherited target and its assignment at epoch 0."""
        old = self.members[old_id]
        target = self.targets.get(old_id, {})
        self._remove_member_records(out, old_id)
        new = replace(old, member_id=new_id, member_epoch=0, previous_member_epoch=0)
        self._emit(out, self._subscription_record(new))
        self._emit(out, ConsumerGroupTargetAssignmentMemberRecorded(self.group_id, new_id, _pairs(target)))
        self._emit(out, self._assignment_record(new))
        return self.members[new_id]

    def _compute_target(self, out: Outcome) -> None:
        """``TargetAssignmentBuilder``: run the preferred assignor over every member, write the
        targets that changed, then the assignment epoch (an assignor failure is
        UNKNOWN_SERVER_ERROR)."""
        topics = {tid: n for tid, n in self.subscription_metadata.values()}
        ids = {name: tid for name, (tid, _n) in self.subscription_metadata.items()}
        specs = tuple(
            MemberSpec(mid, frozenset(ids[n] for n in m.subscribed_topic_names if n in ids), m.instance_id, m.rack_id,
                       dict(self.targets.get(mid, {})))
            for mid, m in self.members.items()
        )
        try:
            result = self._assign(self.preferred_assignor(), GroupSpec(specs, topics))
        except AssignorError as exc:
            raise HeartbeatError("UNKNOWN_SERVER_ERROR", f"Failed to compute a new target assignment for epoch {self.group_epoch}: {exc}") from exc
        for mid in self.members:
            new = result.get(mid, {})
            if _norm(new) != _norm(self.targets.get(mid, {})):
                self._emit(out, ConsumerGroupTargetAssignmentMemberRecorded(self.group_id, mid, _pairs(new)))
        self._emit(out, ConsumerGroupTargetAssignmentEpochRecorded(self.group_id, self.group_epoch))

    # ------------------------------------------------------------------ conversion

    def delete_records(self) -> list[DomainEvent]:
        """The tombstones that delete an empty consumer group (``createGroupTombstoneRecords``:
        assignment epoch, subscription metadata, group epoch), applied. The caller then treats the
        id as a classic group."""
        out = Outcome()
        self._emit(out, ConsumerGroupTargetAssignmentEpochRecorded(self.group_id, tombstone=True))
        self._emit(out, ConsumerGroupSubscriptionMetadataRecorded(self.group_id, tombstone=True))
        self._emit(out, ConsumerGroupEpochRecorded(self.group_id, tombstone=True))
        return out.events

    # ------------------------------------------------------------------ group admin

    def describe_classic(self) -> DescribedGroup:
        """DescribeGroups (15) of a consumer-protocol group: Kafka's ``describeGroups`` looks the id
        up as a classic group, so this group is ``Dead`` with no members (the wire answers
        GROUP_ID_NOT_FOUND from v6, error 0 below)."""
        return DescribedGroup(self.group_id, "Dead", "", "", ())

    def delete_group(self, now_ms: int) -> Outcome:
        """DeleteGroups (``ConsumerGroup.validateDeleteGroup``, ``GroupCoordinatorShard.deleteGroups``):
        a group with members is NON_EMPTY_GROUP; otherwise every committed offset is tombstoned
        (one ``OffsetsDeleted``), then the group (``createGroupTombstoneRecords``: assignment epoch,
        subscription metadata, group epoch, applied here at once as :meth:`delete_records` does),
        then ``ConsumerGroupDeleted`` so the id is forgotten. ``now_ms`` is unused (no timer)."""
        if not self.exists or self.deleted:
            return Outcome(reply=DeleteGroupResult("GROUP_ID_NOT_FOUND"))
        if self.members:
            return Outcome(reply=DeleteGroupResult("NON_EMPTY_GROUP"))
        out = Outcome(reply=DeleteGroupResult(None))
        if self.offsets:
            out.events.append(OffsetsDeleted(self.group_id, tuple(DeletedOffset(t, p) for t, p in sorted(self.offsets))))
        out.events.extend(self.delete_records())
        out.events.append(ConsumerGroupDeleted(self.group_id))
        return out

    def subscribed_topics(self) -> set[str]:
        """The topic names the members subscribe to (``ModernGroup.subscribedTopicNames``)."""
        return {t for m in self.members.values() for t in m.subscribed_topic_names}

    def delete_offsets(self, partitions: list[tuple[str, int]]) -> Outcome:
        """OffsetDelete (47) on a consumer group (``OffsetMetadataManager.deleteOffsets``; a
        consumer group's ``validateOffsetDelete`` never refuses): every partition of a topic a
        member subscribes to is GROUP_SUBSCRIBED_TO_TOPIC; the others are NONE, with one
        ``OffsetsDeleted`` for those that had an offset. Reply ``OffsetDeleteResult`` in request order."""
        if not self.exists or self.deleted:
            return Outcome(reply=OffsetDeleteResult("GROUP_ID_NOT_FOUND"))
        subscribed = self.subscribed_topics()
        results, deleted = decide_offset_delete(self.group_id, self.offsets, partitions, subscribed.__contains__)
        return Outcome(events=[deleted] if deleted else [], reply=OffsetDeleteResult(None, results))

    # ------------------------------------------------------------------ offsets

    def commit(self, now_ms: int, *, member_id: str, group_instance_id: str | None, generation: int,
               partitions: list[Any], api_version: int = 9, retention_ms: int = -1) -> Outcome:
        """OffsetCommit to a consumer group (``ConsumerGroup.validateOffsetCommit``): an epoch
        < 0 with no members is accepted; otherwise the member must exist (UNKNOWN_MEMBER_ID), a
        request below v9 is UNSUPPORTED_VERSION, and the epoch must equal the member's
        (STALE_MEMBER_EPOCH). The instance id is ignored."""
        def all_err(e: str) -> Outcome:
            return Outcome(reply=OffsetCommitResult(tuple((p.topic, p.partition, e) for p in partitions)))

        if not (generation < 0 and not self.members):
            m = self.members.get(member_id)
            if m is None:
                return all_err("UNKNOWN_MEMBER_ID")
            if api_version < 9:
                return all_err("UNSUPPORTED_VERSION")
            if generation != m.member_epoch:
                return all_err("STALE_MEMBER_EPOCH")
        results, stored = validate_commit_partitions(partitions, now_ms, self.config.offset_metadata_max_bytes, retention_ms)
        out = Outcome(reply=OffsetCommitResult(tuple(results)))
        if stored:
            out.events.append(OffsetsCommitted(self.group_id, member_id, generation, tuple(stored)))
        return out

    def fetch_offsets(self, partitions: list[tuple[str, int]] | None) -> list[Any]:
        """OffsetFetch (as :meth:`ClassicGroup.fetch_offsets`)."""
        return fetch_committed(self.offsets, partitions)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> str | None:
        """OffsetFetch v9 member fields (``ConsumerGroup.validateOffsetFetch``): a null member id
        with epoch < 0 (admin) passes; else UNKNOWN_MEMBER_ID / STALE_MEMBER_EPOCH."""
        if member_id is None and member_epoch < 0:
            return None
        m = self.members.get(member_id or "")
        if m is None:
            return "UNKNOWN_MEMBER_ID"
        if m.member_epoch != member_epoch:
            return "STALE_MEMBER_EPOCH"
        return None

    # ------------------------------------------------------------------ describe

    def describe(self) -> ConsumerGroupDescription:
        """ConsumerGroupDescribe (``ConsumerGroup.asDescribedGroup``)."""
        names = {tid: n for n, (tid, _c) in self.subscription_metadata.items()}
        names.update({tid: n for n, (tid, _c) in self.image.items() if tid not in names})

        def parts(ps: Partitions) -> tuple[tuple[str, str, tuple[int, ...]], ...]:
            return tuple((t, names.get(t, ""), p) for t, p in _norm(ps))

        members = tuple(
            DescribedMember(m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
                            m.subscribed_topic_names, parts(m.assigned), parts(self.targets.get(mid, {})),
                            STATE_NAMES.get(m.state, "UNKNOWN"))
            for mid, m in self.members.items()
        )
        return ConsumerGroupDescription(self.group_id, None, self.state(), self.group_epoch, self.assignment_epoch,
                                        self.preferred_assignor(), members)
