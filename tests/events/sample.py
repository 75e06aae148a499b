"""Test-only domain events (registered under the ``test.`` prefix)."""

from __future__ import annotations

from dataclasses import dataclass

from events import domain_event, register_upcaster


@domain_event("test.Noted")
@dataclass(frozen=True, slots=True)
class Noted:
    """A test event with a mix of field types."""

    n: int
    text: str = ""


@dataclass(frozen=True, slots=True)
class Range:
    first_offset: int
    last_offset: int


@domain_event("test.RangesMarked", schema_version=3)
@dataclass(frozen=True, slots=True)
class RangesMarked:
    """Schema v3: ``ranges`` (v1 had ``first``/``last``; v2 had ``ranges`` without ``member``)."""

    member: str
    ranges: tuple[Range, ...]
    flag: bool = False
    blob: bytes = b""
    score: float | None = None


@register_upcaster("test.RangesMarked", 1)
def _v1_to_v2(data: dict) -> dict:
    return {"ranges": [{"first_offset": data["first"], "last_offset": data["last"]}]}


@register_upcaster("test.RangesMarked", 2)
def _v2_to_v3(data: dict) -> dict:
    return {**data, "member": data.get("member", "")}
