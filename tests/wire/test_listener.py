"""The listener over real sockets, with the in-memory FakeBackend (no actors): framing errors
close only their own connection, responses keep request order on a pipelined connection, and
real confluent-kafka clients (AdminClient, Producer, Consumer) work against it."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from tests.e2e.helpers import read_frame, readable, wait_for
from tests.wire.fake_backend import FakeBackend
from wire.dispatch import KafkaDispatcher
from wire.protocol import decode_response, encode_request, request_header
from wire.server import KafkaListener


@pytest.fixture()
def listener():
    be = FakeBackend()
    lst = KafkaListener("127.0.0.1", 0, KafkaDispatcher(be, auto_create_topics=False), max_request_bytes=1 << 20).start()
    be.port = lst.port
    yield lst, be
    lst.stop()


def _api_versions_frame(correlation_id: int) -> bytes:
    from kio.schema.api_versions.v3.request import ApiVersionsRequest

    return encode_request(request_header(18, 3, correlation_id), ApiVersionsRequest(client_software_name="t", client_software_version="1"))


def test_pipelined_requests_are_answered_in_order(listener):
    lst, _ = listener
    with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as s:
        s.sendall(b"".join(_api_versions_frame(i) for i in range(1, 21)))
        ids = [decode_response(read_frame(s), 18, 3)[0] for _ in range(20)]
    assert ids == list(range(1, 21))


@pytest.mark.parametrize(
    "payload",
    [
        struct.pack(">i", 2 << 20),  # above max_request_bytes
        struct.pack(">i", 0),
        struct.pack(">i", -1),
        struct.pack(">i", 20) + struct.pack(">hhih", 3, 12, 1, -1) + b"\xff" * 10,  # garbage body
    ],
)
def test_bad_frame_closes_only_its_connection(listener, payload):
    lst, _ = listener
    good = socket.create_connection(("127.0.0.1", lst.port), timeout=5)
    try:
        good.sendall(_api_versions_frame(1))
        assert decode_response(read_frame(good), 18, 3)[0] == 1
        with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as bad:
            bad.sendall(payload)
            assert read_frame(bad) is None  # closed by the listener
        good.sendall(_api_versions_frame(2))
        assert decode_response(read_frame(good), 18, 3)[0] == 2
    finally:
        good.close()


def test_unknown_api_key_is_answered_and_the_connection_stays_open(listener):
    lst, _ = listener
    with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as s:
        req = struct.pack(">hhih", 4242, 0, 9, -1)
        s.sendall(struct.pack(">i", len(req)) + req)
        assert struct.unpack(">ih", read_frame(s)) == (9, 35)
        s.sendall(_api_versions_frame(10))
        assert decode_response(read_frame(s), 18, 3)[0] == 10


def test_real_clients_create_produce_and_fetch(listener):
    """confluent-kafka AdminClient/Producer/Consumer against the listener (FakeBackend)."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    lst, be = listener
    bs = f"127.0.0.1:{lst.port}"
    a = AdminClient({"bootstrap.servers": bs})
    a.create_topics([NewTopic("t", 2)])["t"].result(10)
    p = Producer({"bootstrap.servers": bs, "linger.ms": 1})
    for i in range(100):
        p.produce("t", value=b"m%d" % i, partition=i % 2)
    assert p.flush(10) == 0
    c = Consumer({"bootstrap.servers": bs, "group.id": "x", "enable.auto.commit": False})
    c.assign([TopicPartition("t", 0, 0), TopicPartition("t", 1, 0)])
    got = set()
    deadline = time.monotonic() + 20
    while len(got) < 100 and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.add(m.value())
    c.close()
    assert got == {b"m%d" % i for i in range(100)}


def test_delete_topics_answers_duplicates_and_bad_entries_as_kafka_does(listener):
    """Kafka ``ControllerApis.deleteTopics``: a name or id given twice is answered once with
    INVALID_REQUEST and not deleted; name+id, neither, a name mapping to a given id are refused."""
    import datetime
    import uuid

    from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState

    from wire.backend import TopicSpec

    lst, be = listener
    be.create_topics([TopicSpec(n, 1, 1, {}) for n in ("a", "b", "c", "d")], False)
    ids = {t.name: t.topic_id for t in be.topics()}
    zero = uuid.UUID(int=0)
    req = DeleteTopicsRequest(
        topics=(
            DeleteTopicState(name="a", topic_id=zero),
            DeleteTopicState(name="a", topic_id=zero),
            DeleteTopicState(name="a", topic_id=zero),
            DeleteTopicState(name=None, topic_id=ids["b"]),
            DeleteTopicState(name="b", topic_id=zero),  # maps to an id already given
            DeleteTopicState(name="c", topic_id=ids["c"]),  # both
            DeleteTopicState(name=None, topic_id=zero),  # neither
            DeleteTopicState(name="d", topic_id=zero),
            DeleteTopicState(name="nope", topic_id=zero),
            DeleteTopicState(name=None, topic_id=uuid.UUID(int=7)),
        ),
        timeout=datetime.timedelta(seconds=1),
    )
    with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as s:
        s.sendall(encode_request(request_header(20, 6, 9), req))
        _, resp = decode_response(read_frame(s), 20, 6)
    got = sorted((r.name or "", str(r.topic_id or zero), int(r.error_code), r.error_message or "") for r in resp.responses)
    assert got == sorted([
        ("a", str(zero), 42, "Duplicate topic name."),
        ("b", str(ids["b"]), 42, "The provided topic name maps to an ID that was already supplied."),
        ("c", str(ids["c"]), 42, "You may not specify both topic name and topic id."),
        ("", str(zero), 42, "Neither topic name nor id were specified."),
        ("d", str(ids["d"]), 0, ""),
        ("nope", str(zero), 3, ""),
        ("", str(uuid.UUID(int=7)), 100, ""),
    ])
    assert {t.name for t in be.topics()} == {"a", "b", "c"}  # only d was deleted


class _DeferringDispatcher:
    """ApiVersions only: correlation id 1 is answered with a Deferred that completes once
    :attr:`release` is set (or raises, with ``fail``); the others at once. :attr:`handled` lists
    the correlation ids in the order the listener handed them over."""

    def __init__(self, fail: bool = False) -> None:
        import threading

        inner = KafkaDispatcher(FakeBackend(), auto_create_topics=False)
        self.supported = inner.supported
        self._inner = inner
        self.release = threading.Event()
        self.fail = fail
        self.handled: list[int] = []
        self.pipelined: list[bool] = []

    def handle(self, request, conn):
        from wire.protocol import Deferred

        self.handled.append(request.correlation_id)
        self.pipelined.append(conn.pipelined)
        response = self._inner.handle(request, conn)
        if request.correlation_id != 1:
            return response

        def complete():
            assert self.release.wait(10)
            if self.fail:
                raise RuntimeError("completion failed")
            return response

        return Deferred(complete)

    def unsupported(self, exc):
        return self._inner.unsupported(exc)

    def connection_closed(self, conn):
        pass


@pytest.fixture()
def deferring():
    made = []

    def make(fail: bool = False):
        d = _DeferringDispatcher(fail)
        lst = KafkaListener("127.0.0.1", 0, d, max_request_bytes=1 << 20).start()
        made.append(lst)
        return lst, d

    yield make
    for lst in made:
        lst.stop()


def test_a_deferred_response_does_not_hold_up_the_requests_behind_it_and_answers_stay_in_order(deferring):
    lst, d = deferring()
    with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as s:
        s.sendall(b"".join(_api_versions_frame(i) for i in (1, 2, 3)))
        assert wait_for(lambda: d.handled == [1, 2, 3], 5, 0.01), d.handled
        assert not readable(s, 0.3), "an answer overtook the deferred one"
        d.release.set()
        ids = [decode_response(read_frame(s), 18, 3)[0] for _ in range(3)]
    assert ids == [1, 2, 3]
    assert d.pipelined == [True, True, True]


def test_a_pipelined_connection_reads_at_most_pipeline_depth_requests_ahead(deferring):
    from wire.server import PIPELINE_DEPTH

    lst, d = deferring()
    n = PIPELINE_DEPTH + 3
    with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as s:
        s.sendall(b"".join(_api_versions_frame(i) for i in range(1, n + 1)))
        assert wait_for(lambda: len(d.handled) == PIPELINE_DEPTH, 5, 0.01)
        time.sleep(0.3)
        assert d.handled == list(range(1, PIPELINE_DEPTH + 1)), "read past the pipeline depth while the first answer was owed"
        d.release.set()
        ids = [decode_response(read_frame(s), 18, 3)[0] for _ in range(n)]
    assert ids == list(range(1, n + 1))


def test_a_deferred_response_that_fails_closes_only_its_connection(deferring):
    lst, d = deferring(fail=True)
    with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as s:
        s.sendall(_api_versions_frame(1) + _api_versions_frame(2))
        assert wait_for(lambda: d.handled == [1, 2], 5, 0.01)
        d.release.set()
        assert read_frame(s) is None  # neither answer: the first could not be completed
    with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as s:
        s.sendall(_api_versions_frame(7))
        assert decode_response(read_frame(s), 18, 3)[0] == 7


def test_a_bad_frame_behind_deferred_responses_closes_the_connection_after_answering_them(deferring):
    """A muted Kafka channel answers a request before it reads the next frame; a pipelined one
    that meets a bad frame first writes what it owes, then closes."""
    lst, d = deferring()
    with socket.create_connection(("127.0.0.1", lst.port), timeout=10) as s:
        s.sendall(_api_versions_frame(1) + _api_versions_frame(2) + struct.pack(">i", 0))
        assert wait_for(lambda: d.handled == [1, 2], 5, 0.01)
        time.sleep(0.1)  # the reader meets the bad frame while answer 1 is still owed
        d.release.set()
        assert [decode_response(read_frame(s), 18, 3)[0] for _ in range(2)] == [1, 2]
        assert read_frame(s) is None
