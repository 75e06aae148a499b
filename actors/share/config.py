"""Share-group configuration: Kafka's broker keys (``group.share.*``) and the dynamic group configs.

Broker level (read once, from the broker's properties):

- ``ShareGroupConfig`` (``group-coordinator/.../modern/share/ShareGroupConfig.java``):
  ``group.share.delivery.count.limit``, ``group.share.record.lock.duration.ms`` and its min/max,
  ``group.share.partition.max.record.locks``, ``share.fetch.max.fetch.records`` …
- ``GroupCoordinatorConfig`` (``.../group/GroupCoordinatorConfig.java``): the share-group session
  timeout and heartbeat interval with their min/max, ``group.share.max.size``.

Group level (``AlterConfigs``/``IncrementalAlterConfigs`` on a GROUP resource), ``GroupConfig.java``:
``share.session.timeout.ms``, ``share.heartbeat.interval.ms``, ``share.record.lock.duration.ms``,
``share.auto.offset.reset`` (``earliest`` / ``latest`` / ``by_duration:<ISO-8601 duration>``,
``ShareGroupAutoOffsetResetStrategy``) and ``share.isolation.level``. Values are validated first
by their own type/range (``ConfigDef``), then against the broker bounds
(``GroupConfig.validateValues``); a failure is Kafka's ``InvalidConfigurationException`` →
INVALID_CONFIG (40) with Kafka's message.

Defaults and ranges follow Kafka 4.x where they differ from the late-2024 reference:
``group.share.partition.max.record.locks`` is 2000 (was 200), ``group.share.max.size`` is in
[1, 1000] (was [10, 1000]), ``group.share.max.share.sessions`` (2000) exists and
``share.auto.offset.reset`` exists (default ``latest``). ``group.share.max.groups`` (gone in 4.1,
where Kafka had only sized its share-session cache with it) is enforced by Shoal: see
:mod:`actors.share.limits`. Its default stays Kafka's 10, but its upper bound is Shoal's 10,000
where Kafka's was 100: Kafka's bound sized an in-memory session cache (``max.groups × max.size``)
that Shoal does not have; in Shoal it only caps how many share groups may exist, and deployments (and issue 14's measurement of 200 active groups) need more than 100. The key
stays a short, as in Kafka.

Shoal's own keys: ``shoal.share.group.passivate.ms`` (idle time before a ShareGroupActor saves a
snapshot and exits), ``shoal.share.group.snapshot.every.events`` (snapshot cadence) and
``shoal.share.group.append.path`` (``auto``/``direct``/``journal``: whether a group's actor commits its
decisions itself or through a group-committing journal, :meth:`BrokerShareConfig.appends_through_journal`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

__all__ = [
    "BROKER_SHARE_CONFIG_DEFS",
    "GROUP_CONFIG_DEFS",
    "AutoOffsetReset",
    "BrokerShareConfig",
    "ConfigDef",
    "GroupShareConfig",
    "InvalidConfig",
    "parse_auto_offset_reset",
    "effective_group_configs",
    "parse_iso8601_duration_ms",
    "validate_group_configs",
]

INT_MAX = 2**31 - 1


class InvalidConfig(ValueError):
    """A config value is invalid (Kafka's ``InvalidConfigurationException`` / ``ConfigException``).

    ``error`` is the Kafka error name to put on the wire (``"INVALID_CONFIG"``, code 40);
    ``key`` the offending config key; the message is Kafka's wording."""

    error = "INVALID_CONFIG"

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class ConfigDef:
    """One config key: ``type`` is ``"int"``, ``"short"``, ``"bool"``, ``"string"`` or ``"long"``;
    ``low``/``high`` the inclusive range (``None`` = unbounded), like ``ConfigDef.Range``."""

    key: str
    type: str
    default: Any
    low: int | None = None
    high: int | None = None
    choices: tuple[str, ...] = ()

    def parse(self, raw: Any) -> Any:
        """Parse ``raw`` (str or typed) into this key's type and check its range.
        Raises :class:`InvalidConfig` with Kafka's ``ConfigException`` wording."""
        if self.type in ("int", "short", "long"):
            try:
                value = int(str(raw).strip()) if not isinstance(raw, bool) else None
            except ValueError:
                value = None
            if value is None:
                raise InvalidConfig(self.key, f"Invalid value {raw} for configuration {self.key}: Not a number of type {self.type.upper()}")
            bits = {"int": 31, "short": 15, "long": 63}[self.type]
            if not -(2**bits) <= value < 2**bits:
                raise InvalidConfig(self.key, f"Invalid value {raw} for configuration {self.key}: Not a number of type {self.type.upper()}")
            if self.low is not None and self.high is not None and not self.low <= value <= self.high:
                raise InvalidConfig(self.key, f"Invalid value {value} for configuration {self.key}: Value must be in the range [{self.low}, {self.high}]")
            if self.low is not None and self.high is None and value < self.low:
                raise InvalidConfig(self.key, f"Invalid value {value} for configuration {self.key}: Value must be at least {self.low}")
            return value
        if self.type == "bool":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text not in ("true", "false"):
                raise InvalidConfig(self.key, f"Invalid value {raw} for configuration {self.key}: Expected value to be either true or false")
            return text == "true"
        text = str(raw).strip()
        if self.choices and text not in self.choices:
            raise InvalidConfig(self.key, f"Invalid value {text} for configuration {self.key}: String must be one of: {', '.join(self.choices)}")
        return text


#: values of ``shoal.share.group.append.path`` (:meth:`BrokerShareConfig.appends_through_journal`)
APPEND_PATHS = ("auto", "direct", "journal")


def _d(key: str, type_: str, default: Any, low: int | None = None, high: int | None = None, choices: tuple[str, ...] = ()) -> ConfigDef:
    return ConfigDef(key, type_, default, low, high, choices)


#: Broker keys (key → definition), Kafka's defaults and ranges (ShareGroupConfig, GroupCoordinatorConfig,
#: Kafka 4.2) plus Shoal's actor keys.
BROKER_SHARE_CONFIG_DEFS: dict[str, ConfigDef] = {
    d.key: d
    for d in (
        _d("group.share.enable", "bool", False),
        _d("group.share.delivery.count.limit", "int", 5, 2, 10),
        _d("group.share.record.lock.duration.ms", "int", 30000, 1000, 3600000),
        _d("group.share.min.record.lock.duration.ms", "int", 15000, 1000, 30000),
        _d("group.share.max.record.lock.duration.ms", "int", 60000, 30000, 3600000),
        _d("group.share.partition.max.record.locks", "int", 2000, 100, 10000),
        _d("group.share.max.groups", "short", 10, 1, 10000),
        _d("group.share.max.share.sessions", "int", 2000, 1, None),
        _d("share.fetch.purgatory.purge.interval.requests", "int", 1000),
        _d("share.fetch.max.fetch.records", "int", INT_MAX),
        _d("group.share.session.timeout.ms", "int", 45000, 1, None),
        _d("group.share.min.session.timeout.ms", "int", 45000, 1, None),
        _d("group.share.max.session.timeout.ms", "int", 60000, 1, None),
        _d("group.share.heartbeat.interval.ms", "int", 5000, 1, None),
        _d("group.share.min.heartbeat.interval.ms", "int", 5000, 1, None),
        _d("group.share.max.heartbeat.interval.ms", "int", 15000, 1, None),
        _d("group.share.max.size", "int", 200, 1, 1000),
        _d("group.share.assignors", "string", "simple"),
        _d("shoal.share.group.passivate.ms", "long", 120000, 0, None),
        _d("shoal.share.group.snapshot.every.events", "int", 1000, 1, None),
        _d("shoal.share.group.append.path", "string", "auto", choices=APPEND_PATHS),
    )
}


@dataclass(frozen=True, slots=True)
class BrokerShareConfig:
    """The parsed broker-level share-group configuration (all durations in ms).

    Build it with :meth:`from_config`; the field defaults are Kafka 4.2's."""

    enable: bool = False
    delivery_count_limit: int = 5
    record_lock_duration_ms: int = 30000
    min_record_lock_duration_ms: int = 15000
    max_record_lock_duration_ms: int = 60000
    partition_max_record_locks: int = 2000
    max_groups: int = 10
    max_share_sessions: int = 2000
    max_fetch_records: int = INT_MAX
    session_timeout_ms: int = 45000
    min_session_timeout_ms: int = 45000
    max_session_timeout_ms: int = 60000
    heartbeat_interval_ms: int = 5000
    min_heartbeat_interval_ms: int = 5000
    max_heartbeat_interval_ms: int = 15000
    max_size: int = 200
    passivate_ms: int = 120000
    snapshot_every_events: int = 1000
    append_path: str = "auto"

    _FIELDS = {
        "group.share.enable": "enable",
        "group.share.delivery.count.limit": "delivery_count_limit",
        "group.share.record.lock.duration.ms": "record_lock_duration_ms",
        "group.share.min.record.lock.duration.ms": "min_record_lock_duration_ms",
        "group.share.max.record.lock.duration.ms": "max_record_lock_duration_ms",
        "group.share.partition.max.record.locks": "partition_max_record_locks",
        "group.share.max.groups": "max_groups",
        "group.share.max.share.sessions": "max_share_sessions",
        "share.fetch.max.fetch.records": "max_fetch_records",
        "group.share.session.timeout.ms": "session_timeout_ms",
        "group.share.min.session.timeout.ms": "min_session_timeout_ms",
        "group.share.max.session.timeout.ms": "max_session_timeout_ms",
        "group.share.heartbeat.interval.ms": "heartbeat_interval_ms",
        "group.share.min.heartbeat.interval.ms": "min_heartbeat_interval_ms",
        "group.share.max.heartbeat.interval.ms": "max_heartbeat_interval_ms",
        "group.share.max.size": "max_size",
        "shoal.share.group.passivate.ms": "passivate_ms",
        "shoal.share.group.snapshot.every.events": "snapshot_every_events",
        "shoal.share.group.append.path": "append_path",
    }

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *, strict_ranges: bool = True) -> "BrokerShareConfig":
        """Parse the share keys of a broker config (other keys are ignored; missing keys take
        Kafka's defaults). ``strict_ranges=False`` skips the per-key ranges (Kafka's tests use
        out-of-range values such as a 100 ms lock) but still checks types and cross-key rules.

        Raises :class:`InvalidConfig` for a bad value or a violated cross-key rule, in Kafka's
        words: ``ShareGroupConfig.validate`` (min ≤ lock ≤ max) and ``GroupCoordinatorConfig``'s
        ``requireNonNull/require`` checks (min ≤ default ≤ max for session and heartbeat, heartbeat
        < session timeout)."""
        values: dict[str, Any] = {}
        for key, attr in cls._FIELDS.items():
            d = BROKER_SHARE_CONFIG_DEFS[key]
            if key in config and config[key] not in (None, ""):
                values[attr] = d.parse(config[key]) if strict_ranges else ConfigDef(d.key, d.type, d.default).parse(config[key])
        cfg = cls(**values)
        cfg._validate()
        return cfg

    def appends_through_journal(self, event_log_url: str) -> bool:
        """Whether a ShareGroupActor appends through a journal (``True``) or commits its decisions
        itself (``False``), by ``shoal.share.group.append.path``: ``journal``, ``direct``, or
        ``auto`` (the default: the journal, on SQLite and PostgreSQL alike).

        In the daemon the groups run in the listener process, one decision at a time
        (:mod:`actors.share.host`). Through the journal — a :class:`actors.journal.JournalWriter`
        thread — the appends are pipelined and group-committed: the groups go on deciding while a
        commit runs, and the decisions made meanwhile share the next transaction (one fsync for
        many requests). Direct: each decision is one commit by the thread that decided it, and the
        groups wait for it (no batching). ``event_log_url`` is kept for callers
        that choose by database; both paths work on both."""
        if self.append_path == "auto":
            return True
        return self.append_path == "journal"

    def with_overrides(self, **kwargs: Any) -> "BrokerShareConfig":
        """A copy with some fields replaced (tests), validated the same way."""
        cfg = replace(self, **kwargs)
        cfg._validate()
        return cfg

    def _validate(self) -> None:
        def require(cond: bool, key: str, msg: str) -> None:
            if not cond:
                raise InvalidConfig(key, msg)

        require(self.record_lock_duration_ms >= self.min_record_lock_duration_ms, "group.share.record.lock.duration.ms",
                "group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms")
        require(self.max_record_lock_duration_ms >= self.record_lock_duration_ms, "group.share.max.record.lock.duration.ms",
                "group.share.max.record.lock.duration.ms must be greater than or equal to group.share.record.lock.duration.ms")
        require(self.max_session_timeout_ms >= self.min_session_timeout_ms, "group.share.max.session.timeout.ms",
                "group.share.max.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms")
        require(self.session_timeout_ms >= self.min_session_timeout_ms, "group.share.session.timeout.ms",
                "group.share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms")
        require(self.session_timeout_ms <= self.max_session_timeout_ms, "group.share.session.timeout.ms",
                "group.share.session.timeout.ms must be less than or equal to group.share.max.session.timeout.ms")
        require(self.max_heartbeat_interval_ms >= self.min_heartbeat_interval_ms, "group.share.max.heartbeat.interval.ms",
                "group.share.max.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat.interval.ms")
        require(self.heartbeat_interval_ms >= self.min_heartbeat_interval_ms, "group.share.heartbeat.interval.ms",
                "group.share.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat.interval.ms")
        require(self.heartbeat_interval_ms <= self.max_heartbeat_interval_ms, "group.share.heartbeat.interval.ms",
                "group.share.heartbeat.interval.ms must be less than or equal to group.share.max.heartbeat.interval.ms")
        require(self.heartbeat_interval_ms < self.session_timeout_ms, "group.share.heartbeat.interval.ms",
                "group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms")


# --------------------------------------------------------------------------------------------
# share.auto.offset.reset (ShareGroupAutoOffsetResetStrategy, KIP-932 / KAFKA-18014)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class AutoOffsetReset:
    """A parsed ``share.auto.offset.reset``: ``strategy`` is ``"earliest"``, ``"latest"`` or
    ``"by_duration"``; ``duration_ms`` is the look-back for ``by_duration`` (else 0).

    :meth:`timestamp_ms` gives the ListOffsets timestamp to resolve a new share-partition's start
    offset: -2 (EARLIEST_TIMESTAMP), -1 (LATEST_TIMESTAMP) or ``now_ms - duration_ms``."""

    strategy: str = "latest"
    duration_ms: int = 0

    def timestamp_ms(self, now_ms: int) -> int:
        """The ListOffsets timestamp for this strategy at ``now_ms`` (see class doc)."""
        if self.strategy == "earliest":
            return -2
        if self.strategy == "latest":
            return -1
        return now_ms - self.duration_ms

    def __str__(self) -> str:
        if self.strategy == "by_duration":
            return f"by_duration:PT{self.duration_ms / 1000:g}S"
        return self.strategy


_ISO_DURATION = re.compile(
    r"^P(?:(?P<d>\d+(?:\.\d+)?)D)?(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$",
    re.IGNORECASE,
)


def parse_iso8601_duration_ms(text: str) -> int:
    """Milliseconds of an ISO-8601 duration in Java's ``Duration.parse`` form ``PnDTnHnMn.nS``
    (days, hours, minutes, seconds; no years/months). Raises ``ValueError`` for anything else,
    including negative durations (``ShareGroupAutoOffsetResetStrategy`` rejects them)."""
    t = text.strip()
    if t.startswith("-"):
        raise ValueError("Negative duration is not allowed.")
    m = _ISO_DURATION.match(t)
    if not m or t.upper() in ("P", "PT") or t.upper().endswith("T"):
        raise ValueError(f"Unable to parse duration: {text}")
    total = 0.0
    for group, scale in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if m.group(group) is not None:
            total += float(m.group(group)) * scale
    return int(round(total))


def parse_auto_offset_reset(raw: str) -> AutoOffsetReset:
    """Parse ``share.auto.offset.reset`` like ``ShareGroupAutoOffsetResetStrategy.Validator``:
    ``earliest``, ``latest`` (case-insensitive) or ``by_duration:<ISO-8601>``.
    Raises :class:`InvalidConfig` with Kafka's message otherwise."""
    key = "share.auto.offset.reset"
    text = str(raw).strip()
    low = text.lower()
    if low in ("earliest", "latest"):
        return AutoOffsetReset(low)
    if low.startswith("by_duration:"):
        try:
            return AutoOffsetReset("by_duration", parse_iso8601_duration_ms(text.split(":", 1)[1]))
        except ValueError as exc:
            raise InvalidConfig(key, f"Invalid value `{text}` for configuration {key}: {exc}") from None
    if low == "by_duration":
        raise InvalidConfig(key, f"Invalid value `{text}` for configuration {key}: Duration must be specified in ISO8601 format.")
    raise InvalidConfig(key, f"Invalid value `{text}` for configuration {key}. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'.")


# --------------------------------------------------------------------------------------------
# dynamic group configs (GroupConfig)
# --------------------------------------------------------------------------------------------

#: The share-group dynamic config keys with their ConfigDef type checks (defaults come from the
#: broker config, as ``GroupCoordinatorConfig.extractGroupConfigMap`` does).
GROUP_CONFIG_DEFS: dict[str, ConfigDef] = {
    d.key: d
    for d in (
        _d("share.session.timeout.ms", "int", None, 1, None),
        _d("share.heartbeat.interval.ms", "int", None, 1, None),
        _d("share.record.lock.duration.ms", "int", None, 1000, None),
        _d("share.auto.offset.reset", "string", "latest"),
        _d("share.isolation.level", "string", "read_uncommitted", choices=("read_committed", "read_uncommitted")),
    )
}


@dataclass(frozen=True, slots=True)
class GroupShareConfig:
    """A share group's dynamic configs (the group's overrides; ``None`` = broker default).

    Use the ``effective_*`` methods with the :class:`BrokerShareConfig` to read the value in force
    (``GroupMetadataManager.shareGroupSessionTimeoutMs/HeartbeatIntervalMs``,
    ``SharePartition`` reading ``share.record.lock.duration.ms`` on every acquisition)."""

    session_timeout_ms: int | None = None
    heartbeat_interval_ms: int | None = None
    record_lock_duration_ms: int | None = None
    auto_offset_reset: str | None = None
    isolation_level: str | None = None
    overrides: tuple[tuple[str, str], ...] = field(default=())

    def effective_session_timeout_ms(self, broker: BrokerShareConfig) -> int:
        """``share.session.timeout.ms`` or ``group.share.session.timeout.ms`` (ms)."""
        return self.session_timeout_ms if self.session_timeout_ms is not None else broker.session_timeout_ms

    def effective_heartbeat_interval_ms(self, broker: BrokerShareConfig) -> int:
        """``share.heartbeat.interval.ms`` or ``group.share.heartbeat.interval.ms`` (ms)."""
        return self.heartbeat_interval_ms if self.heartbeat_interval_ms is not None else broker.heartbeat_interval_ms

    def effective_record_lock_duration_ms(self, broker: BrokerShareConfig) -> int:
        """``share.record.lock.duration.ms`` or ``group.share.record.lock.duration.ms`` (ms)."""
        return self.record_lock_duration_ms if self.record_lock_duration_ms is not None else broker.record_lock_duration_ms

    def effective_auto_offset_reset(self) -> AutoOffsetReset:
        """The parsed ``share.auto.offset.reset`` (default ``latest``)."""
        return parse_auto_offset_reset(self.auto_offset_reset or "latest")

    def as_dict(self) -> dict[str, str]:
        """The overrides as Kafka config strings (for DescribeConfigs and events)."""
        return dict(self.overrides)

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, str]) -> "GroupShareConfig":
        """Build from already-validated overrides (e.g. replayed from a ``GroupConfigAltered``)."""
        ov = {k: str(v) for k, v in overrides.items()}
        get = ov.get
        return cls(
            session_timeout_ms=int(get("share.session.timeout.ms")) if "share.session.timeout.ms" in ov else None,
            heartbeat_interval_ms=int(get("share.heartbeat.interval.ms")) if "share.heartbeat.interval.ms" in ov else None,
            record_lock_duration_ms=int(get("share.record.lock.duration.ms")) if "share.record.lock.duration.ms" in ov else None,
            auto_offset_reset=get("share.auto.offset.reset"),
            isolation_level=get("share.isolation.level"),
            overrides=tuple(sorted(ov.items())),
        )


def validate_group_configs(overrides: Mapping[str, Any], broker: BrokerShareConfig) -> GroupShareConfig:
    """Validate a full set of share-group overrides (key → value) the way ``GroupConfig.validate``
    does: unknown names (``Unknown group config name: …``), the per-key type and range, then the
    values merged with the broker defaults against the broker's bounds (``validateValues``):
    heartbeat and session timeout within their ``group.share.min/max`` bounds, lock duration
    within ``group.share.min/max.record.lock.duration.ms``, and session timeout > heartbeat interval.

    Returns the :class:`GroupShareConfig`; raises :class:`InvalidConfig` (INVALID_CONFIG) otherwise.
    Consumer/streams group keys are not Shoal's business and are rejected as unknown."""
    parsed: dict[str, Any] = {}
    for key, raw in overrides.items():
        d = GROUP_CONFIG_DEFS.get(key)
        if d is None:
            raise InvalidConfig(key, f"Unknown group config name: {key}")
        if key == "share.auto.offset.reset":
            parse_auto_offset_reset(str(raw))
            parsed[key] = str(raw).strip()
        elif key == "share.isolation.level":
            parsed[key] = d.parse(str(raw).strip().lower())
        else:
            parsed[key] = d.parse(raw)
    hb = parsed.get("share.heartbeat.interval.ms", broker.heartbeat_interval_ms)
    st = parsed.get("share.session.timeout.ms", broker.session_timeout_ms)
    lock = parsed.get("share.record.lock.duration.ms", broker.record_lock_duration_ms)

    def check(cond: bool, key: str, msg: str) -> None:
        if not cond:
            raise InvalidConfig(key, msg)

    check(hb >= broker.min_heartbeat_interval_ms, "share.heartbeat.interval.ms",
          "share.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat.interval.ms")
    check(hb <= broker.max_heartbeat_interval_ms, "share.heartbeat.interval.ms",
          "share.heartbeat.interval.ms must be less than or equal to group.share.max.heartbeat.interval.ms")
    check(st >= broker.min_session_timeout_ms, "share.session.timeout.ms",
          "share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms")
    check(st <= broker.max_session_timeout_ms, "share.session.timeout.ms",
          "share.session.timeout.ms must be less than or equal to group.share.max.session.timeout.ms")
    check(lock >= broker.min_record_lock_duration_ms, "share.record.lock.duration.ms",
          "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms")
    check(lock <= broker.max_record_lock_duration_ms, "share.record.lock.duration.ms",
          "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms")
    check(st > hb, "share.session.timeout.ms", "share.session.timeout.ms must be greater than share.heartbeat.interval.ms")
    return GroupShareConfig.from_overrides({k: str(v) for k, v in parsed.items()})


def effective_group_configs(cfg: GroupShareConfig, broker: BrokerShareConfig) -> dict[str, str]:
    """The share-group configs in force for a group with overrides ``cfg`` under ``broker``
    (key → Kafka config string), as DescribeConfigs on a GROUP resource lists them: each
    override, else the broker's ``group.share.*`` value, else the key's default
    (``GroupConfig.fromProps(extractGroupConfigMap(...), groupProps)`` in Kafka's ``ConfigHelper``).
    A group that does not exist is ``GroupShareConfig()``: all broker values."""
    return {
        "share.session.timeout.ms": str(cfg.effective_session_timeout_ms(broker)),
        "share.heartbeat.interval.ms": str(cfg.effective_heartbeat_interval_ms(broker)),
        "share.record.lock.duration.ms": str(cfg.effective_record_lock_duration_ms(broker)),
        "share.auto.offset.reset": cfg.auto_offset_reset or "latest",
        "share.isolation.level": cfg.isolation_level or "read_uncommitted",
    }
