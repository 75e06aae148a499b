"""Handlers for the cluster and admin APIs: ApiVersions (18), Metadata (3), FindCoordinator (10),
CreateTopics (19), DeleteTopics (20), DescribeConfigs (32), IncrementalAlterConfigs (44),
ListGroups (16).

Each handler takes ``(request, backend)`` — a :class:`wire.protocol.DecodedRequest` and a
:class:`wire.backend.Backend` — and returns the kio response entity for the request's version.
Semantics from Kafka's ``KafkaApis`` (``handleApiVersionsRequest``, ``handleTopicMetadataRequest``,
``handleFindCoordinatorRequest``, ``handleCreateTopicsRequest`` …) for a single-node cluster:
this node is the leader of every partition and the coordinator of every group.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i16, i32, i64

from actors.controller.acls import CLUSTER_NAME
from wire.authz import Authorizer, allowed
from wire.backend import Backend, TopicSpec
from wire.cluster_view import NO_LEADER, PartitionState
from wire.entities import NO_THROTTLE, build, error_code, nested, response_class
from wire.protocol import DecodedRequest

__all__ = [
    "api_versions",
    "create_partitions",
    "delete_records",
    "create_topics",
    "delete_topics",
    "describe_configs",
    "find_coordinator",
    "incremental_alter_configs",
    "list_groups",
    "metadata",
    "metadata_error",
    "topic_metadata",
]

#: FindCoordinator key types (``FindCoordinatorRequest.CoordinatorType``): 0 GROUP, 1 TRANSACTION, 2 SHARE.
COORDINATOR_GROUP = 0
COORDINATOR_TRANSACTION = 1
COORDINATOR_SHARE = 2


def api_versions(req: DecodedRequest, supported: dict[int, tuple[int, int]], error: ErrorCode = ErrorCode.none) -> Any:
    """ApiVersions: the advertised ``supported`` table (api key → (min, max)). KIP-511: a request
    with an unknown version is answered as v0 with UNSUPPORTED_VERSION (see :func:`api_versions_fallback`)."""
    cls = response_class(18, req.api_version)
    keys = tuple(nested(cls, "ApiVersion", api_key=i16(k), min_version=i16(lo), max_version=i16(hi)) for k, (lo, hi) in sorted(supported.items()))
    return build(cls, error_code=error, api_keys=keys, throttle_time=NO_THROTTLE)


def api_versions_fallback(supported: dict[int, tuple[int, int]]) -> Any:
    """ApiVersions v0 response with UNSUPPORTED_VERSION and the supported table (Kafka answers an
    ApiVersions request of an unknown version this way so the client can downgrade)."""
    cls = response_class(18, 0)
    keys = tuple(nested(cls, "ApiVersion", api_key=i16(k), min_version=i16(lo), max_version=i16(hi)) for k, (lo, hi) in sorted(supported.items()))
    return build(cls, error_code=ErrorCode.unsupported_version, api_keys=keys, throttle_time=NO_THROTTLE)


def topic_metadata(cls: type, backend: Backend, info: Any) -> Any:
    """A ``MetadataResponseTopic`` for ``info`` (a :class:`TopicInfo`): each partition's leader,
    leader epoch, replicas, ISR and offline replicas (replicas not among the live brokers) from
    the broker's metadata image (``backend.cluster``; on a single node: this node leads, epoch 0).
    A partition without a leader is LEADER_NOT_AVAILABLE (``KafkaApis``/``MetadataCache``)."""
    view = backend.cluster
    live = set(view.live_brokers())
    parts = []
    for p in range(info.partitions):
        st = view.partition_state(info.name, p)
        if st is None:
            st = PartitionState((backend.node_id,), (backend.node_id,), backend.node_id, 0, 0)
        parts.append(
            nested(
                cls,
                "MetadataResponsePartition",
                error_code=ErrorCode.none if st.leader != NO_LEADER else ErrorCode.leader_not_available,
                partition_index=i32(p),
                leader_id=i32(st.leader),
                leader_epoch=i32(st.leader_epoch),
                replica_nodes=tuple(i32(r) for r in st.replicas),
                isr_nodes=tuple(i32(r) for r in st.isr),
                offline_replicas=tuple(i32(r) for r in st.replicas if r not in live),
            )
        )
    return nested(cls, "MetadataResponseTopic", error_code=ErrorCode.none, name=info.name, topic_id=info.topic_id, is_internal=info.internal, partitions=tuple(parts))


def metadata(req: DecodedRequest, backend: Backend, auto_create: bool, listener: str | None = None, authorizer: Authorizer | None = None) -> Any:
    """Metadata: this broker, and the requested topics (all when ``topics`` is null). Unknown
    names give UNKNOWN_TOPIC_OR_PARTITION unless ``allow_auto_topic_creation`` and the broker's
    ``auto.create.topics.enable`` (then the topic is created with broker defaults). The broker's
    endpoint is the advertised one of ``listener``, the listener the request arrived on.
    ``authorizer`` (the dispatcher's, ``None`` = off): a named topic needs DESCRIBE, else
    TOPIC_AUTHORIZATION_FAILED (``KafkaApis.handleTopicMetadataRequest``)."""
    cls = response_class(3, req.api_version)
    body = req.body
    if body.topics is not None and req.api_version < 12:
        for t in body.topics:
            # KafkaApis.handleTopicMetadataRequest: null names and topic ids only from v12.
            if t.name is None or getattr(t, "topic_id", None) is not None:
                what = "Topic name can not be null" if t.name is None else "Topic IDs are not supported in requests"
                return metadata_error(req, ErrorCode.invalid_request, f"{what} for version {req.api_version}")
    brokers = tuple(nested(cls, "MetadataResponseBroker", node_id=i32(n), host=h, port=i32(p), rack=r) for n, h, p, r in backend.metadata_brokers(listener))
    if body.topics is None:
        infos = backend.topics()
        topics = tuple(topic_metadata(cls, backend, t) for t in infos)
    else:
        wanted = [t.name for t in body.topics if t.name]
        by_id = {t.topic_id for t in body.topics if t.name is None and getattr(t, "topic_id", None)}
        known = {t.name: t for t in backend.topics()}
        # ACLs: DESCRIBE on a named topic, else TOPIC_AUTHORIZATION_FAILED (KafkaApis); a topic
        # auto-creation refused for want of CREATE answers the same
        denied = {n for n in wanted if not allowed(authorizer, "DESCRIBE", "TOPIC", n)}
        missing = [n for n in wanted if n not in known and n not in denied]
        if missing and auto_create and getattr(body, "allow_auto_topic_creation", True):
            created = backend.create_topics([TopicSpec(n, -1, -1) for n in missing], False)
            for n, (err, _msg, info) in created.items():
                if info is not None:
                    known[n] = info
                elif err == "TOPIC_AUTHORIZATION_FAILED":
                    denied.add(n)
        out = []
        for n in wanted:
            if n in denied:
                out.append(nested(cls, "MetadataResponseTopic", error_code=ErrorCode.topic_authorization_failed, name=n, topic_id=_ZERO_UUID, partitions=()))
            elif n in known:
                out.append(topic_metadata(cls, backend, known[n]))
            else:
                out.append(nested(cls, "MetadataResponseTopic", error_code=ErrorCode.unknown_topic_or_partition, name=n, topic_id=_ZERO_UUID, partitions=()))
        for tid in by_id:
            info = next((t for t in known.values() if t.topic_id == tid), None)
            if info is None:
                out.append(nested(cls, "MetadataResponseTopic", error_code=ErrorCode.unknown_topic_id, name=None, topic_id=tid, partitions=()))
            else:
                out.append(topic_metadata(cls, backend, info))
        topics = tuple(out)
    return build(
        cls,
        throttle_time=NO_THROTTLE,
        brokers=brokers,
        cluster_id=backend.cluster_id,
        controller_id=i32(backend.controller_id()),
        topics=topics,
        error_code=ErrorCode.none,
        cluster_authorized_operations=i32(-2147483648),
    )


def metadata_error(req: DecodedRequest, error: ErrorCode, reason: str = "") -> Any:
    """The Metadata response Kafka sends when the request as a whole fails
    (``MetadataRequest.getErrorResponse``): no brokers, and each requested topic with ``error``
    (a null name as ``""``). ``reason`` is for logs only (Metadata has no error message)."""
    cls = response_class(3, req.api_version)
    topics = tuple(
        nested(cls, "MetadataResponseTopic", error_code=error, name=t.name or "", topic_id=getattr(t, "topic_id", None) or _ZERO_UUID, is_internal=False, partitions=())
        for t in (req.body.topics or ())
    )
    return build(cls, throttle_time=NO_THROTTLE, brokers=(), cluster_id=None, controller_id=i32(-1), topics=topics, error_code=ErrorCode.none, cluster_authorized_operations=i32(-2147483648))


import uuid as _uuid  # noqa: E402

_ZERO_UUID = _uuid.UUID(int=0)


#: ``Errors.message()`` of the errors FindCoordinator answers from an exception (v0-3 error
#: responses and the whole-request failure carry it)
_COORDINATOR_MESSAGES = {
    ErrorCode.group_authorization_failed: "Group authorization failed.",
    ErrorCode.transactional_id_authorization_failed: "Transactional Id authorization failed.",
    ErrorCode.cluster_authorization_failed: "Cluster authorization failed.",
    ErrorCode.invalid_request: "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.",
}


def find_coordinator(req: DecodedRequest, backend: Backend, listener: str | None = None, authorizer: Authorizer | None = None) -> Any:
    """FindCoordinator (v4+: batched ``coordinator_keys``; v0-3: one ``key``). Group (0) and share
    (2, key ``group:topicId:partition``) keys resolve to this node (its endpoint on ``listener``,
    the listener the request arrived on); transaction keys (1) give COORDINATOR_NOT_AVAILABLE
    (no transactions in Shoal). v0 has no ``key_type``: its key is a group id
    (``FindCoordinatorRequest.json``: keyType is v1+, default 0). A key type Kafka does not know
    gives INVALID_REQUEST (``CoordinatorType.forId`` throws InvalidRequestException).

    ACLs (``authorizer``, the dispatcher's; ``None`` = off), as ``KafkaApis.getCoordinator``, per
    key in this order: a GROUP key needs DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED; a
    TRANSACTION key needs DESCRIBE on the transactional id, else
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED; a SHARE key below v6 is INVALID_REQUEST; a SHARE key
    needs CLUSTER_ACTION on the cluster, else ``authorizeClusterOperation`` throws and the whole
    response is CLUSTER_AUTHORIZATION_FAILED (every key, ``FindCoordinatorRequest.getErrorResponse``).
    Below v4 an error answers with Kafka's message for it (``prepareOldResponse``)."""
    cls = response_class(10, req.api_version)
    body = req.body
    key_type = int(getattr(body, "key_type", COORDINATOR_GROUP))
    ok = key_type in (COORDINATOR_GROUP, COORDINATOR_SHARE)
    if ok:
        err, msg = ErrorCode.none, None
    elif key_type == COORDINATOR_TRANSACTION:
        err, msg = ErrorCode.coordinator_not_available, "transactions are not supported"
    else:
        err, msg = ErrorCode.invalid_request, f"unknown coordinator key type {key_type}"
    keys = tuple(body.coordinator_keys) if req.api_version >= 4 else (body.key,)

    def located(key: str) -> tuple[Any, Any, str, Any, str | None]:
        """``(error, node, host, port, message)`` for one key: its group's coordinator (a SHARE
        key ``group:topicId:partition`` is its group's); COORDINATOR_NOT_AVAILABLE with no live node."""
        if not ok:
            return err, i32(-1), "", i32(-1), msg
        where = backend.coordinator(key.split(":", 1)[0] if key_type == COORDINATOR_SHARE else key, listener)
        if where is None:
            return ErrorCode.coordinator_not_available, i32(-1), "", i32(-1), "no live node"
        return ErrorCode.none, i32(where[0]), where[1], i32(where[2]), None

    denied = {k: e for k in keys if (e := _coordinator_denied(authorizer, key_type, k, req.api_version)) is not None}
    if key_type == COORDINATOR_SHARE and req.api_version >= 6 and not allowed(authorizer, "CLUSTER_ACTION", "CLUSTER", CLUSTER_NAME):
        denied = dict.fromkeys(keys, ErrorCode.cluster_authorization_failed)
    if req.api_version >= 4:
        coords = tuple(
            nested(cls, "Coordinator", key=k, node_id=i32(-1), host="", port=i32(-1), error_code=denied[k], error_message=_whole_request_message(denied[k]))
            if k in denied
            else nested(cls, "Coordinator", key=k, node_id=loc[1], host=loc[2], port=loc[3], error_code=loc[0], error_message=loc[4])
            for k in keys
            for loc in (located(k),)
        )
        return build(cls, throttle_time=NO_THROTTLE, coordinators=coords)
    if keys[0] in denied:
        e = denied[keys[0]]
        return build(cls, throttle_time=NO_THROTTLE, error_code=e, error_message=_COORDINATOR_MESSAGES[e], node_id=i32(-1), host="", port=i32(-1))
    e, node, host, port, m = located(keys[0])
    return build(cls, throttle_time=NO_THROTTLE, error_code=e, error_message=m, node_id=node, host=host, port=port)


def _coordinator_denied(authorizer: Authorizer | None, key_type: int, key: str, version: int) -> ErrorCode | None:
    """The per-key error of ``KafkaApis.getCoordinator`` before a coordinator is looked up (see
    :func:`find_coordinator`), ``None`` when the key may be resolved. The SHARE cluster check is
    the caller's (it fails the whole request)."""
    if key_type == COORDINATOR_GROUP and not allowed(authorizer, "DESCRIBE", "GROUP", key):
        return ErrorCode.group_authorization_failed
    if key_type == COORDINATOR_TRANSACTION and not allowed(authorizer, "DESCRIBE", "TRANSACTIONAL_ID", key):
        return ErrorCode.transactional_id_authorization_failed
    if key_type == COORDINATOR_SHARE and version < 6:
        return ErrorCode.invalid_request
    return None


def _whole_request_message(error: ErrorCode) -> str | None:
    """v4+ per-key errors carry no message, except the whole-request CLUSTER_AUTHORIZATION_FAILED
    (``prepareErrorResponse`` sets ``Errors.message()``)."""
    return _COORDINATOR_MESSAGES[error] if error == ErrorCode.cluster_authorization_failed else None


def create_topics(req: DecodedRequest, backend: Backend) -> Any:
    """CreateTopics: one controller message for the whole request. Manual replica assignments
    are refused (INVALID_REQUEST) — a single node places every partition. From v5 each created
    topic carries its effective configs (:func:`_created_configs`); ``configs`` is never null
    (Kafka sends an empty array for a failed topic and for ``validate_only``, where Shoal has no
    topic to describe; Kafka would list the would-be configs there)."""
    cls = response_class(19, req.api_version)
    body = req.body
    specs: list[TopicSpec] = []
    early: dict[str, tuple[ErrorCode, str]] = {}
    for t in body.topics:
        if t.assignments:
            early[t.name] = (ErrorCode.invalid_request, "manual partition assignment is not supported")
            continue
        specs.append(TopicSpec(t.name, int(t.num_partitions), int(t.replication_factor), {c.name: c.value for c in t.configs if c.value is not None}))
    results = backend.create_topics(specs, bool(body.validate_only)) if specs else {}
    out = []
    for t in body.topics:
        if t.name in early:
            e, m = early[t.name]
            out.append(nested(cls, "CreatableTopicResult", name=t.name, topic_id=_ZERO_UUID, error_code=e, error_message=m, configs=()))
            continue
        err, msg, info = results.get(t.name, ("UNKNOWN_SERVER_ERROR", "no result", None))
        configs, config_err = _created_configs(cls, backend, t.name, req.api_version) if info is not None and not body.validate_only else ((), ErrorCode.none)
        out.append(
            nested(
                cls,
                "CreatableTopicResult",
                name=t.name,
                topic_id=info.topic_id if info else _ZERO_UUID,
                error_code=error_code(err),
                error_message=msg,
                num_partitions=i32(info.partitions if info else -1),
                replication_factor=i16(1 if info else -1),
                configs=configs,
                topic_config_error_code=i16(int(config_err)),
            )
        )
    return build(cls, throttle_time=NO_THROTTLE, topics=tuple(out))


def _created_configs(cls: type, backend: Backend, name: str, version: int) -> tuple[tuple[Any, ...], ErrorCode]:
    """The effective configs of a topic just created, as CreateTopics v5+ returns them
    (``ReplicationControlManager.createTopic``: sorted by name, a sensitive value as null), and
    the ``topic_config_error_code``. When they cannot be described (e.g. no DESCRIBE_CONFIGS on
    the topic: Kafka's TOPIC_AUTHORIZATION_FAILED) the list is empty, never null: Kafka always
    sends an array. Below v5 there are no configs and no backend call."""
    if version < 5:
        return (), ErrorCode.none
    err, _msg, entries = backend.describe_configs(2, name, None)
    if err is not None:
        return (), error_code(err)
    rows = tuple(
        nested(cls, "CreatableTopicConfigs", name=e.name, value=None if e.sensitive else e.value, read_only=e.read_only, config_source=i8(e.source), is_sensitive=e.sensitive)
        for e in sorted(entries, key=lambda e: e.name)
    )
    return rows, ErrorCode.none


def delete_topics(req: DecodedRequest, backend: Backend) -> Any:
    """DeleteTopics by name (v0-5 ``topic_names``, v6 ``topics`` with a name or an id), with the
    request checks of Kafka's ``ControllerApis.deleteTopics``: a name or id given twice is answered
    once with INVALID_REQUEST ("Duplicate topic name." / "Duplicate topic id.") and not deleted; an
    entry with both a name and an id, or neither, is INVALID_REQUEST; a name that maps to an id also
    given is INVALID_REQUEST and that topic is not deleted; an unknown id is UNKNOWN_TOPIC_ID, an
    unknown name UNKNOWN_TOPIC_OR_PARTITION. One result per outcome, not per request entry."""
    cls = response_class(20, req.api_version)
    body = req.body
    out: list[Any] = []

    def result(name: str | None, topic_id: Any, error: str | None, message: str | None = None) -> None:
        out.append(nested(cls, "DeletableTopicResult", name=name, topic_id=topic_id or _ZERO_UUID, error_code=error_code(error), error_message=message))

    names: dict[str, None] = {}  # insertion-ordered sets
    dup_names: dict[str, None] = {}
    ids: dict[Any, None] = {}
    dup_ids: dict[Any, None] = {}

    def add_name(name: str) -> None:
        if name in dup_names or name in names:
            dup_names[name] = None
            names.pop(name, None)
        else:
            names[name] = None

    if req.api_version >= 6:
        for t in body.topics:
            no_id = t.topic_id is None or t.topic_id == _ZERO_UUID
            if t.name is None:
                if no_id:
                    result(None, None, "INVALID_REQUEST", "Neither topic name nor id were specified.")
                elif t.topic_id in dup_ids or t.topic_id in ids:
                    dup_ids[t.topic_id] = None
                    ids.pop(t.topic_id, None)
                else:
                    ids[t.topic_id] = None
            elif no_id:
                add_name(t.name)
            else:
                result(t.name, t.topic_id, "INVALID_REQUEST", "You may not specify both topic name and topic id.")
    else:
        for n in body.topic_names:
            add_name(n)
    for n in dup_names:
        result(n, None, "INVALID_REQUEST", "Duplicate topic name.")
    for tid in dup_ids:
        result(None, tid, "INVALID_REQUEST", "Duplicate topic id.")
    by_id = {t.topic_id: t.name for t in backend.topics()}
    to_delete: dict[str, None] = {}
    for tid in ids:
        if tid in by_id:
            to_delete[by_id[tid]] = None
        else:
            result(None, tid, "UNKNOWN_TOPIC_ID")
    id_names = set(to_delete)
    for n in names:
        if n in id_names:
            to_delete.pop(n, None)
            topic_id = next((i for i, nm in by_id.items() if nm == n), None)
            result(n, topic_id, "INVALID_REQUEST", "The provided topic name maps to an ID that was already supplied.")
        else:
            to_delete[n] = None
    results = backend.delete_topics(list(to_delete)) if to_delete else {}
    for n in to_delete:
        err, topic_id = results[n]
        result(n, topic_id, err)
    return build(cls, throttle_time=NO_THROTTLE, responses=tuple(out))


def describe_configs(req: DecodedRequest, backend: Backend) -> Any:
    """DescribeConfigs for topic (2), broker (4) and group (32) resources."""
    cls = response_class(32, req.api_version)
    out = []
    for r in req.body.resources:
        keys = None if r.configuration_keys is None or len(r.configuration_keys) == 0 else list(r.configuration_keys)
        err, msg, entries = backend.describe_configs(int(r.resource_type), r.resource_name, keys)
        configs = tuple(
            nested(
                cls,
                "DescribeConfigsResourceResult",
                name=e.name,
                value=e.value,
                read_only=e.read_only,
                is_default=e.is_default,
                config_source=i8(e.source),
                is_sensitive=e.sensitive,
                synonyms=(),
                config_type=i8(0),
                documentation=None,
            )
            for e in entries
        )
        out.append(
            nested(cls, "DescribeConfigsResult", error_code=error_code(err), error_message=msg, resource_type=r.resource_type, resource_name=r.resource_name, configs=configs)
        )
    return build(cls, throttle_time=NO_THROTTLE, results=tuple(out))


def incremental_alter_configs(req: DecodedRequest, backend: Backend) -> Any:
    """IncrementalAlterConfigs for topic, broker and group resources (one backend call each)."""
    cls = response_class(44, req.api_version)
    out = []
    for r in req.body.resources:
        ops = [(c.name, int(c.config_operation), c.value) for c in r.configs]
        err, msg = backend.alter_configs(int(r.resource_type), r.resource_name, ops, bool(req.body.validate_only))
        out.append(nested(cls, "AlterConfigsResourceResponse", error_code=error_code(err), error_message=msg, resource_type=r.resource_type, resource_name=r.resource_name))
    return build(cls, throttle_time=NO_THROTTLE, responses=tuple(out))


def list_groups(req: DecodedRequest, backend: Backend) -> Any:
    """ListGroups (v5 filters by state and type). The backend's rows are ``(group id, type,
    state)`` or ``(group id, type, state, protocol type)``: share groups have type ``share`` and
    protocol type ``share``; classic consumer groups type ``classic`` and protocol type
    ``consumer`` (Kafka's ``ListGroupsResponse``)."""
    cls = response_class(16, req.api_version)
    types = [str(t) for t in getattr(req.body, "types_filter", ())]
    states = [str(s) for s in getattr(req.body, "states_filter", ())]
    groups = tuple(
        nested(cls, "ListedGroup", group_id=row[0], protocol_type=row[3] if len(row) > 3 else row[1], group_state=row[2], group_type=row[1])
        for row in backend.list_groups(types, states)
    )
    return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, groups=groups)


# --- topic admin: CreatePartitions (API 37, issue 16) -------------------------------------------


def create_partitions(req: DecodedRequest, backend: Backend) -> Any:
    """CreatePartitions v0-3: one controller message for the whole request (the rules are the
    controller's, ``actors.controller.topics.decide_create_partitions``). Results in request
    order, one per name (a duplicated name is answered once, INVALID_REQUEST, as
    ``ControllerApis.createPartitions``); ``timeout_ms`` is not needed (the reply waits for the
    append)."""
    cls = response_class(37, req.api_version)
    body = req.body
    topics = [
        (t.name, int(t.count), None if t.assignments is None else [[int(b) for b in a.broker_ids] for a in t.assignments])
        for t in body.topics
    ]
    results = backend.create_partitions(topics, bool(body.validate_only)) if topics else {}
    out = []
    for name in dict.fromkeys(t.name for t in body.topics):
        err, msg = results.get(name, ("UNKNOWN_SERVER_ERROR", "no result"))
        out.append(nested(cls, "CreatePartitionsTopicResult", name=name, error_code=error_code(err), error_message=msg))
    return build(cls, throttle_time=NO_THROTTLE, results=tuple(out))


# --- topic admin: DeleteRecords (API 21, issue 16) -----------------------------------------------


def delete_records(req: DecodedRequest, backend: Backend) -> Any:
    """DeleteRecords v0-2: per partition, move the log start offset (``offset`` -1 = the high
    watermark) and answer the new ``low_watermark`` (Kafka ``ReplicaManager.deleteRecords``; -1
    with the error). ``timeout_ms`` is not needed: a single node answers once the log moved."""
    cls = response_class(21, req.api_version)
    topics = []
    for t in req.body.topics:
        parts = []
        for p in t.partitions:
            err, low = backend.delete_records(t.name, int(p.partition_index), int(p.offset))
            parts.append(
                nested(cls, "DeleteRecordsPartitionResult", partition_index=i32(p.partition_index), low_watermark=i64(low), error_code=error_code(err))
            )
        topics.append(nested(cls, "DeleteRecordsTopicResult", name=t.name, partitions=tuple(parts)))
    return build(cls, throttle_time=NO_THROTTLE, topics=tuple(topics))
