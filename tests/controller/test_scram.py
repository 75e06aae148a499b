"""SCRAM credentials (KIP-554), pure: the AlterUserScramCredentials decider with every error of
Kafka's ``ScramControlManager``, the describe query of ``ScramImage.describe``, the fold, the
snapshot round trip through ``ControllerState``, and the stored keys checked by an independent
SCRAM implementation (scramp's server authenticating scramp's client with them)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
import scramp
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.controller import scram as sc
from actors.controller import state as S
from events.codec import decode_event, encode_event, new_event
from events.controller import UserScramCredentialRemoved, UserScramCredentialSet
from tests.scram_helpers import scram_exchange, upsertion

SHA256, SHA512 = 1, 2


def upsert(name: str, password: str = "pw", mechanism: int = SHA256, iterations: int = 4096, salt: bytes = b"salt-0123") -> sc.ScramUpsertion:
    return upsertion(name, password, mechanism, iterations, salt)


def alter(state: sc.ScramState, deletions=(), upsertions=()):
    events, results = sc.decide_alter(state, sc.AlterUserScramCredentials(tuple(deletions), tuple(upsertions)))
    return events, {r.user: (r.error, r.message) for r in results}, results


def applied(state: sc.ScramState, events) -> sc.ScramState:
    for e in events:
        sc.evolve(state, e)
    return state


def test_upsertion_stores_derived_keys_never_the_salted_password():
    u = upsert("alice", "secret-password")
    events, res, _ = alter(sc.ScramState(), upsertions=[u])
    assert res == {"alice": (None, None)}
    (ev,) = events
    assert isinstance(ev, UserScramCredentialSet)
    assert (ev.user, ev.mechanism, ev.salt, ev.iterations) == ("alice", "SCRAM-SHA-256", b"salt-0123", 4096)
    # RFC 5802: StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey = HMAC(SaltedPassword, "Server Key")
    import hmac

    client_key = hmac.new(u.salted_password, b"Client Key", "sha256").digest()
    assert ev.stored_key == hashlib.sha256(client_key).digest()
    assert ev.server_key == hmac.new(u.salted_password, b"Server Key", "sha256").digest()
    encoded = encode_event(ev)
    assert u.salted_password not in encoded and b"secret-password" not in encoded
    import base64

    assert base64.b64encode(u.salted_password) not in encoded
    assert "salted_password" not in repr(u) and repr(u.salted_password) not in repr(u)


def test_sha512_keys_have_sha512_length():
    events, res, _ = alter(sc.ScramState(), upsertions=[upsert("bob", mechanism=SHA512, iterations=8192)])
    assert res == {"bob": (None, None)}
    assert events[0].mechanism == "SCRAM-SHA-512" and len(events[0].stored_key) == 64 and len(events[0].server_key) == 64


@pytest.mark.parametrize(
    "u, error, message",
    [
        (upsert("", "pw"), "UNACCEPTABLE_CREDENTIAL", "Username must not be empty"),
        (upsert("a", mechanism=0), "UNSUPPORTED_SASL_MECHANISM", "Unknown SCRAM mechanism"),
        (upsert("a", mechanism=3), "UNSUPPORTED_SASL_MECHANISM", "Unknown SCRAM mechanism"),
        (upsert("a", iterations=4095), "UNACCEPTABLE_CREDENTIAL", "Too few iterations"),
        (upsert("a", iterations=16385), "UNACCEPTABLE_CREDENTIAL", "Too many iterations"),
        (sc.ScramUpsertion("a", SHA256, 4096, b"s", b""), "UNKNOWN_SERVER_ERROR", "Empty key"),
    ],
)
def test_upsertion_errors(u, error, message):
    events, res, _ = alter(sc.ScramState(), upsertions=[u])
    assert events == [] and res == {u.name: (error, message)}


@pytest.mark.parametrize("iterations", [4096, 16384])
def test_iteration_bounds_are_inclusive(iterations):
    events, res, _ = alter(sc.ScramState(), upsertions=[upsert("a", iterations=iterations)])
    assert res == {"a": (None, None)} and events[0].iterations == iterations


def test_deletion_of_missing_credential_is_resource_not_found():
    state = applied(sc.ScramState(), alter(sc.ScramState(), upsertions=[upsert("a", mechanism=SHA256)])[0])
    # a user with a SHA-256 credential only: deleting its SHA-512 one is not found
    events, res, _ = alter(state, deletions=[sc.ScramDeletion("a", SHA512), sc.ScramDeletion("nobody", SHA256)])
    assert events == []
    assert res == {
        "a": ("RESOURCE_NOT_FOUND", "Attempt to delete a user credential that does not exist"),
        "nobody": ("RESOURCE_NOT_FOUND", "Attempt to delete a user credential that does not exist"),
    }
    events, res, _ = alter(state, deletions=[sc.ScramDeletion("", SHA256), sc.ScramDeletion("a", 9)])
    assert res == {"": ("UNACCEPTABLE_CREDENTIAL", "Username must not be empty"), "a": ("UNSUPPORTED_SASL_MECHANISM", "Unknown SCRAM mechanism")}


def test_deletion_removes_the_credential():
    state = applied(sc.ScramState(), alter(sc.ScramState(), upsertions=[upsert("a"), upsert("b", mechanism=SHA512)])[0])
    events, res, _ = alter(state, deletions=[sc.ScramDeletion("a", SHA256)])
    assert res == {"a": (None, None)} and events == [UserScramCredentialRemoved("a", "SCRAM-SHA-256")]
    applied(state, events)
    assert state.get("a", "SCRAM-SHA-256") is None and state.get("b", "SCRAM-SHA-512") is not None


@pytest.mark.parametrize(
    "deletions, upsertions",
    [
        ([], [upsert("a"), upsert("a", mechanism=SHA512)]),  # same user, even another mechanism
        ([sc.ScramDeletion("a", SHA256)], [upsert("a")]),
        ([sc.ScramDeletion("a", SHA256), sc.ScramDeletion("a", SHA512)], []),
        ([sc.ScramDeletion("a", SHA256)], [upsert("a"), upsert("a")]),  # a third mention keeps the one error
    ],
)
def test_user_altered_twice_is_duplicate_resource_and_nothing_of_it_applies(deletions, upsertions):
    state = applied(sc.ScramState(), alter(sc.ScramState(), upsertions=[upsert("a"), upsert("a2", mechanism=SHA512)])[0])
    state = applied(state, alter(state, upsertions=[upsert("a", mechanism=SHA512)])[0])
    events, res, results = alter(state, deletions, [*upsertions, upsert("other")])
    assert res["a"] == ("DUPLICATE_RESOURCE", "A user credential cannot be altered twice in the same request")
    assert res["other"] == (None, None)
    assert [getattr(e, "user") for e in events] == ["other"]
    assert len(results) == 2  # one result per user


def test_first_error_of_a_user_wins_over_a_later_duplicate():
    events, res, _ = alter(sc.ScramState(), deletions=[sc.ScramDeletion("a", SHA256)], upsertions=[upsert("a")])
    assert events == [] and res == {"a": ("RESOURCE_NOT_FOUND", "Attempt to delete a user credential that does not exist")}


def test_results_list_deletions_then_upsertions_then_errors():
    state = applied(sc.ScramState(), alter(sc.ScramState(), upsertions=[upsert("d")])[0])
    _, _, results = alter(state, [sc.ScramDeletion("d", SHA256)], [upsert("bad", iterations=1), upsert("u")])
    assert [(r.user, r.error) for r in results] == [("d", None), ("u", None), ("bad", "UNACCEPTABLE_CREDENTIAL")]


def test_replacing_a_credential_changes_keys_and_iterations():
    state = applied(sc.ScramState(), alter(sc.ScramState(), upsertions=[upsert("a", "one")])[0])
    old = state.get("a", "SCRAM-SHA-256")
    state = applied(state, alter(state, upsertions=[upsert("a", "two", iterations=5000, salt=b"other")])[0])
    new = state.get("a", "SCRAM-SHA-256")
    assert new.iterations == 5000 and new.salt == b"other" and new.stored_key != old.stored_key and len(state.credentials) == 1


def test_describe():
    state = sc.ScramState()
    state = applied(state, alter(state, upsertions=[upsert("b", mechanism=SHA512, iterations=8192), upsert("a")])[0])
    state = applied(state, alter(state, upsertions=[upsert("b", iterations=4096)])[0])
    everyone = [(r.user, r.error, [(i.mechanism, i.iterations) for i in r.infos]) for r in sc.describe(state, None)]
    assert everyone == [("a", None, [(1, 4096)]), ("b", None, [(1, 4096), (2, 8192)])]
    assert sc.describe(state, []) == sc.describe(state, None)  # empty list: all users too
    some = sc.describe(state, ["b", "x", "a", "x"])
    assert [(r.user, r.error, r.message) for r in some] == [
        ("b", None, None),
        ("x", "DUPLICATE_RESOURCE", "Cannot describe SCRAM credentials for the same user twice in a single request: x"),
        ("a", None, None),
    ]
    assert sc.describe(state, ["zed"])[0].error == "RESOURCE_NOT_FOUND"
    assert sc.describe(state, ["zed"])[0].message == "Attempt to describe a user credential that does not exist: zed"
    assert sc.describe(sc.ScramState(), None) == []


def test_controller_state_decides_folds_and_snapshots_credentials():
    cs = S.ControllerState()
    assert "scram" not in cs.to_dict()  # snapshots of logs without SCRAM keep their shape
    d = S.decide(cs, sc.AlterUserScramCredentials((), (upsert("alice", "pw1"), upsert("bob", "pw2", SHA512))), 0)
    assert isinstance(d, S.Decision) and [r.error for r in d.reply] == [None, None]
    for e in d.events:
        decoded = decode_event(type(e).event_type, type(e).schema_version, new_event(e).data)
        assert decoded == e  # bytes survive the JSON codec (base64)
        S.evolve(cs, decoded)
    snap = json.loads(json.dumps(cs.to_dict()))
    back = S.ControllerState()
    back.load_dict(snap, 7)
    assert back.scram.credentials == cs.scram.credentials and back.to_dict() == cs.to_dict()
    assert "pw1" not in json.dumps(snap)


@pytest.mark.parametrize("mech_type", [SHA256, SHA512])
def test_stored_credential_authenticates_with_scramp(mech_type):
    mech = sc.MECHANISMS[mech_type]
    salt = os.urandom(16)
    state = sc.ScramState()
    applied(state, alter(state, upsertions=[upsert("alice", "correct horse", mech_type, 4096, salt)])[0])
    cred = state.get("alice", mech)
    assert scram_exchange(cred, mech, "alice", "correct horse")
    assert not scram_exchange(cred, mech, "alice", "wrong horse")
    # the same keys as scramp's own derivation from the password
    assert (cred.salt, cred.stored_key, cred.server_key, cred.iterations) == scramp.ScramMechanism(mech).make_auth_info("correct horse", 4096, salt)


# a log of alterations decided one after the other: the fold equals a dictionary model
_users = st.sampled_from(["a", "b", "c", ""])
_op = st.one_of(
    st.builds(lambda n, m, i: ("u", n, m, i), _users, st.sampled_from([0, 1, 2]), st.sampled_from([4000, 4096, 10000, 20000])),
    st.builds(lambda n, m: ("d", n, m), _users, st.sampled_from([1, 2, 5])),
)


@settings(max_examples=60, deadline=None)
@given(requests=st.lists(st.lists(_op, max_size=4), max_size=8))
def test_fold_matches_a_model_of_accepted_alterations(requests):
    state, model = sc.ScramState(), {}
    for ops in requests:
        dels = [sc.ScramDeletion(o[1], o[2]) for o in ops if o[0] == "d"]
        ups = [sc.ScramUpsertion(o[1], o[2], o[3], b"s", b"k") for o in ops if o[0] == "u"]
        events, results = sc.decide_alter(state, sc.AlterUserScramCredentials(tuple(dels), tuple(ups)))
        assert len({r.user for r in results}) == len(results)  # one result per user
        ok = {r.user for r in results if r.error is None}
        for d in dels:
            if d.name in ok:
                model.pop((d.name, sc.MECHANISMS[d.mechanism]))
        for u in ups:
            if u.name in ok:
                model[(u.name, sc.MECHANISMS[u.mechanism])] = u.iterations
        applied(state, events)
        assert {k: c.iterations for k, c in state.credentials.items()} == model
        assert all(sc.MIN_ITERATIONS <= c.iterations <= sc.MAX_ITERATIONS and k[0] for k, c in state.credentials.items())
