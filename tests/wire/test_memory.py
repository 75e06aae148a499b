"""wire/memory.py: the glibc knobs and when the daemon trims."""

from __future__ import annotations

import ctypes.util

import pytest

from wire.memory import MallocTrimmer, limit_malloc_arenas

glibc = pytest.mark.skipif(ctypes.util.find_library("c") is None, reason="no libc to load")


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
    assert limit_malloc_arenas(0) is False  # 0 leaves glibc's default
    assert limit_malloc_arenas(2) is True
