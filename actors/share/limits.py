"""How many share groups may exist: ``group.share.max.groups`` and which requests may create a group.

Pure (no Thespian, no I/O): the controller keeps the *census* — the ids of the share groups that
exist (their event streams ``share-group:<id>`` in the log, read at recovery, plus the groups it
started since) — and asks :func:`admit_share_group` before it starts a ``ShareGroupActor``.

Which requests may create a group (``create``):

* ShareGroupHeartbeat joining (member epoch 0): Kafka's ``GroupMetadataManager.shareGroupHeartbeat``
  calls ``getOrMaybeCreateShareGroup(groupId, createIfNotExists = memberEpoch == 0)``; any other
  epoch on an unknown group is ``GroupIdNotFoundException`` → GROUP_ID_NOT_FOUND
  ("Share group <id> not found.").
* ShareFetch opening a share session (epoch 0): Kafka's share-partition manager creates the
  session and initialises share-partition state for whatever group the request names, so it may
  create the group too (Shoal keeps that state in the group's stream) and counts against the limit
  like a join. A ShareFetch with another epoch, or a ShareAcknowledge, needs a session, which a
  group that does not exist cannot have: it gets the session decider's answer
  (SHARE_SESSION_NOT_FOUND / INVALID_SHARE_SESSION_EPOCH) without an actor.
* IncrementalAlterConfigs on a GROUP resource: Kafka stores group configs in the metadata log
  without creating a group; Shoal keeps them in the group's stream, so an alter of an unknown
  group creates it and counts against the limit (a named deviation).
* Describes (ShareGroupDescribe, DescribeShareGroupOffsets, DescribeConfigs GROUP), ListGroups and
  FindCoordinator never create: they answer GROUP_ID_NOT_FOUND (Kafka's ``shareGroupDescribe``),
  the broker defaults (``ConfigHelper.describeConfigs`` for an unknown GROUP), or nothing.

``group.share.max.groups`` (``ShareGroupConfig.SHARE_GROUP_MAX_GROUPS_CONFIG``, default 10; Kafka's
range was [1, 100], Shoal's is [1, 10000], see :mod:`actors.share.config`): Kafka defined it but only sized its share-session cache with it
(``BrokerServer``: ``shareGroupMaxGroups * shareGroupMaxSize``) and removed it in 4.1
(KAFKA-19156); the proposal to refuse the heartbeat that would create one group too many
(KAFKA-19024, apache/kafka#19313) was not merged. Shoal enforces it as that proposal did — on the
request that would create the group — and answers GROUP_MAX_SIZE_REACHED (81), the error Kafka
uses for the sibling limit ``group.share.max.size`` (non-retriable in Kafka's clients). Groups that
already exist are never refused, so lowering the limit never locks out an existing group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Any, Mapping

from actors.share.config import BROKER_SHARE_CONFIG_DEFS

__all__ = [
    "GroupRefusal",
    "admit_share_group",
    "max_groups_from",
    "census_from_stream_ids",
    "census_from_log",
    "deleted_by_tail",
    "share_group_in_log",
    "STREAM_PREFIX",
]

#: Prefix of a share group's event stream (``events.share_group.stream_id_for``).
STREAM_PREFIX = "share-group:"


@dataclass(frozen=True, slots=True)
class GroupRefusal:
    """Why a lookup may not start a group's actor: ``error`` is the Kafka error name for the wire
    (``GROUP_ID_NOT_FOUND`` or ``GROUP_MAX_SIZE_REACHED``), ``message`` the error message."""

    error: str
    message: str


def admit_share_group(group_id: str, known: AbstractSet[str], create: bool, max_groups: int) -> GroupRefusal | None:
    """Decide whether the actor of share group ``group_id`` may be started.

    ``known``: the census (ids of the share groups that exist); ``create``: whether the request may
    create the group (see the module doc); ``max_groups``: ``group.share.max.groups`` (≥ 1).

    Returns ``None`` when the group exists (whatever ``create``), or when ``create`` and fewer than
    ``max_groups`` groups exist (the caller then adds it to the census). Otherwise a
    :class:`GroupRefusal`: GROUP_ID_NOT_FOUND ("Share group <id> not found.", Kafka's
    ``getOrMaybeCreateShareGroup`` wording) when not ``create``; GROUP_MAX_SIZE_REACHED when the
    census already holds ``max_groups`` groups."""
    if group_id in known:
        return None
    if not create:
        return GroupRefusal("GROUP_ID_NOT_FOUND", f"Share group {group_id} not found.")
    if len(known) >= max_groups:
        return GroupRefusal(
            "GROUP_MAX_SIZE_REACHED",
            f"The broker has reached its maximum of {max_groups} share groups (group.share.max.groups); "
            f"share group {group_id} cannot be created.",
        )
    return None


def max_groups_from(config: Mapping[str, Any]) -> int:
    """``group.share.max.groups`` from a broker config (Kafka's default 10 when absent).
    Raises :class:`actors.share.config.InvalidConfig` for a value that is not a short in [1, 10000]."""
    d = BROKER_SHARE_CONFIG_DEFS["group.share.max.groups"]
    raw = config.get(d.key)
    return int(d.default) if raw in (None, "") else int(d.parse(raw))


def census_from_stream_ids(stream_ids: list[str] | tuple[str, ...]) -> set[str]:
    """The group ids of the share-group streams among ``stream_ids`` (others are ignored)."""
    return {s[len(STREAM_PREFIX):] for s in stream_ids if s.startswith(STREAM_PREFIX)}


#: The event type of ``events.share_group.ShareGroupDeleted`` (DeleteGroups of a share group).
SHARE_GROUP_DELETED = "share_group.ShareGroupDeleted"
#: Audit-only events that may follow a deletion without re-creating the group.
_AUDIT_ONLY = frozenset({"share_group.ShareSessionOpened", "share_group.ShareSessionClosed"})


def deleted_by_tail(tail_event_types: list[str] | tuple[str, ...]) -> bool | None:
    """Whether a share-group stream whose last events have the types ``tail_event_types`` (oldest
    first) ends with its group deleted: the newest event that is not audit-only (share sessions
    opened/closed) is ``ShareGroupDeleted``. ``None`` when the tail holds only audit events (look
    further back)."""
    for t in reversed(tail_event_types):
        if t in _AUDIT_ONLY:
            continue
        return t == SHARE_GROUP_DELETED
    return None


def share_group_in_log(elog: Any, group_id: str, tail: int = 16) -> bool:
    """Whether share group ``group_id`` exists in the event log (:class:`store.event_log.EventLog`):
    its stream ``share-group:<id>`` has events and does not end deleted (:func:`deleted_by_tail`;
    reads the last ``tail`` events, more while they are only audit events)."""
    sid = STREAM_PREFIX + group_id
    end = elog.stream_version(sid)
    if end <= 0:
        return False
    deleted: bool | None = None
    while deleted is None and end > 0:
        start = max(1, end - tail + 1)
        deleted = deleted_by_tail([r.event_type for r in elog.read_stream(sid, start, end)])
        end = start - 1
    return not deleted


def census_from_log(elog: Any, tail: int = 16) -> set[str]:
    """The census from an event log (:class:`store.event_log.EventLog`): the share-group streams
    whose group was not deleted (DeleteGroups appends ``ShareGroupDeleted``; a group deleted and
    never used again does not count against ``group.share.max.groups``), by
    :func:`share_group_in_log`."""
    ids = census_from_stream_ids(list(elog.stream_ids(STREAM_PREFIX)))
    return {g for g in ids if share_group_in_log(elog, g, tail)}
