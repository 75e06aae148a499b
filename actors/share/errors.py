"""Kafka's errors for the share domain, as one Python exception type carrying the Kafka name and code.

The names and codes come from :class:`kio.schema.errors.ErrorCode` (the generated copy of Kafka's
``org.apache.kafka.common.protocol.Errors``), so ``ShareError("INVALID_RECORD_STATE").code == 121``
exactly as on the wire. Errors cross actor boundaries as the ``error_name`` string
(``Failure(error_name, message)``), never as exception objects.

Kafka's share-partition code throws ``InvalidRecordStateException`` (121) and
``InvalidRequestException`` (42) from ``SharePartition.acknowledge`` / ``releaseAcquiredRecords``;
the share coordinator answers ``FENCED_STATE_EPOCH`` (124), ``FENCED_LEADER_EPOCH`` (74),
``INVALID_REQUEST`` and ``UNKNOWN_TOPIC_OR_PARTITION`` (3) (``ShareCoordinatorShard``); the
persister error mapping is ``SharePartition.fetchPersisterError`` (see
:func:`persister_error_to_share_error`).
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = [
    "COORDINATOR_LOAD_IN_PROGRESS",
    "COORDINATOR_NOT_AVAILABLE",
    "FENCED_LEADER_EPOCH",
    "FENCED_STATE_EPOCH",
    "GROUP_ID_NOT_FOUND",
    "INVALID_RECORD_STATE",
    "INVALID_REQUEST",
    "INVALID_SHARE_SESSION_EPOCH",
    "LEADER_NOT_AVAILABLE",
    "NONE",
    "NOT_COORDINATOR",
    "NOT_LEADER_OR_FOLLOWER",
    "SHARE_SESSION_NOT_FOUND",
    "UNKNOWN_SERVER_ERROR",
    "UNKNOWN_TOPIC_ID",
    "UNKNOWN_TOPIC_OR_PARTITION",
    "ShareError",
    "error_code",
    "persister_error_to_share_error",
]

NONE = "NONE"
INVALID_RECORD_STATE = "INVALID_RECORD_STATE"
INVALID_REQUEST = "INVALID_REQUEST"
FENCED_STATE_EPOCH = "FENCED_STATE_EPOCH"
FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"
UNKNOWN_TOPIC_OR_PARTITION = "UNKNOWN_TOPIC_OR_PARTITION"
UNKNOWN_TOPIC_ID = "UNKNOWN_TOPIC_ID"
UNKNOWN_SERVER_ERROR = "UNKNOWN_SERVER_ERROR"
COORDINATOR_NOT_AVAILABLE = "COORDINATOR_NOT_AVAILABLE"
COORDINATOR_LOAD_IN_PROGRESS = "COORDINATOR_LOAD_IN_PROGRESS"
NOT_COORDINATOR = "NOT_COORDINATOR"
GROUP_ID_NOT_FOUND = "GROUP_ID_NOT_FOUND"
NOT_LEADER_OR_FOLLOWER = "NOT_LEADER_OR_FOLLOWER"
LEADER_NOT_AVAILABLE = "LEADER_NOT_AVAILABLE"
SHARE_SESSION_NOT_FOUND = "SHARE_SESSION_NOT_FOUND"
INVALID_SHARE_SESSION_EPOCH = "INVALID_SHARE_SESSION_EPOCH"


def error_code(error_name: str) -> int:
    """Kafka's int16 error code for an upper-case error name (``"INVALID_RECORD_STATE"`` → 121).

    Raises ``KeyError`` for a name Kafka does not define (looked up in kio's ``ErrorCode``).
    """
    return int(ErrorCode[error_name.lower()])


class ShareError(Exception):
    """A share-domain failure with Kafka's error name (``error_name``) and code (``code``).

    ``ShareError(name, message)``; ``name`` must be a Kafka error name (``ValueError`` otherwise).
    ``str(err)`` is ``"NAME: message"``. Deciders raise it *before* producing any event, so a failed
    request leaves no trace in the log (Kafka's all-or-nothing acknowledge, SharePartition
    ``rollbackOrProcessStateUpdates``).
    """

    def __init__(self, error_name: str, message: str = "") -> None:
        try:
            code = error_code(error_name)
        except KeyError:
            raise ValueError(f"not a Kafka error name: {error_name!r}") from None
        self.error_name = error_name
        self.code = code
        self.message = message
        super().__init__(f"{error_name}: {message}" if message else error_name)

    def __reduce__(self):  # picklable with its two constructor arguments
        return (type(self), (self.error_name, self.message))


def persister_error_to_share_error(error_name: str, message: str = "") -> ShareError:
    """Map an error the share coordinator answered to the error ``SharePartition`` surfaces.

    Takes the coordinator's upper-case error name and an optional message; returns the
    :class:`ShareError` to surface (never raises). Kafka 4.2's ``SharePartition.fetchPersisterError``
    (checked by ``SharePartitionTest.testMaybeInitializeWithErrorPartitionResponse``):
    NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS →
    COORDINATOR_NOT_AVAILABLE; GROUP_ID_NOT_FOUND → GROUP_ID_NOT_FOUND; UNKNOWN_TOPIC_OR_PARTITION →
    UNKNOWN_TOPIC_OR_PARTITION; FENCED_LEADER_EPOCH and FENCED_STATE_EPOCH → NOT_LEADER_OR_FOLLOWER
    (the leader is stale either way, the client refreshes metadata); anything else →
    UNKNOWN_SERVER_ERROR. (The late-2024 tree mapped GROUP_ID_NOT_FOUND and
    UNKNOWN_TOPIC_OR_PARTITION to INVALID_REQUEST, and Kafka 4.0 FENCED_STATE_EPOCH to itself.)
    """
    if error_name in (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS):
        return ShareError(COORDINATOR_NOT_AVAILABLE, message)
    if error_name in (GROUP_ID_NOT_FOUND, UNKNOWN_TOPIC_OR_PARTITION):
        return ShareError(error_name, message)
    if error_name in (FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH):
        return ShareError(NOT_LEADER_OR_FOLLOWER, message)
    return ShareError(UNKNOWN_SERVER_ERROR, message)
