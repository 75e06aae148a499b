"""Recovery: rebuild actor snapshots from the log, with the engine that fits the log's size.

Two different needs, two answers (measured with ``bench/replay.py`` on the 2-core machine; see
the figures in the issue 7 report):

* **Actor states** (what an actor needs to resume: the full ``SharePartition``, membership,
  RLMM caches) can only come from the Python fold: the SQL engines produce the snapshot *tables*,
  which are projections of the state, not the whole state (lock deadlines, target assignment,
  epoch indexes …). :func:`rebuild_snapshots` therefore always folds in Python, and stores one
  snapshot per stream of every domain that has an ``encode_state``.
* **Snapshot tables** (``replay``, ``--verify``, audits, analytics): :func:`choose_engine` picks by
  the number of events to fold:

  ====================================  ==========  ==================================================
  events to fold                         engine      why (measured, share-group log, 2 cores)
  ====================================  ==========  ==================================================
  < ``DUCKDB_MIN_EVENTS`` (100,000)      python      10 k: Python 0.06 s, DuckDB 0.16 s; 100 k: 0.33 s
                                                     vs 0.37 s — they cross about here (DuckDB pays
                                                     start-up and staging)
  ≥ 100,000, single machine              duckdb      300 k: 0.92 s vs 0.34 s; 10 M: 21 s vs ~5 s
                                                     (DuckDB reads SQLite with ``sqlite_scan``); and
                                                     DuckDB resumes from its checkpoint afterwards
  ≥ ``SPARK_MIN_EVENTS`` (50 M) *and*    spark       only with a cluster master: local Spark on 2
  a cluster ``master``                               cores folds 10 M events in ~15 s from a typed
                                                     Parquet export (47 s through JDBC), DuckDB in ~5 s
  ====================================  ==========  ==================================================
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from projections.model import DomainProjection, domain_projections
from projections.python_fold import fold_states
from projections.source import LogSource, ReplayBounds

__all__ = ["DUCKDB_MIN_EVENTS", "SPARK_MIN_EVENTS", "RecoveryReport", "choose_engine", "rebuild_snapshots", "rebuild_states"]

#: Below this many events the Python fold is faster than DuckDB's start-up + staging.
DUCKDB_MIN_EVENTS = 100_000
#: Spark only pays off on a cluster, for logs at least this large.
SPARK_MIN_EVENTS = 50_000_000


def choose_engine(event_count: int, master: str | None = None, need_actor_state: bool = False) -> str:
    """The engine for folding ``event_count`` events: ``"python"`` when actor states are needed or
    the log is small, ``"spark"`` for very large logs with a cluster ``master`` (not ``local…``),
    else ``"duckdb"``. Thresholds: :data:`DUCKDB_MIN_EVENTS`, :data:`SPARK_MIN_EVENTS`."""
    if need_actor_state or event_count < DUCKDB_MIN_EVENTS:
        return "python"
    if master and not master.startswith("local") and event_count >= SPARK_MIN_EVENTS:
        return "spark"
    return "duckdb"


@dataclass
class RecoveryReport:
    """What :func:`rebuild_snapshots` did: ``saved`` (stream id → stream version snapshotted),
    ``skipped_domains`` (no ``encode_state``), events folded, last position, seconds."""

    saved: dict[str, int] = field(default_factory=dict)
    skipped_domains: list[str] = field(default_factory=list)
    events: int = 0
    last_position: int = 0
    seconds: float = 0.0


def rebuild_states(
    source: "str | LogSource",
    projections: Sequence[DomainProjection] | None = None,
    bounds: ReplayBounds = ReplayBounds(),
    streams: Sequence[str] | None = None,
) -> dict[tuple[str, str], Any]:
    """The actor states of every (domain, stream) folded from the log (Python, the actors' own
    ``evolve``): ``{(domain, stream_id): state}``."""
    states, _, _ = fold_states(source, projections if projections is not None else domain_projections(), bounds, streams=streams)
    return states


def rebuild_snapshots(log, projections: Sequence[DomainProjection] | None = None, min_events: int = 1) -> RecoveryReport:
    """Fold the whole log of the open :class:`store.event_log.EventLog` ``log`` and store one
    snapshot per stream (at its last folded version and position) for each domain that can encode
    its state; streams with fewer than ``min_events`` folded events are left alone. Returns a
    :class:`RecoveryReport`. Snapshots are an optimisation only: replaying the tail after one
    gives the same state as the full log."""
    t0 = time.perf_counter()
    projections = list(projections if projections is not None else domain_projections())
    report = RecoveryReport(skipped_domains=[p.name for p in projections if p.encode_state is None])
    usable = [p for p in projections if p.encode_state is not None]
    if not usable:
        report.seconds = time.perf_counter() - t0
        return report
    states, infos, last = fold_states(LogSource.of(log.url), usable, ReplayBounds())
    by_name = {p.name: p for p in usable}
    for (domain, sid), state in states.items():
        info = infos[(domain, sid)]
        report.events += info.count
        if info.count < min_events:
            continue
        log.save_snapshot(sid, info.version, by_name[domain].encode_state(state), info.position)
        report.saved[sid] = info.version
    report.last_position = last
    report.seconds = time.perf_counter() - t0
    return report
