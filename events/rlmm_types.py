"""The value types of KIP-405's RemoteLogMetadataManager, with Kafka's field names in snake_case.

Kafka sources (storage api ``org.apache.kafka.server.log.remote.storage``): ``RemoteLogSegmentState``,
``RemotePartitionDeleteState``, ``RemoteLogSegmentId``, ``RemoteLogSegmentMetadata`` (incl. the 4.0
``txnIdxEmpty`` flag of KIP-1058), ``RemoteLogSegmentMetadataUpdate``,
``RemotePartitionDeleteMetadata``; ``org.apache.kafka.common.TopicIdPartition`` and ``Uuid``;
``RemoteLogSegmentMetadataSnapshot`` (``storage/.../metadata/storage``). See
``shared/reference/kip405-rlmm.md`` §1–§2.

All types are frozen, hashable dataclasses; equality compares every field, as Kafka's ``equals``
does. ``str()`` renders Kafka's ``toString`` (used by the metadata formatter, scenario S7).
Topic and segment ids are :class:`uuid.UUID`; :func:`uuid_to_kafka_str` gives Kafka's 22-character
URL-safe base64 form.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from enum import IntEnum
from typing import Iterable, Mapping, Optional, Union

from events.rlmm_errors import IllegalArgumentException, NullPointerException

__all__ = [
    "REMOTE_LOG_METADATA_TOPIC_NAME",
    "RemoteLogSegmentId",
    "RemoteLogSegmentMetadata",
    "RemoteLogSegmentMetadataSnapshot",
    "RemoteLogSegmentMetadataUpdate",
    "RemoteLogSegmentState",
    "RemotePartitionDeleteMetadata",
    "RemotePartitionDeleteState",
    "TopicIdPartition",
    "uuid_from_kafka_str",
    "uuid_msb",
    "uuid_lsb",
    "uuid_to_kafka_str",
]

#: ``TopicBasedRemoteLogMetadataManagerConfig.REMOTE_LOG_METADATA_TOPIC_NAME``.
REMOTE_LOG_METADATA_TOPIC_NAME = "__remote_log_metadata"


def uuid_to_kafka_str(u: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes (MSB first), no padding (22 chars)."""
    return base64.urlsafe_b64encode(u.bytes).decode("ascii").rstrip("=")


def uuid_from_kafka_str(s: str) -> uuid.UUID:
    """Kafka's ``Uuid.fromString``: the inverse of :func:`uuid_to_kafka_str`. Raises
    :class:`IllegalArgumentException` unless ``s`` decodes to exactly 16 bytes."""
    try:
        raw = base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
    except Exception as exc:  # binascii.Error
        raise IllegalArgumentException(f"Invalid Uuid string {s!r}") from exc
    if len(raw) != 16:
        raise IllegalArgumentException(f"Input string with prefix `{s[:22]}` is too long to be decoded as a base64 UUID")
    return uuid.UUID(bytes=raw)


def uuid_msb(u: uuid.UUID) -> int:
    """``Uuid.getMostSignificantBits``: the first 8 bytes, big-endian, as a signed 64-bit int."""
    return int.from_bytes(u.bytes[:8], "big", signed=True)


def uuid_lsb(u: uuid.UUID) -> int:
    """``Uuid.getLeastSignificantBits``: the last 8 bytes, big-endian, as a signed 64-bit int."""
    return int.from_bytes(u.bytes[8:], "big", signed=True)


def _check_fields(obj: object, not_null: tuple[tuple[str, str], ...], state_type: type | None = None) -> None:
    """The constructor checks Kafka's metadata classes share: ``Objects.requireNonNull`` on each
    ``(attribute, Java name)`` (:class:`NullPointerException` "<name> can not be null"), then
    ``state`` coerced to ``state_type`` (from its byte id) and ``custom_metadata`` to ``bytes``.
    For frozen dataclasses (it sets through ``object.__setattr__``)."""
    for attr, java_name in not_null:
        if getattr(obj, attr) is None:
            raise NullPointerException(f"{java_name} can not be null")
    if state_type is not None and not isinstance(obj.state, state_type):  # type: ignore[attr-defined]
        object.__setattr__(obj, "state", state_type(obj.state))  # type: ignore[attr-defined]
    custom = getattr(obj, "custom_metadata", None)
    if custom is not None and not isinstance(custom, bytes):
        object.__setattr__(obj, "custom_metadata", bytes(custom))


class _KafkaStateEnum(IntEnum):
    """Shared shape of Kafka's metadata state enums: a byte ``id()``, ``forId(byte)``, Java's
    ``toString`` (the name) and ``isValidTransition(src, target)`` driven by the subclass's
    ``_INITIAL`` state (the only valid target from ``None``) and ``_NEXT`` table (src → the
    targets other than itself). Self transitions are always valid (idempotent retries)."""

    @property
    def id(self) -> int:
        """Kafka's ``id()`` (the byte written by the serde)."""
        return int(self)

    @classmethod
    def for_id(cls, state_id: int):
        """``forId(byte)``: the state with that id, or ``None`` for an unknown id."""
        try:
            return cls(state_id)
        except ValueError:
            return None

    @classmethod
    def is_valid_transition(cls, src, target) -> bool:
        """``isValidTransition(srcState, targetState)``: ``src`` ``None`` (unknown) allows only the
        initial state; a self transition is valid; else the subclass's table decides. Raises
        :class:`NullPointerException` for a ``None`` target ("targetState can not be null")."""
        if target is None:
            raise NullPointerException("targetState can not be null")
        if src is None:
            return target is cls._INITIAL  # type: ignore[attr-defined]
        return src is target or target in cls._NEXT[src]  # type: ignore[attr-defined]

    def __str__(self) -> str:  # Java enum toString
        return self.name


class RemoteLogSegmentState(_KafkaStateEnum):
    """``RemoteLogSegmentState``: a remote segment's lifecycle, with Kafka's byte ids (reference
    §2.1); :meth:`is_valid_transition` is the exact table of reference §2.2 (unknown → STARTED
    only; CS → CF, DS; CF → DS; DS → DF; self always)."""

    COPY_SEGMENT_STARTED = 0
    COPY_SEGMENT_FINISHED = 1
    DELETE_SEGMENT_STARTED = 2
    DELETE_SEGMENT_FINISHED = 3


_CS = RemoteLogSegmentState.COPY_SEGMENT_STARTED
_CF = RemoteLogSegmentState.COPY_SEGMENT_FINISHED
_DS = RemoteLogSegmentState.DELETE_SEGMENT_STARTED
_DF = RemoteLogSegmentState.DELETE_SEGMENT_FINISHED
RemoteLogSegmentState._INITIAL = _CS  # type: ignore[attr-defined]
RemoteLogSegmentState._NEXT = {_CS: frozenset({_CF, _DS}), _CF: frozenset({_DS}), _DS: frozenset({_DF}), _DF: frozenset()}  # type: ignore[attr-defined]


class RemotePartitionDeleteState(_KafkaStateEnum):
    """``RemotePartitionDeleteState``: MARKED(0) → STARTED(1) → FINISHED(2) (reference §4);
    :meth:`is_valid_transition`: unknown → MARKED only, self, MARKED → STARTED, STARTED →
    FINISHED (Kafka's main code never calls it)."""

    DELETE_PARTITION_MARKED = 0
    DELETE_PARTITION_STARTED = 1
    DELETE_PARTITION_FINISHED = 2


RemotePartitionDeleteState._INITIAL = RemotePartitionDeleteState.DELETE_PARTITION_MARKED  # type: ignore[attr-defined]
RemotePartitionDeleteState._NEXT = {  # type: ignore[attr-defined]
    RemotePartitionDeleteState.DELETE_PARTITION_MARKED: frozenset({RemotePartitionDeleteState.DELETE_PARTITION_STARTED}),
    RemotePartitionDeleteState.DELETE_PARTITION_STARTED: frozenset({RemotePartitionDeleteState.DELETE_PARTITION_FINISHED}),
    RemotePartitionDeleteState.DELETE_PARTITION_FINISHED: frozenset(),
}


@dataclass(frozen=True, slots=True)
class TopicIdPartition:
    """``TopicIdPartition``: topic id + topic name + partition. Equality uses all three (as Kafka's)."""

    topic_id: uuid.UUID
    topic: str
    partition: int

    def __post_init__(self) -> None:
        _check_fields(self, (("topic_id", "topicId"),))

    def __hash__(self) -> int:
        return hash((self.topic_id.int, self.partition))

    def __str__(self) -> str:
        return f"{uuid_to_kafka_str(self.topic_id)}:{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentId:
    """``RemoteLogSegmentId``: the partition plus a fresh id per copy attempt."""

    topic_id_partition: TopicIdPartition
    id: uuid.UUID

    def __post_init__(self) -> None:
        _check_fields(self, (("topic_id_partition", "topicIdPartition"), ("id", "id")))

    def __hash__(self) -> int:
        # Consistent with equality (equal ids have equal hashes) and cheap: the segment uuid alone
        # is unique in practice, and lookups hash this id on every call.
        return hash(self.id.int)

    @classmethod
    def generate_new(cls, topic_id_partition: TopicIdPartition) -> "RemoteLogSegmentId":
        """``generateNew``: a new random id (``uuid4``) for ``topic_id_partition``."""
        return cls(topic_id_partition, uuid.uuid4())

    def __str__(self) -> str:
        return f"RemoteLogSegmentId{{topicIdPartition={self.topic_id_partition}, id={uuid_to_kafka_str(self.id)}}}"


EpochsArg = Union[Mapping[int, int], Iterable[tuple[int, int]]]


def _normalise_epochs(epochs: EpochsArg | None) -> tuple[tuple[int, int], ...]:
    if epochs is None:
        raise IllegalArgumentException("segmentLeaderEpochs can not be null or empty")
    items = epochs.items() if isinstance(epochs, Mapping) else epochs
    pairs = tuple(sorted((int(e), int(o)) for e, o in items))
    if not pairs:
        raise IllegalArgumentException("segmentLeaderEpochs can not be null or empty")
    return pairs


def _custom_str(custom: bytes | None) -> str:
    return "Optional.empty" if custom is None else f"Optional[CustomMetadata{{{len(custom)} bytes}}]"


def _epochs_str(epochs: tuple[tuple[int, int], ...]) -> str:
    return "{" + ", ".join(f"{e}={o}" for e, o in epochs) + "}"


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentMetadata:
    """``RemoteLogSegmentMetadata``: one remote segment's metadata (reference §1).

    ``start_offset``/``end_offset`` are inclusive. ``segment_leader_epochs`` maps leader epoch →
    start offset of that epoch in the segment; pass a dict or pairs, it is stored as a tuple of
    ``(epoch, start_offset)`` sorted by epoch (Kafka's ``NavigableMap``). ``custom_metadata`` is
    ``None`` (``Optional.empty()``) or bytes (``CustomMetadata``; ``b""`` is present and empty).
    ``state`` defaults to COPY_SEGMENT_STARTED like Kafka's 8-argument constructor.
    ``txn_idx_empty`` is Kafka 4.0's flag (KIP-1058): the segment has no transaction index data.
    Times are epoch milliseconds; ``segment_size_in_bytes`` is bytes.

    Raises :class:`IllegalArgumentException` if ``start_offset < 0``, ``end_offset < start_offset``
    or the epochs are empty; :class:`NullPointerException` for a ``None`` id or state. Like Kafka,
    it does not check that epoch offsets lie inside ``[start_offset, end_offset]``.
    """

    remote_log_segment_id: RemoteLogSegmentId
    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    broker_id: int
    event_timestamp_ms: int
    segment_size_in_bytes: int
    segment_leader_epochs: tuple[tuple[int, int], ...]
    state: RemoteLogSegmentState = RemoteLogSegmentState.COPY_SEGMENT_STARTED
    custom_metadata: Optional[bytes] = None
    txn_idx_empty: bool = False

    def __post_init__(self) -> None:
        _check_fields(self, (("remote_log_segment_id", "remoteLogSegmentId"), ("state", "state")), RemoteLogSegmentState)
        if self.start_offset < 0:
            raise IllegalArgumentException(
                f"Unexpected start offset = {self.start_offset}. StartOffset for a remote segment cannot be negative"
            )
        if self.end_offset < self.start_offset:
            raise IllegalArgumentException(
                f"Unexpected end offset = {self.end_offset}. EndOffset for a remote segment cannot be less than "
                f"startOffset = {self.start_offset}"
            )
        object.__setattr__(self, "segment_leader_epochs", _normalise_epochs(self.segment_leader_epochs))

    @property
    def topic_id_partition(self) -> TopicIdPartition:
        """``topicIdPartition()``: the partition of the segment."""
        return self.remote_log_segment_id.topic_id_partition

    def leader_epochs(self) -> dict[int, int]:
        """``segmentLeaderEpochs()`` as a fresh dict epoch → start offset."""
        return dict(self.segment_leader_epochs)

    def epoch_end_offset(self, leader_epoch: int) -> int:
        """The last offset (inclusive) of ``leader_epoch`` inside this segment: the next higher
        epoch's start offset − 1, or ``end_offset`` (``RemoteLogMetadataCache#highestOffsetForEpoch``
        of a segment). ``leader_epoch`` need not be one of the segment's epochs."""
        for epoch, start in self.segment_leader_epochs:
            if epoch > leader_epoch:
                return start - 1
        return self.end_offset

    def create_with_updates(self, update: "RemoteLogSegmentMetadataUpdate") -> "RemoteLogSegmentMetadata":
        """``createWithUpdates``: a copy with ``broker_id``, ``event_timestamp_ms``,
        ``custom_metadata`` and ``state`` taken from ``update`` (so an update without custom
        metadata drops it); ``txn_idx_empty`` and everything else is kept. Raises
        :class:`IllegalArgumentException` if the segment ids differ."""
        if update.remote_log_segment_id != self.remote_log_segment_id:
            raise IllegalArgumentException(
                f"Given rlsmUpdate does not have this instance's remoteLogSegmentId.")
        return RemoteLogSegmentMetadata(
            self.remote_log_segment_id,
            self.start_offset,
            self.end_offset,
            self.max_timestamp_ms,
            update.broker_id,
            update.event_timestamp_ms,
            self.segment_size_in_bytes,
            self.segment_leader_epochs,
            update.state,
            update.custom_metadata,
            self.txn_idx_empty,
        )

    def __str__(self) -> str:
        return (
            f"RemoteLogSegmentMetadata{{remoteLogSegmentId={self.remote_log_segment_id}, "
            f"startOffset={self.start_offset}, endOffset={self.end_offset}, brokerId={self.broker_id}, "
            f"maxTimestampMs={self.max_timestamp_ms}, eventTimestampMs={self.event_timestamp_ms}, "
            f"segmentLeaderEpochs={_epochs_str(self.segment_leader_epochs)}, "
            f"segmentSizeInBytes={self.segment_size_in_bytes}, customMetadata={_custom_str(self.custom_metadata)}, "
            f"state={self.state.name}}}"
        )


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentMetadataUpdate:
    """``RemoteLogSegmentMetadataUpdate``: a state change of a segment (Kafka's argument order).

    ``custom_metadata`` ``None`` = ``Optional.empty()``. Raises :class:`NullPointerException` for a
    ``None`` id or state.
    """

    remote_log_segment_id: RemoteLogSegmentId
    event_timestamp_ms: int
    custom_metadata: Optional[bytes]
    state: RemoteLogSegmentState
    broker_id: int

    def __post_init__(self) -> None:
        _check_fields(self, (("remote_log_segment_id", "remoteLogSegmentId"), ("state", "state")), RemoteLogSegmentState)

    @property
    def topic_id_partition(self) -> TopicIdPartition:
        """``topicIdPartition()``."""
        return self.remote_log_segment_id.topic_id_partition

    def __str__(self) -> str:
        return (
            f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={self.remote_log_segment_id}, "
            f"customMetadata={_custom_str(self.custom_metadata)}, state={self.state.name}, "
            f"eventTimestampMs={self.event_timestamp_ms}, brokerId={self.broker_id}}}"
        )


@dataclass(frozen=True, slots=True)
class RemotePartitionDeleteMetadata:
    """``RemotePartitionDeleteMetadata``: the delete state of a whole user partition (reference §4)."""

    topic_id_partition: TopicIdPartition
    state: RemotePartitionDeleteState
    event_timestamp_ms: int
    broker_id: int

    def __post_init__(self) -> None:
        _check_fields(self, (("topic_id_partition", "topicIdPartition"), ("state", "state")), RemotePartitionDeleteState)

    def __str__(self) -> str:
        return (
            f"RemotePartitionDeleteMetadata{{topicPartition={self.topic_id_partition}, state={self.state.name}, "
            f"eventTimestampMs={self.event_timestamp_ms}, brokerId={self.broker_id}}}"
        )


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentMetadataSnapshot:
    """``RemoteLogSegmentMetadataSnapshot``: segment metadata carrying only the segment ``Uuid``
    (no partition); record type 3 of the serde, used by Kafka ≤3.5's snapshot file."""

    segment_id: uuid.UUID
    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    broker_id: int
    event_timestamp_ms: int
    segment_size_in_bytes: int
    custom_metadata: Optional[bytes]
    state: RemoteLogSegmentState
    segment_leader_epochs: tuple[tuple[int, int], ...]
    txn_idx_empty: bool = False

    def __post_init__(self) -> None:
        _check_fields(self, (("segment_id", "segmentId"), ("state", "state")), RemoteLogSegmentState)
        if self.start_offset < 0:
            raise IllegalArgumentException(f"Unexpected start offset = {self.start_offset}.")
        if self.end_offset < self.start_offset:
            raise IllegalArgumentException(f"Unexpected end offset = {self.end_offset}.")
        object.__setattr__(self, "segment_leader_epochs", _normalise_epochs(self.segment_leader_epochs))

    @classmethod
    def create(cls, metadata: RemoteLogSegmentMetadata) -> "RemoteLogSegmentMetadataSnapshot":
        """``RemoteLogSegmentMetadataSnapshot.create``: drop the partition, keep everything else."""
        return cls(
            metadata.remote_log_segment_id.id,
            metadata.start_offset,
            metadata.end_offset,
            metadata.max_timestamp_ms,
            metadata.broker_id,
            metadata.event_timestamp_ms,
            metadata.segment_size_in_bytes,
            metadata.custom_metadata,
            metadata.state,
            metadata.segment_leader_epochs,
            metadata.txn_idx_empty,
        )
