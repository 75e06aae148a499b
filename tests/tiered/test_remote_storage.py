"""store.remote_storage: Kafka's RemoteStorageManager contract on the local-directory tier
(modelled on Kafka's ``LocalTieredStorageTest``), atomic uploads and idempotent deletes."""

from __future__ import annotations

import os
import uuid

import pytest

from events.rlmm_errors import RemoteResourceNotFoundException, RemoteStorageException
from events.rlmm_types import RemoteLogSegmentId, RemoteLogSegmentMetadata, TopicIdPartition
from store.remote_storage import IndexType, LocalDirectoryRemoteStorageManager, LogSegmentData

TP = TopicIdPartition(uuid.UUID(int=0x1234), "topic", 3)


def metadata(start=0, end=99, sid=None):
    return RemoteLogSegmentMetadata(RemoteLogSegmentId(TP, sid or uuid.uuid4()), start, end, -1, 1, 0, 1000, {0: start})


def segment_files(tmp_path, payload=b"L" * 5000, with_txn=False):
    d = tmp_path / "local"
    d.mkdir(exist_ok=True)
    (d / "seg.log").write_bytes(payload)
    (d / "seg.index").write_bytes(b"I" * 16)
    (d / "seg.timeindex").write_bytes(b"T" * 24)
    txn = None
    if with_txn:
        txn = d / "seg.txnindex"
        txn.write_bytes(b"X" * 8)
    return LogSegmentData(d / "seg.log", d / "seg.index", d / "seg.timeindex", txn, None, b"0\n1\n0 0\n")


def test_copy_then_fetch_segment_and_indexes(tmp_path):
    rsm = LocalDirectoryRemoteStorageManager(tmp_path / "remote")
    md = metadata()
    payload = bytes(range(256)) * 20
    assert rsm.copy_log_segment_data(md, segment_files(tmp_path, payload)) is None
    with rsm.fetch_log_segment(md, 0) as f:
        assert f.read() == payload
    with rsm.fetch_log_segment(md, 100) as f:
        assert f.read() == payload[100:]
    with rsm.fetch_log_segment(md, 100, 199) as f:  # end position inclusive (Kafka javadoc)
        assert f.read() == payload[100:200]
    with rsm.fetch_index(md, IndexType.OFFSET) as f:
        assert f.read() == b"I" * 16
    with rsm.fetch_index(md, IndexType.TIMESTAMP) as f:
        assert f.read() == b"T" * 24
    with rsm.fetch_index(md, IndexType.LEADER_EPOCH) as f:
        assert f.read() == b"0\n1\n0 0\n"
    with pytest.raises(RemoteResourceNotFoundException):
        rsm.fetch_index(md, IndexType.TRANSACTION)  # optional index not uploaded
    with pytest.raises(ValueError):
        rsm.fetch_log_segment(md, 10, 5)
    assert rsm.list_segments(TP) == {md.remote_log_segment_id.id: 0}
    d = rsm.segment_dir(md)
    assert d.name == f"{0:020d}-" + d.name.split("-", 1)[1] and d.parent.name.startswith("topic-3-")


def test_fetch_unknown_segment_raises_not_found(tmp_path):
    rsm = LocalDirectoryRemoteStorageManager(tmp_path / "remote")
    with pytest.raises(RemoteResourceNotFoundException):
        rsm.fetch_log_segment(metadata(), 0)
    with pytest.raises(RemoteResourceNotFoundException):
        rsm.fetch_index(metadata(), IndexType.OFFSET)


def test_delete_is_idempotent_and_removes_everything(tmp_path):
    rsm = LocalDirectoryRemoteStorageManager(tmp_path / "remote")
    md = metadata()
    rsm.copy_log_segment_data(md, segment_files(tmp_path, with_txn=True))
    rsm.delete_log_segment_data(md)
    rsm.delete_log_segment_data(md)  # again: no error
    assert rsm.list_segments(TP) == {}
    assert not any(p.name.startswith(".") for p in rsm.partition_dir(TP).iterdir())
    with pytest.raises(RemoteResourceNotFoundException):
        rsm.fetch_log_segment(md, 0)


def test_copy_failure_leaves_nothing_that_looks_complete(tmp_path):
    rsm = LocalDirectoryRemoteStorageManager(tmp_path / "remote")
    md = metadata()
    data = segment_files(tmp_path)
    os.unlink(data.time_index)  # the source vanishes mid-upload
    with pytest.raises(RemoteStorageException):
        rsm.copy_log_segment_data(md, data)
    assert rsm.list_segments(TP) == {}
    assert list(rsm.partition_dir(TP).iterdir()) == []


def test_staging_leftovers_are_not_segments_and_are_cleaned(tmp_path):
    rsm = LocalDirectoryRemoteStorageManager(tmp_path / "remote")
    md = metadata()
    staging = rsm.partition_dir(TP) / ".staging-abc"
    staging.mkdir(parents=True)
    (staging / "segment.log").write_bytes(b"half")
    assert rsm.list_segments(TP) == {}
    with pytest.raises(RemoteResourceNotFoundException):
        rsm.fetch_log_segment(md, 0)
    assert rsm.cleanup_incomplete() == 1
    assert not staging.exists()


def test_recopy_of_a_complete_segment_is_a_no_op(tmp_path):
    rsm = LocalDirectoryRemoteStorageManager(tmp_path / "remote")
    md = metadata()
    rsm.copy_log_segment_data(md, segment_files(tmp_path, b"first"))
    rsm.copy_log_segment_data(md, segment_files(tmp_path, b"second"))
    with rsm.fetch_log_segment(md, 0) as f:
        assert f.read() == b"first"


def test_orphan_delete_by_id(tmp_path):
    rsm = LocalDirectoryRemoteStorageManager(tmp_path / "remote")
    a, b = metadata(0, 9), metadata(10, 19)
    rsm.copy_log_segment_data(a, segment_files(tmp_path))
    rsm.copy_log_segment_data(b, segment_files(tmp_path))
    assert rsm.delete_segment_by_id(TP, a.remote_log_segment_id.id)
    assert rsm.list_segments(TP) == {b.remote_log_segment_id.id: 10}
