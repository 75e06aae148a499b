"""KIP-848 consumer groups on a real daemon (``app.py run``) with confluent-kafka's
``Consumer({"group.protocol": "consumer"})``: records produced are read back exactly and the
committed offsets survive a daemon restart; a second member makes the group rebalance to two
disjoint sets of partitions covering the topic; a member process SIGKILLed loses its partitions
to the survivor after the session timeout (lowered through the daemon's overrides)."""

from __future__ import annotations

import time
import uuid

from tests.e2e.helpers import admin, create_topic, group_consumer, poll_records, produce, read_back_commit_restart

#: a short consumer session so the SIGKILL test does not wait 45 s (inside Kafka's bounds once
#: the minimums are lowered with it)
FAST = {
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "6000",
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
}


def consumer(bootstrap: str, group: str, **conf):
    """A KIP-848 (``group.protocol=consumer``) group consumer (:func:`group_consumer`)."""
    return group_consumer(bootstrap, group, **{"group.protocol": "consumer", **conf})


read = poll_records


def describe(bootstrap: str, group: str):
    a = admin(bootstrap)
    return a.describe_consumer_groups([group], request_timeout=30)[group].result(30)


def test_consumer_protocol_reads_back_exactly_and_commits_survive_restart(daemon_factory):
    def listed_as_consumer_group(d, group):
        desc = describe(d.bootstrap, group)
        assert str(getattr(desc.type, "name", desc.type)).upper() == "CONSUMER"
        assert len(desc.members) == 1
        adm = admin(d.bootstrap)  # kept alive until the future resolves
        res = adm.list_consumer_groups(request_timeout=30).result(30)
        listed = {g.group_id: g for g in res.valid}
        assert group in listed, (res.valid, res.errors, [(g.group_id, g.type, g.state) for g in res.valid])
        assert str(getattr(listed[group].type, "name", listed[group].type)).upper() == "CONSUMER"

    read_back_commit_restart(daemon_factory, consumer, "cp", listed_as_consumer_group)


def _owned(c) -> set[int]:
    return {tp.partition for tp in c.assignment()}


def test_second_member_rebalances_to_disjoint_partitions(daemon_factory):
    d = daemon_factory()
    topic, group = f"cp-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(d.bootstrap, topic, 4)
    a = consumer(d.bootstrap, group)
    a.subscribe([topic])
    deadline = time.monotonic() + 60
    while len(_owned(a)) < 4 and time.monotonic() < deadline:
        a.poll(0.1)
    assert _owned(a) == {0, 1, 2, 3}
    b = consumer(d.bootstrap, group)
    b.subscribe([topic])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        a.poll(0.05)
        b.poll(0.05)
        pa, pb = _owned(a), _owned(b)
        if pa and pb and not pa & pb and pa | pb == {0, 1, 2, 3}:
            break
    pa, pb = _owned(a), _owned(b)
    assert pa and pb and not pa & pb and pa | pb == {0, 1, 2, 3}, (pa, pb)
    values = [f"x{i}" for i in range(40)]
    produce(d.bootstrap, topic, values, partitioner=lambda i: i % 4)
    got: dict[str, list[tuple[int, int, str]]] = {"a": [], "b": []}
    deadline = time.monotonic() + 60
    while len(got["a"]) + len(got["b"]) < 40 and time.monotonic() < deadline:
        for name, c in (("a", a), ("b", b)):
            msg = c.poll(0.2)
            if msg is not None and not msg.error():
                got[name].append((msg.partition(), msg.offset(), msg.value().decode()))
    assert sorted(v for r in got.values() for _, _, v in r) == sorted(values)
    assert {p for p, _, _ in got["a"]} <= pa and {p for p, _, _ in got["b"]} <= pb
    desc = describe(d.bootstrap, group)
    assert len(desc.members) == 2
    # b leaves (heartbeat at epoch -1 on close): a gets every partition back at once
    b.close()
    left_at = time.monotonic()
    while time.monotonic() - left_at < 30 and len(_owned(a)) < 4:
        a.poll(0.1)
    assert _owned(a) == {0, 1, 2, 3}
    a.close()


_MEMBER_SCRIPT = """
import sys
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "group.protocol": "consumer",
              "auto.offset.reset": "earliest"})
c.subscribe([sys.argv[3]])
while True:
    c.poll(0.2)
    if c.assignment():
        print("ASSIGNED", sorted(tp.partition for tp in c.assignment()), flush=True)
"""


def test_killed_member_loses_its_partitions_after_the_session(daemon_factory, tmp_path):
    import signal
    import subprocess
    import sys

    d = daemon_factory(**FAST)
    topic, group = f"cp-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(d.bootstrap, topic, 4)
    script = tmp_path / "member.py"
    script.write_text(_MEMBER_SCRIPT)
    out = tmp_path / "member.out"
    with open(out, "w") as fh:
        proc = subprocess.Popen([sys.executable, str(script), d.bootstrap, group, topic], stdout=fh, stderr=subprocess.STDOUT)
    try:
        a = consumer(d.bootstrap, group)
        a.subscribe([topic])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            a.poll(0.1)
            pa = _owned(a)
            if pa and len(pa) < 4 and "ASSIGNED" in out.read_text():
                break
        pa = _owned(a)
        assert pa and len(pa) < 4, (pa, out.read_text())
    finally:
        proc.send_signal(signal.SIGKILL)  # no leave heartbeat: only the session timeout fences it
        proc.wait(10)
    killed_at = time.monotonic()
    deadline = killed_at + 60
    while time.monotonic() < deadline and len(_owned(a)) < 4:
        a.poll(0.1)
    assert _owned(a) == {0, 1, 2, 3}
    assert time.monotonic() - killed_at >= 4  # not before the session (6 s) runs out
    values = [f"k{i}" for i in range(8)]
    produce(d.bootstrap, topic, values, partitioner=lambda i: i % 4)
    assert sorted(v for _, _, v in read(a, 8)) == sorted(values)
    a.close()


# ----------------------------------------------------------------------------- raw requests


def _ask(port: int, api: int, version: int, body, timeout_s: float = 15) -> object:
    from tests.e2e.helpers import raw_request
    from wire.protocol import decode_response, encode_request, request_header

    resp = raw_request(port, encode_request(request_header(api, version, 7), body), timeout_s=timeout_s)
    assert resp is not None, f"no response to api {api}"
    return decode_response(resp, api, version)[1]


def _cghb(port: int, version: int, group: str, member: str, epoch: int, topics=None, owned=None, rto: int = -1, assignor=None):
    import datetime

    from kio.index import load_request_schema
    from kio.static.primitive import i32

    from wire.entities import build

    cls = load_request_schema(68, version)
    return _ask(port, 68, version, build(
        cls, group_id=group, member_id=member, member_epoch=i32(epoch), instance_id=None, rack_id=None,
        rebalance_timeout=datetime.timedelta(milliseconds=rto), subscribed_topic_names=topics, subscribed_topic_regex=None,
        server_assignor=assignor, topic_partitions=owned))


def test_consumer_protocol_over_raw_requests(daemon_factory):
    """v0 (coordinator-made member id) and v1 heartbeats, validation errors, ConsumerGroupDescribe,
    and one type per group id: share ↔ consumer, a non-empty classic group."""
    import datetime

    from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
    from kio.schema.errors import ErrorCode
    from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
    from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
    from kio.static.primitive import i32

    d = daemon_factory()
    topic, group = f"cp-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    create_topic(d.bootstrap, topic, 2)
    r = _cghb(d.port, 0, group, "", 0, (topic,), (), 30000)
    assert r.error_code == ErrorCode.none and r.member_id and r.member_epoch == 1
    assert r.heartbeat_interval == datetime.timedelta(milliseconds=500)  # Shoal's default (config.py)
    assert sorted(r.assignment.topic_partitions[0].partitions) == [0, 1]
    mid = r.member_id
    r = _cghb(d.port, 0, group, mid, 1)
    assert r.error_code == ErrorCode.none and r.assignment is None
    assert _cghb(d.port, 0, group, mid, 5).error_code == ErrorCode.fenced_member_epoch
    assert _cghb(d.port, 0, group, "", 0, (topic,), None, 30000).error_code == ErrorCode.invalid_request
    assert _cghb(d.port, 0, group, "", 0, (topic,), (), 30000, "bar").error_code == ErrorCode.unsupported_assignor
    assert _cghb(d.port, 1, group, "", 0, (topic,), (), 30000).error_code == ErrorCode.invalid_request  # v1: id required
    r = _cghb(d.port, 1, group, "client-id-1", 0, (topic,), (), 30000)
    assert r.error_code == ErrorCode.none and r.member_id == "client-id-1" and r.member_epoch == 2
    desc = _ask(d.port, 69, 1, ConsumerGroupDescribeRequest(group_ids=(group, "missing", ""), include_authorized_operations=False))
    g, missing, empty = desc.groups
    assert g.error_code == ErrorCode.none and g.group_epoch == 2 and g.assignor_name == "uniform"
    assert {m.member_id for m in g.members} == {mid, "client-id-1"} and all(m.member_type == 1 for m in g.members)
    assert missing.error_code == ErrorCode.group_id_not_found and empty.error_code == ErrorCode.invalid_group_id
    # one type per group id
    ms = datetime.timedelta(milliseconds=10000)
    join = JoinGroupRequest(group_id=group, session_timeout=ms, rebalance_timeout=ms, member_id="", group_instance_id=None,
                            protocol_type="consumer", protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),), reason=None)
    assert _ask(d.port, 11, 9, join).error_code == ErrorCode.inconsistent_group_protocol
    share_hb = ShareGroupHeartbeatRequest(group_id=group, member_id=str(uuid.uuid4()), member_epoch=i32(0), rack_id=None,
                                          subscribed_topic_names=(topic,))
    assert _ask(d.port, 76, 1, share_hb).error_code == ErrorCode.group_id_not_found
    share = f"s-{uuid.uuid4().hex[:6]}"
    assert _ask(d.port, 76, 1, ShareGroupHeartbeatRequest(group_id=share, member_id=str(uuid.uuid4()), member_epoch=i32(0),
                                                          rack_id=None, subscribed_topic_names=(topic,))).error_code == ErrorCode.none
    assert _cghb(d.port, 0, share, "", 0, (topic,), (), 30000).error_code == ErrorCode.group_id_not_found
    classic = f"c-{uuid.uuid4().hex[:6]}"
    r = _ask(d.port, 11, 9, JoinGroupRequest(group_id=classic, session_timeout=ms, rebalance_timeout=ms, member_id="",
                                             group_instance_id=None, protocol_type="consumer",
                                             protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),), reason=None))
    assert r.error_code == ErrorCode.member_id_required
    # a classic member waiting in PreparingRebalance (the initial delay): the group is not empty
    import threading

    joined = threading.Thread(target=_ask, args=(d.port, 11, 9, JoinGroupRequest(
        group_id=classic, session_timeout=ms, rebalance_timeout=ms, member_id=r.member_id, group_instance_id=None,
        protocol_type="consumer", protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),), reason=None)), daemon=True)
    joined.start()
    time.sleep(1)
    assert _cghb(d.port, 0, classic, "", 0, (topic,), (), 30000).error_code == ErrorCode.group_id_not_found
    joined.join(30)
    # the member leaves: the consumer group is Empty, ListGroups shows it as a consumer group
    assert _cghb(d.port, 0, group, mid, -1).error_code == ErrorCode.none
    assert _cghb(d.port, 1, group, "client-id-1", -1).error_code == ErrorCode.none
    from kio.schema.list_groups.v5.request import ListGroupsRequest

    listed = {x.group_id: (x.group_type, x.protocol_type, x.group_state) for x in _ask(d.port, 16, 5, ListGroupsRequest(states_filter=(), types_filter=("consumer",))).groups}
    assert listed == {group: ("consumer", "consumer", "Empty")}
    # an empty consumer group becomes classic again on JoinGroup (#47)
    assert _ask(d.port, 11, 9, join).error_code == ErrorCode.member_id_required
    listed = {x.group_id: x.group_type for x in _ask(d.port, 16, 5, ListGroupsRequest(states_filter=(), types_filter=())).groups}
    assert listed[group] == "classic"
