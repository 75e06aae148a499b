"""Kafka's ``RemoteLogMetadataManager`` interface with Python names, an event-sourced
implementation usable in-process, and the NotReady / Swappable facades.

Interface: ``storage/api/.../remote/storage/RemoteLogMetadataManager.java`` (reference §1), incl.
the 4.0 defaults ``nextSegmentWithTxnIndex`` (KIP-1058) and ``isReady`` (KIP-1105). Kafka's write
methods return ``CompletableFuture<Void>``; here they return ``None`` once the event is durable
in the event log *and* applied to the local caches (what ``future.get()`` guarantees in
``TopicBasedRemoteLogMetadataManager``, reference §5.4), and raise instead of failing the future.

:class:`EventSourcedRemoteLogMetadataManager` is ``TopicBasedRemoteLogMetadataManager`` over the
event log: metadata partition ``p`` is the stream ``rlmm:<p>``, the partitioner is Kafka's, a user
partition is served once registered through :meth:`on_partition_leadership_changes` and its
metadata partition is caught up (snapshot + tail), writes append then catch up (read-your-writes).

The broker boots on :class:`NotReadyRemoteLogMetadataManager` (fail closed: every data call raises
:class:`RemoteLogMetadataManagerNotReadyException`) behind a :class:`SwappableRemoteLogMetadataManager`,
and swaps in the live manager when it is ready; leadership changes received meanwhile are replayed
into the live manager (Kafka's ``pendingAssignPartitions``).
"""

from __future__ import annotations

import abc
import logging
import threading
from typing import Any, Callable, Iterable, Iterator, Optional

from events.rlmm_errors import (
    IllegalStateException,
    KafkaException,
    NullPointerException,
    RemoteLogMetadataManagerNotReadyException,
    RemoteResourceNotFoundException,
)
from events.rlmm_types import (
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemotePartitionDeleteMetadata,
    TopicIdPartition,
)
from actors.rlmm.partitioner import metadata_partition_for
from actors.rlmm.store import (
    MetadataPartitionState,
    decide_add,
    decide_put_partition_delete,
    decide_update,
    gc_paused,
    not_assigned_message,
)
from events.codec import new_event
from events.rlmm import stream_id
from store.event_log import ANY, EventLog

__all__ = [
    "ActorRemoteLogMetadataManager",
    "DEFAULT_NUM_PARTITIONS",
    "DEFAULT_SNAPSHOT_INTERVAL_EVENTS",
    "EventSourcedRemoteLogMetadataManager",
    "NotReadyRemoteLogMetadataManager",
    "RemoteLogMetadataManager",
    "SwappableRemoteLogMetadataManager",
    "load_metadata_partition",
]

log = logging.getLogger("shoal.rlmm.manager")

#: ``remote.log.metadata.topic.num.partitions`` default (Kafka: 50, ≥ 1).
DEFAULT_NUM_PARTITIONS = 50
#: ``shoal.rlmm.snapshot.interval.events``: snapshot a metadata partition after this many new events.
DEFAULT_SNAPSHOT_INTERVAL_EVENTS = 10_000
_READ_PAGE = 5_000


class RemoteLogMetadataManager(abc.ABC):
    """``RemoteLogMetadataManager`` (KIP-405) with Python names. Offsets are inclusive Kafka
    offsets, sizes bytes, times epoch milliseconds."""

    def configure(self, configs: dict[str, Any]) -> None:
        """``Configurable#configure``; the default ignores the configs."""

    def close(self) -> None:
        """``Closeable#close``."""

    @abc.abstractmethod
    def add_remote_log_segment_metadata(self, metadata: RemoteLogSegmentMetadata) -> None:
        """Store a COPY_SEGMENT_STARTED segment. Raises ``IllegalArgumentException`` for another state."""

    @abc.abstractmethod
    def update_remote_log_segment_metadata(self, update: RemoteLogSegmentMetadataUpdate) -> None:
        """Store a state change; raises ``IllegalArgumentException`` for COPY_SEGMENT_STARTED.
        Invalid transitions and unknown segments are dropped when applied (Kafka 3.7+)."""

    @abc.abstractmethod
    def remote_log_segment_metadata(
        self, topic_id_partition: TopicIdPartition, leader_epoch: int, offset: int
    ) -> Optional[RemoteLogSegmentMetadata]:
        """The COPY_SEGMENT_FINISHED segment holding ``offset`` under ``leader_epoch``, or ``None``."""

    @abc.abstractmethod
    def highest_offset_for_epoch(self, topic_id_partition: TopicIdPartition, leader_epoch: int) -> Optional[int]:
        """The highest offset copied for ``leader_epoch``, or ``None``."""

    @abc.abstractmethod
    def put_remote_partition_delete_metadata(self, metadata: RemotePartitionDeleteMetadata) -> None:
        """Store a partition's delete state (MARKED → STARTED → FINISHED, reference §4). No
        transition is validated (Kafka's main code never calls ``isValidTransition`` here);
        DELETE_PARTITION_FINISHED removes the partition's cache, after which every call on it
        raises ``RemoteResourceNotFoundException``. Raises ``NullPointerException`` for ``None``."""

    @abc.abstractmethod
    def list_remote_log_segments(
        self, topic_id_partition: TopicIdPartition, leader_epoch: Optional[int] = None
    ) -> Iterator[RemoteLogSegmentMetadata]:
        """Without ``leader_epoch``: every segment not DELETE_SEGMENT_FINISHED, in no defined
        order. With it: the epoch's segments sorted by ``start_offset``."""

    @abc.abstractmethod
    def on_partition_leadership_changes(
        self, leader_partitions: Iterable[TopicIdPartition], follower_partitions: Iterable[TopicIdPartition]
    ) -> None:
        """This broker became leader/follower of these partitions: serve them."""

    @abc.abstractmethod
    def on_stop_partitions(self, partitions: Iterable[TopicIdPartition]) -> None:
        """These partitions moved away or were deleted: stop serving them."""

    @abc.abstractmethod
    def remote_log_size(self, topic_id_partition: TopicIdPartition, leader_epoch: int) -> int:
        """Sum of ``segment_size_in_bytes`` (bytes) of ``list_remote_log_segments(tp, leader_epoch)``."""

    def is_ready(self, topic_id_partition: TopicIdPartition) -> bool:
        """Kafka 4.0 ``isReady(tp)`` (KIP-1105); default ``True``."""
        return True

    def next_segment_with_txn_index(
        self, topic_id_partition: TopicIdPartition, leader_epoch: int, offset: int
    ) -> Optional[RemoteLogSegmentMetadata]:
        """Kafka 4.0 ``nextSegmentWithTxnIndex`` (KIP-1058); default: the segment at
        ``(leader_epoch, offset)``."""
        return self.remote_log_segment_metadata(topic_id_partition, leader_epoch, offset)


def load_metadata_partition(
    event_log: EventLog, metadata_partition: int, *, use_snapshot: bool = True
) -> tuple[MetadataPartitionState, int]:
    """Recover metadata partition ``metadata_partition``: its latest snapshot (if any and
    ``use_snapshot``) plus the stream's tail. Returns ``(state, events_replayed)``; the state is
    marked initialized. A snapshot that cannot be decoded is ignored (full replay) and logged."""
    stream = stream_id(metadata_partition)
    state: MetadataPartitionState | None = None
    if use_snapshot:
        snap = event_log.load_snapshot(stream)
        if snap is not None:
            try:
                state = MetadataPartitionState.from_snapshot(snap.state)
            except ValueError as exc:
                log.warning("ignoring RLMM snapshot of %s at version %s: %s", stream, snap.stream_version, exc)
    if state is None:
        state = MetadataPartitionState(metadata_partition)
    replayed = catch_up(event_log, state)
    state.mark_initialized()
    return state, replayed


def catch_up(event_log: EventLog, state: MetadataPartitionState) -> int:
    """Fold every event of ``state``'s stream after ``state.version``; returns how many."""
    stream = stream_id(state.metadata_partition)
    n = 0
    with gc_paused():
        while True:
            batch = event_log.read_stream(stream, state.version + 1, limit=_READ_PAGE)
            for rec in batch:
                state.evolve(rec.decode(), rec.stream_version, rec.position)
            n += len(batch)
            if len(batch) < _READ_PAGE:
                return n


class EventSourcedRemoteLogMetadataManager(RemoteLogMetadataManager):
    """The RLMM over Shoal's event log, in-process (``TopicBasedRemoteLogMetadataManager``'s
    semantics with the event log as the metadata topic).

    ``num_partitions`` is ``remote.log.metadata.topic.num.partitions`` (default 50, ≥ 1).
    ``snapshot_interval_events`` (``shoal.rlmm.snapshot.interval.events``) triggers a snapshot of
    a metadata partition once that many events were folded since its last one; :meth:`close`
    snapshots every loaded partition. Reads do not poll the log (so lookups stay in memory);
    call :meth:`catch_up` to see events appended by other writers, or build it with
    ``read_through=True`` (a cluster node, whose RLMM shares each metadata partition with the
    other nodes) to fold a metadata partition's new events before each read of it (one query).
    Thread-safe (one lock).
    ``partitioner`` overrides Kafka's partitioner (tests only, like Kafka's
    ``TopicBasedRemoteLogMetadataManagerMultipleSubscriptionsTest``).
    """

    def __init__(
        self,
        event_log: EventLog,
        *,
        num_partitions: int = DEFAULT_NUM_PARTITIONS,
        snapshot_interval_events: int = DEFAULT_SNAPSHOT_INTERVAL_EVENTS,
        use_snapshots: bool = True,
        partitioner: Callable[[TopicIdPartition], int] | None = None,
        read_through: bool = False,
    ) -> None:
        if num_partitions < 1:
            raise ValueError(f"remote.log.metadata.topic.num.partitions must be >= 1, got {num_partitions}")
        self.event_log = event_log
        self.num_partitions = num_partitions
        self.snapshot_interval_events = snapshot_interval_events
        self.use_snapshots = use_snapshots
        self._partitioner = partitioner
        #: fold the metadata partition's new events before every read (a cluster: other nodes,
        #: the leaders of other partitions of the same metadata partition, append to it too)
        self.read_through = read_through
        self._partition_of: dict[TopicIdPartition, int] = {}
        self._states: dict[int, MetadataPartitionState] = {}
        self._snapshot_versions: dict[int, int] = {}
        self._registered: set[TopicIdPartition] = set()
        self._closed = False
        self._lock = threading.RLock()

    @classmethod
    def from_config(cls, event_log: EventLog, config: dict[str, Any], read_through: bool = False) -> "EventSourcedRemoteLogMetadataManager":
        """Build from broker config keys (``remote.log.metadata.topic.num.partitions``,
        ``shoal.rlmm.snapshot.interval.events``) and ``read_through`` (see the class doc). Raises
        ``ValueError`` for out-of-range values."""
        return cls(
            event_log,
            num_partitions=int(config.get("remote.log.metadata.topic.num.partitions", DEFAULT_NUM_PARTITIONS)),
            snapshot_interval_events=int(config.get("shoal.rlmm.snapshot.interval.events", DEFAULT_SNAPSHOT_INTERVAL_EVENTS)),
            read_through=read_through,
        )

    # --- helpers -------------------------------------------------------------------------
    def metadata_partition(self, tp: TopicIdPartition) -> int:
        """Kafka's partitioner for ``tp`` with this manager's partition count (or the injected
        ``partitioner``, as Kafka's tests force one)."""
        p = self._partition_of.get(tp)
        if p is None:
            p = self._partitioner(tp) if self._partitioner is not None else metadata_partition_for(tp, self.num_partitions)
            if len(self._partition_of) > 1_000_000:
                self._partition_of.clear()
            self._partition_of[tp] = p
        return p

    def assigned_metadata_partitions(self) -> set[int]:
        """The metadata partitions currently read (those of the registered user partitions)."""
        with self._lock:
            return set(self._states)

    def _ensure_not_closed(self) -> None:
        if self._closed:
            raise IllegalStateException("This instance is in invalid state, initialized: true close: true")

    def reconcile_assignment(self) -> tuple[set[int], set[int]]:
        """Make the loaded metadata partitions those of the registered user partitions: recover
        (snapshot + tail) the new ones, snapshot and forget the ones no longer needed. Returns
        ``(added, removed)`` metadata partitions."""
        with self._lock:
            wanted = {self.metadata_partition(tp) for tp in self._registered}
            added = wanted - set(self._states)
            removed = set(self._states) - wanted
            for p in sorted(removed):
                self._snapshot(p)
                del self._states[p]
            for p in sorted(added):
                state, replayed = load_metadata_partition(self.event_log, p, use_snapshot=self.use_snapshots)
                self._states[p] = state
                self._snapshot_versions[p] = state.version - replayed  # 0 when nothing came from a snapshot
            return added, removed

    def catch_up(self) -> int:
        """Fold events appended to the loaded metadata partitions by other writers; returns how many."""
        with self._lock:
            total = 0
            for p, state in self._states.items():
                total += catch_up(self.event_log, state)
                self._maybe_snapshot(p)
            return total

    def _snapshot(self, p: int) -> None:
        state = self._states.get(p)
        if state is None or state.version == 0 or self._snapshot_versions.get(p) == state.version:
            return
        self.event_log.save_snapshot(stream_id(p), state.version, state.to_snapshot(), state.position)
        self._snapshot_versions[p] = state.version

    def _maybe_snapshot(self, p: int) -> None:
        state = self._states[p]
        if self.snapshot_interval_events > 0 and state.version - self._snapshot_versions.get(p, 0) >= self.snapshot_interval_events:
            self._snapshot(p)

    def save_snapshots(self) -> None:
        """Snapshot every loaded metadata partition that changed since its last snapshot."""
        with self._lock:
            for p in list(self._states):
                self._snapshot(p)

    def _write(self, tp: TopicIdPartition, event: Any) -> None:
        p = self.metadata_partition(tp)
        self.event_log.append(stream_id(p), [new_event(event)], ANY)
        state = self._states.get(p)
        if state is None:
            raise KafkaException(not_assigned_message(p, self._states))
        catch_up(self.event_log, state)
        self._maybe_snapshot(p)

    def _cache(self, tp: TopicIdPartition):
        self._ensure_not_closed()
        state = self._states.get(self.metadata_partition(tp))
        if state is None:
            raise RemoteResourceNotFoundException(f"No resource found for partition: {tp}")
        if self.read_through:
            catch_up(self.event_log, state)
        return state.cache_for_read(tp, tp in self._registered)

    # --- writes ----------------------------------------------------------------------------
    def add_remote_log_segment_metadata(self, metadata: RemoteLogSegmentMetadata) -> None:
        """Append the add event and apply it. Raises ``NullPointerException`` /
        ``IllegalArgumentException`` (state not COPY_SEGMENT_STARTED, nothing written), and
        :class:`KafkaException` "This consumer is not assigned to the target partition …" when the
        partition is not registered (the event *is* written, as in Kafka: scenario T1/T2)."""
        with self._lock:
            self._ensure_not_closed()
            event = decide_add(metadata)
            self._write(metadata.topic_id_partition, event)

    def update_remote_log_segment_metadata(self, update: RemoteLogSegmentMetadataUpdate) -> None:
        """Append the update event and apply it (see :meth:`add_remote_log_segment_metadata`)."""
        with self._lock:
            self._ensure_not_closed()
            event = decide_update(update)
            self._write(update.topic_id_partition, event)

    def put_remote_partition_delete_metadata(self, metadata: RemotePartitionDeleteMetadata) -> None:
        """Append the partition-delete event and apply it."""
        with self._lock:
            self._ensure_not_closed()
            event = decide_put_partition_delete(metadata)
            self._write(metadata.topic_id_partition, event)

    # --- reads -----------------------------------------------------------------------------
    def remote_log_segment_metadata(self, topic_id_partition, leader_epoch, offset):
        """See :meth:`RemoteLogMetadataManager.remote_log_segment_metadata`. Raises
        ``RemoteResourceNotFoundException`` for an unregistered or deleted partition."""
        with self._lock:
            return self._cache(topic_id_partition).remote_log_segment_metadata(leader_epoch, offset)

    def next_segment_with_txn_index(self, topic_id_partition, leader_epoch, offset):
        """Kafka 4.0 ``nextSegmentWithTxnIndex`` over the cache (skips ``txn_idx_empty`` segments)."""
        with self._lock:
            return self._cache(topic_id_partition).next_segment_with_txn_index(leader_epoch, offset)

    def highest_offset_for_epoch(self, topic_id_partition, leader_epoch):
        """See the interface; ``None`` when nothing was copied in that epoch."""
        with self._lock:
            return self._cache(topic_id_partition).highest_offset_for_epoch(leader_epoch)

    def list_remote_log_segments(self, topic_id_partition, leader_epoch=None):
        """An iterator over a snapshot list (safe against later writes)."""
        with self._lock:
            cache = self._cache(topic_id_partition)
            if leader_epoch is None:
                return iter(cache.list_all_remote_log_segments())
            return iter(cache.list_remote_log_segments(leader_epoch))

    def remote_log_size(self, topic_id_partition, leader_epoch):
        """Sum of segment sizes (bytes) in ``leader_epoch`` (a segment spanning several epochs
        counts in each). Like Kafka, skips the closed check."""
        with self._lock:
            state = self._states.get(self.metadata_partition(topic_id_partition))
            if state is None:
                raise RemoteResourceNotFoundException(f"No resource found for partition: {topic_id_partition}")
            if self.read_through:
                catch_up(self.event_log, state)
            cache = state.cache_for_read(topic_id_partition, topic_id_partition in self._registered)
            return sum(m.segment_size_in_bytes for m in cache.list_remote_log_segments(leader_epoch))

    def is_ready(self, topic_id_partition):
        """``True`` when the partition is registered and its metadata partition is caught up."""
        with self._lock:
            if self._closed or topic_id_partition not in self._registered:
                return False
            state = self._states.get(self.metadata_partition(topic_id_partition))
            return state is not None and state.initialized

    # --- assignment ------------------------------------------------------------------------
    def on_partition_leadership_changes(self, leader_partitions, follower_partitions):
        """Register leaders and followers alike (Kafka subscribes to both) and load their
        metadata partitions. Raises ``NullPointerException`` for ``None`` sets and
        ``IllegalStateException("This instance is in closing state")`` after :meth:`close`."""
        if leader_partitions is None or follower_partitions is None:
            raise NullPointerException("leaderPartitions and followerPartitions can not be null")
        with self._lock:
            if self._closed:
                raise IllegalStateException("This instance is in closing state")
            self._registered.update(leader_partitions)
            self._registered.update(follower_partitions)
            self.reconcile_assignment()

    def on_stop_partitions(self, partitions):
        """Unregister ``partitions``; metadata partitions no longer needed are snapshotted and unloaded."""
        if partitions is None:
            raise NullPointerException("partitions can not be null")
        with self._lock:
            if self._closed:
                raise IllegalStateException("This instance is in closing state")
            self._registered.difference_update(partitions)
            self.reconcile_assignment()

    def close(self) -> None:
        """Snapshot every loaded metadata partition and refuse further calls."""
        with self._lock:
            if self._closed:
                return
            try:
                self.save_snapshots()
            finally:
                self._closed = True

    def state_of(self, metadata_partition: int) -> MetadataPartitionState | None:
        """The loaded state of ``metadata_partition`` (tests, status), or ``None``."""
        return self._states.get(metadata_partition)


class NotReadyRemoteLogMetadataManager(RemoteLogMetadataManager):
    """Fail-closed placeholder: every data method raises
    :class:`RemoteLogMetadataManagerNotReadyException` (retriable); ``is_ready`` is ``False``;
    leadership notifications are accepted and ignored (the Swappable facade remembers them)."""

    def __init__(self, reason: str = "the remote log metadata manager is still loading") -> None:
        self.reason = reason

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise RemoteLogMetadataManagerNotReadyException(self.reason)

    add_remote_log_segment_metadata = _fail
    update_remote_log_segment_metadata = _fail
    remote_log_segment_metadata = _fail
    highest_offset_for_epoch = _fail
    put_remote_partition_delete_metadata = _fail
    list_remote_log_segments = _fail
    remote_log_size = _fail
    next_segment_with_txn_index = _fail

    def is_ready(self, topic_id_partition: TopicIdPartition) -> bool:
        """Always ``False``."""
        return False

    def on_partition_leadership_changes(self, leader_partitions, follower_partitions) -> None:
        """Ignored (nothing is served)."""

    def on_stop_partitions(self, partitions) -> None:
        """Ignored."""


class SwappableRemoteLogMetadataManager(RemoteLogMetadataManager):
    """A facade delegating every call to a backing manager that can be swapped at runtime.

    The broker starts with ``SwappableRemoteLogMetadataManager()`` (backed by
    :class:`NotReadyRemoteLogMetadataManager`) and calls :meth:`swap` with the live manager once
    it has recovered. Leadership changes seen before the first swap are replayed into the new
    manager, net of later stops (Kafka's ``pendingAssignPartitions``).
    """

    def __init__(self, initial: RemoteLogMetadataManager | None = None) -> None:
        self._backing: RemoteLogMetadataManager = initial or NotReadyRemoteLogMetadataManager()
        self._lock = threading.RLock()
        self._pending: set[TopicIdPartition] = set()

    @property
    def backing(self) -> RemoteLogMetadataManager:
        """The manager calls currently go to."""
        return self._backing

    def swap(self, new: RemoteLogMetadataManager) -> RemoteLogMetadataManager:
        """Route calls to ``new`` from now on; replay pending registrations into it when the old
        backing was not ready. Returns the previous backing manager (the caller closes it)."""
        with self._lock:
            old = self._backing
            if isinstance(old, NotReadyRemoteLogMetadataManager) and self._pending:
                new.on_partition_leadership_changes(set(self._pending), set())
            self._pending.clear()
            self._backing = new
            return old

    def _call(self, name: str, *args: Any) -> Any:
        with self._lock:
            backing = self._backing
        return getattr(backing, name)(*args)

    def add_remote_log_segment_metadata(self, metadata):
        """``add_remote_log_segment_metadata`` of the current backing manager (see :class:`RemoteLogMetadataManager`)."""
        return self._call("add_remote_log_segment_metadata", metadata)

    def update_remote_log_segment_metadata(self, update):
        """``update_remote_log_segment_metadata`` of the current backing manager (see :class:`RemoteLogMetadataManager`)."""
        return self._call("update_remote_log_segment_metadata", update)

    def remote_log_segment_metadata(self, topic_id_partition, leader_epoch, offset):
        """``remote_log_segment_metadata`` of the current backing manager (see :class:`RemoteLogMetadataManager`)."""
        return self._call("remote_log_segment_metadata", topic_id_partition, leader_epoch, offset)

    def highest_offset_for_epoch(self, topic_id_partition, leader_epoch):
        """``highest_offset_for_epoch`` of the current backing manager (see :class:`RemoteLogMetadataManager`)."""
        return self._call("highest_offset_for_epoch", topic_id_partition, leader_epoch)

    def put_remote_partition_delete_metadata(self, metadata):
        """``put_remote_partition_delete_metadata`` of the current backing manager (see :class:`RemoteLogMetadataManager`)."""
        return self._call("put_remote_partition_delete_metadata", metadata)

    def list_remote_log_segments(self, topic_id_partition, leader_epoch=None):
        """``list_remote_log_segments`` of the current backing manager (see :class:`RemoteLogMetadataManager`)."""
        return self._call("list_remote_log_segments", topic_id_partition, leader_epoch)

    def remote_log_size(self, topic_id_partition, leader_epoch):
        """``remote_log_size`` of the current backing manager (see :class:`RemoteLogMetadataManager`)."""
        return self._call("remote_log_size", topic_id_partition, leader_epoch)

    def is_ready(self, topic_id_partition):
        """``is_ready`` of the current backing manager (see :class:`RemoteLogMetadataManager`)."""
        return self._call("is_ready", topic_id_partition)

    def next_segment_with_txn_index(self, topic_id_partition, leader_epoch, offset):
        """``next_segment_with_txn_index`` of the current backing manager (see :class:`RemoteLogMetadataManager`)."""
        return self._call("next_segment_with_txn_index", topic_id_partition, leader_epoch, offset)

    def on_partition_leadership_changes(self, leader_partitions, follower_partitions):
        """``on_partition_leadership_changes`` of the current backing manager (see :class:`RemoteLogMetadataManager`)."""
        with self._lock:
            if isinstance(self._backing, NotReadyRemoteLogMetadataManager):
                if leader_partitions is None or follower_partitions is None:
                    raise NullPointerException("leaderPartitions and followerPartitions can not be null")
                self._pending.update(leader_partitions)
                self._pending.update(follower_partitions)
                return None
            backing = self._backing
        return backing.on_partition_leadership_changes(leader_partitions, follower_partitions)

    def on_stop_partitions(self, partitions):
        """``on_stop_partitions`` of the current backing manager (see :class:`RemoteLogMetadataManager`)."""
        with self._lock:
            if isinstance(self._backing, NotReadyRemoteLogMetadataManager):
                self._pending.difference_update(partitions)
                return None
            backing = self._backing
        return backing.on_stop_partitions(partitions)

    def close(self) -> None:
        """``close`` of the current backing manager (see :class:`RemoteLogMetadataManager`)."""
        with self._lock:
            self._backing.close()


class ActorRemoteLogMetadataManager(RemoteLogMetadataManager):
    """The ``RemoteLogMetadataManager`` interface over the :class:`RlmmPartitionActor` s, for
    callers outside the actor system (the RemoteLogManager, the wire layer).

    ``ask(address, message) -> reply`` sends one request and waits (e.g. ``lambda a, m:
    asys.ask(a, m, 10)``); ``actors`` maps every metadata partition to its actor's address, or,
    with ``start``, those already started: ``start(p) -> address`` then starts the actor of
    metadata partition ``p`` on its first use and returns its address once it has recovered
    (fail closed: nothing is asked of an actor before that; Kafka's ``TopicBasedRemoteLogMetadataManager``
    likewise consumes only the metadata partitions of its assigned user partitions). A
    ``start`` that raises fails that one request (``KafkaException`` from the caller's view).
    Replies are translated back to Kafka's behaviour: ``NotReady`` → :class:`RemoteLogMetadataManagerNotReadyException`,
    ``Failure(error, message)`` → the named exception, ``None`` (timeout) → :class:`KafkaException`.
    Leadership changes keep the set of registered user partitions and send each affected actor
    its ``ReconcileAssignment``.
    """

    def __init__(self, ask: Callable[[Any, Any], Any], actors: dict[int, Any], *, num_partitions: int = DEFAULT_NUM_PARTITIONS,
                 start: Callable[[int], Any] | None = None) -> None:
        if not set(actors) <= set(range(num_partitions)) or (start is None and set(actors) != set(range(num_partitions))):
            raise ValueError(f"need one actor per metadata partition 0..{num_partitions - 1} (or start to start the missing ones)")
        self._ask = ask
        self._actors = dict(actors)
        self._start = start
        self._start_lock = threading.Lock()
        self.num_partitions = num_partitions
        self._registered: set[TopicIdPartition] = set()
        self._lock = threading.RLock()
        self._partition_of: dict[TopicIdPartition, int] = {}

    def _mp(self, tp: TopicIdPartition) -> int:
        p = self._partition_of.get(tp)
        if p is None:
            p = self._partition_of[tp] = metadata_partition_for(tp, self.num_partitions)
        return p

    def address(self, p: int) -> Any:
        """The address of metadata partition ``p``'s actor, started through ``start`` on its
        first use (one start per partition even when threads race). Raises ``KeyError`` for a
        partition without an actor and no ``start``, :class:`KafkaException` when ``start`` fails
        (the next use tries again)."""
        addr = self._actors.get(p)
        if addr is not None:
            return addr
        if self._start is None or not 0 <= p < self.num_partitions:
            raise KeyError(p)
        with self._start_lock:
            addr = self._actors.get(p)
            if addr is None:
                try:
                    addr = self._start(p)
                except KafkaException:
                    raise
                except Exception as e:
                    raise KafkaException(f"the RLMM actor of metadata partition {p} did not start: {e}") from e
                self._assign(p, addr)
                self._actors[p] = addr
        return addr

    def replace_address(self, p: int, address: Any) -> None:
        """Record ``address`` as metadata partition ``p``'s actor (after its supervisor restarted
        it) and send it its assignment. Raises :class:`KafkaException` when it does not take it."""
        self._assign(p, address)
        self._actors[p] = address

    def _assign(self, p: int, address: Any) -> None:
        """Send a newly started actor of metadata partition ``p`` the user partitions registered
        for it (``ReconcileAssignment``; a registration made while it could not start, or before a
        restart, would otherwise never reach it: it would stay not ready for them). Raises
        :class:`KafkaException` when it does not confirm."""
        from actors.rlmm.messages import ReconcileAssignment

        with self._lock:
            mine = [tp for tp in self._registered if self._mp(tp) == p]
        if not mine:
            return
        reply = self._ask(address, ReconcileAssignment(mine))
        if reply is None or type(reply).__name__ != "AssignmentReconciled":
            raise KafkaException(f"metadata partition {p} did not reconcile its assignment: {reply!r}")

    def started_partitions(self) -> list[int]:
        """The metadata partitions whose actor has been started (or was given), ascending."""
        return sorted(self._actors)

    def _request(self, tp: TopicIdPartition, msg: Any) -> Any:
        from actors.messages import Failure, NotReady
        from events.rlmm_errors import exception_for
        from actors.rlmm.messages import RlmmReply

        if tp is None:
            raise NullPointerException("topicIdPartition can not be null")
        reply = self._ask(self.address(self._mp(tp)), msg)
        if isinstance(reply, RlmmReply):
            return reply.value
        if isinstance(reply, NotReady):
            raise RemoteLogMetadataManagerNotReadyException(f"metadata partition {reply.name} is still recovering")
        if isinstance(reply, Failure):
            raise exception_for(reply.error, reply.message)
        if reply is None:
            raise KafkaException(f"no reply from the RLMM actor of metadata partition {self._mp(tp)} (timeout)")
        return reply

    def add_remote_log_segment_metadata(self, metadata):
        """``add_remote_log_segment_metadata`` as one request to the partition's actor (see :class:`RemoteLogMetadataManager`)."""
        from actors.rlmm.messages import AddRemoteLogSegmentMetadata

        decide_add(metadata)  # caller-side checks before anything is sent
        self._request(metadata.topic_id_partition, AddRemoteLogSegmentMetadata(metadata))

    def update_remote_log_segment_metadata(self, update):
        """``update_remote_log_segment_metadata`` as one request to the partition's actor (see :class:`RemoteLogMetadataManager`)."""
        from actors.rlmm.messages import UpdateRemoteLogSegmentMetadata

        decide_update(update)
        self._request(update.topic_id_partition, UpdateRemoteLogSegmentMetadata(update))

    def put_remote_partition_delete_metadata(self, metadata):
        """``put_remote_partition_delete_metadata`` as one request to the partition's actor (see :class:`RemoteLogMetadataManager`)."""
        from actors.rlmm.messages import PutRemotePartitionDeleteMetadata

        decide_put_partition_delete(metadata)
        self._request(metadata.topic_id_partition, PutRemotePartitionDeleteMetadata(metadata))

    def remote_log_segment_metadata(self, topic_id_partition, leader_epoch, offset):
        """``remote_log_segment_metadata`` as one request to the partition's actor (see :class:`RemoteLogMetadataManager`)."""
        from actors.rlmm.messages import GetRemoteLogSegmentMetadata

        return self._request(topic_id_partition, GetRemoteLogSegmentMetadata(topic_id_partition, leader_epoch, offset))

    def next_segment_with_txn_index(self, topic_id_partition, leader_epoch, offset):
        """``next_segment_with_txn_index`` as one request to the partition's actor (see :class:`RemoteLogMetadataManager`)."""
        from actors.rlmm.messages import GetNextSegmentWithTxnIndex

        return self._request(topic_id_partition, GetNextSegmentWithTxnIndex(topic_id_partition, leader_epoch, offset))

    def highest_offset_for_epoch(self, topic_id_partition, leader_epoch):
        """``highest_offset_for_epoch`` as one request to the partition's actor (see :class:`RemoteLogMetadataManager`)."""
        from actors.rlmm.messages import GetHighestOffsetForEpoch

        return self._request(topic_id_partition, GetHighestOffsetForEpoch(topic_id_partition, leader_epoch))

    def list_remote_log_segments(self, topic_id_partition, leader_epoch=None):
        """``list_remote_log_segments`` as one request to the partition's actor (see :class:`RemoteLogMetadataManager`)."""
        from actors.rlmm.messages import ListRemoteLogSegments

        return iter(self._request(topic_id_partition, ListRemoteLogSegments(topic_id_partition, leader_epoch)))

    def remote_log_size(self, topic_id_partition, leader_epoch):
        """``remote_log_size`` as one request to the partition's actor (see :class:`RemoteLogMetadataManager`)."""
        from actors.rlmm.messages import GetRemoteLogSize

        return self._request(topic_id_partition, GetRemoteLogSize(topic_id_partition, leader_epoch))

    def is_ready(self, topic_id_partition):
        """``is_ready`` as one request to the partition's actor (see :class:`RemoteLogMetadataManager`)."""
        from actors.rlmm.messages import IsReady

        try:
            return bool(self._request(topic_id_partition, IsReady(topic_id_partition)))
        except (KafkaException, RemoteLogMetadataManagerNotReadyException):
            return False

    def _reconcile(self, affected: set[int]) -> None:
        from actors.rlmm.messages import ReconcileAssignment

        for p in sorted(affected):
            mine = [tp for tp in self._registered if self._mp(tp) == p]
            reply = self._ask(self.address(p), ReconcileAssignment(mine))
            if reply is None or type(reply).__name__ != "AssignmentReconciled":
                raise KafkaException(f"metadata partition {p} did not reconcile its assignment: {reply!r}")

    def on_partition_leadership_changes(self, leader_partitions, follower_partitions):
        """Register leaders and followers; each affected actor gets its full assignment."""
        if leader_partitions is None or follower_partitions is None:
            raise NullPointerException("leaderPartitions and followerPartitions can not be null")
        with self._lock:
            new = set(leader_partitions) | set(follower_partitions)
            self._registered |= new
            self._reconcile({self._mp(tp) for tp in new})

    def on_stop_partitions(self, partitions):
        """Unregister ``partitions``; each affected actor gets its reduced assignment."""
        if partitions is None:
            raise NullPointerException("partitions can not be null")
        with self._lock:
            gone = set(partitions)
            self._registered -= gone
            self._reconcile({self._mp(tp) for tp in gone})
