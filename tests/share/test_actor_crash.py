"""A share group's state survives SIGKILL of the process that ran its actor — its own actor
process, or the process that hosts it with the journal thread (the daemon's listener) — killed
while it is still serving requests: every reply left only after its events were durable, so nothing reported
is lost (the recovered stream contains every reported version, and the fold of the stream up to
the last reported version is exactly the last reported state), and recovery rebuilds exactly the
fold of the whole stream."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from thespian.actors import ActorSystem

from actors.messages import Configure
from actors.share import messages as m
from actors.share.actor import ShareGroupActor, ShareGroupState
from actors.share.config import BrokerShareConfig
from events.codec import decode_recorded
from events.share_group import stream_id_for
from store.event_log import open_event_log
from tests.e2e.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import json, sys
    from thespian.actors import ActorSystem
    from actors.messages import Configure
    from actors.share import messages as m
    from actors.share.actor import ShareGroupActor

    url = sys.argv[1]
    asys = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    a = asys.createActor(ShareGroupActor)
    asys.ask(a, Configure({"event.log.url": url}, "crash"), 5)
    asys.ask(a, m.ShareGroupHeartbeatCmd("crash", "m1", 0, subscribed_topic_names=("t",), topics={"t": ("T", 1)}), 5)
    asys.ask(a, m.ShareFetchCmd("crash", "m1", 0, (m.ShareFetchPartition("T", 0, high_watermark=0),)), 5)
    epoch, first = 1, 0
    for i in range(100000):
        acks = ((first - 10, first - 1, (1,)),) if first else ()
        r = asys.ask(a, m.ShareFetchCmd("crash", "m1", epoch, (m.ShareFetchPartition(
            "T", 0, acknowledgement_batches=acks, fetch_offset=first, log_batches=((first, first + 9),),
            high_watermark=first + 10),)), 5)
        assert r.error == "NONE" and r.partitions[0].acknowledge_error == "NONE", r
        epoch += 1
        first += 10
        dump = asys.ask(a, m.GetShareGroupState("crash"), 5)
        print(json.dumps({"version": dump.stream_version, "state": dump.state}), flush=True)
    """
)


PIPELINED_CHILD = textwrap.dedent(
    """
    import json, sys
    from thespian.actors import ActorSystem
    from actors.journal import JournalActor
    from actors.messages import Configure
    from actors.share import messages as m
    from actors.share.actor import ShareGroupActor

    url, port = sys.argv[1], int(sys.argv[2])
    asys = ActorSystem("multiprocTCPBase", {"Admin Port": port}, transientUnique=True)
    cfg = {"event.log.url": url, "shoal.share.group.append.path": "journal"}
    j = asys.createActor(JournalActor)
    asys.ask(j, Configure(cfg, "journal"), 20)
    a = asys.createActor(ShareGroupActor)
    asys.ask(a, Configure(cfg, "crash", j), 20)
    for mem in ("m1", "m2"):
        asys.ask(a, m.ShareGroupHeartbeatCmd("crash", mem, 0, subscribed_topic_names=("t",), topics={"t": ("T", 1)}), 20)
        asys.ask(a, m.ShareFetchCmd("crash", mem, 0, (m.ShareFetchPartition("T", 0, high_watermark=0),)), 20)
    epoch, first, acks = 1, 0, {"m1": (), "m2": ()}
    ends = {mem: asys.private().__enter__() for mem in ("m1", "m2")}  # each member's replies to its own endpoint
    for i in range(100000):
        # two members' fetches and a state dump in flight together: the actor decides the second
        # fetch and the dump while the first append travels; the dump leaves once both are durable
        for mem in ("m1", "m2"):
            ends[mem].tell(a, m.ShareFetchCmd("crash", mem, epoch, (m.ShareFetchPartition(
                "T", 0, acknowledgement_batches=acks[mem], fetch_offset=first, log_batches=((first, first + 19),),
                high_watermark=first + 20),), 10))
        asys.tell(a, m.GetShareGroupState("crash"))
        got = {mem: ends[mem].listen(60) for mem in ("m1", "m2")}
        dump = asys.listen(60)
        for r in got.values():
            assert r.error == "NONE" and r.partitions[0].acknowledge_error == "NONE", r
        acks = {mem: tuple((f, l, (1,)) for f, l, _dc in r.partitions[0].acquired) for mem, r in got.items()}
        epoch += 1
        first += 20
        print(json.dumps({"version": dump.stream_version, "state": dump.state}), flush=True)
    """
)


HOSTED_CHILD = textwrap.dedent(
    """
    import json, sys, threading
    from actors.share import messages as m
    from actors.share.host import ShareGroupHost

    url = sys.argv[1]
    # as in the daemon: the group hosted in this process, its appends group-committed by the
    # journal thread while the group goes on deciding (the replies wait for durability)
    h = ShareGroupHost({"event.log.url": url, "shoal.share.group.append.path": "journal"})
    assert h.start_group("crash") is None
    for mem in ("m1", "m2"):
        h.ask("crash", m.ShareGroupHeartbeatCmd("crash", mem, 0, subscribed_topic_names=("t",), topics={"t": ("T", 1)}))
        h.ask("crash", m.ShareFetchCmd("crash", mem, 0, (m.ShareFetchPartition("T", 0, high_watermark=0),)))
    epoch, first, acks = 1, 0, {"m1": (), "m2": ()}
    for i in range(100000):
        # two members' fetches from two threads and a state dump in flight together
        got = {}
        def fetch(mem):  # each takes one of the two 10-record batches, whichever is decided first
            got[mem] = h.ask("crash", m.ShareFetchCmd("crash", mem, epoch, (m.ShareFetchPartition(
                "T", 0, acknowledgement_batches=acks[mem], fetch_offset=first,
                log_batches=((first, first + 9), (first + 10, first + 19)), high_watermark=first + 20),), 10))
        ts = [threading.Thread(target=fetch, args=(mem,)) for mem in ("m1", "m2")]
        for t in ts: t.start()
        for t in ts: t.join()
        for r in got.values():
            assert r.error == "NONE" and r.partitions[0].acknowledge_error == "NONE" and r.partitions[0].acquired, r
        acks = {mem: tuple((f, l, (1,)) for f, l, _dc in r.partitions[0].acquired) for mem, r in got.items()}
        epoch += 1
        first += 20
        dump = h.ask("crash", m.GetShareGroupState("crash"))
        print(json.dumps({"version": dump.stream_version, "state": dump.state}), flush=True)
    """
)


@pytest.mark.parametrize("path", ["direct", "journal-pipelined", "hosted"])
def test_state_survives_sigkill_of_the_actor_process(tmp_path, path):
    url = f"sqlite:///{tmp_path}/events.db"
    env = dict(os.environ, PYTHONPATH=str(ROOT), THESPIAN_BASE_IPADDR="127.0.0.1")
    admin_port = free_port()
    args = {
        "direct": [sys.executable, "-c", CHILD, url],
        "journal-pipelined": [sys.executable, "-c", PIPELINED_CHILD, url, str(admin_port)],
        "hosted": [sys.executable, "-c", HOSTED_CHILD, url],
    }[path]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, start_new_session=True)
    last = None
    lines = 0
    deadline = time.monotonic() + 120  # a child that fails or stalls must fail the test, not hang it
    try:
        while lines < 15:  # the child keeps fetching and acknowledging: kill it mid-flight
            poller = select.poll()  # not select(): a long test run's descriptors pass 1024
            poller.register(proc.stdout, select.POLLIN)
            ready = poller.poll(max(0.0, deadline - time.monotonic()) * 1000)
            line = proc.stdout.readline() if ready else ""  # type: ignore[union-attr]
            if not line:
                break
            last = json.loads(line)
            lines += 1
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        if path == "journal-pipelined":
            # Thespian's admin daemonizes out of the child's session (and holds its stdout): stop
            # it and its actors through its admin port, so nothing outlives the test
            ActorSystem("multiprocTCPBase", {"Admin Port": admin_port}, transientUnique=True).shutdown()
    stderr = proc.stderr.read() if proc.stderr else ""  # type: ignore[union-attr]
    assert lines == 15, f"the child printed {lines} states: {stderr[-2000:]}"
    assert proc.returncode == -signal.SIGKILL
    assert last is not None and last["version"] > 15
    elog = open_event_log(url)
    folded = ShareGroupState("crash", BrokerShareConfig())
    for rec in elog.read_stream(stream_id_for("crash"), 1, last["version"]):
        folded.apply(decode_recorded(rec))
    assert json.loads(json.dumps(folded.to_dict())) == last["state"]  # nothing reported was lost
    everything = ShareGroupState("crash", BrokerShareConfig())
    for rec in elog.read_stream(stream_id_for("crash")):
        everything.apply(decode_recorded(rec))
    asys = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        a = asys.createActor(ShareGroupActor)
        asys.ask(a, Configure({"event.log.url": url}, "crash"), 5)
        dump = asys.ask(a, m.GetShareGroupState("crash"), 5)
        assert dump.stream_version >= last["version"]
        assert dump.state == everything.to_dict()
    finally:
        asys.shutdown()
