"""Readers that bundle their own copy of SQLite (the ADBC driver, DuckDB's ``sqlite_scanner``)
in the process that appends to the log.

Two SQLite libraries in one process do not see each other's POSIX locks, so a connection of the
other library that closes believes it is the file's last user: opened read-write, it checkpoints
and *deletes* the ``-wal`` and ``-shm`` files our writer still has open, and every append after
that goes to a deleted file (invisible to other connections, lost on a crash). The readers must
open the log read-only. Each case runs in a child process that is killed without closing anything
(``os._exit``), as a crash would; every acknowledged append must be in the log afterwards.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_CHILD = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, {root!r})
    from events import domain_event, new_event
    from dataclasses import dataclass
    from store.event_log import open_event_log

    @domain_event("foreign.Noted")
    @dataclass(frozen=True, slots=True)
    class Noted:
        n: int

    url = "sqlite:///" + {db!r}
    log = open_event_log(url)
    log.append("s", [new_event(Noted(i)) for i in range(4)])
    if {reader!r} == "adbc":
        from store.arrow_reader import read_events_table
        assert read_events_table(url).num_rows == 4
    else:
        from projections.duckdb_fold import DuckDBFold
        from projections.model import domain_projections
        fold = DuckDBFold(domain_projections(["share_group"]), direct_scan=True)
        fold.update(url)
        fold.close()
    last = log.append("s", [new_event(Noted(i)) for i in range(4, 8)]).last_position
    print(last, flush=True)
    os._exit(0)  # a crash: nothing closed, nothing checkpointed
    """
)


@pytest.mark.parametrize("reader", ["adbc", "duckdb"])
def test_an_in_process_reader_loses_no_acknowledged_append(tmp_path, reader):
    db = tmp_path / "log.db"
    code = _CHILD.format(root=str(ROOT), db=str(db), reader=reader)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.strip().splitlines()[-1]) == 8
    assert os.path.exists(f"{db}-wal")  # the writer's WAL was not deleted under it
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT count(*) FROM events").fetchone()[0] == 8
