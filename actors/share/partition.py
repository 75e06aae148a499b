"""The share-partition state machine (KIP-932), pure: Kafka's ``SharePartition`` without threads,
timers, futures or a persister.

One :class:`SharePartition` per (group id, topic id, partition). It keeps the in-flight records as
Kafka does, in a sorted cache of :class:`InFlightBatch` offset ranges, each either one batch state
or — once a request touches part of it — exploded into per-offset states (one-way, as Kafka's
``InFlightBatch.maybeInitializeOffsetStateUpdate``). A 500-record acquire followed by a whole-batch
ACCEPT therefore costs O(number of batches), not O(records). The per-offset states of an exploded
batch are kept run-length encoded (:class:`_Run`: maximal runs of offsets with equal state,
delivery count, owner and lock deadline), so a mixed acknowledgement (ACCEPT with some RELEASE)
and the redelivery of the released records cost O(acknowledgement batches + runs), not O(records),
and the runs merge back as records reach the same state; an exploded batch leaves the cache like
any other once the start offset moves past it. Runs are never modified once in a batch: a change
builds the batch's new run list in one pass, so copies of a batch share its runs.

**Deciders and evolve.** Every state change is a *decision* that returns events
(:mod:`events.share`) without touching the state, and :meth:`SharePartition.apply` (``evolve``)
that applies one event. The actor persists the events first, then applies them::

    events, acquired = sp.decide_acquire(member, fetched, max_records, now_ms, lock_ms)
    journal.append(events)            # durable first
    for ev in events: sp.apply(ev)    # then evolve
    reply(acquired)

A decision that fails raises :class:`actors.share.errors.ShareError` and returns no event, so a
failed request leaves no trace (Kafka's all-or-nothing acknowledge). A decision that changes
nothing returns ``[]``. Each request yields at most one event per partition. Events carry ranges
and absolute lock deadlines; ``apply`` re-runs Kafka's deterministic rules on them, so
:func:`replay` of the events rebuilds exactly the live state (compare with
:meth:`SharePartition.snapshot`). Time is always an argument (``now_ms``); nothing here reads a
clock.

**Outcomes.** Every event also carries its outcome (:class:`events.share.StateRange` ranges of the
records it changed, with their state after it; the start/end offsets after it; ``evicted_below``
when it dropped a terminal prefix of the cache), which the SQL projections fold last-writer-wins.
The decider computes it by applying the request to a copy of the partition that shares every
batch the request does not reach (O(batches) for the lists plus the batches reached; per run
only inside already exploded batches) and reading the state of the touched ranges back. ``apply``
never reads the outcome: it stays the reference the outcome is checked against
(``tests/share/test_partition_properties.py``). Because an outcome describes the state the
decision was made on, decide each event on the state the previous events of this partition left
(decide, apply, decide the next), never two decisions on the same state. That copy is kept: when
``apply`` is given the very event object just decided, on the partition still in the state it was
decided on, it takes the copy's state instead of applying the event a second time (the result is
the same; any other event, or any apply in between, discards the copy). The convenience methods (:meth:`SharePartition.acquire`, :meth:`~SharePartition.acknowledge`,
…) decide and apply in one call and return the events too.

Semantics follow Apache Kafka's ``core/src/main/java/kafka/server/share/SharePartition.java`` (see
``shared/reference/kip932-share-groups.md`` §3) with these Kafka 4.x/4.2 behaviours: acknowledge
type RENEW (4) restarts a lock (KIP-1222); the empty member id is ``""``; an acquisition is capped by
the in-flight capacity (``lastOffsetAndMaxRecordsToAcquire``); AVAILABLE records compacted out of
the log are archived at the next fetch (``maybeArchiveStaleBatches``); an acknowledgement range
ending in a hole after the cached batches is INVALID_REQUEST; release on session close may
decrement the delivery count (``DeliveryCountOps.DECREASE``, opt-in, see
:meth:`SharePartition.decide_release_member`). Not modelled: the persister read-gap window of a
partition initialised from a state with holes, throttled / isolated delivery near the delivery
limit (KAFKA-17541), the ``record_limit`` acquire mode (KIP-1206), transactional filtering.
``BatchSize`` splitting of new acquisitions (``createBatches``) is modelled (``batch_size``).

Deliberate deviations, all to keep the invariants the rest of Shoal relies on:

* the share-partition start and end offsets never move backwards (Kafka can move them back when
  records left ACQUIRED below an LSO-moved start offset are archived later);
* a new in-flight batch never starts below the start offset;
* a request that acknowledges the same offset twice fails with INVALID_RECORD_STATE whatever the
  types (Kafka does so too, through its in-flight transition check);
* a non-exploded ACQUIRED batch straddling the start offset is exploded when its lock times out, so
  the part below the start offset is archived (as ``releaseAcquiredRecords`` does);
* persistence failures: nothing is applied before its event is durable, so Kafka's "a lock timeout
  stands even if the state write fails" becomes "the actor re-decides the same expiry and retries".
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, replace
from enum import IntEnum
from itertools import groupby
from operator import attrgetter
from typing import Callable, Iterable, Optional, Sequence

from actors.share.errors import INVALID_RECORD_STATE, INVALID_REQUEST, ShareError
from events.base import DomainEvent
from events.share import (
    AckBatch,
    AcquisitionLocksExpired,
    LogStartOffsetMoved,
    MemberRecordsReleased,
    RecordsAcknowledged,
    RecordsAcquired,
    ShareFetchProcessed,
    SharePartitionInitialized,
    StateRange,
)

__all__ = [
    "DEFAULT_DELIVERY_COUNT_LIMIT",
    "DEFAULT_MAX_IN_FLIGHT_RECORDS",
    "EMPTY_MEMBER_ID",
    "AcknowledgeType",
    "AcquiredRecords",
    "InFlightBatch",
    "InFlightState",
    "RecordState",
    "SharePartition",
    "ShareFetchDecision",
    "evolve",
    "replay",
    "resolve_auto_offset_reset",
    "validate_acknowledgement_batches",
    "validate_transition",
]

#: The member id of a record no member holds (Kafka 4.x ``SharePartition.EMPTY_MEMBER_ID``; the
#: late-2024 tree used ``Uuid.ZERO_UUID.toString()``).
EMPTY_MEMBER_ID = ""
#: ``group.share.delivery.count.limit`` default (range [2, 10]).
DEFAULT_DELIVERY_COUNT_LIMIT = 5
#: ``group.share.partition.max.record.locks`` default (range [100, 10000]).
DEFAULT_MAX_IN_FLIGHT_RECORDS = 200


class RecordState(IntEnum):
    """Kafka's record states with their wire / disk ids (``SharePartition.RecordState``)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(IntEnum):
    """Kafka's acknowledge types (``AcknowledgeType``; RENEW since Kafka 4.2 / ShareAcknowledge v2)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


_AVAILABLE = 0
_ACQUIRED = 1
_ACKNOWLEDGED = 2
_ARCHIVED = 4
_RENEW = 4
_VALID_ACK_TYPES = frozenset((0, 1, 2, 3, 4))


def validate_transition(old: RecordState, new: RecordState) -> RecordState:
    """Kafka's ``RecordState.validateTransition``: returns ``new`` if ``old → new`` is allowed.

    Allowed: AVAILABLE→ACQUIRED, ACQUIRED→AVAILABLE/ACKNOWLEDGED/ARCHIVED. Raises ``ValueError``
    (Kafka: IllegalStateException) for X→X, anything out of ACKNOWLEDGED/ARCHIVED, and
    AVAILABLE→anything but ACQUIRED.
    """
    if old == new:
        raise ValueError(f"the state transition is invalid as the new state is the same as the current state: {old.name}")
    if old in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
        raise ValueError(f"the state transition is invalid from the current state: {old.name}")
    if old == RecordState.AVAILABLE and new != RecordState.ACQUIRED:
        raise ValueError("the state can only be transitioned to ACQUIRED from AVAILABLE")
    return new


def validate_acknowledgement_batches(batches: Sequence[tuple[int, int, Sequence[int]]], renew: bool = True) -> Optional[str]:
    """Kafka's request-level check of one partition's acknowledgement batches
    (``KafkaApis.validateAcknowledgementBatches``), for the wire layer / actor. ``renew``: whether
    the request's version carries RENEW (ShareFetch/ShareAcknowledge v2, KIP-1222); v1 knows
    the types 0..3 only.

    Returns ``None`` when valid, else the reason (the partition's error is then INVALID_REQUEST):
    ``first > last``; ``first`` < the previous batch's ``last`` (strictly: a one-offset overlap
    passes here and fails later with INVALID_RECORD_STATE), or below -1 for the first batch (Kafka
    starts ``prevEndOffset`` at -1); no types; several types whose count is not
    ``last - first + 1``; a type outside 0..4 (RENEW=4 is Kafka 4.2).
    """
    prev_last = -1
    for first, last, types in batches:
        if first > last:
            return "First offset of acknowledgement batch is greater than its last offset."
        if first < prev_last:
            return "Acknowledgement batches must be in ascending order and must not overlap."
        if not types:
            return "Acknowledge types must not be empty."
        if len(types) > 1 and last - first != len(types) - 1:
            return "Acknowledge types must be a single type or one per offset."
        for t in types:
            if t not in _VALID_ACK_TYPES or (t == _RENEW and not renew):
                return f"Invalid acknowledge type: {t}."
        prev_last = last
    return None


class InFlightState:
    """The state of one offset of an exploded batch: ``state`` (int id of :class:`RecordState`),
    ``delivery_count``, ``member_id`` (``EMPTY_MEMBER_ID`` unless ACQUIRED) and ``deadline_ms``
    (absolute ms of the acquisition-lock expiry, ``None`` unless ACQUIRED).
    (Kafka ``InFlightState``; the timer task becomes an absolute deadline.)"""

    __slots__ = ("state", "delivery_count", "member_id", "deadline_ms")

    def __init__(self, state: int, delivery_count: int, member_id: str, deadline_ms: Optional[int]) -> None:
        self.state = state
        self.delivery_count = delivery_count
        self.member_id = member_id
        self.deadline_ms = deadline_ms

    def as_tuple(self) -> tuple[int, int, str, Optional[int]]:
        """``(state, delivery_count, member_id, deadline_ms)``."""
        return (self.state, self.delivery_count, self.member_id, self.deadline_ms)

    def __repr__(self) -> str:
        return f"InFlightState({RecordState(self.state).name}, dc={self.delivery_count}, member={self.member_id!r}, deadline={self.deadline_ms})"


class _Run(InFlightState):
    """A run ``[first, last]`` (inclusive) of offsets of an exploded :class:`InFlightBatch` that
    share one :class:`InFlightState` (state, delivery count, owner, lock deadline)."""

    __slots__ = ("first", "last")

    def __init__(self, first: int, last: int, state: int, delivery_count: int, member_id: str, deadline_ms: Optional[int]) -> None:
        InFlightState.__init__(self, state, delivery_count, member_id, deadline_ms)
        self.first = first
        self.last = last

    def __repr__(self) -> str:
        return f"_Run({self.first}-{self.last}, {InFlightState.__repr__(self)})"


_FIRST = attrgetter("first")


def _run_index(runs: list[_Run], offset: int) -> int:
    """Index of the run holding ``offset`` (which must lie inside the batch)."""
    return bisect_right(runs, offset, key=_FIRST) - 1


def _rebuild_runs(old: list[_Run], parts: list[tuple[int, int, object]], want: int, fn: Callable[[_Run, object], bool]) -> tuple[list[_Run], bool]:
    """New runs for a batch whose runs are ``old``: each part ``(first, last, arg)`` (ascending,
    disjoint, inside the batch) changes its offsets whose state is ``want`` with ``fn(run, arg)``
    (on a fresh run it may modify; returns whether to report a change). Runs are never modified
    once in a batch (batch copies share them), so this builds a new list: untouched runs are
    reused, equal neighbours merged. Returns ``(runs, any fn returned True)``. O(runs + parts)."""
    new: list[_Run] = []
    changed = False
    np_ = len(parts)
    pi = 0

    def emit(r: _Run) -> None:
        if new:
            p = new[-1]
            if p.state == r.state and p.delivery_count == r.delivery_count and p.member_id == r.member_id and p.deadline_ms == r.deadline_ms:
                new[-1] = _Run(p.first, r.last, p.state, p.delivery_count, p.member_id, p.deadline_ms)
                return
        new.append(r)

    for r in old:
        rl = r.last
        if pi >= np_ or parts[pi][0] > rl:
            emit(r)
            continue
        pos = r.first
        while pi < np_:
            a, z, arg = parts[pi]
            if a > rl:
                break
            if a > pos:
                emit(_Run(pos, a - 1, r.state, r.delivery_count, r.member_id, r.deadline_ms))
            elif a < pos:
                a = pos
            zz = z if z < rl else rl
            if zz >= a:
                nr = _Run(a, zz, r.state, r.delivery_count, r.member_id, r.deadline_ms)
                if r.state == want and fn(nr, arg):
                    changed = True
                emit(nr)
                pos = zz + 1
            if z > rl:
                break  # the part goes on in the next run
            pi += 1
        if pos <= rl:
            emit(_Run(pos, rl, r.state, r.delivery_count, r.member_id, r.deadline_ms))
    return new, changed


def _archive_run(r: InFlightState, _arg: object = None) -> bool:
    r.state = _ARCHIVED
    return False


def _archive_run_clear(r: InFlightState, _arg: object = None) -> bool:
    r.state = _ARCHIVED
    r.member_id = EMPTY_MEMBER_ID
    r.deadline_ms = None
    return False


def _runs_in(runs: list[_Run], first: int, last: int):
    """The runs overlapping ``[first, last]``, in order."""
    i = bisect_right(runs, first, key=_FIRST) - 1
    if i < 0:
        i = 0
    n = len(runs)
    while i < n:
        r = runs[i]
        if r.first > last:
            return
        if r.last >= first:
            yield r
        i += 1


class InFlightBatch(InFlightState):
    """A cached in-flight range ``[first_offset, last_offset]`` (both inclusive). While ``runs`` is
    ``None`` the inherited batch fields describe every offset; once exploded, ``runs`` holds the
    per-offset states run-length encoded: ascending :class:`_Run` s covering the batch exactly,
    equal neighbours merged, and the batch fields are stale. (Kafka ``InFlightBatch`` with its
    ``offsetState`` map; a run stands for the offsets of the map that hold equal states, so a
    mixed acknowledgement costs O(runs), not O(records).) :attr:`offset_state` gives the
    per-offset view."""

    __slots__ = ("first_offset", "last_offset", "runs")

    def __init__(
        self, first_offset: int, last_offset: int, state: int, delivery_count: int, member_id: str, deadline_ms: Optional[int]
    ) -> None:
        InFlightState.__init__(self, state, delivery_count, member_id, deadline_ms)
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.runs: Optional[list[_Run]] = None

    @property
    def offset_state(self) -> Optional[dict[int, InFlightState]]:
        """``None`` while not exploded, else a fresh ``{offset: InFlightState}`` of every offset
        (Kafka's ``offsetState``; O(records): for readers outside the hot path)."""
        runs = self.runs
        if runs is None:
            return None
        return {o: InFlightState(r.state, r.delivery_count, r.member_id, r.deadline_ms) for r in runs for o in range(r.first, r.last + 1)}

    def explode(self) -> list[_Run]:
        """Split into per-offset states (idempotent; one run until a request splits it); each
        offset copies the batch state, lock deadline included (Kafka re-splits the timer with the
        remaining delay). Returns the runs."""
        runs = self.runs
        if runs is None:
            runs = [_Run(self.first_offset, self.last_offset, self.state, self.delivery_count, self.member_id, self.deadline_ms)]
            self.runs = runs
        return runs

    def copy(self) -> "InFlightBatch":
        """An independent copy (per-offset states copied too)."""
        c = InFlightBatch(self.first_offset, self.last_offset, self.state, self.delivery_count, self.member_id, self.deadline_ms)
        c.runs = self.runs  # never modified in place: a change builds a new list (_rebuild_runs)
        return c

    def as_tuple(self):  # type: ignore[override]
        """``(first, last, batch state tuple | None, per-offset tuples | None)``."""
        if self.runs is None:
            return (self.first_offset, self.last_offset, InFlightState.as_tuple(self), None)
        return (self.first_offset, self.last_offset, None, tuple((o, r.as_tuple()) for r in self.runs for o in range(r.first, r.last + 1)))

    def __repr__(self) -> str:
        if self.runs is None:
            return f"InFlightBatch({self.first_offset}-{self.last_offset}, {InFlightState.__repr__(self)})"
        return f"InFlightBatch({self.first_offset}-{self.last_offset}, exploded into {len(self.runs)} runs)"


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    """One entry of a ShareFetch response's ``AcquiredRecords``: ``[first_offset, last_offset]``
    (inclusive) delivered with ``delivery_count``."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareFetchDecision:
    """What :meth:`SharePartition.decide_share_fetch` decided for one partition of a ShareFetch:
    ``events`` (``[ShareFetchProcessed]`` or ``[]``), the ``acquired`` records for the response,
    and the acknowledgements' outcome: ``ack_error`` is ``None`` when they succeeded (or there were
    none), else the :class:`ShareError` to report as the partition's ``AcknowledgeErrorCode``
    (the fetch part still proceeds, as in Kafka)."""

    events: list
    acquired: list
    ack_error: Optional[ShareError]
    fetch_offset: Optional[int]


def _slot_constructor(cls: type, fields: tuple[str, ...]) -> Callable[..., object]:
    """A constructor of the frozen slots dataclass ``cls`` taking ``fields`` positionally that
    writes the slots through their descriptors: the same object as ``cls(*values)`` (whose
    generated ``__init__`` writes each field through ``object.__setattr__``), at half the cost;
    for the outcome and acknowledgement entries a mixed acknowledgement makes by the hundred.
    ``cls`` must have no ``__post_init__`` and no defaults the caller leaves out."""
    assert not hasattr(cls, "__post_init__")
    setters = [cls.__dict__[f].__set__ for f in fields]
    new = object.__new__
    if len(fields) == 3:
        s0, s1, s2 = setters

        def make3(a, b, c):
            o = new(cls)
            s0(o, a)
            s1(o, b)
            s2(o, c)
            return o

        return make3
    s0, s1, s2, s3, s4, s5 = setters

    def make6(a, b, c, d, e, f):
        o = new(cls)
        s0(o, a)
        s1(o, b)
        s2(o, c)
        s3(o, d)
        s4(o, e)
        s5(o, f)
        return o

    return make6


_new_state_range = _slot_constructor(
    StateRange, ("first_offset", "last_offset", "state", "delivery_count", "member_id", "lock_deadline_ms")
)
_new_ack_batch = _slot_constructor(AckBatch, ("first_offset", "last_offset", "acknowledge_types"))
_new_acquired = _slot_constructor(AcquiredRecords, ("first_offset", "last_offset", "delivery_count"))
#: the types tuple of a single-type acknowledgement batch, shared
_ONE_TYPE = {t: (t,) for t in _VALID_ACK_TYPES}


def _merged(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Ascending non-overlapping inclusive ranges with contiguous neighbours merged."""
    out: list[tuple[int, int]] = []
    for a, z in ranges:
        if out and out[-1][1] + 1 == a:
            out[-1] = (out[-1][0], z)
        else:
            out.append((a, z))
    return out


#: An acknowledgement plan: ``(whole, parts)``, the ``(batch index, type)`` of the batches moved
#: whole and, per batch index, the ``(first, last, type)`` parts of the others.
_AckPlan = tuple[list[tuple[int, int]], dict[int, list[tuple[int, int, int]]]]


class SharePartition:
    """Kafka's ``SharePartition`` for (``group_id``, ``topic_id``, ``partition``), pure.

    ``topic_id`` is kept as given (the group's events use Kafka's base64 Uuid string; canonical
    UUID text works too) and copied into every event.
    Construct it in Kafka's test-builder state (ACTIVE, start = end = 0, empty cache, like a
    partition initialised with the no-op persister) or apply a :class:`SharePartitionInitialized`
    (see :meth:`decide_initialize`). ``delivery_count_limit`` is ``group.share.delivery.count.limit``
    (default 5, Kafka range [2, 10]); ``max_in_flight_records`` is
    ``group.share.partition.max.record.locks`` (default 200, range [100, 10000]) — the model
    accepts any positive values so tests can use Kafka's smaller test settings.

    Public state (read it, never assign it): ``start_offset`` (SPSO), ``end_offset`` (SPEO),
    ``state_epoch``, ``delivery_count_limit``, ``max_in_flight_records``; queries
    :meth:`next_fetch_offset`, :meth:`can_acquire_records`, :meth:`next_lock_deadline_ms`,
    :meth:`record_state`, :meth:`cached_batches`, :meth:`snapshot`.
    """

    __slots__ = (
        "group_id",
        "topic_id",
        "partition",
        "delivery_count_limit",
        "max_in_flight_records",
        "start_offset",
        "end_offset",
        "state_epoch",
        "find_next_fetch_offset",
        "_batches",
        "_firsts",
        "_decided",
        "_version",
    )

    def __init__(
        self,
        group_id: str,
        topic_id: str,
        partition: int,
        *,
        delivery_count_limit: int = DEFAULT_DELIVERY_COUNT_LIMIT,
        max_in_flight_records: int = DEFAULT_MAX_IN_FLIGHT_RECORDS,
    ) -> None:
        if delivery_count_limit < 1 or max_in_flight_records < 1:
            raise ValueError("delivery_count_limit and max_in_flight_records must be >= 1")
        self.group_id = group_id
        self.topic_id = str(topic_id)
        self.partition = partition
        self.delivery_count_limit = delivery_count_limit
        self.max_in_flight_records = max_in_flight_records
        self.start_offset = 0
        self.end_offset = 0
        self.state_epoch = 0
        self.find_next_fetch_offset = False
        self._batches: list[InFlightBatch] = []
        self._firsts: list[int] = []
        # (event, state after it, _version it was decided at) of the last decision: ``apply`` of
        # that very event on the unchanged partition adopts the state the decider already
        # computed for the outcome instead of recomputing it (a cache, not state).
        self._decided: Optional[tuple[DomainEvent, "SharePartition", int]] = None
        self._version = 0  # bumped by every apply

    # ------------------------------------------------------------------ queries

    def next_fetch_offset(self) -> int:
        """The log offset the next fetch for this share-partition should start at (Kafka
        ``nextFetchOffset``): the first AVAILABLE offset in the cache when records were released or
        timed out, else ``end_offset + 1`` — or ``end_offset`` when the cache is empty or the start
        offset has moved past it. Pure (Kafka clears its flag here; the result is the same)."""
        batches = self._batches
        if not batches or self.start_offset > batches[-1].last_offset:
            return self.end_offset
        if self.find_next_fetch_offset:
            for b in batches:
                runs = b.runs
                if runs is None:
                    if b.state == _AVAILABLE:
                        return b.first_offset
                else:
                    for r in runs:
                        if r.state == _AVAILABLE:
                            return r.first
        return self.end_offset + 1

    def can_acquire_records(self) -> bool:
        """Kafka ``canAcquireRecords``: re-delivery inside the cache is always allowed; otherwise
        the in-flight span ``end - start + 1`` must be below ``max_in_flight_records``. One fetch
        may still overshoot the limit (Kafka checks before fetching)."""
        if self.next_fetch_offset() != self.end_offset + 1:
            return True
        in_flight = 0 if not self._batches else self.end_offset - self.start_offset + 1
        return in_flight < self.max_in_flight_records

    def next_lock_deadline_ms(self) -> Optional[int]:
        """The earliest acquisition-lock deadline (absolute ms) of any ACQUIRED record, ``None``
        when nothing is acquired: when the actor should next call :meth:`decide_expire_locks`."""
        best: Optional[int] = None
        for b in self._batches:
            runs = b.runs
            if runs is None:
                if b.state == _ACQUIRED and (best is None or b.deadline_ms < best):  # type: ignore[operator]
                    best = b.deadline_ms
            else:
                for s in runs:
                    if s.state == _ACQUIRED and (best is None or s.deadline_ms < best):  # type: ignore[operator]
                        best = s.deadline_ms
        return best

    def record_state(self, offset: int) -> Optional[tuple[RecordState, int, str, Optional[int]]]:
        """``(state, delivery_count, member_id, deadline_ms)`` of a cached offset, ``None`` if the
        offset is not cached."""
        i = bisect_right(self._firsts, offset) - 1
        if i < 0:
            return None
        b = self._batches[i]
        if offset > b.last_offset:
            return None
        s = b if b.runs is None else b.runs[_run_index(b.runs, offset)]
        return (RecordState(s.state), s.delivery_count, s.member_id, s.deadline_ms)

    def cached_batches(self) -> list[InFlightBatch]:
        """The cache in offset order (the live objects: do not mutate them)."""
        return list(self._batches)

    def in_flight_count(self) -> int:
        """Number of ACQUIRED records (an O(batches) scan)."""
        n = 0
        for b in self._batches:
            if b.runs is None:
                if b.state == _ACQUIRED:
                    n += b.last_offset - b.first_offset + 1
            else:
                n += sum(r.last - r.first + 1 for r in b.runs if r.state == _ACQUIRED)
        return n

    def snapshot(self) -> tuple:
        """A hashable, comparable value of the whole state (config, offsets, epoch, flag, cache):
        ``replay(events) .snapshot() == live.snapshot()`` is the replay-equality check."""
        return (
            self.group_id,
            self.topic_id,
            self.partition,
            self.delivery_count_limit,
            self.max_in_flight_records,
            self.start_offset,
            self.end_offset,
            self.state_epoch,
            self.find_next_fetch_offset,
            tuple(b.as_tuple() for b in self._batches),
        )

    @classmethod
    def from_snapshot(cls, snap: Sequence) -> "SharePartition":
        """Rebuild a partition from :meth:`snapshot`'s value (also after a JSON round trip, where
        tuples became lists): the inverse of ``snapshot()``, for the actor's state snapshots.
        Raises ``ValueError`` on a malformed value."""
        try:
            group_id, topic_id, partition, dcl, mif, start, end, epoch, flag, batches = snap
            sp = cls(group_id, topic_id, int(partition), delivery_count_limit=int(dcl), max_in_flight_records=int(mif))
            sp.start_offset, sp.end_offset, sp.state_epoch, sp.find_next_fetch_offset = int(start), int(end), int(epoch), bool(flag)
            for first, last, bstate, offsets in batches:
                if offsets is None:
                    st_, dc, mem, dl = bstate
                    b = InFlightBatch(int(first), int(last), int(st_), int(dc), str(mem), None if dl is None else int(dl))
                else:
                    b = InFlightBatch(int(first), int(last), _AVAILABLE, 0, EMPTY_MEMBER_ID, None)
                    per = sorted((int(o), (int(st_), int(dc), str(mem), None if dl is None else int(dl))) for o, (st_, dc, mem, dl) in offsets)
                    if [o for o, _ in per] != list(range(b.first_offset, b.last_offset + 1)):
                        raise ValueError(f"exploded batch {first}-{last} does not cover its offsets")
                    runs: list[_Run] = []
                    for o, t in per:
                        if runs and (runs[-1].state, runs[-1].delivery_count, runs[-1].member_id, runs[-1].deadline_ms) == t:
                            runs[-1].last = o
                        else:
                            runs.append(_Run(o, o, *t))
                    b.runs = runs
                if sp._firsts and b.first_offset <= sp._batches[-1].last_offset:
                    raise ValueError("batches overlap or are out of order")
                sp._batches.append(b)
                sp._firsts.append(b.first_offset)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"not a SharePartition snapshot: {exc}") from exc
        return sp

    def state_batches(self) -> list[tuple[int, int, int, int]]:
        """The cache as Kafka's persister state batches ``(first, last, state, delivery count)``,
        contiguous equal runs merged. ACQUIRED records are written as AVAILABLE with the delivery
        count they had before this acquisition: Kafka never persists an acquisition (only the
        acknowledgement, release or timeout that ends it), so after a restart the in-flight
        delivery did not happen. For the share coordinator's write."""
        out: list[list[int]] = []

        def add(first: int, last: int, state: int, dc: int) -> None:
            if state == _ACQUIRED:
                state = _AVAILABLE
                dc = max(dc - 1, 0)
            if out and out[-1][1] + 1 == first and out[-1][2] == state and out[-1][3] == dc:
                out[-1][1] = last
            else:
                out.append([first, last, state, dc])

        for b in self._batches:
            if b.runs is None:
                add(b.first_offset, b.last_offset, b.state, b.delivery_count)
            else:
                for r in b.runs:
                    add(r.first, r.last, r.state, r.delivery_count)
        return [tuple(x) for x in out]  # type: ignore[misc]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SharePartition) and self.snapshot() == other.snapshot()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"SharePartition({self.group_id}:{self.topic_id}:{self.partition}, start={self.start_offset}, "
            f"end={self.end_offset}, batches={self._batches!r})"
        )

    # ------------------------------------------------------------------ helpers

    def _floor_index(self, offset: int) -> int:
        return bisect_right(self._firsts, offset) - 1

    def _ids(self) -> tuple[str, str, int]:
        return (self.group_id, self.topic_id, self.partition)

    # ------------------------------------------------------------------ deciders

    def decide_initialize(
        self, start_offset: int, state_epoch: int = 0, state_batches: Sequence[tuple[int, int, int, int]] = ()
    ) -> list[DomainEvent]:
        """Decide the (re)initialisation from the share coordinator's read (Kafka ``maybeInitialize``).

        ``start_offset`` ≥ 0 is the persisted SPSO or — when the coordinator had none (-1) — the
        offset the caller resolved with ``share.auto.offset.reset`` (earliest → log start offset,
        latest → log end offset, by_duration → the offset for ``now - duration``; see
        :func:`resolve_auto_offset_reset`). ``state_batches`` are ``(first, last, state, delivery
        count)`` with state 0/2/4 (1 ACQUIRED is read as AVAILABLE), ascending, non-overlapping;
        an AVAILABLE batch already at the delivery-count limit is initialised ARCHIVED (so the
        limit holds even after it was lowered).
        Returns ``[SharePartitionInitialized]``. Raises ``ShareError(INVALID_REQUEST)`` for a
        negative start offset, a batch below the start offset (Kafka fails the partition with
        IllegalStateException), overlapping batches or an unknown state.
        """
        if start_offset < 0:
            raise ShareError(INVALID_REQUEST, f"start offset {start_offset} must be resolved (>= 0) before initialisation")
        batches: list[tuple[int, int, int, int]] = []
        prev_last = None
        for first, last, state, dc in state_batches:
            if first > last or first < start_offset or (prev_last is not None and first <= prev_last):
                raise ShareError(
                    INVALID_REQUEST, f"invalid persisted state batch {first}-{last} for start offset {start_offset}"
                )
            if state not in (_AVAILABLE, _ACQUIRED, _ACKNOWLEDGED, _ARCHIVED) or dc < 0:
                raise ShareError(INVALID_REQUEST, f"invalid persisted state {state} / delivery count {dc}")
            state = _AVAILABLE if state == _ACQUIRED else int(state)
            if state == _AVAILABLE and dc >= self.delivery_count_limit:
                state = _ARCHIVED  # delivered as often as allowed (e.g. the limit was lowered)
            batches.append((int(first), int(last), state, int(dc)))
            prev_last = last
        ev = SharePartitionInitialized(
            *self._ids(),
            start_offset=start_offset,
            state_epoch=state_epoch,
            delivery_count_limit=self.delivery_count_limit,
            max_in_flight_records=self.max_in_flight_records,
            state_batches=tuple(batches),
        )
        after = self._shallow_clone()
        after._apply_initialized(ev)  # replaces the batch list: nothing of ``self`` is touched
        evicted: Optional[int] = None
        if batches:
            if not after._batches:
                evicted = batches[-1][1] + 1
            elif after._firsts[0] != batches[0][0]:
                evicted = after._firsts[0]
        return [self._decided_as(replace(ev, start_offset_after=after.start_offset, end_offset_after=after.end_offset, evicted_below=evicted), after)]

    def decide_acquire(
        self,
        member_id: str,
        fetched_batches: Sequence[tuple[int, int]],
        max_records: int,
        now_ms: int,
        lock_duration_ms: int,
        fetch_offset: Optional[int] = None,
        batch_size: Optional[int] = None,
    ) -> tuple[list[DomainEvent], list[AcquiredRecords]]:
        """Decide which records ``member_id`` acquires from the log batches just read (Kafka ``acquire``).

        ``fetched_batches`` are the log's record batches ``(base_offset, last_offset)`` (inclusive,
        ascending) read from :meth:`next_fetch_offset`; offsets without records inside a batch
        (compaction, control records) are acquired and counted too — the client acknowledges them
        with GAP. ``max_records`` is the soft limit (``MaxRecords`` / ``share.fetch.max.fetch.records``):
        a new in-flight batch is cut at the end of the *log batch* containing the limit, so it may
        deliver more. ``lock_duration_ms`` is ``share.record.lock.duration.ms`` (group config) or
        ``group.share.record.lock.duration.ms``; locks expire at ``now_ms + lock_duration_ms``.

        The number acquired is also capped by the in-flight capacity
        (``max_in_flight_records - (end - start + 1)``, Kafka 4.2); when that is exhausted only
        re-deliveries inside the cache, at most ``end - fetch_offset + 1`` of them and none past
        the end offset, are acquired. ``fetch_offset`` is the offset the log was read from
        (default :meth:`next_fetch_offset`; Kafka takes it from the fetch, never recomputes it):
        AVAILABLE cached records between it and the first fetched batch no longer exist in the
        log (compaction) and are archived (Kafka 4.2 ``maybeArchiveStaleBatches``). ``batch_size`` is ShareFetch
        v1+'s ``BatchSize``: new records are split into in-flight batches of about that many records
        at log-batch boundaries (Kafka 4.2 ``createBatches``, batch-optimized mode); ``None``: one
        in-flight batch per acquisition.

        Returns ``(events, acquired)``: ``[RecordsAcquired]`` (or ``[]`` when nothing could be
        acquired — ``max_records <= 0``, no batches, no capacity, nothing AVAILABLE) and the
        response's ``AcquiredRecords`` with the new delivery counts. Never raises.
        """
        ev, acquired = self._acquire_request(
            member_id, fetched_batches, max_records, now_ms, lock_duration_ms, fetch_offset, batch_size
        )
        if ev is None:
            return [], []
        return [self._with_outcome(ev, ev.ranges + ev.stale_ranges, evicts=False)], acquired

    def _acquire_request(
        self,
        member_id: str,
        fetched_batches: Sequence[tuple[int, int]],
        max_records: int,
        now_ms: int,
        lock_duration_ms: int,
        fetch_offset: Optional[int],
        batch_size: Optional[int],
    ) -> tuple[Optional[RecordsAcquired], list[AcquiredRecords]]:
        """:meth:`decide_acquire` without the outcome: ``(RecordsAcquired | None, acquired)``."""
        if max_records <= 0 or not fetched_batches:
            return None, []
        req_first = fetched_batches[0][0]
        req_last = fetched_batches[-1][1]
        batches = self._batches
        firsts = self._firsts
        # Kafka 4.2 lastOffsetAndMaxRecordsToAcquire: never acquire past the in-flight capacity,
        # except re-deliveries inside the cache (then up to the end offset only).
        end = self.end_offset
        in_flight = end - self.start_offset + 1 if batches else 0
        cap = min(max_records, self.max_in_flight_records - in_flight)
        if fetch_offset is None:
            fetch_offset = self.next_fetch_offset()
        if cap <= 0:
            if fetch_offset > end:
                return None, []
            cap = min(max_records, end - fetch_offset + 1)
            req_last = min(req_last, end)
            if req_last < req_first:
                return None, []
        max_records = cap
        i = bisect_right(firsts, req_first) - 1
        if i >= 0 and batches[i].last_offset >= req_first:
            lo = i
        else:
            lo = i + 1
        hi = bisect_right(firsts, req_last)
        ranges: list[tuple[int, int]] = []
        acquired: list[AcquiredRecords] = []
        if lo >= hi:
            first = req_first
            if not batches and self.end_offset > first:
                first = self.end_offset
            # never hand out records below the start offset (Kafka can, after an LSO move)
            first = max(first, self.start_offset)
            self._new_batch(fetched_batches, first, req_last, max_records, ranges, acquired, batch_size)
        else:
            count = 0
            for b in batches[lo:hi]:
                if count >= max_records:
                    break
                runs = b.runs
                if runs is None and b.first_offset >= req_first and b.last_offset <= req_last:
                    if b.state == _AVAILABLE:
                        ranges.append((b.first_offset, b.last_offset))
                        acquired.append(AcquiredRecords(b.first_offset, b.last_offset, b.delivery_count + 1))
                        count += b.last_offset - b.first_offset + 1
                    continue
                if runs is None:
                    if b.state != _AVAILABLE:
                        continue
                    f = max(b.first_offset, req_first)
                    l_ = min(b.last_offset, req_last)
                    if f <= l_:
                        ranges.append((f, l_))
                        acquired.append(AcquiredRecords(f, l_, b.delivery_count + 1))
                        count += l_ - f + 1
                    continue
                f = max(b.first_offset, req_first)
                l_ = min(b.last_offset, req_last)
                here: list[tuple[int, int]] = []  # AVAILABLE runs of this batch, contiguous ones merged
                ri = bisect_right(runs, f, key=_FIRST) - 1 if f <= l_ else len(runs)
                nr = len(runs)
                b_first = b.first_offset
                while ri < nr:
                    r = runs[ri]
                    ri += 1
                    a = r.first
                    if a > l_:
                        break
                    if r.state != _AVAILABLE:
                        continue
                    if a < f:
                        a = f
                    z = r.last
                    if z > l_:
                        z = l_
                    count += z - a + 1
                    if here and here[-1][1] + 1 == a:
                        here[-1] = (here[-1][0], z)
                    else:
                        here.append((a, z))
                    # the response: contiguous runs with equal (new) delivery counts, within the batch
                    dc = r.delivery_count + 1
                    if acquired:
                        prev = acquired[-1]
                        if prev.last_offset + 1 == a and prev.delivery_count == dc and prev.first_offset >= b_first:
                            acquired[-1] = _new_acquired(prev.first_offset, z, dc)
                            continue
                    acquired.append(_new_acquired(a, z, dc))
                ranges.extend(here)
            last_cached = batches[hi - 1].last_offset
            if count < max_records and req_last > last_cached:
                self._new_batch(
                    fetched_batches,
                    max(last_cached + 1, self.start_offset),
                    req_last,
                    max_records - count,
                    ranges,
                    acquired,
                    batch_size,
                )
        stale: tuple[tuple[int, int], ...] = ()
        if batches and fetch_offset < req_first:
            stale = self._stale_available_ranges(fetch_offset, req_first - 1)
        if not ranges and not stale:
            return None, []
        return (
            RecordsAcquired(
                *self._ids(),
                member_id=member_id,
                ranges=tuple(ranges),
                lock_deadline_ms=now_ms + lock_duration_ms,
                stale_ranges=stale,
            ),
            acquired,
        )

    def _stale_available_ranges(self, first: int, last: int) -> tuple[tuple[int, int], ...]:
        """AVAILABLE runs within [first, last], per cached batch (never merged across batches)."""
        out: list[tuple[int, int]] = []
        batches = self._batches
        i = bisect_right(self._firsts, first) - 1
        if i < 0 or batches[i].last_offset < first:
            i += 1
        while i < len(batches) and batches[i].first_offset <= last:
            b = batches[i]
            f, l_ = max(b.first_offset, first), min(b.last_offset, last)
            if b.runs is None:
                if b.state == _AVAILABLE:
                    out.append((f, l_))
            else:
                here: list[tuple[int, int]] = []
                for r in _runs_in(b.runs, f, l_):
                    if r.state == _AVAILABLE:
                        a, z = max(r.first, f), min(r.last, l_)
                        if here and here[-1][1] + 1 == a:
                            here[-1] = (here[-1][0], z)
                        else:
                            here.append((a, z))
                out.extend(here)
            i += 1
        return tuple(out)

    @staticmethod
    def _new_batch(
        fetched: Sequence[tuple[int, int]],
        first: int,
        last: int,
        max_records: int,
        ranges: list[tuple[int, int]],
        acquired: list[AcquiredRecords],
        batch_size: Optional[int] = None,
    ) -> None:
        # Kafka acquireNewBatchRecords + lastOffsetFromBatchWithRequestOffset (the soft limit)
        # + createBatches (split at log-batch boundaries every ``batch_size`` records).
        if first > last:
            return
        if max_records < last - first + 1:
            target = first + max_records - 1
            prev = None
            for fb in fetched:
                if target >= fb[0]:
                    prev = fb
                    continue
                break
            last = prev[1] if prev is not None and target <= prev[1] else target
        current = first
        if batch_size is not None and batch_size > 0 and last - first + 1 > batch_size:
            for base, _ in fetched:
                if base > last:
                    break
                if base - current >= batch_size:
                    ranges.append((current, base - 1))
                    acquired.append(AcquiredRecords(current, base - 1, 1))
                    current = base
        ranges.append((current, last))
        acquired.append(AcquiredRecords(current, last, 1))

    def decide_acknowledge(
        self,
        member_id: str,
        batches: Sequence[tuple[int, int, Sequence[int]]],
        now_ms: int = 0,
        lock_duration_ms: Optional[int] = None,
    ) -> list[DomainEvent]:
        """Decide one acknowledgement request of ``member_id`` on this partition (Kafka ``acknowledge``).

        ``batches`` are ``(first_offset, last_offset, types)`` (inclusive), ``types`` one
        :class:`AcknowledgeType` id for the whole range or one per offset: ACCEPT → ACKNOWLEDGED,
        RELEASE → AVAILABLE (ARCHIVED at the delivery-count limit), REJECT and GAP → ARCHIVED,
        RENEW → stays ACQUIRED with the lock extended to ``now_ms + lock_duration_ms`` (Kafka 4.2).
        Batches wholly below the start offset are ignored.

        All or nothing: returns ``[RecordsAcknowledged]`` when every batch is valid, ``[]`` when
        nothing is to be done, and raises :class:`ShareError` otherwise (no event):
        INVALID_REQUEST for a malformed batch, an unknown type, or offsets past the acquired
        records; INVALID_RECORD_STATE when a record is not ACQUIRED by ``member_id``, the range is
        not cached, or the request touches an offset twice.
        """
        req = self._acknowledge_request(member_id, batches, now_ms, lock_duration_ms)
        if req is None:
            return []
        ev, plan = req
        after = self._clone_indices(plan)
        after._ack_execute(plan, ev.renew_deadline_ms)
        return [self._with_outcome(ev, [(b.first_offset, b.last_offset) for b in ev.batches], evicts=True, after=after)]

    def _acknowledge_request(
        self,
        member_id: str,
        batches: Sequence[tuple[int, int, Sequence[int]]],
        now_ms: int,
        lock_duration_ms: Optional[int],
    ) -> Optional[tuple[RecordsAcknowledged, "_AckPlan"]]:
        """:meth:`decide_acknowledge` without the outcome: ``None`` or the event and its plan (the
        batches it moves whole and the parts of the others, found while validating; see
        :meth:`_ack_execute`); raises the same."""
        if not batches:
            return None
        has_renew = False
        valid = _VALID_ACK_TYPES
        one_type = _ONE_TYPE
        new_ack_batch = _new_ack_batch
        ack_batches = []  # the event's, built while checking the request's form
        for first, last, types in batches:
            n = len(types)
            if first > last or not n or (n > 1 and n != last - first + 1):
                raise ShareError(INVALID_REQUEST, f"malformed acknowledgement batch {first}-{last} with {n} types")
            if n == 1:
                t = types[0]
                if t not in valid:
                    raise ShareError(INVALID_REQUEST, f"invalid acknowledge type {t}")
                if t == _RENEW:
                    has_renew = True
                ack_batches.append(new_ack_batch(int(first), int(last), one_type[t]))
                continue
            if not valid.issuperset(types):
                t = next(t for t in types if t not in valid)
                raise ShareError(INVALID_REQUEST, f"invalid acknowledge type {t}")
            if not has_renew and _RENEW in types:
                has_renew = True
            ack_batches.append(new_ack_batch(int(first), int(last), tuple(map(int, types))))
        if has_renew and lock_duration_ms is None:
            raise ShareError(INVALID_REQUEST, "RENEW needs the record lock duration")
        start = self.start_offset
        cache = self._batches
        firsts = self._firsts
        touched: list[tuple[int, int]] = []
        touched_max = -1  # the highest offset in ``touched``: a range above it overlaps none
        whole: list[tuple[int, int]] = []  # the plan: (batch index, type) moved whole ...
        parts: dict[int, list[tuple[int, int, int]]] = {}  # ... and (first, last, type) per batch index
        whole_touched: set[int] = set()  # batches transitioned whole earlier in this request
        any_touched = False
        for first, last, types in batches:
            if last < start:
                continue
            fi = bisect_right(firsts, first) - 1
            if fi < 0:
                if not (first < start <= last):
                    raise ShareError(INVALID_RECORD_STATE, "Batch record not found. The request batch offsets are not found in the cache.")
                lo = bisect_left(firsts, first)
            else:
                lo = fi
            hi = bisect_right(firsts, last)
            if lo >= hi:
                raise ShareError(INVALID_RECORD_STATE, "Batch record not found. The request batch offsets are not found in the cache.")
            if cache[hi - 1].last_offset < first:
                raise ShareError(INVALID_REQUEST, "The first offset in request is past acquired records.")
            if last > cache[hi - 1].last_offset:
                raise ShareError(INVALID_REQUEST, "The last offset in request is past acquired records.")
            multi = len(types) > 1
            for bi in range(lo, hi):
                b = cache[bi]
                b_first = b.first_offset
                b_last = b.last_offset
                if b_last < start:
                    continue
                # the part of the batch this acknowledgement batch reaches
                t_first = b_first if b_first >= first else first
                if t_first < start:
                    t_first = start
                t_last = b_last if b_last <= last else last
                runs = b.runs
                if runs is None:
                    if b.member_id != member_id or b_first in whole_touched:
                        # (a batch this request already transitioned whole has no owner any more)
                        raise ShareError(INVALID_RECORD_STATE, "Member is not the owner of batch record.")
                    if b.state != _ACQUIRED:
                        raise ShareError(INVALID_RECORD_STATE, "The batch cannot be acknowledged. The state is not acquired.")
                    is_whole = not (first > b_first or last < b_last or multi or b_first < start <= b_last)
                    if is_whole:
                        t_first, t_last = b_first, b_last
                        whole_touched.add(b_first)
                elif t_first <= t_last:
                    is_whole = False
                    ri = bisect_right(runs, t_first, key=_FIRST) - 1
                    while True:
                        r = runs[ri]
                        if r.state != _ACQUIRED:
                            o = r.first if r.first > t_first else t_first
                            raise ShareError(INVALID_RECORD_STATE, f"The record {o} cannot be acknowledged. The state is not acquired.")
                        if r.member_id != member_id:
                            o = r.first if r.first > t_first else t_first
                            raise ShareError(INVALID_RECORD_STATE, f"Member is not the owner of record {o}.")
                        if r.last >= t_last:
                            break
                        ri += 1
                if t_first > t_last:
                    continue
                if t_first <= touched_max:  # out of order: check every earlier range (rare)
                    for a, z in touched:
                        if a <= t_last and t_first <= z:
                            raise ShareError(INVALID_RECORD_STATE, f"Records {max(a, t_first)}-{min(z, t_last)} are acknowledged twice in one request.")
                if t_last > touched_max:
                    touched_max = t_last
                touched.append((t_first, t_last))
                any_touched = True
                if is_whole:
                    whole.append((bi, types[0]))
                    continue
                got = parts.get(bi)
                if got is None:
                    got = parts[bi] = []
                if not multi:
                    got.append((t_first, t_last, types[0]))
                    continue
                o = t_first  # per-offset types: one part per run of equal types
                for t, same in groupby(types[t_first - first : t_last - first + 1]):
                    n = len(list(same))
                    got.append((o, o + n - 1, t))
                    o += n
        if not any_touched:
            return None
        ev = RecordsAcknowledged(
            *self._ids(),
            member_id=member_id,
            batches=tuple(ack_batches),
            renew_deadline_ms=(now_ms + lock_duration_ms) if has_renew else None,  # type: ignore[operator]
        )
        return ev, (whole, parts)

    def _shallow_clone(self) -> "SharePartition":
        """A copy with its own offsets and batch lists whose batches are still shared."""
        c = SharePartition.__new__(SharePartition)
        for name in SharePartition.__slots__:
            setattr(c, name, getattr(self, name))
        c._batches = list(self._batches)
        c._firsts = list(self._firsts)
        c._decided = None
        return c

    def _decided_as(self, ev: DomainEvent, after: "SharePartition") -> DomainEvent:
        """Remember that applying ``ev`` to this partition, as it is now, gives ``after`` (a
        private copy the decider applied ``ev`` to); returns ``ev``."""
        self._decided = (ev, after, self._version)
        return ev

    def clone(self) -> "SharePartition":
        """An independent copy of the whole state (O(batches + exploded offsets))."""
        c = self._shallow_clone()
        c._batches = [b.copy() for b in self._batches]
        return c

    def _clone_reaching(self, ranges: Iterable[tuple[int, int]]) -> "SharePartition":
        """A copy that applying an event touching only ``ranges`` (inclusive) — and, for an LSO
        move, the batches below it, which callers pass as a range — cannot leak into: the batches
        the ranges reach are copied deeply, the others are shared (they are only read until the
        copy is dropped). O(batches) for the lists, deep copies only of the batches reached."""
        c = self._shallow_clone()
        firsts = self._firsts
        batches = self._batches
        cb = c._batches
        copied_hi = -1  # batches[..copied_hi] already looked at (ranges mostly come ascending)
        copied: set[int] = set()
        for first, last in ranges:
            lo = bisect_right(firsts, first) - 1
            if lo < 0:
                lo = 0
            hi = bisect_right(firsts, last)
            if lo > copied_hi:
                for idx in range(lo, hi):
                    cb[idx] = batches[idx].copy()
                    copied.add(idx)
                copied_hi = hi - 1
                continue
            for idx in range(lo, hi):
                if idx not in copied:
                    cb[idx] = batches[idx].copy()
                    copied.add(idx)
            if hi - 1 > copied_hi:
                copied_hi = hi - 1
        return c

    def _clone_indices(self, plan: "_AckPlan") -> "SharePartition":
        """A copy in which the batches an acknowledgement plan reaches are copied (the others
        shared, as :meth:`_clone_reaching`)."""
        c = self._shallow_clone()
        cb = c._batches
        batches = self._batches
        for i_, _t in plan[0]:
            cb[i_] = batches[i_].copy()
        for i_ in plan[1]:
            cb[i_] = batches[i_].copy()
        return c

    def _clone_for_acknowledgements(self, ack_batches: Sequence[tuple[int, int, Sequence[int]]]) -> "SharePartition":
        """:meth:`_clone_reaching` the ranges of these acknowledgement batches."""
        return self._clone_reaching((first, last) for first, last, _types in ack_batches)

    def _state_ranges(self, ranges: Iterable[tuple[int, int]]) -> tuple[StateRange, ...]:
        """The current state of the cached offsets within ``ranges`` (inclusive; overlapping and
        unordered allowed) as :class:`StateRange` runs: one per non-exploded batch part, runs of
        equal per-offset state inside exploded batches, never across a batch boundary; offsets
        not cached are left out. Ascending, non-overlapping."""
        merged: list[list[int]] = []
        for first, last in sorted(ranges):
            if merged and first <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], last)
            else:
                merged.append([first, last])
        out: list[StateRange] = []
        batches = self._batches
        firsts = self._firsts
        for first, last in merged:
            i = bisect_right(firsts, first) - 1
            if i < 0 or batches[i].last_offset < first:
                i += 1
            while i < len(batches) and batches[i].first_offset <= last:
                b = batches[i]
                f, l_ = max(b.first_offset, first), min(b.last_offset, last)
                runs = b.runs
                if runs is None:
                    out.append(_new_state_range(f, l_, b.state, b.delivery_count, b.member_id or None, b.deadline_ms))
                else:  # runs are maximal (equal neighbours merged), so each is one outcome range
                    ri = bisect_right(runs, f, key=_FIRST) - 1
                    nr = len(runs)
                    while ri < nr:
                        r = runs[ri]
                        a = r.first
                        if a > l_:
                            break
                        z = r.last
                        out.append(_new_state_range(a if a > f else f, z if z < l_ else l_, r.state, r.delivery_count, r.member_id or None, r.deadline_ms))
                        ri += 1
                i += 1
        return tuple(out)

    def _evicted_below(self, after: "SharePartition") -> Optional[int]:
        """What left the cache between ``self`` and ``after`` (the same partition after an event
        that adds no batch: acknowledgement, release, lock timeout): the offset below which every
        cached record was dropped, ``None`` when nothing was (the cache only loses prefixes)."""
        if not self._batches:
            return None
        if not after._batches:
            return self._batches[-1].last_offset + 1
        if after._firsts[0] != self._firsts[0]:
            return after._firsts[0]
        return None

    def _with_outcome(self, ev, touched: Sequence[tuple[int, int]], evicts: bool, after: Optional["SharePartition"] = None):
        """``ev`` (a request-only share-partition event decided on ``self``) with its outcome
        fields: applied to a copy reaching ``touched`` (every range whose state it may change),
        the state of those ranges after it, the start/end offsets after it and — when the event
        kind can shrink the cache (``evicts``) — :meth:`_evicted_below`."""
        if after is None:
            after = self._clone_reaching(touched)
            after.apply(ev)
        final = replace(
            ev,
            outcome=after._state_ranges(touched),
            start_offset_after=after.start_offset,
            end_offset_after=after.end_offset,
            evicted_below=self._evicted_below(after) if evicts else None,
        )
        return self._decided_as(final, after)

    def decide_share_fetch(
        self,
        member_id: str,
        acknowledgements: Sequence[tuple[int, int, Sequence[int]]],
        read_log: Callable[[int], Sequence[tuple[int, int]]],
        max_records: int,
        now_ms: int,
        lock_duration_ms: int,
        batch_size: Optional[int] = None,
    ) -> ShareFetchDecision:
        """Decide one partition of a ShareFetch: its piggybacked ``acknowledgements`` first (as
        :meth:`decide_acknowledge`, all or nothing), then an acquisition (as
        :meth:`decide_acquire`) from the log batches ``read_log(fetch_offset)`` returns, where
        ``fetch_offset`` is the next fetch offset *after* the acknowledgements (released records
        are re-delivered first). ``read_log`` is the caller's data-plane read: it returns the log's
        record batches ``(base_offset, last_offset)`` from that offset on (``[]`` for none); it is
        not called when nothing can be acquired (``max_records <= 0`` or the in-flight limit).

        Returns a :class:`ShareFetchDecision` with at most one event, ``ShareFetchProcessed``
        (the acknowledgements and the acquired ranges together). Never raises for a bad
        acknowledgement: that is reported in ``ack_error`` and the fetch still happens.
        """
        ack_ev: Optional[RecordsAcknowledged] = None
        ack_error: Optional[ShareError] = None
        req = None
        if acknowledgements:
            try:
                req = self._acknowledge_request(member_id, acknowledgements, now_ms, lock_duration_ms)
            except ShareError as err:
                ack_error = err
            if req is not None:
                ack_ev = req[0]
        target = self
        touched: list[tuple[int, int]] = []
        evicted: Optional[int] = None
        if ack_ev is not None:
            touched = [(b.first_offset, b.last_offset) for b in ack_ev.batches]
            target = self._clone_indices(req[1])  # type: ignore[index]
            target._ack_execute(req[1], ack_ev.renew_deadline_ms)  # type: ignore[index]
            evicted = self._evicted_below(target)  # the acquisition below never shrinks the cache
        fetch_offset: Optional[int] = None
        acquired: list[AcquiredRecords] = []
        ranges: tuple[tuple[int, int], ...] = ()
        stale: tuple[tuple[int, int], ...] = ()
        if max_records > 0 and target.can_acquire_records():
            fetch_offset = target.next_fetch_offset()
            fetched = read_log(fetch_offset)
            acq_ev, acquired = target._acquire_request(
                member_id, fetched, max_records, now_ms, lock_duration_ms, fetch_offset, batch_size
            )
            if acq_ev is not None:
                ranges = acq_ev.ranges
                stale = acq_ev.stale_ranges
        if ack_ev is None and not ranges and not stale:
            return ShareFetchDecision([], [], ack_error, fetch_offset)
        ev = ShareFetchProcessed(
            *self._ids(),
            member_id=member_id,
            acknowledgements=ack_ev.batches if ack_ev is not None else (),
            renew_deadline_ms=ack_ev.renew_deadline_ms if ack_ev is not None else None,
            ranges=ranges,
            lock_deadline_ms=now_ms + lock_duration_ms,
            stale_ranges=stale,
        )
        after = target
        if ranges or stale:
            after = target._clone_reaching(ranges + stale)
            after._apply_acquired(ev)
        touched.extend(ranges + stale)
        ev = replace(
            ev,
            outcome=after._state_ranges(touched),
            start_offset_after=after.start_offset,
            end_offset_after=after.end_offset,
            evicted_below=evicted,
        )
        return ShareFetchDecision([self._decided_as(ev, after)], acquired, ack_error, fetch_offset)

    def decide_expire_locks(self, now_ms: int) -> list[DomainEvent]:
        """Decide the acquisition-lock timeouts due at ``now_ms`` (absolute ms): every ACQUIRED
        record whose deadline ≤ ``now_ms`` (Kafka's timer firing ``releaseAcquisitionLockOnTimeout``).
        Returns ``[AcquisitionLocksExpired]`` or ``[]``. The actor drives time: call it when
        :meth:`next_lock_deadline_ms` has passed."""
        ranges: list[tuple[int, int]] = []
        for b in self._batches:
            runs = b.runs
            if runs is None:
                if b.state == _ACQUIRED and b.deadline_ms <= now_ms:  # type: ignore[operator]
                    ranges.append((b.first_offset, b.last_offset))
            else:
                ranges.extend(_merged((r.first, r.last) for r in runs if r.state == _ACQUIRED and r.deadline_ms <= now_ms))  # type: ignore[operator]
        if not ranges:
            return []
        ev = AcquisitionLocksExpired(*self._ids(), now_ms=now_ms, ranges=tuple(ranges))
        return [self._with_outcome(ev, ranges, evicts=True)]

    def decide_release_member(self, member_id: str, *, decrement_delivery_count: bool = False) -> list[DomainEvent]:
        """Decide the release of every record ``member_id`` holds (Kafka ``releaseAcquiredRecords``,
        reached when its share session closes with the final epoch or it leaves the group).

        ACQUIRED records of the member become AVAILABLE, or ARCHIVED below the start offset or at
        the delivery-count limit (the late-2024 semantics the §6 scenarios test). With
        ``decrement_delivery_count=True`` it follows Kafka 4.2 instead (``DeliveryCountOps.DECREASE``:
        the records were acquired but not delivered, so their delivery count drops by one and the
        limit does not archive them; below the start offset they are still ARCHIVED). As in Kafka,
        within an exploded batch the scan stops at the first record acquired by another member.
        Returns ``[MemberRecordsReleased]`` or ``[]``.
        """
        ranges: list[tuple[int, int]] = []
        for b in self._batches:
            runs = b.runs
            if runs is None:
                if b.state == _ACQUIRED and b.member_id == member_id:
                    ranges.append((b.first_offset, b.last_offset))
                continue
            mine: list[tuple[int, int]] = []
            for r in runs:
                if r.state == _ACQUIRED:
                    if r.member_id != member_id:
                        break
                    mine.append((r.first, r.last))
            ranges.extend(_merged(mine))
        if not ranges:
            return []
        ev = MemberRecordsReleased(
            *self._ids(), member_id=member_id, ranges=tuple(ranges), delivery_count_decremented=decrement_delivery_count
        )
        return [self._with_outcome(ev, ranges, evicts=True)]

    def decide_update_log_start_offset(self, log_start_offset: int) -> list[DomainEvent]:
        """Decide the effect of the log start offset moving to ``log_start_offset`` (Kafka
        ``updateCacheAndOffsets``, on OFFSET_OUT_OF_RANGE or retention). Returns
        ``[LogStartOffsetMoved]`` when it is beyond the start offset, else ``[]``."""
        if log_start_offset <= self.start_offset:
            return []
        ev = LogStartOffsetMoved(*self._ids(), log_start_offset=log_start_offset)
        # the records it can archive: every cached one below the new log start offset
        below = [(self._batches[0].first_offset, log_start_offset - 1)] if self._batches and self._batches[0].first_offset < log_start_offset else []
        return [self._with_outcome(ev, below, evicts=False)]

    # ------------------------------------------------------------------ evolve

    def apply(self, event: DomainEvent) -> "SharePartition":
        """Evolve: apply one share-partition event in place and return ``self``.

        Raises ``TypeError`` for an event of another kind and ``ValueError`` for an event of
        another share-partition. Applying events produced by this partition's deciders, in order,
        reproduces the decided state exactly.
        """
        if (event.group_id, event.topic_id, event.partition) != (self.group_id, self.topic_id, self.partition):  # type: ignore[attr-defined]
            raise ValueError(f"event for another share-partition: {event!r}")
        decided = self._decided
        if decided is not None:
            self._decided = None
            if decided[0] is event and decided[2] == self._version:
                # the event this partition just decided, on the state it was decided on: take
                # the state the decider computed by applying it (same rules, same result)
                after = decided[1]
                self.delivery_count_limit = after.delivery_count_limit
                self.max_in_flight_records = after.max_in_flight_records
                self.start_offset = after.start_offset
                self.end_offset = after.end_offset
                self.state_epoch = after.state_epoch
                self.find_next_fetch_offset = after.find_next_fetch_offset
                self._batches = after._batches
                self._firsts = after._firsts
                self._version += 1
                return self
        self._version += 1
        kind = type(event)
        if kind is RecordsAcquired:
            self._apply_acquired(event)  # type: ignore[arg-type]
        elif kind is ShareFetchProcessed:
            if event.acknowledgements:  # type: ignore[attr-defined]
                self._apply_acknowledged(event)  # type: ignore[arg-type]
            if event.ranges or event.stale_ranges:  # type: ignore[attr-defined]
                self._apply_acquired(event)  # type: ignore[arg-type]
        elif kind is RecordsAcknowledged:
            self._apply_acknowledged(event)  # type: ignore[arg-type]
        elif kind is AcquisitionLocksExpired:
            self._apply_released(event.ranges)  # type: ignore[attr-defined]
        elif kind is MemberRecordsReleased:
            self._apply_released(event.ranges, event.delivery_count_decremented)  # type: ignore[attr-defined]
        elif kind is LogStartOffsetMoved:
            self._apply_lso(event.log_start_offset)  # type: ignore[attr-defined]
        elif kind is SharePartitionInitialized:
            self._apply_initialized(event)  # type: ignore[arg-type]
        else:
            raise TypeError(f"not a share-partition event: {kind.__name__}")
        return self

    def _apply_initialized(self, ev: SharePartitionInitialized) -> None:
        self.delivery_count_limit = ev.delivery_count_limit
        self.max_in_flight_records = ev.max_in_flight_records
        self.start_offset = ev.start_offset
        self.state_epoch = ev.state_epoch
        self._batches = [InFlightBatch(f, l_, st, dc, EMPTY_MEMBER_ID, None) for f, l_, st, dc in ev.state_batches]
        self._firsts = [b.first_offset for b in self._batches]
        if self._batches:
            self.find_next_fetch_offset = True
            self.end_offset = self._batches[-1].last_offset
            self._maybe_update_cached_state_and_offsets()
        else:
            self.find_next_fetch_offset = False
            self.end_offset = ev.start_offset

    def _archive_available(self, ranges: Sequence[tuple[int, int]]) -> None:
        """Archive the AVAILABLE records of ``ranges`` (each inside one cached batch): a whole
        non-exploded batch at once, else per offset (Kafka ``archiveRecords``)."""
        batches = self._batches
        firsts = self._firsts
        parts: dict[int, tuple[InFlightBatch, list]] = {}
        for first, last in ranges:
            i = bisect_right(firsts, first) - 1
            if i < 0:
                continue
            b = batches[i]
            if b.runs is None:
                if b.state != _AVAILABLE:
                    continue
                if first == b.first_offset and last == b.last_offset:
                    b.state = _ARCHIVED
                    continue
                b.explode()
            parts.setdefault(id(b), (b, []))[1].append((first, min(last, b.last_offset), None))
        for b, got in parts.values():
            got.sort()
            b.runs = _rebuild_runs(b.runs, got, _AVAILABLE, _archive_run)[0]  # type: ignore[arg-type]

    def _apply_acquired(self, ev) -> None:
        if getattr(ev, "stale_ranges", ()):
            # Kafka archives them and only flags the next fetch offset for recomputation; the start
            # offset moves over them at the next acknowledgement / release / timeout.
            self._archive_available(ev.stale_ranges)
        member = ev.member_id
        deadline = ev.lock_deadline_ms
        batches = self._batches
        firsts = self._firsts
        parts: dict[int, tuple[InFlightBatch, list]] = {}  # exploded batches: their acquired parts
        for first, last in ev.ranges:
            i = bisect_right(firsts, first) - 1
            if i >= 0 and batches[i].last_offset >= first:
                b = batches[i]
                if b.runs is None and first == b.first_offset and last == b.last_offset:
                    b.state = _ACQUIRED
                    b.delivery_count += 1
                    b.member_id = member
                    b.deadline_ms = deadline
                else:
                    b.explode()
                    got = parts.get(id(b))
                    if got is None:
                        got = parts[id(b)] = (b, [])
                    got[1].append((first, last if last < b.last_offset else b.last_offset, None))
            else:
                was_empty = not batches
                nb = InFlightBatch(first, last, _ACQUIRED, 1, member, deadline)
                if i + 1 == len(batches):
                    batches.append(nb)
                    firsts.append(first)
                else:
                    batches.insert(i + 1, nb)
                    firsts.insert(i + 1, first)
                if was_empty:
                    self.start_offset = max(self.start_offset, first)
                self.end_offset = max(self.end_offset, last)  # a batch filling a hole keeps the end
        if parts:

            def acquire(r: _Run, _arg: object) -> bool:
                r.state = _ACQUIRED
                r.delivery_count += 1
                r.member_id = member
                r.deadline_ms = deadline
                return False

            for b, got in parts.values():
                got.sort()
                b.runs = _rebuild_runs(b.runs, got, _AVAILABLE, acquire)[0]  # type: ignore[arg-type]

    def _ack_transition(self, s: InFlightState, t: int, renew_deadline: Optional[int]) -> bool:
        """Apply acknowledge type ``t`` to an ACQUIRED state; True if it became AVAILABLE."""
        if t == _RENEW:
            s.deadline_ms = renew_deadline
            return False
        became_available = False
        if t == 1:
            s.state = _ACKNOWLEDGED
        elif t == 2:
            if s.delivery_count >= self.delivery_count_limit:
                s.state = _ARCHIVED
            else:
                s.state = _AVAILABLE
                became_available = True
        else:
            s.state = _ARCHIVED
        s.member_id = EMPTY_MEMBER_ID
        s.deadline_ms = None
        return became_available

    def _apply_acknowledged(self, ev) -> None:
        # Kafka acknowledge: a batch covered whole by one single-type acknowledgement batch moves
        # whole; otherwise it is exploded and each ACQUIRED offset in the acknowledged ranges
        # moves. The parts each batch gets are collected first and the batch's runs rebuilt in
        # one pass (:meth:`_ack_runs`): O(runs + parts) per batch, not O(parts × log runs).
        ack_batches = ev.batches if type(ev) is RecordsAcknowledged else ev.acknowledgements
        start = self.start_offset
        cache = self._batches
        firsts = self._firsts
        ncache = len(cache)
        renew_deadline = ev.renew_deadline_ms
        released = False
        parts: dict[int, list[tuple[int, int, int]]] = {}  # batch index -> (first, last, type)
        for ab in ack_batches:
            if type(ab) is AckBatch:
                first, last, types = ab.first_offset, ab.last_offset, ab.acknowledge_types
            else:
                first, last, types = ab
            if last < start:
                continue
            fi = bisect_right(firsts, first) - 1
            idx = fi if fi >= 0 else bisect_left(firsts, first)
            multi = len(types) > 1
            t0 = types[0]
            while idx < ncache:
                b = cache[idx]
                b_first = b.first_offset
                if b_first > last:
                    break
                i_ = idx
                idx += 1
                b_last = b.last_offset
                if b_last < start or b_last < first:
                    continue
                if b.runs is None and i_ not in parts:
                    if not (first > b_first or last < b_last or multi or b_first < start <= b_last):
                        if b.state == _ACQUIRED and self._ack_transition(b, t0, renew_deadline):
                            released = True
                        continue
                    if b.state != _ACQUIRED:
                        continue
                a = b_first if b_first >= first else first
                if a < start:
                    a = start
                z = b_last if b_last <= last else last
                if a > z:
                    continue
                got = parts.get(i_)
                if got is None:
                    got = parts[i_] = []
                if not multi:
                    got.append((a, z, t0))
                    continue
                o = a  # per-offset types: one part per run of equal types
                for t, same in groupby(types[a - first : z - first + 1]):
                    n = len(list(same))
                    got.append((o, o + n - 1, t))
                    o += n
        for i_, got in parts.items():
            if self._ack_runs(cache[i_], got, renew_deadline):
                released = True
        if released:
            self.find_next_fetch_offset = True
        self._maybe_update_cached_state_and_offsets()

    def _ack_execute(self, plan: "_AckPlan", renew_deadline: Optional[int]) -> None:
        """Apply a validated acknowledgement's plan (from :meth:`_acknowledge_request`, on this
        state or a copy of it): what :meth:`_apply_acknowledged` does with the event, without
        walking its batches again."""
        whole, parts = plan
        cache = self._batches
        released = False
        for i_, t in whole:
            b = cache[i_]
            if b.state == _ACQUIRED and self._ack_transition(b, t, renew_deadline):
                released = True
        for i_, got in parts.items():
            if self._ack_runs(cache[i_], list(got), renew_deadline):
                released = True
        if released:
            self.find_next_fetch_offset = True
        self._maybe_update_cached_state_and_offsets()

    def _ack_runs(self, b: InFlightBatch, parts: list[tuple[int, int, int]], renew_deadline: Optional[int]) -> bool:
        """Explode ``b`` if needed and apply the acknowledgement ``parts`` (disjoint ``(first, last,
        type)`` inside ``b``) to its ACQUIRED offsets, rebuilding the runs in one merge pass
        (equal neighbours merged). Same transitions as :meth:`_ack_transition`. Returns whether a
        record became AVAILABLE."""
        old = b.explode()
        parts.sort()
        limit = self.delivery_count_limit
        new: list[_Run] = []
        released = False
        np_ = len(parts)
        pi = 0

        def emit(a: int, z: int, st: int, dc: int, mem: str, dl: Optional[int]) -> None:
            if new:
                p = new[-1]
                if p.state == st and p.delivery_count == dc and p.member_id == mem and p.deadline_ms == dl:
                    new[-1] = _Run(p.first, z, st, dc, mem, dl)  # (runs in a batch are never modified)
                    return
            new.append(_Run(a, z, st, dc, mem, dl))

        for r in old:
            rl = r.last
            st, dc, mem, dl = r.state, r.delivery_count, r.member_id, r.deadline_ms
            if pi >= np_ or parts[pi][0] > rl:  # untouched: reuse the run
                if new:
                    p = new[-1]
                    if p.state == st and p.delivery_count == dc and p.member_id == mem and p.deadline_ms == dl:
                        new[-1] = _Run(p.first, rl, st, dc, mem, dl)
                        continue
                new.append(r)
                continue
            pos = r.first
            while pi < np_:
                a, z, t = parts[pi]
                if a > rl:
                    break
                if a > pos:
                    emit(pos, a - 1, st, dc, mem, dl)
                elif a < pos:
                    a = pos
                zz = z if z < rl else rl
                if zz < a:  # (only when parts overlap: already done)
                    pass
                elif st != _ACQUIRED:
                    emit(a, zz, st, dc, mem, dl)
                elif t == _RENEW:
                    emit(a, zz, st, dc, mem, renew_deadline)
                elif t == 1:
                    emit(a, zz, _ACKNOWLEDGED, dc, EMPTY_MEMBER_ID, None)
                elif t == 2 and dc < limit:
                    emit(a, zz, _AVAILABLE, dc, EMPTY_MEMBER_ID, None)
                    released = True
                else:
                    emit(a, zz, _ARCHIVED, dc, EMPTY_MEMBER_ID, None)
                if zz >= pos:
                    pos = zz + 1
                if z > rl:
                    break  # the part goes on in the next run
                pi += 1
            if pos <= rl:
                emit(pos, rl, st, dc, mem, dl)
        b.runs = new
        return released

    def _release_state(self, s: InFlightState, below_start: bool, decrement: bool = False) -> bool:
        if below_start or (not decrement and s.delivery_count >= self.delivery_count_limit):
            s.state = _ARCHIVED
            became = False
        else:
            s.state = _AVAILABLE
            if decrement:
                s.delivery_count -= 1
            became = True
        s.member_id = EMPTY_MEMBER_ID
        s.deadline_ms = None
        return became

    def _apply_released(self, ranges: Sequence[tuple[int, int]], decrement: bool = False) -> None:
        start = self.start_offset
        cache = self._batches
        firsts = self._firsts
        released = False
        parts: dict[int, tuple[InFlightBatch, list]] = {}  # exploded batches: (first, last, below start)
        for first, last in ranges:
            i = bisect_right(firsts, first) - 1
            if i < 0:
                continue
            b = cache[i]
            if b.runs is None:
                if b.state != _ACQUIRED:
                    continue
                if first == b.first_offset and last == b.last_offset and not (b.first_offset < start <= b.last_offset):
                    if self._release_state(b, b.last_offset < start, decrement):
                        released = True
                    continue
                b.explode()
            got = parts.setdefault(id(b), (b, []))[1]
            last = min(last, b.last_offset)
            if first < start:  # the part below the start offset is archived
                got.append((first, min(last, start - 1), True))
            if last >= start:
                got.append((max(first, start), last, False))
        for b, got in parts.values():
            got.sort()
            b.runs, rel = _rebuild_runs(b.runs, got, _ACQUIRED, lambda s, below: self._release_state(s, below, decrement))  # type: ignore[arg-type]
            if rel:
                released = True
        if released:
            self.find_next_fetch_offset = True
        self._maybe_update_cached_state_and_offsets()

    def _apply_lso(self, lso: int) -> None:
        if lso <= self.start_offset:
            return
        if not self._batches:
            self.start_offset = self.end_offset = lso
            return
        for b in self._batches:
            if b.first_offset >= lso:
                break
            runs = b.runs
            if runs is None:
                if b.state != _AVAILABLE:
                    continue
                if b.last_offset < lso:
                    b.state = _ARCHIVED
                    b.member_id = EMPTY_MEMBER_ID
                    b.deadline_ms = None
                    continue
                runs = b.explode()
            b.runs = _rebuild_runs(runs, [(b.first_offset, min(b.last_offset, lso - 1), None)], _AVAILABLE, _archive_run_clear)[0]
        self.start_offset = lso
        self.end_offset = max(self.end_offset, lso)

    @staticmethod
    def _terminal(state: int) -> bool:
        return state == _ACKNOWLEDGED or state == _ARCHIVED

    def _maybe_update_cached_state_and_offsets(self) -> None:
        # Kafka maybeUpdateCachedStateAndOffsets / canMoveStartOffset / findLastOffsetAcknowledged,
        # with the start and end offsets never moving backwards.
        cache = self._batches
        if not cache:
            return
        start = self.start_offset
        i = bisect_right(self._firsts, start) - 1
        if i < 0:
            return
        e = cache[i]
        eruns = e.runs
        if eruns is None:
            if not self._terminal(e.state):
                return
        elif start <= e.last_offset:
            if not self._terminal(eruns[_run_index(eruns, start)].state):
                return
        else:
            if not all(self._terminal(r.state) for r in eruns):
                return
        last_ack = -1
        done = False
        for b in cache:
            runs = b.runs
            if runs is None:
                if not self._terminal(b.state):
                    break
                last_ack = b.last_offset
            else:
                for r in runs:
                    if not self._terminal(r.state):
                        done = True
                        break
                    last_ack = r.last
                if done:
                    break
        if last_ack == -1:
            return
        last_cached = cache[-1].last_offset
        if last_ack == last_cached:
            self.start_offset = max(self.start_offset, last_cached + 1)
            self.end_offset = max(self.end_offset, self.start_offset)
            cache.clear()
            self._firsts.clear()
            return
        j = bisect_right(self._firsts, last_ack) - 1
        entry = cache[j]
        if last_ack == entry.last_offset:
            self.start_offset = max(self.start_offset, self._firsts[j + 1])
            remove = j + 1
        else:
            self.start_offset = max(self.start_offset, last_ack + 1)
            remove = j
        if remove > 0:
            del cache[:remove]
            del self._firsts[:remove]

    # ------------------------------------------------------------------ decide + apply conveniences

    def _apply_all(self, events: list[DomainEvent]) -> list[DomainEvent]:
        for ev in events:
            self.apply(ev)
        return events

    def initialize(self, start_offset: int, state_epoch: int = 0, state_batches: Sequence[tuple[int, int, int, int]] = ()) -> list[DomainEvent]:
        """:meth:`decide_initialize` then apply; returns the events."""
        return self._apply_all(self.decide_initialize(start_offset, state_epoch, state_batches))

    def acquire(
        self, member_id: str, fetched_batches: Sequence[tuple[int, int]], max_records: int, now_ms: int, lock_duration_ms: int
    ) -> tuple[list[AcquiredRecords], list[DomainEvent]]:
        """:meth:`decide_acquire` then apply; returns ``(acquired, events)``."""
        events, acquired = self.decide_acquire(member_id, fetched_batches, max_records, now_ms, lock_duration_ms)
        self._apply_all(events)
        return acquired, events

    def acknowledge(
        self,
        member_id: str,
        batches: Sequence[tuple[int, int, Sequence[int]]],
        now_ms: int = 0,
        lock_duration_ms: Optional[int] = None,
    ) -> list[DomainEvent]:
        """:meth:`decide_acknowledge` then apply; returns the events; raises :class:`ShareError`."""
        return self._apply_all(self.decide_acknowledge(member_id, batches, now_ms, lock_duration_ms))

    def share_fetch(
        self,
        member_id: str,
        acknowledgements: Sequence[tuple[int, int, Sequence[int]]],
        read_log: Callable[[int], Sequence[tuple[int, int]]],
        max_records: int,
        now_ms: int,
        lock_duration_ms: int,
        batch_size: Optional[int] = None,
    ) -> ShareFetchDecision:
        """:meth:`decide_share_fetch` then apply; returns the decision."""
        d = self.decide_share_fetch(member_id, acknowledgements, read_log, max_records, now_ms, lock_duration_ms, batch_size)
        self._apply_all(d.events)
        return d

    def expire_locks(self, now_ms: int) -> list[DomainEvent]:
        """:meth:`decide_expire_locks` then apply; returns the events."""
        return self._apply_all(self.decide_expire_locks(now_ms))

    def release_member(self, member_id: str, *, decrement_delivery_count: bool = False) -> list[DomainEvent]:
        """:meth:`decide_release_member` then apply; returns the events."""
        return self._apply_all(self.decide_release_member(member_id, decrement_delivery_count=decrement_delivery_count))

    def update_log_start_offset(self, log_start_offset: int) -> list[DomainEvent]:
        """:meth:`decide_update_log_start_offset` then apply; returns the events."""
        return self._apply_all(self.decide_update_log_start_offset(log_start_offset))


def evolve(state: SharePartition, event: DomainEvent) -> SharePartition:
    """The functional ``evolve(state, event) -> state``: applies in place and returns ``state``."""
    return state.apply(event)


def replay(
    events: Iterable[DomainEvent],
    group_id: str,
    topic_id: str,
    partition: int,
    *,
    delivery_count_limit: int = DEFAULT_DELIVERY_COUNT_LIMIT,
    max_in_flight_records: int = DEFAULT_MAX_IN_FLIGHT_RECORDS,
) -> SharePartition:
    """Fold ``events`` (all for this share-partition, in log order) into a fresh
    :class:`SharePartition` built with the same constructor arguments as the live one (a
    :class:`SharePartitionInitialized` event resets the configuration from the event anyway)."""
    sp = SharePartition(
        group_id, topic_id, partition, delivery_count_limit=delivery_count_limit, max_in_flight_records=max_in_flight_records
    )
    for ev in events:
        sp.apply(ev)
    return sp


def resolve_auto_offset_reset(
    strategy: str,
    *,
    log_start_offset: int,
    log_end_offset: int,
    offset_for_duration: Optional[int] = None,
) -> int:
    """The start offset of a share-partition the coordinator has no state for (persisted start
    offset -1), by the group config ``share.auto.offset.reset`` (Kafka 4.x, KIP-932/KAFKA-18014):
    ``"earliest"`` → ``log_start_offset``; ``"latest"`` (default) → ``log_end_offset``;
    ``"by_duration:<ISO-8601 duration>"`` → ``offset_for_duration``, which the caller looked up
    in the log for ``now - duration`` (the log end offset when no record is that recent).
    Raises ``ShareError(INVALID_REQUEST)`` for another strategy or a missing lookup."""
    s = strategy.strip().lower()
    if s == "earliest":
        return log_start_offset
    if s == "latest":
        return log_end_offset
    if s.startswith("by_duration:"):
        if offset_for_duration is None:
            raise ShareError(INVALID_REQUEST, "by_duration needs the offset for the timestamp")
        return max(log_start_offset, min(offset_for_duration, log_end_offset))
    raise ShareError(INVALID_REQUEST, f"unknown share.auto.offset.reset strategy: {strategy!r}")
