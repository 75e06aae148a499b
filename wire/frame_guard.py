"""The frame guard: a pure walk over a request's kio schema that rejects malformed frames before
kio's native reader sees them.

Why: kio's native reader (``_kio_native.schema::read_field``, kio 0.6.5) reserves
``Vec::with_capacity(n)`` for whatever element count ``n`` an array declares. A frame of 24 bytes
declaring 2**32 - 2 elements makes it ask the allocator for 32 GiB, and Rust's allocation
failure handler aborts the whole process (SIGABRT), which no Python ``except`` can catch.

What the guard checks, for the request header and body of one (api key, version), exactly as
kio will read them (field order, compact vs legacy encodings, the request header's legacy
``client_id``, nullable structs, tagged fields — rules taken from kio's
``schema.rs::build_field_schema`` and its ``kio.serial._introspect`` helpers):

- every fixed-size field fits in the bytes left;
- every unsigned varint is at most 5 bytes and fits in 32 bits (Kafka's
  ``ByteUtils.readUnsignedVarint``);
- every string/bytes length is ≥ -1 (legacy) and not longer than the bytes left;
- every array length is ≥ -1 (legacy) and ``count × smallest element size`` is not more than the
  bytes left — Kafka's generated ``read`` methods reject ``arrayLength > _readable.remaining()``
  the same way ("Tried to allocate a collection of size …");
- null only where the field is nullable (Kafka's generated code throws "non-nullable field … was
  serialized as null");
- tagged fields: the count fits, each tag is one the version defines (kio refuses unknown tags),
  each declared size fits, and the field's content is exactly its declared size.

A frame that fails any check raises :class:`FrameError`; the listener then closes the
connection, as Kafka's ``SocketServer`` does when ``RequestContext.parseRequest`` throws an
``InvalidRequestException``. The guard never decodes: kio stays the decoder, the guard only
rejects. Its cost is one pass over the frame's structure; ``records``/``bytes`` payloads are
skipped by length, not read.

Walkers are compiled once per (api key, version) by :func:`compile_request_guard`; a compiled
:class:`RequestGuard` is immutable and safe to share between threads.
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass
from typing import Callable

from kio.serial._introspect import (  # kio's own schema introspection: the guard reads schemas as kio does
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

__all__ = ["FrameError", "RequestGuard", "compile_request_guard", "read_uvarint32"]


class FrameError(ValueError):
    """A frame cannot be parsed (truncated, a declared length beyond the frame, null where the
    schema forbids it, an unknown tagged field, a bad header). The listener closes the
    connection, as Kafka's ``SocketServer`` does for an ``InvalidRequestException``."""


#: ``(buffer, position, end) -> new position``; raises :class:`FrameError`. ``end`` is exclusive.
Walk = Callable[[bytes, int, int], int]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

#: Bytes of each fixed-size kafka type as kio reads it (``schema.rs::read_primitive``).
_FIXED_SIZES: dict[str, int] = {
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}


def read_uvarint32(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """Read an unsigned varint of at most 5 bytes that fits in 32 bits from ``buf[pos:end]``.

    Returns ``(value, position after it)``. Raises :class:`FrameError` if it runs past ``end``,
    is longer than 5 bytes, or its 5th byte carries bits above bit 31 (Kafka's
    ``ByteUtils.readUnsignedVarint`` reads an ``int``; kio accepts up to 35 bits)."""
    value = 0
    shift = 0
    for i in range(5):
        if pos >= end:
            raise FrameError("truncated unsigned varint")
        b = buf[pos]
        pos += 1
        if i == 4 and b > 0x0F:
            raise FrameError("unsigned varint does not fit in 32 bits")
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
    raise FrameError("unsigned varint longer than 5 bytes")  # pragma: no cover - i == 4 returns or raises


# --- primitive walkers -------------------------------------------------------------------------


def _fixed(n: int, name: str) -> Walk:
    def walk(buf: bytes, pos: int, end: int) -> int:
        pos += n
        if pos > end:
            raise FrameError(f"{name}: {n} bytes needed past the end of the frame")
        return pos

    return walk


def _compact_bytes(nullable: bool, name: str) -> Walk:
    """COMPACT_STRING / COMPACT_BYTES: uvarint length + 1 (0 = null), then the bytes."""

    def walk(buf: bytes, pos: int, end: int) -> int:
        n, pos = read_uvarint32(buf, pos, end)
        if n == 0:
            if not nullable:
                raise FrameError(f"{name}: non-nullable field was serialized as null")
            return pos
        if n - 1 > end - pos:
            raise FrameError(f"{name}: length {n - 1} exceeds the {end - pos} bytes left")
        return pos + n - 1

    return walk


def _legacy_string(nullable: bool, name: str) -> Walk:
    """STRING / NULLABLE_STRING: int16 length (-1 = null), then the bytes."""

    def walk(buf: bytes, pos: int, end: int) -> int:
        if pos + 2 > end:
            raise FrameError(f"{name}: string length past the end of the frame")
        (n,) = _I16.unpack_from(buf, pos)
        pos += 2
        if n < 0:
            if n == -1 and nullable:
                return pos
            raise FrameError(f"{name}: string length {n}" + (" (null in a non-nullable field)" if n == -1 else ""))
        if pos + n > end:
            raise FrameError(f"{name}: string length {n} exceeds the {end - pos} bytes left")
        return pos + n

    return walk


def _legacy_bytes(nullable: bool, name: str) -> Walk:
    """BYTES / NULLABLE_BYTES / RECORDS (non-flexible): int32 length (-1 = null), then the bytes."""

    def walk(buf: bytes, pos: int, end: int) -> int:
        if pos + 4 > end:
            raise FrameError(f"{name}: bytes length past the end of the frame")
        (n,) = _I32.unpack_from(buf, pos)
        pos += 4
        if n < 0:
            if n == -1 and nullable:
                return pos
            raise FrameError(f"{name}: bytes length {n}" + (" (null in a non-nullable field)" if n == -1 else ""))
        if pos + n > end:
            raise FrameError(f"{name}: bytes length {n} exceeds the {end - pos} bytes left")
        return pos + n

    return walk


# --- compiled nodes ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Node:
    """A compiled walker with the smallest number of bytes any value of it takes on the wire
    (``min_size``) and, for fixed-size values, that size (``fixed``), used to bound arrays."""

    walk: Walk
    min_size: int
    fixed: int | None = None


def _primitive(kafka_type: str, flexible: bool, optional: bool, name: str) -> _Node:
    size = _FIXED_SIZES.get(kafka_type)
    if size is not None:
        return _Node(_fixed(size, name), size, size)
    if kafka_type in ("string", "bytes", "records"):
        if flexible:
            return _Node(_compact_bytes(optional, name), 1)
        if kafka_type == "string":
            return _Node(_legacy_string(optional, name), 2)
        return _Node(_legacy_bytes(optional, name), 4)
    raise TypeError(f"{name}: no guard for kafka type {kafka_type!r}")


def _array(elem: _Node, flexible: bool, nullable: bool, name: str) -> _Node:
    """COMPACT_ARRAY (uvarint count + 1, 0 = null) or ARRAY (int32 count, -1 = null) of ``elem``."""
    unit = max(elem.min_size, 1)  # Kafka's own bound: count ≤ bytes remaining
    fixed = elem.fixed
    elem_walk = elem.walk

    def walk(buf: bytes, pos: int, end: int) -> int:
        if flexible:
            n, pos = read_uvarint32(buf, pos, end)
            count = n - 1
        else:
            if pos + 4 > end:
                raise FrameError(f"{name}: array length past the end of the frame")
            (count,) = _I32.unpack_from(buf, pos)
            pos += 4
            if count < -1:
                raise FrameError(f"{name}: negative array length {count}")
        if count == -1:
            if not nullable:
                raise FrameError(f"{name}: non-nullable field was serialized as null")
            return pos
        if count * unit > end - pos:
            raise FrameError(f"{name}: array of {count} elements declared, only {end - pos} bytes left")
        if fixed is not None:
            return pos + count * fixed
        for _ in range(count):
            pos = elem_walk(buf, pos, end)
        return pos

    return _Node(walk, 1 if flexible else 4)


def _field_node(entity: type, field: dataclasses.Field, is_header: bool, tagged: bool, cache: dict) -> _Node:
    """Mirror of kio's ``schema.rs::build_field_schema`` for one dataclass field."""
    name = f"{entity.__name__}.{field.name}"
    flexible = bool(entity.__flexible__)
    if is_header and field.name == "client_id":
        # Kafka's RequestHeader.json: client_id is a legacy nullable string in every header version.
        return _primitive("string", False, True, name)
    fc = classify_field(field)
    nullable = is_optional(field)
    if isinstance(fc, EntityField):
        return _entity_node(fc.type_, nullable, cache)
    if isinstance(fc, EntityTupleField):
        return _array(_entity_node(fc.type_, False, cache), flexible, nullable, name)
    kafka_type = get_schema_field_type(field)
    if isinstance(fc, PrimitiveTupleField):
        return _array(_primitive(kafka_type, flexible, False, name + "[]"), flexible, nullable, name)
    # kio reads a tagged primitive as non-nullable (presence is the tag itself).
    return _primitive(kafka_type, flexible, nullable and not tagged, name)


def _entity_node(entity: type, nullable: bool, cache: dict) -> _Node:
    """Compile the walker of one kio entity (struct): a nullable marker (KIP-893; kio reads int8
    -1 as null, anything else as present), the regular fields in declaration order, and for a
    flexible entity the tagged-field section."""
    key = (entity, nullable)
    node = cache.get(key)
    if node is not None:
        return node
    is_header = entity.__name__ == "RequestHeader"
    flexible = bool(entity.__flexible__)
    regular: list[Walk] = []
    tagged: dict[int, Walk] = {}
    min_size = 0
    for f in dataclasses.fields(entity):
        tag = get_field_tag(f)
        fnode = _field_node(entity, f, is_header, tag is not None, cache)
        if tag is None:
            regular.append(fnode.walk)
            min_size += fnode.min_size
        else:
            tagged[int(tag)] = fnode.walk
    if flexible:
        min_size += 1
    fields_walks = tuple(regular)
    ename = entity.__name__

    def walk_fields(buf: bytes, pos: int, end: int) -> int:
        for w in fields_walks:
            pos = w(buf, pos, end)
        if not flexible:
            return pos
        n, pos = read_uvarint32(buf, pos, end)
        if 2 * n > end - pos:  # each tagged field takes at least a tag byte and a size byte
            raise FrameError(f"{ename}: {n} tagged fields declared, only {end - pos} bytes left")
        for _ in range(n):
            tag, pos = read_uvarint32(buf, pos, end)
            size, pos = read_uvarint32(buf, pos, end)
            if size > end - pos:
                raise FrameError(f"{ename}: tagged field {tag} of {size} bytes exceeds the {end - pos} bytes left")
            tw = tagged.get(tag)
            if tw is None:
                raise FrameError(f"{ename}: unknown tagged field {tag}")
            stop = pos + size
            if tw(buf, pos, stop) != stop:
                raise FrameError(f"{ename}: tagged field {tag} does not fill its declared {size} bytes")
            pos = stop
        return pos

    if nullable:

        def walk(buf: bytes, pos: int, end: int) -> int:
            if pos >= end:
                raise FrameError(f"{ename}: null marker past the end of the frame")
            if buf[pos] == 0xFF:  # int8 -1
                return pos + 1
            return walk_fields(buf, pos + 1, end)

        node = _Node(walk, 1)
    else:
        node = _Node(walk_fields, min_size)
    cache[key] = node
    return node


@dataclass(frozen=True, slots=True)
class RequestGuard:
    """The compiled guard of one request schema: ``header_schema`` and ``body_schema`` are the
    kio classes, and :meth:`check` walks a frame. Immutable; share it between threads."""

    api_key: int
    api_version: int
    header_schema: type
    body_schema: type
    _header: Walk
    _body: Walk

    def check(self, frame: bytes) -> int:
        """Walk ``frame`` (a request without its int32 size prefix: header, then body).

        Returns the number of bytes the header and body take (trailing bytes are the
        caller's business; Kafka ignores them). Raises :class:`FrameError` at the first declared
        length, count, null or tag the frame cannot back."""
        end = len(frame)
        try:
            pos = self._header(frame, 0, end)
            return self._body(frame, pos, end)
        except FrameError as exc:
            raise FrameError(f"malformed api_key={self.api_key} v{self.api_version}: {exc}") from None


def compile_request_guard(body_schema: type) -> RequestGuard:
    """Compile the guard of a kio request class (e.g. ``load_request_schema(77, 1)``) and its
    ``__header_schema__``. Raises ``TypeError`` for a kafka type the guard does not know (so a
    kio upgrade that adds one fails at start-up, not on the wire)."""
    cache: dict = {}
    header = body_schema.__header_schema__
    return RequestGuard(
        api_key=int(body_schema.__api_key__),
        api_version=int(body_schema.__version__),
        header_schema=header,
        body_schema=body_schema,
        _header=_entity_node(header, False, cache).walk,
        _body=_entity_node(body_schema, False, cache).walk,
    )
