"""Replication between two real daemons (``app.py run``) sharing one PostgreSQL event log: the
data plane of issue 15 (wire/replica_manager.py, wire/replica_fetcher.py) over the cluster's own
metadata image. With RF=2 and min.insync.replicas=2: acks=all records are on both nodes, byte
for byte; with one node down the ISR shrinks and acks=all is refused with NOT_ENOUGH_REPLICAS;
the returning node catches up and rejoins the ISR; after a SIGKILL of the other node every
acknowledged record is in the survivor's log."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from store import record_batch as rb
from tests.e2e.conftest import free_port
from tests.e2e.helpers import wait_for


def _isrs(bootstrap: str, topic: str) -> dict[int, list[int]]:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return {}
    return {p.id: sorted(p.isrs) for p in t.partitions.values()}


def _produce(bootstrap: str, topic: str, values: list[bytes], partitions: int, **conf) -> list[str]:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, **conf})
    results: list[str] = []
    for i, v in enumerate(values):
        p.produce(topic, v, partition=i % partitions, on_delivery=lambda e, _m: results.append(e.name() if e else "ok"))
    assert p.flush(60) == 0
    return results


def consumed_all_on(c: Consumer, got: list[bytes], n: int):
    """A ``wait_for`` predicate: poll ``c`` once into ``got``; true once it holds ``n`` values."""

    def step() -> bool:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
        return len(got) >= n

    return step


def _records(segment: bytes) -> list:
    """Every record of a segment file's bytes."""
    return [r for h in rb.iter_batches(segment) for r in rb.iter_records(segment, h.position)]


def _segment(node_dir: Path, topic: str, partition: int) -> bytes:
    return (node_dir / "logs" / f"{topic}-{partition}" / "00000000000000000000.log").read_bytes()


def test_two_nodes_replicate_acks_all_and_follow_the_isr(daemon_factory, pg_url, tmp_path):
    ports = {n: (free_port(), free_port()) for n in (1, 2)}

    def start(n: int):
        d = tmp_path / f"node{n}"
        return daemon_factory(
            d, ports[n][0], ports[n][1],
            **{"node.id": str(n), "log.dirs": str(d / "logs"), "event.log.url": pg_url,
               "broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"},
        )

    n1, n2 = start(1), start(2)
    both = f"{n1.bootstrap},{n2.bootstrap}"
    admin = AdminClient({"bootstrap.servers": both})
    assert wait_for(lambda: len(admin.list_topics(timeout=10).brokers) == 2, 30)
    admin.create_topics([NewTopic("r", 2, 2, config={"min.insync.replicas": "2"})])["r"].result(30)
    assert wait_for(lambda: _isrs(both, "r") == {0: [1, 2], 1: [1, 2]}, 30)

    values = [b"v%d" % i for i in range(400)]
    assert _produce(both, "r", values, 2, **{"enable.idempotence": True}) == ["ok"] * 400
    for p in (0, 1):  # every acknowledged record is on the follower too, byte for byte
        assert _segment(n1.data_dir, "r", p) == _segment(n2.data_dir, "r", p)

    c = Consumer({"bootstrap.servers": both, "group.id": "g", "enable.auto.commit": False})
    c.assign([TopicPartition("r", 0, 0), TopicPartition("r", 1, 0)])
    got: list[bytes] = []
    assert wait_for(consumed_all_on(c, got, 400), 30, 0)
    c.close()
    assert sorted(got) == sorted(values)

    n2.stop()  # the ISR shrinks to node 1 (fenced by the controller or out of sync)
    assert wait_for(lambda: _isrs(n1.bootstrap, "r") == {0: [1], 1: [1]}, 40)
    res = _produce(n1.bootstrap, "r", [b"refused"], 1, retries=0, **{"message.timeout.ms": 5000})
    assert res == [KafkaError(KafkaError.NOT_ENOUGH_REPLICAS).name()]

    n2 = start(2)  # back: truncates, catches up and rejoins both ISRs
    assert wait_for(lambda: _isrs(n1.bootstrap, "r") == {0: [1, 2], 1: [1, 2]}, 60)
    assert _produce(f"{n1.bootstrap},{n2.bootstrap}", "r", [b"after"], 1) == ["ok"]

    n1.kill()  # SIGKILL of node 1 and its actor system: node 2 leads both partitions
    assert wait_for(lambda: _isrs(n2.bootstrap, "r") == {0: [2], 1: [2]}, 40)
    # every acknowledged record is in the survivor's log, once (its HW stays where it was while
    # the ISR {2} is under min.insync.replicas 2, so consumers see them when node 1 is back)
    kept = [r.value for p in (0, 1) for r in _records(_segment(n2.data_dir, "r", p))]
    assert sorted(kept) == sorted(values + [b"after"])
