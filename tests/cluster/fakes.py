"""Test doubles for the cluster data plane: :class:`FakeClusterView`, a ClusterView whose
partition states the test sets, recording every AlterPartition it is asked for; and
:class:`RegistryBackend`, the data-plane part of a Backend over a real LogRegistry (what a
listener needs to serve Produce, Fetch and OffsetForLeaderEpoch between two in-process nodes)."""

from __future__ import annotations

import threading
from typing import Callable, Iterable

from tests.wire.fake_backend import FakeBackend
from wire.backend import FetchedPartition
from wire.cluster_view import PartitionState
from wire.logs import LogRegistry


class FakeClusterView:
    """A ClusterView for tests: ``set(topic, partition, state)`` changes a registration and calls
    the on_change callbacks; ``alter_partition`` records the request in :attr:`alters` and, with
    ``accept_alters`` (default), commits it (partition epoch + 1) like the controller would.
    ``endpoints`` maps node id → (host, port); ``fenced`` holds the node ids that are not live."""

    def __init__(self, node_id: int, accept_alters: bool = True) -> None:
        self.node_id = node_id
        self.states: dict[tuple[str, int], PartitionState] = {}
        self.endpoints: dict[int, tuple[str, int]] = {}
        self.alters: list[tuple[str, int, int, int, tuple[int, ...]]] = []
        self.altered = threading.Condition()
        self.accept_alters = accept_alters
        self.fenced: set[int] = set()
        self.staged: dict[tuple[str, int], PartitionState] = {}
        self.catch_ups = 0
        self._callbacks: list[Callable[[Iterable[tuple[str, int]]], None]] = []

    @classmethod
    def linked(cls, node_ids: Iterable[int]) -> dict[int, "FakeClusterView"]:
        """One view per node over a single shared image (states, endpoints, AlterPartition log,
        callbacks): a change set on any of them, or committed by an AlterPartition, reaches
        every node's callbacks, as the nodes following one controller stream would see it."""
        views = [cls(n) for n in node_ids]
        first = views[0]
        for v in views[1:]:
            v.states, v.endpoints, v.alters, v.altered, v._callbacks = first.states, first.endpoints, first.alters, first.altered, first._callbacks
            v.fenced = first.fenced
        return {v.node_id: v for v in views}

    def set(self, topic: str, partition: int, state: PartitionState) -> None:
        """Change the registration and notify (as the metadata image would)."""
        self.states[(topic, partition)] = state
        for cb in list(self._callbacks):
            cb([(topic, partition)])

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        """The registration the test set, or None."""
        return self.states.get((topic, partition))

    def broker_endpoint(self, node_id: int) -> tuple[str, int] | None:
        """From :attr:`endpoints`."""
        return self.endpoints.get(node_id)

    def live_brokers(self) -> tuple[int, ...]:
        """Every node with an endpoint or a replica, except the :attr:`fenced` ones."""
        known = set(self.endpoints) | {r for st in self.states.values() for r in st.replicas}
        return tuple(sorted(known - self.fenced))

    def alter_partition(self, topic, partition, leader_epoch, partition_epoch, new_isr):
        """Record; commit with partition epoch + 1 when accepting and the epochs match."""
        with self.altered:
            self.alters.append((topic, partition, leader_epoch, partition_epoch, tuple(new_isr)))
            self.altered.notify_all()
        cur = self.states.get((topic, partition))
        if cur is None:
            return "UNKNOWN_TOPIC_OR_PARTITION", None
        if not self.accept_alters:
            return "INVALID_UPDATE_VERSION", cur
        if cur.leader_epoch != leader_epoch:
            return "FENCED_LEADER_EPOCH", cur
        if cur.partition_epoch != partition_epoch:
            return "INVALID_UPDATE_VERSION", cur
        new = PartitionState(cur.replicas, tuple(new_isr), cur.leader, cur.leader_epoch, cur.partition_epoch + 1)
        self.set(topic, partition, new)
        return None, new

    def wait_alter(self, pred: Callable[[tuple], bool], timeout_s: float = 10.0) -> bool:
        """Block until an AlterPartition matching ``pred`` was asked for."""
        with self.altered:
            return self.altered.wait_for(lambda: any(pred(a) for a in self.alters), timeout=timeout_s)

    def on_change(self, callback) -> None:
        """Registered; called by :meth:`set`."""
        self._callbacks.append(callback)

    def stage(self, topic: str, partition: int, state: PartitionState) -> None:
        """A registration committed to the metadata log that this image has not folded yet:
        :meth:`partition_state` shows it only after :meth:`catch_up` (or :meth:`set`)."""
        self.staged[(topic, partition)] = state

    def catch_up(self) -> None:
        """Fold what was staged (and count the calls in :attr:`catch_ups`)."""
        self.catch_ups += 1
        staged, self.staged = self.staged, {}
        for (topic, partition), state in staged.items():
            self.set(topic, partition, state)


class RegistryBackend(FakeBackend):
    """FakeBackend's admin answers with the data plane of a real :class:`LogRegistry`."""

    def __init__(self, logs: LogRegistry) -> None:
        super().__init__()
        self.logs = logs

    def produce(self, topic, partition, records, acks):
        return self.logs.append(topic, partition, records, acks)

    def fetch(self, topic, partition, offset, max_bytes, replica_id=-1, current_leader_epoch=-1) -> FetchedPartition:
        return self.logs.read(topic, partition, offset, max_bytes, replica_id, current_leader_epoch)

    def await_replication(self, pending, timeout_ms):
        return self.logs.await_replication(pending, timeout_ms)

    def offset_for_leader_epoch(self, topic, partition, current_leader_epoch, leader_epoch):
        return self.logs.offset_for_leader_epoch(topic, partition, current_leader_epoch, leader_epoch)

    def data_version(self, partitions):
        return self.logs.data_version(partitions)

    def wait_for_data(self, timeout_ms: int, since) -> None:
        self.logs.wait(timeout_ms, since)


__all__ = ["FakeClusterView", "RegistryBackend"]
