"""The API table and the dispatcher: api key → handler, and what ApiVersions advertises.

Only what is implemented is advertised (``SUPPORTED``). The version ranges were chosen against
kio 0.6.5's schemas and what librdkafka 2.16 (confluent-kafka 2.16.1) sends (observed:
ApiVersions 3, Metadata 12, CreateTopics 4, DeleteTopics 4, DescribeConfigs 1,
IncrementalAlterConfigs 1, Produce 9, Fetch 12, ListOffsets 7, FindCoordinator 2, ListGroups 5,
ShareGroupHeartbeat 1, ShareFetch 1, ShareAcknowledge 1, DeleteRecords 2, CreatePartitions 2,
DescribeGroups 5, DeleteGroups 2; ``describe_consumer_groups`` asks ConsumerGroupDescribe 69 first
only when it is advertised). A request for any other key or version
is answered UNSUPPORTED_VERSION (35): ApiVersions as v0 with the table (KIP-511); anything else
with the response header and the int16 error code (no API-specific body can be built for a
version we have no schema for), and the connection stays open since the frame was well
delimited.
"""

from __future__ import annotations

import logging
import struct
import time
from typing import Any, Callable

from wire import acls, admin, authz, cluster_api, consumer_protocol, group_admin, groups, records, sasl, scram, share
from wire.backend import Backend
from wire.protocol import DecodedRequest, UnsupportedRequest, encode_response, preload
from wire.server import Connection, Dispatcher

__all__ = ["CLUSTER_APIS", "SUPPORTED", "KafkaDispatcher", "API_NAMES"]

log = logging.getLogger("shoal.wire")

#: api key → (min, max) version advertised in ApiVersions.
SUPPORTED: dict[int, tuple[int, int]] = {
    0: (3, 9),  # Produce (v3+: RecordBatch v2 only)
    1: (4, 12),  # Fetch (topic names; v13+ would need topic ids)
    2: (1, 9),  # ListOffsets (v8 earliest-local -4, v9 latest-tiered -5)
    3: (1, 12),  # Metadata (v10+ carries topic ids)
    10: (0, 6),  # FindCoordinator (v6: share key type)
    16: (0, 5),  # ListGroups (v5: type filter)
    18: (0, 4),  # ApiVersions
    19: (2, 7),  # CreateTopics
    20: (1, 6),  # DeleteTopics
    21: (0, 2),  # DeleteRecords (Kafka 4 serves v0-2; librdkafka 2.16 sends v2)
    37: (0, 3),  # CreatePartitions (Kafka 4 serves v0-3; librdkafka 2.16 sends v2)
    22: (0, 5),  # InitProducerId (idempotent producers; no transactions)
    23: (2, 4),  # OffsetForLeaderEpoch (KIP-101/279/320: follower truncation, consumer validation)
    32: (1, 4),  # DescribeConfigs
    44: (0, 1),  # IncrementalAlterConfigs
    50: (0, 0),  # DescribeUserScramCredentials (KIP-554)
    51: (0, 0),  # AlterUserScramCredentials (KIP-554)
    76: (1, 1),  # ShareGroupHeartbeat
    77: (1, 1),  # ShareGroupDescribe
    78: (1, 2),  # ShareFetch (v2: ShareAcquireMode, KIP-1206; IsRenewAck, KIP-1222)
    79: (1, 2),  # ShareAcknowledge (v2: IsRenewAck, AcquisitionLockTimeoutMs, KIP-1222)
    90: (0, 0),  # DescribeShareGroupOffsets
    # -- transport: SASL (answered by wire.sasl.SaslServerSession on SASL listeners while
    #    authenticating; what reaches the dispatcher gets ILLEGAL_SASL_STATE as in KafkaApis)
    17: (0, 1),  # SaslHandshake (v1: KIP-152 SaslAuthenticate framing)
    36: (0, 2),  # SaslAuthenticate (v1: session_lifetime_ms, KIP-368)
    # ACLs (acls): Kafka 4 serves v1-3 (KIP-896 removed v0)
    29: (1, 3),  # DescribeAcls
    30: (1, 3),  # CreateAcls
    31: (1, 3),  # DeleteAcls
    # classic consumer groups and committed offsets (issue 16): Kafka 4's ranges, which cover
    # what librdkafka 2.16 sends
    8: (2, 9),  # OffsetCommit
    9: (1, 9),  # OffsetFetch (v8+: several groups)
    11: (2, 9),  # JoinGroup (v4+: KIP-394 MEMBER_ID_REQUIRED)
    12: (0, 4),  # Heartbeat
    13: (0, 5),  # LeaveGroup (v3+: batch)
    14: (0, 5),  # SyncGroup
    # group admin (wire.group_admin): Kafka 4's ranges
    15: (0, 6),  # DescribeGroups (v3+: authorized operations; v6: GROUP_ID_NOT_FOUND for missing groups)
    42: (0, 2),  # DeleteGroups (classic and share groups)
    47: (0, 0),  # OffsetDelete
    91: (0, 0),  # AlterShareGroupOffsets
    92: (0, 0),  # DeleteShareGroupOffsets
    # KIP-848 consumer groups (wire/consumer_protocol.py): v1 of the heartbeat is KIP-1082
    # (client-generated member ids, what librdkafka 2.16 sends); regex subscriptions refused
    68: (0, 1),  # ConsumerGroupHeartbeat
    69: (0, 1),  # ConsumerGroupDescribe (v1: member type)
    60: (0, 1),  # DescribeCluster (wire/cluster_api.py)
    43: (0, 2),  # ElectLeaders (KIP-460 election types)
    45: (0, 0),  # AlterPartitionReassignments (KIP-455; v1 adds allow_replication_factor_change)
    46: (0, 0),  # ListPartitionReassignments (KIP-455)
}

#: Kafka's controller RPCs between the nodes of a cluster (wire/cluster_api.py), served only by
#: a node of a cluster (``config.cluster_enabled``): a single node has no peers to take them from.
CLUSTER_APIS: dict[int, tuple[int, int]] = {
    56: (2, 3),  # AlterPartition (topic ids)
    62: (0, 4),  # BrokerRegistration
    63: (0, 2),  # BrokerHeartbeat
    67: (0, 0),  # AllocateProducerIds
    58: (0, 0),  # Envelope: share requests forwarded to the group's coordinator (wire/forwarding.py)
}

API_NAMES = {
    0: "Produce",
    56: "AlterPartition",
    60: "DescribeCluster",
    43: "ElectLeaders",
    45: "AlterPartitionReassignments",
    46: "ListPartitionReassignments",
    62: "BrokerRegistration",
    63: "BrokerHeartbeat",
    67: "AllocateProducerIds",
    58: "Envelope",
    1: "Fetch",
    2: "ListOffsets",
    3: "Metadata",
    10: "FindCoordinator",
    16: "ListGroups",
    18: "ApiVersions",
    19: "CreateTopics",
    20: "DeleteTopics",
    21: "DeleteRecords",
    37: "CreatePartitions",
    22: "InitProducerId",
    23: "OffsetForLeaderEpoch",
    32: "DescribeConfigs",
    44: "IncrementalAlterConfigs",
    50: "DescribeUserScramCredentials",
    51: "AlterUserScramCredentials",
    76: "ShareGroupHeartbeat",
    77: "ShareGroupDescribe",
    78: "ShareFetch",
    79: "ShareAcknowledge",
    90: "DescribeShareGroupOffsets",
    # -- transport
    17: "SaslHandshake",
    36: "SaslAuthenticate",
    29: "DescribeAcls",
    30: "CreateAcls",
    31: "DeleteAcls",
    8: "OffsetCommit",
    9: "OffsetFetch",
    11: "JoinGroup",
    12: "Heartbeat",
    13: "LeaveGroup",
    14: "SyncGroup",
    15: "DescribeGroups",
    42: "DeleteGroups",
    47: "OffsetDelete",
    91: "AlterShareGroupOffsets",
    92: "DeleteShareGroupOffsets",
    68: "ConsumerGroupHeartbeat",
    69: "ConsumerGroupDescribe",
}


def _peer_host(conn: Any) -> str:
    """The client's host (``conn.peer[0]``), "" when unknown (JoinGroup's member client host)."""
    peer = getattr(conn, "peer", None)
    return str(peer[0]) if peer else ""


class KafkaDispatcher(Dispatcher):
    """Routes decoded requests to the handler modules with a :class:`Backend`.

    ``auto_create_topics``: Kafka's ``auto.create.topics.enable`` (Metadata may create topics).
    ``authorizer``: a :class:`wire.authz.Authorizer` (``authorizer.class.name`` set) or ``None``;
    when set, the dispatcher wraps ``backend`` (the plain one) in a
    :class:`wire.authz.AuthorizingBackend` over it — the one place the wrapping happens, so the
    handlers can never get an unchecked backend with the authorizer on — and binds each request's
    connection for its checks (:func:`wire.authz.bind`). Raises ``TypeError`` if ``backend`` is
    already an ``AuthorizingBackend``.
    Construction preloads the codecs of every ``supported`` version (:func:`wire.protocol.preload`).
    ``stats`` counts requests per api key and ``seconds`` sums their handling time (s, long polls
    included) per api key (both read by ``status``)."""

    def __init__(self, backend: Backend, auto_create_topics: bool = True, supported: dict[int, tuple[int, int]] | None = None, authorizer: "authz.Authorizer | None" = None) -> None:
        if authorizer is not None:
            if isinstance(backend, authz.AuthorizingBackend):
                raise TypeError("pass the plain backend: KafkaDispatcher wraps it in the AuthorizingBackend itself")
            backend = authz.AuthorizingBackend(backend, authorizer)
        self.backend = backend
        self.authorizer = authorizer
        self.auto_create_topics = auto_create_topics
        self.supported = dict(SUPPORTED if supported is None else supported)
        # guard: build every advertised version's frame guard, kio readers and response class now,
        # so no request imports a schema module lazily (thread-safe start-up; issue 13).
        preload(self.supported)
        self.stats: dict[int, int] = {}
        self.seconds: dict[int, float] = {}
        self._handlers: dict[int, Callable[[DecodedRequest, Connection], Any]] = {
            0: lambda r, c: records.produce(r, backend, defer=getattr(c, "pipelined", False)),
            1: lambda r, c: records.fetch(r, backend),
            2: lambda r, c: records.list_offsets(r, backend),
            3: lambda r, c: admin.metadata(r, backend, self.auto_create_topics, getattr(c, "listener", None), self.authorizer),
            10: lambda r, c: admin.find_coordinator(r, backend, getattr(c, "listener", None), self.authorizer),
            16: lambda r, c: admin.list_groups(r, backend),
            18: lambda r, c: admin.api_versions(r, self.supported),
            19: lambda r, c: admin.create_topics(r, backend),
            20: lambda r, c: admin.delete_topics(r, backend),
            21: lambda r, c: admin.delete_records(r, backend),
            37: lambda r, c: admin.create_partitions(r, backend),
            22: lambda r, c: records.init_producer_id(r, backend),
            23: lambda r, c: records.offset_for_leader_epoch(r, backend),
            32: lambda r, c: admin.describe_configs(r, backend),
            44: lambda r, c: admin.incremental_alter_configs(r, backend),
            50: lambda r, c: scram.describe_user_scram_credentials(r, backend),
            51: lambda r, c: scram.alter_user_scram_credentials(r, backend),
            76: lambda r, c: share.heartbeat(r, backend),
            77: lambda r, c: share.describe(r, backend),
            78: lambda r, c: share.share_fetch(r, backend, c),
            79: lambda r, c: share.share_acknowledge(r, backend, c),
            90: lambda r, c: share.describe_offsets(r, backend),
            # -- transport
            17: lambda r, c: sasl.handshake_after_authentication(r),
            36: lambda r, c: sasl.authenticate_after_authentication(r),
            # ACLs (acls)
            29: lambda r, c: acls.describe_acls(r, self.authorizer),
            30: lambda r, c: acls.create_acls(r, self.authorizer),
            31: lambda r, c: acls.delete_acls(r, self.authorizer),
            # classic consumer groups (issue 16)
            8: lambda r, c: groups.offset_commit(r, backend),
            9: lambda r, c: groups.offset_fetch(r, backend),
            11: lambda r, c: groups.join_group(r, backend, _peer_host(c)),
            12: lambda r, c: groups.heartbeat(r, backend),
            13: lambda r, c: groups.leave_group(r, backend),
            14: lambda r, c: groups.sync_group(r, backend),
            # group admin
            15: lambda r, c: group_admin.describe_groups(r, backend, self.authorizer),
            42: lambda r, c: group_admin.delete_groups(r, backend),
            47: lambda r, c: group_admin.offset_delete(r, backend),
            91: lambda r, c: group_admin.alter_share_group_offsets(r, backend),
            92: lambda r, c: group_admin.delete_share_group_offsets(r, backend),
            # KIP-848 consumer groups
            68: lambda r, c: consumer_protocol.consumer_group_heartbeat(r, backend, _peer_host(c)),
            69: lambda r, c: consumer_protocol.consumer_group_describe(r, backend, self.authorizer),
            # the cluster (issue 15)
            60: lambda r, c: cluster_api.describe_cluster(r, backend, getattr(c, "listener", None), self.authorizer),
            56: lambda r, c: cluster_api.alter_partition(r, backend, self.authorizer),
            43: lambda r, c: cluster_api.elect_leaders(r, backend, self.authorizer),
            45: lambda r, c: cluster_api.alter_partition_reassignments(r, backend, self.authorizer),
            46: lambda r, c: cluster_api.list_partition_reassignments(r, backend, self.authorizer),
            62: lambda r, c: cluster_api.broker_registration(r, backend, self.authorizer),
            63: lambda r, c: cluster_api.broker_heartbeat(r, backend, self.authorizer),
            67: lambda r, c: cluster_api.allocate_producer_ids(r, backend, self.authorizer),
        }

    def handle(self, request: DecodedRequest, conn: Connection) -> Any:
        """Run the handler for ``request``; returns a kio response, ``None`` (no response) or,
        on a ``conn`` with ``pipelined`` set, a :class:`wire.protocol.Deferred` (an acks=-1
        Produce waiting for replication)."""
        key = request.api_key
        self.stats[key] = self.stats.get(key, 0) + 1
        t0 = time.perf_counter()
        if self.authorizer is not None:
            authz.bind(conn)
        try:
            return self._handlers[key](request, conn)
        finally:
            self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - t0

    def unsupported(self, exc: UnsupportedRequest) -> bytes | None:
        """ApiVersions of an unknown version → v0 UNSUPPORTED_VERSION with the table (the client
        retries with v0). Anything else → a header plus int16 error 35, then the listener keeps
        the connection (the frame was well delimited)."""
        log.info("unsupported request api_key=%d v%d", exc.api_key, exc.api_version)
        if exc.api_key == 18:
            return encode_response(exc.correlation_id, admin.api_versions_fallback(self.supported), api_key=18)
        body = struct.pack(">ih", exc.correlation_id, 35)
        return struct.pack(">i", len(body)) + body

    def connection_closed(self, conn: Connection) -> None:
        """Nothing to release per connection (share sessions belong to members, not sockets)."""
