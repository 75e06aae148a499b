"""Framing and handler tests for ``wire/`` (no actors: a FakeBackend stands in for the broker)."""

from __future__ import annotations

import datetime
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i16, i32, i64

from tests.wire.fake_backend import FakeBackend
from wire.backend import AckBatch
from wire.dispatch import SUPPORTED, KafkaDispatcher
from wire.protocol import FrameError, UnsupportedRequest, decode_request, decode_response, encode_request, encode_response, request_header
from actors.share.partition import validate_acknowledgement_batches


def roundtrip(dispatcher: KafkaDispatcher, api_key: int, version: int, body, correlation_id: int = 7):
    """Encode ``body`` as a client would, decode it as the listener does, run the handler and
    decode the response frame as the client would. Returns the response body."""
    framed = encode_request(request_header(api_key, version, correlation_id), body)
    (size,) = struct.unpack(">i", framed[:4])
    assert size == len(framed) - 4
    req = decode_request(framed[4:], dispatcher.supported)
    resp = dispatcher.handle(req, None)
    if resp is None:
        return None
    out = encode_response(req.correlation_id, resp)
    cid, decoded = decode_response(out[4:], api_key, version)
    assert cid == correlation_id
    return decoded


@pytest.fixture()
def disp() -> KafkaDispatcher:
    return KafkaDispatcher(FakeBackend(), auto_create_topics=False)


def test_api_versions_advertises_the_table(disp):
    from kio.schema.api_versions.v3.request import ApiVersionsRequest

    resp = roundtrip(disp, 18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    assert resp.error_code == ErrorCode.none
    assert {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in resp.api_keys} == SUPPORTED


def test_api_versions_of_unknown_version_answers_v0_unsupported(disp):
    payload = struct.pack(">hhih", 18, 99, 5, -1)  # header v1 with null client id; body unknown
    with pytest.raises(UnsupportedRequest) as exc:
        decode_request(payload, disp.supported)
    out = disp.unsupported(exc.value)
    cid, body = decode_response(out[4:], 18, 0)
    assert cid == 5 and body.error_code == ErrorCode.unsupported_version
    assert {int(k.api_key) for k in body.api_keys} == set(SUPPORTED)


def test_unknown_api_key_gets_unsupported_version_error(disp):
    with pytest.raises(UnsupportedRequest) as exc:
        decode_request(struct.pack(">hhih", 999, 0, 11, -1), disp.supported)
    out = disp.unsupported(exc.value)
    assert struct.unpack(">iih", out) == (6, 11, 35)


@pytest.mark.parametrize("cut", [1, 5, 9, 14])
def test_truncated_request_is_a_frame_error(disp, cut):
    from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

    framed = encode_request(request_header(3, 12, 1), MetadataRequest(topics=(MetadataRequestTopic(topic_id=None, name="abc"),), allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    payload = framed[4:]
    with pytest.raises(FrameError):
        decode_request(payload[: len(payload) - cut] if cut < len(payload) - 8 else payload[:8], disp.supported)


def test_trailing_bytes_are_ignored_as_kafka_does(disp):
    from kio.schema.api_versions.v3.request import ApiVersionsRequest

    framed = encode_request(request_header(18, 3, 1), ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    req = decode_request(framed[4:] + b"\x00junk", disp.supported)
    assert req.body.client_software_name == "t"


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=200))
def test_random_bytes_never_crash_the_decoder(data):
    """Any byte string either decodes, is unsupported, or is a FrameError — nothing else."""
    try:
        decode_request(data, SUPPORTED)
    except (FrameError, UnsupportedRequest):
        pass


def _create(disp, name, partitions=3):
    from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest

    return roundtrip(disp, 19, 7, CreateTopicsRequest(topics=(CreatableTopic(name=name, num_partitions=i32(partitions), replication_factor=i16(1), assignments=(), configs=()),), timeout=datetime.timedelta(seconds=5), validate_only=False))


def test_create_topics_then_metadata_shows_topic_id_and_partitions(disp):
    from kio.schema.metadata.v12.request import MetadataRequest

    created = _create(disp, "orders")
    assert created.topics[0].error_code == ErrorCode.none and created.topics[0].num_partitions == 3
    again = _create(disp, "orders")
    assert again.topics[0].error_code == ErrorCode.topic_already_exists
    md = roundtrip(disp, 3, 12, MetadataRequest(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    [t] = md.topics
    assert t.name == "orders" and t.topic_id == created.topics[0].topic_id
    assert [p.partition_index for p in t.partitions] == [0, 1, 2]
    assert all(p.leader_id == 1 for p in t.partitions)
    assert md.brokers[0].port == 9092


def test_metadata_unknown_topic_without_auto_create(disp):
    from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

    md = roundtrip(disp, 3, 12, MetadataRequest(topics=(MetadataRequestTopic(topic_id=None, name="nope"),), allow_auto_topic_creation=True, include_topic_authorized_operations=False))
    assert md.topics[0].error_code == ErrorCode.unknown_topic_or_partition


def test_find_coordinator_group_and_share_keys(disp):
    from kio.schema.find_coordinator.v6.request import FindCoordinatorRequest

    r = roundtrip(disp, 10, 6, FindCoordinatorRequest(key_type=i8(2), coordinator_keys=("g:AAAAAAAAAAAAAAAAAAAAAA:0",)))
    assert r.coordinators[0].error_code == ErrorCode.none and r.coordinators[0].node_id == 1
    r = roundtrip(disp, 10, 6, FindCoordinatorRequest(key_type=i8(1), coordinator_keys=("txn",)))
    assert r.coordinators[0].error_code == ErrorCode.coordinator_not_available


def test_produce_then_fetch_returns_the_same_batch(disp):
    from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
    from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

    _create(disp, "t", 1)
    batch = make_batch([b"a", b"b", b"c"])
    for expected_base in (0, 3):
        r = roundtrip(disp, 0, 9, ProduceRequest(transactional_id=None, acks=i16(-1), timeout=datetime.timedelta(seconds=5), topic_data=(TopicProduceData(name="t", partition_data=(PartitionProduceData(index=i32(0), records=batch),)),)))
        pr = r.responses[0].partition_responses[0]
        assert pr.error_code == ErrorCode.none and pr.base_offset == expected_base
    f = roundtrip(
        disp,
        1,
        12,
        FetchRequest(max_wait=datetime.timedelta(0), min_bytes=i32(1), topics=(FetchTopic(topic="t", partitions=(FetchPartition(partition=i32(0), fetch_offset=i64(3), partition_max_bytes=i32(1 << 20)),)),), forgotten_topics_data=()),
    )
    pd = f.responses[0].partitions[0]
    assert pd.high_watermark == 6
    assert struct.unpack(">q", pd.records[:8])[0] == 3


def test_produce_acks_zero_has_no_response_and_corrupt_batch_is_refused(disp):
    from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

    _create(disp, "t", 1)
    batch = bytearray(make_batch([b"x"]))
    assert roundtrip(disp, 0, 9, ProduceRequest(transactional_id=None, acks=i16(0), timeout=datetime.timedelta(seconds=5), topic_data=(TopicProduceData(name="t", partition_data=(PartitionProduceData(index=i32(0), records=bytes(batch)),)),))) is None
    batch[-1] ^= 0xFF  # breaks the CRC
    r = roundtrip(disp, 0, 9, ProduceRequest(transactional_id=None, acks=i16(1), timeout=datetime.timedelta(seconds=5), topic_data=(TopicProduceData(name="t", partition_data=(PartitionProduceData(index=i32(0), records=bytes(batch)),)),)))
    assert r.responses[0].partition_responses[0].error_code == ErrorCode.corrupt_message


def make_batch(values: list[bytes]) -> bytes:
    """An uncompressed RecordBatch v2 (base offset 0) from ``store.record_batch.build_batch``."""
    from store.record_batch import build_batch

    return build_batch([(None, v) for v in values])


@pytest.mark.parametrize(
    "batches,ok",
    [
        ((AckBatch(0, 4, (1,)),), True),
        ((AckBatch(0, 2, (1, 2, 3)),), True),
        ((AckBatch(5, 4, (1,)),), False),
        ((AckBatch(0, 4, ()),), False),
        ((AckBatch(0, 4, (1, 2)),), False),
        ((AckBatch(0, 1, (1, 9)),), False),
        ((AckBatch(5, 9, (1,)), AckBatch(0, 2, (1,))), False),
        ((AckBatch(0, 5, (1,)), AckBatch(5, 9, (1,))), True),  # one-offset overlap passes (Kafka uses <)
        ((AckBatch(-2, 3, (1,)),), False),  # below Kafka's initial prevEndOffset of -1
        ((AckBatch(-1, 3, (1,)),), True),
    ],
)
def test_validate_acknowledgement_batches(batches, ok):
    """KafkaApis.validateAcknowledgementBatches rules, per partition."""
    assert (validate_acknowledgement_batches([(b.first_offset, b.last_offset, b.types) for b in batches]) is None) == ok


def test_share_heartbeat_then_fetch_with_an_invalid_ack_batch(disp):
    """ShareGroupHeartbeat v1 returns the assignment by topic id; a ShareFetch whose
    acknowledgement batch is invalid gets INVALID_REQUEST as that partition's acknowledge error
    (the batch is not passed on), while its records are still fetched."""
    from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
    from kio.schema.share_fetch.v1.request import AcknowledgementBatch, FetchPartition, FetchTopic, ShareFetchRequest
    from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest

    created = _create(disp, "q", 1)
    tid = created.topics[0].topic_id
    roundtrip(disp, 0, 9, ProduceRequest(transactional_id=None, acks=i16(1), timeout=datetime.timedelta(seconds=5), topic_data=(TopicProduceData(name="q", partition_data=(PartitionProduceData(index=i32(0), records=make_batch([b"a", b"b"])),)),)))
    hb = roundtrip(disp, 76, 1, ShareGroupHeartbeatRequest(group_id="g", member_id="m1", member_epoch=i32(0), rack_id=None, subscribed_topic_names=("q",)))
    assert hb.error_code == ErrorCode.none and hb.member_id == "m1"
    assert [(tp.topic_id, tp.partitions) for tp in hb.assignment.topic_partitions] == [(tid, (0,))]
    bad = AcknowledgementBatch(first_offset=i64(3), last_offset=i64(1), acknowledge_types=(1,))
    r = roundtrip(
        disp,
        78,
        1,
        ShareFetchRequest(group_id="g", member_id="m1", share_session_epoch=i32(1), max_wait=datetime.timedelta(0), min_bytes=i32(1), max_records=i32(500), batch_size=i32(500), topics=(FetchTopic(topic_id=tid, partitions=(FetchPartition(partition_index=i32(0), acknowledgement_batches=(bad,)),)),), forgotten_topics_data=()),
    )
    [part] = r.responses[0].partitions
    assert part.acknowledge_error_code == ErrorCode.invalid_request.value
    assert [(a.first_offset, a.last_offset) for a in part.acquired_records] == [(0, 1)]
    assert part.records  # the batch's bytes
    assert disp.backend.acks == []  # the invalid batch never reached the backend


def test_describe_and_alter_group_configs(disp):
    from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
    from kio.schema.incremental_alter_configs.v1.request import AlterableConfig, AlterConfigsResource, IncrementalAlterConfigsRequest

    r = roundtrip(disp, 44, 1, IncrementalAlterConfigsRequest(resources=(AlterConfigsResource(resource_type=i8(32), resource_name="g", configs=(AlterableConfig(name="share.auto.offset.reset", config_operation=i8(0), value="earliest"),)),), validate_only=False))
    assert r.responses[0].error_code == ErrorCode.none
    d = roundtrip(disp, 32, 4, DescribeConfigsRequest(resources=(DescribeConfigsResource(resource_type=i8(32), resource_name="g", configuration_keys=None),), include_synonyms=False, include_documentation=False))
    assert [(c.name, c.value) for c in d.results[0].configs] == [("share.auto.offset.reset", "earliest")]


class _Waited(Exception):
    """Raised by a backend whose ``wait_for_data`` must not be reached."""


def _no_wait(be: FakeBackend) -> FakeBackend:
    def wait_for_data(timeout_ms, since=None):
        raise _Waited(timeout_ms)

    be.wait_for_data = wait_for_data
    return be


def _long_fetch(*parts: tuple[str, int]):
    from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic

    topics = tuple(FetchTopic(topic=t, partitions=(FetchPartition(partition=i32(p), fetch_offset=i64(0), partition_max_bytes=i32(1 << 20)),)) for t, p in parts)
    return FetchRequest(max_wait=datetime.timedelta(minutes=10), min_bytes=i32(1), topics=topics, forgotten_topics_data=())


def test_a_fetch_with_no_partitions_or_an_erroring_partition_is_answered_without_waiting():
    """Kafka's ReplicaManager.fetchMessages: no DelayedFetch when fetchInfos is empty or any
    partition has an error (errorReadingData), whatever max_wait is."""
    d = KafkaDispatcher(_no_wait(FakeBackend()), auto_create_topics=False)
    _create(d, "t", 1)
    assert roundtrip(d, 1, 12, _long_fetch()).responses == ()
    r = roundtrip(d, 1, 12, _long_fetch(("missing", 0)))
    assert r.responses[0].partitions[0].error_code == ErrorCode.unknown_topic_or_partition
    r = roundtrip(d, 1, 12, _long_fetch(("t", 0), ("missing", 0)))  # one empty partition, one error
    assert [p.error_code for t in r.responses for p in t.partitions] == [ErrorCode.none, ErrorCode.unknown_topic_or_partition]
    with pytest.raises(_Waited):  # the same Fetch of the empty partition alone long-polls
        roundtrip(d, 1, 12, _long_fetch(("t", 0)))


def test_renew_is_an_acknowledge_type_of_v2_only():
    """RENEW (4) came with ShareFetch/ShareAcknowledge v2 (KIP-1222): a v1 request carrying it is
    INVALID_REQUEST; the other types are valid in both."""
    renew, accept = [(0, 4, (4,))], [(0, 4, (1,))]
    assert validate_acknowledgement_batches(renew, renew=True) is None
    assert validate_acknowledgement_batches(renew, renew=False) is not None
    assert validate_acknowledgement_batches(accept, renew=False) is None
    assert validate_acknowledgement_batches([(0, 1, (1, 4))], renew=False) is not None


def test_a_renew_only_share_fetch_with_fetch_limits_is_invalid_request(disp):
    """KIP-1222 (Kafka 4.2, KAFKA-19844): a ShareFetch v2 with ``IsRenewAck`` fetches nothing, so
    a non-zero MaxBytes, MinBytes, MaxRecords or MaxWaitMs makes the whole request
    INVALID_REQUEST; with all four 0 it goes to the backend."""
    from kio.schema.share_fetch.v2.request import ShareFetchRequest

    def fetch(**limits):
        fields = {"max_wait": datetime.timedelta(0), "min_bytes": i32(0), "max_bytes": i32(0), "max_records": i32(0), **limits}
        return roundtrip(disp, 78, 2, ShareFetchRequest(group_id="g", member_id="m1", share_session_epoch=i32(1), batch_size=i32(0),
                                                        is_renew_ack=True, topics=(), forgotten_topics_data=(), **fields))

    for limits in ({"max_records": i32(10)}, {"min_bytes": i32(1)}, {"max_bytes": i32(1)}, {"max_wait": datetime.timedelta(milliseconds=5)}):
        assert fetch(**limits).error_code == ErrorCode.invalid_request, limits
    assert fetch().error_code != ErrorCode.invalid_request
