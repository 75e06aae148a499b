"""The log codec: round trips (Hypothesis), upcasting from old schema versions, clear errors."""

from __future__ import annotations

import dataclasses
import uuid

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from events import CorruptEventError, RecordedEvent, decode_event, domain_event, encode_event, new_event
from events.base import EventEnvelope, event_class, registered_event_types
from tests.events.sample import Noted, Range, RangesMarked

ranges = st.builds(Range, st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1))
marked = st.builds(
    RangesMarked,
    member=st.text(),
    ranges=st.lists(ranges, max_size=20).map(tuple),
    flag=st.booleans(),
    blob=st.binary(max_size=64),
    # JSON has no infinities or NaN (msgspec writes them as null); no domain event carries a float.
    score=st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)),
)


@given(marked)
def test_round_trip_nested_dataclasses(event: RangesMarked) -> None:
    encoded = new_event(event)
    assert encoded.event_type == "test.RangesMarked" and encoded.schema_version == 3
    assert decode_event(encoded.event_type, encoded.schema_version, encoded.data) == event


@given(st.integers(-(2**63), 2**63 - 1), st.text())
def test_round_trip_scalars(n: int, text: str) -> None:
    assert decode_event("test.Noted", 1, encode_event(Noted(n, text))) == Noted(n, text)


def test_json_keys_are_the_field_names_for_sql_projections() -> None:
    assert msgspec.json.decode(encode_event(Noted(7, "x"))) == {"n": 7, "text": "x"}


def test_upcasts_v1_and_v2_payloads_to_the_current_schema() -> None:
    v1 = b'{"first": 5, "last": 9}'
    assert decode_event("test.RangesMarked", 1, v1) == RangesMarked(member="", ranges=(Range(5, 9),))
    v2 = b'{"ranges": [{"first_offset": 1, "last_offset": 2}], "member": "m"}'
    assert decode_event("test.RangesMarked", 2, v2) == RangesMarked(member="m", ranges=(Range(1, 2),))


def test_corrupt_payload_names_the_position() -> None:
    with pytest.raises(CorruptEventError) as info:
        decode_event("test.Noted", 1, b'{"n": "not an int"', position=42)
    assert info.value.position == 42 and "42" in str(info.value)


def test_unknown_type_and_future_version_are_corrupt_not_crashes() -> None:
    with pytest.raises(CorruptEventError, match="unknown event type"):
        decode_event("nope.Never", 1, b"{}", position=3)
    with pytest.raises(CorruptEventError, match="newer"):
        decode_event("test.Noted", 9, b'{"n": 1}', position=4)


def test_recorded_event_decodes_into_an_envelope() -> None:
    rec = RecordedEvent(uuid.uuid4(), "s", 1, 10, "test.Noted", 1, 123, b'{"n": 3}')
    env = EventEnvelope.of(rec)
    assert env.data == Noted(3) and env.position == 10 and env.stream_version == 1


def test_registration_rules() -> None:
    assert event_class("test.Noted") is Noted
    assert "test.Noted" in registered_event_types()
    with pytest.raises(ValueError):

        @domain_event("test.Noted")
        @dataclasses.dataclass(frozen=True)
        class Clash:  # another class under a taken name
            n: int

    with pytest.raises(ValueError):

        @domain_event("test.Mutable")
        @dataclasses.dataclass
        class Mutable:
            n: int

    with pytest.raises(ValueError):
        domain_event("test.Bad", schema_version=0)


def test_new_event_ids_are_time_ordered_uuid7() -> None:
    from events.codec import uuid7

    ids = [new_event(Noted(i)).event_id for i in range(5000)]
    assert all(u.version == 7 and u.variant == uuid.RFC_4122 for u in ids)
    assert ids == sorted(ids, key=lambda u: u.int) and len(set(ids)) == len(ids)
    # the leading 48 bits are the Unix time in ms; a clock stepping back keeps ids increasing
    at = uuid7(lambda: 1_700_000_000_123 * 1_000_000)
    assert at.int >> 80 >= 1_700_000_000_123
    assert uuid7(lambda: 1_000 * 1_000_000).int > at.int
