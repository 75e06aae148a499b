"""Handlers for the share-group APIs (KIP-932): ShareGroupHeartbeat (76), ShareGroupDescribe (77),
ShareFetch (78), ShareAcknowledge (79), DescribeShareGroupOffsets (90).

Each request becomes ONE message to the group's ``ShareGroupActor`` (through the backend), which
decides membership, session epochs, acquisitions and acknowledgements; the records' bytes for
the acquired ranges are then read from the partition logs in this process. A ShareFetch that
has nothing new to read long-polls up to ``max_wait`` before asking (the backend decides), in
the spirit of Kafka's ``DelayedShareFetch``. Request validation of acknowledgement
batches follows ``KafkaApis.validateAcknowledgementBatches`` (per partition INVALID_REQUEST).
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i16, i32, i64

from dataclasses import replace

from actors.share.partition import validate_acknowledgement_batches
from wire.backend import AckBatch, ShareFetchPartition, SharePartitionAck
from wire.entities import NO_THROTTLE, build, error_code, nested, response_class
from wire.listeners import endpoint_for
from wire.protocol import DecodedRequest

__all__ = ["describe", "describe_offsets", "heartbeat", "share_acknowledge", "share_fetch"]


def _invalid(ack: SharePartitionAck, api_version: int) -> str | None:
    """Why one partition's acknowledgement batches are refused (INVALID_REQUEST), ``None`` when
    they are not: :func:`actors.share.partition.validate_acknowledgement_batches`, Kafka's
    ``KafkaApis.validateAcknowledgementBatches``; RENEW (type 4) comes with v2 of ShareFetch and
    ShareAcknowledge (KIP-1222), so a v1 request carrying it is refused."""
    return validate_acknowledgement_batches([(b.first_offset, b.last_offset, b.types) for b in ack.batches], renew=api_version >= 2)


def _acks_of(topics: Any, partitions_attr: str) -> list[SharePartitionAck]:
    out = []
    for t in topics:
        for p in getattr(t, partitions_attr):
            batches = tuple(AckBatch(int(b.first_offset), int(b.last_offset), tuple(map(int, b.acknowledge_types))) for b in p.acknowledgement_batches)
            if batches:
                out.append(SharePartitionAck(t.topic_id, int(p.partition_index), batches))
    return out


def heartbeat(req: DecodedRequest, backend: Any) -> Any:
    """ShareGroupHeartbeat: join (epoch 0), heartbeat (epoch > 0) or leave (epoch -1); the
    response carries the assignment (topic id → partitions) when it changed."""
    cls = response_class(76, req.api_version)
    b = req.body
    subscribed = None if b.subscribed_topic_names is None else [str(n) for n in b.subscribed_topic_names]
    r = backend.share_heartbeat(str(b.group_id), str(b.member_id or ""), int(b.member_epoch), b.rack_id, subscribed, req.client_id or "", "")
    assignment = None
    if r.assignment is not None:
        tps = tuple(nested(cls, "TopicPartitions", topic_id=tid, partitions=tuple(i32(p) for p in sorted(ps))) for tid, ps in sorted(r.assignment.items(), key=lambda kv: str(kv[0])))
        assignment = nested(cls, "Assignment", topic_partitions=tps)
    return build(
        cls,
        throttle_time=NO_THROTTLE,
        error_code=error_code(r.error),
        error_message=r.message,
        member_id=r.member_id,
        member_epoch=i32(r.member_epoch),
        heartbeat_interval=datetime.timedelta(milliseconds=r.heartbeat_interval_ms),
        assignment=assignment,
    )


def _partition_data(cls: type, node_id: int, p: Any) -> Any:
    return nested(
        cls,
        "PartitionData",
        partition_index=i32(p.partition),
        error_code=error_code(p.error),
        error_message=p.error_message,
        acknowledge_error_code=i16(int(error_code(p.ack_error))),
        acknowledge_error_message=p.ack_error_message,
        current_leader=nested(cls, "LeaderIdAndEpoch", leader_id=i32(node_id if p.error is None else -1), leader_epoch=i32(0)),
        records=p.records if p.records else b"",  # empty, never null: Kafka's getResponsePartitionData (recordsOrFail)
        acquired_records=tuple(nested(cls, "AcquiredRecords", first_offset=i64(a.first_offset), last_offset=i64(a.last_offset), delivery_count=i16(a.delivery_count)) for a in p.acquired),
    )


def _group_by_topic(cls: type, topic_cls: str, node_id: int, parts: list[Any]) -> tuple[Any, ...]:
    by_topic: dict[uuid.UUID, list[Any]] = {}
    for p in parts:
        by_topic.setdefault(p.topic_id, []).append(_partition_data(cls, node_id, p))
    return tuple(nested(cls, topic_cls, topic_id=tid, partitions=tuple(ps)) for tid, ps in by_topic.items())


def _forwarded_by(conn: Any) -> int:
    """The node that forwarded this request to the group's coordinator (:mod:`wire.forwarding`),
    -1 for a client's own request: the client's share session is with that node."""
    return int(getattr(conn, "forwarded_by", -1))


def _endpoints(cls: type, backend: Any, conn: Any = None) -> tuple[Any, ...]:
    if _forwarded_by(conn) >= 0:
        return ()  # the client talks to the forwarding node, whose endpoint it has
    host, port = endpoint_for(backend, getattr(conn, "listener", None))  # the listener the request came on
    return (nested(cls, "NodeEndpoint", node_id=i32(backend.node_id), host=host, port=i32(port), rack=None),)


def share_fetch(req: DecodedRequest, backend: Any, conn: Any = None) -> Any:
    """ShareFetch: session epoch handling, piggy-backed acknowledgements, acquisition of up to
    ``max_records`` per request and the records' bytes, in one backend call (which may
    long-poll up to ``max_wait``). Invalid acknowledgement batches of a partition make that
    partition's acknowledge error INVALID_REQUEST; its other batches are not applied. v2: the
    ``ShareAcquireMode`` (KIP-1206) goes to the actor; a renew-only fetch (``IsRenewAck``,
    KIP-1222) acquires nothing and waits for nothing, and one whose MaxBytes, MinBytes,
    MaxRecords or MaxWaitMs is not 0 is INVALID_REQUEST as a whole (Kafka 4.2)."""
    cls = response_class(78, req.api_version)
    b = req.body
    if getattr(b, "is_renew_ack", False) and (int(b.max_bytes) or int(b.min_bytes) or int(b.max_records) or b.max_wait.total_seconds()):
        # KIP-1222 (KAFKA-19844): a renew-only ShareFetch fetches nothing, so its fetch limits must be 0
        return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.invalid_request,
                     error_message="MaxBytes, MinBytes, MaxRecords and MaxWaitMs must be 0 when IsRenewAck is set.",
                     acquisition_lock_timeout=datetime.timedelta(0), responses=(), node_endpoints=())
    group, member, epoch = str(b.group_id or ""), str(b.member_id or ""), int(b.share_session_epoch)
    wanted = [(t.topic_id, int(p.partition_index)) for t in b.topics for p in t.partitions]
    forgotten = [(t.topic_id, int(p)) for t in b.forgotten_topics_data for p in t.partitions]
    acks = _acks_of(b.topics, "partitions")
    invalid = {(a.topic_id, a.partition): _invalid(a, req.api_version) for a in acks}
    invalid = {k: v for k, v in invalid.items() if v}
    acks = [a for a in acks if (a.topic_id, a.partition) not in invalid]
    batch_size = int(b.batch_size) if int(getattr(b, "batch_size", 0) or 0) > 0 else None  # v1+ BatchSize
    via = _forwarded_by(conn)
    r = backend.share_fetch(group, member, epoch, wanted, forgotten, acks, int(b.max_records), int(b.max_wait.total_seconds() * 1000),
                            int(getattr(b, "share_acquire_mode", 0)), batch_size, bool(getattr(b, "is_renew_ack", False)), session_node=via)
    parts = list(r.partitions)
    for (tid, pidx), reason in invalid.items():
        # keep what was fetched for the partition; only its acknowledgement outcome changes
        existing = [p for p in parts if (p.topic_id, p.partition) == (tid, pidx)]
        parts = [p for p in parts if (p.topic_id, p.partition) != (tid, pidx)]
        base = existing[0] if existing else ShareFetchPartition(tid, pidx)
        parts.append(replace(base, ack_error="INVALID_REQUEST", ack_error_message=reason))
    return build(
        cls,
        throttle_time=NO_THROTTLE,
        error_code=error_code(r.error),
        error_message=r.message,
        acquisition_lock_timeout=datetime.timedelta(milliseconds=r.lock_timeout_ms),
        responses=_group_by_topic(cls, "ShareFetchableTopicResponse", via if via >= 0 else backend.node_id, parts) if r.error is None else (),
        node_endpoints=_endpoints(cls, backend, conn),
    )


def share_acknowledge(req: DecodedRequest, backend: Any, conn: Any = None) -> Any:
    """ShareAcknowledge: validate and apply acknowledgements; epoch -1 also closes the session
    (releasing the member's remaining acquired records). v2 (KIP-1222) allows RENEW and answers
    the acquisition lock duration (``AcquisitionLockTimeoutMs``, ms) the renewed locks got; its
    ``IsRenewAck`` flag, a hint for the broker, is not needed: the batches say it."""
    cls = response_class(79, req.api_version)
    b = req.body
    acks = _acks_of(b.topics, "partitions")
    invalid = {}
    for a in acks:
        reason = _invalid(a, req.api_version)
        if reason:
            invalid[(a.topic_id, a.partition)] = reason
    via = _forwarded_by(conn)
    r = backend.share_acknowledge(str(b.group_id or ""), str(b.member_id or ""), int(b.share_session_epoch), [a for a in acks if (a.topic_id, a.partition) not in invalid],
                                  session_node=via)
    node = via if via >= 0 else backend.node_id  # the node the client sent the request to
    resp_parts = []
    by_topic: dict[uuid.UUID, list[Any]] = {}
    for p in r.partitions:
        by_topic.setdefault(p.topic_id, []).append(
            nested(cls, "PartitionData", partition_index=i32(p.partition), error_code=error_code(p.ack_error), error_message=p.ack_error_message, current_leader=nested(cls, "LeaderIdAndEpoch", leader_id=i32(node), leader_epoch=i32(0)))
        )
    for (tid, pidx), reason in invalid.items():
        by_topic.setdefault(tid, []).append(
            nested(cls, "PartitionData", partition_index=i32(pidx), error_code=ErrorCode.invalid_request, error_message=reason, current_leader=nested(cls, "LeaderIdAndEpoch", leader_id=i32(node), leader_epoch=i32(0)))
        )
    resp_parts = tuple(nested(cls, "ShareAcknowledgeTopicResponse", topic_id=tid, partitions=tuple(ps)) for tid, ps in by_topic.items())
    return build(cls, throttle_time=NO_THROTTLE, error_code=error_code(r.error), error_message=r.message,
                 acquisition_lock_timeout=datetime.timedelta(milliseconds=r.lock_timeout_ms),  # v2 (KIP-1222)
                 responses=resp_parts if r.error is None else (), node_endpoints=_endpoints(cls, backend, conn))


def describe(req: DecodedRequest, backend: Any) -> Any:
    """ShareGroupDescribe: state, epochs, assignor and members with their assignments."""
    cls = response_class(77, req.api_version)
    groups = []
    for gid in req.body.group_ids:
        d = backend.share_group_describe(str(gid))
        if d.get("error"):
            groups.append(nested(cls, "DescribedGroup", error_code=error_code(d["error"]), error_message=d.get("message"), group_id=gid, group_state="Dead", group_epoch=i32(-1), assignment_epoch=i32(-1), assignor_name="", members=()))
            continue
        members = []
        for m in d["members"]:
            tps = tuple(nested(cls, "TopicPartitions", topic_id=tid, topic_name=tname, partitions=tuple(i32(x) for x in ps)) for tid, tname, ps in m["assignment"])
            members.append(
                nested(
                    cls,
                    "Member",
                    member_id=m["member_id"],
                    rack_id=m.get("rack_id"),
                    member_epoch=i32(m["member_epoch"]),
                    client_id=m.get("client_id", ""),
                    client_host=m.get("client_host", ""),
                    subscribed_topic_names=tuple(m.get("subscribed", ())),
                    assignment=nested(cls, "Assignment", topic_partitions=tps),
                )
            )
        groups.append(
            nested(
                cls,
                "DescribedGroup",
                error_code=ErrorCode.none,
                error_message=None,
                group_id=gid,
                group_state=d["state"],
                group_epoch=i32(d["group_epoch"]),
                assignment_epoch=i32(d["assignment_epoch"]),
                assignor_name=d.get("assignor", "simple"),
                members=tuple(members),
            )
        )
    return build(cls, throttle_time=NO_THROTTLE, groups=tuple(groups))


def describe_offsets(req: DecodedRequest, backend: Any) -> Any:
    """DescribeShareGroupOffsets: the share-partition start offset (SPSO) of each partition
    (-1 when the share-partition was never initialised)."""
    cls = response_class(90, req.api_version)
    groups = []
    for g in req.body.groups:
        want = None if g.topics is None else [(t.topic_name, [int(p) for p in t.partitions]) for t in g.topics]
        err, msg, rows = backend.share_group_offsets(str(g.group_id), want)
        topics = []
        for tname, tid, parts in rows:
            ps = tuple(
                nested(cls, "DescribeShareGroupOffsetsResponsePartition", partition_index=i32(p), start_offset=i64(so), leader_epoch=i32(0), error_code=error_code(perr), error_message=None)
                for p, so, perr in parts
            )
            topics.append(nested(cls, "DescribeShareGroupOffsetsResponseTopic", topic_name=tname, topic_id=tid, partitions=ps))
        groups.append(nested(cls, "DescribeShareGroupOffsetsResponseGroup", group_id=g.group_id, topics=tuple(topics), error_code=error_code(err), error_message=msg))
    return build(cls, throttle_time=NO_THROTTLE, groups=tuple(groups))
