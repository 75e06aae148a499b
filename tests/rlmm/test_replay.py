"""Replaying RLMM events rebuilds the cache exactly (Hypothesis over random lifecycles).

The reference is Kafka's cache API called directly (``addCopyInProgressSegment`` /
``updateRemoteLogSegmentMetadata`` on an initialized cache, errors swallowed as Kafka's store
does). It is compared with (a) the fold of the same operations recorded as events and decoded
through the log codec, (b) a full replay from a real event log, and (c) snapshot at a random
version + tail."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.rlmm.cache import RemoteLogMetadataCache
from events.rlmm_errors import RemoteResourceNotFoundException
from actors.rlmm.manager import load_metadata_partition
from events.rlmm_types import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    TopicIdPartition,
)
from actors.rlmm.store import MetadataPartitionState, decide_add, decide_update
from events.codec import decode_event, new_event
from events.rlmm import stream_id
from store.event_log import open_event_log

PATH = [RemoteLogSegmentState.COPY_SEGMENT_STARTED, RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
        RemoteLogSegmentState.DELETE_SEGMENT_STARTED, RemoteLogSegmentState.DELETE_SEGMENT_FINISHED]
TOPIC_ID = uuid.UUID(int=0xABCDEF)
TPS = [TopicIdPartition(TOPIC_ID, "t", 0), TopicIdPartition(TOPIC_ID, "t", 1)]


@st.composite
def lifecycles(draw):
    """Operations over a pool of segments: each step advances one segment along
    CS → CF → DS → DF (CF may be skipped), sometimes repeats its state (a retry), and rarely
    jumps to a random state (an invalid transition Kafka drops)."""
    n = draw(st.integers(1, 8))
    segs = []
    for i in range(n):
        start = draw(st.integers(0, 400))
        length = draw(st.integers(0, 150))
        epochs = {draw(st.integers(0, 3)): start}
        if draw(st.booleans()):
            epochs[max(epochs) + 1] = start + draw(st.integers(0, length))
        segs.append(RemoteLogSegmentMetadata(
            RemoteLogSegmentId(draw(st.sampled_from(TPS)), uuid.UUID(int=i + 1)), start, start + length, -1,
            draw(st.integers(0, 3)), i, draw(st.integers(1, 10_000)), epochs,
            txn_idx_empty=draw(st.booleans())))
    progress = [-1] * n
    ops = []
    for _ in range(draw(st.integers(1, 40))):
        i = draw(st.integers(0, n - 1))
        kind = draw(st.sampled_from(["advance"] * 6 + ["repeat", "random"]))
        if kind == "advance" and progress[i] < 3:
            nxt = progress[i] + 1
            if nxt == 1 and draw(st.booleans()):
                nxt = 2  # CS → DS
            progress[i] = nxt
            state = PATH[nxt]
        elif kind == "repeat" and progress[i] >= 0:
            state = PATH[progress[i]]
        else:
            state = draw(st.sampled_from(PATH))
        if state is RemoteLogSegmentState.COPY_SEGMENT_STARTED:
            ops.append(segs[i])
        else:
            ops.append(RemoteLogSegmentMetadataUpdate(
                segs[i].remote_log_segment_id, 100 + len(ops), draw(st.one_of(st.none(), st.binary(max_size=4))),
                state, draw(st.integers(0, 3))))
    return ops


def reference_caches(ops) -> dict[TopicIdPartition, RemoteLogMetadataCache]:
    caches: dict[TopicIdPartition, RemoteLogMetadataCache] = {}
    for op in ops:
        cache = caches.get(op.topic_id_partition)
        if cache is None:
            cache = caches[op.topic_id_partition] = RemoteLogMetadataCache()
            cache.mark_initialized()
        if isinstance(op, RemoteLogSegmentMetadata):
            cache.add_copy_in_progress_segment(op)
        else:
            try:
                cache.update_remote_log_segment_metadata(op)
            except RemoteResourceNotFoundException:
                pass  # RemotePartitionMetadataStore logs and drops it
    return caches


def events_of(ops):
    out = []
    for op in ops:
        if isinstance(op, RemoteLogSegmentMetadata):
            out.append(decide_add(op))
        elif op.state is not RemoteLogSegmentState.COPY_SEGMENT_STARTED:
            out.append(decide_update(op))
    return out


def without_cs_updates(ops):
    """The writer refuses CS updates (IllegalArgumentException), so they never reach the log."""
    return [op for op in ops if isinstance(op, RemoteLogSegmentMetadata) or op.state is not RemoteLogSegmentState.COPY_SEGMENT_STARTED]


def assert_same(reference, state: MetadataPartitionState):
    assert set(state.caches) == set(reference)
    for tp, cache in reference.items():
        got = state.caches[tp]
        assert got == cache
        for epoch in range(5):
            assert got.list_remote_log_segments(epoch) == cache.list_remote_log_segments(epoch)
            assert got.highest_offset_for_epoch(epoch) == cache.highest_offset_for_epoch(epoch)
            for offset in range(0, 560, 7):
                assert got.remote_log_segment_metadata(epoch, offset) == cache.remote_log_segment_metadata(epoch, offset)


@settings(max_examples=250, deadline=None)
@given(lifecycles())
def test_fold_of_decoded_events_equals_direct_cache(ops):
    ops = without_cs_updates(ops)
    reference = reference_caches(ops)
    state = MetadataPartitionState(0)
    for version, ev in enumerate(events_of(ops), 1):
        stored = new_event(ev)
        state.evolve(decode_event(stored.event_type, stored.schema_version, stored.data), version)
    state.mark_initialized()
    assert_same(reference, state)
    # a snapshot round trip is exact too
    assert MetadataPartitionState.from_snapshot(state.to_snapshot()) == state


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lifecycles(), st.floats(0, 1))
def test_replay_from_event_log_and_snapshot_plus_tail(ops, cut):
    ops = without_cs_updates(ops)
    reference = reference_caches(ops)
    events = events_of(ops)
    with tempfile.TemporaryDirectory() as d:
        log = open_event_log(f"sqlite:///{Path(d) / 'e.db'}", synchronous="NORMAL")
        try:
            stream = stream_id(3)
            k = int(cut * len(events))
            if k:
                log.append(stream, [new_event(e) for e in events[:k]])
                partial, _ = load_metadata_partition(log, 3, use_snapshot=False)
                log.save_snapshot(stream, partial.version, partial.to_snapshot(), partial.position)
            if events[k:]:
                log.append(stream, [new_event(e) for e in events[k:]])
            full, n_full = load_metadata_partition(log, 3, use_snapshot=False)
            resumed, n_tail = load_metadata_partition(log, 3)
            assert n_full == len(events) and n_tail == len(events) - k
            assert_same(reference, full)
            assert resumed == full
        finally:
            log.close()
