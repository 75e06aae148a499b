"""Topics, partitions, topic ids and configs (pure): Kafka's KRaft controller rules.

Semantics follow Apache Kafka (read from source, trunk @1eb7644 2024-10):

* ``ReplicationControlManager.createTopics``/``createTopic``/``validateNewTopicNames``/
  ``deleteTopics`` for validation order, errors and messages;
* ``org.apache.kafka.common.internals.Topic`` for names (≤ 249 chars of ``[a-zA-Z0-9._-]``, not
  ``.``/``..``; ``.`` and ``_`` collide);
* ``LogConfig`` / ``TopicConfig`` / ``ServerLogConfigs`` for topic config keys, types, ranges and
  defaults, and the remote-storage retention checks (the topic config definitions themselves,
  ``TOPIC_CONFIG_DEFS``, live in :mod:`store.log.config`, shared with the partition log);
* ``ConfigurationControlManager.incrementalAlterConfigResource`` for SET/DELETE/APPEND/SUBTRACT
  (APPEND/SUBTRACT only on LIST keys; a resource fails as a whole) and
  ``ControllerConfigurationValidator`` for resource-name checks;
* ``Uuid.randomUuid`` for topic ids (not reserved, base64 form not starting with ``-``), never
  reused: the ids ever used are kept after deletion.

Shoal extension: the topic config ``share.groups.hold.retention`` (BOOLEAN, default ``false``).
When ``true``, share groups consuming the topic hold its retention back at their share-partition
start offset (SPSO) until every group has acknowledged the records, the way Materialize read holds
pin a collection's since. Kafka never does this: its retention ignores readers, and a slow reader
gets OFFSET_OUT_OF_RANGE. Hence off by default.

Everything here is pure: :func:`decide_create_topics` and friends take the state and a command and
return events plus a per-resource result; :func:`evolve` applies an event in place.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from events.controller import (
    BrokerConfigsAltered,
    PartitionChanged,
    PartitionsCreated,
    PartitionSpec,
    TopicConfigsAltered,
    TopicCreated,
    TopicDeleted,
    config_map,
    config_values,
)
from store.log.config import (
    LONG_MAX,
    RECORD_OVERHEAD_V0,
    TOPIC_CONFIG_DEFS,
    ConfigDef,
    at_least,
    between,
    one_of,
    parse_value,
    remote_retention_problem,
    valid_list,
)

__all__ = [
    "BROKER_CONFIG_DEFS",
    "ConfigEntry",
    "ConfigResult",
    "CreatableTopic",
    "CreatePartitions",
    "CreatePartitionsResult",
    "CreatePartitionsTopic",
    "decide_create_partitions",
    "CreateTopics",
    "CreateTopicResult",
    "DeleteTopics",
    "DeleteTopicResult",
    "IncrementalAlterConfigs",
    "AlterConfigResource",
    "NO_LEADER",
    "Partition",
    "Topic",
    "TopicsState",
    "decide_alter_configs",
    "decide_create_topics",
    "decide_delete_topics",
    "describe_configs",
    "effective_topic_config",
    "evolve",
    "kafka_topic_id",
    "new_topic_id",
    "topic_id_from_kafka",
    "validate_topic_name",
]

NO_LEADER = -1
MAX_NAME_LENGTH = 249
#: ``Topic.CLUSTER_METADATA_TOPIC_NAME``: CreateTopics refuses it (``ControllerApis#createTopics``).
CLUSTER_METADATA_TOPIC_NAME = "__cluster_metadata"

# DescribeConfigs sources (``DescribeConfigsResponse.ConfigSource``)
DYNAMIC_TOPIC_CONFIG = "DYNAMIC_TOPIC_CONFIG"
DYNAMIC_BROKER_CONFIG = "DYNAMIC_BROKER_CONFIG"
DYNAMIC_DEFAULT_BROKER_CONFIG = "DYNAMIC_DEFAULT_BROKER_CONFIG"
STATIC_BROKER_CONFIG = "STATIC_BROKER_CONFIG"
DEFAULT_CONFIG = "DEFAULT_CONFIG"
CONFIG_SOURCE_IDS = {
    DYNAMIC_TOPIC_CONFIG: 1,
    DYNAMIC_BROKER_CONFIG: 2,
    DYNAMIC_DEFAULT_BROKER_CONFIG: 3,
    STATIC_BROKER_CONFIG: 4,
    DEFAULT_CONFIG: 5,
}


# --- topic ids --------------------------------------------------------------------------------

_RESERVED_IDS = {uuid.UUID(int=0), uuid.UUID(int=1)}


def kafka_topic_id(topic_id: str) -> str:
    """Kafka's string form of a topic id (``Uuid.toString``): URL-safe base64 of the 16 bytes,
    no padding. Takes the canonical hex form."""
    return base64.urlsafe_b64encode(uuid.UUID(topic_id).bytes).rstrip(b"=").decode("ascii")


def topic_id_from_kafka(text: str) -> str:
    """Inverse of :func:`kafka_topic_id`; raises ``ValueError`` for a malformed id."""
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"not a Kafka Uuid: {text!r}")
    return str(uuid.UUID(bytes=raw))


def new_topic_id(used: Iterable[str] = (), rand: Callable[[], uuid.UUID] = uuid.uuid4) -> str:
    """A fresh topic id (canonical hex) as Kafka's ``Uuid.randomUuid`` makes them: not ZERO/ONE
    (reserved), base64 form not starting with ``-``, and not in ``used``. Impure (random): the
    actor calls it and puts the id in the command, so deciders stay pure."""
    used_set = set(used)
    while True:
        u = rand()
        s = str(u)
        if u in _RESERVED_IDS or s in used_set or kafka_topic_id(s).startswith("-"):
            continue
        return s


# --- configs ----------------------------------------------------------------------------------


#: Broker configs the controller knows (``ServerLogConfigs``/``KafkaConfig`` names and defaults).
BROKER_CONFIG_DEFS: dict[str, ConfigDef] = {
    "num.partitions": ConfigDef("INT", "1", at_least(1)),
    "default.replication.factor": ConfigDef("INT", "1", at_least(1)),
    "auto.create.topics.enable": ConfigDef("BOOLEAN", "true"),
    "min.insync.replicas": ConfigDef("INT", "1", at_least(1)),
    "log.retention.ms": ConfigDef("LONG", None, at_least(-1)),
    "log.retention.minutes": ConfigDef("INT", None),
    "log.retention.hours": ConfigDef("INT", "168"),
    "log.retention.bytes": ConfigDef("LONG", "-1"),
    "log.retention.check.interval.ms": ConfigDef("LONG", "300000", at_least(1)),
    "log.segment.bytes": ConfigDef("INT", str(1024**3), at_least(RECORD_OVERHEAD_V0)),
    "log.roll.ms": ConfigDef("LONG", None),
    "log.roll.hours": ConfigDef("INT", "168", at_least(1)),
    "log.roll.jitter.ms": ConfigDef("LONG", None),
    "log.roll.jitter.hours": ConfigDef("INT", "0", at_least(0)),
    "log.cleanup.policy": ConfigDef("LIST", "delete", valid_list("compact", "delete")),
    "log.local.retention.ms": ConfigDef("LONG", "-2", at_least(-2)),
    "log.local.retention.bytes": ConfigDef("LONG", "-2", at_least(-2)),
    "log.cleaner.delete.retention.ms": ConfigDef("LONG", "86400000", at_least(0)),
    "log.cleaner.min.compaction.lag.ms": ConfigDef("LONG", "0", at_least(0)),
    "log.cleaner.max.compaction.lag.ms": ConfigDef("LONG", str(LONG_MAX), at_least(1)),
    "log.cleaner.min.cleanable.ratio": ConfigDef("DOUBLE", "0.5", between(0, 1)),
    "log.segment.delete.delay.ms": ConfigDef("LONG", "60000", at_least(0)),
    "log.flush.interval.messages": ConfigDef("LONG", str(LONG_MAX), at_least(1)),
    "log.flush.interval.ms": ConfigDef("LONG", None),
    "log.index.interval.bytes": ConfigDef("INT", "4096", at_least(0)),
    "log.index.size.max.bytes": ConfigDef("INT", str(10 * 1024 * 1024), at_least(4)),
    "log.message.timestamp.type": ConfigDef("STRING", "CreateTime", one_of("CreateTime", "LogAppendTime")),
    "log.preallocate": ConfigDef("BOOLEAN", "false"),
    "message.max.bytes": ConfigDef("INT", "1048588", at_least(0)),
    "compression.type": ConfigDef("STRING", "producer", one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    "unclean.leader.election.enable": ConfigDef("BOOLEAN", "false"),
    "replica.lag.time.max.ms": ConfigDef("LONG", "30000", at_least(0)),
    "remote.log.storage.system.enable": ConfigDef("BOOLEAN", "false"),
}


# --- state ------------------------------------------------------------------------------------


@dataclass
class Partition:
    """A partition's registration: ``replicas`` (assignment order; ``replicas[0]`` is the
    preferred leader), ``isr``, ``leader`` (``-1`` = none), ``leader_epoch``, ``partition_epoch``
    and, during a partition reassignment (KIP-455), ``adding``/``removing`` (Kafka's
    ``PartitionRegistration.addingReplicas``/``removingReplicas``; ``replicas`` is then the
    interim list: target order followed by the replicas being removed). A reassignment is in
    progress iff ``adding`` or ``removing`` is non-empty."""

    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def reassigning(self) -> bool:
        """Whether a reassignment is in progress (adding or removing replicas)."""
        return bool(self.adding or self.removing)


@dataclass
class Topic:
    """A live topic: id (canonical hex UUID), name, partitions, explicit config overrides."""

    topic_id: str
    name: str
    partitions: list[Partition]
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def replication_factor(self) -> int:
        """The number of replicas of partition 0 (all partitions share it)."""
        return len(self.partitions[0].replicas) if self.partitions else 0


class TopicsState:
    """Live topics by name, name by id, every id ever used, dynamic broker configs (resource name
    → key → value; ``""`` is the cluster default) and the static broker config (the daemon's
    ``server.properties`` + overrides; not evented). ``brokers``: the registered broker ids."""

    def __init__(self, static_config: Mapping[str, str] | None = None, brokers: Sequence[int] = (1,)) -> None:
        self.topics: dict[str, Topic] = {}
        self.names_by_id: dict[str, str] = {}
        self.used_ids: set[str] = set()
        self.dynamic_broker_configs: dict[str, dict[str, str]] = {}
        self.static_config: dict[str, str] = {str(k): str(v) for k, v in (static_config or {}).items()}
        self.brokers: tuple[int, ...] = tuple(brokers)

    def topic_by_id(self, topic_id: str) -> Topic | None:
        """The live topic with canonical id ``topic_id``, or ``None``."""
        name = self.names_by_id.get(topic_id)
        return None if name is None else self.topics.get(name)

    # -- broker config resolution ---------------------------------------------------------
    def broker_value(self, key: str, broker: str | None = None) -> tuple[str | None, str]:
        """The value of broker key ``key`` and its source: per-broker dynamic, cluster-default
        dynamic, static, or the built-in default."""
        b = broker if broker is not None else str(self.brokers[0] if self.brokers else 1)
        per = self.dynamic_broker_configs.get(b, {})
        if key in per:
            return per[key], DYNAMIC_BROKER_CONFIG
        dflt = self.dynamic_broker_configs.get("", {})
        if key in dflt:
            return dflt[key], DYNAMIC_DEFAULT_BROKER_CONFIG
        if key in self.static_config and self.static_config[key] != "":
            return self.static_config[key], STATIC_BROKER_CONFIG
        d = BROKER_CONFIG_DEFS.get(key)
        return (d.default if d else None), DEFAULT_CONFIG

    def broker_int(self, key: str) -> int:
        """A broker config value as an int (0 when null)."""
        v, _ = self.broker_value(key)
        return int(v) if v is not None else 0

    def broker_bool(self, key: str) -> bool:
        """A broker config value as a bool."""
        v, _ = self.broker_value(key)
        return str(v).lower() == "true"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict of the evented state (for snapshots and equality checks)."""
        return {
            "topics": {
                name: {
                    "topic_id": t.topic_id,
                    "configs": dict(sorted(t.configs.items())),
                    # a reassigning partition adds [adding, removing] (so snapshots of logs
                    # without reassignments keep their earlier shape)
                    "partitions": [
                        [p.partition, list(p.replicas), list(p.isr), p.leader, p.leader_epoch, p.partition_epoch]
                        + ([list(p.adding), list(p.removing)] if p.reassigning else [])
                        for p in t.partitions
                    ],
                }
                for name, t in sorted(self.topics.items())
            },
            "used_ids": sorted(self.used_ids),
            "dynamic_broker_configs": {k: dict(sorted(v.items())) for k, v in sorted(self.dynamic_broker_configs.items())},
        }

    def load_dict(self, d: Mapping[str, Any]) -> None:
        """Replace the evented state with :meth:`to_dict`'s output (static config is kept)."""
        self.topics = {}
        self.names_by_id = {}
        for name, td in d["topics"].items():
            parts = [
                Partition(p[0], tuple(p[1]), tuple(p[2]), p[3], p[4], p[5], *((tuple(p[6]), tuple(p[7])) if len(p) > 6 else ()))
                for p in td["partitions"]
            ]
            self.topics[name] = Topic(td["topic_id"], name, parts, dict(td["configs"]))
            self.names_by_id[td["topic_id"]] = name
        self.used_ids = set(d["used_ids"])
        self.dynamic_broker_configs = {k: dict(v) for k, v in d["dynamic_broker_configs"].items()}


# --- effective topic configs -----------------------------------------------------------------


@dataclass(frozen=True)
class ConfigEntry:
    """One DescribeConfigs entry: ``name``, ``value`` (``None`` = null), ``source`` (a
    ``*_CONFIG`` source name), ``read_only``, ``is_sensitive``, ``synonyms`` (``(name, value,
    source)`` in precedence order) and ``config_type`` (BOOLEAN, INT, …)."""

    name: str
    value: str | None
    source: str
    read_only: bool = False
    is_sensitive: bool = False
    synonyms: tuple[tuple[str, str | None, str], ...] = ()
    config_type: str = "STRING"
    documentation: str | None = None


def _topic_entry(state: TopicsState, key: str, overrides: Mapping[str, str]) -> ConfigEntry:
    defn = TOPIC_CONFIG_DEFS[key]
    synonyms: list[tuple[str, str | None, str]] = []
    if key in overrides:
        synonyms.append((key, overrides[key], DYNAMIC_TOPIC_CONFIG))
    # broker synonyms, in precedence: per-broker dynamic, default dynamic, static (each key order)
    b = str(state.brokers[0] if state.brokers else 1)
    for source, table in (
        (DYNAMIC_BROKER_CONFIG, state.dynamic_broker_configs.get(b, {})),
        (DYNAMIC_DEFAULT_BROKER_CONFIG, state.dynamic_broker_configs.get("", {})),
        (STATIC_BROKER_CONFIG, state.static_config),
    ):
        for bkey, conv in defn.synonyms:
            if bkey in table and table[bkey] != "":
                synonyms.append((bkey, conv(table[bkey]), source))
    for bkey, conv in defn.synonyms:
        bd = BROKER_CONFIG_DEFS.get(bkey)
        if bd is not None and bd.default is not None:
            synonyms.append((bkey, conv(bd.default), DEFAULT_CONFIG))
            break
    if synonyms:
        value, source = synonyms[0][1], synonyms[0][2]
    else:
        value, source = defn.default, DEFAULT_CONFIG
    return ConfigEntry(key, value, source, False, False, tuple(synonyms), defn.type, defn.doc or None)


def effective_topic_config(state: TopicsState, name: str, overrides: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """Every topic config key → its effective string value for topic ``name`` (or for the given
    ``overrides`` when the topic does not exist yet). Raises ``KeyError`` for an unknown topic."""
    ov = overrides if overrides is not None else state.topics[name].configs
    return {k: _topic_entry(state, k, ov).value for k in TOPIC_CONFIG_DEFS}


# --- commands and results ---------------------------------------------------------------------


@dataclass(frozen=True)
class CreatableTopic:
    """One topic of a CreateTopics request: ``num_partitions``/``replication_factor`` (``-1`` =
    the broker default), manual ``assignments`` (partition → broker ids; then both must be
    ``-1``), ``configs`` (key → value, ``None`` = null, which Kafka refuses)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: tuple[tuple[int, tuple[int, ...]], ...] = ()
    configs: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True)
class CreateTopics:
    """CreateTopics: ``topics``; ``validate_only``; ``topic_ids``: name → fresh id from
    :func:`new_topic_id` (the actor fills it, keeping the decider pure)."""

    topics: tuple[CreatableTopic, ...]
    validate_only: bool = False
    topic_ids: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CreateTopicResult:
    """Per-topic CreateTopics result (``error`` ``"NONE"`` on success) with the created topic's
    id, partition count, replication factor and effective configs."""

    name: str
    error: str = "NONE"
    message: str | None = None
    topic_id: str | None = None
    num_partitions: int = -1
    replication_factor: int = -1
    configs: tuple[ConfigEntry, ...] = ()


@dataclass(frozen=True)
class DeleteTopics:
    """DeleteTopics by ``names`` and/or ``topic_ids`` (canonical hex or Kafka base64)."""

    names: tuple[str, ...] = ()
    topic_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeleteTopicResult:
    """Per-topic DeleteTopics result: ``name``/``topic_id`` as known, ``error`` (``"NONE"``,
    ``"UNKNOWN_TOPIC_OR_PARTITION"``, ``"UNKNOWN_TOPIC_ID"``, ``"INVALID_REQUEST"``)."""

    name: str | None
    topic_id: str | None
    error: str = "NONE"
    message: str | None = None


@dataclass(frozen=True)
class AlterConfigResource:
    """One resource of IncrementalAlterConfigs: ``resource_type`` ``"TOPIC"`` or ``"BROKER"``,
    ``name`` (topic name; broker id or ``""`` for the cluster default), ``ops``: ``(key, op,
    value)`` with op ``SET``/``DELETE``/``APPEND``/``SUBTRACT``."""

    resource_type: str
    name: str
    ops: tuple[tuple[str, str, str | None], ...]


@dataclass(frozen=True)
class IncrementalAlterConfigs:
    """IncrementalAlterConfigs: ``resources``; ``validate_only``."""

    resources: tuple[AlterConfigResource, ...]
    validate_only: bool = False


@dataclass(frozen=True)
class ConfigResult:
    """Per-resource IncrementalAlterConfigs/DescribeConfigs result; ``entries`` for describe."""

    resource_type: str
    name: str
    error: str = "NONE"
    message: str | None = None
    entries: tuple[ConfigEntry, ...] = ()


class _ApiError(Exception):
    def __init__(self, error: str, message: str | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def validate_topic_name(name: str) -> str | None:
    """Kafka's ``Topic.validate``: the error message for an invalid name, else ``None``."""
    reason = None
    if not name:
        reason = "the empty string is not allowed"
    elif name == ".":
        reason = "'.' is not allowed"
    elif name == "..":
        reason = "'..' is not allowed"
    elif len(name) > MAX_NAME_LENGTH:
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    elif any(not (c.isascii() and (c.isalnum() or c in "._-")) for c in name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None if reason is None else f"Topic name is invalid: {reason}"


def _unify(name: str) -> str:
    return name.replace(".", "_")


def _validate_topic_configs(state: TopicsState, configs: Mapping[str, str], existing: Mapping[str, str]) -> None:
    """``LogConfig.validate``: names, values, and the remote-storage rules over the combined
    (broker-derived + topic) configs. Raises :class:`_ApiError` INVALID_CONFIG."""
    for k in configs:
        if k not in TOPIC_CONFIG_DEFS:
            raise _ApiError("INVALID_CONFIG", f"Unknown topic config name: {k}")
    parsed: dict[str, Any] = {}
    combined = effective_topic_config(state, "", dict(configs))
    for k, v in combined.items():
        try:
            parsed[k] = parse_value(TOPIC_CONFIG_DEFS[k], k, v)
        except ValueError as exc:
            raise _ApiError("INVALID_CONFIG", str(exc)) from None
    if parsed["min.compaction.lag.ms"] > parsed["max.compaction.lag.ms"]:
        raise _ApiError(
            "INVALID_CONFIG",
            f"conflict topic config setting min.compaction.lag.ms ({parsed['min.compaction.lag.ms']}) > "
            f"max.compaction.lag.ms ({parsed['max.compaction.lag.ms']})",
        )
    if parsed["remote.storage.enable"]:
        if not state.broker_bool("remote.log.storage.system.enable"):
            raise _ApiError(
                "INVALID_CONFIG", "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
            )
        if "compact" in parsed["cleanup.policy"]:
            raise _ApiError("INVALID_CONFIG", "Remote log storage is unsupported for the compacted topics")
        for local_key, total_key in (("local.retention.bytes", "retention.bytes"), ("local.retention.ms", "retention.ms")):
            problem = remote_retention_problem(local_key, parsed[local_key], total_key, parsed[total_key])
            if problem is not None:
                raise _ApiError("INVALID_CONFIG", problem)
        rb, lrb = parsed["retention.bytes"], parsed["local.retention.bytes"]
        rm, lrm = parsed["retention.ms"], parsed["local.retention.ms"]
        if parsed["remote.log.copy.disable"]:  # LogConfig#validateRetentionConfigsWhenRemoteCopyDisabled
            if lrb != -2 and lrb != rb:
                raise _ApiError(
                    "INVALID_CONFIG",
                    "When `remote.log.copy.disable` is set to true, the `local.retention.bytes` and `retention.bytes` must be set "
                    "to the identical value because there will be no more logs copied to the remote storage.",
                )
            if lrm != -2 and lrm != rm:
                raise _ApiError(
                    "INVALID_CONFIG",
                    "When `remote.log.copy.disable` is set to true, the `local.retention.ms` and `retention.ms` must be set "
                    "to the identical value because there will be no more logs copied to the remote storage.",
                )
    else:
        was = str(existing.get("remote.storage.enable", "false")).lower() == "true"
        if was and not parsed["remote.log.delete.on.disable"]:
            raise _ApiError(
                "INVALID_CONFIG",
                "It is invalid to disable remote storage without deleting remote data. If you want to keep the remote data "
                "and turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. If you want to "
                "disable remote storage and delete all remote data, please set `remote.storage.enable=false,remote.log.delete.on.disable=true`.",
            )


def _assign(state: TopicsState, num_partitions: int, rf: int) -> list[tuple[int, ...]]:
    brokers = sorted(state.brokers)
    n = len(brokers)
    if rf > n:
        raise _ApiError(
            "INVALID_REPLICATION_FACTOR",
            f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be reached "
            f"because only {n} broker(s) are registered.",
        )
    return [tuple(brokers[(p + i) % n] for i in range(rf)) for p in range(num_partitions)]


def _create_one(state: TopicsState, t: CreatableTopic, topic_id: str) -> tuple[TopicCreated, CreateTopicResult]:
    configs = dict(t.configs)
    nulls = [k for k, v in configs.items() if v is None]
    if nulls:
        raise _ApiError("INVALID_CONFIG", "Null value not supported for topic configs: " + ",".join(nulls))
    _validate_topic_configs(state, configs, {})  # type: ignore[arg-type]
    if t.assignments:
        if t.replication_factor != -1:
            raise _ApiError("INVALID_REQUEST", "A manual partition assignment was specified, but replication factor was not set to -1.")
        if t.num_partitions != -1:
            raise _ApiError("INVALID_REQUEST", "A manual partition assignment was specified, but numPartitions was not set to -1.")
        seen: dict[int, tuple[int, ...]] = {}
        for p, replicas in t.assignments:
            if p in seen:
                raise _ApiError("INVALID_REPLICA_ASSIGNMENT", f"Found multiple manual partition assignments for partition {p}")
            if not replicas or len(set(replicas)) != len(replicas):
                raise _ApiError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment includes an empty or duplicated replica list for partition {p}.")
            unknown = [b for b in replicas if b not in state.brokers]
            if unknown:
                raise _ApiError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment includes broker {unknown[0]}, but no such broker is registered.")
            seen[p] = tuple(replicas)
        if sorted(seen) != list(range(len(seen))):
            raise _ApiError("INVALID_REPLICA_ASSIGNMENT", "partitions should be a consecutive 0-based integer sequence")
        rfs = {len(r) for r in seen.values()}
        if len(rfs) != 1:
            raise _ApiError("INVALID_REPLICA_ASSIGNMENT", "All partitions must have the same replication factor.")
        assignment = [seen[p] for p in range(len(seen))]
    else:
        if t.replication_factor < -1 or t.replication_factor == 0:
            raise _ApiError("INVALID_REPLICATION_FACTOR", "Replication factor must be larger than 0, or -1 to use the default value.")
        if t.num_partitions < -1 or t.num_partitions == 0:
            raise _ApiError("INVALID_PARTITIONS", "Number of partitions was set to an invalid non-positive value.")
        n = t.num_partitions if t.num_partitions != -1 else state.broker_int("num.partitions")
        rf = t.replication_factor if t.replication_factor != -1 else state.broker_int("default.replication.factor")
        assignment = _assign(state, n, rf)
    parts = tuple(PartitionSpec(p, r, r, r[0], 0, 0) for p, r in enumerate(assignment))
    ev = TopicCreated(topic_id, t.name, parts, config_values({k: str(v) for k, v in configs.items()}))
    entries = tuple(_topic_entry(state, k, configs) for k in TOPIC_CONFIG_DEFS)  # type: ignore[arg-type]
    return ev, CreateTopicResult(t.name, "NONE", None, topic_id, len(parts), len(assignment[0]), entries)


def decide_create_topics(state: TopicsState, cmd: CreateTopics, now_ms: int = 0) -> tuple[list[Any], list[CreateTopicResult]]:
    """Kafka's ``createTopics``: per-topic validation and results (not all-or-nothing).

    Order: duplicate names in the request (INVALID_REQUEST "Duplicate topic name.", one result
    per name, ``ControllerApis#createTopics``), ``__cluster_metadata`` (INVALID_REQUEST), name
    validity (INVALID_TOPIC_EXCEPTION, incl. ``.``/``_`` collisions), TOPIC_ALREADY_EXISTS,
    configs (INVALID_CONFIG), assignment (INVALID_REQUEST / INVALID_REPLICA_ASSIGNMENT),
    INVALID_REPLICATION_FACTOR, INVALID_PARTITIONS. Returns ``(events, results)``: one
    :class:`TopicCreated` per created topic (none with ``validate_only``). A topic id that is
    missing from ``cmd.topic_ids`` or was ever used gives UNKNOWN_SERVER_ERROR."""
    ids = dict(cmd.topic_ids)
    counts: dict[str, int] = {}
    for t in cmd.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    collisions: dict[str, str] = {_unify(n): n for n in state.topics}
    events: list[Any] = []
    results: list[CreateTopicResult] = []
    taken_ids: set[str] = set(state.used_ids)
    reported: set[str] = set()
    for t in cmd.topics:
        if t.name in reported:
            continue  # ControllerApis#createTopics: one result per duplicated name
        try:
            if counts[t.name] > 1:
                reported.add(t.name)
                raise _ApiError("INVALID_REQUEST", "Duplicate topic name.")
            if t.name == CLUSTER_METADATA_TOPIC_NAME:
                raise _ApiError("INVALID_REQUEST", f"Creation of internal topic {CLUSTER_METADATA_TOPIC_NAME} is prohibited.")
            bad = validate_topic_name(t.name)
            if bad:
                raise _ApiError("INVALID_TOPIC_EXCEPTION", bad)
            if t.name in state.topics:
                raise _ApiError("TOPIC_ALREADY_EXISTS", f"Topic '{t.name}' already exists.")
            other = collisions.get(_unify(t.name))
            if other is not None and other != t.name:
                raise _ApiError("INVALID_TOPIC_EXCEPTION", f"Topic '{t.name}' collides with existing topic: {other}")
            tid = ids.get(t.name)
            if tid is None or tid in taken_ids:
                raise _ApiError("UNKNOWN_SERVER_ERROR", f"no fresh topic id supplied for {t.name}")
            ev, res = _create_one(state, t, tid)
        except _ApiError as e:
            results.append(CreateTopicResult(t.name, e.error, e.message))
            continue
        taken_ids.add(tid)
        collisions[_unify(t.name)] = t.name
        results.append(res)
        if not cmd.validate_only:
            events.append(ev)
    return events, results


def decide_delete_topics(state: TopicsState, cmd: DeleteTopics, now_ms: int = 0) -> tuple[list[Any], list[DeleteTopicResult]]:
    """Kafka's DeleteTopics (``ControllerApis#deleteTopics``): a name given more than once gets
    one INVALID_REQUEST "Duplicate topic name." result, an id given more than once (hex and
    base64 forms are the same id) one "Duplicate topic id.", and a name that maps to an id also
    given one "The provided topic name maps to an ID that was already supplied." (the id gets no
    result of its own, as in Kafka); none of those topics is deleted. Otherwise an unknown name
    is UNKNOWN_TOPIC_OR_PARTITION, an unknown id UNKNOWN_TOPIC_ID. Returns ``(events, results)``:
    one :class:`TopicDeleted` per deleted topic, results in request order (first occurrences;
    Kafka shuffles them)."""
    def canonical(tid: str) -> str:
        if tid in state.names_by_id:
            return tid
        try:
            return topic_id_from_kafka(tid)
        except ValueError:
            try:
                return str(uuid.UUID(tid))
            except ValueError:
                return tid

    name_counts: dict[str, int] = {}
    for n in cmd.names:
        name_counts[n] = name_counts.get(n, 0) + 1
    ids = [canonical(t) for t in cmd.topic_ids]
    id_counts: dict[str, int] = {}
    for i in ids:
        id_counts[i] = id_counts.get(i, 0) + 1
    by_name: dict[str, DeleteTopicResult] = {}
    by_id: dict[str, DeleteTopicResult] = {}
    to_delete: dict[str, Topic] = {}  # topic id -> topic, in the order they are accepted
    for tid in dict.fromkeys(ids):
        if id_counts[tid] > 1:
            by_id[tid] = DeleteTopicResult(None, tid, "INVALID_REQUEST", "Duplicate topic id.")
            continue
        topic = state.topic_by_id(tid)
        if topic is None:
            by_id[tid] = DeleteTopicResult(None, tid, "UNKNOWN_TOPIC_ID", "This server does not host this topic ID.")
        else:
            to_delete[tid] = topic
    for name in dict.fromkeys(cmd.names):
        if name_counts[name] > 1:
            by_name[name] = DeleteTopicResult(name, None, "INVALID_REQUEST", "Duplicate topic name.")
            continue
        topic = state.topics.get(name)
        if topic is None:
            by_name[name] = DeleteTopicResult(name, None, "UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic-partition.")
        elif topic.topic_id in to_delete or id_counts.get(topic.topic_id, 0) > 1:
            to_delete.pop(topic.topic_id, None)
            by_name[name] = DeleteTopicResult(
                name, topic.topic_id, "INVALID_REQUEST", "The provided topic name maps to an ID that was already supplied."
            )
        else:
            to_delete[topic.topic_id] = topic
    events: list[Any] = []
    for tid, topic in to_delete.items():
        events.append(TopicDeleted(topic.topic_id, topic.name))
        result = DeleteTopicResult(topic.name, topic.topic_id)
        if topic.name in name_counts:
            by_name[topic.name] = result
        else:
            by_id[tid] = result
    results = [by_name[n] for n in dict.fromkeys(cmd.names) if n in by_name]
    results += [by_id[i] for i in dict.fromkeys(ids) if i in by_id]
    return events, results


# --- CreatePartitions (API 37, issue 16) --------------------------------------------------------


@dataclass(frozen=True)
class CreatePartitionsTopic:
    """One topic of a CreatePartitions request: ``count`` is the new total partition count;
    ``assignments`` (``None`` = let the controller place them) holds one broker-id list per *new*
    partition, in partition order (Kafka's ``CreatePartitionsAssignment``)."""

    name: str
    count: int
    assignments: tuple[tuple[int, ...], ...] | None = None


@dataclass(frozen=True)
class CreatePartitions:
    """CreatePartitions: ``topics``; ``validate_only`` checks without changing anything."""

    topics: tuple[CreatePartitionsTopic, ...]
    validate_only: bool = False


@dataclass(frozen=True)
class CreatePartitionsResult:
    """Per-topic CreatePartitions result: ``error`` ``"NONE"`` on success, else Kafka's error
    name (UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT,
    INVALID_REQUEST) with its ``message``."""

    name: str
    error: str = "NONE"
    message: str | None = None


#: Kafka's ``QuorumController.MAX_RECORDS_PER_USER_OP`` (= ``MAX_RECORDS_PER_BATCH``): a
#: CreatePartitions request that would write more partition records fails as a whole with
#: POLICY_VIOLATION ("Unable to perform excessively large batch operation.").
MAX_RECORDS_PER_USER_OP = 10_000


class _BatchTooLarge(Exception):
    """Kafka's ``BoundedListTooLongException``: the whole request is refused."""


def _new_partitions(state: TopicsState, t: CreatePartitionsTopic, budget: int = MAX_RECORDS_PER_USER_OP) -> PartitionsCreated:
    """Validate one topic of CreatePartitions and build its event (Kafka's
    ``ReplicationControlManager.createPartitionsOfTopic``). Raises :class:`_ApiError`."""
    topic = state.topics.get(t.name)
    if topic is None:
        raise _ApiError("UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic-partition.")
    current = len(topic.partitions)
    if t.count < current:
        raise _ApiError("INVALID_PARTITIONS", f"The topic {t.name} currently has {current} partition(s); {t.count} would not be an increase.")
    if t.count == current:
        raise _ApiError("INVALID_PARTITIONS", f"Topic already has {current} partition(s).")
    additional = t.count - current
    if additional > budget:
        raise _BatchTooLarge()
    rf = topic.replication_factor
    if t.assignments is not None:
        if len(t.assignments) != additional:
            raise _ApiError(
                "INVALID_REPLICA_ASSIGNMENT",
                f"Attempted to add {additional} additional partition(s), but only {len(t.assignments)} assignment(s) were specified.",
            )
        assignment: list[tuple[int, ...]] = []
        for i, replicas in enumerate(t.assignments):
            p = current + i
            if not replicas or len(set(replicas)) != len(replicas):
                raise _ApiError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment includes an empty or duplicated replica list for partition {p}.")
            unknown = [b for b in replicas if b not in state.brokers]
            if unknown:
                raise _ApiError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment includes broker {unknown[0]}, but no such broker is registered.")
            if len(replicas) != rf:
                raise _ApiError(
                    "INVALID_REPLICA_ASSIGNMENT",
                    f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but this is not "
                    f"consistent with previous partitions, which have {rf} replica(s).",
                )
            assignment.append(tuple(replicas))
    else:
        brokers = sorted(state.brokers)
        if rf > len(brokers):
            raise _ApiError(
                "INVALID_REPLICATION_FACTOR",
                f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be reached "
                f"because only {len(brokers)} broker(s) are registered.",
            )
        assignment = [tuple(brokers[(p + i) % len(brokers)] for i in range(rf)) for p in range(current, t.count)]
    parts = tuple(PartitionSpec(current + i, r, r, r[0], 0, 0) for i, r in enumerate(assignment))
    return PartitionsCreated(topic.topic_id, topic.name, parts)


def decide_create_partitions(
    state: TopicsState, cmd: CreatePartitions, now_ms: int = 0
) -> tuple[list[Any], list[CreatePartitionsResult]]:
    """Kafka's CreatePartitions (``ControllerApis#createPartitions`` +
    ``ReplicationControlManager#createPartitions``): per-topic, not all-or-nothing.

    A name given more than once gets one INVALID_REQUEST "Duplicate topic name." result and is
    not changed; an unknown topic is UNKNOWN_TOPIC_OR_PARTITION; a ``count`` not above the current
    partition count is INVALID_PARTITIONS; manual ``assignments``
    whose number differs from the number of new partitions, with an empty/duplicated replica
    list, an unregistered broker or a replica count unlike the topic's, are
    INVALID_REPLICA_ASSIGNMENT. More than :data:`MAX_RECORDS_PER_USER_OP` new partitions in one
    request refuse every topic with POLICY_VIOLATION and change nothing (Kafka's
    ``BoundedListTooLongException`` → ``EventHandlerExceptionInfo``). Returns ``(events,
    results)``: one :class:`PartitionsCreated` per grown topic (none with ``validate_only``),
    results in request order."""
    counts: dict[str, int] = {}
    for t in cmd.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    events: list[Any] = []
    results: list[CreatePartitionsResult] = []
    reported: set[str] = set()
    written = 0
    for t in cmd.topics:
        if counts[t.name] > 1:
            if t.name not in reported:  # one result per duplicated name
                reported.add(t.name)
                results.append(CreatePartitionsResult(t.name, "INVALID_REQUEST", "Duplicate topic name."))
            continue
        try:
            ev = _new_partitions(state, t, MAX_RECORDS_PER_USER_OP - written)
        except _ApiError as e:
            results.append(CreatePartitionsResult(t.name, e.error, e.message))
            continue
        except _BatchTooLarge:
            msg = "Unable to perform excessively large batch operation."
            return [], [CreatePartitionsResult(n, "POLICY_VIOLATION", msg) for n in dict.fromkeys(x.name for x in cmd.topics)]
        written += len(ev.partitions)
        results.append(CreatePartitionsResult(t.name))
        if not cmd.validate_only:
            events.append(ev)
    return events, results


def _apply_ops(
    current: Mapping[str, str], ops: Sequence[tuple[str, str, str | None]], defs: Mapping[str, ConfigDef]
) -> tuple[dict[str, str], list[str]]:
    keys = [k for k, _, _ in ops]
    if len(keys) != len(set(keys)):
        raise _ApiError("INVALID_REQUEST", "Error due to duplicate config keys")
    nulls = [k for k, op, v in ops if op.upper() != "DELETE" and v is None]
    if nulls:
        raise _ApiError("INVALID_REQUEST", "Null value not supported for : " + ", ".join(nulls))
    new = dict(current)
    for key, op, value in ops:
        op = op.upper()
        if op == "SET":
            new[key] = value  # type: ignore[assignment]
        elif op == "DELETE":
            new.pop(key, None)
        elif op in ("APPEND", "SUBTRACT"):
            d = defs.get(key)
            if d is None or d.type != "LIST":
                raise _ApiError("INVALID_CONFIG", f"Can't {op} to key {key} because its type is not LIST.")
            cur = new.get(key)
            if cur is None:
                cur = d.default or ""
            parts = [p for p in cur.split(",") if p]
            for v in (value or "").split(","):
                if op == "APPEND" and v and v not in parts:
                    parts.append(v)
                elif op == "SUBTRACT" and v in parts:
                    parts.remove(v)
            new[key] = ",".join(parts)
        else:
            raise _ApiError("INVALID_REQUEST", f"Unknown alter config operation {op}")
    deleted = [k for k in current if k not in new]
    return new, deleted


def decide_alter_configs(state: TopicsState, cmd: IncrementalAlterConfigs, now_ms: int = 0) -> tuple[list[Any], list[ConfigResult]]:
    """Kafka's IncrementalAlterConfigs for TOPIC and BROKER resources. Each resource succeeds or
    fails whole. Errors: INVALID_REQUEST (duplicate resource, duplicate keys, a null value for a
    non-DELETE op — ``ConfigAdminManager.preprocess`` —, empty topic name "Default topic
    resources are not allowed.", bad broker id, unknown resource type), INVALID_TOPIC_EXCEPTION,
    UNKNOWN_TOPIC_OR_PARTITION, INVALID_CONFIG (unknown key, bad value, APPEND/SUBTRACT on a
    non-LIST key). Returns ``(events, results)``."""
    events: list[Any] = []
    results: list[ConfigResult] = []
    counts: dict[tuple[str, str], int] = {}
    for r in cmd.resources:
        counts[(r.resource_type.upper(), r.name)] = counts.get((r.resource_type.upper(), r.name), 0) + 1
    for r in cmd.resources:
        rtype = r.resource_type.upper()
        try:
            if counts[(rtype, r.name)] > 1:
                raise _ApiError("INVALID_REQUEST", "Duplicate resource in request.")
            if rtype == "TOPIC":
                if not r.name:
                    raise _ApiError("INVALID_REQUEST", "Default topic resources are not allowed.")
                bad = validate_topic_name(r.name)
                if bad:
                    raise _ApiError("INVALID_TOPIC_EXCEPTION", bad)
                topic = state.topics.get(r.name)
                new, deleted = _apply_ops(topic.configs if topic else {}, r.ops, TOPIC_CONFIG_DEFS)
                _validate_topic_configs(state, new, topic.configs if topic else {})
                if topic is None:
                    raise _ApiError("UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic-partition.")
                changed = {k: v for k, v in new.items() if topic.configs.get(k) != v}
                if (changed or deleted) and not cmd.validate_only:
                    events.append(TopicConfigsAltered(topic.topic_id, topic.name, config_values(changed), tuple(deleted)))
            elif rtype == "BROKER":
                if r.name:
                    try:
                        bid = int(r.name)
                    except ValueError:
                        raise _ApiError("INVALID_REQUEST", "Unable to parse broker name as a base 10 number.") from None
                    if bid < 0:
                        raise _ApiError("INVALID_REQUEST", "Invalid negative broker ID.")
                current = state.dynamic_broker_configs.get(r.name, {})
                new, deleted = _apply_ops(current, r.ops, BROKER_CONFIG_DEFS)
                for k, v in new.items():
                    d = BROKER_CONFIG_DEFS.get(k)
                    if d is None:
                        raise _ApiError("INVALID_CONFIG", f"Unknown broker config name: {k}")
                    try:
                        parse_value(d, k, v)
                    except ValueError as exc:
                        raise _ApiError("INVALID_CONFIG", str(exc)) from None
                # KAFKA-14136: broker records are written even when the value is unchanged
                touched = {k: v for k, v in new.items() if any(op[0] == k for op in r.ops)}
                if (touched or deleted) and not cmd.validate_only:
                    events.append(BrokerConfigsAltered(r.name, config_values(touched), tuple(deleted)))
            else:
                raise _ApiError("INVALID_REQUEST", f"Unknown resource type {r.resource_type}")
        except _ApiError as e:
            results.append(ConfigResult(rtype, r.name, e.error, e.message))
            continue
        results.append(ConfigResult(rtype, r.name))
    return events, results


def describe_configs(
    state: TopicsState, resources: Sequence[tuple[str, str, Sequence[str] | None]], include_synonyms: bool = False
) -> list[ConfigResult]:
    """DescribeConfigs for ``(resource_type, name, keys_or_None)`` resources: every key (or the
    named ones) with value, source and, if asked, synonyms. UNKNOWN_TOPIC_OR_PARTITION for a
    missing topic, INVALID_REQUEST for an unknown resource type or a bad broker name; an unknown
    key is simply absent (as in Kafka)."""
    out: list[ConfigResult] = []
    for rtype, name, keys in resources:
        rtype = rtype.upper()
        if rtype == "TOPIC":
            topic = state.topics.get(name)
            if topic is None:
                out.append(ConfigResult(rtype, name, "UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic-partition."))
                continue
            wanted = [k for k in (keys or TOPIC_CONFIG_DEFS) if k in TOPIC_CONFIG_DEFS]
            entries = []
            for k in wanted:
                e = _topic_entry(state, k, topic.configs)
                if not include_synonyms:
                    e = ConfigEntry(e.name, e.value, e.source, e.read_only, e.is_sensitive, (), e.config_type, e.documentation)
                entries.append(e)
            out.append(ConfigResult(rtype, name, entries=tuple(entries)))
        elif rtype == "BROKER":
            if name and not name.isdigit():
                out.append(ConfigResult(rtype, name, "INVALID_REQUEST", "Unable to parse broker name as a base 10 number."))
                continue
            wanted = [k for k in (keys or BROKER_CONFIG_DEFS) if k in BROKER_CONFIG_DEFS]
            entries = []
            for k in wanted:
                syn: list[tuple[str, str | None, str]] = []
                if name:
                    per = state.dynamic_broker_configs.get(name, {})
                    if k in per:
                        syn.append((k, per[k], DYNAMIC_BROKER_CONFIG))
                dflt = state.dynamic_broker_configs.get("", {})
                if k in dflt:
                    syn.append((k, dflt[k], DYNAMIC_DEFAULT_BROKER_CONFIG))
                if name and k in state.static_config and state.static_config[k] != "":
                    syn.append((k, state.static_config[k], STATIC_BROKER_CONFIG))
                d = BROKER_CONFIG_DEFS[k]
                syn.append((k, d.default, DEFAULT_CONFIG))
                value, source = syn[0][1], syn[0][2]
                entries.append(ConfigEntry(k, value, source, False, False, tuple(syn) if include_synonyms else (), d.type))
            out.append(ConfigResult(rtype, name, entries=tuple(entries)))
        else:
            out.append(ConfigResult(rtype, name, "INVALID_REQUEST", f"Unknown resource type {rtype}"))
    return out


# --- evolve -----------------------------------------------------------------------------------


def evolve(state: TopicsState, event: Any) -> TopicsState:
    """Apply a topic/config/partition event to ``state`` in place and return it. Events of other
    domains are ignored."""
    if isinstance(event, TopicCreated):
        parts = [Partition(p.partition, tuple(p.replicas), tuple(p.isr), p.leader, p.leader_epoch, p.partition_epoch) for p in event.partitions]
        state.topics[event.name] = Topic(event.topic_id, event.name, parts, config_map(event.configs))
        state.names_by_id[event.topic_id] = event.name
        state.used_ids.add(event.topic_id)
    elif isinstance(event, TopicDeleted):
        state.topics.pop(event.name, None)
        state.names_by_id.pop(event.topic_id, None)
    elif isinstance(event, TopicConfigsAltered):
        t = state.topics[event.name]
        t.configs.update(config_map(event.set))
        for k in event.deleted:
            t.configs.pop(k, None)
    elif isinstance(event, BrokerConfigsAltered):
        cfg = state.dynamic_broker_configs.setdefault(event.broker, {})
        cfg.update(config_map(event.set))
        for k in event.deleted:
            cfg.pop(k, None)
        if not cfg:
            del state.dynamic_broker_configs[event.broker]
    elif isinstance(event, PartitionsCreated):
        t = state.topic_by_id(event.topic_id)
        if t is not None:
            t.partitions.extend(
                Partition(p.partition, tuple(p.replicas), tuple(p.isr), p.leader, p.leader_epoch, p.partition_epoch) for p in event.partitions
            )
    elif isinstance(event, PartitionChanged):
        t = state.topic_by_id(event.topic_id)
        if t is not None:
            p = t.partitions[event.partition]
            p.leader = event.leader
            p.isr = tuple(event.isr)
            p.leader_epoch = event.leader_epoch
            p.partition_epoch = event.partition_epoch
            if event.replicas is not None:  # None: the assignment did not change
                p.replicas = tuple(event.replicas)
            if event.adding_replicas is not None:
                p.adding = tuple(event.adding_replicas)
            if event.removing_replicas is not None:
                p.removing = tuple(event.removing_replicas)
    return state
