"""A ShareConsumer process for the end-to-end tests (run as ``python share_worker.py SPEC_JSON``).

SPEC (JSON): ``bootstrap``, ``group``, ``topic``, ``mode`` (``explicit``/``implicit``),
``release_every`` / ``reject_every`` (explicit mode: a record whose value ``v<i>`` has
``i % release_every == 0`` is RELEASEd while its delivery count is below ``release_until``, a
record with ``i % reject_every == 0`` is REJECTed; everything else ACCEPTed), ``always_release``
(a list of values always RELEASEd), ``hold`` (acquire and never acknowledge: for the SIGKILL
test), ``hold_after`` (accept that many records, then hold the next batch), ``idle_exit_s`` (stop after this long without records), ``max_s``, ``out`` (path of the
JSON-lines log).

Every delivery is written to ``out`` as ``{"p", "o", "v", "dc", "act"}`` and flushed (fsync) after
each commit, so the test can read what a process did even after it was SIGKILLed.
"""

from __future__ import annotations

import json
import os
import sys
import time


def main() -> None:
    spec = json.loads(sys.argv[1])
    from confluent_kafka import AcknowledgeType, ShareConsumer

    conf = {"bootstrap.servers": spec["bootstrap"], "group.id": spec["group"], "share.acknowledgement.mode": spec.get("mode", "explicit")}
    conf.update(spec.get("conf", {}))
    c = ShareConsumer(conf)
    c.subscribe([spec["topic"]])
    out = open(spec["out"], "a", buffering=1)
    release_every = int(spec.get("release_every", 0))
    reject_every = int(spec.get("reject_every", 0))
    release_until = int(spec.get("release_until", 2))
    always_release = set(spec.get("always_release", []))
    explicit = spec.get("mode", "explicit") == "explicit"
    hold = bool(spec.get("hold", False))
    hold_after = int(spec.get("hold_after", -1))
    accepted = 0
    idle_exit = float(spec.get("idle_exit_s", 5))
    deadline = time.monotonic() + float(spec.get("max_s", 120))
    last = time.monotonic()
    got_any = False
    print("ready", flush=True)
    while time.monotonic() < deadline:
        msgs = c.poll(0.5)
        n = 0
        if hold_after >= 0 and accepted >= hold_after:
            hold = True
        for m in msgs:
            if m.error():
                out.write(json.dumps({"err": str(m.error())}) + "\n")
                continue
            n += 1
            v = m.value().decode()
            i = int(v[1:]) if v[1:].isdigit() else -1
            dc = m.delivery_count()
            act = "accept"
            if hold:
                act = "hold"
            elif v in always_release:
                act = "release"
            elif explicit and release_every and i % release_every == 0 and dc < release_until:
                act = "release"
            elif explicit and reject_every and i % reject_every == 0:
                act = "reject"
            elif not explicit:
                act = "implicit"
            out.write(json.dumps({"p": m.partition(), "o": m.offset(), "v": v, "dc": dc, "act": act}) + "\n")
            accepted += act in ("accept", "implicit")
            if explicit and not hold:
                c.acknowledge(m, {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE, "reject": AcknowledgeType.REJECT}[act])
        if n:
            got_any = True
            last = time.monotonic()
            if hold:
                out.flush()
                os.fsync(out.fileno())
                while True:  # keep the records acquired until SIGKILL
                    time.sleep(1)
            res = c.commit_sync(30)
            for tp, err in (res or {}).items():
                if err is not None:
                    out.write(json.dumps({"commit_err": str(err), "p": tp.partition}) + "\n")
            out.flush()
            os.fsync(out.fileno())
        elif got_any and time.monotonic() - last > idle_exit:
            break
        elif not got_any and time.monotonic() - last > idle_exit * 4:
            break
    c.close()
    out.write(json.dumps({"closed": True}) + "\n")
    out.close()


if __name__ == "__main__":
    main()
