"""Handlers for the KIP-848 consumer-protocol APIs: ConsumerGroupHeartbeat (68) and
ConsumerGroupDescribe (69).

Each heartbeat is ONE message to the group's :class:`actors.consumer.actor.ConsumerGroupActor`
through the backend (``consumer_group_heartbeat``), which adds the topic image the decider needs.
v0 lets the coordinator make member ids; v1 (KIP-1082) requires the client's own id on every
request and adds the regex field, which is refused (INVALID_REQUEST: regex subscriptions are not
supported). ConsumerGroupDescribe v1 adds the member type (1: consumer-protocol member).
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from kio.static.primitive import i8, i32

from actors.consumer.messages import ConsumerGroupHeartbeatCmd
from wire import authz
from wire.entities import NO_THROTTLE, build, duration_ms, error_code, nested, response_class
from wire.protocol import DecodedRequest

__all__ = ["consumer_group_describe", "consumer_group_heartbeat"]


def consumer_group_heartbeat(req: DecodedRequest, backend: Any, client_host: str = "") -> Any:
    """ConsumerGroupHeartbeat v0-1 → ``ConsumerHeartbeatResult`` (the assignment, when present,
    as topic id → partitions)."""
    cls = response_class(68, req.api_version)
    b = req.body
    owned = None
    if b.topic_partitions is not None:
        owned = tuple((str(t.topic_id), tuple(int(p) for p in t.partitions)) for t in b.topic_partitions)
    subscribed = None if b.subscribed_topic_names is None else tuple(str(n) for n in b.subscribed_topic_names)
    cmd = ConsumerGroupHeartbeatCmd(
        str(b.group_id or ""), str(b.member_id or ""), int(b.member_epoch), b.instance_id, b.rack_id,
        duration_ms(b.rebalance_timeout), subscribed, b.server_assignor, owned, req.client_id or "", client_host, (),
        req.api_version, getattr(b, "subscribed_topic_regex", None),
    )
    r = backend.consumer_group_heartbeat(cmd)
    assignment = None
    if r.error is None and r.assignment is not None:
        assignment = nested(cls, "Assignment", topic_partitions=tuple(
            nested(cls, "TopicPartitions", topic_id=uuid.UUID(tid), partitions=tuple(i32(p) for p in ps))
            for tid, ps in r.assignment))
    return build(
        cls, throttle_time=NO_THROTTLE, error_code=error_code(r.error), error_message=r.message,
        member_id=r.member_id or None, member_epoch=i32(r.member_epoch),
        heartbeat_interval=datetime.timedelta(milliseconds=r.heartbeat_interval_ms), assignment=assignment,
    )


def consumer_group_describe(req: DecodedRequest, backend: Any, authorizer: Any = None) -> Any:
    """ConsumerGroupDescribe v0-1: one described group per requested id (GROUP_ID_NOT_FOUND for
    a group that is not a consumer-protocol group, INVALID_GROUP_ID for an empty id). With
    ``include_authorized_operations``, a described group carries the group's authorized-operations
    bitfield for the connection's ``authorizer`` (``KafkaApis.handleConsumerGroupDescribe``),
    Integer.MIN_VALUE otherwise."""
    cls = response_class(69, req.api_version)

    def assignment(parts: Any) -> Any:
        return nested(cls, "Assignment", topic_partitions=tuple(
            nested(cls, "TopicPartitions", topic_id=uuid.UUID(tid), topic_name=name, partitions=tuple(i32(p) for p in ps))
            for tid, name, ps in parts))

    want_ops = bool(getattr(req.body, "include_authorized_operations", False))
    groups = []
    for gid in req.body.group_ids:
        gid = str(gid or "")
        if not gid:
            groups.append(nested(cls, "DescribedGroup", error_code=error_code("INVALID_GROUP_ID"), error_message=None,
                                 group_id=gid, group_state="", group_epoch=i32(0), assignment_epoch=i32(0), assignor_name="",
                                 members=()))
            continue
        d = backend.consumer_group_describe(gid)
        if d.error is not None:
            groups.append(nested(cls, "DescribedGroup", error_code=error_code(d.error), error_message=getattr(d, "message", None),
                                 group_id=gid, group_state="", group_epoch=i32(0), assignment_epoch=i32(0), assignor_name="",
                                 members=()))
            continue
        members = tuple(
            nested(cls, "Member", member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                   member_epoch=i32(m.member_epoch), client_id=m.client_id, client_host=m.client_host,
                   subscribed_topic_names=tuple(m.subscribed_topic_names), subscribed_topic_regex=None,
                   assignment=assignment(m.assignment), target_assignment=assignment(m.target_assignment), member_type=i8(1))
            for m in d.members)
        ops = authz.authorized_operations(authorizer, "GROUP", gid) if want_ops else authz.NO_OPERATIONS
        groups.append(nested(cls, "DescribedGroup", error_code=error_code(None), error_message=None, group_id=gid,
                             group_state=d.state, group_epoch=i32(d.group_epoch), assignment_epoch=i32(d.assignment_epoch),
                             assignor_name=d.assignor_name, members=members, authorized_operations=i32(ops)))
    return build(cls, throttle_time=NO_THROTTLE, groups=tuple(groups))
