"""Benchmark of ACL authorization: the cost of one ``AclSet.authorize`` with many ACLs, and the
per-request cost of the authorizer in the dispatcher (off vs on). Prints one JSON object.

* ``authorize_ns``: median ns per ``authorize`` for 100, 10,000 and 100,000 ACLs (half LITERAL,
  half PREFIXED on random topic names of 1-3 segments, principals ``User:u0``..``User:u99``),
  asked for random topic names by a principal with matching ACLs.
* ``dispatch_us``: median µs per Produce request (one partition, one small batch, acks=1) through
  :class:`wire.dispatch.KafkaDispatcher` over the in-memory test backend, with the authorizer off
  (``authorizer.class.name`` empty: the dispatcher uses the plain backend) and on (10,000 ACLs).
  With it off the only added work is one ``is not None`` test per request.

Run: ``.venv/bin/python bench/acls.py [--requests N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from actors.controller.acls import AclBinding, AclSet  # noqa: E402


def random_acls(n: int, rng: random.Random) -> list[AclBinding]:
    out = []
    for i in range(n):
        name = "-".join(rng.choice(["orders", "pay", "eu", "us", "raw", "x"]) + str(rng.randrange(100)) for _ in range(rng.randint(1, 3)))
        out.append(AclBinding("TOPIC", name, "LITERAL" if i % 2 else "PREFIXED", f"User:u{rng.randrange(100)}", "*", rng.choice(["READ", "WRITE", "ALL"]), rng.choice(["ALLOW", "ALLOW", "ALLOW", "DENY"])))
    return out


def bench_authorize(n: int, rng: random.Random, calls: int) -> float:
    acls = random_acls(n, rng)
    s = AclSet(acls)
    asks = [(b.principal, b.resource_name + rng.choice(["", "-a", "-b"])) for b in rng.sample(acls, min(len(acls), 1000))]
    t0 = time.perf_counter_ns()
    for i in range(calls):
        principal, name = asks[i % len(asks)]
        s.authorize(principal, "10.0.0.1", "WRITE", "TOPIC", name)
    return (time.perf_counter_ns() - t0) / calls


def bench_dispatch(requests: int, on: bool) -> float:
    from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
    from kio.static.primitive import i16, i32

    from store.record_batch import build_batch
    from tests.wire.fake_backend import FakeBackend
    from wire import authz
    from wire.backend import TopicSpec
    from wire.dispatch import KafkaDispatcher
    from wire.protocol import DecodedRequest

    inner = FakeBackend()
    inner.create_topics([TopicSpec("t", 1, 1)], False)
    authorizer = None
    backend = inner
    if on:
        acls = random_acls(10_000, random.Random(1)) + [AclBinding("TOPIC", "t", "LITERAL", "User:ANONYMOUS", "*", "WRITE", "ALLOW")]
        authorizer = authz.Authorizer({}, lambda _k: ("1", tuple(acls)))
        authorizer.refresh()
    d = KafkaDispatcher(backend, authorizer=authorizer)

    class Conn:
        principal = "User:ANONYMOUS"
        peer = ("127.0.0.1", 1)
        data: dict = {}

    conn = Conn()
    records = build_batch([(None, b"v")])
    body = ProduceRequest(transactional_id=None, acks=i16(1), timeout=i32(1000), topic_data=(TopicProduceData(name="t", partition_data=(PartitionProduceData(index=i32(0), records=records),)),))
    req = DecodedRequest(0, 9, 1, "bench", None, body)
    t0 = time.perf_counter_ns()
    for _ in range(requests):
        d.handle(req, conn)
    return (time.perf_counter_ns() - t0) / requests / 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = random.Random(7)
    authorize = {str(n): round(statistics.median(bench_authorize(n, rng, 50_000) for _ in range(args.repeat))) for n in (100, 10_000, 100_000)}
    off = statistics.median(bench_dispatch(args.requests, False) for _ in range(args.repeat))
    on = statistics.median(bench_dispatch(args.requests, True) for _ in range(args.repeat))
    print(json.dumps({"authorize_ns": authorize, "dispatch_us": {"authorizer_off": round(off, 2), "authorizer_on_10k_acls": round(on, 2)}, "loadavg_1m": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
