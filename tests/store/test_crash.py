"""Crash safety with real processes and SIGKILL.

Writers append 3-event transactions in a loop and report each append after it returned; the
test SIGKILLs them mid-stream, reopens the log and checks: every reported append is there, and no
partial transaction is visible (every stream holds a multiple of 3 events, versions contiguous).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from store.event_log import open_event_log

ROOT = Path(__file__).resolve().parents[2]


def _run_and_kill(url: str, writers: int, min_reports: int) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.store.crash_writer", url, f"w{i}"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(writers)
    ]
    lines: list[str] = []
    try:
        # read until each writer reported enough appends, then kill without warning
        for p in procs:
            for _ in range(min_reports):
                line = p.stdout.readline()
                if not line:
                    raise AssertionError(f"writer died early: {p.stderr.read()}")
                lines.append(line)
        time.sleep(0.05)
    finally:
        for p in procs:
            p.send_signal(signal.SIGKILL)
        for p in procs:
            # what was reported before the kill landed: read through the same buffered reader as
            # above (communicate() reads the raw pipe and would skip what that reader buffered,
            # gluing fragments of two lines together)
            lines.extend(p.stdout.readlines())
            p.stderr.read()
            assert p.wait(30) == -signal.SIGKILL
    return [ln for ln in lines if ln.endswith("\n")]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_sigkilled_writers_lose_nothing_acknowledged(backend: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("sqlite_url" if backend == "sqlite" else "pg_url")
    open_event_log(url).close()  # create the schema before the racers start
    reported = _run_and_kill(url, writers=2, min_reports=60)
    log = open_event_log(url)
    for line in reported:
        stream, version, position = line.split()
        recs = log.read_stream(stream, from_version=int(version) - 2, to_version=int(version))
        assert [r.stream_version for r in recs] == [int(version) - 2, int(version) - 1, int(version)]
        assert recs[-1].position == int(position)
    for stream in log.stream_ids():
        versions = [r.stream_version for r in log.read_stream(stream)]
        assert versions == list(range(1, len(versions) + 1))
        assert len(versions) % 3 == 0, f"partial transaction visible in {stream}"
    # the log is writable after the crash
    from events import new_event
    from tests.events.sample import Noted

    assert log.append("after", [new_event(Noted(1))]).last_version == 1
    log.close()
