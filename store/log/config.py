"""Topic configs, defined once (Kafka ``LogConfig``/``TopicConfig``/``ServerTopicConfigSynonyms``,
storage/src/main/java/org/apache/kafka/storage/internals/log/LogConfig.java, and ``ConfigDef`` for types
and messages): :data:`TOPIC_CONFIG_DEFS` holds every topic config key with its type, default, bounds and
broker synonyms. The controller validates and describes topic configs with it
(``actors/controller/topics.py``); :class:`LogConfig` takes the keys a partition log reads from it,
with the same defaults, bounds and error messages, and the remote-storage retention checks
(:func:`remote_retention_problem`) are shared the same way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from config import ConfigError

__all__ = [
    "ConfigDef",
    "INT_MAX",
    "LONG_MAX",
    "LogConfig",
    "RECORD_OVERHEAD_V0",
    "TOPIC_CONFIG_DEFS",
    "WEEK_MS",
    "at_least",
    "between",
    "hours_to_ms",
    "minutes_to_ms",
    "one_of",
    "parse_value",
    "remote_retention_problem",
    "same",
    "valid_list",
]

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
#: ``LegacyRecord.RECORD_OVERHEAD_V0``: the minimum ``segment.bytes``.
RECORD_OVERHEAD_V0 = 14
#: 7 days in ms, string form: the default ``retention.ms`` and ``segment.ms``.
WEEK_MS = str(7 * 24 * 3600 * 1000)


@dataclass(frozen=True)
class ConfigDef:
    """A config key's ``type`` (BOOLEAN, INT, LONG, DOUBLE, STRING, LIST), ``default`` (string
    form, ``None`` = null), ``validator(value) -> error message | None`` on the parsed value and
    its broker ``synonyms`` in precedence order, each ``(broker_key, to_topic_value)`` (Kafka
    ``ConfigDef.ConfigKey``; synonyms from ``ServerTopicConfigSynonyms``)."""

    type: str
    default: str | None
    validator: Callable[[Any], str | None] | None = None
    synonyms: tuple[tuple[str, Callable[[str], str]], ...] = ()
    doc: str = ""


def at_least(n: int | float) -> Callable[[Any], str | None]:
    """A validator: ``None`` when the parsed value is ``>= n``, else Kafka's message
    (``ConfigDef.Range.atLeast``)."""
    return lambda v: None if v >= n else f"Value must be at least {n}"


def between(lo: float, hi: float) -> Callable[[Any], str | None]:
    """A validator: ``None`` when ``lo <= value <= hi``, else Kafka's message (``ConfigDef.Range.between``)."""
    return lambda v: None if lo <= v <= hi else f"Value must be no less than {lo} and no more than {hi}"


def valid_list(*allowed: str) -> Callable[[Any], str | None]:
    """A validator for LIST values: ``None`` when every item is one of ``allowed``, else Kafka's
    message (``ConfigDef.ValidList``)."""

    def check(v: list[str]) -> str | None:
        """The validation error message for list ``v``, or ``None``."""
        for item in v:
            if item not in allowed:
                return f"Invalid value {item} for configuration: String must be one of: {', '.join(allowed)}"
        return None

    return check


def one_of(*allowed: str) -> Callable[[Any], str | None]:
    """A validator for STRING values: ``None`` when the value is one of ``allowed``, else Kafka's
    message (``ConfigDef.ValidString``)."""
    return lambda v: None if v in allowed else f"String must be one of: {', '.join(allowed)}"


def same(v: str) -> str:
    """Synonym converter: the broker value as is."""
    return v


def minutes_to_ms(v: str) -> str:
    """Synonym converter: a broker value in minutes (``log.retention.minutes``) as ms."""
    return str(int(v) * 60_000)


def hours_to_ms(v: str) -> str:
    """Synonym converter: a broker value in hours (``log.retention.hours``, ``log.roll.hours``) as ms."""
    return str(int(v) * 3_600_000)


#: Topic config keys (``LogConfig``'s definitions) plus the Shoal extension.
TOPIC_CONFIG_DEFS: dict[str, ConfigDef] = {
    "cleanup.policy": ConfigDef("LIST", "delete", valid_list("compact", "delete"), (("log.cleanup.policy", same),)),
    "compression.type": ConfigDef(
        "STRING", "producer", one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), (("compression.type", same),)
    ),
    "delete.retention.ms": ConfigDef("LONG", "86400000", at_least(0), (("log.cleaner.delete.retention.ms", same),)),
    "file.delete.delay.ms": ConfigDef("LONG", "60000", at_least(0), (("log.segment.delete.delay.ms", same),)),
    "flush.messages": ConfigDef("LONG", str(LONG_MAX), at_least(1), (("log.flush.interval.messages", same),)),
    "flush.ms": ConfigDef("LONG", str(LONG_MAX), at_least(0), (("log.flush.interval.ms", same),)),
    "index.interval.bytes": ConfigDef("INT", "4096", at_least(0), (("log.index.interval.bytes", same),)),
    "local.retention.bytes": ConfigDef("LONG", "-2", at_least(-2), (("log.local.retention.bytes", same),)),
    "local.retention.ms": ConfigDef("LONG", "-2", at_least(-2), (("log.local.retention.ms", same),)),
    "max.compaction.lag.ms": ConfigDef("LONG", str(LONG_MAX), at_least(1), (("log.cleaner.max.compaction.lag.ms", same),)),
    "max.message.bytes": ConfigDef("INT", "1048588", at_least(0), (("message.max.bytes", same),)),
    "message.timestamp.type": ConfigDef("STRING", "CreateTime", one_of("CreateTime", "LogAppendTime"), (("log.message.timestamp.type", same),)),
    "min.cleanable.dirty.ratio": ConfigDef("DOUBLE", "0.5", between(0, 1), (("log.cleaner.min.cleanable.ratio", same),)),
    "min.compaction.lag.ms": ConfigDef("LONG", "0", at_least(0), (("log.cleaner.min.compaction.lag.ms", same),)),
    "min.insync.replicas": ConfigDef("INT", "1", at_least(1), (("min.insync.replicas", same),)),
    "preallocate": ConfigDef("BOOLEAN", "false", None, (("log.preallocate", same),)),
    "remote.log.copy.disable": ConfigDef("BOOLEAN", "false"),
    "remote.log.delete.on.disable": ConfigDef("BOOLEAN", "false"),
    "remote.storage.enable": ConfigDef("BOOLEAN", "false"),
    "retention.bytes": ConfigDef("LONG", "-1", None, (("log.retention.bytes", same),)),
    "retention.ms": ConfigDef(
        "LONG",
        WEEK_MS,
        at_least(-1),
        (("log.retention.ms", same), ("log.retention.minutes", minutes_to_ms), ("log.retention.hours", hours_to_ms)),
    ),
    "segment.bytes": ConfigDef("INT", str(1024**3), at_least(RECORD_OVERHEAD_V0), (("log.segment.bytes", same),)),
    "segment.index.bytes": ConfigDef("INT", str(10 * 1024 * 1024), at_least(4), (("log.index.size.max.bytes", same),)),
    "segment.jitter.ms": ConfigDef("LONG", "0", at_least(0), (("log.roll.jitter.ms", same), ("log.roll.jitter.hours", hours_to_ms))),
    "segment.ms": ConfigDef("LONG", WEEK_MS, at_least(1), (("log.roll.ms", same), ("log.roll.hours", hours_to_ms))),
    "unclean.leader.election.enable": ConfigDef("BOOLEAN", "false", None, (("unclean.leader.election.enable", same),)),
    # Shoal extension (see the module docstring): off by default because Kafka does not do this.
    "share.groups.hold.retention": ConfigDef(
        "BOOLEAN", "false", None, (), "Shoal: share groups hold the topic's retention back until acknowledged."
    ),
}


def parse_value(defn: ConfigDef, key: str, value: str | None) -> Any:
    """Parse a string config value by its type (``ConfigDef.parseType``): returns a bool, int,
    float, list of str or str (``None`` for ``None``); raises ``ValueError`` with Kafka's wording
    when it does not parse, is outside the INT/LONG range, or fails the validator."""
    if value is None:
        return None
    v = value.strip()
    t = defn.type
    try:
        if t == "BOOLEAN":
            low = v.lower()
            if low not in ("true", "false"):
                raise ValueError
            parsed: Any = low == "true"
        elif t == "INT":
            parsed = int(v)
            if not -(2**31) <= parsed <= INT_MAX:
                raise ValueError
        elif t == "LONG":
            parsed = int(v)
            if not -(2**63) <= parsed <= LONG_MAX:
                raise ValueError
        elif t == "DOUBLE":
            parsed = float(v)
        elif t == "LIST":
            parsed = [p.strip() for p in v.split(",") if p.strip()]
        else:
            parsed = v
    except ValueError:
        kind = {"BOOLEAN": "Expected value to be either true or false", "DOUBLE": "Not a number of type DOUBLE"}.get(
            t, f"Not a number of type {t}"
        )
        raise ValueError(f"Invalid value {value} for configuration {key}: {kind}") from None
    if defn.validator is not None:
        problem = defn.validator(parsed)
        if problem:
            raise ValueError(f"Invalid value {value} for configuration {key}: {problem}")
    return parsed


def remote_retention_problem(local_key: str, local: int, total_key: str, total: int) -> str | None:
    """Kafka ``LogConfig#validateRemoteStorageRetentionSize``/``…Time`` (checked only with
    ``remote.storage.enable=true``): with a finite ``total`` (``retention.bytes``/``retention.ms``,
    ``> -1``) and a ``local`` (``local.retention.*``) other than -2, ``local`` must be neither -1
    (unlimited) nor larger than ``total``. Returns Kafka's error message, or ``None`` when valid.
    Values in bytes or ms, as the keys say."""
    if total <= -1 or local == -2:
        return None
    if local == -1:
        return f"Invalid value -1 for configuration {local_key}: Value must not be -1 as {total_key} value is set as {total}."
    if local > total:
        return f"Invalid value {local} for configuration {local_key}: Value must not be more than {total_key} property value: {total}"
    return None


#: The ``LogConfig`` fields and the topic config key each one reads, in validation order.
_LOG_CONFIG_KEYS: tuple[tuple[str, str], ...] = (
    ("message_timestamp_type", "message.timestamp.type"),
    ("remote_storage_enable", "remote.storage.enable"),
    ("remote_log_copy_disable", "remote.log.copy.disable"),
    ("segment_bytes", "segment.bytes"),
    ("segment_ms", "segment.ms"),
    ("segment_jitter_ms", "segment.jitter.ms"),
    ("index_interval_bytes", "index.interval.bytes"),
    ("segment_index_bytes", "segment.index.bytes"),
    ("flush_messages", "flush.messages"),
    ("flush_ms", "flush.ms"),
    ("retention_ms", "retention.ms"),
    ("retention_bytes", "retention.bytes"),
    ("local_retention_ms", "local.retention.ms"),
    ("local_retention_bytes", "local.retention.bytes"),
    ("max_message_bytes", "max.message.bytes"),
)


def _default(key: str) -> Any:
    """The parsed default of topic config ``key`` (from :data:`TOPIC_CONFIG_DEFS`)."""
    defn = TOPIC_CONFIG_DEFS[key]
    return parse_value(defn, key, defn.default)


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Topic-level log configs with Kafka's keys, defaults and lower bounds (Kafka ``LogConfig``),
    all taken from :data:`TOPIC_CONFIG_DEFS`.

    Times in ms, sizes in bytes. ``local_retention_ms``/``local_retention_bytes`` of -2 mean
    "use ``retention.ms``/``retention.bytes``" (``DEFAULT_LOCAL_RETENTION_*``); -1 means unlimited."""

    segment_bytes: int = _default("segment.bytes")  # >= 14
    segment_ms: int = _default("segment.ms")  # >= 1
    segment_jitter_ms: int = _default("segment.jitter.ms")  # >= 0 (applied as given; no random jitter)
    index_interval_bytes: int = _default("index.interval.bytes")  # >= 0
    segment_index_bytes: int = _default("segment.index.bytes")  # >= 4: an index holds this/8 entries
    flush_messages: int = _default("flush.messages")  # >= 1
    flush_ms: int = _default("flush.ms")  # >= 0
    retention_ms: int = _default("retention.ms")  # >= -1
    retention_bytes: int = _default("retention.bytes")
    local_retention_ms: int = _default("local.retention.ms")  # >= -2
    local_retention_bytes: int = _default("local.retention.bytes")  # >= -2
    remote_storage_enable: bool = _default("remote.storage.enable")
    remote_log_copy_disable: bool = _default("remote.log.copy.disable")  # KIP-950: remote tier read-only
    max_message_bytes: int = _default("max.message.bytes")  # >= 0
    message_timestamp_type: str = _default("message.timestamp.type")  # CreateTime or LogAppendTime

    @classmethod
    def from_properties(cls, props: Mapping[str, str] | None = None) -> "LogConfig":
        """Build from Kafka config keys (string values, e.g. a topic's configs merged over the
        broker's ``log.*`` defaults); an absent, ``None`` or empty value takes the default.
        Unknown keys are ignored. Raises :class:`config.ConfigError` with the controller's
        (Kafka ``ConfigDef``'s) message for a value of the wrong type, out of range or below
        Kafka's minimum (:func:`parse_value`), and, with ``remote.storage.enable=true`` only,
        for ``local.retention.*`` of -1 or larger than a finite ``retention.*``
        (:func:`remote_retention_problem`)."""
        p = props or {}
        values: dict[str, Any] = {}
        for attr, key in _LOG_CONFIG_KEYS:
            raw = p.get(key)
            if raw is None or raw == "":
                continue
            try:
                values[attr] = parse_value(TOPIC_CONFIG_DEFS[key], key, str(raw))
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        cfg = cls(**values)
        if cfg.remote_storage_enable:
            for local_key, local, total_key, total in (
                ("local.retention.ms", cfg.local_retention_ms, "retention.ms", cfg.retention_ms),
                ("local.retention.bytes", cfg.local_retention_bytes, "retention.bytes", cfg.retention_bytes),
            ):
                problem = remote_retention_problem(local_key, local, total_key, total)
                if problem is not None:
                    raise ConfigError(problem)
        return cfg

    @property
    def tiering(self) -> bool:
        """``remote.storage.enable`` and not ``remote.log.copy.disable``: segments are copied and
        the local log follows ``local.retention.*`` (Kafka ``remoteLogEnabledAndRemoteCopyEnabled``)."""
        return self.remote_storage_enable and not self.remote_log_copy_disable

    @property
    def local_retention_ms_effective(self) -> int:
        """``local.retention.ms``, with -2 resolved to ``retention.ms`` (Kafka ``LogConfig#localRetentionMs``)."""
        return self.retention_ms if self.local_retention_ms == -2 else self.local_retention_ms

    @property
    def local_retention_bytes_effective(self) -> int:
        """``local.retention.bytes``, with -2 resolved to ``retention.bytes``."""
        return self.retention_bytes if self.local_retention_bytes == -2 else self.local_retention_bytes

