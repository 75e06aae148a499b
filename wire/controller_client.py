"""The listener's side of the controller: topics, configs and child-actor lookup, one
``ControllerActor`` message per Kafka request (``actors/controller/messages.py``).

The data plane (Produce/Fetch/ShareFetch) must not ask the controller per request, so this client
keeps a cache of the topic image (name → id, partition count, configs) refreshed by every Metadata
request, every CreateTopics/DeleteTopics/IncrementalAlterConfigs answer, and on a miss (at most
once per ``shoal.wire.metadata.refresh.ms``, default 500 ms). Share-group actor addresses come from
the controller's ``ChildLookup`` (kind ``share``) and are cached; a timed-out ask drops the entry so
the next request looks the child up again (it may have been restarted).

SCRAM credentials (KIP-554) for SASL authentication are served from a cache of the controller's
whole credential table (:meth:`ControllerClient.scram_credential`): read through when older
than ``shoal.wire.scram.refresh.ms`` (default 1000 ms) and dropped whenever an
AlterUserScramCredentials through this client succeeds, so a credential created or changed on
this node is in force for the very next authentication. Staleness bound for a change made
through another node sharing the event log: at most ``shoal.wire.scram.refresh.ms`` plus
one controller round trip (the controller answers from its folded state).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import uuid
from typing import Any, Mapping, Sequence

from actors.base import event_log_for
from actors.controller.messages import AdmitShareGroup, ForgetShareGroup, ShareGroupAdmitted
from actors.share.limits import census_from_log
from actors.controller.acls import AclCreateResult, AclDeleteResult
from actors.controller.messages import (
    AlterPartitionRequest,
    BrokerHeartbeatReply,
    BrokerHeartbeatRequest,
    BrokerRegistrationReply,
    BrokerRegistrationRequest,
    ClaimControllerRequest,
    ClusterStatus,
    ElectLeadersRequest,
    AlterPartitionReassignmentsRequest,
    ListPartitionReassignmentsReply,
    ListPartitionReassignmentsRequest,
    PartitionResults,
    AclsReply,
    AclsRequest,
    AlterUserScramCredentialsReply,
    AlterUserScramCredentialsRequest,
    CreateAclsReply,
    CreateAclsRequest,
    CreatePartitionsReply,
    CreatePartitionsRequest,
    DeleteAclsReply,
    DeleteAclsRequest,
    DescribeUserScramCredentialsReply,
    DescribeUserScramCredentialsRequest,
    ScramCredentialsReply,
    ScramCredentialsRequest,
)
from actors.controller.scram import AlterResult, ScramCredential
from actors.controller.topics import CreatePartitionsTopic
from actors.controller.state import PartitionResult
from actors.messages import Failure
from wire.backend import ConfigEntry, TopicInfo, TopicSpec
from wire.gateway import ActorTimeout

__all__ = ["ControllerClient", "GroupRefused", "start", "RESOURCE_NAMES", "OP_NAMES"]

log = logging.getLogger("shoal.wire.controller")

#: Kafka ConfigResource type id → the controller's resource type name.
RESOURCE_NAMES = {2: "TOPIC", 4: "BROKER"}
#: IncrementalAlterConfigs op id → name (Kafka ``AlterConfigOp.OpType``).
OP_NAMES = {0: "SET", 1: "DELETE", 2: "APPEND", 3: "SUBTRACT"}

CONTROLLER_NAME = "shoal-controller"

#: Errors of a share-group lookup that mean "no actor for this group" (``actors.share.limits``).
_GROUP_REFUSALS = ("GROUP_ID_NOT_FOUND", "GROUP_MAX_SIZE_REACHED")


class GroupRefused(Exception):
    """The controller will not start the share group's actor: ``error`` is GROUP_ID_NOT_FOUND (the
    group does not exist and the request may not create it) or GROUP_MAX_SIZE_REACHED
    (``group.share.max.groups`` reached); ``message`` is the text for the wire."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(f"{error}: {message}")
        self.error = error
        self.message = message


def _err(name: str | None) -> str | None:
    return None if not name or name == "NONE" else name


def start(asys: Any, gateway: Any, cfg: Mapping[str, str], journal: Any) -> "ControllerClient":
    """Create the ControllerActor (globalName ``shoal-controller``), configure it (it recovers its
    stream; its supervisor knows the ``share`` and ``rlmm`` child kinds), and return a client. Raises ``RuntimeError`` when
    the controller does not become ready within 60 s."""
    from actors.messages import Configure

    addr = asys.createActor("actors.controller.actor.ControllerActor", globalName=CONTROLLER_NAME)
    reply = asys.ask(addr, Configure(dict(cfg), "controller", journal), 60)
    if reply is None or type(reply).__name__ != "Configured":
        raise RuntimeError(f"controller did not start: {reply!r}")
    return ControllerClient(gateway, addr, cfg)


class ControllerClient:
    """Asks the ControllerActor at ``addr`` through ``gateway``; caches the topic image."""

    def __init__(self, gateway: Any, addr: Any, cfg: Mapping[str, str]) -> None:
        self.gateway = gateway
        self.addr = addr
        self.cfg = dict(cfg)
        self.timeout_s = float(cfg.get("shoal.wire.actor.timeout.ms", "30000")) / 1000
        self.refresh_s = float(cfg.get("shoal.wire.metadata.refresh.ms", "500")) / 1000
        self._lock = threading.Lock()
        self._topics: dict[str, TopicInfo] = {}
        self._configs: dict[str, dict[str, str]] = {}
        self._loaded_at = 0.0
        #: share groups admitted this run (:meth:`admit_share_group`)
        self._groups_seen: set[str] = set()
        # SCRAM credential cache: (user, mechanism) -> ScramCredential, loaded at _scram_loaded_at
        self._scram_lock = threading.Lock()
        self._scram: dict[tuple[str, str], ScramCredential] = {}
        self._scram_loaded_at: float | None = None
        self._scram_refresh_s = float(cfg.get("shoal.wire.scram.refresh.ms", "1000")) / 1000

    # ------------------------------------------------------------------ asks
    def ask(self, msg: Any, timeout_s: float | None = None) -> Any:
        """Ask the controller; ``NotReady`` raises ``ActorTimeout`` (retriable on the wire),
        ``Failure`` is returned as is."""
        r = self.gateway.ask(self.addr, msg, timeout_s or self.timeout_s)
        if type(r).__name__ == "NotReady":
            raise ActorTimeout("the controller is recovering")
        return r

    # ------------------------------------------------------------------ the cluster (issue 15)
    def register_broker(self, req: BrokerRegistrationRequest) -> BrokerRegistrationReply:
        """BrokerRegistration → the controller's reply; NOT_CONTROLLER / a timeout as an error reply."""
        r = self._ask_or_error(req)
        if isinstance(r, BrokerRegistrationReply):
            return r
        return BrokerRegistrationReply(*self._error_of(r), -1)

    def broker_heartbeat(self, req: BrokerHeartbeatRequest) -> BrokerHeartbeatReply:
        """BrokerHeartbeat → the controller's reply (errors as :class:`BrokerHeartbeatReply`)."""
        r = self._ask_or_error(req)
        if isinstance(r, BrokerHeartbeatReply):
            return r
        return BrokerHeartbeatReply(*self._error_of(r), True)

    def claim_controller(self, seen_epoch: int, fence: tuple[int, ...]) -> str | None:
        """Ask this node's controller to become active over ``seen_epoch``; the error name when
        it did not (another node won, or the controller did not answer)."""
        r = self._ask_or_error(ClaimControllerRequest(seen_epoch, tuple(fence)))
        if isinstance(r, ClusterStatus):
            return r.error if not r.active else None
        return self._error_of(r)[0]

    def alter_partition(self, topic: str, partition: int, broker_id: int, leader_epoch: int, partition_epoch: int, isr: tuple[int, ...]) -> PartitionResult:
        """AlterPartition of one partition → its :class:`PartitionResult` (errors included)."""
        r = self._ask_or_error(AlterPartitionRequest(topic, partition, broker_id, leader_epoch, partition_epoch, isr))
        if isinstance(r, PartitionResults) and r.results:
            return r.results[0]
        err, msg = self._error_of(r)
        return PartitionResult(topic, partition, err or "UNKNOWN_SERVER_ERROR", msg)

    def elect_leaders(self, partitions: list[tuple[str, int]] | None, election: str) -> tuple[str | None, list[PartitionResult]]:
        """ElectLeaders → ``(top-level error, per-partition results)``; a refused request (not
        the active controller, a timeout) is a top-level error with no results."""
        r = self._ask_or_error(ElectLeadersRequest(partitions, election))
        if isinstance(r, PartitionResults):
            return None, list(r.results)
        return self._error_of(r)[0], []

    def alter_partition_reassignments(self, reassignments: list[tuple[str, int, tuple[int, ...] | None]]) -> tuple[str | None, list[PartitionResult]]:
        """AlterPartitionReassignments (KIP-455) → ``(top-level error, per-entry results)``; a
        refused request (not the active controller, a timeout) is a top-level error with no
        results."""
        r = self._ask_or_error(AlterPartitionReassignmentsRequest(tuple(reassignments)))
        if isinstance(r, PartitionResults):
            return None, list(r.results)
        return self._error_of(r)[0], []

    def list_partition_reassignments(self, partitions: list[tuple[str, int]] | None) -> tuple[str | None, list[Any]]:
        """ListPartitionReassignments (KIP-455) → ``(top-level error, ongoing reassignments)``
        (:class:`actors.controller.state.OngoingReassignment`)."""
        r = self._ask_or_error(ListPartitionReassignmentsRequest(None if partitions is None else tuple(partitions)))
        if isinstance(r, ListPartitionReassignmentsReply):
            return None, list(r.reassignments)
        return self._error_of(r)[0], []

    def _ask_or_error(self, msg: Any) -> Any:
        try:
            return self.ask(msg)
        except ActorTimeout as exc:
            return Failure("REQUEST_TIMED_OUT", str(exc))

    @staticmethod
    def _error_of(r: Any) -> tuple[str, str | None]:
        if isinstance(r, Failure):
            return r.error, r.message
        return "UNKNOWN_SERVER_ERROR", f"unexpected reply {type(r).__name__}"

    def allocate_producer_ids(self, broker_id: int) -> tuple[int, int]:
        """A new block of producer ids ``(first, size)`` from the controller (persisted there).
        Raises :class:`wire.producer_ids.ProducerIdsUnavailable` with the Kafka error name."""
        from actors.controller.messages import AllocateProducerIdsRequest
        from wire.producer_ids import ProducerIdsUnavailable

        try:
            r = self.ask(AllocateProducerIdsRequest(broker_id))
        except ActorTimeout as exc:
            raise ProducerIdsUnavailable("COORDINATOR_LOAD_IN_PROGRESS", str(exc)) from exc
        if type(r).__name__ == "Failure":
            raise ProducerIdsUnavailable(r.error, r.message)
        if r.error:
            raise ProducerIdsUnavailable(r.error)
        return r.first_producer_id, r.block_size

    # ------------------------------------------------------------------ topic image
    def _refresh(self) -> dict[str, TopicInfo]:
        from actors.controller.messages import MetadataRequest

        r = self.ask(MetadataRequest(None, False))
        image = {}
        for t in getattr(r, "topics", []):
            if _err(t.error) is None and t.name and t.topic_id:
                image[t.name] = TopicInfo(t.name, uuid.UUID(t.topic_id), len(t.partitions), bool(t.is_internal))
        with self._lock:
            self._topics = image
            self._loaded_at = time.monotonic()
        return image

    def topics(self, names: Sequence[str] | None = None) -> list[TopicInfo]:
        """The topic image, fresh from the controller (one ask)."""
        image = self._refresh()
        if names is None:
            return sorted(image.values(), key=lambda t: t.name)
        return [image[n] for n in names if n in image]

    def _cached(self) -> dict[str, TopicInfo]:
        with self._lock:
            return self._topics

    def cached_topics(self, names: Sequence[str] | None = None) -> list[TopicInfo]:
        """The cached topic image (no ask), refreshed only when one of ``names`` is missing and
        the last refresh is older than ``shoal.wire.metadata.refresh.ms``."""
        image = self._cached()
        stale = time.monotonic() - self._loaded_at >= self.refresh_s
        if stale and (not image or (names is not None and any(n not in image for n in names))):
            image = self._refresh()
        return sorted(image.values(), key=lambda t: t.name)

    def partition_count(self, topic: str) -> int:
        """Partitions of ``topic`` from the cache (refreshed on a miss, rate-limited); 0 if unknown."""
        t = self._cached().get(topic)
        if t is None and time.monotonic() - self._loaded_at >= self.refresh_s:
            t = self._refresh().get(topic)
        return t.partitions if t else 0

    def names_by_id(self) -> dict[str, str]:
        """Topic id (canonical hex) → name, from the cache (refreshed when empty)."""
        image = self._cached() or self._refresh()
        return {str(t.topic_id): t.name for t in image.values()}

    def topic_config(self, topic: str) -> dict[str, str]:
        """The effective configs of ``topic`` (for its partition logs), cached per topic."""
        cfg = self._configs.get(topic)
        if cfg is None:
            err, _msg, entries = self.describe_configs(2, topic, None)
            cfg = {e.name: e.value for e in entries if e.value is not None} if err is None else {}
            self._configs[topic] = cfg
        return cfg

    # ------------------------------------------------------------------ admin requests
    def create_topics(self, specs: Sequence[TopicSpec], validate_only: bool) -> dict[str, tuple[str | None, str | None, TopicInfo | None]]:
        """CreateTopicsRequest → per name ``(error, message, TopicInfo)``."""
        from actors.controller.messages import CreateTopicsRequest
        from actors.controller.topics import CreatableTopic

        topics = [CreatableTopic(s.name, s.partitions, s.replication_factor, (), tuple(sorted(s.configs.items()))) for s in specs]
        r = self.ask(CreateTopicsRequest(topics, validate_only))
        if type(r).__name__ == "Failure":
            return {s.name: (r.error, r.message, None) for s in specs}
        out = {}
        for res in r.results:
            err = _err(res.error)
            info = TopicInfo(res.name, uuid.UUID(res.topic_id), res.num_partitions) if err is None and res.topic_id else None
            out[res.name] = (err, res.message, info)
        if not validate_only:
            with self._lock:  # the reply carries the new topics: no second ask
                image = dict(self._topics)
                image.update({n: info for n, (_e, _m, info) in out.items() if info is not None})
                self._topics = image
        return out

    def create_partitions(
        self, topics: Sequence[tuple[str, int, Sequence[Sequence[int]] | None]], validate_only: bool
    ) -> dict[str, tuple[str | None, str | None]]:
        """CreatePartitionsRequest → per name ``(error, message)``. The topic image is updated
        with the new partition counts at once (share groups read it on their next heartbeat)."""
        cmds = [CreatePartitionsTopic(n, int(c), None if a is None else tuple(tuple(int(b) for b in r) for r in a)) for n, c, a in topics]
        r = self.ask(CreatePartitionsRequest(tuple(cmds), validate_only))
        if isinstance(r, Failure):
            return {n: (r.error, r.message) for n, _c, _a in topics}
        if not isinstance(r, CreatePartitionsReply):
            return {n: ("UNKNOWN_SERVER_ERROR", f"unexpected reply {type(r).__name__}") for n, _c, _a in topics}
        out = {res.name: (_err(res.error), res.message) for res in r.results}
        grown = {n: int(c) for n, c, _a in topics if out.get(n, ("x",))[0] is None}
        if grown and not validate_only:
            with self._lock:
                image = dict(self._topics)
                for n, c in grown.items():
                    if n in image:
                        image[n] = dataclasses.replace(image[n], partitions=c)
                self._topics = image
        return out

    def delete_topics(self, names: Sequence[str]) -> dict[str, tuple[str | None, uuid.UUID | None]]:
        """DeleteTopicsRequest → per name ``(error, topic uuid)``."""
        from actors.controller.messages import DeleteTopicsRequest

        r = self.ask(DeleteTopicsRequest(list(names)))
        if type(r).__name__ == "Failure":
            return {n: (r.error, None) for n in names}
        out = {}
        for res in r.results:
            out[res.name] = (_err(res.error), uuid.UUID(res.topic_id) if res.topic_id else None)
            self._configs.pop(res.name, None)
        with self._lock:
            self._topics = {n: t for n, t in self._topics.items() if out.get(n, ("x",))[0] is not None}
        return out

    def describe_configs(self, resource_type: int, name: str, keys: Sequence[str] | None) -> tuple[str | None, str | None, list[ConfigEntry]]:
        """DescribeConfigsRequest for one TOPIC/BROKER resource."""
        from actors.controller.messages import DescribeConfigsRequest
        from actors.controller.topics import CONFIG_SOURCE_IDS

        rname = RESOURCE_NAMES.get(resource_type)
        if rname is None:
            return "INVALID_REQUEST", f"unsupported resource type {resource_type}", []
        r = self.ask(DescribeConfigsRequest([(rname, name, None if keys is None else list(keys))]))
        if type(r).__name__ == "Failure":
            return r.error, r.message, []
        res = r.results[0]
        if _err(res.error):
            return res.error, res.message, []
        entries = [
            ConfigEntry(e.name, e.value, e.read_only, CONFIG_SOURCE_IDS.get(e.source, 5) == 5, CONFIG_SOURCE_IDS.get(e.source, 5), e.is_sensitive)
            for e in res.entries
        ]
        return None, None, entries

    def alter_configs(self, resource_type: int, name: str, ops: Sequence[tuple[str, int, str | None]], validate_only: bool) -> tuple[str | None, str | None]:
        """IncrementalAlterConfigsRequest for one TOPIC/BROKER resource."""
        from actors.controller.messages import IncrementalAlterConfigsRequest
        from actors.controller.topics import AlterConfigResource

        rname = RESOURCE_NAMES.get(resource_type)
        if rname is None:
            return "INVALID_REQUEST", f"unsupported resource type {resource_type}"
        bad = [op for _k, op, _v in ops if op not in OP_NAMES]
        if bad:
            return "INVALID_REQUEST", f"unknown config operation {bad[0]}"
        res = AlterConfigResource(rname, name, tuple((k, OP_NAMES[op], v) for k, op, v in ops))
        r = self.ask(IncrementalAlterConfigsRequest([res], validate_only))
        if type(r).__name__ == "Failure":
            return r.error, r.message
        out = r.results[0]
        if rname == "TOPIC":
            self._configs.pop(name, None)
        return _err(out.error), out.message

    # ------------------------------------------------------------------ SCRAM credentials (KIP-554)
    def alter_user_scram_credentials(self, deletions: Sequence[Any], upsertions: Sequence[Any]) -> list[Any]:
        """AlterUserScramCredentialsRequest → one ``AlterResult`` per user (a controller
        ``Failure`` or a not-ready controller gives each named user that error). Drops the
        credential cache afterwards, so the change is in force for the next authentication."""
        users = list(dict.fromkeys([d.name for d in deletions] + [u.name for u in upsertions]))
        try:
            r = self.ask(AlterUserScramCredentialsRequest(tuple(deletions), tuple(upsertions)))
        except ActorTimeout as exc:
            return [AlterResult(u, "COORDINATOR_LOAD_IN_PROGRESS", str(exc)) for u in users]
        finally:
            self.invalidate_scram_credentials()
        if isinstance(r, AlterUserScramCredentialsReply):
            return list(r.results)
        if isinstance(r, Failure):
            return [AlterResult(u, r.error, r.message) for u in users]
        return [AlterResult(u, "UNKNOWN_SERVER_ERROR", f"unexpected controller reply {type(r).__name__}") for u in users]

    def describe_user_scram_credentials(self, users: Sequence[str] | None) -> tuple[str | None, str | None, list[Any]]:
        """DescribeUserScramCredentialsRequest → ``(error, message, [DescribeResult])`` (fresh
        from the controller, not from the cache)."""
        try:
            r = self.ask(DescribeUserScramCredentialsRequest(None if users is None else tuple(users)))
        except ActorTimeout as exc:
            return "COORDINATOR_LOAD_IN_PROGRESS", str(exc), []
        if isinstance(r, DescribeUserScramCredentialsReply):
            return None, None, list(r.results)
        if isinstance(r, Failure):
            return r.error, r.message, []
        return "UNKNOWN_SERVER_ERROR", f"unexpected controller reply {type(r).__name__}", []

    def invalidate_scram_credentials(self) -> None:
        """Forget the cached credentials: the next :meth:`scram_credential` asks the controller."""
        with self._scram_lock:
            self._scram_loaded_at = None

    def scram_credential(self, user: str, mechanism: str) -> ScramCredential | None:
        """``user``'s ``ScramCredential`` for ``mechanism`` or ``None``, from the cache, which is
        reloaded (one ask for the whole table, one thread at a time) when it was dropped or is
        older than ``shoal.wire.scram.refresh.ms``. A controller that cannot answer gives
        ``None`` (authentication fails closed) and is asked again on the next lookup."""
        with self._scram_lock:
            loaded = self._scram_loaded_at
            if loaded is None or time.monotonic() - loaded >= self._scram_refresh_s:
                try:
                    r = self.ask(ScramCredentialsRequest())
                except ActorTimeout:
                    log.warning("SCRAM credential lookup: the controller did not answer")
                    return None
                if not isinstance(r, ScramCredentialsReply):
                    log.warning("SCRAM credential lookup failed: %r", r)
                    return None
                self._scram = {(u, m): c for u, m, c in r.credentials}
                self._scram_loaded_at = time.monotonic()
            return self._scram.get((user, mechanism))

    # ------------------------------------------------------------------ share-group census
    def admit_share_group(self, group: str, create: bool = True) -> None:
        """Ask the controller whether ``group`` may run (its census of ``group.share.max.groups``,
        :class:`AdmitShareGroup`): returns when admitted. ``create``: the request may create the
        group (a joining heartbeat, a ShareFetch opening a session, a group config alter);
        without it only an existing group is admitted. Raises :class:`GroupRefused`
        (GROUP_ID_NOT_FOUND, GROUP_MAX_SIZE_REACHED) or ``ActorTimeout`` (no answer, another
        failure)."""
        r = self.ask(AdmitShareGroup(group, create), max(self.timeout_s, 60))
        if isinstance(r, Failure) and r.error in _GROUP_REFUSALS:
            raise GroupRefused(r.error, r.message)
        if not isinstance(r, ShareGroupAdmitted):
            raise ActorTimeout(f"share group {group}: {getattr(r, 'error', r)!r} {getattr(r, 'message', '')}")
        self._groups_seen.add(group)

    def forget_share_group(self, group: str) -> None:
        """``group`` was deleted: drop it from this client's census view and tell the controller
        (:class:`ForgetShareGroup`: out of the census). Best effort: a controller that does not
        answer keeps counting the group until its next recovery."""
        self._groups_seen.discard(group)
        try:
            self.ask(ForgetShareGroup(group))
        except ActorTimeout as exc:
            log.info("forgetting share group %s: %s", group, exc)

    def share_groups(self) -> list[str]:
        """The ids of the share groups that exist: those with a stream in the event log (deleted
        ones left out) and those admitted this run."""
        groups = set(self._groups_seen)
        try:
            # streams of deleted groups (ending with ShareGroupDeleted) are left out
            groups |= census_from_log(event_log_for(self.cfg))
        except Exception:  # pragma: no cover - the log is optional for listing
            log.debug("listing share-group streams failed", exc_info=True)
        return sorted(groups)

    # ------------------------------------------------------------------ ACLs (CreateAcls/DeleteAcls/DescribeAcls, authorizer cache)
    def create_acls(self, creations: Sequence[Any]) -> tuple[list[AclCreateResult], str | None]:
        """CreateAclsRequest → ``(per creation AclCreateResult, ACL token)``; a controller
        ``Failure`` (or a not-ready controller: COORDINATOR_LOAD_IN_PROGRESS) gives every creation
        that error and the token ``None``."""
        try:
            r = self.ask(CreateAclsRequest(tuple(creations)))
        except ActorTimeout as exc:
            return [AclCreateResult("COORDINATOR_LOAD_IN_PROGRESS", str(exc)) for _ in creations], None
        if isinstance(r, CreateAclsReply):
            return list(r.results), r.token
        if isinstance(r, Failure):
            return [AclCreateResult(r.error, r.message) for _ in creations], None
        return [AclCreateResult("UNKNOWN_SERVER_ERROR", f"unexpected controller reply {type(r).__name__}") for _ in creations], None

    def delete_acls(self, filters: Sequence[Any]) -> tuple[list[AclDeleteResult], str | None]:
        """DeleteAclsRequest → ``(per filter AclDeleteResult, ACL token)`` (errors as :meth:`create_acls`)."""
        try:
            r = self.ask(DeleteAclsRequest(tuple(filters)))
        except ActorTimeout as exc:
            return [AclDeleteResult("COORDINATOR_LOAD_IN_PROGRESS", str(exc)) for _ in filters], None
        if isinstance(r, DeleteAclsReply):
            return list(r.results), r.token
        if isinstance(r, Failure):
            return [AclDeleteResult(r.error, r.message) for _ in filters], None
        return [AclDeleteResult("UNKNOWN_SERVER_ERROR", f"unexpected controller reply {type(r).__name__}") for _ in filters], None

    def acls(self, known_token: str | None = None) -> tuple[str, tuple[Any, ...] | None]:
        """AclsRequest → ``(token, every ACL or None when known_token is current)``. Raises
        :class:`ActorTimeout` when the controller does not answer (or is recovering) and
        ``RuntimeError`` on any other reply."""
        r = self.ask(AclsRequest(known_token))
        if not isinstance(r, AclsReply):
            raise RuntimeError(f"AclsRequest: {r!r}")
        return r.token, r.acls
