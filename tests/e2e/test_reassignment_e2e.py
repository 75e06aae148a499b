"""Partition reassignment (KIP-455) on a real cluster: three daemons (``app.py run``) sharing one
PostgreSQL event log.

A partition with data on replicas [L, F] (RF 2, as the controller placed it: L leads, F follows)
is moved to [N, F], N the third node, with AlterPartitionReassignments (45) sent to the active
controller, while an ``acks=all`` producer keeps writing to it — the move [1, 2] → [3, 2] up to
the names of the nodes. Then:

* ListPartitionReassignments (46) lists the interim state ([N, F, L], adding [N], removing [L])
  until the move completes, then nothing;
* every node's Metadata shows replicas [N, F] and ISR {N, F}; N, first in the target and in the
  ISR, leads (Kafka elects the first target replica in the ISR when the old leader leaves);
* N's log directory holds the records, every acknowledged record is read back (from N, the
  leader), in order, exactly once; L, no longer a replica, has deleted its log;
* cancelling when nothing is reassigning is NO_REASSIGNMENT_IN_PROGRESS, an unregistered broker
  INVALID_REPLICA_ASSIGNMENT, and a node that is not the controller answers NOT_CONTROLLER;
* ``app.py replay --verify`` folds the cluster's log with Python and DuckDB to the same tables,
  which show the target replicas.

Only properties are asserted; every wait is a generous poll.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.alter_partition_reassignments.v0.request import AlterPartitionReassignmentsRequest, ReassignablePartition, ReassignableTopic
from kio.schema.list_partition_reassignments.v0.request import ListPartitionReassignmentsRequest
from kio.static.primitive import i32

from tests.e2e.conftest import ROOT, free_port
from tests.e2e.helpers import wait_for
from wire.cluster import BrokerChannel, RpcError

TOPIC = "moving"
NOT_CONTROLLER, INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS = 41, 39, 85


class Nodes:
    """Nodes 1..3 of one cluster on 127.0.0.1."""

    def __init__(self, factory, pg_url: str, base: Path) -> None:
        self.base = base
        self.ports = {n: free_port() for n in (1, 2, 3)}
        self.daemons = {
            n: factory(
                base / f"node{n}", self.ports[n],
                **{"node.id": str(n), "log.dirs": str(base / f"node{n}" / "logs"), "event.log.url": pg_url,
                   "broker.session.timeout.ms": "6000", "broker.heartbeat.interval.ms": "500",
                   "shoal.cluster.stray.replica.delete.delay.ms": "500"},
            )
            for n in (1, 2, 3)
        }

    def bootstrap(self, *nodes: int) -> str:
        return ",".join(f"127.0.0.1:{self.ports[n]}" for n in (nodes or (1, 2, 3)))

    def metadata(self, n: int):
        try:
            return AdminClient({"bootstrap.servers": self.bootstrap(n)}).list_topics(timeout=10)
        except Exception:
            return None

    def partition(self, n: int):
        """(leader, replicas, sorted ISR) of partition 0 as node ``n`` answers Metadata."""
        md = self.metadata(n)
        t = md.topics.get(TOPIC) if md is not None else None
        if t is None or t.error is not None or 0 not in t.partitions:
            return None
        p = t.partitions[0]
        return p.leader, list(p.replicas), sorted(p.isrs)

    def ask(self, n: int, api_key: int, body):
        ch = BrokerChannel("127.0.0.1", self.ports[n], "reassign-e2e", 15_000)
        try:
            return ch.ask(api_key, 0, body)
        finally:
            ch.close()

    def ask_controller(self, api_key: int, body):
        """Send to the active controller (Metadata's controller_id), again while it answers
        NOT_CONTROLLER (the role is moving) or cannot be reached; the response."""
        out = []

        def attempt() -> bool:
            md = self.metadata(1)
            if md is None or md.controller_id not in self.ports:
                return False
            try:
                resp = self.ask(md.controller_id, api_key, body)
            except RpcError:
                return False
            if int(resp.error_code) == NOT_CONTROLLER:
                return False
            out.append(resp)
            return True

        assert wait_for(attempt, 60, 0.5), "no active controller answered"
        return out[0]


def _alter(replicas):
    part = ReassignablePartition(partition_index=i32(0), replicas=None if replicas is None else tuple(i32(r) for r in replicas))
    return AlterPartitionReassignmentsRequest(topics=(ReassignableTopic(name=TOPIC, partitions=(part,)),))


def _ongoing(resp) -> list[tuple[int, list[int], list[int], list[int]]]:
    assert int(resp.error_code) == 0, resp
    return [
        (int(p.partition_index), [int(r) for r in p.replicas], [int(r) for r in p.adding_replicas], [int(r) for r in p.removing_replicas])
        for t in resp.topics if t.name == TOPIC
        for p in t.partitions
    ]


def _errors(resp) -> list[int]:
    return [int(p.error_code) for t in resp.responses for p in t.partitions]


def _produce(bootstrap: str, first: int, count: int, acked: dict[bytes, int]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5, "message.timeout.ms": 60_000})

    def done(err, msg):
        if err is None:
            acked[msg.value()] = msg.offset()

    for i in range(first, first + count):
        p.produce(TOPIC, b"%06d" % i, partition=0, on_delivery=done)
        p.poll(0)
    assert p.flush(60) == 0


def _read_all(bootstrap: str) -> list[tuple[int, bytes]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reassign-e2e", "enable.auto.commit": False})
    try:
        end = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=30)[1]
        c.assign([TopicPartition(TOPIC, 0, 0)])
        out: list[tuple[int, bytes]] = []

        def done() -> bool:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                out.append((m.offset(), m.value()))
            return (out[-1][0] + 1 if out else 0) >= end

        assert wait_for(done, 60, 0), f"read {len(out)} of {end}"
        return out
    finally:
        c.close()


def test_reassign_a_partition_with_data_to_a_new_replica(pg_url, daemon_factory, tmp_path):
    # pg_url first: its database is dropped after the daemons stopped (teardown runs in reverse)
    nodes = Nodes(daemon_factory, pg_url, tmp_path)
    assert wait_for(lambda: all((md := nodes.metadata(n)) is not None and sorted(md.brokers) == [1, 2, 3] for n in (1, 2, 3)), 60)
    admin = AdminClient({"bootstrap.servers": nodes.bootstrap()})
    admin.create_topics([NewTopic(TOPIC, 1, 2, config={"min.insync.replicas": "2"})])[TOPIC].result(30)
    assert wait_for(lambda: (p := nodes.partition(1)) is not None and p[0] in (1, 2, 3) and len(p[2]) == 2, 60), nodes.partition(1)
    old_leader, replicas, _isr = nodes.partition(1)
    follower = next(r for r in replicas if r != old_leader)
    newcomer = next(n for n in (1, 2, 3) if n not in replicas)

    acked: dict[bytes, int] = {}
    _produce(nodes.bootstrap(), 0, 300, acked)

    # refused requests first: nothing to cancel, an unregistered broker, a node that is not the controller
    assert _errors(nodes.ask_controller(45, _alter(None))) == [NO_REASSIGNMENT_IN_PROGRESS]
    assert _errors(nodes.ask_controller(45, _alter([3, 9]))) == [INVALID_REPLICA_ASSIGNMENT]
    ctrl = nodes.metadata(1).controller_id
    other = next(n for n in (1, 2, 3) if n != ctrl)
    assert int(nodes.ask(other, 46, ListPartitionReassignmentsRequest(topics=None)).error_code) == NOT_CONTROLLER

    # the move, with records produced while it runs
    assert _errors(nodes.ask_controller(45, _alter([newcomer, follower]))) == [0]
    listed = _ongoing(nodes.ask_controller(46, ListPartitionReassignmentsRequest(topics=None)))
    assert listed in ([(0, [newcomer, follower, old_leader], [newcomer], [old_leader])], []), listed  # [] if already complete
    _produce(nodes.bootstrap(), 300, 300, acked)
    assert wait_for(lambda: _ongoing(nodes.ask_controller(46, ListPartitionReassignmentsRequest(topics=None))) == [], 60)
    _produce(nodes.bootstrap(), 600, 100, acked)

    # every node's image shows the target; the newcomer leads (first target replica in the ISR)
    want = (newcomer, [newcomer, follower], sorted([newcomer, follower]))
    assert wait_for(lambda: all(nodes.partition(n) == want for n in (1, 2, 3)), 60), [nodes.partition(n) for n in (1, 2, 3)]

    # the newcomer's log has the records: read them back from it (the leader), all, once, in order
    log_n = tmp_path / f"node{newcomer}" / "logs" / f"{TOPIC}-0"
    assert log_n.is_dir() and sum(f.stat().st_size for f in log_n.glob("*.log")) > 0
    records = _read_all(nodes.bootstrap(newcomer))
    values = [v for _o, v in records]
    assert len(acked) == 700 and set(acked) <= set(values)
    assert len(values) == len(set(values)) and values == sorted(values)
    assert all(acked[v] == off for off, v in records if v in acked)

    # the old leader is no longer a replica: its log is deleted
    assert wait_for(lambda: not (tmp_path / f"node{old_leader}" / "logs" / f"{TOPIC}-0").exists(), 30)

    # the log folds the same in every engine (the controller's own snapshots included)
    out = subprocess.run(
        [sys.executable, str(ROOT / "app.py"), "replay", "--verify", "--json", "--url", pg_url, "--engine", "python", "--engine", "duckdb",
         "--domain", "controller", "--out", str(tmp_path / "replay")],
        cwd=str(ROOT), capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    import pyarrow.parquet as pq

    for engine in ("python", "duckdb"):
        rows = pq.read_table(tmp_path / "replay" / engine / "controller_replicas.parquet").to_pylist()
        mine = [(r["kind"], r["idx"], r["broker_id"]) for r in rows if r["topic"] == TOPIC]
        assert sorted(x for x in mine if x[0] != "isr") == [("replica", 0, newcomer), ("replica", 1, follower)], (engine, mine)
        assert sorted(b for k, _i, b in mine if k == "isr") == sorted([newcomer, follower]), (engine, mine)
    assert json.loads(out.stdout) is not None
