"""Controller snapshots: topics (with their config overrides) and partitions (leader, epochs,
replicas, ISR); storage collections with their since/upper frontiers, read policy, dependencies
and read holds (Materialize-style storage controller; ``reference/controller.md``); SCRAM
credentials and ACLs; the registered brokers and the active controller (KRaft's
``ClusterControlManager``).

Python: :func:`actors.controller.state.evolve` over the ``controller`` stream. The controller's
stored snapshots are ``ControllerState.to_dict()`` JSON (``ControllerActor.save_snapshot``), so
``--verify`` compares them with the log.

SQL fold: every table, over logs the controller's decider wrote (the fold relies on its rules: a
topic name is created only when free and deleted only while live; collection ids are never
reused; hold counts never go negative; ``collection:`` holds are the model's own):

* ``controller_partitions`` / ``controller_replicas``: a topic is live from its TopicCreated until
  a TopicDeleted of its id; its partitions are the creation's plus those of every later
  PartitionsCreated of its id (CreatePartitions); a partition's leader/epochs/ISR are its latest
  PartitionChanged after the creation, else the creating event's. Its assignment (kinds
  ``replica``, ``adding``, ``removing``; partition reassignment, KIP-455) is that of its latest
  PartitionChanged after the creation with a non-null ``replicas`` (the decider writes replicas,
  adding and removing together, and never an empty replica list: such an event is one with rows
  in ``ev_controller_PartitionChanged__replicas``), else the creation's replicas and no
  adding/removing.
* ``controller_topics``: per config name the last operation after the creation wins (creation
  configs, ``TopicConfigsAltered.set``, ``.deleted``); the sorted ``name=value;…`` string is built
  with one ``max(CASE …)`` per known topic config name joined by ``concat_ws`` — DuckDB and Spark
  share no ordered string aggregate, and the decider accepts only ``TOPIC_CONFIG_DEFS`` names.
* ``controller_frontiers`` / ``controller_dependencies`` / ``controller_holds``: see the comment
  above ``_FRONTIER_VIEWS``. In short, upper, policy and implied capability are the last recorded
  values; holds are sums of ``ReadHoldsChanged`` deltas (minus prepared-export tokens consumed by
  the export's creation) plus one dependency hold per dependent at the dependent's since; the
  since is the least implied capability or hold of the collection and of every collection
  recording it in ``CollectionSpec.transitive_dependencies``; a collection whose since is ``{}``
  is gone. ``tests/projections/test_controller_sql.py`` checks that rule against ``evolve``.

* ``controller_scram_credentials``: per user and mechanism, the last credential event decides
  (set: the row with its iterations; removed: no row). No salt, key or password.
* ``controller_acls``: an ACL is present when its last event is an ``AclsCreated`` (the decider
  creates only absent ACLs and deletes only present ones, so the last event decides).
* ``controller_brokers`` / ``controller_cluster`` (KRaft's ``ClusterControlManager`` image,
  :class:`actors.controller.cluster.ClusterState`): a broker's row is its latest
  ``BrokerRegistered``; it is fenced unless the latest ``BrokerFenced``/``BrokerUnfenced`` of that
  registration's ``broker_epoch`` after it is a ``BrokerUnfenced`` (a registration starts
  fenced; events of an older epoch are ignored, as ``ClusterState.evolve`` does). The controller
  is the latest ``ControllerElected`` (no row before the first election). The endpoints are one
  string ``NAME://host:port/PROTOCOL,…`` in listener order, built from one ``max(CASE …)`` per
  listener index (see :func:`_endpoints_sql`).

The frontiers table shows the policy as its canonical JSON text (what the events carry) and the
dependencies as rows of ``controller_dependencies`` (an ordered list cannot be joined into one
string the same way in both engines).
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
            ("kind", pa.string()),  # "replica" (assignment order), "isr", "adding" or "removing" (reassignment)
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
            ("since", pa.int64()),  # never NULL here: a collection whose since is {} is gone
            ("upper", pa.int64()),  # NULL: the empty frontier (sealed)
            ("policy", pa.string()),  # canonical JSON text (events.controller.policy_text)
        ]
    ),
    ("stream_id", "collection_id"),
)
DEPENDENCIES = SnapshotTable(
    "controller_dependencies",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("collection_id", pa.string()),
            ("idx", pa.int64()),  # position in the collection's dependency list
            ("dependency", pa.string()),
        ]
    ),
    ("stream_id", "collection_id", "idx"),
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


PRODUCER_IDS = SnapshotTable(
    "controller_producer_ids",
    pa.schema([("stream_id", pa.string()), ("next_producer_id", pa.int64())]),
    ("stream_id",),
)

# SCRAM credentials (KIP-554): who has a credential for which mechanism, with how many
# iterations. Salts and keys stay out of the table: they are not passwords, but they allow an
# offline dictionary attack, and an audit needs none of them.
SCRAM_CREDENTIALS = SnapshotTable(
    "controller_scram_credentials",
    pa.schema([("stream_id", pa.string()), ("user", pa.string()), ("mechanism", pa.string()), ("iterations", pa.int64())]),
    ("stream_id", "user", "mechanism"),
)


#: ACLs (CreateAcls/DeleteAcls): one row per ACL, every column of the binding, enums by Kafka name
ACLS = SnapshotTable(
    "controller_acls",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("resource_type", pa.string()),
            ("resource_name", pa.string()),
            ("pattern_type", pa.string()),
            ("principal", pa.string()),
            ("host", pa.string()),
            ("operation", pa.string()),
            ("permission", pa.string()),
        ]
    ),
    ("stream_id", "resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission"),
)


#: the registered brokers (KRaft ``BrokerRegistration``): endpoints as :func:`endpoints_text`
BROKERS = SnapshotTable(
    "controller_brokers",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("broker_id", pa.int64()),
            ("incarnation_id", pa.string()),
            ("broker_epoch", pa.int64()),
            ("endpoints", pa.string()),  # "NAME://host:port/PROTOCOL,…" in listener order
            ("rack", pa.string()),
            ("fenced", pa.bool_()),
        ]
    ),
    ("stream_id", "broker_id"),
)

#: the active controller and its epoch: a row once a controller was elected
CLUSTER = SnapshotTable(
    "controller_cluster",
    pa.schema([("stream_id", pa.string()), ("controller_id", pa.int64()), ("controller_epoch", pa.int64())]),
    ("stream_id",),
)

#: how many listeners of a broker ``controller_brokers.endpoints`` spells out; more are shown as
#: the first ones followed by :data:`MORE_ENDPOINTS` (the SQL fold has one column per index:
#: DuckDB and Spark share no ordered string aggregate). Kafka brokers have a handful of listeners.
MAX_LISTED_ENDPOINTS = 16
MORE_ENDPOINTS = "<more listeners>"


def endpoint_text(name: str, host: str, port: int, security_protocol: str) -> str:
    """One listener as ``NAME://host:port/PROTOCOL`` (Kafka's listener URI plus its security
    protocol), e.g. ``PLAINTEXT://b1:9092/PLAINTEXT``."""
    return f"{name}://{host}:{port}/{security_protocol}"


def endpoints_text(endpoints) -> str:
    """``controller_brokers.endpoints`` of a registration's ``BrokerEndpoint``s (listener order):
    their :func:`endpoint_text` joined by ``,`` (``""`` for none), the first
    :data:`MAX_LISTED_ENDPOINTS` only, followed by :data:`MORE_ENDPOINTS` if there are more."""
    texts = [endpoint_text(e.name, e.host, e.port, e.security_protocol) for e in endpoints]
    if len(texts) > MAX_LISTED_ENDPOINTS:
        texts = texts[:MAX_LISTED_ENDPOINTS] + [MORE_ENDPOINTS]
    return ",".join(texts)


def _cluster_rows(stream_id: str, cluster) -> dict:
    """``controller_brokers`` and ``controller_cluster`` rows of a folded
    :class:`actors.controller.cluster.ClusterState`."""
    brokers = [
        {
            "stream_id": stream_id,
            "broker_id": r.broker_id,
            "incarnation_id": r.incarnation_id,
            "broker_epoch": r.broker_epoch,
            "endpoints": endpoints_text(r.endpoints),
            "rack": r.rack,
            "fenced": r.fenced,
        }
        for _, r in sorted(cluster.brokers.items())
    ]
    elected = cluster.controller_epoch > 0  # ControllerElected epochs start at 1
    return {
        BROKERS.name: brokers,
        CLUSTER.name: (
            [{"stream_id": stream_id, "controller_id": cluster.controller_id, "controller_epoch": cluster.controller_epoch}]
            if elected
            else []
        ),
    }


def to_rows(stream_id: str, st) -> dict:
    """Snapshot rows of one folded ``ControllerState``."""
    from actors.controller.frontiers import policy_to_json

    topics, parts, reps, fronts, deps, holds = [], [], [], [], [], []
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
            for kind, brokers in (("replica", p.replicas), ("isr", p.isr), ("adding", p.adding), ("removing", p.removing)):
                reps.extend(
                    {"stream_id": stream_id, "topic": name, "partition": p.partition, "kind": kind, "idx": i, "broker_id": b}
                    for i, b in enumerate(brokers)
                )
    for cid, c in st.frontiers.collections.items():
        fronts.append(
            {"stream_id": stream_id, "collection_id": cid, "since": c.since, "upper": c.upper, "policy": policy_to_json(c.policy)}
        )
        deps.extend(
            {"stream_id": stream_id, "collection_id": cid, "idx": i, "dependency": d} for i, d in enumerate(c.dependencies)
        )
        for holder, offsets in c.holds.items():
            for off, n in offsets.items():
                if n:
                    holds.append({"stream_id": stream_id, "collection_id": cid, "holder": holder, "offset": off, "count": n})
    return {
        TOPICS.name: topics,
        PARTITIONS.name: parts,
        REPLICAS.name: reps,
        FRONTIERS.name: fronts,
        DEPENDENCIES.name: deps,
        HOLDS.name: holds,
        # the first id of the next producer-id block (KIP-98): a row once a block was handed out
        PRODUCER_IDS.name: [{"stream_id": stream_id, "next_producer_id": st.next_producer_id}] if st.next_producer_id else [],
        SCRAM_CREDENTIALS.name: [
            {"stream_id": stream_id, "user": u, "mechanism": m, "iterations": c.iterations} for (u, m), c in st.scram.credentials.items()
        ],
        ACLS.name: [{"stream_id": stream_id, **row} for row in st.acls.to_list()],
        **_cluster_rows(stream_id, st.cluster),
    }


# SQL twin of ``actors.controller.topics.evolve`` for partitions (decider-written logs: a name is
# created only when free and deleted only while live). A topic is live from its TopicCreated until
# a TopicDeleted of its id; its partitions are the creation's plus those of later PartitionsCreated
# events of its id; a partition's leader/epochs/ISR are its latest PartitionChanged after the
# creation, else the creating event's.
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
    (
        # the latest change of each partition's assignment (reassignment): a PartitionChanged
        # with a replica list
        "ctl_last_assign",
        """
SELECT t.stream_id, t.topic_id, r."partition", max(r.position) AS assigned_at
FROM ctl_live_topics t
JOIN ev_controller_PartitionChanged__replicas r
  ON r.stream_id = t.stream_id AND r.topic_id = t.topic_id AND r.position > t.created_at
GROUP BY t.stream_id, t.topic_id, r."partition"
""",
    ),
    (
        # every partition of a live topic: the creation's, plus those a later PartitionsCreated
        # (CreatePartitions) of the same topic id added; ``created_at`` is the event that made it
        "ctl_partition_specs",
        """
SELECT t.stream_id, t.topic_id, t.name, p."partition", p.leader, p.leader_epoch, p.partition_epoch, p.position AS created_at
FROM ctl_live_topics t
JOIN ev_controller_TopicCreated__partitions p ON p.stream_id = t.stream_id AND p.position = t.created_at
UNION ALL
SELECT t.stream_id, t.topic_id, t.name, p."partition", p.leader, p.leader_epoch, p.partition_epoch, p.position
FROM ctl_live_topics t
JOIN ev_controller_PartitionsCreated__partitions p
  ON p.stream_id = t.stream_id AND p.topic_id = t.topic_id AND p.position > t.created_at
""",
    ),
    (
        "ctl_spec_lists",
        """
SELECT t.stream_id, t.topic_id, t.name, r."partition", 'replica' AS kind, r.idx2 AS idx, r.value AS broker_id
FROM ctl_live_topics t
JOIN ev_controller_TopicCreated__partitions__replicas r ON r.stream_id = t.stream_id AND r.position = t.created_at
UNION ALL
SELECT t.stream_id, t.topic_id, t.name, i."partition", 'isr', i.idx2, i.value
FROM ctl_live_topics t
JOIN ev_controller_TopicCreated__partitions__isr i ON i.stream_id = t.stream_id AND i.position = t.created_at
UNION ALL
SELECT t.stream_id, t.topic_id, t.name, r."partition", 'replica', r.idx2, r.value
FROM ctl_live_topics t
JOIN ev_controller_PartitionsCreated__partitions__replicas r
  ON r.stream_id = t.stream_id AND r.topic_id = t.topic_id AND r.position > t.created_at
UNION ALL
SELECT t.stream_id, t.topic_id, t.name, i."partition", 'isr', i.idx2, i.value
FROM ctl_live_topics t
JOIN ev_controller_PartitionsCreated__partitions__isr i
  ON i.stream_id = t.stream_id AND i.topic_id = t.topic_id AND i.position > t.created_at
""",
    ),
]

_PARTITIONS_SQL = """
SELECT p.stream_id, p.name AS topic, p."partition", p.topic_id,
       COALESCE(ch.leader, p.leader) AS leader,
       COALESCE(ch.leader_epoch, p.leader_epoch) AS leader_epoch,
       COALESCE(ch.partition_epoch, p.partition_epoch) AS partition_epoch
FROM ctl_partition_specs p
LEFT JOIN ctl_last_change lc ON lc.stream_id = p.stream_id AND lc.topic_id = p.topic_id AND lc."partition" = p."partition"
LEFT JOIN ev_controller_PartitionChanged ch
  ON ch.stream_id = lc.stream_id AND ch.position = lc.changed_at AND ch.topic_id = lc.topic_id AND ch."partition" = lc."partition"
"""

_REPLICAS_SQL = """
SELECT s.stream_id, s.name AS topic, s."partition", s.kind, s.idx, s.broker_id
FROM ctl_spec_lists s
LEFT JOIN ctl_last_change lc ON lc.stream_id = s.stream_id AND lc.topic_id = s.topic_id AND lc."partition" = s."partition"
LEFT JOIN ctl_last_assign la ON la.stream_id = s.stream_id AND la.topic_id = s.topic_id AND la."partition" = s."partition"
WHERE (s.kind = 'replica' AND la.assigned_at IS NULL) OR (s.kind = 'isr' AND lc.changed_at IS NULL)
UNION ALL
SELECT t.stream_id, t.name, c."partition", 'isr', c.idx, c.value
FROM ctl_live_topics t
JOIN ctl_last_change lc ON lc.stream_id = t.stream_id AND lc.topic_id = t.topic_id
JOIN ev_controller_PartitionChanged__isr c
  ON c.stream_id = lc.stream_id AND c.position = lc.changed_at AND c.topic_id = lc.topic_id AND c."partition" = lc."partition"
"""
# the replica lists a partition's latest assignment carries: kind → PartitionChanged list field
_ASSIGNMENT_LISTS = (("replica", "replicas"), ("adding", "adding_replicas"), ("removing", "removing_replicas"))
_REPLICAS_SQL += "".join(
    f"""UNION ALL
SELECT t.stream_id, t.name, x."partition", '{kind}', x.idx, x.value
FROM ctl_live_topics t
JOIN ctl_last_assign la ON la.stream_id = t.stream_id AND la.topic_id = t.topic_id
JOIN ev_controller_PartitionChanged__{field} x
  ON x.stream_id = la.stream_id AND x.position = la.assigned_at AND x.topic_id = la.topic_id AND x."partition" = la."partition"
"""
    for kind, field in _ASSIGNMENT_LISTS
)


def _lit(text: str) -> str:
    """``text`` as a SQL string literal (both engines: quotes doubled, no backslashes)."""
    if "\\" in text:
        raise ValueError(f"no backslashes in SQL literals: {text!r}")
    return "'" + text.replace("'", "''") + "'"


# Topic configs: per live topic and config name, the last operation after the creation (the
# creation's own configs, a TopicConfigsAltered set, or a delete — applied after the sets of the
# same event, as ``topics.evolve`` does) decides whether and with which value it is set.
_CONFIG_VIEWS = [
    (
        "ctl_config_ops",
        """
SELECT c.stream_id, c.topic_id, c.configs__name AS config, c.value, c.position, 0 AS op
FROM ctl_live_topics t
JOIN ev_controller_TopicCreated__configs c ON c.stream_id = t.stream_id AND c.position = t.created_at
UNION ALL
SELECT s.stream_id, s.topic_id, s.set__name, s.value, s.position, 0
FROM ctl_live_topics t
JOIN ev_controller_TopicConfigsAltered__set s
  ON s.stream_id = t.stream_id AND s.topic_id = t.topic_id AND s.position > t.created_at
UNION ALL
SELECT d.stream_id, d.topic_id, d.value, NULL, d.position, 1
FROM ctl_live_topics t
JOIN ev_controller_TopicConfigsAltered__deleted d
  ON d.stream_id = t.stream_id AND d.topic_id = t.topic_id AND d.position > t.created_at
""",
    ),
    (
        "ctl_configs",
        """
SELECT stream_id, topic_id, config, value
FROM (
  SELECT o.*, row_number() OVER (PARTITION BY stream_id, topic_id, config ORDER BY position DESC, op DESC) AS rn
  FROM ctl_config_ops o
) x
WHERE rn = 1 AND op = 0
""",
    ),
]


def _topics_sql(config_names) -> str:
    """``controller_topics``: the configs string ``name=value;…`` sorted by name is built without
    an ordered string aggregate (DuckDB's ``string_agg(… ORDER BY …)`` and Spark's
    ``array_join(array_sort(collect_list(…)))`` have no common form): one ``max(CASE …)`` per
    known topic config name, in sorted order, joined by ``concat_ws`` (which skips NULLs in both
    engines). The names are ``TOPIC_CONFIG_DEFS``' (the decider refuses any other); a name outside
    them would show as ``<unknown config>`` instead of vanishing."""
    names = sorted(config_names)
    parts = [f"max(CASE WHEN config = {_lit(n)} THEN {_lit(n + '=')} || value END)" for n in names]
    known = ", ".join(_lit(n) for n in names)
    parts.append(f"CASE WHEN count(CASE WHEN config NOT IN ({known}) THEN 1 END) > 0 THEN '<unknown config>' END")
    configs = "concat_ws(';', " + ", ".join(parts) + ")"
    return f"""
SELECT t.stream_id, t.name AS topic, t.topic_id, COALESCE(p.n, 0) AS partitions, COALESCE(c.configs, '') AS configs
FROM ctl_live_topics t
LEFT JOIN (
  SELECT stream_id, topic_id, count(*) AS n FROM ctl_partition_specs GROUP BY stream_id, topic_id
) p ON p.stream_id = t.stream_id AND p.topic_id = t.topic_id
LEFT JOIN (
  SELECT stream_id, topic_id, {configs} AS configs FROM ctl_configs GROUP BY stream_id, topic_id
) c ON c.stream_id = t.stream_id AND c.topic_id = t.topic_id
"""


def _last(union: str, column: str) -> str:
    """The ``column`` of the last row (greatest ``position``, then ``idx``) per collection of
    ``union`` (NULL kept: a window, not ``max_by``, see ``sqlkit``)."""
    return f"""
SELECT stream_id, collection_id, {column}
FROM (
  SELECT u.*, row_number() OVER (PARTITION BY stream_id, collection_id ORDER BY position DESC, idx DESC) AS rn
  FROM ({union}) u
) x
WHERE rn = 1
"""


# Frontiers and holds. Nothing here replays the since computation of ``frontiers.evolve``; the
# snapshot follows from facts the events record, because of invariants the decider keeps:
# * the implied capability is recorded by every event that moves it (creation: the since;
#   FrontierUpdate/PolicyChange: ``implied``; drop: ``{}``), so it is the last recorded value;
# * a holder's holds are the sum of its ReadHoldsChanged deltas, except the token holds of a
#   prepared export ``export:<id>``, which the creation of collection ``<id>`` removes (and none
#   are placed after it: the id is then taken);
# * a dependency hold (holder ``collection:<id>``) sits at the dependent's since, once per listed
#   dependency, while the dependent lives (``_settle`` moves it; outside holders cannot touch it);
# * the since is the least read capability: ``own`` (implied capability and the holders' holds)
#   of the collection itself or of any collection depending on it, directly or transitively —
#   ``CollectionSpec.transitive_dependencies`` records that closure, so no recursion is needed;
# * a collection whose since became ``{}`` is gone and no later event names it (ids are never
#   reused), so "since is NULL" at the end is "gone".
_FRONTIER_VIEWS = [
    (
        "ctl_collections",
        """
SELECT stream_id, collection_id, position AS created_at, upper, policy
FROM ev_controller_CollectionsCreated__collections
""",
    ),
    (
        "ctl_implied",
        _last(
            """
SELECT stream_id, collection_id, position, idx, since AS implied FROM ev_controller_CollectionsCreated__collections
UNION ALL
SELECT stream_id, collection_id, position, idx, implied FROM ev_controller_WriteFrontiersAdvanced__updates
UNION ALL
SELECT stream_id, collection_id, position, idx, implied FROM ev_controller_ReadPoliciesSet__changes
UNION ALL
SELECT stream_id, value, position, idx, NULL FROM ev_controller_CollectionsDropRequested__collection_ids
""",
            "implied",
        ),
    ),
    (
        "ctl_upper",
        _last(
            """
SELECT stream_id, collection_id, position, idx, upper FROM ev_controller_CollectionsCreated__collections
UNION ALL
SELECT stream_id, collection_id, position, idx, upper FROM ev_controller_WriteFrontiersAdvanced__updates
""",
            "upper",
        ),
    ),
    (
        "ctl_held",  # the holders' holds (all but dependency holds), zeros left out
        """
SELECT h.stream_id, h.collection_id, h.holder, h."offset", sum(h.delta) AS n
FROM ev_controller_ReadHoldsChanged__changes h
LEFT JOIN ctl_collections x ON x.stream_id = h.stream_id AND h.holder = 'export:' || x.collection_id
WHERE x.collection_id IS NULL
GROUP BY h.stream_id, h.collection_id, h.holder, h."offset"
HAVING sum(h.delta) <> 0
""",
    ),
    (
        "ctl_own",
        """
SELECT stream_id, collection_id, min(o) AS own
FROM (
  SELECT stream_id, collection_id, implied AS o FROM ctl_implied
  UNION ALL
  SELECT stream_id, collection_id, "offset" FROM ctl_held WHERE n > 0
) c
GROUP BY stream_id, collection_id
""",
    ),
    (
        "ctl_since",
        """
SELECT r.stream_id, r.target AS collection_id, min(o.own) AS since
FROM (
  SELECT stream_id, collection_id AS dependent, collection_id AS target FROM ctl_collections
  UNION ALL
  SELECT stream_id, collection_id, value FROM ev_controller_CollectionsCreated__collections__transitive_dependencies
) r
JOIN ctl_own o ON o.stream_id = r.stream_id AND o.collection_id = r.dependent
GROUP BY r.stream_id, r.target
HAVING min(o.own) IS NOT NULL
""",
    ),
]


def _policy_view(dropped_policy: str) -> tuple[str, str]:
    return (
        "ctl_policy",
        _last(
            f"""
SELECT stream_id, collection_id, position, idx, policy FROM ev_controller_CollectionsCreated__collections
UNION ALL
SELECT stream_id, collection_id, position, idx, policy FROM ev_controller_ReadPoliciesSet__changes
UNION ALL
SELECT stream_id, value, position, idx, {_lit(dropped_policy)} FROM ev_controller_CollectionsDropRequested__collection_ids
""",
            "policy",
        ),
    )


_FRONTIERS_SQL = """
SELECT s.stream_id, s.collection_id, s.since, u.upper, p.policy
FROM ctl_since s
JOIN ctl_upper u ON u.stream_id = s.stream_id AND u.collection_id = s.collection_id
JOIN ctl_policy p ON p.stream_id = s.stream_id AND p.collection_id = s.collection_id
"""

_DEPENDENCIES_SQL = """
SELECT d.stream_id, d.collection_id, d.idx2 AS idx, d.value AS dependency
FROM ev_controller_CollectionsCreated__collections__dependencies d
JOIN ctl_since s ON s.stream_id = d.stream_id AND s.collection_id = d.collection_id
"""

_PRODUCER_IDS_SQL = """
SELECT stream_id, max(first_producer_id + block_size) AS next_producer_id
FROM ev_controller_ProducerIdsAllocated
GROUP BY stream_id
"""

# SCRAM credentials: per (user, mechanism) the last UserScramCredentialSet/Removed decides
# (the decider removes only existing credentials, so "last is a Set" is "exists").
_SCRAM_CREDENTIALS_SQL = """
SELECT stream_id, "user", mechanism, iterations
FROM (
  SELECT u.*, row_number() OVER (PARTITION BY stream_id, "user", mechanism ORDER BY position DESC) AS rn
  FROM (
    SELECT stream_id, "user", mechanism, iterations, position, 0 AS removed FROM ev_controller_UserScramCredentialSet
    UNION ALL
    SELECT stream_id, "user", mechanism, NULL, position, 1 FROM ev_controller_UserScramCredentialRemoved
  ) u
) x
WHERE rn = 1 AND removed = 0
"""

_HOLDS_SQL = """
SELECT h.stream_id, h.collection_id, h.holder, h."offset", h.n AS "count"
FROM ctl_held h
JOIN ctl_since s ON s.stream_id = h.stream_id AND s.collection_id = h.collection_id
UNION ALL
SELECT d.stream_id, d.value, 'collection:' || d.collection_id, s.since, count(*)
FROM ev_controller_CollectionsCreated__collections__dependencies d
JOIN ctl_since s ON s.stream_id = d.stream_id AND s.collection_id = d.collection_id
GROUP BY d.stream_id, d.value, d.collection_id, s.since
"""


_ACL_COLUMNS = "resource_type, resource_name, pattern_type, principal, host, operation, permission"

# An ACL is present when its last event names it as created (the decider never creates a present
# ACL nor deletes an absent one).
_ACLS_SQL = f"""
SELECT stream_id, {_ACL_COLUMNS}
FROM (
  SELECT u.*, row_number() OVER (PARTITION BY stream_id, {_ACL_COLUMNS} ORDER BY position DESC) AS rn
  FROM (
    SELECT stream_id, position, {_ACL_COLUMNS}, 1 AS live FROM ev_controller_AclsCreated__acls
    UNION ALL
    SELECT stream_id, position, {_ACL_COLUMNS}, 0 AS live FROM ev_controller_AclsDeleted__acls
  ) u
) x
WHERE rn = 1 AND live = 1
"""


# The cluster (``ClusterState.evolve``): the latest registration of each broker; its fencing state
# is the latest Fenced/Unfenced of that registration's epoch after it (fenced when there is none);
# the controller is the latest ControllerElected.
_CLUSTER_VIEWS = [
    (
        "ctl_broker_regs",
        """
SELECT stream_id, broker_id, incarnation_id, broker_epoch, rack, position
FROM (
  SELECT r.*, row_number() OVER (PARTITION BY stream_id, broker_id ORDER BY position DESC) AS rn
  FROM ev_controller_BrokerRegistered r
) x
WHERE rn = 1
""",
    ),
    (
        "ctl_broker_fencing",
        """
SELECT stream_id, broker_id, fenced
FROM (
  SELECT u.*, row_number() OVER (PARTITION BY u.stream_id, u.broker_id ORDER BY u.position DESC) AS rn
  FROM (
    SELECT f.stream_id, f.broker_id, f.position, TRUE AS fenced
    FROM ev_controller_BrokerFenced f
    JOIN ctl_broker_regs r
      ON r.stream_id = f.stream_id AND r.broker_id = f.broker_id AND r.broker_epoch = f.broker_epoch AND f.position > r.position
    UNION ALL
    SELECT f.stream_id, f.broker_id, f.position, FALSE
    FROM ev_controller_BrokerUnfenced f
    JOIN ctl_broker_regs r
      ON r.stream_id = f.stream_id AND r.broker_id = f.broker_id AND r.broker_epoch = f.broker_epoch AND f.position > r.position
  ) u
) x
WHERE rn = 1
""",
    ),
]


def _endpoints_sql(max_listed: int, more: str) -> str:
    """``(stream_id, broker_id, endpoints)`` of each broker's latest registration: the
    :func:`endpoint_text` of its listeners in order, joined by ``,``. Without an ordered string
    aggregate common to DuckDB and Spark, each listener index up to ``max_listed`` is one
    ``max(CASE …)`` joined by ``concat_ws`` (which skips NULLs in both engines); ``more`` stands
    for the rest, as :func:`endpoints_text` does."""
    text = "e.name || '://' || e.host || ':' || CAST(e.port AS STRING) || '/' || e.security_protocol"
    parts = [f"max(CASE WHEN e.idx = {i} THEN {text} END)" for i in range(max_listed)]
    parts.append(f"CASE WHEN max(e.idx) >= {max_listed} THEN {_lit(more)} END")
    return f"""
SELECT r.stream_id, r.broker_id, concat_ws(',', {", ".join(parts)}) AS endpoints
FROM ctl_broker_regs r
JOIN ev_controller_BrokerRegistered__endpoints e ON e.stream_id = r.stream_id AND e.position = r.position
GROUP BY r.stream_id, r.broker_id
"""


_BROKERS_SQL = """
SELECT r.stream_id, r.broker_id, r.incarnation_id, r.broker_epoch, COALESCE(e.endpoints, '') AS endpoints, r.rack,
       COALESCE(f.fenced, TRUE) AS fenced
FROM ctl_broker_regs r
LEFT JOIN ctl_broker_endpoints e ON e.stream_id = r.stream_id AND e.broker_id = r.broker_id
LEFT JOIN ctl_broker_fencing f ON f.stream_id = r.stream_id AND f.broker_id = r.broker_id
"""

_CLUSTER_SQL = """
SELECT stream_id, node_id AS controller_id, controller_epoch
FROM (
  SELECT c.*, row_number() OVER (PARTITION BY stream_id ORDER BY position DESC) AS rn
  FROM ev_controller_ControllerElected c
) x
WHERE rn = 1
"""


def build() -> DomainProjection:
    """The controller projection; raises :class:`DomainNotAvailable` if its code is missing."""
    try:
        from actors.controller import frontiers as fr
        from actors.controller import state as cs
        from store.log.config import TOPIC_CONFIG_DEFS
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
        tables=(TOPICS, PARTITIONS, REPLICAS, FRONTIERS, DEPENDENCIES, HOLDS, PRODUCER_IDS, SCRAM_CREDENTIALS, ACLS, BROKERS, CLUSTER),
        initial=lambda _sid: cs.ControllerState(),
        evolve=cs.evolve,
        to_rows=to_rows,
        stream_prefix=ev.STREAM_ID,
        sql_views=[
            *_VIEWS,
            *_CONFIG_VIEWS,
            *_FRONTIER_VIEWS,
            _policy_view(fr.policy_to_json(fr.ValidFrom(None))),
            *_CLUSTER_VIEWS,
            ("ctl_broker_endpoints", _endpoints_sql(MAX_LISTED_ENDPOINTS, MORE_ENDPOINTS)),
        ],
        sql={
            TOPICS.name: _topics_sql(TOPIC_CONFIG_DEFS),
            PARTITIONS.name: _PARTITIONS_SQL,
            REPLICAS.name: _REPLICAS_SQL,
            FRONTIERS.name: _FRONTIERS_SQL,
            DEPENDENCIES.name: _DEPENDENCIES_SQL,
            HOLDS.name: _HOLDS_SQL,
            PRODUCER_IDS.name: _PRODUCER_IDS_SQL,
            SCRAM_CREDENTIALS.name: _SCRAM_CREDENTIALS_SQL,
            ACLS.name: _ACLS_SQL,
            BROKERS.name: _BROKERS_SQL,
            CLUSTER.name: _CLUSTER_SQL,
        },
        decode_state=decode_state,
        encode_state=lambda st: json.dumps(st.to_dict(), separators=(",", ":")).encode(),
        description="controller: topics, partitions, collections' since/upper frontiers, dependencies, read holds, SCRAM credentials, ACLs, brokers, active controller",
    )


register_projection("controller", build)
