"""Three real daemons (``app.py run``) sharing one PostgreSQL event log, under SIGKILL (issue 15).

* The cluster is visible the Kafka way: Metadata lists the three brokers, DescribeCluster (60)
  shows three nodes and an active controller.
* A topic with RF=3 and ``min.insync.replicas=2`` takes a continuous numbered load from an
  idempotent ``acks=all`` producer while the node leading partition 0 is SIGKILLed — the
  ``app.py run`` process and every process of its Thespian actor system — restarted on the same
  data dir and waited for until it is back in every ISR, five times over; then the active
  controller's node is killed once: another node takes the role and producing goes on; then
  the active controller's database session is ended while its process lives: the cluster gets
  an active controller again (CreateTopics works) and producing goes on.
* A Produce for partition 0 sent to a follower of it answers NOT_LEADER_OR_FOLLOWER.
* At the end a fresh consumer reads every partition to its high watermark: every record whose
  delivery report was OK is there exactly once, at the partition and offset the report gave (when
  it gave one: librdkafka acknowledges some records implicitly, without an offset), and
  each partition holds the producer's records in the order it sent them (Kafka's guarantees for
  acks=all with ``min.insync.replicas`` and the idempotent producer, KIP-98 / KIP-101).

Only properties are asserted; every wait has a generous bound and none is measured.
"""

from __future__ import annotations

import datetime
import threading
from collections import defaultdict
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.static.primitive import i16, i32

from store import record_batch as rb
from tests.e2e.conftest import free_port
from tests.e2e.helpers import wait_for
from wire.cluster import BrokerChannel

TOPIC = "c"
PARTITIONS = 3
ROUNDS = 5
NOT_LEADER_OR_FOLLOWER = 6


class Cluster:
    """Nodes 1..3 of one cluster on 127.0.0.1: each keeps its data dir and ports across restarts."""

    def __init__(self, daemon_factory, pg_url: str, base: Path, overrides: dict[str, str] | None = None) -> None:
        self.factory = daemon_factory
        self.pg_url = pg_url
        self.base = base
        self.overrides = dict(overrides or {})
        self.ports = {n: (free_port(), free_port()) for n in (1, 2, 3)}
        self.nodes = {n: self.start(n) for n in (1, 2, 3)}

    def start(self, n: int):
        """Start (or restart, on the same data dir and ports) node ``n``; returns its daemon."""
        d = self.base / f"node{n}"
        proc = self.factory(
            d, self.ports[n][0], self.ports[n][1],
            **{"node.id": str(n), "log.dirs": str(d / "logs"), "event.log.url": self.pg_url,
               "broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500", **self.overrides},
        )
        if hasattr(self, "nodes"):
            self.nodes[n] = proc
        return proc

    def bootstrap(self, *nodes: int) -> str:
        """Bootstrap servers of ``nodes`` (all three by default)."""
        return ",".join(f"127.0.0.1:{self.ports[n][0]}" for n in (nodes or (1, 2, 3)))

    def metadata(self, *nodes: int):
        """confluent-kafka's ``ClusterMetadata`` as one of ``nodes`` answers it (None on failure)."""
        try:
            return AdminClient({"bootstrap.servers": self.bootstrap(*nodes)}).list_topics(timeout=10)
        except Exception:
            return None

    def partitions(self, *nodes: int, topic: str = TOPIC) -> dict[int, tuple[int, list[int], list[int]]]:
        """partition → (leader, replicas, sorted ISR) of ``topic``, as ``nodes`` see it."""
        md = self.metadata(*nodes)
        t = md.topics.get(topic) if md is not None else None
        if t is None or t.error is not None:
            return {}
        return {p.id: (p.leader, list(p.replicas), sorted(p.isrs)) for p in t.partitions.values()}

    def all_in_sync(self) -> bool:
        """Every partition has all three nodes in its ISR, on every node's metadata."""
        want = {p: [1, 2, 3] for p in range(PARTITIONS)}
        return all({p: v[2] for p, v in self.partitions(n).items()} == want for n in (1, 2, 3))

    def kill(self, n: int) -> None:
        """SIGKILL node ``n``: its ``app.py run`` process and its whole actor system."""
        d = self.nodes[n]
        assert d.actor_pids(), "the daemon recorded no actor-system session to kill"
        d.kill()
        assert d.all_pids() == [], f"processes of node {n} survived SIGKILL"


class Load:
    """An idempotent ``acks=all`` producer writing ``%09d``-numbered records round robin over the
    partitions from a thread until :meth:`stop`; delivery reports are kept by value."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.failed: dict[bytes, str] = {}
        self.sent: dict[bytes, int] = {}
        self.fatal: list[str] = []
        #: partition → the highest record number acknowledged on it; the last number sent
        self.highest: dict[int, int] = {}
        self.last_sent = -1
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cluster-load", daemon=True)

    def start(self) -> "Load":
        self._thread.start()
        return self

    def acked_count(self) -> int:
        with self.lock:
            return len(self.acked)

    def acked_beyond(self, number: int) -> bool:
        """Whether every partition has an acknowledged record numbered above ``number``."""
        with self.lock:
            return all(self.highest.get(p, -1) > number for p in range(PARTITIONS))

    def _on_delivery(self, err, msg) -> None:
        with self.lock:
            if err is None:
                self.acked[msg.value()] = (msg.partition(), msg.offset())
                self.highest[msg.partition()] = max(self.highest.get(msg.partition(), -1), int(msg.value()))
            else:
                self.failed[msg.value()] = err.name()

    def _on_error(self, err) -> None:
        if err.fatal():
            self.fatal.append(str(err))

    def _run(self) -> None:
        p = Producer({
            "bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
            "linger.ms": 5, "message.timeout.ms": 120_000, "retry.backoff.ms": 100,
            "error_cb": self._on_error,
        })
        i = 0
        while not self._stop.is_set() and not self.fatal:
            value = b"%09d" % i
            try:
                p.produce(TOPIC, value, partition=i % PARTITIONS, on_delivery=self._on_delivery)
            except BufferError:
                p.poll(0.1)
                continue
            self.sent[value] = i % PARTITIONS
            self.last_sent = i
            i += 1
            p.poll(0.002)  # ~ a few hundred records/s: a steady load, not a benchmark
        p.flush(150)
        self.remaining = len(p)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(180)
        assert not self._thread.is_alive(), "the producer did not finish flushing"


def read_all(bootstrap: str) -> dict[int, list[tuple[int, bytes]]]:
    """partition → [(offset, value)] of every record below the high watermark, in log order."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "cluster-e2e-check", "enable.auto.commit": False})
    try:
        ends = {p: c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)[1] for p in range(PARTITIONS)}
        c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}

        def done() -> bool:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                out[m.partition()].append((m.offset(), m.value()))
            return all((out[p][-1][0] + 1 if out[p] else 0) >= ends[p] for p in range(PARTITIONS))

        assert wait_for(done, 120, 0), f"read {({p: len(v) for p, v in out.items()})} of {ends}"
        return out
    finally:
        c.close()


def produce_raw(port: int, partition: int) -> int:
    """One Produce v9 (acks=1) of one record for ``partition`` straight to ``port`` through a
    :class:`wire.cluster.BrokerChannel`; returns the partition's error code."""
    ch = BrokerChannel("127.0.0.1", port, "cluster-e2e-raw")
    try:
        req = ProduceRequest(
            transactional_id=None, acks=i16(1), timeout=datetime.timedelta(milliseconds=10_000),
            topic_data=(TopicProduceData(name=TOPIC, partition_data=(PartitionProduceData(index=i32(partition), records=rb.build_batch([(None, b"raw")])),)),),
        )
        return int(ch.ask(0, 9, req).responses[0].partition_responses[0].error_code)
    finally:
        ch.close()


def terminate_controller_lease(pg_url: str) -> int:
    """End the database session holding the cluster's controller lease (an advisory lock of the
    test's own database); returns how many sessions were ended."""
    import psycopg

    dbname = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(f"host=127.0.0.1 port=5432 dbname={dbname} user=postgres", autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
            " WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()"
        ).fetchall()
    return sum(1 for (ok,) in rows if ok)


def controller_elections(pg_url: str) -> int:
    """How many ControllerElected events the shared log's controller stream holds."""
    import psycopg

    dbname = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(f"host=127.0.0.1 port=5432 dbname={dbname} user=postgres", autocommit=True) as conn:
        return int(conn.execute("SELECT count(*) FROM events WHERE stream_id = 'controller' AND event_type = 'controller.ControllerElected'").fetchone()[0])


def create_topic_ok(bootstrap: str, name: str, errors: list[str]) -> bool:
    """Whether CreateTopics of ``name`` (1 partition, RF 3) succeeds now (or it already exists);
    the error of a failed attempt is appended to ``errors``."""
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})  # held: a collected client cancels its futures
        admin.create_topics([NewTopic(name, 1, 3)], request_timeout=10)[name].result(15)
        return True
    except Exception as exc:  # noqa: BLE001 - NOT_CONTROLLER, timeouts: not yet
        errors.append(str(exc))
        return "TOPIC_ALREADY_EXISTS" in str(exc)


def test_three_nodes_keep_every_acknowledged_record_over_leader_sigkills(daemon_factory, pg_url, tmp_path):
    cl = Cluster(daemon_factory, pg_url, tmp_path)
    admin = AdminClient({"bootstrap.servers": cl.bootstrap()})

    # -- the cluster as clients see it
    # every node follows the shared log on its own, as Kafka brokers follow the metadata log:
    # wait until each one lists all three before asking whichever node the client picks
    assert wait_for(lambda: all((md := cl.metadata(n)) is not None and sorted(md.brokers) == [1, 2, 3] for n in (1, 2, 3)), 60)
    desc = admin.describe_cluster(request_timeout=30).result(30)
    assert sorted(n.id for n in desc.nodes) == [1, 2, 3]
    assert desc.controller is not None and desc.controller.id in (1, 2, 3)

    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(30)
    assert wait_for(cl.all_in_sync, 60)
    parts = cl.partitions()
    assert all(sorted(v[1]) == [1, 2, 3] for v in parts.values())

    # -- a request for a partition to a follower of it: NOT_LEADER_OR_FOLLOWER
    leader0 = parts[0][0]
    follower = next(n for n in (1, 2, 3) if n != leader0)
    assert produce_raw(cl.ports[follower][0], 0) == NOT_LEADER_OR_FOLLOWER

    load = Load(cl.bootstrap()).start()
    try:
        assert wait_for(lambda: load.acked_count() >= 200, 60), f"no load: {load.failed or load.fatal}"

        def kill_and_return(victim: int, moved) -> None:
            """SIGKILL ``victim``; wait until ``moved(survivors)`` holds on the survivors' view and
            the producer is acknowledged again; restart it; wait until it is in every ISR."""
            survivors = tuple(n for n in (1, 2, 3) if n != victim)
            cl.kill(victim)
            assert wait_for(lambda: moved(survivors), 60), f"no failover from node {victim}: {cl.partitions(*survivors)}"
            mark = load.last_sent  # records sent from now on are acknowledged on every partition
            assert wait_for(lambda: load.acked_beyond(mark), 60), f"producing stopped after killing node {victim}: {load.fatal}"
            cl.start(victim)
            assert wait_for(cl.all_in_sync, 90), f"node {victim} did not rejoin every ISR: {cl.partitions()}"

        # -- the leader of partition 0 is SIGKILLed, again and again
        for _ in range(ROUNDS):
            victim = cl.partitions()[0][0]
            assert victim in (1, 2, 3)
            kill_and_return(victim, lambda s, v=victim: (p := cl.partitions(*s)) != {} and all(
                leader in s and v not in isr for leader, _r, isr in p.values()))

        # -- the active controller's node is SIGKILLed once: another node takes the role
        ctrl = cl.metadata().controller_id
        assert ctrl in (1, 2, 3)

        def controller_moved(s) -> bool:
            md = cl.metadata(*s)
            return md is not None and md.controller_id in s and sorted(md.brokers) == sorted(s)

        kill_and_return(ctrl, controller_moved)
        mark = load.last_sent
        assert wait_for(lambda: load.acked_beyond(mark), 60), "producing stopped after the restart"

        # -- the active controller's database session dies while its process lives (a PostgreSQL
        # restart, a network blip): it steps down, and the cluster has an active controller
        # again (the nodes claim the free lease; before, nobody did and the cluster stayed
        # without one)
        elections = controller_elections(cl.pg_url)
        assert terminate_controller_lease(cl.pg_url) == 1
        assert wait_for(lambda: controller_elections(cl.pg_url) > elections, 60), "nobody claimed the controller role after its lease was lost"
        errors: list[str] = []
        assert wait_for(lambda: create_topic_ok(cl.bootstrap(), "after-lease-loss", errors), 60), f"no active controller after the lease was lost: {errors[-3:]}"
        mark = load.last_sent
        assert wait_for(lambda: load.acked_beyond(mark), 60), "producing stopped after the controller lost its lease"
    finally:
        load.stop()

    assert load.fatal == [], f"the idempotent producer failed fatally: {load.fatal}"
    assert load.remaining == 0

    # -- every acknowledged record exactly once, where its ack said, in the producer's order
    log = read_all(cl.bootstrap())
    where: dict[bytes, list[tuple[int, int]]] = defaultdict(list)
    for p, recs in log.items():
        for off, v in recs:
            where[v].append((p, off))
    lost = [v for v in load.acked if v not in where]
    duplicated = {v: w for v, w in where.items() if len(w) > 1}
    # librdkafka acknowledges records "implicitly" (no offset) when a later batch of the
    # idempotent producer succeeded after a retriable failure: those are checked for presence only
    misplaced = {v: (where[v], a) for v, a in load.acked.items() if v in where and a[1] is not None and where[v][0] != a}
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {lost[:5]}"
    assert not duplicated, f"{len(duplicated)} records duplicated, e.g. {list(duplicated.items())[:5]}"
    assert not misplaced, f"{len(misplaced)} records not at their acknowledged offset, e.g. {list(misplaced.items())[:5]}"
    assert all(v in load.sent for v in where), "records the producer never sent"
    for p, recs in log.items():
        values = [v for _off, v in recs]
        assert values == sorted(values), f"partition {p} out of the producer's order"
        assert all(load.sent[v] == p for v in values)
    assert len(load.acked) >= 1000, f"only {len(load.acked)} records acknowledged ({len(load.failed)} failed)"
