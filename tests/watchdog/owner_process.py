"""A stand-in for the daemon in the watchdog crash tests: ``python -m tests.watchdog.owner_process
<admin port> <interval ms>`` starts a ``multiprocTCPBase`` actor system on that admin port with an
:class:`~actors.watchdog.actor.OwnerWatchdogActor` watching this process, prints the watchdog's
:class:`~actors.watchdog.actor.WatchingOwner` as one JSON line, then sleeps until killed."""

from __future__ import annotations

import json
import os
import sys
import time


def main(admin_port: int, interval_ms: int) -> None:
    """Start the system and the watchdog, print ``{"pid", "session", "alive"}``, sleep forever."""
    os.environ.setdefault("THESPIAN_BASE_IPADDR", "127.0.0.1")
    from thespian.actors import ActorSystem

    from actors.watchdog.actor import OwnerWatchdogActor, WatchingOwner, WatchOwner
    from actors.watchdog.liveness import observe_process

    quiet = {"version": 1, "handlers": {"null": {"class": "logging.NullHandler"}}, "root": {"handlers": ["null"], "level": "WARNING"}}
    asys = ActorSystem("multiprocTCPBase", {"Admin Port": admin_port}, logDefs=quiet)
    me = observe_process(os.getpid())
    watchdog = asys.createActor(OwnerWatchdogActor, globalName="shoal-watchdog")
    reply = asys.ask(watchdog, WatchOwner(os.getpid(), me.start_time if me else None, interval_ms), 30)
    if not isinstance(reply, WatchingOwner):
        asys.shutdown()
        raise SystemExit(f"no WatchingOwner: {reply!r}")
    print(json.dumps({"pid": reply.pid, "session": reply.session, "alive": reply.alive}), flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
