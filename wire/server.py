"""The Kafka listener: a TCP server that reads frames, dispatches them and writes responses.

One thread per connection (``socketserver.ThreadingTCPServer``). Requests on one connection are
handled in order and answered in order, as Kafka's ``SocketServer`` does by muting a channel
while its request is in flight; a long-polling ShareFetch or Fetch therefore only holds up its
own connection. One exception, on connections without TLS: an ``acks=-1`` Produce that waits for
replication (a :class:`wire.protocol.Deferred`) does not hold up the requests behind it. Its
batches are appended in request order, then a writer thread of the connection completes it and
writes it and every later response, still in request order, while the connection goes on reading
and handling up to :data:`PIPELINE_DEPTH` requests (Kafka's default
``max.in.flight.requests.per.connection``) ahead. A producer with several requests in flight
then waits one replication round per request, not one per request before it (Kafka mutes the
channel, and its replication round is a fraction of a millisecond). A connection that then
meets a bad frame writes what it owes before it closes, as a muted channel would have answered
before reading it. A TLS connection keeps Kafka's one request at a time: an ``ssl.SSLSocket``
must not be read and written by two threads.

Frames larger than ``socket.request.max.bytes`` or not positive close the connection (Kafka's
``InvalidReceiveException``); a malformed frame (rejected by :mod:`wire.frame_guard` before kio
decodes it) closes the connection; an unknown API key or
version is answered with UNSUPPORTED_VERSION (35); a handler that raises, or whose response
cannot be encoded, closes its connection. None of these affects other connections.

Security (one :class:`KafkaListener` per entry of ``listeners``, see :mod:`wire.listeners`): an
SSL or SASL_SSL listener wraps each accepted socket with its ``ssl.SSLContext``; the TLS handshake
runs in the connection's own thread with a timeout (``shoal.ssl.handshake.timeout.ms``), so a
slow or bad handshake costs only that connection. A SASL_PLAINTEXT or SASL_SSL listener gives
each connection a :class:`wire.sasl.SaslServerSession` that sees every frame first (before
authentication only ApiVersions, SaslHandshake and SaslAuthenticate pass; frames are limited to
``sasl.server.max.receive.size``). A PLAINTEXT listener does none of this: no per-request cost.
Each :class:`Connection` carries ``principal`` (Kafka form ``User:<name>``), ``listener`` and
``security_protocol`` for the handlers (Kafka's ``RequestContext``).

Per-client bounds (:mod:`wire.quotas`, one :class:`~wire.quotas.ListenerLimits` shared by the
broker's listeners): ``max.connections.per.ip(.overrides)`` and ``max.connections`` at accept
(:meth:`_Server.verify_request`); ``queued.max.requests`` from the moment a request's whole body has
arrived until its response is written or its handler parks in a long poll (Kafka's
``RequestChannel`` queue; a ``DelayedFetch`` in purgatory holds no slot); a request body read in
chunks so a declared size is never allocated before its bytes arrive; and
``connections.max.idle.ms`` as the socket timeout while the connection waits for or reads a
frame (and writes a response), so a silent client, a stalled body or an unauthenticated SASL
connection is closed after that long (Kafka's ``Selector`` idle expiry).
"""

from __future__ import annotations

import collections
import logging
import socket
import socketserver
import struct
import ssl
import threading
import time
from typing import Any

from wire.principal import ANONYMOUS
from wire.protocol import Deferred, FrameError, UnsupportedRequest, completed, decode_request, encode_response
from wire.quotas import ListenerLimits, hold_slot, recv_body, release_slot
from wire.sasl import SaslConfig, SaslServerSession
from wire.tls import ssl_principal

__all__ = ["ANONYMOUS", "Connection", "KafkaListener", "Dispatcher", "PIPELINE_DEPTH"]

log = logging.getLogger("shoal.wire")

_SIZE = struct.Struct(">i")

#: responses a pipelined connection may owe before it reads its next request (Kafka's default
#: ``max.in.flight.requests.per.connection``: what an idempotent producer keeps in flight)
PIPELINE_DEPTH = 5
#: how long a connection closing for a bad frame waits for the responses it still owes (s;
#: Kafka's default ``request.timeout.ms``, which bounds a deferred produce's wait too)
_DRAIN_S = 30.0


class Dispatcher:
    """What the listener calls per request. ``supported`` maps api key → (min, max) version;
    ``handle(request, conn)`` returns a kio response entity, or ``None`` for no response
    (Produce with acks=0); ``unsupported(exc)`` returns the response frame bytes for an
    :class:`UnsupportedRequest`, or ``None`` to close the connection."""

    supported: dict[int, tuple[int, int]]

    def handle(self, request: Any, conn: "Connection") -> Any:  # pragma: no cover - interface
        """Handle one decoded request; return a kio response entity, bytes, ``None``, or — only
        when ``conn.pipelined`` — a :class:`wire.protocol.Deferred`."""
        raise NotImplementedError

    def unsupported(self, exc: UnsupportedRequest) -> bytes | None:  # pragma: no cover
        """The response frame for an unsupported key/version, or ``None`` to close."""
        raise NotImplementedError

    def connection_closed(self, conn: "Connection") -> None:
        """Called once per connection when it closes (release per-connection state)."""


class Connection:
    """Per-connection state handed to handlers: ``peer`` (host, port), ``data`` (per-connection
    scratch), ``principal`` (``"User:<name>"``: the SASL user, the TLS client certificate's DN, or
    ``User:ANONYMOUS``), ``listener`` (listener name, e.g. ``"SASL_SSL"``), ``security_protocol``,
    ``sasl`` (the connection's :class:`wire.sasl.SaslServerSession`, or ``None``) and
    ``pipelined`` (whether a handler may answer with a :class:`wire.protocol.Deferred`: the
    listener's plain-socket connections)."""

    __slots__ = ("peer", "data", "requests", "principal", "listener", "security_protocol", "sasl", "pipelined")

    def __init__(self, peer: tuple[str, int], listener: str = "PLAINTEXT", security_protocol: str = "PLAINTEXT", principal: str = ANONYMOUS) -> None:
        self.peer = peer
        self.data: dict[str, Any] = {}
        self.requests = 0
        self.principal = principal
        self.listener = listener
        self.security_protocol = security_protocol
        self.sasl: SaslServerSession | None = None
        self.pipelined = False


class _ResponseWriter:
    """The writer of a pipelined connection (see the module doc): one thread that writes the
    connection's responses in request order, completing each :class:`wire.protocol.Deferred`
    first. :meth:`put` queues a response (a kio entity, frame bytes, a ``Deferred``, or ``None``
    for none) under its correlation id; :meth:`wait_room` blocks the reader while ``depth``
    responses are owed. A completion that raises or a write that fails ends the connection: the
    socket is shut down, so the reader's next read ends too, and :attr:`failed` is set."""

    def __init__(self, sock: socket.socket, peer: Any, depth: int = PIPELINE_DEPTH) -> None:
        self._sock = sock
        self._peer = peer
        self._depth = max(1, depth)
        self._owed: collections.deque[tuple[int, Any]] = collections.deque()
        self._cond = threading.Condition()
        self._closed = False
        self.failed = False
        self._thread = threading.Thread(target=self._run, name=f"kafka-writer-{peer[1] if isinstance(peer, tuple) else peer}", daemon=True)
        self._thread.start()

    def wait_room(self, stopping: threading.Event) -> bool:
        """Block while ``depth`` responses are owed; ``False`` when the writer failed or the
        server stops (the connection ends)."""
        with self._cond:
            while len(self._owed) >= self._depth and not self.failed and not stopping.is_set():
                self._cond.wait(0.5)
            return not self.failed and not stopping.is_set()

    def put(self, correlation_id: int, response: Any) -> bool:
        """Queue the response to the request with ``correlation_id``; ``False`` when the writer
        failed (the connection ends)."""
        with self._cond:
            if self.failed:
                return False
            self._owed.append((correlation_id, response))
            self._cond.notify_all()
            return True

    def close(self, drain_s: float = 0.0) -> None:
        """No more responses: the thread writes what is owed and ends. Waits up to ``drain_s``
        for that (a connection closed for a bad frame first answers the requests before it, as a
        muted Kafka channel would have; one whose peer left does not wait)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            if drain_s > 0:
                self._cond.wait_for(lambda: not self._owed or self.failed, drain_s)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._owed and not self._closed:
                    self._cond.wait()
                if not self._owed:
                    return
                correlation_id, response = self._owed[0]  # stays owed until written
            try:
                if isinstance(response, (bytes, bytearray)):
                    out: bytes | bytearray | None = response
                else:
                    body = completed(response)
                    out = None if body is None else encode_response(correlation_id, body)
            except Exception:
                log.exception("closing %s: completing the response to correlation id %d failed", self._peer, correlation_id)
                self._fail()
                return
            try:
                if out is not None:
                    self._sock.sendall(out)
            except OSError as exc:
                log.debug("connection %s ended while writing: %s", self._peer, exc)
                self._fail()
                return
            with self._cond:
                self._owed.popleft()
                self._cond.notify_all()

    def _fail(self) -> None:
        with self._cond:
            self.failed = True
            self._owed.clear()
            self._cond.notify_all()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


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
        server = self.server
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = Connection(self.client_address, server.listener_name, server.security_protocol)
        tls: ssl.SSLSocket | None = None
        idle_s = server.limits.idle_timeout_s  # connections.max.idle.ms; None: no idle timeout
        if server.ssl_context is not None:
            tls = self._tls_handshake(sock, conn)
            if tls is None:
                return
            sock = tls
        sock.settimeout(idle_s)  # reads and writes of this connection; a handler's long poll does not read
        if server.sasl_config is not None:
            conn.sasl = SaslServerSession(server.sasl_config, server.dispatcher.supported)
        conn.pipelined = tls is None
        dispatcher = server.dispatcher
        max_bytes = server.max_request_bytes
        sasl = conn.sasl
        slots = server.limits.requests  # queued.max.requests (wire.quotas)
        writer: _ResponseWriter | None = None  # once a response was deferred, every response goes through it
        peer_gone = False  # the peer closed or went silent: owed responses are not waited for

        def emit(correlation_id: int, out: Any) -> bool:
            if writer is None:
                sock.sendall(out)
                return True
            return writer.put(correlation_id, out)

        try:
            while not server.stopping.is_set():
                release_slot()  # the previous request's response is written, deferred or its handler parked
                if writer is not None and not writer.wait_room(server.stopping):
                    return
                head = _recv_exact(sock, 4)
                if head is None:
                    peer_gone = True
                    return
                (size,) = _SIZE.unpack(head)
                limit = max_bytes
                if sasl is not None and sasl.max_frame_bytes is not None:
                    limit = min(limit, sasl.max_frame_bytes)  # sasl.server.max.receive.size before authentication
                if size <= 0 or size > limit:
                    log.warning("closing %s: frame size %d outside 1..%d (socket.request.max.bytes / sasl.server.max.receive.size)", conn.peer, size, limit)
                    return
                payload = recv_body(sock, size)  # in chunks: never allocates the declared size up front
                if payload is None:
                    peer_gone = True
                    return
                # queued.max.requests counts requests read and not yet answered or parked, so the
                # slot is taken only now: a client that stalls mid-frame holds none.
                if not slots.acquire(server.stopping):
                    return
                hold_slot(slots)
                conn.requests += 1
                if sasl is not None:
                    step = sasl.receive(payload, int(time.monotonic() * 1000))
                    if sasl.principal is not None:
                        conn.principal = sasl.principal
                    if not step.forward:
                        if step.response is not None and not emit(-1, step.response):
                            return
                        if step.close:
                            log.info("closing %s: SASL %s", conn.peer, sasl.state)
                            return
                        continue
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
                    if not emit(exc.correlation_id, out):
                        return
                    continue
                except FrameError as exc:
                    log.warning("closing %s: %s", conn.peer, exc)
                    return
                try:
                    response = dispatcher.handle(request, conn)
                    if isinstance(response, Deferred):
                        if not conn.pipelined:  # (a handler defers only on a pipelined connection)
                            response = response.complete()
                        elif writer is None:
                            writer = _ResponseWriter(sock, conn.peer)
                    out = None
                    if writer is not None:
                        out = response  # the writer completes and encodes it, in order
                    elif response is not None:
                        out = response if isinstance(response, (bytes, bytearray)) else encode_response(request.correlation_id, response)
                except Exception:
                    # A handler or the encoding of its response failed: only this connection ends.
                    log.exception("closing %s: handler for api_key=%d v%d failed", conn.peer, request.api_key, request.api_version)
                    return
                if out is not None and not emit(request.correlation_id, out):
                    return
        except TimeoutError:
            peer_gone = True
            # Kafka's Selector logs its idle expiry at debug too
            log.debug("closing %s: no request frame read (or response written) within connections.max.idle.ms (%s s)", conn.peer, idle_s)
        except (ConnectionError, OSError) as exc:
            peer_gone = True
            log.debug("connection %s ended: %s", conn.peer, exc)
        finally:
            release_slot()
            if writer is not None:
                writer.close(0.0 if peer_gone or server.stopping.is_set() else _DRAIN_S)
            try:
                dispatcher.connection_closed(conn)
            except Exception:  # pragma: no cover - cleanup must not raise into socketserver
                log.exception("connection_closed failed")
            if tls is not None:
                try:
                    tls.close()  # socketserver closes only the (detached) plain socket
                except OSError:  # pragma: no cover
                    pass

    def _tls_handshake(self, sock: socket.socket, conn: Connection) -> "ssl.SSLSocket | None":
        """Wrap ``sock`` with the listener's SSL context and run the handshake here, in the
        connection's thread, bounded by the listener's handshake timeout. Sets the SSL principal
        on an SSL listener. Returns the TLS socket (its timeout is still the handshake's: the caller sets
        the idle timeout), or ``None`` (logged) when the handshake fails."""
        server = self.server
        assert server.ssl_context is not None
        sock.settimeout(server.handshake_timeout_s)
        try:
            tls = server.ssl_context.wrap_socket(sock, server_side=True)
        except (ssl.SSLError, OSError) as exc:
            log.info("closing %s: TLS handshake on %s failed: %s", conn.peer, server.listener_name, exc)
            return None
        if server.security_protocol == "SSL":
            conn.principal = ssl_principal(tls)
        return tls

    def finish(self) -> None:
        """Always runs after :meth:`handle`: uncount the connection admitted in
        :meth:`_Server.verify_request` (``ConnectionQuotas.release``)."""
        self.server.limits.connections.release(self.client_address[0])


class _Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, addr: tuple[str, int], dispatcher: Dispatcher, max_request_bytes: int, limits: ListenerLimits | None = None) -> None:
        if limits is not None and limits.max_request_bytes != max_request_bytes:
            # one value of socket.request.max.bytes: the one ListenerLimits.from_config validated
            raise ValueError(f"max_request_bytes {max_request_bytes} differs from limits.max_request_bytes {limits.max_request_bytes}")
        self.dispatcher = dispatcher
        self.max_request_bytes = max_request_bytes
        self.limits = limits or ListenerLimits(max_request_bytes=max_request_bytes)
        self.stopping = threading.Event()
        self.listener_name = "PLAINTEXT"
        self.security_protocol = "PLAINTEXT"
        self.ssl_context: ssl.SSLContext | None = None
        self.sasl_config: SaslConfig | None = None
        self.handshake_timeout_s = 10.0
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
    """Owns one listening socket (one entry of ``listeners``) and its accept thread.

    ``KafkaListener(host, port, dispatcher, max_request_bytes, name=, security_protocol=,
    ssl_context=, sasl_config=, handshake_timeout_s=, limits=)``: ``name`` is the listener name (upper
    case) and ``security_protocol`` one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL;
    ``ssl_context`` is required for SSL/SASL_SSL (see :func:`wire.tls.server_context`) and
    ``sasl_config`` for SASL_* (see :func:`wire.sasl.sasl_config`); ``handshake_timeout_s``
    bounds each TLS handshake (seconds); ``limits`` is the broker's :class:`~wire.quotas.ListenerLimits`,
    shared by all its listeners (default: Kafka's defaults with ``max_request_bytes``; when given, its
    ``max_request_bytes`` must equal the argument). Raises ``ValueError`` when those do not match
    the protocol or the two ``max_request_bytes`` differ. :meth:`start` binds and serves in a background thread; :attr:`port` is the bound
    port (useful with port 0); :meth:`stop` stops accepting and closes the socket (open
    connections end when their threads next read).
    """

    def __init__(
        self,
        host: str,
        port: int,
        dispatcher: Dispatcher,
        max_request_bytes: int = 104857600,
        *,
        name: str = "PLAINTEXT",
        security_protocol: str = "PLAINTEXT",
        ssl_context: ssl.SSLContext | None = None,
        sasl_config: SaslConfig | None = None,
        handshake_timeout_s: float = 10.0,
        limits: ListenerLimits | None = None,
    ) -> None:
        uses_tls = security_protocol in ("SSL", "SASL_SSL")
        uses_sasl = security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")
        if security_protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            raise ValueError(f"unknown security protocol {security_protocol}")
        if uses_tls != (ssl_context is not None) or uses_sasl != (sasl_config is not None):
            raise ValueError(f"listener {name} ({security_protocol}): an SSL context is needed exactly for SSL/SASL_SSL and a SASL config exactly for SASL_*")
        self._server = _Server((host, port), dispatcher, max_request_bytes, limits)
        self._server.listener_name = name
        self._server.security_protocol = security_protocol
        self._server.ssl_context = ssl_context
        self._server.sasl_config = sasl_config
        self._server.handshake_timeout_s = handshake_timeout_s
        self._thread: threading.Thread | None = None

    @property
    def name(self) -> str:
        """The listener name (e.g. ``"SASL_SSL"``)."""
        return self._server.listener_name

    @property
    def security_protocol(self) -> str:
        """The listener's security protocol."""
        return self._server.security_protocol

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
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2}, name=f"kafka-listener-{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting and close the listening socket."""
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

