"""The share coordinator's durable state (``actors.share.state_store``): the odd-numbered
ShareCoordinatorShardTest (#67–#77) and PersisterStateBatchCombinerTest (#79, #81) scenarios of the
reference's §6, Kafka's full combiner case table, snapshot cadence, and the state-partition hash.

Expected values come from Kafka: the combiner cases are copied from
``share-coordinator/src/test/java/.../PersisterStateBatchCombinerTest.java`` (Kafka's own expected
lists), the hash values were computed with Java 17's ``String.hashCode`` (see
``test_java_string_hash_matches_java``).
"""

from __future__ import annotations

import uuid

import pytest

from actors.share.errors import FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH, INVALID_REQUEST, ShareError
from actors.share.state_store import (
    ShareGroupOffset,
    SharePartitionKey,
    ShareStateStore,
    combine_state_batches,
    java_string_hash,
    partition_for_coordinator_key,
    share_state_partition_for,
)
from events.share import ShareSnapshotWritten, ShareStateDeleted, ShareUpdateWritten
from events.share_records import kafka_uuid_to_string

TOPIC = uuid.UUID("5f2b8c1e-9a47-4d2b-8b36-0c3f2a1d4e55")
TOPIC_B64 = kafka_uuid_to_string(TOPIC)
GROUP = "group1"


def write(store: ShareStateStore, *, leader=0, state=0, start=0, batches=((0, 10, 0, 1),), partition=0):
    return store.write(GROUP, TOPIC, partition, state_epoch=state, leader_epoch=leader, start_offset=start, state_batches=list(batches))


# ----------------------------------------------------------------------------- ShareCoordinatorShardTest


def test_testWriteStateSuccess():
    store = ShareStateStore()
    records = write(store)
    assert records == [ShareSnapshotWritten(GROUP, TOPIC_B64, 0, 0, 0, 0, 0, ((0, 10, 0, 1),))]
    key = SharePartitionKey.of(GROUP, TOPIC, 0)
    assert store.share_state[key] == ShareGroupOffset(0, 0, 0, 0, ((0, 10, 0, 1),))
    assert store.leader_epochs[key] == 0


def test_testWriteStateFencedLeaderEpochError():
    store = ShareStateStore()
    write(store, leader=5)
    before = store.snapshot()
    with pytest.raises(ShareError) as exc:
        store.decide_write(GROUP, TOPIC, 0, state_epoch=0, leader_epoch=3, start_offset=0, state_batches=[(0, 10, 0, 1)])
    assert exc.value.error_name == FENCED_LEADER_EPOCH and exc.value.code == 74
    assert store.snapshot() == before
    assert store.leader_epochs[SharePartitionKey.of(GROUP, TOPIC, 0)] == 5


def test_testWriteStateFencedStateEpochError():
    store = ShareStateStore()
    write(store, state=5)
    with pytest.raises(ShareError) as exc:
        store.decide_write(GROUP, TOPIC, 0, state_epoch=4, leader_epoch=0, start_offset=0)
    assert exc.value.error_name == FENCED_STATE_EPOCH and exc.value.code == 124
    # the leader epoch is checked first
    write(store, leader=7, state=5)
    with pytest.raises(ShareError) as exc:
        store.decide_write(GROUP, TOPIC, 0, state_epoch=4, leader_epoch=6, start_offset=0)
    assert exc.value.error_name == FENCED_LEADER_EPOCH


def test_write_with_unchanged_epochs_is_never_fenced():
    """Kafka 4.x ``ShareCoordinatorShard.maybeGetWriteStateError`` fences only a request epoch that
    is not -1: -1 means "unchanged" (the snapshot then keeps the stored value)."""
    store = ShareStateStore(0)  # every write a snapshot, so the -1 substitution shows
    write(store, leader=5, state=3, start=10, batches=((10, 14, 0, 1),))
    records = store.write(GROUP, TOPIC, 0, state_epoch=-1, leader_epoch=-1, start_offset=-1, state_batches=[(12, 12, 2, 1)])
    assert len(records) == 1 and isinstance(records[0], ShareSnapshotWritten)
    assert (records[0].leader_epoch, records[0].state_epoch, records[0].start_offset) == (5, 3, 10)
    assert records[0].state_batches == ((10, 11, 0, 1), (12, 12, 2, 1), (13, 14, 0, 1))
    key = SharePartitionKey.of(GROUP, TOPIC, 0)
    assert (store.leader_epochs[key], store.state_epochs[key]) == (5, 3)
    # a real (non -1) smaller epoch is still fenced, leader epoch first
    with pytest.raises(ShareError) as exc:
        store.decide_write(GROUP, TOPIC, 0, state_epoch=-1, leader_epoch=4, start_offset=-1)
    assert exc.value.error_name == FENCED_LEADER_EPOCH
    with pytest.raises(ShareError) as exc:
        store.decide_write(GROUP, TOPIC, 0, state_epoch=2, leader_epoch=-1, start_offset=-1)
    assert exc.value.error_name == FENCED_STATE_EPOCH


def test_testWriteStateInvalidRequestData():
    store = ShareStateStore()
    with pytest.raises(ShareError) as exc:
        write(store, partition=-1)
    assert exc.value.error_name == INVALID_REQUEST
    assert exc.value.message == "The partition id cannot be a negative number."
    assert store.share_state == {}


def test_testReadStateSuccess():
    store = ShareStateStore()
    write(store)
    result, records = store.read(GROUP, TOPIC, 0, leader_epoch=1)
    assert (result.start_offset, result.state_epoch, result.state_batches) == (0, 0, ((0, 10, 0, 1),))
    assert store.leader_epochs[SharePartitionKey.of(GROUP, TOPIC, 0)] == 1
    # Kafka 4.x records the new leader epoch (readStateAndMaybeUpdateLeaderEpoch): one update record
    assert records == [ShareUpdateWritten(GROUP, TOPIC_B64, 0, 0, 1, -1, ())]
    # the state itself is unchanged
    assert store.state_for(GROUP, TOPIC, 0).state_batches == ((0, 10, 0, 1),)
    assert store.state_for(GROUP, TOPIC, 0).start_offset == 0
    with pytest.raises(ShareError) as exc:
        store.decide_read(GROUP, TOPIC, 0, leader_epoch=0)
    assert exc.value.error_name == FENCED_LEADER_EPOCH


def test_read_unknown_key_is_uninitialised():
    result, records = ShareStateStore().decide_read(GROUP, TOPIC, 3, leader_epoch=0)
    assert (result.start_offset, result.state_epoch, result.state_batches, records) == (-1, 0, (), [])


def test_testReplayWithShareSnapshot():
    store = ShareStateStore()
    store.apply(ShareSnapshotWritten(GROUP, TOPIC_B64, 0, 0, 0, 1, 0, ((0, 10, 0, 1),)))
    store.apply(ShareSnapshotWritten(GROUP, TOPIC_B64, 0, 1, 1, 2, 0, ((11, 12, 2, 1),)))
    key = SharePartitionKey(GROUP, TOPIC_B64, 0)
    assert store.share_state[key] == ShareGroupOffset(1, 1, 2, 0, ((11, 12, 2, 1),))
    assert store.leader_epochs[key] == 2


def test_testInitializeStateSuccess():
    store = ShareStateStore()
    records = store.initialize(GROUP, TOPIC, 0, state_epoch=5, start_offset=10)
    assert len(records) == 1 and isinstance(records[0], ShareSnapshotWritten)
    assert (records[0].start_offset, records[0].state_epoch, records[0].state_batches) == (10, 5, ())
    assert store.state_for(GROUP, TOPIC, 0).start_offset == 10


def test_testInitializeStateInvalidRequestData():
    store = ShareStateStore()
    store.initialize(GROUP, TOPIC, 0, state_epoch=5, start_offset=10)
    with pytest.raises(ShareError) as exc:
        store.decide_initialize(GROUP, TOPIC, 0, state_epoch=0, start_offset=0)
    assert exc.value.error_name == FENCED_STATE_EPOCH
    with pytest.raises(ShareError) as exc:
        store.decide_initialize(GROUP, TOPIC, -1, state_epoch=0, start_offset=0)
    assert exc.value.error_name == INVALID_REQUEST


def test_testDeleteStateSuccess():
    store = ShareStateStore()
    write(store, leader=2, state=3)
    records = store.delete(GROUP, TOPIC, 0)
    assert records == [ShareStateDeleted(GROUP, TOPIC_B64, 0)]
    assert store.share_state == {} and store.leader_epochs == {} and store.state_epochs == {}
    assert store.snapshot_update_count == {}


def test_testDeleteStateUninitializedRecord():
    assert ShareStateStore().delete(GROUP, TOPIC, 0) == []


# ----------------------------------------------------------------------------- snapshot cadence


@pytest.mark.parametrize("per_snapshot", [0, 1, 3, 500])
def test_snapshot_update_cadence(per_snapshot):
    """With N updates per snapshot the first cycle takes N+1 updates, later cycles N; N=0 makes
    every write a snapshot (ShareCoordinatorShard replay counting, §4 of the reference)."""
    store = ShareStateStore(per_snapshot)
    kinds, snapshot_epochs = [], []
    for i in range(2 * per_snapshot + 4):
        rec = write(store, start=i, batches=((i, i, 2, 1),))[0]
        kinds.append("S" if isinstance(rec, ShareSnapshotWritten) else "U")
        if isinstance(rec, ShareSnapshotWritten):
            snapshot_epochs.append(rec.snapshot_epoch)
        else:  # an update carries the epoch of the snapshot it follows
            assert rec.snapshot_epoch == snapshot_epochs[-1]
    if per_snapshot == 0:
        assert set(kinds) == {"S"}
    else:
        first_cycle = ["S"] + ["U"] * (per_snapshot + 1) + ["S"]
        assert kinds[: len(first_cycle)] == first_cycle
        nxt = kinds[len(first_cycle) :][: per_snapshot + 1]
        assert nxt == (["U"] * per_snapshot + ["S"])[: len(nxt)]
    # snapshot epochs increase by one per snapshot; the state is the fold of all of it
    assert snapshot_epochs == list(range(len(snapshot_epochs)))
    state = store.state_for(GROUP, TOPIC, 0)
    n = 2 * per_snapshot + 4
    assert state.start_offset == n - 1 and state.state_batches == ((n - 1, n - 1, 2, 1),)


def test_snapshot_epoch_is_an_int32_in_kafka_4():
    """ShareSnapshotValue.SnapshotEpoch is an int32 in Kafka 4.x (a uint16 in the late-2024 schema):
    the next snapshot after 65535 is 65536, not 0."""
    store = ShareStateStore(0)
    store.apply(ShareSnapshotWritten(GROUP, TOPIC_B64, 0, 65535, 0, 0, 0, ()))
    assert write(store)[0].snapshot_epoch == 65536
    assert store.initialize(GROUP, TOPIC, 0, state_epoch=1, start_offset=0)[0].snapshot_epoch == 65537


def test_update_then_snapshot_state_equals_replay():
    store = ShareStateStore(2)
    log = []
    log += write(store, start=0, batches=((0, 9, 0, 1),))
    log += write(store, start=0, batches=((0, 4, 2, 1),))
    log += write(store, start=5, batches=((5, 9, 4, 2),))
    log += write(store, start=-1, batches=((10, 19, 0, 1),))
    log += write(store, start=10, batches=((12, 12, 2, 1),))
    assert ShareStateStore.replay(log, 2).snapshot() == store.snapshot()
    state = store.state_for(GROUP, TOPIC, 0)
    assert state.start_offset == 10
    assert state.state_batches == ((10, 11, 0, 1), (12, 12, 2, 1), (13, 19, 0, 1))


def test_per_snapshot_setting_range():
    for bad in (-1, 501):
        with pytest.raises(ValueError):
            ShareStateStore(bad)


# ----------------------------------------------------------------------------- combiner

KAFKA_COMBINER_CASES = [
    ("Current batches with start offset midway are pruned.", [(100, 130, 0, 1)], [], [(120, 130, 0, 1)], 120),
    ("New batches with start offset midway are pruned.", [], [(100, 130, 0, 1)], [(120, 130, 0, 1)], 120),
    ("Both current and new batches empty.", [], [], [], 120),
    ("Same state. same first and last offset.", [(100, 110, 0, 1)], [(100, 110, 0, 1)], [(100, 110, 0, 1)], -1),
    ("Same state. same first offset, new last smaller.", [(100, 110, 0, 1)], [(100, 105, 0, 1)], [(100, 110, 0, 1)], -1),
    ("Same state. same first offset, new last larger.", [(100, 110, 0, 1)], [(100, 115, 0, 1)], [(100, 115, 0, 1)], -1),
    ("Same state. new strictly inside.", [(100, 110, 0, 1)], [(105, 108, 0, 1)], [(100, 110, 0, 1)], -1),
    ("Same state. new first larger, last equal.", [(100, 110, 0, 1)], [(105, 110, 0, 1)], [(100, 110, 0, 1)], -1),
    ("Same state. new first and last larger.", [(100, 110, 0, 1)], [(105, 115, 0, 1)], [(100, 115, 0, 1)], -1),
    ("Same state. contiguous.", [(100, 110, 0, 1)], [(111, 115, 0, 1)], [(100, 115, 0, 1)], -1),
    # Kafka's table expects [(100,110,0,1),(111,123,2,2)] here, dropping 124-130 — a wrong
    # expectation in a case that never runs (shouldRun=false; the reference's §6/§7 notes it). The
    # algorithm keeps 124-130, as the "with pruning" variant below expects too.
    (
        "Handle overlapping batches in newBatches, same state",
        [(100, 110, 0, 1), (121, 130, 0, 1)],
        [(111, 119, 2, 2), (116, 123, 2, 2)],
        [(100, 110, 0, 1), (111, 123, 2, 2), (124, 130, 0, 1)],
        -1,
    ),
    (
        "Handle overlapping batches in newBatches, different priority.",
        [(100, 110, 0, 1)],
        [(101, 105, 1, 2), (101, 115, 2, 2), (101, 120, 3, 2)],
        [(100, 100, 0, 1), (101, 120, 3, 2)],
        -1,
    ),
    (
        "Handle overlapping batches in newBatches, with pruning.",
        [(100, 110, 0, 1), (121, 130, 0, 1)],
        [(111, 119, 2, 2), (116, 123, 2, 2)],
        [(120, 123, 2, 2), (124, 130, 0, 1)],
        120,
    ),
    ("newBatch higher. same range.", [(100, 110, 0, 1)], [(100, 110, 0, 2)], [(100, 110, 0, 2)], -1),
    ("newBatch lower. same range.", [(100, 110, 0, 3)], [(100, 110, 0, 1)], [(100, 110, 0, 3)], -1),
    ("newBatch higher. same first, last smaller.", [(100, 110, 0, 1)], [(100, 105, 0, 2)], [(100, 105, 0, 2), (106, 110, 0, 1)], -1),
    ("newBatch lower. same first, last smaller.", [(100, 110, 0, 3)], [(100, 105, 0, 1)], [(100, 110, 0, 3)], -1),
    ("newBatch higher. same first, last larger.", [(100, 110, 0, 1)], [(100, 115, 0, 2)], [(100, 115, 0, 2)], -1),
    ("newBatch lower. same first, last larger.", [(100, 110, 0, 3)], [(100, 115, 0, 1)], [(100, 110, 0, 3), (111, 115, 0, 1)], -1),
    ("newBatch lower. strictly inside.", [(100, 115, 1, 1)], [(105, 110, 0, 1)], [(100, 115, 1, 1)], -1),
    ("newBatch higher. first larger, last same.", [(100, 110, 0, 1)], [(105, 110, 0, 2)], [(100, 104, 0, 1), (105, 110, 0, 2)], -1),
    ("newBatch lower. first larger, last same.", [(100, 110, 0, 2)], [(105, 110, 0, 1)], [(100, 110, 0, 2)], -1),
    ("newBatch higher. first and last larger.", [(100, 110, 0, 1)], [(105, 115, 0, 2)], [(100, 104, 0, 1), (105, 115, 0, 2)], -1),
    ("newBatch lower. first and last larger.", [(100, 110, 0, 2)], [(105, 115, 0, 1)], [(100, 110, 0, 2), (111, 115, 0, 1)], -1),
]


@pytest.mark.parametrize("name, so_far, new, expected, start", KAFKA_COMBINER_CASES, ids=[c[0] for c in KAFKA_COMBINER_CASES])
def test_testStateBatchCombine_kafka_cases(name, so_far, new, expected, start):
    assert combine_state_batches(so_far, new, start) == expected


def test_testStateBatchCombineSameState_contiguous():
    # scenario #79: contiguous same state unions
    assert combine_state_batches([(100, 110, 0, 1)], [(111, 115, 0, 1)], -1) == [(100, 115, 0, 1)]


def test_testStateBatchCombineComplexCases_multiple_higher_state_updates():
    # scenario #81
    assert combine_state_batches(
        [(111, 120, 0, 1)], [(111, 113, 0, 2), (114, 114, 2, 1), (115, 119, 0, 2)], -1
    ) == [(111, 113, 0, 2), (114, 114, 2, 1), (115, 119, 0, 2), (120, 120, 0, 1)]


def test_combiner_reference_examples():
    assert combine_state_batches([(100, 110, 0, 1)], [(105, 110, 0, 2)], -1) == [(100, 104, 0, 1), (105, 110, 0, 2)]
    assert combine_state_batches([(100, 115, 0, 1)], [(105, 110, 1, 1)], -1) == [(100, 104, 0, 1), (105, 110, 1, 1), (111, 115, 0, 1)]
    assert combine_state_batches([(100, 110, 0, 3)], [(100, 105, 0, 1)], -1) == [(100, 110, 0, 3)]


# ----------------------------------------------------------------------------- key → state partition


def test_java_string_hash_matches_java():
    # computed with Java 17: System.out.println(s.hashCode())
    assert java_string_hash("group1:AAAAAAAAAAAAAAAAAAAAAQ:0") == 1506717070
    assert java_string_hash("test-group:AAAAAAAAAAAAAAAAAAAAAg:5") == -179948425
    assert java_string_hash("grüppe-ü€𝄞:W9vZ7_kAQAOAAAAAAAAAAQ:12") == 465139102  # non-BMP: UTF-16 surrogates
    assert java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE
    assert java_string_hash("a") == 97 and java_string_hash("") == 0


def test_share_state_partition_for_worked_examples():
    assert kafka_uuid_to_string(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert share_state_partition_for("group1", uuid.UUID(int=1), 0) == 20
    assert share_state_partition_for("group1", uuid.UUID(int=1), 1) == 21
    assert share_state_partition_for("test-group", uuid.UUID(int=2), 5) == 25
    # the topic id may be given as UUID text or Kafka's base64 text
    assert share_state_partition_for("group1", "AAAAAAAAAAAAAAAAAAAAAQ", 0) == 20
    assert share_state_partition_for("group1", str(uuid.UUID(int=1)), 0, 7) == 1506717070 % 7


def test_share_state_partition_for_min_value_hash_is_zero():
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE; Kafka's Utils.abs maps it to 0
    assert partition_for_coordinator_key("polygenelubricants", 50) == 0
    assert partition_for_coordinator_key("a", 50) == 47
    with pytest.raises(ValueError):
        share_state_partition_for("g", uuid.UUID(int=1), 0, 0)


def test_share_partition_state_survives_a_restart_through_the_coordinator_records():
    """live SharePartition → coordinator write → Kafka binary records → replayed store → read →
    a new SharePartition: the same non-acquired state (locks do not survive, as in Kafka)."""
    from actors.share.partition import SharePartition
    from events.share_records import decode_share_record, encode_share_record

    sp = SharePartition(GROUP, str(TOPIC), 0)
    sp.initialize(100, 2)
    sp.acquire("m1", [(100, 149), (150, 199)], 500, 0, 1000)
    sp.acknowledge("m1", [(100, 109, [1]), (110, 119, [2]), (120, 129, [3])], 1)
    sp.acquire("m2", [(110, 119)], 500, 2, 1000)  # re-delivered: dc 2, acquired
    store = ShareStateStore(1)
    log = []
    for _ in range(3):  # snapshot, update, update → the cadence is exercised
        log += store.write(GROUP, TOPIC, 0, state_epoch=2, leader_epoch=0, start_offset=sp.start_offset, state_batches=sp.state_batches())
    log += store.decide_write_share_partition(sp)
    for r in log[-1:]:
        store.apply(r)
    wire = [encode_share_record(r) for r in log]
    restored = ShareStateStore.replay([decode_share_record(k, v) for k, v in wire], 1)
    assert restored.snapshot() == store.snapshot()
    result, _ = restored.read(GROUP, TOPIC, 0, leader_epoch=1)
    again = SharePartition(GROUP, str(TOPIC), 0)
    again.initialize(result.start_offset, result.state_epoch, result.state_batches)
    assert again.start_offset == sp.start_offset == 110
    assert again.state_epoch == 2
    for o in range(110, 200):
        live, back = sp.record_state(o), again.record_state(o)
        # an acquisition is never persisted: an ACQUIRED record comes back AVAILABLE with the
        # delivery count it had before (Kafka writes state only when an acquisition ends)
        expected = (0, live[1] - 1) if live[0] == 1 else (int(live[0]), live[1])
        assert (int(back[0]), back[1], back[2], back[3]) == (*expected, "", None), o
    assert again.next_fetch_offset() == 110
