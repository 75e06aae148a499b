"""The SASL server state machine (``wire.sasl.SaslServerSession``) driven frame by frame, with no
sockets: PLAIN and SCRAM-SHA-256/512 (scramp's client side plays the client), Kafka's errors
(33 UNSUPPORTED_SASL_MECHANISM, 34 ILLEGAL_SASL_STATE, 58 SASL_AUTHENTICATION_FAILED),
KIP-152 SaslAuthenticate framing and v0 raw tokens, KIP-368 re-authentication and expiry.
Semantics: Kafka's ``SaslServerAuthenticator`` and ``SaslServerAuthenticatorTest``."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.metadata.v12.request import MetadataRequest
from scramp import ScramClient, ScramMechanism

from config import ConfigError
from wire.dispatch import SUPPORTED
from wire.protocol import decode_response, encode_request, request_header
from actors.controller.scram import ScramCredential
from events.controller import UserScramCredentialSet
from wire.sasl import SaslConfig, SaslServerSession, parse_jaas, sasl_config

PLAIN_JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
    'user_admin="admin-secret" user_alice="alice-secret";'
)


def _creds() -> dict[tuple[str, str], ScramCredential]:
    out = {}
    for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        for user, pw in (("alice", "alice-secret"), ("bob", "bob-secret")):
            salt, stored, server, it = ScramMechanism(mech).make_auth_info(pw, iteration_count=4096)
            out[(mech, user)] = ScramCredential(salt, stored, server, it)
    return out


CREDS = _creds()


def lookup(user: str, mechanism: str):
    return CREDS.get((mechanism, user))


def config(reauth_ms: int = 0, mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")) -> SaslConfig:
    return sasl_config(
        {"sasl.enabled.mechanisms": ",".join(mechanisms), "plain.sasl.jaas.config": PLAIN_JAAS, "connections.max.reauth.ms": str(reauth_ms)},
        "SASL_PLAINTEXT",
        lookup,
    )


def session(reauth_ms: int = 0, **kw) -> SaslServerSession:
    return SaslServerSession(config(reauth_ms, **kw), SUPPORTED)


def payload(frame: bytes) -> bytes:
    return frame[4:]  # the session sees frames without their size prefix


def handshake(mech: str, version: int = 1, corr: int = 1) -> bytes:
    cls = load_request_schema(17, version)
    return payload(encode_request(request_header(17, version, corr), cls(mechanism=mech)))


def authenticate(token: bytes, version: int = 2, corr: int = 2) -> bytes:
    cls = load_request_schema(36, version)
    return payload(encode_request(request_header(36, version, corr), cls(auth_bytes=token)))


def api_versions(corr: int = 0) -> bytes:
    return payload(encode_request(request_header(18, 3, corr), ApiVersionsRequest(client_software_name="t", client_software_version="1")))


def metadata(corr: int = 9) -> bytes:
    return payload(encode_request(request_header(3, 12, corr), MetadataRequest(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)))


def resp(step, api_key: int, version: int):
    assert step.response is not None
    return decode_response(step.response[4:], api_key, version)[1]


def plain_login(s: SaslServerSession, user: str, password: str, now: int = 0, version: int = 2):
    h = s.receive(handshake("PLAIN"), now)
    assert int(resp(h, 17, 1).error_code) == 0
    return s.receive(authenticate(b"\0" + user.encode() + b"\0" + password.encode(), version=version), now)


def scram_login(s: SaslServerSession, mech: str, user: str, password: str, now: int = 0):
    """Run a SCRAM exchange; returns the last step."""
    assert int(resp(s.receive(handshake(mech), now), 17, 1).error_code) == 0
    c = ScramClient([mech], user, password)
    first = s.receive(authenticate(c.get_client_first().encode()), now)
    r1 = resp(first, 36, 2)
    if int(r1.error_code) != 0:
        return first
    c.set_server_first(r1.auth_bytes.decode())
    final = s.receive(authenticate(c.get_client_final().encode(), corr=3), now)
    r2 = resp(final, 36, 2)
    if int(r2.error_code) == 0:
        c.set_server_final(r2.auth_bytes.decode())  # raises if the server's signature is wrong
    return final


# -- PLAIN ----------------------------------------------------------------------------------------

def test_plain_good_password_authenticates_and_then_requests_pass():
    s = session()
    assert s.receive(api_versions(), 0).forward  # ApiVersions is answered by the dispatcher before the handshake
    step = plain_login(s, "alice", "alice-secret")
    r = resp(step, 36, 2)
    assert (int(r.error_code), r.error_message, step.close) == (0, None, False)
    assert s.authenticated and s.principal == "User:alice"
    assert s.receive(metadata(), 5).forward


def test_plain_bad_password_is_58_with_kafkas_message_and_closes():
    s = session()
    step = plain_login(s, "alice", "wrong")
    r = resp(step, 36, 2)
    assert int(r.error_code) == 58
    assert r.error_message == "Authentication failed: Invalid username or password"
    assert step.close and not s.authenticated
    assert s.receive(metadata(), 1).close  # a failed session stays failed


def test_plain_unknown_user_and_malformed_token():
    s = session()
    assert resp(plain_login(s, "mallory", "x"), 36, 2).error_message == "Authentication failed: Invalid username or password"
    s = session()
    s.receive(handshake("PLAIN"), 0)
    step = s.receive(authenticate(b"only-one-token"), 0)
    assert int(resp(step, 36, 2).error_code) == 58 and step.close
    s = session()
    s.receive(handshake("PLAIN"), 0)
    r = resp(s.receive(authenticate(b"bob\0alice\0alice-secret"), 0), 36, 2)  # authzid differs from the user
    assert int(r.error_code) == 58 and "authorization id" in r.error_message


def test_sasl_authenticate_v0_has_no_session_lifetime_but_v1_does():
    s = session(reauth_ms=60_000)
    step = plain_login(s, "alice", "alice-secret", version=0)
    assert int(resp(step, 36, 0).error_code) == 0
    s = session(reauth_ms=60_000)
    r = resp(plain_login(s, "alice", "alice-secret", version=1), 36, 1)
    assert r.session_lifetime.total_seconds() == 60


# -- SCRAM ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("mech", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_good_password(mech):
    s = session()
    step = scram_login(s, mech, "bob", "bob-secret")
    assert int(resp(step, 36, 2).error_code) == 0 and not step.close
    assert s.principal == "User:bob" and s.mechanism == mech


@pytest.mark.parametrize("mech", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_bad_password_is_58_with_the_neutral_message(mech):
    s = session()
    step = scram_login(s, mech, "bob", "not-bobs")
    r = resp(step, 36, 2)
    assert int(r.error_code) == 58 and step.close
    assert r.error_message == f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mech}"
    assert not s.authenticated


def test_scram_unknown_user_fails_on_the_first_message_with_the_same_message():
    s = session()
    step = scram_login(s, "SCRAM-SHA-256", "nobody", "x")
    r = resp(step, 36, 2)
    assert int(r.error_code) == 58 and step.close
    assert r.error_message == "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"


def test_scram_credential_of_the_other_mechanism_does_not_authenticate():
    only512 = {k: v for k, v in CREDS.items() if k[0] == "SCRAM-SHA-512"}
    cfg = sasl_config({"sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512"}, "L", lambda u, m: only512.get((m, u)))
    s = SaslServerSession(cfg, SUPPORTED)
    assert int(resp(scram_login(s, "SCRAM-SHA-256", "alice", "alice-secret"), 36, 2).error_code) == 58
    s = SaslServerSession(cfg, SUPPORTED)
    assert int(resp(scram_login(s, "SCRAM-SHA-512", "alice", "alice-secret"), 36, 2).error_code) == 0


def test_scram_credential_below_4096_iterations_is_refused():
    salt, stored, server, _ = ScramMechanism("SCRAM-SHA-256").make_auth_info("pw", iteration_count=4096)
    weak = ScramCredential(salt, stored, server, 1024)
    cfg = sasl_config({"sasl.enabled.mechanisms": "SCRAM-SHA-256"}, "L", lambda u, m: weak)
    step = scram_login(SaslServerSession(cfg, SUPPORTED), "SCRAM-SHA-256", "u", "pw")
    assert int(resp(step, 36, 2).error_code) == 58


# -- protocol errors ------------------------------------------------------------------------------

def test_mechanism_not_enabled_is_33_with_the_enabled_list_and_closes():
    s = session(mechanisms=("SCRAM-SHA-512",))
    step = s.receive(handshake("PLAIN"), 0)
    r = resp(step, 17, 1)
    assert int(r.error_code) == 33 and tuple(r.mechanisms) == ("SCRAM-SHA-512",)
    assert step.close


def test_any_other_request_before_authentication_closes_without_a_response():
    s = session()
    step = s.receive(metadata(), 0)
    assert step.close and step.response is None and not step.forward


def test_second_api_versions_before_the_handshake_closes():
    s = session()
    assert s.receive(api_versions(1), 0).forward
    assert s.receive(api_versions(2), 0).close


def test_handshake_during_the_token_exchange_is_34_and_closes():
    s = session()
    s.receive(handshake("SCRAM-SHA-256"), 0)
    step = s.receive(handshake("SCRAM-SHA-256", corr=7), 0)
    assert int(resp(step, 17, 1).error_code) == 34 and step.close


def test_other_request_during_the_token_exchange_closes():
    s = session()
    s.receive(handshake("PLAIN"), 0)
    assert s.receive(metadata(), 0).close


def test_truncated_frame_closes():
    s = session()
    assert s.receive(b"\x00\x11", 0).close
    s = session()
    assert s.receive(handshake("PLAIN")[:-3], 0).close


def test_handshake_v0_then_raw_tokens():
    s = session()
    assert int(resp(s.receive(handshake("PLAIN", version=0), 0), 17, 0).error_code) == 0
    step = s.receive(b"\0alice\0alice-secret", 0)  # a raw token, not a SaslAuthenticate request
    assert step.response == struct.pack(">i", 0) and not step.close
    assert s.principal == "User:alice"
    s = session()
    s.receive(handshake("PLAIN", version=0), 0)
    step = s.receive(b"\0alice\0bad", 0)
    assert step.close and step.response is None  # v0 has no error framing: the connection closes


def test_handshake_v0_raw_tokens_shorter_than_a_request_header():
    """A raw PLAIN token may be shorter than a request header (8 bytes): one-letter user and
    password is 4 bytes. It is a token, so it is evaluated, not rejected as a bad header."""
    users = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";'
    cfg = sasl_config({"sasl.enabled.mechanisms": "PLAIN", "plain.sasl.jaas.config": users}, "L", None)
    s = SaslServerSession(cfg, SUPPORTED)
    assert int(resp(s.receive(handshake("PLAIN", version=0), 0), 17, 0).error_code) == 0
    step = s.receive(b"\0a\0b", 0)
    assert step.response == struct.pack(">i", 0) and not step.close
    assert s.principal == "User:a"
    s = SaslServerSession(cfg, SUPPORTED)
    s.receive(handshake("PLAIN", version=0), 0)
    step = s.receive(b"\0a\0c", 0)  # short and wrong: an authentication failure (no v0 error framing)
    assert step.close and step.response is None and s.principal is None


def test_after_authentication_handshake_and_authenticate_get_34_when_reauth_is_off():
    s = session(reauth_ms=0)
    plain_login(s, "alice", "alice-secret")
    step = s.receive(handshake("PLAIN", corr=11), 10)
    assert step.forward  # the dispatcher answers (KafkaApis.handleSaslHandshakeRequest)
    assert s.receive(authenticate(b"x"), 20).forward
    assert s.session_expiry_ms is None and not s.expired(10**12)


def test_dispatcher_answers_late_sasl_requests_with_34():
    from tests.wire.fake_backend import FakeBackend
    from wire.dispatch import KafkaDispatcher
    from wire.protocol import decode_request
    from wire.server import Connection

    d = KafkaDispatcher(FakeBackend())
    conn = Connection(("127.0.0.1", 1))
    r = d.handle(decode_request(handshake("PLAIN"), d.supported), conn)
    assert int(r.error_code) == 34 and tuple(r.mechanisms) == ()
    r = d.handle(decode_request(authenticate(b"x"), d.supported), conn)
    assert int(r.error_code) == 34 and r.error_message == "SaslAuthenticate request received after successful authentication"


# -- re-authentication (KIP-368) and expiry --------------------------------------------------------

def test_session_expiry_closes_on_the_next_request():
    s = session(reauth_ms=1000)
    plain_login(s, "alice", "alice-secret", now=5_000)
    assert s.session_expiry_ms == 6_000
    assert s.receive(metadata(), 6_000).forward  # not yet past the expiry
    step = s.receive(metadata(), 6_001)
    assert step.close and step.response is None


def test_a_handshake_after_expiry_may_still_renew_the_session_as_in_kafka():
    """Kafka's ``SocketServer.Processor.processCompletedReceives`` tries
    ``maybeBeginServerReauthentication`` for a SaslHandshake *before* it checks
    ``serverAuthenticationSessionExpired``: a client that is late still re-authenticates. A
    handshake that may not start one (less than a second after the last start) is then an
    ordinary request on an expired session, and closes."""
    s = session(reauth_ms=500)
    plain_login(s, "alice", "alice-secret", now=0)
    assert s.expired(600)
    h = s.receive(handshake("PLAIN", corr=20), 600)
    assert int(resp(h, 17, 1).error_code) == 0 and not h.close
    r = s.receive(authenticate(b"\0alice\0alice-secret", corr=21), 600)
    assert int(resp(r, 36, 2).error_code) == 0 and s.session_expiry_ms == 1_100
    assert s.receive(metadata(), 1_000).forward
    # expired again at 1_200, and the last start was 0.6 s ago: no re-authentication, the connection closes
    step = s.receive(handshake("PLAIN", corr=22), 1_200)
    assert step.close and step.response is None


def test_reauthentication_renews_the_session():
    s = session(reauth_ms=1000)
    plain_login(s, "alice", "alice-secret", now=0)
    h = s.receive(handshake("PLAIN", corr=20), 900)
    assert int(resp(h, 17, 1).error_code) == 0
    assert s.max_frame_bytes == s.config.max_receive_size  # re-authenticating: the pre-auth frame limit applies
    r = s.receive(authenticate(b"\0alice\0alice-secret", corr=21), 950)
    assert int(resp(r, 36, 2).error_code) == 0 and resp(r, 36, 2).session_lifetime.total_seconds() == 1
    assert s.session_expiry_ms == 1950
    assert s.receive(metadata(), 1500).forward  # past the first session's end, inside the new one
    assert s.receive(metadata(), 1951).close


def test_reauthentication_with_scram():
    s = session(reauth_ms=10_000)
    assert int(resp(scram_login(s, "SCRAM-SHA-512", "bob", "bob-secret", now=0), 36, 2).error_code) == 0
    assert int(resp(scram_login(s, "SCRAM-SHA-512", "bob", "bob-secret", now=5_000), 36, 2).error_code) == 0
    assert s.session_expiry_ms == 15_000 and s.principal == "User:bob"


def test_reauthentication_may_not_change_the_principal():
    s = session(reauth_ms=1000)
    plain_login(s, "alice", "alice-secret", now=0)
    s.receive(handshake("PLAIN"), 500)
    step = s.receive(authenticate(b"\0admin\0admin-secret"), 500)
    r = resp(step, 36, 2)
    assert int(r.error_code) == 58 and step.close
    assert r.error_message == "Cannot change principals during re-authentication from User.alice: User.admin"


def test_reauthentication_may_not_change_the_mechanism():
    s = session(reauth_ms=1000)
    plain_login(s, "alice", "alice-secret", now=0)
    assert int(resp(s.receive(handshake("SCRAM-SHA-256"), 500), 17, 1).error_code) == 0
    step = s.receive(authenticate(b"n,,n=alice,r=abc"), 500)
    assert step.close and step.response is None  # Kafka REAUTH_BAD_MECHANISM: the channel just closes


def test_bad_password_on_reauthentication_closes():
    s = session(reauth_ms=1000)
    plain_login(s, "alice", "alice-secret", now=0)
    s.receive(handshake("PLAIN"), 500)
    step = s.receive(authenticate(b"\0alice\0nope"), 500)
    assert int(resp(step, 36, 2).error_code) == 58 and step.close
    assert "re-authentication" not in resp(step, 36, 2).error_message  # PLAIN's own message goes to the client


def test_at_most_one_reauthentication_start_per_second():
    s = session(reauth_ms=10_000)
    plain_login(s, "alice", "alice-secret", now=0)
    s.receive(handshake("PLAIN"), 100)
    s.receive(authenticate(b"\0alice\0alice-secret"), 100)
    assert s.receive(handshake("PLAIN"), 600).forward  # < 1 s after the last start: answered as a normal request (34)
    assert int(resp(s.receive(handshake("PLAIN"), 1100), 17, 1).error_code) == 0


# -- configuration --------------------------------------------------------------------------------

def test_sasl_config_reads_kafkas_keys():
    cfg = config(reauth_ms=5)
    assert cfg.enabled_mechanisms == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    assert dict(cfg.plain_users) == {"admin": "admin-secret", "alice": "alice-secret"}
    assert dict(cfg.reauth_ms) == {"PLAIN": 5, "SCRAM-SHA-256": 5, "SCRAM-SHA-512": 5}
    per = sasl_config({"sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": PLAIN_JAAS, "connections.max.reauth.ms": "5", "plain.connections.max.reauth.ms": "7"}, "L", None)
    assert dict(per.reauth_ms) == {"PLAIN": 7}


@pytest.mark.parametrize(
    "cfg",
    [
        {},  # Kafka's default GSSAPI is not offered
        {"sasl.enabled.mechanisms": "OAUTHBEARER"},
        {"sasl.enabled.mechanisms": "PLAIN"},  # no JAAS config
        {"sasl.enabled.mechanisms": "PLAIN", "plain.sasl.jaas.config": "com.example.Other required a=b;"},
        {"sasl.enabled.mechanisms": "SCRAM-SHA-256"},  # no credential lookup
        {"sasl.enabled.mechanisms": "PLAIN", "plain.sasl.jaas.config": PLAIN_JAAS, "connections.max.reauth.ms": "-1"},
    ],
)
def test_sasl_config_errors(cfg):
    with pytest.raises(ConfigError):
        sasl_config(cfg, "SASL_PLAINTEXT", None)


def test_secrets_stay_out_of_reprs_and_parse_errors():
    """Passwords never appear in ``repr(SaslConfig)``, ``repr(JaasEntry)`` or a JAAS parse error
    (which names the position and the option instead); salts and keys never in the
    ``UserScramCredentialSet`` event's repr."""
    cfg = config()
    assert "alice-secret" not in repr(cfg) and "admin-secret" not in repr(cfg)
    assert "alice-secret" not in repr(parse_jaas(PLAIN_JAAS))
    with pytest.raises(ConfigError) as exc:
        parse_jaas('a.B required user_x="s3cr3t-with-a-quote\\"')  # unterminated quoted value
    assert "s3cr3t" not in str(exc.value) and "user_x" in str(exc.value)
    cred = CREDS[("SCRAM-SHA-256", "alice")]
    ev = UserScramCredentialSet("alice", "SCRAM-SHA-256", cred.salt, cred.stored_key, cred.server_key, cred.iterations)
    text = repr(ev)
    for secret in (cred.salt, cred.stored_key, cred.server_key):
        assert repr(secret) not in text and secret.hex() not in text
    assert "alice" in text and "4096" in text


def test_parse_jaas():
    (e,) = parse_jaas(PLAIN_JAAS)
    assert e.login_module == "org.apache.kafka.common.security.plain.PlainLoginModule" and e.flag == "required"
    assert e.options == {"username": "admin", "password": "admin-secret", "user_admin": "admin-secret", "user_alice": "alice-secret"}
    two = parse_jaas('a.B required x="1 ; 2" y=z; c.D optional q="\\"quoted\\"";')
    assert [(x.login_module, x.options) for x in two] == [("a.B", {"x": "1 ; 2", "y": "z"}), ("c.D", {"q": '"quoted"'})]
    for bad in ("a.B required x=1", "a.B sometimes x=1;", "a.B required x;", ""):
        with pytest.raises(ConfigError):
            parse_jaas(bad)


def test_api_versions_of_an_unsupported_version_may_be_retried_before_the_handshake():
    """KIP-511: the client retries ApiVersions at a version the broker named; Kafka's
    authenticator stays in HANDSHAKE_OR_VERSIONS_REQUEST after an UNSUPPORTED_VERSION answer."""
    s = session()
    too_new = bytearray(api_versions(1))
    too_new[2:4] = (99).to_bytes(2, "big")  # api_version 99: answered by the dispatcher's fallback
    assert s.receive(bytes(too_new), 0).forward
    assert s.receive(api_versions(2), 0).forward  # the retry is still allowed
    assert s.receive(api_versions(3), 0).close  # a third is not


def test_scram_user_names_with_comma_and_equals_are_unescaped():
    salt, stored, server, it = ScramMechanism("SCRAM-SHA-256").make_auth_info("pw", iteration_count=4096)
    seen = []

    def lk(user, mech):
        seen.append(user)
        return ScramCredential(salt, stored, server, it) if user == "a,b=c" else None

    cfg = sasl_config({"sasl.enabled.mechanisms": "SCRAM-SHA-256"}, "L", lk)
    s = SaslServerSession(cfg, SUPPORTED)
    assert int(resp(scram_login(s, "SCRAM-SHA-256", "a,b=c", "pw"), 36, 2).error_code) == 0
    assert seen == ["a,b=c"] and s.principal == "User:a,b=c"


_VALID = [api_versions(), handshake("PLAIN"), handshake("SCRAM-SHA-256"), authenticate(b"\0alice\0alice-secret"), metadata()]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=64), st.sampled_from(_VALID), st.tuples(st.sampled_from(_VALID), st.integers(0, 40), st.binary(max_size=8))), max_size=8), st.integers(0, 10_000))
def test_receive_never_raises_and_a_closed_session_stays_closed(frames, now):
    """Arbitrary frames (random bytes, valid ones, valid ones with bytes overwritten) in any order:
    ``receive`` always returns a step, and after a step that closes, every later frame closes."""
    s = session(reauth_ms=1000)
    closed = False
    for f in frames:
        if isinstance(f, tuple):
            base, at, junk = f
            f = base[:at] + junk + base[at + len(junk):]
        step = s.receive(f, now)
        assert step.close or step.forward or step.response is not None
        if closed:
            assert step.close
        closed = closed or step.close
