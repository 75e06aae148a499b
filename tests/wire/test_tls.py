"""TLS contexts from Kafka's ``ssl.*`` keys (PEM files and inline PEM, ``ssl.key.password``,
``ssl.client.auth``, ``ssl.enabled.protocols``) with certificates generated here by
``cryptography``, and SSL / SASL_SSL listeners over real sockets (FakeBackend, no actors):
handshake failures cost only their connection, the SSL principal is the client certificate's
DN, and SASL over TLS authenticates."""

from __future__ import annotations

import socket
import ssl
import struct

import pytest
from kio.index import load_request_schema
from kio.schema.api_versions.v3.request import ApiVersionsRequest

from config import ConfigError
from tests.certs import make_pki
from tests.e2e.helpers import read_frame
from tests.wire.fake_backend import FakeBackend
from wire.dispatch import KafkaDispatcher
from wire.protocol import decode_response, encode_request, request_header
from wire.sasl import sasl_config
from wire.server import Connection, KafkaListener
from wire.tls import dn_of, normalize_pem, server_context


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def pki_encrypted(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki-enc"), key_password=b"key-pass")


def pem_cfg(pki, **extra) -> dict[str, str]:
    cfg = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server), "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca)}
    cfg.update(extra)
    return cfg


def client_ctx(pki, cert: bool = True, rogue: bool = False) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    if rogue:
        ctx.load_cert_chain(str(pki.rogue_client_cert), str(pki.rogue_client_key))
    elif cert:
        ctx.load_cert_chain(str(pki.client_cert), str(pki.client_key))
    return ctx


def api_versions_frame(corr: int) -> bytes:
    return encode_request(request_header(18, 3, corr), ApiVersionsRequest(client_software_name="t", client_software_version="1"))


class RecordingDispatcher(KafkaDispatcher):
    """Records each connection's principal/listener/protocol as the handlers see them, and
    whether a handler may defer its response (``pipelined``: never over TLS)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.seen: list[tuple[str, str, str]] = []
        self.pipelined: list[bool] = []

    def handle(self, request, conn: Connection):
        self.seen.append((conn.principal, conn.listener, conn.security_protocol))
        self.pipelined.append(conn.pipelined)
        return super().handle(request, conn)


def start(protocol: str, ctx=None, sasl=None, name=None, timeout=10.0):
    be = FakeBackend()
    d = RecordingDispatcher(be, auto_create_topics=False)
    lst = KafkaListener("127.0.0.1", 0, d, 1 << 20, name=name or protocol, security_protocol=protocol, ssl_context=ctx, sasl_config=sasl, handshake_timeout_s=timeout).start()
    be.port = lst.port
    return lst, d


# -- contexts ---------------------------------------------------------------------------------------

def test_context_from_a_pem_keystore_file(pki):
    ctx = server_context(pem_cfg(pki))
    assert ctx.verify_mode == ssl.CERT_NONE  # ssl.client.auth defaults to none
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2 and ctx.maximum_version == ssl.TLSVersion.TLSv1_3


def test_context_from_inline_pem_without_line_breaks(pki):
    flat = lambda p: p.read_text().replace("\n", "")  # noqa: E731 - what a properties continuation line leaves
    cfg = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.key": flat(pki.server_key),
        "ssl.keystore.certificate.chain": flat(pki.server_cert),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": flat(pki.ca),
        "ssl.client.auth": "required",
    }
    ctx = server_context(cfg)
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    lst, _ = start("SSL", ctx)
    try:
        with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as raw, client_ctx(pki).wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(api_versions_frame(3))
            assert decode_response(read_frame(s), 18, 3)[0] == 3
    finally:
        lst.stop()


@pytest.mark.parametrize("mode", ["requested", "required"])
def test_client_auth_without_a_truststore_trusts_the_system_cas_and_warns(pki, mode, caplog):
    """Kafka's DefaultSslEngineFactory falls back to the JVM default trust store; Shoal keeps that
    (the system CAs) and says so at context build time, naming the keys that narrow it."""
    keystore_only = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server)}
    with caplog.at_level("WARNING", logger="shoal.wire.tls"):
        ctx = server_context({**keystore_only, "ssl.client.auth": mode})
    warned = [r.getMessage() for r in caplog.records if r.name == "shoal.wire.tls" and r.levelname == "WARNING"]
    assert len(warned) == 1 and f"ssl.client.auth={mode}" in warned[0] and "ssl.truststore.location" in warned[0]
    assert ctx.verify_mode in (ssl.CERT_OPTIONAL, ssl.CERT_REQUIRED)
    caplog.clear()
    with caplog.at_level("WARNING", logger="shoal.wire.tls"):
        server_context({**keystore_only, "ssl.client.auth": "none"})  # no client certificates asked for
        server_context(pem_cfg(pki, **{"ssl.client.auth": mode}))  # a truststore is configured
    assert not [r for r in caplog.records if r.name == "shoal.wire.tls"]


def test_encrypted_key_needs_ssl_key_password(pki_encrypted):
    server_context(pem_cfg(pki_encrypted, **{"ssl.key.password": "key-pass"}))
    with pytest.raises(ConfigError):
        server_context(pem_cfg(pki_encrypted, **{"ssl.key.password": "wrong"}))


@pytest.mark.parametrize(
    "extra",
    [
        {"ssl.keystore.type": "JKS"},
        {"ssl.keystore.type": "PKCS12"},
        {"ssl.keystore.location": "/nonexistent/server.pem"},
        {"ssl.client.auth": "sometimes"},
        {"ssl.enabled.protocols": "SSLv3"},
        {"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"},
        {"ssl.keystore.key": "-----BEGIN PRIVATE KEY-----AAAA-----END PRIVATE KEY-----"},  # with a location too
        {"ssl.truststore.type": "JKS", "ssl.client.auth": "required"},
    ],
)
def test_context_errors(pki, extra):
    with pytest.raises(ConfigError):
        server_context(pem_cfg(pki, **extra))


def test_no_keystore_is_a_config_error():
    with pytest.raises(ConfigError):
        server_context({"ssl.keystore.type": "PEM"})


def test_enabled_protocols_bound_the_version(pki):
    ctx = server_context(pem_cfg(pki, **{"ssl.enabled.protocols": "TLSv1.2"}))
    lst, _ = start("SSL", ctx)
    try:
        with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as raw, client_ctx(pki, cert=False).wrap_socket(raw, server_hostname="localhost") as s:
            assert s.version() == "TLSv1.2"
    finally:
        lst.stop()


def test_normalize_pem_and_dn():
    assert normalize_pem("junk -----BEGIN X-----QUJD REVG-----END X----- more") == "-----BEGIN X-----\nQUJDREVG\n-----END X-----\n"
    with pytest.raises(ConfigError):
        normalize_pem("no pem here")
    subject = ((("countryName", "DE"),), (("organizationName", "x, y"),), (("commonName", "alice"), ("userId", "7")))
    assert dn_of(subject) == "CN=alice+UID=7,O=x\\, y,C=DE"


# -- SSL listener -----------------------------------------------------------------------------------

def test_ssl_principal_is_the_client_certificate_dn(pki):
    lst, d = start("SSL", server_context(pem_cfg(pki, **{"ssl.client.auth": "requested"})), name="CLIENTS")
    try:
        with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as raw, client_ctx(pki).wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(api_versions_frame(1))
            assert decode_response(read_frame(s), 18, 3)[0] == 1
        with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as raw, client_ctx(pki, cert=False).wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(api_versions_frame(2))
            assert decode_response(read_frame(s), 18, 3)[0] == 2
    finally:
        lst.stop()
    assert d.seen == [("User:CN=alice,O=x", "CLIENTS", "SSL"), ("User:ANONYMOUS", "CLIENTS", "SSL")]
    assert d.pipelined == [False, False]  # an SSLSocket is read and written by one thread only


def test_required_client_auth_refuses_no_or_foreign_certificates_and_only_that_connection(pki):
    lst, d = start("SSL", server_context(pem_cfg(pki, **{"ssl.client.auth": "required"})))
    try:
        for kwargs in ({"cert": False}, {"rogue": True}):
            with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as raw:
                try:
                    with client_ctx(pki, **kwargs).wrap_socket(raw, server_hostname="localhost") as s:
                        s.sendall(api_versions_frame(1))
                        assert read_frame(s) is None  # TLS 1.3: the refusal arrives after the client's handshake ends
                except (ssl.SSLError, ConnectionError):
                    pass
        with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as raw, client_ctx(pki).wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(api_versions_frame(5))
            assert decode_response(read_frame(s), 18, 3)[0] == 5
    finally:
        lst.stop()
    assert d.seen == [("User:CN=alice,O=x", "SSL", "SSL")]


def test_plaintext_client_and_a_stalled_handshake_cost_only_their_connection(pki):
    lst, _ = start("SSL", server_context(pem_cfg(pki)), timeout=1.0)
    try:
        stalled = socket.create_connection(("127.0.0.1", lst.port), timeout=5)  # connects, never says hello
        with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as plain:
            plain.sendall(api_versions_frame(1))  # not TLS: the handshake fails
            assert read_frame(plain) is None
        with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as raw, client_ctx(pki, cert=False).wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(api_versions_frame(2))
            assert decode_response(read_frame(s), 18, 3)[0] == 2
        stalled.settimeout(5)
        assert stalled.recv(1) == b""  # closed by the handshake timeout
        stalled.close()
    finally:
        lst.stop()


# -- SASL_SSL -----------------------------------------------------------------------------------------

def test_sasl_ssl_plain_over_tls_and_principal(pki):
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
    sasl = sasl_config({"sasl.enabled.mechanisms": "PLAIN", "plain.sasl.jaas.config": jaas}, "SASL_SSL", None)
    lst, d = start("SASL_SSL", server_context(pem_cfg(pki), client_auth="none"), sasl)
    try:
        with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as raw, client_ctx(pki, cert=False).wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(api_versions_frame(1))
            assert decode_response(read_frame(s), 18, 3)[0] == 1
            s.sendall(encode_request(request_header(17, 1, 2), load_request_schema(17, 1)(mechanism="PLAIN")))
            assert int(decode_response(read_frame(s), 17, 1)[1].error_code) == 0
            s.sendall(encode_request(request_header(36, 2, 3), load_request_schema(36, 2)(auth_bytes=b"\0alice\0alice-secret")))
            assert int(decode_response(read_frame(s), 36, 2)[1].error_code) == 0
            s.sendall(api_versions_frame(4))
            assert decode_response(read_frame(s), 18, 3)[0] == 4
        with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as raw, client_ctx(pki, cert=False).wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(api_versions_frame(1))  # the first ApiVersions is allowed …
            read_frame(s)
            s.sendall(api_versions_frame(2))  # … a request other than SaslHandshake after it closes
            assert read_frame(s) is None
    finally:
        lst.stop()
    assert d.seen == [("User:ANONYMOUS", "SASL_SSL", "SASL_SSL"), ("User:alice", "SASL_SSL", "SASL_SSL"), ("User:ANONYMOUS", "SASL_SSL", "SASL_SSL")]


def test_sasl_frame_limit_before_authentication():
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
    sasl = sasl_config({"sasl.enabled.mechanisms": "PLAIN", "plain.sasl.jaas.config": jaas, "sasl.server.max.receive.size": "1000"}, "SASL_PLAINTEXT", None)
    lst, _ = start("SASL_PLAINTEXT", sasl=sasl)
    try:
        with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as s:
            s.sendall(struct.pack(">i", 2000) + b"\0" * 10)
            assert read_frame(s) is None
    finally:
        lst.stop()


def test_listener_rejects_a_mismatched_setup(pki):
    d = KafkaDispatcher(FakeBackend())
    with pytest.raises(ValueError):
        KafkaListener("127.0.0.1", 0, d, name="SSL", security_protocol="SSL")  # no context
    with pytest.raises(ValueError):
        KafkaListener("127.0.0.1", 0, d, security_protocol="PLAINTEXT", ssl_context=server_context(pem_cfg(pki)))


def test_plaintext_connections_carry_the_defaults():
    lst, d = start("PLAINTEXT")
    try:
        with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as s:
            s.sendall(api_versions_frame(1))
            assert decode_response(read_frame(s), 18, 3)[0] == 1
    finally:
        lst.stop()
    assert d.seen == [("User:ANONYMOUS", "PLAINTEXT", "PLAINTEXT")]
    assert d.pipelined == [True]


def test_connections_max_idle_ms_applies_after_the_tls_handshake(pki):
    """After the handshake the TLS socket gets the idle timeout (connections.max.idle.ms), not
    no timeout: a TLS client that sends nothing is closed, another is served."""
    from wire.quotas import ListenerLimits

    limits = ListenerLimits.from_config({"connections.max.idle.ms": "200"})
    d = RecordingDispatcher(FakeBackend(), auto_create_topics=False)
    lst = KafkaListener("127.0.0.1", 0, d, limits.max_request_bytes, name="SSL", security_protocol="SSL", ssl_context=server_context(pem_cfg(pki)), limits=limits).start()
    try:
        with socket.create_connection(("127.0.0.1", lst.port), timeout=10) as raw, client_ctx(pki, cert=False).wrap_socket(raw, server_hostname="localhost") as idle:
            with socket.create_connection(("127.0.0.1", lst.port), timeout=10) as raw2, client_ctx(pki, cert=False).wrap_socket(raw2, server_hostname="localhost") as s:
                s.sendall(api_versions_frame(1))
                assert decode_response(read_frame(s), 18, 3)[0] == 1
            assert read_frame(idle) is None  # closed by the listener well before the client's 10 s
    finally:
        lst.stop()
