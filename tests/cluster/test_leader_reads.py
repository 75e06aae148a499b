"""A share group's coordinator that keeps no replica of a partition reads it from the partition's
leader with Kafka's Fetch (:mod:`wire.leader_reads`), and a ShareFetch waiting on such a partition
is woken by the leader's append, not by ``MaxWaitMs``.

Two in-process nodes on 127.0.0.1 over one fake metadata image: node 2 leads ``t``-0 and ``t``-1
with replicas ``(2,)`` only (replication factor 1: Kafka's default) and serves Kafka requests on
a real listener; node 1 hosts the share group's actor (in-process, on a real event log) and its
:class:`wire.share_client.ShareClient`, with no listener and no replica. Every waiting fetch has
MaxWaitMs = 10 minutes, so a missed wake-up fails the test instead of passing late."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from actors.share.host import ShareGroupHost
from store import record_batch as rb
from store.record_batch import build_batch
from tests.cluster.fakes import FakeClusterView, RegistryBackend
from tests.wire.test_share_client import TID, FakeController
from wire.backend import AckBatch, SharePartitionAck
from wire.cluster_view import PartitionState
from wire.dispatch import KafkaDispatcher
from wire.leader_reads import LeaderReads, trim_batches
from wire.logs import LogRegistry
from wire.server import KafkaListener
from wire.share_client import ShareClient

FOREVER_MS = 600_000
JOIN_S = 30
G = "g"


class _Backend(RegistryBackend):
    """The leader's data plane, ListOffsets included."""

    def list_offset(self, topic, partition, timestamp):
        return self.logs.list_offset(topic, partition, timestamp)


class Nodes:
    """Node 2 (leader, listener) and node 1 (coordinator: share group host and client, LeaderReads)."""

    def __init__(self, tmp_path: Path) -> None:
        self.views = FakeClusterView.linked((1, 2))
        self.leader = LogRegistry(str(tmp_path / "node2"), cluster=self.views[2])
        self.listener = KafkaListener("127.0.0.1", 0, KafkaDispatcher(_Backend(self.leader), auto_create_topics=False)).start()
        self.views[1].endpoints[2] = ("127.0.0.1", self.listener.port)
        for p in (0, 1):
            self.views[1].set("t", p, PartitionState((2,), (2,), 2, 0, 0))
        self.coord_dir = tmp_path / "node1"
        self.coord = LogRegistry(str(self.coord_dir), cluster=self.views[1])
        view = self.views[1]
        self.reads = LeaderReads(lambda t, p: view.partition_state(t, p).leader, view.broker_endpoint, self.coord.waits, 1, wait_max_ms=200,
                                 timeout_ms=10_000)
        self.coord.leader_reads = self.reads
        cfg = {"event.log.url": f"sqlite:///{tmp_path}/events.db", "event.log.sqlite.synchronous": "NORMAL",
               "group.share.record.lock.duration.ms": "60000", "group.share.min.record.lock.duration.ms": "1000"}
        self.host = ShareGroupHost(cfg)
        self.sc = ShareClient(self.host, FakeController(), self.coord, cfg)
        assert self.sc.alter_configs(G, [("share.auto.offset.reset", 0, "earliest")], False) == (None, None)

    def produce(self, partition: int, *values: bytes) -> None:
        assert self.leader.append("t", partition, build_batch([(None, v) for v in values])).error is None

    def close(self) -> None:
        self.reads.close()
        self.host.close()
        self.listener.stop()
        self.coord.close()
        self.leader.close()


@pytest.fixture
def nodes(tmp_path):
    n = Nodes(tmp_path)
    yield n
    n.close()


class Member:
    def __init__(self, sc: ShareClient, name: str) -> None:
        self.sc = sc
        hb = sc.heartbeat(G, name, 0, None, ["t"], "c", "h")
        assert hb.error is None, hb
        self.id = hb.member_id
        r = sc.fetch(G, self.id, 0, [(TID, 0), (TID, 1)], [], [], 500, 0)
        assert r.error is None, r
        self.epoch = 1

    def fetch(self, max_wait_ms: int = FOREVER_MS, acks=()):
        r = self.sc.fetch(G, self.id, self.epoch, [], [], list(acks), 500, max_wait_ms)
        self.epoch += 1
        assert r.error is None, r
        return r


def _values(records: bytes) -> list[bytes]:
    return [rec.value for h in rb.iter_batches(records) for rec in rb.iter_records(records, h.position)]


def test_the_coordinator_acquires_from_the_leader_and_answers_its_bytes(nodes: Nodes):
    m = Member(nodes.sc, "m")
    nodes.produce(0, b"a", b"b")
    nodes.produce(0, b"c")
    nodes.produce(1, b"d")
    r = m.fetch(max_wait_ms=0)
    got = {p.partition: p for p in r.partitions}
    assert got[0].error is None and [(a.first_offset, a.last_offset, a.delivery_count) for a in got[0].acquired] == [(0, 2, 1)]
    assert _values(got[0].records) == [b"a", b"b", b"c"]
    assert _values(got[1].records) == [b"d"]
    assert not nodes.coord.hosts("t", 0) and not (nodes.coord_dir / "t-0").exists(), "the coordinator keeps no replica"
    # acknowledge on the next fetch: the records are accepted, nothing is left to acquire
    r = m.fetch(max_wait_ms=0, acks=[SharePartitionAck(TID, 0, (AckBatch(0, 2, (1,)),)), SharePartitionAck(TID, 1, (AckBatch(0, 0, (1,)),))])
    assert all(p.ack_error is None and not p.acquired for p in r.partitions)
    nodes.produce(1, b"e")
    r = m.fetch(max_wait_ms=0)
    assert [(p.partition, _values(p.records)) for p in r.partitions if p.acquired] == [(1, [b"e"])]


def test_a_share_fetch_waiting_on_a_partition_led_elsewhere_is_answered_when_the_leader_appends(nodes: Nodes):
    m = Member(nodes.sc, "m")
    out: list = []
    parked = threading.Event()
    real = nodes.coord.waits.wait

    def wait(seen, timeout_s, *party):
        parked.set()
        return real(seen, timeout_s, *party)

    nodes.coord.waits.wait = wait
    th = threading.Thread(target=lambda: out.append(m.fetch()), daemon=True)
    th.start()
    assert parked.wait(JOIN_S), "the fetch should wait: nothing is there to acquire"
    nodes.produce(1, b"late")
    th.join(JOIN_S)
    assert not th.is_alive(), "the fetch was not woken by the leader's append (it would wait MaxWaitMs)"
    got = [(p.partition, _values(p.records)) for p in out[0].partitions if p.acquired]
    assert got == [(1, [b"late"])]
    # the watcher keeps watching from the new high watermark: the next wait is woken again
    parked.clear()
    th = threading.Thread(target=lambda: out.append(m.fetch()), daemon=True)
    th.start()
    assert parked.wait(JOIN_S)
    nodes.produce(0, b"again")
    th.join(JOIN_S)
    assert not th.is_alive() and [(p.partition, _values(p.records)) for p in out[1].partitions if p.acquired] == [(0, [b"again"])]


def test_a_partition_whose_leader_cannot_be_reached_is_answered_not_leader(nodes: Nodes):
    m = Member(nodes.sc, "m")
    nodes.produce(0, b"a")
    assert [p.partition for p in m.fetch(max_wait_ms=0).partitions if p.acquired] == [0]
    with socket.socket() as s:  # a port nothing listens on: node 2's new endpoint
        s.bind(("127.0.0.1", 0))
        nodes.views[1].endpoints[2] = s.getsockname()
    r = m.fetch(max_wait_ms=0, acks=[SharePartitionAck(TID, 0, (AckBatch(0, 0, (1,)),))])
    assert sorted(p.partition for p in r.partitions) == [0, 1], "each partition once (the actor's own answer is not added)"
    assert {p.partition: (p.error, p.ack_error) for p in r.partitions} == {0: ("NOT_LEADER_OR_FOLLOWER", "NOT_LEADER_OR_FOLLOWER"),
                                                                           1: ("NOT_LEADER_OR_FOLLOWER", None)}
    r = m.fetch(max_wait_ms=300)  # a waiting fetch with nothing readable answers, once per partition
    assert sorted((p.partition, p.error) for p in r.partitions) == [(0, "NOT_LEADER_OR_FOLLOWER"), (1, "NOT_LEADER_OR_FOLLOWER")]
    # the leader is back: the unapplied acknowledgement is sent again and applies
    nodes.views[1].endpoints[2] = ("127.0.0.1", nodes.listener.port)
    r = m.fetch(max_wait_ms=0, acks=[SharePartitionAck(TID, 0, (AckBatch(0, 0, (1,)),))])
    assert {p.partition: (p.error, p.ack_error) for p in r.partitions} == {0: (None, None), 1: (None, None)}


def test_reads_below_the_leaders_log_start_start_there_and_list_offsets_asks_the_leader(nodes: Nodes):
    for v in (b"a", b"b", b"c"):
        nodes.produce(0, v)
    assert nodes.leader.delete_records("t", 0, 2) == (None, 2)
    r = nodes.reads.read("t", 0, 0, 1 << 20)
    assert (r.error, r.log_start_offset, r.high_watermark, _values(r.records)) == (None, 2, 3, [b"c"])
    assert nodes.reads.read("t", 0, 7, 1 << 20).error == "OFFSET_OUT_OF_RANGE"
    assert nodes.reads.list_offset("t", 0, -2) == (None, 2)  # earliest
    assert nodes.reads.list_offset("t", 0, -1) == (None, 3)  # latest
    assert nodes.coord.share_list_offset("t", 0, -1) == (None, 3)
    assert nodes.coord.share_offsets("t", 0) == (2, 3)


def test_trim_batches_keeps_what_a_local_read_with_the_same_limits_keeps(tmp_path):
    logs = LogRegistry(str(tmp_path / "logs"))
    try:
        for n in (2, 3, 1, 4):  # batches [0,1] [2,4] [5] [6,9]
            logs.append("t", 0, build_batch([(None, b"x")] * n))
        whole = logs.read("t", 0, 0, 1 << 20).records
        for offset, max_records, min_batches in [(0, None, 1), (3, None, 1), (0, 3, 1), (3, 1, 1), (3, 1, 3), (5, 1, 1), (6, 100, 1), (10, 5, 1)]:
            local = logs.read("t", 0, offset, 1 << 20, max_records=max_records, min_batches=min_batches).records if offset < 10 else b""
            assert trim_batches(whole, offset, max_records, min_batches) == local, (offset, max_records, min_batches)
    finally:
        logs.close()


def test_a_watcher_with_nothing_to_watch_ends_and_a_later_watch_starts_a_new_one(nodes: Nodes, monkeypatch):
    """A leader's watcher thread does not outlive its use (a leader that left the cluster would
    otherwise keep one forever): once nothing was watched for ``_WATCH_IDLE_S`` it ends, and a
    later wait on that leader's partitions gets a new watcher that is woken by the append."""
    import wire.leader_reads as lr

    monkeypatch.setattr(lr, "_WATCH_IDLE_S", 0.3)
    hw = nodes.leader.read("t", 0, 0, 1 << 20).high_watermark
    woke = threading.Event()
    real_bump = nodes.coord.waits.bump

    def bump(key):
        if key == ("partition", "t", 0):
            woke.set()
        real_bump(key)

    nodes.coord.waits.bump = bump
    nodes.reads.watch("t", 0, hw)
    first = nodes.reads._watchers[2]  # noqa: SLF001
    assert sorted(nodes.reads._watchers) == [2]  # noqa: SLF001
    first.thread.join(JOIN_S)  # the key ages out after a poll, then the idle wait ends the thread
    assert not first.thread.is_alive() and sorted(nodes.reads._watchers) == []  # noqa: SLF001
    nodes.reads.watch("t", 0, hw)
    assert sorted(nodes.reads._watchers) == [2] and nodes.reads._watchers[2] is not first  # noqa: SLF001
    woke.clear()
    nodes.produce(0, b"x")  # answered by the poll in flight, or at once by the next (asked from the old high watermark)
    assert woke.wait(JOIN_S), "the new watcher did not see the leader's append"
