"""The metadata-partition fold (Kafka's RemotePartitionMetadataStore + ConsumerTask bookkeeping),
with Shoal analogs of ConsumerTaskTest's scenarios (T8–T11, T14 of reference §8).

Mapping: a metadata partition is the stream ``rlmm:<p>``; Kafka's per-partition read offset is
``state.version - 1``; "initialized" is the state having folded the stream to its end."""

from __future__ import annotations

import pytest

from actors.messages import Configure, Configured
from actors.rlmm.actor import RlmmPartitionActor
from events.rlmm_errors import RemoteResourceNotFoundException, ReplicaNotAvailableException
from actors.rlmm.manager import EventSourcedRemoteLogMetadataManager, load_metadata_partition
from actors.rlmm.messages import IsReady, ListRemoteLogSegments, ReconcileAssignment, RlmmReply
from events.rlmm_types import TopicIdPartition, uuid_from_kafka_str
from actors.rlmm.partitioner import metadata_partition_for
from actors.rlmm.store import MetadataPartitionState, decide_add, decide_update
from events.codec import new_event
from events.rlmm import stream_id
from tests.rlmm.helpers import CF, seg, upd

TOPIC_ID = uuid_from_kafka_str("Bp9TDduJRGa9Q5rlvCJOxg")
SAMPLE = [TopicIdPartition(TOPIC_ID, "sample", p) for p in range(4)]  # 0,1,2 → metadata partition 2 of 5


def test_testMaybeLoadPartitionAndMarkInitialized():
    """T14 (code, RemotePartitionMetadataStore): a loaded but uninitialized partition answers
    ReplicaNotAvailableException; once initialized it returns the metadata."""
    st = MetadataPartitionState(2)
    m = seg(SAMPLE[0], 0, 10, {0: 0})
    st.evolve(decide_add(m), 1)
    with pytest.raises(ReplicaNotAvailableException, match="not initialized for partition"):
        st.cache_for_read(SAMPLE[0], registered=True)
    st.mark_initialized()
    assert st.cache_for_read(SAMPLE[0], registered=True).list_all_remote_log_segments() == [m]
    with pytest.raises(RemoteResourceNotFoundException, match="No resource found for partition"):
        st.cache_for_read(SAMPLE[0], registered=False)


def test_testCanProcessRecord(sqlite_log):
    """T10 ConsumerTaskTest#testCanProcessRecord: sample-0,1,2 share a metadata partition (n=5).
    Events of an unregistered partition advance the read offset but are not visible."""
    n = 5
    assert {metadata_partition_for(t, n) for t in SAMPLE[:3]} == {2}
    rlmm = EventSourcedRemoteLogMetadataManager(sqlite_log, num_partitions=n)
    rlmm.on_partition_leadership_changes({SAMPLE[0]}, set())
    rlmm.add_remote_log_segment_metadata(seg(SAMPLE[0], 0, 10, {0: 0}))
    rlmm.add_remote_log_segment_metadata(seg(SAMPLE[0], 11, 20, {0: 11}))
    state = rlmm.state_of(2)
    assert state.version - 1 == 1 and len(list(rlmm.list_remote_log_segments(SAMPLE[0]))) == 2
    rlmm.on_partition_leadership_changes({SAMPLE[1]}, set())
    rlmm.add_remote_log_segment_metadata(seg(SAMPLE[1], 0, 10, {0: 0}))
    assert state.version - 1 == 2 and len(list(rlmm.list_remote_log_segments(SAMPLE[1]))) == 1
    rlmm.add_remote_log_segment_metadata(seg(SAMPLE[2], 0, 10, {0: 0}))  # unregistered, same metadata partition
    assert state.version - 1 == 3
    with pytest.raises(RemoteResourceNotFoundException):
        rlmm.list_remote_log_segments(SAMPLE[2])


def test_testCanReprocessSkippedRecords():
    """T11 ConsumerTaskTest#testCanReprocessSkippedRecords: a partition registered later sees
    its earlier records; records re-delivered at folded versions are not processed twice."""
    st = MetadataPartitionState(2)
    m1, m0 = seg(SAMPLE[1], 0, 10, {0: 0}), seg(SAMPLE[0], 0, 10, {0: 0})
    e1, e0 = decide_add(m1), decide_add(m0)
    assert st.evolve(e1, 1) and st.evolve(e0, 2)
    st.mark_initialized()
    # re-delivery of offsets 0 and 1 after a reassignment: ignored
    assert not st.evolve(e1, 1) and not st.evolve(e0, 2)
    f = decide_update(upd(m0, CF))
    assert st.evolve(f, 3) and not st.evolve(f, 3)
    assert st.cache_for_read(SAMPLE[1], registered=True).list_all_remote_log_segments() == [m1]
    with pytest.raises(ValueError, match="expected version 4"):
        st.evolve(f, 5)  # a gap in the stream is an error, never silently skipped


def test_testMaybeMarkUserPartitionAsReadyWhenTopicIsEmpty(asys, sqlite_url, sqlite_log):
    """T9: an empty metadata partition is ready at once (nothing replayed)."""
    a = asys.createActor(RlmmPartitionActor)
    reply = asys.ask(a, Configure({"event.log.url": sqlite_url}, stream_id(7)), 5)
    assert reply == Configured(stream_id(7), 0, 0)
    state, replayed = load_metadata_partition(sqlite_log, 7)
    assert replayed == 0 and state.initialized and state.version == 0


def test_testMaybeMarkUserPartitionsAsReady(asys, sqlite_url, sqlite_log):
    """T8: with records at offsets 0..4 in the metadata partition, the partition is ready once
    they are all folded (read offset 4)."""
    p = SAMPLE[0]
    mp = metadata_partition_for(p, 50)
    sqlite_log.append(stream_id(mp), [new_event(decide_add(seg(p, i * 10, i * 10 + 9, {0: i * 10}))) for i in range(5)])
    a = asys.createActor(RlmmPartitionActor)
    reply = asys.ask(a, Configure({"event.log.url": sqlite_url, "shoal.rlmm.recovery.page.events": "2"}, stream_id(mp)), 5)
    assert reply == Configured(stream_id(mp), 5, 5)
    asys.ask(a, ReconcileAssignment([p]), 5)
    assert asys.ask(a, IsReady(p), 5) == RlmmReply(True)
    assert len(asys.ask(a, ListRemoteLogSegments(p), 5).value) == 5
