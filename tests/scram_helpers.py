"""SCRAM test helpers shared by the controller, wire and e2e tests: what a Kafka client computes
before it sends AlterUserScramCredentials (KIP-554), so no test file carries its own copy."""

from __future__ import annotations

import hashlib

import scramp

from actors.controller import scram as sc

__all__ = ["salted_password", "scram_exchange", "upsertion"]

_PBKDF2_HASH = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


def salted_password(password: str, salt: bytes, iterations: int, mechanism: str | int = "SCRAM-SHA-256") -> bytes:
    """``Hi(password, salt, iterations)`` (RFC 5802 §2.2: PBKDF2-HMAC with the mechanism's hash)
    as a Kafka client computes it (``ScramFormatter.hi``). ``mechanism`` is Kafka's name
    ("SCRAM-SHA-256"/"SCRAM-SHA-512") or type id (1/2); any other id falls back to SHA-256, for
    tests of ids the controller refuses (the value does not matter there)."""
    name = sc.MECHANISMS.get(mechanism, "SCRAM-SHA-256") if isinstance(mechanism, int) else mechanism
    return hashlib.pbkdf2_hmac(_PBKDF2_HASH[name], password.encode(), salt, iterations)


def upsertion(name: str, password: str, mechanism: int = 1, iterations: int = 4096, salt: bytes = b"salt-0123") -> sc.ScramUpsertion:
    """The :class:`actors.controller.scram.ScramUpsertion` a client sends to give ``name`` the
    password ``password``: mechanism type id (1 SHA-256, 2 SHA-512), PBKDF2 ``iterations``,
    ``salt``, and the salted password from :func:`salted_password`."""
    return sc.ScramUpsertion(name, mechanism, iterations, salt, salted_password(password, salt, iterations, mechanism))


def scram_exchange(cred: sc.ScramCredential | None, mechanism: str, user: str, password: str) -> bool:
    """A whole SCRAM exchange (RFC 5802): scramp's client logging in as ``user`` with
    ``password`` against scramp's server that knows only ``cred`` (salt, stored key, server key,
    iterations) for ``user``. True when both sides accept (the client also checks the server's
    signature); False on any SCRAM failure, or when ``cred`` is None."""
    server = scramp.ScramMechanism(mechanism).make_server(
        lambda name: (cred.salt, cred.stored_key, cred.server_key, cred.iterations) if cred is not None and name == user else None
    )
    client = scramp.ScramClient([mechanism], user, password)
    try:
        server.set_client_first(client.get_client_first())
        client.set_server_first(server.get_server_first())
        server.set_client_final(client.get_client_final())
        client.set_server_final(server.get_server_final())
    except scramp.ScramException:
        return False
    return True
