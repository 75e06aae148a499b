"""In the daemon's setting (``multiprocTCPBase``, appends and reads through the JournalActor) a
share-group actor's process never opens the event log: its recovery pages and snapshots travel as
``ReadStream``/``StreamPage``/``SaveSnapshot`` messages. The recovered state is the same as the
state before the restart, and the snapshot saved through the journal is used."""

from __future__ import annotations

import os
from pathlib import Path

from thespian.actors import ActorExitRequest

from actors.journal import JournalActor
from actors.messages import Configure, Configured, StatusRequest
from actors.share import messages as m
from actors.share.actor import ShareGroupActor
from events.share_group import stream_id_for
from store.event_log import open_event_log

G, T = "jr", "TOPIC-ID"
TIMEOUT = 20


def _open_files(pid: int) -> set[str]:
    out = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            out.add(os.readlink(fd))
        except OSError:
            pass
    return out


def _work(asys, a) -> None:
    r = asys.ask(a, m.ShareGroupHeartbeatCmd(G, "m1", 0, subscribed_topic_names=("foo",), topics={"foo": (T, 1)}), TIMEOUT)
    assert r.error == "NONE", r
    r = asys.ask(a, m.ShareFetchCmd(G, "m1", 0, (m.ShareFetchPartition(T, 0, log_start_offset=0, high_watermark=0),)), TIMEOUT)
    assert r.error == "NONE", r
    acks = ()
    for epoch in range(1, 6):
        first = (epoch - 1) * 10
        p = m.ShareFetchPartition(T, 0, acknowledgement_batches=acks, fetch_offset=first, log_batches=((first, first + 9),),
                                  log_start_offset=0, high_watermark=first + 10)
        r = asys.ask(a, m.ShareFetchCmd(G, "m1", epoch, (p,), 500), TIMEOUT)
        assert r.error == "NONE" and r.partitions[0].acquired == ((first, first + 9, 1),), r
        acks = ((first, first + 9, (1,)),)


def test_group_actor_reads_and_snapshots_through_the_journal(mp_asys, tmp_path):
    db = tmp_path / "events.db"
    config = {"event.log.url": f"sqlite:///{db}", "shoal.share.group.snapshot.every.events": "4", "shoal.share.group.append.path": "journal"}
    j = mp_asys.createActor(JournalActor)
    assert isinstance(mp_asys.ask(j, Configure(config, "journal"), TIMEOUT), Configured)
    a = mp_asys.createActor(ShareGroupActor)
    assert isinstance(mp_asys.ask(a, Configure(config, G, j), TIMEOUT), Configured)
    _work(mp_asys, a)
    before = mp_asys.ask(a, m.GetShareGroupState(G), TIMEOUT)
    pid = mp_asys.ask(a, StatusRequest(), TIMEOUT).counts["pid"]
    assert pid != os.getpid()
    assert not any(str(db) in f for f in _open_files(pid)), "the group actor's process opened the event log"
    mp_asys.tell(a, ActorExitRequest())

    b = mp_asys.createActor(ShareGroupActor)
    configured = mp_asys.ask(b, Configure(config, G, j), TIMEOUT)
    assert isinstance(configured, Configured)
    elog = open_event_log(config["event.log.url"])
    total = elog.stream_version(stream_id_for(G))
    snap = elog.load_snapshot(stream_id_for(G))
    assert snap is not None and 0 < snap.stream_version <= total  # saved through the journal
    # recovery started from a snapshot (the exit snapshot may land before or after b's read)
    assert configured.events_replayed < total
    assert configured.position == elog.last_position()
    after = mp_asys.ask(b, m.GetShareGroupState(G), TIMEOUT)
    assert (after.stream_version, after.state) == (before.stream_version, before.state)
    pid_b = mp_asys.ask(b, StatusRequest(), TIMEOUT).counts["pid"]
    assert not any(str(db) in f for f in _open_files(pid_b))
