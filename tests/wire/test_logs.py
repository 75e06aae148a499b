"""LogRegistry: the listener's data plane over real partition logs — Kafka error names for bad
Produce input, reads, ListOffsets, long-poll wakeups, topic deletion."""

from __future__ import annotations

import threading
import time

import pytest

from store.record_batch import build_batch, iter_batches
from wire.logs import LogRegistry


@pytest.fixture()
def reg(tmp_path):
    r = LogRegistry(str(tmp_path / "logs"), lambda topic: {"max.message.bytes": "2000"} if topic == "small" else {})
    yield r
    r.close()


def test_append_assigns_offsets_and_read_returns_whole_batches(reg):
    assert reg.append("t", 0, build_batch([(None, b"a"), (None, b"b")])).base_offset == 0
    assert reg.append("t", 0, build_batch([(None, b"c")])).base_offset == 2
    r = reg.read("t", 0, 1, 1 << 20)
    assert r.error is None and r.high_watermark == 3
    assert [(h.base_offset, h.last_offset) for h in iter_batches(r.records)] == [(0, 1), (2, 2)]
    assert reg.batch_bounds("t", 0, 2, 1 << 20)[0] == [(2, 2)]


def test_bad_produce_input_maps_to_kafka_errors(reg):
    batch = bytearray(build_batch([(None, b"x" * 10)]))
    batch[-1] ^= 1
    assert reg.append("t", 0, bytes(batch)).error == "CORRUPT_MESSAGE"
    assert reg.append("t", 0, b"").error == "INVALID_RECORD"
    assert reg.append("t", 0, build_batch([(None, b"x")])[:-3]).error == "CORRUPT_MESSAGE"  # truncated
    assert reg.append("small", 0, build_batch([(None, b"y" * 5000)])).error == "MESSAGE_TOO_LARGE"
    assert reg.read("t", 0, 0, 100).high_watermark == 0  # nothing was appended


def test_out_of_range_read_and_list_offsets(reg):
    reg.append("t", 0, build_batch([(None, b"a"), (None, b"b")], base_timestamp=1000))
    assert reg.read("t", 0, 5, 100).error == "OFFSET_OUT_OF_RANGE"
    assert reg.list_offset("t", 0, -2)[:2] == (None, 0)
    assert reg.list_offset("t", 0, -1)[:2] == (None, 2)
    assert reg.list_offset("t", 0, 1001)[:2] == (None, 1)
    assert reg.list_offset("t", 0, 99999)[:2] == (None, -1)
    assert reg.list_offset("t", 0, -5)[:2] == (None, -1)  # no tiering on this topic


def test_wait_wakes_on_append(reg):
    reg.open("t", 0)
    started = threading.Event()

    woke: list[bool] = []

    def waiter():
        seen = reg.data_version([("t", 0)])
        started.set()
        reg.wait(600_000, since=seen)  # only an append can end this wait within the test
        woke.append(True)

    th = threading.Thread(target=waiter, daemon=True)
    th.start()
    started.wait(5)
    reg.append("t", 0, build_batch([(None, b"a")]))  # after the version was taken: it ends the wait
    th.join(10)
    assert not th.is_alive() and woke == [True]


def test_drop_topic_deletes_logs_not_opened_since_start(tmp_path):
    a = LogRegistry(str(tmp_path / "logs"))
    a.append("gone", 0, build_batch([(None, b"a")]))
    a.append("gone-1", 0, build_batch([(None, b"b")]))  # a different topic whose name extends it
    a.close()
    b = LogRegistry(str(tmp_path / "logs"))
    b.drop_topic("gone")
    assert not (tmp_path / "logs" / "gone-0").exists()
    assert b.read("gone-1", 0, 0, 100).high_watermark == 1
    b.close()


def test_long_poll_wait_sees_an_append_made_before_it_started(reg):
    """The long poll's race: the listener checks the high watermark, a producer appends, then the
    listener waits. With the version taken before the check the wait returns at once; without it,
    it would sleep its whole timeout with the record waiting (one record, then silence)."""
    seen = reg.data_version([("t", 0)])
    reg.append("t", 0, build_batch([(None, b"late")]))
    t0 = time.monotonic()
    reg.wait(2000, since=seen)
    assert time.monotonic() - t0 < 1.0
    t0 = time.monotonic()
    reg.wait(200, since=reg.data_version([("t", 0)]))  # no append after the call: the whole timeout
    assert time.monotonic() - t0 >= 0.19


def test_a_long_poll_on_a_partition_is_woken_by_its_appends_only(reg):
    """Kafka's DelayedFetch is keyed by partition: a Fetch waiting on t-0 stays parked through
    appends to t-1 (each would otherwise wake it to re-read everything and park again) and ends
    with an append to t-0. A version taken before an append to the partition ends the wait at
    once (the long poll's race, keyed)."""
    import threading

    reg.append("t", 0, build_batch([(None, b"a")]))
    reg.append("t", 1, build_batch([(None, b"a")]))
    ended: list[str] = []

    def waiter(name: str, partition: int) -> threading.Thread:
        seen = reg.data_version([("t", partition)])
        th = threading.Thread(target=lambda: (reg.wait(20_000, since=seen), ended.append(name)))
        th.start()
        return th

    on0, on1 = waiter("t-0", 0), waiter("t-1", 1)
    reg.append("t", 1, build_batch([(None, b"b")]))
    on1.join(10)
    assert ended == ["t-1"]
    on0.join(0.3)
    assert on0.is_alive() and ended == ["t-1"], "an append to t-1 woke the long poll on t-0"
    reg.append("t", 0, build_batch([(None, b"b")]))
    on0.join(10)
    assert ended == ["t-1", "t-0"]
    seen = reg.data_version([("t", 0)])
    reg.append("t", 0, build_batch([(None, b"c")]))
    t0 = time.monotonic()
    reg.wait(20_000, since=seen)
    assert time.monotonic() - t0 < 10
