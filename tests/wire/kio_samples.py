"""Valid kio request entities for any (api key, version), for the frame-guard tests and the fuzzers.

:func:`sample_body` fills every field of a kio request class from its schema metadata
(``kafka_type``, optionality, tags): ``variant=0`` is the minimal request (empty arrays, nulls
where allowed, tagged fields at their defaults), ``variant=1`` a populated one (two elements per
array, every nullable field present, every tagged field set). :func:`sample_frame` encodes it
with its request header into a frame without the size prefix.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from typing import Any

from kio.index import load_request_schema
from kio.schema.errors import ErrorCode
from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveTupleField, classify_field, get_field_tag, get_schema_field_type, is_optional

from wire.protocol import encode_request, request_header

__all__ = ["sample_body", "sample_frame"]

_UUID = uuid.UUID("0b8e4f4a-9a5c-4d1e-8f00-5a6b7c8d9e0f")


def _primitive(kafka_type: str, i: int) -> Any:
    if kafka_type in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        return 1 + i
    if kafka_type == "float64":
        return 0.5
    if kafka_type == "bool":
        return True
    if kafka_type == "string":
        return f"s{i}"
    if kafka_type in ("bytes", "records"):
        return b"\x01\x02\x03"
    if kafka_type == "uuid":
        return _UUID
    if kafka_type == "error_code":
        return ErrorCode.none
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=250)
    if kafka_type == "datetime_i64":
        return datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    raise TypeError(kafka_type)


def sample_body(cls: type, variant: int) -> Any:
    """An instance of kio entity ``cls`` (``variant`` 0 minimal, 1 populated; see module doc)."""
    kwargs = {}
    for f in dataclasses.fields(cls):
        tagged = get_field_tag(f) is not None
        if tagged and variant == 0:
            continue  # leave at its default: not written
        fc = classify_field(f)
        optional = is_optional(f)
        if variant == 0 and optional and not tagged:
            kwargs[f.name] = None
            continue
        if isinstance(fc, EntityField):
            kwargs[f.name] = sample_body(fc.type_, variant)
        elif isinstance(fc, EntityTupleField):
            kwargs[f.name] = () if variant == 0 else tuple(sample_body(fc.type_, variant) for _ in range(2))
        elif isinstance(fc, PrimitiveTupleField):
            kt = get_schema_field_type(f)
            kwargs[f.name] = () if variant == 0 else tuple(_primitive(kt, i) for i in range(2))
        else:
            kwargs[f.name] = _primitive(get_schema_field_type(f), 0)
    return cls(**kwargs)


def sample_frame(api_key: int, api_version: int, variant: int, correlation_id: int = 7) -> bytes:
    """A valid request frame (header + body, WITHOUT the int32 size prefix)."""
    body = sample_body(load_request_schema(api_key, api_version), variant)
    return encode_request(request_header(api_key, api_version, correlation_id), body)[4:]
