"""The reference engine: the actors' own ``evolve`` folded over the log, in Python.

Events are read as Arrow chunks (:class:`projections.source.LogSource`), decoded with the log
codec (upcasting old schema versions) and applied per stream in position order. The result is the
same snapshot tables the SQL engines produce (:mod:`projections.model`).
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import pyarrow as pa

from events.codec import decode_event
from projections.model import STREAMS_TABLE, DomainProjection, rows_to_table
from projections.source import LogSource, ReplayBounds

__all__ = ["ProjectionResult", "fold_python", "fold_states", "states_to_tables"]

Progress = Callable[[int], None]


@dataclass
class ProjectionResult:
    """What one engine produced: ``tables`` (snapshot table name → Arrow table sorted by key),
    the ``last_position`` folded (0 when none), how many events were folded, the wall time in
    seconds, and the engine's name."""

    engine: str
    tables: dict[str, pa.Table]
    last_position: int
    event_count: int
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class _StreamInfo:
    domain: str
    version: int = 0
    position: int = 0
    count: int = 0
    recorded_at_ms: int = 0


def fold_states(
    source: "str | LogSource",
    projections: Sequence[DomainProjection],
    bounds: ReplayBounds = ReplayBounds(),
    progress: Progress | None = None,
    streams: Sequence[str] | None = None,
) -> tuple[dict[tuple[str, str], Any], dict[tuple[str, str], _StreamInfo], int]:
    """Fold the log with each projection's ``evolve``.

    Returns ``(states, infos, last_position)``: ``states[(domain, stream_id)]`` is the folded
    state, ``infos`` the stream's last version/position/count. ``streams`` restricts the fold to
    those stream ids. ``progress(n)`` is called with the number of events read after each chunk.
    Raises :class:`events.codec.CorruptEventError` on an undecodable event.
    """
    import msgspec
    import pyarrow.compute as pc

    src = LogSource.of(source)
    by_type: dict[str, list[DomainProjection]] = {}
    for p in projections:
        for t in p.event_type_names:
            by_type.setdefault(t, []).append(p)
    only = set(streams) if streams is not None else None
    # per projection: stream id -> state (keyed by stream only inside the hot loop)
    per_domain: dict[str, dict[str, Any]] = {p.name: {} for p in projections}
    # event type -> (typed decoder, current schema version, [(the domain's states, evolve, initial,
    # evolve takes the envelope)]): an event type may be folded by several domains (the group
    # deletion ends both the membership and the share-partitions)
    route: dict[str, tuple] = {}
    for p in projections:
        for t, cls in zip(p.event_type_names, p.event_types):
            if t not in route:
                route[t] = (msgspec.json.Decoder(cls), cls.schema_version, [])
            route[t][2].append((per_domain[p.name], p.evolve, p.initial, p.evolve_with_envelope))
    infos: dict[tuple[str, str], _StreamInfo] = {}
    last = 0
    # A fold allocates millions of short-lived objects and keeps few: the cyclic GC would rescan
    # the growing state on every generation-2 pass. Pause it for the loop (restored after).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        last = _fold_chunks(src, bounds, by_type, projections, only, route, infos, progress)
    finally:
        if gc_was_enabled:
            gc.enable()
    states = {(d, sid): st for d, m in per_domain.items() for sid, st in m.items()}
    infos.pop(("", ""), None)
    return states, infos, last


def _raise_corrupt(chunk: pa.Table, route) -> None:
    """Find the first undecodable row of ``chunk`` and raise its ``CorruptEventError``."""
    for pos, etype, sver, data in zip(
        chunk["position"].to_pylist(), chunk["event_type"].to_pylist(), chunk["schema_version"].to_pylist(), chunk["data"].to_pylist()
    ):
        decode_event(etype, sver, data, pos)
    raise AssertionError("a row failed to decode but decodes now")  # pragma: no cover


def _stale_rows(chunk: pa.Table, route) -> bool:
    """Whether any row of ``chunk`` is stored under an older schema version than its class's."""
    import pyarrow.compute as pc

    versions = {r[1] for r in route.values()}
    if versions == {1}:
        return not pc.all(pc.equal(chunk["schema_version"], 1)).as_py()
    return True


def _fold_chunks(src, bounds, by_type, projections, only, route, infos, progress) -> int:
    import msgspec
    import pyarrow.compute as pc

    last = 0
    read = 0
    for chunk in src.batches(bounds, list(by_type)):
        if only is not None:
            chunk = chunk.filter(pc.is_in(chunk["stream_id"], pa.array(sorted(only), pa.string())))
            if chunk.num_rows == 0:
                continue
        stale = _stale_rows(chunk, route) or any(f[3] for r in route.values() for f in r[2])
        sids, etypes, datas = chunk["stream_id"].to_pylist(), chunk["event_type"].to_pylist(), chunk["data"].to_pylist()
        if not stale:
            try:
                for sid, etype, data in zip(sids, etypes, datas):
                    decoder, _, folds = route[etype]
                    ev = decoder.decode(data)
                    for states, evolve, initial, _ in folds:
                        st = states.get(sid)
                        states[sid] = evolve(initial(sid) if st is None else st, ev)
            except msgspec.MsgspecError:
                _raise_corrupt(chunk, route)
        else:
            positions, versions = chunk["position"].to_pylist(), chunk["schema_version"].to_pylist()
            stream_versions = chunk["stream_version"].to_pylist()
            try:
                for pos, sid, etype, sver, data, ver in zip(positions, sids, etypes, versions, datas, stream_versions):
                    decoder, current, folds = route[etype]
                    ev = decoder.decode(data) if sver == current else decode_event(etype, sver, data, pos)
                    for states, evolve, initial, with_env in folds:
                        st = states.get(sid)
                        if st is None:
                            st = initial(sid)
                        states[sid] = evolve(st, ev, ver, pos) if with_env else evolve(st, ev)
            except msgspec.MsgspecError:
                _raise_corrupt(chunk, route)
        # the streams' envelope bookkeeping, set-based per chunk
        for p in projections:
            sub = chunk.filter(pc.is_in(chunk["event_type"], pa.array(p.event_type_names, pa.string())))
            if sub.num_rows == 0:
                continue
            agg = sub.group_by("stream_id", use_threads=False).aggregate(
                [("position", "last"), ("stream_version", "last"), ("recorded_at_ms", "last"), ("position", "count")]
            )
            for sid, pos, ver, rec, n in zip(
                agg["stream_id"].to_pylist(), agg["position_last"].to_pylist(), agg["stream_version_last"].to_pylist(),
                agg["recorded_at_ms_last"].to_pylist(), agg["position_count"].to_pylist(),
            ):
                info = infos.get((p.name, sid))
                if info is None:
                    info = infos[(p.name, sid)] = _StreamInfo(p.name)
                info.position, info.version, info.recorded_at_ms = pos, ver, rec
                info.count += n
        last = chunk["position"][-1].as_py()
        read += chunk.num_rows
        if progress is not None:
            progress(chunk.num_rows)
    infos[("", "")] = _StreamInfo("", count=read)  # the total, taken out by fold_states
    return last


def states_to_tables(
    projections: Sequence[DomainProjection],
    states: Mapping[tuple[str, str], Any],
    infos: Mapping[tuple[str, str], _StreamInfo],
) -> dict[str, pa.Table]:
    """The snapshot tables (every projection's, plus ``streams``) of folded ``states``."""
    rows: dict[str, list[Mapping[str, Any]]] = {t.name: [] for p in projections for t in p.tables}
    by_name = {p.name: p for p in projections}
    for (domain, sid), state in states.items():
        for table, trows in by_name[domain].to_rows(sid, state).items():
            rows[table].extend(trows)
    out = {t.name: rows_to_table(t, rows[t.name]) for p in projections for t in p.tables}
    out[STREAMS_TABLE.name] = rows_to_table(
        STREAMS_TABLE,
        (
            {
                "stream_id": sid,
                "domain": i.domain,
                "stream_version": i.version,
                "last_position": i.position,
                "event_count": i.count,
                "last_recorded_at_ms": i.recorded_at_ms,
            }
            for (_, sid), i in infos.items()
        ),
    )
    return out


def fold_python(
    source: "str | LogSource",
    projections: Sequence[DomainProjection],
    bounds: ReplayBounds = ReplayBounds(),
    progress: Progress | None = None,
) -> ProjectionResult:
    """Replay the log with the actors' ``evolve`` and return the snapshot tables
    (:class:`ProjectionResult`, engine ``"python"``)."""
    t0 = time.perf_counter()
    states, infos, last = fold_states(source, projections, bounds, progress)
    tables = states_to_tables(projections, states, infos)
    n = sum(i.count for i in infos.values())
    return ProjectionResult("python", tables, last, n, time.perf_counter() - t0)
