"""RlmmPartitionActors in separate processes (``multiprocTCPBase``): every message crosses a
process boundary pickled; Kafka's interface works through ActorRemoteLogMetadataManager; a
replacement actor recovers the same state from snapshot + tail."""

from __future__ import annotations

from thespian.actors import ActorExitRequest

from actors.messages import Configure, Configured
from actors.rlmm.actor import start_rlmm_actors
from actors.rlmm.manager import ActorRemoteLogMetadataManager
from actors.rlmm.messages import ReconcileAssignment, TakeSnapshot, SnapshotTaken
from actors.rlmm.partitioner import metadata_partition_for
from events.rlmm import stream_id
from tests.rlmm.helpers import CF, DS, seg, tp, upd

T = 20


def test_rlmm_actors_across_processes(mp_asys, sqlite_url):
    asys = mp_asys
    cfg = {"event.log.url": sqlite_url, "remote.log.metadata.topic.num.partitions": "2",
           "shoal.rlmm.snapshot.interval.events": "0"}
    actors = start_rlmm_actors(asys, cfg, timeout_s=T)
    rlmm = ActorRemoteLogMetadataManager(lambda a, m: asys.ask(a, m, T), actors, num_partitions=2)
    p = tp("orders", 0)
    rlmm.on_partition_leadership_changes({p}, set())
    segs = [seg(p, i * 100, i * 100 + 99, {i // 3: i * 100}) for i in range(6)]
    for s in segs:
        rlmm.add_remote_log_segment_metadata(s)
        rlmm.update_remote_log_segment_metadata(upd(s, CF))
    mp = metadata_partition_for(p, 2)
    assert isinstance(asys.ask(actors[mp], TakeSnapshot(), T), SnapshotTaken)
    rlmm.update_remote_log_segment_metadata(upd(segs[0], DS))  # the tail after the snapshot
    fin = [s.create_with_updates(upd(s, CF)) for s in segs]
    assert rlmm.remote_log_segment_metadata(p, 1, 450) == fin[4]
    assert rlmm.remote_log_segment_metadata(p, 0, 50) is None
    before = [list(rlmm.list_remote_log_segments(p, e)) for e in range(2)]

    asys.tell(actors[mp], ActorExitRequest())
    replacement = asys.createActor("actors.rlmm.actor.RlmmPartitionActor")
    reply = asys.ask(replacement, Configure(cfg, stream_id(mp)), T)
    assert isinstance(reply, Configured)
    assert reply.events_replayed in (0, 1)  # the exit snapshot may already hold the tail
    asys.ask(replacement, ReconcileAssignment([p]), T)
    actors[mp] = replacement
    rlmm2 = ActorRemoteLogMetadataManager(lambda a, m: asys.ask(a, m, T), actors, num_partitions=2)
    assert [list(rlmm2.list_remote_log_segments(p, e)) for e in range(2)] == before
    assert rlmm2.highest_offset_for_epoch(p, 1) == 599
