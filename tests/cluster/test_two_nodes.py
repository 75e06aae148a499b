"""Two in-process nodes on 127.0.0.1 (a LogRegistry + KafkaListener each) over one fake metadata
image: node 1 leads t-0, node 2 follows it with the real ReplicaFetcherThread speaking Kafka's
Fetch and OffsetForLeaderEpoch. acks=-1 waits for the follower; without it the produce times
out and the ISR shrinks through AlterPartition; a returning follower rejoins; a follower with a
divergent log truncates by leader epoch (KIP-101, reference #63) before it fetches."""

from __future__ import annotations

import datetime

import pytest

from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.static.primitive import i16, i32

from store import record_batch as rb
from tests.cluster.fakes import FakeClusterView, RegistryBackend
from wire.cluster_view import PartitionState
from wire.dispatch import KafkaDispatcher
from wire.logs import LogRegistry
from wire.cluster import BrokerChannel
from wire.replica_fetcher import FetcherConfig, ReplicaFetcherManager
from wire.server import KafkaListener

FAST = FetcherConfig(wait_max_ms=100, backoff_ms=50, socket_timeout_ms=10_000)


class Cluster:
    """Nodes 1 and 2: registries, listeners, views; node 2's fetcher manager (:meth:`follow`)."""

    def __init__(self, tmp_path, lag_ms: int, min_isr: str) -> None:
        self.views = FakeClusterView.linked((1, 2))
        self.regs: dict[int, LogRegistry] = {}
        self.listeners: dict[int, KafkaListener] = {}
        for n, view in self.views.items():
            reg = LogRegistry(str(tmp_path / f"node{n}"), lambda _t: {"min.insync.replicas": min_isr}, cluster=view, replica_lag_time_max_ms=lag_ms)
            self.regs[n] = reg
            lst = KafkaListener("127.0.0.1", 0, KafkaDispatcher(RegistryBackend(reg), auto_create_topics=False)).start()
            self.listeners[n] = lst
            view.endpoints[n] = ("127.0.0.1", lst.port)
        self.fetchers: ReplicaFetcherManager | None = None
        self.managers: list[ReplicaFetcherManager] = []

    def follow(self, config: FetcherConfig = FAST, node: int = 2) -> ReplicaFetcherManager:
        """Start ``node``'s replica fetchers (node 2's are :attr:`fetchers`) for t-0."""
        m = ReplicaFetcherManager(self.views[node], self.regs[node].open, config, lambda: [("t", 0)]).start()
        self.managers.append(m)
        if node == 2:
            self.fetchers = m
        return m

    def produce(self, records: bytes, acks: int = -1, timeout_ms: int = 30_000, node: int = 1):
        """One Produce v9 to ``node``; returns the partition response."""
        conn = BrokerChannel("127.0.0.1", self.listeners[node].port, "test-producer")
        try:
            req = ProduceRequest(
                transactional_id=None,
                acks=i16(acks),
                timeout=datetime.timedelta(milliseconds=timeout_ms),
                topic_data=(TopicProduceData(name="t", partition_data=(PartitionProduceData(index=i32(0), records=records),)),),
            )
            resp = conn.ask(0, 9, req)
            return resp.responses[0].partition_responses[0]
        finally:
            conn.close()

    def wait_leader(self, pred, timeout_s: float = 20.0, node: int = 1) -> bool:
        """Block until ``node``'s leader state of t-0 satisfies ``pred`` (the manager's condition)."""
        rm = self.regs[node].replicas
        with rm._cond:  # noqa: SLF001 - notified on every state change
            return rm._cond.wait_for(lambda: (led := rm._led.get(("t", 0))) is not None and pred(led.state), timeout=timeout_s)  # noqa: SLF001

    def close(self) -> None:
        for m in self.managers:
            m.close()
        for lst in self.listeners.values():
            lst.stop()
        for reg in self.regs.values():
            reg.close()


@pytest.fixture
def cluster(tmp_path):
    made = []

    def make(lag_ms: int = 30_000, min_isr: str = "2", isr=(1, 2), leader_epoch: int = 0) -> Cluster:
        c = Cluster(tmp_path / str(len(made)), lag_ms, min_isr)
        made.append(c)
        c.views[1].set("t", 0, PartitionState((1, 2), tuple(isr), 1, leader_epoch, 0))
        return c

    yield make
    for c in made:
        c.close()


def _batch(n: int, tag: str = "v") -> bytes:
    return rb.build_batch([(None, f"{tag}{i}".encode()) for i in range(n)])


def test_acks_all_waits_until_the_follower_has_the_records(cluster):
    c = cluster()
    # a follower long poll far longer than the produce timeout: the leader's append must wake
    # it (else the produce would time out waiting for the follower's next fetch)
    c.follow(FetcherConfig(wait_max_ms=20_000, backoff_ms=50, socket_timeout_ms=30_000))
    c.produce(_batch(1), acks=1)  # the follower's first fetch is parked at the leader's LEO
    r = c.produce(_batch(2), timeout_ms=5_000)
    assert int(r.error_code.value) == 0 and int(r.base_offset) == 1
    # answered only once the HW covered offset 2, i.e. node 2 fetched from offset 3
    assert c.regs[2].open("t", 0).log_end_offset == 3
    assert c.regs[1].open("t", 0).high_watermark == 3
    r = c.produce(_batch(2), acks=-1, timeout_ms=5_000)
    assert int(r.error_code.value) == 0 and int(r.base_offset) == 3
    leader, follower = c.regs[1].open("t", 0), c.regs[2].open("t", 0)
    assert follower.read(0, 1 << 20, max_offset=5).records == leader.read(0, 1 << 20, max_offset=5).records
    assert follower.leader_epoch_cache.entries() == leader.leader_epoch_cache.entries()


def test_without_the_follower_acks_all_times_out_the_isr_shrinks_and_it_rejoins(cluster):
    c = cluster(lag_ms=1500)  # short enough for a test, long enough for a loaded machine
    c.follow()
    assert int(c.produce(_batch(1)).error_code.value) == 0
    c.fetchers.close()  # node 2 stops fetching
    r = c.produce(_batch(1), timeout_ms=200)
    assert r.error_code.name == "request_timed_out"
    # the isr-expiration task (every lag/2) removes node 2 once it lags > replica.lag.time.max.ms
    assert c.views[1].wait_alter(lambda a: a[4] == (1,))
    assert c.wait_leader(lambda st: st.isr == (1,))
    assert c.produce(_batch(1)).error_code.name == "not_enough_replicas"  # ISR 1 < min.insync.replicas 2
    assert c.produce(_batch(1), acks=1).error_code.name == "none"
    # node 2 comes back, catches up and is added again
    c.follow()
    assert c.views[1].wait_alter(lambda a: a[4] == (1, 2))
    assert c.wait_leader(lambda st: st.isr == (1, 2))
    assert int(c.produce(_batch(1)).error_code.value) == 0
    assert c.regs[2].open("t", 0).log_end_offset == c.regs[1].open("t", 0).log_end_offset


def test_divergent_follower_truncates_by_leader_epoch_then_fetches(cluster):
    """#63: node 2 {0@0, 2@1, 4@2}, node 1 {1@0, 3@1, 5@2}; node 1 leads at epoch 6. Node 2 asks
    4 → (3, 2), 2 → (1, 1), 0 → (0, 0), truncates to 0 and refetches everything."""
    c = cluster(isr=(1,), min_isr="1", leader_epoch=6)
    for i, (e1, e2) in enumerate([(1, 0), (3, 2), (5, 4)]):
        c.regs[1].open("t", 0).append_as_follower(rb.build_batch([(None, b"L%d" % i)], base_offset=i, partition_leader_epoch=e1), 1)
        c.regs[2].open("t", 0).append_as_follower(rb.build_batch([(None, b"F%d" % i)], base_offset=i, partition_leader_epoch=e2), 1)
    c.regs[1].read("t", 0, 0, 1, current_leader_epoch=6)  # node 1 becomes leader (epoch 6 from offset 3)
    c.follow()
    assert c.wait_leader(lambda st: (r := st.remote(2)) is not None and r.leo == 3)
    leader, follower = c.regs[1].open("t", 0), c.regs[2].open("t", 0)
    assert follower.read(0, 1 << 20, max_offset=3).records == leader.read(0, 1 << 20, max_offset=3).records
    assert [e.epoch for e in follower.leader_epoch_cache.entries()] == [1, 3, 5]
    # and the follower, caught up, joins the ISR
    assert c.wait_leader(lambda st: st.isr == (1, 2))


def test_leader_change_truncates_the_old_leaders_uncommitted_tail(cluster):
    """KIP-101's scenario: node 1 leads at epoch 0 and both have offsets 0-1; node 1 then takes
    offsets 2-3 with acks=1 that node 2 never fetches. Node 2 is elected (epoch 1, ISR {2}) and
    writes offset 2 in epoch 1. Node 1, now a follower, asks OffsetForLeaderEpoch(0) → (0, 2),
    cuts its tail at 2 and fetches node 2's offset 2: the logs converge on the new leader's."""
    c = cluster(min_isr="1")
    c.follow()
    assert c.produce(_batch(2, "a")).error_code.name == "none"  # both have 0-1
    c.fetchers.close()
    assert c.produce(_batch(2, "lost"), acks=1).error_code.name == "none"  # only node 1: 2-3
    c.views[1].set("t", 0, PartitionState((1, 2), (2,), 2, 1, 1))  # node 2 elected, epoch 1
    assert c.produce(_batch(1, "new"), acks=1, node=2).error_code.name == "none"  # offset 2 at epoch 1
    assert c.produce(_batch(1), node=1).error_code.name == "not_leader_or_follower"
    c.follow(node=1)
    assert c.wait_leader(lambda st: (r := st.remote(1)) is not None and r.leo == 3, node=2)
    old, new = c.regs[1].open("t", 0), c.regs[2].open("t", 0)
    assert old.log_end_offset == 3
    assert old.read(0, 1 << 20, max_offset=3).records == new.read(0, 1 << 20, max_offset=3).records
    assert [(e.epoch, e.start_offset) for e in old.leader_epoch_cache.entries()] == [(0, 0), (1, 2)]
    assert c.wait_leader(lambda st: st.isr == (2, 1), node=2)  # caught up: back in the ISR


def _produce_frame(correlation_id: int, records: bytes, acks: int, timeout_ms: int = 20_000) -> bytes:
    from wire.protocol import encode_request, request_header

    req = ProduceRequest(transactional_id=None, acks=i16(acks), timeout=datetime.timedelta(milliseconds=timeout_ms),
                         topic_data=(TopicProduceData(name="t", partition_data=(PartitionProduceData(index=i32(0), records=records),)),))
    return encode_request(request_header(0, 9, correlation_id), req)


def test_a_produce_waiting_for_replication_does_not_hold_up_the_next_request_on_its_connection(cluster):
    """Two produces pipelined on one connection (as an idempotent producer keeps up to five in
    flight): the acks=-1 one waits for the follower, the acks=1 one behind it is appended
    meanwhile; both are answered, in request order, once the follower fetched."""
    import socket

    from tests.e2e.helpers import read_frame, readable, wait_for
    from wire.protocol import decode_response

    c = cluster()
    leader = c.regs[1].open("t", 0)
    with socket.create_connection(("127.0.0.1", c.listeners[1].port), timeout=20) as s:
        s.sendall(_produce_frame(1, _batch(2, "a"), acks=-1) + _produce_frame(2, _batch(3, "b"), acks=1))
        wait_for(lambda: leader.log_end_offset >= 5, 10, 0.01)
        assert leader.log_end_offset == 5, "the acks=1 produce behind the waiting acks=-1 one was not appended"
        assert not readable(s, 0.3), "answered before the follower had the records"
        c.follow()
        answers = [decode_response(read_frame(s), 0, 9) for _ in range(2)]
    assert [cid for cid, _ in answers] == [1, 2]
    parts = [resp.responses[0].partition_responses[0] for _, resp in answers]
    assert [(int(p.error_code.value), int(p.base_offset)) for p in parts] == [(0, 0), (0, 2)]
    assert leader.high_watermark >= 2
