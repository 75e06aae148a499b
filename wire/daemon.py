"""The daemon's composition: actor system, journal, controller (and its children), remote log
manager, partition logs and the Kafka listener — and :class:`ShoalBackend`, the
:class:`wire.backend.Backend` the handlers use.

Control plane: ONE actor message per Kafka request (CreateTopics → the ControllerActor,
ShareFetch → the group's ShareGroupActor …), asked through :class:`wire.gateway.ActorGateway`
from the connection's thread. Data plane: :class:`wire.logs.LogRegistry` in this process appends
Produce bytes to segment files and reads Fetch/ShareFetch bytes from them; actors only see
offsets and batch boundaries.

Start/stop: :meth:`Daemon.start` / :meth:`Daemon.stop` (``app.py run`` wires SIGTERM/SIGINT to
``stop``). ``stop`` closes the listener, asks every actor to exit (``asys.shutdown()``, which also
ends the Thespian admin process) and closes the logs and the event log.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Mapping, Sequence

from wire import controller_client, share_client
from wire.backend import FetchedPartition, HeartbeatResult, ProduceResult, ShareFetchResult, TopicInfo, TopicSpec
from wire.dispatch import API_NAMES, KafkaDispatcher
from wire.gateway import ActorGateway
from wire.logs import LogRegistry
from wire.producer_ids import ProducerIdManager, ProducerIdsUnavailable
from wire.server import KafkaListener, parse_listener
from wire.quotas import ListenerLimits

__all__ = ["Daemon", "ShoalBackend", "STATUS_FILE"]

log = logging.getLogger("shoal.daemon")

#: Written into the data dir once the listener is up; read by ``app.py status``.
STATUS_FILE = "shoal.status.json"


class ShoalBackend:
    """:class:`wire.backend.Backend` over the controller, the share-group actors and the logs.

    ``controller``: a :class:`wire.controller_client.ControllerClient`; ``shares``: a
    :class:`wire.share_client.ShareClient`; ``logs``: the :class:`LogRegistry`."""

    def __init__(self, cfg: Mapping[str, str], controller: Any, shares: Any, logs: LogRegistry, host: str, port: int) -> None:
        self.cfg = dict(cfg)
        self.node_id = int(cfg.get("node.id", "1"))
        self.host = host
        self.port = port
        self.cluster_id = cfg.get("cluster.id") or "shoal-cluster"
        self.controller = controller
        self.shares = shares
        self.logs = logs
        self.producer_ids = ProducerIdManager(lambda: controller.allocate_producer_ids(self.node_id))

    # -- control plane: the controller ---------------------------------------------------------
    def topics(self, names: Sequence[str] | None = None) -> list[TopicInfo]:
        """The topic image, fresh from the controller (one ask)."""
        return self.controller.topics(names)

    def create_topics(self, specs: Sequence[TopicSpec], validate_only: bool):
        """CreateTopics through the controller; opens the new partitions' logs at once."""
        out = self.controller.create_topics(specs, validate_only)
        if not validate_only:
            for name, (err, _msg, info) in out.items():
                if err is None and info is not None:
                    for p in range(info.partitions):
                        self.logs.open(name, p)  # create the directories now: ListOffsets works at once
        return out

    def delete_topics(self, names: Sequence[str]):
        """DeleteTopics through the controller; deletes the logs (and remote data) after."""
        out = self.controller.delete_topics(names)
        for name, (err, _tid) in out.items():
            if err is None:
                self.logs.drop_topic(name)
        return out

    def describe_configs(self, resource_type: int, name: str, keys: Sequence[str] | None):
        """DescribeConfigs: GROUP resources go to the group's actor, TOPIC/BROKER to the controller."""
        if resource_type == 32:
            return self.shares.describe_configs(name, keys)
        return self.controller.describe_configs(resource_type, name, keys)

    def alter_configs(self, resource_type: int, name: str, ops, validate_only: bool):
        """IncrementalAlterConfigs: GROUP → the group's actor, TOPIC/BROKER → the controller (then the topic's logs are reconfigured)."""
        if resource_type == 32:
            return self.shares.alter_configs(name, ops, validate_only)
        err, msg = self.controller.alter_configs(resource_type, name, ops, validate_only)
        if err is None and resource_type == 2 and not validate_only:
            self.logs.reconfigure(name)
        return err, msg

    def list_groups(self, types: Sequence[str], states: Sequence[str]):
        """ListGroups: share groups only (type ``share``), filtered by type and state."""
        if types and not any(t.lower() == "share" for t in types):
            return []
        rows = self.shares.list_groups()
        if states:
            wanted = {s.lower() for s in states}
            rows = [r for r in rows if r[2].lower() in wanted]
        return rows

    # -- data plane ---------------------------------------------------------------------------
    def _known(self, topic: str, partition: int) -> bool:
        return self.controller.partition_count(topic) > partition >= 0

    def produce(self, topic: str, partition: int, records: bytes, acks: int) -> ProduceResult:
        """Append one partition's batches (UNKNOWN_TOPIC_OR_PARTITION for an unknown partition)."""
        if not self._known(topic, partition):
            return ProduceResult("UNKNOWN_TOPIC_OR_PARTITION")
        return self.logs.append(topic, partition, records)

    def fetch(self, topic: str, partition: int, offset: int, max_bytes: int) -> FetchedPartition:
        """Read one partition from ``offset`` (local or remote tier)."""
        if not self._known(topic, partition):
            return FetchedPartition("UNKNOWN_TOPIC_OR_PARTITION")
        return self.logs.read(topic, partition, offset, max_bytes)

    def list_offset(self, topic: str, partition: int, timestamp: int):
        """ListOffsets on one partition."""
        if not self._known(topic, partition):
            return "UNKNOWN_TOPIC_OR_PARTITION", -1, -1
        return self.logs.list_offset(topic, partition, timestamp)

    def init_producer_id(self, transactional_id: str | None, producer_id: int, producer_epoch: int) -> tuple[str | None, int, int]:
        """InitProducerId for idempotent producers: a fresh id from the controller's blocks and
        epoch 0, whatever id/epoch the request carries (Kafka ``TransactionCoordinator.handleInitProducerId``
        with a null transactional id). Transactional ids: UNSUPPORTED_VERSION (no transactions)."""
        if transactional_id is not None:
            return "UNSUPPORTED_VERSION", -1, -1
        try:
            return None, self.producer_ids.next_producer_id(), 0
        except ProducerIdsUnavailable as exc:
            return exc.error, -1, -1

    def data_version(self) -> int:
        """The log registry's append counter."""
        return self.logs.data_version()

    def wait_for_data(self, timeout_ms: int, since: int | None = None) -> None:
        """Block until an append (after ``since``, see :meth:`wire.logs.LogRegistry.wait`) or ``timeout_ms``."""
        self.logs.wait(timeout_ms, since)

    # -- share groups -------------------------------------------------------------------------
    def share_heartbeat(self, group, member_id, epoch, rack, subscribed, client_id, client_host) -> HeartbeatResult:
        """ShareGroupHeartbeat → the group's actor."""
        return self.shares.heartbeat(group, member_id, epoch, rack, subscribed, client_id, client_host)

    def share_fetch(self, group, member, epoch, wanted, forgotten, acks, max_records, max_wait_ms) -> ShareFetchResult:
        """ShareFetch → one message to the group's actor plus the acquired records' bytes."""
        return self.shares.fetch(group, member, epoch, wanted, forgotten, acks, max_records, max_wait_ms)

    def share_acknowledge(self, group, member, epoch, acks) -> ShareFetchResult:
        """ShareAcknowledge → the group's actor."""
        return self.shares.acknowledge(group, member, epoch, acks)

    def share_group_describe(self, group: str) -> dict:
        """ShareGroupDescribe of one group."""
        return self.shares.describe(group)

    def share_group_offsets(self, group: str, topics):
        """DescribeShareGroupOffsets of one group."""
        return self.shares.offsets(group, topics)

    # -- status -------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Counts for ``app.py status``."""
        out: dict[str, Any] = {}
        try:
            out["topics"] = len(self.topics())
        except Exception as exc:  # pragma: no cover - reported, not raised
            out["topics_error"] = str(exc)
        try:
            out.update(self.shares.status())
        except Exception as exc:  # pragma: no cover
            out["share_error"] = str(exc)
        out["partitions_open"] = len(self.logs.logs())
        out["tiered_segments"] = self.tiered_segments()
        return out

    def tiered_segments(self) -> int:
        """Segments copied to the remote tier (from the RemoteLogManager when present)."""
        rlm = getattr(self.logs, "rlm", None)
        if rlm is None:
            return 0
        total = 0
        for lg in self.logs.logs().values():
            if not lg.config.remote_storage_enable:
                continue
            try:
                from actors.rlmm.metadata import TopicIdPartition

                ids = {v: k for k, v in self.controller.names_by_id().items()}
                tp = TopicIdPartition(uuid.UUID(ids[lg.topic]), lg.topic, lg.partition)
                total += sum(1 for md in rlm.rlmm.list_remote_log_segments(tp) if getattr(md.state, "name", "") == "COPY_SEGMENT_FINISHED")
            except Exception:  # pragma: no cover - counts are best effort
                continue
        return total


class _Dispatcher(KafkaDispatcher):
    def __init__(self, backend: ShoalBackend, gateway: ActorGateway, auto_create: bool) -> None:
        super().__init__(backend, auto_create)
        self.gateway = gateway

    def connection_closed(self, conn: Any) -> None:
        """Close the connection thread's private actor endpoint."""
        self.gateway.release_thread()


class Daemon:
    """The running broker. ``Daemon(cfg).start()`` returns once the listener accepts
    connections; :meth:`stop` shuts everything down; :meth:`wait` blocks until stopped."""

    def __init__(self, cfg: Mapping[str, str]) -> None:
        self.cfg = dict(cfg)
        self.data_dir = Path(self.cfg["shoal.data.dir"])
        self._stopped = threading.Event()
        self._stop_requested = threading.Event()
        self.asys: Any = None
        self.listener: KafkaListener | None = None
        self.backend: ShoalBackend | None = None
        self.gateway: ActorGateway | None = None
        self.logs: LogRegistry | None = None
        self._ticker: threading.Thread | None = None
        self.started_ms = 0

    def start(self) -> "Daemon":
        """Start the actor system, the journal, the controller (and through it the share-group and
        RLMM actors), the logs, the remote log manager and the listener. Raises on failure
        (after cleaning up what was started)."""
        os.environ.setdefault("THESPIAN_BASE_IPADDR", "127.0.0.1")
        from thespian.actors import ActorSystem

        from actors.journal import JournalActor
        from actors.messages import Configure

        self.data_dir.mkdir(parents=True, exist_ok=True)
        base = self.cfg.get("shoal.actor.system.base", "multiprocTCPBase")
        admin_port = int(self.cfg["shoal.actor.system.admin.port"])
        caps = {"Admin Port": admin_port} if base.startswith("multiproc") else {}
        if base == "multiprocTCPBase" and _port_in_use(admin_port):
            # ActorSystem() would silently join that running system (and its old code): only an
            # orphan of this data dir's previous daemon (SIGKILLed; its pid is gone) is shut down.
            if not self._shutdown_orphaned_actor_system(admin_port):
                raise RuntimeError(f"the Thespian admin port {admin_port} is in use: is another daemon running? (shoal.actor.system.admin.port)")
        (self.data_dir / STATUS_FILE).unlink(missing_ok=True)
        self.asys = ActorSystem(base, caps, logDefs=_log_defs(self.data_dir))
        try:
            journal = self.asys.createActor(JournalActor, globalName="shoal-journal")
            reply = self.asys.ask(journal, Configure(self.cfg, "journal"), 30)
            if reply is None or type(reply).__name__ != "Configured":
                raise RuntimeError(f"journal did not start: {reply!r}")
            self.gateway = ActorGateway(self.asys, float(self.cfg.get("shoal.wire.actor.timeout.ms", "30000")) / 1000)
            self.logs = LogRegistry(self.cfg["log.dirs"])
            controller = controller_client.start(self.asys, self.gateway, self.cfg, journal)
            self.logs._topic_config = controller.topic_config  # noqa: SLF001 - wiring
            shares = share_client.ShareClient(self.gateway, controller, self.logs, self.cfg, journal, self.asys)
            self._start_remote_log_manager(controller)
            host, port = parse_listener(self.cfg["listeners"])
            self.backend = ShoalBackend(self.cfg, controller, shares, self.logs, host if host != "0.0.0.0" else "127.0.0.1", port)
            dispatcher = _Dispatcher(self.backend, self.gateway, self.cfg.get("auto.create.topics.enable", "true").lower() == "true")
            self.dispatcher = dispatcher
            limits = ListenerLimits.from_config(self.cfg)  # connection quotas, queued.max.requests (wire.quotas)
            self.listener = KafkaListener(host, port, dispatcher, limits.max_request_bytes, limits).start()
            self.backend.port = self.listener.port
            self.started_ms = int(time.time() * 1000)
            self._write_status_file()
            self._ticker = threading.Thread(target=self._tick, name="shoal-ticker", daemon=True)
            self._ticker.start()
        except BaseException:
            self.stop()
            raise
        return self

    def _shutdown_orphaned_actor_system(self, admin_port: int) -> bool:
        """If this data dir's status file names a dead daemon that used ``admin_port``, shut
        that orphaned actor system down (its actors outlived a SIGKILLed daemon) and return True
        once the port is free; otherwise return False (someone else's system: leave it)."""
        from thespian.actors import ActorSystem

        try:
            info = json.loads((self.data_dir / STATUS_FILE).read_text())
        except (OSError, ValueError):
            return False
        if int(info.get("admin_port", -1)) != admin_port or _pid_alive(int(info.get("pid", -1))):
            return False
        log.warning("shutting down the actor system left on admin port %d by daemon pid %s", admin_port, info.get("pid"))
        ActorSystem("multiprocTCPBase", {"Admin Port": admin_port}).shutdown()
        deadline = time.monotonic() + 30
        while _port_in_use(admin_port) and time.monotonic() < deadline:
            time.sleep(0.2)
        return not _port_in_use(admin_port)

    def _rlmm_actors(self, controller: Any) -> Any:
        """One :class:`actors.rlmm.actor.RlmmPartitionActor` per metadata partition
        (``remote.log.metadata.topic.num.partitions``), started and supervised by the controller
        (``ChildLookup("rlmm", p)``), behind Kafka's RemoteLogMetadataManager interface
        (:class:`actors.rlmm.manager.ActorRemoteLogMetadataManager`). A request that times out
        (the actor crashed and the controller restarted it elsewhere) looks the partition's actor
        up again and is retried once."""
        from actors.controller.messages import ChildLookup
        from actors.rlmm.manager import ActorRemoteLogMetadataManager
        from wire.gateway import ActorTimeout

        n = int(self.cfg.get("remote.log.metadata.topic.num.partitions", "50"))
        timeout_s = float(self.cfg.get("shoal.wire.actor.timeout.ms", "30000")) / 1000
        addresses: list[Any] = []  # index = metadata partition (ActorAddress is not hashable)

        def lookup(p: int) -> Any:
            reply = controller.ask(ChildLookup("rlmm", str(p), True), max(timeout_s, 60))
            if type(reply).__name__ != "ChildAddress":
                raise RuntimeError(f"RLMM actor for metadata partition {p} did not start: {reply!r}")
            return reply.address

        addresses.extend(lookup(p) for p in range(n))
        actors = dict(enumerate(addresses))
        assert self.gateway is not None
        gateway = self.gateway

        def ask(addr: Any, msg: Any) -> Any:
            try:
                return gateway.ask(addr, msg, timeout_s)
            except ActorTimeout:
                p = next((i for i, a in enumerate(addresses) if a == addr), None)
                if p is None:
                    return None
                fresh = addresses[p] = lookup(p)
                manager._actors[p] = fresh  # noqa: SLF001 - the manager's own address map
                try:
                    return gateway.ask(fresh, msg, timeout_s)
                except ActorTimeout:
                    return None  # the manager turns a missing reply into KafkaException

        manager = ActorRemoteLogMetadataManager(ask, actors, num_partitions=n)
        return manager

    def _start_remote_log_manager(self, controller: Any) -> None:
        """Start the RemoteLogManager (``store.remote_log_manager``) over a local-directory remote
        tier (``<data>/remote``) and the event-sourced RLMM, when
        ``remote.log.storage.system.enable=true``. Partitions of topics with
        ``remote.storage.enable=true`` are registered as their logs open; reads below the local
        log start go to the remote tier. ``shoal.rlmm.mode``: ``actors`` (default, one supervised
        RLMM actor per metadata partition) or ``in-process`` (the same event-sourced manager inside
        the listener process: fewer processes, no supervision)."""
        if self.cfg.get("remote.log.storage.system.enable", "true").lower() != "true":
            return
        from actors.base import event_log_for
        from actors.rlmm.manager import EventSourcedRemoteLogMetadataManager
        from actors.rlmm.metadata import TopicIdPartition
        from store.remote_log_manager import RemoteLogManager
        from store.remote_storage import LocalDirectoryRemoteStorageManager

        rsm = LocalDirectoryRemoteStorageManager(self.cfg.get("shoal.remote.storage.dir") or str(self.data_dir / "remote"))
        mode = self.cfg.get("shoal.rlmm.mode", "actors")
        if mode == "actors":
            rlmm = self._rlmm_actors(controller)
        elif mode == "in-process":
            rlmm = EventSourcedRemoteLogMetadataManager.from_config(event_log_for(self.cfg), self.cfg)
        else:
            raise ValueError(f"shoal.rlmm.mode must be actors or in-process, not {mode!r}")
        interval = int(self.cfg.get("remote.log.manager.task.interval.ms", "30000"))
        rlm = RemoteLogManager(rsm, rlmm, broker_id=int(self.cfg.get("node.id", "1")), task_interval_ms=interval)
        self.rlm = rlm
        tps: dict[tuple[str, int], Any] = {}

        def tp_of(lg: Any) -> Any:
            key = (lg.topic, lg.partition)
            tp = tps.get(key)
            if tp is None:
                ids = {v: k for k, v in controller.names_by_id().items()}
                tp = TopicIdPartition(uuid.UUID(ids[lg.topic]), lg.topic, lg.partition)
                tps[key] = tp
            return tp

        def on_open(lg: Any) -> None:
            if lg.config.remote_storage_enable:
                rlm.on_leadership_change({tp_of(lg): lg})

        def remote_read(lg: Any, offset: int, max_bytes: int) -> bytes:
            return rlm.read(tp_of(lg), offset, max_bytes).records

        def list_offset(lg: Any, timestamp: int) -> Any:
            if lg.config.remote_storage_enable:
                return rlm.fetch_offset_by_timestamp(tp_of(lg), timestamp)
            return lg.fetch_offset_by_timestamp(timestamp)

        def on_drop(lg: Any) -> None:
            if lg.config.remote_storage_enable:
                rlm.stop_partitions([tp_of(lg)], delete=True)

        assert self.logs is not None
        self.logs.on_open = on_open
        self.logs.on_drop = on_drop
        self.logs.remote_read = remote_read
        self.logs.offset_by_timestamp = list_offset
        self.logs.rlm = rlm  # type: ignore[attr-defined]
        rlm.start()

    def _tick(self) -> None:
        """Background duties of the listener process: flush.ms, retention, tiering ticks."""
        interval = float(self.cfg.get("shoal.tick.interval.ms", "1000")) / 1000
        last_status = 0.0
        while not self._stopped.wait(interval):
            now = int(time.time() * 1000)
            if time.monotonic() - last_status >= float(self.cfg.get("shoal.status.interval.ms", "2000")) / 1000:
                last_status = time.monotonic()
                try:
                    self._write_status_file()
                except Exception:  # pragma: no cover
                    log.exception("status file")
            for lg in list((self.logs.logs() if self.logs else {}).values()):
                try:
                    lg.maybe_flush(now)
                except Exception:  # pragma: no cover
                    log.exception("flush tick")

    def _write_status_file(self) -> None:
        assert self.listener is not None
        counts: dict[str, Any] = {}
        if self.backend is not None and self.started_ms and getattr(self, "_status_ready", False):
            counts = self.backend.status()
            if self.gateway is not None:
                counts["actor_asks"] = self.gateway.asks
                counts["actor_ask_ms_mean"] = round(1000 * self.gateway.ask_seconds / max(1, self.gateway.asks), 3)
            counts["requests"] = {API_NAMES.get(k, str(k)): v for k, v in sorted(self.dispatcher.stats.items())}
            counts["request_ms_mean"] = {
                API_NAMES.get(k, str(k)): round(1000 * self.dispatcher.seconds.get(k, 0.0) / v, 3)
                for k, v in sorted(self.dispatcher.stats.items())
            }
        self._status_ready = True
        info = {
            "counts": counts,
            "updated_ms": int(time.time() * 1000),
            "pid": os.getpid(),
            "listener": f"{self.listener.host}:{self.listener.port}",
            "admin_port": int(self.cfg["shoal.actor.system.admin.port"]),
            "event_log": self.cfg["event.log.url"],
            "started_ms": self.started_ms,
        }
        tmp = self.data_dir / (STATUS_FILE + ".tmp")
        tmp.write_text(json.dumps(info))
        tmp.replace(self.data_dir / STATUS_FILE)

    def request_stop(self) -> None:
        """Ask :meth:`wait` to return (safe from a signal handler)."""
        self._stop_requested.set()

    def wait(self) -> None:
        """Block until :meth:`request_stop` (SIGTERM/SIGINT) or :meth:`stop`."""
        while not (self._stop_requested.is_set() or self._stopped.is_set()):
            self._stop_requested.wait(0.5)

    def stop(self) -> None:
        """Stop accepting, shut the actor system down (every actor process exits), close logs."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        if self.listener is not None:
            try:
                self.listener.stop()
            except Exception:  # pragma: no cover
                log.exception("listener stop")
        rlm = getattr(self, "rlm", None)
        if rlm is not None:
            try:
                rlm.close()
            except Exception:  # pragma: no cover
                log.exception("rlm close")
        if self.gateway is not None:
            self.gateway.close()
        if self.asys is not None:
            try:
                self.asys.shutdown()
            except Exception:  # pragma: no cover
                log.exception("actor system shutdown")
        if self.logs is not None:
            self.logs.close()
        (self.data_dir / STATUS_FILE).unlink(missing_ok=True)


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    import socket

    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _log_defs(data_dir: Path) -> dict[str, Any]:
    """Thespian logging: actors' records go to ``<data>/shoal.log`` (warnings and above to stderr)."""
    return {
        "version": 1,
        "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
        "handlers": {
            "file": {"class": "logging.FileHandler", "filename": str(data_dir / "shoal.log"), "formatter": "plain", "level": "INFO"},
        },
        "root": {"handlers": ["file"], "level": "INFO"},
    }

