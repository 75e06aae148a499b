"""Topic-level log configs (Kafka ``LogConfig``, storage/src/main/java/org/apache/kafka/storage/internals/log/LogConfig.java):
the keys, defaults and lower bounds a partition log reads, and the remote-storage retention checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from config import ConfigError
from store import record_batch as rb

__all__ = ["LogConfig", "LONG_MAX"]

LONG_MAX = 2**63 - 1


def _long(props: Mapping[str, str], key: str, default: int, minimum: int | None = None) -> int:
    raw = props.get(key)
    if raw is None or raw == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise ConfigError(f"Invalid value {raw} for configuration {key}: Not a number of type LONG") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"Invalid value {value} for configuration {key}: Value must be at least {minimum}")
    return value


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Topic-level log configs with Kafka's keys, defaults and lower bounds (Kafka ``LogConfig``).

    Times in ms, sizes in bytes. ``local_retention_ms``/``local_retention_bytes`` of -2 mean
    "use ``retention.ms``/``retention.bytes``" (``DEFAULT_LOCAL_RETENTION_*``); -1 means unlimited."""

    segment_bytes: int = 1024 * 1024 * 1024  # segment.bytes, >= 14
    segment_ms: int = 7 * 24 * 3600 * 1000  # segment.ms, >= 1
    segment_jitter_ms: int = 0  # segment.jitter.ms, >= 0 (applied as given; no random jitter)
    index_interval_bytes: int = 4096  # index.interval.bytes, >= 0
    segment_index_bytes: int = 10 * 1024 * 1024  # segment.index.bytes, >= 4: an index holds this/8 entries
    flush_messages: int = LONG_MAX  # flush.messages, >= 1
    flush_ms: int = LONG_MAX  # flush.ms, >= 0
    retention_ms: int = 7 * 24 * 3600 * 1000  # retention.ms, >= -1
    retention_bytes: int = -1  # retention.bytes
    local_retention_ms: int = -2  # local.retention.ms, >= -2
    local_retention_bytes: int = -2  # local.retention.bytes, >= -2
    remote_storage_enable: bool = False  # remote.storage.enable
    remote_log_copy_disable: bool = False  # remote.log.copy.disable (KIP-950): remote tier read-only
    max_message_bytes: int = 1024 * 1024 + rb.LOG_OVERHEAD  # max.message.bytes, >= 0
    message_timestamp_type: str = "CreateTime"  # message.timestamp.type

    @classmethod
    def from_properties(cls, props: Mapping[str, str] | None = None) -> "LogConfig":
        """Build from Kafka config keys (string values, e.g. a topic's configs merged over the
        broker's ``log.*`` defaults). Unknown keys are ignored. Raises
        :class:`config.ConfigError` for non-numbers, values below Kafka's minimum, and, with
        ``remote.storage.enable=true`` only, ``local.retention.*`` of -1 or larger than a finite
        ``retention.*`` (Kafka ``LogConfig#validateRemoteStorageRetentionTime``/``Size``)."""
        p = dict(props or {})
        ts_type = p.get("message.timestamp.type", "CreateTime")
        if ts_type not in ("CreateTime", "LogAppendTime"):
            raise ConfigError(f"Invalid value {ts_type} for configuration message.timestamp.type")
        remote = str(p.get("remote.storage.enable", "false")).strip().lower()
        if remote not in ("true", "false"):
            raise ConfigError(f"Invalid value {remote} for configuration remote.storage.enable")
        copy_disable = str(p.get("remote.log.copy.disable", "false")).strip().lower()
        if copy_disable not in ("true", "false"):
            raise ConfigError(f"Invalid value {copy_disable} for configuration remote.log.copy.disable")
        cfg = cls(
            segment_bytes=_long(p, "segment.bytes", 1024 * 1024 * 1024, 14),
            segment_ms=_long(p, "segment.ms", 7 * 24 * 3600 * 1000, 1),
            segment_jitter_ms=_long(p, "segment.jitter.ms", 0, 0),
            index_interval_bytes=_long(p, "index.interval.bytes", 4096, 0),
            segment_index_bytes=_long(p, "segment.index.bytes", 10 * 1024 * 1024, 4),
            flush_messages=_long(p, "flush.messages", LONG_MAX, 1),
            flush_ms=_long(p, "flush.ms", LONG_MAX, 0),
            retention_ms=_long(p, "retention.ms", 7 * 24 * 3600 * 1000, -1),
            retention_bytes=_long(p, "retention.bytes", -1),
            local_retention_ms=_long(p, "local.retention.ms", -2, -2),
            local_retention_bytes=_long(p, "local.retention.bytes", -2, -2),
            remote_storage_enable=remote == "true",
            remote_log_copy_disable=copy_disable == "true",
            max_message_bytes=_long(p, "max.message.bytes", 1024 * 1024 + rb.LOG_OVERHEAD, 0),
            message_timestamp_type=ts_type,
        )
        if cfg.remote_storage_enable:
            # Kafka LogConfig#validateRemoteStorageRetentionTime / ...Size (only under tiering)
            for local_key, local, total_key, total, unlimited in (
                ("local.retention.ms", cfg.local_retention_ms, "retention.ms", cfg.retention_ms, cfg.retention_ms == -1),
                ("local.retention.bytes", cfg.local_retention_bytes, "retention.bytes", cfg.retention_bytes, cfg.retention_bytes <= -1),
            ):
                if unlimited or local == -2:
                    continue
                if local == -1:
                    raise ConfigError(f"Invalid value -1 for configuration {local_key}: Value must not be -1 as {total_key} value is set as {total}.")
                if local > total:
                    raise ConfigError(
                        f"Invalid value {local} for configuration {local_key}: Value must not be more than {total_key} property value: {total}"
                    )
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

