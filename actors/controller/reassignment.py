"""Partition reassignment (KIP-455), pure: plans, completion, revert and the partition change
they lead to.

Semantics are Apache Kafka's KRaft controller (read from source, trunk @1eb7644 2024-10):

* :func:`plan` is ``PartitionReassignmentReplicas(current, target)``: ``removing`` = current −
  target, ``adding`` = target − current (both sorted), and the interim ``replicas`` = the target
  in its order followed by ``removing``. ``current`` is the partition's replica list as it is,
  the interim one when a reassignment is already running (so a new target replaces it, KRaft
  never answers REASSIGNMENT_IN_PROGRESS).
* :func:`validate_target` is ``ReplicationControlManager.validateManualPartitionAssignment``:
  non-empty, no broker twice, every broker registered (a fenced one is fine; the replication
  factor may change) — else INVALID_REPLICA_ASSIGNMENT.
* :func:`maybe_complete` is ``PartitionReassignmentReplicas.maybeCompleteReassignment``: once
  the ISR without the removing replicas is non-empty and holds every replica of the target, the
  target is committed: replicas := interim − removing, ISR := ISR − removing.
* :func:`revert` is ``PartitionReassignmentRevert``: replicas := interim − adding (in the
  interim order, not the original one), ISR := ISR − adding; if that empties the ISR, the first
  remaining replica is put in it, which counts as an unclean election (refused unless the topic
  allows unclean leader election).
* :func:`change` is ``PartitionChangeBuilder.build`` without ELR/directories/recovery state:
  complete the reassignment if it can be, elect (ONLINE: keep the leader if it is in the new ISR
  and live, else the first replica of the new list that is; UNCLEAN additionally takes the first
  live replica with ISR = [it]); bump the leader epoch when the leader changes or any old
  replica leaves the replica list (``triggerLeaderEpochBumpForReplicaReassignmentIfNeeded``);
  never write an empty ISR; bump the partition epoch on any change; no change → the same
  registration.

Nothing here reads a clock or does I/O; :mod:`actors.controller.state` turns the results into
``PartitionChanged`` events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

__all__ = ["NO_LEADER", "Registration", "change", "maybe_complete", "plan", "revert", "validate_target"]

NO_LEADER = -1


@dataclass(frozen=True)
class Registration:
    """A partition's registration as far as reassignment is concerned (Kafka's
    ``PartitionRegistration``): ``replicas`` in assignment order, ``isr``, ``leader`` (-1 =
    none), ``leader_epoch``, ``partition_epoch``, ``adding`` and ``removing`` (both empty when
    no reassignment is in progress)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def reassigning(self) -> bool:
        """Whether a reassignment is in progress (``PartitionReassignmentReplicas.isReassignmentInProgress``)."""
        return bool(self.adding or self.removing)

    @property
    def original_replicas(self) -> tuple[int, ...]:
        """The replicas without those being added (``PartitionReassignmentReplicas.originalReplicas``)."""
        return tuple(r for r in self.replicas if r not in self.adding)


def plan(current: Sequence[int], target: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """``(replicas, adding, removing)`` of moving ``current`` to ``target`` (Kafka's
    ``PartitionReassignmentReplicas``): adding = target − current and removing = current −
    target, both sorted; replicas = target followed by removing."""
    removing = tuple(sorted(set(current) - set(target)))
    adding = tuple(sorted(set(target) - set(current)))
    return tuple(target) + removing, adding, removing


def validate_target(target: Sequence[int], registered: Iterable[int]) -> str | None:
    """``None`` if ``target`` is a valid manual assignment, else the message of Kafka's
    INVALID_REPLICA_ASSIGNMENT (``validateManualPartitionAssignment``): empty, a broker that is
    not registered, or a broker listed twice (checked in ascending broker order)."""
    if not target:
        return "The manual partition assignment includes an empty replica list."
    known = set(registered)
    prev = None
    for b in sorted(target):
        if b not in known:
            return f"The manual partition assignment includes broker {b}, but no such broker is registered."
        if b == prev:
            return f"The manual partition assignment includes the broker {b} more than once."
        prev = b
    return None


def maybe_complete(
    replicas: Sequence[int], adding: Sequence[int], removing: Sequence[int], isr: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """``(replicas, isr)`` once the reassignment of the interim ``replicas`` can complete with
    ``isr`` (``maybeCompleteReassignment``), ``None`` otherwise (also when none is in progress):
    without the removing replicas, the ISR must be non-empty and hold every remaining replica."""
    if not adding and not removing:
        return None
    new_isr = tuple(r for r in isr if r not in removing)
    new_replicas = tuple(r for r in replicas if r not in removing)
    if not new_isr or not new_replicas:
        return None
    if not set(new_replicas) <= set(new_isr):
        return None
    return new_replicas, new_isr


def revert(reg: Registration) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
    """``(replicas, isr, unclean)`` after cancelling ``reg``'s reassignment
    (``PartitionReassignmentRevert``): the interim replicas without the adding ones (interim
    order), the ISR without the adding ones; when no ISR member is left, ISR = [the first
    remaining replica] and ``unclean`` is True. Raises ``ValueError`` if every replica was being
    added (unreachable for a partition that had replicas)."""
    replicas = reg.original_replicas
    isr = tuple(r for r in reg.isr if r not in reg.adding)
    if isr:
        return replicas, isr, False
    if not replicas:
        raise ValueError("Invalid replica assignment: addingReplicas contains all replicas.")
    return replicas, (replicas[0],), True


def change(
    reg: Registration,
    live: Iterable[int],
    *,
    replicas: Sequence[int] | None = None,
    isr: Sequence[int] | None = None,
    adding: Sequence[int] | None = None,
    removing: Sequence[int] | None = None,
    unclean: bool = False,
) -> Registration:
    """The registration after a partition change towards the given targets (``None`` keeps the
    current value), as Kafka's ``PartitionChangeBuilder.build`` decides it (see the module
    docstring): completion of a reassignment, ONLINE election (UNCLEAN with ``unclean``) among
    the ``live`` brokers, leader-epoch bump on a leader change or when an old replica leaves the
    list, no empty ISR, partition-epoch bump on any change. Returns ``reg`` itself when nothing
    changes."""
    t_replicas = tuple(reg.replicas if replicas is None else replicas)
    t_isr = tuple(reg.isr if isr is None else isr)
    t_adding = tuple(reg.adding if adding is None else adding)
    t_removing = tuple(reg.removing if removing is None else removing)
    done = maybe_complete(t_replicas, t_adding, t_removing, t_isr)
    if done is not None:
        t_replicas, t_isr = done
        t_adding, t_removing = (), ()
    alive = set(live)

    def valid(r: int) -> bool:
        """In the target ISR and live (``isValidNewLeader`` with the ``LeaderAcceptor``)."""
        return r in t_isr and r in alive

    leader = reg.leader
    if not valid(leader):
        leader = next((r for r in t_replicas if valid(r)), NO_LEADER)
        if leader == NO_LEADER and unclean:
            leader = next((r for r in t_replicas if r in alive), NO_LEADER)
            if leader != NO_LEADER:
                t_isr = (leader,)
    if not t_isr:  # without ELR the ISR is never written empty: the last member stays
        t_isr = reg.isr
    bump = leader != reg.leader or not set(reg.replicas) <= set(t_replicas)
    new = Registration(t_replicas, t_isr, leader, reg.leader_epoch + (1 if bump else 0), reg.partition_epoch, t_adding, t_removing)
    if new == reg:
        return reg
    return Registration(new.replicas, new.isr, new.leader, new.leader_epoch, reg.partition_epoch + 1, new.adding, new.removing)
