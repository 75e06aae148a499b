"""``ShareGroupActor`` under ``simpleSystemBase`` (fixture ``asys``), time driven with freezegun."""

from __future__ import annotations

import json
import pickle

import pytest
from freezegun import freeze_time
from thespian.actors import ActorExitRequest, ActorSystem, DeadEnvelope, PoisonMessage

from actors.journal import JournalActor
from actors.messages import Configure, Configured, Failure, NotReady, StatusReply, StatusRequest
from actors.share import messages as m
from actors.share.actor import SNAPSHOT_FORMAT, ShareGroupActor, ShareGroupState
from actors.share.config import BrokerShareConfig
from events.codec import decode_recorded
from events.share_group import stream_id_for
from store.event_log import open_event_log

G = "grp"
T = "TOPIC-ID"
TIMEOUT = 5


@pytest.fixture
def frozen():
    with freeze_time("2026-01-01 00:00:00") as ft:
        yield ft


def cfg(url: str, **extra) -> dict:
    c = {"event.log.url": url}
    c.update({k.replace("_", "."): str(v) for k, v in extra.items()})
    return c


def start(asys, url, **extra):
    a = asys.createActor(ShareGroupActor)
    r = asys.ask(a, Configure(cfg(url, **extra), G), TIMEOUT)
    assert isinstance(r, Configured), r
    return a


def join(asys, a, member="m1", topics=("foo",), parts=1):
    r = asys.ask(a, m.ShareGroupHeartbeatCmd(G, member, 0, subscribed_topic_names=topics, topics={"foo": (T, parts)}), TIMEOUT)
    assert r.error == "NONE", r
    return r


def open_session(asys, a, member="m1", hw=0, lso=0):
    r = asys.ask(a, m.ShareFetchCmd(G, member, 0, (m.ShareFetchPartition(T, 0, log_start_offset=lso, high_watermark=hw),)), TIMEOUT)
    assert r.error == "NONE", r
    return r.partitions[0]


def fetch(asys, a, member, epoch, batches, acks=(), hw=None, max_records=500, partition=0):
    hw = hw if hw is not None else (batches[-1][1] + 1 if batches else 0)
    start_off = batches[0][0] if batches else hw
    p = m.ShareFetchPartition(T, partition, acknowledgement_batches=acks, fetch_offset=start_off, log_batches=tuple(batches),
                              high_watermark=hw)
    return asys.ask(a, m.ShareFetchCmd(G, member, epoch, (p,), max_records), TIMEOUT)


def state(asys, a):
    return asys.ask(a, m.GetShareGroupState(G), TIMEOUT)


def record(asys, a, offset, partition=0):
    """(state, delivery count, member) of one offset from the dumped partition snapshot."""
    snap = state(asys, a).state["partitions"][f"{T}:{partition}"]
    for first, last, batch_state, offsets in [(b[0], b[1], b[2], b[3]) for b in snap[-1]]:
        if first <= offset <= last:
            s = batch_state if offsets is None else dict(offsets)[offset]
            return s[0], s[1], s[2]
    return None


def test_fail_closed_until_configured(asys):
    a = asys.createActor(ShareGroupActor)
    for msg in [m.ShareGroupHeartbeatCmd(G, "m1", 0, subscribed_topic_names=("foo",)),
                m.ShareFetchCmd(G, "m1", 0, ()), m.ShareAcknowledgeCmd(G, "m1", 1, ()),
                m.DescribeShareGroup(G), m.DescribeShareGroupOffsets(G), m.AlterGroupConfigs(G, {}),
                m.DeleteShareGroupState(G), m.GetShareGroupState(G)]:
        assert isinstance(asys.ask(a, msg, TIMEOUT), NotReady), msg
    st = asys.ask(a, StatusRequest(), TIMEOUT)
    assert isinstance(st, StatusReply) and not st.ready


def test_bad_broker_config_is_refused(asys, sqlite_url):
    a = asys.createActor(ShareGroupActor)
    r = asys.ask(a, Configure(cfg(sqlite_url, **{"group.share.delivery.count.limit": 42}), G), TIMEOUT)
    assert isinstance(r, Failure) and r.error == "INVALID_CONFIG"
    assert isinstance(asys.ask(a, m.DescribeShareGroup(G), TIMEOUT), NotReady)


def test_storage_down_at_configure_fails_closed_with_coordinator_load_in_progress(asys, sqlite_url, tmp_path):
    """The event log cannot be opened: ``Configure`` is answered ``Failure(COORDINATOR_LOAD_IN_PROGRESS)``
    (not a crash of the handler, which Thespian would turn into a ``PoisonMessage``), every request
    gets ``NotReady``, and a later ``Configure`` with the storage back recovers."""
    a = asys.createActor(ShareGroupActor)
    bad = f"sqlite:///{tmp_path}/missing-dir/sub/events.db"
    r = asys.ask(a, Configure(cfg(bad), G), TIMEOUT)
    assert isinstance(r, Failure) and r.error == "COORDINATOR_LOAD_IN_PROGRESS", r
    assert isinstance(asys.ask(a, m.DescribeShareGroup(G), TIMEOUT), NotReady)
    assert isinstance(asys.ask(a, Configure(cfg(sqlite_url), G), TIMEOUT), Configured)
    assert asys.ask(a, m.DescribeShareGroup(G), TIMEOUT).error == "GROUP_ID_NOT_FOUND"


def test_heartbeat_describe_and_errors_as_names(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url)
    assert asys.ask(a, m.DescribeShareGroup(G), TIMEOUT).error == "GROUP_ID_NOT_FOUND"
    r = join(asys, a, "m1", parts=2)
    assert (r.member_id, r.member_epoch, r.heartbeat_interval_ms, r.assignment) == ("m1", 1, 5000, ((T, (0, 1)),))
    r = asys.ask(a, m.ShareGroupHeartbeatCmd(G, "m1", 7), TIMEOUT)
    assert r.error == "FENCED_MEMBER_EPOCH"
    r = asys.ask(a, m.ShareGroupHeartbeatCmd(G, "nobody", 1), TIMEOUT)
    assert r.error == "UNKNOWN_MEMBER_ID"
    d = asys.ask(a, m.DescribeShareGroup(G), TIMEOUT)
    assert (d.error, d.group_state, d.group_epoch, d.assignor_name) == ("NONE", "Stable", 1, "simple")
    assert [x.member_id for x in d.members] == ["m1"]
    r = asys.ask(a, m.ShareGroupHeartbeatCmd(G, "m1", -1), TIMEOUT)
    assert (r.error, r.member_epoch) == ("NONE", -1)
    assert asys.ask(a, m.DescribeShareGroup(G), TIMEOUT).group_state == "Empty"


def test_group_id_mismatch_is_invalid_request(asys, sqlite_url):
    a = start(asys, sqlite_url)
    r = asys.ask(a, m.DescribeShareGroup("other"), TIMEOUT)
    assert isinstance(r, Failure) and r.error == "INVALID_REQUEST"


def test_fetch_acquire_acknowledge_cycle_and_events_before_reply(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url)
    join(asys, a)
    p = open_session(asys, a, hw=100)
    assert (p.acquired, p.refetch_from, p.start_offset) == ((), 100, 100)  # share.auto.offset.reset=latest
    r = fetch(asys, a, "m1", 1, [(100, 149), (150, 199)], max_records=60)
    assert r.acquisition_lock_timeout_ms == 30000
    assert r.partitions[0].acquired == ((100, 199, 1),)  # soft limit ends at a batch boundary
    assert r.partitions[0].next_fetch_offset == 200
    elog = open_event_log(sqlite_url)
    version_before = elog.stream_version(stream_id_for(G))
    r = fetch(asys, a, "m1", 2, [(200, 299)], acks=((100, 199, (1,)),))
    assert r.partitions[0].acknowledge_error == "NONE"
    assert r.partitions[0].acquired == ((200, 299, 1),)
    events = elog.read_stream(stream_id_for(G), version_before + 1)
    assert [e.event_type for e in events] == ["share.ShareFetchProcessed"]  # one event per cycle
    assert asys.ask(a, StatusRequest(), TIMEOUT).counts["in_flight_records"] == 100  # 200..299 acquired
    assert record(asys, a, 150) is None  # acknowledged prefix pruned: start offset moved to 200
    assert asys.ask(a, m.DescribeShareGroupOffsets(G), TIMEOUT).partitions[0].start_offset == 200


def test_session_errors_and_partition_errors(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url)
    join(asys, a)
    join(asys, a, "m2")
    assert fetch(asys, a, "m1", 1, [(0, 9)]).error == "SHARE_SESSION_NOT_FOUND"
    open_session(asys, a, "m1")
    open_session(asys, a, "m2")
    assert fetch(asys, a, "m1", 5, [(0, 9)]).error == "INVALID_SHARE_SESSION_EPOCH"
    r = asys.ask(a, m.ShareFetchCmd(G, "m1", 0, (m.ShareFetchPartition(T, 0, acknowledgement_batches=((0, 0, (1,)),)),)), TIMEOUT)
    assert r.error == "INVALID_REQUEST"
    assert fetch(asys, a, "m1", 1, [(0, 9)]).partitions[0].acquired == ((0, 9, 1),)
    # m2 acknowledging m1's records: INVALID_RECORD_STATE, nothing changes and no event is written
    v_before = state(asys, a).stream_version
    ack = asys.ask(a, m.ShareAcknowledgeCmd(G, "m2", 1, (m.ShareAcknowledgePartition(T, 0, ((0, 9, (1,)),)),
                                                         m.ShareAcknowledgePartition("NOPE", 0, ((0, 1, (1,)),)),
                                                         m.ShareAcknowledgePartition(T, 1, ((5, 1, (1,)),)))), TIMEOUT)
    assert [p.error for p in ack.partitions] == ["INVALID_RECORD_STATE", "UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_OR_PARTITION"]
    assert record(asys, a, 3) == (1, 1, "m1")
    assert state(asys, a).stream_version == v_before
    ack = asys.ask(a, m.ShareAcknowledgeCmd(G, "m1", 2, (m.ShareAcknowledgePartition(T, 0, ((0, 4, (1,)), (3, 2, (1,)))),)), TIMEOUT)
    assert ack.partitions[0].error == "INVALID_REQUEST"
    # a per-partition error still moves the session epoch on
    ack = asys.ask(a, m.ShareAcknowledgeCmd(G, "m1", 3, (m.ShareAcknowledgePartition(T, 0, ((0, 4, (1,)), (5, 9, (2,)))),)), TIMEOUT)
    assert ack.error == "NONE" and ack.partitions[0].error == "NONE"
    assert record(asys, a, 7) == (0, 1, "")
    # released records are fetched again: the caller is told where to read
    r = fetch(asys, a, "m1", 4, [(10, 19)])
    assert r.partitions[0].refetch_from == 5 and r.partitions[0].acquired == ()
    r = fetch(asys, a, "m1", 5, [(5, 9)], hw=10)
    assert r.partitions[0].acquired == ((5, 9, 2),)


def test_lock_expiry_through_wakeup_and_stale_wakeups_ignored(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url)
    join(asys, a)
    open_session(asys, a)
    fetch(asys, a, "m1", 1, [(0, 9)])
    frozen.tick(29.0)
    asys.ask(a, m.ShareGroupHeartbeatCmd(G, "m1", 1), TIMEOUT)
    assert record(asys, a, 0)[0] == 1
    frozen.tick(1.5)
    st = asys.ask(a, StatusRequest(), TIMEOUT)  # the wakeup is delivered on this turn
    assert st.counts["wakeups"] >= 1
    assert record(asys, a, 0) == (0, 1, "")  # AVAILABLE again, delivery count kept


def test_session_timeout_fences_member_and_releases_its_records(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url)
    r = asys.ask(a, m.AlterGroupConfigs(G, {"share.record.lock.duration.ms": "60000"}), TIMEOUT)
    assert r.error == "NONE"
    join(asys, a)
    open_session(asys, a)
    fetch(asys, a, "m1", 1, [(0, 9)])
    frozen.tick(46)
    d = asys.ask(a, m.DescribeShareGroup(G), TIMEOUT)
    assert d.group_state == "Empty"
    # released at fencing, before its 60 s lock expired; Kafka 4.2 releases with
    # DeliveryCountOps.DECREASE (acquired but not delivered): the delivery count drops back to 0
    assert record(asys, a, 0) == (0, 0, "")
    assert asys.ask(a, StatusRequest(), TIMEOUT).counts["sessions"] == 0


def test_final_epoch_releases_records(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url)
    join(asys, a)
    open_session(asys, a)
    fetch(asys, a, "m1", 1, [(0, 9)])
    r = asys.ask(a, m.ShareAcknowledgeCmd(G, "m1", -1, (m.ShareAcknowledgePartition(T, 0, ((0, 1, (1,)),)),)), TIMEOUT)
    assert r.error == "NONE"
    assert record(asys, a, 1) == (2, 1, "")  # acknowledged (ACCEPT) before the close: untouched
    assert record(asys, a, 5) == (0, 0, "")  # released with DeliveryCountOps.DECREASE (Kafka 4.2)
    assert fetch(asys, a, "m1", 2, [(2, 9)]).error == "SHARE_SESSION_NOT_FOUND"


def test_a_member_keeps_one_session_per_node_and_a_final_epoch_releases_only_its_own(asys, sqlite_url, frozen):
    """A client holds a share session with each broker it fetches from; on a cluster the group's
    actor sees the forwarded ones under the forwarding node (session_node). Their epochs are
    independent, and closing one (FINAL) releases the member's records in that session's
    partitions only (Kafka's releaseSession), while the member keeps another session."""
    a = start(asys, sqlite_url)
    join(asys, a, parts=2)
    p0 = m.ShareFetchPartition(T, 0, high_watermark=0)
    p1 = m.ShareFetchPartition(T, 1, high_watermark=0)
    assert asys.ask(a, m.ShareFetchCmd(G, "m1", 0, (p0,)), TIMEOUT).error == "NONE"
    assert asys.ask(a, m.ShareFetchCmd(G, "m1", 0, (p1,), session_node=2), TIMEOUT).error == "NONE"
    assert fetch(asys, a, "m1", 1, [(0, 9)], partition=0).error == "NONE"
    q1 = m.ShareFetchPartition(T, 1, fetch_offset=0, log_batches=((0, 4),), high_watermark=5)
    r = asys.ask(a, m.ShareFetchCmd(G, "m1", 1, (q1,), session_node=2), TIMEOUT)
    assert r.error == "NONE" and r.partitions[0].acquired == ((0, 4, 1),)
    assert record(asys, a, 3, 0)[0] == 1 and record(asys, a, 3, 1)[0] == 1  # both ACQUIRED
    # node 2's session closes: its partition's records go back, the other session's stay
    r = asys.ask(a, m.ShareAcknowledgeCmd(G, "m1", -1, (), session_node=2), TIMEOUT)
    assert r.error == "NONE", r
    assert record(asys, a, 3, 1) == (0, 0, "")
    assert record(asys, a, 3, 0) == (1, 1, "m1")
    # the member's own session goes on at its own epoch; node 2's is gone
    assert fetch(asys, a, "m1", 2, [], hw=10, partition=0).error == "NONE"
    assert asys.ask(a, m.ShareFetchCmd(G, "m1", 2, (q1,), session_node=2), TIMEOUT).error == "SHARE_SESSION_NOT_FOUND"


def test_release_on_session_close_decrements_delivery_count_at_the_limit(asys, sqlite_url, frozen):
    """Kafka 4.2 ``SharePartition.releaseAcquiredRecordsForCompleteBatch`` /
    ``...ForPerOffsetBatch`` release with ``DeliveryCountOps.DECREASE``; ``InFlightState.tryUpdateState``
    then skips the delivery-limit archive check: a record acquired for the last allowed time and
    released by a session close becomes AVAILABLE again (delivery count - 1), not ARCHIVED."""
    a = start(asys, sqlite_url, **{"group.share.delivery.count.limit": 2})
    join(asys, a)
    open_session(asys, a)
    fetch(asys, a, "m1", 1, [(0, 4)])
    frozen.tick(31)  # lock expiry: AVAILABLE, delivery count 1 (kept)
    asys.ask(a, m.ShareGroupHeartbeatCmd(G, "m1", 1), TIMEOUT)
    assert record(asys, a, 0) == (0, 1, "")
    r = fetch(asys, a, "m1", 2, [(0, 4)])
    assert r.partitions[0].acquired == ((0, 4, 2),)  # the last allowed delivery
    r = asys.ask(a, m.ShareFetchCmd(G, "m1", -1, ()), TIMEOUT)  # FINAL epoch: close the session
    assert r.error == "NONE"
    assert record(asys, a, 0) == (0, 1, "")  # AVAILABLE with delivery count 1, not ARCHIVED
    # the same through a leave (epoch -1) followed by the final acknowledgement, as clients close
    open_session(asys, a)
    r = fetch(asys, a, "m1", 1, [(0, 4)])
    assert r.partitions[0].acquired == ((0, 4, 2),)
    assert asys.ask(a, m.ShareGroupHeartbeatCmd(G, "m1", -1), TIMEOUT).error == "NONE"
    assert asys.ask(a, m.ShareAcknowledgeCmd(G, "m1", -1, ()), TIMEOUT).error == "NONE"
    assert record(asys, a, 0) == (0, 1, "")


def _appends(asys, a) -> int:
    return asys.ask(a, StatusRequest(), TIMEOUT).counts["appends"]


def _tail_types(url: str, n: int) -> list[str]:
    recs = open_event_log(url).read_stream(stream_id_for(G))
    return [type(decode_recorded(r)).__name__ for r in recs[-n:]]


def test_leave_with_an_open_share_session_keeps_it_for_the_final_acknowledgement(asys, sqlite_url, frozen):
    """Kafka keeps share sessions apart from group membership: librdkafka sends the leave heartbeat
    and then its final ShareAcknowledge (epoch -1) with the last acknowledgements. The leave only
    fences; the final acknowledgement is applied and the remaining records released."""
    a = start(asys, sqlite_url)
    join(asys, a)
    open_session(asys, a)
    fetch(asys, a, "m1", 1, [(0, 9)])
    assert asys.ask(a, m.ShareGroupHeartbeatCmd(G, "m1", -1), TIMEOUT).error == "NONE"
    assert "MemberRecordsReleased" not in _tail_types(sqlite_url, 3)
    assert record(asys, a, 0) == (1, 1, "m1")  # still ACQUIRED by m1
    r = asys.ask(a, m.ShareAcknowledgeCmd(G, "m1", -1, (m.ShareAcknowledgePartition(T, 0, ((0, 4, (1,)),)),)), TIMEOUT)
    assert r.error == "NONE"
    assert record(asys, a, 3) == (2, 1, "")  # ACCEPTed by the final acknowledgement
    assert record(asys, a, 7) == (0, 0, "")  # released at the close (delivery count decreased)
    assert asys.ask(a, StatusRequest(), TIMEOUT).counts["sessions"] == 0


def test_leave_with_no_share_session_releases_in_the_same_append(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url)
    join(asys, a)
    open_session(asys, a)
    fetch(asys, a, "m1", 1, [(0, 9)])
    r = asys.ask(a, m.ShareAcknowledgeCmd(G, "m1", -1, ()), TIMEOUT)  # the share session closes first
    assert r.error == "NONE" and record(asys, a, 0) == (0, 0, "")
    before = _appends(asys, a)
    assert asys.ask(a, m.ShareGroupHeartbeatCmd(G, "m1", -1), TIMEOUT).error == "NONE"
    assert _appends(asys, a) == before + 1
    assert _tail_types(sqlite_url, 3) == ["MemberFenced", "SubscriptionMetadataUpdated", "GroupEpochBumped"]


def test_session_timeout_fences_and_releases_in_one_atomic_append(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url, **{"group.share.record.lock.duration.ms": 60000})
    join(asys, a, "m1")
    join(asys, a, "m2")
    open_session(asys, a, "m1")
    fetch(asys, a, "m1", 1, [(0, 9)])
    before = _appends(asys, a)
    frozen.tick(46)
    asys.ask(a, m.DescribeShareGroup(G), TIMEOUT)  # everything due is processed first
    assert _appends(asys, a) == before + 1
    types = _tail_types(sqlite_url, 8)
    assert types.count("MemberFenced") == 2 and types[-1] == "MemberRecordsReleased"
    assert asys.ask(a, StatusRequest(), TIMEOUT).counts["sessions"] == 0


def test_alter_group_configs(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url)
    r = asys.ask(a, m.AlterGroupConfigs(G, {"share.heartbeat.interval.ms": "100"}), TIMEOUT)
    assert r.error == "INVALID_CONFIG" and "group.share.min.heartbeat.interval.ms" in r.message
    r = asys.ask(a, m.AlterGroupConfigs(G, {"share.heartbeat.interval.ms": "10000", "share.auto.offset.reset": "earliest"}), TIMEOUT)
    assert r.error == "NONE" and r.configs["share.heartbeat.interval.ms"] == "10000"
    assert join(asys, a).heartbeat_interval_ms == 10000
    p = open_session(asys, a, hw=50, lso=7)
    assert p.start_offset == 7 and p.refetch_from == 7  # earliest
    desc = asys.ask(a, m.DescribeGroupConfigs(G), TIMEOUT)
    assert desc.configs["share.auto.offset.reset"] == "earliest" and "share.heartbeat.interval.ms" in desc.overrides
    r = asys.ask(a, m.AlterGroupConfigs(G, {"share.heartbeat.interval.ms": None}), TIMEOUT)
    assert "share.heartbeat.interval.ms" not in r.configs
    r = asys.ask(a, m.AlterGroupConfigs(G, {"share.record.lock.duration.ms": "20000"}, validate_only=True), TIMEOUT)
    assert r.error == "NONE" and "share.record.lock.duration.ms" not in asys.ask(a, m.DescribeGroupConfigs(G), TIMEOUT).overrides


def test_auto_offset_reset_by_duration_asks_for_the_offset(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url)
    asys.ask(a, m.AlterGroupConfigs(G, {"share.auto.offset.reset": "by_duration:PT1H"}), TIMEOUT)
    join(asys, a)
    p = open_session(asys, a, hw=1000)
    assert p.reset_timestamp_ms == 1767225600000 - 3_600_000 and p.acquired == ()
    r = asys.ask(a, m.ShareFetchCmd(G, "m1", 1, (m.ShareFetchPartition(T, 0, high_watermark=1000, reset_offset=400),)), TIMEOUT)
    assert r.partitions[0].start_offset == 400


def test_delete_share_group_state(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url)
    assert asys.ask(a, m.DeleteShareGroupState(G), TIMEOUT).error == "GROUP_ID_NOT_FOUND"
    join(asys, a)
    open_session(asys, a, hw=10)
    assert asys.ask(a, m.DeleteShareGroupState(G), TIMEOUT).error == "NON_EMPTY_GROUP"
    asys.ask(a, m.ShareGroupHeartbeatCmd(G, "m1", -1), TIMEOUT)
    r = asys.ask(a, m.DeleteShareGroupState(G, ((T, 0),)), TIMEOUT)
    assert r.error == "NONE"
    assert asys.ask(a, m.DescribeShareGroupOffsets(G, ((T, 0),)), TIMEOUT).partitions[0].start_offset == -1
    assert asys.ask(a, m.DeleteShareGroupState(G), TIMEOUT).error == "NONE"
    # retired until the controller stops it: a join must not re-create the group in this actor
    assert isinstance(asys.ask(a, m.ShareGroupHeartbeatCmd(G, "m2", 0, subscribed_topic_names=("foo",), topics={"foo": (T, 1)}), TIMEOUT), NotReady)
    assert isinstance(asys.ask(a, m.DescribeShareGroup(G), TIMEOUT), NotReady)
    # the group recovered from its stream (a new actor's view) does not exist
    assert isinstance(asys.ask(a, Configure(cfg(sqlite_url), G), TIMEOUT), Configured)
    assert asys.ask(a, m.DescribeShareGroup(G), TIMEOUT).error == "GROUP_ID_NOT_FOUND"


def _busy_group(asys, a):
    join(asys, a, "m1", parts=2)
    join(asys, a, "m2", parts=2)
    open_session(asys, a, "m1", hw=0)
    open_session(asys, a, "m2", hw=0)
    fetch(asys, a, "m1", 1, [(0, 9), (10, 19)], max_records=5)
    fetch(asys, a, "m2", 1, [(20, 29)])
    asys.ask(a, m.ShareAcknowledgeCmd(G, "m1", 2, (m.ShareAcknowledgePartition(T, 0, ((0, 4, (1,)), (5, 9, (2, 3, 1, 0, 2)))),)), TIMEOUT)
    asys.ask(a, m.AlterGroupConfigs(G, {"share.session.timeout.ms": "50000"}), TIMEOUT)


def test_state_survives_restart_of_the_actor_system(sqlite_url, frozen):
    s1 = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        a = start(s1, sqlite_url)
        _busy_group(s1, a)
        before = state(s1, a)
    finally:
        s1.shutdown()
    s2 = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        b = s2.createActor(ShareGroupActor)
        conf = s2.ask(b, Configure(cfg(sqlite_url), G), TIMEOUT)
        assert conf.events_replayed > 0  # no snapshot below the default cadence: a full replay
        after = state(s2, b)
        assert after.stream_version == before.stream_version
        assert after.state == before.state
        # and it keeps working: the released offsets are re-acquired with delivery count 2
        open_session(s2, b, "m1", hw=30)
        r = fetch(s2, b, "m1", 1, [(5, 9)], hw=30)
        assert r.partitions[0].acquired[0][2] == 2
    finally:
        s2.shutdown()


def _busy_group_in_own_system(sqlite_url):
    """Run :func:`_busy_group` (snapshots every 4 events) in a system of its own, shut it down,
    and return the group's final state dump."""
    s1 = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        a = start(s1, sqlite_url, **{"shoal.share.group.snapshot.every.events": 4})
        _busy_group(s1, a)
        return state(s1, a)
    finally:
        s1.shutdown()


def _recover_in_new_system(sqlite_url):
    """Start the group's actor in a fresh actor system on the same log; return
    ``(events replayed at Configure, recovered state dump)``."""
    system = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
    try:
        b = system.createActor(ShareGroupActor)
        conf = system.ask(b, Configure(cfg(sqlite_url), G), TIMEOUT)
        return conf.events_replayed, state(system, b)
    finally:
        system.shutdown()


def test_snapshot_plus_tail_recovery_equals_full_replay(sqlite_url, frozen):
    before = _busy_group_in_own_system(sqlite_url)
    elog = open_event_log(sqlite_url)
    snap = elog.load_snapshot(stream_id_for(G))
    assert snap is not None and 0 < snap.stream_version <= before.stream_version
    replayed, after = _recover_in_new_system(sqlite_url)
    assert replayed == before.stream_version - snap.stream_version
    assert after.state == before.state
    # a corrupt snapshot is ignored: full replay gives the same state
    elog.save_snapshot(stream_id_for(G), snap.stream_version, b"not a pickle")
    replayed, after = _recover_in_new_system(sqlite_url)
    assert replayed == before.stream_version
    assert after.state == before.state


def test_snapshot_is_versioned_plain_json_and_an_unknown_format_means_full_replay(sqlite_url, frozen):
    """Snapshots are a cache of the fold in a structured, versioned encoding (no pickle): readable
    without Shoal's classes, and ignored (full replay) when their format is unknown."""
    before = _busy_group_in_own_system(sqlite_url)
    elog = open_event_log(sqlite_url)
    snap = elog.load_snapshot(stream_id_for(G))
    assert snap is not None
    doc = json.loads(snap.state)  # plain JSON, no Shoal classes needed
    assert doc["format"] == SNAPSHOT_FORMAT == 2 and doc["group_id"] == G
    assert sorted(x["member_id"] for x in doc["membership"]["members"]) == ["m1", "m2"]
    assert [(p[1], p[2]) for p in doc["partitions"]] == [(T, 0)]
    # the snapshot decodes to exactly the fold of the events up to its version
    folded = ShareGroupState(G, BrokerShareConfig())
    for rec in elog.read_stream(stream_id_for(G), 1, snap.stream_version):
        folded.apply(decode_recorded(rec))
    assert ShareGroupState.loads(snap.state, G, BrokerShareConfig()).to_dict() == folded.to_dict()
    with pytest.raises(ValueError):
        ShareGroupState.loads(snap.state, "another-group", BrokerShareConfig())
    with pytest.raises(ValueError):  # a format-1 pickle is no longer read
        ShareGroupState.loads(pickle.dumps({"format": 1}), G, BrokerShareConfig())
    doc["format"] = SNAPSHOT_FORMAT + 1
    elog.save_snapshot(stream_id_for(G), snap.stream_version, json.dumps(doc).encode())
    replayed, after = _recover_in_new_system(sqlite_url)
    assert replayed == before.stream_version  # unknown format: full replay
    assert after.state == before.state


def test_passivation_after_idle_time_and_rehydration(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url, **{"shoal.share.group.passivate.ms": 1000})
    join(asys, a)
    open_session(asys, a, hw=0)
    fetch(asys, a, "m1", 1, [(0, 9)])
    asys.ask(a, m.ShareFetchCmd(G, "m1", -1, ()), TIMEOUT)  # close the session
    assert asys.ask(a, m.ShareGroupHeartbeatCmd(G, "m1", -1), TIMEOUT).error == "NONE"  # and leave
    before = state(asys, a)
    frozen.tick(2)
    st = asys.ask(a, StatusRequest(), TIMEOUT)  # delivers the idle wakeup first: snapshot + exit
    assert st.counts["wakeups"] == 1 and not st.ready
    assert asys.ask(a, m.DescribeShareGroup(G), 0.5) is None  # the actor is gone
    elog = open_event_log(sqlite_url)
    assert elog.load_snapshot(stream_id_for(G)).stream_version == before.stream_version
    b = asys.createActor(ShareGroupActor)
    conf = asys.ask(b, Configure(cfg(sqlite_url, **{"shoal.share.group.passivate.ms": 1000}), G), TIMEOUT)
    assert conf.events_replayed == 0  # rehydrated from the passivation snapshot alone
    assert state(asys, b).state == before.state


def test_no_passivation_while_a_share_session_is_open(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url, **{"shoal.share.group.passivate.ms": 1000})
    join(asys, a)
    open_session(asys, a, hw=0)
    frozen.tick(2)
    st = asys.ask(a, StatusRequest(), TIMEOUT)
    assert st.ready and st.counts["sessions"] == 1


def test_no_passivation_while_a_member_session_timer_runs(asys, sqlite_url, frozen):
    """A group with members is not idle: their session timers must fire (and fence a member that
    stopped heartbeating) before the group may passivate; a passivated group's timers do not run."""
    a = start(asys, sqlite_url, **{"shoal.share.group.passivate.ms": 1000})
    join(asys, a)
    frozen.tick(2)
    st = asys.ask(a, StatusRequest(), TIMEOUT)  # the idle wakeup is due: the member's timer is not
    assert st.ready and st.counts["members"] == 1
    frozen.tick(44)
    st = asys.ask(a, StatusRequest(), TIMEOUT)  # the member's session expires: fenced, then idle
    assert not st.ready
    elog = open_event_log(sqlite_url)
    types = [type(decode_recorded(r)).__name__ for r in elog.read_stream(stream_id_for(G))]
    assert "MemberFenced" in types
    assert elog.load_snapshot(stream_id_for(G)).stream_version == len(types)  # passivation snapshot


def test_unknown_messages_exit_request_and_dead_letters(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url)
    join(asys, a)
    r = asys.ask(a, "what is this", TIMEOUT)
    assert isinstance(r, Failure) and r.error == "INVALID_REQUEST"
    assert asys.ask(a, StatusRequest(), TIMEOUT).ready  # still alive
    asys.tell(a, DeadEnvelope(a, m.DescribeShareGroup(G)))
    asys.tell(a, PoisonMessage(m.DescribeShareGroup(G), "boom"))
    assert asys.ask(a, StatusRequest(), TIMEOUT).ready  # still alive
    asys.tell(a, ActorExitRequest())
    elog = open_event_log(sqlite_url)
    snap = elog.load_snapshot(stream_id_for(G))
    assert snap is not None and snap.stream_version == elog.stream_version(stream_id_for(G))


def test_two_actors_for_one_group_cannot_both_write(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url)
    b = start(asys, sqlite_url)
    join(asys, a, "m1")
    r = asys.ask(b, m.ShareGroupHeartbeatCmd(G, "m2", 0, subscribed_topic_names=("foo",), topics={"foo": (T, 1)}), TIMEOUT)
    assert r.error == "NOT_COORDINATOR"
    # b reloaded the stream after the conflict: the next attempt succeeds on fresh state
    r = asys.ask(b, m.ShareGroupHeartbeatCmd(G, "m2", 0, subscribed_topic_names=("foo",), topics={"foo": (T, 1)}), TIMEOUT)
    assert r.error == "NONE" and r.member_epoch == 2


def test_through_the_journal_actor(asys, sqlite_url, frozen):
    j = asys.createActor(JournalActor)
    asys.ask(j, Configure(cfg(sqlite_url, **{"event.log.journal.max.batch": 1}), "journal"), TIMEOUT)
    a = asys.createActor(ShareGroupActor)
    assert isinstance(asys.ask(a, Configure(cfg(sqlite_url, **{"shoal.share.group.append.path": "journal"}), G, j), TIMEOUT), Configured)
    join(asys, a)
    open_session(asys, a, hw=0)
    r = fetch(asys, a, "m1", 1, [(0, 9)])
    assert r.partitions[0].acquired == ((0, 9, 1),)
    elog = open_event_log(sqlite_url)
    types = [decode_recorded(e).event_type for e in elog.read_stream(stream_id_for(G))]
    assert "share.ShareFetchProcessed" in types


def test_incremental_session_fetches_partitions_not_named_in_the_request(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url)
    join(asys, a, parts=2)
    r = asys.ask(a, m.ShareFetchCmd(G, "m1", 0, (m.ShareFetchPartition(T, 0, high_watermark=0),
                                                 m.ShareFetchPartition(T, 1, high_watermark=0))), TIMEOUT)
    assert {(p.partition, p.refetch_from) for p in r.partitions} == {(0, 0), (1, 0)}
    # epoch 1 names only partition 0: partition 1 is still in the session and reported
    r = fetch(asys, a, "m1", 1, [(0, 9)])
    by = {p.partition: p for p in r.partitions}
    assert by[0].acquired == ((0, 9, 1),)
    assert by[1].refetch_from == 0 and by[1].acquired == ()
    # forgetting partition 1 removes it from the session
    r = asys.ask(a, m.ShareFetchCmd(G, "m1", 2, (), forgotten=((T, 1),)), TIMEOUT)
    assert [p.partition for p in r.partitions] == [0]


def test_renew_extends_the_acquisition_lock(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url)
    join(asys, a)
    open_session(asys, a)
    fetch(asys, a, "m1", 1, [(0, 9)])
    frozen.tick(20)
    r = asys.ask(a, m.ShareAcknowledgeCmd(G, "m1", 2, (m.ShareAcknowledgePartition(T, 0, ((0, 9, (4,)),)),)), TIMEOUT)
    assert r.partitions[0].error == "NONE"
    frozen.tick(15)  # 35 s after the acquisition, 15 s after the renewal
    asys.ask(a, m.ShareGroupHeartbeatCmd(G, "m1", 1), TIMEOUT)  # keep the member alive
    assert record(asys, a, 0) == (1, 1, "m1")
    frozen.tick(16)  # the renewed lock (20 s + 30 s) has expired; the member has not
    asys.ask(a, StatusRequest(), TIMEOUT)
    assert record(asys, a, 0) == (0, 1, "")
    assert asys.ask(a, m.DescribeShareGroup(G), TIMEOUT).group_state == "Stable"


def test_stale_wakeups_are_ignored(asys, sqlite_url, frozen):
    from datetime import timedelta

    from thespian.actors import WakeupMessage

    a = start(asys, sqlite_url)
    join(asys, a)
    open_session(asys, a)
    fetch(asys, a, "m1", 1, [(0, 9)])
    before = state(asys, a)
    frozen.tick(31)  # the lock has expired, but only the real timer may act on it ...
    asys.tell(a, WakeupMessage(timedelta(seconds=1), ("share-group-timer", 12345)))
    st = asys.ask(a, StatusRequest(), TIMEOUT)
    assert st.counts["stale_wakeups"] >= 1
    # ... and the real one (or the next request) did: the records are available again
    assert record(asys, a, 0) == (0, 1, "")
    assert state(asys, a).stream_version == before.stream_version + 1
    asys.tell(a, WakeupMessage(timedelta(seconds=1), "not ours"))
    assert asys.ask(a, StatusRequest(), TIMEOUT).ready


def test_share_fetch_v2_record_limit_mode_and_renew_only_fetch(asys, sqlite_url, frozen):
    a = start(asys, sqlite_url)
    join(asys, a)
    open_session(asys, a)
    # batch-optimized (v1 and v2 mode 0): the soft limit ends at the log batch boundary
    r = fetch(asys, a, "m1", 1, [(0, 99)], max_records=10)
    assert r.partitions[0].acquired == ((0, 99, 1),)
    # record-limit (v2 mode 1): exactly max_records new records
    p = m.ShareFetchPartition(T, 0, fetch_offset=100, log_batches=((100, 199),), high_watermark=200)
    r = asys.ask(a, m.ShareFetchCmd(G, "m1", 2, (p,), 10, share_acquire_mode=1), TIMEOUT)
    assert r.partitions[0].acquired == ((100, 109, 1),)
    assert r.partitions[0].next_fetch_offset == 110
    # a renew-only ShareFetch processes the RENEW and acquires nothing
    p = m.ShareFetchPartition(T, 0, acknowledgement_batches=((0, 99, (4,)),), fetch_offset=110,
                              log_batches=((110, 199),), high_watermark=200)
    r = asys.ask(a, m.ShareFetchCmd(G, "m1", 3, (p,), 500, is_renew_ack=True), TIMEOUT)
    assert r.partitions[0].acknowledge_error == "NONE" and r.partitions[0].acquired == ()


@pytest.mark.parametrize("first,second", [("m1", "m2"), ("m2", "m1")])
def test_members_fenced_together_record_outcomes_that_fold_to_the_live_state(asys, sqlite_url, frozen, first, second):
    """Two members expire in the same timer step, so their releases go into one append (each
    decided on the state the previous one left). The outcomes recorded in the stream, folded last
    writer wins as the SQL projections do, give exactly the actor's live share-partition.
    ``first`` holds 0-9 and ``second`` 10-14 when the log start offset moves to 15: fencing
    archives 0-14, and the cache evicts both batches. Whichever release comes second must be
    decided on the state the first left: decided on the state before it, its eviction would stop
    at the other member's batch (still acquired there) and the fold would keep archived records
    the live cache no longer holds."""
    from actors.share.partition import SharePartition
    from events import share as ev
    from tests.share.test_partition_properties import fold_outcomes

    a = start(asys, sqlite_url)
    assert asys.ask(a, m.AlterGroupConfigs(G, {"share.record.lock.duration.ms": "60000"}), TIMEOUT).error == "NONE"
    join(asys, a, "m1")
    join(asys, a, "m2")
    r1 = asys.ask(a, m.ShareFetchCmd(G, first, 0, (m.ShareFetchPartition(T, 0, log_start_offset=0, high_watermark=0),)), TIMEOUT)
    r2 = asys.ask(a, m.ShareFetchCmd(G, second, 0, (m.ShareFetchPartition(T, 0, log_start_offset=0, high_watermark=0),)), TIMEOUT)
    assert r1.error == r2.error == "NONE"
    assert fetch(asys, a, first, 1, [(0, 9)]).partitions[0].acquired == ((0, 9, 1),)
    assert fetch(asys, a, second, 1, [(10, 14)]).partitions[0].acquired == ((10, 14, 1),)
    frozen.tick(30)
    join(asys, a, "m3")  # m3 stays alive; its first fetch sees the log start offset at 15
    r3 = asys.ask(a, m.ShareFetchCmd(G, "m3", 0, (m.ShareFetchPartition(T, 0, log_start_offset=15, high_watermark=20),)), TIMEOUT)
    assert r3.error == "NONE"
    frozen.tick(16)  # m1 and m2: 46 s without a heartbeat
    assert asys.ask(a, StatusRequest(), TIMEOUT).counts["members"] == 1
    dump = state(asys, a)
    sp = SharePartition.from_snapshot(dump.state["partitions"][f"{T}:0"])
    live = {o: (int(s[0]), s[1], s[2] or None, s[3]) for b in sp.cached_batches()
            for o in range(b.first_offset, b.last_offset + 1) for s in [sp.record_state(o)]}
    events = [e for e in (decode_recorded(r) for r in open_event_log(sqlite_url).read_stream(stream_id_for(G)))
              if isinstance(e, ev.SHARE_PARTITION_EVENTS)]
    start_offset, end_offset, folded = fold_outcomes(events)
    assert (start_offset, end_offset) == (sp.start_offset, sp.end_offset)
    assert folded == live
    assert min(live, default=15) >= 15 and sp.start_offset == 15  # 0-14 archived and evicted
