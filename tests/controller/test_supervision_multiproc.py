"""Supervision with real processes: under ``multiprocTCPBase`` a child actor's process is
SIGKILLed; the controller restarts it and the child recovers its state by replay. After
shutdown no process of the actor system is left (checked by PID and by session id)."""

from __future__ import annotations

import os
import signal
import socket
import time
from datetime import timedelta

import pytest

from actors.controller import messages as M
from actors.controller import topics as tp
from actors.messages import Configure, Configured, StatusRequest
from tests.controller import child_actor as C

pytestmark = pytest.mark.timeout(180)

T = timedelta(seconds=20)
COUNTER = "tests.controller.child_actor.CounterActor"
# multiproc bases need a dictConfig (``logDefs=False`` breaks their child start-up)
LOG_DEFS = {"version": 1, "disable_existing_loggers": False, "handlers": {}, "root": {"level": "WARNING", "handlers": []}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # the command name may contain spaces: fields after the closing parenthesis
    return text[text.rindex(")") + 2 :].split()


def alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] != "Z"


def session_members(sid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None and st[0] != "Z" and int(st[3]) == sid:
                out.append(int(name))
    return out


def wait_until(pred, timeout_s: float = 30.0, step_s: float = 0.2):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step_s)
    return pred()


def test_controller_restarts_a_sigkilled_child_with_its_state(tmp_path, monkeypatch):
    from thespian.actors import ActorSystem

    monkeypatch.setenv("THESPIAN_BASE_IPADDR", "127.0.0.1")
    url = f"sqlite:///{tmp_path / 'events.db'}"
    cfg = {
        "event.log.url": url,
        "node.id": "1",
        "log.retention.check.interval.ms": "0",
        "shoal.controller.child.counter": COUNTER,
    }
    asys = ActorSystem("multiprocTCPBase", {"Admin Port": free_port()}, logDefs=LOG_DEFS, transientUnique=True)
    pids: set[int] = set()
    sid = None
    try:
        ctl = asys.createActor("actors.controller.actor.ControllerActor")
        assert isinstance(asys.ask(ctl, Configure(cfg, "controller"), T), Configured)
        ctl_pid = asys.ask(ctl, StatusRequest(), T).counts["pid"]
        pids.add(ctl_pid)
        sid = int(_stat(ctl_pid)[3])  # the admin daemonizes (setsid): every actor shares its session
        assert asys.ask(ctl, M.CreateTopicsRequest([tp.CreatableTopic("kept", 2)]), T).results[0].error == "NONE"

        first = asys.ask(ctl, M.ChildLookup("counter", "c1"), T)
        assert isinstance(first, M.ChildAddress), first
        assert asys.ask(first.address, C.Increment(3), T).value == 3
        count = asys.ask(first.address, C.Increment(4), T)
        assert count.value == 7 and count.pid not in (ctl_pid, os.getpid())
        pids.add(count.pid)

        os.kill(count.pid, signal.SIGKILL)
        assert wait_until(lambda: not alive(count.pid), 10)

        def restarted():
            r = asys.ask(ctl, M.ChildLookup("counter", "c1"), T)
            return r if isinstance(r, M.ChildAddress) and r.restarts >= 1 else None

        again = wait_until(restarted, 60, 0.5)
        assert again is not None, "the controller did not restart the killed child"
        assert again.restarts == 1 and again.address != first.address
        recovered = asys.ask(again.address, C.GetCount(), T)
        assert recovered.value == 7 and recovered.pid != count.pid  # state intact, new process
        pids.add(recovered.pid)
        assert asys.ask(again.address, C.Increment(1), T).value == 8
        # the controller itself kept its own state
        md = asys.ask(ctl, M.MetadataRequest(["kept"]), T)
        assert md.topics[0].error == "NONE" and len(md.topics[0].partitions) == 2
        status = asys.ask(ctl, StatusRequest(), T)
        assert status.counts["restarts"] == 1 and status.counts["children"] == 1
    finally:
        asys.shutdown()
    assert wait_until(lambda: not any(alive(p) for p in pids), 30), [p for p in pids if alive(p)]
    assert sid is not None
    assert wait_until(lambda: not session_members(sid), 30), session_members(sid)
