"""The cluster's brokers and its active controller (pure): KRaft's ``ClusterControlManager`` and
``BrokerHeartbeatManager`` over the controller stream of the shared event log.

* :class:`ClusterState` is the fold of :class:`~events.controller.BrokerRegistered`,
  :class:`~events.controller.BrokerFenced`, :class:`~events.controller.BrokerUnfenced` and
  :class:`~events.controller.ControllerElected`: every registered broker (endpoints, epoch, fenced
  or not) and the active controller with its epoch.
* :class:`HeartbeatTracker` is the active controller's in-memory view of broker sessions (as in
  KRaft, heartbeats are not records; only the fence/unfence decisions they lead to are). Time is
  an argument.
* The commands (:class:`RegisterBroker`, :class:`BrokerHeartbeat`, :class:`FenceBrokers`,
  :class:`ClaimController`) are decided by :func:`actors.controller.state.decide`, which also
  moves the leaders of a fenced broker's partitions in the same decision.

Rules (Kafka's ``ClusterControlManager.registerBroker``, ``BrokerHeartbeatManager``,
``ReplicationControlManager.handleBrokerFenced/Unfenced``):

* A broker registers fenced, with a new ``incarnation_id`` per process start and
  ``broker_epoch`` = the stream version of its registration. The same incarnation registering
  again gets its registration back (an idempotent retry). Another incarnation is refused with
  DUPLICATE_BROKER_REGISTRATION while the registered one's session is alive; otherwise it
  replaces it (the old incarnation's partitions lose it as leader and ISR member first).
* A heartbeat must carry the registered epoch (STALE_BROKER_EPOCH otherwise;
  BROKER_ID_NOT_REGISTERED for an unknown id). A fenced broker that heartbeats without asking to
  stay fenced is unfenced, and leaderless partitions that have it in their ISR elect it.
* A broker whose session expires (``broker.session.timeout.ms`` without a heartbeat) is fenced.
* :class:`ClaimController` makes a node the active controller at the next epoch, if the epoch it
  saw is still the current one; nodes it names as unreachable are fenced in the same append.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

from events.controller import BrokerEndpoint, BrokerFenced, BrokerRegistered, BrokerUnfenced, ControllerElected

__all__ = [
    "BrokerHeartbeat",
    "BrokerRegistration",
    "ClaimController",
    "ClusterState",
    "FenceBrokers",
    "HeartbeatTracker",
    "NO_CONTROLLER",
    "RegisterBroker",
    "CLUSTER_EVENTS",
]

#: ``controller_id`` when no controller was ever elected (Kafka's Metadata answers -1 then)
NO_CONTROLLER = -1

CLUSTER_EVENTS = (BrokerRegistered, BrokerFenced, BrokerUnfenced, ControllerElected)


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """A registered broker (Kafka's ``BrokerRegistration``): ``endpoints`` in listener order,
    ``broker_epoch`` of the registration, ``fenced``."""

    broker_id: int
    incarnation_id: str
    broker_epoch: int
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None
    fenced: bool

    def endpoint(self, listener: str | None = None) -> BrokerEndpoint | None:
        """The endpoint of ``listener`` (by name), or the first (the inter-broker one) for ``None``."""
        if not self.endpoints:
            return None
        if listener is None:
            return self.endpoints[0]
        return next((e for e in self.endpoints if e.name == listener), None)


class ClusterState:
    """The brokers and the active controller, folded from the controller stream."""

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerRegistration] = {}
        self.controller_id = NO_CONTROLLER
        self.controller_epoch = 0

    def live(self) -> tuple[int, ...]:
        """The registered, unfenced broker ids, sorted."""
        return tuple(sorted(b for b, r in self.brokers.items() if not r.fenced))

    def evolve(self, event: Any) -> None:
        """Apply one cluster event in place."""
        if isinstance(event, BrokerRegistered):
            self.brokers[event.broker_id] = BrokerRegistration(
                event.broker_id, event.incarnation_id, event.broker_epoch, tuple(event.endpoints), event.rack, True
            )
        elif isinstance(event, (BrokerFenced, BrokerUnfenced)):
            reg = self.brokers.get(event.broker_id)
            if reg is not None and reg.broker_epoch == event.broker_epoch:
                self.brokers[event.broker_id] = replace(reg, fenced=isinstance(event, BrokerFenced))
        elif isinstance(event, ControllerElected):
            self.controller_id = event.node_id
            self.controller_epoch = event.controller_epoch
        else:
            raise TypeError(f"not a cluster event: {type(event).__name__}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for snapshots (brokers sorted by id)."""
        return {
            "controller_id": self.controller_id,
            "controller_epoch": self.controller_epoch,
            "brokers": [
                {
                    "broker_id": r.broker_id,
                    "incarnation_id": r.incarnation_id,
                    "broker_epoch": r.broker_epoch,
                    "endpoints": [[e.name, e.host, e.port, e.security_protocol] for e in r.endpoints],
                    "rack": r.rack,
                    "fenced": r.fenced,
                }
                for _, r in sorted(self.brokers.items())
            ],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "ClusterState":
        """Inverse of :meth:`to_dict`; ``None`` (a snapshot from before clusters) is empty."""
        cs = cls()
        if not d:
            return cs
        cs.controller_id = int(d["controller_id"])
        cs.controller_epoch = int(d["controller_epoch"])
        for b in d["brokers"]:
            eps = tuple(BrokerEndpoint(n, h, int(p), sp) for n, h, p, sp in b["endpoints"])
            cs.brokers[int(b["broker_id"])] = BrokerRegistration(
                int(b["broker_id"]), b["incarnation_id"], int(b["broker_epoch"]), eps, b.get("rack"), bool(b["fenced"])
            )
        return cs

    def __bool__(self) -> bool:
        return bool(self.brokers) or self.controller_id != NO_CONTROLLER


class HeartbeatTracker:
    """The active controller's broker sessions (KRaft ``BrokerHeartbeatManager``): the time of
    each broker's last heartbeat in ms. Not evented: a new controller starts every registered
    broker's session at its own start (:meth:`reset`), which gives each one a full session to reach
    it."""

    def __init__(self) -> None:
        self._last_ms: dict[int, int] = {}

    def reset(self, brokers: Iterable[int], now_ms: int) -> None:
        """Start a fresh session for each of ``brokers`` at ``now_ms`` (forgetting others)."""
        self._last_ms = {b: now_ms for b in brokers}

    def touch(self, broker_id: int, now_ms: int) -> None:
        """A heartbeat (or registration) from ``broker_id`` arrived at ``now_ms``."""
        self._last_ms[broker_id] = max(now_ms, self._last_ms.get(broker_id, now_ms))

    def forget(self, broker_id: int) -> None:
        """Stop tracking ``broker_id`` (it was fenced)."""
        self._last_ms.pop(broker_id, None)

    def alive(self, broker_id: int, now_ms: int, session_timeout_ms: int) -> bool:
        """True if ``broker_id`` heartbeated within the last ``session_timeout_ms``."""
        last = self._last_ms.get(broker_id)
        return last is not None and now_ms - last < session_timeout_ms

    def expired(self, live: Iterable[int], now_ms: int, session_timeout_ms: int) -> list[int]:
        """The brokers of ``live`` (unfenced) whose session has expired at ``now_ms``; a live
        broker never heard of gets a session starting now."""
        out = []
        for b in live:
            last = self._last_ms.setdefault(b, now_ms)
            if now_ms - last >= session_timeout_ms:
                out.append(b)
        return sorted(out)


@dataclass(frozen=True, slots=True)
class RegisterBroker:
    """BrokerRegistration (API 62) from ``broker_id``. ``session_alive``: whether the broker's
    registered incarnation (if any) still has a live session on this controller (the actor reads
    its :class:`HeartbeatTracker`). Reply: ``(error, broker_epoch)``."""

    broker_id: int
    incarnation_id: str
    cluster_id: str
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None
    session_alive: bool


@dataclass(frozen=True, slots=True)
class BrokerHeartbeat:
    """BrokerHeartbeat (API 63). ``want_fence``: the broker asks to be (or stay) fenced.
    Reply: ``(error, is_fenced)``."""

    broker_id: int
    broker_epoch: int
    want_fence: bool


@dataclass(frozen=True, slots=True)
class FenceBrokers:
    """Fence ``broker_ids`` (unfenced ones only) for ``reason``; their partitions get new leaders."""

    broker_ids: tuple[int, ...]
    reason: str = "session_expired"


@dataclass(frozen=True, slots=True)
class ClaimController:
    """Node ``node_id`` claims the active controller role over ``seen_epoch`` (the controller epoch
    it folded); ``fence``: brokers it found unreachable for a whole session (the old controller),
    fenced in the same append. Rejected with NOT_CONTROLLER if the epoch moved on."""

    node_id: int
    seen_epoch: int
    fence: tuple[int, ...] = ()
