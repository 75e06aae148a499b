"""The principal of a connection in the ``User:<name>`` form handlers and ACLs use (Kafka's
``KafkaPrincipal.toString``). A module of its own so that ``wire.server`` and ``wire.tls``
(which ``wire.server`` imports) share the constant without an import cycle."""

from __future__ import annotations

__all__ = ["ANONYMOUS"]

#: Kafka's ``KafkaPrincipal.ANONYMOUS``: a PLAINTEXT connection, or TLS without a client certificate.
ANONYMOUS = "User:ANONYMOUS"
