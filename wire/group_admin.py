"""Handlers for the group admin APIs: DescribeGroups (15), DeleteGroups (42), OffsetDelete (47),
AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92).

Classic groups (``shared/reference/kafka-consumer-groups.md`` §7.3, §8) go to the group's
:class:`actors.consumer.actor.ConsumerGroupActor`, share groups (KIP-932) to the group's
:class:`actors.share.actor.ShareGroupActor`, through the backend (one actor message per group):

* DescribeGroups: classic groups only; a missing or non-classic group is state ``Dead`` with
  error 0 (v0-5) or GROUP_ID_NOT_FOUND with Kafka's message (v6+, ``GroupMetadataManager.describeGroups``).
  Stable: protocol data is the protocol name and members carry metadata and assignment; other
  states: protocol data "" and the assignment only. v3+ ``include_authorized_operations``: the
  group's authorized-operations bitfield for groups answered without error (``KafkaApis``).
* DeleteGroups: per distinct group id (share or classic): GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, or
  deleted (offsets / share-partition state tombstoned, then the group). Only a null id is
  INVALID_GROUP_ID (``GroupCoordinatorService.deleteGroups``), which the schema cannot carry: an
  empty id is looked up like any other (OffsetCommit may have created group "").
* OffsetDelete: group errors at the top (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, INVALID_GROUP_ID,
  with the partitions ``KafkaApis`` answered itself, UNKNOWN_TOPIC_OR_PARTITION and
  TOPIC_AUTHORIZATION_FAILED, merged in; GROUP_AUTHORIZATION_FAILED alone), else per partition
  (also GROUP_SUBSCRIBED_TO_TOPIC).
* AlterShareGroupOffsets / DeleteShareGroupOffsets: an empty share group only (NON_EMPTY_GROUP),
  top-level errors with no topics, else per partition / per topic results.

An empty group id is INVALID_GROUP_ID for OffsetDelete, 91 and 92 (``GroupCoordinatorService``);
the backend answers it, after the ACL check, as Kafka's coordinator does after ``KafkaApis``'.
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.static.primitive import i32

from wire import authz
from wire.entities import NO_THROTTLE, build, error_code, nested, response_class
from wire.protocol import DecodedRequest

__all__ = ["alter_share_group_offsets", "delete_groups", "delete_share_group_offsets", "describe_groups", "offset_delete"]

def describe_groups(req: DecodedRequest, backend: Any, authorizer: Any = None) -> Any:
    """DescribeGroups v0-6 (see the module doc)."""
    cls = response_class(15, req.api_version)
    v = req.api_version
    want_ops = v >= 3 and bool(getattr(req.body, "include_authorized_operations", False))
    groups = []
    for gid in req.body.groups:
        gid = str(gid)
        err, msg, d = backend.describe_group(gid)
        if err == "GROUP_ID_NOT_FOUND" and v < 6:
            err, msg = None, None  # Kafka before v6: a missing or non-classic group is Dead, error 0
        members = ()
        state = protocol_type = protocol_data = ""
        if d is not None:
            state, protocol_type, protocol_data = d.state, d.protocol_type, d.protocol_data
            members = tuple(
                nested(cls, "DescribedGroupMember", member_id=m.member_id, group_instance_id=m.group_instance_id,
                       client_id=m.client_id, client_host=m.client_host, member_metadata=m.metadata,
                       member_assignment=m.assignment)
                for m in d.members
            )
        if err is not None and err != "GROUP_ID_NOT_FOUND":
            state, protocol_type, protocol_data, members = "", "", "", ()
        ops = authz.NO_OPERATIONS
        if want_ops and err is None:
            ops = authz.authorized_operations(authorizer, "GROUP", gid)
        groups.append(nested(cls, "DescribedGroup", error_code=error_code(err), error_message=msg, group_id=gid,
                             group_state=state, protocol_type=protocol_type, protocol_data=protocol_data,
                             members=members, authorized_operations=i32(ops)))
    return build(cls, throttle_time=NO_THROTTLE, groups=tuple(groups))


def delete_groups(req: DecodedRequest, backend: Any) -> Any:
    """DeleteGroups v0-2: one result per distinct group id, in request order."""
    cls = response_class(42, req.api_version)
    results = []
    for gid in dict.fromkeys(str(g) for g in req.body.groups_names):
        err = backend.delete_group(gid)  # an empty id is a group id like any other here (Kafka rejects only null)
        results.append(nested(cls, "DeletableGroupResult", group_id=gid, error_code=error_code(err)))
    return build(cls, throttle_time=NO_THROTTLE, results=tuple(results))


def offset_delete(req: DecodedRequest, backend: Any) -> Any:
    """OffsetDelete v0 (see the module doc)."""
    cls = response_class(47, req.api_version)
    b = req.body
    wanted = [(str(t.name), int(p.partition_index)) for t in b.topics for p in t.partitions]
    r = backend.consumer_delete_offsets(str(b.group_id or ""), wanted)
    by_topic: dict[str, list[tuple[int, str | None]]] = {}
    for t, p, e in r.partitions:
        by_topic.setdefault(t, []).append((p, e))
    topics = tuple(
        nested(cls, "OffsetDeleteResponseTopic", name=name, partitions=tuple(
            nested(cls, "OffsetDeleteResponsePartition", partition_index=i32(p), error_code=error_code(e)) for p, e in parts))
        for name, parts in by_topic.items()
    )
    return build(cls, error_code=error_code(r.error), throttle_time=NO_THROTTLE, topics=topics)


def _share_group_error(cls: type, err: str, msg: str | None) -> Any:
    return build(cls, throttle_time=NO_THROTTLE, error_code=error_code(err), error_message=msg, responses=())


def alter_share_group_offsets(req: DecodedRequest, backend: Any) -> Any:
    """AlterShareGroupOffsets v0: top-level error (INVALID_GROUP_ID, GROUP_ID_NOT_FOUND,
    NON_EMPTY_GROUP, GROUP_AUTHORIZATION_FAILED …) with no topics, else per partition."""
    cls = response_class(91, req.api_version)
    b = req.body
    gid = str(b.group_id or "")
    topics = [(str(t.topic_name), [(int(p.partition_index), int(p.start_offset)) for p in t.partitions]) for t in b.topics]
    err, msg, rows = backend.share_alter_offsets(gid, topics)
    if err is not None:
        return _share_group_error(cls, err, msg)
    out = tuple(
        nested(cls, "AlterShareGroupOffsetsResponseTopic", topic_name=name, topic_id=tid if tid is not None else uuid.UUID(int=0),
               partitions=tuple(
                   nested(cls, "AlterShareGroupOffsetsResponsePartition", partition_index=i32(p), error_code=error_code(e),
                          error_message=m)
                   for p, e, m in parts))
        for name, tid, parts in rows
    )
    return build(cls, throttle_time=NO_THROTTLE, error_code=error_code(None), error_message=None, responses=out)


def delete_share_group_offsets(req: DecodedRequest, backend: Any) -> Any:
    """DeleteShareGroupOffsets v0: top-level error with no topics, else per topic."""
    cls = response_class(92, req.api_version)
    b = req.body
    gid = str(b.group_id or "")
    err, msg, rows = backend.share_delete_offsets(gid, [str(t.topic_name) for t in b.topics])
    if err is not None:
        return _share_group_error(cls, err, msg)
    out = tuple(
        nested(cls, "DeleteShareGroupOffsetsResponseTopic", topic_name=name,
               topic_id=tid if tid is not None else uuid.UUID(int=0), error_code=error_code(e), error_message=m)
        for name, tid, e, m in rows
    )
    return build(cls, throttle_time=NO_THROTTLE, error_code=error_code(None), error_message=None, responses=out)
