"""Audit timelines and the ``replay``/``audit`` commands.

The golden audit log is generated here by driving the share-partition deciders
(:class:`actors.share.partition.SharePartition`) — the end-to-end client test does not write a
log yet. Scenario: Kafka ``SharePartitionTest.testAcquisitionLockOnReleasingAcknowledgedMultipleSubsetRecordBatch``
in spirit — acquire, lock timeout, re-acquire by another member, release, re-acquire, accept.
"""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from events.codec import new_event
from projections.audit import record_history
from projections.cli import register
from projections.model import domain_projections
from projections.python_fold import fold_python
from store.event_log import open_event_log

GROUP, TOPIC = "audit-group", "AAAAAAAAAAAAAAAAAAAAAQ"


def _drive(url: str) -> None:
    """Append the decisions of a SharePartition driven through a small scenario."""
    from actors.share.partition import SharePartition
    from events.share_group import stream_id_for

    clock = iter(range(10_000, 10_000_000, 1_000))
    log = open_event_log(url, clock=lambda: next(clock))
    sp = SharePartition(GROUP, TOPIC, 0, delivery_count_limit=3)
    stream = stream_id_for(GROUP)

    def persist(events):
        if events:
            log.append(stream, [new_event(e) for e in events])

    persist(sp.initialize(0))
    _, evs = sp.acquire("member-1", [(0, 9)], 500, now_ms=1_000, lock_duration_ms=30_000)
    persist(evs)
    persist(sp.expire_locks(31_000))  # the lock of 0..9 times out
    _, evs = sp.acquire("member-2", [(0, 9)], 500, now_ms=32_000, lock_duration_ms=30_000)
    persist(evs)
    persist(sp.acknowledge("member-2", [(0, 4, [1]), (5, 9, [2])], now_ms=33_000))  # accept 0..4, release 5..9
    _, evs = sp.acquire("member-1", [(5, 9)], 500, now_ms=34_000, lock_duration_ms=30_000)
    persist(evs)
    persist(sp.acknowledge("member-1", [(5, 9, [1])], now_ms=35_000))
    log.close()


@pytest.fixture
def audit_url(tmp_path):
    url = f"sqlite:///{tmp_path / 'audit.db'}"
    _drive(url)
    return url


def test_record_history_golden(audit_url):
    log = open_event_log(audit_url)
    steps = record_history(log, GROUP, TOPIC, 0, 7)
    log.close()
    got = [(s.action, s.member_id, s.state, s.delivery_count, s.lock_deadline_ms) for s in steps]
    assert got == [
        ("acquired", "member-1", "ACQUIRED", 1, 31_000),
        ("lock timed out", None, "AVAILABLE", 1, None),
        ("acquired", "member-2", "ACQUIRED", 2, 62_000),
        ("released", "member-2", "AVAILABLE", 2, None),
        ("acquired", "member-1", "ACQUIRED", 3, 64_000),
        ("accepted", "member-1", None, 3, None),  # all acknowledged: the start offset moved past it
    ]
    positions = [s.position for s in steps]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)


def test_record_history_of_untouched_offset_is_empty(audit_url):
    log = open_event_log(audit_url)
    assert record_history(log, GROUP, TOPIC, 0, 500) == []
    log.close()


def test_share_snapshot_rows_match_actor_state(audit_url):
    """The Python fold's share tables are the SharePartition's own state, and the DuckDB fold of
    the events' outcomes gives the same tables (all acknowledged: the cache is empty)."""
    from projections.duckdb_fold import fold_duckdb

    ps = domain_projections(["share"])
    res = fold_python(audit_url, ps)
    (row,) = res.tables["share_partitions"].to_pylist()
    assert (row["start_offset"], row["end_offset"], row["in_flight_records"], row["delivery_count_limit"]) == (10, 10, 0, 3)
    assert res.tables["share_ranges"].num_rows == 0
    dk = fold_duckdb(audit_url, ps)
    assert dk.extra["skipped_domains"] == []
    for name in ("share_partitions", "share_ranges"):
        assert dk.tables[name].equals(res.tables[name]), name


def test_share_ranges_of_a_partly_acknowledged_partition_in_every_engine(tmp_path):
    """Records in every state at once (ARCHIVED below the start offset after a log-start-offset
    move, ACKNOWLEDGED, ACQUIRED with a renewed lock, AVAILABLE after a release): the Python rows
    are the SharePartition's cache, and DuckDB folds the same rows from the outcomes."""
    from actors.share.partition import SharePartition
    from events.share_group import stream_id_for
    from projections.duckdb_fold import fold_duckdb

    url = f"sqlite:///{tmp_path / 'mixed.db'}"
    log = open_event_log(url)
    sp = SharePartition(GROUP, TOPIC, 0, delivery_count_limit=3)
    events = sp.initialize(0)
    events += sp.acquire("member-1", [(0, 4), (5, 9)], 10, 1_000, 30_000)[1]
    events += sp.acknowledge("member-1", [(2, 3, [1]), (5, 5, [2]), (6, 7, [4])], 2_000, 30_000)
    events += sp.update_log_start_offset(2)
    log.append(stream_id_for(GROUP), [new_event(e) for e in events])
    log.close()
    ps = domain_projections(["share"])
    res = fold_python(url, ps)
    rows = [(r["first_offset"], r["last_offset"], r["state"], r["delivery_count"], r["member_id"], r["lock_deadline_ms"])
            for r in res.tables["share_ranges"].to_pylist()]
    assert rows == [
        (0, 1, "ACQUIRED", 1, "member-1", 31_000),  # acquired records are not archived by the LSO move
        (2, 3, "ACKNOWLEDGED", 1, None, None),
        (4, 4, "ACQUIRED", 1, "member-1", 31_000),
        (5, 5, "AVAILABLE", 1, None, None),
        (6, 7, "ACQUIRED", 1, "member-1", 32_000),  # RENEW: the lock restarted at 2_000
        (8, 9, "ACQUIRED", 1, "member-1", 31_000),
    ]
    (prow,) = res.tables["share_partitions"].to_pylist()
    assert (prow["start_offset"], prow["end_offset"], prow["in_flight_records"]) == (sp.start_offset, sp.end_offset, 7)
    dk = fold_duckdb(url, ps)
    for name in ("share_partitions", "share_ranges"):
        assert dk.tables[name].equals(res.tables[name]), name


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """test app"""

    register(app)
    return app


def test_cli_replay_verify_passes_and_writes_parquet(audit_url, tmp_path):
    out = tmp_path / "out"
    r = CliRunner().invoke(_app(), ["replay", "--url", audit_url, "--engine", "duckdb", "--verify", "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["divergences"] == []
    assert summary["engines"]["python"]["events"] == summary["engines"]["python"]["last_position"] == 7
    assert (out / "python" / "share_ranges.parquet").exists()
    assert (out / "duckdb" / "projection.duckdb").exists()
    assert json.loads((out / "duckdb" / "_checkpoint.json").read_text())["engine"] == "duckdb"


def test_cli_replay_verify_fails_on_a_diverging_stored_snapshot(tmp_path):
    """A stored ShareGroupActor snapshot (its own format) that disagrees with the log is a
    divergence: exit code 1; one that agrees is not."""
    from actors.share.group_state import ShareGroupState
    from actors.share.config import BrokerShareConfig
    from events.share_group import GroupEpochBumped, stream_id_for

    url = f"sqlite:///{tmp_path / 'sg.db'}"
    log = open_event_log(url)
    res = log.append(stream_id_for("g"), [new_event(GroupEpochBumped("g", 3))])
    good = ShareGroupState("g", BrokerShareConfig())
    good.apply(GroupEpochBumped("g", 3))
    log.save_snapshot(stream_id_for("g"), 1, good.dumps(), res.last_position)
    log.close()
    r = CliRunner().invoke(_app(), ["replay", "--url", url, "--verify"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    log = open_event_log(url)
    wrong = ShareGroupState("g", BrokerShareConfig())
    wrong.apply(GroupEpochBumped("g", 4))
    log.save_snapshot(stream_id_for("g"), 1, wrong.dumps(), res.last_position)
    log.close()
    r = CliRunner().invoke(_app(), ["replay", "--url", url, "--verify"], env={"COLUMNS": "200"})
    assert r.exit_code == 1, r.output
    assert "group_epoch" in r.stdout and "DIVERGENCE" in r.stdout


def test_cli_audit_record_json_and_table(audit_url):
    r = CliRunner().invoke(_app(), ["audit", "record", "--url", audit_url, "--group", GROUP, "--topic", TOPIC, "--partition", "0", "--offset", "3", "--json"])
    assert r.exit_code == 0, r.output
    steps = json.loads(r.stdout)
    assert [s["action"] for s in steps] == ["acquired", "lock timed out", "acquired", "accepted", "start offset moved past it"]
    r = CliRunner().invoke(_app(), ["audit", "record", "--url", audit_url, "--group", GROUP, "--topic", TOPIC, "--partition", "0", "--offset", "3"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "lock timed out" in r.stdout and "member-2" in r.stdout


def test_cli_audit_segment_lifecycle(tmp_path):
    from events import rlmm

    url = f"sqlite:///{tmp_path / 'rlmm.db'}"
    log = open_event_log(url)
    seg = "c2VnbWVudC1pZC0wMDAwMQ"
    log.append(rlmm.stream_id(3), [new_event(rlmm.SegmentMetadataAdded("tid", "orders", 0, seg, 0, 99, 5, 1, 100, 4096, ((0, 0),), None, 0))])
    log.append(rlmm.stream_id(3), [new_event(rlmm.SegmentMetadataUpdated("tid", "orders", 0, seg, 200, None, 1, 1))])
    log.append(rlmm.stream_id(3), [new_event(rlmm.SegmentMetadataAdded("tid", "orders", 0, "b3RoZXItc2VnbWVudC0wMQ", 100, 199, 5, 1, 300, 1, ((0, 100),), None, 0))])
    log.close()
    r = CliRunner().invoke(_app(), ["audit", "segment", seg, "--url", url, "--json"])
    assert r.exit_code == 0, r.output
    steps = json.loads(r.stdout)
    assert [(s["state"], s["start_offset"], s["end_offset"]) for s in steps] == [
        ("COPY_SEGMENT_STARTED", 0, 99),
        ("COPY_SEGMENT_FINISHED", None, None),
    ]


def test_cli_replay_auto_engine_and_snapshots_rebuild(tmp_path):
    """``replay`` picks its engine by the log's size (``--engine auto``, the default: a small log
    folds in Python); ``snapshots`` rebuilds every actor snapshot from the log, and a later
    ``replay --verify`` finds them in agreement with the log."""
    from events.share_group import GroupEpochBumped, stream_id_for

    url = f"sqlite:///{tmp_path / 'auto.db'}"
    log = open_event_log(url)
    for g in ("a", "b"):
        log.append(stream_id_for(g), [new_event(GroupEpochBumped(g, 1)), new_event(GroupEpochBumped(g, 2))])
    log.close()
    r = CliRunner().invoke(_app(), ["replay", "--url", url, "--json"])
    assert r.exit_code == 0, r.output
    assert list(json.loads(r.stdout.strip().splitlines()[-1])["engines"]) == ["python"]
    r = CliRunner().invoke(_app(), ["snapshots", "--url", url])
    assert r.exit_code == 0, r.output
    log = open_event_log(url)
    assert [log.load_snapshot(stream_id_for(g)).stream_version for g in ("a", "b")] == [2, 2]
    log.close()
    r = CliRunner().invoke(_app(), ["replay", "--url", url, "--verify"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output


def test_audit_acls_at_a_position_and_now(tmp_path):
    """``audit acls``: the ACLs in force at a log position (before a deletion: still there), and
    now; created ACLs carry the position of their creation."""
    from events.controller import STREAM_ID, AclBinding, AclsCreated, AclsDeleted, TopicDeleted

    read = AclBinding("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")
    deny = AclBinding("GROUP", "g-", "PREFIXED", "User:*", "*", "ALL", "DENY")
    url = f"sqlite:///{tmp_path / 'acls.db'}"
    log = open_event_log(url)
    first = log.append(STREAM_ID, [new_event(AclsCreated((read, deny)))]).last_position
    log.append(STREAM_ID, [new_event(TopicDeleted("0" * 32, "x"))])  # other controller events are skipped
    log.append(STREAM_ID, [new_event(AclsDeleted((read,)))])
    log.close()
    r = CliRunner().invoke(_app(), ["audit", "acls", "--url", url, "--at", str(first), "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    assert [(g["principal"], g["resource_type"], g["resource_name"], g["pattern_type"], g["operation"], g["permission"], g["host"], g["position"]) for g in rows] == [
        ("User:*", "GROUP", "g-", "PREFIXED", "ALL", "DENY", "*", first),
        ("User:alice", "TOPIC", "orders", "LITERAL", "READ", "ALLOW", "*", first),
    ]
    r = CliRunner().invoke(_app(), ["audit", "acls", "--url", url, "--json"])
    assert [g["principal"] for g in json.loads(r.stdout)] == ["User:*"]
    r = CliRunner().invoke(_app(), ["audit", "acls", "--url", url, "--at", "2000-01-01T00:00:00Z", "--json"])
    assert json.loads(r.stdout) == []  # before any event
    r = CliRunner().invoke(_app(), ["audit", "acls", "--url", url, "--at", str(first)], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "User:alice" in r.output and "TOPIC:orders" in r.output
