"""Classic consumer-group snapshots: the group (generation, protocol, leader, state), its members
and its committed offsets.

Python: :meth:`actors.consumer.classic.ClassicGroup.apply` (the actor's own recovery fold) over
the ``consumer_group.*`` events of each ``consumer-group:<group id>`` stream. SQL: the group and
its members are those of the stream's last ``ClassicGroupMetadataRecorded`` (Kafka's
``GroupMetadata`` record replaces the whole group; state Stable with members, else Empty); each
partition's committed offset is the last one an ``OffsetsCommitted`` stored for it (the later
entry within one event wins), as Kafka's ``OffsetCommit`` records replay last-writer-wins.

Group admin: a stream's *current life* is what follows its last ``ConsumerGroupDeleted``
(DeleteGroups; ``ClassicGroup.apply`` forgets the group): a deleted group that was not used again
has no rows at all, and only later events count. An ``OffsetsDeleted`` (OffsetDelete, and the
tombstones DeleteGroups writes first) removes a partition's offset unless a later commit stored
one again: per partition the last of the commits and tombstones wins.
"""

from __future__ import annotations

import pyarrow as pa

from projections.model import DomainNotAvailable, DomainProjection, SnapshotTable, register_projection

GROUPS = SnapshotTable(
    "consumer_group_groups",
    pa.schema([
        ("stream_id", pa.string()),
        ("generation", pa.int64()),
        ("state", pa.string()),
        ("protocol_type", pa.string()),
        ("protocol", pa.string()),
        ("leader", pa.string()),
    ]),
    ("stream_id",),
)
MEMBERS = SnapshotTable(
    "consumer_group_members",
    pa.schema([
        ("stream_id", pa.string()),
        ("member_id", pa.string()),
        ("group_instance_id", pa.string()),
        ("client_id", pa.string()),
        ("client_host", pa.string()),
        ("session_timeout_ms", pa.int64()),
        ("rebalance_timeout_ms", pa.int64()),
    ]),
    ("stream_id", "member_id"),
)
OFFSETS = SnapshotTable(
    "consumer_group_offsets",
    pa.schema([
        ("stream_id", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int64()),
        ("committed_offset", pa.int64()),
        ("leader_epoch", pa.int64()),
        ("metadata", pa.string()),
        ("commit_timestamp_ms", pa.int64()),
    ]),
    ("stream_id", "topic", "partition"),
)


def to_rows(stream_id: str, g) -> dict:
    """Snapshot rows of one folded :class:`actors.consumer.classic.ClassicGroup` (none for a
    group that does not exist: deleted and not used again)."""
    if not g.exists:
        return {GROUPS.name: [], MEMBERS.name: [], OFFSETS.name: []}
    return {
        GROUPS.name: [{
            "stream_id": stream_id, "generation": g.generation, "state": g.state,
            "protocol_type": g.protocol_type, "protocol": g.protocol, "leader": g.leader,
        }],
        MEMBERS.name: [
            {"stream_id": stream_id, "member_id": m.member_id, "group_instance_id": m.group_instance_id,
             "client_id": m.client_id, "client_host": m.client_host,
             "session_timeout_ms": m.session_timeout_ms, "rebalance_timeout_ms": m.rebalance_timeout_ms}
            for m in g.members.values()
        ],
        OFFSETS.name: [
            {"stream_id": stream_id, "topic": t, "partition": p, "committed_offset": o.offset,
             "leader_epoch": o.leader_epoch, "metadata": o.metadata, "commit_timestamp_ms": o.commit_timestamp_ms}
            for (t, p), o in g.offsets.items()
        ],
    }


_VIEWS = [
    (
        "cg_deleted",
        "SELECT stream_id, max(position) AS pos FROM ev_consumer_group_ConsumerGroupDeleted GROUP BY stream_id",
    ),
    (
        # the streams whose group exists: some metadata or commit after the last deletion
        "cg_alive",
        """
SELECT DISTINCT x.stream_id FROM (
  SELECT stream_id, position FROM ev_consumer_group_ClassicGroupMetadataRecorded
  UNION ALL
  SELECT stream_id, position FROM ev_consumer_group_OffsetsCommitted
) x
LEFT JOIN cg_deleted d ON d.stream_id = x.stream_id
WHERE d.pos IS NULL OR x.position > d.pos
""",
    ),
    (
        "cg_last_metadata",
        """
SELECT m.stream_id, max(m.position) AS pos
FROM ev_consumer_group_ClassicGroupMetadataRecorded m
LEFT JOIN cg_deleted d ON d.stream_id = m.stream_id
WHERE d.pos IS NULL OR m.position > d.pos
GROUP BY m.stream_id
""",
    ),
    (
        "cg_members_now",
        """
SELECT /*+ BROADCAST(l) */ m.stream_id, m.member_id, m.group_instance_id, m.client_id, m.client_host,
       m.session_timeout_ms, m.rebalance_timeout_ms
FROM ev_consumer_group_ClassicGroupMetadataRecorded__members m
JOIN cg_last_metadata l ON l.stream_id = m.stream_id AND l.pos = m.position
""",
    ),
]

_GROUPS_SQL = """
WITH s AS (SELECT stream_id FROM cg_alive),
mem AS (SELECT stream_id, count(*) AS n FROM cg_members_now GROUP BY stream_id)
SELECT s.stream_id,
       COALESCE(e.generation, 0) AS generation,
       CASE WHEN mem.n IS NOT NULL THEN 'Stable' ELSE 'Empty' END AS state,
       e.protocol_type, e.protocol, e.leader
FROM s
LEFT JOIN cg_last_metadata l ON l.stream_id = s.stream_id
LEFT JOIN ev_consumer_group_ClassicGroupMetadataRecorded e ON e.stream_id = l.stream_id AND e.position = l.pos
LEFT JOIN mem ON mem.stream_id = s.stream_id
"""

_MEMBERS_SQL = "SELECT * FROM cg_members_now"

_OFFSETS_SQL = """
WITH c AS (
  SELECT stream_id, topic, "partition", "offset", leader_epoch, metadata, commit_timestamp_ms, position, idx,
         1 AS kept
  FROM ev_consumer_group_OffsetsCommitted__offsets
  UNION ALL
  SELECT stream_id, topic, "partition", CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS STRING),
         CAST(NULL AS BIGINT), position, idx, 0 AS kept
  FROM ev_consumer_group_OffsetsDeleted__partitions
),
ranked AS (
  SELECT c.stream_id, topic, "partition", "offset", leader_epoch, metadata, commit_timestamp_ms, kept,
         row_number() OVER (PARTITION BY c.stream_id, topic, "partition" ORDER BY position DESC, idx DESC) AS rn
  FROM c LEFT JOIN cg_deleted d ON d.stream_id = c.stream_id
  WHERE d.pos IS NULL OR c.position > d.pos
)
SELECT stream_id, topic, "partition", "offset" AS committed_offset, leader_epoch, metadata, commit_timestamp_ms
FROM ranked WHERE rn = 1 AND kept = 1
"""


def build() -> DomainProjection:
    """The consumer-group projection; raises :class:`DomainNotAvailable` if its code is missing."""
    try:
        from actors.consumer.classic import ClassicGroup
        from events import consumer_group as ev
    except ImportError as exc:  # pragma: no cover
        raise DomainNotAvailable(str(exc)) from exc

    def initial(stream_id: str) -> ClassicGroup:
        return ClassicGroup(stream_id.split(":", 1)[1] if ":" in stream_id else stream_id)

    def evolve(g: ClassicGroup, e) -> ClassicGroup:
        g.apply(e)
        return g

    return DomainProjection(
        name="consumer_group",
        event_types=(ev.ClassicGroupMetadataRecorded, ev.OffsetsCommitted, ev.OffsetsDeleted, ev.ConsumerGroupDeleted),
        tables=(GROUPS, MEMBERS, OFFSETS),
        initial=initial,
        evolve=evolve,
        to_rows=to_rows,
        stream_prefix="consumer-group:",
        sql_views=_VIEWS,
        sql={GROUPS.name: _GROUPS_SQL, MEMBERS.name: _MEMBERS_SQL, OFFSETS.name: _OFFSETS_SQL},
        description="classic consumer groups: generation, members, committed offsets",
    )


register_projection("consumer_group", build)
