"""Controller snapshots: topics and partitions (leader, epochs, ISR), collections with their
since/upper frontiers, and read holds (Materialize-style storage controller; ``reference/controller.md``).

Python: :func:`actors.controller.state.evolve` over the ``controller`` stream. The controller's
stored snapshots are ``ControllerState.to_dict()`` JSON (``ControllerActor.save_snapshot``), so
``--verify`` compares them with the log.

SQL fold: ``controller_partitions`` and ``controller_replicas`` (live topics' partitions: leader,
epochs, replica assignment, ISR). Not in SQL yet: ``controller_topics`` (its configs come from
``TopicConfigsAltered.set``/``deleted``, a dict the flattener does not type), and the frontiers and
holds (``ReadHoldsChanged.changes`` are positional ``[collection_id, offset, delta]`` arrays of mixed
types, and since/upper come from mutable antichains driven by policies); those tables are
Python-only.
"""

from __future__ import annotations

import json

import pyarrow as pa

from projections.model import DomainNotAvailable, DomainProjection, SnapshotTable, register_projection

TOPICS = SnapshotTable(
    "controller_topics",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("topic", pa.string()),
            ("topic_id", pa.string()),
            ("partitions", pa.int64()),
            ("configs", pa.string()),  # "key=value;…" sorted
        ]
    ),
    ("stream_id", "topic"),
)
PARTITIONS = SnapshotTable(
    "controller_partitions",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("topic", pa.string()),
            ("partition", pa.int64()),
            ("topic_id", pa.string()),
            ("leader", pa.int64()),
            ("leader_epoch", pa.int64()),
            ("partition_epoch", pa.int64()),
        ]
    ),
    ("stream_id", "topic", "partition"),
)
REPLICAS = SnapshotTable(
    "controller_replicas",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("topic", pa.string()),
            ("partition", pa.int64()),
            ("kind", pa.string()),  # "replica" (assignment order) or "isr"
            ("idx", pa.int64()),
            ("broker_id", pa.int64()),
        ]
    ),
    ("stream_id", "topic", "partition", "kind", "idx"),
)
FRONTIERS = SnapshotTable(
    "controller_frontiers",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("collection_id", pa.string()),
            ("since", pa.int64()),  # NULL: the empty frontier
            ("upper", pa.int64()),
            ("policy", pa.string()),
            ("dependencies", pa.string()),
        ]
    ),
    ("stream_id", "collection_id"),
)
HOLDS = SnapshotTable(
    "controller_holds",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("collection_id", pa.string()),
            ("holder", pa.string()),
            ("offset", pa.int64()),
            ("count", pa.int64()),
        ]
    ),
    ("stream_id", "collection_id", "holder", "offset"),
)


def to_rows(stream_id: str, st) -> dict:
    """Snapshot rows of one folded ``ControllerState``."""
    topics, parts, reps, fronts, holds = [], [], [], [], []
    for name, t in st.topics.topics.items():
        topics.append(
            {
                "stream_id": stream_id,
                "topic": name,
                "topic_id": t.topic_id,
                "partitions": len(t.partitions),
                "configs": ";".join(f"{k}={v}" for k, v in sorted(t.configs.items())),
            }
        )
        for p in t.partitions:
            parts.append(
                {
                    "stream_id": stream_id,
                    "topic": name,
                    "partition": p.partition,
                    "topic_id": t.topic_id,
                    "leader": p.leader,
                    "leader_epoch": p.leader_epoch,
                    "partition_epoch": p.partition_epoch,
                }
            )
            for kind, brokers in (("replica", p.replicas), ("isr", p.isr)):
                reps.extend(
                    {"stream_id": stream_id, "topic": name, "partition": p.partition, "kind": kind, "idx": i, "broker_id": b}
                    for i, b in enumerate(brokers)
                )
    for cid, c in st.frontiers.collections.items():
        fronts.append(
            {
                "stream_id": stream_id,
                "collection_id": cid,
                "since": c.since,
                "upper": c.upper,
                "policy": json.dumps(c.policy.to_dict(), sort_keys=True),
                "dependencies": ",".join(c.dependencies),
            }
        )
        for holder, offsets in c.holds.items():
            for off, n in offsets.items():
                if n:
                    holds.append({"stream_id": stream_id, "collection_id": cid, "holder": holder, "offset": off, "count": n})
    return {TOPICS.name: topics, PARTITIONS.name: parts, REPLICAS.name: reps, FRONTIERS.name: fronts, HOLDS.name: holds}


# SQL twin of ``actors.controller.topics.evolve`` for partitions (decider-written logs: a name is
# created only when free and deleted only while live). A topic is live from its TopicCreated until
# a TopicDeleted of its id; a partition's leader/epochs/ISR are its latest PartitionChanged after
# the creation, else the creation's.
_VIEWS = [
    (
        "ctl_live_topics",
        """
SELECT c.stream_id, c.topic_id, c.name, c.position AS created_at
FROM ev_controller_TopicCreated c
WHERE NOT EXISTS (
  SELECT 1 FROM ev_controller_TopicDeleted d
  WHERE d.stream_id = c.stream_id AND d.topic_id = c.topic_id AND d.position > c.position
)
""",
    ),
    (
        "ctl_last_change",
        """
SELECT t.stream_id, t.topic_id, ch."partition", max(ch.position) AS changed_at
FROM ctl_live_topics t
JOIN ev_controller_PartitionChanged ch
  ON ch.stream_id = t.stream_id AND ch.topic_id = t.topic_id AND ch.position > t.created_at
GROUP BY t.stream_id, t.topic_id, ch."partition"
""",
    ),
]

_PARTITIONS_SQL = """
SELECT t.stream_id, t.name AS topic, p."partition", t.topic_id,
       COALESCE(ch.leader, p.leader) AS leader,
       COALESCE(ch.leader_epoch, p.leader_epoch) AS leader_epoch,
       COALESCE(ch.partition_epoch, p.partition_epoch) AS partition_epoch
FROM ctl_live_topics t
JOIN ev_controller_TopicCreated__partitions p ON p.stream_id = t.stream_id AND p.position = t.created_at
LEFT JOIN ctl_last_change lc ON lc.stream_id = t.stream_id AND lc.topic_id = t.topic_id AND lc."partition" = p."partition"
LEFT JOIN ev_controller_PartitionChanged ch
  ON ch.stream_id = lc.stream_id AND ch.position = lc.changed_at AND ch.topic_id = lc.topic_id AND ch."partition" = lc."partition"
"""

_REPLICAS_SQL = """
SELECT t.stream_id, t.name AS topic, r."partition", 'replica' AS kind, r.idx2 AS idx, r.value AS broker_id
FROM ctl_live_topics t
JOIN ev_controller_TopicCreated__partitions__replicas r ON r.stream_id = t.stream_id AND r.position = t.created_at
UNION ALL
SELECT t.stream_id, t.name, i."partition", 'isr', i.idx2, i.value
FROM ctl_live_topics t
JOIN ev_controller_TopicCreated__partitions__isr i ON i.stream_id = t.stream_id AND i.position = t.created_at
LEFT JOIN ctl_last_change lc ON lc.stream_id = t.stream_id AND lc.topic_id = t.topic_id AND lc."partition" = i."partition"
WHERE lc.changed_at IS NULL
UNION ALL
SELECT t.stream_id, t.name, c."partition", 'isr', c.idx, c.value
FROM ctl_live_topics t
JOIN ctl_last_change lc ON lc.stream_id = t.stream_id AND lc.topic_id = t.topic_id
JOIN ev_controller_PartitionChanged__isr c
  ON c.stream_id = lc.stream_id AND c.position = lc.changed_at AND c.topic_id = lc.topic_id AND c."partition" = lc."partition"
"""


def build() -> DomainProjection:
    """The controller projection; raises :class:`DomainNotAvailable` if its code is missing."""
    try:
        from actors.controller import state as cs
        from events import controller as ev
    except ImportError as exc:  # pragma: no cover - only while the domain is being written
        raise DomainNotAvailable(str(exc)) from exc

    event_types = tuple(
        c
        for c in vars(ev).values()
        if isinstance(c, type) and getattr(c, "event_type", "").startswith("controller.")
    )

    def decode_state(_sid: str, data: bytes):
        st = cs.ControllerState()
        st.load_dict(json.loads(data), 0)
        return st

    return DomainProjection(
        name="controller",
        event_types=event_types,
        tables=(TOPICS, PARTITIONS, REPLICAS, FRONTIERS, HOLDS),
        initial=lambda _sid: cs.ControllerState(),
        evolve=cs.evolve,
        to_rows=to_rows,
        stream_prefix=ev.STREAM_ID,
        sql_views=_VIEWS,
        sql={PARTITIONS.name: _PARTITIONS_SQL, REPLICAS.name: _REPLICAS_SQL},
        decode_state=decode_state,
        encode_state=lambda st: json.dumps(st.to_dict(), separators=(",", ":")).encode(),
        description="controller: topics, partitions, collections' since/upper frontiers, read holds",
    )


register_projection("controller", build)
