"""Share-group configs: Kafka's broker keys, defaults, ranges, and the dynamic group configs
(``ShareGroupConfig``, ``GroupCoordinatorConfig``, ``GroupConfig.validate``/``validateValues``,
``ShareGroupAutoOffsetResetStrategy``)."""

from __future__ import annotations

import pytest

from actors.share.config import (
    AutoOffsetReset,
    BrokerShareConfig,
    InvalidConfig,
    parse_auto_offset_reset,
    parse_iso8601_duration_ms,
    validate_group_configs,
)


def test_broker_defaults_are_kafkas():
    cfg = BrokerShareConfig.from_config({})
    assert cfg.delivery_count_limit == 5
    assert cfg.record_lock_duration_ms == 30000
    assert (cfg.min_record_lock_duration_ms, cfg.max_record_lock_duration_ms) == (15000, 60000)
    assert cfg.partition_max_record_locks == 2000
    assert (cfg.session_timeout_ms, cfg.min_session_timeout_ms, cfg.max_session_timeout_ms) == (45000, 45000, 60000)
    assert (cfg.heartbeat_interval_ms, cfg.min_heartbeat_interval_ms, cfg.max_heartbeat_interval_ms) == (5000, 5000, 15000)
    assert cfg.max_size == 200


@pytest.mark.parametrize(
    "key,value",
    [
        ("group.share.delivery.count.limit", "1"),
        ("group.share.delivery.count.limit", "11"),
        ("group.share.record.lock.duration.ms", "999"),
        ("group.share.min.record.lock.duration.ms", "30001"),
        ("group.share.max.record.lock.duration.ms", "29999"),
        ("group.share.partition.max.record.locks", "99"),
        ("group.share.partition.max.record.locks", "10001"),
        ("group.share.max.size", "0"),
        ("group.share.max.size", "1001"),
        ("group.share.session.timeout.ms", "0"),
        ("group.share.max.size", "many"),
    ],
)
def test_broker_out_of_range_values_are_rejected_with_invalid_config(key, value):
    with pytest.raises(InvalidConfig) as exc:
        BrokerShareConfig.from_config({key: value})
    assert exc.value.error == "INVALID_CONFIG"
    assert exc.value.key == key


def test_broker_range_message_is_kafkas_wording():
    with pytest.raises(InvalidConfig, match=r"Invalid value 11 for configuration group.share.delivery.count.limit: Value must be in the range \[2, 10\]"):
        BrokerShareConfig.from_config({"group.share.delivery.count.limit": "11"})


def test_broker_cross_key_rules_ShareGroupConfig_validate():
    with pytest.raises(InvalidConfig, match="group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"):
        BrokerShareConfig.from_config({"group.share.record.lock.duration.ms": "10000"})
    with pytest.raises(InvalidConfig, match="must be greater than or equal to group.share.record.lock.duration.ms"):
        BrokerShareConfig.from_config({"group.share.record.lock.duration.ms": "61000"})
    with pytest.raises(InvalidConfig, match="group.share.session.timeout.ms must be less than or equal"):
        BrokerShareConfig.from_config({"group.share.session.timeout.ms": "70000"})


def test_broker_non_strict_accepts_kafka_test_values_but_keeps_cross_rules():
    cfg = BrokerShareConfig.from_config(
        {"group.share.record.lock.duration.ms": "100", "group.share.min.record.lock.duration.ms": "100",
         "group.share.max.size": "2"}, strict_ranges=False)
    assert cfg.record_lock_duration_ms == 100 and cfg.max_size == 2


def test_group_config_bounds_GroupConfig_validateValues():
    b = BrokerShareConfig()
    ok = validate_group_configs({"share.session.timeout.ms": "50000", "share.heartbeat.interval.ms": "10000",
                                 "share.record.lock.duration.ms": "20000"}, b)
    assert ok.effective_session_timeout_ms(b) == 50000
    assert ok.effective_heartbeat_interval_ms(b) == 10000
    assert ok.effective_record_lock_duration_ms(b) == 20000
    cases = [
        ({"share.session.timeout.ms": "44999"}, "share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms"),
        ({"share.session.timeout.ms": "60001"}, "share.session.timeout.ms must be less than or equal to group.share.max.session.timeout.ms"),
        ({"share.heartbeat.interval.ms": "4999"}, "share.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat.interval.ms"),
        ({"share.heartbeat.interval.ms": "15001"}, "share.heartbeat.interval.ms must be less than or equal to group.share.max.heartbeat.interval.ms"),
        ({"share.record.lock.duration.ms": "14999"}, "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"),
        ({"share.record.lock.duration.ms": "60001"}, "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms"),
        ({"share.record.lock.duration.ms": "999"}, "Value must be at least 1000"),
        ({"share.session.timeout.ms": "0"}, "Value must be at least 1"),
        ({"consumer.session.timeout.ms": "45000"}, "Unknown group config name: consumer.session.timeout.ms"),
        ({"share.isolation.level": "snapshot"}, "String must be one of"),
        ({"share.auto.offset.reset": "middle"}, "share.auto.offset.reset"),
    ]
    for overrides, message in cases:
        with pytest.raises(InvalidConfig) as exc:
            validate_group_configs(overrides, b)
        assert message in str(exc.value), overrides
        assert exc.value.error == "INVALID_CONFIG"


def test_group_session_timeout_must_exceed_heartbeat_interval():
    b = BrokerShareConfig(min_session_timeout_ms=1000, min_heartbeat_interval_ms=1000)
    with pytest.raises(InvalidConfig, match="share.session.timeout.ms must be greater than share.heartbeat.interval.ms"):
        validate_group_configs({"share.session.timeout.ms": "5000", "share.heartbeat.interval.ms": "5000"}, b)


@pytest.mark.parametrize(
    "raw,strategy,duration",
    [("earliest", "earliest", 0), ("LATEST", "latest", 0), ("by_duration:PT1H", "by_duration", 3_600_000),
     ("by_duration:P1DT30M", "by_duration", 86_400_000 + 1_800_000), ("by_duration:PT0.5S", "by_duration", 500)],
)
def test_share_auto_offset_reset_strategies(raw, strategy, duration):
    r = parse_auto_offset_reset(raw)
    assert (r.strategy, r.duration_ms) == (strategy, duration)


@pytest.mark.parametrize("raw", ["", "none", "by_duration", "by_duration:", "by_duration:-PT1H", "by_duration:1H", "by_duration:PT"])
def test_share_auto_offset_reset_invalid(raw):
    with pytest.raises(InvalidConfig):
        parse_auto_offset_reset(raw)


def test_auto_offset_reset_timestamps():
    assert AutoOffsetReset("earliest").timestamp_ms(10_000) == -2
    assert AutoOffsetReset("latest").timestamp_ms(10_000) == -1
    assert AutoOffsetReset("by_duration", 4_000).timestamp_ms(10_000) == 6_000


def test_iso_duration_rejects_negative():
    with pytest.raises(ValueError):
        parse_iso8601_duration_ms("-PT5S")
