"""``app.py replay`` and ``app.py audit`` (Typer + Rich). Wire with ``register(app)``.

``replay --engine python|duckdb|spark [--until-position P | --until-time T] [--out DIR] [--verify]``
    folds the log into the snapshot tables; ``--out`` writes ``DIR/<engine>/<table>.parquet`` and
    ``_checkpoint.json`` (the DuckDB engine keeps ``DIR/duckdb/projection.duckdb`` and resumes from
    its checkpoint); ``--verify`` also runs the Python reference (and DuckDB, when no SQL engine
    was asked for), compares every engine with it and the daemon's stored snapshots with the
    reference, prints each divergence and exits 1 on any.
``export DIR [--until-position P | --until-time T] [--raw-only]``
    writes a Parquet export of the log (:func:`projections.source.export_parquet`) that
    ``replay --parquet DIR`` reads; Spark folds its typed part without parsing JSON.
``audit record --group G --topic T --partition P --offset O`` / ``audit segment ID``
    timelines as Rich tables, or ``--json``.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, List, Optional

import typer

__all__ = ["register", "write_result"]


def _log_url(url: Optional[str], config: Optional[Path], override: List[str], data_dir: Optional[str]) -> str:
    if url:
        return url
    from config import load_config

    return load_config(config, override, data_dir)["event.log.url"]


def _parse_time(t: Optional[str]) -> Optional[int]:
    if t is None:
        return None
    if t.lstrip("-").isdigit():
        return int(t)
    dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def write_result(result, out: Path, bounds) -> Path:
    """Write a :class:`ProjectionResult` as Parquet under ``out/<engine>/`` with a
    ``_checkpoint.json`` (engine, last position, bounds, event count). Returns the directory."""
    import pyarrow.parquet as pq

    d = out / result.engine
    d.mkdir(parents=True, exist_ok=True)
    for name, t in result.tables.items():
        pq.write_table(t, d / f"{name}.parquet")
    (d / "_checkpoint.json").write_text(
        json.dumps(
            {
                "engine": result.engine,
                "last_position": result.last_position,
                "event_count": result.event_count,
                "until_position": bounds.until_position,
                "until_time_ms": bounds.until_time_ms,
                "seconds": round(result.seconds, 3),
                **{k: v for k, v in result.extra.items() if isinstance(v, (int, str, bool, list))},
            },
            indent=2,
        )
    )
    return d


def register(app: typer.Typer) -> None:
    """Add the ``replay``, ``export`` and ``snapshots`` commands and the ``audit`` command group to ``app``."""

    @app.command()
    def snapshots(
        min_events: int = typer.Option(1, "--min-events", help="only streams with at least this many events"),
        domain: List[str] = typer.Option([], "--domain", help="only these domains (may repeat)"),
        url: Optional[str] = typer.Option(None, "--url", help="event log URL (default: the config's event.log.url)"),
        config: Optional[Path] = typer.Option(None, "--config"),
        override: List[str] = typer.Option([], "--override"),
        data_dir: Optional[str] = typer.Option(None, "--data-dir"),
    ) -> None:
        """Rebuild the actors' snapshots from the whole log (daemon stopped), so the next start
        recovers each actor from a fresh snapshot instead of replaying a long tail. Actor states
        come only from the Python fold (the actors' own evolve): the SQL engines build snapshot
        tables, not actor states (see projections/recovery.py)."""
        from rich.console import Console

        from projections.model import domain_projections
        from projections.recovery import rebuild_snapshots
        from store.event_log import open_event_log

        console = Console(stderr=True)
        log = open_event_log(_log_url(url, config, override, data_dir), create=False)
        try:
            report = rebuild_snapshots(log, domain_projections(domain or None), min_events=min_events)
        finally:
            log.close()
        console.print(
            f"folded {report.events} events to position {report.last_position} in {report.seconds:.2f}s; "
            f"saved {len(report.saved)} snapshots"
            + (f"; no actor state for: {', '.join(report.skipped_domains)}" if report.skipped_domains else "")
        )

    @app.command()
    def export(
        out: Path = typer.Argument(..., help="the export directory (created; its files are replaced)"),
        until_position: Optional[int] = typer.Option(None, "--until-position", help="export events up to this position (inclusive)"),
        until_time: Optional[str] = typer.Option(None, "--until-time", help="export events recorded at or before T (ms or ISO-8601)"),
        typed: bool = typer.Option(True, "--typed/--raw-only", help="also write each event type's payloads as Parquet structs (_typed/)"),
        url: Optional[str] = typer.Option(None, "--url", help="event log URL (default: the config's event.log.url)"),
        config: Optional[Path] = typer.Option(None, "--config"),
        override: List[str] = typer.Option([], "--override"),
        data_dir: Optional[str] = typer.Option(None, "--data-dir"),
    ) -> None:
        """Export the event log to Parquet (projections.source.export_parquet): the raw events in
        position order, and a typed copy per event type that Spark folds without parsing JSON
        (``replay --parquet DIR``)."""
        import time

        from rich.console import Console

        from projections.source import ReplayBounds, export_parquet

        console = Console(stderr=True)
        t0 = time.perf_counter()
        n = export_parquet(_log_url(url, config, override, data_dir), out, ReplayBounds(0, until_position, _parse_time(until_time)), typed=typed)
        console.print(f"exported {n} events to {out} in {time.perf_counter() - t0:.2f}s" + ("" if typed else " (raw only)"))

    @app.command()
    def replay(
        engine: List[str] = typer.Option(["auto"], "--engine", help="auto | python | duckdb | spark (may repeat); auto picks by the log's size"),
        until_position: Optional[int] = typer.Option(None, "--until-position", help="fold events up to this position (inclusive)"),
        until_time: Optional[str] = typer.Option(None, "--until-time", help="fold events recorded at or before T (ms or ISO-8601)"),
        out: Optional[Path] = typer.Option(None, "--out", help="write Parquet snapshots under DIR/<engine>/"),
        verify: bool = typer.Option(False, "--verify", help="compare engines and stored snapshots; exit 1 on any divergence"),
        url: Optional[str] = typer.Option(None, "--url", help="event log URL (default: the config's event.log.url)"),
        parquet: Optional[Path] = typer.Option(None, "--parquet", help="read a Parquet export of the log instead"),
        master: Optional[str] = typer.Option(None, "--master", help="Spark master (default local[*])"),
        domain: List[str] = typer.Option([], "--domain", help="only these domains (may repeat)"),
        as_json: bool = typer.Option(False, "--json", help="print a JSON summary"),
        config: Optional[Path] = typer.Option(None, "--config"),
        override: List[str] = typer.Option([], "--override"),
        data_dir: Optional[str] = typer.Option(None, "--data-dir"),
    ) -> None:
        """Fold the event log into state snapshots with one or more engines."""
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        from rich.table import Table

        from projections.model import domain_projections
        from projections.source import LogSource, ReplayBounds

        console = Console(stderr=True)
        bad = [e for e in engine if e not in ("auto", "python", "duckdb", "spark")]
        if bad:
            raise typer.BadParameter(f"unknown engine(s) {bad}; use auto, python, duckdb or spark")
        log_url = _log_url(url, config, override, data_dir)
        src = LogSource.of(str(parquet)) if parquet else LogSource.of(log_url)
        bounds = ReplayBounds(0, until_position, _parse_time(until_time))
        projections = domain_projections(domain or None)
        types = [t for p in projections for t in p.event_type_names]
        total = src.count(bounds, types)
        if "auto" in engine:
            from projections.recovery import choose_engine

            picked = choose_engine(total, master)
            console.print(f"auto: {picked} for {total} events (projections/recovery.py thresholds)")
            engine = [picked if e == "auto" else e for e in engine]
        engines = list(dict.fromkeys(engine))
        if verify:
            engines = list(dict.fromkeys(["python"] + engines + ([] if set(engines) & {"duckdb", "spark"} else ["duckdb"])))
        results = {}
        duck = None
        for eng in engines:
            with Progress(
                TextColumn(f"[bold]{eng}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=console, disable=total < 100_000 or as_json,
            ) as bar:
                task = bar.add_task(eng, total=total)

                def advance(n: int) -> None:
                    bar.advance(task, n)

                if eng == "python":
                    from projections.python_fold import fold_python

                    results[eng] = fold_python(src, projections, bounds, advance)
                elif eng == "duckdb":
                    from projections.duckdb_fold import DuckDBFold

                    db = None
                    if out is not None:
                        (out / "duckdb").mkdir(parents=True, exist_ok=True)
                        db = out / "duckdb" / "projection.duckdb"
                    duck = DuckDBFold(projections, db)
                    results[eng] = duck.update(src, bounds, advance)
                else:
                    from projections.spark_fold import fold_spark

                    results[eng] = fold_spark(src, projections, bounds, advance, master=master)
            r = results[eng]
            if out is not None:
                write_result(r, out, bounds)
            skipped = r.extra.get("skipped_domains") or []
            reasons = r.extra.get("skipped_reasons") or {}
            note = f" (left out: {', '.join(skipped)})" if skipped else ""
            console.print(f"{eng}: {r.event_count} events to position {r.last_position} in {r.seconds:.2f}s{note}")
            for domain in skipped:
                console.print(f"  {eng} left out {domain}: {reasons.get(domain, 'the domain has no SQL fold')}")
        divergences = []
        notes: list[str] = []
        if verify:
            from projections.python_fold import fold_states, states_to_tables
            from projections.verify import compare_results, verify_stored_snapshots

            def py_at(p: int, sid: str):
                st, inf, _ = fold_states(src, projections, ReplayBounds(0, p, bounds.until_time_ms), streams=[sid])
                return states_to_tables(projections, st, inf)

            snapshot_at = {"python": py_at}
            if duck is not None:
                snapshot_at["duckdb"] = lambda p, sid: duck.snapshot(p)

            def positions(sid: str) -> list[int]:
                from store.event_log import open_event_log

                lg = open_event_log(log_url, create=False)
                try:
                    return [e.position for e in lg.read_stream(sid) if e.event_type in types and (bounds.until_position is None or e.position <= bounds.until_position)]
                finally:
                    lg.close()

            ref = results["python"]
            for eng, r in results.items():
                if eng != "python":
                    divergences += compare_results(projections, ref, r, snapshot_at, positions if not parquet else None)
            if not parquet:
                from store.event_log import open_event_log

                lg = open_event_log(log_url, create=False)
                try:
                    d2, notes = verify_stored_snapshots(lg, projections)
                finally:
                    lg.close()
                divergences += d2
        if duck is not None:
            duck.close()
        if as_json:
            typer.echo(
                json.dumps(
                    {
                        "engines": {
                            e: {"events": r.event_count, "last_position": r.last_position, "seconds": round(r.seconds, 3),
                                "tables": {n: t.num_rows for n, t in r.tables.items()}}
                            for e, r in results.items()
                        },
                        "divergences": [d.as_dict() for d in divergences],
                        "notes": notes,
                    },
                    default=str,
                )
            )
        else:
            out_console = Console()
            t = Table(title="snapshot tables (rows)")
            t.add_column("table")
            for e in results:
                t.add_column(e, justify="right")
            names = sorted({n for r in results.values() for n in r.tables})
            for n in names:
                t.add_row(n, *[str(r.tables[n].num_rows) if n in r.tables else "—" for r in results.values()])
            out_console.print(t)
            for n in notes:
                out_console.print(f"[yellow]note:[/] {n}")
            if verify:
                for d in divergences:
                    out_console.print(f"[red]DIVERGENCE[/] {d}")
                out_console.print("[green]verify: no divergence[/]" if not divergences else f"[red]verify: {len(divergences)} divergence(s)[/]")
        if divergences:
            raise typer.Exit(1)

    audit_app = typer.Typer(help="Timelines of one record, one remote segment or the SCRAM credentials; the ACLs in force at a time.", no_args_is_help=True)
    app.add_typer(audit_app, name="audit")

    @audit_app.command("record")
    def audit_record(
        group: str = typer.Option(..., "--group", help="share group id"),
        topic: str = typer.Option(..., "--topic", help="topic id (or a subscribed topic name)"),
        partition: int = typer.Option(..., "--partition"),
        offset: int = typer.Option(..., "--offset"),
        as_json: bool = typer.Option(False, "--json"),
        url: Optional[str] = typer.Option(None, "--url"),
        config: Optional[Path] = typer.Option(None, "--config"),
        override: List[str] = typer.Option([], "--override"),
        data_dir: Optional[str] = typer.Option(None, "--data-dir"),
    ) -> None:
        """The whole history of one record of a share-partition."""
        from projections.audit import record_history

        _audit(
            _log_url(url, config, override, data_dir),
            lambda log: record_history(log, group, topic, partition, offset),
            as_json,
            f"record {group} {topic}-{partition}@{offset}",
            ["position", "time", "action", "member", "state", "deliveries", "lock deadline"],
            lambda s: [str(s.position), _ts(s.recorded_at_ms), s.action, s.member_id or "", s.state or "(left the cache)",
                       "" if s.delivery_count is None else str(s.delivery_count), "" if s.lock_deadline_ms is None else _ts(s.lock_deadline_ms)],
        )

    @audit_app.command("segment")
    def audit_segment(
        segment_id: str = typer.Argument(..., help="remote log segment id (Kafka base64 Uuid)"),
        as_json: bool = typer.Option(False, "--json"),
        url: Optional[str] = typer.Option(None, "--url"),
        config: Optional[Path] = typer.Option(None, "--config"),
        override: List[str] = typer.Option([], "--override"),
        data_dir: Optional[str] = typer.Option(None, "--data-dir"),
    ) -> None:
        """The lifecycle of one remote log segment."""
        from projections.audit import segment_lifecycle

        _audit(
            _log_url(url, config, override, data_dir),
            lambda log: segment_lifecycle(log, segment_id),
            as_json,
            f"segment {segment_id}",
            ["position", "time", "stream", "state", "broker", "partition", "offsets", "bytes"],
            lambda s: [str(s.position), _ts(s.recorded_at_ms), s.stream_id, s.state, str(s.broker_id), f"{s.topic}-{s.partition}",
                       "" if s.start_offset is None else f"{s.start_offset}..{s.end_offset}", "" if s.size_bytes is None else str(s.size_bytes)],
        )

    @audit_app.command("scram")
    def audit_scram(
        user: Optional[str] = typer.Option(None, "--user", help="only this user"),
        as_json: bool = typer.Option(False, "--json"),
        url: Optional[str] = typer.Option(None, "--url"),
        config: Optional[Path] = typer.Option(None, "--config"),
        override: List[str] = typer.Option([], "--override"),
        data_dir: Optional[str] = typer.Option(None, "--data-dir"),
    ) -> None:
        """When each SCRAM credential (KIP-554) was created, replaced or removed; no salts or keys."""
        from projections.audit import scram_credential_history

        _audit(
            _log_url(url, config, override, data_dir),
            lambda log: scram_credential_history(log, user),
            as_json,
            "SCRAM credentials" + (f" of {user}" if user else ""),
            ["position", "time", "user", "mechanism", "action", "iterations"],
            lambda s: [str(s.position), _ts(s.recorded_at_ms), s.user, s.mechanism, s.action, "" if s.iterations is None else str(s.iterations)],
        )

    @audit_app.command("acls")
    def audit_acls(
        at: Optional[str] = typer.Option(None, "--at", help="a log position (digits) or an ISO-8601 time; default: now"),
        principal: Optional[str] = typer.Option(None, "--principal", help="only this principal (and User:*)"),
        as_json: bool = typer.Option(False, "--json"),
        url: Optional[str] = typer.Option(None, "--url"),
        config: Optional[Path] = typer.Option(None, "--config"),
        override: List[str] = typer.Option([], "--override"),
        data_dir: Optional[str] = typer.Option(None, "--data-dir"),
    ) -> None:
        """Who could do what at a point in time: the ACLs in force then (principal, resource,
        pattern, operation, permission, host), folded from the AclsCreated/AclsDeleted events."""
        from projections.audit import acls_at

        position = int(at) if at is not None and at.isdigit() else None
        time_ms = _parse_time(at) if at is not None and position is None else None

        def grants_in_force(log) -> list:
            grants = acls_at(log, position, time_ms)
            if principal is not None:
                grants = [g for g in grants if g.principal in (principal, "User:*")]
            return grants

        _audit(
            _log_url(url, config, override, data_dir),
            grants_in_force,
            as_json,
            f"ACLs at {at or 'now'}",
            ["principal", "resource", "pattern", "operation", "permission", "host", "since"],
            lambda g: [g.principal, f"{g.resource_type}:{g.resource_name}", g.pattern_type, g.operation, g.permission, g.host,
                       f"{_ts(g.recorded_at_ms)} (#{g.position})"],
            exit_when_empty=False,
        )


def _audit(
    log_url: str,
    query: Callable[[Any], list],
    as_json: bool,
    title: str,
    columns: list[str],
    cells: Callable[[Any], list[str]],
    exit_when_empty: bool = True,
) -> None:
    """The body every ``audit`` command shares: open the event log at ``log_url`` read-only
    (``create=False``), run ``query(log)`` for the rows (objects with ``as_dict()``), close the
    log; print the rows as a JSON list (``as_json``) or as a Rich table titled ``title`` with
    ``columns`` and one ``cells(row)`` per row. Raises ``typer.Exit(2)`` when there is no row
    and ``exit_when_empty`` (a timeline of nothing is an error; an empty ACL set is not)."""
    from store.event_log import open_event_log

    log = open_event_log(log_url, create=False)
    try:
        rows = query(log)
    finally:
        log.close()
    if as_json:
        typer.echo(json.dumps([r.as_dict() for r in rows]))
    else:
        _print_steps(title, columns, [cells(r) for r in rows])
    if exit_when_empty and not rows:
        raise typer.Exit(2)


def _ts(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _print_steps(title: str, columns: list[str], rows: list[list[str]]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    for c in columns:
        t.add_column(c)
    for r in rows:
        t.add_row(*r)
    Console().print(t)
    if not rows:
        Console(stderr=True).print("no event touched it")
