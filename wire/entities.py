"""Small helpers to build kio response entities for whichever version a client asked for.

kio generates one module per API version, each with its own dataclasses (``MetadataResponse``,
``MetadataResponseTopic`` …). A handler builds its response with :func:`build`, which looks the
nested class up in the module of the version in use and drops keyword arguments the version
does not have (a field added in v12 is simply absent in v9), so one handler serves the whole
advertised version range.
"""

from __future__ import annotations

import dataclasses
import datetime
import sys
from functools import cache
from typing import Any

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode

__all__ = ["NO_THROTTLE", "build", "duration_ms", "error_code", "response_class", "nested_class"]

NO_THROTTLE = datetime.timedelta(0)


@cache
def response_class(api_key: int, api_version: int) -> type:
    """The kio response class for ``api_key``/``api_version`` (raises kio's index errors)."""
    return load_response_schema(api_key, api_version)


@cache
def nested_class(module_of: type, name: str) -> type:
    """The dataclass ``name`` in the module where ``module_of`` is defined."""
    return getattr(sys.modules[module_of.__module__], name)


@cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def build(cls: type, /, **kwargs: Any) -> Any:
    """Instantiate kio dataclass ``cls`` from ``kwargs``, ignoring keys the class has no field for."""
    names = _field_names(cls)
    return cls(**{k: v for k, v in kwargs.items() if k in names})


def nested(top: type, name: str, /, **kwargs: Any) -> Any:
    """:func:`build` for the nested class ``name`` of the same version module as ``top``."""
    return build(nested_class(top, name), **kwargs)


def error_code(name: str | None) -> ErrorCode:
    """Kafka error name (``"UNKNOWN_TOPIC_OR_PARTITION"``, case-insensitive; ``None`` or
    ``"NONE"`` for no error) → kio ``ErrorCode``. Unknown names map to UNKNOWN_SERVER_ERROR."""
    if not name:
        return ErrorCode.none
    try:
        return ErrorCode[name.lower()]
    except KeyError:
        return ErrorCode.unknown_server_error


def error_name(code: int | ErrorCode) -> str | None:
    """Kafka error code → its upper-case name (``None`` for 0), the inverse of
    :func:`error_code`; a code kio does not know gives ``"UNKNOWN_SERVER_ERROR"``."""
    code = int(code)
    if code == 0:
        return None
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return "UNKNOWN_SERVER_ERROR"


def duration_ms(v: Any, default: int = -1) -> int:
    """A request's duration field in ms: kio decodes Kafka's ``*Ms``/``*Timeout`` int32 fields as
    ``timedelta`` (an int passes through); ``default`` when the field is absent (``None``)."""
    if v is None:
        return default
    if isinstance(v, datetime.timedelta):
        return int(v.total_seconds() * 1000)
    return int(v)
