"""The ControllerActor's SCRAM handlers (KIP-554) under ``simpleSystemBase``: AlterUserScramCredentials
appends the credential events before replying, Describe and the listener's credential query read
the folded state, and a restart (snapshot + replay) recovers exactly the same credentials."""

from __future__ import annotations

from datetime import timedelta

from thespian.actors import ActorSystem

from actors.controller import messages as M
from actors.controller import scram as sc
from events.controller import STREAM_ID, UserScramCredentialRemoved, UserScramCredentialSet
from store.event_log import open_event_log
from tests.controller.test_actor import dump, start
from tests.scram_helpers import upsertion

T = timedelta(seconds=10)
PASSWORD = "tr0ub4dor&3"


def _upsert(name: str, mechanism: int = 1, iterations: int = 4096) -> sc.ScramUpsertion:
    return upsertion(name, PASSWORD, mechanism, iterations, f"salt-of-{name}".encode())


def test_alter_is_durable_before_the_reply_and_survives_a_restart(sqlite_url):
    s1 = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        ctl, _ = start(s1, sqlite_url, **{"shoal.controller.snapshot.interval.events": "3"})
        r = s1.ask(ctl, M.AlterUserScramCredentialsRequest((), (_upsert("alice"), _upsert("bob", 2, 8192), _upsert("eve", 1, 100))), T)
        assert isinstance(r, M.AlterUserScramCredentialsReply)
        assert [(x.user, x.error) for x in r.results] == [("alice", None), ("bob", None), ("eve", "UNACCEPTABLE_CREDENTIAL")]
        # the events are in the log when the reply arrives
        kinds = [type(e.decode()).__name__ for e in open_event_log(sqlite_url).read_stream(STREAM_ID)]
        assert kinds.count("UserScramCredentialSet") == 2
        r = s1.ask(ctl, M.AlterUserScramCredentialsRequest((sc.ScramDeletion("bob", 2), sc.ScramDeletion("zed", 1)), ()), T)
        assert [(x.user, x.error) for x in r.results] == [("bob", None), ("zed", "RESOURCE_NOT_FOUND")]
        d = s1.ask(ctl, M.DescribeUserScramCredentialsRequest(None), T)
        assert isinstance(d, M.DescribeUserScramCredentialsReply)
        assert [(x.user, x.infos) for x in d.results] == [("alice", (sc.CredentialInfo(1, 4096),))]
        d = s1.ask(ctl, M.DescribeUserScramCredentialsRequest(("bob", "alice")), T)
        assert [(x.user, x.error) for x in d.results] == [("bob", "RESOURCE_NOT_FOUND"), ("alice", None)]
        creds = s1.ask(ctl, M.ScramCredentialsRequest(), T)
        assert isinstance(creds, M.ScramCredentialsReply)
        assert [(u, m, c.iterations) for u, m, c in creds.credentials] == [("alice", "SCRAM-SHA-256", 4096)]
        before = dump(s1, ctl)
        assert before.state["scram"][0]["user"] == "alice"
    finally:
        s1.shutdown()
    log = open_event_log(sqlite_url)
    events = [e.decode() for e in log.read_stream(STREAM_ID)]
    assert [type(e) for e in events if isinstance(e, (UserScramCredentialSet, UserScramCredentialRemoved))] == [
        UserScramCredentialSet,
        UserScramCredentialSet,
        UserScramCredentialRemoved,
    ]
    snap = log.load_snapshot(STREAM_ID)
    assert snap is not None and b"alice" in snap.state  # a snapshot was written with the credentials
    s2 = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        ctl2, _ = start(s2, sqlite_url)
        after = dump(s2, ctl2)
        assert after.state["scram"] == before.state["scram"]
        creds = s2.ask(ctl2, M.ScramCredentialsRequest(), T)
        assert [(u, m) for u, m, _ in creds.credentials] == [("alice", "SCRAM-SHA-256")]
        # the recovered credential still verifies the password: keys as derived from it
        _, _, cred = creds.credentials[0]
        assert cred == sc.ScramCredential(b"salt-of-alice", *sc.derive_keys("SCRAM-SHA-256", _upsert("alice").salted_password), 4096)
    finally:
        s2.shutdown()


def test_rejected_alteration_appends_nothing(asys, sqlite_url):
    ctl, _ = start(asys, sqlite_url)
    version = open_event_log(sqlite_url).stream_version(STREAM_ID)
    r = asys.ask(ctl, M.AlterUserScramCredentialsRequest((sc.ScramDeletion("nobody", 1),), (_upsert("", 1), _upsert("x", 7))), T)
    assert sorted((x.user, x.error) for x in r.results) == [
        ("", "UNACCEPTABLE_CREDENTIAL"),
        ("nobody", "RESOURCE_NOT_FOUND"),
        ("x", "UNSUPPORTED_SASL_MECHANISM"),
    ]
    assert open_event_log(sqlite_url).stream_version(STREAM_ID) == version


def test_a_logged_alter_message_shows_no_salted_password():
    """Thespian and the controller log messages with ``%r`` (dead letters, poison, handler
    failures): the salted password and salt are not in the request's repr."""
    u = _upsert("alice")
    text = repr(M.AlterUserScramCredentialsRequest((), (u,)))
    assert "alice" in text and "4096" in text
    assert repr(u.salted_password) not in text and u.salted_password.hex() not in text and repr(u.salt) not in text
    assert "stored_key" not in repr(sc.ScramCredential(b"s" * 16, b"k" * 32, b"v" * 32, 4096))
