"""``actors.share.limits``: which lookups may start a share group's actor (group.share.max.groups)."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from actors.share.config import InvalidConfig
from actors.share.limits import GroupRefusal, admit_share_group, census_from_stream_ids, max_groups_from


def test_an_existing_group_is_admitted_with_or_without_create_even_over_the_limit():
    known = {"a", "b", "c"}
    assert admit_share_group("b", known, create=False, max_groups=1) is None
    assert admit_share_group("b", known, create=True, max_groups=1) is None


def test_an_unknown_group_without_create_is_group_id_not_found():
    r = admit_share_group("ghost", {"a"}, create=False, max_groups=10)
    assert r == GroupRefusal("GROUP_ID_NOT_FOUND", "Share group ghost not found.")


def test_a_new_group_is_admitted_below_the_limit_and_refused_at_it():
    assert admit_share_group("n", {"a", "b"}, create=True, max_groups=3) is None
    r = admit_share_group("n", {"a", "b", "c"}, create=True, max_groups=3)
    assert r is not None and r.error == "GROUP_MAX_SIZE_REACHED"
    assert "group.share.max.groups" in r.message and "n" in r.message


@given(
    known=st.sets(st.text(min_size=1, max_size=3), max_size=12),
    requests=st.lists(st.tuples(st.text(min_size=1, max_size=3), st.booleans()), max_size=40),
    max_groups=st.integers(1, 8),
)
def test_census_never_grows_past_the_limit_and_known_groups_are_never_refused(known, requests, max_groups):
    census = set(known)
    start = len(census)
    for gid, create in requests:
        was_known = gid in census
        r = admit_share_group(gid, census, create, max_groups)
        if was_known:
            assert r is None
        if r is None and not was_known:
            assert create
            census.add(gid)
    assert len(census) <= max(start, max_groups)


def test_max_groups_default_and_range():
    assert max_groups_from({}) == 10
    assert max_groups_from({"group.share.max.groups": "50"}) == 50
    assert max_groups_from({"group.share.max.groups": "200"}) == 200  # above Kafka's 100: Shoal's bound is 10,000
    assert max_groups_from({"group.share.max.groups": "10000"}) == 10000
    for bad in ("0", "10001", "x"):
        with pytest.raises(InvalidConfig):
            max_groups_from({"group.share.max.groups": bad})


def test_census_from_stream_ids_keeps_only_share_group_streams():
    ids = ["controller", "share-group:a", "share-group:b:c", "rlmm-7", "journal"]
    assert census_from_stream_ids(ids) == {"a", "b:c"}


def test_deleted_by_tail_skips_session_audit_events():
    from actors.share.limits import deleted_by_tail

    assert deleted_by_tail(["share_group.GroupEpochBumped", "share_group.ShareGroupDeleted"]) is True
    assert deleted_by_tail(["share_group.ShareGroupDeleted", "share_group.ShareSessionClosed", "share_group.ShareSessionOpened"]) is True
    assert deleted_by_tail(["share_group.ShareGroupDeleted", "share_group.GroupConfigAltered"]) is False
    assert deleted_by_tail(["share.SharePartitionInitialized"]) is False
    assert deleted_by_tail(["share_group.ShareSessionClosed"]) is None  # look further back
    assert deleted_by_tail([]) is None


def test_census_from_log_reads_further_back_past_audit_events(tmp_path):
    from actors.share.limits import census_from_log
    from events.codec import new_event
    from events.share_group import GroupEpochBumped, ShareGroupDeleted, ShareSessionClosed, stream_id_for
    from store.event_log import open_event_log

    log = open_event_log(f"sqlite:///{tmp_path / 'e.db'}")
    log.append(stream_id_for("a"), [new_event(GroupEpochBumped("a", 1)), new_event(ShareGroupDeleted("a"))]
               + [new_event(ShareSessionClosed("a", f"m{i}", "EVICTED")) for i in range(5)])
    log.append(stream_id_for("b"), [new_event(GroupEpochBumped("b", 1))] + [new_event(ShareSessionClosed("b", f"m{i}", "EVICTED")) for i in range(5)])
    log.append("consumer-group:c", [new_event(GroupEpochBumped("c", 1))])
    assert census_from_log(log, tail=2) == {"b"}
    log.close()
