"""``RlmmPartitionActor``: one actor per RLMM metadata partition (``rlmm:<p>``), the thin shell
around :class:`actors.rlmm.store.MetadataPartitionState`.

Life cycle (DESIGN.md "fail closed"):

1. Created, not configured: every request is answered ``NotReady(name)``.
2. ``Configure(config, name="rlmm:<p>", journal)``: load the latest snapshot of the stream (its
   stream version is the per-partition position), then fold the tail page by page
   (``shoal.rlmm.recovery.page.events``, default 10 000), sending itself a :class:`RecoverStep`
   between pages; requests arriving meanwhile get ``NotReady``. With a journal the snapshot and
   the pages are read through it (``ReadStream``), so this process never opens the log. When caught up the state is
   initialized and the configurer gets ``Configured(name, position, events_replayed)``.
3. Ready: writes are decided (pure), appended with the exact expected stream version (through
   the JournalActor when one is given), folded, and answered :class:`MetadataStored`; queries
   are answered from memory. A snapshot is saved every ``shoal.rlmm.snapshot.interval.events``
   events (default 10 000), on :class:`TakeSnapshot` and on exit, so a restart resumes from the
   snapshot instead of replaying everything.

Registration: ``ReconcileAssignment(user_partitions)`` sets the user partitions this broker serves
in this metadata partition. Reads of another partition fail with
``RemoteResourceNotFoundException``; a write when no user partition of this metadata partition is
registered is stored but answered ``Failure("KafkaException", "This consumer is not assigned to the
target partition <p>. …")`` exactly as Kafka's ``TopicBasedRemoteLogMetadataManager`` (T1/T2).

Config keys: ``event.log.url``, ``remote.log.metadata.topic.num.partitions`` (default 50, ≥ 1),
``shoal.rlmm.snapshot.interval.events``, ``shoal.rlmm.recovery.page.events``.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from actors.base import EventSourcedActor, PersistError
from actors.messages import Configure, Configured, Failure, NotReady, StatusReply, StatusRequest
from events.rlmm_errors import IllegalArgumentException, error_name
from actors.rlmm.manager import DEFAULT_NUM_PARTITIONS, DEFAULT_SNAPSHOT_INTERVAL_EVENTS
from actors.rlmm.messages import (
    AddRemoteLogSegmentMetadata,
    AssignmentReconciled,
    GetHighestOffsetForEpoch,
    GetNextSegmentWithTxnIndex,
    GetRemoteLogSegmentMetadata,
    GetRemoteLogSize,
    IsReady,
    ListRemoteLogSegments,
    MetadataStored,
    PutRemotePartitionDeleteMetadata,
    ReconcileAssignment,
    RecoverStep,
    RlmmReply,
    SnapshotTaken,
    TakeSnapshot,
    UpdateRemoteLogSegmentMetadata,
)
from events.rlmm_types import TopicIdPartition
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
from events.rlmm import metadata_partition_of_stream, stream_id
from store.event_log import AppendRequest

__all__ = ["RlmmPartitionActor", "parse_metadata_partition", "start_rlmm_actors"]

log = logging.getLogger("shoal.rlmm.actor")

DEFAULT_RECOVERY_PAGE_EVENTS = 10_000
_MAX_WRITE_ATTEMPTS = 3


def parse_metadata_partition(name: str) -> int:
    """The metadata partition of an actor name: ``"rlmm:<p>"`` or ``"<p>"``. Raises
    :class:`IllegalArgumentException` otherwise."""
    try:
        return metadata_partition_of_stream(name) if name.startswith("rlmm:") else int(name)
    except ValueError:
        raise IllegalArgumentException(f"RLMM actor name must be 'rlmm:<partition>', got {name!r}") from None


class RlmmPartitionActor(EventSourcedActor):
    """The RLMM of one metadata partition. See the module docstring for the protocol."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.name = "rlmm:?"
        self.metadata_partition = -1
        self.num_partitions = DEFAULT_NUM_PARTITIONS
        self.snapshot_interval = DEFAULT_SNAPSHOT_INTERVAL_EVENTS
        self.page = DEFAULT_RECOVERY_PAGE_EVENTS
        self.state: MetadataPartitionState | None = None
        self.ready = False
        self.registered: set[TopicIdPartition] = set()
        self._configurer: Any = None
        self._generation = 0
        self._replayed = 0
        self._snapshot_version = 0

    # --- recovery ----------------------------------------------------------------------------
    def receiveMsg_Configure(self, msg: Configure, sender: Any) -> None:
        """``Configure(config, "rlmm:<p>", journal)``: validate the name against
        ``remote.log.metadata.topic.num.partitions`` (``Failure("InvalidConfigurationException")``
        otherwise), attach the event log, load the latest snapshot (an undecodable one is ignored:
        full replay) and start folding the tail with :class:`RecoverStep`; ``Configured`` is sent
        to the configurer once caught up."""
        try:
            p = parse_metadata_partition(msg.name)
            n = int(msg.config.get("remote.log.metadata.topic.num.partitions", DEFAULT_NUM_PARTITIONS))
            if n < 1 or not 0 <= p < n:
                raise IllegalArgumentException(f"metadata partition {p} outside 0..{n - 1}")
            self.snapshot_interval = int(msg.config.get("shoal.rlmm.snapshot.interval.events", DEFAULT_SNAPSHOT_INTERVAL_EVENTS))
            self.page = max(1, int(msg.config.get("shoal.rlmm.recovery.page.events", DEFAULT_RECOVERY_PAGE_EVENTS)))
            self.attach_event_log(msg.config, msg.journal)
        except (ValueError, KeyError) as exc:
            self.send(sender, Failure("InvalidConfigurationException", str(exc)))
            return
        self.metadata_partition, self.num_partitions, self.name = p, n, stream_id(p)
        self.ready = False
        self._generation += 1
        self._configurer = sender
        self._replayed = 0
        self.state = None
        gen = self._generation
        self.read_events(self.name, 1, self.page, lambda page: self._on_recovery_page(gen, page, True), with_snapshot=True)

    def receiveMsg_RecoverStep(self, msg: RecoverStep, sender: Any) -> None:
        """Read the next page (``shoal.rlmm.recovery.page.events``) of the stream tail; its
        events are folded by :meth:`_on_recovery_page`. Steps of an older ``Configure``
        (generation) are ignored."""
        if msg.generation != self._generation or self.ready or self.state is None:
            return
        gen = msg.generation
        self.read_events(self.name, self.state.version + 1, self.page, lambda page: self._on_recovery_page(gen, page, False))

    def _on_recovery_page(self, gen: int, page: Any, first: bool) -> None:
        """Fold one recovery page (the first carries the snapshot, if any; an undecodable one is
        ignored: full replay). A full page sends another :class:`RecoverStep` (requests arriving
        in between get ``NotReady``); a short one marks the state initialized, makes the actor
        ready, maybe snapshots and answers ``Configured(name, position, events_replayed)``. A
        read failure answers ``Failure("KafkaStorageException")`` and leaves the actor not ready."""
        if gen != self._generation or self.ready:
            return
        if isinstance(page, PersistError):
            log.error("%s: recovery read failed: %s", self.name, page)
            self.send(self._configurer, Failure("KafkaStorageException", f"recovery failed: {page}"))
            return
        if first:
            state = None
            if page.snapshot is not None:
                try:
                    state = MetadataPartitionState.from_snapshot(page.snapshot.state)
                except ValueError as exc:
                    log.warning("%s: ignoring snapshot at version %d: %s", self.name, page.snapshot.stream_version, exc)
            self.state = state or MetadataPartitionState(self.metadata_partition)
            self._snapshot_version = self.state.version
            if page.snapshot is not None and state is None:
                self.send(self.myAddress, RecoverStep(gen))  # the page started after the bad snapshot: replay all
                return
        assert self.state is not None
        with gc_paused():
            for rec in page.events:
                self.state.evolve(rec.decode(), rec.stream_version, rec.position)
        self._replayed += len(page.events)
        if len(page.events) == self.page:
            self.send(self.myAddress, RecoverStep(gen))
            return
        self.state.mark_initialized()
        self.ready = True
        self._maybe_snapshot()
        self.send(self._configurer, Configured(self.name, self.state.position, self._replayed))

    def _not_ready(self, sender: Any) -> bool:
        if self.ready:
            return False
        self.send(sender, NotReady(self.name))
        return True

    # --- writes --------------------------------------------------------------------------------
    def receiveMsg_AddRemoteLogSegmentMetadata(self, msg: AddRemoteLogSegmentMetadata, sender: Any) -> None:
        """``addRemoteLogSegmentMetadata``: NotReady before recovery;
        ``Failure`` (NullPointerException / IllegalArgumentException, no event) for metadata not in
        COPY_SEGMENT_STARTED or of another metadata partition; else append, fold and answer
        :class:`MetadataStored` (or ``Failure("KafkaException", …)`` when no user partition is
        registered here — the event is stored anyway, as Kafka's T1/T2)."""
        self._write(sender, lambda: decide_add(msg.metadata), lambda: msg.metadata.topic_id_partition)

    def receiveMsg_UpdateRemoteLogSegmentMetadata(self, msg: UpdateRemoteLogSegmentMetadata, sender: Any) -> None:
        """``updateRemoteLogSegmentMetadata``: as
        :meth:`receiveMsg_AddRemoteLogSegmentMetadata`; an update to COPY_SEGMENT_STARTED is
        refused with ``Failure("IllegalArgumentException")``. Invalid transitions are stored and
        dropped when folded (``MetadataStored.applied`` is then ``False``), as in Kafka 3.7+."""
        self._write(sender, lambda: decide_update(msg.update), lambda: msg.update.topic_id_partition)

    def receiveMsg_PutRemotePartitionDeleteMetadata(self, msg: PutRemotePartitionDeleteMetadata, sender: Any) -> None:
        """``putRemotePartitionDeleteMetadata``: append and fold
        (no state check, as Kafka); DELETE_PARTITION_FINISHED removes the partition's cache.
        Replies as :meth:`receiveMsg_AddRemoteLogSegmentMetadata`."""
        self._write(sender, lambda: decide_put_partition_delete(msg.metadata), lambda: msg.metadata.topic_id_partition)

    def _write(self, sender: Any, decide: Callable[[], Any], tp_of: Callable[[], TopicIdPartition]) -> None:
        if self._not_ready(sender):
            return
        try:
            event = decide()
            tp = tp_of()
        except Exception as exc:  # the decider's Kafka errors (NPE, IllegalArgument)
            self.send(sender, Failure(error_name(exc), str(exc)))
            return
        target = metadata_partition_for(tp, self.num_partitions)
        if target != self.metadata_partition:
            self.send(sender, Failure("IllegalArgumentException",
                                      f"{tp} belongs to metadata partition {target}, not {self.metadata_partition}"))
            return
        self._append(sender, event, new_event(event), 1)

    def _append(self, sender: Any, event: Any, stored: Any, attempt: int) -> None:
        state = self.state
        assert state is not None
        expected = state.version

        def then(results: Any) -> None:
            """After the append: on a version conflict fold the other writer's events and retry (up to 3 attempts), else fold the event and reply."""
            if isinstance(results, PersistError):
                if results.error == "CONCURRENCY" and attempt < _MAX_WRITE_ATTEMPTS:
                    # another writer appended to the stream: fold its events, then retry
                    self._catch_up(lambda err: self._append(sender, event, stored, attempt + 1) if err is None
                                   else self.send(sender, Failure("KafkaException", err)))
                    return
                self.send(sender, Failure("KafkaException", str(results)))
                return
            res = results[0]
            applied = state.evolve(event, res.last_version, res.last_position)
            self._maybe_snapshot()
            if not self.registered:
                self.send(sender, Failure("KafkaException", not_assigned_message(self.metadata_partition, [])))
                return
            self.send(sender, MetadataStored(self.metadata_partition, res.last_version - 1, applied))

        self.persist([AppendRequest(self.name, [stored], expected)], then)

    def _catch_up(self, then: Callable[[str | None], None]) -> None:
        """Fold the stream's events after the state's version, a page at a time, then call
        ``then(None)`` (or ``then(message)`` when the log cannot be read)."""
        state = self.state
        assert state is not None

        def on_page(page: Any) -> None:
            if isinstance(page, PersistError):
                then(str(page))
                return
            for rec in page.events:
                state.evolve(rec.decode(), rec.stream_version, rec.position)
            if len(page.events) < self.page:
                then(None)
            else:
                self.read_events(self.name, state.version + 1, self.page, on_page)

        self.read_events(self.name, state.version + 1, self.page, on_page)

    # --- queries ---------------------------------------------------------------------------------
    def _query(self, sender: Any, tp: TopicIdPartition, fn: Callable[[Any], Any]) -> None:
        if self._not_ready(sender):
            return
        assert self.state is not None
        try:
            cache = self.state.cache_for_read(tp, tp in self.registered)
            value = fn(cache)
        except Exception as exc:
            self.send(sender, Failure(error_name(exc), str(exc)))
            return
        self.send(sender, RlmmReply(value))

    def receiveMsg_GetNextSegmentWithTxnIndex(self, msg: GetNextSegmentWithTxnIndex, sender: Any) -> None:
        """Kafka 4.0 ``nextSegmentWithTxnIndex(tp, epoch, offset)`` →
        ``RlmmReply(metadata or None)``; ``Failure`` (RemoteResourceNotFoundException for an
        unregistered or deleted partition) otherwise."""
        self._query(sender, msg.topic_id_partition, lambda c: c.next_segment_with_txn_index(msg.leader_epoch, msg.offset))

    def receiveMsg_GetRemoteLogSegmentMetadata(self, msg: GetRemoteLogSegmentMetadata, sender: Any) -> None:
        """``remoteLogSegmentMetadata(tp, epoch, offset)`` →
        ``RlmmReply(COPY_SEGMENT_FINISHED metadata holding offset (inclusive), or None)``;
        ``Failure("RemoteResourceNotFoundException")`` for an unregistered or deleted partition."""
        self._query(sender, msg.topic_id_partition, lambda c: c.remote_log_segment_metadata(msg.leader_epoch, msg.offset))

    def receiveMsg_GetRemoteLogSize(self, msg: GetRemoteLogSize, sender: Any) -> None:
        """``remoteLogSize(tp, epoch)`` → ``RlmmReply(bytes)``: the sizes of the
        epoch's listed segments (COPY_SEGMENT_STARTED to DELETE_SEGMENT_STARTED), each counted once
        per epoch it spans."""
        self._query(sender, msg.topic_id_partition,
                    lambda c: sum(m.segment_size_in_bytes for m in c.list_remote_log_segments(msg.leader_epoch)))

    def receiveMsg_GetHighestOffsetForEpoch(self, msg: GetHighestOffsetForEpoch, sender: Any) -> None:
        """``highestOffsetForEpoch(tp, epoch)`` → ``RlmmReply(offset
        (inclusive) or None)``; never lowered by deletes (KAFKA-12641)."""
        self._query(sender, msg.topic_id_partition, lambda c: c.highest_offset_for_epoch(msg.leader_epoch))

    def receiveMsg_ListRemoteLogSegments(self, msg: ListRemoteLogSegments, sender: Any) -> None:
        """``listRemoteLogSegments(tp[, epoch])`` → ``RlmmReply(list)``:
        without an epoch every segment not DELETE_SEGMENT_FINISHED in no defined order; with one
        the epoch's segments sorted by start offset (reference §3.4)."""
        if msg.leader_epoch is None:
            self._query(sender, msg.topic_id_partition, lambda c: c.list_all_remote_log_segments())
        else:
            self._query(sender, msg.topic_id_partition, lambda c: c.list_remote_log_segments(msg.leader_epoch))

    def receiveMsg_IsReady(self, msg: IsReady, sender: Any) -> None:
        """Kafka 4.0 ``isReady(tp)`` → ``RlmmReply(bool)``: recovered and ``tp``
        registered here. Never NotReady (it is the readiness query)."""
        self.send(sender, RlmmReply(self.ready and msg.topic_id_partition in self.registered))

    # --- assignment, snapshots, status -------------------------------------------------------------
    def receiveMsg_ReconcileAssignment(self, msg: ReconcileAssignment, sender: Any) -> None:
        """Set the user partitions served here to those of ``msg.user_partitions``
        that hash to this metadata partition (Kafka's partitioner) → :class:`AssignmentReconciled`
        with the accepted ones (sorted) and the ignored ones."""
        mine, ignored = [], []
        for tp in msg.user_partitions:
            (mine if metadata_partition_for(tp, self.num_partitions) == self.metadata_partition else ignored).append(tp)
        self.registered = set(mine)
        self.send(sender, AssignmentReconciled(self.metadata_partition, sorted(mine, key=str), ignored))

    def receiveMsg_TakeSnapshot(self, msg: TakeSnapshot, sender: Any) -> None:
        """Save a snapshot now (if the state changed since the last one) →
        :class:`SnapshotTaken(metadata partition, stream version, position)`; NotReady before
        recovery."""
        if self._not_ready(sender):
            return
        self._save_snapshot()
        assert self.state is not None
        self.send(sender, SnapshotTaken(self.metadata_partition, self.state.version, self.state.position))

    def _save_snapshot(self) -> None:
        state = self.state
        if state is None or state.version == 0 or state.version == self._snapshot_version:
            return
        self.store_snapshot(self.name, state.version, state.to_snapshot(), state.position)
        self._snapshot_version = state.version

    def _maybe_snapshot(self) -> None:
        if self.state is not None and self.snapshot_interval > 0 and (
            self.state.version - self._snapshot_version >= self.snapshot_interval
        ):
            self._save_snapshot()

    def receiveMsg_StatusRequest(self, msg: StatusRequest, sender: Any) -> None:
        """``StatusReply(name, ready, counts)``: stream version, user partitions,
        live segments, registered partitions, events dropped on fold, last snapshot version."""
        st = self.state
        counts = {
            "version": st.version if st else 0,
            "user_partitions": len(st.caches) if st else 0,
            "segments": st.segment_count() if st else 0,
            "registered": len(self.registered),
            "dropped_events": st.dropped_events if st else 0,
            "snapshot_version": self._snapshot_version,
        }
        self.send(sender, StatusReply(self.name, self.ready, counts))

    def on_exit(self) -> None:
        """Save a snapshot on exit when ready (so a restart resumes from it); never raises."""
        if self.ready:
            try:
                self._save_snapshot()
            except Exception:  # never block the exit
                log.exception("%s: snapshot on exit failed", self.name)


def start_rlmm_actors(asys: Any, config: dict[str, Any], journal: Any = None, timeout_s: float = 60.0) -> dict[int, Any]:
    """Create and configure one :class:`RlmmPartitionActor` per metadata partition
    (``remote.log.metadata.topic.num.partitions``, default 50) in ``asys``; returns metadata
    partition → address. Raises ``RuntimeError`` naming the partition when one does not answer
    ``Configured`` within ``timeout_s`` seconds."""
    n = int(config.get("remote.log.metadata.topic.num.partitions", DEFAULT_NUM_PARTITIONS))
    out: dict[int, Any] = {}
    for p in range(n):
        addr = asys.createActor(RlmmPartitionActor)
        reply = asys.ask(addr, Configure(config, stream_id(p), journal), timeout_s)
        if not isinstance(reply, Configured):
            raise RuntimeError(f"RLMM actor for metadata partition {p} failed to start: {reply!r}")
        out[p] = addr
    return out
