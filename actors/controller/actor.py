"""The ControllerActor: owns cluster metadata and storage collections; supervises child actors.

A thin shell over the pure model (:mod:`actors.controller.state`): *receive → decide → append
(persist, wait for durability) → evolve → reply*. It

* recovers its state on ``Configure`` from the latest snapshot of stream ``controller`` plus the
  events after it, and answers :class:`~actors.messages.NotReady` to every request until then
  (fail closed: COORDINATOR_LOAD_IN_PROGRESS on the wire);
* re-derives the topic collections' read policies from the effective configs at start-up (the
  static broker config may have changed since the events were written);
* registers the event log itself as the collection ``eventlog`` on first start and advances its
  upper (the log's next global position) with its own appends, at most every
  ``shoal.controller.eventlog.frontier.interval`` positions (default 100); its since only moves
  by policy (``NoPolicy(0)``: events are never deleted), replay/audit sessions hold it;
* saves a snapshot every ``shoal.controller.snapshot.interval.events`` events (default 1000);
* decides AlterUserScramCredentials (KIP-554; the stored and server keys are derived here, the
  salted password is never persisted) and answers DescribeUserScramCredentials and the
  listener's credential query from its folded state;
* re-evaluates time-based retention every ``log.retention.check.interval.ms`` (Kafka's default
  300000 ms) and tells subscribers (:class:`SubscribeFrontiers`) whenever a since moves;
* starts children on demand by ``(kind, name)`` (:class:`ChildLookup`) from a registry of class
  paths (defaults in :data:`~actors.controller.supervision.DEFAULT_CHILD_KINDS`; config keys
  ``shoal.controller.child.<kind>=<module.Class>`` or :class:`RegisterChildKind` add more),
  restarts a child that exits unasked (it recovers by replaying its own stream), counts dead
  letters (``handleDeadLetters``) addressed to its children, stops a child whose ``Configure``
  fails or is poisoned, handles ``ActorExitRequest`` (children exit with it),
  ``ChildActorExited`` and ``PoisonMessage``;
* keeps the census of share groups (the log's ``share-group:`` streams at recovery plus the groups
  it admitted since) and enforces ``group.share.max.groups`` when a request would create a group
  (:class:`AdmitShareGroup`); one without ``create`` never admits a group that does not exist
  (:mod:`actors.share.limits`). The groups' actors run in the listener process
  (:mod:`actors.share.host`).

Handler exceptions never escape (Thespian would retry and then bounce the message): the sender
gets ``Failure("UNKNOWN_SERVER_ERROR", …)`` instead, as elastic/rally's ``no_retry`` does.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from datetime import timedelta
from typing import Any, Callable

from thespian.actors import ActorExitRequest, ChildActorExited, DeadEnvelope, PoisonMessage, WakeupMessage

from actors.base import EventSourcedActor, PersistError
from actors.controller import frontiers as fr
from actors.controller import scram as sc
from actors.controller import topics as tp
from actors.controller import acls as ac
from actors.controller import balance as bal
from actors.controller import cluster as cl
from actors.controller.messages import (
    AclsReply,
    AclsRequest,
    CreateAclsReply,
    CreateAclsRequest,
    DeleteAclsReply,
    DeleteAclsRequest,
    AllocateProducerIdsReply,
    AllocateProducerIdsRequest,
    AlterPartitionReassignmentsRequest,
    AlterPartitionRequest,
    AlterUserScramCredentialsReply,
    AlterUserScramCredentialsRequest,
    BrokerFailedNotice,
    BrokerHeartbeatReply,
    BrokerHeartbeatRequest,
    BrokerRegistrationReply,
    BrokerRegistrationRequest,
    ClaimControllerRequest,
    ClusterStatus,
    ClusterStatusRequest,
    ChildAddress,
    ChildKindRegistered,
    ChildLookup,
    ChildStopped,
    CreatePartitionsReply,
    CreatePartitionsRequest,
    CreateTopicsReply,
    CreateTopicsRequest,
    DeleteTopicsReply,
    DeleteTopicsRequest,
    DescribeConfigsReply,
    DescribeConfigsRequest,
    DescribeUserScramCredentialsReply,
    DescribeUserScramCredentialsRequest,
    ElectLeadersRequest,
    FrontierCommand,
    FrontierReply,
    FrontierUpdates,
    FrontiersReply,
    FrontiersRequest,
    IncrementalAlterConfigsReply,
    IncrementalAlterConfigsRequest,
    ListPartitionReassignmentsReply,
    ListPartitionReassignmentsRequest,
    MetadataReply,
    MetadataRequest,
    PartitionMetadata,
    PartitionResults,
    ReadHoldsChange,
    RegisterChildKind,
    ScramCredentialsReply,
    ScramCredentialsRequest,
    SinceAdvanced,
    StateDump,
    StateDumpRequest,
    StopChild,
    AdmitShareGroup,
    ForgetShareGroup,
    ShareGroupAdmitted,
    SubscribeFrontiers,
    TopicMetadata,
)
from actors.controller.state import (
    AllocateProducerIds,
    AlterPartition,
    AlterPartitionReassignments,
    BrokerFailed,
    ControllerState,
    Decision,
    ElectLeaders,
    ReconcilePolicies,
    apply,
    decide,
    list_partition_reassignments,
)
from actors.controller.supervision import ChildRecord, Supervisor
from actors.share.limits import admit_share_group, census_from_log, max_groups_from
from actors.messages import (
    AppendFailed,
    Configure,
    Configured,
    EventsAppended,
    Failure,
    NotReady,
    Passivating,
    StatusReply,
    StatusRequest,
)
from config import cluster_enabled
from events.codec import new_event
from events.controller import STREAM_ID, CollectionsDropRequested, SegmentInfo
from store.event_log import AppendRequest

__all__ = ["ControllerActor"]

log = logging.getLogger("shoal.controller")

_RETENTION = "controller-retention"
_FOLLOW = "controller-follow"
_INTERNAL_TOPICS = {"__consumer_offsets", "__transaction_state", "__share_group_state", "__remote_log_metadata"}
# Messages handled before recovery has finished (everything else gets NotReady).
_ALWAYS = (
    Configure,
    Configured,
    Failure,
    ActorExitRequest,
    ChildActorExited,
    PoisonMessage,
    DeadEnvelope,
    WakeupMessage,
    EventsAppended,
    AppendFailed,
    StatusRequest,
    NotReady,
    Passivating,
)
_SYSTEM = (ActorExitRequest, ChildActorExited, PoisonMessage, DeadEnvelope, WakeupMessage)


def _now_ms() -> int:
    return int(time.time() * 1000)


class ControllerActor(EventSourcedActor):
    """The controller. Configure it with :class:`~actors.messages.Configure` (``config``: the
    broker config with ``event.log.url``, ``node.id``, ``listeners``, broker defaults; ``name``
    defaults to ``"controller"``; ``journal``: the JournalActor or ``None``). It replies
    :class:`~actors.messages.Configured` once recovered. Requests and replies are listed in
    :mod:`actors.controller.messages`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ready = False
        self._name = "controller"
        self._config: dict[str, Any] = {}
        self._journal_addr: Any = None
        self.state: ControllerState | None = None
        self._sup = Supervisor()
        self._subscribers: list[tuple[Any, str]] = []
        self._exiting = False
        self._events_since_snapshot = 0
        self._snapshot_interval = 1000
        self._retention_interval_ms = 300_000
        self._replayed = 0
        self._node_id = 1
        self._dead_letters = 0
        self._passivations = 0
        self._poisoned = 0
        self._last_position = 0
        self._eventlog_interval = 100
        #: with ``state.acls.changes``, names the ACL set for the listeners' caches
        self._acl_incarnation = uuid.uuid4().hex[:12]
        # share-group limits (actors.share.limits): the census of existing share groups and
        # group.share.max.groups
        self._share_groups: set[str] = set()
        self._max_share_groups = 10
        # the cluster (issue 15): on a shared log one node's controller is active, the others
        # follow the stream (actors.controller.cluster)
        self._cluster = False
        self._active = True
        self._heartbeats = cl.HeartbeatTracker()
        #: the controller lease (EventLog.acquire_lease), held while this node is active
        self._lease: Any = None
        self._lease_checked = 0.0
        self._session_timeout_ms = 9000
        self._follow_ms = 100
        #: automatic preferred leader election (actors.controller.balance): its configs and when
        #: the next check is due (ms; None while this node is not the active controller)
        self._leader_balance = bal.LeaderBalanceConfig()
        self._next_balance_ms: int | None = None

    # -- dispatch ---------------------------------------------------------------------------
    def receiveMessage(self, msg: Any, sender: Any) -> None:  # noqa: N802 (Thespian's name)
        """Gate on readiness (NotReady before recovery), then dispatch; a handler exception becomes a ``Failure`` to the sender."""
        if not self._ready and not isinstance(msg, _ALWAYS):
            self.send(sender, NotReady(self._name))
            return
        try:
            super().receiveMessage(msg, sender)
        except Exception as exc:  # never let Thespian retry/bounce: answer a Failure
            log.exception("controller failed on %r", msg)
            if sender is not None and sender != self.myAddress and not isinstance(msg, _SYSTEM + (Failure,)):
                self.send(sender, Failure("UNKNOWN_SERVER_ERROR", f"{type(exc).__name__}: {exc}"))

    # -- configuration and recovery ------------------------------------------------------------
    def receiveMsg_Configure(self, msg: Configure, sender: Any) -> None:
        """Recover from snapshot + events, register ``eventlog`` on first start, reply ``Configured`` (``Failure`` if recovery fails)."""
        if self._ready:
            self.send(sender, Configured(self._name, self.event_log.last_position(), self._replayed))
            return
        self._config = dict(msg.config)
        self._name = msg.name or "controller"
        self._journal_addr = msg.journal
        self._node_id = int(self._config.get("node.id", 1))
        self._snapshot_interval = int(self._config.get("shoal.controller.snapshot.interval.events", 1000))
        self._retention_interval_ms = int(self._config.get("log.retention.check.interval.ms", 300_000))
        self._eventlog_interval = max(1, int(self._config.get("shoal.controller.eventlog.frontier.interval", 100)))
        self._cluster = cluster_enabled(self._config)
        self._session_timeout_ms = int(self._config.get("broker.session.timeout.ms", 9000))
        self._follow_ms = max(1, int(self._config.get("shoal.cluster.metadata.poll.ms", 100)))
        self._sup = Supervisor(
            max_restarts=int(self._config.get("shoal.controller.child.max.restarts", 10)),
            restart_window_ms=int(self._config.get("shoal.controller.child.restart.window.ms", 60_000)),
        )
        prefix = "shoal.controller.child."
        for key, value in self._config.items():
            rest = key[len(prefix):] if key.startswith(prefix) else ""
            if rest and "." not in rest:
                self._sup.register(rest, str(value))
        try:
            self.attach_event_log(self._config, msg.journal)
            elog = self.event_log
            self.state = self._recover(elog)
            self._max_share_groups = max_groups_from(self._config)
            self._leader_balance = bal.LeaderBalanceConfig.from_config(self._config)
            self._share_groups = census_from_log(elog)
        except Exception as exc:
            log.exception("controller recovery failed")
            self.send(sender, Failure("UNKNOWN_SERVER_ERROR", f"recovery failed: {type(exc).__name__}: {exc}"))
            return
        if str(self._config.get("shoal.controller.handle.dead.letters", "true")).lower() == "true":
            self.handleDeadLetters()
        if self._retention_interval_ms > 0:
            self.wakeupAfter(timedelta(milliseconds=self._retention_interval_ms), payload=_RETENTION)

        def ready(_changes: Any = None) -> None:
            """Mark the controller ready and answer ``Configured``."""
            self._ready = True
            self.send(sender, Configured(self._name, self.event_log.last_position(), self._replayed))

        if self._cluster:
            self.wakeupAfter(timedelta(milliseconds=self._follow_ms), payload=_FOLLOW)
            self._active = self.state.cluster.controller_id == self._node_id and self._take_lease()
            if not self._active:
                ready()  # a standby: writes wait until it is elected (ClaimControllerRequest)
                return
            self._heartbeats.reset(self.state.cluster.live(), _now_ms())

        startup = self._startup_commands()

        def run(i: int) -> None:
            """Run the start-up commands in order, then become ready."""
            if i == len(startup):
                ready()
                return
            self._execute(startup[i], sender, lambda d, ch: run(i + 1), on_failure=lambda f: self.send(sender, f))

        run(0)

    def _run_in_order(self, cmds: list[Any], done: Callable[[], None] | None = None) -> None:
        """Decide and persist ``cmds`` one after the other (each on the state the previous one
        left), then call ``done``; a failure stops the chain (logged)."""
        if not cmds:
            if done is not None:
                done()
            return

        def failed(f: Failure) -> None:
            log.warning("controller: %s failed: %s %s", type(cmds[0]).__name__, f.error, f.message)

        self._execute(cmds[0], self.myAddress, lambda d, ch: self._run_in_order(cmds[1:], done), on_failure=failed)

    def _startup_commands(self) -> list[Any]:
        """What a controller decides when it becomes active: the ``eventlog`` collection on a
        log that has none, then :class:`ReconcilePolicies`."""
        assert self.state is not None
        startup: list[Any] = [ReconcilePolicies()]
        if fr.EVENT_LOG_COLLECTION not in self.state.frontiers.collections and fr.EVENT_LOG_COLLECTION not in self.state.frontiers.dropped:
            upper = self._last_position + 1
            startup.insert(0, fr.CreateCollections((fr.NewCollection(fr.EVENT_LOG_COLLECTION, 0, upper, fr.NoPolicy(0)),)))
        return startup

    def _recover(self, elog: Any) -> ControllerState:
        brokers = () if self._cluster else (self._node_id,)  # a cluster's brokers register
        state = ControllerState(static_config={k: str(v) for k, v in self._config.items()}, brokers=brokers)
        snap = elog.load_snapshot(STREAM_ID)
        if snap is not None:
            state.load_dict(json.loads(snap.state), snap.stream_version)
        replayed = 0
        while True:
            batch = elog.read_stream(STREAM_ID, from_version=state.version + 1, limit=10_000)
            if not batch:
                break
            for rec in batch:
                apply(state, rec.decode())
                state.version = rec.stream_version
                replayed += 1
        self._replayed = replayed
        self._last_position = elog.last_position()
        log.info("controller recovered: snapshot at %s, %d events replayed", snap.stream_version if snap else None, replayed)
        return state

    # -- the persist path ----------------------------------------------------------------------
    def _execute(
        self,
        cmd: Any,
        sender: Any,
        make_reply: Callable[[Decision | fr.Rejected, list[fr.SinceChange]], Any],
        on_failure: Callable[[Failure], None] | None = None,
    ) -> None:
        """decide → persist → evolve → reply. ``make_reply(decision, since_changes)`` builds the
        reply after the events were applied (``None``: no reply)."""
        assert self.state is not None
        if not self._active and not isinstance(cmd, cl.ClaimController):
            failure = Failure("NOT_CONTROLLER", f"node {self._node_id} is not the active controller (node {self.state.cluster.controller_id} is)")
            if on_failure is not None:
                on_failure(failure)
            else:
                self.send(sender, failure)
            return
        res = decide(self.state, cmd, _now_ms())
        if isinstance(res, fr.Rejected) or not res.events:
            self._reply(sender, make_reply(res, []))
            return
        events = list(res.events)
        events.extend(self._eventlog_upper(events))
        req = AppendRequest(STREAM_ID, [new_event(e) for e in events], expected_version=self.state.version)

        def then(results: Any) -> None:
            """After the append: evolve, notify subscribers, reply, maybe snapshot."""
            assert self.state is not None
            if isinstance(results, PersistError):
                error = "NOT_CONTROLLER" if results.error == "CONCURRENCY" else "UNKNOWN_SERVER_ERROR"
                if results.error == "CONCURRENCY" and self._cluster:
                    self._follow()  # another node appended: it is the active controller now
                failure = Failure(error, str(results))
                if on_failure is not None:
                    on_failure(failure)
                else:
                    self.send(sender, failure)
                return
            changes: list[fr.SinceChange] = []
            for e in events:
                changes.extend(apply(self.state, e))
            self.state.version = results[0].last_version
            self._last_position = results[0].last_position
            self._events_since_snapshot += len(events)
            self._notify(changes)
            if self._cluster:
                self.event_log.announce(STREAM_ID)  # the nodes' images fold it now, not at their next poll
            self._reply(sender, make_reply(res, changes))
            if self._events_since_snapshot >= self._snapshot_interval:
                self.save_snapshot(results[0].last_position)

        self.persist([req], then)

    def _eventlog_upper(self, events: list[Any]) -> list[Any]:
        """Piggyback an advance of the ``eventlog`` collection's upper (the log's next position)
        on an append, at most every ``shoal.controller.eventlog.frontier.interval`` positions."""
        assert self.state is not None
        c = self.state.frontiers.collections.get(fr.EVENT_LOG_COLLECTION)
        if c is None or c.upper is None or any(isinstance(e, CollectionsDropRequested) for e in events):
            return []
        upper = self._last_position + 1
        if upper - c.upper < self._eventlog_interval:
            return []
        extra = fr.decide(self.state.frontiers, fr.UpdateWriteFrontiers(((fr.EVENT_LOG_COLLECTION, upper, None),)), _now_ms())
        return [] if isinstance(extra, fr.Rejected) else extra

    def _reply(self, sender: Any, reply: Any) -> None:
        if reply is not None and sender is not None and sender != self.myAddress:
            self.send(sender, reply)

    def save_snapshot(self, position: int = 0) -> None:
        """Save the current state as the snapshot of stream ``controller`` at its version."""
        assert self.state is not None
        if self.state.version < 1:
            return
        data = json.dumps(self.state.to_dict(), separators=(",", ":")).encode()
        self.event_log.save_snapshot(STREAM_ID, self.state.version, data, position)
        self._events_since_snapshot = 0

    def _notify(self, changes: list[fr.SinceChange]) -> None:
        if not changes or not self._subscribers:
            return
        for ch in changes:
            for addr, prefix in self._subscribers:
                if ch.collection_id.startswith(prefix):
                    self.send(addr, SinceAdvanced(ch.collection_id, ch.old, ch.new))

    # -- topics and configs ------------------------------------------------------------------------
    def receiveMsg_CreateTopicsRequest(self, msg: CreateTopicsRequest, sender: Any) -> None:
        """CreateTopics → :class:`CreateTopicsReply` (fresh never-used topic ids are drawn here)."""
        cmd = self._create_cmd(msg.topics, msg.validate_only)
        self._execute(cmd, sender, lambda d, ch: CreateTopicsReply(d.reply if isinstance(d, Decision) else []))

    def _create_cmd(self, topics: list[Any], validate_only: bool = False) -> tp.CreateTopics:
        assert self.state is not None
        used = set(self.state.topics.used_ids)
        ids = []
        for t in topics:
            tid = tp.new_topic_id(used)
            used.add(tid)
            ids.append((t.name, tid))
        return tp.CreateTopics(tuple(topics), validate_only, tuple(ids))

    def receiveMsg_AllocateProducerIdsRequest(self, msg: AllocateProducerIdsRequest, sender: Any) -> None:
        """AllocateProducerIds → :class:`AllocateProducerIdsReply` with the next block of producer
        ids, persisted (``ProducerIdsAllocated``) before the reply so no id is handed out twice."""

        def reply(d: Decision | fr.Rejected, _changes: Any) -> AllocateProducerIdsReply:
            if isinstance(d, fr.Rejected):
                return AllocateProducerIdsReply(d.kafka_error)
            first, size = d.reply
            return AllocateProducerIdsReply(None, first, size)

        self._execute(AllocateProducerIds(int(msg.broker_id)), sender, reply)

    def receiveMsg_CreatePartitionsRequest(self, msg: CreatePartitionsRequest, sender: Any) -> None:
        """CreatePartitions → :class:`CreatePartitionsReply` (``PartitionsCreated`` and the new
        partitions' collections are appended before the reply)."""
        cmd = tp.CreatePartitions(tuple(msg.topics), msg.validate_only)
        self._execute(cmd, sender, lambda d, ch: CreatePartitionsReply(tuple(d.reply) if isinstance(d, Decision) else ()))

    def receiveMsg_DeleteTopicsRequest(self, msg: DeleteTopicsRequest, sender: Any) -> None:
        """DeleteTopics → :class:`DeleteTopicsReply`; the topics' collections are dropped once their holds drain."""
        cmd = tp.DeleteTopics(tuple(msg.names), tuple(msg.topic_ids))
        self._execute(cmd, sender, lambda d, ch: DeleteTopicsReply(d.reply if isinstance(d, Decision) else []))

    def receiveMsg_IncrementalAlterConfigsRequest(self, msg: IncrementalAlterConfigsRequest, sender: Any) -> None:
        """IncrementalAlterConfigs → :class:`IncrementalAlterConfigsReply`; retention policies follow."""
        cmd = tp.IncrementalAlterConfigs(tuple(msg.resources), msg.validate_only)
        self._execute(cmd, sender, lambda d, ch: IncrementalAlterConfigsReply(d.reply if isinstance(d, Decision) else []))

    def receiveMsg_DescribeConfigsRequest(self, msg: DescribeConfigsRequest, sender: Any) -> None:
        """DescribeConfigs → :class:`DescribeConfigsReply` (a query: nothing is appended)."""
        assert self.state is not None
        self.send(sender, DescribeConfigsReply(tp.describe_configs(self.state.topics, msg.resources, msg.include_synonyms)))

    # -- SCRAM credentials (KIP-554) -------------------------------------------------------------
    def receiveMsg_AlterUserScramCredentialsRequest(self, msg: AlterUserScramCredentialsRequest, sender: Any) -> None:
        """AlterUserScramCredentials → :class:`AlterUserScramCredentialsReply` once the
        credential events are durable (decided by :func:`actors.controller.scram.decide_alter`)."""
        cmd = sc.AlterUserScramCredentials(tuple(msg.deletions), tuple(msg.upsertions))
        self._execute(cmd, sender, lambda d, ch: AlterUserScramCredentialsReply(tuple(d.reply) if isinstance(d, Decision) else ()))

    def receiveMsg_DescribeUserScramCredentialsRequest(self, msg: DescribeUserScramCredentialsRequest, sender: Any) -> None:
        """DescribeUserScramCredentials → :class:`DescribeUserScramCredentialsReply` (a query)."""
        assert self.state is not None
        self.send(sender, DescribeUserScramCredentialsReply(tuple(sc.describe(self.state.scram, msg.users))))

    def receiveMsg_ScramCredentialsRequest(self, msg: ScramCredentialsRequest, sender: Any) -> None:
        """Every credential → :class:`ScramCredentialsReply` (the listener's authentication cache)."""
        assert self.state is not None
        creds = tuple((u, m, c) for (u, m), c in sorted(self.state.scram.credentials.items()))
        self.send(sender, ScramCredentialsReply(self.state.version, creds))

    def receiveMsg_MetadataRequest(self, msg: MetadataRequest, sender: Any) -> None:
        """Metadata → :class:`MetadataReply`, auto-creating topics when allowed."""
        assert self.state is not None
        st = self.state
        if msg.topics and msg.allow_auto_topic_creation and st.topics.broker_bool("auto.create.topics.enable"):
            missing = [n for n in dict.fromkeys(msg.topics) if n not in st.topics.topics and tp.validate_topic_name(n) is None]
            if missing:
                cmd = self._create_cmd([tp.CreatableTopic(n) for n in missing])
                self._execute(cmd, sender, lambda d, ch: self._metadata(msg))
                return
        self.send(sender, self._metadata(msg))

    def _metadata(self, msg: MetadataRequest) -> MetadataReply:
        assert self.state is not None
        ts = self.state.topics
        out: list[TopicMetadata] = []

        def topic_md(t: tp.Topic) -> TopicMetadata:
            """One topic's metadata."""
            parts = [
                PartitionMetadata(
                    "NONE" if p.leader != -1 else "LEADER_NOT_AVAILABLE",
                    p.partition,
                    p.leader,
                    p.leader_epoch,
                    p.replicas,
                    p.isr,
                    [r for r in p.replicas if r not in ts.brokers],
                )
                for p in t.partitions
            ]
            return TopicMetadata("NONE", t.name, t.topic_id, tp.kafka_topic_id(t.topic_id), t.name in _INTERNAL_TOPICS, parts)

        if msg.topics is None and not msg.topic_ids:
            out = [topic_md(t) for _, t in sorted(ts.topics.items())]
        else:
            for name in msg.topics or []:
                t = ts.topics.get(name)
                if t is not None:
                    out.append(topic_md(t))
                elif tp.validate_topic_name(name) is not None:
                    out.append(TopicMetadata("INVALID_TOPIC_EXCEPTION", name, None, None, False, []))
                else:
                    out.append(TopicMetadata("UNKNOWN_TOPIC_OR_PARTITION", name, None, None, False, []))
            for tid in msg.topic_ids:
                canon = tid
                if tid not in ts.names_by_id:
                    try:
                        canon = tp.topic_id_from_kafka(tid)
                    except ValueError:
                        canon = tid
                t = ts.topic_by_id(canon)
                out.append(topic_md(t) if t is not None else TopicMetadata("UNKNOWN_TOPIC_ID", None, tid, None, False, []))
        host, port = self._listener()
        cluster_id = str(self._config.get("cluster.id") or "shoal-cluster")
        return MetadataReply(cluster_id, self._node_id, [(b, host, port, None) for b in ts.brokers], out)

    def _listener(self) -> tuple[str, int]:
        listeners = str(self._config.get("advertised.listeners") or self._config.get("listeners") or "PLAINTEXT://127.0.0.1:9092")
        first = listeners.split(",")[0]
        hostport = first.split("://", 1)[-1]
        host, _, port = hostport.rpartition(":")
        try:
            return host or "127.0.0.1", int(port)
        except ValueError:
            return host or "127.0.0.1", 9092

    # -- ACLs ----------------------------------------------------------------------------------------
    def _acl_token(self) -> str:
        """Names the current ACL set: this incarnation and the changes its AclSet has seen (every
        applied AclsCreated/AclsDeleted, whichever path applied it, moves it)."""
        assert self.state is not None
        return f"{self._acl_incarnation}:{id(self.state.acls)}:{self.state.acls.changes}"

    def receiveMsg_CreateAclsRequest(self, msg: CreateAclsRequest, sender: Any) -> None:
        """CreateAcls → :class:`CreateAclsReply` (``AclsCreated`` appended before the reply)."""
        cmd = ac.CreateAcls(tuple(msg.creations))
        self._execute(cmd, sender, lambda d, ch: CreateAclsReply(tuple(d.reply) if isinstance(d, Decision) else (), self._acl_token()))

    def receiveMsg_DeleteAclsRequest(self, msg: DeleteAclsRequest, sender: Any) -> None:
        """DeleteAcls → :class:`DeleteAclsReply` (``AclsDeleted`` appended before the reply)."""
        cmd = ac.DeleteAcls(tuple(msg.filters))
        self._execute(cmd, sender, lambda d, ch: DeleteAclsReply(tuple(d.reply) if isinstance(d, Decision) else (), self._acl_token()))

    def receiveMsg_AclsRequest(self, msg: AclsRequest, sender: Any) -> None:
        """The ACLs for a listener's authorizer cache → :class:`AclsReply` (``acls=None`` when the
        asker's token is current: a cheap poll)."""
        assert self.state is not None
        token = self._acl_token()
        self.send(sender, AclsReply(token, None if msg.known_token == token else tuple(self.state.acls)))

    # -- partitions ----------------------------------------------------------------------------------
    def receiveMsg_ElectLeadersRequest(self, msg: ElectLeadersRequest, sender: Any) -> None:
        """ElectLeaders → :class:`PartitionResults`."""
        cmd = ElectLeaders(None if msg.partitions is None else tuple(msg.partitions), msg.election)
        self._execute(cmd, sender, lambda d, ch: PartitionResults(d.reply if isinstance(d, Decision) else []))

    def receiveMsg_AlterPartitionRequest(self, msg: AlterPartitionRequest, sender: Any) -> None:
        """AlterPartition → :class:`PartitionResults`."""
        cmd = AlterPartition(msg.topic, msg.partition, msg.broker_id, msg.leader_epoch, msg.partition_epoch, tuple(msg.isr))
        self._execute(cmd, sender, lambda d, ch: PartitionResults(d.reply if isinstance(d, Decision) else []))

    def receiveMsg_AlterPartitionReassignmentsRequest(self, msg: AlterPartitionReassignmentsRequest, sender: Any) -> None:
        """AlterPartitionReassignments (KIP-455) → :class:`PartitionResults` once the
        ``PartitionChanged`` events are durable (``Failure`` NOT_CONTROLLER on a standby)."""
        cmd = AlterPartitionReassignments(tuple((t, int(p), None if r is None else tuple(r)) for t, p, r in msg.reassignments))
        self._execute(cmd, sender, lambda d, ch: PartitionResults(d.reply if isinstance(d, Decision) else []))

    def receiveMsg_ListPartitionReassignmentsRequest(self, msg: ListPartitionReassignmentsRequest, sender: Any) -> None:
        """ListPartitionReassignments (KIP-455) → :class:`ListPartitionReassignmentsReply` from the
        folded state (a query); a standby of a cluster answers ``Failure`` NOT_CONTROLLER, as every
        request routed to the active controller does."""
        assert self.state is not None
        if not self._active:
            self.send(sender, Failure("NOT_CONTROLLER", f"node {self._node_id} is not the active controller (node {self.state.cluster.controller_id} is)"))
            return
        found = list_partition_reassignments(self.state, None if msg.partitions is None else list(msg.partitions))
        self.send(sender, ListPartitionReassignmentsReply(tuple(found)))

    def receiveMsg_BrokerFailedNotice(self, msg: BrokerFailedNotice, sender: Any) -> None:
        """A broker died → :class:`PartitionResults` of the partitions that changed."""
        self._execute(BrokerFailed(msg.broker_id), sender, lambda d, ch: PartitionResults(d.reply if isinstance(d, Decision) else []))

    # -- frontiers ----------------------------------------------------------------------------------
    @staticmethod
    def _frontier_reply(d: Decision | fr.Rejected, changes: list[fr.SinceChange]) -> FrontierReply:
        if isinstance(d, fr.Rejected):
            return FrontierReply(False, d.error, d.kafka_error, d.message)
        return FrontierReply(True, ignored=d.reply == "IGNORED", since_changes=[(c.collection_id, c.old, c.new) for c in changes])

    def receiveMsg_ReadHoldsChange(self, msg: ReadHoldsChange, sender: Any) -> None:
        """Hold deltas → :class:`FrontierReply`."""
        self._execute(fr.ChangeReadHolds(msg.holder, tuple(tuple(c) for c in msg.changes)), sender, self._frontier_reply)

    def receiveMsg_FrontierUpdates(self, msg: FrontierUpdates, sender: Any) -> None:
        """Upper reports → :class:`FrontierReply`."""
        ups = tuple(
            (cid, upper, None if segs is None else tuple(x if isinstance(x, SegmentInfo) else SegmentInfo(*x) for x in segs))
            for cid, upper, segs in msg.updates
        )
        self._execute(fr.UpdateWriteFrontiers(ups), sender, self._frontier_reply)

    def receiveMsg_FrontierCommand(self, msg: FrontierCommand, sender: Any) -> None:
        """Any frontier command → :class:`FrontierReply`."""
        self._execute(msg.command, sender, self._frontier_reply)

    def receiveMsg_FrontiersRequest(self, msg: FrontiersRequest, sender: Any) -> None:
        """``(since, upper)`` of collections → :class:`FrontiersReply`."""
        assert self.state is not None
        fs = self.state.frontiers
        ids = list(fs.collections) if msg.collection_ids is None else msg.collection_ids
        out = {cid: fs.frontiers(cid) for cid in ids if cid in fs.collections}
        self.send(sender, FrontiersReply(out, [cid for cid in ids if cid in fs.dropped]))

    def receiveMsg_SubscribeFrontiers(self, msg: SubscribeFrontiers, sender: Any) -> None:
        """Subscribe the sender to :class:`SinceAdvanced`; replies ``FrontierReply(True)``."""
        self._subscribers.append((sender, msg.prefix))
        self.send(sender, FrontierReply(True))

    # -- the cluster (issue 15) ---------------------------------------------------------------
    def _follow(self) -> None:
        """Fold the controller stream's events this node has not folded (a standby follows the
        active controller's appends; an active one learns here that another node claimed the
        role, and steps down). Runs only with no append in flight (the base class stashes
        wakeups meanwhile), so it never folds an append of its own twice."""
        assert self.state is not None
        elog = self.event_log
        if elog.stream_version(STREAM_ID) <= self.state.version:
            return
        changes: list[fr.SinceChange] = []
        while True:
            batch = elog.read_stream(STREAM_ID, from_version=self.state.version + 1, limit=1000)
            if not batch:
                break
            for rec in batch:
                changes.extend(apply(self.state, rec.decode()))
                self.state.version = rec.stream_version
        self._last_position = elog.last_position()
        self._notify(changes)
        if self._active and self.state.cluster.controller_id != self._node_id:
            log.warning("controller: node %s claimed the controller role (epoch %d); node %s steps down",
                        self.state.cluster.controller_id, self.state.cluster.controller_epoch, self._node_id)
            self._active = False
            self._drop_lease()

    def _take_lease(self) -> bool:
        """Hold the ``controller`` lease of the shared log (a PostgreSQL advisory lock the
        database drops when this process or its connection dies). Only its holder may act as the
        active controller, so a live controller that a peer merely cannot reach is never replaced:
        the database, the cluster's quorum, decides liveness."""
        if self._lease is None:
            self._lease = self.event_log.acquire_lease("controller")
        return self._lease is not None

    def _lease_alive(self) -> bool:
        """Whether the lease is still held, checked at most once a second."""
        now = time.monotonic()
        if now - self._lease_checked < 1.0:
            return True
        self._lease_checked = now
        return self._lease is not None and self._lease.alive()

    def _drop_lease(self) -> None:
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    def _cluster_status(self, error: str | None = None) -> ClusterStatus:
        assert self.state is not None
        cs = self.state.cluster
        return ClusterStatus(self._active, cs.controller_id, cs.controller_epoch, self.state.version, error)

    def receiveMsg_ClusterStatusRequest(self, msg: ClusterStatusRequest, sender: Any) -> None:
        """Catch up with the stream, then answer :class:`ClusterStatus`."""
        if self._cluster:
            self._follow()
        self.send(sender, self._cluster_status())

    def receiveMsg_ClaimControllerRequest(self, msg: ClaimControllerRequest, sender: Any) -> None:
        """Become the active controller over ``seen_epoch`` (:class:`cl.ClaimController`); the
        append is fenced by the stream's expected version, so of several claimants one wins.
        Answers :class:`ClusterStatus` (``error`` NOT_CONTROLLER when another node won)."""
        assert self.state is not None
        if not self._cluster:
            self.send(sender, self._cluster_status("INVALID_REQUEST"))
            return
        self._follow()
        if self._active:
            self.send(sender, self._cluster_status())
            return
        if not self._take_lease():  # the active controller's process still holds it: it is alive
            self.send(sender, self._cluster_status("NOT_CONTROLLER"))
            return

        def won(d: Decision | fr.Rejected, _changes: Any) -> ClusterStatus:
            if isinstance(d, fr.Rejected):
                self._drop_lease()
                return self._cluster_status(d.kafka_error)
            self._active = True
            self._heartbeats.reset(self.state.cluster.live(), _now_ms())
            log.info("controller: node %d is the active controller (epoch %d)", self._node_id, self.state.cluster.controller_epoch)
            self._run_in_order(self._startup_commands())
            return self._cluster_status()

        def lost(f: Failure) -> None:
            self._drop_lease()
            self.send(sender, self._cluster_status(f.error))

        self._execute(cl.ClaimController(self._node_id, msg.seen_epoch, tuple(msg.fence)), sender, won, on_failure=lost)

    def receiveMsg_BrokerRegistrationRequest(self, msg: BrokerRegistrationRequest, sender: Any) -> None:
        """BrokerRegistration → :class:`BrokerRegistrationReply` (:class:`cl.RegisterBroker`)."""
        assert self.state is not None
        now = _now_ms()
        cluster_id = str(self._config.get("cluster.id") or "shoal-cluster")
        if msg.cluster_id and msg.cluster_id != cluster_id:
            self.send(sender, BrokerRegistrationReply("INCONSISTENT_CLUSTER_ID", f"Expected cluster ID {cluster_id}, but got cluster ID {msg.cluster_id}", -1))
            return
        alive = self._heartbeats.alive(msg.broker_id, now, self._session_timeout_ms)
        cmd = cl.RegisterBroker(msg.broker_id, msg.incarnation_id, msg.cluster_id, tuple(msg.endpoints), msg.rack, alive)

        def reply(d: Decision | fr.Rejected, _changes: Any) -> BrokerRegistrationReply:
            if isinstance(d, fr.Rejected):
                return BrokerRegistrationReply(d.kafka_error, d.message, -1)
            self._heartbeats.touch(msg.broker_id, now)
            return BrokerRegistrationReply(None, None, d.reply[1])

        self._execute(cmd, sender, reply, on_failure=lambda f: self.send(sender, BrokerRegistrationReply(f.error, f.message, -1)))

    def receiveMsg_BrokerHeartbeatRequest(self, msg: BrokerHeartbeatRequest, sender: Any) -> None:
        """BrokerHeartbeat → :class:`BrokerHeartbeatReply` (:class:`cl.BrokerHeartbeat`); renews
        the broker's session."""
        now = _now_ms()
        if self._cluster:
            self._follow()  # a deposed controller must not answer from its old state (it steps down here)

        def reply(d: Decision | fr.Rejected, _changes: Any) -> BrokerHeartbeatReply:
            if isinstance(d, fr.Rejected):
                return BrokerHeartbeatReply(d.kafka_error, d.message, True)
            self._heartbeats.touch(msg.broker_id, now)
            return BrokerHeartbeatReply(None, None, bool(d.reply[1]))

        cmd = cl.BrokerHeartbeat(msg.broker_id, msg.broker_epoch, msg.want_fence)
        self._execute(cmd, sender, reply, on_failure=lambda f: self.send(sender, BrokerHeartbeatReply(f.error, f.message, True)))

    def _on_follow(self) -> None:
        """The follow timer: fold new stream events; as the active controller, fence the brokers
        whose session expired (``broker.session.timeout.ms``), else check the leader balance
        (:meth:`_maybe_balance_leaders`)."""
        assert self.state is not None
        try:
            self._follow()
        except Exception:
            log.exception("controller: reading the controller stream failed; retrying")
        if self._active and not self._lease_alive():
            log.error("controller: node %d lost its controller lease (its database connection); stepping down", self._node_id)
            self._active = False
            self._drop_lease()
        if self._active:
            expired = self._heartbeats.expired(self.state.cluster.live(), _now_ms(), self._session_timeout_ms)
            if expired:
                log.warning("controller: fencing broker(s) %s: no heartbeat for %d ms", expired, self._session_timeout_ms)
                for b in expired:
                    self._heartbeats.forget(b)
                self._execute(cl.FenceBrokers(tuple(expired)), self.myAddress, lambda d, ch: None, on_failure=lambda f: None)
                return  # one append per tick: the balancing check decides on the folded fencing next time
        self._maybe_balance_leaders(_now_ms())

    def _maybe_balance_leaders(self, now_ms: int) -> None:
        """Automatic preferred leader election on the follow timer (Kafka
        ``QuorumController.maybeBalancePartitionLeaders``, see :mod:`actors.controller.balance`):
        the active controller checks every ``leader.imbalance.check.interval.seconds``, the first
        time one interval after it became active, and elects the preferred leaders
        :func:`~actors.controller.balance.maybe_balance_partition_leaders` picks (``PartitionChanged``,
        reason ``"preferred"``). ``now_ms``: wall time in ms. Raises nothing (a failed append is
        logged; the next check retries)."""
        assert self.state is not None
        if not self._active:
            self._next_balance_ms = None
            return
        if self._next_balance_ms is None:
            self._next_balance_ms = now_ms + self._leader_balance.leader_imbalance_check_interval_ms
            return
        cmd, self._next_balance_ms = bal.maybe_balance_partition_leaders(self.state, self._leader_balance, now_ms, self._next_balance_ms)
        if cmd is None:
            return
        log.info("controller: automatic preferred leader election for %d partition(s): %s", len(cmd.partitions or ()), list(cmd.partitions or ())[:10])

        def failed(f: Failure) -> None:
            log.warning("controller: automatic preferred leader election failed: %s %s", f.error, f.message)

        self._execute(cmd, self.myAddress, lambda d, ch: None, on_failure=failed)

    def on_wakeup(self, payload: Any) -> None:
        """The retention timer: decide :class:`~actors.controller.frontiers.EnforceRetention` now,
        then re-arm; the follow timer (a cluster): :meth:`_on_follow`, then re-arm."""
        if payload == _FOLLOW and not self._exiting:
            if self._ready:
                self._on_follow()
            self.wakeupAfter(timedelta(milliseconds=self._follow_ms), payload=_FOLLOW)
            return
        if payload != _RETENTION or self._exiting:
            return
        if self._ready:
            self._execute(fr.EnforceRetention(), self.myAddress, lambda d, ch: None)
        if self._retention_interval_ms > 0:
            self.wakeupAfter(timedelta(milliseconds=self._retention_interval_ms), payload=_RETENTION)

    # -- status ------------------------------------------------------------------------------------------
    def receiveMsg_StatusRequest(self, msg: StatusRequest, sender: Any) -> None:
        """Readiness and counters (version, topics, collections, children, restarts, pid, dead letters, poisoned)."""
        st = self.state
        counts = {
            "version": st.version if st else 0,
            "topics": len(st.topics.topics) if st else 0,
            "collections": len(st.frontiers.collections) if st else 0,
            "children": len(self._sup.children),
            "restarts": self._sup.total_restarts,
            "events_replayed": self._replayed,
            "pid": os.getpid(),
            "dead_letters": self._dead_letters,
            "poisoned": self._poisoned,
            "passivations": self._passivations,
            "share_groups": len(self._share_groups),
        }
        self.send(sender, StatusReply(self._name, self._ready, counts))

    def receiveMsg_StateDumpRequest(self, msg: StateDumpRequest, sender: Any) -> None:
        """The evented state → :class:`StateDump`."""
        assert self.state is not None
        self.send(sender, StateDump(self.state.version, self.state.to_dict()))

    def receiveMsg_NotReady(self, msg: NotReady, sender: Any) -> None:
        """A child answered NotReady (it is still recovering): ignored."""
        log.debug("controller: %s not ready", msg.name)

    def receiveMsg_FrontierReply(self, msg: FrontierReply, sender: Any) -> None:
        """Replies to the controller's own retention decisions: ignored."""
        pass  # replies to our own retention wakeups

    # -- supervision ---------------------------------------------------------------------------------
    def receiveMsg_RegisterChildKind(self, msg: RegisterChildKind, sender: Any) -> None:
        """Add/replace a child kind → :class:`ChildKindRegistered`."""
        self._sup.register(msg.kind, msg.class_path, msg.config)
        self.send(sender, ChildKindRegistered(msg.kind))

    def receiveMsg_ChildLookup(self, msg: ChildLookup, sender: Any) -> None:
        """Find or start child ``(kind, name)``; reply :class:`ChildAddress` once it is ready.
        Kind ``share``: a group not in the census is started only with ``create`` and below
        ``group.share.max.groups``; otherwise ``Failure`` GROUP_ID_NOT_FOUND / GROUP_MAX_SIZE_REACHED
        (:func:`actors.share.limits.admit_share_group`)."""
        key = (msg.kind, msg.name)
        rec = self._sup.children.get(key)
        if rec is not None and not rec.stopping:
            if rec.ready:
                self.send(sender, ChildAddress(msg.kind, msg.name, rec.address, rec.restarts))
            else:
                rec.waiters.append(sender)
            return
        if msg.kind == "share":
            # share groups run in the listener process (actors.share.host): AdmitShareGroup
            self.send(sender, Failure("UNKNOWN_SERVER_ERROR", "share groups are not the controller's children: send AdmitShareGroup"))
            return
        if not msg.create:
            self.send(sender, Failure("UNKNOWN_TOPIC_OR_PARTITION", f"no {msg.kind} actor named {msg.name!r}"))
            return
        spec = self._sup.kinds.get(msg.kind)
        if spec is None:
            self.send(sender, Failure("UNKNOWN_SERVER_ERROR", f"unknown child kind {msg.kind!r}"))
            return
        address = self._start_child(msg.kind, msg.name)
        if address is None:
            self.send(sender, Failure("UNKNOWN_SERVER_ERROR", f"cannot start {spec.class_path} for {msg.kind} {msg.name!r}"))
            return
        rec = ChildRecord(msg.kind, msg.name, address)
        rec.waiters.append(sender)
        self._sup.children[key] = rec

    def receiveMsg_AdmitShareGroup(self, msg: AdmitShareGroup, sender: Any) -> None:
        """The census of ``group.share.max.groups`` (:func:`actors.share.limits.admit_share_group`):
        :class:`ShareGroupAdmitted` (a new group joins the census) or ``Failure``
        (GROUP_ID_NOT_FOUND, GROUP_MAX_SIZE_REACHED)."""
        refusal = admit_share_group(msg.name, self._share_groups, msg.create, self._max_share_groups)
        if refusal is not None:
            self.send(sender, Failure(refusal.error, refusal.message))
            return
        self._share_groups.add(msg.name)
        self.send(sender, ShareGroupAdmitted(msg.name))

    def _start_child(self, kind: str, name: str) -> Any:
        spec = self._sup.kinds[kind]
        try:
            address = self.createActor(spec.class_path)
        except Exception:
            log.exception("controller: cannot create %s", spec.class_path)
            return None
        config = dict(self._config)
        config.update(spec.config)
        self.send(address, Configure(config, name, self._journal_addr, self.myAddress))
        return address

    def receiveMsg_Configured(self, msg: Configured, sender: Any) -> None:
        """A child finished recovery: answer the lookups waiting for it."""
        rec = self._sup.by_address(sender)
        if rec is None:
            return
        rec.ready = True
        for waiter in rec.waiters:
            self.send(waiter, ChildAddress(rec.kind, rec.name, rec.address, rec.restarts))
        rec.waiters.clear()

    def receiveMsg_Failure(self, msg: Failure, sender: Any) -> None:
        """A child refused its ``Configure``: fail its lookups and stop it (no restart)."""
        rec = self._sup.by_address(sender)
        if rec is None:
            log.info("controller: failure from %s: %s %s", sender, msg.error, msg.message)
            return
        if not rec.ready:
            log.error("controller: child %s/%s failed to configure: %s %s", rec.kind, rec.name, msg.error, msg.message)
            for waiter in rec.waiters:
                self.send(waiter, Failure(msg.error, f"{rec.kind} {rec.name!r} failed to start: {msg.message}"))
            rec.waiters.clear()
            rec.stopping = True
            self.send(rec.address, ActorExitRequest())

    def receiveMsg_Passivating(self, msg: Passivating, sender: Any) -> None:
        """A child exits on its own to free memory: forget it without a restart (its
        ``ChildActorExited`` then finds it stopping); the next lookup starts a fresh one."""
        rec = self._sup.by_address(sender)
        if rec is None:
            return
        rec.stopping = True
        self._passivations += 1

    def receiveMsg_ForgetShareGroup(self, msg: ForgetShareGroup, sender: Any) -> None:
        """A share group was deleted: out of the census → :class:`ChildStopped` (its actor, in the
        listener process, was stopped there)."""
        self._share_groups.discard(msg.name)
        self.send(sender, ChildStopped("share", msg.name))

    def receiveMsg_StopChild(self, msg: StopChild, sender: Any) -> None:
        """Stop a child on purpose → :class:`ChildStopped` once it exited."""
        rec = self._sup.children.get((msg.kind, msg.name))
        if rec is None:
            self.send(sender, ChildStopped(msg.kind, msg.name))
            return
        rec.stopping = True
        rec.stop_waiters.append(sender)
        self.send(rec.address, ActorExitRequest())

    def on_child_exited(self, child: Any) -> None:
        """Remove a child that was stopped, or restart one that exited unasked (within the restart intensity)."""
        rec = self._sup.by_address(child)
        if rec is None:
            return
        key = (rec.kind, rec.name)
        if rec.stopping or self._exiting:
            self._sup.children.pop(key, None)
            for w in rec.stop_waiters:
                self.send(w, ChildStopped(rec.kind, rec.name))
            for w in rec.waiters:
                self.send(w, Failure("UNKNOWN_SERVER_ERROR", f"{rec.kind} {rec.name!r} exited"))
            return
        if not self._sup.may_restart(rec, _now_ms()):
            log.error("controller: %s %r restarted too often; giving up", rec.kind, rec.name)
            self._sup.given_up += 1
            self._sup.children.pop(key, None)
            for w in rec.waiters:
                self.send(w, Failure("UNKNOWN_SERVER_ERROR", f"{rec.kind} {rec.name!r} keeps crashing"))
            return
        log.warning("controller: %s %r exited unexpectedly; restart #%d", rec.kind, rec.name, rec.restarts)
        address = self._start_child(rec.kind, rec.name)
        if address is None:
            self._sup.children.pop(key, None)
            for w in rec.waiters:
                self.send(w, Failure("UNKNOWN_SERVER_ERROR", f"cannot restart {rec.kind} {rec.name!r}"))
            return
        rec.previous.append(rec.address)
        del rec.previous[:-8]
        rec.address = address
        rec.ready = False

    def receiveMsg_DeadEnvelope(self, msg: DeadEnvelope, sender: Any) -> None:
        """A message to an actor that no longer exists. For a supervised child (current or
        crashed incarnation) it is counted; its restart is driven by ``ChildActorExited``. The
        envelope has no original sender, so it is not redelivered (senders re-lookup)."""
        self._dead_letters += 1
        rec = self._sup.by_any_address(msg.deadAddress)
        if rec is not None:
            rec.dead_letters += 1
            log.warning("controller: dead letter to %s %r (%s): %r", rec.kind, rec.name, msg.deadAddress, msg.deadMessage)
            return
        log.info("controller: dead letter to %s: %r", msg.deadAddress, msg.deadMessage)

    def on_poison(self, msg: PoisonMessage, sender: Any) -> None:
        """A message the controller sent failed twice in its target. A child that cannot handle
        its ``Configure`` is stopped (no restart) and its lookups fail."""
        self._poisoned += 1
        rec = self._sup.by_address(sender)
        if rec is not None and isinstance(msg.poisonMessage, Configure) and not rec.ready:
            for waiter in rec.waiters:
                self.send(waiter, Failure("UNKNOWN_SERVER_ERROR", f"{rec.kind} {rec.name!r} could not handle Configure: {msg.details}"))
            rec.waiters.clear()
            rec.stopping = True
            self.send(rec.address, ActorExitRequest())

    def on_exit(self) -> None:
        """Snapshot unsaved state before the controller exits (its children exit with it) and
        give the controller lease up, so that another node can take over at once."""
        self._exiting = True
        self._drop_lease()
        if self._ready and self.state is not None and self._events_since_snapshot:
            try:
                self.save_snapshot()
            except Exception:
                log.exception("controller: snapshot on exit failed")
