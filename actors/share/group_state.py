"""The durable state of one share group (pure): :class:`ShareGroupState`, the fold of the group's
stream — membership (KIP-848-style share-group membership) plus the share-partitions (Kafka's
``SharePartition``) — and its snapshot codec. The ShareGroupActor evolves it live and recovers it
by replay; the projections (``projections/domains/share.py``, ``share_group.py``) use the same
fold and read the same snapshots, without importing the actor."""

from __future__ import annotations

from typing import Any

import msgspec

from actors.share.config import BrokerShareConfig
from actors.share.membership import ShareGroupMembership, evolve as evolve_membership
from actors.share.partition import SharePartition
from events.base import DomainEvent
from events.share import SHARE_PARTITION_EVENTS, ShareStateDeleted
from events.share_group import ShareGroupDeleted

__all__ = ["SNAPSHOT_FORMAT", "ShareGroupState"]

TP = tuple[str, int]

#: Version tag of the snapshot bytes (JSON of plain data, see :meth:`ShareGroupState.dumps`).
#: Format 1 was a pickle; bump when the layout changes. A snapshot of another format is ignored
#: and the stream replayed from the start (snapshots are caches).
SNAPSHOT_FORMAT = 2

_SNAPSHOT_ENCODER = msgspec.json.Encoder()

class ShareGroupState:
    """The durable state of one share group: membership plus share-partitions by (topic id,
    partition). :meth:`apply` is the fold used for live evolution and for recovery alike."""

    def __init__(self, group_id: str, broker: BrokerShareConfig) -> None:
        self.group_id = group_id
        self.broker = broker
        self.membership = ShareGroupMembership(group_id)
        self.partitions: dict[TP, SharePartition] = {}

    def partition(self, topic_id: str, partition: int) -> SharePartition:
        """The share-partition, created empty (not yet initialized) with the broker's delivery
        count limit and max record locks when absent."""
        key = (topic_id, partition)
        sp = self.partitions.get(key)
        if sp is None:
            sp = self.partitions[key] = SharePartition(
                self.group_id, topic_id, partition,
                delivery_count_limit=self.broker.delivery_count_limit,
                max_in_flight_records=self.broker.partition_max_record_locks,
            )
        return sp

    def apply(self, ev: DomainEvent) -> None:
        """Evolve with one event of the group's stream (membership, share-partition, deletion).
        Unknown kinds are ignored."""
        if isinstance(ev, SHARE_PARTITION_EVENTS):
            self.partition(ev.topic_id, ev.partition).apply(ev)  # type: ignore[attr-defined]
        elif isinstance(ev, ShareStateDeleted):
            self.partitions.pop((ev.topic_id, ev.partition), None)
        elif isinstance(ev, ShareGroupDeleted):
            self.partitions.clear()
            evolve_membership(self.membership, ev)
        else:
            evolve_membership(self.membership, ev)

    def initialized(self, key: TP) -> bool:
        """Whether the share-partition has been initialized (has a start offset)."""
        return key in self.partitions

    def to_dict(self) -> dict[str, Any]:
        """The comparable durable state (membership dict and every partition's ``snapshot()``)."""
        return {
            "membership": self.membership.comparable(),
            "partitions": {f"{t}:{p}": sp.snapshot() for (t, p), sp in sorted(self.partitions.items())},
        }

    def dumps(self) -> bytes:
        """Snapshot bytes: UTF-8 JSON (msgspec) of plain data, format :data:`SNAPSHOT_FORMAT`::

            {"format": 2, "group_id": str,
             "membership": ShareGroupMembership.to_dict(),
             "partitions": [SharePartition.snapshot(), ...]}   # sorted by (topic id, partition)

        Readable without Shoal's classes (projections, verification, DuckDB ``read_json``) and
        independent of the code layout. Session deadlines and share sessions are broker memory
        and not part of it."""
        return _SNAPSHOT_ENCODER.encode({
            "format": SNAPSHOT_FORMAT,
            "group_id": self.group_id,
            "membership": self.membership.to_dict(),
            "partitions": [sp.snapshot() for _, sp in sorted(self.partitions.items())],
        })

    @classmethod
    def loads(cls, data: bytes, group_id: str, broker: BrokerShareConfig) -> "ShareGroupState":
        """Inverse of :meth:`dumps` for the snapshot of ``group_id``. Raises ``ValueError`` for
        bytes that are not a format-:data:`SNAPSHOT_FORMAT` snapshot of this group (corrupt bytes,
        another or an unknown format, e.g. the pickles of format 1, another group): the caller
        then replays the stream from the start."""
        try:
            d = msgspec.json.decode(data)
        except (msgspec.DecodeError, UnicodeDecodeError, TypeError) as exc:
            raise ValueError(f"not a share-group snapshot: {exc}") from exc
        if not isinstance(d, dict) or d.get("format") != SNAPSHOT_FORMAT:
            fmt = d.get("format") if isinstance(d, dict) else None
            raise ValueError(f"snapshot format {fmt!r} is not {SNAPSHOT_FORMAT}")
        if d.get("group_id") != group_id:
            raise ValueError("snapshot of another group")
        st = cls(group_id, broker)
        try:
            st.membership = ShareGroupMembership.from_dict(d["membership"])
            parts = [SharePartition.from_snapshot(x) for x in d["partitions"]]
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"malformed share-group snapshot: {exc!r}") from exc
        if st.membership.group_id != group_id or any(sp.group_id != group_id for sp in parts):
            raise ValueError("snapshot of another group")
        st.partitions = {(sp.topic_id, sp.partition): sp for sp in parts}
        if len(st.partitions) != len(parts):
            raise ValueError("a share-partition appears twice in the snapshot")
        return st
