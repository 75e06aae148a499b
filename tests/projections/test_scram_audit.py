"""``app.py audit scram``: the history of the SCRAM credentials (KIP-554) read from the event log —
created, replaced, removed, per user and mechanism, with iterations; no salt, key or
password-derived bytes in its output."""

from __future__ import annotations

import base64
import json

from typer.testing import CliRunner

from actors.controller import scram as sc
from actors.controller import state as S
from projections.audit import scram_credential_history
from store.event_log import open_event_log
from tests.projections.test_audit_and_cli import _app
from tests.projections.test_differential import write_log

SALTED = b"salted-password-bytes-of-the-client"


def _up(user: str, mech: int, iterations: int) -> sc.ScramUpsertion:
    return sc.ScramUpsertion(user, mech, iterations, b"salt-of-" + user.encode(), SALTED)


def _log(tmp_path) -> str:
    cs = S.ControllerState()
    entries = []
    for cmd in [
        sc.AlterUserScramCredentials((), (_up("alice", 1, 4096), _up("bob", 2, 8192))),
        sc.AlterUserScramCredentials((), (_up("alice", 1, 10000),)),
        sc.AlterUserScramCredentials((sc.ScramDeletion("bob", 2),), ()),
    ]:
        d = S.decide(cs, cmd, 0)
        for e in d.events:
            S.apply(cs, e)
            entries.append(("controller", e))
    return write_log(tmp_path, entries)


def test_history_lists_creations_replacements_and_removals(tmp_path):
    url = _log(tmp_path)
    log = open_event_log(url, create=False)
    try:
        steps = scram_credential_history(log)
        only_bob = scram_credential_history(log, "bob")
    finally:
        log.close()
    assert [(s.user, s.mechanism, s.action, s.iterations) for s in steps] == [
        ("alice", "SCRAM-SHA-256", "created", 4096),
        ("bob", "SCRAM-SHA-512", "created", 8192),
        ("alice", "SCRAM-SHA-256", "replaced", 10000),
        ("bob", "SCRAM-SHA-512", "removed", None),
    ]
    assert [s.position for s in steps] == sorted(s.position for s in steps)
    assert [(s.action) for s in only_bob] == ["created", "removed"]


def test_cli_audit_scram_shows_no_secret(tmp_path):
    url = _log(tmp_path)
    stored_key, server_key = sc.derive_keys("SCRAM-SHA-256", SALTED)
    secrets = [SALTED, stored_key, server_key, b"salt-of-alice"]
    r = CliRunner().invoke(_app(), ["audit", "scram", "--url", url, "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert [(x["user"], x["action"]) for x in rows] == [("alice", "created"), ("bob", "created"), ("alice", "replaced"), ("bob", "removed")]
    assert set(rows[0]) == {"position", "recorded_at_ms", "user", "mechanism", "action", "iterations"}
    r = CliRunner().invoke(_app(), ["audit", "scram", "--url", url, "--user", "alice"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "replaced" in r.output and "bob" not in r.output
    for out in (json.dumps(rows), r.output):
        for s in secrets:
            assert base64.b64encode(s).decode() not in out and s.hex() not in out
    r = CliRunner().invoke(_app(), ["audit", "scram", "--url", url, "--user", "nobody", "--json"])
    assert r.exit_code == 2 and json.loads(r.output) == []
