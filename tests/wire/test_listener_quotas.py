"""Connection quotas, ``queued.max.requests`` and ``socket.request.max.bytes`` on a real listener
(FakeBackend, no actors): a connection over its address's limit is closed at once, a connection over
``max.connections`` waits in the backlog until another closes, a request waits for a slot while
``queued.max.requests`` are in flight, and a large declared frame is not allocated up front."""

from __future__ import annotations

import socket
import struct
import threading
import tracemalloc


from tests.wire.fake_backend import FakeBackend
from tests.wire.test_listener import _api_versions_frame, _read_frame
from wire.dispatch import KafkaDispatcher
from wire.protocol import decode_response
from wire.quotas import ListenerLimits
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
    frame = _read_frame(s)
    return frame is not None and decode_response(frame, 18, 3)[0] == cid


def _closed(s: socket.socket) -> bool:
    try:
        s.sendall(_api_versions_frame(99))
        return _read_frame(s) is None
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
        frame = _read_frame(b)  # answered once the first connection closed
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
        assert _read_frame(slow) is not None
        frame = _read_frame(fast)
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
        assert _read_frame(s) is None
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
        _wait_until(lambda: limits.requests.in_flight == 1, "the listener reads the body")
        s.close()
        _wait_until(lambda: limits.connections.total == 0, "the connection ended")
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        lst.stop()
    assert peak < 4 * 1024 * 1024
    assert limits.requests.in_flight == 0
