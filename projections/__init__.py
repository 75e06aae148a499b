"""Projections: the event log folded into state snapshots by three engines, audit and verify.

* :mod:`projections.model` — snapshot tables, domain projections, flattened event views;
* :mod:`projections.python_fold` — the reference, the actors' own ``evolve``;
* :mod:`projections.duckdb_fold` — SQL over Arrow batches, incremental from a checkpoint;
* :mod:`projections.spark_fold` — the same SQL on Spark, the log read through JDBC or Parquet;
* :mod:`projections.verify` — engines compared with each other and with the daemon's snapshots;
* :mod:`projections.audit` — the history of one record, the lifecycle of one remote segment;
* :mod:`projections.recovery` — rebuild actor snapshots with the fastest engine for the log;
* :mod:`projections.cli` — ``app.py replay`` and ``app.py audit``.
"""

from projections.model import DomainProjection, SnapshotTable, domain_projections, register_projection
from projections.source import LogSource, ReplayBounds

__all__ = ["DomainProjection", "LogSource", "ReplayBounds", "SnapshotTable", "domain_projections", "register_projection"]
