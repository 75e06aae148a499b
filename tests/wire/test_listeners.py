"""``listeners`` / ``advertised.listeners`` / ``listener.security.protocol.map`` parsing (Kafka's
``EndPoint`` and ``KafkaConfig`` rules), the ``listener.name.<name>.`` prefix, and Metadata /
FindCoordinator answering with the endpoint of the listener the request arrived on."""

from __future__ import annotations

import socket
import struct

import pytest
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.metadata.v12.request import MetadataRequest
from kio.static.primitive import i8

from config import ConfigError
from tests.wire.fake_backend import FakeBackend
from wire.dispatch import KafkaDispatcher
from wire.listeners import ListenerSpec, advertised_endpoints, listener_config, parse_listeners, security_protocol_map
from wire.protocol import decode_response, encode_request, request_header
from wire.server import KafkaListener


def test_parse_listeners_with_the_default_map():
    specs = parse_listeners({"listeners": "PLAINTEXT://127.0.0.1:9092, sasl_ssl://:9094,SSL://[::1]:9093"})
    assert specs == [
        ListenerSpec("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092),
        ListenerSpec("SASL_SSL", "SASL_SSL", "", 9094),
        ListenerSpec("SSL", "SSL", "::1", 9093),
    ]
    assert specs[1].bind_host == "0.0.0.0"


def test_custom_listener_names_through_the_protocol_map():
    cfg = {"listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0", "listener.security.protocol.map": "INTERNAL:PLAINTEXT,external:sasl_ssl"}
    assert [(s.name, s.security_protocol) for s in parse_listeners(cfg)] == [("INTERNAL", "PLAINTEXT"), ("EXTERNAL", "SASL_SSL")]
    assert security_protocol_map({})["SASL_PLAINTEXT"] == "SASL_PLAINTEXT"


@pytest.mark.parametrize(
    "cfg",
    [
        {"listeners": ""},
        {"listeners": "127.0.0.1:9092"},
        {"listeners": "FOO://127.0.0.1:9092"},  # not in the map
        {"listeners": "PLAINTEXT://h:1,PLAINTEXT://h:2"},  # same name twice
        {"listeners": "PLAINTEXT://h:1,SSL://h:1"},  # same port twice
        {"listeners": "PLAINTEXT://h:70000"},
        {"listeners": "X://h:1", "listener.security.protocol.map": "X:KERBEROS"},
        {"listeners": "X://h:1", "listener.security.protocol.map": "X"},
    ],
)
def test_listener_errors(cfg):
    with pytest.raises(ConfigError):
        parse_listeners(cfg)


def test_two_port_zero_listeners_are_allowed():
    assert len(parse_listeners({"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"})) == 2


def test_advertised_endpoints():
    bound = {"PLAINTEXT": ("127.0.0.1", 40001), "SASL_SSL": ("0.0.0.0", 40002)}
    cfg = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://:0"}
    assert advertised_endpoints(cfg, bound) == {"PLAINTEXT": ("127.0.0.1", 40001), "SASL_SSL": ("127.0.0.1", 40002)}
    cfg["advertised.listeners"] = "SASL_SSL://broker.example.com:19094"
    assert advertised_endpoints(cfg, bound) == {"SASL_SSL": ("broker.example.com", 19094), "PLAINTEXT": ("127.0.0.1", 40001)}
    cfg["advertised.listeners"] = "SSL://x:1"
    with pytest.raises(ConfigError):
        advertised_endpoints(cfg, bound)


def test_listener_prefix_overrides_only_that_listener():
    cfg = {"ssl.client.auth": "none", "listener.name.clients.ssl.client.auth": "required", "listener.name.other.ssl.client.auth": "requested"}
    assert listener_config(cfg, "CLIENTS")["ssl.client.auth"] == "required"
    assert listener_config(cfg, "PLAINTEXT")["ssl.client.auth"] == "none"


def _rpc(port: int, api_key: int, version: int, body) -> object:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(encode_request(request_header(api_key, version, 1), body))
        head = s.recv(4, socket.MSG_WAITALL)
        payload = s.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
    return decode_response(payload, api_key, version)[1]


def test_metadata_and_find_coordinator_answer_with_the_listener_the_request_came_on():
    be = FakeBackend()
    d = KafkaDispatcher(be, auto_create_topics=False)
    a = KafkaListener("127.0.0.1", 0, d, name="INTERNAL").start()
    b = KafkaListener("127.0.0.1", 0, d, name="EXTERNAL").start()
    try:
        be.endpoints = {"INTERNAL": ("internal.example", 1111), "EXTERNAL": ("external.example", 2222)}
        md = MetadataRequest(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        got = [(x.host, int(x.port)) for port in (a.port, b.port) for x in _rpc(port, 3, 12, md).brokers]
        assert got == [("internal.example", 1111), ("external.example", 2222)]
        fc = FindCoordinatorRequest(key_type=i8(0), coordinator_keys=("g",))
        c = _rpc(b.port, 10, 4, fc).coordinators[0]
        assert (c.host, int(c.port)) == ("external.example", 2222)
        be.endpoints = {}  # a backend without endpoints: its host/port (PLAINTEXT-only setups unchanged)
        assert [(x.host, int(x.port)) for x in _rpc(a.port, 3, 12, md).brokers] == [(be.host, be.port)]
    finally:
        a.stop()
        b.stop()
