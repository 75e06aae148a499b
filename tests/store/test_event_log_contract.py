"""The event-log contract, run against SQLite (file, WAL) and PostgreSQL alike.

Ported intent of the peer suites (``shared/reference/event-store.md``):
eventsourcing's ``AggregateRecorderTestCase`` / ``ApplicationRecorderTestCase`` /
``NonInterleavingNotificationIDsBaseCase``, Akka/Pekko's ``JournalSpec`` and ``SnapshotStoreSpec``,
EventStoreDB's expected-version and idempotent-append rules, and regressions from Marten #5539
(zero-event append), Eventuous #553 (silent drop) and #222 / commanded #238 (readers and holes).
"""

from __future__ import annotations

import threading
import uuid

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from events import CorruptEventError, new_event
from store.event_log import (
    ANY,
    NO_STREAM,
    AppendRequest,
    ConcurrencyError,
    EventLog,
    events_table,
    open_event_log,
)
from tests.events.sample import Noted


def evs(*ns: int):
    return [new_event(Noted(n)) for n in ns]


def ns(records) -> list[int]:
    return [r.decode().n for r in records]


# ----------------------------------------------------------------------------- appends


def test_append_assigns_versions_and_positions(event_log: EventLog) -> None:
    r1 = event_log.append("a", evs(1, 2), NO_STREAM)
    assert (r1.first_version, r1.last_version, r1.positions) == (1, 2, (1, 2))
    r2 = event_log.append("b", evs(3), NO_STREAM)
    r3 = event_log.append("a", evs(4), 2)
    assert r2.positions == (3,) and r3.positions == (4,) and r3.last_version == 3
    assert event_log.stream_version("a") == 3 and event_log.last_position() == 4
    assert ns(event_log.read_stream("a")) == [1, 2, 4]


def test_recorded_at_comes_from_the_clock(event_log_url: str) -> None:
    log = open_event_log(event_log_url, clock=lambda: 1_700_000_000_123)
    log.append("a", evs(1))
    assert log.read_all()[0].recorded_at_ms == 1_700_000_000_123
    log.close()


def test_recorded_at_never_decreases_along_positions(event_log_url: str) -> None:
    """A clock that reads earlier than the last event's time (stepped back, or read before a
    wait for the write lock) stamps the last event's time, so ``recorded_at_ms ≤ T`` selects a
    prefix of the log; a later clock is taken as it is."""
    times = iter([5_000, 3_000, 3_000, 9_000, 7_000])
    log = open_event_log(event_log_url, clock=lambda: next(times))
    log.append("a", evs(1))
    log.append("b", evs(2, 3))
    log.append_batch([AppendRequest("a", evs(4), 1), AppendRequest("c", evs(5), NO_STREAM)])
    log.append("b", evs(6), ANY)
    log.append("c", evs(7), 1)
    assert [r.recorded_at_ms for r in log.read_all()] == [5_000, 5_000, 5_000, 5_000, 5_000, 9_000, 9_000]
    log.close()


@pytest.mark.parametrize("expected", [NO_STREAM, 0, 1, 5])


def test_conflict_raises_and_writes_nothing(event_log: EventLog, expected: int) -> None:
    event_log.append("a", evs(1, 2), NO_STREAM)
    with pytest.raises(ConcurrencyError) as info:
        event_log.append("a", evs(9, 9, 9), expected)
    assert info.value.actual == 2 and info.value.stream_id == "a"
    assert event_log.last_position() == 2 and ns(event_log.read_stream("a")) == [1, 2]


def test_exact_version_zero_means_no_stream_yet(event_log: EventLog) -> None:
    assert event_log.append("a", evs(1), 0).last_version == 1


def test_any_appends_whatever_the_version(event_log: EventLog) -> None:
    event_log.append("a", evs(1), ANY)
    event_log.append("a", evs(2), ANY)
    assert ns(event_log.read_stream("a")) == [1, 2]


def test_empty_append_is_rejected_and_touches_nothing(event_log: EventLog) -> None:
    """Marten #5539: a zero-event append must not write back any version."""
    event_log.append("a", evs(1), NO_STREAM)
    with pytest.raises(ValueError):
        event_log.append("a", [], 1)
    assert event_log.append("a", evs(2), 1).last_version == 2


def test_bad_expected_version_is_rejected(event_log: EventLog) -> None:
    with pytest.raises(ValueError):
        event_log.append("a", evs(1), -7)
    assert event_log.last_position() == 0


def test_append_batch_is_all_or_nothing(event_log: EventLog) -> None:
    event_log.append("b", evs(1), NO_STREAM)
    with pytest.raises(ConcurrencyError):
        event_log.append_batch([AppendRequest("a", evs(1, 2), NO_STREAM), AppendRequest("b", evs(3), NO_STREAM)])
    assert event_log.read_stream("a") == [] and event_log.last_position() == 1
    results = event_log.append_batch(
        [AppendRequest("a", evs(1, 2), NO_STREAM), AppendRequest("b", evs(3), 1), AppendRequest("a", evs(4), 2)]
    )
    assert [r.positions for r in results] == [(2, 3), (4,), (5,)]
    assert ns(event_log.read_stream("a")) == [1, 2, 4]


def test_append_many_answers_each_request_alone(event_log: EventLog) -> None:
    event_log.append("b", evs(1), NO_STREAM)
    out = event_log.append_many([AppendRequest("a", evs(1), NO_STREAM), AppendRequest("b", evs(2), NO_STREAM), AppendRequest("c", [], ANY)])
    assert out[0].positions == (2,)
    assert isinstance(out[1], ConcurrencyError) and isinstance(out[2], ValueError)
    assert event_log.last_position() == 2


def test_payloads_and_ids_are_stored_exactly(event_log: EventLog) -> None:
    """What goes in comes out byte for byte: quotes, backslashes, array punctuation, NULL-like
    text, newlines and non-ASCII (PostgreSQL's single-statement append passes text arrays)."""
    texts = ['"quoted"', "back\\slash", "{a,b}", "NULL", "line\nbreak", "ünï\u00e7ødé ✓", ""]
    batch = [new_event(Noted(i, t)) for i, t in enumerate(texts)]
    event_log.append_batch([AppendRequest("a", batch[:3], NO_STREAM), AppendRequest("b", batch[3:], NO_STREAM)])
    stored = event_log.read_all()
    assert [r.data for r in stored] == [e.data for e in batch]
    assert [r.event_id for r in stored] == [e.event_id for e in batch]
    assert [r.decode().text for r in stored] == texts
    assert [(r.stream_id, r.stream_version) for r in stored] == [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2), ("b", 3), ("b", 4)]
    # one request of several events, and single events (PostgreSQL passes these as scalars)
    several = [new_event(Noted(i, t)) for i, t in enumerate(texts)]
    event_log.append("c", several, NO_STREAM)
    singles = [new_event(Noted(i, t)) for i, t in enumerate(texts)]
    for v, e in enumerate(singles):
        event_log.append("d", [e], v)
    for stream, sent in (("c", several), ("d", singles)):
        got = event_log.read_stream(stream)
        assert [(r.event_id, r.data, r.event_type, r.schema_version) for r in got] == [
            (e.event_id, e.data, e.event_type, e.schema_version) for e in sent
        ]


def test_appends_of_any_size_keep_their_order(event_log: EventLog) -> None:
    """Sizes around the insert chunking (SQLite: multi-row INSERTs of up to 64 rows) and a
    batch of several such requests: every event lands at its version and position, in order."""
    sizes = [1, 63, 64, 65, 100, 129, 300]
    for i, n in enumerate(sizes):
        r = event_log.append(f"s{i}", evs(*range(n)), NO_STREAM)
        assert (r.first_version, r.last_version, len(r.positions)) == (1, n, n)
    batch = event_log.append_batch([AppendRequest(f"s{i}", evs(*range(n)), n) for i, n in enumerate(sizes)])
    assert [(r.first_version, r.last_version) for r in batch] == [(n + 1, 2 * n) for n in sizes]
    stored = event_log.read_all()
    assert [r.position for r in stored] == list(range(1, 2 * sum(sizes) + 1))
    for i, n in enumerate(sizes):
        recs = event_log.read_stream(f"s{i}")
        assert [r.stream_version for r in recs] == list(range(1, 2 * n + 1))
        assert ns(recs) == list(range(n)) * 2


def test_batch_with_a_stream_twice_checks_the_running_version(event_log: EventLog) -> None:
    """The second request on a stream is checked against the version after the first: a stale
    expected version fails the whole batch (atomic) or only itself (append_many)."""
    event_log.append("a", evs(1), NO_STREAM)
    with pytest.raises(ConcurrencyError) as info:
        event_log.append_batch([AppendRequest("a", evs(2, 3), 1), AppendRequest("a", evs(4), 1)])
    assert info.value.actual == 3 and event_log.last_position() == 1
    out = event_log.append_many([AppendRequest("a", evs(2, 3), 1), AppendRequest("a", evs(4), 1), AppendRequest("a", evs(5), 3)])
    assert isinstance(out[1], ConcurrencyError)
    assert [r.positions for r in (out[0], out[2])] == [(2, 3), (4,)] and ns(event_log.read_stream("a")) == [1, 2, 3, 5]


def test_a_process_that_reads_and_appends_keeps_one_connection(event_log: EventLog) -> None:
    """An actor that recovers (reads) and then persists (appends) in one thread holds one
    database connection, not one for reads and one for appends (reads share the writer's
    connection while it is free).
    A read while the writer is busy (another thread appending) does not wait for it."""
    event_log.engine.dispose()  # drop the pooled connection schema creation used
    opened: list[object] = []
    sa.event.listen(event_log.engine, "connect", lambda dbapi_conn, _rec: opened.append(dbapi_conn))
    assert event_log.read_stream("a") == [] and event_log.last_position() == 0
    event_log.append("a", evs(1, 2), NO_STREAM)
    assert ns(event_log.read_stream("a")) == [1, 2] and event_log.stream_version("a") == 2
    assert event_log.load_snapshot("a") is None and event_log.last_position() == 2
    event_log.append("a", evs(3), 2)
    assert len(opened) == 1
    with event_log._write_mutex:  # as while another thread appends
        assert ns(event_log.read_stream("a")) == [1, 2, 3] and event_log.last_position() == 3


# ------------------------------------------------------------------------- idempotency


@pytest.mark.parametrize("expected", [NO_STREAM, 0, ANY])


def test_retry_with_same_event_ids_returns_original_positions(event_log: EventLog, expected: int) -> None:
    batch = evs(1, 2)
    first = event_log.append("a", batch, expected)
    event_log.append("a", evs(3), ANY)
    again = event_log.append("a", batch, expected)
    assert again == first
    assert event_log.last_position() == 3 and ns(event_log.read_stream("a")) == [1, 2, 3]


def test_partial_overlap_of_event_ids_is_a_conflict(event_log: EventLog) -> None:
    batch = evs(1, 2)
    event_log.append("a", batch, NO_STREAM)
    with pytest.raises(ConcurrencyError):
        event_log.append("a", [batch[0], new_event(Noted(5))], ANY)
    assert event_log.last_position() == 2


def test_event_ids_reused_on_another_stream_are_a_conflict(event_log: EventLog) -> None:
    """Eventuous #553: never answer success while dropping the events."""
    batch = evs(1)
    event_log.append("a", batch, NO_STREAM)
    with pytest.raises(ConcurrencyError):
        event_log.append("b", batch, NO_STREAM)
    assert event_log.read_stream("b") == []


# -------------------------------------------------------------------- JournalSpec reads


@pytest.fixture
def five(event_log: EventLog) -> EventLog:
    event_log.append("p", evs(1, 2, 3), NO_STREAM)
    event_log.append("p", evs(4, 5), 3)  # the last two as one atomic write
    event_log.append("other", evs(99), NO_STREAM)
    return event_log


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({}, [1, 2, 3, 4, 5]),  # replay all messages
        ({"from_version": 3}, [3, 4, 5]),  # with a lower bound
        ({"to_version": 3}, [1, 2, 3]),  # with an upper bound
        ({"limit": 3}, [1, 2, 3]),  # with a count limit
        ({"from_version": 2, "to_version": 4}, [2, 3, 4]),  # lower + upper
        ({"from_version": 2, "to_version": 5, "limit": 2}, [2, 3]),  # lower + upper + count
        ({"from_version": 3, "to_version": 3}, [3]),  # a single message when lower == upper
        ({"limit": 1}, [1]),  # a single message when count == 1
        ({"limit": 0}, []),  # nothing when count == 0
        ({"from_version": 4, "to_version": 2}, []),  # nothing when lower > upper
        ({"from_version": 6}, []),  # nothing past the end
    ],
)


def test_read_stream_bounds(five: EventLog, kwargs: dict, expected: list[int]) -> None:
    assert ns(five.read_stream("p", **kwargs)) == expected


def test_unknown_stream_reads_empty_with_version_zero(five: EventLog) -> None:
    assert five.read_stream("never") == [] and five.stream_version("never") == 0


def test_read_stream_rejects_negative_limit(five: EventLog) -> None:
    with pytest.raises(ValueError):
        five.read_stream("p", limit=-1)


def test_read_all_is_in_commit_order_with_exclusive_checkpoint(five: EventLog) -> None:
    all_ = five.read_all()
    assert [r.position for r in all_] == [1, 2, 3, 4, 5, 6]
    assert [r.position for r in five.read_all(from_position=4)] == [5, 6]
    assert [r.position for r in five.read_all(from_position=1, limit=2)] == [2, 3]
    assert five.read_all(limit=0) == [] and five.read_all(from_position=6) == []
    assert [r.position for r in five.iter_all(page_size=4)] == [1, 2, 3, 4, 5, 6]
    assert [r.position for r in five.iter_all(1, page_size=2, until_position=4)] == [2, 3, 4]
    assert five.stream_ids() == ["other", "p"] and five.stream_ids("o") == ["other"]


_ID_CHARS = st.sampled_from(["a", "b", "A", ":", "-", "%", "_", "/", "\\", "é", "z", "0"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=st.lists(st.text(_ID_CHARS, min_size=0, max_size=5), min_size=1, max_size=12, unique=True),
       events=st.integers(1, 3), prefix=st.text(_ID_CHARS, max_size=3))
def test_stream_ids_are_those_a_distinct_scan_finds(event_log: EventLog, ids: list[str], events: int, prefix: str) -> None:
    """The loose index scan of ``stream_ids`` against ``SELECT DISTINCT … ORDER BY`` in the
    database's own collation, filtered by ``str.startswith``: ids sharing prefixes, ids differing
    in case only, LIKE's wildcards, non-ASCII, the empty id part; a namespace per example keeps
    the examples apart in one log."""
    ns = f"n{uuid.uuid4().hex[:8]}|"
    for sid in ids:
        event_log.append(ns + sid, evs(*range(events)), NO_STREAM)
    t = events_table.c
    q = sa.select(t.stream_id).distinct().order_by(t.stream_id)  # no LIKE: SQLite's is case-insensitive
    with event_log.engine.connect() as conn:
        oracle = [sid for sid in conn.execute(q).scalars() if sid.startswith(ns + prefix)]
    assert event_log.stream_ids(ns + prefix) == oracle
    assert sorted(oracle) == sorted(ns + sid for sid in ids if sid.startswith(prefix))
    assert set(event_log.stream_ids()) >= {ns + sid for sid in ids}


# ------------------------------------------------------------------ holes and rollbacks


def test_rolled_back_append_leaves_nothing_visible(event_log: EventLog) -> None:
    event_log.append("a", evs(1), NO_STREAM)

    def exploding_clock() -> int:
        raise RuntimeError("crash inside the transaction")

    log = EventLog(event_log.engine, url=event_log.url, clock=exploding_clock)
    with pytest.raises(RuntimeError):
        log.append("a", evs(2, 3), 1)
    assert ns(event_log.read_stream("a")) == [1]
    assert event_log.append("a", evs(4), 1).positions == (2,)


def test_readers_step_over_holes(event_log: EventLog, monkeypatch: pytest.MonkeyPatch) -> None:
    """Eventuous #222 / commanded #238 / Marten V9.38: a gap in positions (an import, a
    manual repair, a rolled-back sequence on another store) must not stop or mislead readers."""
    event_log.append("a", evs(1, 2), NO_STREAM)
    with event_log.engine.begin() as conn:  # a hole: the next row lands at position 10
        conn.execute(
            events_table.insert(),
            {"position": 10, "event_id": str(uuid.uuid4()), "stream_id": "z", "stream_version": 1,
             "event_type": "test.Noted", "schema_version": 1, "recorded_at_ms": 0, "data": '{"n": 10}'},
        )
    event_log.append("a", evs(3), 2)
    assert [r.position for r in event_log.iter_all(page_size=1)] == [1, 2, 10, 11]
    assert [r.position for r in event_log.read_all(from_position=2)] == [10, 11]
    assert [r.position for r in event_log.read_all(from_position=3)] == [10, 11]
    table = event_log.arrow_batches().read_all()
    assert table.column("position").to_pylist() == [1, 2, 10, 11]
    # the parallel reader cuts the position range into slices: holes and slice edges lose nothing
    import store.arrow_reader as ar

    monkeypatch.setattr(ar, "PARALLEL_MIN_POSITIONS", 1)
    for slices in (2, 3, 7):
        assert ar.read_events_table(event_log.url, slices=slices).column("position").to_pylist() == [1, 2, 10, 11]
    assert ar.read_events_table(event_log.url, 1, 10, slices=4).column("position").to_pylist() == [2, 10]


# --------------------------------------------------------------------------- concurrency


def test_two_concurrent_writers_do_not_interleave(event_log_url: str) -> None:
    """eventsourcing's NonInterleavingNotificationIDsBaseCase: two racers insert 1,000-event
    stacks through separate engines; each stack's positions form one contiguous range."""
    logs = [open_event_log(event_log_url) for _ in range(2)]
    results: dict[int, list] = {0: [], 1: []}
    barrier = threading.Barrier(2)

    def racer(i: int) -> None:
        barrier.wait()
        for round_ in range(3):
            results[i].append(logs[i].append(f"racer-{i}-{round_}", evs(*range(1000)), NO_STREAM))

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ranges = [(r.first_position, r.last_position) for i in (0, 1) for r in results[i]]
    for r in (r for i in (0, 1) for r in results[i]):
        assert r.positions == tuple(range(r.first_position, r.last_position + 1))
    ranges.sort()
    for (a_lo, a_hi), (b_lo, b_hi) in zip(ranges, ranges[1:]):
        assert a_hi < b_lo, f"interleaved: {(a_lo, a_hi)} and {(b_lo, b_hi)}"
    for log in logs:
        log.close()


def test_concurrent_writers_and_a_reader_see_commit_order(event_log_url: str) -> None:
    """ApplicationRecorderTestCase.test_concurrent_no_conflicts: 4 writers × 25 batches while a
    reader tails the log; the reader only ever sees increasing positions and, at the end, all."""
    writers = [open_event_log(event_log_url) for _ in range(4)]
    reader = open_event_log(event_log_url)
    done = threading.Event()
    seen: list[int] = []
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            for j in range(25):
                writers[i].append(f"w{i}", evs(*range(20)), ANY)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def read() -> None:
        checkpoint = 0
        while True:
            finished = done.is_set()
            for rec in reader.read_all(checkpoint, 500):
                assert rec.position > checkpoint
                seen.append(rec.position)
                checkpoint = rec.position
            if finished:
                return

    rt = threading.Thread(target=read)
    rt.start()
    ws = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in ws:
        t.start()
    for t in ws:
        t.join()
    done.set()
    rt.join()
    assert not errors
    assert seen == list(range(1, 4 * 25 * 20 + 1))
    for i in range(4):
        assert reader.stream_version(f"w{i}") == 500
    for log in (*writers, reader):
        log.close()


# ------------------------------------------------------------------------------ snapshots


def test_snapshot_store_spec(event_log: EventLog) -> None:
    """SnapshotStoreSpec: load the most recent, under a version bound, overwrite at the same
    version, a 10,000-byte snapshot, nothing for an unknown id."""
    assert event_log.load_snapshot("p") is None
    for v in range(11, 16):
        event_log.save_snapshot("p", v, f"state-{v}".encode(), position=100 + v)
    assert event_log.load_snapshot("p").state == b"state-15"
    assert event_log.load_snapshot("p", max_version=13).stream_version == 13
    assert event_log.load_snapshot("p", max_version=10) is None
    event_log.save_snapshot("p", 15, b"again")
    assert event_log.load_snapshot("p").state == b"again"
    big = bytes(range(256)) * 40
    event_log.save_snapshot("big", 1, big)
    assert event_log.load_snapshot("big").state == big
    assert event_log.delete_snapshots("p", below_version=14) == 3
    assert event_log.load_snapshot("p", max_version=13) is None
    with pytest.raises(ValueError):
        event_log.save_snapshot("p", 0, b"")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.integers(-1000, 1000), min_size=1, max_size=40), cut=st.integers(0, 40))


def test_snapshot_plus_tail_equals_full_replay(sqlite_log: EventLog, values: list[int], cut: int) -> None:
    stream = f"s-{uuid.uuid4().hex}"
    sqlite_log.append(stream, evs(*values), NO_STREAM)
    cut = min(cut, len(values))

    def fold(total: int, records) -> int:
        for r in records:
            total += r.decode().n
        return total

    full = fold(0, sqlite_log.read_stream(stream))
    if cut:
        sqlite_log.save_snapshot(stream, cut, str(fold(0, sqlite_log.read_stream(stream, to_version=cut))).encode())
    snap = sqlite_log.load_snapshot(stream)
    start, base = (snap.stream_version, int(snap.state)) if snap else (0, 0)
    assert fold(base, sqlite_log.read_stream(stream, from_version=start + 1)) == full


# ----------------------------------------------------------------------------- bad input


def test_corrupt_payload_names_the_position_and_the_loop_goes_on(event_log: EventLog) -> None:
    event_log.append("a", evs(1, 2, 3), NO_STREAM)
    with event_log.engine.begin() as conn:
        conn.execute(sa.update(events_table).where(events_table.c.position == 2).values(data='{"n": oops'))
    with pytest.raises(CorruptEventError, match="position 2"):
        list(event_log.iter_envelopes())
    bad: list[CorruptEventError] = []
    good = [e.data.n for e in event_log.iter_envelopes(on_corrupt=bad.append)]
    assert good == [1, 3] and [e.position for e in bad] == [2]


# ---------------------------------------------------------------------------- arrow reads


def test_arrow_batches_read_the_envelope(five: EventLog) -> None:
    table = five.arrow_batches().read_all()
    assert table.num_rows == 6
    assert table.column("stream_id").to_pylist() == ["p"] * 5 + ["other"]
    assert table.column("stream_version").to_pylist() == [1, 2, 3, 4, 5, 1]
    assert table.column("event_type").to_pylist()[0] == "test.Noted"
    assert '"n":1' in table.column("data").to_pylist()[0].replace(" ", "")
    assert five.arrow_batches(2, 4).read_all().column("position").to_pylist() == [3, 4]
    assert five.arrow_batches(6).read_all().num_rows == 0


def test_read_page_starts_after_the_snapshot(five: EventLog) -> None:
    """A recovery page: without a snapshot from ``from_version``; with one, after it."""
    snap, page, last = five.read_page("p", 1, 2, with_snapshot=True)
    assert snap is None and ns(page) == [1, 2] and last == 6
    five.save_snapshot("p", 3, b"state", 3)
    snap, page, last = five.read_page("p", 1, 10, with_snapshot=True)
    assert snap.stream_version == 3 and ns(page) == [4, 5]
    _, page, _ = five.read_page("p", 2, 10)  # no snapshot asked: from the version given
    assert ns(page) == [2, 3, 4, 5]
