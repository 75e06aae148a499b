"""Topics, topic ids and configs: Kafka's CreateTopics/DeleteTopics/IncrementalAlterConfigs/
DescribeConfigs rules (ReplicationControlManager, ConfigurationControlManager, LogConfig)."""

from __future__ import annotations

import uuid

import pytest

from actors.controller import frontiers as fr
from actors.controller import state as S
from actors.controller import topics as tp
from events.codec import decode_event, encode_event
from events.controller import ConfigValue, SegmentInfo, TopicCreated


def create(cs: S.ControllerState, *topics: tp.CreatableTopic, validate_only: bool = False) -> list[tp.CreateTopicResult]:
    used = set(cs.topics.used_ids)
    ids = []
    for t in topics:
        i = tp.new_topic_id(used)
        used.add(i)
        ids.append((t.name, i))
    d = S.decide(cs, tp.CreateTopics(tuple(topics), validate_only, tuple(ids)), 0)
    apply(cs, d)
    return d.reply


def apply(cs: S.ControllerState, d) -> None:
    assert isinstance(d, S.Decision)
    for e in d.events:
        assert decode_event(type(e).event_type, type(e).schema_version, encode_event(e)) == e
        S.apply(cs, e)


def errors(results) -> list[str]:
    return [r.error for r in results]


def test_create_topic_defaults_and_collections():
    cs = S.ControllerState(static_config={"num.partitions": "3"})
    (r,) = create(cs, tp.CreatableTopic("orders"))
    assert r.error == "NONE" and r.num_partitions == 3 and r.replication_factor == 1
    t = cs.topics.topics["orders"]
    assert [p.leader for p in t.partitions] == [1, 1, 1] and all(p.leader_epoch == 0 for p in t.partitions)
    assert sorted(cs.frontiers.collections) == [f"{t.topic_id}:{p}" for p in range(3)]
    c = cs.frontiers.collections[f"{t.topic_id}:0"]
    assert c.policy == fr.Retention(604_800_000, -1, True)
    entries = {e.name: e for e in r.configs}
    assert entries["retention.ms"].value == "604800000" and entries["retention.ms"].source == "DEFAULT_CONFIG"
    assert entries["share.groups.hold.retention"].value == "false"


@pytest.mark.parametrize(
    "topic,error",
    [
        (tp.CreatableTopic("", 1), "INVALID_TOPIC_EXCEPTION"),
        (tp.CreatableTopic(".", 1), "INVALID_TOPIC_EXCEPTION"),
        (tp.CreatableTopic("..", 1), "INVALID_TOPIC_EXCEPTION"),
        (tp.CreatableTopic("a" * 250, 1), "INVALID_TOPIC_EXCEPTION"),
        (tp.CreatableTopic("bad/name", 1), "INVALID_TOPIC_EXCEPTION"),
        (tp.CreatableTopic("t", 0), "INVALID_PARTITIONS"),
        (tp.CreatableTopic("t", -2), "INVALID_PARTITIONS"),
        (tp.CreatableTopic("t", 1, 0), "INVALID_REPLICATION_FACTOR"),
        (tp.CreatableTopic("t", 1, 3), "INVALID_REPLICATION_FACTOR"),
        (tp.CreatableTopic("t", 1, configs=(("retention.ms", "-5"),)), "INVALID_CONFIG"),
        (tp.CreatableTopic("t", 1, configs=(("retention.ms", "soon"),)), "INVALID_CONFIG"),
        (tp.CreatableTopic("t", 1, configs=(("no.such.key", "1"),)), "INVALID_CONFIG"),
        (tp.CreatableTopic("t", 1, configs=(("cleanup.policy", "delete,forever"),)), "INVALID_CONFIG"),
        (tp.CreatableTopic("t", 1, configs=(("retention.ms", None),)), "INVALID_CONFIG"),
        (tp.CreatableTopic("t", 1, configs=(("segment.bytes", "13"),)), "INVALID_CONFIG"),
        (tp.CreatableTopic("t", 1, configs=(("min.insync.replicas", "0"),)), "INVALID_CONFIG"),
        (tp.CreatableTopic("t", 3, assignments=((0, (1,)),)), "INVALID_REQUEST"),
        (tp.CreatableTopic("t", assignments=((0, (1,)), (2, (1,)))), "INVALID_REPLICA_ASSIGNMENT"),
        (tp.CreatableTopic("t", assignments=((0, (7,)),)), "INVALID_REPLICA_ASSIGNMENT"),
    ],
)
def test_create_topic_validation(topic, error):
    cs = S.ControllerState()
    (r,) = create(cs, topic)
    assert r.error == error, r
    assert cs.topics.topics == {} and cs.frontiers.collections == {}


def test_create_topic_messages_match_kafka():
    cs = S.ControllerState()
    r = create(cs, tp.CreatableTopic("t", 0), tp.CreatableTopic("u", 1, 0), tp.CreatableTopic("v", 1, 2), tp.CreatableTopic("bad name"))
    assert r[0].message == "Number of partitions was set to an invalid non-positive value."
    assert r[1].message == "Replication factor must be larger than 0, or -1 to use the default value."
    assert r[2].message.startswith("Unable to replicate the partition 2 time(s)")
    assert r[3].message == "Topic name is invalid: 'bad name' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"


def test_topic_already_exists_collisions_duplicates_and_validate_only():
    cs = S.ControllerState()
    assert errors(create(cs, tp.CreatableTopic("a.b", 1))) == ["NONE"]
    r = create(cs, tp.CreatableTopic("a.b", 1), tp.CreatableTopic("a_b", 1), tp.CreatableTopic("x", 1), tp.CreatableTopic("x", 1))
    # ControllerApis#createTopics: a name given twice gets ONE "Duplicate topic name." result
    assert errors(r) == ["TOPIC_ALREADY_EXISTS", "INVALID_TOPIC_EXCEPTION", "INVALID_REQUEST"]
    assert r[0].message == "Topic 'a.b' already exists."
    assert r[1].message == "Topic 'a_b' collides with existing topic: a.b"
    assert (r[2].name, r[2].message) == ("x", "Duplicate topic name.") and "x" not in cs.topics.topics
    r = create(cs, tp.CreatableTopic("__cluster_metadata", 1))
    assert [(x.error, x.message) for x in r] == [("INVALID_REQUEST", "Creation of internal topic __cluster_metadata is prohibited.")]
    assert errors(create(cs, tp.CreatableTopic("v", 2), validate_only=True)) == ["NONE"]
    assert "v" not in cs.topics.topics


def test_topic_ids_are_never_reused_and_have_kafka_form():
    cs = S.ControllerState()
    create(cs, tp.CreatableTopic("t", 1))
    first = cs.topics.topics["t"].topic_id
    b64 = tp.kafka_topic_id(first)
    assert len(b64) == 22 and not b64.startswith("-") and tp.topic_id_from_kafka(b64) == first
    d = S.decide(cs, tp.DeleteTopics(names=("t",)), 0)
    assert errors(d.reply) == ["NONE"]
    apply(cs, d)
    assert "t" not in cs.topics.topics and first in cs.topics.used_ids
    # the old collections are dropping; re-creating the name yields a new id and new collections
    create(cs, tp.CreatableTopic("t", 1))
    second = cs.topics.topics["t"].topic_id
    assert second != first and f"{second}:0" in cs.frontiers.collections
    # a supplied id that was used before is refused
    d = S.decide(cs, tp.CreateTopics((tp.CreatableTopic("u", 1),), topic_ids=(("u", first),)), 0)
    assert errors(d.reply) == ["UNKNOWN_SERVER_ERROR"] and d.events == []


def test_new_topic_id_skips_reserved_dash_and_used():
    seq = iter([uuid.UUID(int=0), uuid.UUID(int=1), uuid.UUID("fb000000-0000-4000-8000-000000000000"), uuid.UUID("11111111-1111-4111-8111-111111111111"), uuid.UUID("22222222-2222-4222-8222-222222222222")])
    assert tp.kafka_topic_id("fb000000-0000-4000-8000-000000000000").startswith("-")
    got = tp.new_topic_id(used={"11111111-1111-4111-8111-111111111111"}, rand=lambda: next(seq))
    assert got == "22222222-2222-4222-8222-222222222222"


def test_delete_topics_errors_and_drop_of_collections():
    cs = S.ControllerState()
    create(cs, tp.CreatableTopic("t", 2))
    tid = cs.topics.topics["t"].topic_id
    d = S.decide(cs, tp.DeleteTopics(names=("nope",), topic_ids=(str(uuid.uuid4()),)), 0)
    assert errors(d.reply) == ["UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_ID"] and d.events == []
    d = S.decide(cs, tp.DeleteTopics(names=("t",)), 0)
    assert errors(d.reply) == ["NONE"] and d.reply[0].topic_id == tid
    apply(cs, d)
    assert not any(cid.startswith(tid) for cid in cs.frontiers.collections)
    assert {f"{tid}:0", f"{tid}:1"} <= cs.frontiers.dropped


def test_invalid_delete_topics_request():
    """ControllerApisTest#testInvalidDeleteTopicsRequest (the parts a DeleteTopics command can
    carry): a name given twice, an id given twice, and a name mapping to an id also given are
    INVALID_REQUEST, one result each, and none of those topics is deleted (ControllerApis
    #deleteTopics). The id that a name maps to gets no result of its own, as in Kafka."""
    cs = S.ControllerState()
    create(cs, tp.CreatableTopic("foo", 1), tp.CreatableTopic("bar", 1))
    foo_id, bar_id = cs.topics.topics["foo"].topic_id, cs.topics.topics["bar"].topic_id
    baz_id = str(uuid.uuid4())
    d = S.decide(
        cs,
        tp.DeleteTopics(
            names=("foo", "foo", "bar", "quux", "quux", "quux"),
            topic_ids=(tp.kafka_topic_id(bar_id), baz_id, baz_id, tp.kafka_topic_id(baz_id)),
        ),
        0,
    )
    got = {(r.name, r.topic_id, r.error, r.message) for r in d.reply}
    assert got == {
        ("foo", None, "INVALID_REQUEST", "Duplicate topic name."),
        ("quux", None, "INVALID_REQUEST", "Duplicate topic name."),
        (None, baz_id, "INVALID_REQUEST", "Duplicate topic id."),
        ("bar", bar_id, "INVALID_REQUEST", "The provided topic name maps to an ID that was already supplied."),
    }
    assert len(d.reply) == 4 and d.events == []
    apply(cs, d)
    assert {"foo", "bar"} <= set(cs.topics.topics) and foo_id in cs.topics.names_by_id
    # the same topic by id alone, once: deleted, with its name in the result
    d = S.decide(cs, tp.DeleteTopics(topic_ids=(tp.kafka_topic_id(bar_id),)), 0)
    assert [(r.name, r.topic_id, r.error) for r in d.reply] == [("bar", bar_id, "NONE")]
    apply(cs, d)
    assert "bar" not in cs.topics.topics


def test_delete_topic_waits_for_holds_to_drain():
    cs = S.ControllerState()
    create(cs, tp.CreatableTopic("t", 1))
    cid = f"{cs.topics.topics['t'].topic_id}:0"
    apply(cs, S.decide(cs, fr.UpdateWriteFrontiers(((cid, 50, None),)), 0))
    apply(cs, S.decide(cs, fr.ChangeReadHolds("tiering", ((cid, 10, 1),)), 0))
    apply(cs, S.decide(cs, tp.DeleteTopics(names=("t",)), 0))
    assert cid in cs.frontiers.collections and "t" not in cs.topics.topics
    apply(cs, S.decide(cs, fr.ReleaseHolder("tiering"), 0))
    assert cid not in cs.frontiers.collections


def test_remote_storage_topic_gets_a_local_tier_collection():
    cs = S.ControllerState(static_config={"remote.log.storage.system.enable": "true"})
    r = create(cs, tp.CreatableTopic("t", 1, configs=(("remote.storage.enable", "true"), ("local.retention.ms", "1000"))))
    assert errors(r) == ["NONE"]
    tid = cs.topics.topics["t"].topic_id
    assert cs.frontiers.collections[fr.local_collection_id(tid, 0)].policy == fr.Retention(1000, -1, True)
    assert cs.frontiers.collections[fr.partition_collection_id(tid, 0)].policy == fr.Retention(604_800_000, -1, True)


def test_remote_storage_rules():
    off = S.ControllerState(static_config={"remote.log.storage.system.enable": "false"})
    (r,) = create(off, tp.CreatableTopic("t", 1, configs=(("remote.storage.enable", "true"),)))
    assert r.error == "INVALID_CONFIG" and "Tiered Storage functionality is disabled" in r.message
    cs = S.ControllerState(static_config={"remote.log.storage.system.enable": "true"})
    bad = [
        (("remote.storage.enable", "true"), ("cleanup.policy", "compact")),
        (("remote.storage.enable", "true"), ("retention.ms", "1000"), ("local.retention.ms", "2000")),
        (("remote.storage.enable", "true"), ("retention.bytes", "1000"), ("local.retention.bytes", "-1")),
        # LogConfig#validateRetentionConfigsWhenRemoteCopyDisabled: local must equal total (or -2)
        (("remote.storage.enable", "true"), ("remote.log.copy.disable", "true"), ("retention.ms", "2000"), ("local.retention.ms", "1000")),
        (("remote.storage.enable", "true"), ("remote.log.copy.disable", "true"), ("retention.bytes", "2000"), ("local.retention.bytes", "1000")),
    ]
    for configs in bad:
        (r,) = create(cs, tp.CreatableTopic("t", 1, configs=configs))
        assert r.error == "INVALID_CONFIG", configs
    for configs in [
        (("remote.storage.enable", "true"), ("remote.log.copy.disable", "true"), ("retention.ms", "2000"), ("local.retention.ms", "2000")),
        (("remote.storage.enable", "true"), ("remote.log.copy.disable", "true"), ("retention.bytes", "2000")),  # local -2
    ]:
        (r,) = create(cs, tp.CreatableTopic("ok", 1, configs=configs), validate_only=True)
        assert r.error == "NONE", (configs, r.message)
    create(cs, tp.CreatableTopic("t", 1, configs=(("remote.storage.enable", "true"),)))
    d = S.decide(cs, tp.IncrementalAlterConfigs((tp.AlterConfigResource("TOPIC", "t", (("remote.storage.enable", "SET", "false"),)),)), 0)
    assert d.reply[0].error == "INVALID_CONFIG" and "without deleting remote data" in d.reply[0].message


def test_incremental_alter_configs_topic_semantics():
    cs = S.ControllerState()
    create(cs, tp.CreatableTopic("t", 1))
    tid = cs.topics.topics["t"].topic_id
    res = tp.AlterConfigResource(
        "TOPIC", "t", (("retention.ms", "SET", "1000"), ("cleanup.policy", "APPEND", "compact"))
    )
    d = S.decide(cs, tp.IncrementalAlterConfigs((res,)), 5)
    assert errors(d.reply) == ["NONE"]
    # the event carries typed, name-sorted values (v2), so the SQL folds can read them
    assert d.events[0].set == (ConfigValue("cleanup.policy", "delete,compact"), ConfigValue("retention.ms", "1000"))
    assert d.events[1].changes[0].policy == fr.policy_to_json(fr.Retention(1000, -1, True))
    apply(cs, d)
    assert cs.topics.topics["t"].configs == {"retention.ms": "1000", "cleanup.policy": "delete,compact"}
    assert cs.frontiers.collections[f"{tid}:0"].policy == fr.Retention(1000, -1, True)
    d = S.decide(cs, tp.IncrementalAlterConfigs((tp.AlterConfigResource("TOPIC", "t", (("cleanup.policy", "SUBTRACT", "delete"), ("retention.ms", "DELETE", None))),)), 6)
    assert d.events[0].set == (ConfigValue("cleanup.policy", "compact"),) and d.events[0].deleted == ("retention.ms",)
    apply(cs, d)
    assert cs.topics.topics["t"].configs == {"cleanup.policy": "compact"}
    assert cs.frontiers.collections[f"{tid}:0"].policy == fr.Retention(604_800_000, -1, False)
    bad = [
        tp.AlterConfigResource("TOPIC", "t", (("retention.ms", "APPEND", "5"),)),
        tp.AlterConfigResource("TOPIC", "t", (("bogus", "SET", "5"),)),
        tp.AlterConfigResource("TOPIC", "t", (("retention.ms", "SET", "x"),)),
    ]
    d = S.decide(cs, tp.IncrementalAlterConfigs(tuple(bad)), 0)
    # one resource per request here would be distinct; duplicates in one request are refused
    assert errors(d.reply) == ["INVALID_REQUEST"] * 3
    for b in bad:
        d = S.decide(cs, tp.IncrementalAlterConfigs((b,)), 0)
        assert errors(d.reply) == ["INVALID_CONFIG"] and d.events == []
    assert "because its type is not LIST" in S.decide(cs, tp.IncrementalAlterConfigs((bad[0],)), 0).reply[0].message
    d = S.decide(cs, tp.IncrementalAlterConfigs((tp.AlterConfigResource("TOPIC", "missing", (("retention.ms", "SET", "5"),)), tp.AlterConfigResource("TOPIC", "", ()))), 0)
    assert errors(d.reply) == ["UNKNOWN_TOPIC_OR_PARTITION", "INVALID_REQUEST"]
    d = S.decide(cs, tp.IncrementalAlterConfigs((tp.AlterConfigResource("TOPIC", "t", (("retention.ms", "SET", "7"), ("retention.ms", "DELETE", None))), tp.AlterConfigResource("BROKER", "", (("num.partitions", "SET", None),)))), 0)
    assert [(r.error, r.message) for r in d.reply] == [
        ("INVALID_REQUEST", "Error due to duplicate config keys"),
        ("INVALID_REQUEST", "Null value not supported for : num.partitions"),
    ]
    d = S.decide(cs, tp.IncrementalAlterConfigs((tp.AlterConfigResource("TOPIC", "t", (("retention.ms", "SET", "7"),)),), validate_only=True), 0)
    assert errors(d.reply) == ["NONE"] and d.events == []


def test_broker_configs_and_describe_sources():
    cs = S.ControllerState(static_config={"log.retention.hours": "24"})
    create(cs, tp.CreatableTopic("t", 1))
    tid = cs.topics.topics["t"].topic_id
    (r,) = tp.describe_configs(cs.topics, [("TOPIC", "t", ["retention.ms"])], include_synonyms=True)
    (e,) = r.entries
    assert (e.value, e.source) == (str(24 * 3_600_000), "STATIC_BROKER_CONFIG")
    assert e.synonyms[0] == ("log.retention.hours", str(24 * 3_600_000), "STATIC_BROKER_CONFIG")
    assert e.synonyms[-1] == ("log.retention.hours", str(168 * 3_600_000), "DEFAULT_CONFIG")
    d = S.decide(cs, tp.IncrementalAlterConfigs((tp.AlterConfigResource("BROKER", "", (("log.retention.ms", "SET", "5000"),)),)), 0)
    assert errors(d.reply) == ["NONE"]
    apply(cs, d)
    (r,) = tp.describe_configs(cs.topics, [("TOPIC", "t", ["retention.ms"])])
    assert (r.entries[0].value, r.entries[0].source) == ("5000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    assert cs.frontiers.collections[f"{tid}:0"].policy == fr.Retention(5000, -1, True)
    apply(cs, S.decide(cs, tp.IncrementalAlterConfigs((tp.AlterConfigResource("BROKER", "1", (("log.retention.ms", "SET", "6000"),)),)), 0))
    apply(cs, S.decide(cs, tp.IncrementalAlterConfigs((tp.AlterConfigResource("TOPIC", "t", (("retention.ms", "SET", "7000"),)),)), 0))
    (r,) = tp.describe_configs(cs.topics, [("TOPIC", "t", ["retention.ms"])], include_synonyms=True)
    assert [s[2] for s in r.entries[0].synonyms][:3] == ["DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG"]
    (b,) = tp.describe_configs(cs.topics, [("BROKER", "1", ["num.partitions", "log.retention.ms"])])
    assert [(e.name, e.value, e.source) for e in b.entries] == [("num.partitions", "1", "DEFAULT_CONFIG"), ("log.retention.ms", "6000", "DYNAMIC_BROKER_CONFIG")]
    bad = S.decide(cs, tp.IncrementalAlterConfigs((tp.AlterConfigResource("BROKER", "x", ()), tp.AlterConfigResource("BROKER", "-1", ()), tp.AlterConfigResource("BROKER", "2", (("num.partitions", "SET", "0"),)), tp.AlterConfigResource("GROUP", "g", ()))), 0)
    assert errors(bad.reply) == ["INVALID_REQUEST", "INVALID_REQUEST", "INVALID_CONFIG", "INVALID_REQUEST"]
    missing = tp.describe_configs(cs.topics, [("TOPIC", "nope", None), ("BROKER_LOGGER", "1", None)])
    assert errors(missing) == ["UNKNOWN_TOPIC_OR_PARTITION", "INVALID_REQUEST"]


def test_broker_defaults_drive_creation():
    cs = S.ControllerState(static_config={"num.partitions": "2"}, brokers=(1, 2, 3))
    apply(cs, S.decide(cs, tp.IncrementalAlterConfigs((tp.AlterConfigResource("BROKER", "", (("default.replication.factor", "SET", "3"),)),)), 0))
    (r,) = create(cs, tp.CreatableTopic("t"))
    assert (r.num_partitions, r.replication_factor) == (2, 3)
    t = cs.topics.topics["t"]
    assert [p.replicas for p in t.partitions] == [(1, 2, 3), (2, 3, 1)]
    assert [p.leader for p in t.partitions] == [1, 2]


def test_share_holds_need_the_opt_in():
    cs = S.ControllerState()
    create(cs, tp.CreatableTopic("plain", 1), tp.CreatableTopic("held", 1, configs=(("share.groups.hold.retention", "true"),)))
    plain = f"{cs.topics.topics['plain'].topic_id}:0"
    held = f"{cs.topics.topics['held'].topic_id}:0"
    d = S.decide(cs, fr.ChangeReadHolds("share:g1", ((plain, 0, 1),)), 0)
    assert d.reply == "IGNORED" and d.events == []
    d = S.decide(cs, fr.ChangeReadHolds("share:g1", ((held, 0, 1),)), 0)
    assert d.reply is None and len(d.events) == 1
    apply(cs, d)
    assert cs.frontiers.collections[held].holds["share:g1"] == {0: 1}
    # releases always go through, other holders are not gated
    assert len(S.decide(cs, fr.ReleaseHolder("share:g1"), 0).events) == 1
    assert len(S.decide(cs, fr.ChangeReadHolds("tiering", ((plain, 0, 1),)), 0).events) == 1


def test_share_hold_moves_release_when_the_opt_in_was_turned_off():
    """A share group's hold placed while ``share.groups.hold.retention=true`` must not pin the
    since forever once the topic opts out: moving it (ChangeReadHolds -old/+new, or
    DowngradeReadHold) applies the release and ignores the new hold."""
    cs = S.ControllerState()
    create(cs, tp.CreatableTopic("held", 1, configs=(("share.groups.hold.retention", "true"),)))
    cid = f"{cs.topics.topics['held'].topic_id}:0"
    apply(cs, S.decide(cs, fr.UpdateWriteFrontiers(((cid, 100, None),)), 0))
    apply(cs, S.decide(cs, fr.ChangeReadHolds("share:g1", ((cid, 5, 1),)), 0))
    apply(cs, S.decide(cs, fr.ChangeReadHolds("share:g2", ((cid, 7, 1),)), 0))
    apply(cs, S.decide(cs, tp.IncrementalAlterConfigs((tp.AlterConfigResource("TOPIC", "held", (("share.groups.hold.retention", "SET", "false"),)),)), 0))
    d = S.decide(cs, fr.ChangeReadHolds("share:g1", ((cid, 5, -1), (cid, 10, 1))), 0)
    assert d.reply == "IGNORED" and len(d.events) == 1
    apply(cs, d)
    assert "share:g1" not in cs.frontiers.collections[cid].holds
    d = S.decide(cs, fr.DowngradeReadHold("share:g2", cid, 20), 0)
    assert d.reply == "IGNORED" and len(d.events) == 1
    apply(cs, d)
    assert cs.frontiers.collections[cid].holds == {}


def test_snapshot_dict_round_trip():
    cs = S.ControllerState()
    create(cs, tp.CreatableTopic("t", 2, configs=(("retention.bytes", "100"),)))
    apply(cs, S.decide(cs, tp.IncrementalAlterConfigs((tp.AlterConfigResource("BROKER", "", (("num.partitions", "SET", "4"),)),)), 0))
    other = S.ControllerState()
    other.load_dict(cs.to_dict(), 3)
    assert other.to_dict() == cs.to_dict() and other.version == 3


# --- properties -----------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as hst  # noqa: E402

_ops = hst.lists(
    hst.one_of(
        hst.tuples(hst.just("create"), hst.sampled_from(["a", "b", "a.b", "a_b"]), hst.integers(-1, 3)),
        hst.tuples(hst.just("delete"), hst.sampled_from(["a", "b", "a.b", "a_b", "zz"]), hst.just(0)),
        hst.tuples(hst.just("hold"), hst.sampled_from(["a", "b"]), hst.integers(0, 5)),
        hst.tuples(hst.just("release"), hst.just("h"), hst.just(0)),
    ),
    max_size=30,
)


@settings(max_examples=100, deadline=None)
@given(_ops)
def test_property_topic_ids_never_reused_and_fold_is_deterministic(ops):
    cs = S.ControllerState()
    log = []
    ids_seen: list[str] = []
    for kind, name, n in ops:
        if kind == "create":
            tid = tp.new_topic_id(cs.topics.used_ids)
            d = S.decide(cs, tp.CreateTopics((tp.CreatableTopic(name, n),), topic_ids=((name, tid),)), 0)
        elif kind == "delete":
            d = S.decide(cs, tp.DeleteTopics(names=(name,)), 0)
        elif kind == "hold":
            t = cs.topics.topics.get(name)
            if t is None:
                continue
            d = S.decide(cs, fr.ChangeReadHolds("h", ((fr.partition_collection_id(t.topic_id, 0), n, 1),)), 0)
        else:
            d = S.decide(cs, fr.ReleaseHolder("h"), 0)
        if isinstance(d, fr.Rejected):
            continue
        for e in d.events:
            S.apply(cs, e)
            log.append(e)
            if isinstance(e, TopicCreated):
                assert e.topic_id not in ids_seen
                ids_seen.append(e.topic_id)
        # invariants: names unique modulo '.'/'_' collisions; every live partition has a collection
        unified = [k.replace(".", "_") for k in cs.topics.topics]
        assert len(unified) == len(set(unified))
        for t in cs.topics.topics.values():
            for p in t.partitions:
                assert fr.partition_collection_id(t.topic_id, p.partition) in cs.frontiers.collections
        # a collection of a deleted topic survives only while someone holds it
        for cid, c in cs.frontiers.collections.items():
            if cs.collection_topic(cid) is None:
                assert c.implied is None and c.holds
    replay = S.ControllerState()
    for e in log:
        S.apply(replay, e)
    assert replay.to_dict() == cs.to_dict()


def test_share_groups_hold_until_every_group_acknowledged():
    """With ``share.groups.hold.retention=true`` the since is the minimum over every group's SPSO
    and the retention policy (Shoal extension)."""
    cs = S.ControllerState()
    create(cs, tp.CreatableTopic("q", 1, configs=(("share.groups.hold.retention", "true"), ("retention.bytes", "0"))))
    cid = f"{cs.topics.topics['q'].topic_id}:0"
    apply(cs, S.decide(cs, fr.ChangeReadHolds("share:g1", ((cid, 0, 1),)), 0))
    apply(cs, S.decide(cs, fr.ChangeReadHolds("share:g2", ((cid, 0, 1),)), 0))
    segs = tuple(SegmentInfo(i * 100, (i + 1) * 100, 10, 0) for i in range(5))
    apply(cs, S.decide(cs, fr.UpdateWriteFrontiers(((cid, 500, segs),)), 0))
    c = cs.frontiers.collections[cid]
    assert c.implied == 500 and c.since == 0  # retention would delete everything
    apply(cs, S.decide(cs, fr.DowngradeReadHold("share:g1", cid, 300), 0))
    assert c.since == 0  # g2 has not acknowledged anything yet
    apply(cs, S.decide(cs, fr.DowngradeReadHold("share:g2", cid, 120), 0))
    assert c.since == 120
    apply(cs, S.decide(cs, fr.ReleaseHolder("share:g2"), 0))  # g2 deleted
    assert c.since == 300


def test_tiering_holds_the_local_tier_until_copied():
    cs = S.ControllerState(static_config={"remote.log.storage.system.enable": "true"})
    create(cs, tp.CreatableTopic("r", 1, configs=(("remote.storage.enable", "true"), ("local.retention.bytes", "10"), ("retention.bytes", "1000"))))
    tid = cs.topics.topics["r"].topic_id
    local, log = fr.local_collection_id(tid, 0), fr.partition_collection_id(tid, 0)
    apply(cs, S.decide(cs, fr.ChangeReadHolds("tiering", ((local, 0, 1),)), 0))
    segs = tuple(SegmentInfo(i * 100, (i + 1) * 100, 10, 0) for i in range(4))
    apply(cs, S.decide(cs, fr.UpdateWriteFrontiers(((local, 400, segs), (log, 400, segs)),), 0))
    assert cs.frontiers.collections[local].implied == 300  # local.retention.bytes keeps one segment
    assert cs.frontiers.collections[local].since == 0  # nothing copied yet
    assert cs.frontiers.collections[log].since == 0  # retention.bytes 1000 keeps everything
    apply(cs, S.decide(cs, fr.DowngradeReadHold("tiering", local, 200), 0))  # two segments copied
    assert cs.frontiers.collections[local].since == 200
    assert fr.check_compaction(cs.frontiers, local, 200) is None
    assert fr.check_compaction(cs.frontiers, local, 300) is not None


def test_config_changes_leave_a_hand_set_policy_alone():
    cs = S.ControllerState()
    create(cs, tp.CreatableTopic("t", 2))
    tid = cs.topics.topics["t"].topic_id
    apply(cs, S.decide(cs, fr.SetReadPolicies(((f"{tid}:0", fr.LagWrites(10, 1)),)), 0))
    apply(cs, S.decide(cs, tp.IncrementalAlterConfigs((tp.AlterConfigResource("TOPIC", "t", (("retention.ms", "SET", "5"),)),)), 0))
    assert cs.frontiers.collections[f"{tid}:0"].policy == fr.LagWrites(10, 1)
    assert cs.frontiers.collections[f"{tid}:1"].policy == fr.Retention(5, -1, True)
    assert S.decide(cs, S.ReconcilePolicies(), 0).events == []  # nothing drifted
