"""The share-group ``simple`` assignor as Kafka 4.1/4.2 balances it (pure).

Semantics from ``group-coordinator/.../assignor/SimpleAssignor.java`` and its two builders,
``SimpleHomogeneousAssignmentBuilder`` (every member subscribes to the same topics) and
``SimpleHeterogeneousAssignmentBuilder`` (balance computed per topic over that topic's
subscribers). Principles, in priority order:

1. **Balance**: assignment sizes of any two members differ by at most one partition. With more
   members than partitions a partition is *shared*: ``desired_sharing = ceil(M / P)`` members per
   partition, and each member's desired count is ``ceil(x·(i+1)) − ceil(x·i)`` with
   ``x = desired_sharing · P / M`` (member ``i`` in member order).
2. **Stickiness**: members keep as much of their current assignment as balance allows.

Steps (homogeneous): revoke partitions of topics no longer subscribed; revoke over-shared
partitions (from over-filled members first); revoke partitions from members still over-filled;
then hand out partitions with too few members, cycling over the unfilled members.

Deliberate, documented deviations from Kafka's Java (which iterates ``HashMap``/``HashSet``):

- **Deterministic order.** Members are taken in sorted member-id order, topics in sorted topic-id
  order and partitions ascending, so replaying the same inputs always yields the same target.
- In the homogeneous builder Kafka's ``revokeOverfilledMembers`` drops a partition from its
  bookkeeping but not from the member's new assignment; here it is removed from both, as the
  heterogeneous builder does and as the balance principle requires.
- Partitions in a current assignment that no longer exist in the metadata are dropped.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping

__all__ = ["Assignment", "PartitionAssignorError", "SimpleAssignor", "assign"]

#: member id → topic id → set of partitions
Assignment = dict[str, dict[str, frozenset[int]]]


class PartitionAssignorError(ValueError):
    """Kafka's ``PartitionAssignorException``: a member subscribes to a topic id that is not in the
    topic metadata."""


def _desired_counts(n_members: int, n_partitions: int) -> tuple[int, list[int]]:
    """``(desired_sharing, desired_count_per_member_position)`` as Kafka computes them (doubles and
    ``Math.ceil``)."""
    if n_partitions == 0 or n_members == 0:
        return 0, [0] * n_members
    sharing = (n_members + n_partitions - 1) // n_partitions
    precise = sharing * n_partitions / float(n_members)
    return sharing, [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(n_members)]


def _assign_remaining(
    partitions_in_order: list,
    by_partition: dict,
    unfilled: list[int],
    desired_sharing: int,
    count_of: Callable[[int], int],
    desired_of: Callable[[int], int],
    give: Callable[[int, object], None],
) -> None:
    """Kafka's ``assignRemainingPartitions``: one pass over the partitions; for a partition with
    fewer than ``desired_sharing`` members, take unfilled members in a cycling order, skipping
    members that already have it; give up on a partition when a whole cycle assigns nothing."""
    if not unfilled:
        return
    pos = 0
    assigned_this_cycle = False
    for tp in partitions_in_order:
        members = by_partition[tp]
        to_make = desired_sharing - len(members)
        while to_make > 0:
            if pos >= len(unfilled):
                if not assigned_this_cycle:
                    break
                pos = 0
                assigned_this_cycle = False
                if not unfilled:
                    break
            m = unfilled[pos]
            pos += 1
            if m not in members:
                members.add(m)
                give(m, tp)
                to_make -= 1
                assigned_this_cycle = True
                if count_of(m) >= desired_of(m):
                    pos -= 1
                    del unfilled[pos]
        if not unfilled:
            break


class SimpleAssignor:
    """The ``simple`` share-group assignor (``ShareGroupPartitionAssignor``): ``name() == "simple"``."""

    name = "simple"

    def assign(
        self,
        subscriptions: Mapping[str, frozenset[str] | set[str]],
        current: Mapping[str, Mapping[str, frozenset[int] | set[int]]],
        partitions_per_topic: Mapping[str, int],
        assignable: Callable[[str, int], bool] | None = None,
    ) -> Assignment:
        """Compute the target assignment.

        ``subscriptions``: member id → subscribed topic ids; ``current``: member id → topic id →
        partitions (the previous target; members missing here start empty);
        ``partitions_per_topic``: topic id → partition count (topics missing here are unknown);
        ``assignable``: ``(topic id, partition) → bool`` (Kafka 4.2's
        ``GroupSpec.isPartitionAssignable``: share state initialized), default all.

        Returns member id → topic id → frozenset of partitions, with an entry for every member.
        Raises :class:`PartitionAssignorError` for a subscribed topic id missing from the metadata.
        """
        if not subscriptions:
            return {}
        members = sorted(subscriptions)
        topic_sets = {m: frozenset(subscriptions[m]) for m in members}
        all_topics = sorted(set().union(*topic_sets.values()))
        for t in all_topics:
            if t not in partitions_per_topic or partitions_per_topic[t] < 0:
                raise PartitionAssignorError(f"Members are subscribed to topic {t} which doesn't exist in the topic metadata.")
        ok = assignable or (lambda _t, _p: True)
        targets = {t: [p for p in range(partitions_per_topic[t]) if ok(t, p)] for t in all_topics}
        old = [{t: frozenset(ps) for t, ps in current.get(m, {}).items()} for m in members]
        homogeneous = len(set(topic_sets.values())) == 1
        if homogeneous:
            new = self._homogeneous(members, all_topics, targets, old)
        else:
            new = self._heterogeneous(members, topic_sets, all_topics, targets, old)
        out: Assignment = {}
        for i, m in enumerate(members):
            chosen = new.get(i)
            src = chosen if chosen is not None else old[i]
            out[m] = {t: frozenset(ps) for t, ps in src.items() if ps}
        return out

    # -- homogeneous ----------------------------------------------------------------------
    def _homogeneous(self, members, topics, targets, old):
        subscribed = set(topics)
        target_set = {(t, p) for t in topics for p in targets[t]}
        n = len(members)
        ordered_targets = sorted(target_set)
        if not subscribed:
            return {i: {} for i in range(n)}
        sharing, desired = _desired_counts(n, len(ordered_targets))
        new: dict[int, dict[str, set[int]]] = {}
        by_partition: dict[tuple[str, int], set[int]] = {}
        by_member: dict[int, set[tuple[str, int]]] = {}
        unfilled: set[int] = set()
        overfilled: set[int] = set()

        def copy_of(i: int) -> dict[str, set[int]]:
            if i not in new:
                new[i] = {t: set(ps) for t, ps in old[i].items()}
            return new[i]

        # 1. revokeUnassignablePartitions
        for i in range(n):
            count = 0
            for t in sorted(old[i]):
                if t in subscribed:
                    for p in sorted(old[i][t]):
                        if (t, p) not in target_set:
                            copy_of(i)[t].discard(p)
                            continue
                        count += 1
                        by_partition.setdefault((t, p), set()).add(i)
                        by_member.setdefault(i, set()).add((t, p))
                        if count >= desired[i]:
                            copy_of(i)
                else:
                    copy_of(i).pop(t, None)
            if count < desired[i]:
                unfilled.add(i)
            elif count > desired[i]:
                overfilled.add(i)

        # 2. revokeOversharedPartitions (over-filled members first)
        for tp in sorted(by_partition):
            assigned = by_partition[tp]
            for pass_overfilled in (True, False):
                if len(assigned) <= sharing:
                    break
                for i in sorted(assigned):
                    if (i in overfilled) == pass_overfilled:
                        parts = copy_of(i).get(tp[0])
                        if parts is not None and tp[1] in parts:
                            parts.discard(tp[1])
                            assigned.discard(i)
                            by_member[i].discard(tp)
                            unfilled.add(i)
                    if len(assigned) <= sharing:
                        break

        # 3. revokeOverfilledMembers
        for i in sorted(overfilled):
            mine = by_member.get(i, set())
            for tp in sorted(mine):
                if len(mine) <= desired[i]:
                    break
                by_partition[tp].discard(i)
                mine.discard(tp)
                copy_of(i)[tp[0]].discard(tp[1])

        # 4. assignRemainingPartitions
        for tp in ordered_targets:
            by_partition.setdefault(tp, set())
        unfilled_list = sorted(i for i in unfilled if len(by_member.get(i, ())) < desired[i])

        def give(i: int, tp) -> None:
            copy_of(i).setdefault(tp[0], set()).add(tp[1])
            by_member.setdefault(i, set()).add(tp)

        _assign_remaining(ordered_targets, by_partition, unfilled_list, sharing,
                          lambda i: len(by_member.get(i, ())), lambda i: desired[i], give)
        return new

    # -- heterogeneous --------------------------------------------------------------------
    def _heterogeneous(self, members, topic_sets, topics, targets, old):
        n = len(members)
        new: dict[int, dict[str, set[int]]] = {}

        def copy_of(i: int) -> dict[str, set[int]]:
            if i not in new:
                new[i] = {t: set(ps) for t, ps in old[i].items()}
            return new[i]

        # members that dropped a topic lose it entirely (revokeUnassignablePartitions)
        for i, m in enumerate(members):
            for t in list(old[i]):
                if t not in topic_sets[m]:
                    copy_of(i).pop(t, None)

        for t in topics:
            subscribers = [i for i, m in enumerate(members) if t in topic_sets[m]]
            parts = targets[t]
            part_set = set(parts)
            sharing, counts = _desired_counts(len(subscribers), len(parts))
            desired = {i: 0 for i in range(n)}
            for pos, i in enumerate(subscribers):
                desired[i] = counts[pos]
            by_partition: dict[int, set[int]] = {}
            by_member: dict[int, set[int]] = {}
            for i in range(n):
                cur = (new[i] if i in new else old[i]).get(t)
                if not cur or t not in topic_sets[members[i]]:
                    continue
                for p in sorted(cur):
                    if p not in part_set:
                        copy_of(i)[t].discard(p)
                        continue
                    by_partition.setdefault(p, set()).add(i)
                    by_member.setdefault(i, set()).add(p)
            # revokeOverfilledMembers
            for i in sorted(by_member):
                mine = by_member[i]
                for p in sorted(mine):
                    if len(mine) <= desired[i]:
                        break
                    by_partition[p].discard(i)
                    mine.discard(p)
                    copy_of(i)[t].discard(p)
            # revokeOversharedPartitions
            for p in sorted(by_partition):
                assigned = by_partition[p]
                for i in sorted(assigned):
                    if len(assigned) <= sharing:
                        break
                    mine = copy_of(i).get(t)
                    if mine is not None and p in mine:
                        mine.discard(p)
                        assigned.discard(i)
                        by_member[i].discard(p)
            for p in parts:
                by_partition.setdefault(p, set())
            unfilled = [i for i in subscribers if len(by_member.get(i, ())) < desired[i]]
            unfilled.sort()

            def give(i: int, p: int, t: str = t, by_member: dict = by_member) -> None:
                copy_of(i).setdefault(t, set()).add(p)
                by_member.setdefault(i, set()).add(p)

            _assign_remaining(sorted(parts), by_partition, unfilled, sharing,
                              lambda i, bm=by_member: len(bm.get(i, ())), lambda i, d=desired: d[i], give)
        return new


def assign(
    subscriptions: Mapping[str, frozenset[str] | set[str]],
    current: Mapping[str, Mapping[str, frozenset[int] | set[int]]],
    partitions_per_topic: Mapping[str, int],
    assignable: Callable[[str, int], bool] | None = None,
) -> Assignment:
    """Shortcut for ``SimpleAssignor().assign(...)`` (see there)."""
    return SimpleAssignor().assign(subscriptions, current, partitions_per_topic, assignable)
