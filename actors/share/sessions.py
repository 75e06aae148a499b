"""Share sessions of ShareFetch (API 78) and ShareAcknowledge (API 79), as a pure decider.

Semantics from Kafka's ``ShareRequestMetadata`` (``INITIAL_EPOCH = 0``, ``FINAL_EPOCH = -1``,
``nextEpoch``: ``Integer.MAX_VALUE`` wraps to 1), ``ShareSessionCache`` and
``SharePartitionManager.newContext`` / ``acknowledgeSessionUpdate`` (Kafka 4.x):

ShareFetch
  * epoch 0 (INITIAL): acknowledgements are not allowed (INVALID_REQUEST); any existing session of
    (group, member) is replaced; a new session is created with epoch **1** holding the request's
    partitions. When the cache is full → SHARE_SESSION_LIMIT_REACHED (Kafka 4.1+).
  * epoch -1 (FINAL): no session → SHARE_SESSION_NOT_FOUND; the acknowledgements are processed,
    nothing is acquired, and then the session is closed and the member's acquired records released
    (``releaseSession``). Deviation: Kafka answers INVALID_REQUEST when a FINAL ShareFetch asks to
    *fetch* partitions; this decider cannot tell a fetch from an acknowledgement-only partition
    (the request names both the same way), so the actor acquires nothing instead.
  * epoch N > 0: no session → SHARE_SESSION_NOT_FOUND; N ≠ session epoch →
    INVALID_SHARE_SESSION_EPOCH; otherwise the request's partitions are added, the forgotten ones
    removed and the epoch becomes ``nextEpoch(N)``.

ShareAcknowledge
  * epoch 0 → INVALID_SHARE_SESSION_EPOCH; no session → SHARE_SESSION_NOT_FOUND;
  * epoch -1 → the acknowledgements are processed, then the session is closed and the records
    released; otherwise the epoch must match and is then bumped.

Sessions are broker memory (not events): the ``ShareGroupActor`` keeps them for its group and
loses them on restart, like a Kafka broker restart; clients then start again with epoch 0.
The limit ``group.share.max.share.sessions`` is applied per group actor here (Kafka applies it per
broker).

A client keeps one share session per broker it fetches from (Kafka's ``ShareSessionCache`` is
per broker). On a cluster a group's actor runs on its coordinator node, and the other nodes
forward their share requests to it (:mod:`wire.forwarding`), so a session is keyed by the member
*and* the node the client talks to: ``(member_id, node_id)``, ``node_id`` -1 for the node the
actor runs on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from actors.share.errors import ShareError

__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "SessionDecision",
    "ShareSession",
    "ShareSessions",
    "decide_share_acknowledge",
    "decide_share_fetch",
    "next_epoch",
]

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_INT_MAX = 2**31 - 1

TopicIdPartition = tuple[str, int]


def next_epoch(epoch: int) -> int:
    """``ShareRequestMetadata.nextEpoch``: INITIAL (0) → 1, FINAL (-1) stays FINAL,
    ``Integer.MAX_VALUE`` wraps to 1, otherwise +1."""
    if epoch == INITIAL_EPOCH:
        return 1
    if epoch == FINAL_EPOCH:
        return FINAL_EPOCH
    if epoch >= _INT_MAX:
        return 1
    return epoch + 1


@dataclass(slots=True)
class ShareSession:
    """One share session: ``epoch`` is the epoch the next request must carry; ``partitions`` the
    session's topic-id partitions; times in ms; ``node_id`` the node the client holds it with
    (-1: the node the group's actor runs on)."""

    member_id: str
    epoch: int
    partitions: set[TopicIdPartition] = field(default_factory=set)
    created_ms: int = 0
    last_used_ms: int = 0
    node_id: int = -1


@dataclass(frozen=True, slots=True)
class SessionDecision:
    """What a request does to the session of ``member_id``.

    ``kind``: ``"NEW"`` (epoch 0: create, replacing ``replaced``), ``"UPDATE"`` (epoch N: bump),
    ``"FINAL"`` (epoch -1: process acks then close and release), ``"CONTINUE"`` (a ShareFetch's
    later attempt from the purgatory: the session stays as its first attempt left it; made by the
    actor, never by :func:`decide_share_fetch`). ``epoch_after`` is the session's
    epoch after the request (``-1`` for FINAL); ``added``/``forgotten`` the partition changes;
    ``partitions`` the session's partitions after the request (what this fetch may read)."""

    member_id: str
    kind: str
    epoch_after: int
    replaced: bool = False
    added: tuple[TopicIdPartition, ...] = ()
    forgotten: tuple[TopicIdPartition, ...] = ()
    partitions: tuple[TopicIdPartition, ...] = ()
    node_id: int = -1


@dataclass(slots=True)
class ShareSessions:
    """The share sessions of one group: ``(member id, node id)`` → :class:`ShareSession` (see
    the module doc); ``max_sessions`` is ``group.share.max.share.sessions``."""

    max_sessions: int = 2000
    sessions: dict[tuple[str, int], ShareSession] = field(default_factory=dict)

    def get(self, member_id: str, node_id: int = -1) -> ShareSession | None:
        """The member's session with ``node_id`` or ``None``."""
        return self.sessions.get((member_id, node_id))

    def of_member(self, member_id: str) -> list[ShareSession]:
        """Every session ``member_id`` holds (one per node it fetches from)."""
        return [s for (m, _n), s in self.sessions.items() if m == member_id]

    def apply(self, decision: SessionDecision, now_ms: int) -> None:
        """Carry out a decision (mutates): create, bump or remove the session."""
        key = (decision.member_id, decision.node_id)
        if decision.kind == "FINAL":
            self.sessions.pop(key, None)
            return
        if decision.kind == "NEW":
            self.sessions[key] = ShareSession(
                decision.member_id, decision.epoch_after, set(decision.partitions), now_ms, now_ms, decision.node_id)
            return
        s = self.sessions[key]
        s.epoch = decision.epoch_after
        s.partitions = set(decision.partitions)
        s.last_used_ms = now_ms

    def remove(self, member_id: str, node_id: int = -1) -> bool:
        """Drop the member's session with ``node_id``. Returns whether there was one."""
        return self.sessions.pop((member_id, node_id), None) is not None


def decide_share_fetch(
    sessions: ShareSessions,
    member_id: str,
    epoch: int,
    fetch_partitions: Iterable[TopicIdPartition],
    forgotten: Iterable[TopicIdPartition] = (),
    has_acknowledgements: bool = False,
    node_id: int = -1,
) -> SessionDecision:
    """Decide the session step of a ShareFetch (see module doc) for the session of ``member_id``
    with ``node_id``. ``fetch_partitions``: the partitions named in the request (to fetch and/or
    acknowledge). Raises :class:`ShareError` (INVALID_REQUEST, SHARE_SESSION_NOT_FOUND,
    INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED); never mutates ``sessions``."""
    if not member_id:
        raise ShareError("INVALID_REQUEST", "MemberId can't be empty.")
    parts = tuple(dict.fromkeys(fetch_partitions))
    gone = tuple(dict.fromkeys(forgotten))
    current = sessions.get(member_id, node_id)
    if epoch == INITIAL_EPOCH:
        if has_acknowledgements:
            raise ShareError("INVALID_REQUEST", "Acknowledge data present in Initial Fetch Request")
        if current is None and len(sessions.sessions) >= sessions.max_sessions:
            raise ShareError("SHARE_SESSION_LIMIT_REACHED", "The share session cache is full.")
        final = tuple(sorted(set(parts) - set(gone)))
        return SessionDecision(member_id, "NEW", 1, current is not None, final, (), final, node_id)
    if epoch == FINAL_EPOCH:
        if current is None:
            raise ShareError("SHARE_SESSION_NOT_FOUND", f"Share session not found for member {member_id}.")
        return SessionDecision(member_id, "FINAL", FINAL_EPOCH, partitions=tuple(sorted(current.partitions)), node_id=node_id)
    if epoch < FINAL_EPOCH:
        raise ShareError("INVALID_SHARE_SESSION_EPOCH", f"Invalid share session epoch {epoch}.")
    if current is None:
        raise ShareError("SHARE_SESSION_NOT_FOUND", f"Share session not found for member {member_id}.")
    if epoch != current.epoch:
        raise ShareError("INVALID_SHARE_SESSION_EPOCH",
                         f"The share session epoch {epoch} does not match the expected epoch {current.epoch}.")
    after = (current.partitions | set(parts)) - set(gone)
    added = tuple(sorted(set(parts) - current.partitions))
    removed = tuple(sorted(set(gone) & current.partitions))
    return SessionDecision(member_id, "UPDATE", next_epoch(epoch), False, added, removed, tuple(sorted(after)), node_id)


def decide_share_acknowledge(sessions: ShareSessions, member_id: str, epoch: int, node_id: int = -1) -> SessionDecision:
    """Decide the session step of a ShareAcknowledge (see module doc) for the session of
    ``member_id`` with ``node_id``. Raises :class:`ShareError` (INVALID_SHARE_SESSION_EPOCH,
    SHARE_SESSION_NOT_FOUND); never mutates ``sessions``."""
    if epoch == INITIAL_EPOCH or epoch < FINAL_EPOCH:
        raise ShareError("INVALID_SHARE_SESSION_EPOCH", f"Invalid share session epoch {epoch} for ShareAcknowledge.")
    current = sessions.get(member_id, node_id)
    if current is None:
        raise ShareError("SHARE_SESSION_NOT_FOUND", f"Share session not found for member {member_id}.")
    if epoch == FINAL_EPOCH:
        return SessionDecision(member_id, "FINAL", FINAL_EPOCH, partitions=tuple(sorted(current.partitions)), node_id=node_id)
    if epoch != current.epoch:
        raise ShareError("INVALID_SHARE_SESSION_EPOCH",
                         f"The share session epoch {epoch} does not match the expected epoch {current.epoch}.")
    return SessionDecision(member_id, "UPDATE", next_epoch(epoch), partitions=tuple(sorted(current.partitions)), node_id=node_id)
