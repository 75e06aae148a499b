"""The cluster's APIs on the wire (issue 15): Kafka's controller RPCs between nodes —
BrokerRegistration (62), BrokerHeartbeat (63), AlterPartition (56), AllocateProducerIds (67) —
and the client-facing DescribeCluster (60), ElectLeaders (43) and partition reassignment
(KIP-455): AlterPartitionReassignments (45) and ListPartitionReassignments (46), which, like
ElectLeaders, are decided by the active controller (clients send them to the ``controller_id``
of Metadata; another node answers NOT_CONTROLLER).

The controller RPCs are answered by this node's ControllerActor: only the active controller
decides them (NOT_CONTROLLER otherwise, which makes the sender look the controller up again).
With an authorizer on they need CLUSTER_ACTION on the cluster (Kafka's ``ControllerApis``), and
DescribeCluster needs DESCRIBE on the cluster only for ``include_cluster_authorized_operations``
(it is answered to every authenticated client, as Kafka does).
"""

from __future__ import annotations

from typing import Any

from kio.static.primitive import i8, i32, i64

from actors.controller.acls import CLUSTER_NAME
from actors.controller.messages import BrokerHeartbeatRequest, BrokerRegistrationRequest
from events.controller import BrokerEndpoint
from wire.authz import allowed
from wire.backend import Backend
from wire.entities import NO_THROTTLE, build, error_code, nested, response_class
from wire.protocol import DecodedRequest

__all__ = ["alter_partition_reassignments", "list_partition_reassignments", "elect_leaders", "allocate_producer_ids", "alter_partition", "broker_heartbeat", "broker_registration", "describe_cluster", "SECURITY_PROTOCOL_NAMES"]

#: Kafka's ``SecurityProtocol`` id → name
SECURITY_PROTOCOL_NAMES = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


def _cluster_action(authorizer: Any) -> bool:
    return allowed(authorizer, "CLUSTER_ACTION", "CLUSTER", CLUSTER_NAME)


def broker_registration(req: DecodedRequest, backend: Backend, authorizer: Any = None) -> Any:
    """BrokerRegistration (v0–4) → the controller's decision (``cl.RegisterBroker``): the broker
    epoch, or DUPLICATE_BROKER_REGISTRATION / INCONSISTENT_CLUSTER_ID / NOT_CONTROLLER."""
    cls = response_class(62, req.api_version)
    if not _cluster_action(authorizer):
        return build(cls, throttle_time=NO_THROTTLE, error_code=error_code("CLUSTER_AUTHORIZATION_FAILED"), broker_epoch=i64(-1))
    b = req.body
    endpoints = tuple(BrokerEndpoint(l.name, l.host, int(l.port), SECURITY_PROTOCOL_NAMES.get(int(l.security_protocol), "PLAINTEXT")) for l in b.listeners)
    r = backend.register_broker(BrokerRegistrationRequest(int(b.broker_id), str(b.incarnation_id), b.cluster_id, endpoints, b.rack))
    return build(cls, throttle_time=NO_THROTTLE, error_code=error_code(r.error), broker_epoch=i64(r.broker_epoch))


def broker_heartbeat(req: DecodedRequest, backend: Backend, authorizer: Any = None) -> Any:
    """BrokerHeartbeat (v0–2) → ``is_fenced`` after the controller decided it; ``want_shut_down``
    is treated as ``want_fence`` (the partitions move at once) and answered
    ``should_shut_down`` once fenced."""
    cls = response_class(63, req.api_version)
    if not _cluster_action(authorizer):
        return build(cls, throttle_time=NO_THROTTLE, error_code=error_code("CLUSTER_AUTHORIZATION_FAILED"), is_caught_up=False, is_fenced=True, should_shut_down=False)
    b = req.body
    want_fence = bool(b.want_fence) or bool(b.want_shut_down)
    r = backend.broker_heartbeat(BrokerHeartbeatRequest(int(b.broker_id), int(b.broker_epoch), want_fence))
    return build(
        cls,
        throttle_time=NO_THROTTLE,
        error_code=error_code(r.error),
        is_caught_up=r.error is None,
        is_fenced=r.is_fenced,
        should_shut_down=bool(b.want_shut_down) and r.is_fenced and r.error is None,
    )


def alter_partition(req: DecodedRequest, backend: Backend, authorizer: Any = None) -> Any:
    """AlterPartition (v2–3, topic ids) from a partition leader → per partition the controller's
    result: the committed leader, epochs and ISR, or FENCED_LEADER_EPOCH /
    INVALID_UPDATE_VERSION / INELIGIBLE_REPLICA / UNKNOWN_TOPIC_ID / NOT_CONTROLLER."""
    cls = response_class(56, req.api_version)
    b = req.body
    if not _cluster_action(authorizer):
        return build(cls, throttle_time=NO_THROTTLE, error_code=error_code("CLUSTER_AUTHORIZATION_FAILED"), topics=())
    names = {t.topic_id: t.name for t in backend.topics()}
    topics = []
    for t in b.topics:
        name = names.get(t.topic_id)
        parts = []
        for p in t.partitions:
            if name is None:
                parts.append(nested(cls, "PartitionData", partition_index=p.partition_index, error_code=error_code("UNKNOWN_TOPIC_ID"), leader_id=i32(-1), leader_epoch=i32(-1), isr=(), partition_epoch=i32(-1)))
                continue
            if req.api_version >= 3:
                isr = tuple(int(s.broker_id) for s in p.new_isr_with_epochs)
            else:
                isr = tuple(int(x) for x in getattr(p, "new_isr", ()))
            r = backend.alter_partition(name, int(p.partition_index), int(b.broker_id), int(p.leader_epoch), int(p.partition_epoch), isr)
            parts.append(
                nested(
                    cls,
                    "PartitionData",
                    partition_index=p.partition_index,
                    error_code=error_code(None if r.error == "NONE" else r.error),
                    leader_id=i32(r.leader),
                    leader_epoch=i32(r.leader_epoch),
                    isr=tuple(i32(x) for x in (r.isr if r.error == "NONE" else ())),
                    partition_epoch=i32(r.partition_epoch if r.error == "NONE" else -1),
                )
            )
        topics.append(nested(cls, "TopicData", topic_id=t.topic_id, partitions=tuple(parts)))
    return build(cls, throttle_time=NO_THROTTLE, error_code=error_code(None), topics=tuple(topics))


def allocate_producer_ids(req: DecodedRequest, backend: Backend, authorizer: Any = None) -> Any:
    """AllocateProducerIds (v0) from another node's InitProducerId → a block of ids from the
    active controller (NOT_CONTROLLER elsewhere)."""
    cls = response_class(67, req.api_version)
    if not _cluster_action(authorizer):
        return build(cls, throttle_time=NO_THROTTLE, error_code=error_code("CLUSTER_AUTHORIZATION_FAILED"), producer_id_start=i64(-1), producer_id_len=i32(0))
    err, first, size = backend.allocate_producer_ids_for(int(req.body.broker_id))
    return build(cls, throttle_time=NO_THROTTLE, error_code=error_code(err), producer_id_start=i64(first), producer_id_len=i32(size))


def describe_cluster(req: DecodedRequest, backend: Backend, listener: str | None = None, authorizer: Any = None) -> Any:
    """DescribeCluster (v0–1): the cluster id, the active controller and every live broker on
    the listener the request arrived on (Kafka's ``KafkaApis.handleDescribeCluster``; v1
    ``endpoint_type`` 1 = brokers, 2 = controllers is UNSUPPORTED_VERSION here as on a broker)."""
    cls = response_class(60, req.api_version)
    b = req.body
    endpoint_type = int(getattr(b, "endpoint_type", 1))
    if endpoint_type != 1:
        return build(cls, throttle_time=NO_THROTTLE, error_code=error_code("UNSUPPORTED_ENDPOINT_TYPE"), error_message="The broker only handles endpoint type BROKERS", endpoint_type=i8(endpoint_type), cluster_id=backend.cluster_id, controller_id=i32(-1), brokers=())
    brokers = tuple(nested(cls, "DescribeClusterBroker", broker_id=i32(n), host=h, port=i32(p), rack=r) for n, h, p, r in backend.metadata_brokers(listener))
    ops = i32(-2147483648)
    return build(
        cls,
        throttle_time=NO_THROTTLE,
        error_code=error_code(None),
        error_message=None,
        endpoint_type=i8(1),
        cluster_id=backend.cluster_id,
        controller_id=i32(backend.controller_id()),
        brokers=brokers,
        cluster_authorized_operations=ops,
    )


#: ElectLeaders' ``election_type`` (KIP-460): 0 preferred, 1 unclean
ELECTION_TYPES = {0: "preferred", 1: "unclean"}


def elect_leaders(req: DecodedRequest, backend: Backend, authorizer: Any = None) -> Any:
    """ElectLeaders (v0–2, KIP-183/KIP-460) → the active controller elects (preferred: the first
    replica if it is alive and in the ISR; unclean: any live replica when no ISR member is).
    Per partition ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
    ELIGIBLE_LEADERS_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION; with ``topic_partitions`` null
    every partition is considered and only those whose leader changed are listed (KIP-460).
    Needs ALTER on the cluster (``KafkaApis.handleElectLeaders``), else every partition answers
    CLUSTER_AUTHORIZATION_FAILED; another node than the active controller answers NOT_CONTROLLER."""
    cls = response_class(43, req.api_version)
    b = req.body
    election = ELECTION_TYPES.get(int(getattr(b, "election_type", 0)))
    wanted = None if b.topic_partitions is None else [(t.topic, int(p)) for t in b.topic_partitions for p in t.partitions]
    if election is None:
        results = [(t, p, "INVALID_REQUEST", "unknown election type") for t, p in wanted or ()]
        top = None
    elif not allowed(authorizer, "ALTER", "CLUSTER", CLUSTER_NAME):
        results = [(t, p, "CLUSTER_AUTHORIZATION_FAILED", None) for t, p in wanted or ()]
        top = "CLUSTER_AUTHORIZATION_FAILED"
    else:
        top, results = backend.elect_leaders(wanted, election)
        if wanted is None:
            results = [r for r in results if r[2] == "NONE"]
    by_topic: dict[str, list[Any]] = {}
    for topic, partition, err, msg in results:
        by_topic.setdefault(topic, []).append(
            nested(cls, "PartitionResult", partition_id=i32(partition), error_code=error_code(None if err == "NONE" else err), error_message=msg)
        )
    return build(
        cls,
        throttle_time=NO_THROTTLE,
        error_code=error_code(top),
        replica_election_results=tuple(nested(cls, "ReplicaElectionResult", topic=t, partition_result=tuple(ps)) for t, ps in by_topic.items()),
    )


def alter_partition_reassignments(req: DecodedRequest, backend: Backend, authorizer: Any = None) -> Any:
    """AlterPartitionReassignments (v0, KIP-455; Kafka's ``ControllerApis
    .handleAlterPartitionReassignments`` → ``ReplicationControlManager
    .alterPartitionReassignments``): per partition, a target replica list starts (or replaces) a
    reassignment and null replicas cancel it; errors per partition (UNKNOWN_TOPIC_OR_PARTITION,
    INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS). Needs ALTER on the cluster; a
    refusal of the whole request (CLUSTER_AUTHORIZATION_FAILED, NOT_CONTROLLER on a node that
    is not the active controller, a timeout) is the top-level error repeated for every partition,
    as ``AlterPartitionReassignmentsRequest.getErrorResponse`` builds it."""
    cls = response_class(45, req.api_version)
    wanted = [
        (t.name, int(p.partition_index), None if p.replicas is None else tuple(int(r) for r in p.replicas))
        for t in req.body.topics
        for p in t.partitions
    ]
    if not allowed(authorizer, "ALTER", "CLUSTER", CLUSTER_NAME):
        top: str | None = "CLUSTER_AUTHORIZATION_FAILED"
        top_msg: str | None = "Cluster authorization failed."
        results = [(t, p, top, top_msg) for t, p, _r in wanted]
    else:
        top, results = backend.alter_partition_reassignments(wanted)
        top_msg = None
        if top is not None:
            top_msg = f"The request was not decided: {top}"
            results = [(t, p, top, top_msg) for t, p, _r in wanted]
    by_topic: dict[str, list[Any]] = {}
    for topic, partition, err, msg in results:
        by_topic.setdefault(topic, []).append(
            nested(cls, "ReassignablePartitionResponse", partition_index=i32(partition), error_code=error_code(None if err == "NONE" else err), error_message=msg)
        )
    return build(
        cls,
        throttle_time=NO_THROTTLE,
        error_code=error_code(top),
        error_message=top_msg,
        responses=tuple(nested(cls, "ReassignableTopicResponse", name=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
    )


def list_partition_reassignments(req: DecodedRequest, backend: Backend, authorizer: Any = None) -> Any:
    """ListPartitionReassignments (v0, KIP-455; ``ControllerApis.handleListPartitionReassignments``
    → ``ReplicationControlManager.listPartitionReassignments``): every reassigning partition when
    ``topics`` is null, else the named partitions that are reassigning (unknown ones are left
    out), each with its replicas, adding and removing replicas. Needs DESCRIBE on the cluster
    (else the top-level CLUSTER_AUTHORIZATION_FAILED); NOT_CONTROLLER from a node that is not the
    active controller."""
    cls = response_class(46, req.api_version)
    b = req.body
    if not allowed(authorizer, "DESCRIBE", "CLUSTER", CLUSTER_NAME):
        return build(cls, throttle_time=NO_THROTTLE, error_code=error_code("CLUSTER_AUTHORIZATION_FAILED"), error_message="Cluster authorization failed.", topics=())
    wanted = None if b.topics is None else [(t.name, int(p)) for t in b.topics for p in t.partition_indexes]
    top, found = backend.list_partition_reassignments(wanted)
    by_topic: dict[str, list[Any]] = {}
    for topic, partition, replicas, adding, removing in found:
        by_topic.setdefault(topic, []).append(
            nested(
                cls,
                "OngoingPartitionReassignment",
                partition_index=i32(partition),
                replicas=tuple(i32(r) for r in replicas),
                adding_replicas=tuple(i32(r) for r in adding),
                removing_replicas=tuple(i32(r) for r in removing),
            )
        )
    return build(
        cls,
        throttle_time=NO_THROTTLE,
        error_code=error_code(top),
        error_message=None if top is None else f"The request was not answered: {top}",
        topics=tuple(nested(cls, "OngoingTopicReassignment", name=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
    )
