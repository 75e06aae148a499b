"""wire/forwarding.py without sockets: which requests a node forwards to a group's coordinator,
and how the coordinator serves an Envelope (the e2e side: tests/e2e/test_cluster_share_e2e.py)."""

from __future__ import annotations

import datetime

from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.schema.produce.v9.request import ProduceRequest
from kio.schema.share_fetch.v1.request import ShareFetchRequest
from kio.static.primitive import i8, i16, i32

from wire.dispatch import SUPPORTED
from wire.forwarding import ForwardedConnection, ShareForwarder, serve_envelope
from wire.protocol import DecodedRequest, decode_response, encode_request, request_header

GROUP_RESOURCE, TOPIC_RESOURCE = 32, 2


def _share_fetch(group: str = "g") -> ShareFetchRequest:
    return ShareFetchRequest(group_id=group, member_id="m", share_session_epoch=i32(0), max_wait=datetime.timedelta(milliseconds=500),
                             min_bytes=i32(1), max_records=i32(100), batch_size=i32(100), topics=(), forgotten_topics_data=())


def _decoded(api_key: int, version: int, body, client_id: str = "client", cid: int = 7) -> DecodedRequest:
    return DecodedRequest(api_key, version, cid, client_id, request_header(api_key, version, cid, client_id), body)


def _describe_configs(*resources: tuple[int, str]) -> DescribeConfigsRequest:
    return DescribeConfigsRequest(resources=tuple(DescribeConfigsResource(resource_type=i8(t), resource_name=n, configuration_keys=None) for t, n in resources))


def test_only_requests_about_one_group_another_node_coordinates_are_forwarded():
    fw = ShareForwarder(1, lambda group: {"mine": 1, "theirs": 3}.get(group, -1), lambda _n: ("127.0.0.1", 1))
    assert fw.target(_decoded(78, 1, _share_fetch("theirs"))) == 3
    assert fw.target(_decoded(78, 1, _share_fetch("mine"))) is None  # served here
    assert fw.target(_decoded(78, 1, _share_fetch("nobody"))) is None  # no live coordinator: served (and refused) here
    assert fw.target(_decoded(32, 4, _describe_configs((GROUP_RESOURCE, "theirs")))) == 3
    assert fw.target(_decoded(32, 4, _describe_configs((GROUP_RESOURCE, "theirs"), (TOPIC_RESOURCE, "t")))) is None
    assert fw.target(_decoded(32, 4, _describe_configs((GROUP_RESOURCE, "theirs"), (GROUP_RESOURCE, "mine")))) is None
    assert fw.target(_decoded(32, 4, _describe_configs((TOPIC_RESOURCE, "t")))) is None
    produce = ProduceRequest(transactional_id=None, acks=i16(1), timeout=datetime.timedelta(seconds=1), topic_data=())
    assert fw.target(_decoded(0, 9, produce)) is None


def _envelope(inner_body, inner_key: int = 78, inner_version: int = 1, principal: bytes = b"User:alice", via: str = "shoal-forward-2"):
    inner = encode_request(request_header(inner_key, inner_version, 41, "rdkafka"), inner_body)[4:]
    body = EnvelopeRequest(request_data=inner, request_principal=principal, client_host_address=bytes([10, 0, 0, 7]))
    return _decoded(58, 0, body, client_id=via)


class _Conn:
    principal = "User:broker"
    listener = "PLAINTEXT"
    security_protocol = "PLAINTEXT"
    peer = ("127.0.0.1", 5555)


def test_the_coordinator_runs_the_inner_request_as_the_client_and_returns_its_response():
    seen = []

    def handle(req, conn):
        seen.append((req, conn))
        from kio.schema.share_fetch.v1.response import ShareFetchResponse
        from kio.schema.errors import ErrorCode

        return ShareFetchResponse(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, error_message=None,
                                  acquisition_lock_timeout=datetime.timedelta(milliseconds=30000), responses=(), node_endpoints=())

    resp = serve_envelope(_envelope(_share_fetch("g")), _Conn(), SUPPORTED, handle)
    assert int(resp.error_code.value) == 0
    (req, conn), = seen
    assert (req.api_key, req.correlation_id, str(req.body.group_id)) == (78, 41, "g")
    assert isinstance(conn, ForwardedConnection)
    assert (conn.principal, conn.peer, conn.forwarded_by, conn.listener) == ("User:alice", ("10.0.0.7", 0), 2, "PLAINTEXT")
    cid, inner = decode_response(bytes(resp.response_data), 78, 1)
    assert cid == 41 and int(inner.acquisition_lock_timeout.total_seconds() * 1000) == 30000


def test_envelopes_the_coordinator_refuses():
    calls = []

    def handle(req, conn):
        calls.append(req)
        raise AssertionError("must not run")

    produce = ProduceRequest(transactional_id=None, acks=i16(1), timeout=datetime.timedelta(seconds=1), topic_data=())
    invalid_request, cluster_auth_failed = 42, 31
    assert int(serve_envelope(_envelope(produce, 0, 9), _Conn(), SUPPORTED, handle).error_code.value) == invalid_request
    assert int(serve_envelope(_envelope(_share_fetch(), via="rdkafka"), _Conn(), SUPPORTED, handle).error_code.value) == invalid_request
    garbled = _decoded(58, 0, EnvelopeRequest(request_data=b"\x00\x4e", request_principal=None, client_host_address=b""), client_id="shoal-forward-2")
    assert int(serve_envelope(garbled, _Conn(), SUPPORTED, handle).error_code.value) == invalid_request

    class Deny:
        def check(self, *_a) -> bool:
            return False

    resp = serve_envelope(_envelope(_share_fetch()), _Conn(), SUPPORTED, handle, authorizer=Deny())
    assert int(resp.error_code.value) == cluster_auth_failed and resp.response_data is None
    assert calls == []
