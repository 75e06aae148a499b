"""Storage collections with ``since``/``upper`` frontiers and counted read holds (pure).

The model is Materialize's storage controller (reference ``controller.md`` §1, [MZ-2023]
``storage-client/src/controller.rs``, [MZ-new] ``storage_collections.rs``, ``read_policy.rs``)
mapped onto a Kafka-like log (§5):

* A **collection** is a partition log (``<topic_id>:<partition>``), its local tier
  (``<topic_id>:<partition>:local`` when ``remote.storage.enable=true``) or the event log itself
  (``eventlog``). Ids are never reused, even after a drop.
* ``upper`` is the high watermark (exclusive: the next offset to commit); ``since`` is the log
  start offset. Readable offsets are ``[since, upper)``. Both are antichains over offsets, written
  ``int | None`` where ``None`` is the empty antichain ``{}``: a sealed upper, a dropped since.
* **Read holds** are counted per holder and per offset and changed by count deltas (a
  ChangeBatch). The collection's read capabilities are the multiset of every holder's holds plus
  the controller's own *implied capability*, which its **read policy** derives from the upper
  (``lag_writes`` by offsets; ``retention`` by time or bytes, Kafka's segment-deletion rules). The
  since is the meet (minimum) of the capabilities.
* Who holds what in Shoal: the tiering task holds a partition's local tier until a segment is
  copied (holder ``tiering``); replay and audit sessions hold ``eventlog``; share groups hold a
  partition at their SPSO **only** for topics with ``share.groups.hold.retention=true`` (a Shoal
  extension, off by default: Kafka never holds retention back for readers, §5.1 point 3).
* **Compaction** (segment deletion, local deletion after tiering) is allowed only below the since
  (:func:`check_compaction`). **Drop** sets the policy to ``ValidFrom({})``; the collection
  disappears, its since becoming ``{}``, once every other hold has drained (§1.4).
* Materialize *panics* on a negative count, a hold below the since and an unknown id; here
  :func:`decide` returns a :class:`Rejected` and writes no event (§5.1 point 5). Every command is
  validated whole before any event is emitted (all-or-nothing, §5.1 point 6).

What the events record, so that the SQL folds (``projections/domains/controller.py``) need no
replay of this module: every move of the implied capability (``implied`` fields), policies as
canonical JSON text (:func:`policy_to_json`), hold deltas as typed :class:`HoldChange` objects, and
with each new collection its ``transitive_dependencies`` (:func:`transitive_dependencies`). The
since itself is not recorded: it is the least implied capability or holder's hold of the
collection and of everything depending on it, which follows from those facts (and is what
``_settle`` maintains incrementally here).

Performance: :class:`FrontierState` is mutable and :func:`evolve` applies an event **in place**
(the fold owns its state; :meth:`FrontierState.clone` gives an independent copy). The since of a
collection is maintained incrementally; it is recomputed (a ``min`` over the distinct held
offsets) only when the count at the current since drops to zero.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from events.controller import (
    CollectionSpec,
    CollectionsCreated,
    CollectionsDropRequested,
    FrontierUpdate,
    HoldChange,
    PolicyChange,
    ReadHoldsChanged,
    ReadPoliciesSet,
    SegmentInfo,
    WriteFrontiersAdvanced,
    policy_text,
)

__all__ = [
    "AcquireReadHolds",
    "Antichain",
    "ChangeBatch",
    "ChangeReadHolds",
    "Collection",
    "CreateCollections",
    "DeleteRecords",
    "DowngradeReadHold",
    "DropCollections",
    "EVENT_LOG_COLLECTION",
    "EnforceRetention",
    "FrontierState",
    "LagWrites",
    "Multiple",
    "MutableAntichain",
    "NewCollection",
    "NoPolicy",
    "PrepareExport",
    "ReadPolicy",
    "Rejected",
    "ReleaseHolder",
    "Retention",
    "SetReadPolicies",
    "SinceChange",
    "StepBack",
    "UpdateWriteFrontiers",
    "ValidFrom",
    "check_compaction",
    "check_read",
    "decide",
    "evolve",
    "frontier_le",
    "is_readable",
    "join",
    "less_equal",
    "less_than",
    "local_collection_id",
    "meet",
    "partition_collection_id",
    "policy_from_dict",
    "policy_from_json",
    "policy_to_json",
    "transitive_dependencies",
    "snapshot_latest",
]

Frontier = int | None
EMPTY: Frontier = None

#: The collection id of the controller's event log itself.
EVENT_LOG_COLLECTION = "eventlog"
#: Holder-name prefix the model uses for dependency holds (outside holders may not use it).
DEPENDENCY_HOLDER_PREFIX = "collection:"
#: Holder-name prefix of prepared exports (:class:`PrepareExport`).
EXPORT_HOLDER_PREFIX = "export:"
_RESERVED_PREFIXES = (DEPENDENCY_HOLDER_PREFIX, EXPORT_HOLDER_PREFIX)


def partition_collection_id(topic_id: str, partition: int) -> str:
    """The collection id of a partition log: ``"<topic_id>:<partition>"`` (topic id, not name,
    so a re-created topic never reuses a collection, §5)."""
    return f"{topic_id}:{partition}"


def local_collection_id(topic_id: str, partition: int) -> str:
    """The collection id of a partition's local tier (remote-storage topics only):
    ``"<topic_id>:<partition>:local"``; its since is the local log start offset."""
    return f"{topic_id}:{partition}:local"


# --- frontier algebra over offsets (§1.5) ---------------------------------------------------


def less_equal(f: Frontier, t: int) -> bool:
    """``F.less_equal(t)``: is offset ``t`` at or beyond frontier ``f``? False for ``{}``."""
    return f is not None and f <= t


def less_than(f: Frontier, t: int) -> bool:
    """``F.less_than(t)``: strictly beyond. False for ``{}``."""
    return f is not None and f < t


def frontier_le(a: Frontier, b: Frontier) -> bool:
    """Timely's ``PartialOrder`` on antichains: ``A <= B`` iff every element of B is ``>=`` some
    element of A. ``X <= {}`` for every X (``{}`` is the top); ``{} <= {n}`` is false."""
    if b is None:
        return True
    if a is None:
        return False
    return a <= b


def join(a: Frontier, b: Frontier) -> Frontier:
    """The lattice join (later of): ``{max(a, b)}``; joining with ``{}`` gives ``{}``."""
    if a is None or b is None:
        return None
    return a if a >= b else b


def meet(a: Frontier, b: Frontier) -> Frontier:
    """The lattice meet (earlier of): ``{min(a, b)}``; ``X meet {} = X``."""
    if a is None:
        return b
    if b is None:
        return a
    return a if a <= b else b


@dataclass(frozen=True, slots=True)
class Antichain:
    """An antichain over Kafka offsets: ``{n}`` or the empty ``{}`` (``element is None``).

    A readable wrapper over the ``int | None`` frontiers the model stores; ``a <= b`` is the
    frontier partial order, :meth:`join`/:meet` the lattice operations (DD ``Lattice``)."""

    element: int | None

    @classmethod
    def from_elem(cls, t: int) -> "Antichain":
        """``{t}``."""
        return cls(t)

    @classmethod
    def empty(cls) -> "Antichain":
        """``{}``: the top of the lattice (sealed / dropped)."""
        return cls(None)

    @property
    def elements(self) -> tuple[int, ...]:
        """The elements as a tuple (``()`` for ``{}``)."""
        return () if self.element is None else (self.element,)

    def is_empty(self) -> bool:
        """True for the empty antichain / batch."""
        return self.element is None

    def less_equal(self, t: int) -> bool:
        """Is offset ``t`` at or beyond this frontier (false for ``{}``)?"""
        return less_equal(self.element, t)

    def less_than(self, t: int) -> bool:
        """Is offset ``t`` strictly beyond this frontier (false for ``{}``)?"""
        return less_than(self.element, t)

    def __le__(self, other: "Antichain") -> bool:
        return frontier_le(self.element, other.element)

    def __lt__(self, other: "Antichain") -> bool:
        return self != other and self <= other

    def join(self, other: "Antichain") -> "Antichain":
        """The lattice join with ``other`` (later of; ``{}`` absorbs)."""
        return Antichain(join(self.element, other.element))

    def meet(self, other: "Antichain") -> "Antichain":
        """The lattice meet with ``other`` (earlier of; ``{}`` is neutral)."""
        return Antichain(meet(self.element, other.element))

    def insert(self, t: int) -> tuple["Antichain", bool]:
        """Insert ``t``: returns the new antichain and whether it changed (a larger element is a
        no-op, a smaller one evicts the larger, timely's ``Antichain::insert``)."""
        if self.element is None or t < self.element:
            return Antichain(t), True
        return self, False


class ChangeBatch:
    """An additive map offset → count delta that consolidates and drops zeros (timely's
    ``ChangeBatch``)."""

    __slots__ = ("_updates",)

    def __init__(self, updates: Iterable[tuple[int, int]] = ()) -> None:
        self._updates: dict[int, int] = {}
        for t, d in updates:
            self.update(t, d)

    @classmethod
    def new_from(cls, t: int, d: int) -> "ChangeBatch":
        """A batch holding the single change ``(t, d)``."""
        return cls([(t, d)])

    def update(self, t: int, d: int) -> None:
        """Add ``d`` at offset ``t`` (zeros are dropped)."""
        n = self._updates.get(t, 0) + d
        if n:
            self._updates[t] = n
        else:
            self._updates.pop(t, None)

    def extend(self, updates: Iterable[tuple[int, int]]) -> None:
        """Add every ``(t, d)`` of ``updates``."""
        for t, d in updates:
            self.update(t, d)

    def is_empty(self) -> bool:
        """True for the empty antichain / batch."""
        return not self._updates

    def __len__(self) -> int:
        return len(self._updates)

    def items(self) -> list[tuple[int, int]]:
        """The consolidated, non-zero ``(offset, delta)`` pairs in offset order."""
        return sorted(self._updates.items())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChangeBatch) and self._updates == other._updates

    def __repr__(self) -> str:
        return f"ChangeBatch({self.items()!r})"


class MutableAntichain:
    """A multiset of held offsets whose frontier is the least offset with a positive count
    (timely's ``MutableAntichain`` over a total order). The frontier is kept incrementally."""

    __slots__ = ("counts", "frontier")

    def __init__(self, counts: dict[int, int] | None = None) -> None:
        self.counts: dict[int, int] = {t: n for t, n in (counts or {}).items() if n}
        if any(n < 0 for n in self.counts.values()):
            raise ValueError("negative counts")
        self.frontier: int | None = min(self.counts) if self.counts else None

    @classmethod
    def from_elem(cls, t: int) -> "MutableAntichain":
        """The frontier ``{t}`` with count 1."""
        return cls({t: 1})

    def update(self, t: int, d: int) -> None:
        """Add ``d`` at ``t``; raises ``ValueError`` if the count would go negative (callers
        validate first; :func:`decide` never lets this happen)."""
        counts = self.counts
        n = counts.get(t, 0) + d
        if n > 0:
            counts[t] = n
            f = self.frontier
            if f is None or t < f:
                self.frontier = t
        elif n == 0:
            if t in counts:
                del counts[t]
                if t == self.frontier:
                    self.frontier = min(counts) if counts else None
        else:
            raise ValueError(f"update would lead to negative read capabilities at {t}")

    def update_iter(self, changes: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """Apply ``(t, d)`` changes; return the frontier changes (``[(old, -1), (new, +1)]``)."""
        old = self.frontier
        for t, d in changes:
            self.update(t, d)
        new = self.frontier
        if old == new:
            return []
        out: list[tuple[int, int]] = []
        if old is not None:
            out.append((old, -1))
        if new is not None:
            out.append((new, 1))
        return out

    def recompute(self) -> int | None:
        """Recompute the frontier from scratch (``min`` of the held offsets); returns it."""
        self.frontier = min(self.counts) if self.counts else None
        return self.frontier

    def __repr__(self) -> str:
        return f"MutableAntichain({dict(sorted(self.counts.items()))!r})"


# --- read policies (§1.3, read_policy.rs) ---------------------------------------------------


class ReadPolicy:
    """Derives the implied capability from the upper: ``frontier(upper, segments, now_ms)``.
    ``segments`` are the segments reported by the partition log (oldest first, active last), ``now_ms`` the decision
    time. Subclasses are immutable and convert to/from dicts for events."""

    __slots__ = ()
    time_dependent = False

    def frontier(self, upper: Frontier, segments: Sequence[SegmentInfo] = (), now_ms: int = 0) -> Frontier:
        """The implied capability for ``upper`` (offsets; ``None`` = ``{}``), the reported ``segments`` and the decision time ``now_ms``."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able dict form stored in events (inverse: :func:`policy_from_dict`)."""
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.to_dict() == other.to_dict()  # type: ignore[union-attr]

    def __hash__(self) -> int:
        return hash(repr(self.to_dict()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_dict()!r})"


class NoPolicy(ReadPolicy):
    """``NoPolicy{initial_since}``: ``f(U) = initial_since`` (nobody set a policy yet)."""

    __slots__ = ("initial_since",)

    def __init__(self, initial_since: Frontier) -> None:
        self.initial_since = initial_since

    def frontier(self, upper: Frontier, segments: Sequence[SegmentInfo] = (), now_ms: int = 0) -> Frontier:
        """Always ``initial_since``, whatever the upper."""
        return self.initial_since

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "no_policy", "initial_since": since}``."""
        return {"kind": "no_policy", "initial_since": self.initial_since}


class ValidFrom(ReadPolicy):
    """``ValidFrom(F)``: ``f(U) = F`` (manual; Kafka's DeleteRecords; ``ValidFrom({})`` = drop)."""

    __slots__ = ("since",)

    def __init__(self, since: Frontier) -> None:
        self.since = since

    def frontier(self, upper: Frontier, segments: Sequence[SegmentInfo] = (), now_ms: int = 0) -> Frontier:
        """Always the fixed ``since`` (``None`` = ``{}``: drop)."""
        return self.since

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "valid_from", "since": since}`` (``None`` = ``{}``)."""
        return {"kind": "valid_from", "since": self.since}


class StepBack(ReadPolicy):
    """``step_back()``: ``{}`` → ``{0}``, ``{0}`` → ``{0}``, ``{u}`` → ``{u-1}``."""

    __slots__ = ()

    def frontier(self, upper: Frontier, segments: Sequence[SegmentInfo] = (), now_ms: int = 0) -> Frontier:
        """``upper - 1``; ``{0}`` for an upper of ``{0}`` or ``{}``."""
        if upper is None or upper == 0:
            return 0
        return upper - 1

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "step_back"}``."""
        return {"kind": "step_back"}


class LagWrites(ReadPolicy):
    """``lag_writes_by(lag, max_granularity)`` ([MZ-new]): ``{}`` → ``{0}``; ``lag == 0`` →
    ``{u}``; else ``t = max(u - lag, 0)``, ``g = min(lag, max_granularity)`` and ``{t - t % g}``.
    ``max_granularity == 0`` with ``lag > 0`` is guarded (no rounding) where Materialize would
    divide by zero (§1.3 porting hazard). Lags are in offsets."""

    __slots__ = ("lag", "max_granularity")

    def __init__(self, lag: int, max_granularity: int = 1) -> None:
        if lag < 0 or max_granularity < 0:
            raise ValueError("lag and max_granularity must be >= 0")
        self.lag = lag
        self.max_granularity = max_granularity

    def frontier(self, upper: Frontier, segments: Sequence[SegmentInfo] = (), now_ms: int = 0) -> Frontier:
        """``{0}`` for ``{}``; ``{u}`` for lag 0; else ``max(u - lag, 0)`` rounded down to ``min(lag, max_granularity)``."""
        if upper is None:
            return 0
        if self.lag == 0:
            return upper
        t = upper - self.lag if upper > self.lag else 0
        g = min(self.lag, self.max_granularity)
        if g <= 0:
            return t
        return t - t % g

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "lag_writes", "lag": offsets, "max_granularity": offsets}``."""
        return {"kind": "lag_writes", "lag": self.lag, "max_granularity": self.max_granularity}


class Retention(ReadPolicy):
    """Kafka's log retention as a read policy: the since may advance to the end of the longest
    prefix of segments that ``retention.ms`` or ``retention.bytes`` allow deleting
    (``UnifiedLog.deleteRetentionMsBreachedSegments`` / ``deleteRetentionSizeBreachedSegments``):

    * ``segments`` are the log's segments oldest first, the active one included (Kafka's size
      rule compares the whole log's size); only segments entirely below the upper (high
      watermark) are candidates;
    * by time: a segment is deletable while ``now_ms - max_timestamp_ms > retention_ms``
      (``retention_ms < 0``: unlimited);
    * by size: with ``diff = total_bytes - retention_bytes``, a segment is deletable while
      ``diff - size >= 0`` (then ``diff -= size``) (``retention_bytes < 0``: unlimited);
    * the result is the larger of the two prefixes' ends, or the first segment's base offset
      (``0`` with no segments) when nothing is deletable; the controller ignores a result that
      does not advance the implied capability.
    ``delete=False`` (``cleanup.policy=compact`` only) never deletes by retention."""

    __slots__ = ("retention_ms", "retention_bytes", "delete")
    time_dependent = True

    def __init__(self, retention_ms: int, retention_bytes: int, delete: bool = True) -> None:
        self.retention_ms = retention_ms
        self.retention_bytes = retention_bytes
        self.delete = delete

    def frontier(self, upper: Frontier, segments: Sequence[SegmentInfo] = (), now_ms: int = 0) -> Frontier:
        """The end of the longest deletable prefix of ``segments`` below ``upper`` at ``now_ms`` (class docstring)."""
        if not segments:
            return 0
        base = segments[0].base_offset
        if not self.delete:
            return base
        result = base
        if self.retention_ms >= 0:
            for seg in segments:
                if not frontier_le(seg.next_offset, upper) or not (now_ms - seg.max_timestamp_ms > self.retention_ms):
                    break
                result = seg.next_offset
        if self.retention_bytes >= 0:
            diff = sum(s.size_bytes for s in segments) - self.retention_bytes
            for seg in segments:
                if not frontier_le(seg.next_offset, upper) or diff - seg.size_bytes < 0:
                    break
                diff -= seg.size_bytes
                if seg.next_offset > result:
                    result = seg.next_offset
        return result

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "retention", "retention_ms": ms, "retention_bytes": bytes, "delete": bool}``."""
        return {
            "kind": "retention",
            "retention_ms": self.retention_ms,
            "retention_bytes": self.retention_bytes,
            "delete": self.delete,
        }


class Multiple(ReadPolicy):
    """``Multiple(ps)``: the meet (minimum) of every policy's frontier."""

    __slots__ = ("policies",)

    def __init__(self, policies: Sequence[ReadPolicy]) -> None:
        self.policies = tuple(policies)

    @property
    def time_dependent(self) -> bool:  # type: ignore[override]
        """True if any member policy depends on the decision time."""
        return any(p.time_dependent for p in self.policies)

    def frontier(self, upper: Frontier, segments: Sequence[SegmentInfo] = (), now_ms: int = 0) -> Frontier:
        """The meet (minimum) of the member policies' frontiers; ``{}`` with no members."""
        out: Frontier = None
        for p in self.policies:
            out = meet(out, p.frontier(upper, segments, now_ms))
        return out

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": "multiple", "policies": [member dicts]}``."""
        return {"kind": "multiple", "policies": [p.to_dict() for p in self.policies]}


def policy_from_dict(d: dict[str, Any]) -> ReadPolicy:
    """Rebuild a :class:`ReadPolicy` from its dict form; raises ``ValueError`` for an unknown kind."""
    kind = d.get("kind")
    if kind == "no_policy":
        return NoPolicy(d["initial_since"])
    if kind == "valid_from":
        return ValidFrom(d["since"])
    if kind == "step_back":
        return StepBack()
    if kind == "lag_writes":
        return LagWrites(int(d["lag"]), int(d.get("max_granularity", 1)))
    if kind == "retention":
        return Retention(int(d["retention_ms"]), int(d["retention_bytes"]), bool(d.get("delete", True)))
    if kind == "multiple":
        return Multiple([policy_from_dict(p) for p in d["policies"]])
    raise ValueError(f"unknown read policy kind {kind!r}")


def policy_to_json(policy: ReadPolicy) -> str:
    """The canonical JSON text events carry for ``policy`` (:func:`events.controller.policy_text`
    of its dict form); inverse: :func:`policy_from_json`."""
    return policy_text(policy.to_dict())


def policy_from_json(text: str) -> ReadPolicy:
    """Rebuild a :class:`ReadPolicy` from the text events carry; raises ``ValueError`` for bad
    JSON or an unknown kind."""
    return policy_from_dict(json.loads(text))


# --- state ----------------------------------------------------------------------------------


class Collection:
    """One collection's state: ``upper``, ``implied`` capability, ``policy``, the read
    capabilities (:class:`MutableAntichain`, including the implied capability), the holds per
    holder (holder → offset → count), its ``dependencies`` and the last reported ``segments``."""

    __slots__ = ("collection_id", "upper", "implied", "policy", "caps", "holds", "dependencies", "segments")

    def __init__(
        self,
        collection_id: str,
        since: Frontier,
        upper: Frontier,
        policy: ReadPolicy,
        dependencies: tuple[str, ...] = (),
    ) -> None:
        self.collection_id = collection_id
        self.upper = upper
        self.implied = since
        self.policy = policy
        self.caps = MutableAntichain({since: 1} if since is not None else {})
        self.holds: dict[str, dict[int, int]] = {}
        self.dependencies = dependencies
        self.segments: tuple[SegmentInfo, ...] = ()

    @property
    def since(self) -> Frontier:
        """The meet of all read capabilities (``None`` = ``{}``)."""
        return self.caps.frontier

    def read_capabilities(self) -> dict[int, int]:
        """A copy of offset → total count."""
        return dict(self.caps.counts)

    def holder_count(self, holder: str, offset: int) -> int:
        """How many holds ``holder`` has at ``offset`` (0 if none)."""
        return self.holds.get(holder, {}).get(offset, 0)

    def __repr__(self) -> str:
        return (
            f"Collection({self.collection_id!r}, since={self.since}, upper={self.upper}, "
            f"implied={self.implied}, caps={self.caps.counts}, policy={self.policy!r})"
        )


@dataclass(frozen=True, slots=True)
class SinceChange:
    """An output of :func:`evolve`: ``collection_id``'s since moved from ``old`` to ``new``.
    The owner may now delete (compact) everything below ``new``; ``new is None`` means the
    collection was dropped (Materialize's ``AllowCompaction(id, since)``)."""

    collection_id: str
    old: Frontier
    new: Frontier


class FrontierState:
    """All live collections (id → :class:`Collection`), the ids ever dropped (never reused), and
    prepared export tokens (export id → from id)."""

    __slots__ = ("collections", "dropped", "exports")

    def __init__(self) -> None:
        self.collections: dict[str, Collection] = {}
        self.dropped: set[str] = set()
        self.exports: dict[str, str] = {}

    def clone(self) -> "FrontierState":
        """An independent deep copy (for what-if decisions and tests)."""
        return copy.deepcopy(self)

    def frontiers(self, collection_id: str) -> tuple[Frontier, Frontier]:
        """``(since, upper)``; raises ``KeyError`` for an unknown id."""
        c = self.collections[collection_id]
        return c.since, c.upper

    def apply(self, event: Any) -> list[SinceChange]:
        """Apply one event in place and return the since changes it caused (for compaction)."""
        return _APPLY[type(event)](self, event)

    # -- snapshots ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict of the whole state (for snapshots and equality checks)."""
        return {
            "collections": {
                cid: {
                    "upper": c.upper,
                    "implied": c.implied,
                    "policy": c.policy.to_dict(),
                    "caps": sorted(c.caps.counts.items()),
                    "holds": {h: sorted(m.items()) for h, m in sorted(c.holds.items())},
                    "dependencies": list(c.dependencies),
                    "segments": [[s.base_offset, s.next_offset, s.size_bytes, s.max_timestamp_ms] for s in c.segments],
                }
                for cid, c in sorted(self.collections.items())
            },
            "dropped": sorted(self.dropped),
            "exports": dict(sorted(self.exports.items())),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FrontierState":
        """Inverse of :meth:`to_dict`."""
        st = cls()
        for cid, cd in d["collections"].items():
            c = Collection(cid, None, cd["upper"], policy_from_dict(cd["policy"]), tuple(cd["dependencies"]))
            c.implied = cd["implied"]
            c.caps = MutableAntichain({int(t): int(n) for t, n in cd["caps"]})
            c.holds = {h: {int(t): int(n) for t, n in m} for h, m in cd["holds"].items()}
            c.segments = tuple(SegmentInfo(*s) for s in cd["segments"])
            st.collections[cid] = c
        st.dropped = set(d["dropped"])
        st.exports = dict(d["exports"])
        return st


# --- commands --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rejected:
    """A command was refused and wrote no event. ``error`` is the Materialize-style name
    (``CollectionMissing``, ``CollectionIdReused``, ``SinceViolation``,
    ``NegativeReadCapability``, ``InvalidHolder``, ``InvalidUsage``, ``ReadBeforeSince``,
    ``CompactionBeyondSince``); ``kafka_error`` the Kafka error name the wire layer answers with."""

    error: str
    message: str
    kafka_error: str = "INVALID_REQUEST"


@dataclass(frozen=True, slots=True)
class NewCollection:
    """Command part: register ``collection_id`` with ``since``/``upper`` and ``policy`` (default
    ``NoPolicy(since)``). ``register_ts`` (Materialize tables, M21): a since of 0 is advanced to
    it and the upper raised to ``register_ts + 1`` if lower. ``dependencies``: collections whose
    since this one holds; ``prepared``: a :class:`PrepareExport` token must exist for it."""

    collection_id: str
    since: Frontier = 0
    upper: Frontier = 0
    policy: ReadPolicy | None = None
    dependencies: tuple[str, ...] = ()
    register_ts: int | None = None
    prepared: bool = False


@dataclass(frozen=True, slots=True)
class CreateCollections:
    """Register collections (all or none). Errors: ``CollectionIdReused`` (an id live, dropped
    before, or twice in the batch), ``CollectionMissing`` (a dependency), ``InvalidUsage`` (a
    prepared export presented with another dependency, or no token)."""

    collections: tuple[NewCollection, ...]


@dataclass(frozen=True, slots=True)
class UpdateWriteFrontiers:
    """Uppers reported by writers: ``(collection_id, upper, segments_or_None)`` triples. A stale
    (not advancing) upper is ignored, as Materialize's ``update_write_frontiers`` does; reported
    segments always replace the old ones. Error: ``CollectionMissing``."""

    updates: tuple[tuple[str, Frontier, tuple[SegmentInfo, ...] | None], ...]


@dataclass(frozen=True, slots=True)
class SetReadPolicies:
    """Set policies (``(collection_id, policy)`` pairs, in order, last wins). The implied
    capability moves only if the new one is not behind it. Error: ``CollectionMissing``."""

    policies: tuple[tuple[str, ReadPolicy], ...]


@dataclass(frozen=True, slots=True)
class EnforceRetention:
    """Re-evaluate time-dependent policies (retention by time) at the decision time."""


@dataclass(frozen=True, slots=True)
class ChangeReadHolds:
    """Apply ``holder``'s hold deltas ``(collection_id, offset, delta)`` (consolidated first).
    Errors: ``CollectionMissing``, ``InvalidHolder`` (reserved prefixes ``collection:`` and
    ``export:``, empty name, negative offset), ``SinceViolation`` (a positive hold below the since), ``NegativeReadCapability``."""

    holder: str
    changes: tuple[tuple[str, int, int], ...]


@dataclass(frozen=True, slots=True)
class AcquireReadHolds:
    """``acquire_read_holds``: +1 at each collection's current since for ``holder``.
    Error: ``CollectionMissing``."""

    holder: str
    collection_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DowngradeReadHold:
    """``ReadHold::try_downgrade``: move all of ``holder``'s holds on ``collection_id`` to
    ``frontier`` (``None`` releases them). Error ``SinceViolation`` if ``frontier`` is behind one
    of them, ``CollectionMissing``."""

    holder: str
    collection_id: str
    frontier: Frontier


@dataclass(frozen=True, slots=True)
class ReleaseHolder:
    """Release every hold ``holder`` has, on every collection (a session ended, a group deleted,
    a prepared export cancelled). Error: ``InvalidHolder`` for a dependency holder
    (``collection:…``), whose holds only move with their collection's since."""

    holder: str


@dataclass(frozen=True, slots=True)
class PrepareExport:
    """``prepare_export(id, from_id)`` ([MZ-2023]): hold ``from_id`` at ``join({0}, implied)``
    under holder ``export:<export_id>`` until the export is created. Errors:
    ``CollectionIdReused`` (the export id exists or is prepared), ``CollectionMissing``."""

    export_id: str
    from_id: str


@dataclass(frozen=True, slots=True)
class DeleteRecords:
    """Kafka's DeleteRecords on a partition collection: move the implied capability up to
    ``offset`` (``-1`` = the high watermark) and keep the read policy, so retention goes on from
    there. The offset may not pass the upper ([K-1.0] ``deleteRecordsOnLeader``: "if offset <=
    highWatermark"): ``OffsetOutOfRange`` (OFFSET_OUT_OF_RANGE) otherwise, and for offsets below
    -1. Read holds still pin the since (the reply's since changes give the new low watermark).
    Error: ``CollectionMissing``."""

    collection_id: str
    offset: int


@dataclass(frozen=True, slots=True)
class DropCollections:
    """Validated drop (all-or-nothing): policy ``ValidFrom({})`` for each id. Error:
    ``CollectionMissing`` (nothing is dropped)."""

    collection_ids: tuple[str, ...]


def transitive_dependencies(state: FrontierState, dependencies: Iterable[str]) -> tuple[str, ...]:
    """Every live collection whose since a collection with ``dependencies`` holds, directly or
    through the dependencies of its dependencies (sorted, distinct). Unknown ids are kept but not
    followed (the decider rejects them before this matters)."""
    seen: set[str] = set()
    stack = list(dependencies)
    while stack:
        cid = stack.pop()
        if cid in seen:
            continue
        seen.add(cid)
        c = state.collections.get(cid)
        if c is not None:
            stack.extend(c.dependencies)
    return tuple(sorted(seen))


def _missing(cid: str) -> Rejected:
    return Rejected("CollectionMissing", f"collection {cid!r} does not exist", "UNKNOWN_TOPIC_OR_PARTITION")


def _implied_for(c: Collection, implied: Frontier, upper: Frontier, segments: Sequence[SegmentInfo], now_ms: int) -> Frontier:
    """The implied capability after ``upper``: the policy's frontier if it does not go back."""
    if upper is None and c.dependencies:
        # [MZ-2024]: an export whose upper became {} releases its read capability.
        return None
    new = c.policy.frontier(upper, segments, now_ms)
    return new if frontier_le(implied, new) else implied


def decide(state: FrontierState, cmd: Any, now_ms: int) -> list[Any] | Rejected:
    """Decide a frontier command against ``state`` at ``now_ms`` (ms since the epoch).

    Returns the events to append (possibly empty: nothing to do) or a :class:`Rejected` (no
    event). Never mutates ``state``. Raises ``TypeError`` for an unknown command type."""
    handler = _DECIDE.get(type(cmd))
    if handler is None:
        raise TypeError(f"not a frontier command: {type(cmd).__name__}")
    return handler(state, cmd, now_ms)


def _decide_create(state: FrontierState, cmd: CreateCollections, now_ms: int) -> list[Any] | Rejected:
    seen: set[str] = set()
    specs: list[CollectionSpec] = []
    for nc in cmd.collections:
        cid = nc.collection_id
        if cid in seen or cid in state.collections or cid in state.dropped:
            return Rejected("CollectionIdReused", f"collection id {cid!r} is already in use or was used", "TOPIC_ALREADY_EXISTS")
        seen.add(cid)
        for dep in nc.dependencies:
            if dep not in state.collections:
                return _missing(dep)
        if nc.prepared:
            prepared_from = state.exports.get(cid)
            if prepared_from is None:
                return Rejected("InvalidUsage", f"export {cid} was not prepared")
            if nc.dependencies != (prepared_from,):
                got = nc.dependencies[0] if nc.dependencies else None
                return Rejected(
                    "InvalidUsage",
                    f"sink {cid} was prepared using from_id {prepared_from}, but is now presented with from_id {got}",
                )
        elif cid in state.exports:
            return Rejected("CollectionIdReused", f"collection id {cid!r} is a prepared export", "TOPIC_ALREADY_EXISTS")
        since, upper = nc.since, nc.upper
        if nc.register_ts is not None and since == 0:
            since = nc.register_ts
            if not frontier_le(nc.register_ts + 1, upper):
                upper = nc.register_ts + 1
        if nc.dependencies and since is not None:
            # a collection cannot be readable earlier than what its inputs still hold
            for dep in nc.dependencies:
                since = join(since, state.collections[dep].since)
        if since is None:
            return Rejected("InvalidUsage", f"collection {cid} cannot be created with an empty since")
        policy = nc.policy if nc.policy is not None else NoPolicy(since)
        deps = tuple(nc.dependencies)
        specs.append(CollectionSpec(cid, since, upper, policy_to_json(policy), deps, transitive_dependencies(state, deps)))
    return [CollectionsCreated(tuple(specs))] if specs else []


def _decide_uppers(state: FrontierState, cmd: UpdateWriteFrontiers, now_ms: int) -> list[Any] | Rejected:
    cols = state.collections
    out: list[FrontierUpdate] = []
    seen: dict[str, tuple[Frontier, Frontier, tuple[SegmentInfo, ...]]] = {}  # within this command
    for cid, upper, segments in cmd.updates:
        c = cols.get(cid)
        if c is None:
            return _missing(cid)
        cur_upper, cur_implied, cur_segs = seen.get(cid, (c.upper, c.implied, c.segments))
        advances = cur_upper != upper and frontier_le(cur_upper, upper)
        if not advances and segments is None:
            continue
        new_upper = upper if advances else cur_upper
        segs = cur_segs if segments is None else tuple(segments)
        implied = _implied_for(c, cur_implied, new_upper, segs, now_ms)
        seen[cid] = (new_upper, implied, segs)
        out.append(FrontierUpdate(cid, new_upper, implied, None if segments is None else segs))
    return [WriteFrontiersAdvanced(tuple(out))] if out else []


def _decide_policies(state: FrontierState, cmd: SetReadPolicies, now_ms: int) -> list[Any] | Rejected:
    cols = state.collections
    implied: dict[str, Frontier] = {}
    out: list[PolicyChange] = []
    for cid, policy in cmd.policies:
        c = cols.get(cid)
        if c is None:
            return _missing(cid)
        cur = implied.get(cid, c.implied)
        new = policy.frontier(c.upper, c.segments, now_ms)
        if not frontier_le(cur, new):
            new = cur  # "will not recover the read capability if the prior capability is ahead"
        implied[cid] = new
        out.append(PolicyChange(cid, policy_to_json(policy), new))
    return [ReadPoliciesSet(tuple(out), now_ms)] if out else []


def _decide_retention(state: FrontierState, cmd: EnforceRetention, now_ms: int) -> list[Any] | Rejected:
    out: list[PolicyChange] = []
    for cid, c in state.collections.items():
        p = c.policy
        if not p.time_dependent or c.implied is None:
            continue
        new = p.frontier(c.upper, c.segments, now_ms)
        if new != c.implied and frontier_le(c.implied, new):
            out.append(PolicyChange(cid, policy_to_json(p), new))
    return [ReadPoliciesSet(tuple(out), now_ms)] if out else []


def _check_holder(holder: str) -> Rejected | None:
    if not holder or holder.startswith(_RESERVED_PREFIXES):
        return Rejected("InvalidHolder", f"holder name {holder!r} is empty or reserved")
    return None


def _validate_changes(
    state: FrontierState, holder: str, items: Iterable[tuple[str, int, int]]
) -> tuple[HoldChange, ...] | Rejected:
    """Validate consolidated ``(collection_id, offset, delta)`` items (no two share a key)."""
    cols = state.collections
    out: list[HoldChange] = []
    for cid, off, d in items:
        if d == 0:
            continue
        c = cols.get(cid)
        if c is None:
            # [MZ-new] ignores an absent id with purely negative deltas; we reject it anyway so
            # that no hold event ever refers to a collection that does not exist.
            return _missing(cid)
        if off < 0:
            return Rejected("InvalidHolder", f"hold at negative offset {off} on {cid}")
        if d > 0:
            since = c.caps.frontier
            if since is None or off < since:
                return Rejected(
                    "SinceViolation",
                    f"trying to install read capabilities at {off} before the current since {since} of {cid}",
                    "OFFSET_OUT_OF_RANGE",
                )
        else:
            hm = c.holds.get(holder)
            have = hm.get(off, 0) if hm else 0
            if have + d < 0:
                return Rejected(
                    "NegativeReadCapability",
                    f"{holder} holds {have} at {off} on {cid}; {d} would lead to negative read capabilities",
                )
        out.append(HoldChange(cid, off, d))
    return tuple(out)


def _decide_holds(state: FrontierState, cmd: ChangeReadHolds, now_ms: int) -> list[Any] | Rejected:
    holder = cmd.holder
    if not holder or holder.startswith(_RESERVED_PREFIXES):
        return Rejected("InvalidHolder", f"holder name {holder!r} is empty or reserved")
    changes = cmd.changes
    n = len(changes)
    if n == 1 or (n == 2 and (changes[0][0] != changes[1][0] or changes[0][1] != changes[1][1])):
        items: Iterable[tuple[str, int, int]] = changes  # already consolidated
    else:
        batch: dict[tuple[str, int], int] = {}
        for cid, off, d in changes:
            key = (cid, off)
            batch[key] = batch.get(key, 0) + d
        items = [(cid, off, d) for (cid, off), d in batch.items()]
    res = _validate_changes(state, holder, items)
    if isinstance(res, Rejected):
        return res
    return [ReadHoldsChanged(holder, res)] if res else []


def _decide_acquire(state: FrontierState, cmd: AcquireReadHolds, now_ms: int) -> list[Any] | Rejected:
    bad = _check_holder(cmd.holder)
    if bad is not None:
        return bad
    out = []
    for cid in cmd.collection_ids:
        c = state.collections.get(cid)
        if c is None or c.since is None:
            return _missing(cid)
        out.append(HoldChange(cid, c.since, 1))
    return [ReadHoldsChanged(cmd.holder, tuple(out))] if out else []


def _decide_downgrade(state: FrontierState, cmd: DowngradeReadHold, now_ms: int) -> list[Any] | Rejected:
    bad = _check_holder(cmd.holder)
    if bad is not None:
        return bad
    c = state.collections.get(cmd.collection_id)
    if c is None:
        return _missing(cmd.collection_id)
    held = c.holds.get(cmd.holder, {})
    batch: dict[tuple[str, int], int] = {}
    for off, n in held.items():
        if not frontier_le(off, cmd.frontier):
            return Rejected(
                "SinceViolation",
                f"new frontier {cmd.frontier} is not beyond current since {off} of {cmd.holder}'s hold on {cmd.collection_id}",
                "OFFSET_OUT_OF_RANGE",
            )
        if off != cmd.frontier:
            batch[(cmd.collection_id, off)] = batch.get((cmd.collection_id, off), 0) - n
            if cmd.frontier is not None:
                key = (cmd.collection_id, cmd.frontier)
                batch[key] = batch.get(key, 0) + n
    if not batch:
        return []
    # The moved holds are already installed at or above the since, so only counts need checking.
    out = tuple(HoldChange(cid, off, d) for (cid, off), d in batch.items() if d)
    return [ReadHoldsChanged(cmd.holder, out)] if out else []


def _decide_release(state: FrontierState, cmd: ReleaseHolder, now_ms: int) -> list[Any] | Rejected:
    if cmd.holder.startswith(DEPENDENCY_HOLDER_PREFIX):
        # dependency holds follow their collection's since (``_settle``); releasing one from
        # outside would later drive its count negative
        return Rejected("InvalidHolder", f"holder name {cmd.holder!r} is reserved")
    out = []
    for cid, c in state.collections.items():
        held = c.holds.get(cmd.holder)
        if held:
            out.extend(HoldChange(cid, off, -n) for off, n in sorted(held.items()))
    return [ReadHoldsChanged(cmd.holder, tuple(out))] if out else []


def _decide_prepare_export(state: FrontierState, cmd: PrepareExport, now_ms: int) -> list[Any] | Rejected:
    if cmd.export_id in state.collections or cmd.export_id in state.dropped or cmd.export_id in state.exports:
        return Rejected("CollectionIdReused", f"export id {cmd.export_id!r} is already in use", "TOPIC_ALREADY_EXISTS")
    c = state.collections.get(cmd.from_id)
    if c is None:
        return _missing(cmd.from_id)
    acquired = join(0, c.implied)
    if acquired is None or not less_equal(c.since, acquired):
        acquired = c.since
    assert acquired is not None
    return [ReadHoldsChanged(EXPORT_HOLDER_PREFIX + cmd.export_id, (HoldChange(cmd.from_id, acquired, 1),))]


def _decide_delete_records(state: FrontierState, cmd: DeleteRecords, now_ms: int) -> list[Any] | Rejected:
    c = state.collections.get(cmd.collection_id)
    if c is None:
        return _missing(cmd.collection_id)
    target = cmd.offset
    if target == -1:
        if c.upper is None:
            return Rejected("OffsetOutOfRange", f"{cmd.collection_id} is sealed: no high watermark to delete up to", "OFFSET_OUT_OF_RANGE")
        target = c.upper
    if target < 0 or not frontier_le(target, c.upper):
        return Rejected(
            "OffsetOutOfRange",
            f"cannot delete records of {cmd.collection_id} up to {cmd.offset}: the high watermark is {c.upper}",
            "OFFSET_OUT_OF_RANGE",
        )
    if c.implied is None or not frontier_le(c.implied, target) or c.implied == target:
        return []
    return [ReadPoliciesSet((PolicyChange(cmd.collection_id, policy_to_json(c.policy), target),), now_ms)]


def _decide_drop(state: FrontierState, cmd: DropCollections, now_ms: int) -> list[Any] | Rejected:
    for cid in cmd.collection_ids:
        if cid not in state.collections:
            return _missing(cid)
    ids = tuple(dict.fromkeys(cmd.collection_ids))
    return [CollectionsDropRequested(ids)] if ids else []


_DECIDE = {
    CreateCollections: _decide_create,
    UpdateWriteFrontiers: _decide_uppers,
    SetReadPolicies: _decide_policies,
    EnforceRetention: _decide_retention,
    ChangeReadHolds: _decide_holds,
    AcquireReadHolds: _decide_acquire,
    DowngradeReadHold: _decide_downgrade,
    ReleaseHolder: _decide_release,
    PrepareExport: _decide_prepare_export,
    DropCollections: _decide_drop,
    DeleteRecords: _decide_delete_records,
}


# --- evolve ---------------------------------------------------------------------------------


def evolve(state: FrontierState, event: Any) -> FrontierState:
    """Apply ``event`` to ``state`` **in place** and return it (see the module docstring)."""
    _APPLY[type(event)](state, event)
    return state


def _settle(state: FrontierState, touched: dict[str, Frontier], out: list[SinceChange]) -> None:
    """For every touched collection (id → its since before the event) whose since changed:
    forward the change to its dependencies (holder ``collection:<id>``) and remove it when its
    since became ``{}``.

    ``settled`` tracks, per collection, the since its dependency holds currently sit at (the
    since before the event, then each value forwarded). A collection may be reached twice in one
    event — touched itself and, later, through a dependent — so the hold to move is the one at
    the settled since, not at its since of the moment (which already includes the event's own
    change: moving "from" it would release a hold that is not there)."""
    cols = state.collections
    settled = dict(touched)
    pending = list(touched)
    while pending:
        cid = pending.pop()
        c = cols.get(cid)
        if c is None:
            continue
        old = settled[cid]
        new = c.caps.frontier
        if new == old:
            continue
        settled[cid] = new
        out.append(SinceChange(cid, old, new))
        if c.dependencies:
            holder = DEPENDENCY_HOLDER_PREFIX + cid
            for dep in c.dependencies:
                d = cols.get(dep)
                if d is None:
                    continue
                settled.setdefault(dep, d.caps.frontier)
                if old is not None:
                    _hold(d, holder, old, -1)
                if new is not None:
                    _hold(d, holder, new, 1)
                pending.append(dep)
        if new is None:
            del cols[cid]
            state.dropped.add(cid)
            if cid in state.exports:
                del state.exports[cid]


def _hold(c: Collection, holder: str, off: int, d: int) -> None:
    holds = c.holds
    hm = holds.get(holder)
    if hm is None:
        hm = holds[holder] = {}
    n = hm.get(off, 0) + d
    if n:
        hm[off] = n
    else:
        del hm[off]
        if not hm:
            del holds[holder]
    c.caps.update(off, d)


def _apply_created(state: FrontierState, ev: CollectionsCreated) -> list[SinceChange]:
    touched: dict[str, Frontier] = {}
    for spec in ev.collections:
        c = Collection(spec.collection_id, spec.since, spec.upper, policy_from_json(spec.policy), tuple(spec.dependencies))
        state.collections[spec.collection_id] = c
        holder = DEPENDENCY_HOLDER_PREFIX + spec.collection_id
        export_holder = EXPORT_HOLDER_PREFIX + spec.collection_id
        for dep in spec.dependencies:
            d = state.collections[dep]
            touched.setdefault(dep, d.caps.frontier)
            _hold(d, holder, spec.since, 1)  # type: ignore[arg-type]
            # a prepared export's token hold is replaced by the dependency hold
            for off, n in sorted(d.holds.get(export_holder, {}).items()):
                _hold(d, export_holder, off, -n)
        state.exports.pop(spec.collection_id, None)
    out: list[SinceChange] = []
    _settle(state, touched, out)
    return out


def _set_implied(c: Collection, new: Frontier) -> None:
    old = c.implied
    if old == new:
        return
    if new is not None:
        c.caps.update(new, 1)
    if old is not None:
        c.caps.update(old, -1)
    c.implied = new


def _apply_uppers(state: FrontierState, ev: WriteFrontiersAdvanced) -> list[SinceChange]:
    cols = state.collections
    touched: dict[str, Frontier] = {}
    for u in ev.updates:
        c = cols[u.collection_id]
        c.upper = u.upper
        if u.segments is not None:
            c.segments = tuple(u.segments)
        if u.implied != c.implied:
            touched.setdefault(u.collection_id, c.caps.frontier)
            _set_implied(c, u.implied)
    out: list[SinceChange] = []
    if touched:
        _settle(state, touched, out)
    return out


def _apply_policies(state: FrontierState, ev: ReadPoliciesSet) -> list[SinceChange]:
    cols = state.collections
    touched: dict[str, Frontier] = {}
    for pc in ev.changes:
        c = cols[pc.collection_id]
        c.policy = policy_from_json(pc.policy)
        if pc.implied != c.implied:
            touched.setdefault(pc.collection_id, c.caps.frontier)
            _set_implied(c, pc.implied)
    out: list[SinceChange] = []
    _settle(state, touched, out)
    return out


def _apply_holds(state: FrontierState, ev: ReadHoldsChanged) -> list[SinceChange]:
    """Apply a hold event (the hot path: inlined ``_hold`` and frontier maintenance)."""
    holder = ev.holder
    if holder.startswith(EXPORT_HOLDER_PREFIX):
        return _apply_export_holds(state, ev)
    cols = state.collections
    touched: dict[str, Frontier] = {}
    for ch in ev.changes:
        cid = ch.collection_id
        c = cols[cid]
        caps = c.caps
        if cid not in touched:
            touched[cid] = caps.frontier
        off = ch.offset
        d = ch.delta
        holds = c.holds
        hm = holds.get(holder)
        if hm is None:
            hm = holds[holder] = {}
        n = hm.get(off, 0) + d
        if n:
            hm[off] = n
        else:
            del hm[off]
            if not hm:
                del holds[holder]
        # caps.update(off, d), inlined (validated: counts never go negative)
        counts = caps.counts
        m = counts.get(off, 0) + d
        if m > 0:
            counts[off] = m
            f = caps.frontier
            if f is None or off < f:
                caps.frontier = off
        elif m == 0:
            del counts[off]
            if off == caps.frontier:
                caps.frontier = min(counts) if counts else None
        else:
            raise ValueError(f"update would lead to negative read capabilities at {off}")
    for cid, old in touched.items():
        c = cols[cid]
        if c.caps.frontier != old:
            out: list[SinceChange] = []
            _settle(state, touched, out)
            return out
    return []


def _apply_export_holds(state: FrontierState, ev: ReadHoldsChanged) -> list[SinceChange]:
    """Holds of a prepared export token: also track the token (export id → from id)."""
    export_id = ev.holder[len(EXPORT_HOLDER_PREFIX):]
    positive = [ch for ch in ev.changes if ch.delta > 0]
    if positive and export_id not in state.collections:
        state.exports[export_id] = positive[0].collection_id
    cols = state.collections
    touched: dict[str, Frontier] = {}
    for ch in ev.changes:
        c = cols[ch.collection_id]
        touched.setdefault(ch.collection_id, c.caps.frontier)
        _hold(c, ev.holder, ch.offset, ch.delta)
    out: list[SinceChange] = []
    _settle(state, touched, out)
    if not any(ev.holder in c.holds for c in cols.values()):
        state.exports.pop(export_id, None)
    return out


def _apply_drop(state: FrontierState, ev: CollectionsDropRequested) -> list[SinceChange]:
    cols = state.collections
    touched: dict[str, Frontier] = {}
    for cid in ev.collection_ids:
        c = cols.get(cid)
        if c is None:
            continue
        touched.setdefault(cid, c.caps.frontier)
        c.policy = ValidFrom(None)
        _set_implied(c, None)
    out: list[SinceChange] = []
    _settle(state, touched, out)
    return out


_APPLY = {
    CollectionsCreated: _apply_created,
    WriteFrontiersAdvanced: _apply_uppers,
    ReadPoliciesSet: _apply_policies,
    ReadHoldsChanged: _apply_holds,
    CollectionsDropRequested: _apply_drop,
}


# --- queries --------------------------------------------------------------------------------


def check_read(state: FrontierState, collection_id: str, offset: int) -> Rejected | None:
    """May ``offset`` be read (``snapshot(id, as_of)``)? ``ReadBeforeSince`` (Kafka
    OFFSET_OUT_OF_RANGE) below the since, ``CollectionMissing`` for an unknown id, else ``None``.
    Offsets at or beyond the upper are not errors: such reads wait (long poll), §5."""
    c = state.collections.get(collection_id)
    if c is None:
        return _missing(collection_id)
    if not less_equal(c.since, offset):
        return Rejected("ReadBeforeSince", f"read of {collection_id} at {offset} is before the since {c.since}", "OFFSET_OUT_OF_RANGE")
    return None


def snapshot_latest(state: FrontierState, collection_id: str) -> int | None | Rejected:
    """The offset ``snapshot_latest`` reads at: ``upper - 1``; ``None`` when nothing is readable
    (upper ``{0}``, or upper at or below the since); ``InvalidUsage`` when the upper is ``{}``
    (closed); ``CollectionMissing`` for an unknown id."""
    c = state.collections.get(collection_id)
    if c is None:
        return _missing(collection_id)
    if c.upper is None:
        return Rejected("InvalidUsage", f"collection closed, cannot determine a read timestamp based on the upper of {collection_id}")
    t = c.upper - 1
    if t < 0 or not less_equal(c.since, t):
        return None  # nothing readable yet: upper {0}, or upper <= since
    return t


def is_readable(state: FrontierState, collection_id: str, offset: int) -> bool:
    """``since <= offset`` and not ``upper <= offset``: readable now and exact (§1.1)."""
    c = state.collections.get(collection_id)
    return c is not None and less_equal(c.since, offset) and not less_equal(c.upper, offset)


def check_compaction(state: FrontierState, collection_id: str, up_to: int) -> Rejected | None:
    """May everything below offset ``up_to`` be deleted (segments, or local copies after
    tiering)? Only at or below the since: ``CompactionBeyondSince`` otherwise."""
    c = state.collections.get(collection_id)
    if c is None:
        return None if collection_id in state.dropped else _missing(collection_id)
    if not frontier_le(up_to, c.since):
        return Rejected("CompactionBeyondSince", f"cannot compact {collection_id} below {up_to}: since is {c.since}", "OFFSET_OUT_OF_RANGE")
    return None
