"""Kafka's listener configuration: ``listeners``, ``advertised.listeners``,
``listener.security.protocol.map`` and the ``listener.name.<name>.`` config prefix.

Pure functions over the broker config (strings in, values out; no sockets). Semantics from
Kafka's ``kafka.cluster.EndPoint`` / ``CoreUtils.listenerListToEndPoints`` (a listener is
``NAME://host:port``; the name is upper-cased; an empty host binds every interface; names and
non-zero ports must be distinct), ``KafkaConfig.effectiveListenerSecurityProtocolMap`` (the
default map ``PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL``) and
``ChannelBuilders.channelBuilderConfigs`` (a key under ``listener.name.<lower-case name>.``
overrides the unprefixed key for that listener only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from config import ConfigError

__all__ = [
    "SECURITY_PROTOCOLS",
    "DEFAULT_SECURITY_PROTOCOL_MAP",
    "ListenerSpec",
    "advertised_endpoints",
    "listener_config",
    "listener_prefix",
    "parse_listeners",
    "security_protocol_map",
]

#: Kafka's ``SecurityProtocol`` values Shoal serves.
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

#: ``listener.security.protocol.map`` when it is not set (``KafkaConfig``: every security
#: protocol is also a listener name mapped to itself).
DEFAULT_SECURITY_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

# Kafka's Utils.HOST_PORT_PATTERN with the listener name in front (IPv6 hosts in brackets).
_ENTRY = re.compile(r"^([A-Za-z0-9_\-]+)://\[?([0-9a-zA-Z\-%._:]*?)\]?:(-?[0-9]+)$")


@dataclass(frozen=True, slots=True)
class ListenerSpec:
    """One entry of ``listeners`` (or ``advertised.listeners``): ``name`` (upper case, e.g.
    ``"SASL_SSL"`` or ``"CLIENT"``), its ``security_protocol`` (from the protocol map), ``host``
    (``""`` = every interface) and ``port`` (``0`` = pick a free port when binding)."""

    name: str
    security_protocol: str
    host: str
    port: int

    @property
    def bind_host(self) -> str:
        """The address to bind: ``host``, or ``0.0.0.0`` for an empty host."""
        return self.host or "0.0.0.0"


def security_protocol_map(cfg: Mapping[str, str]) -> dict[str, str]:
    """``listener.security.protocol.map`` as listener name → security protocol (names upper
    case). Raises :class:`ConfigError` for a malformed entry or an unknown protocol."""
    raw = cfg.get("listener.security.protocol.map") or DEFAULT_SECURITY_PROTOCOL_MAP
    out: dict[str, str] = {}
    for item in raw.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, proto = item.partition(":")
        name, proto = name.strip().upper(), proto.strip().upper()
        if not sep or not name or not proto:
            raise ConfigError(f"listener.security.protocol.map: expected NAME:PROTOCOL, got {item!r}")
        if proto not in SECURITY_PROTOCOLS:
            raise ConfigError(f"listener.security.protocol.map: {name} maps to {proto}, not one of {', '.join(SECURITY_PROTOCOLS)}")
        out[name] = proto
    return out


def _parse_list(value: str, key: str, protocols: Mapping[str, str]) -> list[ListenerSpec]:
    specs: list[ListenerSpec] = []
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        m = _ENTRY.match(item)
        if m is None:
            raise ConfigError(f"{key}: expected NAME://host:port, got {item!r}")
        name = m.group(1).upper()
        if name not in protocols:
            raise ConfigError(f"{key}: listener {name} is not in listener.security.protocol.map ({', '.join(sorted(protocols))})")
        port = int(m.group(3))
        if not 0 <= port <= 65535:
            raise ConfigError(f"{key}: port {port} of {name} is outside 0..65535")
        specs.append(ListenerSpec(name, protocols[name], m.group(2), port))
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ConfigError(f"{key}: each listener must have a different name, got {value!r}")
    return specs


def parse_listeners(cfg: Mapping[str, str]) -> list[ListenerSpec]:
    """Every entry of ``listeners`` in order, each with its security protocol. Raises
    :class:`ConfigError` when the value is empty or malformed, a name is unmapped or repeated,
    or two listeners share a non-zero port (Kafka: "Each listener must have a different port")."""
    specs = _parse_list(cfg.get("listeners", ""), "listeners", security_protocol_map(cfg))
    if not specs:
        raise ConfigError("listeners: at least one listener is required")
    ports = [s.port for s in specs if s.port != 0]
    if len(set(ports)) != len(ports):
        raise ConfigError(f"listeners: each listener must have a different port, got {cfg.get('listeners')!r}")
    return specs


def advertised_endpoints(cfg: Mapping[str, str], bound: Mapping[str, tuple[str, int]]) -> dict[str, tuple[str, int]]:
    """Listener name → the ``(host, port)`` clients are told in Metadata, FindCoordinator and
    ShareFetch/ShareAcknowledge node endpoints.

    ``bound`` maps each listener name to the address it actually bound (port 0 resolved).
    ``advertised.listeners`` (default: ``listeners``) gives the host and port per name; an empty
    host or ``0.0.0.0`` advertises the bound host (``127.0.0.1`` when bound to every interface;
    Kafka uses the canonical host name there), a port 0 the bound port. Raises
    :class:`ConfigError` when ``advertised.listeners`` names a listener that is not in
    ``listeners`` (Kafka requires advertised names to be a subset of the listener names)."""
    raw = cfg.get("advertised.listeners") or cfg.get("listeners", "")
    specs = _parse_list(raw, "advertised.listeners", security_protocol_map(cfg))
    out: dict[str, tuple[str, int]] = {}
    for s in specs:
        if s.name not in bound:
            raise ConfigError(f"advertised.listeners: {s.name} is not one of the listeners ({', '.join(bound)})")
        bhost, bport = bound[s.name]
        host = s.host if s.host and s.host != "0.0.0.0" else (bhost if bhost not in ("", "0.0.0.0") else "127.0.0.1")
        out[s.name] = (host, s.port or bport)
    for name, (bhost, bport) in bound.items():  # a listener not advertised is still answered with its own address
        out.setdefault(name, (bhost if bhost not in ("", "0.0.0.0") else "127.0.0.1", bport))
    return out


def listener_prefix(name: str) -> str:
    """Kafka's ``ListenerName.configPrefix()``: ``listener.name.<lower-case name>.``."""
    return f"listener.name.{name.lower()}."


def listener_config(cfg: Mapping[str, str], name: str) -> dict[str, str]:
    """The config as listener ``name`` sees it: every key, with keys under
    ``listener.name.<name>.`` overriding the unprefixed key of the same name (Kafka's
    ``AbstractConfig.valuesWithPrefixOverride``). Returns a new dict."""
    prefix = listener_prefix(name)
    out = dict(cfg)
    for k, v in cfg.items():
        if k.startswith(prefix):
            out[k[len(prefix):]] = v
    return out


def endpoint_for(backend: object, listener: str | None) -> tuple[str, int]:
    """The advertised ``(host, port)`` of ``listener`` for responses that name this broker
    (Metadata brokers, FindCoordinator, ShareFetch/ShareAcknowledge node endpoints): Kafka answers
    with the endpoints of the listener the request arrived on. Uses ``backend.endpoints`` (listener
    name → address) when the backend has it and knows the name, else ``backend.host``/``backend.port``."""
    eps = getattr(backend, "endpoints", None)
    if eps and listener in eps:
        return eps[listener]
    return getattr(backend, "host"), int(getattr(backend, "port"))
