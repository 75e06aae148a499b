"""Golden audit on a log written by the end-to-end client test.

``data/e2e_shared_daemon.jsonl`` is the event log of the daemon that
``tests/e2e/test_share_e2e.py`` runs (its ``shared_daemon``; exported row by row, every envelope
field kept): real confluent-kafka share consumers in group ``workers`` fetching, accepting,
releasing and rejecting records of a 3-partition topic (Kafka
``ShareConsumerTest.testExplicitAcknowledgeReleaseAccept`` / ``…Reject`` in spirit). The timelines
below were read off the log and checked against the record-state rules of KIP-932: a released
record becomes AVAILABLE and is delivered again with delivery count 2; a rejected one is
ARCHIVED; an accepted prefix leaves the cache when the start offset moves past it.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from typer.testing import CliRunner

from events.base import NewEvent
from projections.audit import record_history
from store.event_log import open_event_log
from tests.projections.test_audit_and_cli import _app

DATA = Path(__file__).parent / "data" / "e2e_shared_daemon.jsonl"
TOPIC = "ce3c3991-e685-4870-9d80-4f11768198f0"
MEMBER = "elnk6ZPBQYWfZCVdFrg/9Q"


def load_e2e_log(tmp_path) -> str:
    """A fresh SQLite log holding the exported events at their original positions and times."""
    rows = [json.loads(line) for line in DATA.read_text().splitlines()]
    times = iter(r["recorded_at_ms"] for r in rows)
    url = f"sqlite:///{tmp_path / 'e2e.db'}"
    log = open_event_log(url, clock=lambda: next(times))
    for r in rows:
        res = log.append(r["stream_id"], [NewEvent(uuid.uuid4(), r["event_type"], r["schema_version"], r["data"].encode())], r["stream_version"] - 1)
        assert res.first_position == r["position"]
    log.close()
    return url


def test_released_record_is_redelivered_then_accepted(tmp_path):
    log = open_event_log(load_e2e_log(tmp_path))
    steps = record_history(log, "workers", TOPIC, 1, 33)
    log.close()
    assert [(s.position, s.action, s.member_id, s.state, s.delivery_count) for s in steps] == [
        (21, "acquired", MEMBER, "ACQUIRED", 1),
        (23, "released", MEMBER, "AVAILABLE", 1),
        (28, "acquired", MEMBER, "ACQUIRED", 2),
        # every offset below it is terminal now: the start offset moves past it (it leaves the cache)
        (30, "accepted", MEMBER, None, 2),
    ]
    assert steps[0].lock_deadline_ms is not None and steps[1].lock_deadline_ms is None


def test_rejected_record_is_archived(tmp_path):
    log = open_event_log(load_e2e_log(tmp_path))
    steps = record_history(log, "workers", TOPIC, 1, 32)
    log.close()
    assert [(s.position, s.action, s.state, s.delivery_count) for s in steps] == [
        (21, "acquired", "ACQUIRED", 1),
        (23, "rejected", "ARCHIVED", 1),
        # offset 33, the last non-terminal one before it, is accepted at 30: the start offset passes 32
        (30, "start offset moved past it", None, 1),
    ]


def test_replay_verify_passes_on_the_e2e_log(tmp_path):
    url = load_e2e_log(tmp_path)
    r = CliRunner().invoke(_app(), ["replay", "--url", url, "--engine", "duckdb", "--verify", "--json"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["divergences"] == []
    assert summary["engines"]["python"]["tables"]["share_partitions"] == 3
    assert summary["engines"]["duckdb"]["tables"]["share_group_groups"] == 1
