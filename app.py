"""Shoal's command line (Typer).

``python app.py run``      the daemon: actor system, event log, journal, controller (with its
                           share-group and RLMM children), remote log manager, Kafka listener
``python app.py status``   readiness and counts of a running daemon
``python app.py replay``   rebuild state snapshots from the event log (python | duckdb | spark), --verify
``python app.py audit``    the history of one record (``audit record``) or remote segment (``audit segment``); the ACLs in force at a time (``audit acls --at``)
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import List, Optional

import typer

from config import load_config
from projections.cli import register as register_projection_commands

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Shoal: share groups (KIP-932) and tiered storage (KIP-405), event-sourced.")


@app.command()
def run(
    config: Optional[Path] = typer.Option(None, "--config", help="server.properties file"),
    override: List[str] = typer.Option([], "--override", help="key=value, may repeat"),
    data_dir: Optional[str] = typer.Option(None, "--data-dir", help="data directory (default ./data)"),
) -> None:
    """Start the daemon; it serves Kafka clients on ``listeners`` until SIGTERM/SIGINT."""
    import logging

    os.environ.setdefault("THESPIAN_BASE_IPADDR", "127.0.0.1")
    from wire.daemon import Daemon
    from wire.memory import limit_malloc_arenas

    cfg = load_config(config, override, data_dir)
    logging.basicConfig(level=cfg.get("shoal.log.level", "WARNING").upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # guard: few malloc arenas, so connection threads do not pin freed memory (wire/memory.py).
    # A process-wide glibc setting: applied here, by the daemon's own process, before any thread
    # starts — never by a Daemon started inside another process (a test run).
    limit_malloc_arenas(int(cfg.get("shoal.malloc.arena.max", "1")))
    daemon = Daemon(cfg)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: daemon.request_stop())
    daemon.start()
    assert daemon.listener is not None
    for lst in daemon.listeners:
        typer.echo(f"shoal: listening on {lst.name}://{lst.host}:{lst.port} ({lst.security_protocol})", err=True)
    typer.echo(f"shoal: event log {cfg['event.log.url']}; actor system {cfg['shoal.actor.system.base']} on admin port {cfg['shoal.actor.system.admin.port']}", err=True)
    try:
        daemon.wait()
    finally:
        daemon.stop()
        typer.echo("shoal: stopped", err=True)


@app.command()
def status(
    config: Optional[Path] = typer.Option(None, "--config", help="server.properties file"),
    override: List[str] = typer.Option([], "--override", help="key=value, may repeat"),
    data_dir: Optional[str] = typer.Option(None, "--data-dir", help="data directory (default ./data)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """Report whether the daemon is ready and its counts (topics, groups, members, in-flight
    records, tiered segments). Exit code 0 when ready, 1 when not running or not ready."""
    import json

    from wire.status import daemon_status

    cfg = load_config(config, override, data_dir)
    st = daemon_status(cfg)
    if as_json:
        typer.echo(json.dumps(st, sort_keys=True))
    else:
        for k in sorted(st):
            typer.echo(f"{k}: {st[k]}")
    raise typer.Exit(0 if st.get("ready") else 1)


register_projection_commands(app)

if __name__ == "__main__":
    app(sys.argv[1:])
