"""``app.py status``: is the daemon running and ready, and its counts.

The daemon writes ``<data dir>/shoal.status.json`` when its listener is up and refreshes the
counts every ``shoal.status.interval.ms`` (default 2000 ms): topics, share groups, members,
in-flight records, tiered segments. ``status`` reads that file, checks that the process is alive
and that the Kafka listener answers an ApiVersions request (readiness as a client sees it).
"""

from __future__ import annotations

import json
import os
import socket
import struct
import time
from pathlib import Path
from typing import Any, Mapping

__all__ = ["daemon_status", "probe_api_versions"]


def probe_api_versions(host: str, port: int, timeout_s: float = 2.0) -> int | None:
    """Send ApiVersions v0 to ``host:port``; return the number of APIs advertised, or ``None``
    when nothing (valid) answers."""
    req = struct.pack(">hhih", 18, 0, 1, -1)
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as s:
            s.sendall(struct.pack(">i", len(req)) + req)
            head = s.recv(4)
            if len(head) < 4:
                return None
            (size,) = struct.unpack(">i", head)
            body = b""
            while len(body) < size:
                chunk = s.recv(size - len(body))
                if not chunk:
                    return None
                body += chunk
    except OSError:
        return None
    corr, err, n = struct.unpack_from(">ihi", body, 0)
    return n if corr == 1 and err == 0 else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def daemon_status(cfg: Mapping[str, str]) -> dict[str, Any]:
    """Readiness and counts of the daemon whose data dir is ``cfg['shoal.data.dir']``.
    Keys: ``running``, ``ready``, ``pid``, ``listener``, ``apis``, counts (``topics``, ``groups``,
    ``members``, ``in_flight_records``, ``tiered_segments``), ``counts_age_ms``."""
    path = Path(cfg["shoal.data.dir"]) / "shoal.status.json"
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"running": False, "ready": False, "reason": f"no status file at {path}"}
    pid = int(info.get("pid", -1))
    if not _alive(pid):
        return {"running": False, "ready": False, "pid": pid, "reason": "the process is gone (stale status file)"}
    host, _, port = str(info["listener"]).rpartition(":")
    apis = probe_api_versions(host, int(port))
    out: dict[str, Any] = {"running": True, "ready": apis is not None, "pid": pid, "listener": info["listener"], "apis": apis}
    out.update(info.get("counts") or {})
    out["counts_age_ms"] = int(time.time() * 1000) - int(info.get("updated_ms", 0))
    return out
