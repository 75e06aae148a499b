"""The listener's side of share groups: one ``ShareGroupActor`` message per Kafka request, plus
the record bytes for the acquired ranges, read here from the partition logs.

The protocol with the actor is ``actors/share/messages.py`` (A2's design):

1. For each partition of the member's share session the wire reads the **batch boundaries** of the
   log from the share-partition's ``next_fetch_offset`` (as last answered by the actor; unknown at
   first) up to the high watermark, and sends them with the log start offset and high watermark
   in ONE :class:`ShareFetchCmd` with the piggy-backed acknowledgements.
2. The actor decides (session epoch, acknowledgements, acquisitions), persists, and answers the
   acquired ranges and each partition's next fetch offset. The bytes of the batches that overlap
   the acquired ranges go into the response; they never reach the actor.
3. When the actor answers ``refetch_from`` (the cached offset was stale: records were released
   below it, or it was unknown) this request acquires nothing there; the remembered offset is
   updated so that the client's next ShareFetch reads from the right place. So every ShareFetch
   is exactly one actor message (no retry that would bump the session epoch twice).

Long polling: before asking, when the request carries no acknowledgements and every session
partition is known to have nothing past its next fetch offset, the wire waits up to ``max_wait``.
The wait ends as soon as what it waits for arrives (Kafka completes a ``DelayedShareFetch`` on the
same events): an append to any partition (:meth:`wire.logs.LogRegistry.notify`), records of the
group freed without an append — an acknowledgement with RELEASE, a closed share session or a
member leaving the group, answered on any connection of this listener (:meth:`ShareClient._freed`)
— or the acquisition lock of records this listener handed out expiring (the wait's deadline is
the earliest such lock deadline, so the next ask lets the actor expire the locks and acquire).
A member fenced for missing heartbeats frees its records in the actor without a request: a
waiting fetch finds them at the next append or lock deadline (with Kafka's defaults the locks,
30 s, expire before the session, 45 s). A next fetch offset that moves back in a reply is no
signal: replies of concurrent requests reach the listener's threads in any order.

The wire mirrors each member's share-session partition set (the actor owns the real session and
its epoch): ShareFetch requests are incremental and name only added partitions.

Bounded groups (:mod:`actors.share.limits`): only a joining heartbeat (member epoch 0), a ShareFetch
opening a share session (epoch 0) and a group config alter may create a group (and are refused with
GROUP_MAX_SIZE_REACHED past ``group.share.max.groups``); a describe, an offsets describe or a
DescribeConfigs of a group that does not exist starts no actor (GROUP_ID_NOT_FOUND, or the broker
defaults for DescribeConfigs as Kafka's ``ConfigHelper`` answers), and ListGroups and status ask
only the actors that are running.
"""

from __future__ import annotations

import heapq
import logging
import math
import threading
import time
import uuid
from typing import Any, Callable, Sequence

from actors.share.messages import AlterShareGroupOffsets
from actors.share.messages import DeleteShareGroupOffsets
from actors.share.messages import DeleteShareGroupState
from actors.messages import StatusReply, StatusRequest
from actors.share.config import BrokerShareConfig, GroupShareConfig, InvalidConfig, effective_group_configs, validate_group_configs
from actors.share.errors import ShareError
from actors.share.membership import MembershipError, ShareGroupHeartbeat, validate_heartbeat
from actors.share.messages import DescribeShareGroup, ShareGroupDescription
from actors.share.sessions import ShareSessions, decide_share_acknowledge, decide_share_fetch
from wire.backend import AcquiredRange, ConfigEntry, HeartbeatResult, ShareFetchPartition, ShareFetchResult
from wire.controller_client import GroupRefused
from wire.gateway import ActorTimeout
from wire.group_types import GroupTypes
from wire.quotas import parked

__all__ = ["ShareClient"]

log = logging.getLogger("shoal.wire.share")

#: bytes of log read per partition per ShareFetch (boundaries + bytes of candidate batches)
_PARTITION_READ_BYTES = 256 * 1024


def _err(name: str | None) -> str | None:
    return None if not name or name == "NONE" else name


def _reply_error(r: Any) -> str | None:
    """The error of an admin reply (``ShareGroupStateDeleted``, ``Failure``, ``NotReady``)."""
    if type(r).__name__ == "NotReady":
        return "COORDINATOR_LOAD_IN_PROGRESS"
    return _err(getattr(r, "error", "UNKNOWN_SERVER_ERROR"))


#: AcknowledgeType RELEASE (KIP-932): the record goes back to AVAILABLE for any member
_RELEASE = 2


def _releases(batch_lists: Any) -> bool:
    """Whether any acknowledgement batch in ``batch_lists`` (an iterable of
    ``((first, last, (type, …)), …)`` tuples) RELEASEs records."""
    return any(_RELEASE in types for batches in batch_lists for _a, _b, types in batches)


def _no_session_result(exc: GroupRefused, decide: Any) -> ShareFetchResult:
    """The answer to a ShareFetch/ShareAcknowledge whose group has no actor to ask: for a group
    that does not exist, what the session decider answers with no session at all (the group has
    none: SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH …); otherwise the refusal itself
    (GROUP_MAX_SIZE_REACHED)."""
    if exc.error == "GROUP_ID_NOT_FOUND":
        try:
            decide(ShareSessions())
        except ShareError as err:
            return ShareFetchResult(err.error_name, err.message)
    return ShareFetchResult(exc.error, exc.message)


class ShareClient:
    """Share-group requests from the listener threads. ``gateway`` asks actors; ``controller``
    (a :class:`wire.controller_client.ControllerClient`) resolves topic ids and the group's actor
    address; ``logs`` is the :class:`wire.logs.LogRegistry`."""

    def __init__(self, gateway: Any, controller: Any, logs: Any, cfg: dict, journal: Any = None, asys: Any = None) -> None:
        self.gateway = gateway
        self.controller = controller
        self.logs = logs
        self.cfg = cfg
        #: one type per group id (:class:`wire.group_types.GroupTypes`)
        self.group_types = GroupTypes(cfg)
        #: ``is_coordinator(group) -> bool`` (see :class:`wire.consumer_client.ConsumerGroupClient`)
        self.is_coordinator: Callable[[str], bool] = lambda _group: True
        self._lock = threading.Lock()
        self._session_parts: dict[tuple[str, str], set[tuple[str, int]]] = {}
        self._next: dict[tuple[str, str, int], int] = {}
        #: share.auto.offset.reset=by_duration: the offset ListOffsets gave for the timestamp the
        #: actor asked for, sent as ``reset_offset`` with the partition's next ShareFetch
        self._reset: dict[tuple[str, str, int], int] = {}
        #: per group: how many times records were freed without an append (see :meth:`_freed`)
        self._frees: dict[str, int] = {}
        #: per group: a heap of the acquisition-lock deadlines (``time.monotonic()`` seconds) of the
        #: records this listener handed out; a long poll ends at the earliest (locks may expire)
        self._lock_due: dict[str, list[float]] = {}
        self.timeout_s = float(cfg.get("shoal.wire.actor.timeout.ms", "30000")) / 1000

    # ------------------------------------------------------------------ plumbing
    def _actor(self, group: str, create: bool) -> Any:
        if not self.is_coordinator(group):
            raise GroupRefused("NOT_COORDINATOR", f"node does not coordinate group {group}")
        return self.controller.share_group_actor(group, create=create)

    def _ask(self, group: str, msg: Any, create: bool = True) -> Any:
        """One message to the group's actor (``create``: the request may create the group, see
        the module doc). A ``NotReady`` from an actor that is passivating (it exits right after) is
        retried once on the address the controller gives now. Raises :class:`GroupRefused` when
        the controller will not start the actor, ``ActorTimeout`` when no answer comes."""
        for attempt in (1, 2):
            try:
                reply = self.gateway.ask(self._actor(group, create), msg, self.timeout_s)
            except ActorTimeout:
                self.controller.forget_child(group)  # it may have exited; look it up again next time
                raise
            if type(reply).__name__ != "NotReady" or attempt == 2:
                return reply
            self.controller.forget_child(group)
        return reply

    # ------------------------------------------------------------------ heartbeat
    def heartbeat(self, group: str, member_id: str, epoch: int, rack: str | None, subscribed: list[str] | None, client_id: str, client_host: str) -> HeartbeatResult:
        """ShareGroupHeartbeat → ``ShareGroupHeartbeatCmd`` with the metadata image of the topics
        (name → (topic id, partitions)). Returns a :class:`HeartbeatResult`."""
        from actors.share.messages import ShareGroupHeartbeatCmd

        try:  # Kafka validates before it looks the group up, so an invalid join creates no group
            validate_heartbeat(ShareGroupHeartbeat(group, member_id, epoch, rack, None if subscribed is None else tuple(subscribed)))
        except MembershipError as exc:
            return HeartbeatResult(exc.error, exc.message, member_id, epoch)
        if epoch == 0 and self.group_types.is_consumer_group(group):  # one type per group id (Kafka: not a share group)
            return HeartbeatResult("GROUP_ID_NOT_FOUND", f"Group {group} is not a share group.", member_id, epoch)
        image = {t.name: (str(t.topic_id), t.partitions) for t in self.controller.cached_topics(subscribed)}
        cmd = ShareGroupHeartbeatCmd(group, member_id, epoch, rack, None if subscribed is None else tuple(subscribed), image, client_id, client_host)
        try:
            r = self._ask(group, cmd, create=epoch == 0)  # Kafka: createIfNotExists = memberEpoch == 0
        except GroupRefused as exc:
            return HeartbeatResult(exc.error, exc.message, member_id, epoch)
        except ActorTimeout as exc:
            return HeartbeatResult("COORDINATOR_NOT_AVAILABLE", str(exc), member_id, epoch)
        if type(r).__name__ == "Failure":
            return HeartbeatResult(r.error, r.message, member_id, epoch)
        if type(r).__name__ == "NotReady":
            return HeartbeatResult("COORDINATOR_LOAD_IN_PROGRESS", None, member_id, epoch)
        if epoch == -1 and not _err(r.error):
            self._freed(group)  # a leaving member's acquired records are released
        assignment = None
        if r.assignment is not None:
            assignment = {uuid.UUID(tid): list(ps) for tid, ps in r.assignment}
        return HeartbeatResult(_err(r.error), r.message or None, r.member_id or member_id, r.member_epoch, r.heartbeat_interval_ms or 5000, assignment)

    # ------------------------------------------------------------------ fetch / acknowledge
    def _session_after(self, group: str, member: str, epoch: int, wanted: Sequence[tuple[uuid.UUID, int]], forgotten: Sequence[tuple[uuid.UUID, int]]) -> set[tuple[str, int]]:
        key = (group, member)
        with self._lock:
            current = set() if epoch == 0 else set(self._session_parts.get(key, set()))
        current |= {(str(t), p) for t, p in wanted}
        current -= {(str(t), p) for t, p in forgotten}
        return current

    def fetch(self, group: str, member: str, epoch: int, wanted, forgotten, acks, max_records: int, max_wait_ms: int) -> ShareFetchResult:
        """ShareFetch → one ``ShareFetchCmd`` (see module doc). ``wanted``/``forgotten`` are
        (topic uuid, partition) lists; ``acks`` :class:`wire.backend.SharePartitionAck` list;
        ``max_wait_ms`` the request's MaxWaitMs for the pre-ask long poll."""
        from actors.share.messages import ShareFetchCmd, ShareFetchPartition as Part

        parts = self._session_after(group, member, epoch, wanted, forgotten)
        ack_by = {(str(a.topic_id), a.partition): tuple((b.first_offset, b.last_offset, tuple(b.types)) for b in a.batches) for a in acks}
        names = self.controller.names_by_id()
        if epoch != -1 and not ack_by:
            self._maybe_wait(group, parts, names, max_wait_ms)
        read: dict[tuple[str, int], tuple[list[tuple[int, int]], bytes]] = {}
        msg_parts = []
        unknown: list[tuple[str, int]] = []
        for tid, p in sorted(parts | set(ack_by)):
            name = names.get(tid)
            if name is None or not 0 <= p < self.controller.partition_count(name):
                unknown.append((tid, p))
                continue
            lg = self.logs.open(name, p)
            hw, lso = lg.high_watermark, lg.log_start_offset
            nxt = self._next.get((group, tid, p), -1)
            batches: tuple[tuple[int, int], ...] | None = None
            if epoch != -1 and (tid, p) in parts:
                # next fetch offset unknown (first fetch, restart): read from the log start; the
                # actor filters batches below its next fetch offset and tells us where it is
                start = max(nxt, lso) if nxt >= 0 else lso
                if start < hw:
                    bounds, data = self.logs.batch_bounds(name, p, start, _PARTITION_READ_BYTES)
                    read[(tid, p)] = (bounds, data)
                    batches = tuple(bounds)
                else:
                    batches = ()
            reset = self._reset.pop((group, tid, p), None)
            msg_parts.append(Part(tid, p, ack_by.get((tid, p), ()), nxt, batches, lso, hw, reset))
        cmd = ShareFetchCmd(group, member, epoch, tuple(msg_parts), max_records if max_records > 0 else 500, tuple((str(t), p) for t, p in forgotten))
        try:
            r = self._ask(group, cmd, create=epoch == 0)  # only a new share session may create the group
        except GroupRefused as exc:
            return _no_session_result(exc, lambda sessions: decide_share_fetch(sessions, member, epoch, [], (), bool(ack_by)))
        except ActorTimeout as exc:
            return ShareFetchResult("REQUEST_TIMED_OUT", str(exc))
        if type(r).__name__ in ("Failure", "NotReady"):
            return ShareFetchResult(getattr(r, "error", "COORDINATOR_LOAD_IN_PROGRESS"), getattr(r, "message", None))
        if _err(r.error):
            return ShareFetchResult(r.error, r.message or None, self.lock_ms(group))
        with self._lock:
            if epoch == -1:
                self._session_parts.pop((group, member), None)
            else:
                self._session_parts[(group, member)] = parts
        freed = epoch == -1 or _releases(ack_by.values())
        lock_s = (getattr(r, "acquisition_lock_timeout_ms", 0) or self.lock_ms(group)) / 1000
        out = []
        for pr in r.partitions:
            key = (group, pr.topic_id, pr.partition)
            if pr.refetch_from is not None:
                self._next[key] = pr.refetch_from
            elif pr.next_fetch_offset is not None and pr.next_fetch_offset >= 0:
                self._next[key] = pr.next_fetch_offset
            if pr.acquired:
                self._lock_expires(group, lock_s)
            if pr.reset_timestamp_ms is not None and names.get(pr.topic_id):
                # by_duration: resolve the timestamp here (ListOffsets semantics; the log end when
                # no record is that recent) for the next ShareFetch
                err, off, _ts = self.logs.list_offset(names[pr.topic_id], pr.partition, int(pr.reset_timestamp_ms))
                if err is None:
                    lg_ = self.logs.open(names[pr.topic_id], pr.partition)
                    self._reset[key] = off if off >= 0 else lg_.high_watermark
            acquired = tuple(AcquiredRange(a, b, dc) for a, b, dc in pr.acquired)
            data = b""
            if acquired:
                data = self._bytes_for(read.get((pr.topic_id, pr.partition)), names.get(pr.topic_id), pr.partition, acquired)
            lg = self.logs.logs().get((names.get(pr.topic_id), pr.partition))
            out.append(
                ShareFetchPartition(
                    uuid.UUID(pr.topic_id),
                    pr.partition,
                    error=_err(pr.error),
                    ack_error=_err(pr.acknowledge_error),
                    records=data,
                    acquired=acquired,
                    log_start_offset=lg.log_start_offset if lg else -1,
                    high_watermark=lg.high_watermark if lg else -1,
                )
            )
        for tid, p in unknown:
            err = "UNKNOWN_TOPIC_ID" if tid not in names else "UNKNOWN_TOPIC_OR_PARTITION"
            out.append(ShareFetchPartition(uuid.UUID(tid), p, error=err, ack_error=err if (tid, p) in ack_by else None))
        if freed:
            self._freed(group)
        return ShareFetchResult(None, None, self.lock_ms(group), tuple(out))

    def _freed(self, group: str) -> None:
        """Records of ``group`` may have become acquirable without an append (a RELEASE
        acknowledgement, a closed share session, a member that left, an acquisition lock that
        expired): end every long poll of this listener so that waiting ShareFetches of the group ask
        the actor now (:meth:`_maybe_wait`). Called after the actor's answer, i.e. once the
        decision is durable."""
        with self._lock:
            self._frees[group] = self._frees.get(group, 0) + 1
        self.logs.notify()

    def _lock_expires(self, group: str, lock_s: float) -> None:
        """Remember that records of ``group`` acquired now stay locked for ``lock_s`` seconds
        (``AcquisitionLockTimeoutMs``): a long poll of the group ends then at the latest."""
        now = time.monotonic()
        with self._lock:
            heap = self._lock_due.setdefault(group, [])
            while heap and heap[0] <= now:  # bounded by lock duration × fetch rate
                heapq.heappop(heap)
            heapq.heappush(heap, now + lock_s)

    def _next_lock_due(self, group: str, now: float) -> float | None:
        """The earliest acquisition-lock deadline of ``group`` still ahead of ``now`` (monotonic
        seconds), or ``None``. Deadlines at or before ``now`` are dropped and count as records
        freed (:meth:`_freed`): every long poll of the group ends and asks the actor, which expires
        those locks and may hand the records out again."""
        expired = False
        with self._lock:
            heap = self._lock_due.get(group)
            while heap and heap[0] <= now:
                heapq.heappop(heap)
                expired = True
            due = heap[0] if heap else None
        if expired:
            self._freed(group)
        return due

    def _maybe_wait(self, group: str, parts: set[tuple[str, int]], names: dict[str, str], max_wait_ms: int) -> None:
        """Long poll before asking: while every session partition's next fetch offset is known
        and at the high watermark, wait (up to ``max_wait_ms``) for an append, records of the group
        freed (:meth:`_freed`) or the earliest acquisition lock of the group to expire
        (:meth:`_next_lock_due`); the version and the free count are read before the checks, so
        an event between a check and the sleep is not lost. The wait holds no
        ``queued.max.requests`` slot (:func:`wire.quotas.parked`; Kafka's ``DelayedShareFetch``
        waits in purgatory, outside the request queue)."""
        if max_wait_ms <= 0 or not parts:
            return
        deadline = time.monotonic() + max_wait_ms / 1000
        with self._lock:
            frees = self._frees.get(group, 0)
        while True:
            seen = self.logs.data_version()  # before the checks: an append or a free after it ends the wait
            with self._lock:
                if self._frees.get(group, 0) != frees:
                    return  # records of the group were freed since this fetch began: ask
            idle = True
            for tid, p in parts:
                name = names.get(tid)
                nxt = self._next.get((group, tid, p), -1)
                if name is None or nxt < 0 or not 0 <= p < self.controller.partition_count(name):
                    return
                if nxt < self.logs.open(name, p).high_watermark:
                    idle = False
                    break
            now = time.monotonic()
            remaining = deadline - now
            if not idle or remaining <= 0:
                return
            due = self._next_lock_due(group, now)  # an expired lock counts as a free (checked above)
            if due is not None:
                remaining = min(remaining, due - now)
            with parked():
                self.logs.wait(max(1, math.ceil(remaining * 1000)), seen)

    def _bytes_for(self, read: tuple[list[tuple[int, int]], bytes] | None, name: str | None, partition: int, acquired: tuple[AcquiredRange, ...]) -> bytes:
        """The bytes of the read batches that overlap ``acquired`` (read again from the log when the
        acquisition lies outside what was read before the ask)."""
        from store import record_batch as rb

        lo, hi = acquired[0].first_offset, acquired[-1].last_offset
        if read is None or not read[0] or read[0][0][0] > lo or read[0][-1][1] < hi:
            if name is None:
                return b""
            r = self.logs.read(name, partition, lo, _PARTITION_READ_BYTES)
            data = r.records
        else:
            data = read[1]
        out = bytearray()
        for h in rb.iter_batches(data, verify_crc=False):
            if h.last_offset < lo:
                continue
            if h.base_offset > hi:
                break
            if any(a.first_offset <= h.last_offset and h.base_offset <= a.last_offset for a in acquired):
                out += data[h.position : h.position + h.size_in_bytes]
        return bytes(out)

    def acknowledge(self, group: str, member: str, epoch: int, acks) -> ShareFetchResult:
        """ShareAcknowledge → one ``ShareAcknowledgeCmd``."""
        from actors.share.messages import ShareAcknowledgeCmd, ShareAcknowledgePartition

        names = self.controller.names_by_id()
        parts = []
        unknown = []
        for a in acks:
            tid = str(a.topic_id)
            if tid not in names or not 0 <= a.partition < self.controller.partition_count(names[tid]):
                unknown.append((tid, a.partition))
                continue
            parts.append(ShareAcknowledgePartition(tid, a.partition, tuple((b.first_offset, b.last_offset, tuple(b.types)) for b in a.batches)))
        try:
            r = self._ask(group, ShareAcknowledgeCmd(group, member, epoch, tuple(parts)), create=False)  # needs a session
        except GroupRefused as exc:
            return _no_session_result(exc, lambda sessions: decide_share_acknowledge(sessions, member, epoch))
        except ActorTimeout as exc:
            return ShareFetchResult("REQUEST_TIMED_OUT", str(exc))
        if type(r).__name__ in ("Failure", "NotReady"):
            return ShareFetchResult(getattr(r, "error", "COORDINATOR_LOAD_IN_PROGRESS"), getattr(r, "message", None))
        if _err(r.error):
            return ShareFetchResult(r.error, r.message or None)
        if epoch == -1:
            with self._lock:
                self._session_parts.pop((group, member), None)
        if epoch == -1 or _releases(a.acknowledgement_batches for a in parts):
            self._freed(group)
        out = [ShareFetchPartition(uuid.UUID(p.topic_id), p.partition, ack_error=_err(p.error), ack_error_message=p.message or None) for p in r.partitions]
        out += [ShareFetchPartition(uuid.UUID(t), p, ack_error="UNKNOWN_TOPIC_ID" if t not in names else "UNKNOWN_TOPIC_OR_PARTITION") for t, p in unknown]
        return ShareFetchResult(None, None, self.lock_ms(group), tuple(out))

    # ------------------------------------------------------------------ describe / configs
    def lock_ms(self, group: str) -> int:
        """The acquisition lock duration in force for ``group`` (group override or broker)."""
        cached = getattr(self, "_lock_ms", {}).get(group)
        if cached is not None:
            return cached
        return int(self.cfg.get("group.share.record.lock.duration.ms", "30000"))

    def describe(self, group: str) -> dict:
        """ShareGroupDescribe for one group as the handler's dict (``{"error", "message"}`` when
        it failed: GROUP_ID_NOT_FOUND for a group that does not exist, without starting an actor)."""
        try:
            d = self._ask(group, DescribeShareGroup(group), create=False)
        except GroupRefused as exc:
            return {"error": exc.error, "message": exc.message}
        except ActorTimeout as exc:
            return {"error": "COORDINATOR_NOT_AVAILABLE", "message": str(exc)}
        if _err(getattr(d, "error", None)):
            return {"error": d.error, "message": d.message or None}
        names = self.controller.names_by_id()
        return {
            "state": d.group_state,
            "group_epoch": d.group_epoch,
            "assignment_epoch": d.assignment_epoch,
            "assignor": d.assignor_name,
            "members": [
                {
                    "member_id": m.member_id,
                    "rack_id": m.rack_id,
                    "member_epoch": m.member_epoch,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "subscribed": list(m.subscribed_topic_names),
                    "assignment": [(uuid.UUID(tid), names.get(tid, ""), list(ps)) for tid, ps in m.assignment],
                }
                for m in d.members
            ],
        }

    def offsets(self, group: str, topics) -> tuple[str | None, str | None, list]:
        """DescribeShareGroupOffsets: ``(error, message, [(topic name, topic uuid, [(partition,
        start offset, error)])])``."""
        from actors.share.messages import DescribeShareGroupOffsets

        infos = {t.name: t for t in self.controller.cached_topics([n for n, _ in topics] if topics else None)}
        parts = None
        if topics is not None:
            parts = tuple((str(infos[n].topic_id), p) for n, ps in topics if n in infos for p in ps)
        try:
            r = self._ask(group, DescribeShareGroupOffsets(group, parts), create=False)
        except GroupRefused as exc:
            return exc.error, exc.message, []
        except ActorTimeout as exc:
            return "COORDINATOR_NOT_AVAILABLE", str(exc), []
        if _err(r.error):
            return r.error, None, []
        names = self.controller.names_by_id()
        rows: dict[str, list] = {}
        for po in r.partitions:
            rows.setdefault(po.topic_id, []).append((po.partition, po.start_offset, _err(po.error)))
        return None, None, [(names.get(tid, ""), uuid.UUID(tid), sorted(ps)) for tid, ps in rows.items()]

    def describe_configs(self, group: str, keys: Sequence[str] | None):
        """DescribeConfigs on a GROUP resource (source GROUP_CONFIG=8 for overrides, 5 default).
        A group that does not exist gets the broker defaults without an actor being started
        (Kafka's ``ConfigHelper.describeConfigs``: ``GroupConfig.fromProps`` of no overrides); an
        empty name is INVALID_REQUEST ("Group name must not be empty")."""
        from actors.share.messages import DescribeGroupConfigs

        if not group:
            return "INVALID_REQUEST", "Group name must not be empty", []
        try:
            r = self._ask(group, DescribeGroupConfigs(group), create=False)
        except GroupRefused as exc:
            if exc.error != "GROUP_ID_NOT_FOUND":
                return exc.error, exc.message, []
            defaults = effective_group_configs(GroupShareConfig(), BrokerShareConfig.from_config(self.cfg, strict_ranges=False))
            return None, None, [ConfigEntry(k, v, is_default=True, source=5) for k, v in sorted(defaults.items()) if keys is None or k in keys]
        except ActorTimeout as exc:
            return "COORDINATOR_NOT_AVAILABLE", str(exc), []
        if type(r).__name__ == "Failure":
            return r.error, r.message, []
        overrides = set(r.overrides)
        entries = [ConfigEntry(k, v, is_default=k not in overrides, source=8 if k in overrides else 5) for k, v in sorted(r.configs.items()) if keys is None or k in keys]
        return None, None, entries

    def alter_configs(self, group: str, ops, validate_only: bool):
        """IncrementalAlterConfigs on a GROUP resource: SET (0) and DELETE (1); APPEND/SUBTRACT
        are INVALID_CONFIG for these scalar keys (as Kafka). Returns ``(error or None, message
        or None)``.

        ``validate_only`` never creates a group (no actor, no ``group.share.max.groups`` slot):
        a group that does not exist has no overrides, so the ops are validated on their own
        against the broker's bounds (:func:`~actors.share.config.validate_group_configs`, Kafka's
        ``GroupConfig.validate``) — success or INVALID_CONFIG, as Kafka's controller answers a
        validate-only change to a group resource with no configs yet."""
        from actors.share.messages import AlterGroupConfigs

        changes: dict[str, str | None] = {}
        for key, op, value in ops:
            if op == 0:
                changes[key] = value
            elif op == 1:
                changes[key] = None
            else:
                return "INVALID_CONFIG", f"Config value append/subtract is not allowed for config key {key}"
        try:
            r = self._ask(group, AlterGroupConfigs(group, changes, True, validate_only), create=not validate_only)
        except GroupRefused as exc:
            if validate_only and exc.error == "GROUP_ID_NOT_FOUND":
                return self._validate_new_group_configs(changes)
            return exc.error, exc.message
        except ActorTimeout as exc:
            return "COORDINATOR_NOT_AVAILABLE", str(exc)
        if type(r).__name__ == "Failure":
            return r.error, r.message
        if not _err(r.error) and not validate_only:
            lock = r.configs.get("share.record.lock.duration.ms")
            if not hasattr(self, "_lock_ms"):
                self._lock_ms: dict[str, int] = {}
            if lock is not None:
                self._lock_ms[group] = int(lock)
            else:
                self._lock_ms.pop(group, None)
        return _err(r.error), r.message or None

    def _validate_new_group_configs(self, changes: dict[str, str | None]) -> tuple[str | None, str | None]:
        """Validate ``changes`` (key → value, ``None`` deletes) as the overrides of a group with none
        yet, against this broker's ``group.share.*`` bounds: ``(None, None)`` or ``(INVALID_CONFIG,
        Kafka's message)``. Pure; no actor is asked."""
        try:
            validate_group_configs({k: v for k, v in changes.items() if v is not None}, BrokerShareConfig.from_config(self.cfg, strict_ranges=False))
        except InvalidConfig as exc:
            return exc.error, str(exc)
        return None, None

    # ------------------------------------------------------------------ group admin (42, 91, 92)
    def _forget_positions(self, group: str) -> None:
        """Drop the listener's cached next fetch offsets of ``group`` (its share-partition state
        was replaced or deleted; the actor would answer ``refetch_from`` anyway)."""
        with self._lock:
            for d in (self._next, self._reset):
                for k in [k for k in d if k[0] == group]:
                    del d[k]

    def _ask_existing(self, group: str, msg: Any) -> tuple[str | None, str | None, Any]:
        """Ask an existing group's actor (never creating it) → ``(error, message, reply)``: a group
        that does not exist (GROUP_ID_NOT_FOUND) or a refused lookup, COORDINATOR_NOT_AVAILABLE
        when the actor does not answer in time, the reply's own error (``Failure``, ``NotReady``
        as COORDINATOR_LOAD_IN_PROGRESS, a reply's ``error``) — or ``(None, None, reply)``."""
        try:
            r = self._ask(group, msg, create=False)
        except GroupRefused as exc:
            return exc.error, exc.message, None
        except ActorTimeout as exc:
            return "COORDINATOR_NOT_AVAILABLE", str(exc), None
        err = _reply_error(r)
        if err is not None:
            return err, getattr(r, "message", None) or None, r
        return None, None, r

    def delete_group(self, group: str) -> tuple[str | None, str | None]:
        """DeleteGroups of a share group → ``(error, message)``: an EMPTY group's share-partition
        state and the group are deleted (``ShareStateDeleted`` per partition, then
        ``ShareGroupDeleted``, in one append: KIP-932 DeleteShareGroupState); then the controller
        drops it from the census and stops its actor, so the id starts afresh. GROUP_ID_NOT_FOUND
        for a group that does not exist, NON_EMPTY_GROUP while it has members."""
        err, message, _r = self._ask_existing(group, DeleteShareGroupState(group))
        if err is not None:
            return err, message
        self._forget_positions(group)
        with self._lock:
            for k in [k for k in self._session_parts if k[0] == group]:
                del self._session_parts[k]
            getattr(self, "_lock_ms", {}).pop(group, None)  # its configs went with it
        self.controller.forget_share_group(group)
        return None, None

    def alter_offsets(self, group: str, topics: Sequence[tuple[str, Sequence[tuple[int, int]]]]) -> tuple[str | None, str | None, list]:
        """AlterShareGroupOffsets: ``topics`` ``(name, [(partition, start offset)])`` →
        ``(error, message, [(name, topic uuid or None, [(partition, error, message)])])``. Unknown
        topics and partitions answer UNKNOWN_TOPIC_OR_PARTITION here (Kafka's
        ``completeAlterShareGroupOffsets``); the rest go to the group's actor in one message."""
        infos = {t.name: t for t in self.controller.cached_topics([n for n, _ in topics])}
        wanted: list[tuple[str, int, int]] = []
        for name, parts in topics:
            info = infos.get(name)
            if info is not None:
                wanted.extend((str(info.topic_id), int(p), int(o)) for p, o in parts if 0 <= p < info.partitions)
        # asked even with no known partition: the group is validated all the same (Kafka's shard)
        err, message, r = self._ask_existing(group, AlterShareGroupOffsets(group, tuple(wanted)))
        if err is not None:
            return err, message, []
        results = {(pr.topic_id, pr.partition): (_err(pr.error), pr.message or None) for pr in r.partitions}
        self._forget_positions(group)
        out = []
        unknown = ("UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic-partition.")
        for name, parts in topics:
            info = infos.get(name)
            if info is None:
                out.append((name, None, [(p, *unknown) for p, _o in parts]))
                continue
            tid = str(info.topic_id)
            out.append((name, info.topic_id, [(p, *results.get((tid, int(p)), unknown)) for p, _o in parts]))
        return None, None, out

    def delete_offsets(self, group: str, topics: Sequence[str]) -> tuple[str | None, str | None, list]:
        """DeleteShareGroupOffsets: ``topics`` names → ``(error, message, [(name, topic uuid or
        None, error, message)])``: the topics the group has share-partition state for are deleted
        (it initialises them again from ``share.auto.offset.reset``); a topic without state is
        UNKNOWN_TOPIC_OR_PARTITION "There is no offset information to delete.", an unknown topic
        UNKNOWN_TOPIC_OR_PARTITION (Kafka's ``sharePartitionsEligibleForOffsetDeletion``)."""
        infos = {t.name: t for t in self.controller.cached_topics(list(topics))}
        ids = tuple(dict.fromkeys(str(infos[n].topic_id) for n in topics if n in infos))
        err, message, r = self._ask_existing(group, DeleteShareGroupOffsets(group, ids))
        if err is not None:
            return err, message, []
        by_id = {pr.topic_id: (_err(pr.error), pr.message or None) for pr in r.partitions}
        self._forget_positions(group)
        out = []
        for name in dict.fromkeys(topics):
            info = infos.get(name)
            if info is None:
                out.append((name, None, "UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic-partition."))
            else:
                out.append((name, info.topic_id, *by_id.get(str(info.topic_id), ("UNKNOWN_SERVER_ERROR", None))))
        return None, None, out

    def _ask_live(self, group: str, msg: Any) -> Any:
        """Ask ``group``'s actor only if it is running (:meth:`ControllerClient.live_share_group`);
        ``None`` otherwise or when it does not answer. Never starts an actor."""
        addr = self.controller.live_share_group(group)
        if addr is None:
            return None
        try:
            return self.gateway.ask(addr, msg, self.timeout_s)
        except ActorTimeout:
            return None

    def list_groups(self) -> list[tuple[str, str, str]]:
        """``(group id, "share", state)`` of every share group that exists. The state is asked
        from the group's actor when it is running; a group whose actor is not running has
        passivated, which needs no member and no share session: ``Empty``; one that does not answer
        (recovering, timed out) is ``Unknown`` (Kafka's ``ShareGroupState.UNKNOWN``). No actor is
        started."""
        out = []
        for gid, gtype, _ in self.controller.share_groups():
            if self.controller.live_share_group(gid) is None:
                state = "Empty"
            else:
                d = self._ask_live(gid, DescribeShareGroup(gid))
                if not isinstance(d, ShareGroupDescription):
                    state = "Unknown"
                elif _err(d.error):
                    state = "Dead"
                else:
                    state = d.group_state
            out.append((gid, gtype, state))
        return out

    def status(self) -> dict[str, int]:
        """Counts over the share groups: groups (that exist), members and in-flight records (of
        the running actors; a passivated group has none). Starts no actor and keeps none alive."""
        groups = members = inflight = 0
        for gid, _type, _state in self.controller.share_groups():
            groups += 1
            r = self._ask_live(gid, StatusRequest())
            if not isinstance(r, StatusReply):
                continue
            counts = r.counts or {}
            members += int(counts.get("members", 0))
            inflight += int(counts.get("in_flight_records", counts.get("in_flight", 0)))
        return {"groups": groups, "members": members, "in_flight_records": inflight}
