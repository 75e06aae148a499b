"""A replica a partition reassignment (KIP-455) moved off this node: the node stops fetching it
and deletes its log (``wire.replica_fetcher.StrayReplicaCleaner`` over
``wire.logs.LogRegistry.drop_partition``), as Kafka's ``ReplicaManager.applyDelta`` does with
``stopPartitions(deletePartition = true)``; the fetcher manager starts following a partition as
soon as the image makes this node a replica (an adding replica)."""

from __future__ import annotations

import time

from store import record_batch as rb
from tests.cluster.fakes import FakeClusterView
from wire.cluster_view import PartitionState
from wire.logs import LogRegistry
from wire.replica_fetcher import FetcherConfig, ReplicaFetcherManager, StrayReplicaCleaner


def test_a_log_is_deleted_only_once_this_node_left_the_replicas_and_no_fetcher_follows_it(tmp_path):
    view = FakeClusterView(1)
    reg = LogRegistry(str(tmp_path), cluster=view)
    try:
        reg.open("t", 0).append_as_follower(rb.build_batch([(None, b"x")], base_offset=0, partition_leader_epoch=0), 1)
        reg.open("t", 1)
        view.set("t", 0, PartitionState((2, 3, 1), (1, 2), 2, 0, 1))  # still a replica (being removed)
        view.set("t", 1, PartitionState((2, 3), (2, 3), 2, 1, 2))  # no longer one
        following = {("t", 1)}
        cleaner = StrayReplicaCleaner(view, reg.drop_partition, lambda k: k in following, delay_s=0)
        assert cleaner.check([("t", 0), ("t", 1), ("u", 0)]) == []  # a fetcher still follows t-1
        following.clear()
        assert cleaner.check([("t", 0), ("t", 1)]) == [("t", 1)]
        assert not (tmp_path / "t-1").exists() and reg.get("t", 1) is None
        assert (tmp_path / "t-0").is_dir()
        view.set("t", 0, PartitionState((2, 3), (2, 3), 2, 1, 2))  # the reassignment completed
        cleaner.on_change([("t", 0)])  # the image callback: deleted after the delay
        deadline = time.monotonic() + 10
        while (tmp_path / "t-0").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not (tmp_path / "t-0").exists() and cleaner.deleted == [("t", 1), ("t", 0)]
        assert cleaner.check([("t", 0)]) == []  # nothing left to delete
        cleaner.close()
    finally:
        reg.close()


def test_an_adding_replica_starts_following_and_a_removed_one_stops(tmp_path):
    view = FakeClusterView(3)
    reg = LogRegistry(str(tmp_path), cluster=view)
    view.set("t", 0, PartitionState((1, 2), (1, 2), 1, 0, 0))
    m = ReplicaFetcherManager(view, reg.open, FetcherConfig(backoff_ms=50), lambda: [("t", 0)]).start()
    try:
        assert not m.following(("t", 0))
        view.set("t", 0, PartitionState((2, 3, 1), (1, 2), 1, 0, 1))  # reassignment [1,2] → [2,3] started
        m.reconcile([("t", 0)])
        assert m.following(("t", 0)) and m.fetcher(1) is not None
        view.set("t", 0, PartitionState((2, 3), (2, 3), 2, 1, 2))  # completed: node 2 leads
        m.reconcile([("t", 0)])
        assert m.following(("t", 0)) and m.fetcher(2) is not None
        view.set("t", 0, PartitionState((1, 2), (1, 2), 1, 2, 3))  # moved away again
        m.reconcile([("t", 0)])
        assert not m.following(("t", 0))
    finally:
        m.close()
        reg.close()
