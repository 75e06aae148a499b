"""Bounded resources per client at the listener: connection quotas, the bound on requests in
flight, and frame reading that never allocates what a client merely declares.

Kafka's keys, defaults and behaviour (``SocketServerConfigs``; ``SocketServer.ConnectionQuotas``):

* ``max.connections.per.ip`` (int ≥ 0, default 2147483647) and ``max.connections.per.ip.overrides``
  (``host:count,host:count``; ``Csv.parseCsvMap``: the LAST ``:`` splits, so IPv6 addresses work;
  host names are resolved): a new connection from an address that already has its maximum is
  accepted and closed at once (``TooManyConnectionsException``, "Rejected connection from …").
  ``max.connections.per.ip`` may be 0 only if overrides are set (``KafkaConfig`` validation).
* ``max.connections`` (int ≥ 0, default 2147483647): broker-wide; when it is reached the acceptor
  *blocks* until a connection closes (``waitForConnectionSlot``); the client's connect waits in the
  listen backlog. (Kafka's per-listener ``listener.name.<l>.max.connections`` and connection-rate
  quotas are not implemented.)
* ``queued.max.requests`` (int ≥ 1, default 500): Kafka's request queue between network and handler
  threads (``RequestChannel``); network threads block when it is full. Shoal handles a request in
  its connection's thread, so the bound is on requests *read and being handled* across all
  connections: a connection takes a slot only once a request's whole body has arrived (a client
  that declares a size and stalls holds none), and frees it when the response is written, or
  earlier when the handler parks in a long poll (:func:`parked`): a Fetch waiting for
  ``min_bytes`` or a ShareFetch waiting for records is in Kafka's purgatory (``DelayedFetch``,
  ``DelayedShareFetch``), outside the request queue.
* ``connections.max.idle.ms`` (long, default 600000): a connection that has not completed a request
  frame for this long while the broker waits for (or reads) one is closed (Kafka's ``Selector``
  idle expiry; a negative value disables it, as there). Writing a response is bounded by the same
  value; a handler's long poll is not (the socket is not read then).
* ``socket.request.max.bytes`` (int ≥ 1, default 104857600): a size outside ``1..max`` closes the
  connection before anything is buffered (``NetworkReceive`` → ``InvalidReceiveException``); the
  body is then read in chunks of at most :data:`READ_CHUNK` bytes, so a client that declares
  100 MB and sends 10 bytes costs one chunk, not 100 MB.

Everything here is plain Python over ``threading`` and sockets; time never appears in a decision
(waits poll a ``stopping`` event so a listener can stop while a thread waits).
"""

from __future__ import annotations

import logging
import socket
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

__all__ = [
    "INT_MAX",
    "READ_CHUNK",
    "ConnectionQuotas",
    "ListenerLimits",
    "RequestSlots",
    "hold_slot",
    "parked",
    "parse_overrides",
    "recv_body",
    "release_slot",
]

log = logging.getLogger("shoal.wire.quotas")

INT_MAX = 2**31 - 1
#: The largest piece of a request body read (and allocated) at once.
READ_CHUNK = 64 * 1024
_POLL_S = 0.2


def _config_integer(cfg: Mapping[str, Any], key: str, default: int, kafka_type: str, bits: int) -> int:
    """``cfg[key]`` as a signed ``bits``-bit integer (Kafka's ConfigDef type ``kafka_type``, INT or
    LONG), or ``default`` when absent or blank. Raises ValueError with ConfigDef's message when it
    is not a number or out of the type's range."""
    raw = cfg.get(key)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise ValueError(f"Invalid value {raw} for configuration {key}: Not a number of type {kafka_type}") from None
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ValueError(f"Invalid value {raw} for configuration {key}: Not a number of type {kafka_type}")
    return value


def _int_at_least(cfg: Mapping[str, Any], key: str, default: int, low: int) -> int:
    value = _config_integer(cfg, key, default, "INT", 32)
    if value < low:
        raise ValueError(f"Invalid value {value} for configuration {key}: Value must be at least {low}")
    return value


def _long(cfg: Mapping[str, Any], key: str, default: int) -> int:
    return _config_integer(cfg, key, default, "LONG", 64)


def parse_overrides(text: str | None, resolve: Callable[[str], set[str]] | None = None) -> dict[str, int]:
    """Parse ``max.connections.per.ip.overrides`` (``"hostName:100,127.0.0.1:200"``; entries split
    on commas with the surrounding spaces, each at its LAST ``:`` as Kafka's ``Csv.parseCsvMap``)
    into address → max connections. Each host is mapped through ``resolve`` (default: every address
    ``socket.getaddrinfo`` gives; an IP literal is itself). A later entry for the same address wins.
    Raises ``ValueError`` for an entry without ``:``, an empty host, or a count that is not an
    int ≥ 0, or a host that does not resolve."""
    out: dict[str, int] = {}
    if not text or not text.strip():
        return out
    resolve = resolve or _resolve
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        host, sep, count = entry.rpartition(":")
        host = host.strip()
        if not sep or not host:
            raise ValueError(f"max.connections.per.ip.overrides: expected host:count, got {entry!r}")
        try:
            n = int(count.strip())
        except ValueError:
            raise ValueError(f"max.connections.per.ip.overrides: count of {host!r} is not a number: {count!r}") from None
        if n < 0:
            raise ValueError(f"max.connections.per.ip.overrides: count of {host!r} must be at least 0")
        for addr in resolve(host.strip("[]")):
            out[addr] = n
    return out


def _resolve(host: str) -> set[str]:
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise ValueError(f"max.connections.per.ip.overrides contains invalid addresses : {host} ({exc})") from None
    return {str(info[4][0]) for info in infos}


class ConnectionQuotas:
    """Open connections per client address and in total (Kafka's ``ConnectionQuotas``).

    ``ConnectionQuotas(max_connections, max_per_ip, overrides)``; thread-safe. :meth:`acquire` is
    called once per accepted connection and :meth:`release` once when an admitted connection
    closes. One instance is shared by every listener of the broker (the limits are broker-wide)."""

    def __init__(self, max_connections: int = INT_MAX, max_per_ip: int = INT_MAX, overrides: Mapping[str, int] | None = None) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.overrides = dict(overrides or {})
        self._cond = threading.Condition()
        self._counts: dict[str, int] = {}
        self._total = 0
        #: connections refused for the per-ip limit, and accepts that had to wait for a slot
        self.rejected = 0
        self.waited = 0

    def max_for(self, ip: str) -> int:
        """The connection limit of address ``ip`` (its override, else ``max.connections.per.ip``)."""
        return self.overrides.get(ip, self.max_per_ip)

    def acquire(self, ip: str, stopping: threading.Event | None = None) -> bool:
        """Admit a new connection from ``ip``. Blocks while ``max.connections`` connections are
        open (until one closes, or ``stopping`` is set: then returns False). Returns False, without
        counting it, when ``ip`` already has :meth:`max_for` connections (the caller closes the
        socket: Kafka's ``TooManyConnectionsException``); True when admitted and counted."""
        with self._cond:
            if self._total >= self.max_connections:
                self.waited += 1
                while self._total >= self.max_connections:
                    if stopping is not None and stopping.is_set():
                        return False
                    self._cond.wait(_POLL_S)
            count = self._counts.get(ip, 0)
            if count >= self.max_for(ip):
                self.rejected += 1
                return False
            self._counts[ip] = count + 1
            self._total += 1
            return True

    def release(self, ip: str) -> None:
        """An admitted connection from ``ip`` closed: uncount it and wake one waiting acceptor.
        Raises ``ValueError`` if ``ip`` has no admitted connection (a bookkeeping bug)."""
        with self._cond:
            count = self._counts.get(ip, 0)
            if count <= 0:
                raise ValueError(f"no open connection from {ip} to release")
            if count == 1:
                del self._counts[ip]
            else:
                self._counts[ip] = count - 1
            self._total -= 1
            self._cond.notify_all()

    def count(self, ip: str) -> int:
        """Open connections from ``ip``."""
        with self._cond:
            return self._counts.get(ip, 0)

    @property
    def total(self) -> int:
        """Open connections in all."""
        with self._cond:
            return self._total


class RequestSlots:
    """``queued.max.requests``: at most ``limit`` requests read and being handled across all
    connections (Kafka's ``RequestChannel`` queue). :meth:`acquire` once a request's body has
    arrived, :meth:`release` after its response is written, when its handler parks in a long poll
    (:func:`parked`), or when the connection ends. Thread-safe."""

    def __init__(self, limit: int = 500) -> None:
        self.limit = limit
        self._cond = threading.Condition()
        self._in_flight = 0
        #: acquisitions that had to wait for a slot
        self.waited = 0

    def acquire(self, stopping: threading.Event | None = None) -> bool:
        """Take a slot, waiting while ``limit`` are taken. Returns False (no slot taken) if
        ``stopping`` is set while waiting, True otherwise."""
        with self._cond:
            if self._in_flight >= self.limit:
                self.waited += 1
                while self._in_flight >= self.limit:
                    if stopping is not None and stopping.is_set():
                        return False
                    self._cond.wait(_POLL_S)
            self._in_flight += 1
            return True

    def release(self) -> None:
        """Give a slot back and wake one waiter. Raises ``ValueError`` when none is taken."""
        with self._cond:
            if self._in_flight <= 0:
                raise ValueError("no request slot to release")
            self._in_flight -= 1
            self._cond.notify()

    @property
    def in_flight(self) -> int:
        """Slots taken now."""
        with self._cond:
            return self._in_flight


_current = threading.local()


def hold_slot(slots: RequestSlots) -> None:
    """Record that this thread holds one slot of ``slots`` for the request it is handling, so
    :func:`release_slot` (from the server or from a long-poll wait deep in a handler) can give it
    back. Call right after a successful :meth:`RequestSlots.acquire`. Raises ``RuntimeError`` if
    the thread already holds one (a bookkeeping bug)."""
    if getattr(_current, "slots", None) is not None:
        raise RuntimeError("this thread already holds a request slot")
    _current.slots = slots


def release_slot() -> bool:
    """Give back the slot this thread holds (see :func:`hold_slot`), if any. Returns True when a
    slot was released, False when the thread held none (already released, or a thread outside the
    listener, e.g. a test calling a handler directly). Idempotent."""
    slots = getattr(_current, "slots", None)
    if slots is None:
        return False
    _current.slots = None
    slots.release()
    return True


@contextmanager
def parked() -> Iterator[None]:
    """Context manager around a long-poll wait in a handler (Fetch waiting for ``min_bytes``,
    ShareFetch waiting for records): releases the thread's request slot before the wait, as a
    request moved to Kafka's purgatory (``DelayedFetch``/``DelayedShareFetch``) no longer counts
    against ``queued.max.requests``. The slot is not taken again afterwards: what is left of the
    request — a ShareFetch's attempts from the purgatory, writing the response — completes a
    request already admitted (Kafka completes a delayed operation outside the request queue too)."""
    release_slot()
    yield


@dataclass
class ListenerLimits:
    """The per-client bounds every listener of a broker shares: ``connections``
    (:class:`ConnectionQuotas`), ``requests`` (:class:`RequestSlots`), ``max_request_bytes``
    (``socket.request.max.bytes``, bytes) and ``idle_timeout_s`` (``connections.max.idle.ms`` in
    seconds, ``None`` when disabled). Build it once per broker with :meth:`from_config`: the one
    home of these keys' parsing."""

    connections: ConnectionQuotas = field(default_factory=ConnectionQuotas)
    requests: RequestSlots = field(default_factory=RequestSlots)
    max_request_bytes: int = 104857600
    idle_timeout_s: float | None = 600.0

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], resolve: Callable[[str], set[str]] | None = None) -> "ListenerLimits":
        """Parse ``max.connections``, ``max.connections.per.ip``, ``max.connections.per.ip.overrides``,
        ``queued.max.requests``, ``socket.request.max.bytes`` and ``connections.max.idle.ms``
        (missing keys: Kafka's defaults, as in ``config.BROKER_DEFAULTS``; a negative
        ``connections.max.idle.ms`` disables the idle timeout as in Kafka's ``Selector``, 0 is
        refused since it would close every connection at once). Raises ``ValueError`` with
        Kafka's ``ConfigException`` wording for a bad value, and ``max.connections.per.ip can be set to zero only if
        max.connections.per.ip.overrides property is set.`` as ``KafkaConfig`` does."""
        max_conn = _int_at_least(cfg, "max.connections", INT_MAX, 0)
        per_ip = _int_at_least(cfg, "max.connections.per.ip", INT_MAX, 0)
        overrides = parse_overrides(cfg.get("max.connections.per.ip.overrides"), resolve)
        if per_ip == 0 and not overrides:
            raise ValueError("max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set.")
        return cls(
            ConnectionQuotas(max_conn, per_ip, overrides),
            RequestSlots(_int_at_least(cfg, "queued.max.requests", 500, 1)),
            _int_at_least(cfg, "socket.request.max.bytes", 104857600, 1),
            _idle_timeout_s(cfg),
        )


def _idle_timeout_s(cfg: Mapping[str, Any]) -> float | None:
    idle_ms = _long(cfg, "connections.max.idle.ms", 600000)
    if idle_ms == 0:
        raise ValueError("Invalid value 0 for configuration connections.max.idle.ms: Shoal needs a positive value, or a negative one to disable the idle timeout")
    return None if idle_ms < 0 else idle_ms / 1000


def recv_body(sock: socket.socket, size: int, chunk: int = READ_CHUNK) -> bytes | None:
    """Read exactly ``size`` bytes from ``sock`` in pieces of at most ``chunk`` bytes; the buffer
    grows only with what arrived (never ``size`` up front). Returns the bytes, or ``None`` on EOF
    before ``size`` bytes. Socket errors propagate (``OSError``)."""
    buf = bytearray()
    while len(buf) < size:
        piece = sock.recv(min(chunk, size - len(buf)))
        if not piece:
            return None
        buf += piece
    return bytes(buf)
