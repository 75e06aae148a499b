"""Every RLMM actor message survives a pickle round trip (Thespian's multiproc bases pickle them)."""

from __future__ import annotations

import inspect
import pickle

import pytest

import actors.rlmm.messages as messages
from actors.messages import Failure, NotReady
from events.rlmm_errors import (
    RemoteResourceNotFoundException,
    ReplicaNotAvailableException,
    error_name,
    exception_for,
)
from events.rlmm_types import RemotePartitionDeleteMetadata, RemotePartitionDeleteState
from tests.rlmm.helpers import CF, seg, tp, upd

P = tp("orders", 3)
S = seg(P, 0, 99, {0: 0, 4: 50}, txn_idx_empty=True)
SAMPLES = [
    messages.AddRemoteLogSegmentMetadata(S),
    messages.UpdateRemoteLogSegmentMetadata(upd(S, CF, custom=b"\x00\x01")),
    messages.PutRemotePartitionDeleteMetadata(
        RemotePartitionDeleteMetadata(P, RemotePartitionDeleteState.DELETE_PARTITION_STARTED, 5, 1)),
    messages.MetadataStored(7, 41, True),
    messages.GetRemoteLogSegmentMetadata(P, 4, 60),
    messages.GetNextSegmentWithTxnIndex(P, 4, 60),
    messages.GetHighestOffsetForEpoch(P, 4),
    messages.GetRemoteLogSize(P, 4),
    messages.ListRemoteLogSegments(P),
    messages.ListRemoteLogSegments(P, 4),
    messages.IsReady(P),
    messages.RlmmReply([S, S.create_with_updates(upd(S, CF))]),
    messages.RlmmReply(None),
    messages.ReconcileAssignment([P, tp("x", 1)]),
    messages.AssignmentReconciled(7, [P], [tp("y", 2)]),
    messages.TakeSnapshot(),
    messages.SnapshotTaken(7, 42, 1000),
    messages.RecoverStep(3),
    NotReady("rlmm:7"),
    Failure("RemoteResourceNotFoundException", "No resource found for partition: x"),
]


def test_every_message_class_has_a_sample():
    classes = {c for _, c in inspect.getmembers(messages, inspect.isclass) if c.__module__ == messages.__name__}
    assert classes <= {type(m) for m in SAMPLES}


@pytest.mark.parametrize("msg", SAMPLES, ids=lambda m: type(m).__name__)
def test_pickle_round_trip(msg):
    for protocol in (pickle.DEFAULT_PROTOCOL, pickle.HIGHEST_PROTOCOL):
        back = pickle.loads(pickle.dumps(msg, protocol))
        assert back == msg and type(back) is type(msg)


def test_errors_cross_boundaries_as_names():
    for exc in (RemoteResourceNotFoundException("gone"), ReplicaNotAvailableException("loading"), KeyError("x")):
        name = error_name(exc)
        rebuilt = exception_for(name, str(exc))
        assert type(rebuilt).__name__ == (type(exc).__name__ if not isinstance(exc, KeyError) else "KafkaException")
    assert error_name(ValueError("x")) == "KafkaException"
