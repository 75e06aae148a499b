"""The Python folds of the domains without a SQL fold (RLMM, controller) and the stored-snapshot
side of ``--verify``: logs written by driving each domain's own deciders, snapshots stored the way
each actor stores them, one agreeing and one diverging."""

from __future__ import annotations

import json
import uuid

import pytest

from events.codec import new_event
from projections.model import domain_projections
from projections.python_fold import fold_python
from projections.recovery import choose_engine, rebuild_snapshots
from projections.verify import verify_stored_snapshots
from store.event_log import open_event_log


def _rlmm_log(url: str):
    from actors.rlmm import store as rs
    from events.rlmm_types import (
        RemoteLogSegmentId,
        RemoteLogSegmentMetadata,
        RemoteLogSegmentMetadataUpdate,
        RemoteLogSegmentState,
        TopicIdPartition,
    )
    from events import rlmm

    tp = TopicIdPartition(uuid.UUID(int=7), "orders", 0)
    seg1 = RemoteLogSegmentId(tp, uuid.UUID(int=101))
    seg2 = RemoteLogSegmentId(tp, uuid.UUID(int=102))
    events = [
        rs.decide_add(RemoteLogSegmentMetadata(seg1, 0, 99, 50, 1, 1_000, 4096, ((0, 0),))),
        rs.decide_update(RemoteLogSegmentMetadataUpdate(seg1, 1_100, None, RemoteLogSegmentState.COPY_SEGMENT_FINISHED, 1)),
        rs.decide_add(RemoteLogSegmentMetadata(seg2, 100, 199, 60, 1, 1_200, 2048, ((0, 100), (1, 150)))),
        rs.decide_update(RemoteLogSegmentMetadataUpdate(seg1, 1_300, None, RemoteLogSegmentState.DELETE_SEGMENT_STARTED, 1)),
    ]
    log = open_event_log(url)
    res = log.append(rlmm.stream_id(2), [new_event(e) for e in events])
    return log, res, rlmm.stream_id(2), seg1, seg2


def test_rlmm_fold_rows_and_stored_snapshot_verify(tmp_path):
    from events.rlmm_types import uuid_to_kafka_str
    from actors.rlmm.store import MetadataPartitionState

    url = f"sqlite:///{tmp_path / 'r.db'}"
    log, res, sid, seg1, seg2 = _rlmm_log(url)
    ps = domain_projections(["rlmm"])
    r = fold_python(url, ps)
    segs = {row["segment_id"]: row for row in r.tables["rlmm_segments"].to_pylist()}
    assert segs[uuid_to_kafka_str(seg1.id)]["state"] == "DELETE_SEGMENT_STARTED"
    assert segs[uuid_to_kafka_str(seg2.id)]["state"] == "COPY_SEGMENT_STARTED"
    seg_epochs = [(row["leader_epoch"], row["start_offset"]) for row in r.tables["rlmm_segment_epochs"].to_pylist()
                  if row["segment_id"] == uuid_to_kafka_str(seg2.id)]
    assert seg_epochs == [(0, 100), (1, 150)]
    epochs = {row["leader_epoch"]: row for row in r.tables["rlmm_epochs"].to_pylist()}
    assert epochs[0]["highest_log_offset"] == 99 and epochs[1]["highest_log_offset"] is None

    # a snapshot taken after the first two events agrees with the log up to its position
    st = MetadataPartitionState(2)
    for rec in log.read_stream(sid, to_version=2):
        st.evolve(rec.decode(), rec.stream_version, rec.position)
    log.save_snapshot(sid, 2, st.to_snapshot(), res.positions[1])
    assert verify_stored_snapshots(log, ps) == ([], [])
    # the same snapshot stored as if it were at version 4: the fold up to there differs
    log.save_snapshot(sid, 4, st.to_snapshot(), res.positions[3])
    divs, _ = verify_stored_snapshots(log, ps)
    assert divs and {d.table for d in divs} >= {"rlmm_segments"} and all(d.first_position == res.positions[3] for d in divs)
    log.close()


def _controller_log(url: str):
    from actors.controller import state as cs
    from actors.controller import topics as tp
    from events.controller import STREAM_ID

    st = cs.ControllerState()
    cmd = tp.CreateTopics((tp.CreatableTopic("orders", 3, 1),), topic_ids=(("orders", "0" * 31 + "7"),))
    decision = cs.decide(st, cmd, 1_000)
    events = list(decision.events)
    for e in events:
        cs.evolve(st, e)
    log = open_event_log(url)
    res = log.append(STREAM_ID, [new_event(e) for e in events])
    st.version = res.last_version
    return log, res, st


def test_controller_fold_and_recovery_snapshot_round_trip(tmp_path):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    log, res, live = _controller_log(url)
    ps = domain_projections(["controller"])
    r = fold_python(url, ps)
    assert [(row["topic"], row["partitions"]) for row in r.tables["controller_topics"].to_pylist()] == [("orders", 3)]
    assert r.tables["controller_partitions"].num_rows == 3
    # recovery stores the snapshot in the actor's own format, and verify agrees with it
    report = rebuild_snapshots(log, ps)
    assert report.saved == {"controller": res.last_version}
    snap = log.load_snapshot("controller")
    assert json.loads(snap.state) == json.loads(json.dumps(live.to_dict()))
    assert verify_stored_snapshots(log, ps) == ([], [])
    log.close()


def test_choose_engine_thresholds():
    assert choose_engine(10, need_actor_state=False) == "python"
    assert choose_engine(99_999) == "python"
    assert choose_engine(100_000) == "duckdb"
    assert choose_engine(10_000_000, need_actor_state=True) == "python"
    assert choose_engine(10_000_000) == "duckdb"
    assert choose_engine(100_000_000, master="local[*]") == "duckdb"
    assert choose_engine(100_000_000, master="spark://cluster:7077") == "spark"


def test_corrupt_event_names_its_position(tmp_path):
    from events.base import NewEvent
    from events.codec import CorruptEventError
    from tests.projections import toy

    url = f"sqlite:///{tmp_path / 'x.db'}"
    log = open_event_log(url)
    log.append("g:a", [new_event(toy.MemberJoined("m1", 1))])
    log.append("g:a", [NewEvent(uuid.uuid4(), "ptest.MemberJoined", 1, b'{"member_id": 5}')])
    log.close()
    with pytest.raises(CorruptEventError) as info:
        fold_python(url, [toy.projection()])
    assert info.value.position == 2
