"""Automatic preferred leader election (pure): the active controller's leader balancing, with
Kafka's ``auto.leader.rebalance.enable`` (true), ``leader.imbalance.check.interval.seconds`` (300)
and ``leader.imbalance.per.broker.percentage`` (10).

Semantics:

* Every ``leader.imbalance.check.interval.seconds``, counted from the moment this controller
  became active, the controller looks at every partition whose leader is not its preferred
  replica (``replicas[0]``). KRaft's ``QuorumController.maybeScheduleNextBalancePartitionLeaders``
  instead schedules a check one interval after a write that leaves partitions imbalanced; a fixed
  period runs the check at most one interval later than KRaft would.
* Per broker, the leader imbalance ratio is the number of partitions it is the preferred replica
  of but does not lead, over the number it is the preferred replica of. When the ratio is above
  ``leader.imbalance.per.broker.percentage`` / 100, its partitions whose preferred replica can lead
  (live, i.e. registered and unfenced, and in the ISR) get it back as leader (the ZooKeeper
  controller's ``KafkaController.checkAndTriggerAutoLeaderRebalance`` with
  ``canPreferredReplicaBeLeader``). KRaft's QuorumController ignores the percentage and elects
  every imbalanced partition's preferred leader; ``leader.imbalance.per.broker.percentage=0``
  gives that behaviour here.
* At most :data:`MAX_ELECTIONS_PER_IMBALANCE` partitions per check
  (``ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE``); when more were eligible the next
  check comes at once instead of an interval later (KRaft reschedules ``IMMEDIATELY``).
* The elections are an :class:`~actors.controller.state.ElectLeaders` ``"preferred"`` command,
  decided like the ElectLeaders API's preferred election: one ``PartitionChanged`` per partition,
  reason ``"preferred"``, leader epoch bumped.

No I/O, no clock: time is an argument (:func:`maybe_balance_partition_leaders`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from actors.controller.state import ControllerState, ElectLeaders
from config import ConfigError

__all__ = [
    "LeaderBalanceConfig",
    "MAX_ELECTIONS_PER_IMBALANCE",
    "leader_imbalance_ratios",
    "maybe_balance_partition_leaders",
    "preferred_leader_candidates",
]

#: ``ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE``: elections per check at most
MAX_ELECTIONS_PER_IMBALANCE = 1000

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class LeaderBalanceConfig:
    """The controller's leader-balancing configs (Kafka ``ReplicationConfigs``):
    ``auto_leader_rebalance_enable`` (``auto.leader.rebalance.enable``, default true),
    ``leader_imbalance_check_interval_ms`` (``leader.imbalance.check.interval.seconds`` × 1000,
    default 300 s) and ``leader_imbalance_per_broker_percentage``
    (``leader.imbalance.per.broker.percentage``, default 10)."""

    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_ms: int = 300_000
    leader_imbalance_per_broker_percentage: int = 10

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> "LeaderBalanceConfig":
        """Read the three keys from a broker config (absent keys: Kafka's defaults). Raises
        :class:`config.ConfigError` for a boolean other than true/false, a non-integer, an
        interval below 1 s (Kafka's ``atLeast(1)``) or a negative percentage."""
        raw_enable = str(cfg.get("auto.leader.rebalance.enable", "true")).strip().lower()
        if raw_enable not in ("true", "false"):
            raise ConfigError(f"Invalid value {raw_enable} for configuration auto.leader.rebalance.enable: Expected value to be either true or false")
        try:
            interval_s = int(str(cfg.get("leader.imbalance.check.interval.seconds", "300")).strip())
            pct = int(str(cfg.get("leader.imbalance.per.broker.percentage", "10")).strip())
        except ValueError as exc:
            raise ConfigError(f"leader balancing config: {exc}") from None
        if interval_s < 1:
            raise ConfigError(f"Invalid value {interval_s} for configuration leader.imbalance.check.interval.seconds: Value must be at least 1")
        if pct < 0:
            raise ConfigError(f"Invalid value {pct} for configuration leader.imbalance.per.broker.percentage: Value must be at least 0")
        return cls(raw_enable == "true", interval_s * 1000, pct)


def leader_imbalance_ratios(state: ControllerState) -> dict[int, float]:
    """Per preferred replica (broker id): the partitions it is ``replicas[0]`` of but does not
    lead, over all partitions it is ``replicas[0]`` of (``KafkaController``'s
    ``imbalanceRatio``; a leaderless partition counts as not led), in ``[0, 1]``. Brokers that
    are nobody's preferred replica are absent. Pure; raises nothing."""
    preferred: dict[int, int] = {}
    not_led: dict[int, int] = {}
    for t in state.topics.topics.values():
        for p in t.partitions:
            if not p.replicas:
                continue
            b = p.replicas[0]
            preferred[b] = preferred.get(b, 0) + 1
            if p.leader != b:
                not_led[b] = not_led.get(b, 0) + 1
    return {b: not_led.get(b, 0) / n for b, n in preferred.items()}


def preferred_leader_candidates(state: ControllerState, live: Iterable[int], percentage: int) -> list[TopicPartition]:
    """The partitions to give back to their preferred replica, in topic and partition order:
    those whose ``replicas[0]`` is not the leader, is in ``live`` and in the ISR
    (``canPreferredReplicaBeLeader``), of brokers whose :func:`leader_imbalance_ratios` is above
    ``percentage`` / 100 (``percentage``: an integer percent, 0 = any imbalance). Pure; raises
    nothing."""
    alive = set(live)
    over = {b for b, ratio in leader_imbalance_ratios(state).items() if ratio > percentage / 100}
    out: list[TopicPartition] = []
    for name, t in sorted(state.topics.topics.items()):
        for p in t.partitions:
            if not p.replicas:
                continue
            b = p.replicas[0]
            if b in over and p.leader != b and b in alive and b in p.isr:
                out.append((name, p.partition))
    return out


def maybe_balance_partition_leaders(
    state: ControllerState, config: LeaderBalanceConfig, now_ms: int, next_check_ms: int
) -> tuple[ElectLeaders | None, int]:
    """The leader-balancing timer of the active controller (Kafka
    ``QuorumController.maybeBalancePartitionLeaders``), decided at ``now_ms`` (ms) with the check
    due at ``next_check_ms`` (ms). Returns ``(command, next_check_ms)``: ``command`` is the
    :class:`ElectLeaders` ``"preferred"`` election of at most :data:`MAX_ELECTIONS_PER_IMBALANCE`
    :func:`preferred_leader_candidates` (live brokers: ``state.cluster.live()``), or ``None``
    when balancing is disabled, not due yet, or nothing needs it; the next check is due one
    interval after ``now_ms`` (at ``now_ms`` again when the cap left candidates over; unchanged
    when not due or disabled). Pure; raises nothing."""
    if not config.auto_leader_rebalance_enable or now_ms < next_check_ms:
        return None, next_check_ms
    live = state.cluster.live() or tuple(state.topics.brokers)
    candidates = preferred_leader_candidates(state, live, config.leader_imbalance_per_broker_percentage)
    more = len(candidates) > MAX_ELECTIONS_PER_IMBALANCE
    candidates = candidates[:MAX_ELECTIONS_PER_IMBALANCE]
    nxt = now_ms if more else now_ms + config.leader_imbalance_check_interval_ms
    if not candidates:
        return None, nxt
    return ElectLeaders(tuple(candidates), "preferred", tuple(live)), nxt
