"""The partition log's errors, each carrying Kafka's ``error_name``/``error_code`` so the wire
layer answers with them directly (Kafka ``org.apache.kafka.common.errors``: ``OffsetOutOfRangeException``,
``RecordTooLargeException``, ``RecordBatchTooLargeException``, ``KafkaStorageException``)."""

from __future__ import annotations

__all__ = [
    "OffsetOutOfRangeError",
    "RecordTooLargeError",
    "RecordBatchTooLargeError",
    "KafkaStorageError",
]


class _KafkaError(Exception):
    error_name = "UNKNOWN_SERVER_ERROR"
    error_code = -1


class OffsetOutOfRangeError(_KafkaError):
    """The requested offset is outside ``[log start offset, log end offset]`` (or, for the local
    log alone, below the local log start offset): ``OFFSET_OUT_OF_RANGE``, code 1."""

    error_name = "OFFSET_OUT_OF_RANGE"
    error_code = 1


class RecordTooLargeError(_KafkaError):
    """A batch is larger than ``max.message.bytes``: ``MESSAGE_TOO_LARGE``, code 10."""

    error_name = "MESSAGE_TOO_LARGE"
    error_code = 10


class RecordBatchTooLargeError(_KafkaError):
    """A batch is larger than ``segment.bytes`` and can never fit a segment:
    ``RECORD_LIST_TOO_LARGE``, code 18 (Kafka ``RecordBatchTooLargeException``)."""

    error_name = "RECORD_LIST_TOO_LARGE"
    error_code = 18


class KafkaStorageError(_KafkaError):
    """An I/O failure on the log directory: ``KAFKA_STORAGE_ERROR``, code 56."""

    error_name = "KAFKA_STORAGE_ERROR"
    error_code = 56
