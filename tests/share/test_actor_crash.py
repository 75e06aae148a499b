"""A share group's state survives SIGKILL of the process that ran its actor: every reply left only
after its events were durable, so recovery from the log gives exactly the state last reported."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from thespian.actors import ActorSystem

from actors.messages import Configure
from actors.share import messages as m
from actors.share.actor import ShareGroupActor

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import json, sys, time
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
    for i in range(20):
        acks = ((first - 10, first - 1, (1,)),) if first else ()
        r = asys.ask(a, m.ShareFetchCmd("crash", "m1", epoch, (m.ShareFetchPartition(
            "T", 0, acknowledgement_batches=acks, fetch_offset=first, log_batches=((first, first + 9),),
            high_watermark=first + 10),)), 5)
        assert r.error == "NONE" and r.partitions[0].acknowledge_error == "NONE", r
        epoch += 1
        first += 10
        dump = asys.ask(a, m.GetShareGroupState("crash"), 5)
        print(json.dumps({"version": dump.stream_version, "state": dump.state}), flush=True)
    print("DONE", flush=True)
    time.sleep(600)
    """
)


def test_state_survives_sigkill_of_the_actor_process(tmp_path):
    url = f"sqlite:///{tmp_path}/events.db"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-c", CHILD, url], stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    last = None
    try:
        for line in proc.stdout:  # type: ignore[union-attr]
            if line.startswith("DONE"):
                break
            last = json.loads(line)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    assert proc.returncode == -signal.SIGKILL
    assert last is not None and last["version"] > 20
    asys = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        a = asys.createActor(ShareGroupActor)
        asys.ask(a, Configure({"event.log.url": url}, "crash"), 5)
        dump = asys.ask(a, m.GetShareGroupState("crash"), 5)
        assert dump.stream_version == last["version"]
        assert json.loads(json.dumps(dump.state)) == last["state"]
    finally:
        asys.shutdown()
