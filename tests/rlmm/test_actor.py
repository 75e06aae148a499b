"""RlmmPartitionActor under ``simpleSystemBase``: fail-closed NotReady before and during recovery,
ready after; writes, queries, assignment; restart from snapshot + tail gives the same cache."""

from __future__ import annotations

from typing import Any

import pytest
from thespian.actors import ActorExitRequest, ActorTypeDispatcher

from actors.messages import Configure, Configured, Failure, NotReady, StatusReply, StatusRequest
from actors.rlmm.actor import RlmmPartitionActor
from events.rlmm_errors import exception_for, RemoteResourceNotFoundException
from actors.rlmm.manager import load_metadata_partition
from actors.rlmm.messages import (
    AddRemoteLogSegmentMetadata,
    AssignmentReconciled,
    GetHighestOffsetForEpoch,
    GetNextSegmentWithTxnIndex,
    GetRemoteLogSegmentMetadata,
    GetRemoteLogSize,
    IsReady,
    ListRemoteLogSegments,
    MetadataStored,
    PutRemotePartitionDeleteMetadata,
    ReconcileAssignment,
    RlmmReply,
    SnapshotTaken,
    TakeSnapshot,
    UpdateRemoteLogSegmentMetadata,
)
from events.rlmm_types import RemotePartitionDeleteMetadata, RemotePartitionDeleteState, TopicIdPartition
from actors.rlmm.partitioner import metadata_partition_for
from events.rlmm import stream_id
from tests.rlmm.helpers import CF, CS, DS, seg, tp, upd

T = 5  # seconds per ask


def partition_pair(n: int = 50) -> tuple[TopicIdPartition, TopicIdPartition, int]:
    """Two user partitions of one topic that share a metadata partition."""
    first = tp("orders", 0)
    mp = metadata_partition_for(first, n)
    for partition in range(1, 10_000):
        other = TopicIdPartition(first.topic_id, "orders", partition)
        if metadata_partition_for(other, n) == mp:
            return first, other, mp
    raise AssertionError("no second partition found")


@pytest.fixture
def cfg(sqlite_url):
    return {"event.log.url": sqlite_url, "event.log.sqlite.synchronous": "NORMAL",
            "shoal.rlmm.snapshot.interval.events": "0"}


def start(asys, cfg, mp):
    a = asys.createActor(RlmmPartitionActor)
    reply = asys.ask(a, Configure(cfg, stream_id(mp)), T)
    assert isinstance(reply, Configured), reply
    return a, reply


def test_not_ready_before_configure(asys):
    a = asys.createActor(RlmmPartitionActor)
    p = tp()
    for msg in (GetRemoteLogSegmentMetadata(p, 0, 0), ListRemoteLogSegments(p), AddRemoteLogSegmentMetadata(seg(p, 0, 1, {0: 0})),
                TakeSnapshot()):
        assert isinstance(asys.ask(a, msg, T), NotReady)
    assert asys.ask(a, IsReady(p), T) == RlmmReply(False)
    status = asys.ask(a, StatusRequest(), T)
    assert isinstance(status, StatusReply) and status.ready is False


class Prober(ActorTypeDispatcher):
    """Sends Configure and, before the RLMM actor can process its recovery steps, a query."""

    def receiveMsg_tuple(self, msg: tuple, sender: Any) -> None:
        rlmm, config, name, query = msg
        self.asker, self.replies = sender, []
        self.send(rlmm, Configure(config, name))
        self.send(rlmm, query)

    def receiveUnrecognizedMessage(self, msg: Any, sender: Any) -> None:
        self.replies.append(msg)
        if len(self.replies) == 2:
            self.send(self.asker, list(self.replies))


def test_not_ready_during_recovery_then_ready(asys, cfg):
    """Fail closed: a query arriving while the stream is being folded gets NotReady; the
    configurer gets Configured once the actor has caught up."""
    p, _, mp = partition_pair()
    a, _ = start(asys, cfg, mp)
    asys.ask(a, ReconcileAssignment([p]), T)
    for i in range(6):
        assert isinstance(asys.ask(a, AddRemoteLogSegmentMetadata(seg(p, i * 10, i * 10 + 9, {0: i * 10})), T), MetadataStored)
    b = asys.createActor(RlmmPartitionActor)
    prober = asys.createActor(Prober)
    replies = asys.ask(prober, (b, dict(cfg, **{"shoal.rlmm.recovery.page.events": "2"}), stream_id(mp), ListRemoteLogSegments(p)), T)
    assert isinstance(replies[0], NotReady) and replies[0].name == stream_id(mp)
    assert replies[1] == Configured(stream_id(mp), 6, 6)
    asys.ask(b, ReconcileAssignment([p]), T)
    listed = asys.ask(b, ListRemoteLogSegments(p), T)
    assert isinstance(listed, RlmmReply) and len(listed.value) == 6


def test_writes_queries_and_assignment(asys, cfg):
    p, q, mp = partition_pair()
    a, configured = start(asys, cfg, mp)
    assert configured == Configured(stream_id(mp), 0, 0)
    s = seg(p, 0, 99, {0: 0, 1: 50}, txn_idx_empty=True)
    s2 = seg(p, 100, 199, {1: 100})
    # not assigned yet: stored, but the write fails like Kafka's (T1/T2)
    reply = asys.ask(a, AddRemoteLogSegmentMetadata(s), T)
    assert isinstance(reply, Failure) and reply.error == "KafkaException"
    assert reply.message == f"This consumer is not assigned to the target partition {mp}. Currently assigned partitions: []"
    reply = asys.ask(a, ListRemoteLogSegments(p), T)
    assert isinstance(exception_for(reply.error, reply.message), RemoteResourceNotFoundException)
    other = TopicIdPartition(p.topic_id, "orders", 99_999)
    rec = asys.ask(a, ReconcileAssignment([p, q] + ([other] if metadata_partition_for(other, 50) != mp else [])), T)
    assert isinstance(rec, AssignmentReconciled) and set(rec.registered) == {p, q}
    assert asys.ask(a, IsReady(p), T) == RlmmReply(True)
    assert asys.ask(a, ListRemoteLogSegments(p), T) == RlmmReply([s])  # the earlier event was kept
    assert asys.ask(a, UpdateRemoteLogSegmentMetadata(upd(s, CF)), T) == MetadataStored(mp, 1, True)
    assert asys.ask(a, AddRemoteLogSegmentMetadata(s2), T) == MetadataStored(mp, 2, True)
    assert asys.ask(a, UpdateRemoteLogSegmentMetadata(upd(s2, CF)), T) == MetadataStored(mp, 3, True)
    sf, s2f = s.create_with_updates(upd(s, CF)), s2.create_with_updates(upd(s2, CF))
    assert asys.ask(a, GetRemoteLogSegmentMetadata(p, 1, 60), T) == RlmmReply(sf)
    assert asys.ask(a, GetRemoteLogSegmentMetadata(p, 0, 60), T) == RlmmReply(None)
    assert asys.ask(a, GetNextSegmentWithTxnIndex(p, 1, 60), T) == RlmmReply(s2f)
    assert asys.ask(a, GetHighestOffsetForEpoch(p, 1), T) == RlmmReply(199)
    assert asys.ask(a, GetRemoteLogSize(p, 1), T) == RlmmReply(s.segment_size_in_bytes + s2.segment_size_in_bytes)
    assert asys.ask(a, ListRemoteLogSegments(p, 1), T) == RlmmReply([sf, s2f])
    assert asys.ask(a, ListRemoteLogSegments(q), T) == RlmmReply([])
    # an update to COPY_SEGMENT_STARTED is refused by the decider (nothing stored) …
    assert asys.ask(a, UpdateRemoteLogSegmentMetadata(upd(s, CS)), T).error == "IllegalArgumentException"
    # … while re-adding a finished segment is stored and acknowledged but not applied (Kafka 3.7+)
    assert asys.ask(a, AddRemoteLogSegmentMetadata(s), T) == MetadataStored(mp, 4, False)
    # a partition of another metadata partition is refused
    stranger = next(TopicIdPartition(p.topic_id, "orders", i) for i in range(1, 1000)
                    if metadata_partition_for(TopicIdPartition(p.topic_id, "orders", i), 50) != mp)
    assert asys.ask(a, AddRemoteLogSegmentMetadata(seg(stranger, 0, 1, {0: 0})), T).error == "IllegalArgumentException"
    # partition delete finished: the partition is gone
    fin = RemotePartitionDeleteMetadata(q, RemotePartitionDeleteState.DELETE_PARTITION_FINISHED, 9, 0)
    assert asys.ask(a, PutRemotePartitionDeleteMetadata(fin), T) == MetadataStored(mp, 5, True)
    assert asys.ask(a, ListRemoteLogSegments(q), T).error == "RemoteResourceNotFoundException"
    status = asys.ask(a, StatusRequest(), T)
    assert status.ready and status.counts["version"] == 6 and status.counts["registered"] == 2


def _observe(asys, a, p):
    """Everything a client can see of ``p`` through the actor."""
    seen = [asys.ask(a, ListRemoteLogSegments(p), T).value]
    for epoch in range(4):
        seen.append(asys.ask(a, ListRemoteLogSegments(p, epoch), T).value)
        seen.append(asys.ask(a, GetHighestOffsetForEpoch(p, epoch), T).value)
        seen.extend(asys.ask(a, GetRemoteLogSegmentMetadata(p, epoch, o), T).value for o in range(0, 400, 13))
    return seen


def test_restart_from_snapshot_plus_tail_gives_the_same_cache(asys, cfg, sqlite_log):
    p, q, mp = partition_pair()
    a, _ = start(asys, cfg, mp)
    asys.ask(a, ReconcileAssignment([p, q]), T)

    def lifecycle(lo, hi):
        for i in range(lo, hi):
            s = seg(p if i % 2 else q, i * 20, i * 20 + 19, {i // 5: i * 20})
            asys.ask(a, AddRemoteLogSegmentMetadata(s), T)
            asys.ask(a, UpdateRemoteLogSegmentMetadata(upd(s, CF)), T)
            if i % 4 == 0:
                asys.ask(a, UpdateRemoteLogSegmentMetadata(upd(s, DS)), T)

    lifecycle(0, 10)
    taken = asys.ask(a, TakeSnapshot(), T)
    assert isinstance(taken, SnapshotTaken) and taken.version == sqlite_log.stream_version(stream_id(mp))
    lifecycle(10, 16)  # the tail after the snapshot
    total = sqlite_log.stream_version(stream_id(mp))
    before = {x: _observe(asys, a, x) for x in (p, q)}

    b, configured = start(asys, cfg, mp)
    assert configured.events_replayed == total - taken.version  # resumed from the snapshot
    asys.ask(b, ReconcileAssignment([p, q]), T)
    assert {x: _observe(asys, b, x) for x in (p, q)} == before
    full, n = load_metadata_partition(sqlite_log, mp, use_snapshot=False)
    assert n == total
    assert [full.caches[x].list_all_remote_log_segments() for x in (q, p)] == [before[x][0] for x in (q, p)]

    # exit snapshots the state: a third start replays nothing
    asys.tell(b, ActorExitRequest())
    c, configured = start(asys, cfg, mp)
    assert configured.events_replayed == 0


def test_configure_rejects_bad_names(asys, cfg):
    a = asys.createActor(RlmmPartitionActor)
    assert isinstance(asys.ask(a, Configure(cfg, "rlmm:50"), T), Failure)  # 0..49 with the default 50
    assert isinstance(asys.ask(a, Configure(cfg, "nope"), T), Failure)


def test_actor_backed_manager_interface(asys, cfg):
    """ActorRemoteLogMetadataManager: Kafka's interface over the partition actors (here 3
    metadata partitions): lifecycle, errors translated back to Kafka's exceptions."""
    from actors.rlmm.actor import start_rlmm_actors
    from events.rlmm_errors import IllegalArgumentException, KafkaException
    from actors.rlmm.manager import ActorRemoteLogMetadataManager

    cfg3 = dict(cfg, **{"remote.log.metadata.topic.num.partitions": "3"})
    actors = start_rlmm_actors(asys, cfg3)
    assert sorted(actors) == [0, 1, 2]
    rlmm = ActorRemoteLogMetadataManager(lambda addr, msg: asys.ask(addr, msg, T), actors, num_partitions=3)
    p, q = tp("a", 0), tp("b", 1)
    s = seg(p, 0, 99, {0: 0})
    with pytest.raises(KafkaException, match="not assigned"):
        rlmm.add_remote_log_segment_metadata(s)
    with pytest.raises(RemoteResourceNotFoundException):
        rlmm.list_remote_log_segments(p)
    rlmm.on_partition_leadership_changes({p}, {q})
    assert rlmm.is_ready(p) and rlmm.is_ready(q)
    assert list(rlmm.list_remote_log_segments(p)) == [s]
    rlmm.update_remote_log_segment_metadata(upd(s, CF))
    assert rlmm.remote_log_segment_metadata(p, 0, 50) == s.create_with_updates(upd(s, CF))
    assert rlmm.highest_offset_for_epoch(p, 0) == 99
    assert rlmm.remote_log_size(p, 0) == s.segment_size_in_bytes
    assert rlmm.next_segment_with_txn_index(p, 0, 50) == s.create_with_updates(upd(s, CF))
    with pytest.raises(IllegalArgumentException):
        rlmm.update_remote_log_segment_metadata(upd(s, CS))
    rlmm.on_stop_partitions({p})
    assert not rlmm.is_ready(p) and rlmm.is_ready(q)
    with pytest.raises(ValueError):
        ActorRemoteLogMetadataManager(lambda a, m: None, {0: actors[0]}, num_partitions=3)


def test_actor_backed_manager_starts_partitions_on_first_use(asys, cfg):
    """With ``start``, ActorRemoteLogMetadataManager starts a metadata partition's actor only when
    a user partition hashed to it is first used (a leadership change or a request), once each,
    and asks it nothing before it answered ``Configured`` (recovered); a start that fails fails
    that request with KafkaException and is tried again on the next use."""
    from events.rlmm_errors import KafkaException
    from actors.rlmm.manager import ActorRemoteLogMetadataManager

    cfg3 = dict(cfg, **{"remote.log.metadata.topic.num.partitions": "3"})
    started: list[int] = []
    refuse = {"on": True}

    def start(mp: int) -> Any:
        if refuse["on"]:
            raise RuntimeError("controller unavailable")
        addr = asys.createActor(RlmmPartitionActor)
        assert isinstance(asys.ask(addr, Configure(cfg3, stream_id(mp)), T), Configured)
        started.append(mp)
        return addr

    rlmm = ActorRemoteLogMetadataManager(lambda addr, msg: asys.ask(addr, msg, T), {}, num_partitions=3, start=start)
    p = tp("a", 0)
    mp = metadata_partition_for(p, 3)
    assert rlmm.started_partitions() == [] and started == []
    with pytest.raises(KafkaException, match="did not start"):
        rlmm.on_partition_leadership_changes({p}, set())
    refuse["on"] = False
    rlmm.on_partition_leadership_changes({p}, set())
    assert started == [mp] and rlmm.started_partitions() == [mp]
    s = seg(p, 0, 99, {0: 0})
    rlmm.add_remote_log_segment_metadata(s)
    assert list(rlmm.list_remote_log_segments(p)) == [s]
    assert started == [mp]  # one start per metadata partition
    other = next(x for x in (tp("b", i) for i in range(100)) if metadata_partition_for(x, 3) != mp)  # tp() draws a new topic id
    with pytest.raises(RemoteResourceNotFoundException):
        rlmm.list_remote_log_segments(other)  # a request starts its partition's actor too
    assert sorted(started) == sorted([mp, metadata_partition_for(other, 3)])
    with pytest.raises(ValueError):
        ActorRemoteLogMetadataManager(lambda a, m: None, {3: None}, num_partitions=3, start=start)


def test_writes_through_the_journal_actor(asys, cfg, sqlite_log):
    """With a JournalActor the append is group-committed; the reply still comes after durability."""
    from actors.journal import JournalActor

    journal = asys.createActor(JournalActor)
    assert isinstance(asys.ask(journal, Configure(cfg, "journal"), T), Configured)
    p, _, mp = partition_pair()
    a = asys.createActor(RlmmPartitionActor)
    assert isinstance(asys.ask(a, Configure(cfg, stream_id(mp), journal), T), Configured)
    asys.ask(a, ReconcileAssignment([p]), T)
    s = seg(p, 0, 9, {0: 0})
    assert asys.ask(a, AddRemoteLogSegmentMetadata(s), T) == MetadataStored(mp, 0, True)
    assert asys.ask(a, UpdateRemoteLogSegmentMetadata(upd(s, CF)), T) == MetadataStored(mp, 1, True)
    assert sqlite_log.stream_version(stream_id(mp)) == 2
    assert asys.ask(a, GetRemoteLogSegmentMetadata(p, 0, 5), T) == RlmmReply(s.create_with_updates(upd(s, CF)))


def test_concurrent_writer_is_folded_before_retrying(asys, cfg, sqlite_log):
    """Another writer appended to the stream: the expected-version conflict makes the actor fold
    the foreign event and retry, so both events are in the log in order and in the cache."""
    from events.codec import new_event
    from actors.rlmm.store import decide_add

    p, _, mp = partition_pair()
    a, _ = start(asys, cfg, mp)
    asys.ask(a, ReconcileAssignment([p]), T)
    foreign = seg(p, 0, 9, {0: 0})
    sqlite_log.append(stream_id(mp), [new_event(decide_add(foreign))])
    mine = seg(p, 10, 19, {0: 10})
    assert asys.ask(a, AddRemoteLogSegmentMetadata(mine), T) == MetadataStored(mp, 1, True)
    assert asys.ask(a, ListRemoteLogSegments(p, 0), T) == RlmmReply([foreign, mine])


def test_an_actor_started_after_a_failed_start_gets_its_assignment(asys, cfg):
    """A user partition registered while its metadata partition's actor could not start (the
    controller was slow): the next use starts the actor and sends it the registered assignment,
    so the partition becomes ready (without it, ``is_ready`` stayed false for good and the
    RemoteLogManager never tiered the partition)."""
    from actors.messages import Configure, Configured
    from actors.rlmm.actor import RlmmPartitionActor
    from events.rlmm_errors import KafkaException
    from actors.rlmm.manager import ActorRemoteLogMetadataManager
    from events.rlmm import stream_id

    cfg3 = dict(cfg, **{"remote.log.metadata.topic.num.partitions": "3"})
    refuse = {"on": True}

    def start(mp: int):
        if refuse["on"]:
            raise RuntimeError("controller busy (ChildLookup timed out)")
        addr = asys.createActor(RlmmPartitionActor)
        assert isinstance(asys.ask(addr, Configure(cfg3, stream_id(mp)), 5), Configured)
        return addr

    rlmm = ActorRemoteLogMetadataManager(lambda addr, msg: asys.ask(addr, msg, 5), {}, num_partitions=3, start=start)
    p = tp("a", 0)
    with pytest.raises(KafkaException):
        rlmm.on_partition_leadership_changes({p}, set())
    refuse["on"] = False
    assert rlmm.is_ready(p)
