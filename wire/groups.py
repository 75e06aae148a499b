"""Handlers for the classic consumer-group APIs: JoinGroup (11), Heartbeat (12), LeaveGroup (13),
SyncGroup (14), OffsetCommit (8) and OffsetFetch (9).

Each request becomes ONE message to the group's :class:`actors.consumer.actor.ConsumerGroupActor`
through the backend (``consumer_*`` methods); JoinGroup and SyncGroup block this connection's
thread until the actor answers (the rebalance completes), as Kafka's delayed responses do.
Request guards from ``GroupCoordinatorService``: an empty group id on Join/Sync/Heartbeat/Leave
is INVALID_GROUP_ID (OffsetCommit/OffsetFetch accept an empty id). OffsetFetch v8+ is the
multi-group form (one answer per group).
"""

from __future__ import annotations

from typing import Any

from kio.static.primitive import i32, i64

from actors.consumer.classic import CommitPartition, LeaveMember
from actors.consumer.messages import HeartbeatCmd, JoinGroupCmd, LeaveGroupCmd, OffsetCommitCmd, SyncGroupCmd
from wire.entities import NO_THROTTLE, build, duration_ms, error_code, nested, response_class
from wire.protocol import DecodedRequest

__all__ = ["heartbeat", "join_group", "leave_group", "offset_commit", "offset_fetch", "sync_group"]


def join_group(req: DecodedRequest, backend: Any, client_host: str = "") -> Any:
    """JoinGroup v0+ → ``JoinGroupResult`` (v0 has no rebalance timeout: the session timeout is
    used, ``JoinGroupRequest``)."""
    cls = response_class(11, req.api_version)
    b = req.body
    gid = str(b.group_id or "")
    if not gid:
        return build(cls, throttle_time=NO_THROTTLE, error_code=error_code("INVALID_GROUP_ID"), generation_id=i32(-1),
                     protocol_type=None, protocol_name=None if req.api_version >= 7 else "", leader="",
                     member_id=str(b.member_id or ""), members=())
    session = duration_ms(b.session_timeout)
    cmd = JoinGroupCmd(
        gid, str(b.member_id or ""), getattr(b, "group_instance_id", None), str(b.protocol_type or ""),
        tuple((str(p.name), bytes(p.metadata)) for p in b.protocols), session,
        duration_ms(getattr(b, "rebalance_timeout", None), session), req.client_id or "", client_host, req.api_version,
    )
    r = backend.consumer_join(cmd)
    members = tuple(nested(cls, "JoinGroupResponseMember", member_id=x.member_id, group_instance_id=x.group_instance_id,
                           metadata=x.metadata) for x in r.members)
    return build(
        cls, throttle_time=NO_THROTTLE, error_code=error_code(r.error), generation_id=i32(r.generation),
        # v0-6: ProtocolName is not nullable ("" on errors)
        protocol_type=r.protocol_type, protocol_name=r.protocol if (r.protocol or req.api_version >= 7) else "",
        leader=r.leader, skip_assignment=r.skip_assignment, member_id=r.member_id, members=members,
    )


def sync_group(req: DecodedRequest, backend: Any) -> Any:
    """SyncGroup → the member's assignment (v5+ also echoes protocol type and name; a v5+
    request without them is INCONSISTENT_GROUP_PROTOCOL, ``KafkaApis.handleSyncGroupRequest``)."""
    cls = response_class(14, req.api_version)
    b = req.body
    gid = str(b.group_id or "")
    ptype, pname = getattr(b, "protocol_type", None), getattr(b, "protocol_name", None)
    if not gid:
        r_err = "INVALID_GROUP_ID"
    elif req.api_version >= 5 and (ptype is None or pname is None):
        r_err = "INCONSISTENT_GROUP_PROTOCOL"
    else:
        r_err = None
    if r_err is not None:
        return build(cls, throttle_time=NO_THROTTLE, error_code=error_code(r_err), protocol_type=None, protocol_name=None, assignment=b"")
    cmd = SyncGroupCmd(gid, str(b.member_id), getattr(b, "group_instance_id", None), int(b.generation_id), ptype, pname,
                       tuple((str(a.member_id), bytes(a.assignment)) for a in b.assignments))
    r = backend.consumer_sync(cmd)
    return build(cls, throttle_time=NO_THROTTLE, error_code=error_code(r.error), protocol_type=r.protocol_type,
                 protocol_name=r.protocol, assignment=r.assignment)


def heartbeat(req: DecodedRequest, backend: Any) -> Any:
    """Heartbeat → error code only (REBALANCE_IN_PROGRESS tells the member to rejoin)."""
    cls = response_class(12, req.api_version)
    b = req.body
    gid = str(b.group_id or "")
    if not gid:
        return build(cls, throttle_time=NO_THROTTLE, error_code=error_code("INVALID_GROUP_ID"))
    r = backend.consumer_heartbeat(HeartbeatCmd(gid, str(b.member_id), getattr(b, "group_instance_id", None), int(b.generation_id)))
    return build(cls, throttle_time=NO_THROTTLE, error_code=error_code(r.error))


def leave_group(req: DecodedRequest, backend: Any) -> Any:
    """LeaveGroup: v0-2 one ``member_id``; v3+ a batch of member identities with per-member
    errors."""
    cls = response_class(13, req.api_version)
    b = req.body
    gid = str(b.group_id or "")
    if req.api_version >= 3:
        members = tuple(LeaveMember(str(x.member_id or ""), x.group_instance_id) for x in b.members)
    else:
        members = (LeaveMember(str(b.member_id or "")),)
    if not gid:
        return build(cls, throttle_time=NO_THROTTLE, error_code=error_code("INVALID_GROUP_ID"), members=())
    r = backend.consumer_leave(LeaveGroupCmd(gid, members))
    err = r.error
    if req.api_version < 3 and err is None and r.members:
        err = r.members[0][2]  # v0-2: the one member's error is the response's
    out = ()
    if req.api_version >= 3:
        out = tuple(nested(cls, "MemberResponse", member_id=mid, group_instance_id=inst, error_code=error_code(e))
                    for mid, inst, e in r.members)
    return build(cls, throttle_time=NO_THROTTLE, error_code=error_code(err), members=out)


def offset_commit(req: DecodedRequest, backend: Any) -> Any:
    """OffsetCommit v2+ → per partition errors (unknown topics: UNKNOWN_TOPIC_OR_PARTITION)."""
    cls = response_class(8, req.api_version)
    b = req.body
    gen = getattr(b, "generation_id_or_member_epoch", None)
    if gen is None:
        gen = getattr(b, "generation_id", -1)
    parts = tuple(
        CommitPartition(str(t.name), int(p.partition_index), int(p.committed_offset),
                        int(getattr(p, "committed_leader_epoch", -1)), p.committed_metadata)
        for t in b.topics for p in t.partitions
    )
    retention = duration_ms(getattr(b, "retention_time", None), -1)
    cmd = OffsetCommitCmd(str(b.group_id or ""), str(b.member_id or ""), getattr(b, "group_instance_id", None), int(gen),
                          parts, req.api_version, retention)
    r = backend.consumer_commit(cmd) if parts else None
    errs = {} if r is None else {(t, p): e for t, p, e in r.partitions}
    topics = tuple(
        nested(cls, "OffsetCommitResponseTopic", name=t.name, partitions=tuple(
            nested(cls, "OffsetCommitResponsePartition", partition_index=p.partition_index,
                   error_code=error_code(errs.get((str(t.name), int(p.partition_index)))))
            for p in t.partitions))
        for t in b.topics
    )
    return build(cls, throttle_time=NO_THROTTLE, topics=topics)


def _fetch_group(backend: Any, gid: str, topics: Any, member_id: str | None = None,
                 member_epoch: int = -1) -> tuple[str | None, dict[str, list[Any]]]:
    """One group's committed offsets: ``(group error, topic → [FetchedOffset])`` (request order;
    all committed offsets when ``topics`` is ``None``). v9's member id and epoch (KIP-848) are
    passed on only when set (a consumer group checks them)."""
    wanted = None if topics is None else [(str(t.name), int(p)) for t in topics for p in t.partition_indexes]
    member = {} if member_id is None and member_epoch < 0 else {"member_id": member_id, "member_epoch": member_epoch}
    err, offsets = backend.consumer_fetch_offsets(gid, wanted, **member)
    by_topic: dict[str, list[Any]] = {}
    for o in offsets:
        by_topic.setdefault(o.topic, []).append(o)
    if topics is not None and err is None:
        by_topic = {str(t.name): by_topic.get(str(t.name), []) for t in topics}
    return err, by_topic


def offset_fetch(req: DecodedRequest, backend: Any) -> Any:
    """OffsetFetch v1-7 (one group) and v8+ (several groups). A partition without a committed
    offset answers -1 / leader epoch -1 / metadata "" with no error, also for an unknown group
    (``OffsetMetadataManager.fetchOffsets``)."""
    cls = response_class(9, req.api_version)
    b = req.body
    v8 = req.api_version >= 8
    pcls = "OffsetFetchResponsePartitions" if v8 else "OffsetFetchResponsePartition"
    tcls = "OffsetFetchResponseTopics" if v8 else "OffsetFetchResponseTopic"

    def topics_of(by_topic: dict[str, list[Any]]) -> tuple[Any, ...]:
        return tuple(
            nested(cls, tcls, name=name, partitions=tuple(
                nested(cls, pcls, partition_index=i32(o.partition), committed_offset=i64(o.offset),
                       committed_leader_epoch=i32(o.leader_epoch), metadata=o.metadata, error_code=error_code(o.error))
                for o in offs))
            for name, offs in by_topic.items()
        )

    if v8:
        groups = []
        for g in b.groups:
            err, by_topic = _fetch_group(backend, str(g.group_id), g.topics, getattr(g, "member_id", None),
                                         int(getattr(g, "member_epoch", -1)))
            groups.append(nested(cls, "OffsetFetchResponseGroup", group_id=g.group_id, topics=topics_of(by_topic),
                                 error_code=error_code(err)))
        return build(cls, throttle_time=NO_THROTTLE, groups=tuple(groups))
    err, by_topic = _fetch_group(backend, str(b.group_id), b.topics)
    return build(cls, throttle_time=NO_THROTTLE, topics=topics_of(by_topic), error_code=error_code(err))
