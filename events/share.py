"""Share-partition and share-state events (KIP-932).

Two families, both appended to the owning group's stream (``share-group:<group id>``):

* **Share-partition decisions** made by :class:`actors.share.partition.SharePartition`: one event
  per request per share-partition at most, carrying offset *ranges*, never one event per record.
  ``evolve`` (``SharePartition.apply``) re-runs Kafka's deterministic transition rules on these
  ranges (the *request* fields), so replaying the events rebuilds the live state exactly, delivery
  counts and lock deadlines (absolute ms) included. Since schema version 2 every share-partition
  event also carries its *outcome* (:class:`StateRange` ranges, the start/end offsets after it and
  what left the cache), written by the decider, so a set-based fold (the SQL projections) can fold
  the log last-writer-wins without re-running the per-offset state machine in order.
* **Durable share state** as Kafka's share coordinator keeps it in ``__share_group_state``
  (:mod:`actors.share.state_store`): :class:`ShareSnapshotWritten` / :class:`ShareUpdateWritten`
  mirror the ShareSnapshot / ShareUpdate records and :class:`ShareStateDeleted` the tombstone; their
  Kafka binary encoding is in :mod:`events.share_records`.

Layouts in the log (JSON):

* a *range* is the array ``[first_offset, last_offset]``, both inclusive;
* an *acknowledgement batch* is the object :class:`AckBatch` ``{first_offset, last_offset,
  acknowledge_types}`` with Kafka's ``AcknowledgeType`` ids (0 GAP, 1 ACCEPT, 2 RELEASE, 3 REJECT,
  4 RENEW) — schema version 1 wrote the positional array ``[first, last, [types]]``, which the
  upcasters below turn into the object;
* a *state batch* is ``(first_offset, last_offset, delivery_state, delivery_count)`` as Kafka's
  ``PersisterStateBatch`` (delivery state 0 AVAILABLE, 2 ACKNOWLEDGED, 4 ARCHIVED);
* an *outcome range* is the object :class:`StateRange`.

Outcome fields (schema version 2; ``None`` / empty on events upcast from version 1, which
recorded requests only — the SQL projections refuse a share-partition whose current life holds
such an event, the Python fold does not need them):

* ``outcome``: every cached offset range whose record state changed (state, delivery count,
  owner, lock deadline) with its state *after* the event, one :class:`StateRange` per run of equal
  state inside one cached batch (never across a batch boundary), non-overlapping, ascending;
  records that left the cache in the same event are not in it;
* ``start_offset_after`` / ``end_offset_after``: the share-partition start offset (SPSO) and end
  offset (SPEO) after the event;
* ``evicted_below``: when the event moved the start offset past a terminal prefix of the cache
  (Kafka ``maybeUpdateCachedStateAndOffsets``), the offset below which every cached record left
  the cache (the first offset of the first batch kept, or the last cached offset + 1 when the
  cache emptied); ``None`` when nothing left the cache. It never decreases between two
  initialisations, and no later batch starts below it (new batches start at or above the start
  offset).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from events.base import DomainEvent, domain_event
from events.codec import register_upcaster

__all__ = [
    "AckBatch",
    "AcquisitionLocksExpired",
    "LogStartOffsetMoved",
    "MemberRecordsReleased",
    "RecordsAcknowledged",
    "RecordsAcquired",
    "SHARE_PARTITION_EVENTS",
    "SHARE_STATE_EVENTS",
    "ShareFetchProcessed",
    "SharePartitionInitialized",
    "ShareSnapshotWritten",
    "ShareStateDeleted",
    "ShareUpdateWritten",
    "StateRange",
    "has_outcome",
]

Range = tuple[int, int]
StateBatch = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class AckBatch:
    """One acknowledgement batch of a request (Kafka ``ShareAcknowledgeRequest``'s
    ``AcknowledgementBatches``): offsets ``first_offset``..``last_offset`` (inclusive) and
    ``acknowledge_types``, one ``AcknowledgeType`` id for the whole range or one per offset.

    Iterating yields ``(first_offset, last_offset, acknowledge_types)``, so code written for the
    schema-version-1 tuple (``for first, last, types in batches``) keeps working."""

    first_offset: int
    last_offset: int
    acknowledge_types: tuple[int, ...]

    def __iter__(self):
        return iter((self.first_offset, self.last_offset, self.acknowledge_types))


@dataclass(frozen=True, slots=True)
class StateRange:
    """The state of the cached records ``first_offset``..``last_offset`` (inclusive) after an
    event: ``state`` (Kafka ``RecordState`` id: 0 AVAILABLE, 1 ACQUIRED, 2 ACKNOWLEDGED,
    4 ARCHIVED), ``delivery_count``, and — only while ACQUIRED — the owning ``member_id`` and the
    acquisition lock's ``lock_deadline_ms`` (absolute ms); both ``None`` otherwise."""

    first_offset: int
    last_offset: int
    state: int
    delivery_count: int
    member_id: Optional[str] = None
    lock_deadline_ms: Optional[int] = None


# --------------------------------------------------------------------------- share-partition events


@domain_event("share.SharePartitionInitialized", schema_version=2)
@dataclass(frozen=True, slots=True)
class SharePartitionInitialized(DomainEvent):
    """The share-partition was (re)initialised (Kafka ``SharePartition.maybeInitialize``).

    ``start_offset`` is the share-partition start offset (SPSO) as read from the share coordinator
    or resolved with ``share.auto.offset.reset``; ``state_batches`` are the persisted
    non-acquired batches ``(first, last, state, delivery count)``. The partition's configuration
    (``group.share.delivery.count.limit``, ``group.share.partition.max.record.locks``) is part of
    the event so replay needs nothing else. Replaces any previous state of the partition: the
    state batches are its outcome (no ``outcome`` field); ``start_offset_after``,
    ``end_offset_after`` and ``evicted_below`` tell what the initial offset update left (a
    terminal prefix of the batches leaves the cache at once).
    """

    group_id: str
    topic_id: str
    partition: int
    start_offset: int
    state_epoch: int
    delivery_count_limit: int
    max_in_flight_records: int
    state_batches: tuple[StateBatch, ...] = ()
    start_offset_after: Optional[int] = None
    end_offset_after: Optional[int] = None
    evicted_below: Optional[int] = None


@domain_event("share.RecordsAcquired", schema_version=2)
@dataclass(frozen=True, slots=True)
class RecordsAcquired(DomainEvent):
    """``member_id`` acquired ``ranges`` (Kafka ``SharePartition.acquire``), each lock expiring at
    ``lock_deadline_ms`` (absolute ms). A range either is a whole cached batch, lies inside a cached
    batch (per-offset acquisition), or lies past the cache (a new in-flight batch). Every record in
    a range gets its delivery count incremented by one."""

    group_id: str
    topic_id: str
    partition: int
    member_id: str
    ranges: tuple[Range, ...]
    lock_deadline_ms: int
    stale_ranges: tuple[Range, ...] = ()
    """AVAILABLE records between the fetch offset and the first fetched batch — compacted away
    from the log — archived before the acquisition (Kafka 4.2 ``maybeArchiveStaleBatches``)."""
    outcome: tuple[StateRange, ...] = ()
    start_offset_after: Optional[int] = None
    end_offset_after: Optional[int] = None
    evicted_below: Optional[int] = None


@domain_event("share.RecordsAcknowledged", schema_version=2)
@dataclass(frozen=True, slots=True)
class RecordsAcknowledged(DomainEvent):
    """One validated acknowledgement request of ``member_id`` on this partition (Kafka
    ``SharePartition.acknowledge``): ``batches`` are the request's acknowledgement batches
    (:class:`AckBatch`). All or nothing: the event exists only when every batch was valid.
    ``renew_deadline_ms`` is the new lock deadline (absolute ms) of records acknowledged with
    RENEW (Kafka 4.2, KIP-1222), ``None`` when the request has no RENEW."""

    group_id: str
    topic_id: str
    partition: int
    member_id: str
    batches: tuple[AckBatch, ...]
    renew_deadline_ms: Optional[int] = None
    outcome: tuple[StateRange, ...] = ()
    start_offset_after: Optional[int] = None
    end_offset_after: Optional[int] = None
    evicted_below: Optional[int] = None


@domain_event("share.AcquisitionLocksExpired", schema_version=2)
@dataclass(frozen=True, slots=True)
class AcquisitionLocksExpired(DomainEvent):
    """The acquisition locks of ``ranges`` expired at ``now_ms`` (Kafka
    ``SharePartition.releaseAcquisitionLockOnTimeout``): ACQUIRED records there become AVAILABLE,
    or ARCHIVED when below the start offset or at the delivery-count limit."""

    group_id: str
    topic_id: str
    partition: int
    now_ms: int
    ranges: tuple[Range, ...]
    outcome: tuple[StateRange, ...] = ()
    start_offset_after: Optional[int] = None
    end_offset_after: Optional[int] = None
    evicted_below: Optional[int] = None


@domain_event("share.MemberRecordsReleased", schema_version=2)
@dataclass(frozen=True, slots=True)
class MemberRecordsReleased(DomainEvent):
    """The records ``member_id`` held in ``ranges`` were released because its share session closed
    or it left the group (Kafka ``SharePartition.releaseAcquiredRecords``); same transition as a
    lock timeout, unless ``delivery_count_decremented`` (Kafka 4.2: the records count as never
    delivered — delivery count − 1, no archiving at the limit; ARCHIVED below the start offset)."""

    group_id: str
    topic_id: str
    partition: int
    member_id: str
    ranges: tuple[Range, ...]
    delivery_count_decremented: bool = False
    outcome: tuple[StateRange, ...] = ()
    start_offset_after: Optional[int] = None
    end_offset_after: Optional[int] = None
    evicted_below: Optional[int] = None


@domain_event("share.LogStartOffsetMoved", schema_version=2)
@dataclass(frozen=True, slots=True)
class LogStartOffsetMoved(DomainEvent):
    """The log start offset moved to ``log_start_offset`` beyond the share-partition start offset
    (retention or deleteRecords; Kafka ``SharePartition.updateCacheAndOffsets``): AVAILABLE records
    below it are ARCHIVED and the start offset jumps to it."""

    group_id: str
    topic_id: str
    partition: int
    log_start_offset: int
    outcome: tuple[StateRange, ...] = ()
    start_offset_after: Optional[int] = None
    end_offset_after: Optional[int] = None
    evicted_below: Optional[int] = None


@domain_event("share.ShareFetchProcessed", schema_version=2)
@dataclass(frozen=True, slots=True)
class ShareFetchProcessed(DomainEvent):
    """One ShareFetch of ``member_id`` on this partition: its piggybacked acknowledgements
    (``acknowledgements``, as in :class:`RecordsAcknowledged`; empty when it had none or they
    failed) applied first, then the acquisition of ``ranges`` (as in :class:`RecordsAcquired`,
    ``stale_ranges`` included; empty when nothing was acquired) with locks expiring at
    ``lock_deadline_ms``. One event per
    consumer round trip: the steady state of a share consumer is one ShareFetch per batch."""

    group_id: str
    topic_id: str
    partition: int
    member_id: str
    acknowledgements: tuple[AckBatch, ...]
    renew_deadline_ms: Optional[int]
    ranges: tuple[Range, ...]
    lock_deadline_ms: int
    stale_ranges: tuple[Range, ...] = ()
    outcome: tuple[StateRange, ...] = ()
    start_offset_after: Optional[int] = None
    end_offset_after: Optional[int] = None
    evicted_below: Optional[int] = None


SHARE_PARTITION_EVENTS: tuple[type[DomainEvent], ...] = (
    SharePartitionInitialized,
    RecordsAcquired,
    ShareFetchProcessed,
    RecordsAcknowledged,
    AcquisitionLocksExpired,
    MemberRecordsReleased,
    LogStartOffsetMoved,
)


# --------------------------------------------------------------------------- upcasters v1 -> v2
# Version 1 recorded the request only: the outcome fields stay at their defaults (no outcome),
# and acknowledgement batches become objects.


def _ack_batches_v1_to_v2(batches: list) -> list[dict]:
    return [{"first_offset": f, "last_offset": l_, "acknowledge_types": list(ts)} for f, l_, ts in batches]


@register_upcaster("share.RecordsAcknowledged", 1)
def _records_acknowledged_v1_to_v2(d: dict) -> dict:
    return {**d, "batches": _ack_batches_v1_to_v2(d["batches"])}


@register_upcaster("share.ShareFetchProcessed", 1)
def _share_fetch_processed_v1_to_v2(d: dict) -> dict:
    return {**d, "acknowledgements": _ack_batches_v1_to_v2(d["acknowledgements"])}


def _unchanged_v1_to_v2(d: dict) -> dict:
    return d


for _t in ("SharePartitionInitialized", "RecordsAcquired", "AcquisitionLocksExpired", "MemberRecordsReleased", "LogStartOffsetMoved"):
    register_upcaster(f"share.{_t}", 1)(_unchanged_v1_to_v2)
del _t


def has_outcome(event: DomainEvent) -> bool:
    """Whether a share-partition event carries its outcome (recorded at schema version 2 or
    later; an event upcast from version 1 does not)."""
    return getattr(event, "start_offset_after", None) is not None


# --------------------------------------------------------------------------- durable share state


@domain_event("share.ShareSnapshotWritten", schema_version=1)
@dataclass(frozen=True, slots=True)
class ShareSnapshotWritten(DomainEvent):
    """A ShareSnapshot record (record type 0) for ``group_id:topic_id:partition``: the complete
    state; replaces whatever was there (Kafka ``ShareCoordinatorShard.handleShareSnapshot``).
    ``snapshot_epoch`` is an int32 (Kafka 4.x; a uint16 in the late-2024 schema)."""

    group_id: str
    topic_id: str
    partition: int
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...]


@domain_event("share.ShareUpdateWritten", schema_version=1)
@dataclass(frozen=True, slots=True)
class ShareUpdateWritten(DomainEvent):
    """A ShareUpdate record (record type 1): a delta merged into the current state with the
    state-batch combiner (``ShareCoordinatorShard.handleShareUpdate``). ``start_offset`` and
    ``leader_epoch`` of -1 mean "unchanged"; it carries no state epoch."""

    group_id: str
    topic_id: str
    partition: int
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...]


@domain_event("share.ShareStateDeleted", schema_version=1)
@dataclass(frozen=True, slots=True)
class ShareStateDeleted(DomainEvent):
    """The tombstone of ``group_id:topic_id:partition`` (ShareSnapshotKey with a null value,
    Kafka 4.x ``ShareCoordinatorShard.deleteState``): the state and its epochs are forgotten."""

    group_id: str
    topic_id: str
    partition: int


SHARE_STATE_EVENTS: tuple[type[DomainEvent], ...] = (ShareSnapshotWritten, ShareUpdateWritten, ShareStateDeleted)
