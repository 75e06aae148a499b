"""Tiered storage across replicas (KIP-405 on a cluster), without processes: two RemoteLogManagers
— the leader's and a follower's — over one remote tier and one event log, each with its own
in-process RLMM (``read_through``, as a cluster node builds it).

* the follower's RLMM sees what the leader's appended (read-through), its follower task takes the
  highest offset in remote storage from it and local retention deletes its tiered segments
  (Kafka's ``RLMFollowerTask``);
* a follower whose log ends below the leader's local log start rebuilds its log start from the
  remote tier: the leader-epoch entries come from the remote segment's ``LEADER_EPOCH`` index
  (``ReplicaFetcherTierStateMachine#buildRemoteLogAuxState``);
* a follower that becomes leader copies on from the highest offset the RLMM has, not from 0;
* the pure pieces: the checkpoint parser and the choice of the segment before the local start."""

from __future__ import annotations

import uuid

import pytest

from actors.rlmm.manager import EventSourcedRemoteLogMetadataManager
from events.rlmm_errors import RemoteStorageException
from events.rlmm_types import RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentState, TopicIdPartition
from store import record_batch as rb
from store.event_log import open_event_log
from store.log.config import LogConfig
from store.log.log import PartitionLog
from store.remote_log_manager import RemoteLogManager, _epoch_checkpoint_bytes, parse_epoch_checkpoint, segment_before_local_start
from store.remote_storage import LocalDirectoryRemoteStorageManager

TP = TopicIdPartition(uuid.UUID(int=91), "tiered", 0)
CF = RemoteLogSegmentState.COPY_SEGMENT_FINISHED
CS = RemoteLogSegmentState.COPY_SEGMENT_STARTED


def _batch(i: int) -> bytes:
    return rb.build_batch([(b"k%03d" % i, b"value-%03d" % i * 10)], base_timestamp=1000 + i)


class Replica:
    """One node's replica of TP: its log, RLMM and RemoteLogManager (the remote tier and event
    log are shared)."""

    def __init__(self, tmp_path, name: str, event_log, rsm, node: int) -> None:
        self.one = len(_batch(0))
        props = {"segment.bytes": str(self.one * 4), "remote.storage.enable": "true", "index.interval.bytes": "0", "retention.ms": "-1",
                 "local.retention.bytes": "1"}
        self.log = PartitionLog.open(tmp_path / name, TP.topic, TP.partition, LogConfig.from_properties(props))
        self.rlmm = EventSourcedRemoteLogMetadataManager(event_log, num_partitions=3, read_through=True)
        self.rlm = RemoteLogManager(rsm, self.rlmm, broker_id=node)

    def lead(self, n: int, epoch: int) -> None:
        for _ in range(n):
            i = self.log.log_end_offset
            self.log.append_as_leader(_batch(i), epoch, 1000 + i)
            self.log.update_high_watermark(self.log.log_end_offset)

    def follow(self, leader: "Replica") -> None:
        """Copy the leader's batches from this log's end, as a fetch would."""
        while self.log.log_end_offset < leader.log.log_end_offset:
            data = leader.log.read(self.log.log_end_offset, 1 << 20).records  # one segment at most
            for h in rb.iter_batches(data):  # batch by batch, so the follower rolls where the leader did
                self.log.append_as_follower(data[h.position : h.position + h.size_in_bytes], 5000)
        self.log.update_high_watermark(min(leader.log.high_watermark, self.log.log_end_offset))

    def bases(self) -> list[int]:
        return [s.base_offset for s in self.log.segments()]


@pytest.fixture
def pair(tmp_path):
    elog = open_event_log(f"sqlite:///{tmp_path / 'events.db'}")
    rsm = LocalDirectoryRemoteStorageManager(tmp_path / "remote")
    leader, follower = Replica(tmp_path, "n1", elog, rsm, 1), Replica(tmp_path, "n2", elog, rsm, 2)
    leader.rlm.on_leadership_change({TP: leader.log})
    follower.rlm.on_leadership_change({}, {TP: follower.log})
    yield leader, follower
    leader.log.close()
    follower.log.close()


def test_a_follower_follows_the_highest_remote_offset_and_deletes_its_tiered_segments(pair):
    leader, follower = pair
    leader.lead(10, epoch=0)  # segments [0-3] [4-7] [8-9]
    follower.follow(leader)
    assert follower.rlm.role(TP) == "follower" and follower.rlm.run_once(6000)["local_deleted"] == 0  # nothing tiered yet
    assert follower.bases() == [0, 4, 8]
    leader.rlm.run_once(6000)
    assert leader.log.highest_offset_in_remote_storage == 7
    stats = follower.rlm.run_once(6001)
    assert follower.log.highest_offset_in_remote_storage == 7  # the leader's appends, read through the shared log
    assert stats["local_deleted"] == 2 and follower.bases() == [8]
    assert follower.log.log_start_offset == 0  # the remote tier still serves 0..7


def test_a_follower_below_the_leaders_local_log_start_rebuilds_from_the_remote_tier(pair):
    leader, follower = pair
    leader.lead(6, epoch=0)
    leader.lead(6, epoch=3)  # epochs (0, 0) (3, 6); segments [0-3] [4-7] [8-11]
    leader.rlm.run_once(6000)  # copies 0..7 and deletes them locally
    local_start = leader.log.local_log_start_offset
    assert local_start == 8
    follower.rlm.run_once(6002)
    follower.rlm.build_remote_log_aux_state(TP, follower.log, local_start, leader.log.log_start_offset, 6003)
    assert (follower.log.log_start_offset, follower.log.local_log_start_offset, follower.log.log_end_offset) == (0, 8, 8)
    assert [(e.epoch, e.start_offset) for e in follower.log.leader_epoch_cache.entries()] == [(0, 0), (3, 6)]
    assert follower.log.highest_offset_in_remote_storage == 7
    follower.follow(leader)  # fetching from the leader's local log start now succeeds
    assert follower.log.log_end_offset == leader.log.log_end_offset


def test_a_rebuild_without_the_remote_segment_fails_and_changes_nothing(pair):
    leader, follower = pair
    leader.lead(10, epoch=0)
    follower.follow(leader)
    with pytest.raises(RemoteStorageException):
        follower.rlm.build_remote_log_aux_state(TP, follower.log, 8, 0, 6000)  # nothing was tiered
    assert follower.log.log_end_offset == 10 and follower.bases() == [0, 4, 8]


def test_a_follower_that_becomes_leader_copies_on_from_the_rlmms_highest_offset(pair):
    leader, follower = pair
    leader.lead(10, epoch=0)
    follower.follow(leader)
    leader.rlm.run_once(6000)  # 0..7 tiered by the old leader
    follower.rlm.assign_role(TP, follower.log, "leader")  # failover: the follower now leads, epoch 1
    assert follower.rlm.role(TP) == "leader"
    follower.lead(4, epoch=1)  # [8-11] rolls; 12, 13 active
    copied = follower.rlm.copy_log_segments_to_remote(TP, 7000)
    assert [(m.start_offset, m.end_offset) for m in copied] == [(8, 11)]
    starts = sorted(m.start_offset for m in follower.rlmm.list_remote_log_segments(TP) if m.state == CF)
    assert starts == [0, 4, 8]  # 0..7 not copied twice
    follower.rlm.assign_role(TP, follower.log, None)  # moved off the node: stopped, the remote data kept
    assert follower.rlm.role(TP) is None
    assert sorted(m.start_offset for m in leader.rlmm.list_remote_log_segments(TP) if m.state == CF) == [0, 4, 8]


def test_parse_epoch_checkpoint_reads_what_the_copy_writes():
    entries = [(0, 0), (3, 6), (7, 120)]
    assert parse_epoch_checkpoint(_epoch_checkpoint_bytes(entries)) == entries
    with pytest.raises(ValueError):
        parse_epoch_checkpoint(b"1\n0\n")
    with pytest.raises(ValueError):
        parse_epoch_checkpoint(b"0\n2\n0 0\n")


def _md(start: int, end: int, epochs, state=CF, ts: int = 0) -> RemoteLogSegmentMetadata:
    return RemoteLogSegmentMetadata(RemoteLogSegmentId(TP, uuid.uuid4()), start, end, -1, 1, ts, 100, tuple(epochs), state)


def test_segment_before_local_start_is_the_finished_one_holding_the_offset_before_it():
    a, b = _md(0, 3, [(0, 0)]), _md(4, 7, [(0, 4)])
    started = _md(4, 9, [(1, 4)], state=CS)
    newer = _md(4, 7, [(0, 4), (2, 6)], ts=5)  # the same offsets copied again by a later leader
    assert segment_before_local_start([a, b, started], 8) is b
    assert segment_before_local_start([a, b, newer], 8) is newer
    assert segment_before_local_start([a, b], 4) is a
    assert segment_before_local_start([a], 9) is None


def test_a_partitions_repair_leaves_the_other_partitions_uploads_alone(tmp_path):
    """On a cluster the remote tier is shared: the leader of one partition reconciling (after a
    restart or a failed pass) must not remove another leader's upload in progress."""
    rsm = LocalDirectoryRemoteStorageManager(tmp_path / "remote")
    other = TopicIdPartition(uuid.UUID(int=92), "other", 0)
    mine, theirs = rsm.partition_dir(TP) / ".staging-x", rsm.partition_dir(other) / ".staging-y"
    for d in (mine, theirs):
        d.mkdir(parents=True)
    assert rsm.cleanup_incomplete(TP) == 1
    assert not mine.exists() and theirs.exists()
    assert rsm.cleanup_incomplete() == 1 and not theirs.exists()  # a whole-tier repair (one node's own tier)
