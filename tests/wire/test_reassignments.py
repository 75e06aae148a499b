"""AlterPartitionReassignments (45) and ListPartitionReassignments (46) on the wire (KIP-455):
kio-encoded requests through a real KafkaListener and KafkaDispatcher, to a backend whose answers
come from the controller's own decider (``actors.controller.state``) over brokers 1–3; the
single-node FakeBackend; ApiVersions; and the cluster ACLs (ALTER / DESCRIBE on CLUSTER, as
Kafka's ``ControllerApis`` requires)."""

from __future__ import annotations

import socket

import pytest
from kio.schema.alter_partition_reassignments.v0.request import AlterPartitionReassignmentsRequest, ReassignablePartition, ReassignableTopic
from kio.schema.list_partition_reassignments.v0.request import ListPartitionReassignmentsRequest, ListPartitionReassignmentsTopics
from kio.static.primitive import i32

from actors.controller import state as S
from actors.controller import topics as tp
from tests.e2e.helpers import read_frame
from tests.wire.fake_backend import FakeBackend
from wire.backend import TopicSpec
from wire.dispatch import SUPPORTED, KafkaDispatcher
from wire.protocol import decode_response, encode_request, request_header
from wire.server import KafkaListener


class DeciderBackend(FakeBackend):
    """FakeBackend whose reassignment APIs are decided by the controller's decider (brokers 1–3,
    topic ``t`` with partitions [1,2] and [2,3]); ``refuse`` answers every request with that
    top-level error (a node that is not the active controller)."""

    def __init__(self) -> None:
        super().__init__()
        self.state = S.ControllerState(brokers=(1, 2, 3))
        self.refuse: str | None = None
        cmd = tp.CreateTopics((tp.CreatableTopic("t", assignments=((0, (1, 2)), (1, (2, 3)))),), topic_ids=(("t", tp.new_topic_id()),))
        self._apply(cmd)

    def _apply(self, cmd):
        d = S.decide(self.state, cmd, 0)
        for e in d.events:
            S.apply(self.state, e)
            self.state.version += 1
        return d

    def alter_partition_reassignments(self, reassignments):
        if self.refuse:
            return self.refuse, []
        d = self._apply(S.AlterPartitionReassignments(tuple(reassignments)))
        return None, [(r.topic, r.partition, r.error, r.message) for r in d.reply]

    def list_partition_reassignments(self, partitions):
        if self.refuse:
            return self.refuse, []
        return None, [(o.topic, o.partition, o.replicas, o.adding, o.removing) for o in S.list_partition_reassignments(self.state, partitions)]


@pytest.fixture
def serve():
    made = []

    def start(backend, authorizer=None) -> int:
        lst = KafkaListener("127.0.0.1", 0, KafkaDispatcher(backend, auto_create_topics=False, authorizer=authorizer), max_request_bytes=1 << 20).start()
        made.append(lst)
        return lst.port

    yield start
    for lst in made:
        lst.stop()


def _ask(port: int, api_key: int, req) -> object:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(encode_request(request_header(api_key, 0, 7), req))
        _, resp = decode_response(read_frame(s), api_key, 0)
    return resp


def _alter(port: int, *entries) -> object:
    topics: dict[str, list] = {}
    for t, p, replicas in entries:
        topics.setdefault(t, []).append(ReassignablePartition(partition_index=i32(p), replicas=None if replicas is None else tuple(i32(r) for r in replicas)))
    return _ask(port, 45, AlterPartitionReassignmentsRequest(topics=tuple(ReassignableTopic(name=t, partitions=tuple(ps)) for t, ps in topics.items())))


def _list(port: int, topics=None) -> object:
    body = None if topics is None else tuple(ListPartitionReassignmentsTopics(name=t, partition_indexes=tuple(i32(p) for p in ps)) for t, ps in topics)
    return _ask(port, 46, ListPartitionReassignmentsRequest(topics=body))


def _errors(resp) -> list[tuple[str, int, int]]:
    return [(t.name, int(p.partition_index), int(p.error_code)) for t in resp.responses for p in t.partitions]


def _ongoing(resp) -> list[tuple[str, int, list[int], list[int], list[int]]]:
    return [
        (t.name, int(p.partition_index), [int(r) for r in p.replicas], [int(r) for r in p.adding_replicas], [int(r) for r in p.removing_replicas])
        for t in resp.topics
        for p in t.partitions
    ]


def test_both_apis_are_advertised_at_v0():
    assert SUPPORTED[45] == (0, 0) and SUPPORTED[46] == (0, 0)


def test_alter_then_list_then_cancel_over_the_wire(serve):
    port = serve(DeciderBackend())
    resp = _alter(port, ("t", 0, (2, 3)), ("t", 1, (3, 9)), ("t", 7, (1,)), ("nope", 0, (1,)))
    assert int(resp.error_code) == 0 and resp.error_message is None
    assert _errors(resp) == [("t", 0, 0), ("t", 1, 39), ("t", 7, 3), ("nope", 0, 3)]  # 39 INVALID_REPLICA_ASSIGNMENT
    assert _ongoing(_list(port)) == [("t", 0, [2, 3, 1], [3], [1])]
    assert _ongoing(_list(port, [("t", (1, 0)), ("nope", (0,))])) == [("t", 0, [2, 3, 1], [3], [1])]
    assert _ongoing(_list(port, [("t", (1,))])) == []
    resp = _alter(port, ("t", 0, None), ("t", 1, None))
    assert _errors(resp) == [("t", 0, 0), ("t", 1, 85)]  # 85 NO_REASSIGNMENT_IN_PROGRESS
    assert _ongoing(_list(port)) == []


def test_a_node_that_is_not_the_active_controller_refuses_the_whole_request(serve):
    be = DeciderBackend()
    be.refuse = "NOT_CONTROLLER"
    port = serve(be)
    resp = _alter(port, ("t", 0, (2, 3)))
    assert int(resp.error_code) == 41 and _errors(resp) == [("t", 0, 41)]
    assert int(_list(port).error_code) == 41


def test_single_node_reassigning_to_itself_is_a_no_op_and_elsewhere_invalid(serve):
    be = FakeBackend()
    be.create_topics([TopicSpec("s", 1, 1)], False)
    port = serve(be)
    assert _errors(_alter(port, ("s", 0, (1,)), ("s", 0, (2,)))) == [("s", 0, 0), ("s", 0, 39)]
    assert _ongoing(_list(port)) == []


class _Only:
    """An authorizer allowing exactly ``operations`` on the cluster resource."""

    def __init__(self, *operations: str) -> None:
        self.operations = set(operations)

    def check(self, operation, resource_type, name):
        return resource_type == "CLUSTER" and operation in self.operations


@pytest.mark.parametrize("granted", [(), ("DESCRIBE",), ("ALTER",)])
def test_alter_needs_alter_and_list_needs_describe_on_the_cluster(serve, granted):
    be = DeciderBackend()
    port = serve(be, authorizer=_Only(*granted))
    resp = _alter(port, ("t", 0, (2, 3)))
    if "ALTER" in granted:
        assert _errors(resp) == [("t", 0, 0)]
    else:
        assert int(resp.error_code) == 31 and _errors(resp) == [("t", 0, 31)]  # CLUSTER_AUTHORIZATION_FAILED
        assert not S.list_partition_reassignments(be.state)
    listed = _list(port)
    assert int(listed.error_code) == (0 if "DESCRIBE" in granted else 31)
