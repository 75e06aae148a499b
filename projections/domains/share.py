"""Share-partition snapshots: per share-partition start/end offsets and state epoch, and the
in-flight records as maximal ranges of equal (state, delivery count, member, lock deadline).

Python: the ShareGroupActor's own fold, :meth:`actors.share.group_state.ShareGroupState.apply` (Kafka
``SharePartition``'s transition rules per (topic id, partition), ``ShareStateDeleted`` and
``ShareGroupDeleted`` dropping them) over every event of each ``share-group:<group id>`` stream.
Its state is the actor's whole state, so recovery stores it in the actor's snapshot format
(``ShareGroupState.dumps``) and ``--verify`` reads the actor's snapshots with ``loads``.

SQL (DuckDB and Spark, the same text): a last-writer-wins range fold over the events' *outcome*
fields (schema version 2, :mod:`events.share`), which the deciders fill in from the transitions
they decide — the SQL never re-runs Kafka's per-offset state machine:

* a share-partition's *current life* is its events after the last ``ShareStateDeleted`` of it
  and the stream's last ``ShareGroupDeleted`` (``ShareGroupState.apply`` drops the partition on
  both; a later event creates it afresh with the broker's delivery-count limit), and from its last
  ``SharePartitionInitialized`` on (which replaces the whole state);
* its start and end offsets are the last event's ``start_offset_after`` / ``end_offset_after``;
  the state epoch and delivery-count limit come from that initialisation (0 and the broker's
  default without one);
* its records: the initialisation's state batches and every later event's ``outcome`` ranges,
  cut into elementary intervals, each taking the state of the last event covering it
  (:func:`projections.sqlkit.range_state_sql`); the offsets below the greatest ``evicted_below``
  of the life left the cache (Kafka drops the terminal prefix when the start offset moves) and
  are left out; equal neighbours are merged as :func:`merge_ranges` merges the Python rows;
* ``in_flight_records`` counts the ACQUIRED offsets of those ranges.

Events recorded at schema version 1 carry requests only (upcast, their outcome fields are empty):
when one lies in a share-partition's current life the SQL engines refuse the domain with that
reason (``sql_refusal``) instead of producing wrong rows; the Python engine folds them as ever.
"""

from __future__ import annotations

import pyarrow as pa

from projections.model import DomainNotAvailable, DomainProjection, SnapshotTable, event_views, register_projection
from projections.sqlkit import last_value, merge_ranges, range_state_sql

PARTITIONS = SnapshotTable(
    "share_partitions",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("topic_id", pa.string()),
            ("partition", pa.int64()),
            ("start_offset", pa.int64()),
            ("end_offset", pa.int64()),
            ("state_epoch", pa.int64()),
            ("delivery_count_limit", pa.int64()),
            ("in_flight_records", pa.int64()),
        ]
    ),
    ("stream_id", "topic_id", "partition"),
)
RANGES = SnapshotTable(
    "share_ranges",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("topic_id", pa.string()),
            ("partition", pa.int64()),
            ("first_offset", pa.int64()),
            ("last_offset", pa.int64()),
            ("state", pa.string()),
            ("delivery_count", pa.int64()),
            ("member_id", pa.string()),
            ("lock_deadline_ms", pa.int64()),
        ]
    ),
    ("stream_id", "topic_id", "partition", "first_offset"),
)

_STATE_NAMES = {0: "AVAILABLE", 1: "ACQUIRED", 2: "ACKNOWLEDGED", 4: "ARCHIVED"}


def partition_ranges(sp) -> list[tuple[int, int, dict]]:
    """``(first, last, attributes)`` of every cached offset range of a ``SharePartition``
    (exploded batches give one entry per offset; :func:`merge_ranges` merges equal neighbours)."""
    out = []
    for b in sp.cached_batches():
        items = [(b.first_offset, b.last_offset, b)] if b.offset_state is None else [(o, o, s) for o, s in b.offset_state.items()]
        for first, last, s in items:
            out.append(
                (
                    first,
                    last,
                    {
                        "state": _STATE_NAMES.get(s.state, str(s.state)),
                        "delivery_count": s.delivery_count,
                        "member_id": s.member_id or None,
                        "lock_deadline_ms": s.deadline_ms,
                    },
                )
            )
    return out


def to_rows(stream_id: str, state) -> dict:
    """Snapshot rows of the share-partitions of one group stream (a ``ShareGroupState``)."""
    prow, rrows = [], []
    for (topic_id, partition), sp in sorted(state.partitions.items()):
        base = {"stream_id": stream_id, "topic_id": topic_id, "partition": partition}
        prow.append(
            {
                **base,
                "start_offset": sp.start_offset,
                "end_offset": sp.end_offset,
                "state_epoch": sp.state_epoch,
                "delivery_count_limit": sp.delivery_count_limit,
                "in_flight_records": sp.in_flight_count(),
            }
        )
        rrows.extend(merge_ranges(partition_ranges(sp), base))
    return {PARTITIONS.name: prow, RANGES.name: rrows}


_KEYS = ("stream_id", "topic_id", '"partition"')
_ON = "{a}.stream_id = {b}.stream_id AND {a}.topic_id = {b}.topic_id AND {a}.\"partition\" = {b}.\"partition\""


def _outcome_columns(cls) -> dict[str, str]:
    """``StateRange`` field → its column in ``cls``'s ``…__outcome`` view (a name the event
    itself uses, such as ``member_id``, is prefixed there: ``outcome__member_id``)."""
    for v in event_views(cls):
        if v.list_path == (("outcome",),):
            return {c.path[-1]: c.name for c in v.columns if c.level == 1}
    raise TypeError(f"{cls.__name__} has no outcome list")


def sql_fold(ev, sg, default_delivery_count_limit: int) -> tuple[list[tuple[str, str]], dict[str, str], str]:
    """``(sql_views, sql, sql_refusal)`` of the share-partition SQL fold, for the event modules
    ``ev`` (:mod:`events.share`) and ``sg`` (:mod:`events.share_group`); partitions that were
    never initialised get ``default_delivery_count_limit`` (the broker's, as the actor does)."""
    from projections.model import view_name

    with_outcome = [c for c in ev.SHARE_PARTITION_EVENTS if c is not ev.SharePartitionInitialized]
    init = view_name(ev.SharePartitionInitialized.event_type)
    events = "\nUNION ALL\n".join(
        [
            f"SELECT stream_id, topic_id, \"partition\", position, start_offset_after, end_offset_after, evicted_below, "
            f"0 AS is_init, CAST(NULL AS BIGINT) AS state_epoch, CAST(NULL AS BIGINT) AS delivery_count_limit "
            f"FROM {view_name(c.event_type)}"
            for c in with_outcome
        ]
        + [
            f"SELECT stream_id, topic_id, \"partition\", position, start_offset_after, end_offset_after, evicted_below, "
            f"1, state_epoch, delivery_count_limit FROM {init}"
        ]
    )
    life = f"""
WITH dropped AS (
  SELECT stream_id, topic_id, "partition", max(position) AS at
  FROM {view_name(ev.ShareStateDeleted.event_type)} GROUP BY stream_id, topic_id, "partition"
), group_dropped AS (
  SELECT stream_id, max(position) AS at FROM {view_name(sg.ShareGroupDeleted.event_type)} GROUP BY stream_id
), alive AS (
  SELECT e.stream_id, e.topic_id, e."partition", e.position, e.start_offset_after, e.end_offset_after,
         e.evicted_below, e.is_init, e.state_epoch, e.delivery_count_limit
  FROM share_sp_events e
  LEFT JOIN dropped d ON {_ON.format(a="d", b="e")}
  LEFT JOIN group_dropped g ON g.stream_id = e.stream_id
  WHERE e.position > GREATEST(COALESCE(d.at, 0), COALESCE(g.at, 0))
), since AS (
  SELECT stream_id, topic_id, "partition", COALESCE(max(CASE WHEN is_init = 1 THEN position END), 0) AS init_at
  FROM alive GROUP BY stream_id, topic_id, "partition"
)
SELECT a.* FROM alive a JOIN since s ON {_ON.format(a="s", b="a")} WHERE a.position >= s.init_at
"""
    partitions = f"""
SELECT stream_id, topic_id, "partition",
       max_by(start_offset_after, position) AS start_offset,
       max_by(end_offset_after, position) AS end_offset,
       COALESCE(max(state_epoch), 0) AS state_epoch,
       COALESCE(max(delivery_count_limit), {int(default_delivery_count_limit)}) AS delivery_count_limit,
       max(evicted_below) AS evicted_below,
       CAST(sum(CASE WHEN start_offset_after IS NULL THEN 1 ELSE 0 END) AS BIGINT) AS without_outcome,
       min(CASE WHEN start_offset_after IS NULL THEN position END) AS first_without_outcome
FROM share_sp_life GROUP BY stream_id, topic_id, "partition"
"""
    parts = []
    for c in with_outcome:
        cols = _outcome_columns(c)
        parts.append(
            f"SELECT stream_id, topic_id, \"partition\", position, {cols['first_offset']} AS first_offset, "
            f"{cols['last_offset']} AS last_offset, {cols['state']} AS state, {cols['delivery_count']} AS delivery_count, "
            f"{cols['member_id']} AS member_id, {cols['lock_deadline_ms']} AS lock_deadline_ms "
            f"FROM {view_name(c.event_type, 'outcome')}"
        )
    # the initialisation's state batches (first, last, state, delivery count) as rows
    parts.append(
        f"""SELECT stream_id, topic_id, "partition", position,
       max(CASE WHEN idx2 = 0 THEN value END), max(CASE WHEN idx2 = 1 THEN value END),
       max(CASE WHEN idx2 = 2 THEN value END), max(CASE WHEN idx2 = 3 THEN value END),
       CAST(NULL AS STRING), CAST(NULL AS BIGINT)
FROM {view_name(ev.SharePartitionInitialized.event_type, 'state_batches__item')}
GROUP BY stream_id, topic_id, "partition", position, idx"""
    )
    names = " ".join(f"WHEN {k} THEN '{v}'" for k, v in sorted(_STATE_NAMES.items()))
    # ranges wholly below the eviction offset left the cache: dropped before the interval join
    # (most of a long log's records), the rest is cut at it (``extra_points``) and filtered
    range_in = f"""
WITH r AS (
{chr(10).join(('UNION ALL' + chr(10) if i else '') + p for i, p in enumerate(parts))}
)
SELECT r.stream_id, r.topic_id, r."partition", r.position, r.first_offset, r.last_offset,
       CASE r.state {names} ELSE CAST(r.state AS STRING) END AS state,
       r.delivery_count, r.member_id, r.lock_deadline_ms, p.evicted_below AS cut
FROM r
JOIN share_sp_life l ON l.stream_id = r.stream_id AND l.position = r.position
JOIN share_sp_partitions p ON {_ON.format(a="p", b="r")}
WHERE p.evicted_below IS NULL OR r.last_offset >= p.evicted_below
"""
    ranges = range_state_sql(
        "share_sp_range_in",
        state="max_by(state, position)",
        attributes={
            "delivery_count": "max_by(delivery_count, position)",
            "member_id": last_value("member_id"),
            "lock_deadline_ms": last_value("lock_deadline_ms", sql_type="BIGINT"),
            "cut": "max(cut)",
        },
        columns=("state", "delivery_count", "member_id", "lock_deadline_ms"),
        keys=_KEYS,
        where="cut IS NULL OR lo >= cut",
        extra_points='SELECT stream_id, topic_id, "partition", evicted_below AS p FROM share_sp_partitions WHERE evicted_below IS NOT NULL',
    )
    partitions_table = f"""
SELECT p.stream_id, p.topic_id, p."partition", p.start_offset, p.end_offset, p.state_epoch, p.delivery_count_limit,
       CAST(COALESCE(sum(CASE WHEN r.state = 'ACQUIRED' THEN r.last_offset - r.first_offset + 1 ELSE 0 END), 0) AS BIGINT)
         AS in_flight_records
FROM share_sp_partitions p LEFT JOIN share_sp_ranges r ON {_ON.format(a="r", b="p")}
GROUP BY p.stream_id, p.topic_id, p."partition", p.start_offset, p.end_offset, p.state_epoch, p.delivery_count_limit
"""
    refusal = """
SELECT concat('share-partition events recorded before schema version 2 carry no outcome, so the SQL fold ',
              'cannot place their records: ', CAST(n AS STRING), ' in the current life of ', CAST(parts AS STRING),
              ' share-partition(s), the first at log position ', CAST(first_position AS STRING),
              ' (the Python engine folds them)') AS reason
FROM (
  SELECT sum(without_outcome) AS n, count(*) AS parts, min(first_without_outcome) AS first_position
  FROM share_sp_partitions WHERE without_outcome > 0
) t
WHERE n > 0
"""
    views = [
        ("share_sp_events", events),
        ("share_sp_life", life),
        ("share_sp_partitions", partitions),
        ("share_sp_range_in", range_in),
        ("share_sp_ranges", ranges),
    ]
    sql = {PARTITIONS.name: partitions_table, RANGES.name: "SELECT * FROM share_sp_ranges"}
    return views, sql, refusal


def build() -> DomainProjection:
    """The share-partition projection; raises :class:`DomainNotAvailable` if its code is missing."""
    try:
        from actors.share.group_state import ShareGroupState
        from actors.share.config import BrokerShareConfig
        from events import share as ev
        from events import share_group as sg
    except ImportError as exc:  # pragma: no cover - only while the domain is being written
        raise DomainNotAvailable(str(exc)) from exc

    broker = BrokerShareConfig()

    def group_of(stream_id: str) -> str:
        return stream_id.split(":", 1)[1] if ":" in stream_id else stream_id

    def evolve(state, event):
        state.apply(event)
        return state

    views, sql, refusal = sql_fold(ev, sg, broker.delivery_count_limit)
    membership_events = tuple(
        c for c in vars(sg).values() if isinstance(c, type) and getattr(c, "event_type", "").startswith("share_group.")
    )
    return DomainProjection(
        name="share",
        event_types=tuple(ev.SHARE_PARTITION_EVENTS) + (ev.ShareStateDeleted,) + membership_events,
        tables=(PARTITIONS, RANGES),
        initial=lambda sid: ShareGroupState(group_of(sid), broker),
        evolve=evolve,
        to_rows=to_rows,
        stream_prefix="share-group:",
        sql_views=views,
        sql=sql,
        sql_refusal=refusal,
        decode_state=lambda sid, data: ShareGroupState.loads(data, group_of(sid), broker),
        encode_state=lambda state: state.dumps(),
        description="share partitions: start/end offsets, per-range record states and delivery counts",
    )


register_projection("share", build)
