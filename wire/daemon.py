"""The daemon's composition: actor system, journal, controller (and its children), remote log
manager, partition logs and the Kafka listener — and :class:`ShoalBackend`, the
:class:`wire.backend.Backend` the handlers use.

Control plane: ONE actor message per Kafka request (CreateTopics → the ControllerActor,
ShareFetch → the group's ShareGroupActor …), asked through :class:`wire.gateway.ActorGateway`
from the connection's thread. Data plane: :class:`wire.logs.LogRegistry` in this process appends
Produce bytes to segment files and reads Fetch/ShareFetch bytes from them; actors only see
offsets and batch boundaries.

Start/stop: :meth:`Daemon.start` / :meth:`Daemon.stop` (``app.py run`` wires SIGTERM/SIGINT to
``stop``). ``stop`` closes the listener, asks every actor to exit (``asys.shutdown()``, which also
ends the Thespian admin process) and closes the logs and the event log.

A daemon that dies without ``stop`` (SIGKILL) leaves no actor behind for long: the first actor of
the system, :class:`actors.watchdog.actor.OwnerWatchdogActor`, polls this process every
``shoal.actor.system.watchdog.ms`` and shuts the actor system down once it is gone. A daemon
restarted on the same data dir before that finishes completes it first
(:meth:`Daemon._shutdown_orphaned_actor_system`, from :data:`ACTOR_SYSTEM_FILE`).
"""

from __future__ import annotations

import gc
import json
import logging
import os
import signal
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from kio.schema.allocate_producer_ids.v0.request import AllocateProducerIdsRequest
from kio.static.primitive import i32, i64

from actors.base import event_log_for
from actors.share.host import ShareGroupHost
from actors.consumer.classic import DescribedGroup
from actors.consumer.classic import OffsetDeleteResult
from actors.consumer.modern import ConsumerGroupDescription
from actors.consumer.modern import ConsumerHeartbeatResult
from config import BROKER_DEFAULTS, ConfigError, cluster_enabled
from actors.watchdog.liveness import boot_id, daemon_alive, observe_process, read_cmdline, session_members
from actors.consumer.classic import OffsetCommitResult
from wire import authz, consumer_client, controller_client, share_client
from wire.backend import FetchedPartition, HeartbeatResult, ProduceResult, ShareFetchResult, TopicInfo, TopicSpec
from actors.controller.messages import BrokerHeartbeatReply, BrokerHeartbeatRequest, BrokerRegistrationReply, BrokerRegistrationRequest
from actors.controller.state import PartitionResult
from events.controller import BrokerEndpoint
from wire.cluster import BrokerLifecycle, ClusterMetadata, RpcError
from wire.cluster_view import StaticClusterView, coordinator_node, requested_partition_state
from wire.forwarding import FORWARDED_APIS, ForwardedConnection, ShareForwarder, serve_envelope
from wire.leader_reads import LeaderReads
from wire.dispatch import API_NAMES, CLUSTER_APIS, SUPPORTED, KafkaDispatcher
from wire.entities import error_name
from wire.gateway import ActorGateway
from wire.group_types import GroupTypes
from wire.hw_checkpoints import HighWatermarkCheckpoints
from wire.logs import LogRegistry
from wire.replica_fetcher import FetcherConfig, ReplicaFetcherManager, StrayReplicaCleaner
from wire.producer_ids import ProducerIdManager, ProducerIdsUnavailable
from wire.memory import MallocTrimmer
from wire.listeners import ListenerSpec, advertised_endpoints, endpoint_for, listener_config, listener_prefix, parse_listeners
from wire.server import KafkaListener
from wire.quotas import ListenerLimits

__all__ = ["ACTOR_SYSTEM_FILE", "Daemon", "ShoalBackend", "STATUS_FILE"]

log = logging.getLogger("shoal.daemon")

#: Written into the data dir once the listener is up; read by ``app.py status``.
STATUS_FILE = "shoal.status.json"

#: Written into the data dir once the actor system and its watchdog run: the owner daemon's pid and
#: start time, the admin port, the actor system's session and the watchdog interval; read by the
#: next daemon on the data dir to clean up after a crash; removed by a clean :meth:`Daemon.stop`.
ACTOR_SYSTEM_FILE = "shoal.actors.json"


class ShoalBackend:
    """:class:`wire.backend.Backend` over the controller, the share-group actors and the logs.

    ``controller``: a :class:`wire.controller_client.ControllerClient`; ``shares``: a
    :class:`wire.share_client.ShareClient`; ``logs``: the :class:`LogRegistry`."""

    def __init__(self, cfg: Mapping[str, str], controller: Any, shares: Any, logs: LogRegistry, host: str, port: int, consumers: Any = None) -> None:
        self.cfg = dict(cfg)
        #: one type per group id (:class:`wire.group_types.GroupTypes`)
        self.group_types = GroupTypes(self.cfg)
        #: the :class:`wire.consumer_client.ConsumerGroupClient` (classic consumer groups)
        self.consumers = consumers
        self.node_id = int(cfg.get("node.id", "1"))
        self.host = host
        self.port = port
        #: listener name → advertised (host, port), filled once the listeners are bound (wire.listeners.endpoint_for)
        self.endpoints: dict[str, tuple[str, int]] = {}
        self.cluster_id = cfg.get("cluster.id") or "shoal-cluster"
        self.controller = controller
        self.shares = shares
        self.logs = logs
        self.producer_ids = ProducerIdManager(self._allocate_producer_ids)
        #: the broker's metadata image (:class:`wire.cluster_view.ClusterView`): a
        #: :class:`wire.cluster.ClusterMetadata` on a cluster, this node alone otherwise
        self.cluster: Any = StaticClusterView(self.node_id, host, port)
        self.clustered = False

    # -- the cluster (issue 15) ----------------------------------------------------------------
    def metadata_brokers(self, listener: str | None) -> list[tuple[int, str, int, str | None]]:
        """``(node_id, host, port, rack)`` of every live broker on ``listener`` (Metadata,
        DescribeCluster): the registered, unfenced nodes of a cluster, or this node."""
        if self.clustered:
            return self.cluster.metadata_brokers(listener)
        host, port = endpoint_for(self, listener)
        return [(self.node_id, host, port, None)]

    def coordinator(self, group_id: str, listener: str | None) -> tuple[int, str, int] | None:
        """``(node_id, host, port)`` of the node coordinating ``group_id`` on ``listener``
        (FindCoordinator; :func:`wire.cluster_view.coordinator_node` over the live nodes of a
        cluster, this node otherwise); ``None`` when no node is live."""
        if not self.clustered:
            host, port = endpoint_for(self, listener)
            return self.node_id, host, port
        node = coordinator_node(group_id, self.cluster.live_brokers())
        reg = self.cluster.registration(node)
        ep = (reg.endpoint(listener) or reg.endpoint()) if reg is not None else None
        return (node, ep.host, ep.port) if ep is not None else None

    def is_coordinator(self, group_id: str) -> bool:
        """Whether this node coordinates ``group_id`` (always, on a single node). Group requests
        for a group this node does not coordinate are answered NOT_COORDINATOR."""
        return not self.clustered or coordinator_node(group_id, self.cluster.live_brokers()) == self.node_id

    def controller_id(self) -> int:
        """The active controller's node id (-1 while a cluster has none)."""
        return self.cluster.controller()[0] if self.clustered else self.node_id

    def register_broker(self, req: BrokerRegistrationRequest) -> BrokerRegistrationReply:
        """BrokerRegistration through this node's controller (NOT_CONTROLLER unless active)."""
        return self.controller.register_broker(req)

    def broker_heartbeat(self, req: BrokerHeartbeatRequest) -> BrokerHeartbeatReply:
        """BrokerHeartbeat through this node's controller."""
        return self.controller.broker_heartbeat(req)

    def alter_partition(self, topic: str, partition: int, broker_id: int, leader_epoch: int, partition_epoch: int, isr: tuple[int, ...]) -> PartitionResult:
        """AlterPartition through this node's controller."""
        return self.controller.alter_partition(topic, partition, broker_id, leader_epoch, partition_epoch, isr)

    def elect_leaders(self, partitions: list[tuple[str, int]] | None, election: str) -> tuple[str | None, list[tuple[str, int, str, str | None]]]:
        """ElectLeaders through this node's controller → ``(error, [(topic, partition, error, message)])``."""
        err, results = self.controller.elect_leaders(partitions, election)
        return err, [(r.topic, r.partition, r.error, r.message) for r in results]

    def alter_partition_reassignments(self, reassignments: list[tuple[str, int, tuple[int, ...] | None]]) -> tuple[str | None, list[tuple[str, int, str, str | None]]]:
        """AlterPartitionReassignments (KIP-455) through this node's controller (NOT_CONTROLLER
        unless active) → ``(error, [(topic, partition, error, message)])`` in request order."""
        err, results = self.controller.alter_partition_reassignments(reassignments)
        return err, [(r.topic, r.partition, r.error, r.message) for r in results]

    def list_partition_reassignments(self, partitions: list[tuple[str, int]] | None) -> tuple[str | None, list[tuple[str, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]]]:
        """ListPartitionReassignments (KIP-455) through this node's controller →
        ``(error, [(topic, partition, replicas, adding, removing)])``."""
        err, found = self.controller.list_partition_reassignments(partitions)
        return err, [(o.topic, o.partition, tuple(o.replicas), tuple(o.adding), tuple(o.removing)) for o in found]

    def allocate_producer_ids_for(self, broker_id: int) -> tuple[str | None, int, int]:
        """AllocateProducerIds for ``broker_id`` from this node's controller → ``(error, first, size)``."""
        try:
            first, size = self.controller.allocate_producer_ids(broker_id)
        except ProducerIdsUnavailable as exc:
            return exc.error, -1, 0
        return None, first, size

    def _allocate_producer_ids(self) -> tuple[int, int]:
        """A block of producer ids for this node: from the local controller on a single node;
        on a cluster from the active controller over AllocateProducerIds (API 67). Raises
        :class:`ProducerIdsUnavailable`."""
        if not self.clustered:
            return self.controller.allocate_producer_ids(self.node_id)
        ctrl, _epoch = self.cluster.controller()
        ch = self.cluster.channel(ctrl) if ctrl >= 0 else None
        if ch is None:
            raise ProducerIdsUnavailable("COORDINATOR_NOT_AVAILABLE", "no active controller")
        reg = self.cluster.registration(self.node_id)
        try:
            r = ch.ask(67, 0, AllocateProducerIdsRequest(broker_id=i32(self.node_id), broker_epoch=i64(reg.broker_epoch if reg else -1)))
        except RpcError as exc:
            raise ProducerIdsUnavailable("COORDINATOR_NOT_AVAILABLE", str(exc)) from exc
        err = error_name(r.error_code)
        if err is not None:
            raise ProducerIdsUnavailable("COORDINATOR_NOT_AVAILABLE" if err == "NOT_CONTROLLER" else err)
        return int(r.producer_id_start), int(r.producer_id_len)

    # -- control plane: the controller ---------------------------------------------------------
    def topics(self, names: Sequence[str] | None = None) -> list[TopicInfo]:
        """The topic image, fresh from the controller (one ask)."""
        return self.controller.topics(names)

    def create_topics(self, specs: Sequence[TopicSpec], validate_only: bool):
        """CreateTopics through the controller; opens the new partitions' logs at once."""
        out = self.controller.create_topics(specs, validate_only)
        if not validate_only:
            for name, (err, _msg, info) in out.items():
                if err is None and info is not None:
                    for p in range(info.partitions):
                        self.logs.open(name, p)  # create the directories now: ListOffsets works at once
        return out

    def create_partitions(self, topics, validate_only: bool):
        """CreatePartitions through the controller; opens the new partitions' logs at once (a
        tiered topic's new partitions are tiered like the others: the log manager reads the
        topic's configs)."""
        out = self.controller.create_partitions(topics, validate_only)
        if not validate_only:
            for name, count, _a in topics:
                if out.get(name, ("x", None))[0] is None:
                    for p in range(count):
                        self.logs.open(name, p)
        return out

    def delete_topics(self, names: Sequence[str]):
        """DeleteTopics through the controller; deletes the logs (and remote data) after."""
        out = self.controller.delete_topics(names)
        for name, (err, _tid) in out.items():
            if err is None:
                self.logs.drop_topic(name)
        return out

    def describe_configs(self, resource_type: int, name: str, keys: Sequence[str] | None):
        """DescribeConfigs: GROUP resources go to the group's actor, TOPIC/BROKER to the controller."""
        if resource_type == 32:
            return self.shares.describe_configs(name, keys)
        return self.controller.describe_configs(resource_type, name, keys)

    def alter_configs(self, resource_type: int, name: str, ops, validate_only: bool):
        """IncrementalAlterConfigs: GROUP → the group's actor, TOPIC/BROKER → the controller (then the topic's logs are reconfigured)."""
        if resource_type == 32:
            return self.shares.alter_configs(name, ops, validate_only)
        err, msg = self.controller.alter_configs(resource_type, name, ops, validate_only)
        if err is None and resource_type == 2 and not validate_only:
            self.logs.reconfigure(name)
        return err, msg

    def list_groups(self, types: Sequence[str], states: Sequence[str]):
        """ListGroups: share groups (type ``share``), classic consumer groups (type ``classic``)
        and KIP-848 consumer groups (type ``consumer``, protocol type ``consumer``), filtered by
        type and state (case-insensitive, as Kafka)."""
        wanted_types = {t.lower() for t in types}
        rows: list = []
        if not wanted_types or "share" in wanted_types:
            rows.extend(self.shares.list_groups())
        if self.consumers is not None and (not wanted_types or wanted_types & {"classic", "consumer"}):
            rows.extend(r for r in self.consumers.list_groups() if not wanted_types or r[1] in wanted_types)
        if states:
            wanted = {s.lower() for s in states}
            rows = [r for r in rows if r[2].lower() in wanted]
        return rows

    # -- SCRAM credentials (KIP-554) ---------------------------------------------------------
    def alter_user_scram_credentials(self, deletions, upsertions):
        """AlterUserScramCredentials → the controller (one message); the credential cache is dropped after."""
        return self.controller.alter_user_scram_credentials(deletions, upsertions)

    def describe_user_scram_credentials(self, users):
        """DescribeUserScramCredentials → the controller (one message)."""
        return self.controller.describe_user_scram_credentials(users)

    def scram_credential(self, user: str, mechanism: str):
        """The :class:`actors.controller.scram.ScramCredential` of ``user`` for ``mechanism``
        ("SCRAM-SHA-256"/"SCRAM-SHA-512") or ``None``: the lookup the SASL SCRAM server calls.
        Served from :meth:`wire.controller_client.ControllerClient.scram_credential`'s cache: a
        credential altered on this node is in force at once; one altered elsewhere after at most
        ``shoal.wire.scram.refresh.ms``."""
        return self.controller.scram_credential(user, mechanism)

    # -- data plane ---------------------------------------------------------------------------
    def _known(self, topic: str, partition: int, current_leader_epoch: int = -1) -> bool:
        """Whether ``topic``-``partition`` exists. On a cluster the metadata image decides, the one
        the data plane follows (a request that carries a leader epoch for a partition it lacks
        makes it catch up with the controller stream first: the requester learnt of the partition
        from that stream); on a single node the controller's topic cache."""
        if self.clustered:
            return requested_partition_state(self.cluster, topic, partition, current_leader_epoch) is not None
        return self.controller.partition_count(topic) > partition >= 0

    def produce(self, topic: str, partition: int, records: bytes, acks: int) -> ProduceResult:
        """Append one partition's batches (UNKNOWN_TOPIC_OR_PARTITION for an unknown partition)."""
        if not self._known(topic, partition):
            return ProduceResult("UNKNOWN_TOPIC_OR_PARTITION")
        return self.logs.append(topic, partition, records, acks)

    def fetch(self, topic: str, partition: int, offset: int, max_bytes: int, replica_id: int = -1, current_leader_epoch: int = -1) -> FetchedPartition:
        """Read one partition from ``offset`` (local or remote tier; a follower's fetch when
        ``replica_id >= 0``, see :meth:`wire.logs.LogRegistry.read`)."""
        if not self._known(topic, partition, current_leader_epoch):
            return FetchedPartition("UNKNOWN_TOPIC_OR_PARTITION")
        return self.logs.read(topic, partition, offset, max_bytes, replica_id, current_leader_epoch)

    def await_replication(self, pending: list[tuple[str, int, int]], timeout_ms: int) -> list[str | None]:
        """The acks=-1 purgatory (:meth:`wire.logs.LogRegistry.await_replication`)."""
        return self.logs.await_replication(pending, timeout_ms)

    def offset_for_leader_epoch(self, topic: str, partition: int, current_leader_epoch: int, leader_epoch: int) -> tuple[str | None, int, int]:
        """OffsetForLeaderEpoch on one partition (:meth:`wire.logs.LogRegistry.offset_for_leader_epoch`)."""
        if not self._known(topic, partition, current_leader_epoch):
            return "UNKNOWN_TOPIC_OR_PARTITION", -1, -1
        return self.logs.offset_for_leader_epoch(topic, partition, current_leader_epoch, leader_epoch)

    def list_offset(self, topic: str, partition: int, timestamp: int):
        """ListOffsets on one partition: ``(error, offset, timestamp, leader_epoch)``
        (:meth:`wire.logs.LogRegistry.list_offset_with_epoch`)."""
        if not self._known(topic, partition):
            return "UNKNOWN_TOPIC_OR_PARTITION", -1, -1, -1
        return self.logs.list_offset_with_epoch(topic, partition, timestamp)

    def delete_records(self, topic: str, partition: int, offset: int) -> tuple[str | None, int]:
        """DeleteRecords on one partition (Kafka ``Partition.deleteRecordsOnLeader``): unknown
        partition → UNKNOWN_TOPIC_OR_PARTITION; a topic whose ``cleanup.policy`` lacks ``delete``
        → POLICY_VIOLATION; else the log's start offset moves (see ``LogRegistry.delete_records``)."""
        if not self._known(topic, partition):
            return "UNKNOWN_TOPIC_OR_PARTITION", -1
        policy = str(self.controller.topic_config(topic).get("cleanup.policy", "delete"))
        if "delete" not in policy.split(","):
            return "POLICY_VIOLATION", -1
        return self.logs.delete_records(topic, partition, offset)

    def init_producer_id(self, transactional_id: str | None, producer_id: int, producer_epoch: int) -> tuple[str | None, int, int]:
        """InitProducerId for idempotent producers: a fresh id from the controller's blocks and
        epoch 0, whatever id/epoch the request carries (Kafka ``TransactionCoordinator.handleInitProducerId``
        with a null transactional id). Transactional ids: UNSUPPORTED_VERSION (no transactions)."""
        if transactional_id is not None:
            return "UNSUPPORTED_VERSION", -1, -1
        try:
            return None, self.producer_ids.next_producer_id(), 0
        except ProducerIdsUnavailable as exc:
            return exc.error, -1, -1

    def data_version(self, partitions: Sequence[tuple[str, int]]) -> Any:
        """The log registry's versions of ``partitions`` (:meth:`wire.logs.LogRegistry.data_version`)."""
        return self.logs.data_version(partitions)

    def wait_for_data(self, timeout_ms: int, since: Any) -> None:
        """Block until a change ``since`` covers (see :meth:`wire.logs.LogRegistry.wait`) or ``timeout_ms``."""
        self.logs.wait(timeout_ms, since)

    # -- share groups -------------------------------------------------------------------------
    def share_heartbeat(self, group, member_id, epoch, rack, subscribed, client_id, client_host) -> HeartbeatResult:
        """ShareGroupHeartbeat → the group's actor."""
        return self.shares.heartbeat(group, member_id, epoch, rack, subscribed, client_id, client_host)

    def share_fetch(self, group, member, epoch, wanted, forgotten, acks, max_records, max_wait_ms, acquire_mode=0, batch_size=None,
                    is_renew_ack=False, session_node=-1) -> ShareFetchResult:
        """ShareFetch → the group's actor (the purgatory when nothing is acquired) plus the
        acquired records' bytes; ``session_node``: the node that forwarded it (-1: none)."""
        return self.shares.fetch(group, member, epoch, wanted, forgotten, acks, max_records, max_wait_ms, acquire_mode, batch_size, is_renew_ack,
                                 session_node)

    def share_acknowledge(self, group, member, epoch, acks, session_node=-1) -> ShareFetchResult:
        """ShareAcknowledge → the group's actor; ``session_node`` as in :meth:`share_fetch`."""
        return self.shares.acknowledge(group, member, epoch, acks, session_node)

    def share_group_describe(self, group: str) -> dict:
        """ShareGroupDescribe of one group."""
        return self.shares.describe(group)

    def share_group_offsets(self, group: str, topics):
        """DescribeShareGroupOffsets of one group."""
        return self.shares.offsets(group, topics)

    # -- classic consumer groups (issue 16) ------------------------------------------------------
    def consumer_join(self, cmd):
        """JoinGroup → the group's ConsumerGroupActor (may wait for the rebalance)."""
        return self.consumers.join(cmd)

    def consumer_sync(self, cmd):
        """SyncGroup → the group's actor (may wait for the leader's assignment)."""
        return self.consumers.sync(cmd)

    def consumer_heartbeat(self, cmd):
        """Heartbeat → the group's actor."""
        return self.consumers.heartbeat(cmd)

    def consumer_leave(self, cmd):
        """LeaveGroup → the group's actor."""
        return self.consumers.leave(cmd)

    def consumer_commit(self, cmd):
        """OffsetCommit: partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION here and are
        never sent to the coordinator (``KafkaApis.handleOffsetCommitRequest``); the rest go to
        the group's actor. Returns an ``OffsetCommitResult`` in request order."""
        known = tuple(p for p in cmd.partitions if self._known(p.topic, p.partition))
        got: dict = {}
        if known:
            r = self.consumers.commit(replace(cmd, partitions=known))
            got = {(t, p): e for t, p, e in r.partitions}
        return OffsetCommitResult(tuple(
            (p.topic, p.partition, got.get((p.topic, p.partition), "UNKNOWN_TOPIC_OR_PARTITION")) for p in cmd.partitions))

    def consumer_fetch_offsets(self, group: str, partitions, member_id=None, member_epoch=-1):
        """OffsetFetch → ``(group error, [FetchedOffset])``."""
        return self.consumers.fetch_offsets(group, partitions, member_id, member_epoch)

    # -- KIP-848 consumer groups ----------------------------------------------------------------
    def _consumer_protocol_enabled(self) -> bool:
        key = "group.coordinator.rebalance.protocols"
        return "consumer" in [p.strip() for p in str(self.cfg.get(key, BROKER_DEFAULTS[key])).split(",")]

    def consumer_group_heartbeat(self, cmd):
        """ConsumerGroupHeartbeat → the group's actor, with the topic image (every topic the
        listener's metadata cache knows, refreshed when a subscribed topic is missing), as share
        groups get theirs. UNSUPPORTED_VERSION when ``consumer`` is not in
        ``group.coordinator.rebalance.protocols`` (``KafkaApis``)."""
        if not self._consumer_protocol_enabled():
            return ConsumerHeartbeatResult("UNSUPPORTED_VERSION", "The consumer rebalance protocol is disabled.", cmd.member_id, cmd.member_epoch)
        image = tuple((t.name, str(t.topic_id), t.partitions) for t in self.controller.cached_topics(cmd.subscribed_topic_names))
        return self.consumers.consumer_group_heartbeat(replace(cmd, image=image))

    def consumer_group_describe(self, group: str):
        """ConsumerGroupDescribe → the group's actor."""
        if not self._consumer_protocol_enabled():
            return ConsumerGroupDescription(group, "UNSUPPORTED_VERSION")
        return self.consumers.consumer_group_describe(group)

    # -- group admin (DescribeGroups 15, DeleteGroups 42, OffsetDelete 47, 91, 92) --------------
    def describe_group(self, group: str):
        """DescribeGroups of one group → ``(error, message, DescribedGroup)``: a classic group as
        its actor describes it; a missing or non-classic group is ``Dead`` with
        GROUP_ID_NOT_FOUND and Kafka's message (the handler answers error 0 below v6)."""
        dead = DescribedGroup(group, "Dead", "", "", ())
        if self.consumers is None or self.group_types.is_share_group(group):
            return "GROUP_ID_NOT_FOUND", f"Group {group} is not a classic group.", dead
        err, d = self.consumers.describe(group)
        if err is not None:
            return err, None, DescribedGroup(group, "", "", "", ())
        if d.state == "Dead":
            return "GROUP_ID_NOT_FOUND", f"Group {group} not found.", d
        return None, None, d

    def delete_group(self, group: str) -> str | None:
        """DeleteGroups of one group (share or classic) → error name or ``None``."""
        if self.group_types.is_share_group(group):
            return self.shares.delete_group(group)[0]
        if self.consumers is None:
            return "GROUP_ID_NOT_FOUND"
        return self.consumers.delete_group(group)

    def consumer_delete_offsets(self, group: str, partitions):
        """OffsetDelete: partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION here and are
        never sent to the coordinator (``KafkaApis.handleOffsetDeleteRequest``); a share group is
        GROUP_ID_NOT_FOUND (not a classic group). Returns an ``OffsetDeleteResult``; with a group
        error its partitions are those answered here (Kafka merges them into the coordinator's
        error response)."""
        known = [(t, p) for t, p in partitions if self._known(t, p)]
        unknown = tuple((t, p, "UNKNOWN_TOPIC_OR_PARTITION") for t, p in partitions if (t, p) not in set(known))
        if not group:
            return OffsetDeleteResult("INVALID_GROUP_ID", unknown)
        if self.consumers is None or self.group_types.is_share_group(group):
            return OffsetDeleteResult("GROUP_ID_NOT_FOUND", unknown)
        r = self.consumers.delete_offsets(group, known)
        if r.error is not None:
            return OffsetDeleteResult(r.error, unknown)
        got = {(t, p): e for t, p, e in r.partitions}
        return OffsetDeleteResult(None, tuple((t, p, got.get((t, p), "UNKNOWN_TOPIC_OR_PARTITION")) for t, p in partitions))

    def share_alter_offsets(self, group: str, topics):
        """AlterShareGroupOffsets of one share group (an empty id: INVALID_GROUP_ID)."""
        if not group:
            return "INVALID_GROUP_ID", None, []
        return self.shares.alter_offsets(group, topics)

    def share_delete_offsets(self, group: str, topics):
        """DeleteShareGroupOffsets of one share group (an empty id: INVALID_GROUP_ID)."""
        if not group:
            return "INVALID_GROUP_ID", None, []
        return self.shares.delete_offsets(group, topics)

    # -- status -------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Counts for ``app.py status``."""
        out: dict[str, Any] = {}
        try:
            out["topics"] = len(self.topics())
        except Exception as exc:  # pragma: no cover - reported, not raised
            out["topics_error"] = str(exc)
        try:
            out.update(self.shares.status())
        except Exception as exc:  # pragma: no cover
            out["share_error"] = str(exc)
        out["partitions_open"] = len(self.logs.logs())
        out["tiered_segments"] = self.tiered_segments()
        return out

    def tiered_segments(self) -> int:
        """Segments copied to the remote tier (from the RemoteLogManager when present)."""
        rlm = getattr(self.logs, "rlm", None)
        if rlm is None:
            return 0
        total = 0
        for lg in self.logs.logs().values():
            if not lg.config.remote_storage_enable:
                continue
            try:
                from events.rlmm_types import TopicIdPartition

                ids = {v: k for k, v in self.controller.names_by_id().items()}
                tp = TopicIdPartition(uuid.UUID(ids[lg.topic]), lg.topic, lg.partition)
                total += sum(1 for md in rlm.rlmm.list_remote_log_segments(tp) if getattr(md.state, "name", "") == "COPY_SEGMENT_FINISHED")
            except Exception:  # pragma: no cover - counts are best effort
                continue
        return total


class _Dispatcher(KafkaDispatcher):
    """The daemon's dispatcher: on a cluster it also serves Kafka's controller RPCs and Envelope,
    and forwards share requests of groups another node coordinates (``forwarder``,
    :mod:`wire.forwarding`)."""

    def __init__(self, backend: Any, gateway: ActorGateway, auto_create: bool, authorizer: Any = None, clustered: bool = False,
                 share_host: Any = None, forwarder: ShareForwarder | None = None) -> None:
        super().__init__(backend, auto_create, supported={**SUPPORTED, **CLUSTER_APIS} if clustered else None, authorizer=authorizer)
        self.gateway = gateway
        self.share_host = share_host
        self.forwarder = forwarder
        if clustered:
            self._handlers[58] = lambda r, c: serve_envelope(r, c, self.supported, self.handle, self.authorizer)

    def handle(self, request: Any, conn: Any) -> Any:
        """A share request of a group another node coordinates goes there (the client's own
        connection only: a forwarded request is never forwarded again); the rest as
        :meth:`KafkaDispatcher.handle`."""
        fw = self.forwarder
        if fw is not None and request.api_key in FORWARDED_APIS and not isinstance(conn, ForwardedConnection):
            node = fw.target(request)
            if node is not None:
                out = fw.forward(request, conn, node)
                if out is not None:
                    self.stats[request.api_key] = self.stats.get(request.api_key, 0) + 1
                    return out
        return super().handle(request, conn)

    def connection_closed(self, conn: Any) -> None:
        """Close the connection thread's private actor endpoint; give its in-process endpoint back."""
        self.gateway.release_thread()
        if self.share_host is not None:
            self.share_host.release_thread()


class Daemon:
    """The running broker. ``Daemon(cfg).start()`` returns once the listener accepts
    connections; :meth:`stop` shuts everything down; :meth:`wait` blocks until stopped.
    ``cluster_view``: the :class:`wire.cluster_view.ClusterView` the data plane follows (who
    leads which partition); ``None`` is the single-node ``StaticClusterView(node.id)``. The
    daemon builds the leader's :class:`wire.replica_manager.ReplicaManager` (inside the
    :class:`LogRegistry`) and the :class:`wire.replica_fetcher.ReplicaFetcherManager` from it."""

    def __init__(self, cfg: Mapping[str, str], cluster_view: Any = None) -> None:
        self.cfg = dict(cfg)
        if (cluster_enabled(self.cfg) and self.cfg.get("remote.log.storage.system.enable", "true").lower() == "true"
                and not self.cfg.get("shoal.remote.storage.dir")):
            # The remote tier of a cluster is one store every node reads and the leader of each
            # partition writes (Kafka's RemoteStorageManager: S3, HDFS …); a node's own
            # <data>/remote is not one. Without a shared directory the cluster runs without
            # tiered storage (Kafka's answer to remote.storage.enable=true is then INVALID_CONFIG,
            # "Tiered Storage functionality is disabled in the broker").
            log.warning("tiered storage on a cluster needs shoal.remote.storage.dir, a directory every node shares: disabled")
            self.cfg["remote.log.storage.system.enable"] = "false"
        self.cluster_view = cluster_view
        self.fetchers: Any = None
        #: tiered storage (set by _start_remote_log_manager): the cluster image's changes → each
        #: tiered partition's role in the RemoteLogManager; a follower's rebuild from the remote tier
        self._tiered_roles_changed: Callable[[Any], None] | None = None
        self._rebuild_from_remote: Callable[[Any, int, int], bool] | None = None
        #: deletes the logs of replicas a reassignment moved off this node (a cluster only)
        self.stray_replicas: StrayReplicaCleaner | None = None
        self.data_dir = Path(self.cfg["shoal.data.dir"])
        self._stopped = threading.Event()
        self._stop_requested = threading.Event()
        self.asys: Any = None
        self.listener: KafkaListener | None = None  # the first of ``listeners`` (status, app.py run)
        self.listeners: list[KafkaListener] = []
        self.backend: ShoalBackend | None = None
        self.gateway: ActorGateway | None = None
        self.logs: LogRegistry | None = None
        self._ticker: threading.Thread | None = None
        self.started_ms = 0
        #: The actor system's session id (its admin's ``setsid``), from the watchdog; 0 unknown.
        self.actor_session = 0
        #: on a cluster: this node's metadata image and its broker lifecycle (wire.cluster)
        self.cluster: ClusterMetadata | None = None
        self.lifecycle: BrokerLifecycle | None = None
        #: this node's share groups, hosted in this process (actors.share.host)
        self.share_host: ShareGroupHost | None = None

    def start(self) -> "Daemon":
        """Start the actor system, the journal, the controller (and through it the share-group and
        RLMM actors), the logs, the remote log manager and the listener. Raises on failure
        (after cleaning up what was started)."""
        os.environ.setdefault("THESPIAN_BASE_IPADDR", "127.0.0.1")
        from thespian.actors import ActorSystem

        from actors.journal import JournalActor
        from actors.messages import Configure

        self.data_dir.mkdir(parents=True, exist_ok=True)
        base = self.cfg.get("shoal.actor.system.base", "multiprocTCPBase")
        admin_port = int(self.cfg["shoal.actor.system.admin.port"])
        caps = {"Admin Port": admin_port} if base.startswith("multiproc") else {}
        if base == "multiprocTCPBase":
            # ActorSystem() would silently join a running system (and its old code): an orphan of
            # this data dir's previous daemon (SIGKILLed; its pid is gone) is shut down first.
            self._shutdown_orphaned_actor_system()
            if _port_in_use(admin_port):
                raise RuntimeError(f"the Thespian admin port {admin_port} is in use: is another daemon running? (shoal.actor.system.admin.port)")
        (self.data_dir / STATUS_FILE).unlink(missing_ok=True)
        self.asys = ActorSystem(base, caps, logDefs=_log_defs(self.data_dir))
        try:
            if base.startswith("multiproc"):
                self._start_watchdog(admin_port)
            journal = self.asys.createActor(JournalActor, globalName="shoal-journal")
            reply = self.asys.ask(journal, Configure(self.cfg, "journal"), 30)
            if reply is None or type(reply).__name__ != "Configured":
                raise RuntimeError(f"journal did not start: {reply!r}")
            self.gateway = ActorGateway(self.asys, float(self.cfg.get("shoal.wire.actor.timeout.ms", "30000")) / 1000)
            # the data plane's metadata image: the constructor's view, else this node alone (a
            # cluster's own image replaces it below, once it is built)
            view = self.cluster_view if self.cluster_view is not None else StaticClusterView(int(self.cfg.get("node.id", "1")))
            # a replica's HW survives a restart only where it can differ from its log end offset:
            # on a cluster, or a data plane following another view (wire.hw_checkpoints)
            replicated = cluster_enabled(self.cfg) or not isinstance(view, StaticClusterView)
            self.logs = LogRegistry(self.cfg["log.dirs"], cluster=view, replica_lag_time_max_ms=int(self.cfg.get("replica.lag.time.max.ms", "30000")),
                                    hw_checkpoints=HighWatermarkCheckpoints(self.cfg["log.dirs"]) if replicated else None)
            controller = controller_client.start(self.asys, self.gateway, self.cfg, journal)
            self.logs._topic_config = controller.topic_config  # noqa: SLF001 - wiring
            # this node's share groups: actors hosted in this process (actors.share.host)
            self.share_host = ShareGroupHost(self.cfg, float(self.cfg.get("shoal.wire.actor.timeout.ms", "30000")) / 1000)
            shares = share_client.ShareClient(self.share_host, controller, self.logs, self.cfg)
            consumers = consumer_client.ConsumerGroupClient(self.gateway, controller, self.cfg)
            self._start_remote_log_manager(controller)
            specs = parse_listeners(self.cfg)
            first = specs[0]
            self.backend = ShoalBackend(self.cfg, controller, shares, self.logs, first.host if first.host not in ("", "0.0.0.0") else "127.0.0.1", first.port, consumers)
            authorizer = authz.from_config(self.cfg, controller)  # authorizer.class.name (acls)
            clustered = cluster_enabled(self.cfg)
            if clustered:
                if not str(self.cfg.get("event.log.url", "")).startswith("postgresql"):
                    raise ConfigError("shoal.cluster.enable=true needs a PostgreSQL event.log.url: the nodes of a cluster share one event log")
                self.cluster = ClusterMetadata(self.cfg, self.backend.node_id, event_log_for(self.cfg)).start()
                self.backend.cluster, self.backend.clustered = self.cluster, True
                consumers.is_coordinator = shares.is_coordinator = self.backend.is_coordinator
                if self.cluster_view is None:
                    self.logs.use_cluster(self.cluster)  # the data plane follows the image
                    # a replica's log takes its topic's configs from the image it was opened by
                    # (the controller client's cache may not know a new topic yet), and follows
                    # config changes made through any node
                    image, logs_ = self.cluster, self.logs

                    def topic_config(topic: str, ask: Any = controller.topic_config) -> Mapping[str, str]:
                        try:
                            return image.topic_config(topic)
                        except KeyError:
                            return ask(topic)

                    self.logs._topic_config = topic_config  # noqa: SLF001 - wiring

                    def reconfigured(names: Any) -> None:
                        for n in names:
                            logs_.reconfigure(n)
                            if self._tiered_roles_changed is not None:  # remote.storage.enable may have changed
                                self._tiered_roles_changed([k for k in logs_.logs() if k[0] == n])

                    image.on_config_change(reconfigured)
            forwarder = None
            if clustered:
                cluster, backend = self.cluster, self.backend
                forwarder = ShareForwarder(backend.node_id, lambda g: coordinator_node(g, cluster.live_brokers()), cluster.broker_endpoint,
                                           int(self.cfg.get("controller.socket.timeout.ms", "30000")))
                # a share group's coordinator reads the partitions it keeps no replica of from their leader
                fc, view_ = FetcherConfig.from_config(self.cfg), self.logs.cluster
                self.logs.leader_reads = LeaderReads(lambda t, p: ps.leader if (ps := view_.partition_state(t, p)) is not None else -1,
                                                     view_.broker_endpoint, self.logs.waits, backend.node_id, fc.wait_max_ms, fc.socket_timeout_ms)
            dispatcher = _Dispatcher(self.backend, self.gateway, self.cfg.get("auto.create.topics.enable", "true").lower() == "true", authorizer, clustered,
                                     self.share_host, forwarder)
            self.dispatcher = dispatcher
            limits = ListenerLimits.from_config(self.cfg)  # connection quotas, queued.max.requests: broker-wide (wire.quotas)
            for spec in specs:
                self.listeners.append(self._listener(spec, dispatcher, limits).start())
            self.listener = self.listeners[0]
            bound = {lst.name: (lst.host, lst.port) for lst in self.listeners}
            self.backend.endpoints = advertised_endpoints(self.cfg, bound)
            self.backend.host, self.backend.port = self.backend.endpoints[first.name]
            if clustered:
                self._join_cluster(controller)
            view = self.logs.cluster
            if not isinstance(view, StaticClusterView):  # a single node follows no one

                def all_partitions(c: Any = controller) -> list[tuple[str, int]]:
                    return [(t.name, p) for t in c.topics(None) for p in range(t.partitions)]

                logs = self.logs
                self.fetchers = ReplicaFetcherManager(view, logs.open, FetcherConfig.from_config(self.cfg), all_partitions,
                                                      lambda key: logs.notify(*key), self._rebuild_from_remote).start()
                if self._tiered_roles_changed is not None:  # tiered storage on a cluster: each node's role per partition
                    view.on_change(self._tiered_roles_changed)
                    self._tiered_roles_changed(all_partitions())
                # a reassignment that moved a replica off this node: its log is deleted (after the
                # fetchers let it go); stray logs of such partitions are deleted at start-up
                delay_s = int(self.cfg.get("shoal.cluster.stray.replica.delete.delay.ms", "2000")) / 1000
                self.stray_replicas = StrayReplicaCleaner(view, self.logs.drop_partition, self.fetchers.following, delay_s)
                view.on_change(self.stray_replicas.on_change)
                self.stray_replicas.check(all_partitions())
            self.started_ms = int(time.time() * 1000)
            self._write_status_file()
            self._ticker = threading.Thread(target=self._tick, name="shoal-ticker", daemon=True)
            self._ticker.start()
        except BaseException:
            self.stop()
            raise
        # The listener's long-lived heap (modules, kio schemas, configs, the actor system's
        # endpoints) is built by now: move it out of the collector's reach, so that a full
        # collection walks only what was allocated since. A full pass over the start-up heap took
        # 80-100 ms here, a pause of every request in flight (issue 14's latency tail).
        gc.freeze()
        return self

    def _join_cluster(self, controller: Any) -> None:
        """Start the broker lifecycle (register with the active controller, heartbeat, take the
        controller role over when needed) and wait until this node is unfenced, at most
        ``shoal.cluster.join.timeout.ms`` (default 60000). Raises ``RuntimeError`` on timeout."""
        assert self.backend is not None and self.cluster is not None
        protocols = {lst.name: lst.security_protocol for lst in self.listeners}
        endpoints = [BrokerEndpoint(name, host, port, protocols.get(name, "PLAINTEXT")) for name, (host, port) in self.backend.endpoints.items()]
        self.lifecycle = BrokerLifecycle(self.cfg, self.backend.node_id, self.cluster, endpoints, controller.claim_controller).start()
        timeout_s = int(self.cfg.get("shoal.cluster.join.timeout.ms", "60000")) / 1000
        if not self.lifecycle.wait_unfenced(timeout_s):
            raise RuntimeError(f"node {self.backend.node_id} was not unfenced by the cluster's controller within {timeout_s:.0f} s")
        log.info("node %d joined the cluster (controller %d)", self.backend.node_id, self.cluster.controller()[0])

    def _listener(self, spec: ListenerSpec, dispatcher: Any, limits: ListenerLimits) -> KafkaListener:
        """One :class:`KafkaListener` for ``spec`` (not started), with its TLS context
        (:func:`wire.tls.server_context`) and SASL config (:func:`wire.sasl.sasl_config`) built
        from the listener's view of the config (``listener.name.<name>.`` overrides). On a
        SASL_SSL listener only a listener-prefixed ``ssl.client.auth`` applies (Kafka
        ``ChannelBuilders``). ``socket.request.max.bytes`` and the other per-client bounds come from
        ``limits`` (broker-wide, as Kafka's ``SocketServer`` reads them; no listener prefix).
        Raises :class:`config.ConfigError` for a bad security setup."""
        from wire.sasl import sasl_config
        from wire.tls import server_context

        view = listener_config(self.cfg, spec.name)
        ssl_context = None
        if spec.security_protocol == "SSL":
            ssl_context = server_context(view)
        elif spec.security_protocol == "SASL_SSL":
            ssl_context = server_context(view, client_auth=self.cfg.get(listener_prefix(spec.name) + "ssl.client.auth") or "none")
        sasl = None
        if spec.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            sasl = sasl_config(view, spec.name, self._scram_lookup())
        return KafkaListener(
            spec.bind_host,
            spec.port,
            dispatcher,
            limits.max_request_bytes,  # socket.request.max.bytes, validated once in ListenerLimits.from_config
            name=spec.name,
            security_protocol=spec.security_protocol,
            ssl_context=ssl_context,
            sasl_config=sasl,
            handshake_timeout_s=float(view.get("shoal.ssl.handshake.timeout.ms", "10000")) / 1000,
            limits=limits,
        )

    def _scram_lookup(self) -> Any:
        """The SCRAM credential lookup ``(user, mechanism) -> ScramCredential | None`` for SASL
        listeners: the backend's ``scram_credential`` (credentials stored as controller events by
        AlterUserScramCredentials, KIP-554; cached, see :class:`wire.controller_client.ControllerClient`)."""
        return self.backend.scram_credential

    def _start_watchdog(self, admin_port: int) -> None:
        """Create the :class:`actors.watchdog.actor.OwnerWatchdogActor` (the first actor of the
        system), tell it this process's pid and start time and ``shoal.actor.system.watchdog.ms``,
        and record the owner and the actor system's session in :data:`ACTOR_SYSTEM_FILE`, for
        the next daemon on this data dir should this one die without stopping. Raises
        ``RuntimeError`` when the watchdog does not answer."""
        from actors.watchdog.actor import OwnerWatchdogActor, WatchingOwner, WatchOwner

        me = observe_process(os.getpid())
        start_time = me.start_time if me is not None else None
        interval_ms = int(self.cfg.get("shoal.actor.system.watchdog.ms", "1000"))
        watchdog = self.asys.createActor(OwnerWatchdogActor, globalName="shoal-watchdog")
        reply = self.asys.ask(watchdog, WatchOwner(os.getpid(), start_time, interval_ms), 30)
        if not isinstance(reply, WatchingOwner):
            raise RuntimeError(f"the actor system's watchdog did not start: {reply!r}")
        # The admin's own session (multiprocTCPBase daemonizes it); never this process's session,
        # which holds the daemon itself (and perhaps a shell): that one is not ours to wait for.
        self.actor_session = reply.session if reply.session != os.getsid(0) else 0
        record = {
            "pid": os.getpid(),
            "start_time": start_time,
            "admin_port": admin_port,
            "session": self.actor_session or None,
            "watchdog_ms": interval_ms,
            "boot_id": boot_id(),
            "cmdline": read_cmdline(os.getpid()),
        }
        tmp = self.data_dir / (ACTOR_SYSTEM_FILE + ".tmp")
        tmp.write_text(json.dumps(record))
        tmp.replace(self.data_dir / ACTOR_SYSTEM_FILE)

    def _previous_owner(self) -> dict[str, Any] | None:
        """The record of the actor system a previous daemon of this data dir started:
        :data:`ACTOR_SYSTEM_FILE`, else (a daemon of an older version) the pid and admin port of
        :data:`STATUS_FILE`. ``None`` when there is neither."""
        for name in (ACTOR_SYSTEM_FILE, STATUS_FILE):
            try:
                info = json.loads((self.data_dir / name).read_text())
                return {
                    "pid": int(info["pid"]),
                    "start_time": info.get("start_time"),
                    "admin_port": int(info["admin_port"]),
                    "session": info.get("session"),
                    "watchdog_ms": int(info.get("watchdog_ms", 0)),
                    "boot_id": info.get("boot_id"),
                    "cmdline": info.get("cmdline"),
                }
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return None

    def _shutdown_orphaned_actor_system(self, timeout_s: float = 30.0) -> None:
        """Make sure no process of an actor system orphaned by this data dir's previous daemon
        (SIGKILLed: its pid, checked with its start time, is gone) is left before this daemon
        starts its own. Returns at once when the record names a live daemon (the admin-port check
        that follows refuses to start then) or nothing of the old system is left.

        Otherwise, in this order, each step only if something is still left:

        1. that system's own watchdog (:mod:`actors.watchdog.actor`) shuts it down within its
           interval: wait up to ``watchdog_ms`` (at most 5 s) plus the time a shutdown takes (5 s);
        2. ask its admin to shut down (``ActorSystem(...).shutdown()``, as the watchdog does from
           inside), then wait until the admin port is free and no process of the recorded session
           is left, up to ``timeout_s`` seconds;
        3. SIGKILL what is still left in that session and shows the old daemon's command line:
           those processes are provably the old system's (see
           :func:`actors.watchdog.liveness.session_members`; a record from another boot is
           ignored altogether), and a SIGKILL of them loses no more than the SIGKILL of their
           daemon did.

        Waiting for every process, not only the admin port, matters: an old actor still running
        (an RLMM or share-group actor mid-exit) must not append to the event log while the new
        daemon recovers from it."""
        rec = self._previous_owner()
        if rec is None or daemon_alive(rec["pid"], rec["start_time"], observe_process(rec["pid"])):
            return
        if rec["boot_id"] and rec["boot_id"] != boot_id():
            return  # written before a reboot: nothing of that system survived it
        port = rec["admin_port"]
        session = rec["session"] if isinstance(rec["session"], int) and rec["session"] != os.getsid(0) else 0
        if session:
            # Recorded session: it alone says whether the old system is still there. If it is
            # empty, whoever holds the admin port now is not ours and is left alone.
            if not session_members(session):
                return
        elif not _port_in_use(port):  # a record without a session (older daemon): the port only
            return

        def left() -> bool:
            return bool(session and session_members(session)) or _port_in_use(port)

        log.warning("the actor system of daemon pid %d (admin port %d, session %d) outlived it: shutting it down", rec["pid"], port, session)
        if rec["watchdog_ms"] > 0 and _wait_until(lambda: not left(), min(rec["watchdog_ms"] / 1000, 5.0) + 5.0):
            return
        if _port_in_use(port):
            from thespian.actors import ActorSystem

            try:
                ActorSystem("multiprocTCPBase", {"Admin Port": port}).shutdown()
            except Exception:  # an admin that does not answer: wait, then step 3
                log.exception("asking the orphaned actor system on admin port %d to shut down", port)
        if _wait_until(lambda: not left(), timeout_s) or not session:
            return
        if _kill_session(session, "of the orphaned actor system", rec["cmdline"]):
            _wait_until(lambda: not left(), 5.0)

    def _rlmm_actors(self, controller: Any) -> Any:
        """One :class:`actors.rlmm.actor.RlmmPartitionActor` per metadata partition
        (``remote.log.metadata.topic.num.partitions``), started and supervised by the controller
        (``ChildLookup("rlmm", p)``), behind Kafka's RemoteLogMetadataManager interface
        (:class:`actors.rlmm.manager.ActorRemoteLogMetadataManager`).

        A partition's actor is started on its first use (a tiered user partition hashed to it is
        opened, or a request names one), not at start-up: each actor is one process (~7 MB), and
        a daemon without tiered topics needs none of them (Kafka's RLMM likewise consumes only the
        metadata partitions of its assigned user partitions). The lookup answers once the actor
        has recovered, so no request reaches an actor that is still recovering. A request that
        times out (the actor crashed and the controller restarted it elsewhere) looks the
        partition's actor up again and is retried once."""
        from actors.controller.messages import ChildLookup
        from events.rlmm_errors import KafkaException
        from actors.rlmm.manager import ActorRemoteLogMetadataManager
        from wire.gateway import ActorTimeout

        n = int(self.cfg.get("remote.log.metadata.topic.num.partitions", "50"))
        timeout_s = float(self.cfg.get("shoal.wire.actor.timeout.ms", "30000")) / 1000
        assert self.gateway is not None
        gateway = self.gateway

        def lookup(p: int) -> Any:
            reply = controller.ask(ChildLookup("rlmm", str(p), True), max(timeout_s, 60))
            if type(reply).__name__ != "ChildAddress":
                raise RuntimeError(f"RLMM actor for metadata partition {p} did not start: {reply!r}")
            return reply.address

        def ask(addr: Any, msg: Any) -> Any:
            try:
                return gateway.ask(addr, msg, timeout_s)
            except ActorTimeout:
                p = next((i for i in manager.started_partitions() if manager.address(i) == addr), None)
                if p is None:
                    return None
                try:
                    fresh = lookup(p)
                except RuntimeError:
                    return None  # the manager turns a missing reply into KafkaException
                try:
                    manager.replace_address(p, fresh)  # and sends the restarted actor its assignment
                except KafkaException:
                    return None
                try:
                    return gateway.ask(fresh, msg, timeout_s)
                except ActorTimeout:
                    return None

        manager = ActorRemoteLogMetadataManager(ask, {}, num_partitions=n, start=lookup)
        return manager

    def _start_remote_log_manager(self, controller: Any) -> None:
        """Start the RemoteLogManager (``store.remote_log_manager``) over a local-directory remote
        tier (``<data>/remote``) and the event-sourced RLMM, when
        ``remote.log.storage.system.enable=true``. Partitions of topics with
        ``remote.storage.enable=true`` are registered as their logs open; reads below the local
        log start go to the remote tier. ``shoal.rlmm.mode``: ``actors`` (default, one supervised
        RLMM actor per metadata partition) or ``in-process`` (the same event-sourced manager inside
        the listener process: fewer processes, no supervision).

        On a cluster the remote tier is ``shoal.remote.storage.dir``, shared by every node; the
        RLMM is the in-process one with ``read_through`` (every node appends to the shared
        metadata partitions); each tiered partition is registered as this node's role in it —
        its leader copies, expires and serves remote reads, its followers follow the highest
        offset in remote storage and rebuild their log start from the remote tier when the
        leader answers OFFSET_MOVED_TO_TIERED_STORAGE — and re-registered on every change of the
        cluster image (``_tiered_roles_changed``, ``_rebuild_from_remote``)."""
        if self.cfg.get("remote.log.storage.system.enable", "true").lower() != "true":
            return
        from actors.rlmm.manager import EventSourcedRemoteLogMetadataManager
        from events.rlmm_types import TopicIdPartition
        from store.remote_log_manager import RemoteLogManager
        from store.remote_storage import LocalDirectoryRemoteStorageManager

        rsm = LocalDirectoryRemoteStorageManager(self.cfg.get("shoal.remote.storage.dir") or str(self.data_dir / "remote"))
        mode = self.cfg.get("shoal.rlmm.mode", "actors")
        clustered = cluster_enabled(self.cfg)
        if clustered:
            # every node appends to and reads the shared metadata partitions: the in-process RLMM,
            # folding what the other nodes appended before each read
            rlmm = EventSourcedRemoteLogMetadataManager.from_config(event_log_for(self.cfg), self.cfg, read_through=True)
        elif mode == "actors":
            rlmm = self._rlmm_actors(controller)
        elif mode == "in-process":
            rlmm = EventSourcedRemoteLogMetadataManager.from_config(event_log_for(self.cfg), self.cfg)
        else:
            raise ValueError(f"shoal.rlmm.mode must be actors or in-process, not {mode!r}")
        interval = int(self.cfg.get("remote.log.manager.task.interval.ms", "30000"))
        rlm = RemoteLogManager(rsm, rlmm, broker_id=int(self.cfg.get("node.id", "1")), task_interval_ms=interval)
        self.rlm = rlm
        tps: dict[tuple[str, int], Any] = {}

        def tp_of(lg: Any) -> Any:
            key = (lg.topic, lg.partition)
            tp = tps.get(key)
            if tp is None:
                # a cluster's image knows a topic as soon as this node opens its log (the
                # controller client's cache may not yet)
                image_id = getattr(self.logs.cluster, "topic_id", None) if self.logs is not None else None
                tid = image_id(lg.topic) if image_id is not None else None
                if tid is None:
                    tid = uuid.UUID({v: k for k, v in controller.names_by_id().items()}[lg.topic])
                tp = TopicIdPartition(tid, lg.topic, lg.partition)
                tps[key] = tp
            return tp

        node_id = int(self.cfg.get("node.id", "1"))
        roles_lock = threading.Lock()

        def tiered_role(lg: Any) -> None:
            """Register the tiered log with the RLM as this node's role in it: leader (copies,
            expires, serves remote reads), follower (follows the highest offset in remote
            storage) or none (moved off this node: stopped, its remote data kept); a partition
            the image no longer has is left to drop_topic."""
            assert self.logs is not None
            with roles_lock:  # the image read and the registration as one step (the fold thread and log opens race)
                ps = self.logs.cluster.partition_state(lg.topic, lg.partition)
                if ps is not None and lg.config.remote_storage_enable:
                    rlm.assign_role(tp_of(lg), lg, ps.role(node_id))

        def on_open(lg: Any) -> None:
            try:
                tiered_role(lg)
            except Exception:  # noqa: BLE001 - the log opens; the next image change registers it
                log.exception("registering %s-%d with the remote log manager", lg.topic, lg.partition)

        def roles_changed(keys: Any) -> None:
            assert self.logs is not None
            for topic, partition in keys:
                lg = self.logs.get(topic, partition)
                ps = self.logs.cluster.partition_state(topic, partition)
                if lg is None and ps is not None and ps.role(node_id) == "leader" and self.logs.config_of(topic).remote_storage_enable:
                    lg = self.logs.open(topic, partition)  # a leader copies whether or not clients came yet (opening registers it)
                elif lg is not None:
                    tiered_role(lg)

        def rebuild_from_remote(key: Any, local_start: int, leader_log_start: int) -> bool:
            """OFFSET_MOVED_TO_TIERED_STORAGE from the leader: rebuild this follower's log start
            from the remote tier (RemoteLogManager.build_remote_log_aux_state)."""
            assert self.logs is not None
            if leader_log_start < 0 or local_start < leader_log_start:
                return False  # not an answer to rebuild from: fetch again
            lg = self.logs.open(*key)
            tp = tp_of(lg)
            if rlm.role(tp) is None:
                rlm.assign_role(tp, lg, "follower")
            if not rlm.rlmm.is_ready(tp):
                return False
            try:
                rlm.build_remote_log_aux_state(tp, lg, local_start, leader_log_start, int(time.time() * 1000))
                log.info("%s-%d: rebuilt from the remote tier: local log start %d, log start %d", key[0], key[1], local_start, leader_log_start)
                return True
            except Exception as exc:  # noqa: BLE001 - the fetcher backs off and asks again
                log.warning("rebuilding %s-%d from the remote tier: %s", key[0], key[1], exc)
                return False

        self._tiered_roles_changed = roles_changed
        self._rebuild_from_remote = rebuild_from_remote

        def remote_read(lg: Any, offset: int, max_bytes: int) -> bytes:
            return rlm.read(tp_of(lg), offset, max_bytes).records

        def list_offset(lg: Any, timestamp: int) -> Any:
            if lg.config.remote_storage_enable:
                return rlm.fetch_offset_by_timestamp(tp_of(lg), timestamp)
            return lg.fetch_offset_by_timestamp(timestamp)

        def on_drop(lg: Any, topic_deleted: bool) -> None:
            if lg.config.remote_storage_enable:
                # the remote data goes with the topic, deleted by its leader (a replica moved off
                # this node leaves it to the others)
                tp = tp_of(lg)
                rlm.stop_partitions([tp], delete=topic_deleted and (not clustered or rlm.role(tp) == "leader"))

        assert self.logs is not None
        self.logs.on_open = on_open
        self.logs.on_drop = on_drop
        self.logs.remote_read = remote_read
        self.logs.offset_by_timestamp = list_offset
        self.logs.rlm = rlm  # type: ignore[attr-defined]
        rlm.start()

    def _tick(self) -> None:
        """Background duties of the listener process: flush.ms, retention, tiering ticks, the
        high watermark checkpoint of a cluster node (``replica.high.watermark.checkpoint.interval.ms``),
        returning free heap pages to the OS (``shoal.malloc.trim.interval.ms``) and the SQLite
        event log's WAL checkpoint (``event.log.sqlite.checkpoint.interval.ms``)."""
        interval = float(self.cfg.get("shoal.tick.interval.ms", "1000")) / 1000
        last_status = 0.0
        trimmer = MallocTrimmer(int(self.cfg.get("shoal.malloc.trim.interval.ms", "5000")))  # guard
        checkpoint_s = float(self.cfg.get("event.log.sqlite.checkpoint.interval.ms", "1000")) / 1000
        last_checkpoint = time.monotonic()
        hw_checkpoint_s = float(self.cfg.get("replica.high.watermark.checkpoint.interval.ms", "5000")) / 1000
        last_hw_checkpoint = time.monotonic()
        while not self._stopped.wait(interval):
            now = int(time.time() * 1000)
            trimmer.tick(int(time.monotonic() * 1000))
            if self.logs is not None and self.logs.hw_checkpoints is not None and time.monotonic() - last_hw_checkpoint >= hw_checkpoint_s:
                last_hw_checkpoint = time.monotonic()
                try:  # Kafka's highwatermark-checkpoint task (replica.high.watermark.checkpoint.interval.ms)
                    self.logs.checkpoint_high_watermarks()
                except Exception:
                    log.warning("high watermark checkpoint failed", exc_info=True)
            if checkpoint_s > 0 and time.monotonic() - last_checkpoint >= checkpoint_s:
                last_checkpoint = time.monotonic()
                try:  # the WAL checkpoint no append runs (event.log.sqlite.checkpoint.interval.ms)
                    event_log_for(self.cfg).checkpoint()
                except Exception:
                    log.warning("event log checkpoint failed", exc_info=True)
            if time.monotonic() - last_status >= float(self.cfg.get("shoal.status.interval.ms", "2000")) / 1000:
                last_status = time.monotonic()
                try:
                    self._write_status_file()
                except Exception:  # pragma: no cover
                    log.exception("status file")
            for lg in list((self.logs.logs() if self.logs else {}).values()):
                try:
                    lg.maybe_flush(now)
                except Exception:  # pragma: no cover
                    log.exception("flush tick")

    def _write_status_file(self) -> None:
        assert self.listener is not None
        counts: dict[str, Any] = {}
        if self.backend is not None and self.started_ms and getattr(self, "_status_ready", False):
            counts = self.backend.status()
            if self.gateway is not None:
                counts["actor_asks"] = self.gateway.asks
                counts["actor_ask_ms_mean"] = round(1000 * self.gateway.ask_seconds / max(1, self.gateway.asks), 3)
            counts["requests"] = {API_NAMES.get(k, str(k)): v for k, v in sorted(self.dispatcher.stats.items())}
            counts["request_ms_mean"] = {
                API_NAMES.get(k, str(k)): round(1000 * self.dispatcher.seconds.get(k, 0.0) / v, 3)
                for k, v in sorted(self.dispatcher.stats.items())
            }
        self._status_ready = True
        info = {
            "counts": counts,
            "updated_ms": int(time.time() * 1000),
            "pid": os.getpid(),
            "listener": self._status_listener(),
            "listeners": {lst.name: f"{lst.security_protocol}://{lst.host}:{lst.port}" for lst in self.listeners},
            "admin_port": int(self.cfg["shoal.actor.system.admin.port"]),
            "event_log": self.cfg["event.log.url"],
            "started_ms": self.started_ms,
        }
        tmp = self.data_dir / (STATUS_FILE + ".tmp")
        tmp.write_text(json.dumps(info))
        tmp.replace(self.data_dir / STATUS_FILE)

    def _status_listener(self) -> str:
        """``host:port`` that ``app.py status`` probes with a plain ApiVersions: the first
        PLAINTEXT or SASL_PLAINTEXT listener (ApiVersions is allowed before SASL authentication),
        else the first listener."""
        probe = next((lst for lst in self.listeners if lst.security_protocol in ("PLAINTEXT", "SASL_PLAINTEXT")), self.listener)
        assert probe is not None
        host = probe.host if probe.host not in ("", "0.0.0.0") else "127.0.0.1"
        return f"{host}:{probe.port}"

    def request_stop(self) -> None:
        """Ask :meth:`wait` to return (safe from a signal handler)."""
        self._stop_requested.set()

    def wait(self) -> None:
        """Block until :meth:`request_stop` (SIGTERM/SIGINT) or :meth:`stop`."""
        while not (self._stop_requested.is_set() or self._stopped.is_set()):
            self._stop_requested.wait(0.5)

    def stop(self) -> None:
        """Stop accepting, shut the actor system down and wait until every process of its session
        has exited (up to 20 s after Thespian's own shutdown; stragglers are then SIGKILLed), close
        the logs. Safe to call more than once."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        if self.lifecycle is not None:
            try:
                self.lifecycle.stop(controlled=True)  # fenced first: the partitions it leads move now
            except Exception:  # pragma: no cover
                log.exception("broker lifecycle stop")
        if self.cluster is not None:
            self.cluster.stop()
        for lst in self.listeners:
            try:
                lst.stop()
            except Exception:  # pragma: no cover
                log.exception("listener stop")
        if self.stray_replicas is not None:
            self.stray_replicas.close()
        forwarder = getattr(getattr(self, "dispatcher", None), "forwarder", None)
        if forwarder is not None:
            forwarder.close()
        if self.logs is not None and self.logs.leader_reads is not None:
            self.logs.leader_reads.close()
        if self.fetchers is not None:
            try:
                self.fetchers.close()
            except Exception:  # pragma: no cover
                log.exception("replica fetchers close")
        rlm = getattr(self, "rlm", None)
        if rlm is not None:
            try:
                rlm.close()
            except Exception:  # pragma: no cover
                log.exception("rlm close")
        if self.share_host is not None:
            try:
                self.share_host.close()  # every group saves its snapshot; the journal commits what it holds
            except Exception:  # pragma: no cover
                log.exception("share groups close")
        if self.gateway is not None:
            self.gateway.close()
        if self.asys is not None:
            try:
                self.asys.shutdown()
            except Exception:  # pragma: no cover
                log.exception("actor system shutdown")
            if self.actor_session and not _wait_until(lambda: not session_members(self.actor_session), 20.0):
                _kill_session(self.actor_session, "of this daemon's actor system", read_cmdline(os.getpid()))
            (self.data_dir / ACTOR_SYSTEM_FILE).unlink(missing_ok=True)
        if self.logs is not None:
            self.logs.close()
        (self.data_dir / STATUS_FILE).unlink(missing_ok=True)


def _kill_session(session: int, what: str, cmdline: str | None) -> list[int]:
    """SIGKILL every live process of ``session`` (see :func:`actors.watchdog.liveness.session_members`)
    whose command line is the daemon's ``cmdline`` (Thespian forks every actor from the daemon, so
    they all show it; a process that does not is not provably ours and is left alone; ``None``:
    kill nothing), logging them as ``what``. Returns the pids it signalled."""
    if not cmdline:
        return []
    stragglers = [pid for pid in session_members(session) if read_cmdline(pid) == cmdline]
    if stragglers:
        log.warning("actor processes %s %s did not exit: SIGKILL", stragglers, what)
    for pid in stragglers:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return stragglers


def _wait_until(done: Any, timeout_s: float, interval_s: float = 0.1) -> bool:
    """Poll ``done()`` every ``interval_s`` seconds until it is true (returns True) or
    ``timeout_s`` seconds passed (returns False)."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval_s)
    return True


def _port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    import socket

    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _log_defs(data_dir: Path) -> dict[str, Any]:
    """Thespian logging: actors' records go to ``<data>/shoal.log`` (warnings and above to stderr)."""
    return {
        "version": 1,
        "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
        "handlers": {
            "file": {"class": "logging.FileHandler", "filename": str(data_dir / "shoal.log"), "formatter": "plain", "level": "INFO"},
        },
        "root": {"handlers": ["file"], "level": "INFO"},
    }

