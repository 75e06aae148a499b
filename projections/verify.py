"""Compare snapshot tables: engine against engine, and the reference fold against the snapshots the
live daemon stored. Each divergence names the table, the stream, the row key, the field, both
values, and the first log position at which the two folds differ (found by bisection when the
engines can fold a prefix of the log cheaply; otherwise the stream's last folded position, an
upper bound, with ``exact=False``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping, Sequence

import pyarrow as pa

from projections.model import STREAMS_TABLE, DomainProjection, SnapshotTable
from projections.python_fold import ProjectionResult, fold_states, states_to_tables
from projections.source import LogSource, ReplayBounds

__all__ = ["Divergence", "compare_results", "compare_tables", "verify_stored_snapshots"]


@dataclass(frozen=True)
class Divergence:
    """One difference: in ``table``, the row of ``stream_id`` with ``key`` differs in ``field``
    (``"<row>"`` when the row exists on one side only) between ``left`` and ``right`` (engine
    names or ``"stored snapshot"``); ``first_position`` is the first log position at which they
    differ (exact when ``exact``, else an upper bound)."""

    table: str
    stream_id: str
    key: tuple
    field: str
    left: str
    left_value: Any
    right: str
    right_value: Any
    first_position: int | None = None
    exact: bool = False

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["key"] = list(self.key)
        return d

    def __str__(self) -> str:
        where = "?" if self.first_position is None else f"{'' if self.exact else '≤'}{self.first_position}"
        return (
            f"{self.table} stream={self.stream_id} key={self.key} field={self.field}: "
            f"{self.left}={self.left_value!r} {self.right}={self.right_value!r} (first differing position {where})"
        )


def _rows_by_key(spec: SnapshotTable, t: pa.Table) -> dict[tuple, dict[str, Any]]:
    return {tuple(r[k] for k in spec.key): r for r in t.to_pylist()}


def compare_tables(
    spec: SnapshotTable, left: pa.Table, right: pa.Table, left_name: str, right_name: str
) -> list[Divergence]:
    """Every row- and field-level difference between two versions of snapshot table ``spec``."""
    a, b = _rows_by_key(spec, left), _rows_by_key(spec, right)
    out: list[Divergence] = []
    for key in sorted(set(a) | set(b), key=lambda k: tuple((x is None, x) for x in k)):
        ra, rb = a.get(key), b.get(key)
        sid = (ra or rb)["stream_id"]
        if ra is None or rb is None:
            out.append(Divergence(spec.name, sid, key, "<row>", left_name, ra, right_name, rb))
            continue
        for f in spec.schema.names:
            if ra[f] != rb[f]:
                out.append(Divergence(spec.name, sid, key, f, left_name, ra[f], right_name, rb[f]))
    return out


def _streams_last(result: ProjectionResult) -> dict[str, int]:
    t = result.tables.get(STREAMS_TABLE.name)
    if t is None:
        return {}
    return dict(zip(t["stream_id"].to_pylist(), t["last_position"].to_pylist()))


def compare_results(
    projections: Sequence[DomainProjection],
    left: ProjectionResult,
    right: ProjectionResult,
    snapshot_at: Mapping[str, Callable[[int, str], dict[str, pa.Table]]] | None = None,
    stream_positions: Callable[[str], list[int]] | None = None,
) -> list[Divergence]:
    """Compare two engines' results on the tables both produced (a domain or table without a SQL
    fold is only in the Python result; the ``streams`` table is compared on the domains both
    folded).

    ``snapshot_at[engine](position, stream_id)`` folds the log up to ``position`` for one stream
    and ``stream_positions(stream_id)`` lists that stream's positions; with both given for the
    two engines, the first differing position of each diverging stream is found by bisection.
    """
    domains = {p.name for p in projections if any(t.name in left.tables and t.name in right.tables for t in p.tables)}
    specs = [t for p in projections for t in p.tables if t.name in left.tables and t.name in right.tables]
    out: list[Divergence] = []
    for spec in specs:
        out += compare_tables(spec, left.tables[spec.name], right.tables[spec.name], left.engine, right.engine)
    import pyarrow.compute as pc

    def only(t: pa.Table) -> pa.Table:
        return t.filter(pc.is_in(t["domain"], pa.array(sorted(domains), pa.string())))

    if STREAMS_TABLE.name in left.tables and STREAMS_TABLE.name in right.tables:
        out += compare_tables(
            STREAMS_TABLE, only(left.tables[STREAMS_TABLE.name]), only(right.tables[STREAMS_TABLE.name]), left.engine, right.engine
        )
    if not out:
        return out
    last = {**_streams_last(right), **_streams_last(left)}
    first: dict[str, tuple[int | None, bool]] = {}
    can_bisect = snapshot_at is not None and stream_positions is not None and left.engine in snapshot_at and right.engine in snapshot_at
    for d in out:
        if d.stream_id in first:
            continue
        if can_bisect:
            first[d.stream_id] = (_bisect(d.stream_id, specs, snapshot_at, stream_positions, left.engine, right.engine), True)
        else:
            first[d.stream_id] = (last.get(d.stream_id), False)
    return [
        Divergence(d.table, d.stream_id, d.key, d.field, d.left, d.left_value, d.right, d.right_value, *first[d.stream_id])
        for d in out
    ]


def _bisect(stream_id, specs, snapshot_at, stream_positions, le, re_) -> int | None:
    positions = stream_positions(stream_id)

    def differs(p: int) -> bool:
        a, b = snapshot_at[le](p, stream_id), snapshot_at[re_](p, stream_id)
        for spec in specs:
            ta = _rows_of_stream(a.get(spec.name), stream_id)
            tb = _rows_of_stream(b.get(spec.name), stream_id)
            if ta != tb:
                return True
        return False

    lo, hi = 0, len(positions) - 1
    if hi < 0 or not differs(positions[hi]):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if differs(positions[mid]):
            hi = mid
        else:
            lo = mid + 1
    return positions[lo]


def _rows_of_stream(t: pa.Table | None, stream_id: str) -> list[dict[str, Any]]:
    if t is None:
        return []
    return [r for r in t.to_pylist() if r["stream_id"] == stream_id]


def verify_stored_snapshots(log, projections: Sequence[DomainProjection]) -> tuple[list[Divergence], list[str]]:
    """Compare each stored actor snapshot (``snapshots`` table) of a domain that can decode its
    snapshots with the reference fold of the same stream up to the snapshot's position.

    ``log`` is an open :class:`store.event_log.EventLog`. Returns ``(divergences, notes)``; a
    snapshot that does not decode is a note, not a divergence (its format may be another
    domain's)."""
    out: list[Divergence] = []
    notes: list[str] = []
    src = LogSource.of(log.url)
    for p in projections:
        if p.decode_state is None:
            continue
        for sid in log.stream_ids(p.stream_prefix):
            snap = log.load_snapshot(sid)
            if snap is None:
                continue
            try:
                stored = p.decode_state(sid, snap.state)
            except Exception as exc:  # noqa: BLE001 - reported, not raised
                notes.append(f"{p.name}: snapshot of {sid} v{snap.stream_version} not decodable: {exc}")
                continue
            states, infos, _ = fold_states(src, [p], ReplayBounds(0, snap.position or None), streams=[sid])
            if (p.name, sid) not in states:
                continue
            live = states_to_tables([p], states, infos)
            mine = states_to_tables([p], {(p.name, sid): stored}, {})
            for spec in p.tables:
                out += [
                    Divergence(d.table, d.stream_id, d.key, d.field, "python", d.left_value, "stored snapshot", d.right_value, snap.position, False)
                    for d in compare_tables(spec, live[spec.name], mine[spec.name], "python", "stored snapshot")
                ]
    return out, notes
