"""Gateways for wire tests that talk to real actors under ``simpleSystemBase``."""

from __future__ import annotations

from datetime import timedelta


class CountingGateway:
    """``wire.gateway.ActorGateway.ask`` over a test actor system ``asys`` (``timeout_s`` seconds
    turned into the ``timedelta`` Thespian takes); ``asks`` counts the asks, so a test can tell a
    cached answer from one that went to the actor."""

    def __init__(self, asys):
        self.asys = asys
        self.asks = 0

    def ask(self, addr, msg, timeout_s):
        """Ask actor ``addr`` with ``msg``; return its reply (``None`` on timeout, as Thespian)."""
        self.asks += 1
        return self.asys.ask(addr, msg, timedelta(seconds=timeout_s))
