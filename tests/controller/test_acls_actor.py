"""The ControllerActor's ACL handlers under ``simpleSystemBase``: CreateAcls/DeleteAcls are
events appended before the reply, AclsRequest serves the listeners' cache by token, and the
ACLs survive a restart (snapshot + replay) exactly."""

from __future__ import annotations

import pickle
from datetime import timedelta

from thespian.actors import ActorSystem

from actors.controller import messages as M
from actors.controller.acls import AclBinding, AclBindingFilter, AclCreateResult
from events.controller import STREAM_ID, AclsCreated, AclsDeleted
from store.event_log import open_event_log
from tests.controller.test_actor import folded_state, start

T = timedelta(seconds=10)


READ = AclBinding("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")
DENY = AclBinding("GROUP", "g-", "PREFIXED", "User:*", "*", "ALL", "DENY")


def test_create_describe_delete_are_events_and_tokens_track_changes(asys, sqlite_url):
    ctl, _ = start(asys, sqlite_url)
    first = asys.ask(ctl, M.AclsRequest(None), T)
    assert isinstance(first, M.AclsReply) and first.acls == ()
    assert asys.ask(ctl, M.AclsRequest(first.token), T).acls is None  # unchanged: a cheap answer
    bad = AclBinding("ANY", "x", "LITERAL", "User:a", "*", "READ", "ALLOW")
    r = asys.ask(ctl, M.CreateAclsRequest((READ, bad, DENY, READ)), T)
    assert isinstance(r, M.CreateAclsReply)
    assert [x.error for x in r.results] == [None, "INVALID_REQUEST", None, None]
    assert r.token != first.token
    now = asys.ask(ctl, M.AclsRequest(first.token), T)
    assert now.token == r.token and set(now.acls) == {READ, DENY}
    # creating existing ACLs again writes nothing and keeps the token
    again = asys.ask(ctl, M.CreateAclsRequest((READ,)), T)
    assert again.results == (AclCreateResult(),) and again.token == r.token
    d = asys.ask(ctl, M.DeleteAclsRequest((AclBindingFilter("TOPIC", "orders", "MATCH"), AclBindingFilter("UNKNOWN"))), T)
    assert isinstance(d, M.DeleteAclsReply)
    assert d.results[0].matched == (READ,) and d.results[1].error == "INVALID_REQUEST"
    assert asys.ask(ctl, M.AclsRequest(None), T).acls == (DENY,)
    types = [rec.event_type for rec in open_event_log(sqlite_url).read_stream(STREAM_ID) if "Acl" in rec.event_type]
    assert types == ["controller.AclsCreated", "controller.AclsDeleted"]


def test_acls_survive_a_restart_exactly(sqlite_url):
    s1 = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        ctl, _ = start(s1, sqlite_url, **{"shoal.controller.snapshot.interval.events": "2"})
        s1.ask(ctl, M.CreateAclsRequest((READ,)), T)
        s1.ask(ctl, M.CreateAclsRequest((DENY,)), T)
        s1.ask(ctl, M.DeleteAclsRequest((AclBindingFilter("TOPIC"),)), T)
        s1.ask(ctl, M.CreateAclsRequest((READ,)), T)
        before = s1.ask(ctl, M.StateDumpRequest(), T)
    finally:
        s1.shutdown()
    assert {tuple(sorted(a.items())) for a in before.state["acls"]} == {tuple(sorted(vars_of(b).items())) for b in (READ, DENY)}
    assert folded_state(sqlite_url) == before.state
    s2 = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        ctl2, _ = start(s2, sqlite_url)
        assert s2.ask(ctl2, M.StateDumpRequest(), T).state == before.state
        assert set(s2.ask(ctl2, M.AclsRequest(None), T).acls) == {READ, DENY}
    finally:
        s2.shutdown()


def vars_of(b: AclBinding) -> dict[str, str]:
    return {f: getattr(b, f) for f in b.__dataclass_fields__}


def test_acl_messages_and_events_pickle():
    for m in (M.CreateAclsRequest((READ,)), M.DeleteAclsRequest((AclBindingFilter(),)), M.AclsRequest("x"), M.AclsReply("t", (READ,)), AclsCreated((READ,)), AclsDeleted((DENY,))):
        assert pickle.loads(pickle.dumps(m)) == m
