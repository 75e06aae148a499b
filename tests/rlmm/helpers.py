"""Builders shared by the RLMM tests (Kafka's test utilities in spirit: one tp, fresh ids)."""

from __future__ import annotations

import uuid

from events.rlmm_types import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    TopicIdPartition,
)

CS = RemoteLogSegmentState.COPY_SEGMENT_STARTED
CF = RemoteLogSegmentState.COPY_SEGMENT_FINISHED
DS = RemoteLogSegmentState.DELETE_SEGMENT_STARTED
DF = RemoteLogSegmentState.DELETE_SEGMENT_FINISHED


def tp(name: str = "foo", partition: int = 0, topic_id: uuid.UUID | None = None) -> TopicIdPartition:
    return TopicIdPartition(topic_id or uuid.uuid4(), name, partition)


def seg_id(tip: TopicIdPartition) -> RemoteLogSegmentId:
    return RemoteLogSegmentId.generate_new(tip)


def seg(tip: TopicIdPartition, start: int, end: int, epochs: dict[int, int], *, size: int = 1024, broker: int = 0,
        ts: int = 0, sid: RemoteLogSegmentId | None = None, txn_idx_empty: bool = False) -> RemoteLogSegmentMetadata:
    return RemoteLogSegmentMetadata(sid or seg_id(tip), start, end, -1, broker, ts, size, epochs,
                                    txn_idx_empty=txn_idx_empty)


def upd(m: RemoteLogSegmentMetadata, state: RemoteLogSegmentState, *, broker: int = 1, ts: int = 1,
        custom: bytes | None = None) -> RemoteLogSegmentMetadataUpdate:
    return RemoteLogSegmentMetadataUpdate(m.remote_log_segment_id, ts, custom, state, broker)
