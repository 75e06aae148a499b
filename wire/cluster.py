"""A node of a Shoal cluster, as its listener process runs it (issue 15): the metadata image it
follows from the shared log, the channel to other nodes, and the broker lifecycle (register,
heartbeat, take over a dead controller).

The cluster's metadata is the ``controller`` stream of the shared PostgreSQL event log (KRaft's
metadata log): one active ControllerActor appends to it, every node folds it.

* :class:`ClusterMetadata` is this node's :class:`~wire.cluster_view.ClusterView`: it folds the
  controller stream (the same :func:`actors.controller.state.apply` the controller uses) as soon
  as the controller announces an append (PostgreSQL ``LISTEN``/``NOTIFY``), and at least every
  ``shoal.cluster.metadata.poll.ms``, and tells subscribers which partitions changed (KRaft's
  broker ``MetadataLoader`` → ``MetadataPublisher``).
* :class:`BrokerChannel` is a blocking Kafka-protocol connection to another node; inter-node
  control goes over Kafka's own controller RPCs encoded by kio (BrokerRegistration 62,
  BrokerHeartbeat 63, AlterPartition 56, AllocateProducerIds 67), data over Fetch. There is no
  protocol of Shoal's own between nodes.
* :class:`BrokerLifecycle` is KRaft's ``BrokerLifecycleManager``: it registers this node with the
  active controller, heartbeats every ``broker.heartbeat.interval.ms`` and, when no controller
  was ever elected or the active one has not answered for ``broker.session.timeout.ms``, asks
  this node's ControllerActor to claim the role (a fenced append; of several claimants one
  wins, and the unreachable controller's node is fenced in the same append).

Inter-node connections use the first PLAINTEXT listener of the target node.
"""

from __future__ import annotations

import datetime
import json
import logging
import socket
import struct
import threading
import time
import uuid
from typing import Any, Callable, Iterable, Mapping, Sequence

from kio.schema.alter_partition.v3.request import AlterPartitionRequest, BrokerState, PartitionData, TopicData
from kio.schema.broker_heartbeat.v2.request import BrokerHeartbeatRequest
from kio.schema.broker_registration.v4.request import BrokerRegistrationRequest, Listener
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.list_offsets.v9.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i16, i32, i64, u16

from actors.controller.cluster import NO_CONTROLLER, BrokerRegistration
from actors.controller.state import ControllerState, apply
from actors.controller.topics import effective_topic_config
from events.controller import STREAM_ID, BrokerEndpoint
from wire.cluster_view import PartitionState
from wire.entities import error_name
from wire.protocol import decode_response, encode_request, request_header

__all__ = ["BrokerChannel", "BrokerLifecycle", "ClusterMetadata", "RpcError", "SECURITY_PROTOCOL_IDS"]

log = logging.getLogger("shoal.wire.cluster")

#: Kafka's ``SecurityProtocol`` ids (BrokerRegistration's listeners carry them)
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


def _now_ms() -> int:
    return int(time.time() * 1000)


class RpcError(Exception):
    """A request to another node failed: it could not be reached, it closed the connection, or
    the answer did not come within the timeout."""


class BrokerChannel:
    """One blocking Kafka connection to ``(host, port)``, opened on first use and again after a
    failure. :meth:`ask` sends one request (a kio request entity) and returns the decoded response
    body; raises :class:`RpcError` on any connection failure or timeout (the connection is then
    closed). Thread-safe: one request at a time."""

    def __init__(self, host: str, port: int, client_id: str, timeout_ms: int = 30_000) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_ms / 1000
        self._sock: socket.socket | None = None
        self._cid = 0
        self._lock = threading.Lock()

    def ask(self, api_key: int, api_version: int, body: Any, timeout_ms: int | None = None) -> Any:
        """Send ``body`` as ``api_key`` v``api_version``; the response body. Raises :class:`RpcError`."""
        with self._lock:
            try:
                if self._sock is None:
                    self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
                    self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._sock.settimeout(self.timeout_s if timeout_ms is None else timeout_ms / 1000)
                self._cid = (self._cid + 1) & 0x7FFFFFFF
                self._sock.sendall(encode_request(request_header(api_key, api_version, self._cid, self.client_id), body))
                (size,) = struct.unpack(">i", self._recv(4))
                cid, resp = decode_response(self._recv(size), api_key, api_version)
                if cid != self._cid:
                    raise RpcError(f"correlation id {cid} != {self._cid}")
                return resp
            except RpcError:
                self._close()
                raise
            except (OSError, ValueError, struct.error) as exc:
                self._close()
                raise RpcError(f"{self.host}:{self.port}: {type(exc).__name__}: {exc}") from exc

    def _recv(self, n: int) -> bytes:
        assert self._sock is not None
        buf = bytearray()
        while len(buf) < n:
            chunk = self._sock.recv(n - len(buf))
            if not chunk:
                raise RpcError(f"{self.host}:{self.port} closed the connection")
            buf += chunk
        return bytes(buf)

    def _close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None

    def close(self) -> None:
        """Close the connection (the next :meth:`ask` reconnects)."""
        with self._lock:
            self._close()

    def abort(self) -> None:
        """Shut the socket down without waiting for the request in flight, which then fails with
        :class:`RpcError` (how a replica fetcher blocked in a long poll is stopped)."""
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


#: the Fetch version nodes speak to each other (topic names: v12 is the last before topic ids)
FETCH_VERSION = 12
#: the ListOffsets version nodes speak to each other (v8+ knows EARLIEST_LOCAL -4, KIP-405)
LIST_OFFSETS_VERSION = 9


def fetch_request(replica_id: int, parts: Sequence[tuple[str, int, int, int, int, int]], max_wait_ms: int, min_bytes: int,
                  max_bytes: int) -> FetchRequest:
    """A Fetch v12 (READ_UNCOMMITTED, no fetch session) from ``replica_id`` (a follower's node
    id, or -1: a consumer) of ``parts``: ``(topic, partition, fetch offset, partition max bytes,
    current leader epoch, log start offset)`` (-1: unknown), waiting up to ``max_wait_ms`` for
    ``min_bytes``, answering at most ``max_bytes``."""
    by_topic: dict[str, list[FetchPartition]] = {}
    for topic, p, offset, part_max, epoch, lso in parts:
        by_topic.setdefault(topic, []).append(FetchPartition(partition=i32(p), current_leader_epoch=i32(epoch), fetch_offset=i64(offset),
                                                             last_fetched_epoch=i32(-1), log_start_offset=i64(lso),
                                                             partition_max_bytes=i32(part_max)))
    return FetchRequest(replica_id=i32(replica_id), max_wait=datetime.timedelta(milliseconds=max_wait_ms), min_bytes=i32(min_bytes),
                        max_bytes=i32(max_bytes), isolation_level=i8(0), session_id=i32(0), session_epoch=i32(-1),
                        topics=tuple(FetchTopic(topic=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
                        forgotten_topics_data=(), rack_id="")


def list_offset_request(topic: str, partition: int, timestamp: int, replica_id: int = -1, leader_epoch: int = -1) -> ListOffsetsRequest:
    """A ListOffsets v9 (:data:`LIST_OFFSETS_VERSION`, READ_UNCOMMITTED) of ``timestamp`` (ms, or
    Kafka's -1 latest, -2 earliest, -4 earliest-local) on ``topic``-``partition``; answer it with
    :func:`list_offset_answer`."""
    return ListOffsetsRequest(replica_id=BrokerId(replica_id), isolation_level=i8(0), topics=(ListOffsetsTopic(
        name=TopicName(topic), partitions=(ListOffsetsPartition(partition_index=i32(partition), current_leader_epoch=i32(leader_epoch),
                                                                timestamp=i64(timestamp)),)),))


def list_offset_answer(resp: Any, topic: str, partition: int) -> tuple[str | None, int]:
    """``(error name or None, offset)`` of ``topic``-``partition`` in a ListOffsets response
    (offset -1 when none); UNKNOWN_SERVER_ERROR when the response does not name it."""
    for t in getattr(resp, "topics", ()):
        for r in t.partitions:
            if str(t.name) == topic and int(r.partition_index) == partition:
                return error_name(r.error_code), int(r.offset)
    return "UNKNOWN_SERVER_ERROR", -1


class ChannelPool:
    """Pooled :class:`BrokerChannel`s per endpoint, for requests from many threads at once (one
    request in flight per channel: a long poll holds its channel, so the pool grows to the
    requests in flight). ``client_id`` and ``timeout_ms`` are the new channels'. Thread-safe."""

    def __init__(self, client_id: str, timeout_ms: int = 30_000) -> None:
        self.client_id = client_id
        self.timeout_ms = timeout_ms
        self._idle: dict[tuple[str, int], list[BrokerChannel]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def take(self, endpoint: tuple[str, int]) -> BrokerChannel:
        """An idle channel to ``endpoint`` ``(host, port)``, or a new one; hand it back with
        :meth:`give_back`."""
        with self._lock:
            idle = self._idle.get(endpoint)
            if idle:
                return idle.pop()
        return BrokerChannel(endpoint[0], endpoint[1], self.client_id, self.timeout_ms)

    def ask(self, endpoint: tuple[str, int], api_key: int, api_version: int, body: Any, timeout_ms: int | None = None) -> Any:
        """One request to ``endpoint`` on a pooled channel (:meth:`BrokerChannel.ask`); the
        response body. Raises :class:`RpcError` (the channel is then closed, not pooled)."""
        ch = self.take(endpoint)
        ok = False
        try:
            resp = ch.ask(api_key, api_version, body, timeout_ms)
            ok = True
            return resp
        finally:
            self.give_back(ch, ok)

    def give_back(self, ch: BrokerChannel, ok: bool) -> None:
        """Return ``ch`` to the pool; ``ok`` False (its request failed) closes it instead."""
        if not ok:
            ch.close()
            return
        with self._lock:
            if not self._closed:
                self._idle.setdefault((ch.host, ch.port), []).append(ch)
                return
        ch.close()

    def close(self) -> None:
        """Close the idle channels; channels handed back later are closed."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, {}
        for chans in idle.values():
            for ch in chans:
                ch.close()


def inter_broker_endpoint(reg: BrokerRegistration) -> BrokerEndpoint | None:
    """The endpoint other nodes use to reach ``reg``'s broker: its first PLAINTEXT listener."""
    return next((e for e in reg.endpoints if e.security_protocol == "PLAINTEXT"), None)


class ClusterMetadata:
    """This node's metadata image, folded from the controller stream of ``elog`` (see the module
    docstring). ``channels(node_id)`` gives the :class:`BrokerChannel` to a node (shared with
    the lifecycle). Thread-safe; readers never block on the fold."""

    def __init__(self, cfg: Mapping[str, str], node_id: int, elog: Any) -> None:
        self.node_id = node_id
        self._cfg = dict(cfg)
        self._elog = elog
        self._poll_s = max(1, int(cfg.get("shoal.cluster.metadata.poll.ms", 100))) / 1000
        self._timeout_ms = int(cfg.get("controller.socket.timeout.ms", 30_000))
        self._state = ControllerState(static_config={k: str(v) for k, v in cfg.items()}, brokers=())
        self._parts: dict[tuple[str, int], PartitionState] = {}
        self._topic_ids: dict[str, uuid.UUID] = {}
        self._names_by_id: dict[uuid.UUID, str] = {}
        self._brokers: dict[int, BrokerRegistration] = {}
        self._controller = (NO_CONTROLLER, 0)
        self._callbacks: list[Callable[[Iterable[tuple[str, int]]], None]] = []
        #: topic → its config overrides and dynamic broker configs as last published, the
        #: effective configs computed from them, and who is told when they change
        self._topic_overrides: dict[str, Any] = {}
        self._broker_configs: dict[str, dict[str, str]] = {}
        self._topic_configs: dict[str, dict[str, str]] = {}
        self._config_callbacks: list[Callable[[Iterable[str]], None]] = []
        self._changed = threading.Condition()
        self._version = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._channels: dict[tuple[str, int], BrokerChannel] = {}
        self._chan_lock = threading.Lock()
        self._fold_lock = threading.Lock()
        self._catch_up_lock = threading.Lock()
        self._caught_up_at = 0.0  # monotonic s when the last catch_up fold began

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> "ClusterMetadata":
        """Fold the stream from its latest snapshot (synchronously), then follow it in a thread."""
        snap = self._elog.load_snapshot(STREAM_ID)
        if snap is not None:
            self._state.load_dict(json.loads(snap.state), snap.stream_version)
        self.poll()
        self._thread = threading.Thread(target=self._run, name="shoal-cluster-metadata", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop following and close every channel."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._chan_lock:
            for ch in self._channels.values():
                ch.close()
            self._channels.clear()

    def _run(self) -> None:
        """Fold the stream whenever the controller announces an append (PostgreSQL ``LISTEN``,
        :meth:`store.event_log.EventLog.announce`) and at least every poll interval (a lost
        notification, a lost listener connection, SQLite)."""
        listener = None
        while not self._stop.is_set():
            if listener is None:
                try:
                    listener = self._elog.append_listener()
                except Exception as exc:  # the database is away: poll, and try again next round
                    log.warning("listening for controller appends failed: %s", exc)
            if listener is None:
                self._stop.wait(self._poll_s)
            else:
                try:
                    listener.wait(self._poll_s)
                except Exception as exc:
                    log.warning("the controller-append listener was lost: %s", exc)
                    listener.close()
                    listener = None
                    self._stop.wait(self._poll_s)
            if self._stop.is_set():
                break
            try:
                self.poll()
            except Exception:  # a lost database connection: retried at the next poll
                log.exception("following the controller stream failed")
        if listener is not None:
            listener.close()

    def poll(self) -> int:
        """Fold whatever the stream has beyond the image; returns the folded stream version and
        tells subscribers which partitions changed. Callers in several threads are serialised
        (the follow thread and the lifecycle after a claim), so no event is folded twice."""
        with self._fold_lock:
            st = self._state
            if self._elog.stream_version(STREAM_ID) <= st.version:
                return st.version
            while True:
                batch = self._elog.read_stream(STREAM_ID, from_version=st.version + 1, limit=1000)
                if not batch:
                    break
                for rec in batch:
                    apply(st, rec.decode())
                    st.version = rec.stream_version
            self._publish()
            return st.version

    def catch_up(self) -> None:
        """Fold the stream now (:meth:`poll`) for a request that showed the image is behind
        (:meth:`wire.cluster_view.ClusterView.catch_up`). Concurrent callers share a fold: one
        that began after a caller arrived answers for it too."""
        called = time.monotonic()
        with self._catch_up_lock:
            if self._caught_up_at >= called:
                return
            started = time.monotonic()
            self.poll()
            self._caught_up_at = started

    def _publish(self) -> None:
        st = self._state
        parts: dict[tuple[str, int], PartitionState] = {}
        ids: dict[str, uuid.UUID] = {}
        for name, t in st.topics.topics.items():
            ids[name] = uuid.UUID(t.topic_id) if not isinstance(t.topic_id, uuid.UUID) else t.topic_id
            for p in t.partitions:
                parts[(name, p.partition)] = PartitionState(tuple(p.replicas), tuple(p.isr), p.leader, p.leader_epoch, p.partition_epoch)
        changed = [k for k, v in parts.items() if self._parts.get(k) != v] + [k for k in self._parts if k not in parts]
        overrides = {name: dict(t.configs) for name, t in st.topics.topics.items()}  # copies: a fold may change them in place
        brokers_changed = st.topics.dynamic_broker_configs != self._broker_configs
        stale = [n for n, c in overrides.items() if brokers_changed or self._topic_overrides.get(n, None) != c or n not in self._topic_configs]
        reconfigured = [n for n in stale if n in self._topic_overrides]
        configs = {n: c for n, c in self._topic_configs.items() if n in overrides}
        for n in stale:  # computed here, under the fold: a reader never waits for a fold (LogRegistry.open calls topic_config)
            configs[n] = {k: v for k, v in effective_topic_config(st.topics, n).items() if v is not None}
        self._topic_overrides = overrides
        self._broker_configs = {k: dict(v) for k, v in st.topics.dynamic_broker_configs.items()}
        self._topic_configs = configs
        with self._changed:
            self._parts = parts
            self._topic_ids = ids
            self._names_by_id = {v: k for k, v in ids.items()}
            self._brokers = dict(st.cluster.brokers)
            self._controller = (st.cluster.controller_id, st.cluster.controller_epoch)
            self._version = st.version
            self._changed.notify_all()
        for subscribers, what in ((self._callbacks, changed), (self._config_callbacks, reconfigured)):
            for cb in list(subscribers) if what else ():
                try:
                    cb(what)
                except Exception:
                    log.exception("metadata subscriber failed")

    def wait_for(self, predicate: Callable[["ClusterMetadata"], bool], timeout_s: float) -> bool:
        """Block until ``predicate(self)`` holds after some fold (or already does); False on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True

    # -- the image (ClusterView) -----------------------------------------------------------------
    @property
    def version(self) -> int:
        """The controller stream version folded."""
        return self._version

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        """The partition's registration, ``None`` if unknown."""
        return self._parts.get((topic, partition))

    def topic_id(self, topic: str) -> uuid.UUID | None:
        """The topic's id, ``None`` if unknown."""
        return self._topic_ids.get(topic)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic with ``topic_id``, ``None`` if unknown."""
        return self._names_by_id.get(topic_id)

    def registration(self, node_id: int) -> BrokerRegistration | None:
        """``node_id``'s registration, ``None`` if it never registered."""
        return self._brokers.get(node_id)

    def broker_endpoint(self, node_id: int) -> tuple[str, int] | None:
        """``(host, port)`` of ``node_id``'s inter-broker (first PLAINTEXT) listener."""
        reg = self._brokers.get(node_id)
        ep = inter_broker_endpoint(reg) if reg is not None else None
        return (ep.host, ep.port) if ep is not None else None

    def live_brokers(self) -> tuple[int, ...]:
        """Registered, unfenced broker ids, sorted."""
        return tuple(sorted(b for b, r in self._brokers.items() if not r.fenced))

    def controller(self) -> tuple[int, int]:
        """``(controller_id, controller_epoch)`` as folded (-1: none elected yet)."""
        return self._controller

    def metadata_brokers(self, listener: str | None) -> list[tuple[int, str, int, str | None]]:
        """``(node_id, host, port, rack)`` of every live broker on ``listener`` (by name; the
        first endpoint when the broker has no such listener or ``listener`` is ``None``), sorted."""
        out = []
        for b in self.live_brokers():
            reg = self._brokers[b]
            ep = reg.endpoint(listener) or reg.endpoint()
            if ep is not None:
                out.append((b, ep.host, ep.port, reg.rack))
        return out

    def on_change(self, callback: Callable[[Iterable[tuple[str, int]]], None]) -> None:
        """Call ``callback(changed_partitions)`` from the follow thread after each fold that
        changed partition registrations."""
        self._callbacks.append(callback)

    def on_config_change(self, callback: Callable[[Iterable[str]], None]) -> None:
        """Call ``callback(topic names)`` from the follow thread after each fold that changed the
        config overrides of existing topics or the dynamic broker configs (IncrementalAlterConfigs
        on any node)."""
        self._config_callbacks.append(callback)

    def topic_config(self, topic: str) -> dict[str, str]:
        """The effective configs of ``topic`` in this image: every topic config key with a value
        (its override, else the broker's, else Kafka's default), as the controller describes them
        (``actors.controller.topics.effective_topic_config``). A node opening the log of a
        partition its image just gained has these at once, where the controller client's cache
        may not yet know the topic. Raises ``KeyError`` for a topic the image lacks. Never waits
        for a fold (the configs are computed when a fold publishes them)."""
        return dict(self._topic_configs[topic])

    def channel(self, node_id: int) -> BrokerChannel | None:
        """The shared :class:`BrokerChannel` to ``node_id``'s inter-broker endpoint (``None``
        if it has none); a new endpoint gets a new channel."""
        ep = self.broker_endpoint(node_id)
        return self.channel_to(ep) if ep is not None else None

    def channel_to(self, endpoint: tuple[str, int]) -> BrokerChannel:
        """The shared :class:`BrokerChannel` to ``endpoint``."""
        with self._chan_lock:
            ch = self._channels.get(endpoint)
            if ch is None:
                ch = self._channels[endpoint] = BrokerChannel(endpoint[0], endpoint[1], f"shoal-node-{self.node_id}", self._timeout_ms)
            return ch

    def alter_partition(self, topic: str, partition: int, leader_epoch: int, partition_epoch: int, new_isr: tuple[int, ...]) -> tuple[str | None, PartitionState | None]:
        """AlterPartition (API 56 v3) to the active controller (see
        :meth:`wire.cluster_view.ClusterView.alter_partition`)."""
        tid = self.topic_id(topic)
        ctrl, _epoch = self.controller()
        ch = self.channel(ctrl) if ctrl != NO_CONTROLLER else None
        if tid is None or ch is None:
            return ("UNKNOWN_TOPIC_OR_PARTITION" if tid is None else "NOT_CONTROLLER"), self.partition_state(topic, partition)
        reg = self.registration(self.node_id)
        body = AlterPartitionRequest(
            broker_id=i32(self.node_id),
            broker_epoch=i64(reg.broker_epoch if reg else -1),
            topics=(
                TopicData(
                    topic_id=tid,
                    partitions=(
                        PartitionData(
                            partition_index=i32(partition),
                            leader_epoch=i32(leader_epoch),
                            new_isr_with_epochs=tuple(BrokerState(broker_id=i32(b), broker_epoch=i64(-1)) for b in new_isr),
                            partition_epoch=i32(partition_epoch),
                        ),
                    ),
                ),
            ),
        )
        try:
            resp = ch.ask(56, 3, body)
        except RpcError as exc:
            log.warning("AlterPartition %s-%d: %s", topic, partition, exc)
            return "REQUEST_TIMED_OUT", self.partition_state(topic, partition)
        if int(resp.error_code) != 0:
            return error_name(int(resp.error_code)), self.partition_state(topic, partition)
        p = resp.topics[0].partitions[0]
        if int(p.error_code) != 0:
            return error_name(int(p.error_code)), self.partition_state(topic, partition)
        cur = self.partition_state(topic, partition)
        replicas = cur.replicas if cur is not None else tuple(int(b) for b in p.isr)
        return None, PartitionState(replicas, tuple(int(b) for b in p.isr), int(p.leader_id), int(p.leader_epoch), int(p.partition_epoch))


class BrokerLifecycle:
    """KRaft's ``BrokerLifecycleManager`` for this node (see the module docstring).

    ``endpoints``: this node's advertised listeners (:class:`~events.controller.BrokerEndpoint`,
    listener order); ``claim(seen_epoch, fence) -> error | None`` asks the local ControllerActor
    to become active. :meth:`wait_unfenced` blocks until the controller has unfenced this node."""

    def __init__(
        self,
        cfg: Mapping[str, str],
        node_id: int,
        metadata: ClusterMetadata,
        endpoints: Sequence[BrokerEndpoint],
        claim: Callable[[int, tuple[int, ...]], str | None],
    ) -> None:
        self.node_id = node_id
        self.metadata = metadata
        self.endpoints = tuple(endpoints)
        self._claim = claim
        self.cluster_id = str(cfg.get("cluster.id") or "shoal-cluster")
        self.rack = cfg.get("broker.rack") or None
        self.incarnation_id = uuid.uuid4()
        self.heartbeat_ms = int(cfg.get("broker.heartbeat.interval.ms", 2000))
        self.session_ms = int(cfg.get("broker.session.timeout.ms", 9000))
        self.broker_epoch = -1
        self.fenced = True
        self._contact_ms = _now_ms()  # last answer from the controller of _contact_epoch
        self._contact_epoch = -1
        self._stop = threading.Event()
        self._unfenced = threading.Event()
        self._thread: threading.Thread | None = None
        self._channels: dict[tuple[str, int], BrokerChannel] = {}
        own = next((e for e in self.endpoints if e.security_protocol == "PLAINTEXT"), None)
        if own is None:
            raise ValueError("a cluster node needs a PLAINTEXT listener for inter-broker traffic")
        self._own = (own.host, own.port)

    def start(self) -> "BrokerLifecycle":
        """Run the lifecycle in a daemon thread."""
        self._thread = threading.Thread(target=self._run, name="shoal-broker-lifecycle", daemon=True)
        self._thread.start()
        return self

    def wait_unfenced(self, timeout_s: float) -> bool:
        """True once this node is registered and unfenced (within ``timeout_s``)."""
        return self._unfenced.wait(timeout_s)

    def stop(self, controlled: bool = True) -> None:
        """Stop heartbeating; with ``controlled``, first ask to be fenced so that the partitions
        this node leads move at once (Kafka's controlled shutdown) instead of after a session."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if controlled and self.broker_epoch >= 0:
            try:
                self._heartbeat(want_fence=True)
                # until the image shows this node fenced, it still leads its partitions here
                self.metadata.poll()
                self.metadata.wait_for(lambda m: (r := m.registration(self.node_id)) is None or r.fenced, 2.0)
            except Exception as exc:
                log.info("controlled shutdown heartbeat failed: %s", exc)
        for ch in self._channels.values():
            ch.close()

    # -- the loop ------------------------------------------------------------------------------
    def _controller_channel(self, ctrl: int) -> BrokerChannel | None:
        """The lifecycle's own channel to the controller's node (never shared with AlterPartition
        or AllocateProducerIds, so a slow request never delays a heartbeat), with a timeout of
        half a session, so that a hung controller counts as unreachable in time."""
        ep = self._own if ctrl == self.node_id else self.metadata.broker_endpoint(ctrl)
        if ep is None:
            return None
        ch = self._channels.get(ep)
        if ch is None:
            ch = self._channels[ep] = BrokerChannel(ep[0], ep[1], f"shoal-node-{self.node_id}-lifecycle", max(100, self.session_ms // 2))
        return ch

    def _run(self) -> None:
        while not self._stop.is_set():
            wait_ms = self.heartbeat_ms if not self.fenced else min(self.heartbeat_ms, 200)
            try:
                self._step()
            except Exception:
                log.exception("broker lifecycle step failed")
                wait_ms = 200
            self._stop.wait(wait_ms / 1000)

    def _step(self) -> None:
        ctrl, epoch = self.metadata.controller()
        now = _now_ms()
        if epoch != self._contact_epoch:
            self._contact_epoch, self._contact_ms = epoch, now  # a new controller: a fresh session to reach it
        reg = self.metadata.registration(ctrl) if ctrl != NO_CONTROLLER else None
        if ctrl != NO_CONTROLLER and ctrl != self.node_id and reg is not None and reg.fenced:
            # the controller's own node is fenced (a controlled shutdown, or its broker died):
            # take over as soon as its lease is free
            if self._claim(epoch, ()) is None:
                log.warning("node %d took the controller role over from fenced node %d", self.node_id, ctrl)
            self.metadata.poll()
            ctrl, epoch = self.metadata.controller()
        if ctrl == NO_CONTROLLER:
            err = self._claim(epoch, ())
            log.info("node %d claimed the controller role over epoch %d: %s", self.node_id, epoch, err or "won")
            self.metadata.poll()
            return
        try:
            if self.broker_epoch < 0 or self._registered_elsewhere():
                declined = self._register(ctrl)
            else:
                declined = self._heartbeat(want_fence=False)
            self._contact_ms = _now_ms()
            if declined:
                # The controller the image names answered NOT_CONTROLLER and no newer
                # ControllerElected is folded: it lost its lease (its database connection died)
                # and stepped down. Nobody else would ever claim the role, since its node is
                # alive and unfenced, so claim it: only a node that can take the free lease
                # wins, and of several claimants the fenced append picks one (the deposed node
                # itself may win it back).
                self.metadata.poll()
                if self.metadata.controller() == (ctrl, epoch):
                    err = self._claim(epoch, ())
                    log.warning("node %d claimed the controller role after controller %d declined it: %s", self.node_id, ctrl, err or "won")
                    self.metadata.poll()
        except RpcError as exc:
            silent = _now_ms() - self._contact_ms
            log.info("controller %d unreachable for %d ms: %s", ctrl, silent, exc)
            if ctrl != self.node_id:
                # The claim succeeds only if the controller's process has let its lease go (it
                # died, or its database connection did): a live controller that only this node
                # cannot reach keeps the role. Fence it only after a whole silent session.
                err = self._claim(epoch, (ctrl,) if silent >= self.session_ms else ())
                if err is None:
                    log.warning("node %d took the controller role over from unreachable node %d", self.node_id, ctrl)
                self.metadata.poll()

    def _registered_elsewhere(self) -> bool:
        """The image shows a registration of this id by another incarnation (or none at all
        after we registered, e.g. a log restored without it): register again."""
        reg = self.metadata.registration(self.node_id)
        return reg is not None and reg.incarnation_id != str(self.incarnation_id) and reg.broker_epoch > self.broker_epoch

    def _register(self, ctrl: int) -> bool:
        """BrokerRegistration (62) with controller ``ctrl``, then a first heartbeat. Returns
        whether the controller answered NOT_CONTROLLER. Raises :class:`RpcError` when it cannot
        be reached."""
        ch = self._controller_channel(ctrl)
        if ch is None:
            raise RpcError(f"controller {ctrl} has no endpoint")
        body = BrokerRegistrationRequest(
            broker_id=i32(self.node_id),
            cluster_id=self.cluster_id,
            incarnation_id=self.incarnation_id,
            listeners=tuple(
                Listener(name=e.name, host=e.host, port=u16(e.port), security_protocol=i16(SECURITY_PROTOCOL_IDS.get(e.security_protocol, 0)))
                for e in self.endpoints
            ),
            features=(),
            rack=self.rack,
        )
        resp = ch.ask(62, 4, body)
        code = int(resp.error_code)
        if code != 0:
            log.info("node %d registration: %s", self.node_id, error_name(code))
            return error_name(code) == "NOT_CONTROLLER"
        self.broker_epoch = int(resp.broker_epoch)
        log.info("node %d registered with controller %d, broker epoch %d", self.node_id, ctrl, self.broker_epoch)
        return self._heartbeat(want_fence=False)

    def _heartbeat(self, want_fence: bool) -> bool:
        """BrokerHeartbeat (63) to the controller the image names; records whether this node is
        fenced. Returns whether the controller answered NOT_CONTROLLER. Raises :class:`RpcError`
        when it cannot be reached."""
        ctrl, _epoch = self.metadata.controller()
        ch = self._controller_channel(ctrl)
        if ch is None:
            raise RpcError(f"controller {ctrl} has no endpoint")
        body = BrokerHeartbeatRequest(
            broker_id=i32(self.node_id),
            broker_epoch=i64(self.broker_epoch),
            current_metadata_offset=i64(self.metadata.version),
            want_fence=want_fence,
            want_shut_down=want_fence,
        )
        resp = ch.ask(63, 2, body)
        code = int(resp.error_code)
        if code != 0:
            name = error_name(code)
            if name in ("STALE_BROKER_EPOCH", "BROKER_ID_NOT_REGISTERED"):
                self.broker_epoch = -1  # register again
            self.fenced = True
            self._unfenced.clear()
            log.info("node %d heartbeat: %s", self.node_id, name)
            return name == "NOT_CONTROLLER"
        self.fenced = bool(resp.is_fenced)
        if self.fenced:
            self._unfenced.clear()
        else:
            self._unfenced.set()
        return False
