"""Hypothesis properties of the share coordinator's state: the combiner against a per-offset oracle
(every offset ends with the highest-priority (delivery count, state) of the batches covering it,
nothing outside the inputs, output sorted and non-overlapping), and random write / read /
initialize / delete sequences whose records replay to the live store, with fenced requests writing
nothing and epochs never decreasing."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.share.errors import ShareError
from actors.share.state_store import ShareStateStore, SharePartitionKey, combine_state_batches

_batch = st.tuples(st.integers(0, 40), st.integers(0, 12), st.sampled_from([0, 2, 4]), st.integers(1, 4)).map(
    lambda t: (t[0], t[0] + t[1], t[2], t[3])
)


def _oracle(batches, start):
    best: dict[int, tuple[int, int]] = {}
    for f, l_, s, c in batches:
        for o in range(max(f, start) if start != -1 else f, l_ + 1):
            cur = best.get(o)
            if cur is None or (c, s) > cur:
                best[o] = (c, s)
    return best


@settings(max_examples=300, deadline=None)
@given(st.lists(_batch, max_size=6), st.lists(_batch, max_size=6), st.sampled_from([-1, 0, 5, 17, 30]))
def test_combiner_matches_per_offset_priority_oracle(so_far, new, start):
    out = combine_state_batches(so_far, new, start)
    for a, b in zip(out, out[1:]):
        assert a[1] < b[0], f"overlap or disorder in {out}"
    got: dict[int, tuple[int, int]] = {}
    for f, l_, s, c in out:
        assert f <= l_
        if start != -1:
            assert f >= start
        for o in range(f, l_ + 1):
            got[o] = (c, s)
    assert got == _oracle(list(so_far) + list(new), start)


GROUPS = ("g1", "g2")
TOPICS = (uuid.UUID(int=7), uuid.UUID(int=8))

_op = st.one_of(
    st.tuples(
        st.just("write"),
        st.sampled_from(GROUPS),
        st.sampled_from(TOPICS),
        st.integers(0, 1),
        st.integers(-1, 3),  # state epoch
        st.integers(-1, 3),  # leader epoch
        st.integers(-1, 30),  # start offset
        st.lists(_batch, max_size=3),
    ),
    st.tuples(st.just("read"), st.sampled_from(GROUPS), st.sampled_from(TOPICS), st.integers(0, 1), st.integers(-1, 4)),
    st.tuples(st.just("init"), st.sampled_from(GROUPS), st.sampled_from(TOPICS), st.integers(0, 1), st.integers(0, 3), st.integers(0, 30)),
    st.tuples(st.just("delete"), st.sampled_from(GROUPS), st.sampled_from(TOPICS), st.integers(0, 1)),
)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3), st.lists(_op, max_size=40))
def test_random_operations_replay_to_the_live_store(per_snapshot, ops):
    store = ShareStateStore(per_snapshot)
    log = []
    for op in ops:
        kind, group, topic, partition = op[:4]
        key = SharePartitionKey.of(group, topic, partition)
        epochs_before = (store.leader_epochs.get(key), store.state_epochs.get(key))
        before = store.snapshot()
        try:
            if kind == "write":
                _, _, _, _, se, le, so, batches = op
                records = store.decide_write(group, topic, partition, state_epoch=se, leader_epoch=le, start_offset=so, state_batches=batches)
                assert len(records) == 1
            elif kind == "read":
                result, records = store.decide_read(group, topic, partition, op[4])
                assert len(records) <= 1
            elif kind == "init":
                records = store.decide_initialize(group, topic, partition, state_epoch=op[4], start_offset=op[5])
            else:
                records = store.decide_delete(group, topic, partition)
        except ShareError as err:
            assert err.error_name in ("FENCED_LEADER_EPOCH", "FENCED_STATE_EPOCH", "INVALID_REQUEST")
            assert store.snapshot() == before
            continue
        assert store.snapshot() == before, "deciders are pure"
        for r in records:
            store.apply(r)
        log += records
        if kind != "delete":
            le_b, se_b = epochs_before
            le_a, se_a = store.leader_epochs.get(key), store.state_epochs.get(key)
            assert le_b is None or (le_a is not None and le_a >= le_b)
            assert se_b is None or (se_a is not None and se_a >= se_b)
        state = store.share_state.get(key)
        if state is not None:
            for a, b in zip(state.state_batches, state.state_batches[1:]):
                assert a[1] < b[0]
    assert ShareStateStore.replay(log, per_snapshot).snapshot() == store.snapshot()
