"""Shoal's command line (Typer).

``python app.py run``      the daemon: actor system, event log, journal (and, as they land, the
                           controller, share-group and RLMM actors and the Kafka listener)
``python app.py status``   readiness and counts of a running daemon
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import List, Optional

import typer

from config import load_config

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Shoal: share groups (KIP-932) and tiered storage (KIP-405), event-sourced.")


@app.command()
def run(
    config: Optional[Path] = typer.Option(None, "--config", help="server.properties file"),
    override: List[str] = typer.Option([], "--override", help="key=value, may repeat"),
    data_dir: Optional[str] = typer.Option(None, "--data-dir", help="data directory (default ./data)"),
) -> None:
    """Start the daemon on the embedded defaults; stops cleanly on SIGTERM/SIGINT."""
    from thespian.actors import ActorSystem

    from actors.journal import JournalActor
    from actors.messages import Configure
    from store.event_log import open_event_log

    cfg = load_config(config, override, data_dir)
    Path(cfg["shoal.data.dir"]).mkdir(parents=True, exist_ok=True)
    elog = open_event_log(cfg["event.log.url"], synchronous=cfg["event.log.sqlite.synchronous"])
    asys = ActorSystem(cfg["shoal.actor.system.base"], {"Admin Port": int(cfg["shoal.actor.system.admin.port"])})
    stop = threading.Event()
    try:
        journal = asys.createActor(JournalActor, globalName="shoal-journal")
        asys.ask(journal, Configure(cfg, "journal"), 10)
        typer.echo(f"shoal: event log {cfg['event.log.url']} at position {elog.last_position()}")
        typer.echo(f"shoal: actor system {cfg['shoal.actor.system.base']} on admin port {cfg['shoal.actor.system.admin.port']}, journal ready")
        typer.echo("shoal: the Kafka listener is not built yet; Ctrl-C to stop")
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        stop.wait()
    finally:
        asys.shutdown()
        elog.close()
        typer.echo("shoal: stopped")


if __name__ == "__main__":
    app(sys.argv[1:])
