"""The frame guard (:mod:`wire.frame_guard`) and the request paths it protects (issue 13).

Everything that gives bytes to kio's native reader for a malformed frame runs in a child process
(``tests/wire/_guard_child.py``): kio 0.6.5 aborts the process on a huge declared array length,
and an abort must fail the test, not kill pytest.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from tests.e2e.helpers import read_frame
from tests.wire.fake_backend import FakeBackend
from tests.wire.kio_samples import sample_body, sample_frame
from wire import admin
from wire.dispatch import SUPPORTED, KafkaDispatcher
from wire.frame_guard import FrameError, compile_request_guard, read_uvarint32
from wire.protocol import DecodedRequest, decode_request, decode_response, encode_request, preload, request_codec, request_header
from wire.server import KafkaListener

ROOT = Path(__file__).resolve().parents[2]
PAIRS = [(k, v) for k, (lo, hi) in sorted(SUPPORTED.items()) for v in range(lo, hi + 1)]

#: The APIs issue 13 measured dying at their highest version (the first body field is an array).
ISSUE_APIS = [(3, 12), (16, 5), (19, 7), (20, 6), (32, 4), (44, 1), (77, 1), (90, 0)]


def _child(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "tests.wire._guard_child", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def _child_json(*args: str) -> object:
    p = _child(*args)
    assert p.returncode == 0, f"child exited {p.returncode} (negative = killed by that signal):\n{p.stderr[-3000:]}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def _header_bytes(api_key: int, api_version: int) -> bytes:
    """The request header of a (key, version) as a client sends it (client id "fuzz"), no body."""
    header = request_header(api_key, api_version, 7, "fuzz")
    out = io.BytesIO()
    entity_writer(type(header))(out, header)
    return out.getvalue()


# --- the guard agrees with kio on valid frames ------------------------------------------------


@pytest.mark.parametrize("variant", [0, 1])
@pytest.mark.parametrize(("api_key", "api_version"), PAIRS)
def test_guard_accepts_every_valid_request_and_kio_decodes_it_unchanged(api_key, api_version, variant):
    body = sample_body(load_request_schema(api_key, api_version), variant)
    frame = encode_request(request_header(api_key, api_version, 5), body)[4:]
    assert request_codec(api_key, api_version).guard.check(frame) == len(frame)
    decoded = decode_request(frame, SUPPORTED)
    assert (decoded.api_key, decoded.api_version, decoded.correlation_id) == (api_key, api_version, 5)
    assert decoded.body == body


def test_preload_builds_a_codec_for_every_advertised_version():
    assert preload(SUPPORTED) == len(PAIRS)
    assert all(request_codec(k, v) is not None for k, v in PAIRS)


# --- the guard's rules, one by one ------------------------------------------------------------


def test_uvarint32_rules():
    assert read_uvarint32(b"\x00", 0, 1) == (0, 1)
    assert read_uvarint32(b"\xff\xff\xff\xff\x0f", 0, 5) == (2**32 - 1, 5)
    with pytest.raises(FrameError, match="32 bits"):
        read_uvarint32(b"\xff\xff\xff\xff\x10", 0, 5)
    with pytest.raises(FrameError, match="32 bits"):
        read_uvarint32(b"\xff\xff\xff\xff\xff\x01", 0, 6)  # six bytes
    with pytest.raises(FrameError, match="truncated"):
        read_uvarint32(b"\x80\x80", 0, 2)


def test_issue_reproducer_is_a_frame_error_not_an_abort():
    frame = _header_bytes(77, 1) + bytes.fromhex("ffffffff0f")
    assert len(frame) + 4 == 24  # the issue's 24-byte frame
    with pytest.raises(FrameError, match="4294967294 elements"):
        request_codec(77, 1).guard.check(frame)
    assert _child_json("frames", frame.hex()) == ["FrameError"]


@pytest.mark.parametrize(("api_key", "api_version"), ISSUE_APIS)
def test_each_api_of_the_issue_with_a_huge_array_length_is_a_frame_error(api_key, api_version):
    flexible = load_request_schema(api_key, api_version).__flexible__
    huge = [bytes.fromhex("ffffffff0f"), bytes.fromhex("ffffff7f")] if flexible else [struct.pack(">i", 2**31 - 1), struct.pack(">i", 1 << 24)]
    frames = [_header_bytes(api_key, api_version) + h + b"\x00" * 8 for h in huge]
    for f in frames:
        with pytest.raises(FrameError, match="elements declared"):
            request_codec(api_key, api_version).guard.check(f)
    assert _child_json("frames", *(f.hex() for f in frames)) == ["FrameError"] * len(frames)


def test_string_and_bytes_lengths_beyond_the_frame_are_rejected():
    guard = request_codec(3, 4).guard  # Metadata v4: legacy array of legacy strings
    header = _header_bytes(3, 4)
    ok = header + struct.pack(">i", 1) + struct.pack(">h", 3) + b"abc" + b"\x01"
    assert guard.check(ok) == len(ok)
    with pytest.raises(FrameError, match="string length 300"):
        guard.check(header + struct.pack(">i", 1) + struct.pack(">h", 300) + b"abc" + b"\x01")
    with pytest.raises(FrameError, match="string length -2"):
        guard.check(header + struct.pack(">i", 1) + struct.pack(">h", -2) + b"\x01")
    with pytest.raises(FrameError, match="negative array length"):
        guard.check(header + struct.pack(">i", -5) + b"\x01")


def test_null_is_refused_where_the_schema_forbids_it_and_accepted_where_it_allows_it():
    # Fetch v12 ``topics`` is not nullable (FetchRequest.json): Kafka refuses to parse it.
    fetch = bytearray(sample_frame(1, 12, 0))
    codec = request_codec(1, 12)
    # The minimal request ends with topics (empty: 01), forgotten_topics_data (01), rack_id
    # ("s0": 03 73 30) and no tagged fields (00); turn topics' "empty" into null (00).
    assert fetch[-6:] == b"\x01\x01\x03s0\x00"
    fetch[-6] = 0
    with pytest.raises(FrameError, match="non-nullable"):
        codec.guard.check(bytes(fetch))
    # Metadata v12 ``topics`` is nullable: all topics.
    meta = sample_frame(3, 12, 0)
    assert decode_request(meta, SUPPORTED).body.topics is None


def test_unknown_tags_and_tag_sizes_that_do_not_match_are_rejected():
    header = _header_bytes(77, 1)
    base = header + b"\x01" + b"\x00"  # group_ids = [], include_authorized_operations = false
    assert request_codec(77, 1).guard.check(base + b"\x00") == len(base) + 1
    with pytest.raises(FrameError, match="unknown tagged field 9"):
        request_codec(77, 1).guard.check(base + b"\x01\x09\x00")
    with pytest.raises(FrameError, match="tagged fields declared"):
        request_codec(77, 1).guard.check(base + b"\xff\xff\xff\x7f")
    # Fetch v12 has tagged field 0 (cluster_id, a compact string): size 4 but content of 2 bytes.
    fetch = sample_frame(1, 12, 0)[:-1]
    with pytest.raises(FrameError, match="does not fill"):
        request_codec(1, 12).guard.check(fetch + b"\x01\x00\x04\x02x\x00\x00")
    assert request_codec(1, 12).guard.check(fetch + b"\x01\x00\x02\x02x") == len(fetch) + 5


def test_compile_refuses_a_kafka_type_it_cannot_walk():
    odd = dataclasses.make_dataclass("Odd", [("x", int, dataclasses.field(metadata={"kafka_type": "float32"}))], frozen=True)
    odd.__flexible__ = False
    odd.__api_key__ = 999
    odd.__version__ = 0
    odd.__header_schema__ = load_request_schema(3, 4).__header_schema__

    with pytest.raises(TypeError, match="float32"):
        compile_request_guard(odd)


# --- in a child process: no input makes decode abort ------------------------------------------


def test_every_truncation_of_every_valid_request_is_a_frame_error_in_a_child():
    counts = _child_json("prefixes")
    assert set(counts) == {"FrameError"}, counts
    assert counts["FrameError"] > 1000


def test_property_random_truncated_mutated_and_oversized_frames_never_abort_decode():
    seen = _child_json("hypothesis", "1500", "13")
    assert sum(seen.values()) >= 1000
    assert seen.get("FrameError", 0) > 0 and seen.get("ok", 0) > 0


# --- handlers: FindCoordinator v0, Metadata null names ----------------------------------------


def _request(api_key: int, api_version: int, body) -> DecodedRequest:
    frame = encode_request(request_header(api_key, api_version, 3), body)[4:]
    return decode_request(frame, SUPPORTED)


def test_find_coordinator_v0_has_no_key_type_and_means_a_group():
    from kio.schema.find_coordinator.v0.request import FindCoordinatorRequest

    be = FakeBackend()
    be.port = 19092
    resp = admin.find_coordinator(_request(10, 0, FindCoordinatorRequest(key="my-group")), be)
    assert resp.error_code == ErrorCode.none
    assert (int(resp.node_id), resp.host, int(resp.port)) == (be.node_id, be.host, 19092)


def test_find_coordinator_unknown_key_type_is_invalid_request():
    from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest

    resp = admin.find_coordinator(_request(10, 3, FindCoordinatorRequest(key="g", key_type=7)), FakeBackend())
    assert resp.error_code == ErrorCode.invalid_request


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_null_topic_name_before_v12_is_invalid_request(version):
    schema = load_request_schema(3, version)
    topic_cls = schema.__dataclass_fields__["topics"].type.__args__[0].__args__[0]
    body = dataclasses.replace(sample_body(schema, 0), topics=(topic_cls(name=None, topic_id=None),))
    resp = admin.metadata(_request(3, version, body), FakeBackend(), auto_create=False)
    assert [(t.error_code, t.name) for t in resp.topics] == [(ErrorCode.invalid_request, "")]
    assert resp.brokers == ()


# --- the listener: a failing handler or response encoding costs only its connection -----------


class _BadDispatcher(KafkaDispatcher):
    """Metadata raises in the handler; ListGroups returns a response that cannot be encoded."""

    def handle(self, request, conn):
        if request.api_key == 3:
            raise TypeError("handler bug")
        if request.api_key == 16:
            return admin.response_class(16, request.api_version)(throttle_time=None, error_code=ErrorCode.none, groups=("not a group",))  # type: ignore[arg-type]
        return super().handle(request, conn)


@pytest.mark.parametrize("bad_key", [3, 16])
def test_handler_or_encoding_failure_closes_only_that_connection(bad_key):
    be = FakeBackend()
    lst = KafkaListener("127.0.0.1", 0, _BadDispatcher(be, auto_create_topics=False), max_request_bytes=1 << 20).start()
    be.port = lst.port
    api_versions = encode_request(request_header(18, 3, 1), load_request_schema(18, 3)(client_software_name="t", client_software_version="1"))
    try:
        with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as good, socket.create_connection(("127.0.0.1", lst.port), timeout=5) as bad:
            version = SUPPORTED[bad_key][1]
            bad.sendall(encode_request(request_header(bad_key, version, 2), sample_body(load_request_schema(bad_key, version), 0)))
            assert read_frame(bad) is None  # closed, no answer
            good.sendall(api_versions)
            assert decode_response(read_frame(good), 18, 3)[0] == 1
    finally:
        lst.stop()


def test_guard_compiles_and_accepts_every_request_schema_kio_knows():
    """APIs added to ``SUPPORTED`` later (ACLs, SCRAM, …) get a guard at start-up without a change here."""
    from kio.schema.index import api_key_map, schema_name_map

    checked = 0
    for api_key, name in api_key_map.items():
        for version in schema_name_map[name]:
            try:
                schema = load_request_schema(api_key, version)
            except Exception:  # noqa: BLE001 - a response-only entry of kio's index
                continue
            guard = compile_request_guard(schema)
            for variant in (0, 1):
                frame = sample_frame(api_key, version, variant)
                assert guard.check(frame) == len(frame), (api_key, version, variant)
            checked += 1
    assert checked > 250
