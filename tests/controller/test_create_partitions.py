"""CreatePartitions (API 37) decider tests: Kafka's ``ReplicationControlManager.createPartitions``
rules, driven through :func:`actors.controller.state.decide` without an actor system."""

from __future__ import annotations

from actors.controller import frontiers as fr
from actors.controller import state as S
from actors.controller import topics as tp
from events.controller import PartitionsCreated
from tests.controller.test_topics import apply, create, errors


def grow(cs: S.ControllerState, *topics: tp.CreatePartitionsTopic, validate_only: bool = False):
    d = S.decide(cs, tp.CreatePartitions(tuple(topics), validate_only), 0)
    apply(cs, d)
    return d


def test_adds_partitions_with_collections_and_event():
    cs = S.ControllerState()
    create(cs, tp.CreatableTopic("orders", 2))
    tid = cs.topics.topics["orders"].topic_id
    d = grow(cs, tp.CreatePartitionsTopic("orders", 5))
    assert errors(d.reply) == ["NONE"]
    (ev,) = [e for e in d.events if isinstance(e, PartitionsCreated)]
    assert ev.topic_id == tid and [p.partition for p in ev.partitions] == [2, 3, 4]
    t = cs.topics.topics["orders"]
    assert [p.partition for p in t.partitions] == [0, 1, 2, 3, 4]
    assert all(p.leader == 1 and p.replicas == (1,) and p.isr == (1,) for p in t.partitions)
    assert sorted(cs.frontiers.collections) == sorted(f"{tid}:{p}" for p in range(5))


def test_tiered_topic_new_partitions_get_local_tier_collections():
    cs = S.ControllerState(static_config={"remote.log.storage.system.enable": "true"})
    create(cs, tp.CreatableTopic("t", 1, configs=(("remote.storage.enable", "true"), ("local.retention.ms", "1000"))))
    tid = cs.topics.topics["t"].topic_id
    assert errors(grow(cs, tp.CreatePartitionsTopic("t", 3)).reply) == ["NONE"]
    for p in (1, 2):
        assert cs.frontiers.collections[fr.local_collection_id(tid, p)].policy == fr.Retention(1000, -1, True)
        assert cs.frontiers.collections[fr.partition_collection_id(tid, p)].policy == fr.Retention(604_800_000, -1, True)


def test_errors_match_kafka():
    cs = S.ControllerState(brokers=(1, 2))
    create(cs, tp.CreatableTopic("a", 3, 1))
    d = grow(
        cs,
        tp.CreatePartitionsTopic("missing", 4),
        tp.CreatePartitionsTopic("a", 2),
        tp.CreatePartitionsTopic("dup", 4),
        tp.CreatePartitionsTopic("dup", 5),
    )
    assert [(r.name, r.error) for r in d.reply] == [
        ("missing", "UNKNOWN_TOPIC_OR_PARTITION"),
        ("a", "INVALID_PARTITIONS"),
        ("dup", "INVALID_REQUEST"),
    ]
    assert d.reply[1].message == "The topic a currently has 3 partition(s); 2 would not be an increase."
    assert d.events == []
    (same,) = grow(cs, tp.CreatePartitionsTopic("a", 3)).reply
    assert (same.error, same.message) == ("INVALID_PARTITIONS", "Topic already has 3 partition(s).")
    assert len(cs.topics.topics["a"].partitions) == 3


def test_manual_assignments():
    cs = S.ControllerState(brokers=(1, 2))
    create(cs, tp.CreatableTopic("a", 1, 1))
    bad = [
        tp.CreatePartitionsTopic("a", 3, ((1,),)),  # 2 new partitions, 1 assignment
        tp.CreatePartitionsTopic("a", 2, ((7,),)),  # unknown broker
        tp.CreatePartitionsTopic("a", 2, ((),)),  # empty
        tp.CreatePartitionsTopic("a", 2, ((1, 2),)),  # replication factor unlike the topic's
    ]
    for t in bad:
        (r,) = grow(cs, t).reply
        assert r.error == "INVALID_REPLICA_ASSIGNMENT", t
    assert len(cs.topics.topics["a"].partitions) == 1
    assert errors(grow(cs, tp.CreatePartitionsTopic("a", 3, ((2,), (1,)))).reply) == ["NONE"]
    assert [p.leader for p in cs.topics.topics["a"].partitions] == [1, 2, 1]


def test_validate_only_changes_nothing():
    cs = S.ControllerState()
    create(cs, tp.CreatableTopic("a", 1))
    d = grow(cs, tp.CreatePartitionsTopic("a", 4), validate_only=True)
    assert errors(d.reply) == ["NONE"] and d.events == []
    assert len(cs.topics.topics["a"].partitions) == 1


def test_snapshot_round_trip_after_growth():
    cs = S.ControllerState()
    create(cs, tp.CreatableTopic("a", 1))
    grow(cs, tp.CreatePartitionsTopic("a", 2))
    again = S.ControllerState()
    again.load_dict(cs.to_dict(), 2)
    assert len(again.topics.topics["a"].partitions) == 2


def test_an_excessively_large_request_is_refused_whole():
    """Kafka's MAX_RECORDS_PER_USER_OP: more new partitions than 10 000 in one request refuse
    every topic with POLICY_VIOLATION (nothing is built: a count of 2^31-1 costs nothing)."""
    cs = S.ControllerState()
    create(cs, tp.CreatableTopic("a", 1), tp.CreatableTopic("b", 1))
    d = grow(cs, tp.CreatePartitionsTopic("a", 6_000), tp.CreatePartitionsTopic("b", 6_000))
    assert [(r.name, r.error) for r in d.reply] == [("a", "POLICY_VIOLATION"), ("b", "POLICY_VIOLATION")] and d.events == []
    (r,) = grow(cs, tp.CreatePartitionsTopic("a", 2**31 - 1)).reply
    assert r.error == "POLICY_VIOLATION"
    assert errors(grow(cs, tp.CreatePartitionsTopic("a", 1 + tp.MAX_RECORDS_PER_USER_OP)).reply) == ["NONE"]
    assert len(cs.topics.topics["a"].partitions) == 1 + tp.MAX_RECORDS_PER_USER_OP
