"""Audit timelines: the whole history of one record of a share-partition, and the lifecycle of one
remote log segment, read from the event log.

A record's history replays its group's stream with the share-partition's own ``evolve`` and keeps
every event that touched the offset (its range covers the offset, or the record's state changed):
who acquired it and when, its delivery count, the lock deadline, releases, lock timeouts,
acceptance, rejection or archiving (KIP-932 record states; Kafka ``SharePartition``).
A segment's lifecycle lists its RLMM events (COPY_SEGMENT_STARTED → COPY_SEGMENT_FINISHED →
DELETE_SEGMENT_STARTED → DELETE_SEGMENT_FINISHED; KIP-405 ``RemoteLogSegmentState``).
A SCRAM credential history lists when each user's credential was created, replaced or removed,
per mechanism, with its iteration count (KIP-554) — never its salt, keys or anything password-derived.
The ACLs in force at a point of the log (``AclsCreated``/``AclsDeleted`` of the ``controller``
stream) say who could do what then.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["AclGrant", "RecordStep", "ScramStep", "SegmentStep", "acls_at", "record_history", "scram_credential_history", "segment_lifecycle"]

_ACK_NAMES = {0: "gap", 1: "accepted", 2: "released", 3: "rejected", 4: "renewed"}
_STATE_NAMES = {0: "AVAILABLE", 1: "ACQUIRED", 2: "ACKNOWLEDGED", 4: "ARCHIVED"}
_SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED", 3: "DELETE_SEGMENT_FINISHED"}


@dataclass(frozen=True)
class RecordStep:
    """One event in a record's history: log ``position``, ``recorded_at_ms`` (wall clock, ms),
    the event type, the ``action`` it meant for this offset, the acting ``member_id`` (or
    ``None``), and the record's ``state``, ``delivery_count`` and ``lock_deadline_ms`` after it
    (``state`` is ``None`` once the record left the cache: acknowledged past the start offset)."""

    position: int
    recorded_at_ms: int
    event_type: str
    action: str
    member_id: str | None
    state: str | None
    delivery_count: int | None
    lock_deadline_ms: int | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SegmentStep:
    """One RLMM event of a segment: position, time, event type, the segment ``state`` it sets,
    the ``broker_id``, and (for the add) its offsets and size."""

    position: int
    recorded_at_ms: int
    stream_id: str
    event_type: str
    state: str
    broker_id: int
    topic: str
    partition: int
    start_offset: int | None
    end_offset: int | None
    size_bytes: int | None
    event_timestamp_ms: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _covers(ranges, offset: int) -> bool:
    return any(r[0] <= offset <= r[1] for r in ranges)


def _ack_action(batches, offset: int) -> str | None:
    for first, last, types in batches:
        if first <= offset <= last:
            t = types[offset - first] if len(types) > 1 else types[0]
            return _ACK_NAMES.get(t, f"ack type {t}")
    return None


def _action(ev, offset: int) -> str | None:
    name = type(ev).__name__
    if name == "RecordsAcquired":
        return "acquired" if _covers(ev.ranges, offset) else None
    if name == "RecordsAcknowledged":
        return _ack_action(ev.batches, offset)
    if name == "ShareFetchProcessed":
        # piggybacked acknowledgements first, then the acquisition (one ShareFetch)
        parts = [a for a in (_ack_action(ev.acknowledgements, offset), "acquired" if _covers(ev.ranges, offset) else None) if a]
        return ", then ".join(parts) or None
    if name == "AcquisitionLocksExpired":
        return "lock timed out" if _covers(ev.ranges, offset) else None
    if name == "MemberRecordsReleased":
        return "released (member left)" if _covers(ev.ranges, offset) else None
    if name == "LogStartOffsetMoved":
        return f"log start offset moved to {ev.log_start_offset}" if ev.log_start_offset > offset else None
    if name == "SharePartitionInitialized":
        covered = any(b[0] <= offset <= b[1] for b in ev.state_batches)
        return "initialized from persisted state" if covered else None
    return None


def resolve_topic_id(log, group_id: str, topic: str) -> str:
    """``topic`` as a topic id: returned as is when share events of the group use it, else looked
    up by name in the group's subscription metadata; unchanged when unknown."""
    from events.codec import decode_event
    from events.share_group import stream_id_for

    for rec in log.read_stream(stream_id_for(group_id)):
        if rec.event_type == "share_group.SubscriptionMetadataUpdated":
            ev = decode_event(rec.event_type, rec.schema_version, rec.data, rec.position)
            for t in ev.topics:
                if t.name == topic:
                    return t.topic_id
    return topic


def record_history(log, group_id: str, topic: str, partition: int, offset: int) -> list[RecordStep]:
    """The history of record ``offset`` of share-partition (``group_id``, ``topic``, ``partition``)
    from the open event log ``log``: one :class:`RecordStep` per event that touched it, in log
    order. ``topic`` is a topic id or a subscribed topic name. Returns ``[]`` when nothing
    touched it."""
    from actors.share.partition import SharePartition, evolve
    from events.codec import decode_event
    from events.share import SHARE_PARTITION_EVENTS
    from events.share_group import stream_id_for

    types = {c.event_type for c in SHARE_PARTITION_EVENTS}
    topic_id = resolve_topic_id(log, group_id, topic)
    sp = None
    steps: list[RecordStep] = []
    for rec in log.read_stream(stream_id_for(group_id)):
        if rec.event_type not in types:
            continue
        ev = decode_event(rec.event_type, rec.schema_version, rec.data, rec.position)
        if (ev.topic_id, ev.partition) != (topic_id, partition):
            continue
        if sp is None:
            sp = SharePartition(group_id, topic_id, partition)
        before = sp.record_state(offset)
        evolve(sp, ev)
        after = sp.record_state(offset)
        action = _action(ev, offset)
        if action is None and before == after:
            continue
        if action is None:
            action = "start offset moved past it" if after is None else "state changed"
        state, dc, member, deadline = after if after is not None else (None, None, None, None)
        if after is None and before is not None:
            dc = before[1]
        steps.append(
            RecordStep(
                rec.position,
                rec.recorded_at_ms,
                rec.event_type,
                action,
                getattr(ev, "member_id", None) or None,
                _STATE_NAMES.get(int(state), str(state)) if state is not None else None,
                dc,
                deadline,
            )
        )
    return steps


def segment_lifecycle(log, segment_id: str) -> list[SegmentStep]:
    """The RLMM events of remote segment ``segment_id`` (Kafka base64 Uuid string) in log order,
    read from every ``rlmm:<p>`` stream of the open event log ``log``."""
    import pyarrow.compute as pc

    from events.codec import decode_event
    from projections.source import LogSource

    types = ["rlmm.SegmentMetadataAdded", "rlmm.SegmentMetadataUpdated"]
    steps: list[SegmentStep] = []
    for chunk in LogSource.of(log.url).batches(event_types=types):
        chunk = chunk.filter(pc.match_substring(chunk["data"], segment_id))
        for row in chunk.to_pylist():
            ev = decode_event(row["event_type"], row["schema_version"], row["data"], row["position"])
            if ev.segment_id != segment_id:
                continue
            added = row["event_type"] == "rlmm.SegmentMetadataAdded"
            steps.append(
                SegmentStep(
                    row["position"],
                    row["recorded_at_ms"],
                    row["stream_id"],
                    row["event_type"],
                    _SEGMENT_STATES.get(ev.state, str(ev.state)),
                    ev.broker_id,
                    ev.topic,
                    ev.partition,
                    ev.start_offset if added else None,
                    ev.end_offset if added else None,
                    ev.segment_size_in_bytes if added else None,
                    ev.event_timestamp_ms,
                )
            )
    return steps


# --- SCRAM credentials (KIP-554) -------------------------------------------------------------------


@dataclass(frozen=True)
class ScramStep:
    """One change of a SCRAM credential: log ``position``, ``recorded_at_ms`` (wall clock, ms),
    ``user``, ``mechanism`` ("SCRAM-SHA-256"/"SCRAM-SHA-512"), ``action`` (``created``,
    ``replaced`` or ``removed``) and the ``iterations`` in force after it (``None`` once removed).
    Salt and keys are left out on purpose."""

    position: int
    recorded_at_ms: int
    user: str
    mechanism: str
    action: str
    iterations: int | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- ACLs -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AclGrant:
    """One ACL in force: ``principal`` (``"User:*"`` = everyone), ``resource_type``,
    ``resource_name``, ``pattern_type`` (LITERAL, or PREFIXED: every name starting with it),
    ``operation``, ``permission`` (ALLOW/DENY; DENY wins), ``host`` (``"*"`` = any), and the log
    ``position`` / ``recorded_at_ms`` of the ``AclsCreated`` that created it."""

    principal: str
    resource_type: str
    resource_name: str
    pattern_type: str
    operation: str
    permission: str
    host: str
    position: int
    recorded_at_ms: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def scram_credential_history(log, user: str | None = None) -> list[ScramStep]:
    """Every ``UserScramCredentialSet``/``UserScramCredentialRemoved`` of the controller stream
    of the open event log ``log`` in log order, for ``user`` only when given: who had a SCRAM
    credential for which mechanism, and since when."""
    from events.codec import decode_event
    from projections.source import LogSource

    types = ["controller.UserScramCredentialSet", "controller.UserScramCredentialRemoved"]
    rows = [r for chunk in LogSource.of(log.url).batches(event_types=types) for r in chunk.to_pylist()]
    rows.sort(key=lambda r: r["position"])
    live: set[tuple[str, str]] = set()
    steps: list[ScramStep] = []
    for row in rows:
        ev = decode_event(row["event_type"], row["schema_version"], row["data"], row["position"])
        key = (ev.user, ev.mechanism)
        if row["event_type"] == "controller.UserScramCredentialSet":
            action, iterations = ("replaced" if key in live else "created"), ev.iterations
            live.add(key)
        else:
            action, iterations = "removed", None
            live.discard(key)
        if user is None or ev.user == user:
            steps.append(ScramStep(row["position"], row["recorded_at_ms"], ev.user, ev.mechanism, action, iterations))
    return steps


def acls_at(log, until_position: int | None = None, until_time_ms: int | None = None) -> list[AclGrant]:
    """The ACLs in force after the last ``controller`` event at or before ``until_position``
    (global log position, inclusive) and recorded at or before ``until_time_ms`` (wall clock ms,
    inclusive); ``None`` = no bound (now). Folded from the events with the ACL domain's own
    ``evolve`` (:mod:`actors.controller.acls`), sorted by principal, then resource. Super users
    (``super.users``) are static configuration, not events, and are not listed."""
    from actors.controller.acls import AclSet, evolve
    from events.codec import decode_event
    from events.controller import STREAM_ID

    types = {"controller.AclsCreated", "controller.AclsDeleted"}
    acls = AclSet()
    created: dict[Any, tuple[int, int]] = {}
    for rec in log.read_stream(STREAM_ID):
        if until_position is not None and rec.position > until_position:
            break
        if until_time_ms is not None and rec.recorded_at_ms > until_time_ms:
            break
        if rec.event_type not in types:
            continue
        ev = decode_event(rec.event_type, rec.schema_version, rec.data, rec.position)
        evolve(acls, ev)
        if rec.event_type == "controller.AclsCreated":
            for b in ev.acls:
                created[b] = (rec.position, rec.recorded_at_ms)
    out = [
        AclGrant(b.principal, b.resource_type, b.resource_name, b.pattern_type, b.operation, b.permission, b.host, *created[b])
        for b in acls
    ]
    return sorted(out, key=lambda g: (g.principal, g.resource_type, g.resource_name, g.pattern_type, g.operation, g.permission, g.host))
