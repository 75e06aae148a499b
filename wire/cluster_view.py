"""What the listener process knows of the cluster: the broker's metadata image (KRaft's
``MetadataImage`` as a broker sees it) and the one call a partition leader makes to the
controller (AlterPartition).

:class:`ClusterView` is the protocol the data plane (Produce/Fetch, replication) programs
against; :class:`StaticClusterView` is the single-node view (this node leads every partition with
ISR = {itself}, leader epoch 0), used on SQLite and in tests. The cluster's own view follows the
controller's stream on the shared PostgreSQL log (:mod:`wire.cluster`).
"""

from __future__ import annotations

import threading
import zlib
from dataclasses import dataclass
from typing import Callable, Iterable, Protocol

__all__ = ["ClusterView", "PartitionState", "StaticClusterView", "NO_LEADER", "coordinator_node"]

#: Kafka's "no leader" broker id (``LeaderAndIsr.NO_LEADER``)
NO_LEADER = -1


def coordinator_node(group_id: str, live: Iterable[int]) -> int:
    """The node that coordinates ``group_id`` (consumer, classic and share groups) among the
    ``live`` broker ids, ``NO_LEADER`` when there is none: rendezvous hashing (the live node with
    the highest CRC-32 of ``"<group>/<node>"``), so a node's failure moves only its own groups and
    every node computes the same answer from the same image. Kafka instead places a group on the
    leader of ``__consumer_offsets`` partition ``abs(hash(group)) % 50``; Shoal keeps group state in
    the shared event log, not in a replicated topic, so only the placement rule is needed."""
    best, best_score = NO_LEADER, -1
    for node in live:
        score = zlib.crc32(f"{group_id}/{node}".encode())
        if score > best_score or (score == best_score and node < best):
            best, best_score = node, score
    return best


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition's registration as the metadata image holds it (KRaft's
    ``PartitionRegistration``): ``replicas`` in assignment order (``replicas[0]`` is the preferred
    leader), ``isr``, ``leader`` (broker id, :data:`NO_LEADER` = none), ``leader_epoch`` and
    ``partition_epoch`` (bumped by every change, the AlterPartition fence). During a partition
    reassignment (KIP-455) ``replicas`` is the interim list (the target, then the replicas being
    removed), so adding replicas fetch and may join the ISR like any follower."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int

    def role(self, node_id: int) -> str | None:
        """``"leader"``, ``"follower"`` (a replica that does not lead) or ``None`` (no replica)
        of ``node_id`` in this partition."""
        return "leader" if self.leader == node_id else "follower" if node_id in self.replicas else None


def requested_partition_state(view: "ClusterView", topic: str, partition: int, current_leader_epoch: int) -> PartitionState | None:
    """``view``'s registration of ``topic``-``partition`` for a request that carries
    ``current_leader_epoch`` (-1: none). An epoch above the image's, or one for a partition the
    image lacks, means the requester has read further in the metadata log than this node (a
    follower told of a new partition or leader a moment before its leader): the image catches up
    first (:meth:`ClusterView.catch_up`), or the follower would back off
    ``replica.fetch.backoff.ms`` for nothing. ``None`` when the partition is still unknown."""
    ps = view.partition_state(topic, partition)
    if current_leader_epoch >= 0 and (ps is None or current_leader_epoch > ps.leader_epoch):
        view.catch_up()
        ps = view.partition_state(topic, partition)
    return ps


class ClusterView(Protocol):
    """The broker's metadata image and its controller channel. Thread-safe."""

    node_id: int

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        """The partition's current registration, or ``None`` if the image has no such partition."""

    def broker_endpoint(self, node_id: int) -> tuple[str, int] | None:
        """``(host, port)`` of ``node_id``'s first (inter-broker) listener, ``None`` if the broker
        is not registered."""

    def live_brokers(self) -> tuple[int, ...]:
        """The registered, unfenced broker ids, sorted."""

    def alter_partition(self, topic: str, partition: int, leader_epoch: int, partition_epoch: int, new_isr: tuple[int, ...]) -> tuple[str | None, PartitionState | None]:
        """Ask the active controller to change the ISR (Kafka's AlterPartition, API 56, sent by
        the partition leader). Returns ``(error, state)``: ``(None, new state)`` once the change
        is committed, or a Kafka error name (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION,
        NOT_CONTROLLER, REQUEST_TIMED_OUT, …) and the state the controller has, if known.
        Blocks up to the controller request timeout."""

    def on_change(self, callback: Callable[[Iterable[tuple[str, int]]], None]) -> None:
        """Call ``callback(changed_partitions)`` (``(topic, partition)`` pairs) from the view's
        thread after every image change that touched those partitions' registrations."""

    def catch_up(self) -> None:
        """Fold whatever the metadata log has beyond the image now, before returning (a request
        showed the image is behind: it named a leader epoch or a partition the image has not
        reached). Subscribers are called as after any fold."""


class StaticClusterView:
    """The single-node image: ``node_id`` leads every partition, ISR = {``node_id``}, leader
    epoch 0, which is what a SQLite daemon has always been. ``alter_partition`` is refused with
    INVALID_REQUEST (a single node never changes its ISR)."""

    def __init__(self, node_id: int, host: str = "127.0.0.1", port: int = 9092) -> None:
        self.node_id = node_id
        self._endpoint = (host, port)
        self._state = PartitionState((node_id,), (node_id,), node_id, 0, 0)  # immutable: one for all
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[Iterable[tuple[str, int]]], None]] = []

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        """Every partition is led by this node with ISR = {this node}, epochs 0."""
        return self._state

    def broker_endpoint(self, node_id: int) -> tuple[str, int] | None:
        """This node's endpoint; ``None`` for any other id."""
        return self._endpoint if node_id == self.node_id else None

    def live_brokers(self) -> tuple[int, ...]:
        """Just this node."""
        return (self.node_id,)

    def alter_partition(self, topic: str, partition: int, leader_epoch: int, partition_epoch: int, new_isr: tuple[int, ...]) -> tuple[str | None, PartitionState | None]:
        """Refused: a single node has nothing to change."""
        return "INVALID_REQUEST", self.partition_state(topic, partition)

    def on_change(self, callback: Callable[[Iterable[tuple[str, int]]], None]) -> None:
        """Registered, never called (the image never changes)."""
        with self._lock:
            self._callbacks.append(callback)

    def catch_up(self) -> None:
        """Nothing to fold: the image never changes."""
