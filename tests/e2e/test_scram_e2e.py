"""SCRAM credential management end to end (KIP-554): confluent-kafka's AdminClient
(``alter_user_scram_credentials`` with ``UserScramCredentialUpsertion``/``Deletion``,
``describe_user_scram_credentials``) against a real ``app.py run`` daemon.

Then the issue's promise, checked on the bytes: no password and no salted password appears in
the event log's rows, its snapshots, the data directory's files (database, WAL, logs), the
daemon's output or the projection outputs of ``app.py replay --verify`` — while the stored
credential still verifies the password in a full SCRAM exchange (scramp's client and server)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialDeletion, UserScramCredentialUpsertion

from tests.e2e.helpers import admin, outcomes
from tests.scram_helpers import salted_password, scram_exchange

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]


def _alter(bootstrap: str, alterations) -> dict[str, object]:
    """user → ``None`` (accepted) or the Kafka error code of the refusal."""
    a = admin(bootstrap)  # alive until the futures resolve
    return outcomes(a.alter_user_scram_credentials(alterations, request_timeout=30))


def _describe_all(bootstrap: str) -> dict[str, list[tuple[ScramMechanism, int]]]:
    a = admin(bootstrap)
    res = a.describe_user_scram_credentials(request_timeout=30).result(30)
    return {u: sorted((i.mechanism, i.iterations) for i in d.scram_credential_infos) for u, d in res.items()}


def _describe(bootstrap: str, users: list[str]) -> dict[str, object]:
    a = admin(bootstrap)  # alive until the futures resolve
    return outcomes(
        a.describe_user_scram_credentials(users, request_timeout=30),
        lambda d: sorted((i.mechanism, i.iterations) for i in d.scram_credential_infos),
    )


def test_admin_client_alters_and_describes_credentials(daemon_factory):
    d = daemon_factory()
    b = d.bootstrap
    assert _describe_all(b) == {}
    sha256, sha512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
    assert _alter(b, [
        UserScramCredentialUpsertion("alice", ScramCredentialInfo(sha256, 4096), b"alice-password"),
        UserScramCredentialUpsertion("bob", ScramCredentialInfo(sha512, 8192), b"bob-password", b"a-salt-chosen-by-bob"),
    ]) == {"alice": None, "bob": None}
    assert _alter(b, [UserScramCredentialUpsertion("alice", ScramCredentialInfo(sha512, 10000), b"alice-password")]) == {"alice": None}
    assert _describe_all(b) == {"alice": [(sha256, 4096), (sha512, 10000)], "bob": [(sha512, 8192)]}
    assert _describe(b, ["bob", "nobody"]) == {"bob": [(sha512, 8192)], "nobody": KafkaError.RESOURCE_NOT_FOUND}
    # Kafka's refusals, one result per user
    assert _alter(b, [
        UserScramCredentialUpsertion("carol", ScramCredentialInfo(sha256, 1000), b"pw"),
        UserScramCredentialUpsertion("dave", ScramCredentialInfo(sha256, 20000), b"pw"),
        UserScramCredentialDeletion("zed", sha256),
        UserScramCredentialDeletion("bob", sha256),  # bob has a SHA-512 credential only
    ]) == {
        "carol": KafkaError.UNACCEPTABLE_CREDENTIAL,
        "dave": KafkaError.UNACCEPTABLE_CREDENTIAL,
        "zed": KafkaError.RESOURCE_NOT_FOUND,
        "bob": KafkaError.RESOURCE_NOT_FOUND,
    }
    assert _alter(b, [UserScramCredentialDeletion("bob", sha512)]) == {"bob": None}
    assert _describe(b, ["bob"]) == {"bob": KafkaError.RESOURCE_NOT_FOUND}
    assert _describe_all(b) == {"alice": [(sha256, 4096), (sha512, 10000)]}
    # the credentials are events: a restarted daemon has them
    d.stop()
    d2 = daemon_factory(data_dir=d.data_dir, port=d.port)
    assert _describe_all(d2.bootstrap) == {"alice": [(sha256, 4096), (sha512, 10000)]}


def _needles(password: str, salted: bytes) -> list[bytes]:
    """The byte strings that would betray the password or the salted password."""
    out = []
    for secret in (password.encode(), salted):
        out += [secret, base64.b64encode(secret), secret.hex().encode(), secret.hex().upper().encode()]
    return out


def _assert_absent(needles: list[bytes], where: str, data: bytes) -> None:
    for n in needles:
        assert n not in data, f"a password-derived secret ({n[:6]!r}…) appears in {where}"


def test_no_password_in_log_snapshots_files_or_projections(daemon_factory, tmp_path):
    password = "pw-" + os.urandom(12).hex()  # unique: cannot be in any file by chance
    d = daemon_factory(**{"shoal.controller.snapshot.interval.events": "1"})
    sha256, sha512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
    assert _alter(d.bootstrap, [
        UserScramCredentialUpsertion("alice", ScramCredentialInfo(sha256, 4096), password.encode()),
        UserScramCredentialUpsertion("bob", ScramCredentialInfo(sha512, 4096), password.encode()),
    ]) == {"alice": None, "bob": None}
    d.stop()

    from actors.controller import state as S
    from events.controller import STREAM_ID
    from store.event_log import open_event_log

    url = f"sqlite:///{d.data_dir / 'events.db'}"
    log = open_event_log(url, create=False)
    try:
        records = list(log.read_stream(STREAM_ID))
        snap = log.load_snapshot(STREAM_ID)
    finally:
        log.close()
    state = S.ControllerState()
    for rec in records:
        S.apply(state, rec.decode())
    needles: list[bytes] = []
    for user, mech in (("alice", "SCRAM-SHA-256"), ("bob", "SCRAM-SHA-512")):
        cred = state.scram.get(user, mech)
        assert cred is not None and cred.iterations == 4096
        salted = salted_password(password, cred.salt, cred.iterations, mech)
        needles += _needles(password, salted)
        # what was stored verifies the password in a whole SCRAM exchange, and only that password
        assert scram_exchange(cred, mech, user, password)
        assert not scram_exchange(cred, mech, user, password + "x")
    # the event rows and the stored snapshot
    for rec in records:
        _assert_absent(needles, f"event {rec.event_type} at {rec.position}", rec.data)
    assert snap is not None and b"alice" in snap.state
    _assert_absent(needles, "the controller snapshot", snap.state)
    # every file of the data directory (database, WAL, segments, logs) and the daemon's output
    for f in sorted(p for p in d.data_dir.rglob("*") if p.is_file()):
        _assert_absent(needles, str(f), f.read_bytes())
    _assert_absent(needles, "the daemon output", d.log_path.read_bytes())
    # the projections: three-way agreement (Python, DuckDB, the stored snapshots) and their outputs
    out = tmp_path / "replay"
    r = subprocess.run(
        [sys.executable, "app.py", "replay", "--url", url, "--engine", "python", "--engine", "duckdb", "--verify", "--json", "--out", str(out)],
        capture_output=True, timeout=600, cwd=str(ROOT),
    )
    assert r.returncode == 0, (r.stdout[-3000:] + r.stderr[-3000:]).decode(errors="replace")
    summary = json.loads(r.stdout.decode().strip().splitlines()[-1])
    assert summary["divergences"] == []
    for engine in ("python", "duckdb"):
        assert summary["engines"][engine]["tables"]["controller_scram_credentials"] == 2, summary["engines"][engine]
    _assert_absent(needles, "replay's output", r.stdout + r.stderr)
    import pyarrow.parquet as pq

    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.suffix == ".parquet" for p in files)
    for f in files:
        _assert_absent(needles, str(f), f.read_bytes())
        if f.suffix == ".parquet":
            _assert_absent(needles, f"{f} (decoded)", repr(pq.read_table(f).to_pylist()).encode())
