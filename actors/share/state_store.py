"""Durable share state as Kafka's share coordinator keeps it (``__share_group_state``), pure.

Kafka persists every share-partition's state through the *share coordinator*: one key
``groupId:topicId:partition`` per share-partition, routed to a partition of ``__share_group_state``
(:func:`share_state_partition_for`), written as a full **ShareSnapshot** record or an incremental
**ShareUpdate** record (every ``share.coordinator.snapshot.update.records.per.snapshot`` updates a
new snapshot), merged on replay with the state-batch combiner (:func:`combine_state_batches`), and
guarded by the **state epoch** (FENCED_STATE_EPOCH) and the **leader epoch** (FENCED_LEADER_EPOCH).

:class:`ShareStateStore` is one coordinator shard's state with the four operations
``initialize`` / ``read`` / ``write`` / ``delete`` as deciders returning the records (events
:class:`events.share.ShareSnapshotWritten`, :class:`~events.share.ShareUpdateWritten`,
:class:`~events.share.ShareStateDeleted`) and :meth:`ShareStateStore.apply` replaying them, exactly
as ``ShareCoordinatorShard`` generates and replays its records. Kafka's binary form of the records
is :mod:`events.share_records`.

Sources: ``share-coordinator/src/main/java/org/apache/kafka/coordinator/share/``
``ShareCoordinatorShard.java``, ``PersisterStateBatchCombiner.java``, ``ShareCoordinatorService.java``;
``server/.../config/ShareCoordinatorConfig.java``; ``share/.../SharePartitionKey.java`` (see
``shared/reference/kip932-share-groups.md`` §4).
"""

from __future__ import annotations

import bisect
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Optional, Sequence, Union

from actors.share.errors import FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH, INVALID_REQUEST, ShareError
from events.base import DomainEvent
from events.share import ShareSnapshotWritten, ShareStateDeleted, ShareUpdateWritten
from events.share_records import kafka_uuid_from_string, kafka_uuid_to_string

if TYPE_CHECKING:  # pragma: no cover
    from actors.share.partition import SharePartition

__all__ = [
    "DEFAULT_SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT",
    "DEFAULT_STATE_TOPIC_NUM_PARTITIONS",
    "UNINITIALIZED_START_OFFSET",
    "ReadStateResult",
    "ShareGroupOffset",
    "SharePartitionKey",
    "ShareStateStore",
    "combine_state_batches",
    "java_string_hash",
    "partition_for_coordinator_key",
    "kafka_uuid_from_string",
    "kafka_uuid_to_string",
    "share_state_partition_for",
]

#: ``share.coordinator.snapshot.update.records.per.snapshot`` default; Kafka's range is [0, 500].
DEFAULT_SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT = 500
#: ``share.coordinator.state.topic.num.partitions`` default (≥ 1).
DEFAULT_STATE_TOPIC_NUM_PARTITIONS = 50
#: Kafka 4.x ``PartitionFactory.UNINITIALIZED_START_OFFSET``: a read of a key with no state.
UNINITIALIZED_START_OFFSET = -1

StateBatch = tuple[int, int, int, int]  # (first_offset, last_offset, delivery_state, delivery_count)


# --------------------------------------------------------------------------- keys and routing


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode()`` (``s[0]*31^(n-1) + … + s[n-1]`` over UTF-16 code units, as a
    signed 32-bit int)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def share_state_partition_for(
    group_id: str, topic_id: Union[uuid.UUID, str], partition: int, num_partitions: int = DEFAULT_STATE_TOPIC_NUM_PARTITIONS
) -> int:
    """The ``__share_group_state`` partition of share-partition (group, topic id, partition):
    ``Utils.abs(key.hashCode()) % numPartitions`` with ``key = "groupId:topicIdBase64:partition"``
    (``SharePartitionKey.asCoordinatorKey``; Kafka's ``Utils.abs(Integer.MIN_VALUE)`` is 0) —
    ``ShareCoordinatorService.partitionFor`` / FindCoordinator key type SHARE.
    Raises ``ValueError`` if ``num_partitions`` < 1."""
    return partition_for_coordinator_key(SharePartitionKey.of(group_id, topic_id, partition).as_coordinator_key(), num_partitions)


def partition_for_coordinator_key(key: str, num_partitions: int = DEFAULT_STATE_TOPIC_NUM_PARTITIONS) -> int:
    """``Utils.abs(key.hashCode()) % numPartitions`` for a coordinator key string (Kafka's
    ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0). Raises ``ValueError`` if ``num_partitions`` < 1."""
    if num_partitions < 1:
        raise ValueError("num_partitions must be >= 1")
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


@dataclass(frozen=True, slots=True)
class SharePartitionKey:
    """Kafka's ``SharePartitionKey``: ``group_id``, ``topic_id`` (Kafka base64 form) and ``partition``."""

    group_id: str
    topic_id: str
    partition: int

    @classmethod
    def of(cls, group_id: str, topic_id: Union[uuid.UUID, str], partition: int) -> "SharePartitionKey":
        """Build a key, normalising ``topic_id`` to Kafka's base64 form (``ValueError`` if it is
        not a UUID)."""
        return cls(group_id, kafka_uuid_to_string(topic_id), partition)

    def as_coordinator_key(self) -> str:
        """``"groupId:topicId:partition"`` (``SharePartitionKey.asCoordinatorKey``)."""
        return f"{self.group_id}:{self.topic_id}:{self.partition}"


# --------------------------------------------------------------------------- the combiner


def _info_cmp(a: tuple, b: tuple) -> int:
    # compareBatchDeliveryInfo on sort keys (first, last, count, state): count first, then state.
    if a[2] != b[2]:
        return -1 if a[2] < b[2] else 1
    if a[3] != b[3]:
        return -1 if a[3] < b[3] else 1
    return 0


def combine_state_batches(
    batches_so_far: Sequence[StateBatch], new_batches: Sequence[StateBatch], start_offset: int
) -> list[StateBatch]:
    """Kafka's ``PersisterStateBatchCombiner.combineStateBatches``.

    Takes two lists of state batches ``(first, last, delivery_state, delivery_count)`` and the
    share-partition start offset (-1: do not prune). Concatenates them; drops batches ending below
    ``start_offset`` and clips one straddling it; then, in (first, last, count, state) order,
    repeatedly merges the first overlapping pair, or the first contiguous pair with equal
    (count, state): equal delivery info → union; otherwise the batch with the higher delivery count
    (then the higher state) wins the overlap and the other keeps its non-overlapping fragments.
    Returns the combined, non-overlapping list. Pure; O(n²) worst case like Kafka's.
    """
    combined = [(int(f), int(l_), int(c), int(s)) for f, l_, s, c in list(batches_so_far) + list(new_batches)]
    if start_offset != -1:
        pruned = []
        for f, l_, c, s in combined:
            if l_ < start_offset:
                continue
            pruned.append((f, l_, c, s) if f >= start_offset else (start_offset, l_, c, s))
        combined = pruned
    if len(combined) < 2:
        return [(f, l_, s, c) for f, l_, c, s in combined]
    sorted_batches = sorted(set(combined))  # a TreeSet: equal batches collapse
    final: list[tuple[int, int, int, int]] = []

    def add(b: tuple[int, int, int, int]) -> None:
        i = bisect.bisect_left(sorted_batches, b)
        if i == len(sorted_batches) or sorted_batches[i] != b:
            sorted_batches.insert(i, b)

    while True:
        pair = None
        if sorted_batches:
            prev = sorted_batches[0]
            moved = 0
            for idx in range(1, len(sorted_batches)):
                cand = sorted_batches[idx]
                if cand[0] <= prev[1] or (prev[1] + 1 == cand[0] and _info_cmp(prev, cand) == 0):
                    pair = (prev, cand)
                    break
                moved = idx
                prev = cand
            # batches before ``prev`` overlap nothing after them: they are final
            if pair is not None:
                final.extend(sorted_batches[:moved])
                del sorted_batches[:moved]
        if pair is None:
            final.extend(sorted_batches)
            break
        prev, cand = pair
        sorted_batches.remove(prev)
        sorted_batches.remove(cand)
        cmp = _info_cmp(cand, prev)
        pf, pl, pc, ps = prev
        cf, cl, cc, cs = cand
        if cmp == 0:
            add((pf, max(pl, cl), pc, ps))
        elif cf == pf:
            if cl == pl:
                add(cand)
            elif cmp < 0:
                add(prev)
                add((pl + 1, cl, cc, cs))
            else:
                add(cand)
        elif cl < pl:  # prev swallows candidate
            if cmp < 0:
                add(prev)
            else:
                add((pf, cf - 1, pc, ps))
                add(cand)
                add((cl + 1, pl, pc, ps))
        elif cl == pl:
            if cmp < 0:
                add(prev)
            else:
                add((pf, cf - 1, pc, ps))
                add(cand)
        else:  # candidate extends past prev
            if cmp < 0:
                add(prev)
                add((pl + 1, cl, cc, cs))
            else:
                add((pf, cf - 1, pc, ps))
                add(cand)
    return [(f, l_, s, c) for f, l_, c, s in final]


# --------------------------------------------------------------------------- the shard state


@dataclass(frozen=True, slots=True)
class ShareGroupOffset:
    """One share-partition's durable state (Kafka ``ShareGroupOffset``): ``snapshot_epoch``
    (int32 in Kafka 4.x), ``state_epoch``, ``leader_epoch``, ``start_offset`` and ``state_batches``."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...]


@dataclass(frozen=True, slots=True)
class ReadStateResult:
    """The answer of :meth:`ShareStateStore.decide_read`: ``start_offset`` (-1 when the key has no
    state: resolve it with ``share.auto.offset.reset``), ``state_epoch``, ``state_batches`` and
    ``leader_epoch`` (-1 when unknown)."""

    start_offset: int
    state_epoch: int
    state_batches: tuple[StateBatch, ...]
    leader_epoch: int = -1


@dataclass
class ShareStateStore:
    """The in-memory state of one share-coordinator shard (Kafka ``ShareCoordinatorShard``):
    ``share_state`` (key → :class:`ShareGroupOffset`), ``leader_epochs``, ``state_epochs`` and
    ``snapshot_update_count`` (absent until the first update after a snapshot).

    ``snapshot_update_records_per_snapshot`` is ``share.coordinator.snapshot.update.records.per.snapshot``
    (default 500, Kafka range [0, 500]; ``ValueError`` outside it).
    Deciders (``decide_write``, ``decide_read``, ``decide_initialize``, ``decide_delete``) never
    mutate; :meth:`apply` (replay) does. Keys are :class:`SharePartitionKey` (topic id in Kafka's
    base64 form); the events carry the same base64 topic id.
    """

    snapshot_update_records_per_snapshot: int = DEFAULT_SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT
    share_state: dict[SharePartitionKey, ShareGroupOffset] = field(default_factory=dict)
    leader_epochs: dict[SharePartitionKey, int] = field(default_factory=dict)
    state_epochs: dict[SharePartitionKey, int] = field(default_factory=dict)
    snapshot_update_count: dict[SharePartitionKey, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = self.snapshot_update_records_per_snapshot
        if not 0 <= n <= 500:
            raise ValueError(
                f"share.coordinator.snapshot.update.records.per.snapshot must be in [0, 500], got {n}"
            )

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _key(group_id: str, topic_id: Union[uuid.UUID, str, None], partition: int) -> SharePartitionKey:
        if topic_id is None or topic_id == "":
            raise ShareError(INVALID_REQUEST, "The topic id cannot be null.")
        if partition < 0:
            raise ShareError(INVALID_REQUEST, "The partition id cannot be a negative number.")
        try:
            return SharePartitionKey.of(group_id, topic_id, partition)
        except ValueError:
            raise ShareError(INVALID_REQUEST, f"invalid topic id {topic_id!r}") from None

    def snapshot(self) -> tuple:
        """A comparable value of the whole shard state (for replay-equality tests)."""
        return (
            self.snapshot_update_records_per_snapshot,
            tuple(sorted(self.share_state.items(), key=lambda kv: kv[0].as_coordinator_key())),
            tuple(sorted(((k.as_coordinator_key(), v) for k, v in self.leader_epochs.items()))),
            tuple(sorted(((k.as_coordinator_key(), v) for k, v in self.state_epochs.items()))),
            tuple(sorted(((k.as_coordinator_key(), v) for k, v in self.snapshot_update_count.items()))),
        )

    def _generate(
        self, key: SharePartitionKey, state_epoch: int, leader_epoch: int, start_offset: int, batches: Sequence[StateBatch]
    ) -> DomainEvent:
        # ShareCoordinatorShard.generateShareStateRecord
        current = self.share_state.get(key)
        if current is None:
            return ShareSnapshotWritten(
                key.group_id,
                key.topic_id,
                key.partition,
                snapshot_epoch=0,
                state_epoch=state_epoch,
                leader_epoch=leader_epoch,
                start_offset=start_offset,
                state_batches=tuple(combine_state_batches([], batches, start_offset)),
            )
        if self.snapshot_update_count.get(key, 0) >= self.snapshot_update_records_per_snapshot:
            new_leader = current.leader_epoch if leader_epoch == -1 else leader_epoch
            new_state = current.state_epoch if state_epoch == -1 else state_epoch
            new_start = current.start_offset if start_offset == -1 else start_offset
            return ShareSnapshotWritten(
                key.group_id,
                key.topic_id,
                key.partition,
                snapshot_epoch=current.snapshot_epoch + 1,
                state_epoch=new_state,
                leader_epoch=new_leader,
                start_offset=new_start,
                state_batches=tuple(combine_state_batches(current.state_batches, batches, new_start)),
            )
        return ShareUpdateWritten(
            key.group_id,
            key.topic_id,
            key.partition,
            snapshot_epoch=current.snapshot_epoch,
            leader_epoch=leader_epoch,
            start_offset=start_offset,
            state_batches=tuple(combine_state_batches([], batches, start_offset)),
        )

    # ------------------------------------------------------------------ deciders

    def decide_write(
        self,
        group_id: str,
        topic_id: Union[uuid.UUID, str],
        partition: int,
        *,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        state_batches: Sequence[StateBatch] = (),
    ) -> list[DomainEvent]:
        """WriteShareGroupState for one key (``ShareCoordinatorShard.writeState``).

        ``start_offset`` / ``leader_epoch`` / ``state_epoch`` of -1 mean "unchanged" (used when a
        snapshot is due). Returns one record: a ShareSnapshot for a new key or when
        ``snapshot_update_count`` ≥ the per-snapshot setting (snapshot epoch + 1, batches combined
        with the current ones), else a ShareUpdate (the request's batches combined among
        themselves). Raises ``ShareError``: INVALID_REQUEST (no topic id, negative partition),
        FENCED_LEADER_EPOCH (stored leader epoch > request's; checked first), FENCED_STATE_EPOCH
        (stored state epoch > request's). A request epoch of -1 is never fenced (Kafka 4.x
        ``maybeGetWriteStateError``; the late-2024 tree fenced it).
        """
        key = self._key(group_id, topic_id, partition)
        stored_leader = self.leader_epochs.get(key)
        if leader_epoch != -1 and stored_leader is not None and stored_leader > leader_epoch:
            raise ShareError(FENCED_LEADER_EPOCH, f"Request leader epoch {leader_epoch} smaller than last recorded {stored_leader}.")
        stored_state = self.state_epochs.get(key)
        if state_epoch != -1 and stored_state is not None and stored_state > state_epoch:
            raise ShareError(FENCED_STATE_EPOCH, f"Request state epoch {state_epoch} smaller than last recorded {stored_state}.")
        return [self._generate(key, state_epoch, leader_epoch, start_offset, state_batches)]

    def decide_read(
        self, group_id: str, topic_id: Union[uuid.UUID, str], partition: int, leader_epoch: int = -1
    ) -> tuple[ReadStateResult, list[DomainEvent]]:
        """ReadShareGroupState for one key (``ShareCoordinatorShard.readStateAndMaybeUpdateLeaderEpoch``, 4.x).

        Returns ``(result, events)``. An unknown key reads as start offset -1 (uninitialised),
        state epoch 0, no batches. A ``leader_epoch`` other than -1 that is newer than the stored
        one is recorded by one record through the write path (start offset and state epoch
        unchanged, no batches); the late-2024 tree kept it in memory only. Raises ``ShareError``:
        INVALID_REQUEST (negative partition, no topic id), FENCED_LEADER_EPOCH (stored > request).
        ``leader_epoch`` -1 (the default) reads without fencing or recording — a Shoal convenience
        for export and tests; Kafka's share-partition leader always sends its epoch, and Kafka
        would fence a -1 once an epoch is stored.
        """
        key = self._key(group_id, topic_id, partition)
        stored_leader = self.leader_epochs.get(key)
        if leader_epoch != -1 and stored_leader is not None and stored_leader > leader_epoch:
            raise ShareError(FENCED_LEADER_EPOCH, f"Request leader epoch {leader_epoch} smaller than last recorded {stored_leader}.")
        current = self.share_state.get(key)
        if current is None:
            return ReadStateResult(UNINITIALIZED_START_OFFSET, 0, (), -1), []
        events: list[DomainEvent] = []
        if leader_epoch != -1 and leader_epoch != stored_leader:
            events.append(self._generate(key, -1, leader_epoch, -1, ()))
        return ReadStateResult(current.start_offset, current.state_epoch, current.state_batches, current.leader_epoch), events

    def decide_initialize(
        self, group_id: str, topic_id: Union[uuid.UUID, str], partition: int, *, state_epoch: int, start_offset: int
    ) -> list[DomainEvent]:
        """InitializeShareGroupState for one key (Kafka 4.x ``ShareCoordinatorShard.initializeState``).

        Returns one ShareSnapshot with the request's start offset and state epoch and no batches
        (snapshot epoch 0 for a new key, else current + 1; leader epoch kept, -1 for a new key).
        Raises ``ShareError``: INVALID_REQUEST (negative partition, no topic id),
        FENCED_STATE_EPOCH (stored state epoch > request's).
        """
        key = self._key(group_id, topic_id, partition)
        stored_state = self.state_epochs.get(key)
        if stored_state is not None and stored_state > state_epoch:
            raise ShareError(FENCED_STATE_EPOCH, f"Request state epoch {state_epoch} smaller than last recorded {stored_state}.")
        current = self.share_state.get(key)
        return [
            ShareSnapshotWritten(
                key.group_id,
                key.topic_id,
                key.partition,
                snapshot_epoch=0 if current is None else current.snapshot_epoch + 1,
                state_epoch=state_epoch,
                leader_epoch=-1 if current is None else current.leader_epoch,
                start_offset=start_offset,
                state_batches=(),
            )
        ]

    def decide_delete(self, group_id: str, topic_id: Union[uuid.UUID, str], partition: int) -> list[DomainEvent]:
        """DeleteShareGroupState for one key (Kafka 4.x ``ShareCoordinatorShard.deleteState``):
        one tombstone for a known key, no record (and success) for an unknown one. Raises
        ``ShareError(INVALID_REQUEST)`` for a negative partition or no topic id."""
        key = self._key(group_id, topic_id, partition)
        if key not in self.share_state:
            return []
        return [ShareStateDeleted(key.group_id, key.topic_id, key.partition)]

    # ------------------------------------------------------------------ replay

    def apply(self, event: DomainEvent) -> "ShareStateStore":
        """Replay one record in place (``ShareCoordinatorShard.replay``) and return ``self``.

        Snapshot: epochs become max(old, new), the state is replaced, a count ≥ the setting is
        reset to 0. Update: leader epoch max(old, new); start offset and leader epoch of -1 keep
        the old values; batches are combined with the old ones pruned at the (new) start offset;
        the count becomes 0 if absent else + 1. Tombstone: the key is forgotten. Raises
        ``TypeError`` for another event type.
        """
        kind = type(event)
        if kind is ShareSnapshotWritten:
            key = SharePartitionKey(event.group_id, event.topic_id, event.partition)  # type: ignore[attr-defined]
            self._max_epoch(self.leader_epochs, key, event.leader_epoch)  # type: ignore[attr-defined]
            self._max_epoch(self.state_epochs, key, event.state_epoch)  # type: ignore[attr-defined]
            self.share_state[key] = ShareGroupOffset(
                event.snapshot_epoch, event.state_epoch, event.leader_epoch, event.start_offset, tuple(map(tuple, event.state_batches))  # type: ignore[attr-defined]
            )
            count = self.snapshot_update_count.get(key)
            if count is not None and count >= self.snapshot_update_records_per_snapshot:
                self.snapshot_update_count[key] = 0
        elif kind is ShareUpdateWritten:
            key = SharePartitionKey(event.group_id, event.topic_id, event.partition)  # type: ignore[attr-defined]
            self._max_epoch(self.leader_epochs, key, event.leader_epoch)  # type: ignore[attr-defined]
            old = self.share_state.get(key)
            batches = tuple(map(tuple, event.state_batches))  # type: ignore[attr-defined]
            if old is None:
                self.share_state[key] = ShareGroupOffset(event.snapshot_epoch, -1, event.leader_epoch, event.start_offset, batches)  # type: ignore[attr-defined]
            else:
                start = old.start_offset if event.start_offset == -1 else event.start_offset  # type: ignore[attr-defined]
                leader = old.leader_epoch if event.leader_epoch == -1 else event.leader_epoch  # type: ignore[attr-defined]
                self.share_state[key] = ShareGroupOffset(
                    old.snapshot_epoch, old.state_epoch, leader, start, tuple(combine_state_batches(old.state_batches, batches, start))
                )
            count = self.snapshot_update_count.get(key)
            self.snapshot_update_count[key] = 0 if count is None else count + 1
        elif kind is ShareStateDeleted:
            key = SharePartitionKey(event.group_id, event.topic_id, event.partition)  # type: ignore[attr-defined]
            self.share_state.pop(key, None)
            self.leader_epochs.pop(key, None)
            self.state_epochs.pop(key, None)
            self.snapshot_update_count.pop(key, None)
        else:
            raise TypeError(f"not a share-state record: {kind.__name__}")
        return self

    @staticmethod
    def _max_epoch(m: dict[SharePartitionKey, int], key: SharePartitionKey, epoch: int) -> None:
        old = m.get(key)
        if old is None or old < epoch:
            m[key] = epoch

    def decide_write_share_partition(self, sp: "SharePartition", leader_epoch: int = 0) -> list[DomainEvent]:
        """The write a share-partition leader sends for its whole current state (Kafka
        ``SharePartition.writeShareGroupState`` with every cached batch): ``sp``'s state epoch,
        start offset and :meth:`~actors.share.partition.SharePartition.state_batches` (ACQUIRED
        written as AVAILABLE). Same errors as :meth:`decide_write`. For export and for the
        restart path ``write → records → read → SharePartition.decide_initialize``."""
        return self.decide_write(
            sp.group_id,
            sp.topic_id,
            sp.partition,
            state_epoch=sp.state_epoch,
            leader_epoch=leader_epoch,
            start_offset=sp.start_offset,
            state_batches=sp.state_batches(),
        )

    # ------------------------------------------------------------------ conveniences

    def write(self, group_id: str, topic_id: Union[uuid.UUID, str], partition: int, **kw) -> list[DomainEvent]:
        """:meth:`decide_write` then apply; returns the records."""
        events = self.decide_write(group_id, topic_id, partition, **kw)
        for ev in events:
            self.apply(ev)
        return events

    def read(self, group_id: str, topic_id: Union[uuid.UUID, str], partition: int, leader_epoch: int = -1) -> tuple[ReadStateResult, list[DomainEvent]]:
        """:meth:`decide_read` then apply; returns ``(result, records)``."""
        result, events = self.decide_read(group_id, topic_id, partition, leader_epoch)
        for ev in events:
            self.apply(ev)
        return result, events

    def initialize(self, group_id: str, topic_id: Union[uuid.UUID, str], partition: int, **kw) -> list[DomainEvent]:
        """:meth:`decide_initialize` then apply; returns the records."""
        events = self.decide_initialize(group_id, topic_id, partition, **kw)
        for ev in events:
            self.apply(ev)
        return events

    def delete(self, group_id: str, topic_id: Union[uuid.UUID, str], partition: int) -> list[DomainEvent]:
        """:meth:`decide_delete` then apply; returns the records."""
        events = self.decide_delete(group_id, topic_id, partition)
        for ev in events:
            self.apply(ev)
        return events

    @classmethod
    def replay(cls, events: Iterable[DomainEvent], snapshot_update_records_per_snapshot: int = DEFAULT_SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT) -> "ShareStateStore":
        """A fresh store folded over ``events`` (log order)."""
        store = cls(snapshot_update_records_per_snapshot)
        for ev in events:
            store.apply(ev)
        return store

    def state_for(self, group_id: str, topic_id: Union[uuid.UUID, str], partition: int) -> Optional[ShareGroupOffset]:
        """The current durable state of one key, ``None`` if it has none."""
        return self.share_state.get(SharePartitionKey.of(group_id, topic_id, partition))
