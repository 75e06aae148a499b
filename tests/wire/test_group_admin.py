"""wire/group_admin.py handlers (DescribeGroups 15, DeleteGroups 42, OffsetDelete 47,
AlterShareGroupOffsets 91, DeleteShareGroupOffsets 92) at every advertised version over a plain
backend, and their ACL rules in the AuthorizingBackend (Kafka ``KafkaApis``)."""

from __future__ import annotations

import uuid
from types import SimpleNamespace as NS

import pytest
from kio.schema.errors import ErrorCode

from actors.consumer.classic import DescribedGroup, DescribedMember, OffsetDeleteResult
from tests.wire.fake_backend import FakeBackend
from tests.wire.test_authz import allow, make
from wire import group_admin
from wire.authz import AuthorizingBackend, authorized_operations
from wire.dispatch import SUPPORTED
from wire.protocol import DecodedRequest, encode_response

TID = uuid.UUID("0b8e4f4a-9a5c-4d1e-8f00-5a6b7c8d9e0f")


class Backend(FakeBackend):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list = []

    def describe_group(self, group):
        self.calls.append(("describe", group))
        if group == "g":
            return None, None, DescribedGroup("g", "Stable", "consumer", "range", (DescribedMember("m1", "i1", "c", "/h", b"md", b"as"),))
        return "GROUP_ID_NOT_FOUND", f"Group {group} not found.", DescribedGroup(group, "Dead", "", "", ())

    def delete_group(self, group):
        self.calls.append(("delete", group))
        return {"g": None, "busy": "NON_EMPTY_GROUP"}.get(group, "GROUP_ID_NOT_FOUND")

    def consumer_delete_offsets(self, group, partitions):
        self.calls.append(("offset_delete", group, list(partitions)))
        if group != "g":
            return OffsetDeleteResult("GROUP_ID_NOT_FOUND")
        return OffsetDeleteResult(None, tuple((t, p, "GROUP_SUBSCRIBED_TO_TOPIC" if t == "sub" else None) for t, p in partitions))

    def share_alter_offsets(self, group, topics):
        self.calls.append(("alter", group, list(topics)))
        if group != "s":
            return "NON_EMPTY_GROUP", "Share group s is not empty.", []
        return None, None, [(n, TID if n == "t" else None, [(p, None if n == "t" else "UNKNOWN_TOPIC_OR_PARTITION", None) for p, _o in ps]) for n, ps in topics]

    def share_delete_offsets(self, group, topics):
        self.calls.append(("share_delete", group, list(topics)))
        if group != "s":
            return "GROUP_ID_NOT_FOUND", "Group x not found.", []
        return None, None, [(n, TID, None, None) if n == "t" else (n, None, "UNKNOWN_TOPIC_OR_PARTITION", "There is no offset information to delete.") for n in topics]


def req(key: int, v: int, **body) -> DecodedRequest:
    return DecodedRequest(key, v, 1, "client", None, NS(**body))


def versions(key: int) -> list[int]:
    lo, hi = SUPPORTED[key]
    return list(range(lo, hi + 1))


@pytest.mark.parametrize("v", versions(15))
def test_describe_groups(v):
    b = Backend()
    r = group_admin.describe_groups(req(15, v, groups=("g", "missing"), include_authorized_operations=True), b)
    encode_response(1, r)
    g, missing = r.groups
    assert (g.error_code, g.group_state, g.protocol_type, g.protocol_data) == (ErrorCode.none, "Stable", "consumer", "range")
    [m] = g.members
    assert (m.member_id, m.client_id, m.member_metadata, m.member_assignment) == ("m1", "c", b"md", b"as")
    assert missing.group_state == "Dead" and missing.members == ()
    if v >= 6:
        assert missing.error_code == ErrorCode.group_id_not_found and missing.error_message == "Group missing not found."
    else:
        assert missing.error_code == ErrorCode.none
    if v >= 3:
        assert g.authorized_operations == (1 << 3) | (1 << 8) | (1 << 6) | (1 << 10) | (1 << 11)
        assert (missing.authorized_operations == -2147483648) == (v >= 6)  # only groups answered without error


def test_describe_groups_without_operations_asked():
    r = group_admin.describe_groups(req(15, 5, groups=("g",), include_authorized_operations=False), Backend())
    assert r.groups[0].authorized_operations == -2147483648


@pytest.mark.parametrize("v", versions(42))
def test_delete_groups(v):
    b = Backend()
    r = group_admin.delete_groups(req(42, v, groups_names=("g", "busy", "x", "g", "")), b)
    encode_response(1, r)
    assert [(x.group_id, x.error_code) for x in r.results] == [
        ("g", ErrorCode.none), ("busy", ErrorCode.non_empty_group), ("x", ErrorCode.group_id_not_found), ("", ErrorCode.group_id_not_found)]
    # distinct ids; the empty one is a group id like any other (Kafka rejects only a null id)
    assert [c[1] for c in b.calls] == ["g", "busy", "x", ""]


def _od_topics(*spec):
    return tuple(NS(name=t, partitions=tuple(NS(partition_index=p) for p in ps)) for t, ps in spec)


def test_offset_delete():
    b = Backend()
    r = group_admin.offset_delete(req(47, 0, group_id="g", topics=_od_topics(("t", (0, 1)), ("sub", (0,)))), b)
    encode_response(1, r)
    assert r.error_code == ErrorCode.none
    got = [(t.name, p.partition_index, p.error_code) for t in r.topics for p in t.partitions]
    assert got == [("t", 0, ErrorCode.none), ("t", 1, ErrorCode.none), ("sub", 0, ErrorCode.group_subscribed_to_topic)]
    bad = group_admin.offset_delete(req(47, 0, group_id="x", topics=_od_topics(("t", (0,)))), b)
    encode_response(1, bad)
    assert bad.error_code == ErrorCode.group_id_not_found and bad.topics == ()


def _alter_topics(*spec):
    return tuple(NS(topic_name=t, partitions=tuple(NS(partition_index=p, start_offset=o) for p, o in ps)) for t, ps in spec)


def test_alter_share_group_offsets():
    b = Backend()
    r = group_admin.alter_share_group_offsets(req(91, 0, group_id="s", topics=_alter_topics(("t", ((0, 5),)), ("nope", ((0, 1),)))), b)
    encode_response(1, r)
    assert r.error_code == ErrorCode.none
    assert [(t.topic_name, t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.responses] == [
        ("t", TID, [(0, ErrorCode.none)]), ("nope", uuid.UUID(int=0), [(0, ErrorCode.unknown_topic_or_partition)])]
    assert b.calls[-1] == ("alter", "s", [("t", [(0, 5)]), ("nope", [(0, 1)])])
    busy = group_admin.alter_share_group_offsets(req(91, 0, group_id="busy", topics=_alter_topics(("t", ((0, 5),)))), b)
    encode_response(1, busy)
    assert busy.error_code == ErrorCode.non_empty_group and busy.responses == ()


def test_delete_share_group_offsets():
    b = Backend()
    r = group_admin.delete_share_group_offsets(req(92, 0, group_id="s", topics=(NS(topic_name="t"), NS(topic_name="u"))), b)
    encode_response(1, r)
    assert [(t.topic_name, t.error_code, t.error_message) for t in r.responses] == [
        ("t", ErrorCode.none, None), ("u", ErrorCode.unknown_topic_or_partition, "There is no offset information to delete.")]
    missing = group_admin.delete_share_group_offsets(req(92, 0, group_id="x", topics=(NS(topic_name="t"),)), b)
    encode_response(1, missing)
    assert missing.error_code == ErrorCode.group_id_not_found and missing.responses == ()


# ------------------------------------------------------------------------------ ACLs


def test_describe_group_needs_describe_and_operations_follow_the_acls():
    inner = Backend()
    authz, *_ = make([allow("GROUP", "g", "DESCRIBE"), allow("GROUP", "g", "READ")])
    b = AuthorizingBackend(inner, authz)
    assert b.describe_group("g")[0] is None
    assert b.describe_group("other")[0] == "GROUP_AUTHORIZATION_FAILED"
    assert ("describe", "other") not in inner.calls
    assert authorized_operations(authz, "GROUP", "g") == (1 << 3) | (1 << 8)
    r = group_admin.describe_groups(req(15, 5, groups=("g", "other"), include_authorized_operations=True), b, authz)
    assert r.groups[0].authorized_operations == (1 << 3) | (1 << 8)
    assert r.groups[1].error_code == ErrorCode.group_authorization_failed and r.groups[1].group_state == ""


def test_delete_group_needs_delete():
    inner = Backend()
    b = AuthorizingBackend(inner, make([allow("GROUP", "g", "READ")])[0])
    assert b.delete_group("g") == "GROUP_AUTHORIZATION_FAILED" and inner.calls == []
    assert AuthorizingBackend(inner, make([allow("GROUP", "g", "DELETE")])[0]).delete_group("g") is None


def test_offset_delete_needs_delete_on_group_and_read_on_topics():
    inner = Backend()
    no_group = AuthorizingBackend(inner, make([allow("GROUP", "g", "READ"), allow("TOPIC", "*", "READ")])[0])
    assert no_group.consumer_delete_offsets("g", [("t", 0)]).error == "GROUP_AUTHORIZATION_FAILED" and inner.calls == []
    b = AuthorizingBackend(inner, make([allow("GROUP", "g", "DELETE"), allow("TOPIC", "t", "READ")])[0])
    r = b.consumer_delete_offsets("g", [("t", 0), ("u", 0)])
    assert r.partitions == (("t", 0, None), ("u", 0, "TOPIC_AUTHORIZATION_FAILED"))
    assert inner.calls[-1] == ("offset_delete", "g", [("t", 0)])
    # a group error keeps the partitions answered outside the coordinator (KafkaApis merges them)
    r = AuthorizingBackend(inner, make([allow("GROUP", "x", "DELETE"), allow("TOPIC", "t", "READ")])[0]).consumer_delete_offsets("x", [("t", 0), ("u", 0)])
    assert r == OffsetDeleteResult("GROUP_ID_NOT_FOUND", (("u", 0, "TOPIC_AUTHORIZATION_FAILED"),))
    resp = group_admin.offset_delete(req(47, 0, group_id="x", topics=_od_topics(("t", (0,)), ("u", (0,)))),
                                     AuthorizingBackend(inner, make([allow("GROUP", "x", "DELETE"), allow("TOPIC", "t", "READ")])[0]))
    encode_response(1, resp)
    assert resp.error_code == ErrorCode.group_id_not_found
    assert [(t.name, [p.error_code for p in t.partitions]) for t in resp.topics] == [("u", [ErrorCode.topic_authorization_failed])]


def test_alter_share_offsets_needs_read_on_group_and_topics():
    inner = Backend()
    assert AuthorizingBackend(inner, make([allow("GROUP", "s", "DELETE")])[0]).share_alter_offsets("s", [("t", [(0, 1)])])[0] == "GROUP_AUTHORIZATION_FAILED"
    b = AuthorizingBackend(inner, make([allow("GROUP", "s", "READ"), allow("TOPIC", "t", "READ")])[0])
    err, _msg, rows = b.share_alter_offsets("s", [("t", [(0, 1)]), ("u", [(0, 2), (1, 3)])])
    assert err is None
    assert [(n, [(p, e) for p, e, _m in ps]) for n, _tid, ps in rows] == [
        ("t", [(0, None)]), ("u", [(0, "TOPIC_AUTHORIZATION_FAILED"), (1, "TOPIC_AUTHORIZATION_FAILED")])]
    assert inner.calls[-1] == ("alter", "s", [("t", [(0, 1)])])


def test_delete_share_offsets_needs_delete_on_group_and_read_on_topics():
    inner = Backend()
    assert AuthorizingBackend(inner, make([allow("GROUP", "s", "READ")])[0]).share_delete_offsets("s", ["t"])[0] == "GROUP_AUTHORIZATION_FAILED"
    b = AuthorizingBackend(inner, make([allow("GROUP", "s", "DELETE"), allow("TOPIC", "t", "READ")])[0])
    err, _msg, rows = b.share_delete_offsets("s", ["t", "u"])
    assert err is None and sorted((n, e) for n, _t, e, _m in rows) == [("t", None), ("u", "TOPIC_AUTHORIZATION_FAILED")]
    assert inner.calls[-1] == ("share_delete", "s", ["t"])
