"""The pure state of one RLMM metadata partition: Kafka's ``RemotePartitionMetadataStore`` folded
from the partition's event stream, its deciders, and its snapshot codec.

One :class:`MetadataPartitionState` stands for one partition of ``__remote_log_metadata`` (stream
``rlmm:<p>``). It keeps a :class:`RemoteLogMetadataCache` for every user partition whose events are
in the stream and the partitions' delete metadata, as Kafka's ``RemotePartitionMetadataStore`` does
for the user partitions it was asked to load (``IMPL/RemotePartitionMetadataStore.java``).
Folding every user partition, rather than only the registered ones, gives the same caches as
Kafka's re-read of the whole metadata partition at assignment (reference §5.3, KAFKA-16105);
which partitions are *visible* is decided by registration (:meth:`MetadataPartitionState.cache_for_read`).

Event application follows Kafka's store:

* add → ``addCopyInProgressSegment`` (invalid transitions dropped);
* update → ``updateRemoteLogSegmentMetadata``; an unknown segment is dropped (the cache throws
  ``RemoteResourceNotFoundException`` once initialized and the store logs and swallows it);
* partition delete → stored; DELETE_PARTITION_FINISHED removes the partition's cache and delete
  metadata.

**Deliberate deviations** (documented): an add record whose state is not COPY_SEGMENT_STARTED
(possible only in a log written by another tool; Shoal's and Kafka's writers refuse it) is applied
as an add followed by an update to that state, where Kafka's store would throw
``IllegalArgumentException`` and stop its consumer task. An event for a user partition after its
DELETE_PARTITION_FINISHED is dropped and counted. Kafka's consumer task would hit
``IllegalStateException("No partition metadata found for : <tp>")`` and stop for good (reference §9
item 13); Shoal keeps serving the other partitions.

Deciders (:func:`decide_add`, :func:`decide_update`, :func:`decide_put_partition_delete`) hold
the caller-side checks of ``TopicBasedRemoteLogMetadataManager`` and return the event to append;
transition validity is only checked when the event is applied, as in Kafka (reference §5.4).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import uuid
from dataclasses import replace
from typing import Any, Iterable, Iterator

import msgspec

from actors.rlmm.cache import RemoteLogLeaderEpochState, RemoteLogMetadataCache
from events.rlmm_errors import (
    IllegalArgumentException,
    NullPointerException,
    RemoteResourceNotFoundException,
    ReplicaNotAvailableException,
)
from events.rlmm_types import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
    TopicIdPartition,
)
from events.rlmm import (
    RemotePartitionDeleteMetadataPut,
    SegmentMetadataAdded,
    SegmentMetadataUpdated,
    event_for,
    metadata_of,
)

__all__ = [
    "MetadataPartitionState",
    "gc_paused",
    "SNAPSHOT_FORMAT_VERSION",
    "decide_add",
    "decide_put_partition_delete",
    "decide_update",
    "not_assigned_message",
]

log = logging.getLogger("shoal.rlmm.store")

SNAPSHOT_FORMAT_VERSION = 1
_CS = RemoteLogSegmentState.COPY_SEGMENT_STARTED
_EMPTY_CACHE = RemoteLogMetadataCache()
_EMPTY_CACHE.mark_initialized()


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while bulk-building state (recovery), restoring it
    afterwards. The RLMM state holds no reference cycles; building hundreds of thousands of small
    objects otherwise triggers repeated full collections (3× slower snapshot loads)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# ------------------------------------------------------------------------------ deciders
def decide_add(metadata: RemoteLogSegmentMetadata) -> SegmentMetadataAdded:
    """``addRemoteLogSegmentMetadata``'s caller-side check: the metadata must be in
    COPY_SEGMENT_STARTED. Returns the event to append. Raises :class:`NullPointerException` for
    ``None``, :class:`IllegalArgumentException` for another state."""
    if metadata is None:
        raise NullPointerException("remoteLogSegmentMetadata can not be null")
    if not isinstance(metadata, RemoteLogSegmentMetadata):
        raise IllegalArgumentException(f"not a RemoteLogSegmentMetadata: {type(metadata).__name__}")
    if metadata.state is not _CS:
        raise IllegalArgumentException(
            f"Given remoteLogSegmentMetadata should have state as {_CS.name} but it contains state as: {metadata.state.name}"
        )
    return event_for(metadata)  # type: ignore[return-value]


def decide_update(update: RemoteLogSegmentMetadataUpdate) -> SegmentMetadataUpdated:
    """``updateRemoteLogSegmentMetadata``'s caller-side check: the target state must not be
    COPY_SEGMENT_STARTED. Returns the event. Raises :class:`NullPointerException` /
    :class:`IllegalArgumentException`."""
    if update is None:
        raise NullPointerException("segmentMetadataUpdate can not be null")
    if not isinstance(update, RemoteLogSegmentMetadataUpdate):
        raise IllegalArgumentException(f"not a RemoteLogSegmentMetadataUpdate: {type(update).__name__}")
    if update.state is _CS:
        raise IllegalArgumentException(f"Given remoteLogSegmentMetadataUpdate should not have the state as: {_CS.name}")
    return event_for(update)  # type: ignore[return-value]


def decide_put_partition_delete(metadata: RemotePartitionDeleteMetadata) -> RemotePartitionDeleteMetadataPut:
    """``putRemotePartitionDeleteMetadata``: no state check (Kafka validates nothing here).
    Raises :class:`NullPointerException` for ``None``."""
    if metadata is None:
        raise NullPointerException("remotePartitionDeleteMetadata can not be null")
    if not isinstance(metadata, RemotePartitionDeleteMetadata):
        raise IllegalArgumentException(f"not a RemotePartitionDeleteMetadata: {type(metadata).__name__}")
    return event_for(metadata)  # type: ignore[return-value]


def not_assigned_message(metadata_partition: int, assigned: Iterable[int]) -> str:
    """Kafka's ``waitTillConsumptionCatchesUp`` failure text for a write whose metadata partition
    this consumer does not read (scenario T2)."""
    parts = ", ".join(f"__remote_log_metadata-{p}" for p in sorted(assigned))
    return (
        f"This consumer is not assigned to the target partition {metadata_partition}. "
        f"Currently assigned partitions: [{parts}]"
    )


# ---------------------------------------------------------------------------- the state
class MetadataPartitionState:
    """The fold of one metadata partition's stream (``RemotePartitionMetadataStore``).

    ``version`` is the stream version folded so far (Kafka offset of the last record + 1; 0 when
    empty); ``position`` the global log position of that event. ``initialized`` turns true once the
    owner has caught up (:meth:`mark_initialized`); ``dropped_events`` counts events dropped by
    the deviation described in the module docstring.
    """

    __slots__ = ("metadata_partition", "version", "position", "caches", "delete_metadata", "deleted",
                 "initialized", "dropped_events")

    def __init__(self, metadata_partition: int) -> None:
        self.metadata_partition = metadata_partition
        self.version = 0
        self.position = 0
        self.caches: dict[TopicIdPartition, RemoteLogMetadataCache] = {}
        self.delete_metadata: dict[TopicIdPartition, RemotePartitionDeleteMetadata] = {}
        self.deleted: set[TopicIdPartition] = set()
        self.initialized = False
        self.dropped_events = 0

    # --- readiness -------------------------------------------------------------------------
    def mark_initialized(self) -> None:
        """The owner has read the stream up to its end: every cache becomes initialized."""
        self.initialized = True
        for cache in self.caches.values():
            cache.mark_initialized()

    # --- evolve ----------------------------------------------------------------------------
    def _cache(self, tp: TopicIdPartition) -> RemoteLogMetadataCache | None:
        cache = self.caches.get(tp)
        if cache is None:
            if tp in self.deleted:
                return None
            cache = self.caches[tp] = RemoteLogMetadataCache()
            if self.initialized:
                cache.mark_initialized()
        return cache

    def apply(self, metadata: Any) -> bool:
        """Apply one Kafka metadata object (segment add, update or partition delete) as Kafka's
        store does; returns ``True`` if it changed the state, ``False`` if it was dropped.
        Raises ``TypeError`` for another type."""
        if isinstance(metadata, RemoteLogSegmentMetadataUpdate):
            cache = self._cache(metadata.topic_id_partition)
            if cache is None:
                self.dropped_events += 1
                return False
            try:
                return cache.update_remote_log_segment_metadata(metadata)
            except RemoteResourceNotFoundException as exc:
                log.warning("Error occurred while updating the remote log segment: %s", exc)
                return False
        if isinstance(metadata, RemoteLogSegmentMetadata):
            cache = self._cache(metadata.topic_id_partition)
            if cache is None:
                self.dropped_events += 1
                return False
            if metadata.state is not _CS:
                # Kafka's add path only sees COPY_SEGMENT_STARTED records (the writer checks);
                # a record of another state read from a foreign log is applied as add + update.
                if not cache.add_copy_in_progress_segment(replace(metadata, state=_CS)):
                    return False
                return cache.update_remote_log_segment_metadata(
                    RemoteLogSegmentMetadataUpdate(
                        metadata.remote_log_segment_id, metadata.event_timestamp_ms, metadata.custom_metadata,
                        metadata.state, metadata.broker_id,
                    )
                )
            return cache.add_copy_in_progress_segment(metadata)
        if isinstance(metadata, RemotePartitionDeleteMetadata):
            tp = metadata.topic_id_partition
            if tp in self.deleted:
                self.dropped_events += 1
                return False
            if metadata.state is RemotePartitionDeleteState.DELETE_PARTITION_FINISHED:
                self.caches.pop(tp, None)
                self.delete_metadata.pop(tp, None)
                self.deleted.add(tp)
            else:
                self.delete_metadata[tp] = metadata
            return True
        raise TypeError(f"not RLMM metadata: {type(metadata).__name__}")

    def evolve(self, event: Any, version: int, position: int = 0) -> bool:
        """Fold one recorded RLMM event at stream ``version`` (global ``position``). Events at or
        below the folded version are ignored (idempotent replay). Returns whether it changed the
        caches. Raises ``ValueError`` if ``version`` skips ahead (a gap in the stream)."""
        if version <= self.version:
            return False
        if version != self.version + 1:
            raise ValueError(f"stream rlmm:{self.metadata_partition}: expected version {self.version + 1}, got {version}")
        self.version = version
        if position:
            self.position = position
        return self.apply(metadata_of(event))

    # --- reads -----------------------------------------------------------------------------
    def cache_for_read(self, tp: TopicIdPartition, registered: bool) -> RemoteLogMetadataCache:
        """``RemotePartitionMetadataStore#getRemoteLogMetadataCache``: the cache to read ``tp`` from.

        Raises :class:`RemoteResourceNotFoundException` ("No resource found for partition: <tp>")
        when ``tp`` is not registered or its partition delete has finished, and
        :class:`ReplicaNotAvailableException` while the state is not initialized. A registered
        partition without events reads as an empty cache.
        """
        if not registered or tp in self.deleted:
            raise RemoteResourceNotFoundException(f"No resource found for partition: {tp}")
        if not self.initialized:
            raise ReplicaNotAvailableException(f"Remote log metadata cache is not initialized for partition: {tp}")
        return self.caches.get(tp, _EMPTY_CACHE)

    def segment_count(self) -> int:
        """Number of segments (not DELETE_SEGMENT_FINISHED) over every user partition."""
        return sum(len(c.id_to_segment_metadata) for c in self.caches.values())

    # --- equality (replay == snapshot + tail) ----------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MetadataPartitionState):
            return NotImplemented
        return (
            self.metadata_partition == other.metadata_partition
            and self.version == other.version
            and self.caches == other.caches
            and self.delete_metadata == other.delete_metadata
            and self.deleted == other.deleted
        )

    def __repr__(self) -> str:
        return (
            f"MetadataPartitionState(p={self.metadata_partition}, version={self.version}, "
            f"partitions={len(self.caches)}, segments={self.segment_count()}, initialized={self.initialized})"
        )

    # --- snapshots -------------------------------------------------------------------------
    def to_snapshot(self) -> bytes:
        """Encode the state as snapshot bytes (msgpack; format version
        :data:`SNAPSHOT_FORMAT_VERSION`). The epoch indexes are stored verbatim (not re-derived),
        so Kafka's quirks (displaced and orphaned ids, never-lowered highest offsets) survive."""
        caches = []
        for tp, cache in self.caches.items():
            segs = [
                (m.remote_log_segment_id.id.bytes, m.start_offset, m.end_offset, m.max_timestamp_ms, m.broker_id,
                 m.event_timestamp_ms, m.segment_size_in_bytes, m.segment_leader_epochs, int(m.state),
                 m.custom_metadata, m.txn_idx_empty)
                for m in cache.id_to_segment_metadata.values()
            ]
            epochs = []
            for epoch, st in cache.leader_epoch_entries.items():
                o2i, unref, highest = st.to_state()
                epochs.append((epoch, [(k, sid.id.bytes) for k, sid in o2i], [sid.id.bytes for sid in unref], highest))
            caches.append((_tp_tuple(tp), segs, epochs))
        body = {
            "format": SNAPSHOT_FORMAT_VERSION,
            "metadata_partition": self.metadata_partition,
            "version": self.version,
            "position": self.position,
            "dropped_events": self.dropped_events,
            "caches": caches,
            "delete_metadata": [
                (_tp_tuple(tp), int(md.state), md.event_timestamp_ms, md.broker_id)
                for tp, md in self.delete_metadata.items()
            ],
            "deleted": [_tp_tuple(tp) for tp in self.deleted],
        }
        return msgspec.msgpack.encode(body)

    @classmethod
    def from_snapshot(cls, data: bytes) -> "MetadataPartitionState":
        """Decode :meth:`to_snapshot` bytes. The result is not initialized (the owner still has to
        read the stream's tail). Raises ``ValueError`` for an unknown format version or bad bytes."""
        with gc_paused():
            return cls._from_snapshot(data)

    @classmethod
    def _from_snapshot(cls, data: bytes) -> "MetadataPartitionState":
        try:
            body = msgspec.msgpack.decode(data)
        except msgspec.DecodeError as exc:
            raise ValueError(f"corrupt RLMM snapshot: {exc}") from exc
        if not isinstance(body, dict):
            raise ValueError("corrupt RLMM snapshot: not a map")
        if body.get("format") != SNAPSHOT_FORMAT_VERSION:
            raise ValueError(f"unknown RLMM snapshot format {body.get('format')!r}")
        st = cls(body["metadata_partition"])
        st.version = body["version"]
        st.position = body["position"]
        st.dropped_events = body["dropped_events"]
        new = object.__new__
        md_cls, sid_cls, uuid_cls = RemoteLogSegmentMetadata, RemoteLogSegmentId, uuid.UUID
        set_ = object.__setattr__
        from_bytes = int.from_bytes
        safe_unknown = uuid.SafeUUID.unknown
        states = list(RemoteLogSegmentState)
        for tp_t, segs, epochs in body["caches"]:
            tp = _tp_from(tp_t)
            ids: dict[bytes, RemoteLogSegmentId] = {}

            def sid_of(raw: bytes) -> RemoteLogSegmentId:
                # Trusted data written by to_snapshot: build the id without re-validating it.
                sid = ids.get(raw)
                if sid is None:
                    if len(raw) != 16:
                        raise ValueError("corrupt RLMM snapshot: segment id is not 16 bytes")
                    u = new(uuid_cls)
                    set_(u, "int", from_bytes(raw, "big"))
                    set_(u, "is_safe", safe_unknown)
                    sid = new(sid_cls)
                    set_(sid, "topic_id_partition", tp)
                    set_(sid, "id", u)
                    ids[raw] = sid
                return sid

            cache = RemoteLogMetadataCache()
            id_map = cache.id_to_segment_metadata
            for raw, start, end, max_ts, broker, event_ts, size, seg_epochs, state, custom, txn in segs:
                # Trusted data written by to_snapshot: skip __post_init__'s validation for speed.
                m = new(md_cls)
                sid = sid_of(raw)
                set_(m, "remote_log_segment_id", sid)
                set_(m, "start_offset", start)
                set_(m, "end_offset", end)
                set_(m, "max_timestamp_ms", max_ts)
                set_(m, "broker_id", broker)
                set_(m, "event_timestamp_ms", event_ts)
                set_(m, "segment_size_in_bytes", size)
                set_(m, "segment_leader_epochs", tuple(map(tuple, seg_epochs)))
                set_(m, "state", states[state])
                set_(m, "custom_metadata", custom)
                set_(m, "txn_idx_empty", txn)
                id_map[sid] = m
            for epoch, o2i, unref, highest in epochs:
                cache.leader_epoch_entries[epoch] = RemoteLogLeaderEpochState.from_state(
                    ((k, sid_of(raw)) for k, raw in o2i), (sid_of(raw) for raw in unref), highest
                )
            st.caches[tp] = cache
        for tp_t, state, ts, broker in body["delete_metadata"]:
            tp = _tp_from(tp_t)
            st.delete_metadata[tp] = RemotePartitionDeleteMetadata(tp, RemotePartitionDeleteState(state), ts, broker)
        st.deleted = {_tp_from(t) for t in body["deleted"]}
        return st


def _tp_tuple(tp: TopicIdPartition) -> tuple[bytes, str, int]:
    return (tp.topic_id.bytes, tp.topic, tp.partition)


def _tp_from(t: Any) -> TopicIdPartition:
    return TopicIdPartition(uuid.UUID(bytes=t[0]), t[1], t[2])
