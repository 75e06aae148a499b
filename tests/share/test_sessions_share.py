"""Share sessions (ShareFetch / ShareAcknowledge epochs): ``SharePartitionManagerTest`` scenarios."""

from __future__ import annotations

import pytest

from actors.share.errors import ShareError
from actors.share.sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    ShareSessions,
    decide_share_acknowledge,
    decide_share_fetch,
    next_epoch,
)

TP0, TP1, TP2 = ("T", 0), ("T", 1), ("U", 0)


def fetch(sessions, member, epoch, parts=(), forgotten=(), acks=False, now=0):
    d = decide_share_fetch(sessions, member, epoch, parts, forgotten, acks)
    sessions.apply(d, now)
    return d


def error_of(fn, *args):
    with pytest.raises(ShareError) as exc:
        fn(*args)
    return exc.value.error_name


def test_ShareRequestMetadata_nextEpoch():
    assert next_epoch(INITIAL_EPOCH) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH
    assert next_epoch(7) == 8
    assert next_epoch(2**31 - 1) == 1


def test_SharePartitionManagerTest_testNewContext():
    # Scenario #61.
    s = ShareSessions()
    d = fetch(s, "m1", INITIAL_EPOCH, [TP0, TP1])
    assert (d.kind, d.epoch_after, d.partitions) == ("NEW", 1, (TP0, TP1))
    assert s.get("m1").epoch == 1
    # continuing an existing session with epoch 5 (expected 1)
    assert error_of(decide_share_fetch, s, "m1", 5, [TP0]) == "INVALID_SHARE_SESSION_EPOCH"
    # a member without a session continuing with epoch 1
    assert error_of(decide_share_fetch, s, "m2", 1, [TP0]) == "SHARE_SESSION_NOT_FOUND"
    # the right epoch: partitions added, forgotten removed, epoch bumped
    d = fetch(s, "m1", 1, [TP2], forgotten=[TP0])
    assert (d.kind, d.epoch_after, d.added, d.forgotten, d.partitions) == ("UPDATE", 2, (TP2,), (TP0,), (TP1, TP2))
    # FINAL_EPOCH gives a final context; the cache keeps its size until the release runs
    d = decide_share_fetch(s, "m1", FINAL_EPOCH, [])
    assert d.kind == "FINAL" and len(s.sessions) == 1
    s.apply(d, 0)
    assert s.get("m1") is None


def test_initial_fetch_with_acknowledgements_is_invalid_request():
    s = ShareSessions()
    assert error_of(decide_share_fetch, s, "m1", INITIAL_EPOCH, [TP0], (), True) == "INVALID_REQUEST"
    assert s.sessions == {}


def test_initial_epoch_replaces_an_existing_session():
    s = ShareSessions()
    fetch(s, "m1", 0, [TP0])
    fetch(s, "m1", 1, [TP1])
    d = fetch(s, "m1", 0, [TP2])
    assert d.replaced and s.get("m1").epoch == 1 and s.get("m1").partitions == {TP2}


def test_SharePartitionManagerTest_testShareSessionExpiration():
    # Scenario #63 as Kafka 4.1+ behaves: sessions are no longer evicted by idleness; a full cache
    # refuses a new session with SHARE_SESSION_LIMIT_REACHED, and a session freed by its member's
    # FINAL epoch makes room again.
    s = ShareSessions(max_sessions=2)
    fetch(s, "s1", 0, [TP0], now=0)
    fetch(s, "s2", 0, [TP0], now=500)
    fetch(s, "s1", 1, [TP0], now=1000)
    assert error_of(decide_share_fetch, s, "s3", 0, [TP0]) == "SHARE_SESSION_LIMIT_REACHED"
    # an existing member may always re-initialise its own session
    fetch(s, "s2", 0, [TP1], now=1501)
    fetch(s, "s2", FINAL_EPOCH, now=1600)
    d = fetch(s, "s3", 0, [TP0], now=1700)
    assert d.kind == "NEW" and set(s.sessions) == {("s1", -1), ("s3", -1)}


def test_SharePartitionManagerTest_testReleaseSessionWithIncorrectGroupId():
    # Scenario #65: releasing (FINAL epoch) a session that does not exist -> SHARE_SESSION_NOT_FOUND.
    s = ShareSessions()
    fetch(s, "m1", 0, [TP0])
    assert error_of(decide_share_fetch, s, "other-member", FINAL_EPOCH, []) == "SHARE_SESSION_NOT_FOUND"
    assert error_of(decide_share_acknowledge, s, "other-member", FINAL_EPOCH) == "SHARE_SESSION_NOT_FOUND"
    assert s.get("m1") is not None


def test_share_acknowledge_epochs():
    s = ShareSessions()
    assert error_of(decide_share_acknowledge, s, "m1", 1) == "SHARE_SESSION_NOT_FOUND"
    fetch(s, "m1", 0, [TP0])
    assert error_of(decide_share_acknowledge, s, "m1", INITIAL_EPOCH) == "INVALID_SHARE_SESSION_EPOCH"
    assert error_of(decide_share_acknowledge, s, "m1", 2) == "INVALID_SHARE_SESSION_EPOCH"
    d = decide_share_acknowledge(s, "m1", 1)
    s.apply(d, 0)
    assert s.get("m1").epoch == 2
    d = decide_share_acknowledge(s, "m1", FINAL_EPOCH)
    assert d.kind == "FINAL" and d.partitions == (TP0,)


def test_decisions_never_mutate_sessions():
    s = ShareSessions()
    fetch(s, "m1", 0, [TP0])
    before = (s.get("m1").epoch, set(s.get("m1").partitions))
    decide_share_fetch(s, "m1", 1, [TP1], [TP0])
    decide_share_acknowledge(s, "m1", 1)
    assert (s.get("m1").epoch, s.get("m1").partitions) == before


def test_sessions_of_one_member_with_different_nodes_are_independent():
    """(member, node) keys a session: a client keeps one per broker it fetches from."""
    s = ShareSessions()
    for node in (-1, 2):
        s.apply(decide_share_fetch(s, "m", 0, [("t", node + 2)], node_id=node), 0)
    assert set(s.sessions) == {("m", -1), ("m", 2)}
    s.apply(decide_share_fetch(s, "m", 1, [], node_id=2), 0)  # node 2's session moves to epoch 2
    assert s.get("m").epoch == 1 and s.get("m", 2).epoch == 2
    with pytest.raises(ShareError) as e:
        decide_share_fetch(s, "m", 2, [])  # the local session is still at 1
    assert e.value.error_name == "INVALID_SHARE_SESSION_EPOCH"
    d = decide_share_acknowledge(s, "m", -1, node_id=2)
    assert d.kind == "FINAL" and d.partitions == (("t", 4),)
    s.apply(d, 0)
    assert [x.node_id for x in s.of_member("m")] == [-1]
