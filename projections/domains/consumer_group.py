"""Consumer-group snapshots: classic groups (generation, protocol, leader, state, members), KIP-848
consumer-protocol groups (group and assignment epochs, state, members with their epochs,
subscriptions, assigned / pending / target partitions, subscription metadata) and committed
offsets (both types).

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

One group id has one type (:func:`actors.consumer.group.evolve`): a stream is a consumer-protocol
group when its last ``ConsumerGroupEpochRecorded`` is not a tombstone; its records 3-8 replay
last-writer-wins per key (group; member; member's target), a tombstone deleting the key. A
classic ``GroupMetadata`` counts only after the stream's last consumer-protocol record (a
conversion starts a new group). The classic tables hold the classic streams, the
``consumer_group_consumer_*`` tables the consumer-protocol ones.
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


CONSUMER_GROUPS = SnapshotTable(
    "consumer_group_consumer_groups",
    pa.schema([
        ("stream_id", pa.string()),
        ("group_epoch", pa.int64()),
        ("assignment_epoch", pa.int64()),
        ("state", pa.string()),
    ]),
    ("stream_id",),
)
CONSUMER_MEMBERS = SnapshotTable(
    "consumer_group_consumer_members",
    pa.schema([
        ("stream_id", pa.string()),
        ("member_id", pa.string()),
        ("instance_id", pa.string()),
        ("rack_id", pa.string()),
        ("client_id", pa.string()),
        ("client_host", pa.string()),
        ("rebalance_timeout_ms", pa.int64()),
        ("server_assignor", pa.string()),
        ("member_epoch", pa.int64()),
        ("previous_member_epoch", pa.int64()),
        ("member_state", pa.int64()),
    ]),
    ("stream_id", "member_id"),
)
CONSUMER_SUBSCRIPTIONS = SnapshotTable(
    "consumer_group_consumer_subscriptions",
    pa.schema([("stream_id", pa.string()), ("member_id", pa.string()), ("topic_name", pa.string())]),
    ("stream_id", "member_id", "topic_name"),
)
CONSUMER_PARTITIONS = SnapshotTable(
    "consumer_group_consumer_partitions",
    pa.schema([
        ("stream_id", pa.string()),
        ("member_id", pa.string()),
        ("kind", pa.string()),  # assigned | pending_revocation | target
        ("topic_id", pa.string()),
        ("partition", pa.int64()),
    ]),
    ("stream_id", "member_id", "kind", "topic_id", "partition"),
)
CONSUMER_TOPICS = SnapshotTable(
    "consumer_group_consumer_topics",
    pa.schema([("stream_id", pa.string()), ("topic_name", pa.string()), ("topic_id", pa.string()), ("num_partitions", pa.int64())]),
    ("stream_id", "topic_name"),
)


def _offset_rows(stream_id: str, g) -> list[dict]:
    return [
        {"stream_id": stream_id, "topic": t, "partition": p, "committed_offset": o.offset,
         "leader_epoch": o.leader_epoch, "metadata": o.metadata, "commit_timestamp_ms": o.commit_timestamp_ms}
        for (t, p), o in g.offsets.items()
    ]


def _modern_rows(stream_id: str, g) -> dict:
    parts = []
    for mid, m in g.members.items():
        for kind, ps in (("assigned", m.assigned), ("pending_revocation", m.pending_revocation)):
            parts += [{"stream_id": stream_id, "member_id": mid, "kind": kind, "topic_id": t, "partition": p}
                      for t, pp in ps.items() for p in pp]
    for mid, ps in g.targets.items():
        parts += [{"stream_id": stream_id, "member_id": mid, "kind": "target", "topic_id": t, "partition": p}
                  for t, pp in ps.items() for p in pp]
    return {
        GROUPS.name: [], MEMBERS.name: [], OFFSETS.name: _offset_rows(stream_id, g),
        CONSUMER_GROUPS.name: [{"stream_id": stream_id, "group_epoch": g.group_epoch,
                                "assignment_epoch": g.assignment_epoch, "state": g.state()}],
        CONSUMER_MEMBERS.name: [
            {"stream_id": stream_id, "member_id": mid, "instance_id": m.instance_id, "rack_id": m.rack_id,
             "client_id": m.client_id, "client_host": m.client_host, "rebalance_timeout_ms": m.rebalance_timeout_ms,
             "server_assignor": m.server_assignor, "member_epoch": m.member_epoch,
             "previous_member_epoch": m.previous_member_epoch, "member_state": m.state}
            for mid, m in g.members.items()
        ],
        CONSUMER_SUBSCRIPTIONS.name: [{"stream_id": stream_id, "member_id": mid, "topic_name": n}
                                      for mid, m in g.members.items() for n in m.subscribed_topic_names],
        CONSUMER_PARTITIONS.name: parts,
        CONSUMER_TOPICS.name: [{"stream_id": stream_id, "topic_name": n, "topic_id": tid, "num_partitions": c}
                               for n, (tid, c) in g.subscription_metadata.items()],
    }


def to_rows(stream_id: str, g) -> dict:
    """Snapshot rows of one folded group: a :class:`actors.consumer.classic.ClassicGroup` or a
    :class:`actors.consumer.modern.ModernGroup`."""
    if getattr(g, "group_type", "classic") == "consumer":
        return _modern_rows(stream_id, g)
    if not g.exists:  # deleted (DeleteGroups) and not used again: no rows at all
        return {t.name: [] for t in (GROUPS, MEMBERS, OFFSETS, CONSUMER_GROUPS, CONSUMER_MEMBERS, CONSUMER_SUBSCRIPTIONS,
                                     CONSUMER_PARTITIONS, CONSUMER_TOPICS)}
    return {
        CONSUMER_GROUPS.name: [], CONSUMER_MEMBERS.name: [], CONSUMER_SUBSCRIPTIONS.name: [],
        CONSUMER_PARTITIONS.name: [], CONSUMER_TOPICS.name: [],
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
        OFFSETS.name: _offset_rows(stream_id, g),
    }


_EV = "ev_consumer_group_"


def _last(view: str, keys: str) -> str:
    """The last row of ``view`` per ``keys`` (with all its columns)."""
    return f"""SELECT * FROM (
  SELECT v.*, row_number() OVER (PARTITION BY {keys} ORDER BY position DESC) AS rn FROM {_EV}{view} v
) x WHERE rn = 1"""


_VIEWS = [
    # -- KIP-848 consumer-protocol records: the current type and the last record per key
    ("cgc_last_epoch", _last("ConsumerGroupEpochRecorded", "stream_id")),
    ("cgc_modern", "SELECT stream_id, epoch AS group_epoch FROM cgc_last_epoch WHERE NOT tombstone"),
    (
        "cgc_last_modern_pos",
        "SELECT stream_id, max(position) AS pos FROM ("
        + " UNION ALL ".join(f"SELECT stream_id, position FROM {_EV}{v}" for v in (
            "ConsumerGroupEpochRecorded", "ConsumerGroupSubscriptionMetadataRecorded", "ConsumerGroupMemberSubscriptionRecorded",
            "ConsumerGroupTargetAssignmentEpochRecorded", "ConsumerGroupTargetAssignmentMemberRecorded",
            "ConsumerGroupCurrentMemberAssignmentRecorded"))
        + ") u GROUP BY stream_id",
    ),
    ("cgc_last_sub", _last("ConsumerGroupMemberSubscriptionRecorded", "stream_id, member_id")),
    ("cgc_last_cur", _last("ConsumerGroupCurrentMemberAssignmentRecorded", "stream_id, member_id")),
    ("cgc_last_target", _last("ConsumerGroupTargetAssignmentMemberRecorded", "stream_id, member_id")),
    ("cgc_last_aepoch", _last("ConsumerGroupTargetAssignmentEpochRecorded", "stream_id")),
    ("cgc_last_md", _last("ConsumerGroupSubscriptionMetadataRecorded", "stream_id")),
    (
        "cgc_members_now",
        """
SELECT s.stream_id, s.member_id, s.instance_id, s.rack_id, s.client_id, s.client_host, s.rebalance_timeout_ms,
       s.server_assignor, s.position AS sub_pos,
       CASE WHEN c.position IS NULL THEN 0 WHEN c.tombstone THEN -1 ELSE c.member_epoch END AS member_epoch,
       CASE WHEN c.position IS NULL THEN 0 WHEN c.tombstone THEN -1 ELSE c.previous_member_epoch END AS previous_member_epoch,
       CASE WHEN c.position IS NULL OR c.tombstone THEN 0 ELSE c.state END AS member_state,
       CASE WHEN c.tombstone THEN NULL ELSE c.position END AS cur_pos
FROM cgc_last_sub s
JOIN cgc_modern g ON g.stream_id = s.stream_id
LEFT JOIN cgc_last_cur c ON c.stream_id = s.stream_id AND c.member_id = s.member_id
WHERE NOT s.tombstone
""",
    ),
    # -- classic: a GroupMetadata record counts only after the last consumer-protocol record
    (
        "cg_deleted",
        "SELECT stream_id, max(position) AS pos FROM ev_consumer_group_ConsumerGroupDeleted GROUP BY stream_id",
    ),
    (
        # the streams whose group exists: some metadata, commit or consumer-protocol record after
        # the last deletion (a consumer group's own tombstones precede its ConsumerGroupDeleted)
        "cg_alive",
        """
SELECT DISTINCT x.stream_id FROM (
  SELECT stream_id, position FROM ev_consumer_group_ClassicGroupMetadataRecorded
  UNION ALL
  SELECT stream_id, position FROM ev_consumer_group_OffsetsCommitted
  UNION ALL
  SELECT stream_id, pos AS position FROM cgc_last_modern_pos
) x
LEFT JOIN cg_deleted d ON d.stream_id = x.stream_id
WHERE d.pos IS NULL OR x.position > d.pos
""",
    ),
    (
        "cg_last_metadata",
        """
SELECT e.stream_id, max(e.position) AS pos
FROM ev_consumer_group_ClassicGroupMetadataRecorded e
LEFT JOIN cgc_last_modern_pos lm ON lm.stream_id = e.stream_id
LEFT JOIN cg_deleted d ON d.stream_id = e.stream_id
WHERE (lm.pos IS NULL OR e.position > lm.pos) AND (d.pos IS NULL OR e.position > d.pos)
GROUP BY e.stream_id
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
LEFT JOIN cgc_modern cm ON cm.stream_id = s.stream_id
WHERE cm.stream_id IS NULL
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


_CONSUMER_GROUPS_SQL = """
WITH ae AS (SELECT stream_id, CASE WHEN tombstone THEN 0 ELSE assignment_epoch END AS assignment_epoch FROM cgc_last_aepoch),
g AS (SELECT m.stream_id, m.group_epoch, COALESCE(ae.assignment_epoch, 0) AS assignment_epoch
      FROM cgc_modern m LEFT JOIN ae ON ae.stream_id = m.stream_id),
mem AS (SELECT n.stream_id, count(*) AS n,
               sum(CASE WHEN n.member_state <> 0 OR n.member_epoch <> g.assignment_epoch THEN 1 ELSE 0 END) AS unsettled
        FROM cgc_members_now n JOIN g ON g.stream_id = n.stream_id GROUP BY n.stream_id)
SELECT g.stream_id, g.group_epoch, g.assignment_epoch,
       CASE WHEN mem.n IS NULL THEN 'Empty'
            WHEN g.group_epoch > g.assignment_epoch THEN 'Assigning'
            WHEN mem.unsettled > 0 THEN 'Reconciling'
            ELSE 'Stable' END AS state
FROM g LEFT JOIN mem ON mem.stream_id = g.stream_id
"""

_CONSUMER_MEMBERS_SQL = """
SELECT stream_id, member_id, instance_id, rack_id, client_id, client_host, rebalance_timeout_ms, server_assignor,
       member_epoch, previous_member_epoch, member_state
FROM cgc_members_now
"""

_CONSUMER_SUBSCRIPTIONS_SQL = f"""
SELECT n.stream_id, n.member_id, t.value AS topic_name
FROM {_EV}ConsumerGroupMemberSubscriptionRecorded__subscribed_topic_names t
JOIN cgc_members_now n ON n.stream_id = t.stream_id AND n.member_id = t.member_id AND n.sub_pos = t.position
"""

_CONSUMER_PARTITIONS_SQL = f"""
SELECT n.stream_id, n.member_id, 'assigned' AS kind, a.topic_id, a."partition"
FROM {_EV}ConsumerGroupCurrentMemberAssignmentRecorded__assigned a
JOIN cgc_members_now n ON n.stream_id = a.stream_id AND n.member_id = a.member_id AND n.cur_pos = a.position
UNION ALL
SELECT n.stream_id, n.member_id, 'pending_revocation' AS kind, a.topic_id, a."partition"
FROM {_EV}ConsumerGroupCurrentMemberAssignmentRecorded__pending_revocation a
JOIN cgc_members_now n ON n.stream_id = a.stream_id AND n.member_id = a.member_id AND n.cur_pos = a.position
UNION ALL
SELECT t.stream_id, t.member_id, 'target' AS kind, p.topic_id, p."partition"
FROM cgc_last_target t
JOIN cgc_modern g ON g.stream_id = t.stream_id
JOIN {_EV}ConsumerGroupTargetAssignmentMemberRecorded__partitions p
  ON p.stream_id = t.stream_id AND p.member_id = t.member_id AND p.position = t.position
WHERE NOT t.tombstone
"""

_CONSUMER_TOPICS_SQL = f"""
SELECT m.stream_id, t.topic_name, t.topic_id, t.num_partitions
FROM cgc_last_md m
JOIN cgc_modern g ON g.stream_id = m.stream_id
JOIN {_EV}ConsumerGroupSubscriptionMetadataRecorded__topics t ON t.stream_id = m.stream_id AND t.position = m.position
WHERE NOT m.tombstone
"""


def build() -> DomainProjection:
    """The consumer-group projection; raises :class:`DomainNotAvailable` if its code is missing."""
    try:
        from actors.consumer.classic import ClassicGroup
        from actors.consumer.group import evolve as evolve_group
        from events import consumer_group as ev
    except ImportError as exc:  # pragma: no cover
        raise DomainNotAvailable(str(exc)) from exc

    def initial(stream_id: str) -> ClassicGroup:
        return ClassicGroup(stream_id.split(":", 1)[1] if ":" in stream_id else stream_id)

    def evolve(g, e):
        return evolve_group(g, e)

    return DomainProjection(
        name="consumer_group",
        event_types=(ev.ClassicGroupMetadataRecorded, ev.OffsetsCommitted, ev.OffsetsDeleted, ev.ConsumerGroupDeleted)
        + ev.CONSUMER_GROUP_RECORDS,
        tables=(GROUPS, MEMBERS, OFFSETS, CONSUMER_GROUPS, CONSUMER_MEMBERS, CONSUMER_SUBSCRIPTIONS, CONSUMER_PARTITIONS,
                CONSUMER_TOPICS),
        initial=initial,
        evolve=evolve,
        to_rows=to_rows,
        stream_prefix="consumer-group:",
        sql_views=_VIEWS,
        sql={GROUPS.name: _GROUPS_SQL, MEMBERS.name: _MEMBERS_SQL, OFFSETS.name: _OFFSETS_SQL,
             CONSUMER_GROUPS.name: _CONSUMER_GROUPS_SQL, CONSUMER_MEMBERS.name: _CONSUMER_MEMBERS_SQL,
             CONSUMER_SUBSCRIPTIONS.name: _CONSUMER_SUBSCRIPTIONS_SQL, CONSUMER_PARTITIONS.name: _CONSUMER_PARTITIONS_SQL,
             CONSUMER_TOPICS.name: _CONSUMER_TOPICS_SQL},
        description="consumer groups (classic and KIP-848): epochs, members, assignments, committed offsets",
    )


register_projection("consumer_group", build)
