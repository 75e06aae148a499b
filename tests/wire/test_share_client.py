"""ShareClient (the listener's side of ShareFetch/ShareAcknowledge) against a recording host and
real partition logs: one actor message per request (plus the purgatory's continuations), the
batch boundaries it sends, the session mirror, refetch handling and the bytes it returns for
acquired ranges."""

from __future__ import annotations

import uuid

import pytest

from actors.share import messages as m
from store.record_batch import build_batch, iter_batches, iter_records
from wire.backend import AckBatch, SharePartitionAck, TopicInfo
from wire.logs import LogRegistry
from wire.share_client import ShareClient

TID = uuid.UUID("11111111-2222-3333-4444-555555555555")


class FakeController:
    def topics(self, names=None):
        return [TopicInfo("t", TID, 2)]

    cached_topics = topics

    def names_by_id(self):
        return {str(TID): "t"}

    def partition_count(self, topic):
        return 2 if topic == "t" else 0

    def admit_share_group(self, group, create=True):
        return None

    def share_groups(self):
        return []


class RecordingGateway:
    """A stand-in :class:`actors.share.host.ShareGroupHost` whose group answers each request with
    ``reply(msg)``; records the messages."""

    def __init__(self, reply):
        self.reply = reply
        self.sent: list = []
        self.on_records_freed = lambda group, parts: None

    def ask(self, group, msg, timeout_s=None):
        self.sent.append(msg)
        return self.reply(msg)

    def running(self, group):
        return True

    def start_group(self, group, timeout_s=None):
        return None


@pytest.fixture()
def logs(tmp_path):
    reg = LogRegistry(str(tmp_path / "logs"))
    for base in range(0, 30, 10):  # three batches of 10 records in partition 0
        r = reg.append("t", 0, build_batch([(None, b"r%d" % (base + i)) for i in range(10)]))
        assert r.error is None and r.base_offset == base
    yield reg
    reg.close()


def _acquire_all(msg):
    """A stand-in actor decision: acquire every sent batch of partition 0 with delivery count 1."""
    out = []
    for p in msg.partitions:
        acq = tuple((a, b, 1) for a, b in (p.log_batches or ()))
        nxt = acq[-1][1] + 1 if acq else (p.fetch_offset if p.fetch_offset >= 0 else 0)
        out.append(m.ShareFetchPartitionResult(p.topic_id, p.partition, acquired=acq, next_fetch_offset=nxt))
    return m.ShareFetchReply("NONE", "", tuple(out))


def test_one_share_fetch_is_one_actor_message_with_batch_boundaries_and_bytes(logs):
    gw = RecordingGateway(_acquire_all)
    sc = ShareClient(gw, FakeController(), logs, {})
    r = sc.fetch("g", "m1", 0, [(TID, 0), (TID, 1)], [], [], 500, 0)
    assert len(gw.sent) == 1
    [cmd] = gw.sent
    assert isinstance(cmd, m.ShareFetchCmd) and cmd.share_session_epoch == 0
    by_p = {p.partition: p for p in cmd.partitions}
    assert by_p[0].log_batches == ((0, 9), (10, 19), (20, 29)) and by_p[0].high_watermark == 30
    assert by_p[1].log_batches == ()  # empty partition: nothing to read
    p0 = next(p for p in r.partitions if p.partition == 0)
    assert [(a.first_offset, a.last_offset) for a in p0.acquired] == [(0, 9), (10, 19), (20, 29)]
    assert [(h.base_offset, h.last_offset) for h in iter_batches(p0.records)] == [(0, 9), (10, 19), (20, 29)]


def test_incremental_session_keeps_sending_every_session_partition(logs):
    gw = RecordingGateway(_acquire_all)
    sc = ShareClient(gw, FakeController(), logs, {})
    sc.fetch("g", "m1", 0, [(TID, 0), (TID, 1)], [], [], 500, 0)
    sc.fetch("g", "m1", 1, [], [(TID, 1)], [], 500, 0)  # incremental: no partitions named, 1 forgotten
    cmd = gw.sent[-1]
    assert [p.partition for p in cmd.partitions] == [0]
    assert cmd.forgotten == ((str(TID), 1),)
    assert cmd.partitions[0].fetch_offset == 30 and cmd.partitions[0].log_batches == ()


def test_only_acquired_batches_are_returned_and_acks_travel_with_the_fetch(logs):
    def acquire_middle(msg):
        p = msg.partitions[0]
        return m.ShareFetchReply("NONE", "", (m.ShareFetchPartitionResult(p.topic_id, 0, acquired=((12, 15, 2),), next_fetch_offset=30),))

    gw = RecordingGateway(acquire_middle)
    sc = ShareClient(gw, FakeController(), logs, {})
    ack = SharePartitionAck(TID, 0, (AckBatch(0, 9, (1,)),))
    r = sc.fetch("g", "m1", 0, [(TID, 0)], [], [ack], 500, 0)
    assert gw.sent[0].partitions[0].acknowledgement_batches == ((0, 9, (1,)),)
    [p0] = r.partitions
    assert [(a.first_offset, a.last_offset, a.delivery_count) for a in p0.acquired] == [(12, 15, 2)]
    assert [(h.base_offset, h.last_offset) for h in iter_batches(p0.records)] == [(10, 19)]


@pytest.fixture()
def big_logs(tmp_path):
    """Partition 0 of ``t`` with three batches of 10 records of 2 KB (offsets 0-9, 10-19, 20-29:
    large enough to be cut, ``_CUT_MIN_BATCH_BYTES``)."""
    reg = LogRegistry(str(tmp_path / "big-logs"))
    for base in range(0, 30, 10):
        assert reg.append("t", 0, build_batch([(None, b"r%d-" % (base + i) + b"x" * 2048) for i in range(10)])).error is None
    yield reg
    reg.close()


def _acquiring(*acquired):
    """A stand-in actor decision that acquires ``acquired`` ((first, last, delivery count), …) of partition 0."""
    def reply(msg):
        p = msg.partitions[0]
        return m.ShareFetchReply("NONE", "", (m.ShareFetchPartitionResult(p.topic_id, 0, acquired=acquired, next_fetch_offset=30),))
    return reply


def _by_base(records: bytes) -> dict[int, bytes]:
    return {h.base_offset: records[h.position : h.position + h.size_in_bytes] for h in iter_batches(records)}


def test_a_batch_mostly_acquired_is_sent_whole_and_one_barely_acquired_carries_its_acquired_records(big_logs):
    sc = ShareClient(RecordingGateway(_acquiring((0, 5, 1), (13, 13, 2), (15, 15, 2), (20, 29, 1))), FakeController(), big_logs, {})  # 6, 2, 10 of 10
    [p0] = sc.fetch("g", "m1", 0, [(TID, 0)], [], [], 500, 0).partitions
    log_batches = _by_base(big_logs.get("t", 0).read(0, 1 << 20).records)
    batches = list(iter_batches(p0.records))
    assert [(h.base_offset, h.last_offset, h.records_count) for h in batches] == [(0, 9, 10), (10, 19, 2), (20, 29, 10)]
    sent = _by_base(p0.records)
    assert sent[0] == log_batches[0] and sent[20] == log_batches[20]  # sent as the log holds them
    assert [(r.offset, r.value[:4]) for r in iter_records(sent[10])] == [(13, b"r13-"), (15, b"r15-")]
    assert [r.offset for h in batches for r in iter_records(p0.records, h.position)] == list(range(10)) + [13, 15] + list(range(20, 30))


def test_a_small_batch_goes_whole_however_few_of_its_records_were_acquired(logs):
    sc = ShareClient(RecordingGateway(_acquiring((12, 12, 2))), FakeController(), logs, {})
    [p0] = sc.fetch("g", "m1", 0, [(TID, 0)], [], [], 500, 0).partitions
    assert p0.records == _by_base(logs.get("t", 0).read(0, 1 << 20).records)[10]


def test_a_batch_whose_records_cannot_be_cut_is_sent_whole(tmp_path):
    from store.record_batch import Record

    # the log takes it (a produce does not read the records), but offset 1 is in no record:
    # the deltas are 0, 0, 2, 3, …
    reg = LogRegistry(str(tmp_path / "odd"))
    recs = [Record(offset=0 if i == 1 else i, timestamp=i, key=None, value=b"v" * 2048) for i in range(10)]
    raw = build_batch(recs)
    assert reg.append("t", 0, raw).error is None
    sc = ShareClient(RecordingGateway(_acquiring((1, 1, 1))), FakeController(), reg, {})
    [p0] = sc.fetch("g", "m1", 0, [(TID, 0)], [], [], 500, 0).partitions
    assert p0.records == reg.get("t", 0).read(0, 1 << 20).records  # whole, as Kafka would send it
    reg.close()


def test_record_indexes_are_kept_per_batch_and_bounded_in_bytes():
    from store.record_batch import parse_header
    from wire.share_client import _RECORD_INDEX_OVERHEAD, _RecordIndexes

    a, b = build_batch([(None, b"a" * 100)] * 50, base_offset=0), build_batch([(None, b"b" * 100)] * 50, base_offset=50)
    one = _RECORD_INDEX_OVERHEAD + 8 * 51  # an index of 50 records
    cache = _RecordIndexes(limit=one + 10)  # room for one
    ia = cache.get("t", 0, a, parse_header(a))
    assert cache.get("t", 0, a, parse_header(a)) is ia  # kept
    assert cache.get("t", 1, a, parse_header(a)) is not ia  # another partition's batch at that offset
    ib = cache.get("t", 0, b, parse_header(b))
    assert cache.get("t", 0, b, parse_header(b)) is ib
    assert cache.get("t", 0, a, parse_header(a)) is not ia  # evicted to stay within the limit


def test_refetch_from_moves_the_next_read_without_a_second_ask(logs):
    calls = []

    def refetch(msg):
        calls.append(msg)
        p = msg.partitions[0]
        return m.ShareFetchReply("NONE", "", (m.ShareFetchPartitionResult(p.topic_id, 0, refetch_from=10, next_fetch_offset=10),))

    gw = RecordingGateway(refetch)
    sc = ShareClient(gw, FakeController(), logs, {})
    r = sc.fetch("g", "m1", 0, [(TID, 0)], [], [], 500, 0)
    assert len(calls) == 1 and not r.partitions[0].acquired
    sc.fetch("g", "m1", 1, [], [], [], 500, 0)
    assert calls[-1].partitions[0].fetch_offset == 10
    assert calls[-1].partitions[0].log_batches == ((10, 19), (20, 29))


def test_session_error_is_returned_and_the_mirror_is_not_updated(logs):
    gw = RecordingGateway(lambda msg: m.ShareFetchReply("INVALID_SHARE_SESSION_EPOCH", "bad epoch"))
    sc = ShareClient(gw, FakeController(), logs, {})
    r = sc.fetch("g", "m1", 7, [(TID, 0)], [], [], 500, 0)
    assert r.error == "INVALID_SHARE_SESSION_EPOCH" and not r.partitions
    assert sc._session_parts == {}  # noqa: SLF001


def test_unknown_topic_id_is_answered_by_the_wire_and_not_sent_to_the_actor(logs):
    gw = RecordingGateway(_acquire_all)
    sc = ShareClient(gw, FakeController(), logs, {})
    other = uuid.uuid4()
    r = sc.fetch("g", "m1", 0, [(other, 0), (TID, 5)], [], [], 500, 0)
    assert sorted(p.error for p in r.partitions) == ["UNKNOWN_TOPIC_ID", "UNKNOWN_TOPIC_OR_PARTITION"]
    assert gw.sent[0].partitions == ()


def test_heartbeat_is_one_message_with_the_cached_topic_image(logs):
    """ShareGroupHeartbeat sends the subscribed topics' image from the listener's cache (no
    controller ask) in one message, and maps the assignment back to topic uuids."""

    class CountingController(FakeController):
        asks = 0

        def topics(self, names=None):
            CountingController.asks += 1
            return super().topics(names)

        def cached_topics(self, names=None):
            return [TopicInfo("t", TID, 2)]

    gw = RecordingGateway(lambda msg: m.ShareGroupHeartbeatReply("NONE", "", msg.member_id, 3, 5000, ((str(TID), (0, 1)),)))
    sc = ShareClient(gw, CountingController(), logs, {})
    r = sc.heartbeat("g", "m1", 0, None, ["t"], "client", "host")
    [cmd] = gw.sent
    assert isinstance(cmd, m.ShareGroupHeartbeatCmd) and cmd.topics == {"t": (str(TID), 2)}
    assert cmd.subscribed_topic_names == ("t",)
    assert CountingController.asks == 0
    assert r.error is None and r.member_epoch == 3 and r.assignment == {TID: [0, 1]}


def test_by_duration_reset_timestamp_is_resolved_and_sent_with_the_next_fetch(tmp_path):
    """share.auto.offset.reset=by_duration: the actor asks for a timestamp; the wire resolves it
    with the log's time index and sends the offset as ``reset_offset`` on the next ShareFetch."""
    reg = LogRegistry(str(tmp_path / "logs"))
    reg.append("t", 0, build_batch([(None, b"old")], base_timestamp=1_000))
    reg.append("t", 0, build_batch([(None, b"new")], base_timestamp=5_000))
    replies = [
        lambda msg: m.ShareFetchReply("NONE", "", (m.ShareFetchPartitionResult(str(TID), 0, reset_timestamp_ms=4_000),)),
        _acquire_all,
    ]
    gw = RecordingGateway(lambda msg: replies.pop(0)(msg))
    sc = ShareClient(gw, FakeController(), reg, {})
    sc.fetch("g", "m1", 0, [(TID, 0)], [], [], 500, 0)
    sc.fetch("g", "m1", 1, [], [], [], 500, 0)
    assert gw.sent[0].partitions[0].reset_offset is None
    assert gw.sent[1].partitions[0].reset_offset == 1
    reg.close()


def test_the_long_poll_gives_back_the_request_slot(logs):
    """A ShareFetch waiting for records (Kafka: a DelayedShareFetch in purgatory) holds no
    queued.max.requests slot while it waits (wire.quotas.parked)."""
    from wire.quotas import RequestSlots, hold_slot, release_slot

    gw = RecordingGateway(_acquire_all)
    sc = ShareClient(gw, FakeController(), logs, {})
    sc.fetch("g", "m1", 0, [(TID, 0), (TID, 1)], [], [], 500, 0)  # reads up to the high watermarks
    slots = RequestSlots(1)
    in_flight_while_waiting = []
    real_wait = logs.waits.wait

    def wait(seen, timeout_s, *party):
        in_flight_while_waiting.append(slots.in_flight)
        logs.append("t", 0, build_batch([(None, b"new")]))  # ends the long poll
        return real_wait(seen, timeout_s, *party)

    logs.waits.wait = wait
    assert slots.acquire()
    hold_slot(slots)  # as the listener does once a request's body has arrived
    try:
        r = sc.fetch("g", "m1", 1, [], [], [], 500, 60_000)
    finally:
        still_held = release_slot()
    assert in_flight_while_waiting == [0]
    assert not still_held and slots.in_flight == 0
    assert [(a.first_offset, a.last_offset) for p in r.partitions for a in p.acquired] == [(30, 30)]
