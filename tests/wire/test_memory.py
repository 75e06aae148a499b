"""wire/memory.py: the glibc knobs and when the daemon trims."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from wire.memory import MallocTrimmer

ROOT = Path(__file__).resolve().parents[2]

glibc = pytest.mark.usefixtures("libc")


def test_trimmer_trims_once_per_interval_and_never_when_disabled():
    calls = []
    t = MallocTrimmer(10_000, trim=lambda: calls.append(1))
    assert [t.tick(ms) for ms in (0, 5_000, 9_999, 10_000, 15_000, 20_000, 20_001)] == [False, False, False, True, False, True, False]
    assert len(calls) == t.trims == 2
    off = MallocTrimmer(0, trim=lambda: calls.append(1))
    assert not any(off.tick(ms) for ms in range(0, 100_000, 10_000))
    assert len(calls) == 2


@glibc
def test_arena_cap_calls_into_glibc():
    # M_ARENA_MAX is process-wide: set it in a child process, never in the test run's own malloc
    code = "from wire.memory import limit_malloc_arenas as f; print(f(0), f(2))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "True"]  # 0 leaves glibc's default; 2 is set
