"""Topic admin end to end (issue 16): confluent-kafka 2.16's ``AdminClient.create_partitions``
against a real ``app.py run`` daemon. The new partitions take records at once, a share group
subscribed before the growth is assigned and reads them, a tiered topic grows too, and Kafka's
errors come back for a shrink, an unknown topic and a duplicated name."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import NewPartitions

from tests.e2e.helpers import admin, create_topic, list_offsets, outcomes, produce, set_group_config, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]


def _partitions(bootstrap: str, topic: str) -> int:
    return len(admin(bootstrap).list_topics(topic, timeout=30).topics[topic].partitions)


def test_create_partitions_grows_a_topic_its_share_group_reads_the_new_partitions(shared_daemon):
    from confluent_kafka import ShareConsumer

    bs = shared_daemon.bootstrap
    create_topic(bs, "grow", 1)
    set_group_config(bs, "grow-g", "share.auto.offset.reset", "earliest")
    c = ShareConsumer({"bootstrap.servers": bs, "group.id": "grow-g"})
    seen: list[str] = []
    try:
        c.subscribe(["grow"])
        t0 = time.monotonic()
        while time.monotonic() - t0 < 3:  # joins with the one-partition topic
            seen += [m.value().decode() for m in c.poll(0.2) if not m.error()]
        a = admin(bs)
        assert outcomes(a.create_partitions([NewPartitions("grow", 3)], request_timeout=30)) == {"grow": None}
        assert _partitions(bs, "grow") == 3
        acked = produce(bs, "grow", [f"v{i}" for i in range(30)], partitioner=lambda i: i % 3)
        assert {p for p, _o in acked.values()} == {0, 1, 2} and len(acked) == 30
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(set(seen)) < 30:
            seen += [m.value().decode() for m in c.poll(0.2) if not m.error()]
    finally:
        c.close()
    assert sorted(set(seen)) == sorted(f"v{i}" for i in range(30))


def test_create_partitions_errors_and_validate_only(shared_daemon):
    bs = shared_daemon.bootstrap
    create_topic(bs, "fixed", 2)
    a = admin(bs)
    got = outcomes(a.create_partitions([NewPartitions("fixed", 1), NewPartitions("nope", 4)], request_timeout=30))
    assert got == {"fixed": KafkaError.INVALID_PARTITIONS, "nope": KafkaError.UNKNOWN_TOPIC_OR_PART}
    assert outcomes(a.create_partitions([NewPartitions("fixed", 5)], validate_only=True, request_timeout=30)) == {"fixed": None}
    assert _partitions(bs, "fixed") == 2
    got = outcomes(a.create_partitions([NewPartitions("fixed", 4, replica_assignment=[[1], [7]])], request_timeout=30))
    assert got == {"fixed": KafkaError.INVALID_REPLICA_ASSIGNMENT}
    assert outcomes(a.create_partitions([NewPartitions("fixed", 4, replica_assignment=[[1], [1]])], request_timeout=30)) == {"fixed": None}
    assert _partitions(bs, "fixed") == 4


def test_tiered_topic_grows_and_its_new_partition_is_tiered(shared_daemon):
    """A tiered topic (``remote.storage.enable``) grown by CreatePartitions: the new partition's
    segments are copied to the remote tier and deleted locally (ListOffsets -4 earliest-local > 0)
    like the first partition's, and -5 latest-tiered is answered."""
    bs = shared_daemon.bootstrap
    cfg = {"remote.storage.enable": "true", "segment.bytes": "16384", "local.retention.bytes": "1", "retention.bytes": "-1"}
    create_topic(bs, "tiered-grow", 1, cfg)
    a = admin(bs)
    assert outcomes(a.create_partitions([NewPartitions("tiered-grow", 2)], request_timeout=30)) == {"tiered-grow": None}
    values = [f"t{i:05d}-" + "x" * 60 for i in range(2000)]
    acked = produce(bs, "tiered-grow", values, partitioner=lambda i: 1, **{"batch.size": 4096})
    assert sorted(o for p, o in acked.values() if p == 1) == list(range(len(values)))
    assert wait_for(lambda: list_offsets(shared_daemon.port, "tiered-grow", 1, -4)[1] > 0, 60), "the new partition was not tiered"
    err, tiered = list_offsets(shared_daemon.port, "tiered-grow", 1, -5)
    assert err == 0 and tiered >= 0


def test_delete_records_moves_the_log_start_and_the_share_group_skips_below_it(shared_daemon):
    """``AdminClient.delete_records``: the low watermark comes back, ListOffsets earliest follows,
    an offset above the high watermark is OFFSET_OUT_OF_RANGE, and a share group whose start
    offset was below the new log start offset (initialised at 0 before the records existed)
    delivers only the records at or above it (Kafka's ``LogStartOffsetMoved`` handling)."""
    from confluent_kafka import ShareConsumer, TopicPartition

    bs = shared_daemon.bootstrap
    create_topic(bs, "trim", 1)
    set_group_config(bs, "trim-g", "share.auto.offset.reset", "earliest")

    def consume(until: int, timeout_s: float) -> list[str]:
        c = ShareConsumer({"bootstrap.servers": bs, "group.id": "trim-g"})
        got: list[str] = []
        try:
            c.subscribe(["trim"])
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline and len(got) < until:
                got += [m.value().decode() for m in c.poll(0.2) if not m.error()]
        finally:
            c.close()
        return got

    assert consume(1, 4) == []  # the group's share-partition starts at 0
    produce(bs, "trim", [f"r{i}" for i in range(20)], partitioner=lambda i: 0)
    a = admin(bs)
    got = outcomes(a.delete_records([TopicPartition("trim", 0, 10)], request_timeout=30), on_success=lambda r: r.low_watermark)
    assert list(got.values()) == [10]
    assert list_offsets(shared_daemon.port, "trim", 0, -2) == (0, 10)
    bad = outcomes(a.delete_records([TopicPartition("trim", 0, 21)], request_timeout=30))
    assert list(bad.values()) == [KafkaError.OFFSET_OUT_OF_RANGE]
    assert sorted(consume(10, 30), key=lambda v: int(v[1:])) == [f"r{i}" for i in range(10, 20)]
    moved = [e for e in _events(shared_daemon) if e.event_type == "share.LogStartOffsetMoved"]
    assert [(e.group_id, e.log_start_offset) for e in (m.decode() for m in moved) if e.group_id == "trim-g"] == [("trim-g", 10)]


def _events(daemon) -> list:
    """Every recorded event of the running daemon's log (SQLite: readers do not block it)."""
    import events.share  # noqa: F401 - registers the share event types
    from store.event_log import open_event_log

    log = open_event_log(f"sqlite:///{daemon.data_dir / 'events.db'}", create=False)
    try:
        return list(log.read_all())
    finally:
        log.close()


def test_growth_and_deleted_records_survive_a_restart_and_replay_verifies(daemon_factory):
    """After CreatePartitions and DeleteRecords the daemon is stopped and restarted on the same
    data dir: the topic still has its grown partition count (the controller refolds
    ``PartitionsCreated``), the new partition's records and the moved log start offset are there,
    and ``app.py replay --verify`` finds the Python and DuckDB folds of the log identical."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from confluent_kafka import TopicPartition

    d = daemon_factory()
    bs = d.bootstrap
    create_topic(bs, "kept", 1)
    a = admin(bs)
    assert outcomes(a.create_partitions([NewPartitions("kept", 2)], request_timeout=30)) == {"kept": None}
    produce(bs, "kept", [f"k{i}" for i in range(10)], partitioner=lambda i: 1)
    assert list(outcomes(a.delete_records([TopicPartition("kept", 1, 4)], request_timeout=30), on_success=lambda r: r.low_watermark).values()) == [4]
    del a
    d.stop()
    d2 = daemon_factory(data_dir=d.data_dir, port=d.port)
    assert _partitions(d2.bootstrap, "kept") == 2
    assert list_offsets(d2.port, "kept", 1, -2) == (0, 4)
    assert list_offsets(d2.port, "kept", 1, -1) == (0, 10)
    d2.stop()
    r = subprocess.run(
        [sys.executable, "app.py", "replay", "--url", f"sqlite:///{d.data_dir / 'events.db'}", "--engine", "python", "--engine", "duckdb", "--verify", "--json"],
        capture_output=True, text=True, timeout=600, cwd=str(Path(__file__).resolve().parents[2]),
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["divergences"] == []
