"""An in-memory :class:`wire.backend.Backend` test double for handler and listener tests.

It is deliberately naive (no share-partition state machine: a share fetch hands out every
batch past a per-partition cursor once, acknowledgements are recorded, not applied) — it exists
to test the protocol edge, not the domain, which has its own tests in ``tests/actors``.
"""

from __future__ import annotations

import threading
import uuid
from typing import Sequence

from store.record_batch import assign_offsets
from wire.cluster_view import StaticClusterView
from wire.listeners import endpoint_for
from wire.backend import (
    AcquiredRange,
    ConfigEntry,
    FetchedPartition,
    HeartbeatResult,
    ProduceResult,
    ShareFetchPartition,
    ShareFetchResult,
    TopicInfo,
)


class FakeBackend:
    node_id = 1
    host = "127.0.0.1"
    port = 9092
    cluster_id = "fake-cluster"
    cluster = StaticClusterView(1)

    def metadata_brokers(self, listener):
        host, port = endpoint_for(self, listener)
        return [(self.node_id, host, port, None)]

    def controller_id(self) -> int:
        return self.node_id

    def elect_leaders(self, partitions, election):
        return None, [(t, p, "ELECTION_NOT_NEEDED", None) for t, p in partitions or []]

    def alter_partition_reassignments(self, reassignments):
        """A single node (id 1): a target of just this node is a no-op, any other broker is not
        registered, and nothing is ever reassigning (the rules of the controller's decider)."""
        out = []
        for t, p, replicas in reassignments:
            info = self._topics.get(t)
            if info is None or not 0 <= p < info.partitions:
                out.append((t, p, "UNKNOWN_TOPIC_OR_PARTITION", None))
            elif replicas is None:
                out.append((t, p, "NO_REASSIGNMENT_IN_PROGRESS", None))
            elif tuple(replicas) == (self.node_id,):
                out.append((t, p, "NONE", None))
            else:
                out.append((t, p, "INVALID_REPLICA_ASSIGNMENT", None))
        return None, out

    def list_partition_reassignments(self, partitions):
        return None, []

    def coordinator(self, group_id, listener):
        host, port = endpoint_for(self, listener)
        return self.node_id, host, port

    def __init__(self) -> None:
        self._topics: dict[str, TopicInfo] = {}
        self._logs: dict[tuple[str, int], list[tuple[int, int, bytes]]] = {}
        self._cond = threading.Condition()
        self._appends = 0
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self.acks: list = []
        self._cursor: dict[tuple[str, uuid.UUID, int], int] = {}
        self.members: dict[str, dict] = {}

    # control plane
    def topics(self, names: Sequence[str] | None = None) -> list[TopicInfo]:
        return [t for n, t in self._topics.items() if names is None or n in names]

    def create_topics(self, specs, validate_only):
        out = {}
        for s in specs:
            if s.name in self._topics:
                out[s.name] = ("TOPIC_ALREADY_EXISTS", f"Topic '{s.name}' already exists.", None)
                continue
            info = TopicInfo(s.name, uuid.uuid4(), s.partitions if s.partitions > 0 else 1)
            if not validate_only:
                self._topics[s.name] = info
                for p in range(info.partitions):
                    self._logs[(s.name, p)] = []
            out[s.name] = (None, None, info)
        return out

    def create_partitions(self, topics, validate_only):
        out = {}
        for name, count, assignments in topics:
            info = self._topics.get(name)
            if info is None:
                out[name] = ("UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic-partition.")
            elif count <= info.partitions:
                out[name] = ("INVALID_PARTITIONS", f"Topic already has {info.partitions} partition(s).")
            else:
                out[name] = (None, None)
                if not validate_only:
                    for p in range(info.partitions, count):
                        self._logs[(name, p)] = []
                    self._topics[name] = TopicInfo(name, info.topic_id, count)
        return out

    def delete_topics(self, names):
        out = {}
        for n in names:
            info = self._topics.pop(n, None)
            out[n] = (None, info.topic_id) if info else ("UNKNOWN_TOPIC_OR_PARTITION", None)
        return out

    def describe_configs(self, resource_type, name, keys):
        cfg = self.configs.get((resource_type, name), {})
        return None, None, [ConfigEntry(k, v, source=1) for k, v in cfg.items() if keys is None or k in keys]

    def alter_configs(self, resource_type, name, ops, validate_only):
        cfg = self.configs.setdefault((resource_type, name), {})
        for key, op, value in ops:
            if op == 0:
                cfg[key] = value
            elif op == 1:
                cfg.pop(key, None)
            else:
                return "INVALID_CONFIG", f"op {op} not supported"
        return None, None

    def list_groups(self, types, states):
        return [(g, "share", "Stable") for g in {m["group"] for m in self.members.values()}]

    # data plane
    def produce(self, topic, partition, records, acks):
        log = self._logs.get((topic, partition))
        if log is None:
            return ProduceResult("UNKNOWN_TOPIC_OR_PARTITION")
        with self._cond:
            nxt = log[-1][1] + 1 if log else 0
            try:
                data, headers = assign_offsets(records, nxt, 0)
            except ValueError as exc:
                return ProduceResult("CORRUPT_MESSAGE", message=str(exc))
            for h in headers:
                log.append((h.base_offset, h.base_offset + h.last_offset_delta, bytes(data[h.position : h.position + h.size_in_bytes])))
            self._appends += 1
            self._cond.notify_all()
        return ProduceResult(None, nxt, -1, 0)

    def _end(self, log):
        return log[-1][1] + 1 if log else 0

    def offset_for_leader_epoch(self, topic, partition, current_leader_epoch, leader_epoch):
        """Every record is written in epoch 0: epoch 0 ends at the log end; a higher one is unknown."""
        log = self._logs.get((topic, partition))
        if log is None:
            return "UNKNOWN_TOPIC_OR_PARTITION", -1, -1
        if current_leader_epoch > 0:
            return "UNKNOWN_LEADER_EPOCH", -1, -1
        return (None, 0, self._end(log)) if leader_epoch == 0 else (None, -1, -1)

    def fetch(self, topic, partition, offset, max_bytes, replica_id=-1, current_leader_epoch=-1):
        log = self._logs.get((topic, partition))
        if log is None:
            return FetchedPartition("UNKNOWN_TOPIC_OR_PARTITION")
        end = self._end(log)
        if offset > end or offset < 0:
            return FetchedPartition("OFFSET_OUT_OF_RANGE", end, 0)
        out = b""
        for base, last, data in log:
            if last >= offset:
                if out and len(out) + len(data) > max_bytes:
                    break
                out += data
        return FetchedPartition(None, end, 0, out)

    def list_offset(self, topic, partition, timestamp):
        log = self._logs.get((topic, partition))
        if log is None:
            return "UNKNOWN_TOPIC_OR_PARTITION", -1, -1
        return None, (0 if timestamp == -2 else self._end(log)), -1

    def delete_records(self, topic, partition, offset):
        log = self._logs.get((topic, partition))
        if log is None:
            return "UNKNOWN_TOPIC_OR_PARTITION", -1
        hw = self._end(log)
        target = hw if offset == -1 else offset
        if target < 0 or target > hw:
            return "OFFSET_OUT_OF_RANGE", -1
        self.log_start = getattr(self, "log_start", {})
        low = max(self.log_start.get((topic, partition), 0), target)
        self.log_start[(topic, partition)] = low
        return None, low

    def data_version(self, partitions=()):
        return self._appends  # one counter for every partition

    def wait_for_data(self, timeout_ms, since=None):
        with self._cond:
            v = self._appends if since is None else since
            self._cond.wait_for(lambda: self._appends != v, timeout_ms / 1000)

    # share (naive)
    def share_heartbeat(self, group, member_id, epoch, rack, subscribed, client_id, client_host):
        member_id = member_id or str(uuid.uuid4())
        if epoch == -1:
            self.members.pop(member_id, None)
            return HeartbeatResult(None, member_id=member_id, member_epoch=-1)
        m = self.members.setdefault(member_id, {"group": group, "epoch": 0, "subs": subscribed or []})
        if subscribed is not None:
            m["subs"] = subscribed
        assignment = {self._topics[t].topic_id: list(range(self._topics[t].partitions)) for t in m["subs"] if t in self._topics}
        changed = m.get("assignment") != assignment
        m["assignment"] = assignment
        if changed:
            m["epoch"] += 1
        return HeartbeatResult(None, member_id=member_id, member_epoch=m["epoch"], heartbeat_interval_ms=1000, assignment=assignment if changed or epoch == 0 else None)

    def share_fetch(self, group, member, epoch, wanted, forgotten, acks, max_records, max_wait_ms, acquire_mode=0, batch_size=None, is_renew_ack=False,
                    session_node=-1):
        self.acks.extend(acks)
        by_id = {t.topic_id: t.name for t in self._topics.values()}
        parts = []
        for tid, p in wanted:
            name = by_id.get(tid)
            if name is None:
                parts.append(ShareFetchPartition(tid, p, error="UNKNOWN_TOPIC_ID"))
                continue
            key = (group, tid, p)
            cur = self._cursor.get(key, 0)
            data, acq = b"", []
            for base, last, raw in self._logs[(name, p)]:
                if base >= cur:
                    data += raw
                    acq.append(AcquiredRange(base, last, 1))
                    cur = last + 1
            self._cursor[key] = cur
            parts.append(ShareFetchPartition(tid, p, records=data, acquired=tuple(acq)))
        return ShareFetchResult(None, lock_timeout_ms=30000, partitions=tuple(parts))

    def share_acknowledge(self, group, member, epoch, acks, session_node=-1):
        self.acks.extend(acks)
        return ShareFetchResult(None, partitions=tuple(ShareFetchPartition(a.topic_id, a.partition) for a in acks))

