"""Share-group snapshots: the group (epochs, state), its members, their current assignment.

Python: :func:`actors.share.membership.evolve` over the ``share_group.*`` events of each
``share-group:<group id>`` stream. SQL: the same rules as last-value folds — a member exists from
its first ``MemberSubscriptionUpdated`` after its last ``MemberFenced`` (or the group's last
``ShareGroupDeleted``); a ``MemberAssignmentReconciled`` counts only while the member exists
(``evolve`` ignores it otherwise); ``GroupEpochBumped``/``TargetAssignmentUpdated`` after the last
delete give the epochs (KIP-932; Kafka ``GroupMetadataManager`` replay of the share-group records).
"""

from __future__ import annotations

import pyarrow as pa

from projections.model import DomainNotAvailable, DomainProjection, SnapshotTable, register_projection
from projections.sqlkit import last_value

GROUPS = SnapshotTable(
    "share_group_groups",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("exists", pa.bool_()),
            ("deleted", pa.bool_()),
            ("state", pa.string()),
            ("group_epoch", pa.int64()),
            ("assignment_epoch", pa.int64()),
        ]
    ),
    ("stream_id",),
)
MEMBERS = SnapshotTable(
    "share_group_members",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("member_id", pa.string()),
            ("member_epoch", pa.int64()),
            ("previous_member_epoch", pa.int64()),
            ("client_id", pa.string()),
            ("client_host", pa.string()),
            ("rack_id", pa.string()),
        ]
    ),
    ("stream_id", "member_id"),
)
ASSIGNMENT = SnapshotTable(
    "share_group_assignment",
    pa.schema(
        [("stream_id", pa.string()), ("member_id", pa.string()), ("topic_id", pa.string()), ("partition", pa.int64())]
    ),
    ("stream_id", "member_id", "topic_id", "partition"),
)


def to_rows(stream_id: str, st) -> dict:
    """Snapshot rows of one folded :class:`actors.share.membership.ShareGroupMembership`."""
    return {
        GROUPS.name: [
            {
                "stream_id": stream_id,
                "exists": st.exists,
                "deleted": st.deleted,
                "state": st.state,
                "group_epoch": st.group_epoch,
                "assignment_epoch": st.assignment_epoch,
            }
        ],
        MEMBERS.name: [
            {
                "stream_id": stream_id,
                "member_id": m.member_id,
                "member_epoch": m.member_epoch,
                "previous_member_epoch": m.previous_member_epoch,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "rack_id": m.rack_id,
            }
            for m in st.members.values()
        ],
        ASSIGNMENT.name: [
            {"stream_id": stream_id, "member_id": m.member_id, "topic_id": t, "partition": p}
            for m in st.members.values()
            for t, ps in m.assigned.items()
            for p in ps
        ],
    }


_VIEWS = [
    (
        "sg_deleted",
        "SELECT stream_id, max(position) AS deleted_at FROM ev_share_group_ShareGroupDeleted GROUP BY stream_id",
    ),
    (
        # (stream, member) → since when it exists (NULL: not a member now) and its latest metadata
        "sg_member_life",
        f"""
WITH fence AS (
  SELECT stream_id, member_id, max(position) AS fenced_at FROM ev_share_group_MemberFenced GROUP BY stream_id, member_id
), subs AS (
  SELECT u.stream_id, u.member_id, u.position, u.client_id, u.client_host, u.rack_id,
         GREATEST(COALESCE(f.fenced_at, 0), COALESCE(d.deleted_at, 0)) AS gone_at
  FROM ev_share_group_MemberSubscriptionUpdated u
  LEFT JOIN fence f ON f.stream_id = u.stream_id AND f.member_id = u.member_id
  LEFT JOIN sg_deleted d ON d.stream_id = u.stream_id
)
SELECT stream_id, member_id, min(position) AS alive_since,
       max_by(client_id, position) AS client_id, max_by(client_host, position) AS client_host,
       {last_value("rack_id")} AS rack_id
FROM subs WHERE position > gone_at
GROUP BY stream_id, member_id
""",
    ),
    (
        "sg_member_current",
        """
WITH rec AS (
  -- the member's last reconciliation while it exists; an inner join first, so that an engine
  -- hashes the members (thousands), not the reconciliations (millions), then a join of two
  -- small relations keeps the members without one
  SELECT /*+ BROADCAST(l) */ r.stream_id, r.member_id, max(r.position) AS reconciled_at
  FROM ev_share_group_MemberAssignmentReconciled r
  JOIN sg_member_life l ON l.stream_id = r.stream_id AND l.member_id = r.member_id AND r.position > l.alive_since
  GROUP BY r.stream_id, r.member_id
)
SELECT l.stream_id, l.member_id, l.client_id, l.client_host, l.rack_id, rec.reconciled_at
FROM sg_member_life l
LEFT JOIN rec ON rec.stream_id = l.stream_id AND rec.member_id = l.member_id
""",
    ),
]

_MEMBERS_SQL = """
SELECT c.stream_id, c.member_id,
       COALESCE(r.member_epoch, 0) AS member_epoch,
       COALESCE(r.previous_member_epoch, 0) AS previous_member_epoch,
       c.client_id, c.client_host, c.rack_id
FROM sg_member_current c
LEFT JOIN (
  -- the reconciliations that are some member's last (an inner join: see sg_member_current)
  SELECT /*+ BROADCAST(m) */ e.stream_id, e.member_id, e.position, e.member_epoch, e.previous_member_epoch
  FROM ev_share_group_MemberAssignmentReconciled e
  JOIN sg_member_current m ON m.stream_id = e.stream_id AND m.reconciled_at = e.position AND m.member_id = e.member_id
) r ON r.stream_id = c.stream_id AND r.position = c.reconciled_at AND r.member_id = c.member_id
"""

_ASSIGNMENT_SQL = """
SELECT /*+ BROADCAST(c) */ c.stream_id, c.member_id, p.topic_id, p.value AS "partition"
FROM sg_member_current c
JOIN ev_share_group_MemberAssignmentReconciled__partitions__partitions p
  ON p.stream_id = c.stream_id AND p.position = c.reconciled_at AND p.member_id = c.member_id
GROUP BY c.stream_id, c.member_id, p.topic_id, p.value
"""

_GROUPS_SQL = """
WITH s AS (SELECT stream_id FROM event_streams WHERE domain = 'share_group'),
after_del AS (
  SELECT s.stream_id, d.deleted_at FROM s LEFT JOIN sg_deleted d ON d.stream_id = s.stream_id
),
ep AS (
  SELECT /*+ BROADCAST(a) */ e.stream_id, max_by(e.group_epoch, e.position) AS group_epoch, count(*) AS n
  FROM ev_share_group_GroupEpochBumped e JOIN after_del a ON a.stream_id = e.stream_id
  WHERE a.deleted_at IS NULL OR e.position > a.deleted_at GROUP BY e.stream_id
),
ta AS (
  SELECT /*+ BROADCAST(a) */ e.stream_id, max_by(e.assignment_epoch, e.position) AS assignment_epoch
  FROM ev_share_group_TargetAssignmentUpdated e JOIN after_del a ON a.stream_id = e.stream_id
  WHERE a.deleted_at IS NULL OR e.position > a.deleted_at GROUP BY e.stream_id
),
msu AS (
  SELECT /*+ BROADCAST(a) */ e.stream_id, count(*) AS n
  FROM ev_share_group_MemberSubscriptionUpdated e JOIN after_del a ON a.stream_id = e.stream_id
  WHERE a.deleted_at IS NULL OR e.position > a.deleted_at GROUP BY e.stream_id
),
mem AS (SELECT stream_id, count(*) AS n FROM sg_member_current GROUP BY stream_id)
SELECT a.stream_id,
       (msu.n IS NOT NULL OR ep.n IS NOT NULL) AS "exists",
       (a.deleted_at IS NOT NULL AND msu.n IS NULL) AS deleted,
       CASE WHEN a.deleted_at IS NOT NULL AND msu.n IS NULL THEN 'Dead'
            WHEN mem.n IS NOT NULL THEN 'Stable' ELSE 'Empty' END AS state,
       COALESCE(ep.group_epoch, 0) AS group_epoch,
       COALESCE(ta.assignment_epoch, 0) AS assignment_epoch
FROM after_del a
LEFT JOIN ep ON ep.stream_id = a.stream_id
LEFT JOIN ta ON ta.stream_id = a.stream_id
LEFT JOIN msu ON msu.stream_id = a.stream_id
LEFT JOIN mem ON mem.stream_id = a.stream_id
"""


def build() -> DomainProjection:
    """The share-group projection; raises :class:`DomainNotAvailable` if its code is missing."""
    try:
        from actors.share import membership
        from events import share_group as ev
    except ImportError as exc:  # pragma: no cover - only while the domain is being written
        raise DomainNotAvailable(str(exc)) from exc

    def initial(stream_id: str):
        return membership.ShareGroupMembership(stream_id.split(":", 1)[1] if ":" in stream_id else stream_id)

    def decode_state(stream_id: str, data: bytes):
        """The membership part of a ShareGroupActor snapshot (``ShareGroupState.dumps``)."""
        from actors.share.group_state import ShareGroupState
        from actors.share.config import BrokerShareConfig

        return ShareGroupState.loads(data, initial(stream_id).group_id, BrokerShareConfig()).membership

    return DomainProjection(
        name="share_group",
        event_types=(
            ev.MemberSubscriptionUpdated,
            ev.SubscriptionMetadataUpdated,
            ev.GroupEpochBumped,
            ev.TargetAssignmentUpdated,
            ev.MemberAssignmentReconciled,
            ev.MemberFenced,
            ev.GroupConfigAltered,
            ev.ShareSessionOpened,
            ev.ShareSessionClosed,
            ev.ShareGroupDeleted,
        ),
        tables=(GROUPS, MEMBERS, ASSIGNMENT),
        initial=initial,
        evolve=membership.evolve,
        to_rows=to_rows,
        stream_prefix="share-group:",
        sql_views=_VIEWS,
        sql={GROUPS.name: _GROUPS_SQL, MEMBERS.name: _MEMBERS_SQL, ASSIGNMENT.name: _ASSIGNMENT_SQL},
        decode_state=decode_state,
        description="share groups: members, epochs, assignment (KIP-932)",
    )


register_projection("share_group", build)
