"""Server-side assignors of KIP-848 consumer groups, as pure functions over a group spec.

Kafka's ``UniformAssignor`` (``OptimizedUniformAssignmentBuilder`` for homogeneous
subscriptions, ``UniformHeterogeneousAssignmentBuilder`` otherwise) and ``RangeAssignor``
(``shared/reference/kafka-consumer-groups.md`` §5.6):

- ``uniform``: balanced first (homogeneous: member sizes differ by at most one), sticky second
  (a member keeps what it owns up to its quota). The members that get one extra partition are
  taken in the spec's member order (Kafka: map iteration order). Heterogeneous subscriptions are
  balanced iteratively: a partition moves from a member to another member subscribed to its
  topic whenever that makes their sizes differ by less (Kafka bounds this at 16 passes; here it
  runs until no such move exists, which always terminates: every move lowers the sum of the
  squared sizes).
- ``range``: not sticky. Members are ordered static first (by instance id), then dynamic (by
  member id); per topic each subscriber gets a contiguous block of ``P // N`` partitions and the
  first ``P % N`` subscribers one more, so equal-sized topics are co-partitioned.

A subscribed topic missing from the spec's topics raises :class:`AssignorError` (Kafka: the
assignor throws and the heartbeat answers UNKNOWN_SERVER_ERROR).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

__all__ = ["ASSIGNORS", "AssignorError", "GroupSpec", "MemberSpec", "assign", "range_assign", "uniform_assign"]

#: member id → topic id → partitions
Assignment = dict[str, dict[str, frozenset[int]]]


class AssignorError(Exception):
    """The assignor cannot assign (Kafka's ``PartitionAssignorException``)."""


@dataclass(frozen=True)
class MemberSpec:
    """A member as the assignor sees it: ``subscribed`` topic ids, ``instance_id`` (static
    members), ``rack_id``, and its current ``target`` (topic id → partitions)."""

    member_id: str
    subscribed: frozenset[str]
    instance_id: str | None = None
    rack_id: str | None = None
    target: Mapping[str, frozenset[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupSpec:
    """``members`` in iteration order; ``topics`` topic id → partition count."""

    members: tuple[MemberSpec, ...]
    topics: Mapping[str, int]

    def homogeneous(self) -> bool:
        """Every member subscribes to the same topics (Kafka's SubscriptionType.HOMOGENEOUS)."""
        subs = {m.subscribed for m in self.members}
        return len(subs) <= 1


def _check_topics(spec: GroupSpec) -> None:
    for m in spec.members:
        for t in m.subscribed:
            if t not in spec.topics:
                raise AssignorError(f"member {m.member_id} subscribes to topic {t}, which does not exist")


def _to_assignment(owned: dict[str, set[tuple[str, int]]]) -> Assignment:
    out: Assignment = {}
    for mid, parts in owned.items():
        by_topic: dict[str, set[int]] = {}
        for t, p in parts:
            by_topic.setdefault(t, set()).add(p)
        out[mid] = {t: frozenset(ps) for t, ps in by_topic.items()}
    return out


def _sorted_parts(topics: Mapping[str, int], subscribed: frozenset[str]) -> list[tuple[str, int]]:
    return [(t, p) for t in sorted(subscribed) for p in range(topics[t])]


def uniform_assign(spec: GroupSpec) -> Assignment:
    """``UniformAssignor``: balanced, then sticky (see the module doc)."""
    _check_topics(spec)
    if not spec.members:
        return {}
    if spec.homogeneous():
        return _uniform_homogeneous(spec)
    return _uniform_heterogeneous(spec)


def _uniform_homogeneous(spec: GroupSpec) -> Assignment:
    subscribed = spec.members[0].subscribed
    all_parts = _sorted_parts(spec.topics, subscribed)
    n = len(spec.members)
    quota, extra = divmod(len(all_parts), n)
    valid = set(all_parts)
    owned: dict[str, set[tuple[str, int]]] = {m.member_id: set() for m in spec.members}
    taken: set[tuple[str, int]] = set()
    # 1. keep current partitions up to the quota (one over it while extras remain)
    for m in spec.members:
        current = sorted((t, p) for t, ps in m.target.items() for p in ps if (t, p) in valid and (t, p) not in taken)
        keep = current[:quota]
        if len(current) > quota and extra > 0:
            keep = current[:quota + 1]
            extra -= 1
        owned[m.member_id].update(keep)
        taken.update(keep)
    free = [tp for tp in all_parts if tp not in taken]
    # 2. fill members below the quota, then hand out the remaining extras in member order
    for m in spec.members:
        need = quota - len(owned[m.member_id])
        if need > 0:
            owned[m.member_id].update(free[:need])
            free = free[need:]
    for m in spec.members:
        if not free:
            break
        if extra > 0 and len(owned[m.member_id]) == quota:
            owned[m.member_id].add(free.pop(0))
            extra -= 1
    if free:
        raise AssignorError(f"{len(free)} partitions left unassigned")
    return _to_assignment(owned)


def _uniform_heterogeneous(spec: GroupSpec) -> Assignment:
    subs = {m.member_id: m.subscribed for m in spec.members}
    order = {m.member_id: i for i, m in enumerate(spec.members)}
    owned: dict[str, set[tuple[str, int]]] = {m.member_id: set() for m in spec.members}
    owner: dict[tuple[str, int], str] = {}
    # 1. sticky: keep current partitions of topics still subscribed
    for m in spec.members:
        for t, ps in m.target.items():
            if t not in m.subscribed:
                continue
            for p in ps:
                if 0 <= p < spec.topics[t] and (t, p) not in owner:
                    owner[(t, p)] = m.member_id
                    owned[m.member_id].add((t, p))
    # 2. free partitions go to the least loaded subscriber (fewest subscribers first)
    topics_by_subs = sorted(spec.topics, key=lambda t: (sum(1 for s in subs.values() if t in s), t))
    for t in topics_by_subs:
        cands = [mid for mid in owned if t in subs[mid]]
        if not cands:
            continue
        for p in range(spec.topics[t]):
            if (t, p) in owner:
                continue
            mid = min(cands, key=lambda c: (len(owned[c]), order[c]))
            owner[(t, p)] = mid
            owned[mid].add((t, p))
    # 3. balance: move a partition to a subscriber holding at least two fewer
    moved = True
    while moved:
        moved = False
        for src in sorted(owned, key=lambda c: (-len(owned[c]), order[c])):
            for tp in sorted(owned[src]):
                cands = [c for c in owned if c != src and tp[0] in subs[c] and len(owned[c]) + 1 < len(owned[src])]
                if cands:
                    dst = min(cands, key=lambda c: (len(owned[c]), order[c]))
                    owned[src].discard(tp)
                    owned[dst].add(tp)
                    moved = True
                    break
            if moved:
                break
    return _to_assignment(owned)


def range_assign(spec: GroupSpec) -> Assignment:
    """``RangeAssignor``: contiguous blocks per topic, static members (by instance id) first,
    then dynamic members (by member id); not sticky."""
    _check_topics(spec)
    ordered = sorted((m for m in spec.members if m.instance_id), key=lambda m: m.instance_id or "")
    ordered += sorted((m for m in spec.members if not m.instance_id), key=lambda m: m.member_id)
    out: Assignment = {m.member_id: {} for m in spec.members}
    for t in sorted(spec.topics):
        subscribers = [m for m in ordered if t in m.subscribed]
        if not subscribers:
            continue
        quota, extra = divmod(spec.topics[t], len(subscribers))
        start = 0
        for i, m in enumerate(subscribers):
            size = quota + (1 if i < extra else 0)
            if size:
                out[m.member_id][t] = frozenset(range(start, start + size))
            start += size
    return out


#: assignor name → function (``group.consumer.assignors`` names)
ASSIGNORS: dict[str, Callable[[GroupSpec], Assignment]] = {"uniform": uniform_assign, "range": range_assign}


def assign(name: str, spec: GroupSpec) -> Assignment:
    """Run the assignor called ``name``; every member of the spec is in the result (possibly
    with nothing)."""
    result = ASSIGNORS[name](spec)
    return {m.member_id: {t: ps for t, ps in result.get(m.member_id, {}).items() if ps} for m in spec.members}
