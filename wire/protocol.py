"""Kafka protocol framing on top of kio: size-prefixed frames, request headers, responses.

A Kafka request on the wire is ``int32 size`` followed by ``size`` bytes: a request header
(v1 for non-flexible versions, v2 for flexible ones, as the request schema's
``__header_schema__`` says) and the request body. The response is ``int32 size``, a response
header (v0, or v1 for flexible responses — except ApiVersions, whose response header is always
v0 so that a client can parse it before it knows which versions the broker speaks; KIP-511) and
the body. Source: Kafka's ``RequestHeader.json``/``ResponseHeader.json`` and
``org.apache.kafka.common.requests.RequestHeader``/``AbstractResponse``.

Everything here is pure (bytes in, objects out); the listener (:mod:`wire.server`) does the I/O.
"""

from __future__ import annotations

import io
import struct
import threading
from dataclasses import dataclass
from typing import Any, Callable

from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.serial import entity_reader, entity_writer

from wire.frame_guard import FrameError, RequestGuard, compile_request_guard

__all__ = [
    "API_VERSIONS_KEY",
    "Deferred",
    "FrameError",
    "DecodedRequest",
    "UnsupportedRequest",
    "completed",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "request_header",
    "frame",
    "peek_header",
    "preload",
    "RequestCodec",
    "request_codec",
]

API_VERSIONS_KEY = 18

_I16_I16_I32 = struct.Struct(">hhi")


@dataclass(frozen=True, slots=True)
class Deferred:
    """A response a handler has not finished: the request's work is done (a Produce's batches
    are appended) and what is left waits for something outside the connection (the high
    watermark reaching them: Kafka's ``DelayedProduce``). ``complete()`` blocks until then and
    returns the kio response entity (or ``None``: no response). The listener
    (:mod:`wire.server`) lets a connection that opted in (``Connection.pipelined``) read and
    handle its next requests meanwhile, and writes the responses in request order; elsewhere
    (a forwarded request, a test calling a handler) the caller completes it at once with
    :func:`completed`."""

    complete: Callable[[], Any]


def completed(response: Any) -> Any:
    """``response``, or what it completes to when it is a :class:`Deferred` (blocks until then)."""
    return response.complete() if isinstance(response, Deferred) else response


class UnsupportedRequest(Exception):
    """The API key or version is not one the broker implements. Carries what the listener needs
    to answer UNSUPPORTED_VERSION (35): ``api_key``, ``api_version``, ``correlation_id``."""

    def __init__(self, api_key: int, api_version: int, correlation_id: int) -> None:
        super().__init__(f"unsupported api_key={api_key} api_version={api_version}")
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


@dataclass(frozen=True, slots=True)
class DecodedRequest:
    """A parsed request: the kio ``header`` and ``body`` entities plus the raw key/version."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header: Any
    body: Any


def peek_header(frame_bytes: bytes | memoryview) -> tuple[int, int, int]:
    """Return ``(api_key, api_version, correlation_id)`` from the first 8 bytes of a request
    frame (the part common to every header version). Raises :class:`FrameError` if shorter."""
    if len(frame_bytes) < 8:
        raise FrameError(f"request of {len(frame_bytes)} bytes is shorter than a header")
    return _I16_I16_I32.unpack_from(frame_bytes, 0)


@dataclass(frozen=True, slots=True)
class RequestCodec:
    """Everything needed to decode one (api key, version): the compiled :class:`RequestGuard`
    and kio's native ``header_reader``/``body_reader`` (``(buffer, offset) -> (entity, size)``).
    Built once (see :func:`preload`), immutable, shared by every listener thread."""

    guard: RequestGuard
    header_reader: Callable[[Any, int], tuple[Any, int]]
    body_reader: Callable[[Any, int], tuple[Any, int]]


#: (api key, version) → codec, or ``None`` where kio has no schema. Written under ``_CODECS_LOCK``
#: only; read without it (a dict lookup is atomic under the GIL).
_CODECS: dict[tuple[int, int], RequestCodec | None] = {}
_CODECS_LOCK = threading.Lock()


def _build_codec(api_key: int, api_version: int) -> RequestCodec | None:
    try:
        schema = load_request_schema(api_key, api_version)
    except KioIndexError:
        return None
    guard = compile_request_guard(schema)
    return RequestCodec(guard, entity_reader(schema.__header_schema__), entity_reader(schema))


def request_codec(api_key: int, api_version: int) -> RequestCodec | None:
    """The :class:`RequestCodec` of ``api_key``/``api_version``, or ``None`` if kio has no schema
    for it. The first call for a pair imports kio's schema module and compiles its readers under
    one process-wide lock, so two threads never import schema modules concurrently (the start-up
    import deadlock of issue 13); :func:`preload` does this for every advertised pair up front."""
    key = (api_key, api_version)
    try:
        return _CODECS[key]
    except KeyError:
        pass
    with _CODECS_LOCK:
        if key not in _CODECS:
            _CODECS[key] = _build_codec(api_key, api_version)
        return _CODECS[key]


def preload(supported: dict[int, tuple[int, int]]) -> int:
    """Build the codec (guard walker, kio readers) and load the response schema of every
    version in ``supported`` (api key → (min, max), inclusive) once, at start-up, so that no
    request ever imports a schema module lazily. Returns the number of (key, version) pairs
    that have a request schema. Raises ``TypeError`` if a schema has a kafka type the guard
    cannot walk."""
    from wire.entities import response_class  # the handlers' response-class cache

    n = 0
    with _CODECS_LOCK:
        for api_key, (lo, hi) in sorted(supported.items()):
            for v in range(lo, hi + 1):
                if (api_key, v) not in _CODECS:
                    _CODECS[(api_key, v)] = _build_codec(api_key, v)
                if _CODECS[(api_key, v)] is None:
                    continue
                n += 1
                try:
                    response_class(api_key, v)
                except KioIndexError:
                    pass
    return n


def decode_request(frame_bytes: bytes, supported: dict[int, tuple[int, int]]) -> DecodedRequest:
    """Parse one request frame (without its size prefix).

    ``supported`` maps api key → (min, max) versions the broker implements. Raises
    :class:`UnsupportedRequest` for a key/version outside it (the body is not parsed), and
    :class:`FrameError` for a malformed header or body: the frame guard
    (:mod:`wire.frame_guard`) checks every declared length, count, null and tag against the
    frame BEFORE kio's native reader sees it (that reader aborts the process on a huge declared
    array length). Trailing bytes after the body are ignored, as Kafka's
    ``AbstractRequest.parseRequest`` does (librdkafka's Metadata v12 from list_topics carries
    some)."""
    api_key, api_version, correlation_id = peek_header(frame_bytes)
    rng = supported.get(api_key)
    if rng is None or not (rng[0] <= api_version <= rng[1]):
        raise UnsupportedRequest(api_key, api_version, correlation_id)
    codec = request_codec(api_key, api_version)
    if codec is None:
        raise UnsupportedRequest(api_key, api_version, correlation_id)
    frame_bytes = bytes(frame_bytes)  # kio's native reader wants a read-only buffer
    codec.guard.check(frame_bytes)
    buf = memoryview(frame_bytes)
    try:
        header, used = codec.header_reader(buf, 0)
        body, used2 = codec.body_reader(buf, used)
    except Exception as exc:  # kio raises ValueError/IndexError/UnicodeError/KeyError/… on bad input
        raise FrameError(f"malformed api_key={api_key} v{api_version}: {type(exc).__name__}: {exc}") from None
    if used + used2 > len(frame_bytes):
        raise FrameError(f"api_key={api_key} v{api_version} read past the end of its frame")
    return DecodedRequest(api_key, api_version, correlation_id, header.client_id, header, body)


def _response_header_for(api_key: int, response_schema: type) -> type:
    if api_key == API_VERSIONS_KEY:
        return ResponseHeaderV0
    return response_schema.__header_schema__


def encode_response(correlation_id: int, body: Any, api_key: int | None = None) -> bytes:
    """Serialize a kio response entity ``body`` with its response header and size prefix.
    Returns the complete frame (``int32 size`` + header + body)."""
    schema = type(body)
    key = int(schema.__api_key__) if api_key is None else api_key
    header_schema = _response_header_for(key, schema)
    out = io.BytesIO()
    out.write(b"\0\0\0\0")
    entity_writer(header_schema)(out, header_schema(correlation_id=correlation_id))
    entity_writer(schema)(out, body)
    data = out.getbuffer()
    struct.pack_into(">i", data, 0, len(data) - 4)
    result = bytes(data)
    del data
    return result


def frame(payload: bytes) -> bytes:
    """Prefix ``payload`` with its int32 big-endian size (the Kafka frame)."""
    return struct.pack(">i", len(payload)) + payload


def encode_request(header: Any, body: Any) -> bytes:
    """Serialize a request (header entity + body entity) into a framed request. Used by tests and
    by the raw-socket clients of the end-to-end suite."""
    out = io.BytesIO()
    entity_writer(type(header))(out, header)
    entity_writer(type(body))(out, body)
    return frame(out.getvalue())


def decode_response(payload: bytes, api_key: int, api_version: int) -> tuple[int, Any]:
    """Parse a response frame (without its size prefix) for ``api_key``/``api_version``.
    Returns ``(correlation_id, body)``. For tests and raw clients."""
    schema = load_response_schema(api_key, api_version)
    header_schema = _response_header_for(api_key, schema)
    buf = memoryview(payload)
    header, used = entity_reader(header_schema)(buf, 0)
    body, _ = entity_reader(schema)(buf, used)
    return header.correlation_id, body


def request_header(api_key: int, api_version: int, correlation_id: int, client_id: str | None = "shoal-test") -> Any:
    """A kio request header of the right version for ``api_key``/``api_version`` (tests)."""
    schema = load_request_schema(api_key, api_version)
    hs = schema.__header_schema__
    from kio.static.primitive import i16, i32

    return hs(request_api_key=i16(api_key), request_api_version=i16(api_version), correlation_id=i32(correlation_id), client_id=client_id)

