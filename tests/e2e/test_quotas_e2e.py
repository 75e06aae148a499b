"""Connection quotas on a real daemon (``app.py run``): ``max.connections.per.ip`` from the
command line closes the connection over the limit while the others keep working, and a frame
over ``socket.request.max.bytes`` closes only its own connection."""

from __future__ import annotations

import socket
import struct

from tests.e2e.helpers import read_frame, wait_for
from tests.wire.test_listener import _api_versions_frame
from wire.protocol import decode_response


def _answers(s: socket.socket, cid: int) -> bool:
    try:
        s.sendall(_api_versions_frame(cid))
        frame = read_frame(s)
    except (ConnectionError, OSError):
        return False
    return frame is not None and decode_response(frame, 18, 3)[0] == cid


def _fresh_connection_answers(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        return _answers(s, 5)


def test_max_connections_per_ip_and_socket_request_max_bytes_on_the_daemon(daemon_factory):
    d = daemon_factory(**{"max.connections.per.ip": "2", "socket.request.max.bytes": "65536"})
    # The harness's readiness probe connected from 127.0.0.1 too; its place is free once the
    # daemon has seen it close (asynchronously), so take two connections that both answer.
    pair: list[socket.socket] = []

    def two_connections_answer() -> bool:
        for s in pair:
            s.close()
        pair[:] = [socket.create_connection(("127.0.0.1", d.port), timeout=10) for _ in range(2)]
        return _answers(pair[0], 1) and _answers(pair[1], 2)

    assert wait_for(two_connections_answer, 10)
    a, b = pair
    try:
        with socket.create_connection(("127.0.0.1", d.port), timeout=10) as c:
            assert not _answers(c, 3)  # the third connection from 127.0.0.1 is closed
        b.sendall(struct.pack(">i", 65537))
        assert read_frame(b) is None  # over socket.request.max.bytes: closed
        assert _answers(a, 4)
        # b's place is free again once the daemon has closed it
        assert wait_for(lambda: _fresh_connection_answers(d.port), 10)
    finally:
        a.close()
        b.close()
