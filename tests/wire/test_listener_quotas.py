"""Connection quotas, ``queued.max.requests`` and ``socket.request.max.bytes`` on a real listener
(FakeBackend, no actors): a connection over its address's limit is closed at once, a connection over
``max.connections`` waits in the backlog until another closes, a request waits for a slot while
``queued.max.requests`` are being handled (but a stalled frame or a long-polling Fetch holds none),
a large declared frame is not allocated up front, and ``connections.max.idle.ms`` closes a
connection that does not complete a frame."""

from __future__ import annotations

import socket
import struct
import threading
import tracemalloc
import types

import pytest

from tests.wire.fake_backend import FakeBackend
from tests.e2e.helpers import read_frame
from tests.wire.test_listener import _api_versions_frame
from wire.dispatch import KafkaDispatcher
from wire.protocol import decode_response
from wire.quotas import ListenerLimits
from wire import server as server_mod
from wire.server import KafkaListener


def _listener(dispatcher=None, **cfg: str) -> tuple[KafkaListener, ListenerLimits]:
    limits = ListenerLimits.from_config(cfg)
    be = FakeBackend()
    lst = KafkaListener("127.0.0.1", 0, dispatcher or KafkaDispatcher(be, auto_create_topics=False), limits.max_request_bytes, limits=limits).start()
    be.port = lst.port
    return lst, limits


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _works(s: socket.socket, cid: int) -> bool:
    s.sendall(_api_versions_frame(cid))
    frame = read_frame(s)
    return frame is not None and decode_response(frame, 18, 3)[0] == cid


def _closed(s: socket.socket) -> bool:
    try:
        s.sendall(_api_versions_frame(99))
        return read_frame(s) is None
    except (ConnectionError, OSError):
        return True


def _wait_until(cond, what: str) -> None:
    ev = threading.Event()
    for _ in range(2000):  # a bound, not a timing assertion
        if cond():
            return
        ev.wait(0.005)
    raise AssertionError(f"never: {what}")


def test_a_connection_over_max_connections_per_ip_is_closed_and_others_are_not_affected():
    lst, limits = _listener(**{"max.connections.per.ip": "2"})
    try:
        a, b = _connect(lst.port), _connect(lst.port)
        assert _works(a, 1) and _works(b, 2)
        c = _connect(lst.port)
        assert _closed(c)
        assert _works(a, 3)
        assert limits.connections.rejected == 1
        a.close()
        _wait_until(lambda: limits.connections.count("127.0.0.1") == 1, "the closed connection is uncounted")
        d = _connect(lst.port)
        assert _works(d, 4)
        for s in (b, c, d):
            s.close()
    finally:
        lst.stop()


def test_the_per_ip_override_applies_to_its_address():
    lst, limits = _listener(**{"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:1"})
    try:
        a = _connect(lst.port)
        assert _works(a, 1)
        b = _connect(lst.port)
        assert _closed(b)
        a.close(), b.close()
    finally:
        lst.stop()


def test_over_max_connections_a_connection_waits_until_another_closes():
    lst, limits = _listener(**{"max.connections": "1"})
    try:
        a = _connect(lst.port)
        assert _works(a, 1)
        b = _connect(lst.port)  # completes in the listen backlog
        b.sendall(_api_versions_frame(2))
        _wait_until(lambda: limits.connections.waited == 1, "the acceptor waits for a slot")
        assert limits.connections.total == 1
        a.close()
        frame = read_frame(b)  # answered once the first connection closed
        assert frame is not None and decode_response(frame, 18, 3)[0] == 2
        b.close()
    finally:
        lst.stop()


class _GatedDispatcher(KafkaDispatcher):
    """Metadata (3) requests wait for ``gate``; everything else as usual."""

    def __init__(self) -> None:
        super().__init__(FakeBackend(), auto_create_topics=False)
        self.gate = threading.Event()
        self.entered = threading.Event()

    def handle(self, request, conn):
        if request.api_key == 3:
            self.entered.set()
            self.gate.wait(30)
        return super().handle(request, conn)


def test_queued_max_requests_bounds_requests_in_flight_across_connections():
    from kio.schema.metadata.v12.request import MetadataRequest

    from wire.protocol import encode_request, request_header

    disp = _GatedDispatcher()
    lst, limits = _listener(disp, **{"queued.max.requests": "1"})
    try:
        slow, fast = _connect(lst.port), _connect(lst.port)
        slow.sendall(encode_request(request_header(3, 12, 7), MetadataRequest(topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False)))
        assert disp.entered.wait(10)
        fast.sendall(_api_versions_frame(8))
        _wait_until(lambda: limits.requests.waited == 1, "the second request waits for a slot")
        assert limits.requests.in_flight == 1
        disp.gate.set()
        assert read_frame(slow) is not None
        frame = read_frame(fast)
        assert frame is not None and decode_response(frame, 18, 3)[0] == 8
        _wait_until(lambda: limits.requests.in_flight == 0, "slots are given back")
        slow.close(), fast.close()
    finally:
        disp.gate.set()
        lst.stop()


def test_a_frame_over_socket_request_max_bytes_closes_before_reading():
    lst, limits = _listener(**{"socket.request.max.bytes": "1024"})
    try:
        s = _connect(lst.port)
        s.sendall(struct.pack(">i", 1025))
        assert read_frame(s) is None
        assert limits.requests.in_flight == 0
        s.close()
    finally:
        lst.stop()


def test_a_declared_large_frame_is_not_allocated_before_its_bytes_arrive():
    lst, limits = _listener()  # socket.request.max.bytes = 100 MiB
    try:
        tracemalloc.start()
        s = _connect(lst.port)
        s.sendall(struct.pack(">i", 50 * 1024 * 1024) + b"0123456789")
        s.close()  # the listener reads the 10 bytes, then EOF
        _wait_until(lambda: limits.connections.total == 0, "the connection ended")
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        lst.stop()
    assert peak < 4 * 1024 * 1024
    assert limits.requests.in_flight == 0


def test_a_client_that_declares_a_size_and_stalls_holds_no_request_slot(monkeypatch):
    """queued.max.requests=1: a connection that sent ``00 00 00 64`` and 3 bytes of body must not
    block the others (the slot is taken only once the whole body has arrived)."""
    reading = threading.Event()
    real = server_mod.recv_body

    def spy(sock, size, *a):
        reading.set()  # the size is read, the body is being read
        return real(sock, size, *a)

    monkeypatch.setattr(server_mod, "recv_body", spy)
    lst, limits = _listener(**{"queued.max.requests": "1"})
    try:
        stalled = _connect(lst.port)
        stalled.sendall(struct.pack(">i", 100) + b"abc")
        assert reading.wait(10)
        other = _connect(lst.port)
        assert _works(other, 1) and _works(other, 2)
        assert limits.requests.waited == 0  # never queued behind the stalled frame
        _wait_until(lambda: limits.requests.in_flight == 0, "the answered requests give their slots back")
        stalled.close(), other.close()
    finally:
        lst.stop()


def _fetch_frame(cid: int, topic: str, max_wait_s: float) -> bytes:
    import datetime

    from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
    from kio.static.primitive import i32, i64

    from wire.protocol import encode_request, request_header

    part = FetchPartition(partition=i32(0), fetch_offset=i64(0), partition_max_bytes=i32(1 << 20))
    body = FetchRequest(max_wait=datetime.timedelta(seconds=max_wait_s), min_bytes=i32(1), topics=(FetchTopic(topic=topic, partitions=(part,)),), forgotten_topics_data=())
    return encode_request(request_header(1, 12, cid), body)


def test_a_long_polling_fetch_holds_no_request_slot():
    """queued.max.requests=1: a Fetch waiting for records (Kafka: a DelayedFetch in purgatory)
    leaves the slot to other requests; it is answered when records arrive."""
    from tests.wire.test_protocol import make_batch

    be = FakeBackend()
    be.create_topics([types.SimpleNamespace(name="t", partitions=1)], False)
    waiting = threading.Event()
    real_wait = be.wait_for_data

    def spy(timeout_ms, since=None):
        waiting.set()
        return real_wait(timeout_ms, since)

    be.wait_for_data = spy
    lst, limits = _listener(KafkaDispatcher(be, auto_create_topics=False), **{"queued.max.requests": "1"})
    try:
        poller, other = _connect(lst.port), _connect(lst.port)
        poller.sendall(_fetch_frame(5, "t", 60))
        assert waiting.wait(10)
        assert limits.requests.in_flight == 0
        assert _works(other, 6)
        assert limits.requests.waited == 0
        assert be.produce("t", 0, make_batch([b"x"]), -1).error is None
        frame = read_frame(poller)
        assert frame is not None
        cid, resp = decode_response(frame, 1, 12)
        assert cid == 5 and resp.responses[0].partitions[0].records
        _wait_until(lambda: limits.requests.in_flight == 0, "no slot is left behind")
        poller.close(), other.close()
    finally:
        lst.stop()


def test_connections_max_idle_ms_closes_a_silent_connection_and_a_stalled_frame():
    lst, limits = _listener(**{"connections.max.idle.ms": "100", "queued.max.requests": "1"})
    try:
        silent, stalled, busy = _connect(lst.port), _connect(lst.port), _connect(lst.port)
        stalled.sendall(struct.pack(">i", 100) + b"abc")
        assert _works(busy, 1)
        assert silent.recv(1) == b""  # closed by the listener (the client's own timeout is 10 s)
        assert stalled.recv(1) == b""
        _wait_until(lambda: limits.connections.total <= 1, "the idle connections are uncounted")
        assert limits.requests.in_flight == 0
        for s in (silent, stalled, busy):
            s.close()
    finally:
        lst.stop()


@pytest.mark.parametrize(
    "value,expected",
    [(None, 600.0), ("250", 0.25), ("-1", None)],
)
def test_connections_max_idle_ms_parsing(value, expected):
    cfg = {} if value is None else {"connections.max.idle.ms": value}
    assert ListenerLimits.from_config(cfg).idle_timeout_s == expected


@pytest.mark.parametrize("value", ["0", "ten", str(2**63)])
def test_connections_max_idle_ms_bad_values(value):
    with pytest.raises(ValueError, match="connections.max.idle.ms"):
        ListenerLimits.from_config({"connections.max.idle.ms": value})


def test_socket_request_max_bytes_has_one_value():
    limits = ListenerLimits.from_config({"socket.request.max.bytes": "1024"})
    with pytest.raises(ValueError, match="max_request_bytes"):
        KafkaListener("127.0.0.1", 0, KafkaDispatcher(FakeBackend(), auto_create_topics=False), 2048, limits=limits)
