"""Response fields Kafka never leaves null (issue 16).

librdkafka before 2.x (kcat 1.7 on Debian) drops a whole Fetch response whose record set is null
("invalid MessageSetSize -1"), so Shoal sends an empty record set, as Kafka's log reads do. The
sweep below runs every advertised (api key, version) with a minimal and a populated request
(:mod:`tests.wire.kio_samples`) through the handlers over a :class:`FakeBackend` and checks the
response entity: no field is ``None`` where the version's schema does not allow null (kio types a
field ``X | None`` exactly when it is nullable in that version), and none of the nullable fields
Kafka always fills (:data:`KAFKA_NEVER_NULL`) is ``None``.
"""

from __future__ import annotations

import dataclasses
import datetime
import struct
import typing
from types import NoneType
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i16, i32, i64

from tests.wire.fake_backend import FakeBackend
from tests.wire.test_groups import Backend as GroupAnswers
from tests.wire.kio_samples import sample_frame
from tests.wire.test_protocol import _create, make_batch, roundtrip
from wire.dispatch import SUPPORTED, KafkaDispatcher
from wire.entities import build, nested_class
from wire.protocol import decode_request, encode_response

#: (api key, field path without indices) of fields nullable in the schema that Kafka's broker
#: always sets, with where it does so.
KAFKA_NEVER_NULL = {
    (1, "responses.partitions.records"),  # ReplicaManager.readFromLocalLog: MemoryRecords.EMPTY
    (78, "responses.partitions.records"),  # KafkaApis.getResponsePartitionData: recordsOrFail
    (19, "topics.configs"),  # CreatableTopicResult.configs defaults to an empty array
}

class _SweepBackend(FakeBackend, GroupAnswers):
    """FakeBackend plus plain answers for the APIs it has no state for (InitProducerId, SCRAM,
    ShareGroupDescribe, DescribeShareGroupOffsets; the classic consumer-group APIs from
    ``tests.wire.test_groups``), each with a success and an error entry, so every handler's
    response is built with and without optional values."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        FakeBackend.__init__(self, *args, **kwargs)
        GroupAnswers.__init__(self)

    def init_producer_id(self, transactional_id, producer_id, producer_epoch):
        return (None, 1000, 0) if transactional_id is None else ("UNSUPPORTED_VERSION", -1, -1)

    def describe_user_scram_credentials(self, users):
        from actors.controller.scram import CredentialInfo, DescribeResult

        return None, None, [DescribeResult("alice", infos=(CredentialInfo(1, 4096),)), DescribeResult("bob", "RESOURCE_NOT_FOUND", "no credentials")]

    def alter_user_scram_credentials(self, deletions, upsertions):
        from actors.controller.scram import AlterResult

        return [AlterResult("alice"), AlterResult("bob", "UNACCEPTABLE_CREDENTIAL", "too few iterations")]

    def share_group_describe(self, group):
        if group != "s0":
            return {"error": "GROUP_ID_NOT_FOUND", "message": f"Group {group} not found."}
        member = {"member_id": "m1", "rack_id": None, "member_epoch": 3, "client_id": "c", "client_host": "/127.0.0.1", "subscribed": ("s0",), "assignment": [(self._topics["s0"].topic_id, "s0", [0, 1])]}
        return {"state": "Stable", "group_epoch": 3, "assignment_epoch": 3, "assignor": "simple", "members": [member]}

    def consumer_group_heartbeat(self, cmd):
        from actors.consumer.modern import ConsumerHeartbeatResult

        if cmd.member_epoch < 0:
            return ConsumerHeartbeatResult("UNKNOWN_MEMBER_ID", "unknown", cmd.member_id, cmd.member_epoch)
        return ConsumerHeartbeatResult(None, None, cmd.member_id or "m1", 1, 5000, ((str(self._topics["s0"].topic_id), (0, 1)),))

    def consumer_group_describe(self, group):
        from actors.consumer.modern import ConsumerGroupDescription, DescribedMember

        if group != "s0":
            return ConsumerGroupDescription(group, "GROUP_ID_NOT_FOUND")
        tid = str(self._topics["s0"].topic_id)
        m = DescribedMember("m1", None, None, 3, "c", "/127.0.0.1", ("s0",), ((tid, "s0", (0, 1)),), ((tid, "s0", (0, 1)),), "STABLE")
        return ConsumerGroupDescription(group, None, "Stable", 3, 3, "uniform", (m,))

    def share_group_offsets(self, group, topics):
        return None, None, [("s0", self._topics["s0"].topic_id, [(0, 5, None), (1, -1, "UNKNOWN_TOPIC_OR_PARTITION")])]

    # group admin (wire.group_admin): a success and an error for each
    def describe_group(self, group):
        from actors.consumer.classic import DescribedGroup, DescribedMember

        if group.endswith("0"):
            return None, None, DescribedGroup(group, "Stable", "consumer", "range", (DescribedMember("m1", None, "c", "/h", b"md", b"as"), DescribedMember("m2", "i2", "c", "/h", b"", b"")))
        return "GROUP_ID_NOT_FOUND", f"Group {group} not found.", DescribedGroup(group, "Dead", "", "", ())

    def delete_group(self, group):
        return None if group.endswith("0") else "NON_EMPTY_GROUP"

    def consumer_delete_offsets(self, group, partitions):
        from actors.consumer.classic import OffsetDeleteResult

        if not partitions:
            return OffsetDeleteResult("GROUP_ID_NOT_FOUND")
        return OffsetDeleteResult(None, tuple((t, p, None if p == 0 else "GROUP_SUBSCRIBED_TO_TOPIC") for t, p in partitions))

    def share_alter_offsets(self, group, topics):
        if not topics:
            return "NON_EMPTY_GROUP", "Share group is not empty.", []
        return None, None, [(n, self._topics[n].topic_id if n in self._topics else None, [(p, None if p == 0 else "UNKNOWN_TOPIC_OR_PARTITION", None) for p, _o in ps]) for n, ps in topics]

    def share_delete_offsets(self, group, topics):
        if not topics:
            return "GROUP_ID_NOT_FOUND", "Group not found.", []
        return None, None, [(n, self._topics[n].topic_id if n in self._topics else None, None if n in self._topics else "UNKNOWN_TOPIC_OR_PARTITION", None) for n in topics]


def _nullable(cls: type, name: str) -> bool:
    return NoneType in typing.get_args(typing.get_type_hints(cls)[name])


def null_violations(entity: Any, api_key: int, path: str = "") -> list[str]:
    """Paths (``a.b.c``, no indices) of fields of kio response ``entity`` that are ``None``
    although their schema forbids null, or that Kafka never leaves null (:data:`KAFKA_NEVER_NULL`)."""
    out: list[str] = []
    if dataclasses.is_dataclass(entity):
        for f in dataclasses.fields(entity):
            value = getattr(entity, f.name)
            p = f"{path}.{f.name}" if path else f.name
            if value is None and (not _nullable(type(entity), f.name) or (api_key, p) in KAFKA_NEVER_NULL):
                out.append(p)
            out += null_violations(value, api_key, p)
    elif isinstance(entity, tuple):
        for x in entity:
            out += null_violations(x, api_key, path)
    return out


def _cases() -> list[tuple[int, int, int]]:
    return [(k, v, var) for k, (lo, hi) in sorted(SUPPORTED.items()) for v in range(lo, hi + 1) for var in (0, 1)]


@pytest.mark.parametrize("api_key,version,variant", _cases())
def test_no_response_field_is_null_where_kafka_never_sends_null(api_key, version, variant):
    backend = _SweepBackend()
    disp = KafkaDispatcher(backend, auto_create_topics=False)
    _create(disp, "s0", 2)  # the samples' topic names, so requests reach real partitions too
    _create(disp, "s1", 2)
    req = decode_request(sample_frame(api_key, version, variant), disp.supported)
    resp = disp.handle(req, None)
    if resp is None:
        return  # Produce acks=0
    encode_response(1, resp)  # encodable at all
    assert null_violations(resp, api_key) == []


def test_the_checker_finds_a_null_record_set():
    """The sweep can fail: a Fetch partition with records=None is reported."""
    from kio.schema.fetch.v11.response import FetchableTopicResponse, FetchResponse, PartitionData

    part = PartitionData(partition_index=i32(0), error_code=ErrorCode.none, high_watermark=i64(0), aborted_transactions=None, records=None)
    resp = FetchResponse(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, responses=(FetchableTopicResponse(topic="t", partitions=(part,)),))
    assert null_violations(resp, 1) == ["responses.partitions.records"]
    assert null_violations(dataclasses.replace(resp, responses=(FetchableTopicResponse(topic="t", partitions=(dataclasses.replace(part, records=b""),)),)), 1) == []


def _fetch_body(version: int, topic: str, offset: int, isolation: int) -> Any:
    """A sessionless Fetch request of ``version`` for partition 0 of ``topic``."""
    from kio.index import load_request_schema

    req_cls = load_request_schema(1, version)
    part = build(nested_class(req_cls, "FetchPartition"), partition=i32(0), fetch_offset=i64(offset), partition_max_bytes=i32(1 << 20))
    topics = (build(nested_class(req_cls, "FetchTopic"), topic=topic, partitions=(part,)),)
    return build(req_cls, replica_id=i32(-1), max_wait=datetime.timedelta(0), min_bytes=i32(1), max_bytes=i32(1 << 24), isolation_level=i8(isolation), topics=topics, forgotten_topics_data=())


def _fetch(disp, version: int, topic: str, offset: int, isolation: int = 0):
    return roundtrip(disp, 1, version, _fetch_body(version, topic, offset, isolation))


def _message_set_size(disp, version: int, topic: str, offset: int) -> int:
    """The int32 MessageSetSize of the only partition of a non-flexible (v4-11) Fetch response,
    read from the encoded frame: it ends the frame (records are the partition's last field)."""
    body = _fetch_body(version, topic, offset, 1)
    from wire.protocol import encode_request, request_header

    req = decode_request(encode_request(request_header(1, version, 3), body)[4:], disp.supported)
    frame = encode_response(3, disp.handle(req, None))
    return struct.unpack(">i", frame[-4:])[0]


@pytest.mark.parametrize("version", [4, 11])
def test_fetch_of_a_caught_up_partition_has_an_empty_record_set_not_null(version):
    """kcat 1.7's case (Fetch v11): nothing new past the high watermark → MessageSetSize 0."""
    disp = KafkaDispatcher(FakeBackend(), auto_create_topics=False)
    _create(disp, "t", 1)
    assert _message_set_size(disp, version, "t", 0) == 0  # empty topic
    roundtrip(disp, 0, 9, _produce("t", [b"a", b"b"]))
    assert _message_set_size(disp, version, "t", 0) > 0
    assert _message_set_size(disp, version, "t", 2) == 0  # caught up
    assert _message_set_size(disp, version, "missing", 0) == 0  # an error partition too


def _produce(topic: str, values: list[bytes]):
    from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

    return ProduceRequest(transactional_id=None, acks=i16(1), timeout=datetime.timedelta(seconds=5), topic_data=(TopicProduceData(name=topic, partition_data=(PartitionProduceData(index=i32(0), records=make_batch(values)),)),))


@pytest.mark.parametrize("version", [11, 12])
def test_fetch_decodes_empty_records_and_aborted_transactions_by_isolation(version):
    """Decoded as a client does: records b"" (not None); aborted transactions [] under
    READ_COMMITTED (Kafka's LocalLog.read with includeAbortedTxns) and null under READ_UNCOMMITTED."""
    disp = KafkaDispatcher(FakeBackend(), auto_create_topics=False)
    _create(disp, "t", 1)
    committed = _fetch(disp, version, "t", 0, isolation=1).responses[0].partitions[0]
    assert committed.records == b"" and committed.aborted_transactions == ()
    uncommitted = _fetch(disp, version, "t", 0, isolation=0).responses[0].partitions[0]
    assert uncommitted.records == b"" and uncommitted.aborted_transactions is None
    missing = _fetch(disp, version, "missing", 0, isolation=1).responses[0].partitions[0]
    assert missing.error_code == ErrorCode.unknown_topic_or_partition and missing.records == b""


def test_create_topics_v5_plus_returns_the_effective_configs_never_null():
    """ReplicationControlManager.createTopic: a created topic lists its configs sorted by name; a
    failed one has an empty array (never null)."""
    from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest

    backend = FakeBackend()
    backend.configs[(2, "c")] = {"retention.ms": "1000", "cleanup.policy": "delete"}
    disp = KafkaDispatcher(backend, auto_create_topics=False)

    def create(name: str, **kw):
        t = CreatableTopic(name=name, num_partitions=i32(1), replication_factor=i16(1), assignments=(), configs=())
        return roundtrip(disp, 19, 7, CreateTopicsRequest(topics=(t,), timeout=datetime.timedelta(seconds=5), validate_only=False)).topics[0]

    ok = create("c")
    assert ok.error_code == ErrorCode.none and ok.topic_config_error_code == 0
    assert [(c.name, c.value) for c in ok.configs] == [("cleanup.policy", "delete"), ("retention.ms", "1000")]
    again = create("c")
    assert again.error_code == ErrorCode.topic_already_exists and again.configs == ()
