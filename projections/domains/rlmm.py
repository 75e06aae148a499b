"""RLMM snapshots: per metadata-partition stream (``rlmm:<p>``), the remote segments of each user
partition with their state, the leader-epoch index, and the partition-delete state (KIP-405;
Kafka ``RemotePartitionMetadataStore`` / ``RemoteLogMetadataCache``).

Python: :meth:`actors.rlmm.store.MetadataPartitionState.evolve` (the RLMM actor's own fold; it
checks stream-version continuity, so it gets the envelope). States are Kafka's names.

SQL fold (``rlmm_segments``, ``rlmm_segment_epochs``, ``rlmm_partitions``): Kafka's transition
table (``RemoteLogSegmentState.isValidTransition``: STARTED → FINISHED | DELETE_STARTED,
FINISHED → DELETE_STARTED, DELETE_STARTED → DELETE_FINISHED, self transitions; anything else is
dropped) as first-occurrence positions per segment: DELETE_STARTED = the first DELETE_STARTED
update after the add; FINISHED = the first FINISHED update after the add and before that;
DELETE_FINISHED = the first after DELETE_STARTED (the segment leaves the cache). The metadata is
the last add applied (adds re-apply only while STARTED) with the event time and broker of the last
applied event; a partition's first DELETE_PARTITION_FINISHED drops its cache and every later
event of that partition. Two assumptions, both true of what Shoal writes, make this set-based:
adds carry COPY_SEGMENT_STARTED (Kafka's writers check it) and a segment id is never re-added
after DELETE_SEGMENT_FINISHED (ids are fresh UUIDs per copy). ``rlmm_epochs`` (the leader-epoch
index: which start offset maps to which segment after each copy and delete) is Python-only.
"""

from __future__ import annotations

import pyarrow as pa

from projections.model import DomainNotAvailable, DomainProjection, SnapshotTable, register_projection

SEGMENTS = SnapshotTable(
    "rlmm_segments",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("topic_id", pa.string()),
            ("topic", pa.string()),
            ("partition", pa.int64()),
            ("segment_id", pa.string()),
            ("state", pa.string()),
            ("start_offset", pa.int64()),
            ("end_offset", pa.int64()),
            ("max_timestamp_ms", pa.int64()),
            ("event_timestamp_ms", pa.int64()),
            ("broker_id", pa.int64()),
            ("segment_size_in_bytes", pa.int64()),
        ]
    ),
    ("stream_id", "topic_id", "partition", "segment_id"),
)
SEGMENT_EPOCHS = SnapshotTable(
    "rlmm_segment_epochs",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("topic_id", pa.string()),
            ("partition", pa.int64()),
            ("segment_id", pa.string()),
            ("leader_epoch", pa.int64()),
            ("start_offset", pa.int64()),
        ]
    ),
    ("stream_id", "topic_id", "partition", "segment_id", "leader_epoch"),
)
EPOCHS = SnapshotTable(
    "rlmm_epochs",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("topic_id", pa.string()),
            ("partition", pa.int64()),
            ("leader_epoch", pa.int64()),
            ("highest_log_offset", pa.int64()),
            ("referenced_segments", pa.int64()),
            ("unreferenced_segments", pa.int64()),
        ]
    ),
    ("stream_id", "topic_id", "partition", "leader_epoch"),
)
PARTITIONS = SnapshotTable(
    "rlmm_partitions",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("topic_id", pa.string()),
            ("topic", pa.string()),
            ("partition", pa.int64()),
            ("segments", pa.int64()),
            ("delete_state", pa.string()),  # last RemotePartitionDeleteMetadata state, or NULL
            ("deleted", pa.bool_()),
        ]
    ),
    ("stream_id", "topic_id", "partition"),
)


def to_rows(stream_id: str, st) -> dict:
    """Snapshot rows of one folded ``MetadataPartitionState``."""
    from events.rlmm_types import uuid_to_kafka_str

    segs, seg_epochs, epochs, parts = [], [], [], {}
    for tp, cache in st.caches.items():
        tid = uuid_to_kafka_str(tp.topic_id)
        base = {"stream_id": stream_id, "topic_id": tid, "partition": tp.partition}
        parts[tp] = {**base, "topic": tp.topic, "segments": len(cache.id_to_segment_metadata), "delete_state": None, "deleted": False}
        for sid, md in cache.id_to_segment_metadata.items():
            segs.append(
                {
                    **base,
                    "topic": tp.topic,
                    "segment_id": uuid_to_kafka_str(sid.id),
                    "state": md.state.name,
                    "start_offset": md.start_offset,
                    "end_offset": md.end_offset,
                    "max_timestamp_ms": md.max_timestamp_ms,
                    "event_timestamp_ms": md.event_timestamp_ms,
                    "broker_id": md.broker_id,
                    "segment_size_in_bytes": md.segment_size_in_bytes,
                }
            )
            seg_epochs.extend(
                {**base, "segment_id": uuid_to_kafka_str(sid.id), "leader_epoch": e, "start_offset": o}
                for e, o in md.segment_leader_epochs
            )
        for epoch, es in cache.leader_epoch_entries.items():
            epochs.append(
                {
                    **base,
                    "leader_epoch": epoch,
                    "highest_log_offset": es.highest_log_offset,
                    "referenced_segments": len(es.offset_to_id),
                    "unreferenced_segments": len(es.unreferenced),
                }
            )
    for tp, dm in st.delete_metadata.items():
        row = parts.setdefault(
            tp,
            {"stream_id": stream_id, "topic_id": uuid_to_kafka_str(tp.topic_id), "partition": tp.partition, "topic": tp.topic,
             "segments": 0, "delete_state": None, "deleted": False},
        )
        row["delete_state"] = dm.state.name
    for tp in st.deleted:
        parts[tp] = {"stream_id": stream_id, "topic_id": uuid_to_kafka_str(tp.topic_id), "partition": tp.partition,
                     "topic": tp.topic, "segments": 0, "delete_state": "DELETE_PARTITION_FINISHED", "deleted": True}
    return {SEGMENTS.name: segs, SEGMENT_EPOCHS.name: seg_epochs, EPOCHS.name: epochs, PARTITIONS.name: list(parts.values())}


_K = 'stream_id, topic_id, topic, "partition"'


def _on(a: str, b: str, seg: bool = False) -> str:
    cols = ["stream_id", "topic_id", "topic", '"partition"'] + (["segment_id"] if seg else [])
    return " AND ".join(f"{a}.{c} = {b}.{c}" for c in cols)


_VIEWS = [
    (
        "rlmm_pf",  # the first DELETE_PARTITION_FINISHED of each partition
        f"SELECT {_K}, min(position) AS finished_at FROM ev_rlmm_RemotePartitionDeleteMetadataPut "
        f"WHERE state = 2 GROUP BY {_K}",
    ),
    (
        "rlmm_adds",
        f"SELECT a.* FROM ev_rlmm_SegmentMetadataAdded a LEFT JOIN rlmm_pf f ON {_on('a', 'f')} "
        "WHERE f.finished_at IS NULL",  # a finished partition delete drops the cache
    ),
    (
        "rlmm_upds",
        f"SELECT u.* FROM ev_rlmm_SegmentMetadataUpdated u LEFT JOIN rlmm_pf f ON {_on('u', 'f')} "
        "WHERE f.finished_at IS NULL",  # a finished partition delete drops the cache
    ),
    (
        "rlmm_puts",
        f"SELECT d.* FROM ev_rlmm_RemotePartitionDeleteMetadataPut d LEFT JOIN rlmm_pf f ON {_on('d', 'f')} "
        "WHERE f.finished_at IS NULL OR d.position < f.finished_at",
    ),
    (
        # per segment: when added, and the first valid DELETE_STARTED / FINISHED / DELETE_FINISHED
        "rlmm_life",
        f"""
WITH seg AS (
  SELECT {_K}, segment_id, min(position) AS added_at FROM rlmm_adds GROUP BY {_K}, segment_id
), ds AS (
  SELECT s.stream_id, s.topic_id, s.topic, s."partition", s.segment_id, min(u.position) AS ds_at
  FROM seg s JOIN rlmm_upds u ON {_on('s', 'u', True)} AND u.state = 2 AND u.position > s.added_at
  GROUP BY s.stream_id, s.topic_id, s.topic, s."partition", s.segment_id
), s2 AS (
  SELECT s.*, ds.ds_at FROM seg s LEFT JOIN ds ON {_on('s', 'ds', True)}
), cf AS (
  SELECT s.stream_id, s.topic_id, s.topic, s."partition", s.segment_id, min(u.position) AS cf_at
  FROM s2 s JOIN rlmm_upds u ON {_on('s', 'u', True)} AND u.state = 1 AND u.position > s.added_at
   AND (s.ds_at IS NULL OR u.position < s.ds_at)
  GROUP BY s.stream_id, s.topic_id, s.topic, s."partition", s.segment_id
), df AS (
  SELECT s.stream_id, s.topic_id, s.topic, s."partition", s.segment_id, min(u.position) AS df_at
  FROM s2 s JOIN rlmm_upds u ON {_on('s', 'u', True)} AND u.state = 3 AND u.position > s.ds_at
  GROUP BY s.stream_id, s.topic_id, s.topic, s."partition", s.segment_id
)
SELECT s.*, cf.cf_at, df.df_at
FROM s2 s LEFT JOIN cf ON {_on('s', 'cf', True)} LEFT JOIN df ON {_on('s', 'df', True)}
""",
    ),
    (
        # the live segments: the add applied last, and the last applied event's time and broker
        "rlmm_live",
        f"""
WITH add_at AS (
  SELECT l.stream_id, l.topic_id, l.topic, l."partition", l.segment_id, max(a.position) AS add_pos
  FROM rlmm_life l JOIN rlmm_adds a ON {_on('l', 'a', True)}
   AND a.position < COALESCE(l.cf_at, l.ds_at, 9223372036854775807)
  WHERE l.df_at IS NULL
  GROUP BY l.stream_id, l.topic_id, l.topic, l."partition", l.segment_id
), applied AS (
  SELECT a.stream_id, a.topic_id, a.topic, a."partition", a.segment_id, a.position, a.event_timestamp_ms, a.broker_id
  FROM rlmm_adds a JOIN add_at x ON {_on('a', 'x', True)} AND a.position = x.add_pos
  UNION ALL
  SELECT u.stream_id, u.topic_id, u.topic, u."partition", u.segment_id, u.position, u.event_timestamp_ms, u.broker_id
  FROM rlmm_upds u JOIN rlmm_life l ON {_on('u', 'l', True)}
  WHERE l.df_at IS NULL AND (
        (u.state = 1 AND l.cf_at IS NOT NULL AND u.position >= l.cf_at AND (l.ds_at IS NULL OR u.position < l.ds_at))
     OR (u.state = 2 AND l.ds_at IS NOT NULL AND u.position >= l.ds_at))
), last_applied AS (
  SELECT stream_id, topic_id, topic, "partition", segment_id,
         max_by(event_timestamp_ms, position) AS event_timestamp_ms, max_by(broker_id, position) AS broker_id
  FROM applied GROUP BY stream_id, topic_id, topic, "partition", segment_id
)
SELECT a.stream_id, a.topic_id, a.topic, a."partition", a.segment_id, a.position AS add_pos,
       CASE WHEN l.ds_at IS NOT NULL THEN 'DELETE_SEGMENT_STARTED'
            WHEN l.cf_at IS NOT NULL THEN 'COPY_SEGMENT_FINISHED' ELSE 'COPY_SEGMENT_STARTED' END AS state,
       a.start_offset, a.end_offset, a.max_timestamp_ms, la.event_timestamp_ms, la.broker_id, a.segment_size_in_bytes
FROM add_at x
JOIN rlmm_adds a ON {_on('a', 'x', True)} AND a.position = x.add_pos
JOIN rlmm_life l ON {_on('l', 'x', True)}
JOIN last_applied la ON {_on('la', 'x', True)}
""",
    ),
]

_SEGMENTS_SQL = """
SELECT stream_id, topic_id, topic, "partition", segment_id, state, start_offset, end_offset,
       max_timestamp_ms, event_timestamp_ms, broker_id, segment_size_in_bytes
FROM rlmm_live
"""

_SEGMENT_EPOCHS_SQL = f"""
SELECT e.stream_id, e.topic_id, e."partition", e.segment_id,
       max(CASE WHEN e.idx2 = 0 THEN e.value END) AS leader_epoch,
       max(CASE WHEN e.idx2 = 1 THEN e.value END) AS start_offset
FROM ev_rlmm_SegmentMetadataAdded__segment_leader_epochs__item e
JOIN rlmm_live l ON {_on('e', 'l', True)} AND e.position = l.add_pos
GROUP BY e.stream_id, e.topic_id, e."partition", e.segment_id, e.position, e.idx
"""

_PARTITIONS_SQL = f"""
WITH touched AS (
  SELECT {_K} FROM rlmm_adds UNION SELECT {_K} FROM rlmm_upds UNION SELECT {_K} FROM rlmm_puts
  UNION SELECT {_K} FROM rlmm_pf
), segs AS (
  SELECT {_K}, count(*) AS n FROM rlmm_live GROUP BY {_K}
), puts AS (
  SELECT {_K}, max_by(state, position) AS state FROM rlmm_puts GROUP BY {_K}
)
SELECT t.stream_id, t.topic_id, t.topic, t."partition",
       CASE WHEN f.finished_at IS NOT NULL THEN 0 ELSE COALESCE(s.n, 0) END AS segments,
       CASE WHEN f.finished_at IS NOT NULL THEN 'DELETE_PARTITION_FINISHED'
            WHEN p.state = 0 THEN 'DELETE_PARTITION_MARKED'
            WHEN p.state = 1 THEN 'DELETE_PARTITION_STARTED' END AS delete_state,
       f.finished_at IS NOT NULL AS deleted
FROM touched t
LEFT JOIN rlmm_pf f ON {_on('t', 'f')}
LEFT JOIN segs s ON {_on('t', 's')}
LEFT JOIN puts p ON {_on('t', 'p')}
"""


def build() -> DomainProjection:
    """The RLMM projection; raises :class:`DomainNotAvailable` if its code is missing."""
    try:
        from actors.rlmm.store import MetadataPartitionState
        from events import rlmm as ev
    except ImportError as exc:  # pragma: no cover - only while the domain is being written
        raise DomainNotAvailable(str(exc)) from exc

    def initial(stream_id: str):
        return MetadataPartitionState(ev.metadata_partition_of_stream(stream_id))

    def evolve(state, event, stream_version: int, position: int):
        state.evolve(event, stream_version, position)
        return state

    return DomainProjection(
        name="rlmm",
        event_types=(ev.SegmentMetadataAdded, ev.SegmentMetadataUpdated, ev.RemotePartitionDeleteMetadataPut),
        tables=(SEGMENTS, SEGMENT_EPOCHS, EPOCHS, PARTITIONS),
        initial=initial,
        evolve=evolve,
        evolve_with_envelope=True,
        to_rows=to_rows,
        stream_prefix=ev.STREAM_PREFIX,
        sql_views=_VIEWS,
        sql={SEGMENTS.name: _SEGMENTS_SQL, SEGMENT_EPOCHS.name: _SEGMENT_EPOCHS_SQL, PARTITIONS.name: _PARTITIONS_SQL},
        decode_state=lambda _sid, data: MetadataPartitionState.from_snapshot(data),
        encode_state=lambda st: st.to_snapshot(),
        description="RLMM caches: segments per partition, leader-epoch index, partition deletes (KIP-405)",
    )


register_projection("rlmm", build)
