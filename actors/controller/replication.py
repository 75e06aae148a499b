"""Replication rules (pure): ISR, high watermark, acks, leader election and epochs, errors.

Kafka is the normative anchor (reference ``controller.md`` §3.8, [K-new] ``Partition.scala``,
KRaft ``PartitionChangeBuilder``/``PartitionRegistration``, ``Errors.java``); Rivven's rules
(§3.3–§3.7) are followed only where they agree with Kafka. Deliberate choices where they differ:

* min-ISR gates **only** ``acks=-1`` (NOT_ENOUGH_REPLICAS, before the append); Rivven gates every
  ack mode. An acks=-1 produce completes when ``HW >= last_offset + 1`` (Kafka's
  ``requiredOffset``), not ``>= last_offset`` (Rivven's off-by-one).
* Leader election picks the first replica **in assignment order** that is in the ISR and alive
  (``PartitionChangeBuilder.electAnyLeader``; the preferred leader ``replicas[0]`` first), not the
  lexicographically smallest ISR member; every leader change, including to no leader (-1),
  bumps the leader epoch (``PartitionRegistration.merge``); every change bumps the partition epoch.
* A request leader epoch below the current one is FENCED_LEADER_EPOCH, above it
  UNKNOWN_LEADER_EPOCH (Rivven accepts higher ones). Both are retriable.
* Reads below the log start offset are OFFSET_OUT_OF_RANGE (Rivven silently clamps).
* NOT_ENOUGH_REPLICAS_AFTER_APPEND and CORRUPT_MESSAGE are retriable as in Kafka.

The daemon runs one node today; everything here is written for several. States are immutable
dataclasses; each function returns a new state plus an outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Sequence

__all__ = [
    "AppendOutcome",
    "ERRORS",
    "NO_LEADER",
    "NodeLiveness",
    "NodeStatus",
    "PartitionLeadership",
    "ReplicaState",
    "ReplicationState",
    "alter_partition",
    "append_as_leader",
    "become_leader",
    "check_enough_replicas_reach_offset",
    "check_fetch_offset",
    "check_leader_epoch",
    "check_produce",
    "commit_isr",
    "delete_records",
    "effective_min_isr",
    "elect_leader",
    "error_code",
    "handle_broker_failure",
    "is_retriable",
    "leader_log_end_moved",
    "maybe_increment_hw",
    "maybe_shrink_isr",
    "update_follower_fetch",
    "update_partition_leader",
]

NO_LEADER = -1
DEFAULT_REPLICA_LAG_TIME_MAX_MS = 30_000  # replica.lag.time.max.ms (Kafka >= 2.5; was 10000)

#: Kafka error name → (code, retriable) for the errors this model and the controller produce
#: (``org.apache.kafka.common.protocol.Errors``).
ERRORS: dict[str, tuple[int, bool]] = {
    "NONE": (0, False),
    "UNKNOWN_SERVER_ERROR": (-1, False),
    "OFFSET_OUT_OF_RANGE": (1, False),
    "CORRUPT_MESSAGE": (2, True),
    "UNKNOWN_TOPIC_OR_PARTITION": (3, True),
    "LEADER_NOT_AVAILABLE": (5, True),
    "NOT_LEADER_OR_FOLLOWER": (6, True),
    "REQUEST_TIMED_OUT": (7, True),
    "INVALID_TOPIC_EXCEPTION": (17, False),
    "NOT_ENOUGH_REPLICAS": (19, True),
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": (20, True),
    "INVALID_REQUIRED_ACKS": (21, False),
    "UNKNOWN_MEMBER_ID": (25, False),
    "GROUP_AUTHORIZATION_FAILED": (30, False),
    "UNSUPPORTED_VERSION": (35, False),
    "TOPIC_ALREADY_EXISTS": (36, False),
    "INVALID_PARTITIONS": (37, False),
    "INVALID_REPLICATION_FACTOR": (38, False),
    "INVALID_REPLICA_ASSIGNMENT": (39, False),
    "INVALID_CONFIG": (40, False),
    "NOT_CONTROLLER": (41, True),
    "INVALID_REQUEST": (42, False),
    "POLICY_VIOLATION": (44, False),
    "FENCED_LEADER_EPOCH": (74, True),
    "UNKNOWN_LEADER_EPOCH": (75, True),
    "OFFSET_NOT_AVAILABLE": (78, True),
    "PREFERRED_LEADER_NOT_AVAILABLE": (80, True),
    "ELIGIBLE_LEADERS_NOT_AVAILABLE": (83, True),
    "ELECTION_NOT_NEEDED": (84, False),
    "NO_REASSIGNMENT_IN_PROGRESS": (85, False),
    "UNKNOWN_TOPIC_ID": (100, True),
    "INELIGIBLE_REPLICA": (107, False),
    "INVALID_UPDATE_VERSION": (95, False),
    "NEW_LEADER_ELECTED": (108, False),
    "COORDINATOR_LOAD_IN_PROGRESS": (14, True),
}


def error_code(name: str) -> int:
    """Kafka's numeric code for an error name; ``-1`` (UNKNOWN_SERVER_ERROR) if unknown."""
    return ERRORS.get(name, (-1, False))[0]


def is_retriable(name: str) -> bool:
    """Whether Kafka marks the error retriable (a ``RetriableException`` subclass)."""
    return ERRORS.get(name, (-1, False))[1]


# --- epochs ---------------------------------------------------------------------------------


def check_leader_epoch(current_epoch: int, request_epoch: int) -> str:
    """``Partition.checkCurrentLeaderEpoch``: ``-1`` (no epoch) is accepted; lower →
    FENCED_LEADER_EPOCH; higher → UNKNOWN_LEADER_EPOCH; equal → NONE."""
    if request_epoch == -1 or request_epoch == current_epoch:
        return "NONE"
    return "FENCED_LEADER_EPOCH" if request_epoch < current_epoch else "UNKNOWN_LEADER_EPOCH"


# --- leadership (controller side) -----------------------------------------------------------


@dataclass(frozen=True)
class PartitionLeadership:
    """A partition's registration as the controller keeps it: ``replicas`` in assignment order,
    ``isr``, ``leader`` (-1 = none), ``leader_epoch``, ``partition_epoch``."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0

    @property
    def preferred_leader(self) -> int:
        """``replicas[0]``, or -1 without replicas."""
        return self.replicas[0] if self.replicas else NO_LEADER

    def change(self, leader: int | None = None, isr: Sequence[int] | None = None) -> "PartitionLeadership":
        """Apply a PartitionChangeRecord: a new ``leader`` bumps the leader epoch (also to -1);
        any change bumps the partition epoch; no change returns ``self``."""
        new_leader = self.leader if leader is None else leader
        new_isr = self.isr if isr is None else tuple(isr)
        if new_leader == self.leader and new_isr == self.isr:
            return self
        epoch = self.leader_epoch + 1 if new_leader != self.leader else self.leader_epoch
        return PartitionLeadership(self.replicas, new_isr, new_leader, epoch, self.partition_epoch + 1)


def elect_leader(
    p: PartitionLeadership, live: Iterable[int], election: str = "online", unclean: bool = False
) -> tuple[int, bool]:
    """Choose a leader (``PartitionChangeBuilder``): a valid leader is in the ISR and alive.

    ``election="preferred"``: the preferred replica if valid, else the current leader if still
    valid, else the first valid replica in assignment order. ``"online"``: the current leader if
    valid, else the first valid replica in assignment order. With ``unclean`` and no valid
    replica, the first live replica (unclean election). Returns ``(leader, was_unclean)``;
    ``(-1, False)`` when nobody can lead."""
    alive = set(live)
    isr = set(p.isr)

    def valid(r: int) -> bool:
        """In the ISR and alive."""
        return r in isr and r in alive

    if election == "preferred" and p.replicas and valid(p.replicas[0]):
        return p.replicas[0], False
    if p.leader != NO_LEADER and valid(p.leader):
        return p.leader, False
    for r in p.replicas:
        if valid(r):
            return r, False
    if unclean:
        for r in p.replicas:
            if r in alive:
                return r, True
    return NO_LEADER, False


def handle_broker_failure(p: PartitionLeadership, dead: int, live: Iterable[int]) -> PartitionLeadership:
    """A broker was fenced or died (Rivven's SWIM ``NodeFailed``; KRaft fencing): it leaves the
    ISR, unless it is the last member (KRaft keeps the last ISR member so that the partition can
    recover cleanly), and if it led the partition a new leader is elected among the remaining
    ISR in assignment order; with none the partition goes offline (leader -1, epoch bumped)."""
    alive = [b for b in live if b != dead]
    isr = tuple(r for r in p.isr if r != dead) or p.isr
    base = replace(p, isr=isr)
    leader, _ = elect_leader(base, alive)
    return p.change(leader=leader, isr=isr)


def update_partition_leader(p: PartitionLeadership, leader: int, epoch: int) -> tuple[PartitionLeadership, str]:
    """An explicit leader update carrying its epoch (Rivven ``UpdatePartitionLeader``): applies
    only if ``epoch`` is newer than the current one, else FENCED_LEADER_EPOCH (Rivven: "not found
    or stale epoch"). The leader must be a replica (INELIGIBLE_REPLICA otherwise)."""
    if epoch <= p.leader_epoch:
        return p, "FENCED_LEADER_EPOCH"
    if leader != NO_LEADER and leader not in p.replicas:
        return p, "INELIGIBLE_REPLICA"
    return PartitionLeadership(p.replicas, p.isr, leader, epoch, p.partition_epoch + 1), "NONE"


def alter_partition(
    p: PartitionLeadership, broker_id: int, leader_epoch: int, partition_epoch: int, new_isr: Sequence[int], live: Iterable[int]
) -> tuple[PartitionLeadership, str]:
    """An AlterPartition request from the leader (``ReplicationControlManager
    .validateAlterPartitionData``): NOT_LEADER_OR_FOLLOWER if the sender does not lead,
    FENCED_LEADER_EPOCH for another leader epoch, INVALID_UPDATE_VERSION for another partition
    epoch, INVALID_REQUEST if the ISR lacks the leader, INELIGIBLE_REPLICA for a member that is
    not a live replica. On success the ISR changes and the partition epoch is bumped."""
    if broker_id != p.leader:
        return p, "NOT_LEADER_OR_FOLLOWER"
    if leader_epoch != p.leader_epoch:
        return p, "FENCED_LEADER_EPOCH"
    if partition_epoch != p.partition_epoch:
        return p, "INVALID_UPDATE_VERSION"
    if p.leader not in new_isr:
        return p, "INVALID_REQUEST"
    alive = set(live)
    for r in new_isr:
        if r not in p.replicas or r not in alive:
            return p, "INELIGIBLE_REPLICA"
    return p.change(isr=tuple(new_isr)), "NONE"


class NodeStatus:
    """SWIM member states (Rivven ``node.rs``)."""

    UNKNOWN = "Unknown"
    ALIVE = "Alive"
    SUSPECT = "Suspect"
    DEAD = "Dead"
    LEAVING = "Leaving"


@dataclass(frozen=True)
class NodeLiveness:
    """A member's state and incarnation. Transitions (Rivven ``NodeState``): ``mark_alive(inc)``
    needs ``inc >= current`` from Unknown/Suspect/Alive and ``inc > current`` from Dead/Leaving;
    ``mark_suspect`` only from Alive or Unknown; ``mark_dead`` only from Suspect;
    ``mark_leaving`` from any state but Dead. Each returns ``(new, changed)``."""

    status: str = NodeStatus.UNKNOWN
    incarnation: int = 0

    def mark_alive(self, incarnation: int) -> tuple["NodeLiveness", bool]:
        """Alive at ``incarnation`` if allowed (see the class docstring)."""
        if self.status in (NodeStatus.DEAD, NodeStatus.LEAVING):
            ok = incarnation > self.incarnation
        else:
            ok = incarnation >= self.incarnation
        return (NodeLiveness(NodeStatus.ALIVE, incarnation), True) if ok else (self, False)

    def mark_suspect(self) -> tuple["NodeLiveness", bool]:
        """Suspect, only from Alive or Unknown."""
        if self.status in (NodeStatus.ALIVE, NodeStatus.UNKNOWN):
            return NodeLiveness(NodeStatus.SUSPECT, self.incarnation), True
        return self, False

    def mark_dead(self) -> tuple["NodeLiveness", bool]:
        """Dead, only from Suspect."""
        if self.status == NodeStatus.SUSPECT:
            return NodeLiveness(NodeStatus.DEAD, self.incarnation), True
        return self, False

    def mark_leaving(self) -> tuple["NodeLiveness", bool]:
        """Leaving, from any state but Dead."""
        if self.status == NodeStatus.DEAD:
            return self, False
        return NodeLiveness(NodeStatus.LEAVING, self.incarnation), True


# --- the leader's replication state ---------------------------------------------------------


@dataclass(frozen=True)
class ReplicaState:
    """A remote replica as the leader sees it (Kafka ``Replica``): ``leo`` (-1 = unknown),
    ``last_caught_up_ms``, ``last_fetch_leader_leo``, ``last_fetch_ms``."""

    broker_id: int
    leo: int = -1
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = -1
    last_fetch_ms: int = 0

    def is_caught_up(self, leader_leo: int, now_ms: int, max_lag_ms: int) -> bool:
        """``Replica.isCaughtUp``: at the leader's LEO, or caught up within ``max_lag_ms``."""
        return self.leo == leader_leo or now_ms - self.last_caught_up_ms <= max_lag_ms


@dataclass(frozen=True)
class ReplicationState:
    """The leader's view of one partition: ``broker_id`` (this node), leadership, ``leo``,
    ``hw`` (exclusive: consumers see ``[log_start_offset, hw)``), ``log_start_offset``,
    ``leader_epoch_start_offset``, remote replicas, ISR additions awaiting commit
    (``pending_isr``: part of the maximal ISR, KIP-497), ``min_insync_replicas``,
    ``replica_lag_time_max_ms`` and ``ineligible``: the replicas whose brokers are fenced or in
    controlled shutdown, which may neither join the ISR nor hold the high watermark back unless
    they are in the maximal ISR (Kafka ``Partition.isReplicaIsrEligible``, KRaft)."""

    broker_id: int
    leadership: PartitionLeadership
    leo: int = 0
    hw: int = 0
    log_start_offset: int = 0
    leader_epoch_start_offset: int = 0
    remotes: tuple[ReplicaState, ...] = ()
    pending_isr: tuple[int, ...] = ()
    min_insync_replicas: int = 1
    replica_lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS
    ineligible: tuple[int, ...] = ()

    @property
    def is_leader(self) -> bool:
        """Whether this node leads the partition."""
        return self.leadership.leader == self.broker_id

    @property
    def isr(self) -> tuple[int, ...]:
        """The committed ISR."""
        return self.leadership.isr

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The committed ISR plus pending additions (KIP-497's maximal ISR)."""
        return tuple(dict.fromkeys(self.leadership.isr + self.pending_isr))

    def remote(self, broker_id: int) -> ReplicaState | None:
        """The remote replica ``broker_id``, or ``None``."""
        for r in self.remotes:
            if r.broker_id == broker_id:
                return r
        return None

    def _with_remote(self, rs: ReplicaState) -> "ReplicationState":
        return replace(self, remotes=tuple(rs if r.broker_id == rs.broker_id else r for r in self.remotes))


def effective_min_isr(state: ReplicationState) -> int:
    """``min(min.insync.replicas, replication factor)`` (Kafka's ``effectiveMinIsr``)."""
    return min(state.min_insync_replicas, len(state.leadership.replicas))


def _under_min_isr(state: ReplicationState) -> bool:
    return len(state.leadership.isr) < effective_min_isr(state)


def become_leader(
    broker_id: int,
    leadership: PartitionLeadership,
    now_ms: int,
    leo: int = 0,
    hw: int = 0,
    log_start_offset: int = 0,
    min_insync_replicas: int = 1,
    replica_lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS,
) -> ReplicationState:
    """``Partition.makeLeader`` on a new leader epoch: ``leader_epoch_start_offset = LEO``; every
    remote replica's state is reset (LEO unknown; ISR members count as caught up now)."""
    remotes = tuple(
        ReplicaState(r, -1, now_ms if r in leadership.isr else 0, -1, 0) for r in leadership.replicas if r != broker_id
    )
    return ReplicationState(
        broker_id, leadership, leo, hw, log_start_offset, leo, remotes, (), min_insync_replicas, replica_lag_time_max_ms
    )


def maybe_increment_hw(state: ReplicationState, now_ms: int) -> ReplicationState:
    """``maybeIncrementLeaderHW``: unchanged while under min ISR; else ``min(leader LEO, LEO of
    every remote in the maximal ISR, or caught up and ISR-eligible)``, and only if that is higher
    (monotone). A caught-up replica outside the maximal ISR holds the HW back only while its
    broker is eligible (``shouldWaitForReplicaToJoinIsr``): a fenced broker that was caught up
    when it died must not stall acks=-1 produces for ``replica.lag.time.max.ms``."""
    if not state.is_leader or _under_min_isr(state):
        return state
    new_hw = _hw_bound(state, state.leo, now_ms)
    if new_hw > state.hw:
        return replace(state, hw=new_hw)
    return state


def leader_log_end_moved(state: ReplicationState, leo: int, now_ms: int) -> ReplicationState:
    """The leader's log end offset is now ``leo`` (after ``appendRecordsToLeader``), then
    ``maybeIncrementLeaderHW``: the state ``maybe_increment_hw(replace(state, leo=leo), now_ms)``
    returns, built in one step (the produce path runs this once per appended batch). Returns
    ``state`` itself when neither the LEO nor the HW changes."""
    hw = state.hw
    if state.is_leader and not _under_min_isr(state):
        bound = _hw_bound(state, leo, now_ms)
        if bound > hw:
            hw = bound
    if leo == state.leo and hw == state.hw:
        return state
    return replace(state, leo=leo, hw=hw)


def _hw_bound(state: ReplicationState, leo: int, now_ms: int) -> int:
    """``min(leader LEO, LEO of every remote that holds the HW back)`` with the leader's LEO at
    ``leo`` (see :func:`maybe_increment_hw`); ``leo`` itself for a partition without remotes."""
    if not state.remotes:
        return leo
    new_hw = leo
    maximal = set(state.maximal_isr)
    for r in state.remotes:
        if r.broker_id in maximal or (
            r.broker_id not in state.ineligible and r.is_caught_up(leo, now_ms, state.replica_lag_time_max_ms)
        ):
            new_hw = min(new_hw, r.leo)
    return new_hw


@dataclass(frozen=True)
class AppendOutcome:
    """Result of a produce on the leader: ``error`` (``"NONE"`` or a Kafka error name),
    ``base_offset``/``last_offset`` of the appended records (inclusive; -1 on error) and
    ``required_offset = last_offset + 1`` that acks=-1 waits for."""

    error: str
    base_offset: int = -1
    last_offset: int = -1

    @property
    def required_offset(self) -> int:
        """``last_offset + 1``: the HW an acks=-1 produce waits for."""
        return self.last_offset + 1


def append_as_leader(
    state: ReplicationState, acks: int, record_count: int, now_ms: int
) -> tuple[ReplicationState, AppendOutcome]:
    """``appendRecordsToLeader``: INVALID_REQUIRED_ACKS unless ``acks`` is 0, 1 or -1;
    NOT_LEADER_OR_FOLLOWER on a non-leader; NOT_ENOUGH_REPLICAS for ``acks=-1`` when the ISR is
    smaller than the effective min ISR (checked before the append; acks 0/1 are never gated).
    Then the LEO advances by ``record_count`` and the HW is re-evaluated."""
    if acks not in (0, 1, -1):
        return state, AppendOutcome("INVALID_REQUIRED_ACKS")
    if not state.is_leader:
        return state, AppendOutcome("NOT_LEADER_OR_FOLLOWER")
    if acks == -1 and _under_min_isr(state):
        return state, AppendOutcome("NOT_ENOUGH_REPLICAS")
    base = state.leo
    st = leader_log_end_moved(state, base + record_count, now_ms)
    return st, AppendOutcome("NONE", base, base + record_count - 1)


def check_enough_replicas_reach_offset(state: ReplicationState, required_offset: int) -> tuple[bool, str]:
    """``checkEnoughReplicasReachOffset`` for an acks=-1 produce: not leader →
    ``(True, NOT_LEADER_OR_FOLLOWER)``; HW reached with enough replicas → ``(True, NONE)``; HW
    reached with too few → ``(True, NOT_ENOUGH_REPLICAS_AFTER_APPEND)``; else ``(False, NONE)``
    (keep waiting)."""
    if not state.is_leader:
        return True, "NOT_LEADER_OR_FOLLOWER"
    if state.hw >= required_offset:
        if effective_min_isr(state) <= len(state.maximal_isr):
            return True, "NONE"
        return True, "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
    return False, "NONE"


def update_follower_fetch(
    state: ReplicationState, replica_id: int, fetch_offset: int, now_ms: int, current_leader_epoch: int = -1
) -> tuple[ReplicationState, str, tuple[int, ...] | None]:
    """A follower fetched at ``fetch_offset`` (its LEO). Checks the epoch
    (FENCED/UNKNOWN_LEADER_EPOCH), NOT_LEADER_OR_FOLLOWER, and that ``replica_id`` is a replica.
    Updates the replica (``Replica.updateFetchState``: caught up now if at the leader's LEO, or at
    the previous fetch time if it reached the LEO of its previous fetch), proposes an ISR expansion
    when the replica is not in the ISR, is ISR-eligible (not in ``ineligible``), and
    ``fetch_offset >= HW`` and ``>= leader epoch start offset`` (the addition joins
    ``pending_isr``, i.e. the maximal ISR, at once; Kafka ``Partition.canAddReplicaToIsr``), then
    advances the HW. Returns ``(state, error, proposed_isr_or_None)``."""
    err = check_leader_epoch(state.leadership.leader_epoch, current_leader_epoch)
    if err != "NONE":
        return state, err, None
    if not state.is_leader:
        return state, "NOT_LEADER_OR_FOLLOWER", None
    r = state.remote(replica_id)
    if r is None:
        return state, "NOT_LEADER_OR_FOLLOWER", None
    caught = r.last_caught_up_ms
    if fetch_offset >= state.leo:
        caught = max(caught, now_ms)
    elif fetch_offset >= r.last_fetch_leader_leo >= 0:
        caught = max(caught, r.last_fetch_ms)
    st = state._with_remote(ReplicaState(replica_id, fetch_offset, caught, state.leo, now_ms))
    proposal = None
    if (
        replica_id not in st.maximal_isr
        and replica_id not in st.ineligible
        and fetch_offset >= st.hw
        and fetch_offset >= st.leader_epoch_start_offset
    ):
        proposal = st.leadership.isr + (replica_id,)
        st = replace(st, pending_isr=st.pending_isr + (replica_id,))
    return maybe_increment_hw(st, now_ms), "NONE", proposal


def maybe_shrink_isr(state: ReplicationState, now_ms: int) -> tuple[ReplicationState, tuple[int, ...] | None]:
    """``getOutOfSyncReplicas``: ISR members other than the leader that are not caught up within
    ``replica.lag.time.max.ms``. Returns the proposed smaller ISR (or ``None``); the state is
    unchanged until :func:`commit_isr`."""
    if not state.is_leader:
        return state, None
    out = {
        r.broker_id
        for r in state.remotes
        if r.broker_id in state.leadership.isr and not r.is_caught_up(state.leo, now_ms, state.replica_lag_time_max_ms)
    }
    if not out:
        return state, None
    return state, tuple(b for b in state.leadership.isr if b not in out)


def commit_isr(state: ReplicationState, isr: Sequence[int], now_ms: int) -> ReplicationState:
    """The controller committed an ISR change (AlterPartition response): the ISR is replaced,
    the partition epoch bumped, pending additions cleared, and the HW re-evaluated."""
    lead = state.leadership.change(isr=tuple(isr))
    return maybe_increment_hw(replace(state, leadership=lead, pending_isr=()), now_ms)


def check_produce(p: PartitionLeadership, broker_id: int, client_leader_epoch: int, topic: str, partition: int) -> tuple[str, str]:
    """Route and fence a produce: ``(error, message)``. No leader → LEADER_NOT_AVAILABLE; an epoch
    check first (FENCED_LEADER_EPOCH "client epoch X < current epoch Y for t/p", or
    UNKNOWN_LEADER_EPOCH); then NOT_LEADER_OR_FOLLOWER naming the leader when this broker does not
    lead (no proxying)."""
    if p.leader == NO_LEADER:
        return "LEADER_NOT_AVAILABLE", f"No leader for {topic}/{partition}"
    err = check_leader_epoch(p.leader_epoch, client_leader_epoch)
    if err == "FENCED_LEADER_EPOCH":
        return err, f"client epoch {client_leader_epoch} < current epoch {p.leader_epoch} for {topic}/{partition}"
    if err == "UNKNOWN_LEADER_EPOCH":
        return err, f"client epoch {client_leader_epoch} > current epoch {p.leader_epoch} for {topic}/{partition}"
    if p.leader != broker_id:
        return "NOT_LEADER_OR_FOLLOWER", f"Not leader for partition {partition}. Leader is node {p.leader}"
    return "NONE", ""


def check_fetch_offset(state: ReplicationState, offset: int, from_follower: bool = False) -> str:
    """A fetch at ``offset``: below the log start offset, or beyond the HW (consumers) / LEO
    (followers) → OFFSET_OUT_OF_RANGE (not retriable; the consumer applies
    ``auto.offset.reset``). Reading exactly at the HW/LEO is allowed (it waits)."""
    end = state.leo if from_follower else state.hw
    if offset < state.log_start_offset or offset > end:
        return "OFFSET_OUT_OF_RANGE"
    return "NONE"


def delete_records(state: ReplicationState, offset: int) -> tuple[ReplicationState, str]:
    """DeleteRecords on the leader ([K-1.0] ``deleteRecordsOnLeader``): ``-1`` means the HW; the
    log start offset advances only to ``offset <= HW`` (OFFSET_OUT_OF_RANGE otherwise, and for
    negative offsets); it never moves backwards."""
    if not state.is_leader:
        return state, "NOT_LEADER_OR_FOLLOWER"
    target = state.hw if offset == -1 else offset
    if target < 0 or target > state.hw:
        return state, "OFFSET_OUT_OF_RANGE"
    if target > state.log_start_offset:
        state = replace(state, log_start_offset=target)
    return state, "NONE"
