"""The share groups hosted in-process (:class:`actors.share.host.ShareGroupHost`): routing by group
id, start and recovery, passivation without a lost request, RecordsFreed for the purgatory, stop
and close (snapshots), on a real SQLite event log."""

from __future__ import annotations

import random
import threading
import time

import pytest

from actors.share import messages as m
from actors.share.host import GroupNotRunning, ShareGroupHost

G, T = "grp", "TOPIC-ID"


def _config(tmp_path, **extra: str) -> dict:
    return {"event.log.url": f"sqlite:///{tmp_path}/events.db", "event.log.sqlite.synchronous": "NORMAL", **extra}


def _join(host: ShareGroupHost, member: str = "m1") -> None:
    assert host.start_group(G) is None
    r = host.ask(G, m.ShareGroupHeartbeatCmd(G, member, 0, subscribed_topic_names=("t",), topics={"t": (T, 1)}))
    assert r.error == "NONE", r
    r = host.ask(G, m.ShareFetchCmd(G, member, 0, (m.ShareFetchPartition(T, 0, high_watermark=0),)))
    assert r.error == "NONE", r


def _fetch(host: ShareGroupHost, member: str, epoch: int, first: int, last: int, acks=()) -> m.ShareFetchReply:
    part = m.ShareFetchPartition(T, 0, acknowledgement_batches=acks, fetch_offset=first, log_batches=((first, last),), high_watermark=last + 1)
    return host.ask(G, m.ShareFetchCmd(G, member, epoch, (part,)))


@pytest.fixture()
def host(tmp_path):
    h = ShareGroupHost(_config(tmp_path))
    yield h
    h.close()


def test_a_group_that_does_not_run_answers_not_running_until_started(host):
    assert isinstance(host.ask(G, m.DescribeShareGroup(G)), GroupNotRunning)
    assert not host.running(G)
    _join(host)
    assert host.running(G) and host.running_groups() == [G]
    d = host.ask(G, m.DescribeShareGroup(G))
    assert d.error == "NONE" and [x.member_id for x in d.members] == ["m1"]


def test_decisions_survive_close_and_a_new_host_recovers_them(tmp_path):
    h = ShareGroupHost(_config(tmp_path))
    _join(h)
    r = _fetch(h, "m1", 1, 0, 9)
    assert r.partitions[0].acquired == ((0, 9, 1),)
    before = h.ask(G, m.GetShareGroupState(G))
    h.close()
    h2 = ShareGroupHost(_config(tmp_path))
    try:
        assert h2.start_group(G) is None
        after = h2.ask(G, m.GetShareGroupState(G))
        assert (after.stream_version, after.state) == (before.stream_version, before.state)
    finally:
        h2.close()


def test_a_release_and_an_expired_lock_wake_the_purgatory_but_an_accept_does_not(tmp_path):
    h = ShareGroupHost(_config(tmp_path, **{"group.share.record.lock.duration.ms": "1000", "group.share.min.record.lock.duration.ms": "1000"}))
    freed: list[str] = []
    woke = threading.Event()

    def on_freed(group: str, partitions: tuple) -> None:
        assert partitions == ((T, 0),)  # the share-partition whose records were freed
        freed.append(group)
        woke.set()

    h.on_records_freed = on_freed
    try:
        _join(h)
        assert _fetch(h, "m1", 1, 0, 9).partitions[0].acquired == ((0, 9, 1),)
        r = _fetch(h, "m1", 2, 10, 19, acks=((0, 9, (1,)),))  # ACCEPT 0..9, acquire 10..19
        assert r.partitions[0].acquired == ((10, 19, 1),) and freed == []
        r = _fetch(h, "m1", 3, 20, 29, acks=((10, 19, (2,)),))  # RELEASE 10..19: acquirable again
        assert freed == [G] and r.partitions[0].refetch_from == 10
        part = m.ShareFetchPartition(T, 0, fetch_offset=10, log_batches=((10, 19), (20, 29)), high_watermark=30)
        r = h.ask(G, m.ShareFetchCmd(G, "m1", 4, (part,)))
        assert r.partitions[0].acquired == ((10, 19, 2), (20, 29, 1)) and freed == [G]
        woke.clear()
        # 10..29 stay locked for 1 s; nobody asks anything: the host's timer expires the lock
        t0 = time.monotonic()
        assert woke.wait(10), "an expired acquisition lock must wake the group's waiting fetches"
        assert time.monotonic() - t0 >= 0.5 and freed == [G, G]
    finally:
        h.close()


def test_passivation_never_loses_a_request(tmp_path):
    """Idle groups passivate (``shoal.share.group.passivate.ms``) while clients keep coming back at
    random moments: every request is answered — by the actor, or GroupNotRunning and then by a
    fresh actor — never dropped at an actor that has exited (the ask would time out)."""
    h = ShareGroupHost(_config(tmp_path, **{"shoal.share.group.passivate.ms": "30"}))
    try:
        assert h.start_group(G) is None
        answered, not_running, errors = [0], [0], []
        rnd = random.Random(7)
        stop_at = time.monotonic() + 3

        def client() -> None:
            while time.monotonic() < stop_at:
                time.sleep(rnd.random() * 0.08)
                for _attempt in range(5):
                    r = h.ask(G, m.DescribeShareGroup(G), 2.0)
                    if isinstance(r, GroupNotRunning):
                        not_running[0] += 1
                        assert h.start_group(G, 5) is None
                        continue
                    if r is None:
                        errors.append("timeout")
                    elif isinstance(r, m.ShareGroupDescription):
                        answered[0] += 1
                    break
            h.release_thread()

        threads = [threading.Thread(target=client) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert errors == []
        assert answered[0] > 20 and not_running[0] > 0
        assert h.status()["passivations"] > 0
    finally:
        h.close()


def test_stop_group_stops_its_actor(host):
    _join(host)
    assert host.stop_group(G)
    assert not host.running(G) and isinstance(host.ask(G, m.DescribeShareGroup(G)), GroupNotRunning)
    assert host.stop_group("never-started")
