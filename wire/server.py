"""The Kafka listener: a TCP server that reads frames, dispatches them and writes responses.

One thread per connection (``socketserver.ThreadingTCPServer``). Requests on one connection are
handled in order and answered in order, as Kafka's ``SocketServer`` does by muting a channel
while its request is in flight; a long-polling ShareFetch or Fetch therefore only holds up its
own connection. Frames larger than ``socket.request.max.bytes`` or not positive close the
connection (Kafka's ``InvalidReceiveException``); a malformed frame closes the connection; an
unknown API key or version is answered with UNSUPPORTED_VERSION (35). None of these affects
other connections.

Per-client bounds (:mod:`wire.quotas`, one :class:`~wire.quotas.ListenerLimits` shared by the
broker's listeners): ``max.connections.per.ip(.overrides)`` and ``max.connections`` at accept
(:meth:`_Server.verify_request`), ``queued.max.requests`` around each request, and a request body
read in chunks so a declared size is never allocated before its bytes arrive.
"""

from __future__ import annotations

import logging
import socket
import socketserver
import struct
import threading
from typing import Any

from wire.protocol import FrameError, UnsupportedRequest, decode_request, encode_response
from wire.quotas import ListenerLimits, recv_body

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
        slots = self.server.limits.requests  # queued.max.requests (wire.quotas)
        held = False
        try:
            while not self.server.stopping.is_set():
                if held:  # the previous request's response is written
                    slots.release()
                    held = False
                head = _recv_exact(sock, 4)
                if head is None:
                    return
                (size,) = _SIZE.unpack(head)
                if size <= 0 or size > max_bytes:
                    log.warning("closing %s: frame size %d outside 1..%d (socket.request.max.bytes)", conn.peer, size, max_bytes)
                    return
                if not slots.acquire(self.server.stopping):
                    return
                held = True
                payload = recv_body(sock, size)  # in chunks: never allocates the declared size up front
                if payload is None:
                    return
                conn.requests += 1
                try:
                    request = decode_request(payload, dispatcher.supported)
                except UnsupportedRequest as exc:
                    out = dispatcher.unsupported(exc)
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
                except Exception:
                    log.exception("closing %s: handler for api_key=%d v%d failed", conn.peer, request.api_key, request.api_version)
                    return
                if response is not None:
                    out = response if isinstance(response, (bytes, bytearray)) else encode_response(request.correlation_id, response)
                    sock.sendall(out)
        except (ConnectionError, OSError) as exc:
            log.debug("connection %s ended: %s", conn.peer, exc)
        finally:
            if held:
                slots.release()
            try:
                dispatcher.connection_closed(conn)
            except Exception:  # pragma: no cover - cleanup must not raise into socketserver
                log.exception("connection_closed failed")

    def finish(self) -> None:
        """Always runs after :meth:`handle`: uncount the connection admitted in
        :meth:`_Server.verify_request` (``ConnectionQuotas.release``)."""
        self.server.limits.connections.release(self.client_address[0])


class _Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, addr: tuple[str, int], dispatcher: Dispatcher, max_request_bytes: int, limits: ListenerLimits | None = None) -> None:
        self.dispatcher = dispatcher
        self.max_request_bytes = max_request_bytes
        self.limits = limits or ListenerLimits(max_request_bytes=max_request_bytes)
        self.stopping = threading.Event()
        super().__init__(addr, _Handler)

    def verify_request(self, request: Any, client_address: Any) -> bool:
        """Connection quotas at accept (Kafka's ``Acceptor.accept`` → ``ConnectionQuotas.inc``):
        waits while ``max.connections`` are open; False (socketserver closes the socket) when the
        address already has ``max.connections.per.ip`` (or its override) connections."""
        quotas = self.limits.connections
        if quotas.acquire(client_address[0], self.stopping):
            return True
        if not self.stopping.is_set():
            log.info("Rejected connection from %s, address already has the configured maximum of %d connections.", client_address[0], quotas.max_for(client_address[0]))
        return False


class KafkaListener:
    """Owns the listening socket and its accept thread.

    ``KafkaListener(host, port, dispatcher, max_request_bytes, limits)``; ``limits`` is the
    broker's shared :class:`~wire.quotas.ListenerLimits` (default: Kafka's defaults with
    ``max_request_bytes``); :meth:`start` binds and serves
    in a background thread; :attr:`port` is the bound port (useful with port 0); :meth:`stop`
    stops accepting and closes the socket (open connections end when their threads next read).
    """

    def __init__(self, host: str, port: int, dispatcher: Dispatcher, max_request_bytes: int = 104857600, limits: ListenerLimits | None = None) -> None:
        self._server = _Server((host, port), dispatcher, max_request_bytes, limits)
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

