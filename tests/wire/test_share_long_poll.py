"""The ShareFetch purgatory (Kafka's ``DelayedShareFetch``): a fetch that acquired nothing waits
until what it waits for arrives — an append to one of its partitions, records of its group freed
(RELEASE, a closed share session, an acquisition lock that expired) — and not a moment longer; a
wake-up whose records another fetch took first goes back to waiting instead of answering empty.

Issue 14's latency tail was fetches answered at ``MaxWaitMs`` although records had arrived. Every
waiting fetch below has MaxWaitMs = 10 minutes: each test asserts that it was answered with the
records long before that (a lost or missed wake-up leaves the thread waiting and the test fails).
The group's actor is the real one, hosted in-process on a real event log; the logs are real."""

from __future__ import annotations

import threading
import time

import pytest

from actors.share.host import ShareGroupHost
from store.record_batch import build_batch
from wire.backend import AckBatch, SharePartitionAck
from wire.logs import LogRegistry
from wire.share_client import ShareClient
from wire.waits import WaitSet

from tests.wire.test_share_client import TID, FakeController as Controller

FOREVER_MS = 600_000  # MaxWaitMs of the waiting fetches: far longer than any test may take
JOIN_S = 30
G = "g"


@pytest.fixture()
def env(tmp_path):
    yield from _env(tmp_path, 1000)


@pytest.fixture()
def env_long_locks(tmp_path):
    """As ``env`` with 60 s acquisition locks: no lock expires during a test, so nothing but
    what the test does frees records."""
    yield from _env(tmp_path, 60_000)


def _env(tmp_path, lock_ms: int):
    cfg = {"event.log.url": f"sqlite:///{tmp_path}/events.db", "event.log.sqlite.synchronous": "NORMAL",
           "group.share.record.lock.duration.ms": str(lock_ms), "group.share.min.record.lock.duration.ms": "1000"}
    host = ShareGroupHost(cfg)
    logs = LogRegistry(str(tmp_path / "logs"))
    sc = ShareClient(host, Controller(), logs, cfg)
    assert sc.alter_configs(G, [("share.auto.offset.reset", 0, "earliest")], False) == (None, None)
    yield sc, logs, host
    host.close()
    logs.close()


def _produce(logs: LogRegistry, partition: int, *values: bytes) -> None:
    r = logs.append("t", partition, build_batch([(None, v) for v in values]))
    assert r.error is None


class Member:
    """One share consumer: joins, opens its session on ``partitions`` (both by default), then
    fetches."""

    def __init__(self, sc: ShareClient, name: str, partitions: tuple[int, ...] = (0, 1)) -> None:
        self.sc, self.epoch = sc, 0
        hb = sc.heartbeat(G, name, 0, None, ["t"], "c", "h")
        assert hb.error is None, hb
        self.id = hb.member_id
        r = sc.fetch(G, self.id, 0, [(TID, p) for p in partitions], [], [], 500, 0)
        assert r.error is None, r
        self.epoch = 1
        self.got: list[tuple[int, int, int]] = []  # (partition, first, delivery count)

    def fetch(self, max_wait_ms: int = FOREVER_MS, acks=(), max_records: int = 500) -> list[tuple[int, int, int, int]]:
        r = self.sc.fetch(G, self.id, self.epoch, [], [], list(acks), max_records, max_wait_ms)
        self.epoch += 1
        assert r.error is None, r
        return [(p.partition, a.first_offset, a.last_offset, a.delivery_count) for p in r.partitions for a in p.acquired]

    def acknowledge(self, partition: int, first: int, last: int, kind: int):
        r = self.sc.acknowledge(G, self.id, self.epoch, [SharePartitionAck(TID, partition, (AckBatch(first, last, (kind,)),))])
        self.epoch += 1
        assert r.error is None, r


def _waiting(member: Member, logs: LogRegistry, max_records: int = 500) -> tuple[threading.Thread, list]:
    """Start ``member``'s fetch in a thread; return once it waits in the purgatory."""
    out: list = []
    parked = threading.Event()
    real = logs.waits.wait

    def wait(seen, timeout_s, *party):
        parked.set()
        return real(seen, timeout_s, *party)

    logs.waits.wait = wait
    th = threading.Thread(target=lambda: out.append(member.fetch(max_records=max_records)), daemon=True)
    th.start()
    assert parked.wait(JOIN_S), "the fetch should wait: nothing is there to acquire"
    logs.waits.wait = real
    return th, out


def _answered(th: threading.Thread) -> bool:
    th.join(JOIN_S)
    return not th.is_alive()


def test_a_fetch_waiting_on_a_partition_is_answered_when_a_produce_to_it_is_appended(env):
    sc, logs, _ = env
    a = Member(sc, "a")
    th, out = _waiting(a, logs)
    _produce(logs, 1, b"x")
    assert _answered(th) and out == [[(1, 0, 0, 1)]]


def test_a_wakeup_whose_records_another_fetch_took_goes_back_to_waiting(env):
    """Two members wait; one record arrives and one of them gets it. The other does not answer
    empty: it keeps waiting, and gets the next record as soon as it is appended."""
    sc, logs, _ = env
    a, b = Member(sc, "a"), Member(sc, "b")
    ta, out_a = _waiting(a, logs)
    tb, out_b = _waiting(b, logs)
    _produce(logs, 0, b"first")
    deadline = time.monotonic() + JOIN_S
    while ta.is_alive() and tb.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)
    winner, loser = (ta, tb) if not ta.is_alive() else (tb, ta)
    time.sleep(0.3)  # the loser was woken too (same partition): it must still be waiting
    assert loser.is_alive(), "a fetch woken by records another fetch took answered empty"
    _produce(logs, 0, b"second")
    assert _answered(loser)
    got = sorted(out_a + out_b)
    assert got == [[(0, 0, 0, 1)], [(0, 1, 1, 1)]]


def test_one_change_wakes_one_waiter_which_passes_it_on_while_records_are_left(env):
    """Three members wait with MaxRecords 1 (a share consumer's max.poll.records); three one-record
    batches arrive in one append (one high-watermark move): the longest-waiting member is woken,
    takes one and passes the wake-up on, so each gets one — and none is answered empty."""
    sc, logs, _ = env
    members = [Member(sc, n) for n in ("a", "b", "c")]
    waiting = [_waiting(mb, logs, max_records=1) for mb in members]
    batches = b"".join(build_batch([(None, b"r%d" % i)]) for i in range(3))
    assert logs.append("t", 0, batches).error is None
    assert all(_answered(th) for th, _ in waiting)
    got = sorted(out[0][0][1] for _, out in waiting)
    assert got == [0, 1, 2]


def test_a_produce_to_another_partition_of_another_topic_does_not_wake_the_fetch(env):
    sc, logs, _ = env
    a = Member(sc, "a")
    before = logs.waits.versions([("partition", "t", 0), ("partition", "t", 1), ("group", G)])
    logs.append("other", 0, build_batch([(None, b"elsewhere")]))
    assert logs.waits.versions(before) == before  # nothing a fetch of this group waits on moved
    th, out = _waiting(a, logs)
    _produce(logs, 0, b"here")
    assert _answered(th) and out == [[(0, 0, 0, 1)]]


def test_a_release_by_another_member_ends_the_wait_with_the_released_records(env):
    sc, logs, _ = env
    a, b = Member(sc, "a"), Member(sc, "b")
    _produce(logs, 0, b"r0", b"r1", b"r2")
    assert a.fetch(0) == [(0, 0, 2, 1)]
    th, out = _waiting(b, logs)
    a.acknowledge(0, 0, 2, 2)  # RELEASE
    assert _answered(th) and out == [[(0, 0, 2, 2)]]


def test_records_freed_in_a_partition_wake_a_fetch_whose_session_holds_it(env_long_locks):
    """Sessions that hold different partitions (a client keeps one per broker it fetches from):
    records released in partition 1 must wake the fetch waiting on partition 1, even when a
    fetch whose session holds only partition 0 has waited longer. Waking that one instead loses
    the wake-up: it finds nothing to acquire and has nothing to hand on."""
    sc, logs, _ = env_long_locks
    a, b, c = Member(sc, "a", (0,)), Member(sc, "b", (1,)), Member(sc, "c", (1,))
    _produce(logs, 0, b"p0")
    _produce(logs, 1, b"p1")
    assert a.fetch(0) == [(0, 0, 0, 1)]  # a holds partition 0's record
    assert c.fetch(0) == [(1, 0, 0, 1)]  # c holds partition 1's record
    ta, out_a = _waiting(a, logs)  # the longest waiter of the group
    tb, out_b = _waiting(b, logs)
    c.acknowledge(1, 0, 0, 2)  # RELEASE in partition 1
    assert _answered(tb) and out_b == [[(1, 0, 0, 2)]]
    assert ta.is_alive() and out_a == []  # nothing for a: it keeps waiting
    _produce(logs, 0, b"more")
    assert _answered(ta) and out_a == [[(0, 1, 1, 1)]]


def test_a_closed_share_session_ends_the_wait(env):
    sc, logs, _ = env
    a, b = Member(sc, "a"), Member(sc, "b")
    _produce(logs, 0, b"r0")
    assert a.fetch(0) == [(0, 0, 0, 1)]
    th, out = _waiting(b, logs)
    r = sc.acknowledge(G, a.id, -1, [])  # epoch -1: a's session closes, its records are released
    assert r.error is None
    assert _answered(th) and out and out[0][0][:3] == (0, 0, 0)


def test_an_expiring_acquisition_lock_ends_the_wait(env):
    """a holds the record without acknowledging; its lock (1 s here) expires and b, waiting ten
    minutes, gets the record at once — the actor's own timer frees it, no request needed."""
    sc, logs, _ = env
    a, b = Member(sc, "a"), Member(sc, "b")
    _produce(logs, 0, b"r0")
    assert a.fetch(0) == [(0, 0, 0, 1)]
    t0 = time.monotonic()
    th, out = _waiting(b, logs)
    assert _answered(th) and out == [[(0, 0, 0, 2)]]
    assert time.monotonic() - t0 >= 0.5  # not before the lock expired


def test_a_produce_landing_while_an_attempt_runs_is_not_lost(env):
    """A produce between the attempt's read of the log and its choice of what to wait for must
    end the wait at once (it compared against a later high watermark and skipped the partition)."""
    sc, logs, _ = env
    a = Member(sc, "a")
    real, injected = sc._wait_keys, []

    def wait_keys(*args):
        if not injected:
            injected.append(True)
            _produce(logs, 0, b"late")  # after the read, before the wait
        return real(*args)

    sc._wait_keys = wait_keys
    t0 = time.monotonic()
    assert a.fetch(max_wait_ms=20_000) == [(0, 0, 0, 1)]
    assert injected and time.monotonic() - t0 < 10


def test_a_woken_fetch_that_reads_again_keeps_and_hands_on_its_wake_up(env):
    """Record-limit fetches of a and b (MaxRecords 1) wait; c RELEASEs two records. The woken
    fetch reads from a next fetch offset c's acquisition had moved (``refetch_from``), reads again
    at once, takes one record and hands the wake-up on: b gets the other, long before its
    MaxWaitMs."""
    sc, logs, _ = env
    a, b, c = Member(sc, "a"), Member(sc, "b"), Member(sc, "c")
    _produce(logs, 0, b"1", b"2")
    assert c.fetch(0) == [(0, 0, 1, 1)]
    out: dict[str, tuple[float, list]] = {}

    def run(mb, key):
        t = time.monotonic()
        r = sc.fetch(G, mb.id, mb.epoch, [], [], [], 1, 20_000, 1)
        out[key] = (time.monotonic() - t, [(x.first_offset, x.delivery_count) for q in r.partitions for x in q.acquired])

    ta = threading.Thread(target=run, args=(a, "a"))
    ta.start()
    time.sleep(0.3)
    tb = threading.Thread(target=run, args=(b, "b"))
    tb.start()
    time.sleep(0.3)
    c.acknowledge(0, 0, 1, 2)  # RELEASE both
    ta.join(JOIN_S)
    tb.join(JOIN_S)
    assert sorted(got for _t, got in out.values()) == [[(0, 2)], [(1, 2)]]
    assert all(t < 10 for t, _got in out.values())


def test_an_acknowledgement_for_a_partition_leaving_the_session_does_not_spin(env):
    """A ShareFetch that forgets partition 1 and acknowledges a record of it: the purgatory waits
    on the session's partitions only, with one or two attempts — not one ask after another until
    MaxWaitMs."""
    sc, logs, host = env
    m = Member(sc, "b")
    _produce(logs, 1, b"y")
    assert m.fetch(100) == [(1, 0, 0, 1)]
    asks = [0]
    real = host.ask

    def ask(*args, **kwargs):
        asks[0] += 1
        return real(*args, **kwargs)

    host.ask = ask
    r = sc.fetch(G, m.id, m.epoch, [], [(TID, 1)], [SharePartitionAck(TID, 1, (AckBatch(0, 0, (1,)),))], 500, 1000)
    assert r.error is None and asks[0] <= 3


def test_max_wait_ends_a_fetch_that_got_nothing(env):
    sc, logs, _ = env
    a = Member(sc, "a")
    t0 = time.monotonic()
    assert a.fetch(200) == []
    assert 0.15 <= time.monotonic() - t0 < 5


def test_a_version_read_before_the_check_is_not_lost():
    """The race of any long poll: the versions are read, a change lands, then the waiter sleeps:
    it must not sleep."""
    w = WaitSet()
    seen = w.versions([("partition", "t", 0)])
    w.bump(("partition", "t", 0))
    t0 = time.monotonic()
    assert w.wait(seen, 60) is True and time.monotonic() - t0 < 1


def test_a_change_wakes_the_longest_waiter_of_each_party_and_pass_on_wakes_the_next():
    w = WaitSet()
    key = ("partition", "t", 0)
    order: list[str] = []

    def waiter(name, party):
        woke = w.wait(w.versions([key]), 30, party)
        order.append(name)
        if name == "g1-first":
            w.pass_on(woke, party)

    threads = []
    for name, party in (("g1-first", "g1"), ("g1-second", "g1"), ("g1-third", "g1"), ("g2-only", "g2")):
        t = threading.Thread(target=waiter, args=(name, party))
        t.start()
        threads.append(t)
        time.sleep(0.05)  # arrival order
    w.bump(key)
    threads[0].join(5)
    threads[1].join(5)
    threads[3].join(5)
    # one bump woke the longest waiter of each party; g1-first handed its wake-up on to g1-second
    assert set(order) == {"g1-first", "g1-second", "g2-only"}
    assert order.index("g1-first") < order.index("g1-second")
    assert threads[2].is_alive()  # nobody passed it on: it keeps waiting
    w.bump(key)
    threads[2].join(5)
    assert order[-1] == "g1-third"


def test_a_waitset_wakes_only_the_waiters_of_the_key_that_changed():
    w = WaitSet()
    results: dict[str, bool] = {}
    p0, p1 = ("partition", "t", 0), ("partition", "t", 1)

    def waiter(name, key, timeout):
        results[name] = bool(w.wait(w.versions([key]), timeout))

    t0 = threading.Thread(target=waiter, args=("p0", p0, 0.5))
    t1 = threading.Thread(target=waiter, args=("p1", p1, 30))
    t0.start()
    t1.start()
    time.sleep(0.1)
    w.bump(p1)
    t0.join(5)
    t1.join(5)
    assert results == {"p0": False, "p1": True}
