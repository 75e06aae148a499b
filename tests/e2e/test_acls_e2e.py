"""ACLs end to end against a real daemon (``app.py run``) with confluent-kafka clients:
CreateAcls/DescribeAcls/DeleteAcls through the AdminClient, SECURITY_DISABLED without an
authorizer, and enforcement on a PLAINTEXT listener, where every client is ``User:ANONYMOUS``:
the ACLs are created while ANONYMOUS is a super user, then the daemon restarts without super
users (the ACLs come back from the event log) and they decide: a denied WRITE gives the Producer
TOPIC_AUTHORIZATION_FAILED, a group without READ gives the ShareConsumer
GROUP_AUTHORIZATION_FAILED, the allowed topic and group work; and the SASL variant: User:alice
allowed, User:bob refused."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from tests.e2e.conftest import free_port
from tests.e2e.helpers import admin, create_topic, outcomes, set_group_config

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ANON = "User:ANONYMOUS"


def _create(bootstrap: str, bindings: list[AclBinding]) -> dict:
    a = admin(bootstrap)  # alive until the futures resolve
    return outcomes(a.create_acls(bindings, request_timeout=30))


def test_admin_client_creates_describes_and_deletes_acls(daemon_factory):
    d = daemon_factory(**{"authorizer.class.name": STANDARD, "super.users": ANON})
    a = admin(d.bootstrap)
    read = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    deny = AclBinding(ResourceType.GROUP, "g-", ResourcePatternType.PREFIXED, "User:*", "10.0.0.1", AclOperation.ALL, AclPermissionType.DENY)
    bad_cluster = AclBinding(ResourceType.BROKER, "not-the-cluster", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.ALTER, AclPermissionType.ALLOW)
    res = _create(d.bootstrap, [read, deny, bad_cluster])
    assert res[read] is None and res[deny] is None
    assert res[bad_cluster] == KafkaError.INVALID_REQUEST  # CLUSTER must be named kafka-cluster

    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY)
    got = a.describe_acls(everything, request_timeout=30).result(30)
    assert set(got) == {read, deny}
    # MATCH: the PREFIXED g- ACL applies to group g-1
    match = AclBindingFilter(ResourceType.GROUP, "g-1", ResourcePatternType.MATCH, None, None, AclOperation.ANY, AclPermissionType.ANY)
    assert a.describe_acls(match, request_timeout=30).result(30) == [deny]

    only_topics = AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY)
    deleted = a.delete_acls([only_topics], request_timeout=30)[only_topics].result(30)
    assert deleted == [read]
    assert a.describe_acls(everything, request_timeout=30).result(30) == [deny]


def test_acl_apis_without_an_authorizer_answer_security_disabled(daemon_factory):
    d = daemon_factory()
    a = admin(d.bootstrap)
    b = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    with pytest.raises(KafkaException) as exc:
        a.create_acls([b], request_timeout=30)[b].result(30)
    assert exc.value.args[0].code() == KafkaError.SECURITY_DISABLED
    f = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY)
    with pytest.raises(KafkaException) as exc:
        a.delete_acls([f], request_timeout=30)[f].result(30)
    assert exc.value.args[0].code() == KafkaError.SECURITY_DISABLED


def _produce(bootstrap: str, topic: str, n: int, **conf: str) -> tuple[int, list]:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 15000, "linger.ms": 5, **conf})
    ok, errors = [0], []

    def cb(err, _msg):
        if err is None:
            ok[0] += 1
        else:
            errors.append(err.code())

    for i in range(n):
        p.produce(topic, value=f"v{i}".encode(), on_delivery=cb)
    p.flush(30)
    return ok[0], errors


def _share_consume(bootstrap: str, group: str, topic: str, want: int, timeout_s: float, **conf: str) -> tuple[int, list]:
    from confluent_kafka import ShareConsumer

    errors: list = []
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "error_cb": lambda e: errors.append(e.code()), **conf})
    c.subscribe([topic])
    got = 0
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and got < want:
            try:
                msgs = c.poll(0.5)
            except KafkaException as exc:
                errors.append(exc.args[0].code())
                if exc.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                    break
                continue
            for m in msgs:
                if m.error():
                    errors.append(m.error().code())
                else:
                    got += 1
            if KafkaError.GROUP_AUTHORIZATION_FAILED in errors:
                break
    finally:
        c.close()
    return got, errors


def test_acls_are_enforced_for_producer_and_share_consumer(daemon_factory):
    overrides = {"authorizer.class.name": STANDARD, "group.share.heartbeat.interval.ms": "1000", "group.share.min.heartbeat.interval.ms": "1000"}
    d = daemon_factory(**overrides, **{"super.users": ANON})
    create_topic(d.bootstrap, "open", 1)
    create_topic(d.bootstrap, "secret", 1)

    def allow(rtype, name, op):
        return AclBinding(rtype, name, ResourcePatternType.LITERAL, ANON, "*", op, AclPermissionType.ALLOW)

    acls = [
        allow(ResourceType.TOPIC, "open", AclOperation.ALL),
        AclBinding(ResourceType.GROUP, "allowed-", ResourcePatternType.PREFIXED, ANON, "*", AclOperation.READ, AclPermissionType.ALLOW),
        # secret: ANONYMOUS may see and read it, but a DENY of WRITE wins over ALL
        allow(ResourceType.TOPIC, "secret", AclOperation.ALL),
        AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL, ANON, "*", AclOperation.WRITE, AclPermissionType.DENY),
    ]
    set_group_config(d.bootstrap, "allowed-group", "share.auto.offset.reset", "earliest")
    assert all(e is None for e in _create(d.bootstrap, acls).values())
    d.stop()
    # the same node without super users: only the ACLs (read back from the event log) decide
    d2 = daemon_factory(data_dir=d.data_dir, **overrides)

    ok, errors = _produce(d2.bootstrap, "open", 5)
    assert (ok, errors) == (5, [])
    ok, errors = _produce(d2.bootstrap, "secret", 3)
    assert ok == 0 and errors and set(errors) == {KafkaError.TOPIC_AUTHORIZATION_FAILED}

    got, errors = _share_consume(d2.bootstrap, "denied-group", "open", 1, 20)
    assert got == 0 and KafkaError.GROUP_AUTHORIZATION_FAILED in errors
    got, errors = _share_consume(d2.bootstrap, "allowed-group", "open", 5, 60)
    assert got == 5, errors

    # and without ALTER on the cluster, ANONYMOUS may no longer change ACLs
    res = _create(d2.bootstrap, [allow(ResourceType.TOPIC, "secret", AclOperation.WRITE)])
    assert list(res.values()) == [KafkaError.CLUSTER_AUTHORIZATION_FAILED]


JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
    'user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";'
)


def test_sasl_principals_alice_allowed_bob_refused(daemon_factory):
    """Over SASL_PLAINTEXT (PLAIN) the principal is the user: ACLs for User:alice let her produce
    and share-consume; User:bob, with no ACL, gets TOPIC_AUTHORIZATION_FAILED and
    GROUP_AUTHORIZATION_FAILED. The PLAINTEXT listener's ANONYMOUS is the super user that
    manages the ACLs."""
    port, sasl_port = free_port(), free_port()
    d = daemon_factory(
        port=port,
        **{
            "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "authorizer.class.name": STANDARD,
            "super.users": ANON,
            "group.share.heartbeat.interval.ms": "1000",
            "group.share.min.heartbeat.interval.ms": "1000",
        },
    )
    create_topic(d.bootstrap, "orders", 1)
    set_group_config(d.bootstrap, "alice-workers", "share.auto.offset.reset", "earliest")
    alice_acls = [
        AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*", op, AclPermissionType.ALLOW)
        for op in (AclOperation.WRITE, AclOperation.READ)
    ] + [AclBinding(ResourceType.GROUP, "alice-", ResourcePatternType.PREFIXED, "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)]
    assert all(e is None for e in _create(d.bootstrap, alice_acls).values())

    def conf(user: str) -> dict:
        return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": f"{user}-secret"}

    bootstrap = f"127.0.0.1:{sasl_port}"
    ok, errors = _produce(bootstrap, "orders", 4, **conf("alice"))
    assert (ok, errors) == (4, [])
    ok, errors = _produce(bootstrap, "orders", 2, **conf("bob"))
    assert ok == 0 and set(errors) == {KafkaError.TOPIC_AUTHORIZATION_FAILED}
    got, errors = _share_consume(bootstrap, "alice-workers", "orders", 4, 60, **conf("alice"))
    assert got == 4, errors
    got, errors = _share_consume(bootstrap, "bob-workers", "orders", 1, 20, **conf("bob"))
    assert got == 0 and KafkaError.GROUP_AUTHORIZATION_FAILED in errors
