"""The listener's authorizer (cache, refresh bound, fail closed), the enforcement in the backend
wrapper and the handlers (Metadata, FindCoordinator, Produce, ShareFetch, configs,
InitProducerId), and the ACL API handlers (29/30/31) on kio requests, without an actor system."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from actors.controller import acls as ac
from actors.controller.acls import AclBinding, AclSet
from wire import acls as wacls
from wire import admin, authz
from wire.authz import AuthorizingBackend, Authorizer
from wire.backend import AckBatch, SharePartitionAck, TopicSpec
from wire.protocol import DecodedRequest
from tests.wire.fake_backend import FakeBackend

ANON = "User:ANONYMOUS"


class Conn:
    """A connection as the listener hands it to handlers (principal set by the transport)."""

    def __init__(self, principal: str = ANON, host: str = "10.0.0.7") -> None:
        self.principal = principal
        self.peer = (host, 5555)


class Controller:
    """An in-memory controller for the authorizer: the pure deciders plus a token."""

    def __init__(self, acls: list[AclBinding] = ()) -> None:
        self.set = AclSet(acls)
        self.changes = 0
        self.asks = 0
        self.fail = False

    def acls(self, known: str | None):
        self.asks += 1
        if self.fail:
            raise TimeoutError("recovering")
        token = f"t{self.changes}"
        return token, (None if known == token else tuple(self.set))

    def create_acls(self, creations):
        events, results = ac.decide_create_acls(self.set, ac.CreateAcls(tuple(creations)))
        for e in events:
            ac.evolve(self.set, e)
            self.changes += 1
        return results, f"t{self.changes}"

    def delete_acls(self, filters):
        events, results = ac.decide_delete_acls(self.set, ac.DeleteAcls(tuple(filters)))
        for e in events:
            ac.evolve(self.set, e)
            self.changes += 1
        return results, f"t{self.changes}"


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def allow(rtype: str, name: str, op: str, principal: str = ANON, pattern: str = "LITERAL", perm: str = "ALLOW") -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, "*", op, perm)


def make(acls: list[AclBinding], cfg: dict[str, str] | None = None, principal: str = ANON):
    ctl = Controller(acls)
    clock = Clock()
    a = Authorizer(cfg or {}, ctl.acls, ctl, clock)
    a.refresh()
    authz.bind(Conn(principal))
    return a, ctl, clock


def req(api_key: int, version: int, body: Any) -> DecodedRequest:
    return DecodedRequest(api_key, version, 1, "test", None, body)


# --- the authorizer cache ----------------------------------------------------------------------


def test_cache_refreshes_at_most_every_interval_and_at_once_after_own_changes():
    a, ctl, clock = make([], {"shoal.authorizer.refresh.ms": "1000"})
    asks = ctl.asks
    assert not a.check("READ", "TOPIC", "t")
    assert ctl.asks == asks  # fresh: no ask
    # a change made elsewhere (another node) is seen after the interval, not before
    ctl.set.add(allow("TOPIC", "t", "READ"))
    ctl.changes += 1
    clock.t = 0.5
    assert not a.check("READ", "TOPIC", "t")
    clock.t = 1.0
    assert a.check("READ", "TOPIC", "t")
    # this node's own change is enforced before the call returns
    a.create_acls([allow("TOPIC", "t", "READ", perm="DENY")])
    assert not a.check("READ", "TOPIC", "t")


def test_unchanged_token_does_not_rebuild_and_failures_keep_the_last_set():
    a, ctl, clock = make([allow("TOPIC", "t", "READ")])
    before = a.acls()
    clock.t = 5
    assert a.acls() is before  # the controller answered "unchanged"
    ctl.fail = True
    clock.t = 10
    assert a.check("READ", "TOPIC", "t")  # kept
    asks = ctl.asks
    clock.t = 10.5
    assert a.check("READ", "TOPIC", "t") and ctl.asks == asks  # the failed refresh is retried after the interval
    clock.t = 11
    a.check("READ", "TOPIC", "t")
    assert ctl.asks == asks + 1


def test_fail_closed_before_the_first_load_except_super_users():
    ctl = Controller([allow("TOPIC", "t", "READ")])
    ctl.fail = True
    a = Authorizer({"super.users": "User:admin; User:ops"}, ctl.acls, ctl, Clock())
    authz.bind(Conn())
    assert not a.check("READ", "TOPIC", "t")
    assert a.authorize("User:ops", "h", "ALTER", "CLUSTER", "kafka-cluster")


def test_from_config_is_off_without_authorizer_class_name():
    assert authz.from_config({"authorizer.class.name": ""}, Controller()) is None
    assert isinstance(authz.from_config({"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}, Controller()), Authorizer)


def test_principal_and_host_come_from_the_bound_connection():
    a, _, _ = make([AclBinding("TOPIC", "t", "LITERAL", "User:alice", "10.0.0.7", "READ", "ALLOW")])
    authz.bind(Conn("User:alice", "10.0.0.7"))
    assert a.check("READ", "TOPIC", "t")
    authz.bind(Conn("User:alice", "10.0.0.8"))
    assert not a.check("READ", "TOPIC", "t")
    authz.bind(Conn("User:bob", "10.0.0.7"))
    assert not a.check("READ", "TOPIC", "t")


# --- enforcement in the backend wrapper ------------------------------------------------------------


def backend_with(acls: list[AclBinding], topics=("open", "secret")) -> tuple[AuthorizingBackend, FakeBackend]:
    inner = FakeBackend()
    inner.create_topics([TopicSpec(t, 1, 1) for t in topics], False)
    a, _, _ = make(acls)
    return AuthorizingBackend(inner, a), inner


def test_data_plane_checks():
    b, inner = backend_with([allow("TOPIC", "open", "WRITE"), allow("TOPIC", "secret", "DESCRIBE")])
    assert b.produce("secret", 0, b"", 1).error == "TOPIC_AUTHORIZATION_FAILED"
    assert b.fetch("open", 0, 0, 1000).error == "TOPIC_AUTHORIZATION_FAILED"  # WRITE does not give READ
    assert b.list_offset("open", 0, -1)[0] is None  # WRITE implies DESCRIBE
    assert b.list_offset("secret", 0, -1)[0] is None
    assert [t.name for t in b.topics()] == ["open", "secret"]
    # InitProducerId: WRITE on some topic suffices; a transactional id needs WRITE on it
    assert b.init_producer_id("tx", -1, -1)[0] == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


def test_init_producer_id_without_write_anywhere_is_cluster_authorization_failed():
    b, _ = backend_with([allow("TOPIC", "open", "READ")])
    assert b.init_producer_id(None, -1, -1)[0] == "CLUSTER_AUTHORIZATION_FAILED"


def test_admin_checks():
    b, inner = backend_with([allow("TOPIC", "open", "ALTER_CONFIGS"), allow("GROUP", "g", "DESCRIBE")])
    out = b.create_topics([TopicSpec("new", 1, 1)], False)
    assert out["new"][0] == "TOPIC_AUTHORIZATION_FAILED" and "new" not in {t.name for t in inner.topics()}
    assert b.delete_topics(["open"])["open"][0] == "TOPIC_AUTHORIZATION_FAILED"
    assert b.describe_configs(2, "open", None)[0] is None  # ALTER_CONFIGS implies DESCRIBE_CONFIGS
    assert b.describe_configs(2, "secret", None)[0] == "TOPIC_AUTHORIZATION_FAILED"
    assert b.describe_configs(4, "1", None)[0] == "CLUSTER_AUTHORIZATION_FAILED"
    assert b.alter_configs(32, "g", [], False)[0] == "GROUP_AUTHORIZATION_FAILED"
    assert [t.name for t in b.topics()] == []  # ALTER_CONFIGS does not imply DESCRIBE: Metadata omits both
    assert b.share_group_describe("other")["error"] == "GROUP_AUTHORIZATION_FAILED"


def test_create_and_delete_topics_with_cluster_create_and_delete():
    b, inner = backend_with([allow("CLUSTER", "kafka-cluster", "CREATE"), allow("CLUSTER", "kafka-cluster", "DELETE")])
    assert b.create_topics([TopicSpec("new", 1, 1)], False)["new"][0] is None
    assert b.delete_topics(["open"])["open"][0] is None


def test_share_checks():
    b, inner = backend_with([allow("GROUP", "g", "READ"), allow("TOPIC", "open", "READ")])
    assert b.share_heartbeat("h", "", 0, None, ["open"], "c", "").error == "GROUP_AUTHORIZATION_FAILED"
    assert b.share_heartbeat("g", "", 0, None, ["open", "secret"], "c", "").error == "TOPIC_AUTHORIZATION_FAILED"
    assert b.share_fetch("h", "m", 0, [], [], [], 10, 0).error == "GROUP_AUTHORIZATION_FAILED"
    ids = {t.name: t.topic_id for t in inner.topics()}

    class Names:
        def names_by_id(self):
            return {str(v): k for k, v in ids.items()}

    inner.controller = Names()
    hb = inner.share_heartbeat("g", "", 0, None, ["open", "secret"], "c", "")
    r = b.share_fetch("g", hb.member_id, 0, [(ids["open"], 0), (ids["secret"], 0)], [], [SharePartitionAck(ids["secret"], 0, (AckBatch(0, 0, (1,)),))], 10, 0)
    assert r.error is None
    by = {(p.topic_id, p.partition): p for p in r.partitions}
    assert by[(ids["secret"], 0)].error == "TOPIC_AUTHORIZATION_FAILED" and by[(ids["secret"], 0)].ack_error == "TOPIC_AUTHORIZATION_FAILED"
    assert by.get((ids["open"], 0)) is None or by[(ids["open"], 0)].error is None
    assert not any(a.topic_id == ids["secret"] for a in inner.acks)  # the denied acks were not applied


# --- handlers ----------------------------------------------------------------------------------------


def metadata_request(*names: str):
    from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

    return req(3, 12, MetadataRequest(topics=tuple(MetadataRequestTopic(topic_id=None, name=n) for n in names), allow_auto_topic_creation=True, include_topic_authorized_operations=False))


def test_metadata_named_topics_unauthorized_and_auto_create_refused():
    b, inner = backend_with([allow("TOPIC", "open", "DESCRIBE")])
    r = admin.metadata(metadata_request("open", "secret", "brand-new"), b, True, authorizer=b.authorizer)
    assert [(t.name, t.error_code) for t in r.topics] == [
        ("open", ErrorCode.none),
        ("secret", ErrorCode.topic_authorization_failed),
        ("brand-new", ErrorCode.topic_authorization_failed),  # no CREATE: not created
    ]
    assert "brand-new" not in {t.name for t in inner.topics()}


def test_metadata_without_authorizer_is_unchanged():
    inner = FakeBackend()
    r = admin.metadata(metadata_request("x"), inner, False)
    assert r.topics[0].error_code == ErrorCode.unknown_topic_or_partition


def find_coordinator_request(version: int, key_type: int, *keys: str):
    from importlib import import_module

    mod = import_module(f"kio.schema.find_coordinator.v{version}.request")
    if version >= 4:
        return req(10, version, mod.FindCoordinatorRequest(key_type=i8(key_type), coordinator_keys=keys))
    return req(10, version, mod.FindCoordinatorRequest(key=keys[0], key_type=i8(key_type)))


def test_find_coordinator_needs_describe_on_the_group():
    b, _ = backend_with([allow("GROUP", "g", "READ")])
    r = admin.find_coordinator(find_coordinator_request(6, 0, "g", "h"), b, authorizer=b.authorizer)
    assert [(c.key, c.error_code) for c in r.coordinators] == [("g", ErrorCode.none), ("h", ErrorCode.group_authorization_failed)]
    old = admin.find_coordinator(find_coordinator_request(3, 0, "h"), b, authorizer=b.authorizer)
    assert (old.error_code, old.error_message, int(old.node_id)) == (ErrorCode.group_authorization_failed, "Group authorization failed.", -1)


def test_find_coordinator_transaction_key_needs_describe_on_the_transactional_id():
    # KafkaApis.getCoordinator: DESCRIBE on TRANSACTIONAL_ID first; Shoal has no transaction
    # coordinator, so an authorized key gets COORDINATOR_NOT_AVAILABLE
    b, _ = backend_with([allow("TRANSACTIONAL_ID", "tx", "WRITE")])  # WRITE implies DESCRIBE
    r = admin.find_coordinator(find_coordinator_request(6, 1, "tx", "other"), b, authorizer=b.authorizer)
    assert [(c.key, c.error_code) for c in r.coordinators] == [
        ("tx", ErrorCode.coordinator_not_available),
        ("other", ErrorCode.transactional_id_authorization_failed),
    ]
    old = admin.find_coordinator(find_coordinator_request(3, 1, "other"), b, authorizer=b.authorizer)
    assert (old.error_code, old.error_message) == (ErrorCode.transactional_id_authorization_failed, "Transactional Id authorization failed.")


def test_find_coordinator_share_key_needs_cluster_action_for_the_whole_request():
    key = "g:AAAAAAAAAAAAAAAAAAAAAA:0"
    b, _ = backend_with([allow("GROUP", "g", "ALL")])
    r = admin.find_coordinator(find_coordinator_request(6, 2, key, key + "1"), b, authorizer=b.authorizer)
    assert [(c.error_code, c.error_message, int(c.node_id)) for c in r.coordinators] == [(ErrorCode.cluster_authorization_failed, "Cluster authorization failed.", -1)] * 2
    b, _ = backend_with([allow("CLUSTER", "kafka-cluster", "CLUSTER_ACTION")])
    r = admin.find_coordinator(find_coordinator_request(6, 2, key), b, authorizer=b.authorizer)
    assert [(c.error_code, int(c.node_id)) for c in r.coordinators] == [(ErrorCode.none, 1)]
    # a share key before v6 is INVALID_REQUEST, checked before the cluster (Kafka's order)
    r = admin.find_coordinator(find_coordinator_request(5, 2, key), b, authorizer=None)
    assert r.coordinators[0].error_code == ErrorCode.invalid_request


def test_dispatcher_wraps_the_backend_itself_and_checks_with_its_authorizer():
    from wire.dispatch import KafkaDispatcher

    inner = FakeBackend()
    inner.create_topics([TopicSpec("secret", 1, 1)], False)
    a, _, _ = make([])
    d = KafkaDispatcher(inner, authorizer=a)
    assert isinstance(d.backend, AuthorizingBackend) and d.backend.inner is inner and d.backend.authorizer is a
    r = d.handle(metadata_request("secret"), Conn())
    assert r.topics[0].error_code == ErrorCode.topic_authorization_failed
    r = d.handle(find_coordinator_request(6, 0, "g"), Conn())
    assert r.coordinators[0].error_code == ErrorCode.group_authorization_failed
    try:
        KafkaDispatcher(AuthorizingBackend(inner, a), authorizer=a)
    except TypeError:
        pass
    else:
        raise AssertionError("a pre-wrapped backend was accepted")
    # without an authorizer the handlers check nothing and the backend is the plain one
    assert KafkaDispatcher(inner).backend is inner


def _create_req(*bindings: AclBinding):
    from kio.schema.create_acls.v3.request import AclCreation, CreateAclsRequest

    return req(30, 3, CreateAclsRequest(creations=tuple(
        AclCreation(
            resource_type=i8(ac.RESOURCE_TYPE_CODES[b.resource_type]),
            resource_name=b.resource_name,
            resource_pattern_type=i8(ac.PATTERN_TYPE_CODES[b.pattern_type]),
            principal=b.principal,
            host=b.host,
            operation=i8(ac.OPERATION_CODES[b.operation]),
            permission_type=i8(ac.PERMISSION_CODES[b.permission]),
        )
        for b in bindings
    )))


def _describe_req(rtype: int = 1, name: str | None = None, pattern: int = 1):
    from kio.schema.describe_acls.v3.request import DescribeAclsRequest

    return req(29, 3, DescribeAclsRequest(resource_type_filter=i8(rtype), resource_name_filter=name, pattern_type_filter=i8(pattern), principal_filter=None, host_filter=None, operation=i8(1), permission_type=i8(1)))


def test_acl_apis_disabled_unauthorized_and_working():
    x = allow("TOPIC", "t", "READ", principal="User:alice")
    assert wacls.create_acls(_create_req(x), None).results[0].error_code == ErrorCode.security_disabled
    assert wacls.describe_acls(_describe_req(), None).error_code == ErrorCode.security_disabled
    a, ctl, _ = make([])
    assert wacls.create_acls(_create_req(x), a).results[0].error_code == ErrorCode.cluster_authorization_failed
    assert wacls.describe_acls(_describe_req(), a).error_code == ErrorCode.cluster_authorization_failed
    a, ctl, _ = make([], {"super.users": ANON})
    bad = AclBinding("TOPIC", "t", "MATCH", "User:alice", "*", "READ", "ALLOW")
    r = wacls.create_acls(_create_req(x, bad), a)
    assert [c.error_code for c in r.results] == [ErrorCode.none, ErrorCode.invalid_request]
    d = wacls.describe_acls(_describe_req(2, "t", 2), a)  # TOPIC t, MATCH
    assert d.error_code == ErrorCode.none
    assert [(res.resource_name, [(acl.principal, int(acl.operation)) for acl in res.acls]) for res in d.resources] == [("t", [("User:alice", 3)])]
    assert wacls.describe_acls(_describe_req(0), a).error_code == ErrorCode.invalid_request  # UNKNOWN resource type


def test_delete_acls_handler_reports_matches():
    from kio.schema.delete_acls.v3.request import DeleteAclsFilter, DeleteAclsRequest

    x = allow("TOPIC", "t", "READ", principal="User:alice")
    a, ctl, _ = make([x], {"super.users": ANON})
    f = DeleteAclsFilter(resource_type_filter=i8(2), resource_name_filter=None, pattern_type_filter=i8(1), principal_filter="User:alice", host_filter=None, operation=i8(1), permission_type=i8(1))
    r = wacls.delete_acls(req(31, 3, DeleteAclsRequest(filters=(f,))), a)
    m = r.filter_results[0].matching_acls
    assert r.filter_results[0].error_code == ErrorCode.none and [(x.resource_name, x.principal) for x in m] == [("t", "User:alice")]
    assert len(ctl.set) == 0 and not a.authorize("User:alice", "h", "READ", "TOPIC", "t")


def test_scram_credential_apis_need_the_cluster():
    from actors.controller.scram import ScramDeletion, ScramUpsertion

    class Inner(FakeBackend):
        def describe_user_scram_credentials(self, users):
            return None, None, ["described"]

        def alter_user_scram_credentials(self, deletions, upsertions):
            return ["altered"]

    inner = Inner()
    a, _, _ = make([allow("CLUSTER", "kafka-cluster", "DESCRIBE")])
    b = AuthorizingBackend(inner, a)
    assert b.describe_user_scram_credentials(None) == (None, None, ["described"])
    out = b.alter_user_scram_credentials([ScramDeletion("alice", 1)], [ScramUpsertion("bob", 2, 4096, b"s", b"p"), ScramUpsertion("alice", 2, 4096, b"s", b"p")])
    assert [(r.user, r.error) for r in out] == [("alice", "CLUSTER_AUTHORIZATION_FAILED"), ("bob", "CLUSTER_AUTHORIZATION_FAILED")]
    a2, _, _ = make([allow("CLUSTER", "kafka-cluster", "ALTER")])  # ALTER implies DESCRIBE
    b2 = AuthorizingBackend(inner, a2)
    assert b2.alter_user_scram_credentials([], []) == ["altered"]
    assert b2.describe_user_scram_credentials(None)[2] == ["described"]
    a3, _, _ = make([allow("TOPIC", "t", "ALL")])
    assert AuthorizingBackend(inner, a3).describe_user_scram_credentials(None)[0] == "CLUSTER_AUTHORIZATION_FAILED"


def test_backend_calls_without_a_rule_fail_closed():
    class Inner(FakeBackend):
        def brand_new_call(self):
            return "unchecked!"

    inner = Inner()
    inner.controller = object()  # a component whose methods would be unchecked
    inner.brand_new_data = 7
    b = AuthorizingBackend(inner, make([])[0])
    assert b.node_id == 1 and b.cluster_id == "fake-cluster"  # data passes through
    b.data_version()  # listed as needing no ACL
    for name in ("brand_new_call", "controller", "brand_new_data", "shares", "logs"):
        try:
            getattr(b, name)
        except AttributeError as exc:
            assert "no authorization rule" in str(exc)
        else:
            raise AssertionError(f"{name} went through unchecked")


def test_config_resources_without_a_rule_are_refused():
    class Inner(FakeBackend):
        def describe_configs(self, resource_type, name, keys):
            return None, None, ["described"]

        def alter_configs(self, resource_type, name, ops, validate_only):
            return None, None

    a, _, _ = make([allow("CLUSTER", "kafka-cluster", "ALL"), allow("TOPIC", "*", "ALL")])
    b = AuthorizingBackend(Inner(), a)
    assert b.describe_configs(2, "t", None) == (None, None, ["described"])
    for rtype in (8, 16, 0, 99):  # BROKER_LOGGER, CLIENT_METRICS, UNKNOWN, no such type
        assert b.describe_configs(rtype, "x", None) == ("INVALID_REQUEST", f"unsupported resource type {rtype}", [])
        assert b.alter_configs(rtype, "x", [], False) == ("INVALID_REQUEST", f"unsupported resource type {rtype}")
