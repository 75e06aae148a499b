"""Share-partition snapshots: per share-partition start/end offsets and state epoch, and the
in-flight records as maximal ranges of equal (state, delivery count, member, lock deadline).

Python: the ShareGroupActor's own fold, :meth:`actors.share.actor.ShareGroupState.apply` (Kafka
``SharePartition``'s transition rules per (topic id, partition), ``ShareStateDeleted`` and
``ShareGroupDeleted`` dropping them) over every event of each ``share-group:<group id>`` stream.
Its state is the actor's whole state, so recovery stores it in the actor's snapshot format
(``ShareGroupState.dumps``) and ``--verify`` reads the actor's snapshots with ``loads``.

No SQL fold yet (``sql=None``): the DuckDB and Spark engines leave this domain out and say so.
Two reasons, both recorded for the domain's owner:

* acknowledgement batches are positional JSON arrays of mixed types (``[first, last, [types…]]``)
  that neither engine's JSON schema reader can type (ranges ``[first, last]`` are fine: the
  flattener reads them as ``…__item`` views);
* the events record *requests*, and the outcome per offset depends on the state at the time
  (acknowledge only ACQUIRED records, archive a release at the delivery-count limit, drop the
  terminal prefix when the start offset moves), so a set-based fold would have to re-run a
  per-offset state machine in order.

What would make the SQL fold a last-writer-wins range fold (the shape of
:func:`projections.sqlkit.range_state_sql`, proven on the test domain): acknowledgement batches as
a frozen dataclass ``AckBatch(first_offset, last_offset, acknowledge_types)``, and each event
carrying its outcome — the ranges that became AVAILABLE, ACKNOWLEDGED and ARCHIVED (e.g.
``RecordsAcknowledged.outcome: tuple[StateRange, ...]`` with ``StateRange(first_offset,
last_offset, state)``, the same for lock expiry and member release) and the start/end offsets after
it (``start_offset_after``, ``end_offset_after``).
"""

from __future__ import annotations

import pyarrow as pa

from projections.model import DomainNotAvailable, DomainProjection, SnapshotTable, register_projection
from projections.sqlkit import merge_ranges

PARTITIONS = SnapshotTable(
    "share_partitions",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("topic_id", pa.string()),
            ("partition", pa.int64()),
            ("start_offset", pa.int64()),
            ("end_offset", pa.int64()),
            ("state_epoch", pa.int64()),
            ("delivery_count_limit", pa.int64()),
            ("in_flight_records", pa.int64()),
        ]
    ),
    ("stream_id", "topic_id", "partition"),
)
RANGES = SnapshotTable(
    "share_ranges",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("topic_id", pa.string()),
            ("partition", pa.int64()),
            ("first_offset", pa.int64()),
            ("last_offset", pa.int64()),
            ("state", pa.string()),
            ("delivery_count", pa.int64()),
            ("member_id", pa.string()),
            ("lock_deadline_ms", pa.int64()),
        ]
    ),
    ("stream_id", "topic_id", "partition", "first_offset"),
)

_STATE_NAMES = {0: "AVAILABLE", 1: "ACQUIRED", 2: "ACKNOWLEDGED", 4: "ARCHIVED"}


def partition_ranges(sp) -> list[tuple[int, int, dict]]:
    """``(first, last, attributes)`` of every cached offset range of a ``SharePartition``
    (exploded batches give one entry per offset; :func:`merge_ranges` merges equal neighbours)."""
    out = []
    for b in sp.cached_batches():
        items = [(b.first_offset, b.last_offset, b)] if b.offset_state is None else [(o, o, s) for o, s in b.offset_state.items()]
        for first, last, s in items:
            out.append(
                (
                    first,
                    last,
                    {
                        "state": _STATE_NAMES.get(s.state, str(s.state)),
                        "delivery_count": s.delivery_count,
                        "member_id": s.member_id or None,
                        "lock_deadline_ms": s.deadline_ms,
                    },
                )
            )
    return out


def to_rows(stream_id: str, state) -> dict:
    """Snapshot rows of the share-partitions of one group stream (a ``ShareGroupState``)."""
    prow, rrows = [], []
    for (topic_id, partition), sp in sorted(state.partitions.items()):
        base = {"stream_id": stream_id, "topic_id": topic_id, "partition": partition}
        prow.append(
            {
                **base,
                "start_offset": sp.start_offset,
                "end_offset": sp.end_offset,
                "state_epoch": sp.state_epoch,
                "delivery_count_limit": sp.delivery_count_limit,
                "in_flight_records": sp.in_flight_count(),
            }
        )
        rrows.extend(merge_ranges(partition_ranges(sp), base))
    return {PARTITIONS.name: prow, RANGES.name: rrows}


def build() -> DomainProjection:
    """The share-partition projection; raises :class:`DomainNotAvailable` if its code is missing."""
    try:
        from actors.share.actor import ShareGroupState
        from actors.share.config import BrokerShareConfig
        from events import share as ev
        from events import share_group as sg
    except ImportError as exc:  # pragma: no cover - only while the domain is being written
        raise DomainNotAvailable(str(exc)) from exc

    broker = BrokerShareConfig()

    def group_of(stream_id: str) -> str:
        return stream_id.split(":", 1)[1] if ":" in stream_id else stream_id

    def evolve(state, event):
        state.apply(event)
        return state

    membership_events = tuple(
        c for c in vars(sg).values() if isinstance(c, type) and getattr(c, "event_type", "").startswith("share_group.")
    )
    return DomainProjection(
        name="share",
        event_types=tuple(ev.SHARE_PARTITION_EVENTS) + (ev.ShareStateDeleted,) + membership_events,
        tables=(PARTITIONS, RANGES),
        initial=lambda sid: ShareGroupState(group_of(sid), broker),
        evolve=evolve,
        to_rows=to_rows,
        stream_prefix="share-group:",
        sql=None,
        decode_state=lambda sid, data: ShareGroupState.loads(data, group_of(sid), broker),
        encode_state=lambda state: state.dumps(),
        description="share partitions: start/end offsets, per-range record states and delivery counts",
    )


register_projection("share", build)
