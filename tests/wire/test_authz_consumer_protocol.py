"""The AuthorizingBackend's KIP-848 rules (Kafka ``KafkaApis.handleConsumerGroupHeartbeat`` /
``handleConsumerGroupDescribe``): READ on the group and DESCRIBE on every subscribed topic for the
heartbeat; DESCRIBE on the group for the describe, whose group is TOPIC_AUTHORIZATION_FAILED when
it uses a topic the client may not DESCRIBE."""

from __future__ import annotations

from actors.consumer.messages import ConsumerGroupHeartbeatCmd
from actors.consumer.modern import ConsumerGroupDescription, ConsumerHeartbeatResult, DescribedMember
from tests.wire.fake_backend import FakeBackend
from tests.wire.test_authz import allow, make
from wire.authz import AuthorizingBackend


class Inner(FakeBackend):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list = []

    def consumer_group_heartbeat(self, cmd):
        self.calls.append(cmd)
        return ConsumerHeartbeatResult(None, None, "m", 1, 5000, ())

    def consumer_group_describe(self, group):
        self.calls.append(group)
        m = DescribedMember("m", None, None, 1, "c", "h", ("a",), (("id-b", "b", (0,)),), (), "STABLE")
        return ConsumerGroupDescription(group, None, "Stable", 1, 1, "uniform", (m,))


def hb(group: str, topics=("a",)):
    return ConsumerGroupHeartbeatCmd(group, "", 0, None, None, 30000, topics, None, (), "c", "h", ())


def test_heartbeat_needs_read_on_group_and_describe_on_topics():
    inner = Inner()
    b = AuthorizingBackend(inner, make([allow("GROUP", "g", "DESCRIBE")])[0])
    assert b.consumer_group_heartbeat(hb("g")).error == "GROUP_AUTHORIZATION_FAILED"
    b = AuthorizingBackend(inner, make([allow("GROUP", "g", "READ")])[0])
    assert b.consumer_group_heartbeat(hb("g")).error == "TOPIC_AUTHORIZATION_FAILED"
    assert inner.calls == []
    b = AuthorizingBackend(inner, make([allow("GROUP", "g", "READ"), allow("TOPIC", "a", "DESCRIBE")])[0])
    assert b.consumer_group_heartbeat(hb("g")).error is None
    assert b.consumer_group_heartbeat(hb("g", None)).error is None  # an unchanged subscription is not re-checked
    assert len(inner.calls) == 2


def test_describe_needs_describe_on_group_and_its_topics():
    inner = Inner()
    b = AuthorizingBackend(inner, make([allow("GROUP", "other", "DESCRIBE"), allow("TOPIC", "*", "DESCRIBE")])[0])
    assert b.consumer_group_describe("g").error == "GROUP_AUTHORIZATION_FAILED"
    b = AuthorizingBackend(inner, make([allow("GROUP", "g", "DESCRIBE"), allow("TOPIC", "a", "DESCRIBE")])[0])
    assert b.consumer_group_describe("g").error == "TOPIC_AUTHORIZATION_FAILED"  # assigned topic b
    b = AuthorizingBackend(inner, make([allow("GROUP", "g", "DESCRIBE"), allow("TOPIC", "*", "DESCRIBE")])[0])
    d = b.consumer_group_describe("g")
    assert d.error is None and d.members[0].member_id == "m"


def test_describe_reports_authorized_operations_when_asked():
    from types import SimpleNamespace as NS

    from wire.consumer_protocol import consumer_group_describe
    from wire.protocol import DecodedRequest, encode_response

    class Described(Inner):
        def consumer_group_describe(self, group):
            m = DescribedMember("m", None, None, 1, "c", "h", ("b",), (("00000000-0000-0000-0000-00000000000b", "b", (0,)),), (), "STABLE")
            return ConsumerGroupDescription(group, None, "Stable", 1, 1, "uniform", (m,))

    authorizer = make([allow("GROUP", "g", "DESCRIBE"), allow("TOPIC", "*", "DESCRIBE")])[0]
    for v in (0, 1):
        asked = consumer_group_describe(DecodedRequest(69, v, 1, "c", None, NS(group_ids=("g",), include_authorized_operations=True)),
                                        Described(), authorizer)
        encode_response(1, asked)
        ops = asked.groups[0].authorized_operations
        assert ops & (1 << 8) and not ops & (1 << 3)  # DESCRIBE (8) granted, READ (3) not
        plain = consumer_group_describe(DecodedRequest(69, v, 1, "c", None, NS(group_ids=("g",), include_authorized_operations=False)),
                                        Described(), authorizer)
        assert plain.groups[0].authorized_operations == -2147483648
