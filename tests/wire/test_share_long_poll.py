"""The ShareFetch long poll (``ShareClient._maybe_wait``) ends when what it waits for arrives, not at
MaxWaitMs (issue 14's latency tail): an append, records another member RELEASEs (on a
ShareAcknowledge or piggy-backed on a ShareFetch), a share session that closes, a member that
leaves, and the acquisition locks of records this listener handed out expiring. Every waiting
fetch below has MaxWaitMs = 10 minutes; the test only checks that it returned (and asked the actor
again) long before that — a lost wakeup leaves the thread waiting and the test fails."""

from __future__ import annotations

import threading
import time
import types

import pytest

from actors.share import messages as m
from store.record_batch import build_batch
from wire.backend import AckBatch, SharePartitionAck
from wire.logs import LogRegistry
from wire.share_client import ShareClient

from tests.wire.test_share_client import TID, FakeController, RecordingGateway

FOREVER_MS = 600_000  # MaxWaitMs of the waiting fetches: far longer than the test may take
JOIN_S = 30


class Actor:
    """A stand-in share-group actor for partition 0: member ``a`` acquires every batch it is sent
    (lock ``lock_ms``), any other member acquires nothing; acknowledgements are accepted."""

    def __init__(self, lock_ms: int = 30_000) -> None:
        self.lock_ms = lock_ms

    def __call__(self, msg):
        if isinstance(msg, m.ShareAcknowledgeCmd):
            return m.ShareAcknowledgeReply("NONE", "", tuple(m.PartitionResult(p.topic_id, p.partition) for p in msg.partitions), self.lock_ms)
        out = []
        for p in msg.partitions:
            acq = tuple((a, b, 1) for a, b in (p.log_batches or ())) if msg.member_id == "a" else ()
            nxt = acq[-1][1] + 1 if acq else max(p.fetch_offset, p.high_watermark)
            out.append(m.ShareFetchPartitionResult(p.topic_id, p.partition, acquired=acq, next_fetch_offset=nxt))
        return m.ShareFetchReply("NONE", "", tuple(out), self.lock_ms)


@pytest.fixture()
def logs(tmp_path):
    reg = LogRegistry(str(tmp_path / "logs"))
    reg.append("t", 0, build_batch([(None, b"r%d" % i) for i in range(10)]))
    yield reg
    reg.close()


def _client(logs, actor: Actor | None = None) -> tuple[ShareClient, RecordingGateway]:
    gw = RecordingGateway(actor or Actor())
    sc = ShareClient(gw, FakeController(), logs, {})
    sc.fetch("g", "a", 0, [(TID, 0)], [], [], 500, 0)  # a acquires offsets 0..9
    sc.fetch("g", "b", 0, [(TID, 0)], [], [], 500, 0)  # b gets nothing; next fetch offset 10 = high watermark
    return sc, gw


def _waiting_fetch(sc: ShareClient, logs: LogRegistry, gw: RecordingGateway) -> tuple[threading.Thread, threading.Event, int]:
    """Start member b's long-polling ShareFetch (epoch 1) in a thread; return it, an event set once
    it is inside ``logs.wait`` and the number of actor messages sent before it."""
    waiting = threading.Event()
    real_wait = logs.wait

    def wait(timeout_ms, since=None):
        waiting.set()
        real_wait(timeout_ms, since)

    logs.wait = wait
    sent = len(gw.sent)
    th = threading.Thread(target=sc.fetch, args=("g", "b", 1, [], [], [], 500, FOREVER_MS), daemon=True)
    th.start()
    assert waiting.wait(JOIN_S), "the fetch should long-poll: nothing is past its next fetch offset"
    assert len(gw.sent) == sent  # it has not asked the actor yet
    return th, waiting, sent


def _answered(th: threading.Thread, gw: RecordingGateway, sent: int) -> bool:
    th.join(JOIN_S)
    return not th.is_alive() and len(gw.sent) == sent + 1 and gw.sent[-1].member_id == "b"


def _release_all() -> list[SharePartitionAck]:
    return [SharePartitionAck(TID, 0, [AckBatch(0, 9, [2])])]  # AcknowledgeType RELEASE


def test_a_produce_ends_the_wait(logs):
    sc, gw = _client(logs)
    th, _, sent = _waiting_fetch(sc, logs, gw)
    logs.append("t", 0, build_batch([(None, b"new")]))
    assert _answered(th, gw, sent)


def test_a_produce_between_the_check_and_the_sleep_is_not_lost(logs):
    """The race of the long poll: the waiter has read the high watermark (nothing new), then a
    produce lands, then it goes to sleep. It must not sleep: the version it sleeps on was taken
    before the check."""
    sc, gw = _client(logs)
    real_open = logs.open
    injected = []

    def open_then_append(topic, partition):
        lg = real_open(topic, partition)
        hw = lg.high_watermark  # what the waiter's check reads …
        if not injected:
            injected.append(True)
            logs.append("t", 0, build_batch([(None, b"racing")]))  # … and a produce right after it
        return _Frozen(lg, hw)

    logs.open = open_then_append
    done = threading.Thread(target=sc._maybe_wait, args=("g", {(str(TID), 0)}, {str(TID): "t"}, FOREVER_MS), daemon=True)
    done.start()
    done.join(JOIN_S)
    assert injected and not done.is_alive()


class _Frozen:
    """A partition log whose ``high_watermark`` is the value read before a racing append."""

    def __init__(self, lg, hw: int) -> None:
        self._lg, self.high_watermark = lg, hw

    def __getattr__(self, name):
        return getattr(self._lg, name)


def test_a_release_on_share_acknowledge_by_another_member_ends_the_wait(logs):
    sc, gw = _client(logs)
    th, _, sent = _waiting_fetch(sc, logs, gw)
    r = sc.acknowledge("g", "a", 2, _release_all())
    assert r.error is None
    assert _answered(th, gw, sent + 1)  # b asked again after a's ShareAcknowledge


def test_a_release_piggy_backed_on_another_members_share_fetch_ends_the_wait(logs):
    sc, gw = _client(logs)
    th, _, sent = _waiting_fetch(sc, logs, gw)
    sc.fetch("g", "a", 1, [], [], _release_all(), 500, 0)  # acks on the fetch: no long poll for a
    assert _answered(th, gw, sent + 1)


def test_a_closing_share_session_ends_the_wait(logs):
    """ShareAcknowledge with epoch -1 closes a's session and releases its acquired records."""
    sc, gw = _client(logs)
    th, _, sent = _waiting_fetch(sc, logs, gw)
    sc.acknowledge("g", "a", -1, [])
    assert _answered(th, gw, sent + 1)


def test_accept_does_not_wake_long_polls(logs):
    """ACCEPT frees nothing for another member: no waiter is woken for it."""
    sc, gw = _client(logs)
    before = logs.data_version()
    sc.acknowledge("g", "a", 2, [SharePartitionAck(TID, 0, [AckBatch(0, 9, [1])])])
    assert logs.data_version() == before
    sc.acknowledge("g", "a", 3, _release_all())
    assert logs.data_version() == before + 1


def test_an_expiring_acquisition_lock_ends_every_wait_of_the_group(logs, monkeypatch):
    """a's records are locked for 60 s (the listener's clock is a fake here); the fetches of b and
    c, each waiting 10 minutes, ask the actor again once the lock has expired (the actor expires
    it and may hand the records out) — both of them, not only the first to notice."""
    clock = [1000.0]
    monkeypatch.setattr("wire.share_client.time", types.SimpleNamespace(monotonic=lambda: clock[0], time=time.time))
    sc, gw = _client(logs, Actor(lock_ms=60_000))
    sc.fetch("g", "c", 0, [(TID, 0)], [], [], 500, 0)
    sent = len(gw.sent)
    waits, both_waiting = [], threading.Event()
    real_wait = logs.wait

    def wait(timeout_ms, since=None):
        waits.append(timeout_ms)
        if len(waits) >= 2:
            both_waiting.set()
        real_wait(timeout_ms, since)

    logs.wait = wait
    ths = [threading.Thread(target=sc.fetch, args=("g", mid, 1, [], [], [], 500, FOREVER_MS), daemon=True) for mid in ("b", "c")]
    for th in ths:
        th.start()
    assert both_waiting.wait(JOIN_S)
    assert waits[:2] == [60_000, 60_000]  # each sleeps until the lock deadline, not MaxWaitMs
    assert len(gw.sent) == sent
    clock[0] += 60.001  # the lock expires …
    logs.notify()  # … and the sleepers wake (in real time they time out at the deadline)
    for th in ths:
        th.join(JOIN_S)
    assert not any(th.is_alive() for th in ths)
    assert sorted(msg.member_id for msg in gw.sent[sent:]) == ["b", "c"]


def test_wait_notify_wakes_a_waiter(logs):
    """LogRegistry.notify (records freed without an append) ends a wait like an append does."""
    seen = logs.data_version()
    logs.notify()
    th = threading.Thread(target=logs.wait, args=(FOREVER_MS, seen), daemon=True)
    th.start()
    th.join(JOIN_S)
    assert not th.is_alive()
