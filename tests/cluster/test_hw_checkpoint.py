"""The high-watermark checkpoint (Kafka's ``replication-offset-checkpoint``,
``ReplicaManager.checkpointHighWatermarks`` / ``Partition.createLog``): the file format
(store/log/offset_checkpoint.py), and a restarted replica's HW through wire/logs.LogRegistry with
the fake ClusterView (wire/hw_checkpoints.py): below the uncommitted tail after a restart, at the
log start after a crash before any checkpoint, raised again by the followers' fetches."""

from __future__ import annotations

import logging

import pytest

from store import record_batch as rb
from store.log.offset_checkpoint import (
    REPLICATION_OFFSET_CHECKPOINT,
    CheckpointFormatError,
    OffsetCheckpointFile,
    parse_offset_checkpoint,
    render_offset_checkpoint,
    restored_high_watermark,
)
from tests.cluster.fakes import FakeClusterView
from wire.cluster_view import PartitionState
from wire.hw_checkpoints import HighWatermarkCheckpoints
from wire.logs import LogRegistry


def _batch(n: int = 1) -> bytes:
    return rb.build_batch([(None, b"x%d" % i) for i in range(n)])


# -- the format (pure) ------------------------------------------------------------------------


def test_render_is_kafkas_text_and_parses_back():
    offsets = {("t", 1): 99, ("t", 0): 1234, ("a.b-c_d", 7): 0}
    text = render_offset_checkpoint(offsets)
    assert text == "0\n3\na.b-c_d 7 0\nt 0 1234\nt 1 99\n"
    assert parse_offset_checkpoint(text) == offsets
    assert parse_offset_checkpoint(render_offset_checkpoint({})) == {}


def test_parse_accepts_what_kafka_accepts():
    # any whitespace between fields; an empty file or a version line alone is an empty checkpoint
    assert parse_offset_checkpoint("0\n2\nt\t0   5\nu 3 7\n") == {("t", 0): 5, ("u", 3): 7}
    assert parse_offset_checkpoint("") == {}
    assert parse_offset_checkpoint("0\n") == {}


@pytest.mark.parametrize(
    "text, message",
    [
        ("1\n0\n", "Unrecognised version:1"),
        ("x\n0\n", "Malformed line"),
        ("0\ntwo\n", "Malformed line"),
        ("0\n1\nt 0\n", "Malformed line"),
        ("0\n1\nt 0 5 6\n", "Malformed line"),
        ("0\n1\nt zero 5\n", "Malformed line"),
        ("0\n1\nt 0 five\n", "Malformed line"),
        ("0\n2\nt 0 5\n", "Expected [2] entries"),
        ("0\n1\nt 0 5\nt 1 6\n", "Expected [1] entries"),
    ],
)
def test_parse_rejects_a_malformed_checkpoint(text, message):
    with pytest.raises(CheckpointFormatError, match=message.replace("[", r"\[")):
        parse_offset_checkpoint(text, "f")


def test_render_refuses_a_topic_it_could_not_read_back():
    with pytest.raises(ValueError):
        render_offset_checkpoint({("a b", 0): 1})


def test_restored_high_watermark_is_the_checkpoint_bounded_by_the_log():
    assert restored_high_watermark(3, 0, 5) == 3  # min(checkpoint, LEO)
    assert restored_high_watermark(9, 0, 5) == 5  # the log lost its tail (recovery truncated it)
    assert restored_high_watermark(None, 0, 5) == 0  # no checkpoint: the log start
    assert restored_high_watermark(None, 4, 5) == 4
    assert restored_high_watermark(2, 4, 5) == 4  # never below the log start


def test_the_file_is_written_atomically_and_read_back(tmp_path):
    f = OffsetCheckpointFile(tmp_path / REPLICATION_OFFSET_CHECKPOINT)
    assert f.read() == {}  # absent
    f.write({("t", 0): 5})
    f.write({("t", 0): 6, ("t", 1): 2})
    assert f.read() == {("t", 0): 6, ("t", 1): 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == [REPLICATION_OFFSET_CHECKPOINT]  # no .tmp left
    (tmp_path / REPLICATION_OFFSET_CHECKPOINT).write_bytes(b"\xff\xfe")
    with pytest.raises(CheckpointFormatError):
        f.read()


# -- a replica's HW across restarts (LogRegistry + fake ClusterView) --------------------------


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


@pytest.fixture
def node(tmp_path):
    """``make(checkpoints=True)``: node 1 leading t-0 with replicas (1, 2) and ISR (1, 2),
    min.insync.replicas=1, on the log dir ``tmp_path/logs`` (the same dir every time: a restart)."""
    made: list[LogRegistry] = []

    def make(checkpoints: bool = True):
        view = FakeClusterView(1)
        view.set("t", 0, PartitionState((1, 2), (1, 2), 1, 0, 0))
        hwc = HighWatermarkCheckpoints(tmp_path / "logs") if checkpoints else None
        reg = LogRegistry(str(tmp_path / "logs"), lambda _t: {"min.insync.replicas": "1"}, cluster=view, clock=Clock(), hw_checkpoints=hwc)
        made.append(reg)
        return reg

    yield make
    for reg in made:
        reg.close()


def _leader_with_uncommitted_tail(reg: LogRegistry) -> None:
    """5 records appended with acks=1 (one batch each), the follower has the first 3: HW 3, LEO 5."""
    for _ in range(5):
        assert reg.append("t", 0, _batch(1), acks=1).error is None
    f = reg.read("t", 0, 3, 1 << 20, replica_id=2, current_leader_epoch=0)
    assert f.error is None and f.high_watermark == 3
    lg = reg.open("t", 0)
    assert (lg.high_watermark, lg.log_end_offset) == (3, 5)


def _consumer_offsets(reg: LogRegistry) -> list[int]:
    """The offsets a consumer reads from offset 0 (below the HW only)."""
    f = reg.read("t", 0, 0, 1 << 20)
    assert f.error is None
    return [o for b in rb.iter_batches(f.records) for o in range(b.base_offset, b.base_offset + b.records_count)]


def test_a_restart_keeps_the_high_watermark_below_the_uncommitted_tail(node):
    reg = node()
    _leader_with_uncommitted_tail(reg)
    assert reg.checkpoint_high_watermarks() == {("t", 0): 3}
    reg.close()  # a clean shutdown checkpoints too

    reg = node()  # the restart
    lg = reg.open("t", 0)
    assert (lg.high_watermark, lg.log_end_offset) == (3, 5)
    f = reg.read("t", 0, 3, 1 << 20)  # consumers get nothing at or above the committed HW
    assert f.error is None and f.high_watermark == 3 and f.records == b""
    assert _consumer_offsets(reg) == [0, 1, 2]
    # the follower reports its LEO: the leader raises the HW as before the restart
    f = reg.read("t", 0, 4, 1 << 20, replica_id=2, current_leader_epoch=0)
    assert f.error is None and f.high_watermark == 4
    f = reg.read("t", 0, 5, 1 << 20, replica_id=2, current_leader_epoch=0)
    assert f.error is None and f.high_watermark == 5
    assert reg.open("t", 0).high_watermark == 5


def test_without_a_checkpoint_after_a_crash_the_high_watermark_starts_at_the_log_start(node, tmp_path):
    reg = node()
    _leader_with_uncommitted_tail(reg)
    reg.replicas.close()  # a crash: nothing closed cleanly, no checkpoint was ever written
    reg._logs.clear()  # noqa: SLF001 - forget the open logs without close() (no checkpoint)
    assert not (tmp_path / "logs" / REPLICATION_OFFSET_CHECKPOINT).exists()

    reg = node()
    assert reg.open("t", 0).high_watermark == 0
    assert reg.read("t", 0, 0, 1 << 20).records == b""  # nothing committed is known yet
    f = reg.read("t", 0, 5, 1 << 20, replica_id=2, current_leader_epoch=0)  # the follower reports LEO 5
    assert f.error is None and f.high_watermark == 5
    assert reg.open("t", 0).high_watermark == 5


def test_a_follower_reporting_less_raises_the_high_watermark_only_that_far(node):
    reg = node()
    _leader_with_uncommitted_tail(reg)
    reg.close()
    reg = node()
    f = reg.read("t", 0, 4, 1 << 20, replica_id=2, current_leader_epoch=0)
    assert f.high_watermark == 4
    assert _consumer_offsets(reg) == [0, 1, 2, 3]


def test_a_malformed_checkpoint_is_ignored_with_a_warning(node, tmp_path, caplog):
    reg = node()
    _leader_with_uncommitted_tail(reg)
    reg.close()
    (tmp_path / "logs" / REPLICATION_OFFSET_CHECKPOINT).write_text("0\n7\nt 0 3\n")  # a count that lies
    with caplog.at_level(logging.WARNING, logger="shoal.wire.hw_checkpoints"):
        reg = node()
    assert "ignoring the high watermark checkpoint" in caplog.text
    assert reg.open("t", 0).high_watermark == 0  # as if absent: safe, never above the committed HW
    reg.checkpoint_high_watermarks()  # the next checkpoint replaces the damaged file
    assert OffsetCheckpointFile(tmp_path / "logs" / REPLICATION_OFFSET_CHECKPOINT).read() == {("t", 0): 0}


def test_entries_of_logs_not_opened_since_the_start_are_kept(node, tmp_path):
    reg = node()
    _leader_with_uncommitted_tail(reg)
    reg.open("u", 2).update_high_watermark(0)
    reg.close()
    path = tmp_path / "logs" / REPLICATION_OFFSET_CHECKPOINT
    assert OffsetCheckpointFile(path).read() == {("t", 0): 3, ("u", 2): 0}

    reg = node()
    reg.open("u", 2)  # t-0 is not opened before the next checkpoint
    assert reg.checkpoint_high_watermarks() == {("t", 0): 3, ("u", 2): 0}
    reg.drop_topic("u")
    assert reg.checkpoint_high_watermarks() == {("t", 0): 3}
    assert reg.open("t", 0).high_watermark == 3


def test_a_single_node_keeps_hw_at_the_log_end_and_writes_no_checkpoint(node, tmp_path):
    reg = node(checkpoints=False)
    _leader_with_uncommitted_tail(reg)
    assert reg.checkpoint_high_watermarks() is None
    reg.close()
    assert not (tmp_path / "logs" / REPLICATION_OFFSET_CHECKPOINT).exists()
    reg = LogRegistry(str(tmp_path / "logs"))  # the single node's default view
    assert reg.open("t", 0).high_watermark == 5
    reg.close()
