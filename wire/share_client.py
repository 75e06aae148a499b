"""The listener's side of share groups: one ``ShareGroupActor`` message per Kafka request, plus
the record bytes for the acquired ranges, read here from the partition logs.

The group's actor runs in this process (:class:`actors.share.host.ShareGroupHost`); the protocol
with it is ``actors/share/messages.py``:

1. For each partition of the member's share session the wire reads the **batch boundaries** of the
   log from the share-partition's ``next_fetch_offset`` (as last answered by the actor; unknown at
   first) up to the high watermark, and sends them with the log start offset and high watermark
   in ONE :class:`ShareFetchCmd` with the piggy-backed acknowledgements.
2. The actor decides (session epoch, acknowledgements, acquisitions), persists, and answers the
   acquired ranges and each partition's next fetch offset. The bytes of the batches that overlap
   the acquired ranges go into the response; they never reach the actor.
3. When the actor answers ``refetch_from`` (the cached offset was stale: records were released
   below it, or it was unknown) this request acquires nothing there; the remembered offset is
   updated, and the purgatory's next attempt reads from the right place at once (a continuation
   never bumps the session epoch).

The purgatory (Kafka's ``DelayedShareFetch``): a ShareFetch is decided at once — session step,
acknowledgements, acquisition — and when it acquired nothing it waits, up to ``MaxWaitMs``, for
exactly what can give it records: an append that moves the high watermark of one of its
partitions (:meth:`wire.logs.LogRegistry.notify`), or records of its group freed without an
append — a RELEASE, a closed share session, a fenced or leaving member, an acquisition lock that
expired, a start offset that opened the in-flight window — which the group's actor reports itself
when it decides them (:class:`actors.share.messages.RecordsFreed`, whatever request or timer
caused them). Each wake-up tries again with a continuation that only acquires; when another
fetch took the records first, the request goes back to waiting instead of answering empty
(:class:`wire.waits.WaitSet`: no timer tick, no listener-wide wake-up, no lost wake-up).

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

import logging
import threading
import time
import uuid
from collections import OrderedDict
from typing import Any, Callable, Sequence

import msgspec

from actors.messages import NotReady, StatusReply, StatusRequest
from actors.share.host import GroupNotRunning
from actors.share.messages import AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteShareGroupState
from actors.share.config import BrokerShareConfig, GroupShareConfig, InvalidConfig, effective_group_configs, validate_group_configs
from actors.share.errors import ShareError
from actors.share.membership import MembershipError, ShareGroupHeartbeat, validate_heartbeat
from actors.share.messages import DescribeShareGroup, ShareFetchReply, ShareGroupDescription
from actors.share.sessions import ShareSessions, decide_share_acknowledge, decide_share_fetch
from store import record_batch as rb
from wire.backend import AcquiredRange, ConfigEntry, HeartbeatResult, ShareFetchPartition, ShareFetchResult
from wire.controller_client import GroupRefused
from wire.gateway import ActorTimeout
from wire.group_types import GroupTypes
from wire.quotas import parked
from wire.waits import WaitSet

__all__ = ["ShareClient"]

log = logging.getLogger("shoal.wire.share")

#: bytes of log read per partition per ShareFetch (boundaries + bytes of candidate batches)
_PARTITION_READ_BYTES = 256 * 1024
#: batches read at least (within the bytes above) past the remembered next fetch offset, per share
#: session of the group, although the request's MaxRecords may end sooner: the other members'
#: acquisitions move the share-partition's next fetch offset between this listener's last answer
#: and the actor's decision, and a read that ends below it acquires nothing (the actor answers
#: ``refetch_from``, and the fetch reads again)
_READ_BATCHES_PER_SESSION = 2


#: how many bytes of record indexes (and decompressed records blocks) :class:`_RecordIndexes` keeps
_RECORD_INDEX_BYTES = 32 * 1024 * 1024
#: what one index costs beyond its arrays and block (its objects and the LRU's entry), bytes
_RECORD_INDEX_OVERHEAD = 512
#: batches smaller than this go whole even when a fetch acquired few of their records: cutting
#: them saves little and would fill the index LRU with small entries (bytes)
_CUT_MIN_BATCH_BYTES = 16 * 1024


class _RecordIndexes:
    """A bounded LRU of :class:`store.record_batch.RecordIndex` by batch, for ShareFetch responses
    that carry part of a batch (:meth:`ShareClient._bytes_for`): the released records of one big
    batch are redelivered a few at a time, each time from the same batch, so its records are
    indexed once, not per response. Keyed ``(topic, partition, base offset, CRC)`` (a batch
    written again at that offset after a truncation has another CRC); holds at most ``limit``
    bytes (each index's arrays and decompressed block). Thread-safe."""

    def __init__(self, limit: int = _RECORD_INDEX_BYTES) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._by_key: OrderedDict[tuple[str, int, int, int], tuple[rb.RecordIndex, int]] = OrderedDict()
        self._bytes = 0

    def get(self, topic: str, partition: int, data: bytes, h: rb.BatchHeader) -> rb.RecordIndex:
        """The index of the batch whose header is ``h`` in ``data`` (built and kept when missing).
        Raises what :func:`store.record_batch.index_records` raises."""
        key = (topic, partition, h.base_offset, h.crc)
        with self._lock:
            hit = self._by_key.get(key)
            if hit is not None:
                self._by_key.move_to_end(key)
                return hit[0]
        index = rb.index_records(data, h.position)
        size = _RECORD_INDEX_OVERHEAD + 8 * len(index.starts) + len(index.block or b"")
        if size <= self.limit:
            with self._lock:
                if key not in self._by_key:
                    self._by_key[key] = (index, size)
                    self._bytes += size
                while self._bytes > self.limit:
                    _k, (_i, n) = self._by_key.popitem(last=False)
                    self._bytes -= n
        return index


def _err(name: str | None) -> str | None:
    return None if not name or name == "NONE" else name


def _reply_error(r: Any) -> str | None:
    """The error of an admin reply (``ShareGroupStateDeleted``, ``Failure``, ``NotReady``)."""
    if type(r).__name__ == "NotReady":
        return "COORDINATOR_LOAD_IN_PROGRESS"
    return _err(getattr(r, "error", "UNKNOWN_SERVER_ERROR"))


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


def _coordinator_unavailable(partitions: set[tuple[str, int]], acked: set[tuple[str, int]], lock_ms: int) -> ShareFetchResult:
    """The answer to a ShareFetch/ShareAcknowledge for a group whose coordinator is another node
    that cannot be reached (it died and the cluster has not fenced it yet, or the images of the
    nodes disagree for a moment): NOT_LEADER_OR_FOLLOWER for each partition (``(topic id,
    partition)``; its acknowledgement too, for those in ``acked``), so the client refreshes its
    metadata and sends again, by then to a node that can forward to a live coordinator.

    Deviation: in Kafka the partition leader holds the share-partition itself and has no
    coordinator to miss. A top-level NOT_COORDINATOR, which ShareFetch never carries in Kafka,
    made librdkafka 2.16's ShareConsumer stop fetching for good (measured: a SIGKILLed
    coordinator left 117,000 of 150,000 records unconsumed; with this answer all were)."""
    return ShareFetchResult(None, None, lock_ms, tuple(ShareFetchPartition(uuid.UUID(t), p, error="NOT_LEADER_OR_FOLLOWER",
                                                                          ack_error="NOT_LEADER_OR_FOLLOWER" if (t, p) in acked else None)
                                                      for t, p in sorted(partitions)))


def _answered_for(r: Any, sent: Sequence[Any]) -> Any:
    """``r`` (a :class:`ShareFetchReply`) with only the partitions of ``sent`` (the message's
    ``ShareFetchPartition``s): the actor answers every partition of the member's share session,
    and one left out of this attempt (its leader could not be read) is answered elsewhere in the
    response, NOT_LEADER_OR_FOLLOWER, not with the actor's ``refetch_from``."""
    keys = {(m_.topic_id, m_.partition) for m_ in sent}
    if not isinstance(r, ShareFetchReply) or all((pr.topic_id, pr.partition) in keys for pr in r.partitions):
        return r
    return msgspec.structs.replace(r, partitions=tuple(pr for pr in r.partitions if (pr.topic_id, pr.partition) in keys))


def _wake_freed(waits: WaitSet, group: str, partitions: tuple[tuple[str, int], ...]) -> None:
    """Records of ``group`` were freed in ``partitions`` (``(topic id, partition)``; empty: not
    known): wake a fetch waiting on each (``("freed", group, topic id, partition)``: only a fetch
    whose share session holds the partition can use them; a client holds one session per node,
    so one woken at random could not pass the wake-up on), or on the group (``("group", group)``)
    when the partitions are not known."""
    if not partitions:
        waits.bump(("group", group))
    for tid, p in partitions:
        waits.bump(("freed", group, tid, p))


class ShareClient:
    """Share-group requests from the listener threads. ``host`` (a
    :class:`actors.share.host.ShareGroupHost`) runs this node's share-group actors in this process;
    ``controller`` (a :class:`wire.controller_client.ControllerClient`) resolves topic ids and
    keeps the census of groups; ``logs`` is the :class:`wire.logs.LogRegistry`."""

    def __init__(self, host: Any, controller: Any, logs: Any, cfg: dict) -> None:
        self.host = host
        self.controller = controller
        self.logs = logs
        self.cfg = cfg
        # records of a group freed without an append (RecordsFreed, decided by its actor): wake
        # the group's ShareFetches waiting in the purgatory
        host.on_records_freed = lambda group, parts: _wake_freed(logs.waits, group, parts)
        #: one type per group id (:class:`wire.group_types.GroupTypes`)
        self.group_types = GroupTypes(cfg)
        #: ``is_coordinator(group) -> bool`` (see :class:`wire.consumer_client.ConsumerGroupClient`)
        self.is_coordinator: Callable[[str], bool] = lambda _group: True
        self._lock = threading.Lock()
        #: the partitions of each share session, keyed (group, member, node: -1 for a client of
        #: this node, else the node that forwarded the request, :mod:`wire.forwarding`)
        self._session_parts: dict[tuple[str, str, int], set[tuple[str, int]]] = {}
        #: share sessions per group in :attr:`_session_parts` (how many members compete for the
        #: group's share-partitions: how far past the remembered next fetch offset to read)
        self._sessions_of: dict[str, int] = {}
        self._next: dict[tuple[str, str, int], int] = {}
        #: share.auto.offset.reset=by_duration: the offset ListOffsets gave for the timestamp the
        #: actor asked for, sent as ``reset_offset`` with the partition's next ShareFetch
        self._reset: dict[tuple[str, str, int], int] = {}
        self.timeout_s = float(cfg.get("shoal.wire.actor.timeout.ms", "30000")) / 1000
        self._record_indexes = _RecordIndexes()

    # ------------------------------------------------------------------ plumbing
    def _ask(self, group: str, msg: Any, create: bool = True) -> Any:
        """One message to the group's actor (``create``: the request may create the group, see
        the module doc). A group whose actor does not run is admitted by the controller (the
        census) and started first. A ``NotReady`` from an actor that is passivating is retried
        once (it no longer gets requests; a fresh actor recovers). Raises :class:`GroupRefused`
        (NOT_COORDINATOR on another node; the census' refusals), ``ActorTimeout`` when no answer
        comes."""
        if not self.is_coordinator(group):
            raise GroupRefused("NOT_COORDINATOR", f"node does not coordinate group {group}")
        reply: Any = None
        for attempt in range(3):
            reply = self.host.ask(group, msg, self.timeout_s)
            if reply is None:
                raise ActorTimeout(f"share group {group}: no answer to {type(msg).__name__} within {self.timeout_s}s")
            if isinstance(reply, GroupNotRunning):
                if attempt == 2:
                    break
                self.controller.admit_share_group(group, create)
                err = self.host.start_group(group, max(self.timeout_s, 60))
                if err is not None:
                    raise ActorTimeout(f"share group {group} did not start: {err}")
                continue
            if not isinstance(reply, NotReady) or attempt == 2:
                return reply
        raise ActorTimeout(f"share group {group}: its actor stopped running again and again")

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
        assignment = None
        if r.assignment is not None:
            assignment = {uuid.UUID(tid): list(ps) for tid, ps in r.assignment}
        return HeartbeatResult(_err(r.error), r.message or None, r.member_id or member_id, r.member_epoch, r.heartbeat_interval_ms or 5000, assignment)

    # ------------------------------------------------------------------ fetch / acknowledge
    def _drop_session(self, group: str, member: str, node: int = -1) -> None:
        """Forget ``member``'s share session of ``group`` with ``node`` (call with :attr:`_lock` held)."""
        if self._session_parts.pop((group, member, node), None) is not None:
            n = self._sessions_of.get(group, 1) - 1
            if n > 0:
                self._sessions_of[group] = n
            else:
                self._sessions_of.pop(group, None)

    def _session_after(self, group: str, member: str, epoch: int, wanted: Sequence[tuple[uuid.UUID, int]], forgotten: Sequence[tuple[uuid.UUID, int]],
                       node: int = -1) -> set[tuple[str, int]]:
        key = (group, member, node)
        with self._lock:
            current = set() if epoch == 0 else set(self._session_parts.get(key, set()))
        current |= {(str(t), p) for t, p in wanted}
        current -= {(str(t), p) for t, p in forgotten}
        return current

    def fetch(self, group: str, member: str, epoch: int, wanted, forgotten, acks, max_records: int, max_wait_ms: int,
              acquire_mode: int = 0, batch_size: int | None = None, is_renew_ack: bool = False, session_node: int = -1) -> ShareFetchResult:
        """ShareFetch → one ``ShareFetchCmd`` (session step, piggy-backed acknowledgements,
        acquisition), then — when it acquired nothing — the purgatory: the request waits, up to
        ``max_wait_ms``, for an append to one of its partitions or records of the group freed
        (:class:`wire.waits.WaitSet`), and each time tries again with a *continuation* that only
        acquires (Kafka's ``DelayedShareFetch``). A wake-up whose records another fetch took first
        goes back to waiting; it does not answer empty. ``wanted``/``forgotten`` are (topic uuid,
        partition) lists; ``acks`` :class:`wire.backend.SharePartitionAck` list; ``acquire_mode``,
        ``batch_size`` and ``is_renew_ack`` are ShareFetch v1/v2's ``ShareAcquireMode``,
        ``BatchSize`` and ``IsRenewAck``. ``session_node``: the node the client holds this share
        session with (-1: this one; see :mod:`wire.forwarding`). The group's coordinator acquires
        from its own replica of each partition, or from the partition's leader when it keeps none
        (:meth:`wire.logs.LogRegistry.share_read`); a partition whose leader cannot be read is
        answered NOT_LEADER_OR_FOLLOWER."""
        from actors.share.messages import ShareFetchCmd

        parts = self._session_after(group, member, epoch, wanted, forgotten, session_node)
        ack_by = {(str(a.topic_id), a.partition): tuple((b.first_offset, b.last_offset, tuple(b.types)) for b in a.batches) for a in acks}
        names = self.controller.names_by_id()
        known: list[tuple[str, int]] = []
        unknown: list[tuple[str, int]] = []
        elsewhere: list[tuple[str, int]] = []  # no replica here: nothing to acquire from
        for tid, p in sorted(parts | set(ack_by)):
            name = names.get(tid)
            if name is None or not 0 <= p < self.controller.partition_count(name):
                unknown.append((tid, p))
            elif (tid, p) in parts and not self.logs.share_readable(name, p):
                elsewhere.append((tid, p))
            else:
                known.append((tid, p))
        keys = [("partition", names[tid], p) for tid, p in known if (tid, p) in parts] + [("group", group)] + [
            ("freed", group, tid, p) for tid, p in known if (tid, p) in parts]
        deadline = time.monotonic() + max(0, max_wait_ms) / 1000
        limit = max_records if max_records > 0 else 500
        seen = self.logs.waits.versions(keys)  # before the log is read: a change after it ends a wait
        read, msg_parts, failed = self._read_partitions(group, epoch, known, parts, ack_by, names, limit)
        elsewhere += failed  # its leader could not be read (nor its acknowledgements applied): the client looks again
        cmd = ShareFetchCmd(group, member, epoch, tuple(msg_parts), limit, tuple((str(t), p) for t, p in forgotten),
                            acquire_mode, is_renew_ack, batch_size, session_node=session_node)
        try:
            r = self._ask(group, cmd, create=epoch == 0)  # only a new share session may create the group
        except GroupRefused as exc:
            if exc.error == "NOT_COORDINATOR":
                return _coordinator_unavailable(parts | set(ack_by), set(ack_by), self.lock_ms(group))
            return _no_session_result(exc, lambda sessions: decide_share_fetch(sessions, member, epoch, [], (), bool(ack_by)))
        except ActorTimeout as exc:
            return ShareFetchResult("REQUEST_TIMED_OUT", str(exc))
        if type(r).__name__ in ("Failure", "NotReady"):
            return ShareFetchResult(getattr(r, "error", "COORDINATOR_LOAD_IN_PROGRESS"), getattr(r, "message", None))
        if _err(r.error):
            return ShareFetchResult(r.error, r.message or None, self.lock_ms(group))
        r = _answered_for(r, msg_parts)
        with self._lock:
            if epoch == -1:
                self._drop_session(group, member, session_node)
            else:
                if (group, member, session_node) not in self._session_parts:
                    self._sessions_of[group] = self._sessions_of.get(group, 0) + 1
                self._session_parts[(group, member, session_node)] = parts
        lock_ms = getattr(r, "acquisition_lock_timeout_ms", 0) or self.lock_ms(group)
        #: (topic id, partition) → [latest result, the read it was decided on]; acknowledgement
        #: outcomes come from the first attempt only (continuations carry none)
        results: dict[tuple[str, int], list[Any]] = {}
        hw_read = {(m_.topic_id, m_.partition): m_.high_watermark for m_ in msg_parts}
        self._absorb(group, r, read, results, names, hw_read)
        # the purgatory: continuations on the session's partitions only (an acknowledgement-only
        # partition has nothing to acquire)
        session = [k for k in known if k in parts and k not in failed]  # a partition answered NOT_LEADER_OR_FOLLOWER stays out
        waits = epoch != -1 and not is_renew_ack and max_wait_ms > 0 and bool(session)
        held: set = set()  # wake-ups this fetch holds: passed on unless its attempt used them up
        quick = 0  # attempts in a row that need no wait (a stale read, a by_duration reset)
        try:
            while waits and self._acquired_nothing(r):
                stale = any(pr.refetch_from is not None or pr.reset_timestamp_ms is not None for pr in r.partitions)
                remaining = deadline - time.monotonic()
                if stale and quick < 3 and remaining > 0:
                    quick += 1
                else:
                    quick = 0
                    if not stale:
                        held.clear()  # the attempt that used them tried and found nothing: nothing to hand on
                    if remaining <= 0:
                        break
                    wanted = self._wait_keys(r, names, group, hw_read)
                    with parked():  # the purgatory holds no queued.max.requests slot (Kafka's DelayedShareFetch)
                        woke = self.logs.waits.wait({k: seen[k] for k in wanted if k in seen}, remaining, group)
                    if not woke:
                        break  # MaxWaitMs passed with nothing new
                    if isinstance(woke, set):
                        held |= woke
                seen = self.logs.waits.versions(keys)
                read, msg_parts, _failed = self._read_partitions(group, epoch, session, parts, {}, names, limit)
                hw_read = {(m_.topic_id, m_.partition): m_.high_watermark for m_ in msg_parts}
                again = ShareFetchCmd(group, member, epoch, tuple(msg_parts), limit, (), acquire_mode, False, batch_size, True, session_node)
                try:
                    r = self._ask(group, again, create=False)
                except (GroupRefused, ActorTimeout):
                    break
                if not isinstance(r, ShareFetchReply) or _err(r.error) or not r.partitions:
                    break  # the session moved on or the group is gone: answer what the first attempt had
                r = _answered_for(r, msg_parts)
                self._absorb(group, r, read, results, names, hw_read)
                if not self._acquired_nothing(r):
                    if held and not self._records_left(r, hw_read):
                        held.clear()  # it took all there was
                    break
        finally:
            if held:
                self.logs.waits.pass_on(held, group)  # records left, or this fetch leaves untried: the next waiter tries
        out = []
        for (tid, p), (pr, rd, ack_error) in results.items():
            acquired = tuple(AcquiredRange(a, b, dc) for a, b, dc in pr.acquired)
            data = self._bytes_for(rd, names.get(tid), p, acquired) if acquired else b""
            lg = self.logs.get(names.get(tid), p)
            out.append(ShareFetchPartition(uuid.UUID(tid), p, error=_err(pr.error), ack_error=ack_error, records=data, acquired=acquired,
                                           log_start_offset=lg.log_start_offset if lg else -1, high_watermark=lg.high_watermark if lg else -1))
        for tid, p in unknown:
            err = "UNKNOWN_TOPIC_ID" if tid not in names else "UNKNOWN_TOPIC_OR_PARTITION"
            out.append(ShareFetchPartition(uuid.UUID(tid), p, error=err, ack_error=err if (tid, p) in ack_by else None))
        for tid, p in elsewhere:
            out.append(ShareFetchPartition(uuid.UUID(tid), p, error="NOT_LEADER_OR_FOLLOWER", ack_error="NOT_LEADER_OR_FOLLOWER" if (tid, p) in ack_by else None))
        return ShareFetchResult(None, None, lock_ms, tuple(out))

    def _wait_keys(self, r: Any, names: dict[str, str], group: str, hw_read: dict[tuple[str, int], int]) -> list[tuple]:
        """What an attempt that acquired nothing waits for: records of the group freed, always;
        an append to a partition where the attempt reached the high watermark it read
        (``hw_read``: (topic id, partition) → the high watermark sent with the attempt; an append
        after that read moved the key's version past the one read before it, so the wait ends at
        once). A partition with records left below that high watermark that could not be acquired
        (locked by other members, the in-flight window full:
        ``group.share.partition.max.record.locks``) gains nothing from an append — only a free of
        the group helps — so its appends do not wake the fetch."""
        keys: list[tuple] = [("group", group)]
        for pr in r.partitions:
            name = names.get(pr.topic_id)
            if name is None or _err(pr.error) is not None:
                continue
            keys.append(("freed", group, pr.topic_id, pr.partition))
            hw = hw_read.get((pr.topic_id, pr.partition))
            nfo = pr.next_fetch_offset if pr.next_fetch_offset is not None else -1
            if hw is None or nfo < 0 or nfo >= hw:
                keys.append(("partition", name, pr.partition))
                if hw is not None:  # read from its leader: the leader's progress wakes us
                    self.logs.watch_share(name, pr.partition, hw)
        return keys

    @staticmethod
    def _records_left(r: Any, hw_read: dict[tuple[str, int], int]) -> bool:
        """Whether an attempt left acquirable records behind: a partition whose next fetch offset
        is below the high watermark it was read up to (``hw_read``: (topic id, partition) → high
        watermark)."""
        for pr in r.partitions:
            hw = hw_read.get((pr.topic_id, pr.partition), -1)
            if _err(pr.error) is None and 0 <= (pr.next_fetch_offset if pr.next_fetch_offset is not None else -1) < hw:
                return True
        return False

    @staticmethod
    def _acquired_nothing(r: Any) -> bool:
        """Whether a ShareFetch attempt acquired nothing although some partition could still give
        records (one without an error): the request then waits in the purgatory."""
        return not any(pr.acquired for pr in r.partitions) and any(_err(pr.error) is None for pr in r.partitions)

    def _read_partitions(self, group: str, epoch: int, known: list[tuple[str, int]], parts: set[tuple[str, int]],
                         ack_by: dict, names: dict[str, str], max_records: int) -> tuple[dict, list, list[tuple[str, int]]]:
        """For each known partition: the batch boundaries of the log from the share-partition's
        next fetch offset (as last answered; the log start when unknown) up to the high watermark
        — no further than the batch holding the ``max_records``-th offset (what the request may
        acquire) — and the ``ShareFetchPartition`` to send, read from this node's replica or the
        partition's leader (:meth:`wire.logs.LogRegistry.share_read`). Returns ``(reads, message
        partitions, failed)``: ``failed`` lists the partitions whose leader could not be read
        (they are left out of the message, their acknowledgements too)."""
        from actors.share.messages import ShareFetchPartition as Part

        read: dict[tuple[str, int], tuple[list[tuple[int, int]], bytes]] = {}
        msg_parts = []
        failed: list[tuple[str, int]] = []
        min_batches = _READ_BATCHES_PER_SESSION * max(1, self._sessions_of.get(group, 1))
        for tid, p in known:
            name = names[tid]
            nxt = self._next.get((group, tid, p), -1)
            batches: tuple[tuple[int, int], ...] | None = None
            if epoch != -1 and (tid, p) in parts:
                # next fetch offset unknown (first fetch, restart): read from the log start; the
                # actor filters batches below its next fetch offset and tells us where it is
                fp, bounds = self.logs.share_read(name, p, nxt, _PARTITION_READ_BYTES, max_records, min_batches)
                if fp.error is not None:
                    failed.append((tid, p))
                    continue
                hw, lso = fp.high_watermark, fp.log_start_offset
                if bounds:
                    read[(tid, p)] = (bounds, fp.records)
                batches = tuple(bounds)
            else:
                lso, hw = self.logs.share_offsets(name, p)
                if hw < 0:
                    failed.append((tid, p))
                    continue
            reset = self._reset.pop((group, tid, p), None)
            msg_parts.append(Part(tid, p, ack_by.get((tid, p), ()), nxt, batches, lso, hw, reset))
        return read, msg_parts, failed

    def _absorb(self, group: str, r: Any, read: dict, results: dict[tuple[str, int], list[Any]], names: dict[str, str],
                hw_read: dict[tuple[str, int], int]) -> None:
        """Take one attempt's reply in: remember each partition's next fetch offset (or where to
        read again), resolve a ``by_duration`` reset timestamp with ListOffsets for the next
        attempt (the high watermark read, ``hw_read``, when no record is that recent), and keep
        the partition's latest result with the read it was decided on (the first attempt's
        acknowledgement outcome stays)."""
        for pr in r.partitions:
            key = (group, pr.topic_id, pr.partition)
            if pr.refetch_from is not None:
                self._next[key] = pr.refetch_from
            elif pr.next_fetch_offset is not None and pr.next_fetch_offset >= 0:
                self._next[key] = pr.next_fetch_offset
            if pr.reset_timestamp_ms is not None and names.get(pr.topic_id):
                # by_duration: resolve the timestamp here (ListOffsets semantics; the log end when
                # no record is that recent) for the next attempt
                err, off = self.logs.share_list_offset(names[pr.topic_id], pr.partition, int(pr.reset_timestamp_ms))
                hw = hw_read.get((pr.topic_id, pr.partition), -1)
                if err is None and (off >= 0 or hw >= 0):
                    self._reset[key] = off if off >= 0 else hw
            tp = (pr.topic_id, pr.partition)
            prev = results.get(tp)
            ack_error = _err(pr.acknowledge_error) if prev is None else prev[2]
            results[tp] = [pr, read.get(tp), ack_error]

    def _bytes_for(self, read: tuple[list[tuple[int, int]], bytes] | None, name: str | None, partition: int, acquired: tuple[AcquiredRange, ...]) -> bytes:
        """The bytes of the read batches that overlap ``acquired`` (read again from the log when the
        acquisition lies outside what was read before the ask).

        A batch of which this response acquired at most half the offsets is sent with only the
        acquired records (:func:`store.record_batch.retain_records`: the batch as Kafka's log
        cleaner rebuilds one it filtered, same base offset, last offset delta, producer fields
        and codec), not whole: the records released from one big producer batch are redelivered
        a few at a time, and a ``record_limit`` fetch (KIP-1206) takes ``MaxRecords`` of a batch:
        each whole copy would carry every other record of the batch again (measured: 1,000,007
        bytes for a 10-record fetch from a 1 MB producer batch, 1,260 cut down). Kafka sends
        whole batches (its zero-copy send); its consumers skip the records they did not acquire,
        and read batches with gaps in their offsets as on any compacted topic. Control batches,
        batches under ``_CUT_MIN_BATCH_BYTES`` and a batch whose records cannot be cut (a
        malformed record the produce path did not look into) go whole, as Kafka sends them."""
        acquired = tuple(sorted(acquired, key=lambda a: a.first_offset))
        lo, hi = acquired[0].first_offset, acquired[-1].last_offset
        if read is None or not read[0] or read[0][0][0] > lo or read[0][-1][1] < hi:
            if name is None:
                return b""
            data = self.logs.share_read(name, partition, lo, _PARTITION_READ_BYTES)[0].records
        else:
            data = read[1]
        out = bytearray()
        ai = 0  # the first acquired range that may reach this batch (both ascend)
        for h in rb.iter_batches(data, verify_crc=False):
            if h.last_offset < lo:
                continue
            if h.base_offset > hi:
                break
            while ai < len(acquired) and acquired[ai].last_offset < h.base_offset:
                ai += 1
            keep = []
            n = 0
            k = ai
            while k < len(acquired) and acquired[k].first_offset <= h.last_offset:
                f, z = max(acquired[k].first_offset, h.base_offset), min(acquired[k].last_offset, h.last_offset)
                keep.append((f, z))
                n += z - f + 1
                k += 1
            if not keep:
                continue
            whole = memoryview(data)[h.position : h.position + h.size_in_bytes]
            if 2 * n > h.last_offset_delta + 1 or h.is_control_batch or name is None or h.size_in_bytes < _CUT_MIN_BATCH_BYTES:
                out += whole
                continue
            try:
                out += rb.retain_records(data, h.position, self._record_indexes.get(name, partition, data, h), keep)
            except (ValueError, MemoryError) as exc:  # a batch the log accepted but whose records cannot be cut
                log.warning("%s-%d: batch %d-%d sent whole, its records cannot be cut: %s", name, partition, h.base_offset, h.last_offset, exc)
                out += whole
        return bytes(out)

    def acknowledge(self, group: str, member: str, epoch: int, acks, session_node: int = -1) -> ShareFetchResult:
        """ShareAcknowledge → one ``ShareAcknowledgeCmd`` (``session_node`` as in :meth:`fetch`)."""
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
            r = self._ask(group, ShareAcknowledgeCmd(group, member, epoch, tuple(parts), session_node), create=False)  # needs a session
        except GroupRefused as exc:
            if exc.error == "NOT_COORDINATOR":
                return _coordinator_unavailable({(str(a.topic_id), a.partition) for a in acks}, {(str(a.topic_id), a.partition) for a in acks}, self.lock_ms(group))
            return _no_session_result(exc, lambda sessions: decide_share_acknowledge(sessions, member, epoch))
        except ActorTimeout as exc:
            return ShareFetchResult("REQUEST_TIMED_OUT", str(exc))
        if type(r).__name__ in ("Failure", "NotReady"):
            return ShareFetchResult(getattr(r, "error", "COORDINATOR_LOAD_IN_PROGRESS"), getattr(r, "message", None))
        if _err(r.error):
            return ShareFetchResult(r.error, r.message or None)
        if epoch == -1:
            with self._lock:
                self._drop_session(group, member, session_node)
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
                for k in [k for k in list(d) if k[0] == group]:  # a snapshot: other threads write these dicts
                    d.pop(k, None)

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
            self._sessions_of.pop(group, None)
            getattr(self, "_lock_ms", {}).pop(group, None)  # its configs went with it
        self.host.stop_group(group)  # the next request for the id starts a fresh group
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
        """Ask ``group``'s actor only if it is running (:meth:`ShareGroupHost.running`); ``None``
        otherwise or when it does not answer. Never starts an actor."""
        if not self.host.running(group):
            return None
        r = self.host.ask(group, msg, self.timeout_s)
        return None if r is None or isinstance(r, GroupNotRunning) else r

    def list_groups(self) -> list[tuple[str, str, str]]:
        """``(group id, "share", state)`` of every share group that exists. The state is asked
        from the group's actor when it is running; a group whose actor is not running has
        passivated, which needs no member and no share session: ``Empty``; one that does not answer
        (recovering, timed out) is ``Unknown`` (Kafka's ``ShareGroupState.UNKNOWN``). No actor is
        started."""
        out = []
        for gid in self.controller.share_groups():
            if not self.host.running(gid):
                state = "Empty"
            else:
                d = self._ask_live(gid, DescribeShareGroup(gid))
                if not isinstance(d, ShareGroupDescription):
                    state = "Unknown"
                elif _err(d.error):
                    state = "Dead"
                else:
                    state = d.group_state
            out.append((gid, "share", state))
        return out

    def status(self) -> dict[str, int]:
        """Counts over the share groups: groups (that exist), running actors, members and
        in-flight records (of the running actors; a passivated group has none), passivations so
        far. Starts no actor and keeps none alive."""
        groups = members = inflight = running = 0
        for gid in self.controller.share_groups():
            groups += 1
            r = self._ask_live(gid, StatusRequest())
            if not isinstance(r, StatusReply):
                continue
            running += 1
            counts = r.counts or {}
            members += int(counts.get("members", 0))
            inflight += int(counts.get("in_flight_records", counts.get("in_flight", 0)))
        host = self.host.status() if hasattr(self.host, "status") else {}
        return {"groups": groups, "group_actors": running, "members": members, "in_flight_records": inflight,
                "group_passivations": int(host.get("passivations", 0))}
