"""Share-partition benchmark, pure model (no actor, no event log): acquire + acknowledge cycles
with 500-record ranges.

One *cycle* is what one share-consumer round trip does to a share-partition: a ShareFetch that
acknowledges (ACCEPT) the 500 records of the previous round trip and acquires the next 500 (read as
5 log batches of 100 records): ``decide_share_fetch`` → ``apply``. Other modes: acquire and a
separate ShareAcknowledge (two events per cycle), and per-offset acknowledgement types. Printed as JSON: cycles per second, records acknowledged per
second, events per cycle, and the same with every event also encoded for the log
(``events.codec.new_event``, msgspec JSON) to show the encoding cost the actor will pay.
Targets (issue 3): ≥ 20,000 cycles/s on the pure model; ≤ 1 event per cycle on average.

Run: ``.venv/bin/python bench/share.py [--seconds 3]``. The actor-and-log part of the figures is
measured by the ShareGroupActor benchmark (a separate file).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from actors.share.partition import SharePartition  # noqa: E402
from events.codec import new_event  # noqa: E402

RECORDS_PER_CYCLE = 500
LOG_BATCH = 100
LOCK_MS = 30_000


def _fetched(base: int) -> list[tuple[int, int]]:
    return [(base + i, base + i + LOG_BATCH - 1) for i in range(0, RECORDS_PER_CYCLE, LOG_BATCH)]


def run(seconds: float, encode: bool, mode: str) -> dict:
    """Run cycles for about ``seconds``.

    ``mode``: ``"share_fetch"`` — each ShareFetch carries the ACCEPT of the previous 500 records
    and acquires the next 500 (:meth:`SharePartition.decide_share_fetch`, one event per cycle:
    the share consumer's steady state); ``"separate"`` — ``decide_acquire`` then a separate
    ``decide_acknowledge`` (ShareAcknowledge; two events per cycle); ``"mixed"`` — like
    ``share_fetch`` but the acknowledgement has one type per offset (every 50th RELEASE), which
    explodes the batch into per-offset state.
    """
    sp = SharePartition("bench-group", "9d2b8c1e-0000-4000-8000-00000000000b", 0, max_in_flight_records=10_000)
    member = "member-1"

    def read_log(offset: int) -> list[tuple[int, int]]:
        # the log grows as fast as it is consumed: 5 log batches of 100 records from the offset
        return _fetched(offset)

    cycles = events = encoded_bytes = 0
    now = 0
    pending: list = []  # acknowledgements to piggyback on the next ShareFetch
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while True:
        for _ in range(200):
            if mode == "separate":
                evs, acquired = sp.decide_acquire(member, read_log(sp.next_fetch_offset()), RECORDS_PER_CYCLE, now, LOCK_MS)
                for ev in evs:
                    sp.apply(ev)
                evs2 = sp.decide_acknowledge(member, [(a.first_offset, a.last_offset, (1,)) for a in acquired], now, LOCK_MS)
                for ev in evs2:
                    sp.apply(ev)
                evs = evs + evs2
            else:
                d = sp.decide_share_fetch(member, pending, read_log, RECORDS_PER_CYCLE, now, LOCK_MS)
                if d.ack_error is not None:
                    raise RuntimeError(d.ack_error)
                evs = d.events
                for ev in evs:
                    sp.apply(ev)
                if mode == "share_fetch":
                    pending = [(a.first_offset, a.last_offset, (1,)) for a in d.acquired]
                else:
                    pending = [
                        (a.first_offset, a.last_offset, tuple(2 if o % 50 == 7 else 1 for o in range(a.first_offset, a.last_offset + 1)))
                        for a in d.acquired
                    ]
            events += len(evs)
            if encode:
                for ev in evs:
                    encoded_bytes += len(new_event(ev).data)
            cycles += 1
            now += 1
        if time.perf_counter() >= deadline:
            break
    elapsed = time.perf_counter() - t0
    return {
        "mode": mode,
        "encode_events_json": encode,
        "cycles": cycles,
        "seconds": round(elapsed, 3),
        "cycles_per_second": round(cycles / elapsed),
        "records_acquired_and_acknowledged_per_second": round(cycles * RECORDS_PER_CYCLE / elapsed),
        "events_per_cycle": round(events / cycles, 3),
        "event_json_bytes_per_cycle": round(encoded_bytes / cycles, 1) if encode else None,
        "cached_batches_at_end": len(sp.cached_batches()),
        "start_offset_at_end": sp.start_offset,
    }


def main() -> None:
    """Print the figures as one JSON object."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    results = [
        run(args.seconds, encode=False, mode="share_fetch"),
        run(args.seconds, encode=True, mode="share_fetch"),
        run(args.seconds, encode=False, mode="separate"),
        run(args.seconds, encode=False, mode="mixed"),
    ]
    print(json.dumps({"benchmark": "share-partition pure model, 500-record acquire+acknowledge cycles",
                      "records_per_cycle": RECORDS_PER_CYCLE, "log_batch_records": LOG_BATCH,
                      "targets": {"cycles_per_second": 20000, "events_per_cycle": 1.0},
                      "results": results}, indent=2))


if __name__ == "__main__":
    main()
