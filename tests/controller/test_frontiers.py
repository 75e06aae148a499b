"""Storage collections: the odd-numbered Materialize scenarios (reference controller.md §2) and
properties of the frontier model. Scenario tests are named ``test_m<N>_<source name>``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.controller import frontiers as fr
from events.codec import decode_event, encode_event
from events.controller import HoldChange, ReadHoldsChanged, SegmentInfo


def run(state: fr.FrontierState, cmd, now_ms: int = 0) -> list[fr.SinceChange]:
    """Decide and apply; fail the test on a rejection. Returns the since changes."""
    res = fr.decide(state, cmd, now_ms)
    assert not isinstance(res, fr.Rejected), res
    out: list[fr.SinceChange] = []
    for ev in res:
        # every event survives the log codec unchanged
        assert decode_event(type(ev).event_type, type(ev).schema_version, encode_event(ev)) == ev
        out.extend(state.apply(ev))
    return out


def rejected(state: fr.FrontierState, cmd, now_ms: int = 0) -> fr.Rejected:
    before = state.to_dict()
    res = fr.decide(state, cmd, now_ms)
    assert isinstance(res, fr.Rejected), res
    assert state.to_dict() == before  # a rejection never touches the state
    return res


def create(state: fr.FrontierState, cid: str, since=0, upper=0, policy=None, deps=()) -> None:
    run(state, fr.CreateCollections((fr.NewCollection(cid, since, upper, policy, tuple(deps)),)))


# --- frontier algebra (§1.5) ----------------------------------------------------------------


def test_antichain_element_tests_and_order():
    a2 = fr.Antichain.from_elem(2)
    assert a2.less_equal(2) and not a2.less_equal(1)
    assert not a2.less_than(2) and a2.less_than(3)
    empty = fr.Antichain.empty()
    assert not any(empty.less_equal(t) or empty.less_than(t) for t in range(5))
    assert fr.Antichain(3) <= fr.Antichain(5) and not fr.Antichain(5) <= fr.Antichain(3)
    assert fr.Antichain(3) <= empty and not empty <= fr.Antichain(3)
    assert fr.Antichain(3).join(fr.Antichain(5)) == fr.Antichain(5)
    assert fr.Antichain(3).join(empty) == empty
    assert fr.Antichain(3).meet(fr.Antichain(5)) == fr.Antichain(3)
    assert fr.Antichain(3).meet(empty) == fr.Antichain(3)
    ins, changed = fr.Antichain.empty().insert(2)
    assert changed and ins == fr.Antichain(2)
    assert ins.insert(3) == (ins, False)
    assert ins.insert(1) == (fr.Antichain(1), True)


def test_mutable_antichain_update_iter_timely_doctest():
    ma = fr.MutableAntichain.from_elem(1)
    changes = ma.update_iter([(1, -1), (2, 7)])
    assert ma.frontier == 2
    assert changes == [(1, -1), (2, 1)]


def test_change_batch_consolidates():
    b = fr.ChangeBatch.new_from(17, 1)
    b.update(17, -1)
    assert b.is_empty()
    assert len(fr.ChangeBatch([(17, 1), (17, -1), (14, -1)])) == 1


# --- M1–M7: read policies and create ----------------------------------------------------------


def test_m1_lag_writes_by_zero():
    assert fr.LagWrites(0, 0).frontier(5) == 5


def test_m1_lag_writes_rounding_and_zero_granularity_guard():
    assert fr.LagWrites(10, 4).frontier(107) == 96  # t = 97, g = 4 → 96
    assert fr.LagWrites(10, 0).frontier(107) == 97  # Materialize would divide by zero here
    assert fr.LagWrites(10, 4).frontier(None) == 0
    assert fr.LagWrites(10, 4).frontier(3) == 0


def test_m3_constant_policies_ignore_the_empty_upper():
    assert fr.ValidFrom(7).frontier(None) == 7
    assert fr.NoPolicy(7).frontier(None) == 7


def test_m5_step_back():
    p = fr.StepBack()
    assert (p.frontier(10), p.frontier(0), p.frontier(None)) == (9, 0, 0)


def test_m7_create():
    s = fr.FrontierState()
    create(s, "c", since=3, upper=3)
    c = s.collections["c"]
    assert c.read_capabilities() == {3: 1}
    assert c.implied == 3 and c.policy == fr.NoPolicy(3) and c.since == 3
    assert not fr.is_readable(s, "c", 3)  # upper <= 3: nothing readable yet
    assert fr.snapshot_latest(s, "c") is None


# --- M9–M15: frontier updates and read holds --------------------------------------------------


def test_m9_write_frontier_drives_since():
    s = fr.FrontierState()
    create(s, "c", 0, 0, fr.StepBack())
    changes = run(s, fr.UpdateWriteFrontiers((("c", 10, None),)))
    c = s.collections["c"]
    assert c.implied == 9 and c.since == 9 and c.read_capabilities() == {9: 1}
    assert changes == [fr.SinceChange("c", 0, 9)]  # exactly one compaction signal


def test_m11_a_read_hold_pins_since():
    s = fr.FrontierState()
    create(s, "c", 0, 0, fr.StepBack())
    run(s, fr.UpdateWriteFrontiers((("c", 10, None),)))
    run(s, fr.AcquireReadHolds("H", ("c",)))
    assert s.collections["c"].read_capabilities() == {9: 2}
    changes = run(s, fr.UpdateWriteFrontiers((("c", 30, None),)))
    c = s.collections["c"]
    assert c.implied == 29 and c.read_capabilities() == {9: 1, 29: 1} and c.since == 9
    assert changes == []  # no net frontier change, no AllowCompaction
    changes = run(s, fr.DowngradeReadHold("H", "c", None))
    assert c.read_capabilities() == {29: 1} and c.since == 29
    assert changes == [fr.SinceChange("c", 9, 29)]


def test_m13_read_hold_try_downgrade():
    s = fr.FrontierState()
    create(s, "c", 0, 100)
    run(s, fr.ChangeReadHolds("H", (("c", 14, 1),)))
    r = rejected(s, fr.DowngradeReadHold("H", "c", 10))
    assert r.error == "SinceViolation" and "is not beyond current since" in r.message
    res = fr.decide(s, fr.DowngradeReadHold("H", "c", 20), 0)
    assert res == [ReadHoldsChanged("H", (HoldChange("c", 14, -1), HoldChange("c", 20, 1)))]


def test_m15_invariant_violations_are_rejected_not_panics():
    s = fr.FrontierState()
    create(s, "c", 14, 20)
    r = rejected(s, fr.ChangeReadHolds("H", (("c", 10, 1),)))
    assert r.error == "SinceViolation" and "before the current since" in r.message
    assert r.kafka_error == "OFFSET_OUT_OF_RANGE"
    run(s, fr.ChangeReadHolds("H", (("c", 14, 1),)))
    r = rejected(s, fr.ChangeReadHolds("H", (("c", 14, -2),)))
    assert r.error == "NegativeReadCapability" and "negative read capabilities" in r.message


def test_unknown_collection_and_reserved_holders_are_rejected():
    s = fr.FrontierState()
    create(s, "c", 0, 10)
    assert rejected(s, fr.ChangeReadHolds("H", (("nope", 1, 1),))).error == "CollectionMissing"
    assert rejected(s, fr.ChangeReadHolds("H", (("nope", 1, -1),))).error == "CollectionMissing"
    assert rejected(s, fr.ChangeReadHolds("collection:x", (("c", 1, 1),))).error == "InvalidHolder"
    assert rejected(s, fr.ChangeReadHolds("", (("c", 1, 1),))).error == "InvalidHolder"
    assert rejected(s, fr.ChangeReadHolds("H", (("c", -1, 1),))).error == "InvalidHolder"
    assert rejected(s, fr.UpdateWriteFrontiers((("nope", 5, None),))).error == "CollectionMissing"
    assert rejected(s, fr.SetReadPolicies((("nope", fr.StepBack()),))).error == "CollectionMissing"


def test_a_batch_is_all_or_nothing():
    s = fr.FrontierState()
    create(s, "a", 0, 10)
    create(s, "b", 5, 10)
    r = rejected(s, fr.ChangeReadHolds("H", (("a", 1, 1), ("b", 1, 1))))
    assert r.error == "SinceViolation"
    assert "H" not in s.collections["a"].holds


def test_deltas_consolidate_within_a_command():
    s = fr.FrontierState()
    create(s, "c", 0, 10)
    assert fr.decide(s, fr.ChangeReadHolds("H", (("c", 3, 1), ("c", 3, -1))), 0) == []
    # +2 then -1 at the same offset is one +1 change
    res = fr.decide(s, fr.ChangeReadHolds("H", (("c", 3, 2), ("c", 3, -1))), 0)
    assert res == [ReadHoldsChanged("H", (HoldChange("c", 3, 1),))]


def test_stale_upper_is_ignored_and_upper_only_advances():
    s = fr.FrontierState()
    create(s, "c", 0, 0, fr.StepBack())
    run(s, fr.UpdateWriteFrontiers((("c", 10, None),)))
    assert fr.decide(s, fr.UpdateWriteFrontiers((("c", 5, None),)), 0) == []
    assert fr.decide(s, fr.UpdateWriteFrontiers((("c", 10, None),)), 0) == []
    run(s, fr.UpdateWriteFrontiers((("c", None, None),)))  # sealed
    assert s.collections["c"].upper is None
    assert s.collections["c"].implied == 9  # step_back({}) = {0} does not move it back


def test_set_read_policy_does_not_recover_capability():
    s = fr.FrontierState()
    create(s, "c", 0, 100, fr.StepBack())
    run(s, fr.UpdateWriteFrontiers((("c", 200, None),)))
    assert s.collections["c"].since == 199
    run(s, fr.SetReadPolicies((("c", fr.LagWrites(50, 1)),)))
    c = s.collections["c"]
    assert c.policy == fr.LagWrites(50, 1) and c.implied == 199  # 150 would go backwards
    run(s, fr.UpdateWriteFrontiers((("c", 300, None),)))
    assert c.implied == 250 and c.since == 250


# --- M17–M21: drop and create ---------------------------------------------------------------


def test_m17_drop_with_no_other_holds():
    s = fr.FrontierState()
    create(s, "c", 0, 0, fr.StepBack())
    run(s, fr.UpdateWriteFrontiers((("c", 30, None),)))
    changes = run(s, fr.DropCollections(("c",)))
    assert changes == [fr.SinceChange("c", 29, None)]
    assert "c" not in s.collections and "c" in s.dropped
    assert fr.check_read(s, "c", 30).error == "CollectionMissing"
    # ids are never reused
    r = rejected(s, fr.CreateCollections((fr.NewCollection("c"),)))
    assert r.error == "CollectionIdReused"
    assert fr.check_compaction(s, "c", 10**9) is None  # everything may go


def test_m17_drop_honours_outstanding_holds():
    s = fr.FrontierState()
    create(s, "c", 0, 50)
    run(s, fr.ChangeReadHolds("replay:1", (("c", 10, 1),)))
    assert run(s, fr.DropCollections(("c",))) == [fr.SinceChange("c", 0, 10)]
    assert "c" in s.collections and s.collections["c"].implied is None
    assert run(s, fr.ReleaseHolder("replay:1")) == [fr.SinceChange("c", 10, None)]
    assert "c" not in s.collections


def test_m19_validated_drop_is_all_or_nothing():
    s = fr.FrontierState()
    create(s, "u1", 0, 10)
    r = rejected(s, fr.DropCollections(("u1", "u_missing")))
    assert r.error == "CollectionMissing" and "u_missing" in r.message
    assert s.collections["u1"].implied == 0


def test_m21_table_register_ts():
    s = fr.FrontierState()
    run(s, fr.CreateCollections((fr.NewCollection("t", 0, 0, register_ts=100),)))
    c = s.collections["t"]
    assert c.since == 100 and c.upper == 101
    assert fr.is_readable(s, "t", 100) and not fr.is_readable(s, "t", 99) and not fr.is_readable(s, "t", 101)


# --- M23–M25: exports -----------------------------------------------------------------------


def test_m23_create_exports_with_the_wrong_from_id():
    s = fr.FrontierState()
    create(s, "u1", 40, 50)
    create(s, "u2", 0, 50)
    run(s, fr.PrepareExport("s1", "u1"))
    assert s.collections["u1"].holds["export:s1"] == {40: 1}
    r = rejected(s, fr.CreateCollections((fr.NewCollection("s1", 0, 0, dependencies=("u2",), prepared=True),)))
    assert r.error == "InvalidUsage"
    assert r.message == "sink s1 was prepared using from_id u1, but is now presented with from_id u2"
    # cancelling the token instead gives {40: -1} on u1
    res = fr.decide(s, fr.ReleaseHolder("export:s1"), 0)
    assert res == [ReadHoldsChanged("export:s1", (HoldChange("u1", 40, -1),))]
    for e in res:
        s.apply(e)
    assert "export:s1" not in s.collections["u1"].holds and "s1" not in s.exports


def test_m23_prepared_export_token_becomes_the_dependency_hold():
    s = fr.FrontierState()
    create(s, "u1", 40, 50)
    run(s, fr.PrepareExport("s1", "u1"))
    run(s, fr.CreateCollections((fr.NewCollection("s1", 0, 0, fr.StepBack(), ("u1",), prepared=True),)))
    u1 = s.collections["u1"]
    assert "export:s1" not in u1.holds and u1.holds["collection:s1"] == {40: 1}
    assert s.collections["s1"].since == 40  # joined with the input's since
    assert rejected(s, fr.PrepareExport("s1", "u1")).error == "CollectionIdReused"


def test_m25_drop_sinks():
    s = fr.FrontierState()
    create(s, "u1", 0, 100)
    run(s, fr.CreateCollections((fr.NewCollection("s1", 49, 50, fr.StepBack(), ("u1",)),)))
    assert s.collections["u1"].holds["collection:s1"] == {49: 1}
    # the sink's upper becomes {}: its read capability becomes {} (policy ignored), the input
    # receives {49: -1}
    changes = run(s, fr.UpdateWriteFrontiers((("s1", None, None),)))
    assert fr.SinceChange("s1", 49, None) in changes
    assert "s1" not in s.collections and "s1" in s.dropped
    assert "collection:s1" not in s.collections["u1"].holds
    assert s.collections["u1"].read_capabilities() == {0: 1}


def test_dependency_holds_follow_the_since():
    s = fr.FrontierState()
    create(s, "u1", 0, 100)
    run(s, fr.CreateCollections((fr.NewCollection("s1", 10, 10, fr.StepBack(), ("u1",)),)))
    run(s, fr.SetReadPolicies((("u1", fr.ValidFrom(60)),)))
    assert s.collections["u1"].since == 10  # pinned by s1
    changes = run(s, fr.UpdateWriteFrontiers((("s1", 41, None),)))
    assert fr.SinceChange("s1", 10, 40) in changes and fr.SinceChange("u1", 10, 40) in changes
    assert s.collections["u1"].holds["collection:s1"] == {40: 1}


def test_a_dependency_chain_advancing_in_one_event():
    """u ← v ← w (v depends on u, w on v) with every implied capability moving in one event: v is
    touched itself and again through w, and its dependency hold on u must move from where it sits
    (its since before the event), not from its since of the moment. (``_settle`` used to release
    ``collection:v`` at 3 where it sat at 2 and raised "negative read capabilities".)"""
    s = fr.FrontierState()
    lag0 = fr.LagWrites(0)
    create(s, "u", 0, 10, lag0)
    create(s, "v", 2, 10, lag0, ("u",))
    create(s, "w", 3, 10, lag0, ("v",))
    run(s, fr.ChangeReadHolds("h", (("w", 5, 1),)))
    changes = run(s, fr.UpdateWriteFrontiers((("u", 20, None), ("v", 20, None), ("w", 20, None))))
    assert [c.since for c in s.collections.values()] == [5, 5, 5]
    assert s.collections["u"].holds == {"collection:v": {5: 1}}
    assert s.collections["v"].holds == {"collection:w": {5: 1}}
    # the last change reported per collection is its final since
    assert {c.collection_id: c.new for c in changes} == {"u": 5, "v": 5, "w": 5}
    # and a replay of the same events gives the same state
    replay = fr.FrontierState.from_dict(s.to_dict())
    assert replay.to_dict() == s.to_dict()


def test_release_of_a_dependency_holder_is_rejected():
    """``collection:<id>`` holds follow ``<id>``'s since; releasing them from outside used to be
    accepted and then crashed ``evolve`` (negative count) once the since moved."""
    s = fr.FrontierState()
    create(s, "u", 0, 10, fr.LagWrites(0))
    create(s, "v", 0, 10, fr.LagWrites(0), ("u",))
    assert rejected(s, fr.ReleaseHolder("collection:v")).error == "InvalidHolder"
    assert s.collections["u"].holds == {"collection:v": {0: 1}}
    run(s, fr.UpdateWriteFrontiers((("v", 17, None),)))
    assert s.collections["u"].holds == {"collection:v": {17: 1}}


def test_created_collections_record_their_transitive_dependencies():
    s = fr.FrontierState()
    create(s, "a")
    create(s, "b", deps=("a",))
    create(s, "c")
    res = fr.decide(s, fr.CreateCollections((fr.NewCollection("d", 0, 0, None, ("c", "b")),)), 0)
    (spec,) = res[0].collections
    assert spec.dependencies == ("c", "b") and spec.transitive_dependencies == ("a", "b", "c")


# --- M27–M29: reads ---------------------------------------------------------------------------


def test_m27_read_before_since():
    s = fr.FrontierState()
    create(s, "c", 9, 20)
    r = fr.check_read(s, "c", 3)
    assert r is not None and r.error == "ReadBeforeSince" and r.kafka_error == "OFFSET_OUT_OF_RANGE"
    assert fr.check_read(s, "c", 9) is None and fr.check_read(s, "c", 25) is None  # waits


def test_m29_snapshot_latest():
    s = fr.FrontierState()
    create(s, "a", 0, 10)
    create(s, "b", 0, 0)
    create(s, "c", 0, 5)
    run(s, fr.UpdateWriteFrontiers((("c", None, None),)))
    assert fr.snapshot_latest(s, "a") == 9
    assert fr.snapshot_latest(s, "b") is None
    r = fr.snapshot_latest(s, "c")
    assert isinstance(r, fr.Rejected) and r.error == "InvalidUsage"


# --- retention, compaction ----------------------------------------------------------------------


SEGS = (
    SegmentInfo(0, 100, 1000, 1_000),
    SegmentInfo(100, 200, 1000, 2_000),
    SegmentInfo(200, 300, 1000, 3_000),
)


def test_retention_by_time_follows_kafka_segment_deletion():
    p = fr.Retention(retention_ms=1_500, retention_bytes=-1)
    assert p.frontier(300, SEGS, now_ms=3_000) == 100  # only segment 0 is older than 1.5 s
    assert p.frontier(300, SEGS, now_ms=4_600) == 300
    assert p.frontier(150, SEGS, now_ms=10_000) == 100  # never beyond the high watermark
    assert fr.Retention(-1, -1).frontier(300, SEGS, 10**12) == 0


def test_retention_by_bytes_and_compact_only():
    assert fr.Retention(-1, 2000).frontier(300, SEGS, 0) == 100
    assert fr.Retention(-1, 999).frontier(300, SEGS, 0) == 200  # 3000-999: two segments fit
    assert fr.Retention(-1, 0).frontier(300, SEGS, 0) == 300
    assert fr.Retention(1, 1, delete=False).frontier(300, SEGS, 10**9) == 0


def test_enforce_retention_advances_with_time_but_holds_pin_it():
    s = fr.FrontierState()
    create(s, "t:0", 0, 0, fr.Retention(1_500, -1))
    run(s, fr.UpdateWriteFrontiers((("t:0", 300, SEGS),)), now_ms=1_000)
    assert s.collections["t:0"].since == 0
    run(s, fr.ChangeReadHolds("tiering", (("t:0", 100, 1),)))
    changes = run(s, fr.EnforceRetention(), now_ms=10_000)
    c = s.collections["t:0"]
    assert c.implied == 300 and c.since == 100  # tiering has not copied past 100 yet
    assert fr.check_compaction(s, "t:0", 100) is None
    assert fr.check_compaction(s, "t:0", 101).error == "CompactionBeyondSince"
    assert changes == [fr.SinceChange("t:0", 0, 100)]
    assert run(s, fr.DowngradeReadHold("tiering", "t:0", 250)) == [fr.SinceChange("t:0", 100, 250)]
    assert fr.decide(s, fr.EnforceRetention(), 20_000) == []  # nothing further to do


# --- properties -------------------------------------------------------------------------------

_cmds = st.lists(
    st.one_of(
        st.tuples(st.just("hold"), st.sampled_from(["h1", "h2", "share:g"]), st.sampled_from(["a", "b"]), st.integers(0, 40), st.integers(-2, 2)),
        st.tuples(st.just("upper"), st.sampled_from(["a", "b"]), st.integers(0, 60)),
        st.tuples(st.just("down"), st.sampled_from(["h1", "h2"]), st.sampled_from(["a", "b"]), st.one_of(st.none(), st.integers(0, 60))),
        st.tuples(st.just("release"), st.sampled_from(["h1", "h2", "share:g"])),
        st.tuples(st.just("drop"), st.sampled_from(["a", "b"])),
    ),
    max_size=40,
)


def _to_cmd(t):
    kind = t[0]
    if kind == "hold":
        return fr.ChangeReadHolds(t[1], ((t[2], t[3], t[4]),))
    if kind == "upper":
        return fr.UpdateWriteFrontiers(((t[1], t[2], None),))
    if kind == "down":
        return fr.DowngradeReadHold(t[1], t[2], t[3])
    if kind == "release":
        return fr.ReleaseHolder(t[1])
    return fr.DropCollections((t[1],))


@settings(max_examples=150, deadline=None)
@given(_cmds)
def test_property_since_is_meet_of_holds_and_replay_is_deterministic(cmds):
    s = fr.FrontierState()
    create(s, "a", 0, 0, fr.LagWrites(5, 1))
    create(s, "b", 3, 10, fr.StepBack())
    log = []
    for t in cmds:
        before_since = {cid: c.since for cid, c in s.collections.items()}
        res = fr.decide(s, _to_cmd(t), 0)
        if isinstance(res, fr.Rejected):
            continue
        for e in res:
            s.apply(e)
            log.append(e)
        for cid, c in s.collections.items():
            holds_total: dict[int, int] = {}
            for m in c.holds.values():
                for off, n in m.items():
                    assert n > 0
                    holds_total[off] = holds_total.get(off, 0) + n
            if c.implied is not None:
                holds_total[c.implied] = holds_total.get(c.implied, 0) + 1
            assert holds_total == c.read_capabilities()
            assert c.since == (min(holds_total) if holds_total else None)
            # the since only moves forward
            assert fr.frontier_le(before_since.get(cid, c.since), c.since)
    # a second fold of the same events and a snapshot round trip give the same state
    replay = fr.FrontierState()
    create(replay, "a", 0, 0, fr.LagWrites(5, 1))
    create(replay, "b", 3, 10, fr.StepBack())
    for e in log:
        replay.apply(e)
    assert replay.to_dict() == s.to_dict()
    assert fr.FrontierState.from_dict(s.to_dict()).to_dict() == s.to_dict()


def test_policy_dict_round_trip():
    for p in [fr.NoPolicy(3), fr.ValidFrom(None), fr.StepBack(), fr.LagWrites(5, 2), fr.Retention(10, 20, False), fr.Multiple([fr.StepBack(), fr.ValidFrom(4)])]:
        assert fr.policy_from_dict(p.to_dict()) == p
        text = fr.policy_to_json(p)  # the canonical text events carry
        assert fr.policy_from_json(text) == p and fr.policy_to_json(fr.policy_from_json(text)) == text
    assert fr.policy_to_json(fr.LagWrites(5, 2)) == '{"kind": "lag_writes", "lag": 5, "max_granularity": 2}'
    assert fr.Multiple([fr.StepBack(), fr.ValidFrom(4)]).frontier(10) == 4
    with pytest.raises(ValueError):
        fr.policy_from_dict({"kind": "nope"})


def test_repeated_ids_in_one_upper_report_never_regress():
    s = fr.FrontierState()
    create(s, "c", 0, 0, fr.StepBack())
    run(s, fr.UpdateWriteFrontiers((("c", 10, None), ("c", 5, None), ("c", 12, None))))
    c = s.collections["c"]
    assert (c.upper, c.implied, c.since) == (12, 11, 11)


def test_k7_delete_records_cannot_pass_the_high_watermark():
    s = fr.FrontierState()
    create(s, "t:0", 0, 0, fr.Retention(-1, -1))
    run(s, fr.UpdateWriteFrontiers((("t:0", 150, None),)))
    r = rejected(s, fr.DeleteRecords("t:0", 200))
    assert (r.error, r.kafka_error) == ("OffsetOutOfRange", "OFFSET_OUT_OF_RANGE")
    assert rejected(s, fr.DeleteRecords("t:0", -5)).kafka_error == "OFFSET_OUT_OF_RANGE"
    run(s, fr.ChangeReadHolds("share:g", (("t:0", 80, 1),)))
    assert run(s, fr.DeleteRecords("t:0", 100)) == [fr.SinceChange("t:0", 0, 80)]  # the hold pins it
    assert s.collections["t:0"].policy == fr.Retention(-1, -1)  # retention goes on from there
    assert fr.decide(s, fr.DeleteRecords("t:0", 90), 0) == []  # never backwards
    assert run(s, fr.ReleaseHolder("share:g")) == [fr.SinceChange("t:0", 80, 100)]
    run(s, fr.DeleteRecords("t:0", -1))  # -1: up to the high watermark
    assert s.collections["t:0"].since == 150
    assert fr.check_read(s, "t:0", 149).error == "ReadBeforeSince"
