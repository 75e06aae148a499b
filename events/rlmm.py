"""RLMM domain events: the tiered-storage metadata decisions, one stream per metadata partition.

Stream ``rlmm:<metadata partition>`` (:func:`stream_id`) plays the role of one partition of
Kafka's ``__remote_log_metadata`` topic: the Kafka offset of an event is its ``stream_version − 1``.
Which stream a user partition's events go to is Kafka's partitioner
(:func:`actors.rlmm.partitioner.metadata_partition_for`).

Three event types mirror the three record types Kafka publishes (``RemoteLogMetadataSerde``
api keys 0, 1, 2); their fields are Kafka's, flattened to JSON-friendly values so the DuckDB and
Spark projections can read them: ids are Kafka's 22-character base64 ``Uuid`` strings, states
are Kafka's byte ids, ``segment_leader_epochs`` is a list of ``[epoch, start_offset]`` pairs in
ascending epoch order, ``custom_metadata`` is bytes or ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from events.rlmm_types import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
    TopicIdPartition,
    uuid_from_kafka_str,
    uuid_to_kafka_str,
)
from events.base import domain_event

__all__ = [
    "RemoteLogMetadataEvent",
    "RemotePartitionDeleteMetadataPut",
    "SegmentMetadataAdded",
    "SegmentMetadataUpdated",
    "STREAM_PREFIX",
    "event_for",
    "metadata_of",
    "metadata_partition_of_stream",
    "stream_id",
]

#: Prefix of the RLMM streams: ``rlmm:<metadata partition>``.
STREAM_PREFIX = "rlmm:"


def stream_id(metadata_partition: int) -> str:
    """The event stream of metadata partition ``metadata_partition`` (``rlmm:<p>``)."""
    return f"{STREAM_PREFIX}{metadata_partition}"


def metadata_partition_of_stream(stream: str) -> int:
    """Inverse of :func:`stream_id`; raises ``ValueError`` for another stream."""
    if not stream.startswith(STREAM_PREFIX):
        raise ValueError(f"not an RLMM stream: {stream!r}")
    return int(stream[len(STREAM_PREFIX):])


@domain_event("rlmm.SegmentMetadataAdded", schema_version=1)
@dataclass(frozen=True, slots=True)
class SegmentMetadataAdded:
    """``addRemoteLogSegmentMetadata``: a copy attempt started (Kafka record type 0). ``state``
    is COPY_SEGMENT_STARTED (0) when written by Shoal; any state byte read from Kafka is kept."""

    topic_id: str
    topic: str
    partition: int
    segment_id: str
    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    broker_id: int
    event_timestamp_ms: int
    segment_size_in_bytes: int
    segment_leader_epochs: tuple[tuple[int, int], ...]
    custom_metadata: Optional[bytes]
    state: int
    txn_idx_empty: bool = False


@domain_event("rlmm.SegmentMetadataUpdated", schema_version=1)
@dataclass(frozen=True, slots=True)
class SegmentMetadataUpdated:
    """``updateRemoteLogSegmentMetadata``: a segment changed state (Kafka record type 1)."""

    topic_id: str
    topic: str
    partition: int
    segment_id: str
    event_timestamp_ms: int
    custom_metadata: Optional[bytes]
    state: int
    broker_id: int


@domain_event("rlmm.RemotePartitionDeleteMetadataPut", schema_version=1)
@dataclass(frozen=True, slots=True)
class RemotePartitionDeleteMetadataPut:
    """``putRemotePartitionDeleteMetadata``: a partition's delete state (Kafka record type 2)."""

    topic_id: str
    topic: str
    partition: int
    state: int
    event_timestamp_ms: int
    broker_id: int


RemoteLogMetadataEvent = Union[SegmentMetadataAdded, SegmentMetadataUpdated, RemotePartitionDeleteMetadataPut]
KafkaMetadata = Union[RemoteLogSegmentMetadata, RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata]


def event_for(metadata: KafkaMetadata) -> RemoteLogMetadataEvent:
    """The domain event recording ``metadata``. Raises ``TypeError`` for another type."""
    if isinstance(metadata, RemoteLogSegmentMetadata):
        sid = metadata.remote_log_segment_id
        tp = sid.topic_id_partition
        return SegmentMetadataAdded(
            uuid_to_kafka_str(tp.topic_id), tp.topic, tp.partition, uuid_to_kafka_str(sid.id),
            metadata.start_offset, metadata.end_offset, metadata.max_timestamp_ms, metadata.broker_id,
            metadata.event_timestamp_ms, metadata.segment_size_in_bytes, metadata.segment_leader_epochs,
            metadata.custom_metadata, int(metadata.state), metadata.txn_idx_empty,
        )
    if isinstance(metadata, RemoteLogSegmentMetadataUpdate):
        sid = metadata.remote_log_segment_id
        tp = sid.topic_id_partition
        return SegmentMetadataUpdated(
            uuid_to_kafka_str(tp.topic_id), tp.topic, tp.partition, uuid_to_kafka_str(sid.id),
            metadata.event_timestamp_ms, metadata.custom_metadata, int(metadata.state), metadata.broker_id,
        )
    if isinstance(metadata, RemotePartitionDeleteMetadata):
        tp = metadata.topic_id_partition
        return RemotePartitionDeleteMetadataPut(
            uuid_to_kafka_str(tp.topic_id), tp.topic, tp.partition, int(metadata.state),
            metadata.event_timestamp_ms, metadata.broker_id,
        )
    raise TypeError(f"not RLMM metadata: {type(metadata).__name__}")


_TP_CACHE: dict[tuple[str, str, int], TopicIdPartition] = {}


def _tp(topic_id: str, topic: str, partition: int) -> TopicIdPartition:
    key = (topic_id, topic, partition)
    tp = _TP_CACHE.get(key)
    if tp is None:
        if len(_TP_CACHE) > 100_000:
            _TP_CACHE.clear()
        tp = _TP_CACHE[key] = TopicIdPartition(uuid_from_kafka_str(topic_id), topic, partition)
    return tp


def metadata_of(event: RemoteLogMetadataEvent) -> KafkaMetadata:
    """The Kafka metadata object an event records (inverse of :func:`event_for`)."""
    if isinstance(event, SegmentMetadataAdded):
        tp = _tp(event.topic_id, event.topic, event.partition)
        return RemoteLogSegmentMetadata(
            RemoteLogSegmentId(tp, uuid_from_kafka_str(event.segment_id)),
            event.start_offset, event.end_offset, event.max_timestamp_ms, event.broker_id,
            event.event_timestamp_ms, event.segment_size_in_bytes, event.segment_leader_epochs,
            RemoteLogSegmentState(event.state), event.custom_metadata, event.txn_idx_empty,
        )
    if isinstance(event, SegmentMetadataUpdated):
        tp = _tp(event.topic_id, event.topic, event.partition)
        return RemoteLogSegmentMetadataUpdate(
            RemoteLogSegmentId(tp, uuid_from_kafka_str(event.segment_id)), event.event_timestamp_ms,
            event.custom_metadata, RemoteLogSegmentState(event.state), event.broker_id,
        )
    if isinstance(event, RemotePartitionDeleteMetadataPut):
        tp = _tp(event.topic_id, event.topic, event.partition)
        return RemotePartitionDeleteMetadata(tp, RemotePartitionDeleteState(event.state), event.event_timestamp_ms, event.broker_id)
    raise TypeError(f"not an RLMM event: {type(event).__name__}")
