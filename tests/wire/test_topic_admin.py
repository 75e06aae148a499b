"""CreatePartitions (API 37) on the wire against :class:`tests.wire.fake_backend.FakeBackend`:
request decoding (v0 and v3), one result per name in request order, the advertised version range,
and ALTER-on-topic enforcement by :class:`wire.authz.AuthorizingBackend`."""

from __future__ import annotations

import datetime
import socket

import pytest

from tests.e2e.helpers import read_frame
from tests.wire.fake_backend import FakeBackend
from wire.backend import TopicSpec
from wire.dispatch import SUPPORTED
from wire.protocol import decode_response, encode_request, request_header
from tests.wire.test_listener import listener  # noqa: F401 - the listener fixture (FakeBackend behind a real KafkaListener)




def _send(port: int, version: int, req) -> object:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(encode_request(request_header(37, version, 5), req))
        _, resp = decode_response(read_frame(s), 37, version)
    return resp


@pytest.mark.parametrize("version", [0, 3])
def test_create_partitions_results_in_request_order(listener, version):
    import importlib

    mod = importlib.import_module(f"kio.schema.create_partitions.v{version}.request")
    lst, be = listener
    be.create_topics([TopicSpec("a", 1, 1, {}), TopicSpec("b", 2, 1, {})], False)
    req = mod.CreatePartitionsRequest(
        topics=(
            mod.CreatePartitionsTopic(name="a", count=3, assignments=None),
            mod.CreatePartitionsTopic(name="b", count=2, assignments=None),
            mod.CreatePartitionsTopic(name="nope", count=2, assignments=(mod.CreatePartitionsAssignment(broker_ids=(1,)),)),
        ),
        timeout=datetime.timedelta(seconds=5),
        validate_only=False,
    )
    resp = _send(lst.port, version, req)
    assert [(r.name, int(r.error_code)) for r in resp.results] == [("a", 0), ("b", 37), ("nope", 3)]
    assert {t.name: t.partitions for t in be.topics()} == {"a": 3, "b": 2}


def test_create_partitions_is_advertised_up_to_what_librdkafka_sends():
    lo, hi = SUPPORTED[37]
    assert lo == 0 and hi >= 3


def test_real_admin_client_create_partitions(listener):
    from confluent_kafka.admin import AdminClient, NewPartitions

    lst, be = listener
    be.create_topics([TopicSpec("grow", 1, 1, {})], False)
    a = AdminClient({"bootstrap.servers": f"127.0.0.1:{lst.port}"})
    a.create_partitions([NewPartitions("grow", 4)])["grow"].result(10)
    assert {t.name: t.partitions for t in be.topics()}["grow"] == 4
    with pytest.raises(Exception) as exc:
        a.create_partitions([NewPartitions("grow", 2)])["grow"].result(10)
    assert "INVALID_PARTITIONS" in str(exc.value.args[0].name())


def test_authorizer_needs_alter_on_the_topic():
    from wire.authz import AuthorizingBackend

    class OnlyAlterOnA:
        def check(self, operation, resource_type, name):
            return (operation, resource_type, name) == ("ALTER", "TOPIC", "a")

    be = FakeBackend()
    be.create_topics([TopicSpec("a", 1, 1, {}), TopicSpec("b", 1, 1, {})], False)
    out = AuthorizingBackend(be, OnlyAlterOnA()).create_partitions([("a", 2, None), ("b", 2, None)], False)
    assert out["a"] == (None, None) and out["b"][0] == "TOPIC_AUTHORIZATION_FAILED"
    assert {t.name: t.partitions for t in be.topics()} == {"a": 2, "b": 1}


def test_delete_records_per_partition_results(listener):
    from kio.schema.delete_records.v2.request import DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic

    lst, be = listener
    be.create_topics([TopicSpec("d", 2, 1, {})], False)
    be._logs[("d", 0)].extend([(0, 4, b"")])  # offsets 0-4: high watermark 5
    req = DeleteRecordsRequest(
        topics=(
            DeleteRecordsTopic(
                name="d",
                partitions=(
                    DeleteRecordsPartition(partition_index=0, offset=3),
                    DeleteRecordsPartition(partition_index=1, offset=1),  # empty partition: HW 0
                    DeleteRecordsPartition(partition_index=9, offset=0),
                ),
            ),
        ),
        timeout=datetime.timedelta(seconds=5),
    )
    with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as s:
        s.sendall(encode_request(request_header(21, 2, 5), req))
        _, resp = decode_response(read_frame(s), 21, 2)
    got = [(int(p.partition_index), int(p.error_code), int(p.low_watermark)) for p in resp.topics[0].partitions]
    assert got == [(0, 0, 3), (1, 1, -1), (9, 3, -1)]
    assert SUPPORTED[21] == (0, 2)


def test_delete_records_needs_delete_on_the_topic():
    from wire.authz import AuthorizingBackend

    class OnlyDeleteOnA:
        def check(self, operation, resource_type, name):
            return (operation, resource_type, name) == ("DELETE", "TOPIC", "a")

    be = FakeBackend()
    be.create_topics([TopicSpec("a", 1, 1, {}), TopicSpec("b", 1, 1, {})], False)
    authz = AuthorizingBackend(be, OnlyDeleteOnA())
    assert authz.delete_records("a", 0, -1) == (None, 0)
    assert authz.delete_records("b", 0, -1) == ("TOPIC_AUTHORIZATION_FAILED", -1)
