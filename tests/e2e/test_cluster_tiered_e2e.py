"""Tiered storage (KIP-405) on a three-node cluster.

Three ``app.py run`` daemons share one PostgreSQL event log (the RLMM's metadata partitions are
streams in it) and one remote tier (``shoal.remote.storage.dir``). A one-partition topic with
``remote.storage.enable=true``, replication factor 3, 16 KiB segments and
``local.retention.bytes=1`` (every segment in the remote tier is deleted locally):

1. The leader copies the rolled segments to the remote tier and deletes them locally; the
   followers follow the highest offset in remote storage from the RLMM and delete theirs too
   (Kafka's ``RLMFollowerTask``). A consumer reads every record from offset 0 (remote reads).
2. The leader's node is SIGKILLed. The new leader serves the same records from offset 0 (its
   RLMM folds what the old leader appended), takes 3,000 more records, and copies them on
   (from the highest offset the RLMM has for its epochs).
3. The old leader's node restarts. Its log ends below the new leader's local log start, so the
   new leader answers its Fetch OFFSET_MOVED_TO_TIERED_STORAGE; it rebuilds its log start from
   the remote tier (leader-epoch entries from the remote segment's index) and fetches from the
   leader's local log start, and rejoins the ISR.

Asserted: every record read back once, in order, at its offset, after each step; each node's
oldest local segment starts above 0 where it should; the restarted node back in the ISR."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.e2e.helpers import list_offsets, produce, read_partition, wait_for
from tests.e2e.test_cluster_e2e import Cluster

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(420)]

TOPIC = "tiered"
TIERED = {"remote.storage.enable": "true", "segment.bytes": "16384", "local.retention.bytes": "1", "retention.bytes": "-1",
          "min.insync.replicas": "2"}


def _state(cl: Cluster, *nodes: int) -> tuple[int, list[int]] | None:
    """(leader, sorted ISR) of ``TOPIC``-0 as ``nodes`` answer Metadata."""
    md = cl.metadata(*nodes)
    t = md.topics.get(TOPIC) if md is not None else None
    if t is None or t.error is not None or 0 not in t.partitions:
        return None
    p = t.partitions[0]
    return p.leader, sorted(p.isrs)


def _oldest_local_base(base: Path, node: int) -> int:
    """The base offset of ``node``'s oldest local segment of ``TOPIC``-0 (-1 when none)."""
    segs = sorted(int(f.stem) for f in (base / f"node{node}" / "logs" / f"{TOPIC}-0").glob("*.log"))
    return segs[0] if segs else -1


def test_a_cluster_tiers_serves_and_fails_over_the_remote_tier(daemon_factory, pg_url, tmp_path: Path):
    cl = Cluster(daemon_factory, pg_url, tmp_path, {"shoal.remote.storage.dir": str(tmp_path / "remote"),
                                                    "remote.log.manager.task.interval.ms": "300"})
    assert wait_for(lambda: all((md := cl.metadata(n)) is not None and sorted(md.brokers) == [1, 2, 3] for n in (1, 2, 3)), 60)
    admin = AdminClient({"bootstrap.servers": cl.bootstrap()})
    admin.create_topics([NewTopic(TOPIC, 1, 3, config=TIERED)])[TOPIC].result(30)
    assert wait_for(lambda: (s := _state(cl)) is not None and s[1] == [1, 2, 3], 60), _state(cl)
    first = [f"a{i:05d}-" + "x" * 60 for i in range(3000)]
    assert len(produce(cl.bootstrap(), TOPIC, first, partitioner=lambda i: 0, **{"batch.size": 4096})) == len(first)

    # 1. the leader tiers and deletes locally; so do the followers
    leader = _state(cl)[0]  # type: ignore[index]
    followers = [n for n in (1, 2, 3) if n != leader]
    assert wait_for(lambda: list_offsets(cl.ports[leader][0], TOPIC, 0, -4)[1] > 0, 90), "the leader tiered nothing"
    assert wait_for(lambda: all(_oldest_local_base(tmp_path, n) > 0 for n in followers), 90), \
        f"followers kept their tiered segments: {[_oldest_local_base(tmp_path, n) for n in followers]}"
    assert read_partition(cl.bootstrap(), TOPIC, len(first)) == list(enumerate(first))

    # 2. the leader dies: the new one serves the remote tier and tiers on
    cl.kill(leader)
    assert wait_for(lambda: (s := _state(cl, *followers)) is not None and s[0] in followers and leader not in s[1], 60), _state(cl, *followers)
    new_leader = _state(cl, *followers)[0]  # type: ignore[index]
    assert read_partition(cl.bootstrap(*followers), TOPIC, len(first)) == list(enumerate(first))
    second = [f"b{i:05d}-" + "y" * 60 for i in range(3000)]
    assert len(produce(cl.bootstrap(*followers), TOPIC, second, partitioner=lambda i: 0, **{"batch.size": 4096})) == len(second)
    assert wait_for(lambda: list_offsets(cl.ports[new_leader][0], TOPIC, 0, -4)[1] > len(first), 90), \
        "the new leader did not tier the records it took"

    # 3. the old leader returns below the new leader's local log start: it rebuilds from the remote tier
    cl.start(leader)
    assert wait_for(lambda: (s := _state(cl)) is not None and s[1] == [1, 2, 3], 90), f"the restarted node did not rejoin the ISR: {_state(cl)}"
    assert _oldest_local_base(tmp_path, leader) > len(first)
    assert read_partition(cl.bootstrap(), TOPIC, len(first) + len(second)) == list(enumerate(first + second))
