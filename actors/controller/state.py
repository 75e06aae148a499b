"""The controller's whole state and its decider (pure): topics + configs + partitions + frontiers.

``decide(state, command, now_ms) -> Decision | Rejected`` and ``evolve(state, event) -> state``
over :class:`ControllerState`, composing :mod:`actors.controller.topics` (Kafka's metadata rules)
and :mod:`actors.controller.frontiers` (Materialize's storage collections):

* creating a topic registers one collection per partition (``<topic_id>:<p>``, since ``{0}``,
  upper ``{0}``, a :class:`~actors.controller.frontiers.Retention` policy from the topic's
  effective ``retention.ms``/``retention.bytes``/``cleanup.policy``) and, for
  ``remote.storage.enable=true`` topics, one for the local tier (``<topic_id>:<p>:local``, policy
  from ``local.retention.ms``/``local.retention.bytes``, ``-2`` meaning "as retention.*");
* altering retention configs (topic or broker) re-derives those policies, and so does
  :class:`ReconcilePolicies` at start-up; a policy set by hand (``SetReadPolicies`` with a
  non-retention policy, e.g. ``LagWrites`` or ``ValidFrom``) is left alone;
* deleting a topic requests the drop of its collections (they vanish once holds drain);
* hold commands of holders named ``share:<group>`` are applied only for topics with the Shoal
  extension ``share.groups.hold.retention=true`` (otherwise ignored: Kafka never lets readers hold
  retention); releases are always applied, also those inside an ignored command (a hold moved
  after the topic opted out is released, not kept);
* partition reassignment (KIP-455): :class:`AlterPartitionReassignments` starts, replaces or
  cancels reassignments with the rules of :mod:`actors.controller.reassignment`
  (``ReplicationControlManager.alterPartitionReassignments``), an AlterPartition whose ISR
  change lets a reassignment complete commits the target in the same ``PartitionChanged``
  (``PartitionChangeBuilder.completeReassignmentIfNeeded``), and
  :func:`list_partition_reassignments` answers ListPartitionReassignments from the state;
* SCRAM credentials (KIP-554) are decided by :mod:`actors.controller.scram`
  (:class:`~actors.controller.scram.AlterUserScramCredentials` → ``UserScramCredentialSet`` /
  ``UserScramCredentialRemoved``, ``Decision.reply`` the per-user results) and folded into
  ``ControllerState.scram``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from actors.controller import acls as ac
from actors.controller import cluster as cl
from actors.controller import frontiers as fr
from actors.controller import reassignment as rz
from actors.controller import replication as rep
from actors.controller import scram as sc
from actors.controller import topics as tp
from events.controller import (
    AclsCreated,
    AclsDeleted,
    BrokerConfigsAltered,
    BrokerFenced,
    BrokerRegistered,
    BrokerUnfenced,
    ControllerElected,
    CollectionSpec,
    CollectionsCreated,
    CollectionsDropRequested,
    PartitionChanged,
    PartitionsCreated,
    PolicyChange,
    ProducerIdsAllocated,
    ReadPoliciesSet,
    TopicConfigsAltered,
    TopicCreated,
    TopicDeleted,
    UserScramCredentialRemoved,
    UserScramCredentialSet,
    config_map,
)

__all__ = [
    "AllocateProducerIds",
    "PRODUCER_ID_BLOCK_SIZE",
    "AlterPartition",
    "AlterPartitionReassignments",
    "OngoingReassignment",
    "BrokerFailed",
    "ControllerState",
    "Decision",
    "ElectLeaders",
    "PartitionResult",
    "ReconcilePolicies",
    "SHARE_HOLDER_PREFIX",
    "UpdatePartitionLeader",
    "decide",
    "evolve",
    "list_partition_reassignments",
    "policies_for_topic",
]

SHARE_HOLDER_PREFIX = "share:"

#: Kafka ``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``: producer ids handed to a broker at a time
PRODUCER_ID_BLOCK_SIZE = 1000
_MAX_PRODUCER_ID = 2**63 - 1


@dataclass(frozen=True)
class AllocateProducerIds:
    """A broker needs a new block of producer ids (Kafka's AllocateProducerIds RPC, decided by
    ``ProducerIdControlManager.generateNextProducerId``). Reply: ``(first_producer_id,
    block_size)``; rejected with UNKNOWN_SERVER_ERROR once the int64 id space is exhausted."""

    broker_id: int


@dataclass
class Decision:
    """What a command decided: ``events`` to append (in order) and the ``reply`` payload (per
    resource results for batch requests, or ``None``)."""

    events: list[Any]
    reply: Any = None


@dataclass(frozen=True)
class ReconcilePolicies:
    """Re-derive every topic collection's read policy from the current effective configs (after
    a restart with a changed static broker config, e.g. ``log.retention.hours``)."""


@dataclass(frozen=True)
class ElectLeaders:
    """ElectLeaders for ``partitions`` (``(topic, partition)``; ``None`` = all) with
    ``election`` ``"preferred"`` or ``"unclean"``; ``live`` brokers (default: all registered)."""

    partitions: tuple[tuple[str, int], ...] | None = None
    election: str = "preferred"
    live: tuple[int, ...] | None = None


@dataclass(frozen=True)
class BrokerFailed:
    """Broker ``broker_id`` was fenced or died: leaders move, ISRs shrink (R13)."""

    broker_id: int


@dataclass(frozen=True)
class UpdatePartitionLeader:
    """Set ``topic``/``partition``'s leader with an explicit new ``leader_epoch`` (R11)."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int


@dataclass(frozen=True)
class AlterPartition:
    """AlterPartition from leader ``broker_id``: the new ``isr`` with the epochs it saw."""

    topic: str
    partition: int
    broker_id: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True)
class AlterPartitionReassignments:
    """AlterPartitionReassignments (API 45, KIP-455): ``reassignments`` as ``(topic, partition,
    replicas)``, ``replicas`` the target in assignment order or ``None`` to cancel the running
    reassignment. Decided per partition in order (a later entry sees the earlier ones' effect);
    all accepted changes are appended together (Kafka's ``ControllerResult.atomicOf``). Reply: a
    :class:`PartitionResult` per entry (request order) with NONE, UNKNOWN_TOPIC_OR_PARTITION,
    INVALID_REPLICA_ASSIGNMENT or NO_REASSIGNMENT_IN_PROGRESS (the semantics of
    ``ReplicationControlManager.alterPartitionReassignment``)."""

    reassignments: tuple[tuple[str, int, tuple[int, ...] | None], ...]


@dataclass(frozen=True)
class OngoingReassignment:
    """One reassigning partition as ListPartitionReassignments (API 46) lists it: the interim
    ``replicas``, ``adding`` and ``removing`` (Kafka's ``OngoingPartitionReassignment``)."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@dataclass(frozen=True)
class PartitionResult:
    """Per-partition result of ElectLeaders/AlterPartition/UpdatePartitionLeader."""

    topic: str
    partition: int
    error: str = "NONE"
    message: str | None = None
    leader: int = -1
    leader_epoch: int = -1
    #: the ISR and partition epoch after the command (AlterPartition answers them; () / -1 elsewhere)
    isr: tuple[int, ...] = ()
    partition_epoch: int = -1


class ControllerState:
    """Topics (:class:`~actors.controller.topics.TopicsState`) and frontiers
    (:class:`~actors.controller.frontiers.FrontierState`), folded from the ``controller`` stream.
    ``version`` is the stream version folded so far."""

    def __init__(self, static_config: Mapping[str, str] | None = None, brokers: Sequence[int] = (1,)) -> None:
        self.topics = tp.TopicsState(static_config, brokers)
        self.frontiers = fr.FrontierState()
        #: the first producer id of the next block (every id below it was handed out)
        self.next_producer_id = 0
        #: SCRAM credentials (KIP-554), :mod:`actors.controller.scram`
        self.scram = sc.ScramState()
        #: the ACLs (CreateAcls/DeleteAcls), indexed for authorization
        self.acls = ac.AclSet()
        #: the registered brokers and the active controller (a cluster on a shared log)
        self.cluster = cl.ClusterState()
        self.version = 0

    def to_dict(self) -> dict[str, Any]:
        """The evented state as a JSON-able dict (snapshots; equality after restart). ``scram``
        (salts and derived keys, base64; never a password) is present once a credential exists,
        ``acls`` (sorted) once an ACL exists, so snapshots of logs without them keep their
        earlier shape."""
        d = {"topics": self.topics.to_dict(), "frontiers": self.frontiers.to_dict(), "next_producer_id": self.next_producer_id}
        if self.scram.credentials:
            d["scram"] = self.scram.to_dict()
        if len(self.acls):
            d["acls"] = self.acls.to_list()
        if self.cluster:
            d["cluster"] = self.cluster.to_dict()
        return d

    def load_dict(self, d: Mapping[str, Any], version: int) -> None:
        """Replace the evented state with a :meth:`to_dict` snapshot folded up to ``version``."""
        self.topics.load_dict(d["topics"])
        self.frontiers = fr.FrontierState.from_dict(d["frontiers"])
        self.next_producer_id = int(d.get("next_producer_id", 0))  # snapshots before producer ids: none handed out
        self.scram = sc.ScramState.from_dict(d.get("scram"))  # absent: no credential (or a snapshot before SCRAM)
        self.acls = ac.AclSet.from_list(d.get("acls", ()))  # absent: no ACL (or a snapshot before ACLs)
        self.cluster = cl.ClusterState.from_dict(d.get("cluster"))  # absent: a single node
        if self.cluster.brokers:
            self.topics.brokers = self.cluster.live()
        self.version = version

    def collection_topic(self, collection_id: str) -> tp.Topic | None:
        """The live topic a partition/local collection belongs to (``None`` for others)."""
        tid = collection_id.split(":", 1)[0]
        return self.topics.topic_by_id(tid)


def policies_for_topic(configs: Mapping[str, str | None]) -> tuple[fr.ReadPolicy, fr.ReadPolicy]:
    """The read policies a topic's effective configs give ``(partition log, local tier)``:
    Kafka's retention (``retention.ms``, ``retention.bytes``; deletion only with
    ``cleanup.policy`` containing ``delete``) and the local-tier retention (``local.retention.*``,
    ``-2`` = same as ``retention.*``, ``LogConfig.localRetentionMs/Bytes``; under
    ``remote.log.copy.disable=true`` validation already forces them equal)."""
    rms = int(configs["retention.ms"] or -1)
    rbytes = int(configs["retention.bytes"] or -1)
    delete = "delete" in str(configs["cleanup.policy"] or "").split(",")
    lms = int(configs["local.retention.ms"] or -2)
    lbytes = int(configs["local.retention.bytes"] or -2)
    local = fr.Retention(rms if lms == -2 else lms, rbytes if lbytes == -2 else lbytes, delete)
    return fr.Retention(rms, rbytes, delete), local


def _topic_collections(state: ControllerState, ev: TopicCreated | PartitionsCreated) -> list[CollectionSpec]:
    """The collections of the partitions ``ev`` creates (a new topic's, or partitions added by
    CreatePartitions): one per partition, plus its local-tier collection on a tiered topic
    (``remote.storage.enable``), with the topic's retention read policies."""
    if isinstance(ev, PartitionsCreated):
        eff = tp.effective_topic_config(state.topics, ev.name)
    else:
        eff = tp.effective_topic_config(state.topics, ev.name, config_map(ev.configs))
    part_policy, local_policy = policies_for_topic(eff)
    remote = str(eff["remote.storage.enable"]).lower() == "true"
    specs = []
    for p in ev.partitions:
        specs.append(CollectionSpec(fr.partition_collection_id(ev.topic_id, p.partition), 0, 0, fr.policy_to_json(part_policy), ()))
        if remote:
            specs.append(CollectionSpec(fr.local_collection_id(ev.topic_id, p.partition), 0, 0, fr.policy_to_json(local_policy), ()))
    return specs


def _policy_changes(before: ControllerState, after_topics: tp.TopicsState, now_ms: int) -> list[PolicyChange]:
    """Policies to re-derive after a config change (compares old and new effective configs)."""
    out: list[PolicyChange] = []
    cols = before.frontiers.collections
    for name, topic in after_topics.topics.items():
        eff = tp.effective_topic_config(after_topics, name)
        part_policy, local_policy = policies_for_topic(eff)
        for p in topic.partitions:
            for cid, pol in (
                (fr.partition_collection_id(topic.topic_id, p.partition), part_policy),
                (fr.local_collection_id(topic.topic_id, p.partition), local_policy),
            ):
                c = cols.get(cid)
                if c is None or c.policy == pol or c.implied is None or not isinstance(c.policy, fr.Retention):
                    continue  # a policy set by hand (SetReadPolicies) is left alone
                new = pol.frontier(c.upper, c.segments, now_ms)
                if not fr.frontier_le(c.implied, new):
                    new = c.implied
                out.append(PolicyChange(cid, fr.policy_to_json(pol), new))
    return out


def _scratch_topics(state: ControllerState, events: Sequence[Any]) -> tp.TopicsState:
    t = copy.deepcopy(state.topics)
    for e in events:
        tp.evolve(t, e)
    return t


def _share_gate(state: ControllerState, holder: str, cids: Sequence[str], positive: bool) -> bool:
    """True if a share group's hold may be applied to all ``cids``."""
    if not holder.startswith(SHARE_HOLDER_PREFIX) or not positive:
        return True
    for cid in cids:
        t = state.collection_topic(cid)
        if t is None:
            continue  # unknown collection: the frontier decider answers CollectionMissing
        eff = tp.effective_topic_config(state.topics, t.name)
        if str(eff["share.groups.hold.retention"]).lower() != "true":
            return False
    return True


def decide(state: ControllerState, cmd: Any, now_ms: int) -> Decision | fr.Rejected:
    """Decide any controller command at ``now_ms``. Topic/config commands answer per resource
    (``Decision.reply`` holds the results list); frontier commands answer a :class:`Rejected` or a
    :class:`Decision` (``reply`` ``"IGNORED"`` for a share hold on a topic without
    ``share.groups.hold.retention``). Never mutates ``state``. Raises ``TypeError`` for an
    unknown command."""
    if isinstance(cmd, tp.CreateTopics):
        events, results = tp.decide_create_topics(state.topics, cmd, now_ms)
        specs: list[CollectionSpec] = []
        for ev in events:
            specs.extend(_topic_collections(state, ev))
        if specs:
            events.append(CollectionsCreated(tuple(specs)))
        return Decision(events, results)
    if isinstance(cmd, tp.CreatePartitions):
        events, results = tp.decide_create_partitions(state.topics, cmd, now_ms)
        specs = [spec for ev in events for spec in _topic_collections(state, ev)]
        if specs:
            events.append(CollectionsCreated(tuple(specs)))
        return Decision(events, results)
    if isinstance(cmd, tp.DeleteTopics):
        events, results = tp.decide_delete_topics(state.topics, cmd, now_ms)
        drop: list[str] = []
        for ev in events:
            prefix = ev.topic_id + ":"
            drop.extend(cid for cid in state.frontiers.collections if cid.startswith(prefix))
        if drop:
            events.append(CollectionsDropRequested(tuple(sorted(drop))))
        return Decision(events, results)
    if isinstance(cmd, tp.IncrementalAlterConfigs):
        events, results = tp.decide_alter_configs(state.topics, cmd, now_ms)
        if events:
            changes = _policy_changes(state, _scratch_topics(state, events), now_ms)
            if changes:
                events.append(ReadPoliciesSet(tuple(changes), now_ms))
        return Decision(events, results)
    if isinstance(cmd, AllocateProducerIds):
        first = state.next_producer_id
        if first > _MAX_PRODUCER_ID - PRODUCER_ID_BLOCK_SIZE:
            return fr.Rejected("ProducerIdsExhausted", "Exhausted all producerIds as the next block's end producerId would exceed the int64 range", "UNKNOWN_SERVER_ERROR")
        return Decision([ProducerIdsAllocated(cmd.broker_id, first, PRODUCER_ID_BLOCK_SIZE)], (first, PRODUCER_ID_BLOCK_SIZE))
    if isinstance(cmd, sc.AlterUserScramCredentials):
        events, results = sc.decide_alter(state.scram, cmd)
        return Decision(events, results)
    if isinstance(cmd, ac.CreateAcls):
        acl_events, acl_results = ac.decide_create_acls(state.acls, cmd)
        return Decision(list(acl_events), acl_results)
    if isinstance(cmd, ac.DeleteAcls):
        del_events, del_results = ac.decide_delete_acls(state.acls, cmd)
        return Decision(list(del_events), del_results)
    if isinstance(cmd, ReconcilePolicies):
        changes = _policy_changes(state, state.topics, now_ms)
        return Decision([ReadPoliciesSet(tuple(changes), now_ms)] if changes else [], None)
    if isinstance(cmd, ElectLeaders):
        return _decide_elect(state, cmd)
    if isinstance(cmd, BrokerFailed):
        return _decide_broker_failed(state, cmd)
    if isinstance(cmd, UpdatePartitionLeader):
        return _decide_leader_update(state, cmd)
    if isinstance(cmd, AlterPartition):
        return _decide_alter_partition(state, cmd)
    if isinstance(cmd, AlterPartitionReassignments):
        return _decide_reassignments(state, cmd)
    if isinstance(cmd, cl.RegisterBroker):
        return _decide_register(state, cmd)
    if isinstance(cmd, cl.BrokerHeartbeat):
        return _decide_heartbeat(state, cmd)
    if isinstance(cmd, cl.FenceBrokers):
        return Decision(_fence(state, cmd.broker_ids, cmd.reason), None)
    if isinstance(cmd, cl.ClaimController):
        return _decide_claim(state, cmd)
    if isinstance(cmd, fr.ChangeReadHolds):
        positive = any(d > 0 for _, _, d in cmd.changes)
        if not _share_gate(state, cmd.holder, [c for c, _, _ in cmd.changes], positive):
            # not opted in (any more): the new holds are ignored, releases still apply so that a
            # hold placed while the topic opted in cannot pin its since forever
            return _ignored(state, fr.ChangeReadHolds(cmd.holder, tuple(c for c in cmd.changes if c[2] < 0)), now_ms)
    elif isinstance(cmd, fr.AcquireReadHolds):
        if not _share_gate(state, cmd.holder, cmd.collection_ids, True):
            return Decision([], "IGNORED")
    elif isinstance(cmd, fr.DowngradeReadHold):
        if not _share_gate(state, cmd.holder, [cmd.collection_id], cmd.frontier is not None):
            return _ignored(state, fr.DowngradeReadHold(cmd.holder, cmd.collection_id, None), now_ms)
    res = fr.decide(state.frontiers, cmd, now_ms)
    if isinstance(res, fr.Rejected):
        return res
    return Decision(res, None)


def _ignored(state: ControllerState, release: fr.ChangeReadHolds | fr.DowngradeReadHold, now_ms: int) -> Decision | fr.Rejected:
    """A share hold refused by the opt-in gate: apply only ``release`` (the holder's releases),
    reply ``"IGNORED"``."""
    if isinstance(release, fr.ChangeReadHolds) and not release.changes:
        return Decision([], "IGNORED")
    res = fr.decide(state.frontiers, release, now_ms)
    return res if isinstance(res, fr.Rejected) else Decision(res, "IGNORED")


def _partition(state: ControllerState, topic: str, partition: int) -> tuple[tp.Topic, tp.Partition] | PartitionResult:
    t = state.topics.topics.get(topic)
    if t is None:
        return PartitionResult(topic, partition, "UNKNOWN_TOPIC_OR_PARTITION", f"No such topic as {topic}")
    if not 0 <= partition < len(t.partitions):
        return PartitionResult(topic, partition, "UNKNOWN_TOPIC_OR_PARTITION", f"No such partition as {topic}-{partition}")
    return t, t.partitions[partition]


def _lead(p: tp.Partition) -> rep.PartitionLeadership:
    return rep.PartitionLeadership(p.replicas, p.isr, p.leader, p.leader_epoch, p.partition_epoch)


def _changed(t: tp.Topic, idx: int, new: rep.PartitionLeadership | rz.Registration, reason: str) -> PartitionChanged:
    """The ``PartitionChanged`` that takes partition ``idx`` of ``t`` to ``new``; a
    :class:`~actors.controller.reassignment.Registration` whose assignment (replicas, adding,
    removing) differs from the partition's carries all three, else none (``None`` = unchanged)."""
    assignment: tuple[Any, Any, Any] = (None, None, None)
    if isinstance(new, rz.Registration):
        p = t.partitions[idx]
        if (new.replicas, new.adding, new.removing) != (p.replicas, p.adding, p.removing):
            assignment = (tuple(new.replicas), tuple(new.adding), tuple(new.removing))
    return PartitionChanged(t.topic_id, idx, new.leader, tuple(new.isr), new.leader_epoch, new.partition_epoch, reason, *assignment)


def _registration(p: tp.Partition) -> rz.Registration:
    return rz.Registration(p.replicas, p.isr, p.leader, p.leader_epoch, p.partition_epoch, p.adding, p.removing)


def _registered(state: ControllerState) -> set[int]:
    """The registered brokers (fenced ones included): a cluster's registrations, or the single
    node's id (``TopicsState.brokers``) when no broker ever registered."""
    return set(state.cluster.brokers) | set(state.topics.brokers)


def _decide_reassignments(state: ControllerState, cmd: AlterPartitionReassignments) -> Decision:
    """AlterPartitionReassignments (``ReplicationControlManager.alterPartitionReassignments``):
    per entry, an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION; ``None`` replicas
    cancel (NO_REASSIGNMENT_IN_PROGRESS when none runs; INVALID_REPLICA_ASSIGNMENT when the
    revert would need an unclean election the topic does not allow); a target is validated
    (INVALID_REPLICA_ASSIGNMENT) and planned from the current (possibly interim) replicas. Each
    accepted change is one ``PartitionChanged`` (none when nothing changes, e.g. a target equal
    to the replicas)."""
    live = state.topics.brokers
    registered = _registered(state)
    scratch: dict[tuple[str, int], rz.Registration] = {}
    events: list[Any] = []
    results: list[PartitionResult] = []
    for topic, idx, target in cmd.reassignments:
        t = state.topics.topics.get(topic)
        if t is None:
            results.append(PartitionResult(topic, idx, "UNKNOWN_TOPIC_OR_PARTITION", f"Unable to find a topic named {topic}."))
            continue
        if not 0 <= idx < len(t.partitions):
            results.append(PartitionResult(topic, idx, "UNKNOWN_TOPIC_OR_PARTITION", f"Unable to find partition {topic}:{idx}."))
            continue
        reg = scratch.get((topic, idx)) or _registration(t.partitions[idx])
        unclean = _unclean_enabled(state, topic)
        if target is None:
            if not reg.reassigning:
                results.append(PartitionResult(topic, idx, "NO_REASSIGNMENT_IN_PROGRESS", "No partition reassignment is in progress."))
                continue
            replicas, isr, was_unclean = rz.revert(reg)
            if was_unclean and not unclean:
                msg = f"Unable to revert partition assignment for {topic}:{idx} because it would require an unclean leader election."
                results.append(PartitionResult(topic, idx, "INVALID_REPLICA_ASSIGNMENT", msg))
                continue
            new = rz.change(reg, live, replicas=replicas, isr=isr, adding=(), removing=(), unclean=unclean)
            reason = "reassign_cancel"
        else:
            problem = rz.validate_target(target, registered)
            if problem is not None:
                results.append(PartitionResult(topic, idx, "INVALID_REPLICA_ASSIGNMENT", problem))
                continue
            replicas, adding, removing = rz.plan(reg.replicas, target)
            # Kafka sets only what the plan changes: an empty adding/removing keeps the running one
            new = rz.change(reg, live, replicas=replicas, adding=adding or None, removing=removing or None)
            reason = "reassign"
        if new is not reg:
            scratch[(topic, idx)] = new
            events.append(_changed(t, idx, new, reason))
        results.append(PartitionResult(topic, idx, "NONE", None, new.leader, new.leader_epoch, tuple(new.isr), new.partition_epoch))
    return Decision(events, results)


def list_partition_reassignments(state: ControllerState, partitions: Sequence[tuple[str, int]] | None = None) -> list[OngoingReassignment]:
    """ListPartitionReassignments (``ReplicationControlManager.listPartitionReassignments``):
    every reassigning partition (sorted by topic and partition) when ``partitions`` is ``None``,
    else those of ``partitions`` that are reassigning (unknown topics and partitions are skipped
    silently, as Kafka does)."""
    out: list[OngoingReassignment] = []
    if partitions is None:
        wanted = [(n, p.partition) for n, t in sorted(state.topics.topics.items()) for p in t.partitions]
    else:
        wanted = list(partitions)
    for topic, idx in wanted:
        t = state.topics.topics.get(topic)
        if t is None or not 0 <= idx < len(t.partitions):
            continue
        p = t.partitions[idx]
        if p.reassigning:
            out.append(OngoingReassignment(topic, idx, tuple(p.replicas), tuple(p.adding), tuple(p.removing)))
    return out


def _decide_elect(state: ControllerState, cmd: ElectLeaders) -> Decision:
    live = cmd.live if cmd.live is not None else state.topics.brokers
    targets = cmd.partitions
    if targets is None:
        targets = tuple((n, p.partition) for n, t in sorted(state.topics.topics.items()) for p in t.partitions)
    events: list[Any] = []
    results: list[PartitionResult] = []
    for topic, idx in targets:
        found = _partition(state, topic, idx)
        if isinstance(found, PartitionResult):
            results.append(found)
            continue
        t, p = found
        lead = _lead(p)
        if cmd.election == "preferred" and lead.leader == lead.preferred_leader:
            results.append(PartitionResult(topic, idx, "ELECTION_NOT_NEEDED", None, p.leader, p.leader_epoch))
            continue
        leader, _unclean = rep.elect_leader(lead, live, "preferred" if cmd.election == "preferred" else "online", cmd.election == "unclean")
        if cmd.election == "preferred" and leader != lead.preferred_leader:
            results.append(PartitionResult(topic, idx, "PREFERRED_LEADER_NOT_AVAILABLE", None, p.leader, p.leader_epoch))
            continue
        if leader == rep.NO_LEADER:
            results.append(PartitionResult(topic, idx, "ELIGIBLE_LEADERS_NOT_AVAILABLE", None, p.leader, p.leader_epoch))
            continue
        isr = lead.isr if leader in lead.isr else (leader,)
        new = lead.change(leader=leader, isr=isr)
        if new is lead:
            results.append(PartitionResult(topic, idx, "ELECTION_NOT_NEEDED", None, p.leader, p.leader_epoch))
            continue
        events.append(_changed(t, idx, new, cmd.election))
        results.append(PartitionResult(topic, idx, "NONE", None, new.leader, new.leader_epoch))
    return Decision(events, results)


def _decide_broker_failed(state: ControllerState, cmd: BrokerFailed) -> Decision:
    live = [b for b in state.topics.brokers if b != cmd.broker_id]
    events: list[Any] = []
    results: list[PartitionResult] = []
    for name, t in sorted(state.topics.topics.items()):
        for p in t.partitions:
            if cmd.broker_id not in p.replicas:
                continue
            lead = _lead(p)
            new = rep.handle_broker_failure(lead, cmd.broker_id, live)
            if new is lead:
                continue
            events.append(_changed(t, p.partition, new, "broker_failed"))
            err = "NONE" if new.leader != rep.NO_LEADER else "LEADER_NOT_AVAILABLE"
            results.append(PartitionResult(name, p.partition, err, None, new.leader, new.leader_epoch))
    return Decision(events, results)


def _decide_leader_update(state: ControllerState, cmd: UpdatePartitionLeader) -> Decision:
    found = _partition(state, cmd.topic, cmd.partition)
    if isinstance(found, PartitionResult):
        return Decision([], [found])
    t, p = found
    new, err = rep.update_partition_leader(_lead(p), cmd.leader, cmd.leader_epoch)
    if err != "NONE":
        msg = f"Partition {cmd.topic}-{cmd.partition} stale epoch {cmd.leader_epoch} <= current {p.leader_epoch}"
        return Decision([], [PartitionResult(cmd.topic, cmd.partition, err, msg, p.leader, p.leader_epoch)])
    return Decision([_changed(t, cmd.partition, new, "leader_update")], [PartitionResult(cmd.topic, cmd.partition, "NONE", None, new.leader, new.leader_epoch)])


def _decide_alter_partition(state: ControllerState, cmd: AlterPartition) -> Decision:
    found = _partition(state, cmd.topic, cmd.partition)
    if isinstance(found, PartitionResult):
        return Decision([], [found])
    t, p = found
    lead = _lead(p)
    new, err = rep.alter_partition(lead, cmd.broker_id, cmd.leader_epoch, cmd.partition_epoch, cmd.isr, state.topics.brokers)
    if err != "NONE":
        return Decision([], [PartitionResult(cmd.topic, cmd.partition, err, None, p.leader, p.leader_epoch)])
    if p.reassigning:
        return _alter_reassigning(state, t, p, cmd)
    if new is lead:
        return Decision([], [PartitionResult(cmd.topic, cmd.partition, "NONE", None, p.leader, p.leader_epoch, tuple(p.isr), p.partition_epoch)])
    reason = "isr_expand" if len(new.isr) > len(lead.isr) else "isr_shrink"
    result = PartitionResult(cmd.topic, cmd.partition, "NONE", None, new.leader, new.leader_epoch, tuple(new.isr), new.partition_epoch)
    return Decision([_changed(t, cmd.partition, new, reason)], [result])


def _alter_reassigning(state: ControllerState, t: tp.Topic, p: tp.Partition, cmd: AlterPartition) -> Decision:
    """A valid AlterPartition on a reassigning partition (``ReplicationControlManager
    .alterPartition`` → ``PartitionChangeBuilder``): the new ISR may complete the reassignment
    (replicas := target, ISR without the removed replicas, a removed leader replaced by the first
    target replica in the ISR, leader epoch bumped). When leadership moved away from the sender
    the answer is NEW_LEADER_ELECTED, and the change is written all the same."""
    reg = _registration(p)
    new = rz.change(reg, state.topics.brokers, isr=cmd.isr)
    if new is reg:
        return Decision([], [PartitionResult(cmd.topic, cmd.partition, "NONE", None, p.leader, p.leader_epoch, tuple(p.isr), p.partition_epoch)])
    if not new.reassigning:
        reason = "reassign_complete"
    else:
        reason = "isr_expand" if len(new.isr) > len(reg.isr) else "isr_shrink"
    err = "NONE" if new.leader == cmd.broker_id else "NEW_LEADER_ELECTED"
    result = PartitionResult(cmd.topic, cmd.partition, err, None, new.leader, new.leader_epoch, tuple(new.isr), new.partition_epoch)
    return Decision([_changed(t, cmd.partition, new, reason)], [result])


def _decide_register(state: ControllerState, cmd: cl.RegisterBroker) -> Decision | fr.Rejected:
    """BrokerRegistration (``ClusterControlManager.registerBroker``): reply ``(error, epoch)``."""
    cs = state.cluster
    old = cs.brokers.get(cmd.broker_id)
    if old is not None and old.incarnation_id == cmd.incarnation_id:
        return Decision([], (None, old.broker_epoch))  # a retried registration
    if old is not None and not old.fenced and cmd.session_alive:
        msg = f"Another broker is registered with that broker id {cmd.broker_id} and its session has not expired."
        return fr.Rejected("DuplicateBrokerRegistration", msg, "DUPLICATE_BROKER_REGISTRATION")
    events: list[Any] = []
    if old is not None and not old.fenced:
        events.extend(_fence(state, (cmd.broker_id,), "reregistered"))
    epoch = state.version + len(events) + 1  # the stream version this registration will get
    events.append(BrokerRegistered(cmd.broker_id, cmd.incarnation_id, epoch, tuple(cmd.endpoints), cmd.rack))
    return Decision(events, (None, epoch))


def _decide_heartbeat(state: ControllerState, cmd: cl.BrokerHeartbeat) -> Decision | fr.Rejected:
    """BrokerHeartbeat (``ClusterControlManager``/``ReplicationControlManager``): unfence a fenced
    broker that no longer wants to be fenced and elect it where a partition has no leader and it
    is in the ISR; fence an unfenced one that asks to be. Reply ``(error, is_fenced)``."""
    reg = state.cluster.brokers.get(cmd.broker_id)
    if reg is None:
        return fr.Rejected("BrokerIdNotRegistered", f"Broker {cmd.broker_id} is not registered.", "BROKER_ID_NOT_REGISTERED")
    if reg.broker_epoch != cmd.broker_epoch:
        msg = f"Expected broker epoch {reg.broker_epoch}, but got broker epoch {cmd.broker_epoch}"
        return fr.Rejected("StaleBrokerEpoch", msg, "STALE_BROKER_EPOCH")
    if reg.fenced and not cmd.want_fence:
        events: list[Any] = [BrokerUnfenced(cmd.broker_id, reg.broker_epoch)]
        live = tuple(sorted(set(state.cluster.live()) | {cmd.broker_id}))
        for _name, t in sorted(state.topics.topics.items()):
            for p in t.partitions:
                unclean = _unclean_enabled(state, _name)
                if p.leader != rep.NO_LEADER or (cmd.broker_id not in p.isr and not unclean):
                    continue
                lead = _lead(p)
                leader, was_unclean = rep.elect_leader(lead, live, "online", unclean)
                if leader != rep.NO_LEADER:
                    new = lead.change(leader=leader, isr=(leader,) if was_unclean else None)
                    events.append(_changed(t, p.partition, new, "unclean" if was_unclean else "election"))
        return Decision(events, (None, False))
    if not reg.fenced and cmd.want_fence:
        return Decision(_fence(state, (cmd.broker_id,), "controlled_shutdown"), (None, True))
    return Decision([], (None, reg.fenced))


def _unclean_enabled(state: ControllerState, topic: str) -> bool:
    """The topic's effective ``unclean.leader.election.enable`` (default false)."""
    return str(tp.effective_topic_config(state.topics, topic)["unclean.leader.election.enable"]).lower() == "true"


def _fence(state: ControllerState, broker_ids: Sequence[int], reason: str) -> list[Any]:
    """Events that fence each unfenced broker of ``broker_ids`` and move its partitions' leaders
    (``handleBrokerFenced``: leaders move to the next live ISR member in replica order, the
    broker leaves every ISR unless it is the last member; both bump the leader epoch)."""
    events: list[Any] = []
    live = set(state.cluster.live() or state.topics.brokers)
    scratch = {n: [_lead(p) for p in t.partitions] for n, t in state.topics.topics.items()}
    for b in sorted(set(broker_ids)):
        reg = state.cluster.brokers.get(b)
        if reg is None or reg.fenced:
            continue
        events.append(BrokerFenced(b, reg.broker_epoch, reason))
        live.discard(b)
        for name, t in sorted(state.topics.topics.items()):
            for i, lead in enumerate(scratch[name]):
                if b not in lead.replicas:
                    continue
                new = rep.handle_broker_failure(lead, b, sorted(live))
                if new is not lead:
                    scratch[name][i] = new
                    events.append(_changed(t, i, new, "broker_failed"))
    return events


def _decide_claim(state: ControllerState, cmd: cl.ClaimController) -> Decision | fr.Rejected:
    """A node claims the active controller role over the epoch it saw (see :class:`cl.ClaimController`)."""
    if cmd.seen_epoch != state.cluster.controller_epoch:
        msg = f"The controller epoch moved from {cmd.seen_epoch} to {state.cluster.controller_epoch} (node {state.cluster.controller_id})."
        return fr.Rejected("NotController", msg, "NOT_CONTROLLER")
    events: list[Any] = [ControllerElected(cmd.node_id, state.cluster.controller_epoch + 1)]
    events.extend(_fence(state, tuple(b for b in cmd.fence if b != cmd.node_id), "controller_unreachable"))
    return Decision(events, None)


_TOPIC_EVENTS = (TopicCreated, TopicDeleted, TopicConfigsAltered, BrokerConfigsAltered, PartitionChanged, PartitionsCreated)


def evolve(state: ControllerState, event: Any) -> ControllerState:
    """Apply ``event`` in place (topics or frontiers) and return ``state``."""
    apply(state, event)
    return state


def apply(state: ControllerState, event: Any) -> list[fr.SinceChange]:
    """Apply ``event`` in place; returns the since changes it caused (compaction signals)."""
    if isinstance(event, _TOPIC_EVENTS):
        tp.evolve(state.topics, event)
        return []
    if isinstance(event, ProducerIdsAllocated):
        state.next_producer_id = max(state.next_producer_id, event.first_producer_id + event.block_size)
        return []
    if isinstance(event, (UserScramCredentialSet, UserScramCredentialRemoved)):
        sc.evolve(state.scram, event)
        return []
    if isinstance(event, (AclsCreated, AclsDeleted)):
        ac.evolve(state.acls, event)
        return []
    if isinstance(event, cl.CLUSTER_EVENTS):
        state.cluster.evolve(event)
        if state.cluster.brokers:
            state.topics.brokers = state.cluster.live()
        return []
    return state.frontiers.apply(event)
