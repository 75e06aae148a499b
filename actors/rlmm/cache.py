"""``RemoteLogMetadataCache`` and ``RemoteLogLeaderEpochState``: Kafka's in-memory index of one
user partition's remote segments, with Kafka's exact semantics (pure: no I/O, no clock).

Source: ``storage/src/main/java/org/apache/kafka/server/log/remote/metadata/storage/
RemoteLogMetadataCache.java`` and ``RemoteLogLeaderEpochState.java`` (reference §2.3–§3.5), plus the
4.0 ``nextSegmentWithTxnIndex`` (KIP-1058, reference §1).

Per user partition the cache keeps

* ``id_to_segment_metadata``: every segment not yet DELETE_SEGMENT_FINISHED;
* ``leader_epoch_entries``: epoch → :class:`RemoteLogLeaderEpochState` with ``offset_to_id``
  (epoch start offset inside a segment → id, COPY_SEGMENT_FINISHED segments only), the
  ``unreferenced`` ids (in the epoch's listing, not reachable by lookup) and ``highest_log_offset``.
  Epoch entries are never removed (KAFKA-12641).

Visibility (javadoc of Kafka's class): lookups see only COPY_SEGMENT_FINISHED; listings see
COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED and DELETE_SEGMENT_STARTED; ``highest_offset_for_epoch``
counts every segment that ever reached COPY_SEGMENT_FINISHED and never goes down.

Invalid transitions are dropped silently (logged), as Kafka 3.7+ does.
"""

from __future__ import annotations

import logging
from bisect import bisect_right, insort
from typing import Any, Iterable, Iterator, Mapping, Optional

from events.rlmm_errors import (
    IllegalArgumentException,
    NullPointerException,
    RemoteResourceNotFoundException,
)
from events.rlmm_types import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
)

__all__ = ["RemoteLogLeaderEpochState", "RemoteLogMetadataCache"]

log = logging.getLogger("shoal.rlmm.cache")

_CS = RemoteLogSegmentState.COPY_SEGMENT_STARTED
_CF = RemoteLogSegmentState.COPY_SEGMENT_FINISHED
_DS = RemoteLogSegmentState.DELETE_SEGMENT_STARTED
_DF = RemoteLogSegmentState.DELETE_SEGMENT_FINISHED
_is_valid_transition = RemoteLogSegmentState.is_valid_transition


class RemoteLogLeaderEpochState:
    """One leader epoch's index in a partition's cache (``RemoteLogLeaderEpochState``).

    ``offset_to_id``: the epoch's start offset inside a COPY_SEGMENT_FINISHED segment → its id,
    kept with a sorted key list for ``floor_entry``. ``unreferenced``: ids listed for the epoch but
    not reachable by lookup (insertion-ordered; Kafka uses a hash set). ``highest_log_offset``:
    ``None`` until the first COPY_SEGMENT_FINISHED in this epoch, then the maximum epoch end offset.
    """

    __slots__ = ("_keys", "offset_to_id", "unreferenced", "highest_log_offset")

    def __init__(self) -> None:
        self._keys: list[int] = []
        self.offset_to_id: dict[int, RemoteLogSegmentId] = {}
        self.unreferenced: dict[RemoteLogSegmentId, None] = {}
        self.highest_log_offset: Optional[int] = None

    # --- lookups -----------------------------------------------------------------------
    def floor_entry(self, offset: int) -> Optional[RemoteLogSegmentId]:
        """``floorEntry(offset)``: the id under the greatest key ≤ ``offset``, or ``None``."""
        keys = self._keys
        i = bisect_right(keys, offset)
        return self.offset_to_id[keys[i - 1]] if i else None

    def referenced_segment_ids(self) -> list[RemoteLogSegmentId]:
        """``referencedSegmentIds()``: ids reachable by lookup, in ascending key order."""
        return [self.offset_to_id[k] for k in self._keys]

    def unreferenced_segment_ids(self) -> list[RemoteLogSegmentId]:
        """``unreferencedSegmentIds()``."""
        return list(self.unreferenced)

    def list_all_remote_log_segments(
        self, id_to_segment_metadata: Mapping[RemoteLogSegmentId, RemoteLogSegmentMetadata]
    ) -> list[RemoteLogSegmentMetadata]:
        """``listAllRemoteLogSegments(idToSegmentMetadata)``: referenced ids in key order, then the
        unreferenced ones; when any unreferenced exist the list is stably sorted by segment
        ``start_offset``. Raises :class:`RemoteResourceNotFoundException` for an id missing from
        the map."""
        out: list[RemoteLogSegmentMetadata] = []
        for ids in (self.referenced_segment_ids(), self.unreferenced):
            for sid in ids:
                md = id_to_segment_metadata.get(sid)
                if md is None:
                    raise RemoteResourceNotFoundException(f"No remote log segment metadata found for :{sid}")
                out.append(md)
        if self.unreferenced:
            out.sort(key=lambda m: m.start_offset)
        return out

    # --- transitions -------------------------------------------------------------------
    def handle_segment_with_copy_segment_started_state(self, segment_id: RemoteLogSegmentId) -> None:
        """A COPY_SEGMENT_STARTED segment is listed but unreferenced."""
        self.unreferenced[segment_id] = None

    def handle_segment_with_copy_segment_finished_state(
        self, start_offset: int, segment_id: RemoteLogSegmentId, leader_epoch_end_offset: int
    ) -> None:
        """``handleSegmentWithCopySegmentFinishedState(startOffset, id, epochEndOffset)``.

        While the last key is ≥ ``start_offset`` and the epoch's ``highest_log_offset`` ≤
        ``leader_epoch_end_offset`` (the new segment is a superset), the last entry is displaced
        to ``unreferenced``. Then ``start_offset → segment_id`` is put (overwriting an entry at the
        same key *without* marking it unreferenced, as Kafka does), the id leaves
        ``unreferenced`` and ``highest_log_offset`` rises to ``leader_epoch_end_offset`` if higher.
        """
        keys = self._keys
        o2i = self.offset_to_id
        while keys and keys[-1] >= start_offset and self.highest_log_offset <= leader_epoch_end_offset:  # type: ignore[operator]
            displaced = o2i.pop(keys.pop())
            self.unreferenced[displaced] = None
        if start_offset not in o2i:
            if not keys or keys[-1] < start_offset:
                keys.append(start_offset)
            else:
                insort(keys, start_offset)
        o2i[start_offset] = segment_id
        self.unreferenced.pop(segment_id, None)
        if self.highest_log_offset is None or leader_epoch_end_offset > self.highest_log_offset:
            self.highest_log_offset = leader_epoch_end_offset

    def handle_segment_with_delete_segment_started_state(self, start_offset: int, segment_id: RemoteLogSegmentId) -> None:
        """``handleSegmentWithDeleteSegmentStartedState``: ``offsetToId.remove(start, id)`` (only if
        still mapped to this id) and mark the id unreferenced. ``highest_log_offset`` is kept."""
        if self.offset_to_id.get(start_offset) == segment_id:
            del self.offset_to_id[start_offset]
            keys = self._keys
            i = bisect_right(keys, start_offset) - 1
            del keys[i]
        self.unreferenced[segment_id] = None

    def handle_segment_with_delete_segment_finished_state(self, segment_id: RemoteLogSegmentId) -> None:
        """``handleSegmentWithDeleteSegmentFinishedState``: forget the id entirely."""
        self.unreferenced.pop(segment_id, None)

    # --- state export (snapshots, equality) ---------------------------------------------
    def to_state(self) -> tuple[list[tuple[int, RemoteLogSegmentId]], list[RemoteLogSegmentId], Optional[int]]:
        """``(sorted offset_to_id items, unreferenced ids in order, highest_log_offset)``."""
        return ([(k, self.offset_to_id[k]) for k in self._keys], list(self.unreferenced), self.highest_log_offset)

    @classmethod
    def from_state(
        cls,
        offset_to_id: Iterable[tuple[int, RemoteLogSegmentId]],
        unreferenced: Iterable[RemoteLogSegmentId],
        highest_log_offset: Optional[int],
    ) -> "RemoteLogLeaderEpochState":
        """Rebuild an epoch state from :meth:`to_state`'s parts."""
        st = cls()
        st.offset_to_id = dict(offset_to_id)
        st._keys = sorted(st.offset_to_id)
        st.unreferenced = dict.fromkeys(unreferenced)
        st.highest_log_offset = highest_log_offset
        return st

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RemoteLogLeaderEpochState):
            return NotImplemented
        return (
            self.offset_to_id == other.offset_to_id
            and set(self.unreferenced) == set(other.unreferenced)
            and self.highest_log_offset == other.highest_log_offset
        )

    def __repr__(self) -> str:
        return f"RemoteLogLeaderEpochState(offset_to_id={self.to_state()[0]!r}, unreferenced={list(self.unreferenced)!r}, highest={self.highest_log_offset})"


class RemoteLogMetadataCache:
    """One user partition's remote segment index (``RemoteLogMetadataCache``), pure and
    single-threaded (the owning actor serialises access).

    Build it empty, apply :meth:`add_copy_in_progress_segment` / :meth:`update_remote_log_segment_metadata`
    in log order, call :meth:`mark_initialized` once caught up. Equality compares the indexed
    data (segments and epoch states), not the ``initialized`` flag.
    """

    __slots__ = ("id_to_segment_metadata", "leader_epoch_entries", "_initialized")

    def __init__(self) -> None:
        self.id_to_segment_metadata: dict[RemoteLogSegmentId, RemoteLogSegmentMetadata] = {}
        self.leader_epoch_entries: dict[int, RemoteLogLeaderEpochState] = {}
        self._initialized = False

    # --- readiness -----------------------------------------------------------------------
    def mark_initialized(self) -> None:
        """``markInitialized()``: the cache has caught up with its metadata partition."""
        self._initialized = True

    def is_initialized(self) -> bool:
        """``isInitialized()``."""
        return self._initialized

    # --- reads ---------------------------------------------------------------------------
    def remote_log_segment_metadata(self, leader_epoch: int, offset: int) -> Optional[RemoteLogSegmentMetadata]:
        """``remoteLogSegmentMetadata(leaderEpoch, offset)``: the COPY_SEGMENT_FINISHED segment
        holding ``offset`` under ``leader_epoch`` (floor entry of the epoch's index, then
        ``offset`` ≤ the epoch's end inside that segment), else ``None`` (reference §3.2)."""
        st = self.leader_epoch_entries.get(leader_epoch)
        if st is None:
            return None
        keys = st._keys
        i = bisect_right(keys, offset)
        if not i:
            return None
        md = self.id_to_segment_metadata[st.offset_to_id[keys[i - 1]]]
        return None if offset > md.epoch_end_offset(leader_epoch) else md

    def next_segment_with_txn_index(self, leader_epoch: int, offset: int) -> Optional[RemoteLogSegmentMetadata]:
        """Kafka 4.0 ``nextSegmentWithTxnIndex(epoch, offset)`` (KIP-1058): look up
        ``(leader_epoch, offset)``; while found and its ``txn_idx_empty``, look up
        ``(leader_epoch, found.end_offset + 1)``; return the first with a transaction index, else
        ``None``. Stays within one epoch."""
        md = self.remote_log_segment_metadata(leader_epoch, offset)
        while md is not None and md.txn_idx_empty:
            md = self.remote_log_segment_metadata(leader_epoch, md.end_offset + 1)
        return md

    def list_all_remote_log_segments(self) -> list[RemoteLogSegmentMetadata]:
        """``listAllRemoteLogSegments()``: every segment not yet DELETE_SEGMENT_FINISHED, in no
        defined order (here: insertion order)."""
        return list(self.id_to_segment_metadata.values())

    def list_remote_log_segments(self, leader_epoch: int) -> list[RemoteLogSegmentMetadata]:
        """``listRemoteLogSegments(leaderEpoch)``: the epoch's referenced segments in key order
        then the unreferenced ones, sorted by ``start_offset`` when any unreferenced exist
        (reference §3.4); ``[]`` for an unknown epoch. Raises
        :class:`RemoteResourceNotFoundException` if an indexed id has no metadata."""
        st = self.leader_epoch_entries.get(leader_epoch)
        if st is None:
            return []
        return st.list_all_remote_log_segments(self.id_to_segment_metadata)

    def highest_offset_for_epoch(self, leader_epoch: int) -> Optional[int]:
        """``highestOffsetForEpoch(leaderEpoch)``: the highest offset ever copied (reached
        COPY_SEGMENT_FINISHED) in that epoch, or ``None``; never lowered by deletes."""
        st = self.leader_epoch_entries.get(leader_epoch)
        return None if st is None else st.highest_log_offset

    # --- writes --------------------------------------------------------------------------
    def add_copy_in_progress_segment(self, metadata: RemoteLogSegmentMetadata) -> bool:
        """``addCopyInProgressSegment(metadata)``: index a COPY_SEGMENT_STARTED segment as
        unreferenced under each of its epochs. Returns ``True`` if applied, ``False`` if dropped
        as an invalid transition (the id is already past COPY_SEGMENT_STARTED).

        Raises :class:`NullPointerException` for ``None`` and :class:`IllegalArgumentException`
        when ``metadata.state`` is not COPY_SEGMENT_STARTED.
        """
        if metadata is None:
            raise NullPointerException("remoteLogSegmentMetadata can not be null")
        if metadata.state is not _CS:
            raise IllegalArgumentException(
                f"Given remoteLogSegmentMetadata:{metadata} should have state as {_CS.name} but it contains state as: "
                f"{metadata.state.name}"
            )
        sid = metadata.remote_log_segment_id
        existing = self.id_to_segment_metadata.get(sid)
        if not _is_valid_transition(existing.state if existing is not None else None, _CS):
            log.error("Current state: %s can not be transitioned to target state: %s, segmentId: %s. Dropping the event",
                      existing.state.name if existing else None, _CS.name, sid)
            return False
        entries = self.leader_epoch_entries
        for epoch, _start in metadata.segment_leader_epochs:
            st = entries.get(epoch)
            if st is None:
                st = entries[epoch] = RemoteLogLeaderEpochState()
            st.unreferenced[sid] = None
        self.id_to_segment_metadata[sid] = metadata
        return True

    def update_remote_log_segment_metadata(self, update: RemoteLogSegmentMetadataUpdate) -> bool:
        """``updateRemoteLogSegmentMetadata(update)`` (reference §2.3). Returns ``True`` if
        applied, ``False`` if dropped (unknown segment while not initialized, or an invalid
        transition).

        Raises :class:`NullPointerException` for ``None``; :class:`RemoteResourceNotFoundException`
        for an unknown segment once initialized; :class:`IllegalArgumentException` for a (valid,
        self) transition to COPY_SEGMENT_STARTED.
        """
        if update is None:
            raise NullPointerException("metadataUpdate can not be null")
        target = update.state
        sid = update.remote_log_segment_id
        existing = self.id_to_segment_metadata.get(sid)
        if existing is None:
            if not self._initialized:
                log.debug("Dropping the event: %s as the base-metadata about the segment was already removed", update)
                return False
            raise RemoteResourceNotFoundException(f"No remote log segment metadata found for :{sid}")
        if not _is_valid_transition(existing.state, target):
            log.error("Current state: %s can not be transitioned to target state: %s, segmentId: %s. Dropping the event",
                      existing.state.name, target.name, sid)
            return False
        if target is _CS:
            raise IllegalArgumentException(f"metadataUpdate: {update} with state {_CS.name} can not be updated")
        updated = existing.create_with_updates(update)
        entries = self.leader_epoch_entries
        epochs = updated.segment_leader_epochs
        if target is _CF:
            for epoch, start in epochs:
                st = entries.get(epoch)
                if st is None:
                    st = entries[epoch] = RemoteLogLeaderEpochState()
                st.handle_segment_with_copy_segment_finished_state(start, sid, updated.epoch_end_offset(epoch))
            self.id_to_segment_metadata[sid] = updated
        elif target is _DS:
            for epoch, start in epochs:
                st = entries.get(epoch)
                if st is None:
                    st = entries[epoch] = RemoteLogLeaderEpochState()
                st.handle_segment_with_delete_segment_started_state(start, sid)
            self.id_to_segment_metadata[sid] = updated
        else:  # DELETE_SEGMENT_FINISHED
            for epoch, _start in epochs:
                st = entries.get(epoch)
                if st is None:
                    st = entries[epoch] = RemoteLogLeaderEpochState()
                st.handle_segment_with_delete_segment_finished_state(sid)
            self.id_to_segment_metadata.pop(sid, None)
        return True

    # --- state export ---------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RemoteLogMetadataCache):
            return NotImplemented
        return (
            self.id_to_segment_metadata == other.id_to_segment_metadata
            and self.leader_epoch_entries == other.leader_epoch_entries
        )

    def __repr__(self) -> str:
        return (
            f"RemoteLogMetadataCache(segments={len(self.id_to_segment_metadata)}, "
            f"epochs={sorted(self.leader_epoch_entries)}, initialized={self._initialized})"
        )

    def __iter__(self) -> Iterator[RemoteLogSegmentMetadata]:
        return iter(self.id_to_segment_metadata.values())

    def to_state(self) -> dict[str, Any]:
        """The cache's data as plain containers: ``{"segments": [metadata…], "epochs": {epoch:
        (offset_to_id items, unreferenced ids, highest)}, "initialized": bool}`` (for snapshots)."""
        return {
            "segments": list(self.id_to_segment_metadata.values()),
            "epochs": {e: st.to_state() for e, st in self.leader_epoch_entries.items()},
            "initialized": self._initialized,
        }
