"""Share-group membership: ShareGroupHeartbeat (API 76) as a pure decider.

Semantics from Kafka's ``GroupMetadataManager.shareGroupHeartbeat`` / ``shareGroupLeave`` /
``shareGroupFenceMember`` / ``throwIfShareGroupMemberEpochIsInvalid`` / ``throwIfShareGroupIsFull``
(Kafka 4.x), ``GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid``,
``ShareGroupAssignmentBuilder`` (no revocation phase) and ``ShareGroup.maybeUpdateGroupState``:

- **join**: member epoch 0 with a member id chosen by the client (Kafka 4.1+, KIP-1082: an empty
  or blank member id is INVALID_REQUEST "MemberId can't be empty." at every epoch), creating the
  group if absent. ``group.share.max.size`` full → GROUP_MAX_SIZE_REACHED for new members only.
- **heartbeat**: epoch > 0. Unknown (or deleted) group → GROUP_ID_NOT_FOUND "Share group <id> not
  found." (Kafka 4.x ``getOrMaybeCreateShareGroup``); unknown member → UNKNOWN_MEMBER_ID; an epoch greater than the
  member's, or smaller and not its previous epoch → FENCED_MEMBER_EPOCH.
- A subscription change or a change of the subscribed topics' ids/partition counts bumps the
  **group epoch**; when the group epoch is ahead of the **assignment epoch** the target assignment
  is recomputed with the simple assignor (:mod:`actors.share.assignor`); a member whose epoch
  differs from the target epoch jumps straight to it with its target partitions.
- **leave** (epoch -1) and **session-timeout expiry** fence the member: it is removed, the
  subscription metadata recomputed, the group epoch bumped.
- Group state: EMPTY without members, STABLE otherwise (DEAD once deleted).

State is folded from :mod:`events.share_group` events by :func:`evolve`. Session deadlines are
Kafka's in-memory timers: not events, reset on recovery to ``now + session timeout`` for every
member (as the coordinator reschedules timers when it loads a group).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from actors.share.assignor import PartitionAssignorError, SimpleAssignor
from actors.share.config import BrokerShareConfig, GroupShareConfig
from actors.share.errors import ShareError
from events.base import DomainEvent
from events.share_group import (
    GroupConfigAltered,
    GroupEpochBumped,
    MemberAssignmentReconciled,
    MemberFenced,
    MemberSubscriptionUpdated,
    MemberTarget,
    ShareGroupDeleted,
    ShareSessionClosed,
    ShareSessionOpened,
    SubscriptionMetadataUpdated,
    TargetAssignmentUpdated,
    TopicMeta,
    TopicPartitions,
)

__all__ = [
    "EMPTY",
    "STABLE",
    "DEAD",
    "LEAVE_GROUP_MEMBER_EPOCH",
    "HeartbeatDecision",
    "HeartbeatResponse",
    "MembershipError",
    "ShareGroupHeartbeat",
    "ShareGroupMember",
    "ShareGroupMembership",
    "decide_heartbeat",
    "decide_session_expiry",
    "evolve",
    "touch",
    "validate_heartbeat",
]

EMPTY, STABLE, DEAD = "Empty", "Stable", "Dead"
LEAVE_GROUP_MEMBER_EPOCH = -1
JOIN_GROUP_MEMBER_EPOCH = 0


class MembershipError(ShareError):
    """A heartbeat was refused: ``error`` (= ``error_name``) is the Kafka error name
    (INVALID_REQUEST, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED,
    UNKNOWN_SERVER_ERROR, GROUP_ID_NOT_FOUND); the message is Kafka's."""

    def __init__(self, error: str, message: str = "") -> None:
        super().__init__(error, message)
        self.error = error


@dataclass(frozen=True, slots=True)
class ShareGroupHeartbeat:
    """A ShareGroupHeartbeat request (v1): ``member_epoch`` 0 joins, -1 leaves, else heartbeat;
    ``subscribed_topic_names`` ``None`` when unchanged; ``rack_id`` ``None`` when unchanged."""

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    """The ShareGroupHeartbeat response: ``assignment`` (topic id → sorted partitions) is present
    only when the request epoch was 0, the request was full (``subscribed_topic_names`` set) or
    the member's assignment changed (Kafka 4.2 ``shareGroupHeartbeat``)."""

    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: tuple[TopicPartitions, ...] | None = None


@dataclass(frozen=True, slots=True)
class HeartbeatDecision:
    """What :func:`decide_heartbeat` decided: the ``events`` to append (possibly none) and the
    ``response`` to send once they are durable."""

    events: tuple[DomainEvent, ...]
    response: HeartbeatResponse


@dataclass(slots=True)
class ShareGroupMember:
    """A member (``ShareGroupMember``): epochs, metadata, subscription and current assignment
    (topic id → frozenset of partitions)."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    client_id: str = ""
    client_host: str = ""
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] = ()
    assigned: dict[str, frozenset[int]] = field(default_factory=dict)


@dataclass(slots=True)
class ShareGroupMembership:
    """The membership state of one share group (mutable; changed only by :func:`evolve` and the
    transient :func:`touch`).

    ``subscription_metadata``: topic name → (topic id, partition count); ``target``: member id →
    topic id → partitions at ``assignment_epoch``; ``deadlines``: member id → session deadline (ms),
    transient; ``exists``: the group has been created (a first join) and not deleted."""

    group_id: str
    exists: bool = False
    deleted: bool = False
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareGroupMember] = field(default_factory=dict)
    target: dict[str, dict[str, frozenset[int]]] = field(default_factory=dict)
    subscription_metadata: dict[str, tuple[str, int]] = field(default_factory=dict)
    configs: GroupShareConfig = field(default_factory=GroupShareConfig)
    deadlines: dict[str, int] = field(default_factory=dict)

    @property
    def state(self) -> str:
        """``Empty``, ``Stable`` or ``Dead`` (``ShareGroup.maybeUpdateGroupState``)."""
        if self.deleted:
            return DEAD
        return STABLE if self.members else EMPTY

    def topic_ids_by_name(self) -> dict[str, str]:
        """Subscribed topic name → topic id."""
        return {n: tid for n, (tid, _) in self.subscription_metadata.items()}

    # -- snapshot ---------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """A JSON-able dict of the durable state (deadlines excluded)."""
        return {
            "group_id": self.group_id,
            "exists": self.exists,
            "deleted": self.deleted,
            "group_epoch": self.group_epoch,
            "assignment_epoch": self.assignment_epoch,
            "members": [
                {
                    "member_id": m.member_id,
                    "member_epoch": m.member_epoch,
                    "previous_member_epoch": m.previous_member_epoch,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "rack_id": m.rack_id,
                    "subscribed_topic_names": list(m.subscribed_topic_names),
                    "assigned": {t: sorted(ps) for t, ps in sorted(m.assigned.items())},
                }
                for m in self.members.values()
            ],
            "target": {mid: {t: sorted(ps) for t, ps in sorted(a.items())} for mid, a in sorted(self.target.items())},
            "subscription_metadata": {n: [tid, np] for n, (tid, np) in sorted(self.subscription_metadata.items())},
            "configs": self.configs.as_dict(),
        }

    @classmethod
    def from_dict(cls, d: Mapping) -> "ShareGroupMembership":
        """Inverse of :meth:`to_dict`."""
        st = cls(group_id=d["group_id"], exists=d["exists"], deleted=d["deleted"], group_epoch=d["group_epoch"],
                 assignment_epoch=d["assignment_epoch"])
        for m in d["members"]:
            st.members[m["member_id"]] = ShareGroupMember(
                member_id=m["member_id"], member_epoch=m["member_epoch"], previous_member_epoch=m["previous_member_epoch"],
                client_id=m["client_id"], client_host=m["client_host"], rack_id=m["rack_id"],
                subscribed_topic_names=tuple(m["subscribed_topic_names"]),
                assigned={t: frozenset(ps) for t, ps in m["assigned"].items()},
            )
        st.target = {mid: {t: frozenset(ps) for t, ps in a.items()} for mid, a in d["target"].items()}
        st.subscription_metadata = {n: (v[0], int(v[1])) for n, v in d["subscription_metadata"].items()}
        st.configs = GroupShareConfig.from_overrides(d["configs"])
        return st

    def comparable(self) -> dict:
        """The durable state for equality checks (replay == live)."""
        out = self.to_dict()
        out["members"] = sorted(out["members"], key=lambda m: m["member_id"])
        return out


def _tps(assigned: Mapping[str, Iterable[int]]) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in sorted(assigned.items()) if ps)


def _from_tps(tps: Iterable[TopicPartitions]) -> dict[str, frozenset[int]]:
    return {tp.topic_id: frozenset(tp.partitions) for tp in tps if tp.partitions}


def validate_heartbeat(req: ShareGroupHeartbeat) -> None:
    """``throwIfShareGroupHeartbeatRequestIsInvalid``: raise :class:`MembershipError`
    INVALID_REQUEST with Kafka's message for an empty member id / group id / rack id, a join
    without subscriptions, or an epoch below -1."""
    if req.member_id is None or req.member_id.strip() == "":
        raise MembershipError("INVALID_REQUEST", "MemberId can't be empty.")
    if req.group_id is None or req.group_id.strip() == "":
        raise MembershipError("INVALID_REQUEST", "GroupId can't be empty.")
    if req.rack_id is not None and req.rack_id.strip() == "":
        raise MembershipError("INVALID_REQUEST", "RackId can't be empty.")
    if req.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
        if not req.subscribed_topic_names:
            raise MembershipError("INVALID_REQUEST", "SubscribedTopicNames must be set in first request.")
    elif req.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        raise MembershipError("INVALID_REQUEST", "MemberEpoch is invalid.")


def _subscription_metadata(
    names: Iterable[str], topics: Mapping[str, tuple[str, int]]
) -> dict[str, tuple[str, int]]:
    """``ShareGroup.computeSubscriptionMetadata``: the subscribed names that exist in the metadata
    image, with their topic id and partition count."""
    return {n: (topics[n][0], int(topics[n][1])) for n in sorted(set(names)) if n in topics}


def decide_heartbeat(
    state: ShareGroupMembership,
    req: ShareGroupHeartbeat,
    topics: Mapping[str, tuple[str, int]] | None,
    broker: BrokerShareConfig,
    now_ms: int,
    *,
    assignable: Callable[[str, int], bool] | None = None,
) -> HeartbeatDecision:
    """Decide a ShareGroupHeartbeat.

    ``topics``: the broker's metadata image, name → (topic id, partition count); it must cover
    every topic name the group's members subscribe to — a subscribed name missing from it is a
    topic that does not exist (deleted topics leave the subscription metadata this way).
    ``None`` means "unchanged since the last heartbeat" (the stored subscription metadata is
    used). ``now_ms`` is the request time (ms; the decision itself does not depend on it: the
    caller then calls :func:`touch` to reschedule the session timer). ``assignable`` is passed to
    the assignor (Kafka 4.2's initialized-partitions filter; default all).

    Returns the events (possibly none) and the response. Raises :class:`MembershipError`; the
    state is never changed here."""
    validate_heartbeat(req)
    if state.deleted:
        state = ShareGroupMembership(state.group_id)
    if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
        return _decide_leave(state, req, broker)
    create = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH
    if not state.exists and not create:
        # Kafka 4.x GroupMetadataManager.getOrMaybeCreateShareGroup: GroupIdNotFoundException.
        raise MembershipError("GROUP_ID_NOT_FOUND", f"Share group {req.group_id} not found.")
    member_id = req.member_id
    if len(state.members) >= broker.max_size and (member_id == "" or member_id not in state.members):
        raise MembershipError(
            "GROUP_MAX_SIZE_REACHED", f"The share group has reached its maximum capacity of {broker.max_size} members."
        )
    old = state.members.get(member_id)
    if old is None:
        if not create:
            raise MembershipError("UNKNOWN_MEMBER_ID", f"Member {member_id} is not a member of group {req.group_id}.")
        old = ShareGroupMember(member_id=member_id)
    _check_epoch(old, req.member_epoch)
    is_new = member_id not in state.members

    events: list[DomainEvent] = []
    updated = copy.copy(old)
    if req.rack_id is not None:
        updated.rack_id = req.rack_id
    if req.subscribed_topic_names is not None:
        updated.subscribed_topic_names = tuple(sorted(set(req.subscribed_topic_names)))
    updated.client_id = req.client_id
    updated.client_host = req.client_host
    bump = False
    meta_changed = (
        is_new
        or updated.rack_id != old.rack_id
        or updated.subscribed_topic_names != old.subscribed_topic_names
        or updated.client_id != old.client_id
        or updated.client_host != old.client_host
    )
    if meta_changed:
        events.append(MemberSubscriptionUpdated(state.group_id, member_id, updated.client_id, updated.client_host,
                                                updated.rack_id, updated.subscribed_topic_names))
        if is_new or updated.subscribed_topic_names != old.subscribed_topic_names:
            bump = True

    group_epoch = state.group_epoch
    sub_meta = state.subscription_metadata
    members_after = dict(state.members)
    members_after[member_id] = updated
    if bump or topics is not None:
        all_names = set().union(*(m.subscribed_topic_names for m in members_after.values()))
        image = topics if topics is not None else state.subscription_metadata
        new_meta = _subscription_metadata(all_names, image)
        if new_meta != state.subscription_metadata:
            bump = True
            sub_meta = new_meta
            events.append(SubscriptionMetadataUpdated(
                state.group_id, tuple(TopicMeta(n, tid, np) for n, (tid, np) in sorted(new_meta.items()))))
        if bump:
            group_epoch += 1
            events.append(GroupEpochBumped(state.group_id, group_epoch))

    if group_epoch > state.assignment_epoch:
        ids = {n: tid for n, (tid, _) in sub_meta.items()}
        subs = {mid: frozenset(ids[n] for n in m.subscribed_topic_names if n in ids) for mid, m in members_after.items()}
        current = {mid: state.target.get(mid, {}) for mid in members_after}
        try:
            target = SimpleAssignor().assign(subs, current, {tid: np for tid, np in sub_meta.values()}, assignable)
        except PartitionAssignorError as exc:
            raise MembershipError("UNKNOWN_SERVER_ERROR", f"Failed to compute a new target assignment for epoch {group_epoch}: {exc}") from None
        events.append(TargetAssignmentUpdated(
            state.group_id, group_epoch, tuple(MemberTarget(mid, _tps(target[mid])) for mid in sorted(target))))
        target_epoch = group_epoch
        member_target = target.get(member_id, {})
    else:
        target_epoch = state.assignment_epoch
        member_target = state.target.get(member_id, {})

    # ShareGroupAssignmentBuilder: no revocation, jump to the target.
    if target_epoch != updated.member_epoch:
        new_epoch, prev_epoch, assigned = target_epoch, updated.member_epoch, dict(member_target)
        events.append(MemberAssignmentReconciled(state.group_id, member_id, new_epoch, prev_epoch, _tps(assigned)))
    else:
        new_epoch, assigned = updated.member_epoch, updated.assigned
    changed = {t: ps for t, ps in assigned.items() if ps} != {t: ps for t, ps in old.assigned.items() if ps}
    interval = state.configs.effective_heartbeat_interval_ms(broker)
    resp = HeartbeatResponse(
        member_id, new_epoch, interval,
        # Kafka 4.2: on a join (epoch 0), a full request (SubscribedTopicNames set: sent after an
        # error or a timeout) or a changed assignment
        _tps(assigned) if (req.member_epoch == JOIN_GROUP_MEMBER_EPOCH or req.subscribed_topic_names is not None
                           or changed) else None,
    )
    return HeartbeatDecision(tuple(events), resp)


def _check_epoch(member: ShareGroupMember, received: int) -> None:
    """``throwIfShareGroupMemberEpochIsInvalid``."""
    if received > member.member_epoch:
        raise MembershipError(
            "FENCED_MEMBER_EPOCH",
            f"The share group member has a greater member epoch ({received}) than the one known by the group "
            f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
        )
    if received < member.member_epoch and received != member.previous_member_epoch:
        raise MembershipError(
            "FENCED_MEMBER_EPOCH",
            f"The share group member has a smaller member epoch ({received}) than the one known by the group "
            f"coordinator ({member.member_epoch}), and it does not match the previous member epoch "
            f"({member.previous_member_epoch}). The member must abandon all its partitions and rejoin.",
        )


def _fence_events(state: ShareGroupMembership, member_id: str, reason: str) -> list[DomainEvent]:
    """``shareGroupFenceMember``: tombstones, subscription metadata without the member, epoch+1."""
    events: list[DomainEvent] = [MemberFenced(state.group_id, member_id, reason)]
    remaining = [m for mid, m in state.members.items() if mid != member_id]
    names = set().union(*(m.subscribed_topic_names for m in remaining)) if remaining else set()
    new_meta = _subscription_metadata(names, state.subscription_metadata)
    if new_meta != state.subscription_metadata:
        events.append(SubscriptionMetadataUpdated(
            state.group_id, tuple(TopicMeta(n, tid, np) for n, (tid, np) in sorted(new_meta.items()))))
    events.append(GroupEpochBumped(state.group_id, state.group_epoch + 1))
    return events


def _decide_leave(state: ShareGroupMembership, req: ShareGroupHeartbeat, broker: BrokerShareConfig) -> HeartbeatDecision:
    """``shareGroupLeave``: unknown group → GROUP_ID_NOT_FOUND; unknown member → UNKNOWN_MEMBER_ID;
    else fence; the response echoes ``{memberId, -1}``."""
    if not state.exists:
        raise MembershipError("GROUP_ID_NOT_FOUND", f"Group {req.group_id} not found.")
    if req.member_id not in state.members:
        raise MembershipError("UNKNOWN_MEMBER_ID", f"Member {req.member_id} is not a member of group {req.group_id}.")
    events = _fence_events(state, req.member_id, "LEAVE")
    return HeartbeatDecision(tuple(events), HeartbeatResponse(req.member_id, LEAVE_GROUP_MEMBER_EPOCH,
                                                              state.configs.effective_heartbeat_interval_ms(broker)))


def decide_session_expiry(state: ShareGroupMembership, now_ms: int) -> list[DomainEvent]:
    """Fence every member whose session deadline is ≤ ``now_ms`` (the share-group session timer
    firing, ``GroupMetadataManager.scheduleShareGroupSessionTimeout``). Members are fenced one
    after another, each on the state left by the previous one. Returns the events (possibly none)."""
    due = sorted(mid for mid, dl in state.deadlines.items() if dl <= now_ms and mid in state.members)
    if not due:
        return []
    work = copy.deepcopy(state)
    out: list[DomainEvent] = []
    for mid in due:
        evs = _fence_events(work, mid, "SESSION_TIMEOUT")
        for ev in evs:
            evolve(work, ev)
        out.extend(evs)
    return out


def touch(state: ShareGroupMembership, member_id: str, now_ms: int, broker: BrokerShareConfig) -> int:
    """Reschedule ``member_id``'s session timer to ``now_ms + share.session.timeout.ms`` (group
    config, else broker default) and return the deadline (ms). Transient state, not an event."""
    deadline = now_ms + state.configs.effective_session_timeout_ms(broker)
    state.deadlines[member_id] = deadline
    return deadline


def evolve(state: ShareGroupMembership, ev: DomainEvent) -> ShareGroupMembership:
    """Apply one share-group event to ``state`` (in place) and return it. Events of other domains
    are ignored, so the actor may fold its whole stream through here."""
    if isinstance(ev, MemberSubscriptionUpdated):
        state.exists = True
        state.deleted = False
        m = state.members.get(ev.member_id)
        if m is None:
            m = state.members[ev.member_id] = ShareGroupMember(ev.member_id)
        m.client_id, m.client_host, m.rack_id = ev.client_id, ev.client_host, ev.rack_id
        m.subscribed_topic_names = tuple(ev.subscribed_topic_names)
    elif isinstance(ev, SubscriptionMetadataUpdated):
        state.subscription_metadata = {t.name: (t.topic_id, t.num_partitions) for t in ev.topics}
    elif isinstance(ev, GroupEpochBumped):
        state.exists = True
        state.group_epoch = ev.group_epoch
    elif isinstance(ev, TargetAssignmentUpdated):
        state.assignment_epoch = ev.assignment_epoch
        state.target = {mt.member_id: _from_tps(mt.partitions) for mt in ev.members}
    elif isinstance(ev, MemberAssignmentReconciled):
        m = state.members.get(ev.member_id)
        if m is not None:
            m.member_epoch = ev.member_epoch
            m.previous_member_epoch = ev.previous_member_epoch
            m.assigned = _from_tps(ev.partitions)
    elif isinstance(ev, MemberFenced):
        state.members.pop(ev.member_id, None)
        state.target.pop(ev.member_id, None)
        state.deadlines.pop(ev.member_id, None)
    elif isinstance(ev, GroupConfigAltered):
        state.configs = GroupShareConfig.from_overrides(ev.configs)
    elif isinstance(ev, ShareGroupDeleted):
        fresh = ShareGroupMembership(state.group_id, deleted=True)
        state.exists, state.deleted = False, True
        state.group_epoch, state.assignment_epoch = fresh.group_epoch, fresh.assignment_epoch
        state.members, state.target, state.subscription_metadata = {}, {}, {}
        state.configs, state.deadlines = GroupShareConfig(), {}
    elif isinstance(ev, (ShareSessionOpened, ShareSessionClosed)):
        pass  # audit only
    return state
