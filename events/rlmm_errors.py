"""Kafka's exceptions of the RemoteLogMetadataManager world, as Python classes.

Each class carries Kafka's simple class name, so a message ``Failure(error=<name>, message)``
crossing an actor boundary can be turned back into the same class with :func:`exception_for`
(errors travel as names, never as exception objects). Where Kafka's class is a JDK one
(``IllegalArgumentException``, ``IllegalStateException``, ``NullPointerException``) the Python
class also derives from the matching builtin so ``except ValueError`` still works.

Sources: ``org.apache.kafka.server.log.remote.storage.RemoteStorageException`` /
``RemoteResourceNotFoundException`` (storage api), ``org.apache.kafka.common.errors.*``
(``ReplicaNotAvailableException``, error code 9, a ``RetriableException``),
``org.apache.kafka.server.common.serialization.MetadataParseException`` (``AbstractApiMessageSerde``).
"""

from __future__ import annotations

__all__ = [
    "ERROR_CODES",
    "FatalExitError",
    "IllegalArgumentException",
    "IllegalStateException",
    "KafkaException",
    "MetadataParseException",
    "NullPointerException",
    "RemoteLogMetadataManagerNotReadyException",
    "RemoteResourceNotFoundException",
    "RemoteStorageException",
    "RemoteStorageNotReadyException",
    "ReplicaNotAvailableException",
    "RetriableException",
    "UnsupportedVersionException",
    "error_name",
    "exception_for",
]


class KafkaException(Exception):
    """``org.apache.kafka.common.KafkaException``: the base of Kafka's unchecked errors. Its
    ``str`` is the message alone; :meth:`java_string` renders Java's ``toString``."""

    java_name = "org.apache.kafka.common.KafkaException"

    def java_string(self) -> str:
        """``<fully qualified class name>: <message>`` as Java's ``Throwable.toString``."""
        return f"{self.java_name}: {self}"


class RetriableException(KafkaException):
    """``org.apache.kafka.common.errors.RetriableException``: the caller may retry."""

    java_name = "org.apache.kafka.common.errors.RetriableException"


class ReplicaNotAvailableException(RetriableException):
    """``ReplicaNotAvailableException`` (REPLICA_NOT_AVAILABLE, code 9): the partition is
    registered but its metadata cache is still catching up (Kafka 3.6+, KAFKA-15181)."""

    java_name = "org.apache.kafka.common.errors.ReplicaNotAvailableException"


class RemoteStorageNotReadyException(RetriableException):
    """``RemoteStorageNotReadyException``: remote storage metadata is not ready yet (retriable)."""

    java_name = "org.apache.kafka.common.errors.RemoteStorageNotReadyException"


class RemoteLogMetadataManagerNotReadyException(RemoteStorageNotReadyException):
    """Shoal: the whole RemoteLogMetadataManager is not ready (the broker booted on the
    fail-closed :class:`actors.rlmm.manager.NotReadyRemoteLogMetadataManager`, or an RLMM
    partition actor has not finished recovery). Retriable; COORDINATOR_LOAD_IN_PROGRESS in spirit."""


class UnsupportedVersionException(KafkaException):
    """``UnsupportedVersionException``: a record version this code cannot read."""

    java_name = "org.apache.kafka.common.errors.UnsupportedVersionException"


class MetadataParseException(KafkaException):
    """``MetadataParseException`` (``AbstractApiMessageSerde``): bad frame version, unknown
    api key, truncated body, or trailing bytes."""

    java_name = "org.apache.kafka.server.common.serialization.MetadataParseException"


class FatalExitError(KafkaException):
    """``org.apache.kafka.common.utils.Exit``'s ``FatalExitError``: initialization failed for good
    (e.g. the metadata topic exists with another partition count)."""


class RemoteStorageException(Exception):
    """``RemoteStorageException`` (checked, storage api): a remote storage or metadata operation failed."""

    java_name = "org.apache.kafka.server.log.remote.storage.RemoteStorageException"


class RemoteResourceNotFoundException(RemoteStorageException):
    """``RemoteResourceNotFoundException``: unknown partition (``"No resource found for
    partition: <tp>"``) or segment (``"No remote log segment metadata found for :<id>"``)."""

    java_name = "org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException"


class IllegalArgumentException(ValueError):
    """``java.lang.IllegalArgumentException``: e.g. adding metadata whose state is not
    COPY_SEGMENT_STARTED, or ``endOffset < startOffset``."""


class IllegalStateException(RuntimeError):
    """``java.lang.IllegalStateException``: the instance is not initialized or is closed."""


class NullPointerException(TypeError):
    """``java.lang.NullPointerException``: a required argument was ``None``."""


_CLASSES: dict[str, type[BaseException]] = {
    c.__name__: c
    for c in (
        KafkaException,
        RetriableException,
        ReplicaNotAvailableException,
        RemoteStorageNotReadyException,
        RemoteLogMetadataManagerNotReadyException,
        UnsupportedVersionException,
        MetadataParseException,
        FatalExitError,
        RemoteStorageException,
        RemoteResourceNotFoundException,
        IllegalArgumentException,
        IllegalStateException,
        NullPointerException,
    )
}

#: Kafka wire error codes of the classes that have one (``org.apache.kafka.common.protocol.Errors``).
ERROR_CODES: dict[str, int] = {
    "ReplicaNotAvailableException": 9,
    "UnsupportedVersionException": 35,
    "KafkaException": -1,  # UNKNOWN_SERVER_ERROR
}


def error_name(exc: BaseException) -> str:
    """The name under which ``exc`` crosses an actor boundary: its Kafka class name when it is
    one of ours (or derives from one), else ``"KafkaException"`` for unknown errors."""
    for cls in type(exc).__mro__:
        if cls.__name__ in _CLASSES and _CLASSES[cls.__name__] is cls:
            return cls.__name__
    return "KafkaException"


def exception_for(name: str, message: str = "") -> BaseException:
    """Rebuild the exception named ``name`` (see :func:`error_name`) with ``message``; an
    unknown name gives a :class:`KafkaException` whose message names it."""
    cls = _CLASSES.get(name)
    if cls is None:
        return KafkaException(f"{name}: {message}")
    return cls(message)
