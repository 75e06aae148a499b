"""The listener's authorizer and its enforcement: which ACL each request needs, and Kafka's
``*_AUTHORIZATION_FAILED`` answers.

* :class:`Authorizer` is on when ``authorizer.class.name`` is set (Kafka's
  ``org.apache.kafka.metadata.authorizer.StandardAuthorizer``, or any non-empty value: Shoal has
  one authorizer; empty = off, Kafka's default). It applies ``super.users`` and
  ``allow.everyone.if.no.acl.found`` (default false) to a cached
  :class:`~actors.controller.acls.AclSet` (rules in :mod:`actors.controller.acls`, after Kafka's
  ``StandardAuthorizerData``).
* The cache lives in the listener process. It is replaced at once after this node's own
  CreateAcls/DeleteAcls (their reply carries the controller's ACL token, and the authorizer
  fetches the set before the response leaves), and otherwise re-validated at most every
  ``shoal.authorizer.refresh.ms`` (default 1000) by one cheap ask (the controller answers "unchanged"
  when the token is current). Bound: an ACL change made through another node is enforced here at
  most ``shoal.authorizer.refresh.ms`` plus one controller round trip after it was committed,
  while the controller answers. A refresh that fails keeps the last set (the controller is
  recovering) and is retried after the interval; before the first load every request is denied
  (fail closed) and every request retries the load.
* :class:`AuthorizingBackend` wraps the :class:`~wire.backend.Backend` the handlers use and checks
  each call as Kafka's ``KafkaApis``/``AuthHelper`` does (table in its docstring). The principal
  and host are those of the connection the current thread serves (:func:`bind`, called by the
  dispatcher; one thread per connection): ``conn.principal`` (``"User:ANONYMOUS"`` on PLAINTEXT)
  and ``conn.peer[0]``. The dispatcher (:class:`wire.dispatch.KafkaDispatcher`) does the wrapping
  itself when given an authorizer, and the handlers that check outside a backend call use that
  same authorizer (:func:`allowed`). With the authorizer off the dispatcher uses the plain backend:
  no per-request cost at all.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

from actors.consumer.classic import DescribedGroup
from actors.consumer.classic import OffsetDeleteResult
from actors.consumer.modern import ConsumerGroupDescription
from actors.consumer.modern import ConsumerHeartbeatResult
from actors.consumer.classic import HeartbeatResult as ClassicHeartbeatResult
from actors.consumer.classic import JoinGroupResult, LeaveGroupResult, OffsetCommitResult
from actors.consumer.classic import SyncGroupResult as ClassicSyncResult
from actors.controller.acls import CLUSTER_NAME, AclSet, parse_super_users
from actors.controller.scram import AlterResult
from wire.backend import FetchedPartition, HeartbeatResult, ProduceResult, ShareFetchPartition, ShareFetchResult, TopicInfo, TopicSpec
from wire.server import ANONYMOUS

__all__ = ["ANONYMOUS", "NO_OPERATIONS", "Authorizer", "AuthorizingBackend", "allowed", "authorized_operations", "bind", "from_config"]

log = logging.getLogger("shoal.wire.authz")


_current = threading.local()


def bind(conn: Any) -> None:
    """Make ``conn`` the connection whose principal and host this thread's checks use (the
    dispatcher calls it before each handler when the authorizer is on)."""
    _current.conn = conn


def _who() -> tuple[str, str]:
    conn = getattr(_current, "conn", None)
    if conn is None:
        return ANONYMOUS, ""
    principal = getattr(conn, "principal", None) or ANONYMOUS
    peer = getattr(conn, "peer", None)
    return principal, (str(peer[0]) if peer else "")


class Authorizer:
    """ACL checks for this listener process.

    ``source(known_token) -> (token, acls or None)`` fetches the ACLs from the controller
    (:meth:`wire.controller_client.ControllerClient.acls`); ``controller`` (optional) serves
    :meth:`create_acls`/:meth:`delete_acls`. ``cfg``: ``super.users``,
    ``allow.everyone.if.no.acl.found``, ``shoal.authorizer.refresh.ms``. ``clock``: monotonic
    seconds (tests pass their own)."""

    def __init__(self, cfg: Mapping[str, str], source: Callable[[str | None], tuple[str, Any]], controller: Any = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.super_users = parse_super_users(cfg.get("super.users"))
        self.allow_if_no_acl = str(cfg.get("allow.everyone.if.no.acl.found", "false")).strip().lower() == "true"
        self.refresh_s = float(cfg.get("shoal.authorizer.refresh.ms", "1000")) / 1000
        self._source = source
        self._controller = controller
        self._clock = clock
        self._acls: AclSet | None = None
        self._token: str | None = None
        self._checked_at = float("-inf")
        self._lock = threading.Lock()

    # -- the cache --------------------------------------------------------------------------
    def refresh(self) -> bool:
        """Re-validate the cache now (one ask; the set is rebuilt only when the token changed).
        Returns False (and keeps the last set) when the controller could not answer."""
        try:
            token, acls = self._source(self._token)
        except Exception as exc:  # the controller is recovering or busy: keep what we have
            log.info("ACL refresh failed: %s", exc)
            if self._acls is not None:
                self._checked_at = self._clock()  # retry after the interval, not on every request
            return False
        if acls is not None:
            self._acls = AclSet(acls)
        self._token = token
        self._checked_at = self._clock()
        return True

    def acls(self) -> AclSet | None:
        """The cached ACLs, re-validated first when older than ``shoal.authorizer.refresh.ms``
        (one thread refreshes; the others use the current set meanwhile). ``None`` before the
        first successful load."""
        if self._clock() - self._checked_at >= self.refresh_s and self._lock.acquire(blocking=self._acls is None):
            try:
                if self._clock() - self._checked_at >= self.refresh_s:
                    self.refresh()
            finally:
                self._lock.release()
        return self._acls

    def _changed(self, token: str | None) -> None:
        """This node changed the ACLs (controller token ``token``): reload before answering."""
        if token is not None and token != self._token:
            with self._lock:
                self.refresh()

    # -- checks -----------------------------------------------------------------------------
    def authorize(self, principal: str, host: str, operation: str, resource_type: str, name: str) -> bool:
        """May ``principal`` from ``host`` do ``operation`` (Kafka ``AclOperation`` name) on
        ``(resource_type, name)``? See :meth:`AclSet.authorize`; denied before the first load
        (super users excepted)."""
        if principal in self.super_users:
            return True
        acls = self.acls()
        if acls is None:
            return False
        return acls.authorize(principal, host, operation, resource_type, name, self.super_users, self.allow_if_no_acl)

    def authorize_any(self, principal: str, host: str, operation: str, resource_type: str) -> bool:
        """May ``principal`` do ``operation`` on some resource of ``resource_type``? (Kafka's
        ``authorizeByResourceType``; :meth:`AclSet.authorize_by_resource_type`.)"""
        if principal in self.super_users:
            return True
        acls = self.acls()
        if acls is None:
            return False
        return acls.authorize_by_resource_type(principal, host, operation, resource_type, self.super_users, self.allow_if_no_acl)

    def check(self, operation: str, resource_type: str, name: str) -> bool:
        """:meth:`authorize` for the connection bound to this thread (:func:`bind`)."""
        principal, host = _who()
        return self.authorize(principal, host, operation, resource_type, name)

    def check_any(self, operation: str, resource_type: str) -> bool:
        """:meth:`authorize_any` for the connection bound to this thread."""
        principal, host = _who()
        return self.authorize_any(principal, host, operation, resource_type)

    # -- ACL administration (CreateAcls / DeleteAcls) ---------------------------------------
    def create_acls(self, creations: Sequence[Any]) -> list[Any]:
        """CreateAcls through the controller; the cache holds the result before this returns.
        Returns the per-creation :class:`~actors.controller.acls.AclCreateResult` list."""
        results, token = self._controller.create_acls(creations)
        self._changed(token)
        return results

    def delete_acls(self, filters: Sequence[Any]) -> list[Any]:
        """DeleteAcls through the controller; the cache holds the result before this returns.
        Returns the per-filter :class:`~actors.controller.acls.AclDeleteResult` list."""
        results, token = self._controller.delete_acls(filters)
        self._changed(token)
        return results


def from_config(cfg: Mapping[str, str], controller: Any) -> Authorizer | None:
    """The authorizer ``cfg`` asks for (``authorizer.class.name`` non-empty) over ``controller``
    (a :class:`~wire.controller_client.ControllerClient`), loaded once; ``None`` when off."""
    if not str(cfg.get("authorizer.class.name") or "").strip():
        return None
    authz = Authorizer(cfg, controller.acls, controller)
    authz.refresh()
    return authz


def allowed(authorizer: Authorizer | None, operation: str, resource_type: str, name: str) -> bool:
    """For handlers that check outside a backend call (Metadata, FindCoordinator): True when
    ``authorizer`` is ``None`` (``authorizer.class.name`` empty), else its verdict for the bound
    connection (:meth:`Authorizer.check`). The dispatcher passes its own authorizer, the one its
    :class:`AuthorizingBackend` uses."""
    if authorizer is None:
        return True
    return authorizer.check(operation, resource_type, name)


#: Kafka ``AclOperation`` codes (the bits of an ``authorized_operations`` field)
ACL_OPERATION_CODES = {"READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7, "DESCRIBE": 8, "CLUSTER_ACTION": 9,
                       "DESCRIBE_CONFIGS": 10, "ALTER_CONFIGS": 11, "IDEMPOTENT_WRITE": 12}
#: the operations Kafka's ``AclEntry.supportedOperations`` lists per resource type (those the
#: authorized-operations bitfields are computed over)
SUPPORTED_OPERATIONS = {"GROUP": ("READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS")}


#: A describe response's ``authorized_operations`` when they were not asked for (Kafka's Integer.MIN_VALUE)
NO_OPERATIONS = -2147483648


def authorized_operations(authorizer: Authorizer | None, resource_type: str, name: str) -> int:
    """Kafka's ``AuthHelper.authorizedOperations`` for the bound connection: the bitfield
    (``Utils.to32BitField``) of the supported operations on ``(resource_type, name)`` it may do;
    every supported one when ``authorizer`` is ``None`` (no authorizer configured)."""
    bits = 0
    for op in SUPPORTED_OPERATIONS[resource_type]:
        if authorizer is None or authorizer.check(op, resource_type, name):
            bits |= 1 << ACL_OPERATION_CODES[op]
    return bits


_CONFIG_RESOURCES = {2: ("TOPIC", "TOPIC_AUTHORIZATION_FAILED"), 4: ("CLUSTER", "CLUSTER_AUTHORIZATION_FAILED"), 32: ("GROUP", "GROUP_AUTHORIZATION_FAILED")}


class AuthorizingBackend:
    """The :class:`~wire.backend.Backend` the handlers see when the authorizer is on: every call
    is checked for the bound connection, then delegated to ``inner``. Other attributes
    (``node_id``, ``host``, ``port``, ``cluster_id`` …) are ``inner``'s.

    ============================  =============================================================
    call (API)                    ACL (Kafka ``KafkaApis`` / ``AuthHelper``) → error when denied
    ============================  =============================================================
    topics (Metadata, all)        DESCRIBE topic: unauthorized topics are left out
    create_topics (CreateTopics,  CREATE on the cluster, else CREATE on the topic →
    Metadata auto-create)         TOPIC_AUTHORIZATION_FAILED
    delete_topics                 DELETE on the cluster, else DELETE topic →
                                  TOPIC_AUTHORIZATION_FAILED (by id: an id the connection may
                                  not DESCRIBE answers UNKNOWN_TOPIC_ID, where Kafka says
                                  TOPIC_AUTHORIZATION_FAILED)
    create_partitions (37)        ALTER topic → TOPIC_AUTHORIZATION_FAILED
    delete_records (21)           DELETE topic → TOPIC_AUTHORIZATION_FAILED (per partition)
    describe_configs              DESCRIBE_CONFIGS on the topic / cluster (broker) / group →
                                  TOPIC_/CLUSTER_/GROUP_AUTHORIZATION_FAILED
    alter_configs                 ALTER_CONFIGS, same resources and errors
    list_groups                   DESCRIBE cluster: all; else the groups with DESCRIBE
    produce                       WRITE topic → TOPIC_AUTHORIZATION_FAILED (per partition)
    fetch                         READ topic → TOPIC_AUTHORIZATION_FAILED (per partition)
    list_offset                   DESCRIBE topic → TOPIC_AUTHORIZATION_FAILED
    init_producer_id              transactional id: WRITE on it → TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
                                  else IDEMPOTENT_WRITE cluster or WRITE on any topic →
                                  CLUSTER_AUTHORIZATION_FAILED
    share_heartbeat               READ group → GROUP_AUTHORIZATION_FAILED; DESCRIBE on every
                                  subscribed topic → TOPIC_AUTHORIZATION_FAILED
    share_fetch/acknowledge       READ group → GROUP_AUTHORIZATION_FAILED; READ topic → per
                                  partition TOPIC_AUTHORIZATION_FAILED (its acks not applied)
    share_group_describe          DESCRIBE group → GROUP_AUTHORIZATION_FAILED
    share_group_offsets           DESCRIBE group → GROUP_AUTHORIZATION_FAILED; DESCRIBE topic →
                                  per partition TOPIC_AUTHORIZATION_FAILED
    consumer_join/sync/heartbeat/ READ group → GROUP_AUTHORIZATION_FAILED
    leave (11/14/12/13)
    consumer_commit (8)           READ group → GROUP_AUTHORIZATION_FAILED; READ topic → per
                                  partition TOPIC_AUTHORIZATION_FAILED
    consumer_fetch_offsets (9)    DESCRIBE group → GROUP_AUTHORIZATION_FAILED; DESCRIBE topic →
                                  per partition TOPIC_AUTHORIZATION_FAILED (all: left out)
    describe_group (15)           DESCRIBE group → GROUP_AUTHORIZATION_FAILED (that group)
    delete_group (42)             DELETE group → GROUP_AUTHORIZATION_FAILED (that group)
    consumer_delete_offsets (47)  DELETE group → GROUP_AUTHORIZATION_FAILED; READ topic → per
                                  partition TOPIC_AUTHORIZATION_FAILED (not deleted)
    share_alter_offsets (91)      READ group → GROUP_AUTHORIZATION_FAILED; READ topic → per
                                  partition TOPIC_AUTHORIZATION_FAILED
    share_delete_offsets (92)     DELETE group → GROUP_AUTHORIZATION_FAILED; READ topic → per
                                  topic TOPIC_AUTHORIZATION_FAILED
    consumer_group_heartbeat (68) READ group → GROUP_AUTHORIZATION_FAILED; DESCRIBE on every
                                  subscribed topic → TOPIC_AUTHORIZATION_FAILED
    consumer_group_describe (69)  DESCRIBE group → GROUP_AUTHORIZATION_FAILED; a group using a
                                  topic the client may not DESCRIBE → TOPIC_AUTHORIZATION_FAILED
    describe_user_scram_          DESCRIBE cluster → CLUSTER_AUTHORIZATION_FAILED (the response)
    credentials (50)
    alter_user_scram_             ALTER cluster → CLUSTER_AUTHORIZATION_FAILED for every user
    credentials (51)
    ============================  =============================================================
    """

    #: ``inner``'s methods that need no ACL (no resource is read or changed through them)
    UNCHECKED = frozenset(
        {
            "data_version", "wait_for_data", "status", "tiered_segments", "scram_credential",
            # the cluster (issue 15): Metadata/DescribeCluster show every live broker to every
            # client, as Kafka does; the controller RPCs are checked for CLUSTER_ACTION (and
            # ElectLeaders for ALTER) on the cluster by their handlers (wire/cluster_api.py)
            "metadata_brokers", "controller_id", "coordinator", "register_broker", "broker_heartbeat", "alter_partition", "allocate_producer_ids_for", "elect_leaders",
            # partition reassignment (KIP-455): ALTER / DESCRIBE on the cluster, checked by the
            # handlers (wire/cluster_api.py)
            "alter_partition_reassignments", "list_partition_reassignments",
        }
    )
    #: ``inner``'s data attributes the handlers read (this broker's identity and endpoints); no
    #: other attribute passes through (``controller``, ``shares``, ``logs`` … would hand out
    #: unchecked methods)
    DATA = frozenset({"node_id", "host", "port", "endpoints", "cluster_id", "cluster"})

    def __init__(self, inner: Any, authorizer: Authorizer) -> None:
        self.inner = inner
        self.authorizer = authorizer

    def __getattr__(self, name: str) -> Any:
        """``inner``'s attribute ``name`` if it is in :data:`DATA` (``node_id``, ``host``,
        ``endpoints`` …) or :data:`UNCHECKED`. Anything else raises ``AttributeError`` (fail
        closed: a new backend call must get its ACL first, and no component object such as
        ``controller`` is handed out)."""
        if name in self.DATA or name in self.UNCHECKED:
            return getattr(self.inner, name)
        raise AttributeError(f"backend attribute {name!r} has no authorization rule (wire/authz.py AuthorizingBackend)")

    def _ok(self, operation: str, resource_type: str, name: str) -> bool:
        return self.authorizer.check(operation, resource_type, name)

    # -- control plane ------------------------------------------------------------------------
    def topics(self, names: Sequence[str] | None = None) -> list[TopicInfo]:
        """The topics the connection may DESCRIBE."""
        return [t for t in self.inner.topics(names) if self._ok("DESCRIBE", "TOPIC", t.name)]

    def create_topics(self, specs: Sequence[TopicSpec], validate_only: bool):
        """CREATE on the cluster or on each topic; the others get TOPIC_AUTHORIZATION_FAILED."""
        cluster = self._ok("CREATE", "CLUSTER", CLUSTER_NAME)
        ok = [s for s in specs if cluster or self._ok("CREATE", "TOPIC", s.name)]
        out = self.inner.create_topics(ok, validate_only) if ok else {}
        for s in specs:
            if s not in ok:
                out[s.name] = ("TOPIC_AUTHORIZATION_FAILED", None, None)
        return out

    def create_partitions(self, topics, validate_only: bool):
        """ALTER on each topic (``ControllerApis.createPartitions``); the others get
        TOPIC_AUTHORIZATION_FAILED."""
        ok = [t for t in topics if self._ok("ALTER", "TOPIC", t[0])]
        out = self.inner.create_partitions(ok, validate_only) if ok else {}
        for t in topics:
            if t not in ok:
                out[t[0]] = ("TOPIC_AUTHORIZATION_FAILED", None)
        return out

    def delete_topics(self, names: Sequence[str]):
        """DELETE on the cluster, else DELETE on each topic; the others get
        TOPIC_AUTHORIZATION_FAILED (``ControllerApis.deleteTopics``)."""
        cluster = self._ok("DELETE", "CLUSTER", CLUSTER_NAME)
        ok = [n for n in names if cluster or self._ok("DELETE", "TOPIC", n)]
        out = self.inner.delete_topics(ok) if ok else {}
        for n in names:
            if n not in ok:
                out[n] = ("TOPIC_AUTHORIZATION_FAILED", None)
        return out

    def _config_check(self, op: str, resource_type: int, name: str) -> tuple[str, str | None] | None:
        """``None`` when ``op`` on the config resource is allowed, else ``(error, message)``. A
        resource type without an ACL rule here (BROKER_LOGGER, CLIENT_METRICS, an unknown code)
        is INVALID_REQUEST, never passed on unchecked (Kafka answers INVALID_REQUEST "Unexpected
        resource type" for types it does not know; Shoal serves none of the others)."""
        rtype, error = _CONFIG_RESOURCES.get(resource_type, (None, None))
        if rtype is None:
            return "INVALID_REQUEST", f"unsupported resource type {resource_type}"
        if self._ok(op, rtype, CLUSTER_NAME if rtype == "CLUSTER" else name):
            return None
        return error, None

    def describe_configs(self, resource_type: int, name: str, keys: Sequence[str] | None):
        """DESCRIBE_CONFIGS on the topic, the cluster (broker resources) or the group."""
        denied = self._config_check("DESCRIBE_CONFIGS", resource_type, name)
        return (*denied, []) if denied else self.inner.describe_configs(resource_type, name, keys)

    def alter_configs(self, resource_type: int, name: str, ops, validate_only: bool):
        """ALTER_CONFIGS on the topic, the cluster (broker resources) or the group."""
        denied = self._config_check("ALTER_CONFIGS", resource_type, name)
        return denied if denied else self.inner.alter_configs(resource_type, name, ops, validate_only)

    def list_groups(self, types: Sequence[str], states: Sequence[str]):
        """All groups with DESCRIBE on the cluster, else those with DESCRIBE on the group."""
        rows = self.inner.list_groups(types, states)
        if self._ok("DESCRIBE", "CLUSTER", CLUSTER_NAME):
            return rows
        return [r for r in rows if self._ok("DESCRIBE", "GROUP", r[0])]

    # -- data plane ---------------------------------------------------------------------------
    def produce(self, topic: str, partition: int, records: bytes, acks: int) -> ProduceResult:
        """WRITE on the topic."""
        if not self._ok("WRITE", "TOPIC", topic):
            return ProduceResult("TOPIC_AUTHORIZATION_FAILED")
        return self.inner.produce(topic, partition, records, acks)

    def fetch(self, topic: str, partition: int, offset: int, max_bytes: int, replica_id: int = -1, current_leader_epoch: int = -1) -> FetchedPartition:
        """READ on the topic; a follower fetch (``replica_id >= 0``) needs CLUSTER_ACTION on the
        cluster (``KafkaApis.handleFetchRequest``)."""
        if replica_id >= 0:
            if not self._ok("CLUSTER_ACTION", "CLUSTER", CLUSTER_NAME):
                return FetchedPartition("TOPIC_AUTHORIZATION_FAILED")
        elif not self._ok("READ", "TOPIC", topic):
            return FetchedPartition("TOPIC_AUTHORIZATION_FAILED")
        return self.inner.fetch(topic, partition, offset, max_bytes, replica_id, current_leader_epoch)

    def await_replication(self, pending, timeout_ms: int):
        """No check of its own: only partitions this request was allowed to write wait."""
        return self.inner.await_replication(pending, timeout_ms)

    def offset_for_leader_epoch(self, topic: str, partition: int, current_leader_epoch: int, leader_epoch: int):
        """CLUSTER_ACTION on the cluster, else DESCRIBE on the topic
        (``KafkaApis.handleOffsetForLeaderEpochRequest``) → TOPIC_AUTHORIZATION_FAILED."""
        if not (self._ok("CLUSTER_ACTION", "CLUSTER", CLUSTER_NAME) or self._ok("DESCRIBE", "TOPIC", topic)):
            return "TOPIC_AUTHORIZATION_FAILED", -1, -1
        return self.inner.offset_for_leader_epoch(topic, partition, current_leader_epoch, leader_epoch)

    def list_offset(self, topic: str, partition: int, timestamp: int):
        """DESCRIBE on the topic."""
        if not self._ok("DESCRIBE", "TOPIC", topic):
            return "TOPIC_AUTHORIZATION_FAILED", -1, -1
        return self.inner.list_offset(topic, partition, timestamp)

    def delete_records(self, topic: str, partition: int, offset: int):
        """DELETE on the topic (``KafkaApis.handleDeleteRecordsRequest``) → TOPIC_AUTHORIZATION_FAILED."""
        if not self._ok("DELETE", "TOPIC", topic):
            return "TOPIC_AUTHORIZATION_FAILED", -1
        return self.inner.delete_records(topic, partition, offset)

    def init_producer_id(self, transactional_id: str | None, producer_id: int, producer_epoch: int):
        """WRITE on the transactional id, or (idempotent) IDEMPOTENT_WRITE on the cluster or
        WRITE on any topic."""
        if transactional_id is not None:
            if not self._ok("WRITE", "TRANSACTIONAL_ID", transactional_id):
                return "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", -1, -1
        elif not (self._ok("IDEMPOTENT_WRITE", "CLUSTER", CLUSTER_NAME) or self.authorizer.check_any("WRITE", "TOPIC")):
            return "CLUSTER_AUTHORIZATION_FAILED", -1, -1
        return self.inner.init_producer_id(transactional_id, producer_id, producer_epoch)

    # -- share groups -------------------------------------------------------------------------
    def share_heartbeat(self, group, member_id, epoch, rack, subscribed, client_id, client_host) -> HeartbeatResult:
        """READ on the group, DESCRIBE on every subscribed topic."""
        if not self._ok("READ", "GROUP", group):
            return HeartbeatResult("GROUP_AUTHORIZATION_FAILED", "The group is not authorized")
        denied = [t for t in subscribed or () if not self._ok("DESCRIBE", "TOPIC", t)]
        if denied:
            return HeartbeatResult("TOPIC_AUTHORIZATION_FAILED", f"Topics not authorized: {sorted(denied)}")
        return self.inner.share_heartbeat(group, member_id, epoch, rack, subscribed, client_id, client_host)

    def _names(self) -> dict[str, str]:
        controller = getattr(self.inner, "controller", None)
        return controller.names_by_id() if controller is not None else {str(t.topic_id): t.name for t in self.inner.topics()}

    def _denied_ids(self, ids: set[uuid.UUID]) -> set[uuid.UUID]:
        if not ids:
            return set()
        names = self._names()
        return {tid for tid in ids if str(tid) in names and not self._ok("READ", "TOPIC", names[str(tid)])}

    def share_fetch(self, group, member, epoch, wanted, forgotten, acks, max_records, max_wait_ms, *args: Any, **kw: Any) -> ShareFetchResult:
        """READ on the group; READ on each topic (denied partitions answer
        TOPIC_AUTHORIZATION_FAILED, their acknowledgements are not applied). ``args``/``kw``: the
        request's acquire mode, batch size and renew flag, and the forwarding node, passed on."""
        if not self._ok("READ", "GROUP", group):
            return ShareFetchResult("GROUP_AUTHORIZATION_FAILED", "The group is not authorized")
        denied = self._denied_ids({t for t, _ in wanted} | {a.topic_id for a in acks})
        if not denied:
            return self.inner.share_fetch(group, member, epoch, wanted, forgotten, acks, max_records, max_wait_ms, *args, **kw)
        r = self.inner.share_fetch(group, member, epoch, [w for w in wanted if w[0] not in denied], forgotten, [a for a in acks if a.topic_id not in denied], max_records, max_wait_ms,
                                   *args, **kw)
        return self._with_denied(r, {w for w in wanted if w[0] in denied} | {(a.topic_id, a.partition) for a in acks if a.topic_id in denied}, fetch=True)

    def share_acknowledge(self, group, member, epoch, acks, **kw: Any) -> ShareFetchResult:
        """READ on the group; READ on each topic (as :meth:`share_fetch`)."""
        if not self._ok("READ", "GROUP", group):
            return ShareFetchResult("GROUP_AUTHORIZATION_FAILED", "The group is not authorized")
        denied = self._denied_ids({a.topic_id for a in acks})
        if not denied:
            return self.inner.share_acknowledge(group, member, epoch, acks, **kw)
        r = self.inner.share_acknowledge(group, member, epoch, [a for a in acks if a.topic_id not in denied], **kw)
        return self._with_denied(r, {(a.topic_id, a.partition) for a in acks if a.topic_id in denied}, fetch=False)

    @staticmethod
    def _with_denied(r: ShareFetchResult, denied: set[tuple[uuid.UUID, int]], fetch: bool) -> ShareFetchResult:
        if r.error is not None:
            return r
        err = "TOPIC_AUTHORIZATION_FAILED"
        extra = tuple(
            ShareFetchPartition(tid, p, error=err if fetch else None, ack_error=err) for tid, p in sorted(denied, key=lambda x: (str(x[0]), x[1]))
        )
        return replace(r, partitions=tuple(r.partitions) + extra)

    def share_group_describe(self, group: str) -> dict:
        """DESCRIBE on the group."""
        if not self._ok("DESCRIBE", "GROUP", group):
            return {"error": "GROUP_AUTHORIZATION_FAILED", "message": "The group is not authorized"}
        return self.inner.share_group_describe(group)

    def share_group_offsets(self, group: str, topics):
        """DESCRIBE on the group; DESCRIBE on each topic (denied ones: per partition
        TOPIC_AUTHORIZATION_FAILED, start offset -1)."""
        if not self._ok("DESCRIBE", "GROUP", group):
            return "GROUP_AUTHORIZATION_FAILED", "The group is not authorized", []
        err, msg, rows = self.inner.share_group_offsets(group, topics)
        out = []
        for tname, tid, parts in rows:
            if self._ok("DESCRIBE", "TOPIC", tname):
                out.append((tname, tid, parts))
            else:
                out.append((tname, tid, [(p, -1, "TOPIC_AUTHORIZATION_FAILED") for p, _so, _e in parts]))
        return err, msg, out

    # -- classic consumer groups (issue 16; KafkaApis handleJoinGroupRequest … handleOffsetFetchRequest)
    def consumer_join(self, cmd):
        """READ on the group → GROUP_AUTHORIZATION_FAILED."""
        if not self._ok("READ", "GROUP", cmd.group_id):
            return JoinGroupResult("GROUP_AUTHORIZATION_FAILED", member_id=cmd.member_id)
        return self.inner.consumer_join(cmd)

    def consumer_sync(self, cmd):
        """READ on the group → GROUP_AUTHORIZATION_FAILED."""
        if not self._ok("READ", "GROUP", cmd.group_id):
            return ClassicSyncResult("GROUP_AUTHORIZATION_FAILED")
        return self.inner.consumer_sync(cmd)

    def consumer_heartbeat(self, cmd):
        """READ on the group → GROUP_AUTHORIZATION_FAILED."""
        if not self._ok("READ", "GROUP", cmd.group_id):
            return ClassicHeartbeatResult("GROUP_AUTHORIZATION_FAILED")
        return self.inner.consumer_heartbeat(cmd)

    def consumer_leave(self, cmd):
        """READ on the group → GROUP_AUTHORIZATION_FAILED (top level)."""
        if not self._ok("READ", "GROUP", cmd.group_id):
            return LeaveGroupResult("GROUP_AUTHORIZATION_FAILED")
        return self.inner.consumer_leave(cmd)

    def consumer_commit(self, cmd):
        """READ on the group (else every partition GROUP_AUTHORIZATION_FAILED); READ on each
        topic (denied partitions TOPIC_AUTHORIZATION_FAILED, not committed)."""
        if not self._ok("READ", "GROUP", cmd.group_id):
            return OffsetCommitResult(tuple((p.topic, p.partition, "GROUP_AUTHORIZATION_FAILED") for p in cmd.partitions))
        allowed = {t for t in {p.topic for p in cmd.partitions} if self._ok("READ", "TOPIC", t)}
        ok = tuple(p for p in cmd.partitions if p.topic in allowed)
        got = {}
        if ok:
            got = {(t, q): e for t, q, e in self.inner.consumer_commit(replace(cmd, partitions=ok)).partitions}
        return OffsetCommitResult(tuple(
            (p.topic, p.partition, got.get((p.topic, p.partition), "TOPIC_AUTHORIZATION_FAILED")) for p in cmd.partitions))

    def consumer_fetch_offsets(self, group: str, partitions, member_id=None, member_epoch=-1):
        """DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED); DESCRIBE on each topic:
        requested partitions of denied topics answer TOPIC_AUTHORIZATION_FAILED, and "all
        offsets" leaves denied topics out."""
        if not self._ok("DESCRIBE", "GROUP", group):
            return "GROUP_AUTHORIZATION_FAILED", []
        member = {} if member_id is None and member_epoch < 0 else {"member_id": member_id, "member_epoch": member_epoch}
        err, offsets = self.inner.consumer_fetch_offsets(group, partitions, **member)
        ok: dict[str, bool] = {}
        out = []
        for o in offsets:
            if ok.setdefault(o.topic, self._ok("DESCRIBE", "TOPIC", o.topic)):
                out.append(o)
            elif partitions is not None:
                out.append(replace(o, offset=-1, leader_epoch=-1, metadata="", error="TOPIC_AUTHORIZATION_FAILED"))
        return err, out

    # -- group admin (KafkaApis handleDescribeGroupsRequest, handleDeleteGroupsRequest,
    #    handleOffsetDeleteRequest, handleAlterShareGroupOffsetsRequest,
    #    handleDeleteShareGroupOffsetsRequest)
    def describe_group(self, group: str):
        """DESCRIBE on the group → GROUP_AUTHORIZATION_FAILED (state "", no members)."""
        if not self._ok("DESCRIBE", "GROUP", group):
            return "GROUP_AUTHORIZATION_FAILED", None, DescribedGroup(group, "", "", "", ())
        return self.inner.describe_group(group)

    def delete_group(self, group: str):
        """DELETE on the group → GROUP_AUTHORIZATION_FAILED."""
        if not self._ok("DELETE", "GROUP", group):
            return "GROUP_AUTHORIZATION_FAILED"
        return self.inner.delete_group(group)

    def consumer_delete_offsets(self, group: str, partitions):
        """DELETE on the group (else the response's error is GROUP_AUTHORIZATION_FAILED); READ on
        each topic (denied partitions TOPIC_AUTHORIZATION_FAILED, not deleted)."""
        if not self._ok("DELETE", "GROUP", group):
            return OffsetDeleteResult("GROUP_AUTHORIZATION_FAILED")
        allowed = {t for t in {t for t, _ in partitions} if self._ok("READ", "TOPIC", t)}
        r = self.inner.consumer_delete_offsets(group, [(t, p) for t, p in partitions if t in allowed])
        got = {(t, p): e for t, p, e in r.partitions}
        return OffsetDeleteResult(r.error, tuple(
            (t, p, got[(t, p)] if t in allowed else "TOPIC_AUTHORIZATION_FAILED")
            for t, p in partitions if t not in allowed or (t, p) in got))

    def _topic_ids(self) -> dict[str, uuid.UUID]:
        return {t.name: t.topic_id for t in self.inner.topics()}

    def share_alter_offsets(self, group: str, topics):
        """READ on the group → GROUP_AUTHORIZATION_FAILED; READ on each topic (denied topics:
        every partition TOPIC_AUTHORIZATION_FAILED)."""
        if not self._ok("READ", "GROUP", group):
            return "GROUP_AUTHORIZATION_FAILED", "The group is not authorized", []
        denied = {n for n, _ in topics if not self._ok("READ", "TOPIC", n)}
        ok = [(n, ps) for n, ps in topics if n not in denied]
        err, msg, rows = self.inner.share_alter_offsets(group, ok)  # the group is validated even with no topic left
        if err is not None:
            return err, msg, rows
        by_name = {r[0]: r for r in rows}
        ids = self._topic_ids() if denied else {}
        out = []
        for n, ps in topics:
            if n in denied:
                out.append((n, ids.get(n), [(p, "TOPIC_AUTHORIZATION_FAILED", None) for p, _o in ps]))
            elif n in by_name:
                out.append(by_name.pop(n))
        return None, None, out

    def share_delete_offsets(self, group: str, topics):
        """DELETE on the group → GROUP_AUTHORIZATION_FAILED; READ on each topic (denied topics:
        TOPIC_AUTHORIZATION_FAILED, no topic id)."""
        if not self._ok("DELETE", "GROUP", group):
            return "GROUP_AUTHORIZATION_FAILED", "The group is not authorized", []
        denied = {n for n in topics if not self._ok("READ", "TOPIC", n)}
        err, msg, rows = self.inner.share_delete_offsets(group, [n for n in topics if n not in denied])
        if err is not None:
            return err, msg, rows
        return None, None, [(n, None, "TOPIC_AUTHORIZATION_FAILED", "Topic authorization failed.") for n in dict.fromkeys(topics) if n in denied] + list(rows)
    # -- KIP-848 consumer groups (KafkaApis handleConsumerGroupHeartbeat / handleConsumerGroupDescribe)
    def consumer_group_heartbeat(self, cmd):
        """READ on the group; DESCRIBE on every subscribed topic."""
        if not self._ok("READ", "GROUP", cmd.group_id):
            return ConsumerHeartbeatResult("GROUP_AUTHORIZATION_FAILED", "The group is not authorized", cmd.member_id, cmd.member_epoch)
        denied = sorted(t for t in cmd.subscribed_topic_names or () if not self._ok("DESCRIBE", "TOPIC", t))
        if denied:
            return ConsumerHeartbeatResult("TOPIC_AUTHORIZATION_FAILED", f"The following topics are not authorized: {', '.join(denied)}",
                                           cmd.member_id, cmd.member_epoch)
        return self.inner.consumer_group_heartbeat(cmd)

    def consumer_group_describe(self, group: str):
        """DESCRIBE on the group; a group whose members subscribe to or are assigned a topic the
        client may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED (no members)."""
        if not self._ok("DESCRIBE", "GROUP", group):
            return ConsumerGroupDescription(group, "GROUP_AUTHORIZATION_FAILED")
        d = self.inner.consumer_group_describe(group)
        if d.error is not None:
            return d
        topics = {t for mem in d.members for t in mem.subscribed_topic_names}
        topics |= {name for mem in d.members for parts in (mem.assignment, mem.target_assignment) for _tid, name, _ps in parts if name}
        if any(not self._ok("DESCRIBE", "TOPIC", t) for t in topics):
            return ConsumerGroupDescription(group, "TOPIC_AUTHORIZATION_FAILED")
        return d

    # -- SCRAM credentials (KIP-554) ----------------------------------------------------------
    def describe_user_scram_credentials(self, users):
        """DESCRIBE on the cluster, else the whole response is CLUSTER_AUTHORIZATION_FAILED
        (``KafkaApis.handleDescribeUserScramCredentialsRequest``)."""
        if not self._ok("DESCRIBE", "CLUSTER", CLUSTER_NAME):
            return "CLUSTER_AUTHORIZATION_FAILED", "Cluster authorization failed.", []
        return self.inner.describe_user_scram_credentials(users)

    def alter_user_scram_credentials(self, deletions, upsertions):
        """ALTER on the cluster, else every user named gets CLUSTER_AUTHORIZATION_FAILED and
        nothing is changed (``KafkaApis.handleAlterUserScramCredentialsRequest``)."""
        if not self._ok("ALTER", "CLUSTER", CLUSTER_NAME):
            users = dict.fromkeys([d.name for d in deletions] + [u.name for u in upsertions])
            return [AlterResult(u, "CLUSTER_AUTHORIZATION_FAILED", "Cluster authorization failed.") for u in users]
        return self.inner.alter_user_scram_credentials(deletions, upsertions)
