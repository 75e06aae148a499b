"""One fold, three engines (DESIGN.md principle 5): on Hypothesis-generated event logs, the
Python reference (the actors' own ``evolve``), the DuckDB SQL fold and the Spark SQL fold give
identical snapshot tables.

Domains covered: the test-only ``ptest`` domain (ranges, nested lists, optional fields),
``share_group`` (members, epochs, assignment), ``share`` (share-partitions: logs written by the
real ``SharePartition`` deciders on random operation sequences, folded last-writer-wins from the
events' outcomes in SQL; v1 logs without outcomes are refused by the SQL engines), ``rlmm`` and
``controller``.
"""

from __future__ import annotations

import itertools
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from events.codec import new_event
from projections.duckdb_fold import DuckDBFold, fold_duckdb
from projections.model import domain_projections
from projections.python_fold import fold_python
from projections.source import ReplayBounds
from projections.verify import compare_results
from store.event_log import AppendRequest, open_event_log
from tests.projections import toy

_counter = itertools.count()

# ----------------------------------------------------------------------------- generators

members = st.sampled_from(["m1", "m2", "m3"])
spans = st.lists(
    st.tuples(st.integers(0, 40), st.integers(0, 6)).map(lambda t: toy.Span(t[0], t[0] + t[1])), min_size=1, max_size=3
)
toy_events = st.one_of(
    st.builds(toy.Acquired, members, st.just(toy.Where("t", 0)), spans.map(tuple), st.integers(0, 10**6)),
    st.builds(toy.Released, spans.map(tuple), st.one_of(st.none(), st.just("timeout"))),
    st.builds(toy.Accepted, spans.map(tuple)),
    st.builds(toy.MemberJoined, members, st.integers(0, 9)),
    st.builds(toy.MemberLeft, members),
    st.builds(
        toy.Assigned,
        st.lists(
            st.builds(toy.Grant, members, st.lists(st.integers(0, 3), max_size=3, unique=True).map(tuple)),
            max_size=3, unique_by=lambda g: g.member_id,
        ).map(tuple),
    ),
)
# a log: a list of (stream, event) in append order
toy_logs = st.lists(st.tuples(st.sampled_from(["g:a", "g:b", "g:c"]), toy_events), min_size=0, max_size=40)


def _share_group_events():
    from events import share_group as sg

    gid = "g"
    tp = st.builds(sg.TopicPartitions, st.sampled_from(["tA", "tB"]), st.lists(st.integers(0, 3), max_size=3, unique=True).map(lambda x: tuple(sorted(x))))
    tps = st.lists(tp, max_size=2, unique_by=lambda t: t.topic_id).map(tuple)
    return st.one_of(
        st.builds(sg.MemberSubscriptionUpdated, st.just(gid), members, st.sampled_from(["c1", "c2"]), st.just("/127.0.0.1"),
                  st.one_of(st.none(), st.just("rack-1")), st.just(("t",))),
        st.builds(sg.GroupEpochBumped, st.just(gid), st.integers(0, 20)),
        st.builds(sg.TargetAssignmentUpdated, st.just(gid), st.integers(0, 20),
                  st.lists(st.builds(sg.MemberTarget, members, tps), max_size=2, unique_by=lambda m: m.member_id).map(tuple)),
        st.builds(sg.MemberAssignmentReconciled, st.just(gid), members, st.integers(0, 20), st.integers(0, 20), tps),
        st.builds(sg.MemberFenced, st.just(gid), members, st.sampled_from(["LEAVE", "SESSION_TIMEOUT"])),
        st.builds(sg.ShareSessionOpened, st.just(gid), members, tps),
        st.builds(sg.ShareGroupDeleted, st.just(gid)),
    )


def _materialize_share_ops(ops):
    """Run random operations on real ``SharePartition`` deciders for group ``g`` (stream
    ``share-group:g``) the way the ShareGroupActor does — decide on the current state, append the
    events, apply them — and return the log ``[(stream, event)]``. Partitions ``(tA|tB, 0|1)``:
    (re)initialisation with persisted state batches, produce, acquire, ShareFetch with piggybacked
    acknowledgements, acknowledge (random types, per-offset types, RENEW), lock expiry, member
    release (with or without the delivery-count decrement), log-start-offset moves,
    ``ShareStateDeleted`` and ``ShareGroupDeleted``. A partition used before any initialisation
    is created with the broker's configuration, as ``ShareGroupState.partition`` does."""
    from actors.share.config import BrokerShareConfig
    from actors.share.errors import ShareError
    from actors.share.partition import RecordState, SharePartition
    from events import share as ev
    from events import share_group as sg

    broker = BrokerShareConfig()
    stream = "share-group:g"
    keys = [("tA", 0), ("tA", 1), ("tB", 0)]
    parts: dict = {}
    logs: dict = {}  # key -> [log start, log end, [(base, last)]]
    out: list = []
    now = 1000

    def log_of(key):
        return logs.setdefault(key, [0, 0, []])

    def produce(key, sizes):
        lg = log_of(key)
        for n, gap in sizes:
            lg[1] += gap
            lg[2].append((lg[1], lg[1] + n - 1))
            lg[1] += n

    def part(key):
        if key not in parts:
            parts[key] = SharePartition("g", key[0], key[1], delivery_count_limit=broker.delivery_count_limit,
                                        max_in_flight_records=broker.partition_max_record_locks)
        return parts[key]

    def emit(sp, events):
        for e in events:
            sp.apply(e)
            out.append((stream, e))

    def read(key, offset, n=3):
        lg = log_of(key)
        return [b for b in lg[2] if b[1] >= max(offset, lg[0])][:n]

    def held(sp, member):
        runs = []
        for b in sp.cached_batches():
            for o in range(b.first_offset, b.last_offset + 1):
                s_ = sp.record_state(o)
                if s_[0] == RecordState.ACQUIRED and s_[2] == member:
                    if runs and runs[-1][1] + 1 == o:
                        runs[-1][1] = o
                    else:
                        runs.append([o, o])
        return runs

    def holder(sp, member):
        """``member`` if it holds records, else a member that does (acknowledgements are common)."""
        if held(sp, member):
            return member
        return next((m for m in ("m1", "m2", "m3") if held(sp, m)), member)

    def acks_for(sp, member, types, split):
        batches = []
        for i, (f, l_) in enumerate(held(sp, member)[: split + 1]):
            if l_ > f and (i + split) % 2:
                batches.append((f, l_, [types[(o - f) % len(types)] for o in range(f, l_ + 1)]))
            else:
                batches.append((f, l_, [types[i % len(types)]]))
        return batches

    for op in ops:
        kind, k, member, a, b, types = op
        key = keys[k % len(keys)]
        now += a * 7
        if kind == "init":
            if key in parts and a % 3:
                kind = "fetch"  # re-initialisations are rarer than first ones
        if kind in ("delete_state", "delete_group") and a % 3:
            kind = "acquire"  # deletions are rare
        if kind == "init":
            lg = log_of(key)
            start = lg[0] + a % 3
            batches, o = [], start
            for j, t in enumerate(types[: b % 4]):
                o += j % 2  # holes between persisted batches
                state = (0, 2, 4)[t % 3]
                batches.append((o, o + t % 3, state, (t + j) % 4))
                o += t % 3 + 1
            sp = SharePartition("g", key[0], key[1], delivery_count_limit=2 + a % 3, max_in_flight_records=30)
            emit(sp, sp.decide_initialize(start, b, batches))
            parts[key] = sp
            lg[1] = max(lg[1], o)
        elif kind == "produce":
            produce(key, [(1 + a % 6, b % 2), (1 + b % 4, 0)])
        elif kind == "acquire":
            sp = part(key)
            fetched = read(key, sp.next_fetch_offset())
            if not fetched:
                produce(key, [(1 + a % 5, 0), (3, b % 2)])
                fetched = read(key, sp.next_fetch_offset())
            events, _ = sp.decide_acquire(member, fetched, 1 + a % 12, now, 100 + 50 * (b % 3), batch_size=(None, 2, 4)[b % 3])
            emit(sp, events)
        elif kind == "fetch":
            sp = part(key)
            member = holder(sp, member) if a % 3 else member
            acks = acks_for(sp, member, types, b % 3)

            def read_log(offset, key=key):
                if not read(key, offset):
                    produce(key, [(2 + a % 4, 0)])
                return read(key, offset)

            d = sp.decide_share_fetch(member, acks, read_log, a % 10, now, 100 + 50 * (b % 3), (None, 3)[b % 2])
            emit(sp, d.events)
        elif kind == "ack":
            sp = part(key)
            member = holder(sp, member)
            try:
                events = sp.decide_acknowledge(member, acks_for(sp, member, types, b % 3), now, 150)
            except ShareError:
                continue
            emit(sp, events)
        elif kind == "expire":
            now += 60 * b
            for sp in list(parts.values()):
                emit(sp, sp.decide_expire_locks(now))
        elif kind == "release":
            for sp in list(parts.values()):
                emit(sp, sp.decide_release_member(member, decrement_delivery_count=bool(b % 2)))
        elif kind == "lso":
            lg = log_of(key)
            lg[0] = min(lg[1], lg[0] + 1 + a % 4)
            lg[2] = [x for x in lg[2] if x[1] >= lg[0]]
            if key in parts:
                emit(parts[key], parts[key].decide_update_log_start_offset(lg[0]))
        elif kind == "delete_state":
            if key in parts:
                out.append((stream, ev.ShareStateDeleted("g", key[0], key[1])))
                del parts[key]
        elif kind == "delete_group":
            out.append((stream, sg.ShareGroupDeleted("g")))
            parts.clear()
    return out


share_ops = st.lists(
    st.tuples(
        st.sampled_from(["init", "produce", "acquire", "acquire", "fetch", "fetch", "fetch", "ack", "ack", "expire",
                         "release", "lso", "init", "delete_state", "delete_group"]),
        st.integers(0, 2),
        members,
        st.integers(0, 20),
        st.integers(0, 20),
        st.lists(st.sampled_from([0, 1, 2, 3, 4]), min_size=1, max_size=3),
    ),
    min_size=5,
    max_size=60,
)
share_logs = share_ops.map(_materialize_share_ops)


share_group_logs = st.lists(
    st.tuples(st.sampled_from(["share-group:g1", "share-group:g2"]), _share_group_events()), min_size=0, max_size=40
)


def write_log(tmp_path, entries) -> str:
    """Append ``entries`` [(stream, event)] to a fresh SQLite log, one append per run of the same
    stream (so appends are batched like the actors'); returns its URL."""
    url = f"sqlite:///{tmp_path / f'events-{next(_counter)}.db'}"
    log = open_event_log(url, synchronous="NORMAL")
    try:
        for stream, group in itertools.groupby(entries, key=lambda e: e[0]):
            log.append_batch([AppendRequest(stream, [new_event(e) for _, e in group])])
    finally:
        log.close()
    return url


def assert_same(projections, a, b) -> None:
    divergences = compare_results(projections, a, b)
    assert not divergences, "\n".join(map(str, divergences[:10]))
    for name in a.tables:
        if name in b.tables and name != "streams":
            assert a.tables[name].equals(b.tables[name]), name


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
SPARK_SETTINGS = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def assert_duckdb_equals_python(tmp_path, entries, ps) -> None:
    """Write ``entries`` as an event log and check the DuckDB fold equals the Python fold, with
    the log read both ways: by DuckDB's ``sqlite_scan`` and through ADBC."""
    url = write_log(tmp_path, entries)
    py = fold_python(url, ps)
    assert_same(ps, py, fold_duckdb(url, ps))
    assert_same(ps, py, fold_duckdb(url, ps, direct_scan=False))


def assert_spark_equals_python(tmp_path, spark, entries, ps) -> None:
    """Write ``entries`` as an event log and check that the Spark fold equals the Python fold,
    both reading the log through JDBC and reading the typed part of its Parquet export."""
    from projections.source import export_parquet
    from projections.spark_fold import fold_spark

    url = write_log(tmp_path, entries)
    py = fold_python(url, ps)
    jdbc = fold_spark(url, ps, spark=spark)
    assert jdbc.extra["read_via"] == "jdbc"
    assert_same(ps, py, jdbc)
    export_parquet(url, tmp_path / "export")
    typed = fold_spark(str(tmp_path / "export"), ps, spark=spark)
    assert typed.extra["read_via"] == "typed_parquet"
    assert_same(ps, py, typed)


# ----------------------------------------------------------------------------- Python vs DuckDB


@SETTINGS
@given(entries=toy_logs)
def test_toy_duckdb_equals_python(tmp_path, entries):
    assert_duckdb_equals_python(tmp_path, entries, [toy.projection()])


@SETTINGS
@given(entries=share_group_logs)
def test_share_group_duckdb_equals_python(tmp_path, entries):
    assert_duckdb_equals_python(tmp_path, entries, domain_projections(["share_group"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(entries=share_logs)
def test_share_duckdb_equals_python(tmp_path, entries):
    assert_duckdb_equals_python(tmp_path, entries, domain_projections(["share"]))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=toy_logs, cut=st.integers(0, 40))
def test_duckdb_incremental_equals_full_replay(tmp_path, entries, cut):
    """Resuming from the stored checkpoint gives the snapshot a full replay gives."""
    url = write_log(tmp_path, entries)
    ps = [toy.projection()]
    db = tmp_path / f"proj-{next(_counter)}.duckdb"
    log = open_event_log(url)
    last = log.last_position()
    log.close()
    first = DuckDBFold(ps, db)
    first.update(url, ReplayBounds(0, min(cut, last)))
    first.close()
    again = DuckDBFold(ps, db)
    resumed = again.update(url)
    again.close()
    assert resumed.extra["incremental"] is True
    assert resumed.extra["ingested"] == len(entries) - min(cut, last)
    assert_same(ps, fold_python(url, ps), resumed)


def test_until_position_and_until_time_bound_the_fold(tmp_path):
    ps = [toy.projection()]
    url = f"sqlite:///{tmp_path / 'e.db'}"
    clock = iter(range(1000, 100000, 1000))
    log = open_event_log(url, clock=lambda: next(clock))
    log.append("g:a", [new_event(toy.MemberJoined("m1", 1))])  # position 1, t=1000
    log.append("g:a", [new_event(toy.MemberJoined("m1", 2))])  # position 2, t=2000
    log.append("g:a", [new_event(toy.MemberJoined("m1", 3))])  # position 3, t=3000
    log.close()
    for bounds, epoch in [(ReplayBounds(0, 2), 2), (ReplayBounds(0, None, 1000), 1), (ReplayBounds(), 3)]:
        py = fold_python(url, ps, bounds)
        dk = fold_duckdb(url, ps, bounds)
        assert py.tables["ptest_members"]["epoch"].to_pylist() == [epoch]
        assert_same(ps, py, dk)


def test_divergence_is_reported_with_first_differing_position(tmp_path):
    """A SQL fold that gets one rule wrong is caught, and bisection names the first event at
    which the engines part."""
    ps = [toy.projection()]
    url = write_log(
        tmp_path,
        [("g:a", toy.MemberJoined("m1", 1)), ("g:b", toy.MemberJoined("m2", 1)), ("g:a", toy.MemberLeft("m1")),
         ("g:a", toy.MemberJoined("m3", 4))],
    )
    broken = toy.projection()
    broken.sql = dict(broken.sql)
    broken.sql["ptest_members"] = "SELECT stream_id, member_id, max(epoch) AS epoch FROM ev_ptest_MemberJoined GROUP BY stream_id, member_id"
    py = fold_python(url, ps)
    fold = DuckDBFold([broken])
    dk = fold.update(url)
    from projections.python_fold import fold_states, states_to_tables

    def py_at(p, sid):
        s, i, _ = fold_states(url, ps, ReplayBounds(0, p), streams=[sid])
        return states_to_tables(ps, s, i)

    log = open_event_log(url)
    positions = lambda sid: [e.position for e in log.read_stream(sid)]  # noqa: E731
    divs = compare_results(ps, py, dk, {"python": py_at, "duckdb": lambda p, sid: fold.snapshot(p)}, positions)
    log.close()
    fold.close()
    assert [(d.table, d.stream_id, d.key, d.field) for d in divs] == [("ptest_members", "g:a", ("g:a", "m1"), "<row>")]
    assert divs[0].first_position == 3 and divs[0].exact


# ----------------------------------------------------------------------------- Spark (bounded)


@pytest.mark.spark
@pytest.mark.slow
@SPARK_SETTINGS
@given(entries=toy_logs)
def test_toy_spark_equals_python(tmp_path, spark_session, entries):
    assert_spark_equals_python(tmp_path, spark_session, entries, [toy.projection()])


@pytest.mark.spark
@pytest.mark.slow
@SPARK_SETTINGS
@given(entries=share_group_logs)
def test_share_group_spark_equals_python(tmp_path, spark_session, entries):
    assert_spark_equals_python(tmp_path, spark_session, entries, domain_projections(["share_group"]))


@pytest.mark.spark
@pytest.mark.slow
@SPARK_SETTINGS
@given(entries=share_logs)
def test_share_spark_equals_python(tmp_path, spark_session, entries):
    assert_spark_equals_python(tmp_path, spark_session, entries, domain_projections(["share"]))


@pytest.mark.spark
@pytest.mark.slow
def test_spark_refuses_share_partitions_with_v1_events(tmp_path, spark_session):
    from projections.spark_fold import fold_spark

    url, ps = _v1_share_log(tmp_path)
    py, sk = fold_python(url, ps), fold_spark(url, ps, spark=spark_session)
    _assert_share_refused(py, sk)
    assert_same(ps, py, sk)  # the share_group tables and the streams of the folded domains


@pytest.mark.spark
@pytest.mark.slow
def test_spark_reads_parquet_export(tmp_path, spark_session):
    from projections.source import export_parquet
    from projections.spark_fold import fold_spark

    entries = [("g:a", toy.Acquired("m1", toy.Where("t", 0), (toy.Span(0, 9),), 5)), ("g:a", toy.Accepted((toy.Span(2, 3),)))]
    url = write_log(tmp_path, entries)
    assert export_parquet(url, tmp_path / "export") == 2
    ps = [toy.projection()]
    assert_same(ps, fold_python(url, ps), fold_spark(str(tmp_path / "export"), ps, spark=spark_session))
    parquet = fold_duckdb(str(tmp_path / "export"), ps)
    assert parquet.extra["read_via"] == "read_parquet"
    assert_same(ps, fold_python(url, ps), parquet)


# ----------------------------------------------------------------------------- upcasting


def _upcast_projection():
    """A one-event projection whose event is at schema version 2 (v1 named the field ``val``)."""
    from dataclasses import dataclass

    import pyarrow as pa

    from events.base import DomainEvent, domain_event
    from events.codec import register_upcaster
    from projections.model import DomainProjection, SnapshotTable

    global ValueSet
    try:
        ValueSet  # noqa: B018
    except NameError:

        @domain_event("pup.ValueSet", schema_version=2)
        @dataclass(frozen=True, slots=True)
        class ValueSet(DomainEvent):  # noqa: F811
            key: str
            value: int

        @register_upcaster("pup.ValueSet", 1)
        def _v1_to_v2(d):
            return {"key": d["key"], "value": d["val"]}

    table = SnapshotTable("pup_values", pa.schema([("stream_id", pa.string()), ("key", pa.string()), ("value", pa.int64())]), ("stream_id", "key"))

    def evolve(s, e):
        return {**s, e.key: e.value}

    return DomainProjection(
        name="pup",
        event_types=(ValueSet,),
        tables=(table,),
        initial=lambda _sid: {},
        evolve=evolve,
        to_rows=lambda sid, s: {"pup_values": [{"stream_id": sid, "key": k, "value": v} for k, v in s.items()]},
        sql={"pup_values": "SELECT stream_id, key, max_by(value, position) AS value FROM ev_pup_ValueSet GROUP BY stream_id, key"},
    )


def test_old_schema_versions_are_upcast_in_every_engine(tmp_path):
    from events.base import NewEvent

    proj = _upcast_projection()
    url = f"sqlite:///{tmp_path / 'u.db'}"
    log = open_event_log(url)
    log.append("p:1", [NewEvent(uuid.uuid4(), "pup.ValueSet", 1, b'{"key":"a","val":1}')])
    log.append("p:1", [new_event(ValueSet("b", 2))])  # noqa: F821
    log.append("p:1", [NewEvent(uuid.uuid4(), "pup.ValueSet", 1, b'{"key":"b","val":3}')])
    log.close()
    py = fold_python(url, [proj])
    assert py.tables["pup_values"].to_pylist() == [
        {"stream_id": "p:1", "key": "a", "value": 1},
        {"stream_id": "p:1", "key": "b", "value": 3},
    ]
    scanned = fold_duckdb(url, [proj])
    assert scanned.extra["read_via"] == "sqlite_scan"
    assert_same([proj], py, scanned)
    arrow = fold_duckdb(url, [proj], direct_scan=False)
    assert arrow.extra["read_via"] == "adbc"
    assert_same([proj], py, arrow)


def test_duckdb_reads_sqlite_with_its_scanner(tmp_path):
    """The ``sqlite_scanner`` extension ships with the pinned DuckDB (the wheel
    ``duckdb-extension-sqlite-scanner``) and loads with its signature checked: without it a replay
    silently falls back to ADBC, several times slower (bench/replay.py)."""
    from projections.duckdb_fold import sqlite_scanner_path

    assert sqlite_scanner_path() is not None
    url = write_log(tmp_path, [("g:a", toy.MemberJoined("m1", 1))])
    r = fold_duckdb(url, [toy.projection()], direct_scan=True)
    assert r.extra["read_via"] == "sqlite_scan"
    assert r.tables["ptest_members"].num_rows == 1


@pytest.mark.spark
@pytest.mark.slow
def test_spark_upcasts_old_schema_versions(tmp_path, spark_session):
    from events.base import NewEvent
    from projections.spark_fold import fold_spark

    proj = _upcast_projection()
    url = f"sqlite:///{tmp_path / 'u.db'}"
    log = open_event_log(url)
    log.append("p:1", [NewEvent(uuid.uuid4(), "pup.ValueSet", 1, b'{"key":"a","val":1}')])
    log.append("p:2", [new_event(ValueSet("b", 2))])  # noqa: F821
    log.close()
    py = fold_python(url, [proj])
    assert_same([proj], py, fold_spark(url, [proj], spark=spark_session))
    # the typed export holds the v1 event upcast (no upcasting left for the fold)
    from projections.source import export_parquet

    export_parquet(url, tmp_path / "export")
    typed = fold_spark(str(tmp_path / "export"), [proj], spark=spark_session)
    assert typed.extra["read_via"] == "typed_parquet"
    assert_same([proj], py, typed)


# ----------------------------------------------------------------------------- share: v1 logs


def _as_v1(event):
    """``event`` encoded as schema version 1 wrote it: the request only (no outcome fields),
    acknowledgement batches as positional arrays."""
    import json

    from events.base import NewEvent

    ne = new_event(event)
    if type(event).__name__ == "ShareStateDeleted" or not type(event).event_type.startswith("share."):
        return ne
    d = json.loads(ne.data)
    for k in ("outcome", "start_offset_after", "end_offset_after", "evicted_below"):
        d.pop(k, None)
    for k in ("batches", "acknowledgements"):
        if k in d:
            d[k] = [[b["first_offset"], b["last_offset"], b["acknowledge_types"]] for b in d[k]]
    return NewEvent(ne.event_id, ne.event_type, 1, json.dumps(d).encode())


def _v1_share_log(tmp_path):
    """A log whose partition tA:0 was written at schema version 1 (acquire, partial accept),
    followed by a group epoch bump; returns ``(url, projections)``."""
    from actors.share.partition import SharePartition
    from events import share_group as sg

    sp = SharePartition("g", "tA", 0)
    events = sp.initialize(0)
    events += sp.acquire("m1", [(0, 9)], 10, 1000, 500)[1]
    events += sp.acknowledge("m1", [(0, 3, [1])], 1100)
    url = f"sqlite:///{tmp_path / f'v1-{next(_counter)}.db'}"
    log = open_event_log(url)
    log.append("share-group:g", [_as_v1(e) for e in events] + [new_event(sg.GroupEpochBumped("g", 2))])
    log.close()
    return url, domain_projections(["share", "share_group"])


def _assert_share_refused(py, sql) -> None:
    """The Python engine folds the v1 events; the SQL engine leaves the share domain out with a reason."""
    assert py.tables["share_partitions"].to_pylist()[0]["start_offset"] == 4
    # the accepted prefix stays cached inside its (exploded) batch, below the start offset
    assert [(r["first_offset"], r["last_offset"], r["state"]) for r in py.tables["share_ranges"].to_pylist()] == [
        (0, 3, "ACKNOWLEDGED"), (4, 9, "ACQUIRED")
    ]
    assert "share_partitions" not in sql.tables and "share_ranges" not in sql.tables
    assert "share" in sql.extra["skipped_domains"]
    reason = sql.extra["skipped_reasons"]["share"]
    assert "schema version 2" in reason and "log position 1" in reason, reason
    assert sql.tables["share_group_groups"].num_rows == 1
    assert set(sql.tables["streams"]["domain"].to_pylist()) == {"share_group"}


def test_duckdb_refuses_share_partitions_with_v1_events(tmp_path):
    url, ps = _v1_share_log(tmp_path)
    py, dk = fold_python(url, ps), fold_duckdb(url, ps)
    _assert_share_refused(py, dk)
    assert_same(ps, py, dk)


def test_v1_events_before_a_state_deletion_do_not_block_the_sql_fold(tmp_path):
    """Only the current life of a share-partition matters: after ``ShareStateDeleted`` and a
    fresh v2 initialisation the SQL engines fold it again, and agree with Python."""
    from actors.share.partition import SharePartition
    from events import share as ev

    url, ps = _v1_share_log(tmp_path)
    sp = SharePartition("g", "tA", 0)
    events = [ev.ShareStateDeleted("g", "tA", 0)] + sp.initialize(20)
    events += sp.acquire("m2", [(20, 24)], 10, 2000, 500)[1]
    log = open_event_log(url)
    log.append("share-group:g", [new_event(e) for e in events])
    log.close()
    py, dk = fold_python(url, ps), fold_duckdb(url, ps)
    assert dk.extra["skipped_domains"] == [] and dk.extra["skipped_reasons"] == {}
    assert [(r["first_offset"], r["last_offset"], r["member_id"]) for r in dk.tables["share_ranges"].to_pylist()] == [(20, 24, "m2")]
    assert_same(ps, py, dk)


def test_v1_share_events_upcast_to_the_same_python_state():
    """The upcasters turn v1 payloads into v2 events without outcome; ``apply`` rebuilds the same
    partition from them (it reads the request fields only)."""
    from actors.share.partition import SharePartition, replay
    from events.codec import decode_event
    from events.share import AckBatch, has_outcome

    sp = SharePartition("g", "tA", 0)
    events = sp.initialize(0)
    events += sp.acquire("m1", [(0, 9)], 10, 1000, 500)[1]
    d = sp.share_fetch("m1", [(0, 1, [1]), (2, 4, [2, 3, 4])], lambda o: [(10, 14)], 5, 1200, 500)
    events += d.events
    old = [_as_v1(e) for e in events]
    back = [decode_event(n.event_type, n.schema_version, n.data) for n in old]
    assert [n.schema_version for n in old] == [1, 1, 1]
    assert not any(has_outcome(e) for e in back) and all(has_outcome(e) for e in events)
    assert back[2].acknowledgements == (AckBatch(0, 1, (1,)), AckBatch(2, 4, (2, 3, 4)))
    assert replay(back, "g", "tA", 0).snapshot() == sp.snapshot()


# ----------------------------------------------------------------------------- RLMM


def _rlmm_entries():
    """Hypothesis strategy of RLMM logs: segment adds (COPY_SEGMENT_STARTED, as Shoal writes
    them), state updates in any order (invalid ones must be dropped like Kafka's cache does) and
    partition deletes; a segment id is never re-added after a DELETE_SEGMENT_FINISHED."""
    from events.rlmm_types import uuid_to_kafka_str
    from events import rlmm

    tps = [(uuid_to_kafka_str(uuid.UUID(int=k)), f"topic-{k}", 0) for k in (1, 2)]
    segs = [uuid_to_kafka_str(uuid.UUID(int=100 + k)) for k in range(2)]
    tp = st.sampled_from(tps)
    seg = st.sampled_from(segs)
    epochs = st.sampled_from([((0, 0),), ((0, 0), (1, 40)), ((2, 10),)])
    add = st.builds(
        lambda t, s, start, ep, ts, b: rlmm.SegmentMetadataAdded(t[0], t[1], t[2], s, start, start + 49, ts, b, ts, 1000 + start, ep, None, 0),
        tp, seg, st.integers(0, 100), epochs, st.integers(0, 10**6), st.integers(0, 2),
    )
    upd = st.builds(
        lambda t, s, state, ts, b: rlmm.SegmentMetadataUpdated(t[0], t[1], t[2], s, ts, None, state, b),
        tp, seg, st.sampled_from([1, 1, 2, 2, 3]), st.integers(0, 10**6), st.integers(0, 2),
    )
    put = st.builds(lambda t, state, ts: rlmm.RemotePartitionDeleteMetadataPut(t[0], t[1], t[2], state, ts, 0), tp, st.sampled_from([0, 1, 1, 2]), st.integers(0, 10**6))
    event = st.one_of(add, add, upd, upd, upd, upd, put)

    def one_life(entries):
        finished: set = set()
        out = []
        for stream, e in entries:
            key = (stream, getattr(e, "topic_id", None), getattr(e, "segment_id", None))
            if type(e).__name__ == "SegmentMetadataAdded" and key in finished:
                continue
            if type(e).__name__ == "SegmentMetadataUpdated" and e.state == 3:
                finished.add(key)
            out.append((stream, e))
        return out

    return st.lists(st.tuples(st.sampled_from(["rlmm:0", "rlmm:0", "rlmm:1"]), event), max_size=40).map(one_life)


rlmm_logs = _rlmm_entries()


@SETTINGS
@given(entries=rlmm_logs)
def test_rlmm_duckdb_equals_python(tmp_path, entries):
    assert_duckdb_equals_python(tmp_path, entries, domain_projections(["rlmm"]))


@pytest.mark.spark
@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(entries=rlmm_logs)
def test_rlmm_spark_equals_python(tmp_path, spark_session, entries):
    assert_spark_equals_python(tmp_path, spark_session, entries, domain_projections(["rlmm"]))


# ----------------------------------------------------------------------------- controller


def _controller_entries():
    """Hypothesis strategy of controller logs as the topic decider writes them: a topic is created
    only under a free name (with a fresh id), changed and deleted only while live."""
    from events import controller as ctl

    brokers = st.lists(st.integers(1, 4), min_size=1, max_size=3, unique=True)
    create = st.tuples(st.just("create"), st.sampled_from(["a", "b", "c"]), st.integers(1, 3), brokers, st.integers(-1, 4))
    change = st.tuples(st.just("change"), st.integers(0, 5), st.integers(0, 5), brokers, st.integers(-1, 4), st.integers(0, 9))
    delete = st.tuples(st.just("delete"), st.integers(0, 5))
    # CreatePartitions: a live topic grows by 1-2 partitions (PartitionsCreated)
    grow = st.tuples(st.just("grow"), st.integers(0, 5), st.integers(1, 2), brokers, st.integers(-1, 4))
    # ACLs: created only when absent, deleted only when present (as the ACL decider writes them)
    binding = st.builds(
        ctl.AclBinding,
        st.sampled_from(["TOPIC", "GROUP", "CLUSTER"]),
        st.sampled_from(["a", "b*", "kafka-cluster", "*"]),
        st.sampled_from(["LITERAL", "PREFIXED"]),
        st.sampled_from(["User:alice", "User:*"]),
        st.sampled_from(["*", "10.0.0.1"]),
        st.sampled_from(["READ", "ALL", "DESCRIBE"]),
        st.sampled_from(["ALLOW", "DENY"]),
    )
    acl_create = st.tuples(st.just("acl_create"), st.lists(binding, min_size=1, max_size=3))
    acl_delete = st.tuples(st.just("acl_delete"), st.lists(st.integers(0, 9), min_size=1, max_size=3))

    def materialize(ops):
        live: dict[str, tuple[str, int]] = {}
        acls: set = set()
        out, fresh = [], itertools.count(1)
        for op in ops:
            if op[0] == "acl_create":
                new = tuple(dict.fromkeys(b for b in op[1] if b not in acls))
                if new:
                    acls.update(new)
                    out.append(("controller", ctl.AclsCreated(new)))
                continue
            if op[0] == "acl_delete":
                present = sorted(acls)
                gone = tuple(sorted({present[i % len(present)] for i in op[1]})) if present else ()
                if gone:
                    acls.difference_update(gone)
                    out.append(("controller", ctl.AclsDeleted(gone)))
                continue
            if op[0] == "create" and op[1] not in live:
                tid = f"{next(fresh):032x}"
                _, name, n, reps, leader = op
                parts = tuple(ctl.PartitionSpec(i, tuple(reps), tuple(reps[:1 + i % len(reps)]), leader, 0, 0) for i in range(n))
                live[name] = (tid, n)
                out.append(("controller", ctl.TopicCreated(tid, name, parts, {})))
            elif op[0] == "change" and live:
                name = sorted(live)[op[1] % len(live)]
                tid, n = live[name]
                _, _, p, isr, leader, epoch = op
                out.append(("controller", ctl.PartitionChanged(tid, p % n, leader, tuple(isr), epoch, epoch + 1, "election")))
            elif op[0] == "delete" and live:
                name = sorted(live)[op[1] % len(live)]
                out.append(("controller", ctl.TopicDeleted(live.pop(name)[0], name)))
            elif op[0] == "grow" and live:
                name = sorted(live)[op[1] % len(live)]
                tid, n = live[name]
                _, _, extra, reps, leader = op
                parts = tuple(ctl.PartitionSpec(i, tuple(reps), tuple(reps[: 1 + i % len(reps)]), leader, 0, 0) for i in range(n, n + extra))
                live[name] = (tid, n + extra)
                out.append(("controller", ctl.PartitionsCreated(tid, name, parts)))
        return out

    return st.lists(st.one_of(create, change, change, delete, grow, acl_create, acl_delete), max_size=30).map(materialize)


controller_logs = _controller_entries()


@SETTINGS
@given(entries=controller_logs)
def test_controller_duckdb_equals_python(tmp_path, entries):
    assert_duckdb_equals_python(tmp_path, entries, domain_projections(["controller"]))


@pytest.mark.spark
@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(entries=controller_logs)
def test_controller_spark_equals_python(tmp_path, spark_session, entries):
    assert_spark_equals_python(tmp_path, spark_session, entries, domain_projections(["controller"]))


# ----------------------------------------------------------------------------- consumer groups (classic)


def _consumer_group_events():
    from events import consumer_group as cg

    member = st.builds(
        cg.ClassicMemberMetadata, st.sampled_from(["m1", "m2", "m3"]), st.one_of(st.none(), st.just("i1")),
        st.sampled_from(["c", "d"]), st.just("127.0.0.1"), st.integers(6000, 45000), st.integers(6000, 300000),
        st.binary(max_size=4), st.binary(max_size=4),
    )
    members = st.lists(member, max_size=3, unique_by=lambda m: m.member_id).map(lambda ms: tuple(sorted(ms, key=lambda m: m.member_id)))
    metadata = st.builds(
        lambda gen, ms, proto, ts: cg.ClassicGroupMetadataRecorded(
            "g", "Stable" if ms else "Empty", gen, "consumer" if ms else None, proto if ms else None,
            ms[0].member_id if ms else None, ts, ms),
        st.integers(0, 20), members, st.sampled_from(["range", "roundrobin"]), st.integers(0, 10**6),
    )
    offset = st.builds(
        cg.CommittedOffset, st.sampled_from(["tA", "tB"]), st.integers(0, 2), st.integers(0, 10**6),
        st.integers(-1, 5), st.sampled_from(["", "md", "x"]), st.integers(0, 10**6),
    )
    commits = st.builds(
        cg.OffsetsCommitted, st.just("g"), st.sampled_from(["", "m1"]), st.integers(-1, 20),
        st.lists(offset, min_size=1, max_size=4).map(tuple),
    )
    # group admin: OffsetDelete / DeleteGroups tombstones, and the group's deletion
    deletes = st.builds(
        cg.OffsetsDeleted, st.just("g"),
        st.lists(st.builds(cg.DeletedOffset, st.sampled_from(["tA", "tB"]), st.integers(0, 2)), min_size=1, max_size=3).map(tuple),
    )
    return st.one_of(metadata, commits, deletes, st.just(cg.ConsumerGroupDeleted("g")))


consumer_group_logs = st.lists(
    st.tuples(st.sampled_from(["consumer-group:g1", "consumer-group:g2"]), _consumer_group_events()), min_size=0, max_size=30
)


@SETTINGS
@given(entries=consumer_group_logs)
def test_consumer_group_duckdb_equals_python(tmp_path, entries):
    assert_duckdb_equals_python(tmp_path, entries, domain_projections(["consumer_group"]))


@pytest.mark.spark
@SPARK_SETTINGS
@given(entries=consumer_group_logs)
def test_consumer_group_spark_equals_python(tmp_path, spark_session, entries):
    assert_spark_equals_python(tmp_path, spark_session, entries, domain_projections(["consumer_group"]))


# ----------------------------------------------------------------------------- consumer groups (KIP-848)


def _materialize_consumer_protocol_ops(ops):
    """Run random operations the way the ConsumerGroupActor does — ConsumerGroupHeartbeats
    (joins, acknowledgements, leaves, static leaves and replacements), session and rebalance
    timeouts, topic resizes, offset commits, a conversion back to classic when empty (#47) — on
    the real deciders of group ``g`` (stream ``consumer-group:g``) and return the log."""
    from actors.consumer.classic import ClassicGroup, CommitPartition
    from actors.consumer.group import classic_from, is_empty_classic, modern_from
    from actors.consumer.modern import STATIC_LEAVE_EPOCH, ModernGroup
    from events.consumer_group import OffsetsCommitted

    stream = "consumer-group:g"
    counter = itertools.count()
    g = ClassicGroup("g", id_factory=lambda: f"id{next(counter)}")
    log = []
    now = 0
    image = {"tA": ("00000000-0000-0000-0000-00000000000a", 3), "tB": ("00000000-0000-0000-0000-00000000000b", 2)}
    for kind, who, flag, topics in ops:
        now += 1000
        out = None
        if kind == "join":
            inst = f"i-{who}" if flag else None
            if isinstance(g, ClassicGroup):
                if not is_empty_classic(g):
                    continue
                m = modern_from(g, id_factory=lambda: f"id{next(counter)}")
                out = m.heartbeat(now, member_id=who, member_epoch=0, instance_id=inst, rebalance_timeout_ms=3000,
                                  subscribed_topic_names=topics, owned={}, image=image, client_id="c")
                if out.events:
                    g = m
            else:
                out = g.heartbeat(now, member_id=who, member_epoch=0, instance_id=inst, rebalance_timeout_ms=3000,
                                  subscribed_topic_names=topics, owned={}, image=image, client_id="c")
        elif isinstance(g, ModernGroup) and kind == "hb" and who in g.members:
            mem = g.members[who]
            if mem.member_epoch < 0:
                continue
            out = g.heartbeat(now, member_id=who, member_epoch=mem.member_epoch, instance_id=mem.instance_id,
                              owned=dict(mem.assigned) if flag else None, image=image,
                              subscribed_topic_names=topics if not flag else None)
        elif isinstance(g, ModernGroup) and kind == "leave" and who in g.members:
            mem = g.members[who]
            epoch = STATIC_LEAVE_EPOCH if (flag and mem.instance_id) else -1
            out = g.heartbeat(now, member_id=who, member_epoch=epoch, instance_id=mem.instance_id, image=image)
        elif isinstance(g, ModernGroup) and kind == "tick":
            now += 50_000 if flag else 3_500
            out = g.tick(now, image)
        elif kind == "resize":
            image = dict(image, tA=(image["tA"][0], 3 + (1 if flag else 0)))
        elif kind == "commit":
            mem = g.members.get(who) if isinstance(g, ModernGroup) else None
            gen = mem.member_epoch if mem is not None else -1
            out = g.commit(now, member_id=who if mem is not None else "", group_instance_id=None, generation=gen,
                           partitions=[CommitPartition("tA", 0, now), CommitPartition("tB", 1, now + 1, 2, "md")])
        elif kind == "classic" and isinstance(g, ModernGroup) and g.is_empty():
            for e in g.delete_records():
                log.append((stream, e))
            g = classic_from(g)
            continue
        if out is None:
            continue
        for e in out.events:
            if isinstance(e, OffsetsCommitted):
                g.apply(e)
            log.append((stream, e))
    return log


consumer_protocol_ops = st.lists(
    st.tuples(
        st.sampled_from(["join", "join", "hb", "hb", "hb", "leave", "tick", "resize", "commit", "classic"]),
        st.sampled_from(["m1", "m2", "m3"]),
        st.booleans(),
        st.sampled_from([("tA",), ("tB",), ("tA", "tB")]),
    ),
    min_size=0, max_size=25,
)
consumer_protocol_logs = consumer_protocol_ops.map(_materialize_consumer_protocol_ops)


@SETTINGS
@given(entries=consumer_protocol_logs)
def test_consumer_protocol_duckdb_equals_python(tmp_path, entries):
    assert_duckdb_equals_python(tmp_path, entries, domain_projections(["consumer_group"]))


@pytest.mark.spark
@SPARK_SETTINGS
@given(entries=consumer_protocol_logs)
def test_consumer_protocol_spark_equals_python(tmp_path, spark_session, entries):
    assert_spark_equals_python(tmp_path, spark_session, entries, domain_projections(["consumer_group"]))
