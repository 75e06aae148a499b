"""TLS for the SSL and SASL_SSL listeners: an ``ssl.SSLContext`` built from Kafka's ``ssl.*``
keys, and the SSL principal of a connection.

Keys (Kafka's ``SslConfigs`` / ``BrokerSecurityConfigs``, as read by ``DefaultSslEngineFactory``):

* ``ssl.keystore.type`` — only ``PEM`` is supported (Kafka's default ``JKS`` and ``PKCS12`` raise
  :class:`config.ConfigError` with a hint). The key and certificate chain come either from
  ``ssl.keystore.location`` (one PEM file holding the private key and the chain) or inline from
  ``ssl.keystore.key`` + ``ssl.keystore.certificate.chain``; ``ssl.key.password`` decrypts an
  encrypted (PKCS#8) key.
* ``ssl.truststore.type`` — ``PEM``: ``ssl.truststore.location`` (a PEM file of CA certificates)
  or inline ``ssl.truststore.certificates``. Without a truststore, the system's default CAs are
  used to verify client certificates, as Kafka's ``DefaultSslEngineFactory`` falls back to the
  JVM's default trust store (``TrustManagerFactory.init(null)``); with ``ssl.client.auth``
  requested/required that makes any client holding a public-CA certificate a principal, so the
  context build logs a warning.
* ``ssl.client.auth`` — ``none`` (default), ``requested``, ``required``.
* ``ssl.enabled.protocols`` (default ``TLSv1.2,TLSv1.3``) bounds the negotiated TLS versions;
  ``ssl.protocol`` (default ``TLSv1.3``) is validated only (Python picks the version among the
  enabled ones). ``ssl.cipher.suites`` is not supported (Java names; a ConfigError if set).

Inline PEM values may have lost their line breaks (a properties file joins continuation lines);
they are normalized before loading, as Kafka's ``PemStore`` tolerates whitespace in the base64.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import ssl
import tempfile
from typing import Any, Mapping

from config import ConfigError
from wire.principal import ANONYMOUS

__all__ = ["CLIENT_AUTH_MODES", "server_context", "ssl_principal", "normalize_pem", "dn_of"]

#: ``ssl.client.auth`` → the ``ssl`` module's verify mode (Kafka ``SslClientAuth``).
CLIENT_AUTH_MODES = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}

log = logging.getLogger("shoal.wire.tls")

_TLS_VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}

_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.S)


def normalize_pem(text: str) -> str:
    """Re-wrap every ``-----BEGIN X-----…-----END X-----`` block of ``text`` with its base64 on
    64-character lines (whitespace inside a block is dropped first). Returns the blocks joined
    by newlines. Raises :class:`ConfigError` when ``text`` holds no PEM block or bad base64."""
    out = []
    for label, body in _PEM_BLOCK.findall(text):
        b64 = re.sub(r"\s+", "", body)
        try:
            base64.b64decode(b64, validate=True)
        except ValueError as exc:
            raise ConfigError(f"PEM block {label}: invalid base64 ({exc})") from None
        lines = [b64[i : i + 64] for i in range(0, len(b64), 64)]
        out.append(f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n")
    if not out:
        raise ConfigError("expected PEM text (-----BEGIN …-----)")
    return "".join(out)


def _load_key_and_chain(ctx: ssl.SSLContext, cfg: Mapping[str, str]) -> None:
    ktype = (cfg.get("ssl.keystore.type") or "JKS").upper()
    location = cfg.get("ssl.keystore.location") or ""
    inline_key = cfg.get("ssl.keystore.key") or ""
    inline_chain = cfg.get("ssl.keystore.certificate.chain") or ""
    if not (location or inline_key or inline_chain):
        raise ConfigError("an SSL listener needs a key store: ssl.keystore.location, or ssl.keystore.key with ssl.keystore.certificate.chain")
    if ktype != "PEM":
        raise ConfigError(f"ssl.keystore.type={ktype} is not supported: use ssl.keystore.type=PEM (a PEM file with the key and certificate chain, or inline ssl.keystore.key/ssl.keystore.certificate.chain)")
    if location and (inline_key or inline_chain):
        raise ConfigError("ssl.keystore.location cannot be combined with ssl.keystore.key/ssl.keystore.certificate.chain")
    password = cfg.get("ssl.key.password") or None
    if location:
        try:
            ctx.load_cert_chain(location, password=password)
        except FileNotFoundError:
            raise ConfigError(f"ssl.keystore.location: no file {location}") from None
        except ssl.SSLError as exc:
            raise ConfigError(f"ssl.keystore.location {location}: cannot load a key and certificate chain ({exc}); is ssl.key.password right?") from None
        return
    if not (inline_key and inline_chain):
        raise ConfigError("ssl.keystore.key and ssl.keystore.certificate.chain must be given together")
    # The ssl module loads certificates and keys from files only: a private 0600 temp file, removed at once.
    fd, path = tempfile.mkstemp(prefix="shoal-keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(normalize_pem(inline_key))
            f.write(normalize_pem(inline_chain))
        ctx.load_cert_chain(path, password=password)
    except ssl.SSLError as exc:
        raise ConfigError(f"ssl.keystore.key/ssl.keystore.certificate.chain: cannot load ({exc}); is ssl.key.password right?") from None
    finally:
        os.unlink(path)


def _load_trust(ctx: ssl.SSLContext, cfg: Mapping[str, str], mode: str) -> None:
    location = cfg.get("ssl.truststore.location") or ""
    inline = cfg.get("ssl.truststore.certificates") or ""
    if not (location or inline):
        log.warning(
            "ssl.client.auth=%s without ssl.truststore.location or ssl.truststore.certificates: client "
            "certificates are verified against the system's default CAs, so any client with a certificate "
            "from a public CA gets a principal; set a truststore to accept only your own CA",
            mode,
        )
        ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        return
    ttype = (cfg.get("ssl.truststore.type") or "JKS").upper()
    if ttype != "PEM":
        raise ConfigError(f"ssl.truststore.type={ttype} is not supported: use ssl.truststore.type=PEM (ssl.truststore.location or ssl.truststore.certificates)")
    if location and inline:
        raise ConfigError("ssl.truststore.location cannot be combined with ssl.truststore.certificates")
    try:
        if location:
            ctx.load_verify_locations(cafile=location)
        else:
            ctx.load_verify_locations(cadata=normalize_pem(inline))
    except FileNotFoundError:
        raise ConfigError(f"ssl.truststore.location: no file {location}") from None
    except ssl.SSLError as exc:
        raise ConfigError(f"truststore: cannot load the CA certificates ({exc})") from None


def _protocol_bounds(ctx: ssl.SSLContext, cfg: Mapping[str, str]) -> None:
    proto = cfg.get("ssl.protocol") or "TLSv1.3"
    if proto not in _TLS_VERSIONS and proto not in ("TLS", "SSL"):
        raise ConfigError(f"ssl.protocol={proto} is not a TLS version this broker knows ({', '.join(_TLS_VERSIONS)})")
    enabled = [p.strip() for p in (cfg.get("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3").split(",") if p.strip()]
    unknown = [p for p in enabled if p not in _TLS_VERSIONS]
    if unknown or not enabled:
        raise ConfigError(f"ssl.enabled.protocols: unknown or empty ({', '.join(unknown) or 'empty'}); use {', '.join(_TLS_VERSIONS)}")
    versions = sorted(_TLS_VERSIONS[p] for p in enabled)
    ctx.minimum_version = versions[0]
    ctx.maximum_version = versions[-1]


def server_context(cfg: Mapping[str, str], client_auth: str | None = None) -> ssl.SSLContext:
    """A server-side ``ssl.SSLContext`` from the ``ssl.*`` keys of ``cfg`` (the listener's view,
    see :func:`wire.listeners.listener_config`).

    ``client_auth`` overrides ``ssl.client.auth`` (a SASL_SSL listener applies only a
    listener-prefixed ``ssl.client.auth``, else ``none``; Kafka ``ChannelBuilders``). Raises
    :class:`ConfigError` for a missing or unreadable key store, a JKS/PKCS12 store, an unknown
    ``ssl.client.auth`` or protocol, or ``ssl.cipher.suites`` (not supported). Logs a warning
    when client certificates are asked for without a truststore (the system CAs are trusted)."""
    mode = (client_auth if client_auth is not None else cfg.get("ssl.client.auth") or "none").lower()
    if mode not in CLIENT_AUTH_MODES:
        raise ConfigError(f"ssl.client.auth={mode}: expected one of {', '.join(CLIENT_AUTH_MODES)}")
    if cfg.get("ssl.cipher.suites"):
        raise ConfigError("ssl.cipher.suites is not supported (Python's ssl uses OpenSSL cipher names); leave it unset")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _protocol_bounds(ctx, cfg)
    _load_key_and_chain(ctx, cfg)
    ctx.verify_mode = CLIENT_AUTH_MODES[mode]
    if mode != "none":
        _load_trust(ctx, cfg, mode)
    return ctx


#: Attribute names Java's ``X500Principal.getName()`` (RFC 2253) prints as keywords; others are
#: printed as dotted OIDs by Java — here as Python's long name (documented deviation).
_RFC2253_KEYWORDS = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def _escape(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;' or (ch == "#" and i == 0) or (ch == " " and i in (0, len(value) - 1)):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def dn_of(subject: Any) -> str:
    """The RFC 2253 string of a certificate subject as ``ssl.SSLSocket.getpeercert()`` returns it
    (a tuple of RDNs, each a tuple of ``(name, value)`` pairs): RDNs in reverse order, joined by
    ``,``; multi-valued RDNs joined by ``+``; special characters escaped. This is what Java's
    ``X500Principal.getName()`` prints for the usual attributes, e.g. ``CN=alice,O=x``."""
    rdns = []
    for rdn in reversed(subject):
        rdns.append("+".join(f"{_RFC2253_KEYWORDS.get(k, k)}={_escape(v)}" for k, v in rdn))
    return ",".join(rdns)


def ssl_principal(sock: ssl.SSLSocket) -> str:
    """The principal of a TLS connection as Kafka's ``DefaultKafkaPrincipalBuilder`` builds it
    with the default ``ssl.principal.mapping.rules``: ``User:`` + the client certificate's
    subject DN (RFC 2253), or ``User:ANONYMOUS`` when the client sent no (verified) certificate."""
    cert = sock.getpeercert()
    if not cert or not cert.get("subject"):
        return ANONYMOUS
    return "User:" + dn_of(cert["subject"])
