"""The Kafka listener: a TCP server that reads frames, dispatches them and writes responses.

One thread per connection (``socketserver.ThreadingTCPServer``). Requests on one connection are
handled in order and answered in order, as Kafka's ``SocketServer`` does by muting a channel
while its request is in flight; a long-polling ShareFetch or Fetch therefore only holds up its
own connection. Frames larger than ``socket.request.max.bytes`` or not positive close the
connection (Kafka's ``InvalidReceiveException``); a malformed frame (rejected by
:mod:`wire.frame_guard` before kio decodes it) closes the connection; an unknown API key or
version is answered with UNSUPPORTED_VERSION (35); a handler that raises, or whose response
cannot be encoded, closes its connection. None of these affects other connections.
"""

from __future__ import annotations

import logging
import socket
import socketserver
import struct
import threading
from typing import Any

from wire.protocol import FrameError, UnsupportedRequest, decode_request, encode_response

__all__ = ["KafkaListener", "Dispatcher", "parse_listener"]

log = logging.getLogger("shoal.wire")

_SIZE = struct.Struct(">i")


def parse_listener(listeners: str) -> tuple[str, int]:
    """Parse Kafka's ``listeners`` value (``PLAINTEXT://host:port``; the first entry wins).
    Returns ``(host, port)``; an empty host means all interfaces (``0.0.0.0``).
    Raises ``ValueError`` for another security protocol or a malformed entry."""
    first = listeners.split(",")[0].strip()
    if "://" not in first:
        raise ValueError(f"listeners: expected PLAINTEXT://host:port, got {listeners!r}")
    proto, rest = first.split("://", 1)
    if proto.upper() != "PLAINTEXT":
        raise ValueError(f"listeners: only PLAINTEXT is supported, got {proto}")
    host, _, port = rest.rpartition(":")
    return (host or "0.0.0.0"), int(port)


class Dispatcher:
    """What the listener calls per request. ``supported`` maps api key → (min, max) version;
    ``handle(request, conn)`` returns a kio response entity, or ``None`` for no response
    (Produce with acks=0); ``unsupported(exc)`` returns the response frame bytes for an
    :class:`UnsupportedRequest`, or ``None`` to close the connection."""

    supported: dict[int, tuple[int, int]]

    def handle(self, request: Any, conn: "Connection") -> Any:  # pragma: no cover - interface
        """Handle one decoded request; return a kio response entity, bytes, or ``None``."""
        raise NotImplementedError

    def unsupported(self, exc: UnsupportedRequest) -> bytes | None:  # pragma: no cover
        """The response frame for an unsupported key/version, or ``None`` to close."""
        raise NotImplementedError

    def connection_closed(self, conn: "Connection") -> None:
        """Called once per connection when it closes (release per-connection state)."""


class Connection:
    """Per-connection state handed to handlers: ``peer`` (host, port), ``thread_local`` data."""

    __slots__ = ("peer", "data", "requests")

    def __init__(self, peer: tuple[str, int]) -> None:
        self.peer = peer
        self.data: dict[str, Any] = {}
        self.requests = 0


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            return None
        got += k
    return bytes(buf)


class _Handler(socketserver.BaseRequestHandler):
    server: "_Server"

    def handle(self) -> None:  # noqa: C901 - one loop, one place for each way a connection ends
        """Serve one connection until EOF, a bad frame, or shutdown."""
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = Connection(self.client_address)
        dispatcher = self.server.dispatcher
        max_bytes = self.server.max_request_bytes
        try:
            while not self.server.stopping.is_set():
                head = _recv_exact(sock, 4)
                if head is None:
                    return
                (size,) = _SIZE.unpack(head)
                if size <= 0 or size > max_bytes:
                    log.warning("closing %s: frame size %d outside 1..%d (socket.request.max.bytes)", conn.peer, size, max_bytes)
                    return
                payload = _recv_exact(sock, size)
                if payload is None:
                    return
                conn.requests += 1
                try:
                    request = decode_request(payload, dispatcher.supported)
                except UnsupportedRequest as exc:
                    try:
                        out = dispatcher.unsupported(exc)
                    except Exception:
                        log.exception("closing %s: answering %s failed", conn.peer, exc)
                        return
                    if out is None:
                        log.info("closing %s: %s", conn.peer, exc)
                        return
                    sock.sendall(out)
                    continue
                except FrameError as exc:
                    log.warning("closing %s: %s", conn.peer, exc)
                    return
                try:
                    response = dispatcher.handle(request, conn)
                    out = None
                    if response is not None:
                        out = response if isinstance(response, (bytes, bytearray)) else encode_response(request.correlation_id, response)
                except Exception:
                    # A handler or the encoding of its response failed: only this connection ends.
                    log.exception("closing %s: handler for api_key=%d v%d failed", conn.peer, request.api_key, request.api_version)
                    return
                if out is not None:
                    sock.sendall(out)
        except (ConnectionError, OSError) as exc:
            log.debug("connection %s ended: %s", conn.peer, exc)
        finally:
            try:
                dispatcher.connection_closed(conn)
            except Exception:  # pragma: no cover - cleanup must not raise into socketserver
                log.exception("connection_closed failed")


class _Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, addr: tuple[str, int], dispatcher: Dispatcher, max_request_bytes: int) -> None:
        self.dispatcher = dispatcher
        self.max_request_bytes = max_request_bytes
        self.stopping = threading.Event()
        super().__init__(addr, _Handler)


class KafkaListener:
    """Owns the listening socket and its accept thread.

    ``KafkaListener(host, port, dispatcher, max_request_bytes)``; :meth:`start` binds and serves
    in a background thread; :attr:`port` is the bound port (useful with port 0); :meth:`stop`
    stops accepting and closes the socket (open connections end when their threads next read).
    """

    def __init__(self, host: str, port: int, dispatcher: Dispatcher, max_request_bytes: int = 104857600) -> None:
        self._server = _Server((host, port), dispatcher, max_request_bytes)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self._server.server_address[1])

    @property
    def host(self) -> str:
        """The bound host."""
        return str(self._server.server_address[0])

    def start(self) -> "KafkaListener":
        """Bind and serve in a background thread; returns self."""
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2}, name="kafka-listener", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting and close the listening socket."""
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

