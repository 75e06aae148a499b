"""``replay --verify`` over a log with the group-admin events: classic ``OffsetsDeleted`` and
``ConsumerGroupDeleted`` (a deleted group and its offsets leave the snapshots; a re-used id has
only its new life), share-partitions re-initialised by AlterShareGroupOffsets
(``SharePartitionInitialized`` over an existing partition), deleted by DeleteShareGroupOffsets
(``ShareStateDeleted``) and a share group deleted by DeleteGroups (``ShareGroupDeleted``). The
engines agree with each other and with the actors' own folds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from actors.consumer.classic import ClassicGroup, CommitPartition
from actors.share.partition import SharePartition
from events import consumer_group as cg
from events.codec import new_event
from events.share import ShareStateDeleted
from events.share_group import GroupEpochBumped, ShareGroupDeleted, stream_id_for as share_stream
from store.event_log import open_event_log
from tests.projections.test_audit_and_cli import _app

ROOT = Path(__file__).resolve().parents[2]


def _classic(log, gid: str, steps) -> None:
    """Run ``steps`` (``group -> Outcome`` each, in order) on a fresh decider and append every
    outcome's events, applying them before the next step."""
    g = ClassicGroup(gid)
    for step in steps:
        out = step(g)
        assert getattr(out.reply, "error", None) is None, out.reply
        if out.events:
            log.append(cg.stream_id_for(gid), [new_event(e) for e in out.events])
            for e in out.events:
                g.apply(e)


def _commit(g: ClassicGroup, now: int, *parts):
    return g.commit(now, member_id="", group_instance_id=None, generation=-1, partitions=[CommitPartition(t, p, o) for t, p, o in parts])


def build_log(url: str) -> None:
    log = open_event_log(url)
    # g1: offsets, one deleted, then the group deleted: nothing of it is left
    _classic(log, "g1", [lambda g: _commit(g, 1, ("t", 0, 5), ("t", 1, 6)), lambda g: g.delete_offsets([("t", 0)]), lambda g: g.delete_group(2)])
    # g2: an offset deleted, then committed again; another one deleted for good
    _classic(log, "g2", [lambda g: _commit(g, 1, ("t", 0, 5), ("u", 0, 1)), lambda g: g.delete_offsets([("t", 0), ("u", 0)]),
                         lambda g: _commit(g, 3, ("t", 0, 9))])
    # g3: deleted, then used again: only the new life counts
    _classic(log, "g3", [lambda g: _commit(g, 1, ("t", 0, 5), ("t", 2, 2)), lambda g: g.delete_group(2), lambda g: _commit(g, 3, ("t", 1, 7))])

    # share group s1: a partition initialised and acquired from, then altered (re-initialised at
    # 2), a second partition deleted; s2: deleted as a whole
    def sp_events(group: str, tid: str, p: int, start: int):
        sp = SharePartition(group, tid, p, delivery_count_limit=5, max_in_flight_records=200)
        evs = sp.decide_initialize(start)
        for e in evs:
            sp.apply(e)
        acq, _records = sp.decide_acquire("m1", [(start, start + 3)], 10, 1000, 30000)
        return sp, evs + list(acq)

    s1 = share_stream("s1")
    log.append(s1, [new_event(GroupEpochBumped("s1", 1))])
    sp0, evs0 = sp_events("s1", "T", 0, 0)
    _sp1, evs1 = sp_events("s1", "T", 1, 10)
    log.append(s1, [new_event(e) for e in evs0 + evs1])
    fresh = SharePartition("s1", "T", 0, delivery_count_limit=5, max_in_flight_records=200)
    log.append(s1, [new_event(e) for e in fresh.decide_initialize(2, state_epoch=1)] + [new_event(ShareStateDeleted("s1", "T", 1))])
    s2 = share_stream("s2")
    log.append(s2, [new_event(GroupEpochBumped("s2", 1))])
    _sp, evs = sp_events("s2", "U", 0, 0)
    log.append(s2, [new_event(e) for e in evs] + [new_event(ShareStateDeleted("s2", "U", 0)), new_event(ShareGroupDeleted("s2"))])
    log.close()


def _summary(output: str) -> dict:
    return json.loads(output.strip().splitlines()[-1])


def test_replay_verify_agrees_on_group_admin_events(tmp_path):
    url = f"sqlite:///{tmp_path / 'admin.db'}"
    build_log(url)
    r = CliRunner().invoke(_app(), ["replay", "--url", url, "--engine", "python", "--engine", "duckdb", "--verify", "--json"])
    assert r.exit_code == 0, r.output
    summary = _summary(r.stdout)
    assert summary["divergences"] == []
    for engine in ("python", "duckdb"):
        tables = summary["engines"][engine]["tables"]
        assert tables["consumer_group_groups"] == 2, tables  # g2 and the new g3; g1 is gone
        assert tables["consumer_group_offsets"] == 2, tables  # g2 t-0 (recommitted), g3 t-1
        assert tables["share_partitions"] == 1, tables  # s1 T-0 (re-initialised); T-1 and s2 deleted


def test_replay_rows_of_the_group_admin_log(tmp_path):
    """The rows themselves (DuckDB): offsets after tombstones and deletions, the share-partition
    start offset set by the alter, and no in-flight records left from before it."""
    from projections.duckdb_fold import fold_duckdb
    from projections.model import domain_projections

    url = f"sqlite:///{tmp_path / 'admin.db'}"
    build_log(url)
    tables = fold_duckdb(url, domain_projections(["consumer_group", "share"])).tables
    offs = sorted((r["stream_id"], r["topic"], r["partition"], r["committed_offset"]) for r in tables["consumer_group_offsets"].to_pylist())
    assert offs == [("consumer-group:g2", "t", 0, 9), ("consumer-group:g3", "t", 1, 7)]
    [sp] = tables["share_partitions"].to_pylist()
    assert (sp["stream_id"], sp["topic_id"], sp["partition"], sp["start_offset"], sp["in_flight_records"]) == ("share-group:s1", "T", 0, 2, 0)


@pytest.mark.spark
@pytest.mark.slow
def test_replay_verify_spark_agrees_on_group_admin_events(tmp_path):
    url = f"sqlite:///{tmp_path / 'admin.db'}"
    build_log(url)
    r = subprocess.run(
        [sys.executable, "app.py", "replay", "--url", url, "--engine", "python", "--engine", "duckdb", "--engine", "spark", "--verify", "--json"],
        capture_output=True, text=True, timeout=600, cwd=str(ROOT),
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    summary = _summary(r.stdout)
    assert summary["divergences"] == []
    assert summary["engines"]["spark"]["tables"]["consumer_group_groups"] == 2
