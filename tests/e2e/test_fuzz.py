"""A bounded frame-fuzz run against the real daemon (issue 13): 20,000 random, truncated,
mutated and oversized-length frames over every advertised API and version, plus bad size
prefixes and unsupported versions, interleaved with valid produce traffic (``bench/fuzz.py``
has the engine and the long run).

Afterwards: the daemon is the same process (no abort, no restart), every record the broker
acknowledged during the run reads back, and the listener's RSS is back near its start.

The RSS margin is generous on purpose: the start is measured after a warm-up of every valid
request, the end after RSS stops falling; what remains above the start is allocator high-water
(thread stacks, the arenas ``wire/memory.py`` caps and trims) and Fetch/ShareFetch long polls
whose mutated ``max_wait`` outlives the run (each holds its connection's thread until it
expires, as Kafka holds a delayed fetch). Issue 13's target (within 10%) is measured by the
100,000-frame bench; this test fails on a leak that grows with the number of frames: 25% of a
~125 MB start is ~30 MB, while the listener without ``wire/memory.py``'s arena cap and trim grew
from 49 MB to 88, 176 and 202 MB over three rounds of 20,000 frames (in-memory backend).
"""

from __future__ import annotations

import pytest

from bench.fuzz import fuzz_daemon

pytestmark = pytest.mark.slow

FRAMES = 20_000
RSS_MARGIN = 0.25


def test_fuzzed_daemon_survives_keeps_its_memory_and_every_acknowledged_record(daemon_factory):
    d = daemon_factory()
    pid = d.proc.pid
    out = fuzz_daemon(d, FRAMES, seed=13, workers=4)
    assert out["deaths"] == 0 and out["same_pid"] and d.proc.pid == pid and d.proc.poll() is None, out
    assert out["frames"] == FRAMES
    assert all(out["by_kind"][k] > 0 for k in out["by_kind"]), out["by_kind"]
    assert out["frame_errors_logged"] > 0  # the guard did reject frames
    assert out["valid_produced"] > 0
    assert out["valid_read_back"] == out["valid_produced"], out
    assert out["rss_end_kb"] <= out["rss_start_kb"] * (1 + RSS_MARGIN), out
