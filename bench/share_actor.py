"""Benchmark: the ShareGroupActor with the durable SQLite event log (prints JSON).

Figures:

* ``cycles_per_s``: acquire+acknowledge cycles of 500-record ranges through the actor. A cycle is
  one ShareFetch that acknowledges (ACCEPT) the previous 500 records and acquires the next 500 (one
  log batch of 500), the way a share consumer piggy-backs acknowledgements; plus
  ``records_acknowledged_per_s``.
* ``cycle_group_commit``: the same with ``--concurrent-groups`` groups cycling at once, every
  actor appending through one JournalActor (group commit, ``event.log.journal.max.batch`` =
  groups, ``--linger-ms``). Under simpleSystemBase the journal's linger timers cannot be cancelled
  and stale ones fire mid-round, so some batches are partial.
* ``cycle_actor_only_not_durable``: the same single-group loop on an in-memory stand-in for the
  log (NOT durable): the actor's own cost (decide, encode, evolve, Thespian dispatch), i.e. the
  ceiling the store's append cost is subtracted from.
* ``memory_multiproc``: RSS of one live group actor process under ``multiprocTCPBase``.
* ``events_per_cycle``: events appended per cycle (the acknowledgement and the acquisition are one
  ``share.ShareFetchProcessed`` event per partition).
* ``rss_kib_per_idle_group`` / ``traced_kib_per_idle_group``: memory per live, idle group actor
  (one member, one share-partition) and ``..._per_passivated_group`` after they passivated.

Measured under Thespian's ``simpleSystemBase`` (the actor runs in this process; no IPC), with the
event log on a SQLite file. ``--synchronous`` sets SQLite's ``synchronous`` (FULL: fsync each
commit; NORMAL: WAL durable against process crashes, not power loss).

Usage: ``python bench/share_actor.py [--cycles 4000] [--groups 1000] [--synchronous FULL]
[--concurrent-groups 16] [--linger-ms 5] [--mp-groups 5]``
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from thespian.actors import ActorSystem  # noqa: E402

from actors.base import _EVENT_LOGS  # noqa: E402
from actors.messages import Configure, StatusRequest  # noqa: E402
from actors.share import messages as m  # noqa: E402
from actors.share.actor import ShareGroupActor  # noqa: E402

RANGE = 500


def rss_kib() -> int:
    """Resident set size of this process (KiB) from /proc."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class _MemoryLog:
    """Not durable: an in-memory stand-in for the event log, to measure the actor's own cost per
    cycle (decide, encode events, evolve, Thespian dispatch) without the store's I/O."""

    def __init__(self) -> None:
        from store.event_log import AppendResult

        self._result = AppendResult
        self.versions: dict[str, int] = {}
        self.position = 0

    def append_batch(self, requests):
        out = []
        for r in requests:
            v = self.versions.get(r.stream_id, 0)
            if r.expected_version != v:
                from store.event_log import ConcurrencyError

                raise ConcurrencyError(r.stream_id, r.expected_version, v)
            n = len(r.events)
            self.versions[r.stream_id] = v + n
            first = self.position + 1
            self.position += n
            out.append(self._result(r.stream_id, v + 1, v + n, first, self.position, tuple(range(first, self.position + 1))))
        return out

    def read_stream(self, *a, **k):
        return []

    def load_snapshot(self, *a, **k):
        return None

    def save_snapshot(self, *a, **k):
        return None

    def last_position(self):
        return self.position


def bench_cycles(url: str, sync: str, cycles: int) -> dict:
    asys = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        cfg = {"event.log.url": url, "event.log.sqlite.synchronous": sync,
               "shoal.share.group.snapshot.every.events": "1000"}
        a = asys.createActor(ShareGroupActor)
        asys.ask(a, Configure(cfg, "bench"), 10)
        asys.ask(a, m.ShareGroupHeartbeatCmd("bench", "m1", 0, subscribed_topic_names=("t",), topics={"t": ("T", 1)}), 10)
        hw = RANGE * (cycles + 10)
        r = asys.ask(a, m.ShareFetchCmd("bench", "m1", 0, (m.ShareFetchPartition("T", 0, high_watermark=hw),)), 10)
        offset = r.partitions[0].next_fetch_offset
        epoch = 1
        # warm-up: first acquisition
        r = asys.ask(a, m.ShareFetchCmd("bench", "m1", epoch, (m.ShareFetchPartition(
            "T", 0, fetch_offset=offset, log_batches=((offset, offset + RANGE - 1),), high_watermark=hw),), RANGE), 10)
        epoch += 1
        acq = r.partitions[0].acquired[0]
        st0 = asys.ask(a, m.GetShareGroupState("bench"), 10).stream_version
        t0 = time.perf_counter()
        for _ in range(cycles):
            first, last = acq[0], acq[1]
            nxt = last + 1
            r = asys.ask(a, m.ShareFetchCmd("bench", "m1", epoch, (m.ShareFetchPartition(
                "T", 0, acknowledgement_batches=((first, last, (1,)),), fetch_offset=nxt,
                log_batches=((nxt, nxt + RANGE - 1),), high_watermark=hw),), RANGE), 10)
            epoch += 1
            p = r.partitions[0]
            if r.error != "NONE" or p.acknowledge_error != "NONE" or len(p.acquired) != 1:
                raise RuntimeError(f"unexpected reply {r!r}")
            acq = p.acquired[0]
        dt = time.perf_counter() - t0
        st1 = asys.ask(a, m.GetShareGroupState("bench"), 10).stream_version
        return {
            "cycles": cycles,
            "range_records": RANGE,
            "seconds": round(dt, 3),
            "cycles_per_s": round(cycles / dt, 1),
            "records_acknowledged_per_s": round(cycles * RANGE / dt),
            "events_per_cycle": round((st1 - st0) / cycles, 3),
        }
    finally:
        asys.shutdown()


def bench_cycles_group_commit(url: str, sync: str, groups: int, rounds: int, linger_ms: int = 5) -> dict:
    """``groups`` share groups (one consumer each, topic ``T<i>``) cycling concurrently; every actor
    appends through one JournalActor that group-commits the ``groups`` appends of a round in one
    transaction (``event.log.journal.max.batch = groups``)."""
    from actors.journal import JournalActor

    asys = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        cfg = {"event.log.url": url, "event.log.sqlite.synchronous": sync,
               "event.log.journal.max.batch": str(groups), "event.log.journal.linger.ms": str(linger_ms),
               "shoal.share.group.snapshot.every.events": "1000"}
        j = asys.createActor(JournalActor)
        asys.ask(j, Configure(cfg, "journal"), 10)
        hw = RANGE * (rounds + 10)
        actors = []
        for i in range(groups):
            a = asys.createActor(ShareGroupActor)
            asys.ask(a, Configure(cfg, f"bench-{i}", j), 10)
            actors.append(a)

        def round_trip(make) -> dict:
            for i, a in enumerate(actors):
                asys.tell(a, make(i))
            out = {}
            while len(out) < groups:
                # simpleSystemBase's listen(t > 0) sleeps until the next pending wakeup before
                # returning replies that are already queued; listen(0) just takes them
                r = asys.listen(0) or asys.listen(10)
                if r is None:
                    raise RuntimeError("no reply")
                if isinstance(r, m.ShareGroupHeartbeatReply):
                    out[int(r.member_id[1:])] = r
                elif isinstance(r, m.ShareFetchReply) and r.partitions:
                    out[int(r.partitions[0].topic_id[1:])] = r
                else:
                    raise RuntimeError(f"unexpected reply {r!r}")
            return out

        round_trip(lambda i: m.ShareGroupHeartbeatCmd(f"bench-{i}", f"m{i}", 0, subscribed_topic_names=("t",),
                                                      topics={"t": (f"T{i}", 1)}))
        round_trip(lambda i: m.ShareFetchCmd(f"bench-{i}", f"m{i}", 0, (m.ShareFetchPartition(f"T{i}", 0, high_watermark=hw),)))
        start_off = hw  # latest: every partition starts at the high watermark; use a second log region
        hw2 = hw + RANGE * (rounds + 10)
        replies = round_trip(lambda i: m.ShareFetchCmd(f"bench-{i}", f"m{i}", 1, (m.ShareFetchPartition(
            f"T{i}", 0, fetch_offset=start_off, log_batches=((start_off, start_off + RANGE - 1),), high_watermark=hw2),), RANGE))
        acq = [replies[i].partitions[0].acquired[0] for i in range(groups)]
        epochs = [2] * groups
        v0 = sum(asys.ask(a, m.GetShareGroupState(f"bench-{i}"), 10).stream_version for i, a in enumerate(actors))
        t0 = time.perf_counter()
        for _ in range(rounds):
            def cmd(i: int) -> m.ShareFetchCmd:
                first, last = acq[i][0], acq[i][1]
                n = last + 1
                return m.ShareFetchCmd(f"bench-{i}", f"m{i}", epochs[i], (m.ShareFetchPartition(
                    f"T{i}", 0, acknowledgement_batches=((first, last, (1,)),), fetch_offset=n,
                    log_batches=((n, n + RANGE - 1),), high_watermark=hw2),), RANGE)

            replies = round_trip(cmd)
            for i in range(groups):
                p = replies[i].partitions[0]
                if replies[i].error != "NONE" or p.acknowledge_error != "NONE" or len(p.acquired) != 1:
                    raise RuntimeError(f"unexpected reply {replies[i]!r}")
                acq[i] = p.acquired[0]
                epochs[i] += 1
        dt = time.perf_counter() - t0
        v1 = sum(asys.ask(a, m.GetShareGroupState(f"bench-{i}"), 10).stream_version for i, a in enumerate(actors))
        cycles = rounds * groups
        return {
            "groups": groups,
            "cycles": cycles,
            "seconds": round(dt, 3),
            "cycles_per_s": round(cycles / dt, 1),
            "records_acknowledged_per_s": round(cycles * RANGE / dt),
            "events_per_cycle": round((v1 - v0) / cycles, 3),
            "journal_batches": asys.ask(j, StatusRequest(), 10).counts["batches"],
            "journal_linger_ms": linger_ms,
        }
    finally:
        asys.shutdown()


def bench_memory(url: str, sync: str, groups: int) -> dict:
    asys = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        cfg = {"event.log.url": url, "event.log.sqlite.synchronous": sync}
        gc.collect()
        tracemalloc.start()
        base_traced = tracemalloc.get_traced_memory()[0]
        base_rss = rss_kib()
        actors = []
        for i in range(groups):
            g = f"idle-{i}"
            a = asys.createActor(ShareGroupActor)
            asys.ask(a, Configure(cfg, g), 10)
            asys.ask(a, m.ShareGroupHeartbeatCmd(g, "m1", 0, subscribed_topic_names=("t",), topics={"t": ("T", 1)}), 10)
            asys.ask(a, m.ShareFetchCmd(g, "m1", 0, (m.ShareFetchPartition("T", 0, high_watermark=100),)), 10)
            asys.ask(a, m.ShareFetchCmd(g, "m1", 1, (m.ShareFetchPartition("T", 0, acknowledgement_batches=(), fetch_offset=100,
                                                                          log_batches=(), high_watermark=100),)), 10)
            asys.ask(a, m.ShareFetchCmd(g, "m1", 2, (), 0), 10)
            asys.ask(a, m.ShareFetchCmd(g, "m1", -1, ()), 10)  # close the session (passivated below by Passivate)
            actors.append(a)
        gc.collect()
        idle_traced = tracemalloc.get_traced_memory()[0] - base_traced
        idle_rss = rss_kib() - base_rss
        for a in actors:
            asys.tell(a, m.Passivate())
        asys.ask(actors[0], m.GetShareGroupState("idle-0"), 1)  # drain
        actors.clear()
        gc.collect()
        pass_traced = tracemalloc.get_traced_memory()[0] - base_traced
        pass_rss = rss_kib() - base_rss
        tracemalloc.stop()
        return {
            "groups": groups,
            "traced_kib_per_idle_group": round(idle_traced / 1024 / groups, 2),
            "rss_kib_per_idle_group": round(idle_rss / groups, 2),
            "traced_kib_per_passivated_group": round(pass_traced / 1024 / groups, 3),
            "rss_kib_per_passivated_group": round(pass_rss / groups, 2),
            "note": "RSS is not returned to the OS after passivation by CPython's allocator; the traced figure is what a passivated group still holds",
        }
    finally:
        asys.shutdown()


def bench_multiproc_rss(url: str, groups: int) -> dict:
    """RSS of live ShareGroupActor processes under ``multiprocTCPBase`` (one OS process per actor):
    what a live, idle group costs when actors are processes — the reason groups passivate."""
    import socket

    os.environ.setdefault("THESPIAN_BASE_IPADDR", "127.0.0.1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    quiet = {"version": 1, "handlers": {"null": {"class": "logging.NullHandler"}}, "root": {"handlers": ["null"], "level": "WARNING"}}
    asys = ActorSystem("multiprocTCPBase", {"Admin Port": port}, logDefs=quiet, transientUnique=True)
    try:
        pids = []
        for i in range(groups):
            g = f"mp-{i}"
            a = asys.createActor(ShareGroupActor)
            asys.ask(a, Configure({"event.log.url": url}, g), 30)
            asys.ask(a, m.ShareGroupHeartbeatCmd(g, "m1", 0, subscribed_topic_names=("t",), topics={"t": ("T", 1)}), 30)
            pids.append(asys.ask(a, StatusRequest(), 30).counts["pid"])
        rss = []
        for pid in pids:
            with open(f"/proc/{pid}/status") as f:
                rss.extend(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return {"groups": groups, "rss_kib_per_live_group_process": round(sum(rss) / len(rss))}
    finally:
        asys.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=4000)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--synchronous", default="FULL")
    ap.add_argument("--concurrent-groups", type=int, default=16)
    ap.add_argument("--linger-ms", type=int, default=5, help="event.log.journal.linger.ms for the group-commit run")
    ap.add_argument("--mp-groups", type=int, default=5, help="live group processes to measure under multiprocTCPBase (0: skip)")
    args = ap.parse_args()
    out: dict = {"base": "simpleSystemBase", "event_log": "sqlite file", "synchronous": args.synchronous}
    with tempfile.TemporaryDirectory() as d:
        out["cycle"] = bench_cycles(f"sqlite:///{d}/cycles.db", args.synchronous, args.cycles)
        _EVENT_LOGS["memory://bench"] = _MemoryLog()  # type: ignore[assignment]
        out["cycle_actor_only_not_durable"] = bench_cycles("memory://bench", args.synchronous, args.cycles)
        _EVENT_LOGS.pop("memory://bench")
        for elog in list(_EVENT_LOGS.values()):
            elog.close()
        _EVENT_LOGS.clear()
        out["cycle_group_commit"] = bench_cycles_group_commit(f"sqlite:///{d}/gc.db", args.synchronous, args.concurrent_groups,
                                                              max(1, args.cycles // args.concurrent_groups), args.linger_ms)
        for elog in list(_EVENT_LOGS.values()):
            elog.close()
        _EVENT_LOGS.clear()
        out["memory"] = bench_memory(f"sqlite:///{d}/groups.db", args.synchronous, args.groups)
        if args.mp_groups:
            out["memory_multiproc"] = bench_multiproc_rss(f"sqlite:///{d}/mp.db", args.mp_groups)
        for elog in list(_EVENT_LOGS.values()):
            elog.close()
        _EVENT_LOGS.clear()
    out["targets"] = {"cycles_per_s": 2000, "events_per_cycle_max": 1}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
