"""ControllerActor under ``simpleSystemBase``: readiness, topics, configs, frontiers, recovery
(snapshot + replay, exactly the same state), supervision of children, pickling of messages."""

from __future__ import annotations

import inspect
import pickle
import time
from datetime import timedelta

import pytest
from thespian.actors import ActorExitRequest, ActorSystem

from actors.controller import frontiers as fr
from actors.controller import messages as M
from actors.controller import scram as sc
from actors.controller import state as S
from actors.controller import topics as tp
from actors.controller.acls import AclBinding, AclBindingFilter, AclCreateResult, AclDeleteResult
from actors.controller.actor import ControllerActor
from actors.journal import JournalActor
from actors.messages import Configure, Configured, Failure, NotReady, StatusReply, StatusRequest
from events.controller import STREAM_ID, BrokerEndpoint, SegmentInfo
from store.event_log import open_event_log
from tests.controller import child_actor as C

T = timedelta(seconds=10)
ACTOR = "actors.controller.actor.ControllerActor"


def config(url: str, **extra: str) -> dict[str, str]:
    # a single node on either log (on PostgreSQL "auto" would make it a cluster's node: tests/cluster)
    cfg = {"event.log.url": url, "node.id": "1", "log.retention.check.interval.ms": "0", "listeners": "PLAINTEXT://127.0.0.1:9093", "shoal.cluster.enable": "false"}
    cfg.update(extra)
    return cfg


def start(asys: ActorSystem, url: str, journal=None, **extra: str):
    ctl = asys.createActor(ControllerActor)
    r = asys.ask(ctl, Configure(config(url, **extra), "controller", journal), T)
    assert isinstance(r, Configured), r
    return ctl, r


def folded_state(url: str) -> dict:
    """The pure fold (``state.apply``) of the whole controller stream in the event log at ``url``,
    as ``ControllerState.to_dict()``: what a restarted controller must recover, snapshot or not."""
    elog = open_event_log(url)
    try:
        fold = S.ControllerState(static_config=config(url))
        for rec in elog.read_stream(STREAM_ID):
            S.apply(fold, rec.decode())
        return fold.to_dict()
    finally:
        elog.close()


def dump(asys, ctl) -> M.StateDump:
    d = asys.ask(ctl, M.StateDumpRequest(), T)
    assert isinstance(d, M.StateDump), d
    return d


def test_not_ready_until_configured(asys, sqlite_url):
    ctl = asys.createActor(ControllerActor)
    for msg in [M.CreateTopicsRequest([tp.CreatableTopic("t", 1)]), M.MetadataRequest(), M.ReadHoldsChange("h", [("x", 0, 1)]), M.ChildLookup("share", "g")]:
        assert asys.ask(ctl, msg, T) == NotReady("controller")
    st = asys.ask(ctl, StatusRequest(), T)
    assert isinstance(st, StatusReply) and st.ready is False
    r = asys.ask(ctl, Configure(config(sqlite_url), "controller"), T)
    assert isinstance(r, Configured)
    assert isinstance(asys.ask(ctl, M.MetadataRequest(), T), M.MetadataReply)
    assert asys.ask(ctl, StatusRequest(), T).ready is True


def test_topics_configs_and_metadata(asys, sqlite_url):
    ctl, _ = start(asys, sqlite_url)
    r = asys.ask(ctl, M.CreateTopicsRequest([tp.CreatableTopic("orders", 3), tp.CreatableTopic("orders", 1), tp.CreatableTopic("x y")]), T)
    assert isinstance(r, M.CreateTopicsReply)
    assert [x.error for x in r.results] == ["INVALID_REQUEST", "INVALID_TOPIC_EXCEPTION"]  # one result per duplicated name
    r = asys.ask(ctl, M.CreateTopicsRequest([tp.CreatableTopic("orders", 3, configs=(("retention.ms", "60000"),))]), T)
    assert r.results[0].error == "NONE"
    tid = r.results[0].topic_id
    r = asys.ask(ctl, M.CreateTopicsRequest([tp.CreatableTopic("orders", 3)]), T)
    assert r.results[0].error == "TOPIC_ALREADY_EXISTS"
    md = asys.ask(ctl, M.MetadataRequest(["orders", "missing", "bad name"]), T)
    assert [t.error for t in md.topics] == ["NONE", "UNKNOWN_TOPIC_OR_PARTITION", "INVALID_TOPIC_EXCEPTION"]
    t = md.topics[0]
    assert t.topic_id == tid and t.topic_id_base64 == tp.kafka_topic_id(tid)
    assert [(p.partition, p.leader, p.leader_epoch, p.replicas, p.isr) for p in t.partitions] == [(i, 1, 0, [1], [1]) for i in range(3)]
    assert md.brokers == [(1, "127.0.0.1", 9093, None)] and md.controller_id == 1
    by_id = asys.ask(ctl, M.MetadataRequest([], topic_ids=[tp.kafka_topic_id(tid)]), T)
    assert by_id.topics[0].name == "orders"
    d = asys.ask(ctl, M.DescribeConfigsRequest([("TOPIC", "orders", ["retention.ms", "cleanup.policy"])]), T)
    assert [(e.name, e.value, e.source) for e in d.results[0].entries] == [
        ("retention.ms", "60000", "DYNAMIC_TOPIC_CONFIG"),
        ("cleanup.policy", "delete", "DEFAULT_CONFIG"),
    ]
    a = asys.ask(ctl, M.IncrementalAlterConfigsRequest([tp.AlterConfigResource("TOPIC", "orders", (("retention.ms", "DELETE", None),))]), T)
    assert a.results[0].error == "NONE"
    d = asys.ask(ctl, M.DescribeConfigsRequest([("TOPIC", "orders", ["retention.ms"])]), T)
    assert d.results[0].entries[0].source == "DEFAULT_CONFIG"
    x = asys.ask(ctl, M.DeleteTopicsRequest(["orders", "missing"]), T)
    assert [r.error for r in x.results] == ["NONE", "UNKNOWN_TOPIC_OR_PARTITION"]
    assert asys.ask(ctl, M.MetadataRequest(["orders"]), T).topics[0].error == "UNKNOWN_TOPIC_OR_PARTITION"


def test_create_partitions_through_the_actor(asys, sqlite_url):
    """CreatePartitionsRequest: PartitionsCreated is appended and folded before the reply, so
    Metadata shows the new partitions at once; errors come back per topic."""
    ctl, _ = start(asys, sqlite_url)
    asys.ask(ctl, M.CreateTopicsRequest([tp.CreatableTopic("grow", 1)]), T)
    r = asys.ask(ctl, M.CreatePartitionsRequest((tp.CreatePartitionsTopic("grow", 3), tp.CreatePartitionsTopic("nope", 2))), T)
    assert isinstance(r, M.CreatePartitionsReply)
    assert [(x.name, x.error) for x in r.results] == [("grow", "NONE"), ("nope", "UNKNOWN_TOPIC_OR_PARTITION")]
    md = asys.ask(ctl, M.MetadataRequest(["grow"]), T)
    assert [p.partition for p in md.topics[0].partitions] == [0, 1, 2]


def test_partition_reassignment_on_a_single_node(asys, sqlite_url):
    """AlterPartitionReassignments / ListPartitionReassignments through the actor on SQLite (a
    single node, id 1): a target of this node is a no-op (nothing appended), another broker is
    INVALID_REPLICA_ASSIGNMENT, a cancel NO_REASSIGNMENT_IN_PROGRESS; nothing is reassigning."""
    ctl, _ = start(asys, sqlite_url)
    asys.ask(ctl, M.CreateTopicsRequest([tp.CreatableTopic("r", 1)]), T)
    version = dump(asys, ctl).version
    r = asys.ask(ctl, M.AlterPartitionReassignmentsRequest((("r", 0, (1,)), ("r", 0, (2,)), ("r", 0, None), ("x", 0, (1,)))), T)
    assert isinstance(r, M.PartitionResults)
    assert [x.error for x in r.results] == ["NONE", "INVALID_REPLICA_ASSIGNMENT", "NO_REASSIGNMENT_IN_PROGRESS", "UNKNOWN_TOPIC_OR_PARTITION"]
    assert dump(asys, ctl).version == version
    listed = asys.ask(ctl, M.ListPartitionReassignmentsRequest(None), T)
    assert isinstance(listed, M.ListPartitionReassignmentsReply) and listed.reassignments == ()


def test_metadata_auto_creates_topics(asys, sqlite_url):
    ctl, _ = start(asys, sqlite_url, **{"num.partitions": "2"})
    md = asys.ask(ctl, M.MetadataRequest(["auto"], allow_auto_topic_creation=True), T)
    assert md.topics[0].error == "NONE" and len(md.topics[0].partitions) == 2
    assert asys.ask(ctl, M.MetadataRequest(["nope"], allow_auto_topic_creation=False), T).topics[0].error == "UNKNOWN_TOPIC_OR_PARTITION"
    off = asys.ask(ctl, M.IncrementalAlterConfigsRequest([tp.AlterConfigResource("BROKER", "", (("auto.create.topics.enable", "SET", "false"),))]), T)
    assert off.results[0].error == "NONE"
    assert asys.ask(ctl, M.MetadataRequest(["later"], allow_auto_topic_creation=True), T).topics[0].error == "UNKNOWN_TOPIC_OR_PARTITION"


def test_frontiers_holds_and_notifications(asys, sqlite_url):
    ctl, _ = start(asys, sqlite_url)
    r = asys.ask(ctl, M.CreateTopicsRequest([tp.CreatableTopic("t", 1, configs=(("retention.bytes", "1000"),))]), T)
    cid = fr.partition_collection_id(r.results[0].topic_id, 0)
    collector = asys.createActor(C.FrontierCollector)
    assert asys.ask(collector, C.Watch(ctl, r.results[0].topic_id), T) == M.FrontierReply(True)
    now = int(time.time() * 1000)  # recent segments: only retention.bytes applies
    segs = (SegmentInfo(0, 100, 1000, now), SegmentInfo(100, 200, 1000, now))
    rep = asys.ask(ctl, M.ReadHoldsChange("tiering", [(cid, 50, 1)]), T)
    assert rep.ok and rep.since_changes == []
    rep = asys.ask(ctl, M.FrontierUpdates([(cid, 200, segs)]), T)
    assert rep.ok and rep.since_changes == [(cid, 0, 50)]  # retention wants 100, tiering holds 50
    bad = asys.ask(ctl, M.ReadHoldsChange("tiering", [(cid, 10, 1)]), T)
    assert (bad.ok, bad.error, bad.kafka_error) == (False, "SinceViolation", "OFFSET_OUT_OF_RANGE")
    bad = asys.ask(ctl, M.ReadHoldsChange("tiering", [(cid, 50, -2)]), T)
    assert bad.error == "NegativeReadCapability"
    bad = asys.ask(ctl, M.ReadHoldsChange("tiering", [("nope", 5, 1)]), T)
    assert bad.error == "CollectionMissing" and bad.kafka_error == "UNKNOWN_TOPIC_OR_PARTITION"
    rep = asys.ask(ctl, M.FrontierCommand(fr.DowngradeReadHold("tiering", cid, None)), T)
    assert rep.since_changes == [(cid, 50, 100)]
    ign = asys.ask(ctl, M.ReadHoldsChange("share:g", [(cid, 150, 1)]), T)
    assert ign.ok and ign.ignored
    f = asys.ask(ctl, M.FrontiersRequest([cid, "eventlog"]), T)
    assert f.frontiers == {cid: (100, 200), "eventlog": (0, 1)}  # registered at position 0 + 1
    seen = asys.ask(collector, C.WhatDidYouSee(), T)
    assert seen.changes == [(cid, 0, 50), (cid, 50, 100)]
    # a handler exception becomes a Failure, the controller keeps running
    fail = asys.ask(ctl, M.FrontierCommand("not a command"), T)
    assert isinstance(fail, Failure) and fail.error == "UNKNOWN_SERVER_ERROR"
    assert isinstance(asys.ask(ctl, M.FrontiersRequest(), T), M.FrontiersReply)


def test_event_log_is_a_collection_whose_upper_follows_the_log(asys, sqlite_url):
    ctl, _ = start(asys, sqlite_url, **{"shoal.controller.eventlog.frontier.interval": "1"})
    uppers = []
    for i in range(4):
        assert asys.ask(ctl, M.CreateTopicsRequest([tp.CreatableTopic(f"t{i}", 1)]), T).results[0].error == "NONE"
        uppers.append(asys.ask(ctl, M.FrontiersRequest(["eventlog"]), T).frontiers["eventlog"])
    last = open_event_log(sqlite_url).last_position()
    assert [s for s, _ in uppers] == [0, 0, 0, 0]  # never deleted
    ups = [u for _, u in uppers]
    assert ups == sorted(ups) and len(set(ups)) == 4 and 1 < ups[-1] <= last
    # a replay session holds the log; the hold is counted like any other
    assert asys.ask(ctl, M.ReadHoldsChange("replay:audit", [("eventlog", ups[-1] - 1, 1)]), T).ok
    assert asys.ask(ctl, M.FrontierCommand(fr.ReleaseHolder("replay:audit")), T).ok


def _busy(asys, ctl) -> None:
    """A mix of every kind of controller event."""
    r = asys.ask(ctl, M.CreateTopicsRequest([tp.CreatableTopic("a", 2), tp.CreatableTopic("b", 1, configs=(("share.groups.hold.retention", "true"),))]), T)
    assert all(x.error == "NONE" for x in r.results)
    a0 = fr.partition_collection_id(r.results[0].topic_id, 0)
    b0 = fr.partition_collection_id(r.results[1].topic_id, 0)
    r = asys.ask(ctl, M.IncrementalAlterConfigsRequest([tp.AlterConfigResource("TOPIC", "a", (("retention.ms", "SET", "1000"), ("cleanup.policy", "APPEND", "compact")))]), T)
    assert r.results[0].error == "NONE"
    r = asys.ask(ctl, M.IncrementalAlterConfigsRequest([tp.AlterConfigResource("BROKER", "", (("num.partitions", "SET", "3"),))]), T)
    assert r.results[0].error == "NONE"
    assert asys.ask(ctl, M.FrontierUpdates([(a0, 500, ((0, 100, 10, 0),)), (b0, 70, None)]), T).ok  # plain tuples too
    assert asys.ask(ctl, M.ReadHoldsChange("share:g1", [(b0, 20, 1)]), T).ok
    assert asys.ask(ctl, M.ReadHoldsChange("replay:1", [("eventlog", 0, 1), (a0, 150, 2)]), T).ok
    assert asys.ask(ctl, M.FrontierCommand(fr.SetReadPolicies(((b0, fr.LagWrites(10, 1)),))), T).ok
    assert asys.ask(ctl, M.DeleteTopicsRequest(["a"]), T).results[0].error == "NONE"
    assert asys.ask(ctl, M.CreateTopicsRequest([tp.CreatableTopic("a", 1)]), T).results[0].error == "NONE"


def test_state_survives_a_restart_exactly(event_log_url):
    sqlite_url = event_log_url  # SQLite and PostgreSQL in turn
    s1 = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        ctl, _ = start(s1, sqlite_url, **{"shoal.controller.snapshot.interval.events": "4"})
        _busy(s1, ctl)
        before = dump(s1, ctl)
        md_before = s1.ask(ctl, M.MetadataRequest(), T)
        cfg_before = s1.ask(ctl, M.DescribeConfigsRequest([("TOPIC", "b", None), ("BROKER", "1", None)], True), T)
    finally:
        s1.shutdown()
    elog = open_event_log(sqlite_url)
    total = elog.stream_version(STREAM_ID)
    snap = elog.load_snapshot(STREAM_ID)
    assert snap is not None and 0 < snap.stream_version <= total
    # the pure fold of the whole stream gives the same state (snapshots are only a cache)
    assert folded_state(sqlite_url) == before.state
    s2 = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        ctl2, configured = start(s2, sqlite_url)
        assert configured.events_replayed == total - snap.stream_version  # from the snapshot on
        after = dump(s2, ctl2)
        assert (after.version, after.state) == (before.version, before.state)
        assert s2.ask(ctl2, M.MetadataRequest(), T) == md_before
        assert s2.ask(ctl2, M.DescribeConfigsRequest([("TOPIC", "b", None), ("BROKER", "1", None)], True), T) == cfg_before
        # and it keeps working: versions continue, ids are not reused
        r = s2.ask(ctl2, M.CreateTopicsRequest([tp.CreatableTopic("c", 1)]), T)
        assert r.results[0].error == "NONE" and r.results[0].topic_id not in before.state["topics"]["used_ids"]
    finally:
        s2.shutdown()


def test_retention_timer_advances_since_by_time(asys, sqlite_url):
    ctl, _ = start(asys, sqlite_url, **{"log.retention.check.interval.ms": "20"})
    r = asys.ask(ctl, M.CreateTopicsRequest([tp.CreatableTopic("t", 1, configs=(("retention.ms", "100"),))]), T)
    cid = fr.partition_collection_id(r.results[0].topic_id, 0)
    now = int(time.time() * 1000)
    rep = asys.ask(ctl, M.FrontierUpdates([(cid, 300, ((0, 100, 10, now), (100, 300, 10, now + 10_000)))]), T)
    assert rep.ok and rep.since_changes == []  # nothing is older than 100 ms yet
    deadline = time.monotonic() + 10
    since = 0
    while time.monotonic() < deadline and since == 0:
        time.sleep(0.05)  # simpleSystemBase delivers due wakeups during the next ask
        since = asys.ask(ctl, M.FrontiersRequest([cid]), T).frontiers[cid][0]
    assert since == 100  # the first segment expired by time; the second is "from the future"


def test_changed_static_retention_applies_after_restart(sqlite_url):
    s1 = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        ctl, _ = start(s1, sqlite_url)
        r = s1.ask(ctl, M.CreateTopicsRequest([tp.CreatableTopic("t", 1)]), T)
        cid = fr.partition_collection_id(r.results[0].topic_id, 0)
        assert dump(s1, ctl).state["frontiers"]["collections"][cid]["policy"]["retention_ms"] == 604_800_000
    finally:
        s1.shutdown()
    s2 = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        ctl, _ = start(s2, sqlite_url, **{"log.retention.hours": "1"})
        assert dump(s2, ctl).state["frontiers"]["collections"][cid]["policy"]["retention_ms"] == 3_600_000
        d = s2.ask(ctl, M.DescribeConfigsRequest([("TOPIC", "t", ["retention.ms"])]), T)
        assert (d.results[0].entries[0].value, d.results[0].entries[0].source) == ("3600000", "STATIC_BROKER_CONFIG")
    finally:
        s2.shutdown()


def test_works_through_the_journal_actor(asys, sqlite_url):
    journal = asys.createActor(JournalActor)
    assert isinstance(asys.ask(journal, Configure(config(sqlite_url), "journal"), T), Configured)
    ctl, _ = start(asys, sqlite_url, journal=journal)
    r = asys.ask(ctl, M.CreateTopicsRequest([tp.CreatableTopic("j", 2)]), T)
    assert r.results[0].error == "NONE"
    assert open_event_log(sqlite_url).stream_version(STREAM_ID) == dump(asys, ctl).version >= 2


def test_second_writer_gets_not_controller(sqlite_url):
    s1 = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    s2 = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        a, _ = start(s1, sqlite_url)
        b, _ = start(s2, sqlite_url)
        assert s1.ask(a, M.CreateTopicsRequest([tp.CreatableTopic("x", 1)]), T).results[0].error == "NONE"
        r = s2.ask(b, M.CreateTopicsRequest([tp.CreatableTopic("y", 1)]), T)
        assert isinstance(r, Failure) and r.error == "NOT_CONTROLLER"
    finally:
        s2.shutdown()
        s1.shutdown()


# --- supervision (simple base) -----------------------------------------------------------------------

COUNTER = "tests.controller.child_actor.CounterActor"


def test_child_lookup_restart_and_stop(asys, sqlite_url):
    ctl, _ = start(asys, sqlite_url)
    assert asys.ask(ctl, M.RegisterChildKind("counter", COUNTER), T) == M.ChildKindRegistered("counter")
    absent = asys.ask(ctl, M.ChildLookup("counter", "c1", create=False), T)
    assert isinstance(absent, Failure) and absent.error == "UNKNOWN_TOPIC_OR_PARTITION"
    ca = asys.ask(ctl, M.ChildLookup("counter", "c1"), T)
    assert isinstance(ca, M.ChildAddress) and ca.restarts == 0
    assert asys.ask(ca.address, C.Increment(2), T).value == 2
    assert asys.ask(ca.address, C.Increment(3), T).value == 5
    assert asys.ask(ctl, M.ChildLookup("counter", "c1"), T).address == ca.address  # same child
    # the child exits without being asked by the controller: it is restarted and recovers
    asys.tell(ca.address, ActorExitRequest())
    again = asys.ask(ctl, M.ChildLookup("counter", "c1"), T)
    assert isinstance(again, M.ChildAddress) and again.restarts == 1 and again.address != ca.address
    assert asys.ask(again.address, C.GetCount(), T).value == 5
    assert asys.ask(ctl, StatusRequest(), T).counts["restarts"] == 1
    # StopChild: no restart
    assert asys.ask(ctl, M.StopChild("counter", "c1"), T) == M.ChildStopped("counter", "c1")
    assert isinstance(asys.ask(ctl, M.ChildLookup("counter", "c1", create=False), T), Failure)
    assert asys.ask(ctl, M.StopChild("counter", "never"), T) == M.ChildStopped("counter", "never")


def test_child_kinds_from_config_and_failures(asys, sqlite_url):
    ctl, _ = start(asys, sqlite_url, **{"shoal.controller.child.counter": COUNTER, "shoal.controller.child.failing": "tests.controller.child_actor.FailingActor"})
    assert isinstance(asys.ask(ctl, M.ChildLookup("counter", "x"), T), M.ChildAddress)
    f = asys.ask(ctl, M.ChildLookup("failing", "x"), T)
    assert isinstance(f, Failure) and "failed to start" in f.message
    f = asys.ask(ctl, M.ChildLookup("nokind", "x"), T)
    assert isinstance(f, Failure) and "unknown child kind" in f.message
    asys.ask(ctl, M.RegisterChildKind("ghost", "tests.controller.no_such_module.Nope"), T)
    f = asys.ask(ctl, M.ChildLookup("ghost", "x"), T)
    assert isinstance(f, Failure) and f.error == "UNKNOWN_SERVER_ERROR"
    assert asys.ask(ctl, StatusRequest(), T).ready


def test_poisoned_configure_and_dead_letters(asys, sqlite_url):
    ctl, _ = start(asys, sqlite_url, **{"shoal.controller.child.crash": "tests.controller.child_actor.CrashOnConfigure", "shoal.controller.child.counter": COUNTER})
    f = asys.ask(ctl, M.ChildLookup("crash", "x"), T)
    assert isinstance(f, Failure) and "could not handle Configure" in f.message
    for _ in range(5):  # the poisoned child's exit may still be on its way
        st = asys.ask(ctl, StatusRequest(), T)
        if st.counts["children"] == 0:
            break
    assert st.counts["poisoned"] == 1 and st.counts["children"] == 0 and st.counts["restarts"] == 0
    old = asys.ask(ctl, M.ChildLookup("counter", "d"), T).address
    asys.tell(old, ActorExitRequest())
    new = asys.ask(ctl, M.ChildLookup("counter", "d"), T)
    assert new.restarts == 1
    asys.tell(old, C.Increment(1))  # to the dead incarnation
    st = asys.ask(ctl, StatusRequest(), T)
    assert st.counts["dead_letters"] >= 1
    assert asys.ask(new.address, C.GetCount(), T).value == 0  # not redelivered (no reply path)


def test_restart_intensity_gives_up(asys, sqlite_url):
    ctl, _ = start(asys, sqlite_url, **{"shoal.controller.child.counter": COUNTER, "shoal.controller.child.max.restarts": "2"})
    addr = asys.ask(ctl, M.ChildLookup("counter", "k"), T).address
    for expected in (1, 2):
        asys.tell(addr, ActorExitRequest())
        nxt = asys.ask(ctl, M.ChildLookup("counter", "k"), T)
        assert nxt.restarts == expected
        addr = nxt.address
    asys.tell(addr, ActorExitRequest())  # third crash within the window: given up
    assert isinstance(asys.ask(ctl, M.ChildLookup("counter", "k", create=False), T), Failure)
    fresh = asys.ask(ctl, M.ChildLookup("counter", "k"), T)
    assert fresh.restarts == 0 and asys.ask(fresh.address, C.GetCount(), T).value == 0


# --- pickling ----------------------------------------------------------------------------------------


def test_producer_id_blocks_are_persisted_and_never_handed_out_twice(event_log_url):
    """AllocateProducerIds (Kafka ``ProducerIdControlManager``): consecutive blocks of 1000, each
    persisted before the reply; after a restart the next block starts after the last one."""
    asys = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        ctl, _ = start(asys, event_log_url)
        a = asys.ask(ctl, M.AllocateProducerIdsRequest(1), T)
        b = asys.ask(ctl, M.AllocateProducerIdsRequest(1), T)
        assert (a.error, a.first_producer_id, a.block_size) == (None, 0, 1000)
        assert (b.error, b.first_producer_id) == (None, 1000)
    finally:
        asys.shutdown()
    asys = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        ctl, _ = start(asys, event_log_url)
        assert asys.ask(ctl, M.AllocateProducerIdsRequest(1), T).first_producer_id == 2000
    finally:
        asys.shutdown()
    state = S.ControllerState()
    state.next_producer_id = 2**63 - 500
    rejected = S.decide(state, S.AllocateProducerIds(1), 0)
    assert isinstance(rejected, fr.Rejected) and rejected.kafka_error == "UNKNOWN_SERVER_ERROR"


def _samples():
    ct = tp.CreatableTopic("t", 1, 1, ((0, (1,)),), (("retention.ms", "5"),))
    entry = tp.ConfigEntry("retention.ms", "5", "DYNAMIC_TOPIC_CONFIG", False, False, (("retention.ms", "5", "DYNAMIC_TOPIC_CONFIG"),), "LONG")
    pm = M.PartitionMetadata("NONE", 0, 1, 0, [1], [1], [])
    return [
        M.CreateTopicsRequest([ct], True),
        M.CreateTopicsReply([tp.CreateTopicResult("t", "NONE", None, "id", 1, 1, (entry,))]),
        M.DeleteTopicsRequest(["t"], ["AAAAAAAAAAAAAAAAAAAAAA"]),
        M.DeleteTopicsReply([tp.DeleteTopicResult("t", "id")]),
        M.MetadataRequest(["t"], True, ["id"]),
        pm,
        M.TopicMetadata("NONE", "t", "id", "b64", False, [pm]),
        M.MetadataReply("c", 1, [(1, "h", 9092, None)], [M.TopicMetadata("NONE", "t", "id", "b64", False, [pm])]),
        M.DescribeConfigsRequest([("TOPIC", "t", ["retention.ms"])], True),
        M.DescribeConfigsReply([tp.ConfigResult("TOPIC", "t", entries=(entry,))]),
        M.IncrementalAlterConfigsRequest([tp.AlterConfigResource("TOPIC", "t", (("retention.ms", "SET", "1"),))], True),
        M.IncrementalAlterConfigsReply([tp.ConfigResult("TOPIC", "t")]),
        M.ElectLeadersRequest([("t", 0)], "preferred"),
        M.AlterPartitionReassignmentsRequest((("t", 0, (2, 3)), ("t", 1, None))),
        M.ListPartitionReassignmentsRequest((("t", 0),)),
        M.ListPartitionReassignmentsReply((S.OngoingReassignment("t", 0, (2, 3, 1), (3,), (1,)),)),
        M.AlterPartitionRequest("t", 0, 1, 0, 0, [1]),
        M.BrokerFailedNotice(2),
        M.PartitionResults([S.PartitionResult("t", 0)]),
        M.ReadHoldsChange("tiering", [("c", 1, 1)]),
        M.FrontierUpdates([("c", 5, (SegmentInfo(0, 5, 10, 1),))]),
        M.FrontierCommand(fr.SetReadPolicies((("c", fr.LagWrites(3, 1)),))),
        M.FrontierCommand(fr.DeleteRecords("c", 7)),
        M.FrontierCommand(fr.CreateCollections((fr.NewCollection("x", 0, 0, fr.Retention(1, 2)),))),
        M.FrontierReply(False, "SinceViolation", "OFFSET_OUT_OF_RANGE", "m", False, [("c", 0, None)]),
        M.FrontiersRequest(["c"]),
        M.FrontiersReply({"c": (0, None)}, ["d"]),
        M.SubscribeFrontiers("p"),
        M.SinceAdvanced("c", 1, None),
        M.ChildLookup("share", "g", False),
        M.ChildAddress("share", "g", None, 2),
        M.RegisterChildKind("k", "a.b.C", {"x": 1}),
        M.ChildKindRegistered("k"),
        M.StopChild("k", "n"),
        M.ForgetShareGroup("g"),
        M.AdmitShareGroup("g", False),
        M.ShareGroupAdmitted("g"),
        M.ChildStopped("k", "n"),
        M.StateDumpRequest(),
        M.StateDump(3, {"topics": {}}),
        M.AllocateProducerIdsRequest(1),
        M.AllocateProducerIdsReply(None, 1000, 1000),
        # SCRAM credentials (KIP-554)
        M.AlterUserScramCredentialsRequest((sc.ScramDeletion("u", 1),), (sc.ScramUpsertion("v", 2, 4096, b"salt", b"salted"),)),
        M.AlterUserScramCredentialsReply((sc.AlterResult("u"), sc.AlterResult("v", "DUPLICATE_RESOURCE", "m"))),
        M.DescribeUserScramCredentialsRequest(("u",)),
        M.DescribeUserScramCredentialsReply((sc.DescribeResult("u", infos=(sc.CredentialInfo(1, 4096),)),)),
        M.ScramCredentialsRequest(),
        M.ScramCredentialsReply(3, (("u", "SCRAM-SHA-256", sc.ScramCredential(b"s", b"k1", b"k2", 4096)),)),
        # ACLs
        M.CreateAclsRequest((AclBinding("TOPIC", "t", "LITERAL", "User:a", "*", "READ", "ALLOW"),)),
        M.CreateAclsReply((AclCreateResult(), AclCreateResult("INVALID_REQUEST", "m")), "x:1"),
        M.DeleteAclsRequest((AclBindingFilter(),)),
        M.DeleteAclsReply((AclDeleteResult(None, None, (AclBinding("TOPIC", "t", "LITERAL", "User:a", "*", "READ", "ALLOW"),)),), "x:2"),
        M.AclsRequest("x:1"),
        M.AclsReply("x:2", None),
        # CreatePartitions (issue 16)
        M.CreatePartitionsRequest((tp.CreatePartitionsTopic("t", 3, ((1,), (1,))),), True),
        M.CreatePartitionsReply((tp.CreatePartitionsResult("t"), tp.CreatePartitionsResult("u", "INVALID_PARTITIONS", "m"))),
        # the cluster (issue 15)
        M.BrokerRegistrationRequest(2, "inc", "c", (BrokerEndpoint("PLAINTEXT", "h", 9092, "PLAINTEXT"),), None),
        M.BrokerRegistrationReply(None, None, 7),
        M.BrokerHeartbeatRequest(2, 7, False),
        M.BrokerHeartbeatReply("STALE_BROKER_EPOCH", "m", True),
        M.ClaimControllerRequest(3, (1,)),
        M.ClusterStatusRequest(),
        M.ClusterStatus(True, 2, 4, 10, None),
    ]


def test_every_message_class_has_a_pickle_sample():
    classes = {obj for _, obj in inspect.getmembers(M, inspect.isclass) if obj.__module__ == M.__name__}
    assert classes == {type(m) for m in _samples()}


@pytest.mark.parametrize("msg", _samples(), ids=lambda m: type(m).__name__)
def test_pickle_round_trip(msg):
    back = pickle.loads(pickle.dumps(msg))
    assert type(back) is type(msg) and back == msg
