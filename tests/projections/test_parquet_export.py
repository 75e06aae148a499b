"""The Parquet export of the log (projections.source.export_parquet): its raw part, its typed
part (each event type's payloads as Parquet structs, upcast), its manifest, re-exports, and the
Spark engine's choice between the typed and the raw part."""

from __future__ import annotations

import json
import uuid

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from events import share_group as sg
from events.base import NewEvent
from events.codec import CorruptEventError, new_event
from projections.model import domain_projections
from projections.python_fold import fold_python
from projections.source import TYPED_DIR, LogSource, ReplayBounds, export_parquet, read_typed_manifest, typed_shapes
from store.event_log import ANY, open_event_log
from tests.projections.test_differential import assert_same

TP = (sg.TopicPartitions("AAAAAAAAAAAAAAAAAAAAAQ", (0, 2)), sg.TopicPartitions("BBBBBBBBBBBBBBBBBBBBBQ", (1,)))


def _log(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'events.db'}"
    log = open_event_log(url)
    for g in ("g1", "g2"):
        log.append(
            f"share-group:{g}",
            [
                new_event(sg.MemberSubscriptionUpdated(g, "m1", "client", "/10.0.0.1", None, ("orders", "audit"))),
                new_event(sg.GroupEpochBumped(g, 3)),
                new_event(sg.MemberAssignmentReconciled(g, "m1", 2, 1, TP)),
                new_event(sg.MemberFenced(g, "m1", "SESSION_TIMEOUT")),
            ],
            ANY,
        )
    log.close()
    return url


def test_export_writes_raw_and_typed_parts(tmp_path):
    url = _log(tmp_path)
    out = tmp_path / "export"
    assert export_parquet(url, out) == 8
    # the raw part is the log's rows as stored, read back in position order; _typed/ is not part of it
    raw = LogSource.of(str(out))
    assert raw.count() == 8
    assert [t.num_rows for t in raw.batches()] == [8]
    manifest = read_typed_manifest(out)
    assert manifest["last_position"] == 8 and manifest["event_count"] == 8
    assert manifest["types"] == json.loads(json.dumps(typed_shapes()))
    # every registered type has a directory, also those with no events in the log
    for etype in manifest["types"]:
        assert (out / TYPED_DIR / etype).is_dir(), etype
    assert ds.dataset(out / TYPED_DIR / "share_group.ShareGroupDeleted", format="parquet").count_rows() == 0
    # a payload struct holds the same values as the stored JSON (lists of structs of lists too)
    rec = pq.read_table(out / TYPED_DIR / "share_group.MemberAssignmentReconciled").to_pylist()
    stored = {t["position"]: json.loads(t["data"]) for t in LogSource.of(url).batches().__next__().to_pylist()}
    assert [r["position"] for r in rec] == [3, 7]
    for r in rec:
        assert r["payload"] == stored[r["position"]]
        assert r["stream_id"] == ("share-group:g1" if r["position"] == 3 else "share-group:g2")
    sub = pq.read_table(out / TYPED_DIR / "share_group.MemberSubscriptionUpdated").to_pylist()
    assert sub[0]["payload"]["rack_id"] is None and sub[0]["payload"]["subscribed_topic_names"] == ["orders", "audit"]


def test_reexport_replaces_the_earlier_files(tmp_path):
    url = _log(tmp_path)
    out = tmp_path / "export"
    export_parquet(url, out, chunk_positions=3)
    assert len(list(out.glob("part-*.parquet"))) == 3
    export_parquet(url, out, ReplayBounds(0, 4), chunk_positions=3)
    assert LogSource.of(str(out)).count() == 4
    assert read_typed_manifest(out)["last_position"] == 4
    assert ds.dataset(out / TYPED_DIR / "share_group.MemberFenced", format="parquet").count_rows() == 1
    export_parquet(url, out, typed=False)
    assert read_typed_manifest(out) is None and not (out / TYPED_DIR).exists()


def test_export_of_an_unreadable_payload_fails_and_leaves_no_manifest(tmp_path):
    url = f"sqlite:///{tmp_path / 'bad.db'}"
    log = open_event_log(url)
    log.append("share-group:g", [NewEvent(uuid.uuid4(), "share_group.GroupEpochBumped", 1, b'{"group_id": "g", "group_epoch": ')], ANY)
    log.close()
    with pytest.raises(CorruptEventError) as err:
        export_parquet(url, tmp_path / "export")
    assert err.value.position == 1 and err.value.event_type == "share_group.GroupEpochBumped"
    assert read_typed_manifest(tmp_path / "export") is None


def test_cli_export(tmp_path):
    from typer.testing import CliRunner

    from app import app

    url = _log(tmp_path)
    r = CliRunner().invoke(app, ["export", str(tmp_path / "x"), "--url", url, "--until-position", "5"])
    assert r.exit_code == 0, r.output
    assert "exported 5 events" in r.output
    assert read_typed_manifest(tmp_path / "x")["last_position"] == 5


@pytest.mark.spark
@pytest.mark.slow
def test_spark_reads_the_raw_part_when_the_typed_one_is_stale(tmp_path, spark_session):
    """An export made before an event class changed: its typed part no longer matches the
    class, so the fold parses the raw part's JSON instead (and gets the same snapshot)."""
    from projections.spark_fold import fold_spark

    url = _log(tmp_path)
    out = tmp_path / "export"
    export_parquet(url, out)
    ps = domain_projections(["share_group"])
    py = fold_python(url, ps)
    typed = fold_spark(str(out), ps, spark=spark_session)
    assert typed.extra["read_via"] == "typed_parquet"
    m = out / TYPED_DIR / "_manifest.json"
    doc = json.loads(m.read_text())
    doc["types"]["share_group.MemberFenced"]["structure"]["reason_added_later"] = "VARCHAR"
    m.write_text(json.dumps(doc))
    raw = fold_spark(str(out), ps, spark=spark_session)
    assert raw.extra["read_via"] == "parquet"
    assert_same(ps, py, typed)
    assert_same(ps, py, raw)


@pytest.mark.spark
@pytest.mark.slow
def test_spark_typed_export_respects_replay_bounds(tmp_path, spark_session):
    """``--until-position``/``--until-time`` over a typed export give the Python fold's snapshot
    of the same prefix of the log."""
    from projections.spark_fold import fold_spark

    url = _log(tmp_path)
    out = tmp_path / "export"
    export_parquet(url, out)
    ps = domain_projections(["share_group"])
    times = [r["recorded_at_ms"] for r in next(LogSource.of(url).batches()).to_pylist()]
    for bounds in (ReplayBounds(0, 3), ReplayBounds(0, 6), ReplayBounds(0, None, times[4])):
        py = fold_python(url, ps, bounds)
        typed = fold_spark(str(out), ps, bounds, spark=spark_session)
        assert typed.extra["read_via"] == "typed_parquet"
        assert typed.event_count == py.event_count
        assert_same(ps, py, typed)
