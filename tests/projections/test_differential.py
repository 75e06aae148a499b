"""One fold, three engines (DESIGN.md principle 5): on Hypothesis-generated event logs, the
Python reference (the actors' own ``evolve``), the DuckDB SQL fold and the Spark SQL fold give
identical snapshot tables.

Domains covered: the test-only ``ptest`` domain (ranges, nested lists, optional fields) and
``share_group`` (members, epochs, assignment). The share-partition domain has no SQL fold yet
(see ``projections/domains/share.py``); its Python snapshots are checked against the actor state
in ``test_share_partition_rows_match_actor_state``.
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
    """Write ``entries`` as an event log and check the DuckDB fold equals the Python fold."""
    url = write_log(tmp_path, entries)
    assert_same(ps, fold_python(url, ps), fold_duckdb(url, ps))


def assert_spark_equals_python(tmp_path, spark, entries, ps) -> None:
    """Write ``entries`` as an event log and check the Spark fold equals the Python fold."""
    from projections.spark_fold import fold_spark

    url = write_log(tmp_path, entries)
    assert_same(ps, fold_python(url, ps), fold_spark(url, ps, spark=spark))


# ----------------------------------------------------------------------------- Python vs DuckDB


@SETTINGS
@given(entries=toy_logs)
def test_toy_duckdb_equals_python(tmp_path, entries):
    assert_duckdb_equals_python(tmp_path, entries, [toy.projection()])


@SETTINGS
@given(entries=share_group_logs)
def test_share_group_duckdb_equals_python(tmp_path, entries):
    assert_duckdb_equals_python(tmp_path, entries, domain_projections(["share_group"]))


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
def test_spark_reads_parquet_export(tmp_path, spark_session):
    from projections.source import export_parquet
    from projections.spark_fold import fold_spark

    entries = [("g:a", toy.Acquired("m1", toy.Where("t", 0), (toy.Span(0, 9),), 5)), ("g:a", toy.Accepted((toy.Span(2, 3),)))]
    url = write_log(tmp_path, entries)
    assert export_parquet(url, tmp_path / "export") == 2
    ps = [toy.projection()]
    assert_same(ps, fold_python(url, ps), fold_spark(str(tmp_path / "export"), ps, spark=spark_session))
    assert_same(ps, fold_python(url, ps), fold_duckdb(str(tmp_path / "export"), ps))


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
    assert_same([proj], py, fold_duckdb(url, [proj]))


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
    assert_same([proj], fold_python(url, [proj]), fold_spark(url, [proj], spark=spark_session))


# ----------------------------------------------------------------------------- RLMM


def _rlmm_entries():
    """Hypothesis strategy of RLMM logs: segment adds (COPY_SEGMENT_STARTED, as Shoal writes
    them), state updates in any order (invalid ones must be dropped like Kafka's cache does) and
    partition deletes; a segment id is never re-added after a DELETE_SEGMENT_FINISHED."""
    from actors.rlmm.metadata import uuid_to_kafka_str
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

    def materialize(ops):
        live: dict[str, tuple[str, int]] = {}
        out, fresh = [], itertools.count(1)
        for op in ops:
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
        return out

    return st.lists(st.one_of(create, change, change, delete), max_size=30).map(materialize)


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
