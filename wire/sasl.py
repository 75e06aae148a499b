"""SASL on the SASL_PLAINTEXT and SASL_SSL listeners: the server-side authentication state
machine of one connection, the PLAIN and SCRAM-SHA-256/512 mechanisms, JAAS parsing, and the
SaslHandshake (17) / SaslAuthenticate (36) answers after authentication.

Semantics from Kafka's ``SaslServerAuthenticator`` (states, errors, KIP-152 SaslAuthenticate
framing, KIP-368 re-authentication), ``KafkaChannel.maybeBeginServerReauthentication`` and
``SocketServer.Processor.processCompletedReceives`` (session expiry), ``PlainSaslServer`` /
``PlainServerCallbackHandler`` (RFC 4616, ``user_<name>`` JAAS options) and ``ScramSaslServer``
(RFC 5802/7677, through the ``scramp`` library's server side):

* Before authentication only ApiVersions (once, before the handshake), SaslHandshake and then
  SaslAuthenticate are accepted; any other request closes the connection
  (``IllegalSaslStateException``). A SaslHandshake during the token exchange is answered
  ILLEGAL_SASL_STATE (34), then the connection closes.
* SaslHandshake for a mechanism that is not enabled: UNSUPPORTED_SASL_MECHANISM (33) with the
  enabled mechanisms, then the connection closes. v0 handshakes are followed by raw,
  size-prefixed SASL tokens; v1 by SaslAuthenticate requests (KIP-152).
* A failed exchange: SASL_AUTHENTICATION_FAILED (58) with Kafka's message (PLAIN: "Authentication
  failed: Invalid username or password"; SCRAM: "Authentication failed during authentication due
  to invalid credentials with SASL mechanism SCRAM-SHA-256"), then the connection closes.
* ``connections.max.reauth.ms`` > 0 (per mechanism: ``<mechanism>.connections.max.reauth.ms``):
  SaslAuthenticate v1+ reports it as ``session_lifetime_ms``; a SaslHandshake after
  authentication starts re-authentication with the same mechanism (a different one fails; the
  principal may not change; at most one start per second), and once the session has expired any
  other request closes the connection. With 0 (the default) a SaslHandshake after
  authentication is answered ILLEGAL_SASL_STATE and the session never expires.

Everything in :class:`SaslServerSession` is pure: bytes in, a :class:`SaslStep` out, the time
an argument (``now_ms``).
"""

from __future__ import annotations

import datetime
import hmac
import logging
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from kio.schema.errors import ErrorCode
from scramp import ScramException, ScramMechanism

from actors.controller.scram import MIN_ITERATIONS, ScramCredential
from config import ConfigError
from wire.entities import build, response_class
from wire.protocol import API_VERSIONS_KEY, FrameError, UnsupportedRequest, decode_request, encode_response, peek_header

__all__ = [
    "SASL_HANDSHAKE",
    "SASL_AUTHENTICATE",
    "SUPPORTED_MECHANISMS",
    "JaasEntry",
    "ScramLookup",
    "SaslConfig",
    "SaslServerSession",
    "SaslStep",
    "parse_jaas",
    "sasl_config",
    "handshake_after_authentication",
    "authenticate_after_authentication",
]

log = logging.getLogger("shoal.wire.sasl")

SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36

#: Mechanisms Shoal implements (Kafka names). GSSAPI and OAUTHBEARER are not offered.
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

#: ``sasl.server.max.receive.size`` default (bytes): the largest frame before authentication.
DEFAULT_MAX_RECEIVE_SIZE = 524288

#: Kafka ``KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS``: one re-authentication start per second.
MIN_REAUTH_INTERVAL_MS = 1000

_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


#: ``lookup(user, mechanism) -> credential | None`` — mechanism is ``"SCRAM-SHA-256"`` or
#: ``"SCRAM-SHA-512"``; the credential is the controller's stored RFC 5802 credential.
ScramLookup = Callable[[str, str], ScramCredential | None]


# -- JAAS -------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class JaasEntry:
    """One login module of a JAAS configuration: class name, control flag, options. ``repr``
    leaves the options out: they hold passwords (``password``, ``user_<name>``)."""

    login_module: str
    flag: str
    options: dict[str, str] = field(repr=False)


_JAAS_TOKEN = re.compile(r'\s*(?:(;)|"((?:[^"\\]|\\.)*)"|([^\s=;"]+)|(=))')


def _after_option(tokens: list[tuple[str, str]]) -> str:
    """`` (in option 'key')`` for the last option key among ``tokens`` (a word followed by
    ``=``), or ``""``: names where parsing stopped without showing any value."""
    for i in range(len(tokens) - 2, -1, -1):
        if tokens[i][0] == "word" and tokens[i + 1][0] == "eq":
            return f" (in option {tokens[i][1]!r})"
    return ""


def parse_jaas(text: str) -> list[JaasEntry]:
    """Parse a ``sasl.jaas.config`` value: ``<LoginModule> <flag> key="value" key2=value2;``,
    one or more modules, each ending with ``;`` (Kafka's ``JaasConfig``). Quoted values may
    contain backslash escapes. Returns the entries in order. Raises :class:`ConfigError` for a
    missing ``;``, a flag other than required/requisite/sufficient/optional, or a malformed option."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _JAAS_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            # never quote the text: it holds passwords; name the position and the option instead
            raise ConfigError(f"sasl.jaas.config: cannot parse at character {pos}{_after_option(tokens)}")
        pos = m.end()
        if m.group(1):
            tokens.append(("end", ";"))
        elif m.group(2) is not None:
            tokens.append(("str", re.sub(r"\\(.)", r"\1", m.group(2))))
        elif m.group(3):
            tokens.append(("word", m.group(3)))
        elif m.group(4):
            tokens.append(("eq", "="))
        if text[pos:].strip() == "":
            break
    entries: list[JaasEntry] = []
    i = 0
    while i < len(tokens):
        if i + 1 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][0] != "word":
            raise ConfigError("sasl.jaas.config: expected '<LoginModule> <flag> options;'")
        module, flag = tokens[i][1], tokens[i + 1][1].lower()
        if flag not in ("required", "requisite", "sufficient", "optional"):
            raise ConfigError(f"sasl.jaas.config: invalid control flag {tokens[i + 1][1]!r}")
        i += 2
        opts: dict[str, str] = {}
        while i < len(tokens) and tokens[i][0] != "end":
            if i + 2 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][0] != "eq" or tokens[i + 2][0] not in ("str", "word"):
                raise ConfigError("sasl.jaas.config: expected key=value options")
            opts[tokens[i][1]] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise ConfigError("sasl.jaas.config: a login module must end with ';'")
        i += 1
        entries.append(JaasEntry(module, flag, opts))
    if not entries:
        raise ConfigError("sasl.jaas.config: no login module")
    return entries


# -- configuration ----------------------------------------------------------------------------

@dataclass(frozen=True)
class SaslConfig:
    """The SASL settings of one listener.

    ``enabled_mechanisms``: ``sasl.enabled.mechanisms`` (Kafka names); ``plain_users``: user →
    password from the PLAIN JAAS options ``user_<name>`` (left out of ``repr``); ``scram_lookup``: the SCRAM credential
    source; ``reauth_ms``: mechanism → ``connections.max.reauth.ms`` (0 = no re-authentication,
    no expiry); ``max_receive_size``: ``sasl.server.max.receive.size`` (bytes, largest frame
    before authentication)."""

    enabled_mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str] = field(default_factory=dict, repr=False)
    scram_lookup: ScramLookup | None = None
    reauth_ms: Mapping[str, int] = field(default_factory=dict)
    max_receive_size: int = DEFAULT_MAX_RECEIVE_SIZE


def _jaas_for(cfg: Mapping[str, str], mechanism: str) -> str | None:
    key = f"{mechanism.lower()}.sasl.jaas.config"
    if cfg.get(key):
        return cfg[key]
    if cfg.get("sasl.jaas.config"):
        # Kafka ignores an unprefixed server sasl.jaas.config (with a warning); Shoal accepts it
        # as the last fallback so that a one-mechanism setup needs one key.
        return cfg["sasl.jaas.config"]
    return None


def _int(cfg: Mapping[str, str], key: str, default: int) -> int:
    raw = cfg.get(key)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{key}={raw!r}: expected an integer") from None


def sasl_config(cfg: Mapping[str, str], listener: str, scram_lookup: ScramLookup | None) -> SaslConfig:
    """The :class:`SaslConfig` of listener ``listener`` from ``cfg`` (the listener's view, with
    ``listener.name.<name>.`` overrides applied; see :func:`wire.listeners.listener_config`).

    Reads ``sasl.enabled.mechanisms`` (Kafka's default is GSSAPI, which Shoal does not offer, so
    it must be set), ``plain.sasl.jaas.config`` (PLAIN users; the unprefixed ``sasl.jaas.config``
    as a fallback), ``connections.max.reauth.ms`` and ``<mechanism>.connections.max.reauth.ms``,
    ``sasl.server.max.receive.size``. Raises :class:`ConfigError` for an unsupported mechanism,
    PLAIN without a PlainLoginModule JAAS entry, SCRAM without a credential lookup, or a negative value."""
    raw = cfg.get("sasl.enabled.mechanisms") or "GSSAPI"
    mechs = tuple(dict.fromkeys(m.strip().upper() for m in raw.split(",") if m.strip()))
    bad = [m for m in mechs if m not in SUPPORTED_MECHANISMS]
    if bad or not mechs:
        raise ConfigError(f"listener {listener}: sasl.enabled.mechanisms={raw!r}: {', '.join(bad) or 'none'} not supported; use {', '.join(SUPPORTED_MECHANISMS)}")
    users: dict[str, str] = {}
    if "PLAIN" in mechs:
        text = _jaas_for(cfg, "PLAIN")
        if text is None:
            raise ConfigError(f"listener {listener}: PLAIN needs listener.name.{listener.lower()}.plain.sasl.jaas.config (PlainLoginModule with user_<name>=\"password\" options)")
        entries = [e for e in parse_jaas(text) if e.login_module == _PLAIN_MODULE]
        if not entries:
            raise ConfigError(f"listener {listener}: the PLAIN JAAS config has no {_PLAIN_MODULE}")
        for e in entries:
            users.update({k[len("user_"):]: v for k, v in e.options.items() if k.startswith("user_")})
    if any(m.startswith("SCRAM-") for m in mechs) and scram_lookup is None:
        raise ConfigError(f"listener {listener}: SCRAM is enabled but no SCRAM credential store is available")
    default_reauth = _int(cfg, "connections.max.reauth.ms", 0)
    reauth = {m: _int(cfg, f"{m.lower()}.connections.max.reauth.ms", default_reauth) for m in mechs}
    max_receive = _int(cfg, "sasl.server.max.receive.size", DEFAULT_MAX_RECEIVE_SIZE)
    if min(reauth.values()) < 0 or max_receive <= 0:
        raise ConfigError(f"listener {listener}: connections.max.reauth.ms must be >= 0 and sasl.server.max.receive.size > 0")
    return SaslConfig(mechs, users, scram_lookup, reauth, max_receive)


# -- mechanisms -------------------------------------------------------------------------------

class _AuthFailed(Exception):
    """A failed exchange. ``message`` goes to the client (Kafka's SaslAuthenticationException);
    ``generic`` failures (Kafka's SaslException) get Kafka's credential-neutral message instead."""

    def __init__(self, message: str, generic: bool = False) -> None:
        super().__init__(message)
        self.generic = generic


class _Plain:
    """RFC 4616 PLAIN against the JAAS ``user_<name>`` passwords (Kafka ``PlainSaslServer``)."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.complete = False
        self.username: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        parts = token.decode("utf-8", errors="replace").split("\0", 3)
        if len(parts) != 3:
            raise _AuthFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(parts), 4)}")
        authzid, username, password = parts
        if not username:
            raise _AuthFailed("Authentication failed: username not specified")
        if not password:
            raise _AuthFailed("Authentication failed: password not specified")
        expected = self._users.get(username)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise _AuthFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise _AuthFailed("Authentication failed: Client requested an authorization id that is different from username")
        self.username = username
        self.complete = True
        return b""


def _sasl_name_to_user(sasl_name: str) -> str:
    """The user name of an RFC 5802 ``saslname`` (``=2C`` → ``,``, ``=3D`` → ``=``; Kafka
    ``ScramFormatter.username``), used for both the ``n=`` user and the ``a=`` authzid."""
    return sasl_name.replace("=2C", ",").replace("=3D", "=")


class _Scram:
    """SCRAM-SHA-256/512 (RFC 5802/7677) with ``scramp``'s ``ScramServer``; the credential comes
    from ``lookup(user, mechanism)`` (Kafka ``ScramSaslServer``: unknown user, too few iterations
    and a bad proof are all the same credential-neutral failure)."""

    def __init__(self, mechanism: str, lookup: ScramLookup) -> None:
        self._mechanism = mechanism
        self._lookup = lookup
        self._server = ScramMechanism(mechanism).make_server(self._auth_fn)
        self._stage = 0
        self.complete = False
        self.username: str | None = None

    def _auth_fn(self, sasl_name: str) -> tuple[bytes, bytes, bytes, int] | None:
        username = _sasl_name_to_user(sasl_name)
        cred = self._lookup(username, self._mechanism)
        if cred is None or int(cred.iterations) < MIN_ITERATIONS:
            return None
        self.username = username
        return bytes(cred.salt), bytes(cred.stored_key), bytes(cred.server_key), int(cred.iterations)

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise _AuthFailed("invalid SCRAM message", generic=True) from None
        try:
            if self._stage == 0:
                self._stage = 1
                header = text.split(",", 2)
                authzid = header[1][2:] if len(header) > 2 and header[1].startswith("a=") else ""
                self._server.set_client_first(text)
                if authzid and _sasl_name_to_user(authzid) != self.username:
                    raise _AuthFailed("Authentication failed: Client requested an authorization id that is different from username")
                return self._server.get_server_first().encode()
            if self._stage == 1:
                self._stage = 2
                self._server.set_client_final(text)
                out = self._server.get_server_final().encode()
                self.complete = True
                return out
        except ScramException as exc:
            raise _AuthFailed(str(exc), generic=True) from None
        raise _AuthFailed("Unexpected challenge in Sasl server state COMPLETE", generic=True)


# -- the per-connection state machine ---------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SaslStep:
    """What the listener does with one frame: send ``response`` (a complete frame, or ``None``),
    then close the connection if ``close``; ``forward`` hands the frame to the dispatcher as an
    ordinary request (its response is the dispatcher's)."""

    response: bytes | None = None
    close: bool = False
    forward: bool = False


_FORWARD = SaslStep(forward=True)
_CLOSE = SaslStep(close=True)

# states (Kafka SaslServerAuthenticator.SaslState, REAUTH_* folded into a flag)
_HANDSHAKE_OR_VERSIONS = "HANDSHAKE_OR_VERSIONS_REQUEST"
_HANDSHAKE = "HANDSHAKE_REQUEST"
_AUTHENTICATE = "AUTHENTICATE"
_COMPLETE = "COMPLETE"
_FAILED = "FAILED"


def _handshake_response(correlation_id: int, version: int, error: ErrorCode, mechanisms: tuple[str, ...]) -> bytes:
    cls = response_class(SASL_HANDSHAKE, version)
    return encode_response(correlation_id, build(cls, error_code=error, mechanisms=mechanisms))


def _authenticate_response(correlation_id: int, version: int, error: ErrorCode, message: str | None, auth_bytes: bytes = b"", lifetime_ms: int = 0) -> bytes:
    cls = response_class(SASL_AUTHENTICATE, version)
    body = build(cls, error_code=error, error_message=message, auth_bytes=auth_bytes, session_lifetime=datetime.timedelta(milliseconds=lifetime_ms))
    return encode_response(correlation_id, body)


class SaslServerSession:
    """The SASL server side of one connection (Kafka ``SaslServerAuthenticator`` plus the
    channel's re-authentication and expiry checks). Not thread-safe: one connection, one thread.

    ``config``: the listener's :class:`SaslConfig`; ``supported``: the broker's api key →
    (min, max) table (to tell a handled ApiVersions from an unsupported one).
    :meth:`receive` takes each request frame (without its size prefix) and the time.
    :attr:`principal` is ``"User:<name>"`` once authenticated (kept across re-authentication)."""

    def __init__(self, config: SaslConfig, supported: Mapping[int, tuple[int, int]]) -> None:
        self.config = config
        self._supported = supported
        self.state = _HANDSHAKE_OR_VERSIONS
        self.principal: str | None = None
        self.mechanism: str | None = None
        self.session_expiry_ms: int | None = None
        self._server: Any = None
        self._headers = True
        self._reauth_from: tuple[str, str] | None = None  # (mechanism, principal) of the session being renewed
        self._bad_reauth: str | None = None
        self._last_reauth_start_ms: int | None = None

    @property
    def authenticated(self) -> bool:
        """True once an exchange completed (and during a re-authentication)."""
        return self.principal is not None

    @property
    def max_frame_bytes(self) -> int | None:
        """The largest frame accepted now: ``sasl.server.max.receive.size`` while (re-)authenticating, else ``None`` (no SASL limit)."""
        return None if self.state == _COMPLETE else self.config.max_receive_size

    def expired(self, now_ms: int) -> bool:
        """Whether the session has a lifetime and ``now_ms`` is past it (Kafka ``serverAuthenticationSessionExpired``)."""
        return self.session_expiry_ms is not None and now_ms > self.session_expiry_ms

    def receive(self, frame: bytes, now_ms: int) -> SaslStep:
        """Decide what to do with one request frame received at ``now_ms`` (ms since the epoch).
        Never raises for bad input: a malformed frame during authentication closes the connection."""
        if self.state == _AUTHENTICATE and not self._headers:
            # after a v0 handshake the frame is a raw SASL token, not a request: no header to read
            # (a PLAIN token can be shorter than one), Kafka SaslServerAuthenticator.handleSaslToken
            return self._token(frame, None, now_ms)
        try:
            api_key, api_version, correlation_id = peek_header(frame)
        except FrameError:
            return self._fail(_CLOSE)
        if self.state == _COMPLETE:
            return self._after_authentication(frame, api_key, api_version, correlation_id, now_ms)
        if self.state == _AUTHENTICATE:
            if api_key != SASL_AUTHENTICATE:
                log.info("closing: unexpected api_key=%d during SASL authentication", api_key)
                if api_key == SASL_HANDSHAKE and api_version in (0, 1):
                    return self._fail(SaslStep(_handshake_response(correlation_id, api_version, ErrorCode.illegal_sasl_state, ()), close=True))
                return self._fail(_CLOSE)
            req = self._decode(frame)
            if req is None:
                return self._fail(_CLOSE)
            return self._token(bytes(req.body.auth_bytes), req, now_ms)
        if self.state in (_HANDSHAKE_OR_VERSIONS, _HANDSHAKE):
            if api_key == API_VERSIONS_KEY and self.state == _HANDSHAKE_OR_VERSIONS and self._reauth_from is None:
                lo, hi = self._supported.get(API_VERSIONS_KEY, (0, -1))
                if lo <= api_version <= hi:
                    self.state = _HANDSHAKE
                return _FORWARD
            if api_key == SASL_HANDSHAKE:
                return self._handshake(frame, now_ms)
            log.info("closing: unexpected api_key=%d before SASL authentication", api_key)
            return self._fail(_CLOSE)
        return _CLOSE  # FAILED

    # -- steps --------------------------------------------------------------------------------
    def _fail(self, step: SaslStep) -> SaslStep:
        self.state = _FAILED
        self._server = None
        return step

    def _decode(self, frame: bytes) -> Any:
        try:
            return decode_request(frame, {SASL_HANDSHAKE: (0, 1), SASL_AUTHENTICATE: (0, 2)})
        except (FrameError, UnsupportedRequest):
            return None

    def _handshake(self, frame: bytes, now_ms: int) -> SaslStep:
        req = self._decode(frame)
        if req is None:
            return self._fail(_CLOSE)
        mech = str(req.body.mechanism)
        enabled = self.config.enabled_mechanisms
        if mech not in enabled:
            log.info("SASL mechanism %r requested by client is not enabled (%s)", mech, ",".join(enabled))
            return self._fail(SaslStep(_handshake_response(req.correlation_id, req.api_version, ErrorCode.unsupported_sasl_mechanism, enabled), close=True))
        self._headers = req.api_version >= 1
        if self._reauth_from is not None and mech != self._reauth_from[0]:
            self._bad_reauth = f"SASL mechanism '{mech}' requested by client is not supported for re-authentication of mechanism '{self._reauth_from[0]}'"
        self.mechanism = mech
        self._server = _Plain(self.config.plain_users) if mech == "PLAIN" else _Scram(mech, self.config.scram_lookup)  # type: ignore[arg-type]
        self.state = _AUTHENTICATE
        return SaslStep(_handshake_response(req.correlation_id, req.api_version, ErrorCode.none, enabled))

    def _token(self, token: bytes, req: Any, now_ms: int) -> SaslStep:
        """Evaluate one SASL token (from SaslAuthenticate ``req``, or raw when ``req`` is None)."""
        if self._bad_reauth is not None:
            log.info("re-authentication refused: %s", self._bad_reauth)
            return self._fail(_CLOSE)  # Kafka REAUTH_BAD_MECHANISM: no response, the channel closes
        doing = "re-authentication" if self._reauth_from is not None else "authentication"
        try:
            out = self._server.evaluate(token)
            if self._server.complete and self._reauth_from is not None:
                new = "User:" + str(self._server.username)
                if new != self._reauth_from[1]:
                    old = self._reauth_from[1]
                    raise _AuthFailed(f"Cannot change principals during re-authentication from {old.replace(':', '.', 1)}: {new.replace(':', '.', 1)}")
        except _AuthFailed as exc:
            message = f"Authentication failed during {doing} due to invalid credentials with SASL mechanism {self.mechanism}" if exc.generic else str(exc)
            log.info("SASL %s failed (%s): %s", doing, self.mechanism, exc)
            if req is None:
                return self._fail(_CLOSE)
            return self._fail(SaslStep(_authenticate_response(req.correlation_id, req.api_version, ErrorCode.sasl_authentication_failed, message), close=True))
        lifetime = 0
        if self._server.complete:
            lifetime = self._complete(now_ms)
        if req is None:
            return SaslStep(struct.pack(">i", len(out)) + out)
        return SaslStep(_authenticate_response(req.correlation_id, req.api_version, ErrorCode.none, None, out, lifetime))

    def _complete(self, now_ms: int) -> int:
        """Mark the exchange complete at ``now_ms``; returns the session lifetime (ms, 0 = none)."""
        assert self.mechanism is not None
        self.principal = "User:" + str(self._server.username)
        lifetime = max(0, int(self.config.reauth_ms.get(self.mechanism, 0)))
        self.session_expiry_ms = now_ms + lifetime if lifetime > 0 else None
        log.info("SASL %s of %s with %s complete; session lifetime %d ms", "re-authentication" if self._reauth_from else "authentication", self.principal, self.mechanism, lifetime)
        self._server = None
        self._reauth_from = None
        self.state = _COMPLETE
        return lifetime

    def _after_authentication(self, frame: bytes, api_key: int, api_version: int, correlation_id: int, now_ms: int) -> SaslStep:
        """A frame on an authenticated connection. Kafka's order (``SocketServer.Processor.
        processCompletedReceives``): a SaslHandshake first tries ``maybeBeginServerReauthentication``
        (a session lifetime and no start in the last second), even once the session has expired —
        a late client may still renew it; only then is ``serverAuthenticationSessionExpired``
        checked, which closes the connection for any other request."""
        if api_key == SASL_HANDSHAKE and self.session_expiry_ms is not None and (
            self._last_reauth_start_ms is None or now_ms - self._last_reauth_start_ms >= MIN_REAUTH_INTERVAL_MS
        ):
            self._last_reauth_start_ms = now_ms
            assert self.mechanism is not None and self.principal is not None
            self._reauth_from = (self.mechanism, self.principal)
            self._bad_reauth = None
            self.state = _HANDSHAKE
            return self._handshake(frame, now_ms)
        if self.expired(now_ms):
            log.info("closing: SASL session of %s expired", self.principal)
            return self._fail(_CLOSE)
        return _FORWARD


def handshake_after_authentication(req: Any) -> Any:
    """The SaslHandshake response for a handshake that reaches the dispatcher (a listener without
    SASL, or an authenticated connection that may not re-authenticate now): ILLEGAL_SASL_STATE
    with no mechanisms (Kafka ``KafkaApis.handleSaslHandshakeRequest``)."""
    return build(response_class(SASL_HANDSHAKE, req.api_version), error_code=ErrorCode.illegal_sasl_state, mechanisms=())


def authenticate_after_authentication(req: Any) -> Any:
    """The SaslAuthenticate response for a request that reaches the dispatcher: ILLEGAL_SASL_STATE,
    "SaslAuthenticate request received after successful authentication" (Kafka
    ``KafkaApis.handleSaslAuthenticateRequest``)."""
    return build(
        response_class(SASL_AUTHENTICATE, req.api_version),
        error_code=ErrorCode.illegal_sasl_state,
        error_message="SaslAuthenticate request received after successful authentication",
        auth_bytes=b"",
        session_lifetime=datetime.timedelta(0),
    )
