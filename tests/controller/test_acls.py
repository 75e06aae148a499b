"""The ACL domain (pure): StandardAuthorizer rules, filter matching, CreateAcls/DeleteAcls
deciders, and Hypothesis properties of the indexed AclSet against a naive reference."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.controller import acls as ac
from actors.controller.acls import AclBinding, AclBindingFilter, AclSet, CreateAcls, DeleteAcls
from events.controller import AclsCreated, AclsDeleted


def acl(rtype="TOPIC", name="t", pattern="LITERAL", principal="User:alice", host="*", op="READ", perm="ALLOW") -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


# --- authorization rules ---------------------------------------------------------------------


def test_no_acls_denies_unless_allow_everyone():
    s = AclSet()
    assert not s.authorize("User:alice", "1.2.3.4", "READ", "TOPIC", "t")
    assert s.authorize("User:alice", "1.2.3.4", "READ", "TOPIC", "t", allow_if_no_acl=True)


def test_acls_on_the_resource_for_someone_else_deny_even_with_allow_everyone():
    s = AclSet([acl(principal="User:bob")])
    assert not s.authorize("User:alice", "h", "READ", "TOPIC", "t", allow_if_no_acl=True)
    # another topic has no ACLs: the default applies there
    assert s.authorize("User:alice", "h", "READ", "TOPIC", "u", allow_if_no_acl=True)


def test_super_users_bypass_deny():
    s = AclSet([acl(principal="User:admin", perm="DENY", op="ALL")])
    assert s.authorize("User:admin", "h", "WRITE", "TOPIC", "t", super_users=frozenset({"User:admin"}))
    assert not s.authorize("User:admin", "h", "WRITE", "TOPIC", "t")


def test_deny_wins_over_allow():
    s = AclSet([acl(op="ALL"), acl(op="WRITE", perm="DENY")])
    assert s.authorize("User:alice", "h", "READ", "TOPIC", "t")
    assert not s.authorize("User:alice", "h", "WRITE", "TOPIC", "t")


def test_implied_describe_and_describe_configs_for_allow_only():
    s = AclSet([acl(op="WRITE"), acl(op="ALTER_CONFIGS")])
    assert s.authorize("User:alice", "h", "DESCRIBE", "TOPIC", "t")
    assert s.authorize("User:alice", "h", "DESCRIBE_CONFIGS", "TOPIC", "t")
    assert not s.authorize("User:alice", "h", "READ", "TOPIC", "t")
    # a DENY of READ does not deny DESCRIBE
    s2 = AclSet([acl(op="DESCRIBE"), acl(op="READ", perm="DENY")])
    assert s2.authorize("User:alice", "h", "DESCRIBE", "TOPIC", "t")
    assert not s2.authorize("User:alice", "h", "READ", "TOPIC", "t")


def test_patterns_wildcards_and_hosts():
    s = AclSet([
        acl(name="orders-", pattern="PREFIXED", op="READ"),
        acl(name="*", principal="User:*", op="DESCRIBE"),
        acl(name="pay", op="WRITE", host="10.0.0.1"),
    ])
    assert s.authorize("User:alice", "h", "READ", "TOPIC", "orders-eu")
    assert not s.authorize("User:alice", "h", "READ", "TOPIC", "orders")  # the prefix is longer than the name
    assert s.authorize("User:carol", "h", "DESCRIBE", "TOPIC", "anything")
    assert s.authorize("User:alice", "10.0.0.1", "WRITE", "TOPIC", "pay")
    assert not s.authorize("User:alice", "10.0.0.2", "WRITE", "TOPIC", "pay")
    assert not s.authorize("User:alice", "h", "READ", "GROUP", "orders-eu")  # another resource type


def test_literal_name_is_not_a_prefix():
    s = AclSet([acl(name="ab", op="READ")])
    assert not s.authorize("User:alice", "h", "READ", "TOPIC", "abc")


def test_authorize_by_resource_type():
    s = AclSet([acl(name="a", op="WRITE")])
    assert s.authorize_by_resource_type("User:alice", "h", "WRITE", "TOPIC")
    assert not s.authorize_by_resource_type("User:bob", "h", "WRITE", "TOPIC")
    s.add(acl(name="*", op="WRITE", perm="DENY"))
    assert not s.authorize_by_resource_type("User:alice", "h", "WRITE", "TOPIC")
    assert AclSet().authorize_by_resource_type("User:x", "h", "WRITE", "TOPIC", allow_if_no_acl=True)


def test_authorize_by_resource_type_checks_the_hardcode_resource_first():
    # Kafka's default Authorizer.authorizeByResourceType: authorize(LITERAL "hardcode") first.
    # With allow.everyone.if.no.acl.found an ACL on another topic does not deny: no ACL covers "hardcode".
    s = AclSet([acl(name="orders", principal="User:bob", op="WRITE")])
    assert s.authorize_by_resource_type("User:alice", "h", "WRITE", "TOPIC", allow_if_no_acl=True)
    assert not s.authorize_by_resource_type("User:alice", "h", "WRITE", "TOPIC")
    # an ACL covering "hardcode" (a prefix of it) for someone else: the default no longer applies
    s.add(acl(name="hard", pattern="PREFIXED", principal="User:bob", op="READ"))
    assert not s.authorize_by_resource_type("User:alice", "h", "WRITE", "TOPIC", allow_if_no_acl=True)
    # super users pass even a wildcard DENY
    s.add(acl(name="*", principal="User:*", op="ALL", perm="DENY"))
    assert s.authorize_by_resource_type("User:root", "h", "WRITE", "TOPIC", frozenset({"User:root"}))


def test_authorize_by_resource_type_dominated_patterns():
    allow_lit, allow_pre = acl(name="pay-eu", op="WRITE"), acl(name="pay", pattern="PREFIXED", op="WRITE")
    assert not AclSet([allow_lit, acl(name="pay-eu", op="WRITE", perm="DENY")]).authorize_by_resource_type("User:alice", "h", "WRITE", "TOPIC")
    assert not AclSet([allow_lit, allow_pre, acl(name="pa", pattern="PREFIXED", op="ALL", perm="DENY")]).authorize_by_resource_type("User:alice", "h", "WRITE", "TOPIC")
    # a LITERAL deny does not dominate a PREFIXED allow of the same name
    assert AclSet([allow_pre, acl(name="pay", op="WRITE", perm="DENY")]).authorize_by_resource_type("User:alice", "h", "WRITE", "TOPIC")
    # a PREFIXED deny named "*" does not dominate the LITERAL wildcard allow
    assert AclSet([acl(name="*", op="WRITE"), acl(name="*", pattern="PREFIXED", op="WRITE", perm="DENY")]).authorize_by_resource_type("User:alice", "h", "WRITE", "TOPIC")
    # no implied operations: READ does not give DESCRIBE here
    assert not AclSet([acl(name="x", op="READ")]).authorize_by_resource_type("User:alice", "h", "DESCRIBE", "TOPIC")


# --- filters -----------------------------------------------------------------------------------


def test_match_filter_semantics():
    lit, wild, pre = acl(name="foo"), acl(name="*"), acl(name="fo", pattern="PREFIXED")
    other = acl(name="bar")
    s = AclSet([lit, wild, pre, other])
    assert s.matching(AclBindingFilter("TOPIC", "foo", "MATCH")) == sorted([lit, wild, pre])
    assert s.matching(AclBindingFilter("TOPIC", "foo", "ANY")) == [lit]
    assert s.matching(AclBindingFilter("TOPIC", "fo", "PREFIXED")) == [pre]
    assert s.matching(AclBindingFilter("ANY", None, "ANY")) == sorted([lit, wild, pre, other])
    assert s.matching(AclBindingFilter("ANY", None, "ANY", principal="User:bob")) == []


# --- deciders ---------------------------------------------------------------------------------


def test_create_validation_errors_and_idempotence():
    existing = acl()
    s = AclSet([existing])
    bad = [
        acl(rtype="ANY"),
        acl(rtype="UNKNOWN"),
        acl(pattern="MATCH"),
        acl(pattern="ANY"),
        acl(op="ANY"),
        acl(op="UNKNOWN"),
        acl(perm="ANY"),
        acl(name=""),
        acl(rtype="CLUSTER", name="c"),
        acl(principal="alice"),
    ]
    new = acl(op="WRITE")
    events, results = ac.decide_create_acls(s, CreateAcls(tuple(bad) + (existing, new, new)))
    assert [r.error for r in results] == ["INVALID_REQUEST"] * len(bad) + [None, None, None]
    assert results[8].message == "The only valid name for the CLUSTER resource is kafka-cluster"
    assert events == [AclsCreated((new,))]


def test_delete_reports_per_filter_and_deletes_once():
    a, b = acl(name="x"), acl(name="y")
    s = AclSet([a, b])
    f_all = AclBindingFilter()
    f_x = AclBindingFilter("TOPIC", "x", "LITERAL")
    f_bad = AclBindingFilter("UNKNOWN")
    events, results = ac.decide_delete_acls(s, DeleteAcls((f_all, f_x, f_bad)))
    assert results[0].matched == (a, b) and results[1].matched == (a,)
    assert results[2].error == "INVALID_REQUEST" and results[2].message == "Unknown patternFilter."
    assert events == [AclsDeleted((a, b))]
    ac.evolve(s, events[0])
    assert len(s) == 0
    assert ac.decide_delete_acls(s, DeleteAcls((f_all,)))[0] == []


def test_snapshot_roundtrip():
    s = AclSet([acl(), acl(name="p", pattern="PREFIXED", op="ALL", perm="DENY")])
    assert list(AclSet.from_list(s.to_list())) == list(s)


# --- properties against a naive reference ----------------------------------------------------

names = st.sampled_from(["a", "ab", "abc", "b", "*", "ba"])
bindings = st.builds(
    AclBinding,
    st.sampled_from(["TOPIC", "GROUP"]),
    names,
    st.sampled_from(["LITERAL", "PREFIXED"]),
    st.sampled_from(["User:alice", "User:bob", "User:*"]),
    st.sampled_from(["*", "h1", "h2"]),
    st.sampled_from(["READ", "WRITE", "DESCRIBE", "ALTER", "ALTER_CONFIGS", "DESCRIBE_CONFIGS", "ALL", "DELETE"]),
    st.sampled_from(["ALLOW", "DENY"]),
)


def naive_authorize(acls, principal, host, op, rtype, name, allow_if_no_acl):
    """Straight from the rules, scanning every ACL (no index)."""
    covering = [
        b
        for b in acls
        if b.resource_type == rtype
        and ((b.pattern_type == "LITERAL" and b.resource_name in (name, "*")) or (b.pattern_type == "PREFIXED" and name.startswith(b.resource_name)))
    ]
    applies = [b for b in covering if b.principal in (principal, "User:*") and b.host in (host, "*")]
    implied = {"DESCRIBE": {"DESCRIBE", "READ", "WRITE", "DELETE", "ALTER"}, "DESCRIBE_CONFIGS": {"DESCRIBE_CONFIGS", "ALTER_CONFIGS"}}
    if any(b.permission == "DENY" and b.operation in ("ALL", op) for b in applies):
        return False
    if any(b.permission == "ALLOW" and (b.operation == "ALL" or b.operation in implied.get(op, {op})) for b in applies):
        return True
    return allow_if_no_acl and not covering


def naive_filter(f, b):
    if f.resource_type != "ANY" and f.resource_type != b.resource_type:
        return False
    if f.pattern_type in ("LITERAL", "PREFIXED") and f.pattern_type != b.pattern_type:
        return False
    if f.resource_name is not None:
        if f.pattern_type == "MATCH":
            ok = (b.pattern_type == "LITERAL" and b.resource_name in (f.resource_name, "*")) or (b.pattern_type == "PREFIXED" and f.resource_name.startswith(b.resource_name))
        else:
            ok = f.resource_name == b.resource_name
        if not ok:
            return False
    return (
        f.principal in (None, b.principal)
        and f.host in (None, b.host)
        and f.operation in ("ANY", b.operation)
        and f.permission in ("ANY", b.permission)
    )


@settings(max_examples=300, deadline=None)
@given(
    st.lists(bindings, max_size=12),
    st.sampled_from(["User:alice", "User:bob", "User:carol"]),
    st.sampled_from(["h1", "h2"]),
    st.sampled_from(["READ", "WRITE", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "CREATE"]),
    st.sampled_from(["TOPIC", "GROUP"]),
    st.sampled_from(["a", "ab", "abc", "b", "bab", "c"]),
    st.booleans(),
)
def test_authorize_agrees_with_naive_reference(acls, principal, host, op, rtype, name, allow_if_no_acl):
    s = AclSet(acls)
    assert s.authorize(principal, host, op, rtype, name, allow_if_no_acl=allow_if_no_acl) == naive_authorize(set(acls), principal, host, op, rtype, name, allow_if_no_acl)


filters = st.builds(
    AclBindingFilter,
    st.sampled_from(["ANY", "TOPIC", "GROUP"]),
    st.one_of(st.none(), st.sampled_from(["a", "ab", "abc", "b", "*"])),
    st.sampled_from(["ANY", "MATCH", "LITERAL", "PREFIXED"]),
    st.one_of(st.none(), st.sampled_from(["User:alice", "User:*"])),
    st.one_of(st.none(), st.sampled_from(["*", "h1"])),
    st.sampled_from(["ANY", "READ", "ALL"]),
    st.sampled_from(["ANY", "ALLOW", "DENY"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(bindings, max_size=12), filters)
def test_filter_agrees_with_naive_reference_and_delete_removes_exactly_the_matches(acls, f):
    s = AclSet(acls)
    expected = sorted(b for b in set(acls) if naive_filter(f, b))
    assert s.matching(f) == expected
    events, results = ac.decide_delete_acls(s, DeleteAcls((f,)))
    for e in events:
        ac.evolve(s, e)
    assert list(s) == sorted(set(acls) - set(expected))
    assert list(results[0].matched) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), bindings), max_size=25))
def test_index_stays_consistent_under_adds_and_removes(ops):
    s = AclSet()
    ref: set[AclBinding] = set()
    for add, b in ops:
        if add:
            assert s.add(b) == (b not in ref)
            ref.add(b)
        else:
            assert s.remove(b) == (b in ref)
            ref.discard(b)
        # the memoized lookup follows every change
        covering = {
            x
            for x in ref
            if x.resource_type == b.resource_type
            and ((x.pattern_type == "LITERAL" and x.resource_name in (b.resource_name, "*")) or (x.pattern_type == "PREFIXED" and b.resource_name.startswith(x.resource_name)))
        }
        assert set(s.matching_resource(b.resource_type, b.resource_name)) == covering
    assert list(s) == sorted(ref)
    for b in ref:
        assert b in s.matching_resource(b.resource_type, b.resource_name if b.resource_name != "*" else "zz") or b.pattern_type == "PREFIXED" and b.resource_name == "*"


def test_changes_count_only_effective_adds_and_removes():
    s = AclSet()
    s.add(acl())
    s.add(acl())
    s.remove(acl(op="WRITE"))
    assert s.changes == 1
    s.remove(acl())
    assert s.changes == 2
