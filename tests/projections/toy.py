"""A small test-only domain ("ptest") exercising the projection machinery on the shapes the real
domains use: offset ranges in a list field, a nested dataclass, lists of lists, optional fields,
per-range state with delivery counts, and members with epochs.

The fold (``evolve``) and its SQL twin are written independently here, the way each real domain's
are; the differential tests check the engines agree on Hypothesis-generated logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pyarrow as pa

from events.base import DomainEvent, domain_event
from projections.model import DomainProjection, SnapshotTable
from projections.sqlkit import last_value, range_state_sql


@dataclass(frozen=True, slots=True)
class Span:
    first_offset: int
    last_offset: int


@dataclass(frozen=True, slots=True)
class Where:
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class Grant:
    member_id: str
    partitions: tuple[int, ...]


@domain_event("ptest.Acquired")
@dataclass(frozen=True, slots=True)
class Acquired(DomainEvent):
    member_id: str
    where: Where
    spans: tuple[Span, ...]
    deadline_ms: int


@domain_event("ptest.Released")
@dataclass(frozen=True, slots=True)
class Released(DomainEvent):
    spans: tuple[Span, ...]
    reason: str | None


@domain_event("ptest.Accepted")
@dataclass(frozen=True, slots=True)
class Accepted(DomainEvent):
    spans: tuple[Span, ...]


@domain_event("ptest.MemberJoined")
@dataclass(frozen=True, slots=True)
class MemberJoined(DomainEvent):
    member_id: str
    epoch: int


@domain_event("ptest.MemberLeft")
@dataclass(frozen=True, slots=True)
class MemberLeft(DomainEvent):
    member_id: str


@domain_event("ptest.Assigned")
@dataclass(frozen=True, slots=True)
class Assigned(DomainEvent):
    grants: tuple[Grant, ...]


@dataclass(frozen=True)
class ToyState:
    offsets: dict = field(default_factory=dict)  # offset -> (state, delivery_count, member or None)
    members: dict = field(default_factory=dict)  # member -> epoch
    assignment: dict = field(default_factory=dict)  # member -> tuple of partitions


def evolve(s: ToyState, e: DomainEvent) -> ToyState:
    offsets = dict(s.offsets)
    if isinstance(e, Acquired):
        for sp in e.spans:
            for o in range(sp.first_offset, sp.last_offset + 1):
                _, count, _ = offsets.get(o, ("AVAILABLE", 0, None))
                offsets[o] = ("ACQUIRED", count + 1, e.member_id)
        return replace(s, offsets=offsets)
    if isinstance(e, (Released, Accepted)):
        new = "AVAILABLE" if isinstance(e, Released) else "ACKNOWLEDGED"
        for sp in e.spans:
            for o in range(sp.first_offset, sp.last_offset + 1):
                _, count, _ = offsets.get(o, ("AVAILABLE", 0, None))
                offsets[o] = (new, count, None)
        return replace(s, offsets=offsets)
    if isinstance(e, MemberJoined):
        return replace(s, members={**s.members, e.member_id: e.epoch})
    if isinstance(e, MemberLeft):
        members = dict(s.members)
        members.pop(e.member_id, None)
        assignment = dict(s.assignment)
        assignment.pop(e.member_id, None)
        return replace(s, members=members, assignment=assignment)
    if isinstance(e, Assigned):
        return replace(s, assignment={g.member_id: g.partitions for g in e.grants})
    return s


RANGES = SnapshotTable(
    "ptest_ranges",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("first_offset", pa.int64()),
            ("last_offset", pa.int64()),
            ("state", pa.string()),
            ("delivery_count", pa.int64()),
            ("member_id", pa.string()),
        ]
    ),
    ("stream_id", "first_offset"),
)
MEMBERS = SnapshotTable(
    "ptest_members",
    pa.schema([("stream_id", pa.string()), ("member_id", pa.string()), ("epoch", pa.int64())]),
    ("stream_id", "member_id"),
)
ASSIGNMENT = SnapshotTable(
    "ptest_assignment",
    pa.schema([("stream_id", pa.string()), ("member_id", pa.string()), ("partition", pa.int64())]),
    ("stream_id", "member_id", "partition"),
)


def to_rows(stream_id: str, s: ToyState) -> dict:
    ranges = []
    for o in sorted(s.offsets):
        st, count, member = s.offsets[o]
        last = ranges[-1] if ranges else None
        if last and last["last_offset"] + 1 == o and (last["state"], last["delivery_count"], last["member_id"]) == (st, count, member):
            last["last_offset"] = o
        else:
            ranges.append(
                {"stream_id": stream_id, "first_offset": o, "last_offset": o, "state": st, "delivery_count": count, "member_id": member}
            )
    return {
        "ptest_ranges": ranges,
        "ptest_members": [{"stream_id": stream_id, "member_id": m, "epoch": ep} for m, ep in s.members.items()],
        "ptest_assignment": [
            {"stream_id": stream_id, "member_id": m, "partition": p} for m, ps in s.assignment.items() for p in ps
        ],
    }


# The SQL twin. Range events: every event covering an offset sets its state; acquisitions count.
_RANGE_EVENTS = f"""
SELECT stream_id, position, first_offset, last_offset,
       CAST(NULL AS STRING) AS member_id, 'AVAILABLE' AS state, 0 AS delivers FROM ev_ptest_Released__spans
UNION ALL
SELECT stream_id, position, first_offset, last_offset, NULL, 'ACKNOWLEDGED', 0 FROM ev_ptest_Accepted__spans
UNION ALL
SELECT stream_id, position, first_offset, last_offset, member_id, 'ACQUIRED', 1 FROM ev_ptest_Acquired__spans
"""

_MEMBERS_SQL = """
WITH last_event AS (
  SELECT stream_id, member_id, max_by(epoch, position) AS epoch, max(position) AS joined_at
  FROM ev_ptest_MemberJoined GROUP BY stream_id, member_id
), left_at AS (
  SELECT stream_id, member_id, max(position) AS left_at FROM ev_ptest_MemberLeft GROUP BY stream_id, member_id
)
SELECT j.stream_id, j.member_id, j.epoch
FROM last_event j LEFT JOIN left_at l ON j.stream_id = l.stream_id AND j.member_id = l.member_id
WHERE l.left_at IS NULL OR l.left_at < j.joined_at
"""

_ASSIGNMENT_SQL = """
WITH last_assign AS (
  SELECT stream_id, max(position) AS position FROM ev_ptest_Assigned GROUP BY stream_id
)
SELECT g.stream_id, g.member_id, g.value AS "partition"
FROM ev_ptest_Assigned__grants__partitions g
JOIN last_assign a ON g.stream_id = a.stream_id AND g.position = a.position
WHERE NOT EXISTS (
  SELECT 1 FROM ev_ptest_MemberLeft l
  WHERE l.stream_id = g.stream_id AND l.member_id = g.member_id AND l.position > g.position
)
"""


def projection() -> DomainProjection:
    return DomainProjection(
        name="ptest",
        event_types=(Acquired, Released, Accepted, MemberJoined, MemberLeft, Assigned),
        tables=(RANGES, MEMBERS, ASSIGNMENT),
        initial=lambda _sid: ToyState(),
        evolve=evolve,
        to_rows=to_rows,
        sql_views=[("ptest_range_events", _RANGE_EVENTS)],
        sql={
            "ptest_ranges": range_state_sql(
                "ptest_range_events",
                state="max_by(state, position)",
                attributes={"delivery_count": "CAST(sum(delivers) AS BIGINT)",
                            "member_id": last_value("member_id")},
                columns=("state", "delivery_count", "member_id"),
            ),
            "ptest_members": _MEMBERS_SQL,
            "ptest_assignment": _ASSIGNMENT_SQL,
        },
    )
