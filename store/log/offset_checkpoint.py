"""The high-watermark checkpoint of a log dir (Kafka ``OffsetCheckpointFile`` as
``ReplicaManager.highWatermarkCheckpoints`` uses it: the ``replication-offset-checkpoint`` file of
each log dir).

Format (Kafka ``CheckpointFile`` with ``OffsetCheckpointFile.Formatter``), UTF-8 text::

    0                    <- version (OffsetCheckpointFile.CURRENT_VERSION)
    2                    <- number of entries
    topic 0 1234         <- "topic partition offset", whitespace-separated
    topic 1 99

The pure part (:func:`render_offset_checkpoint`, :func:`parse_offset_checkpoint`,
:func:`restored_high_watermark`) does no I/O; :class:`OffsetCheckpointFile` reads and writes the
file (atomically: ``<file>.tmp`` + fsync + rename + directory fsync, :func:`store.log.checkpoint.atomic_write`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

from store.log.checkpoint import atomic_write

__all__ = [
    "CheckpointFormatError",
    "OFFSET_CHECKPOINT_VERSION",
    "OffsetCheckpointFile",
    "REPLICATION_OFFSET_CHECKPOINT",
    "parse_offset_checkpoint",
    "render_offset_checkpoint",
    "restored_high_watermark",
]

#: ``OffsetCheckpointFile.CURRENT_VERSION``
OFFSET_CHECKPOINT_VERSION = 0
#: ``ReplicaManager.HighWatermarkFilename``: the file's name in each log dir
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"

_WHITESPACE = re.compile(r"\s+")

TopicPartition = tuple[str, int]


class CheckpointFormatError(ValueError):
    """A checkpoint file's text is not Kafka's checkpoint format: an unknown version, a line that
    is not an integer where one is expected, an entry that is not ``topic partition offset``, or
    an entry count that does not match the count line (Kafka's ``CheckpointReadBuffer`` throws an
    ``IOException`` with the same messages)."""


def render_offset_checkpoint(offsets: Mapping[TopicPartition, int]) -> str:
    """The checkpoint text of ``offsets`` (``(topic, partition) → offset``), entries sorted by
    topic and partition so that equal maps render equal text (Kafka's ``CheckpointWriteBuffer``
    with ``OffsetCheckpointFile.Formatter``, which writes them in map order). Pure. Raises ``ValueError`` for a topic name that contains whitespace or is empty (it could
    not be read back; Kafka's topic names never do)."""
    lines = [str(OFFSET_CHECKPOINT_VERSION), str(len(offsets))]
    for (topic, partition), offset in sorted(offsets.items()):
        if not topic or _WHITESPACE.search(topic):
            raise ValueError(f"topic name {topic!r} cannot be written to an offset checkpoint")
        lines.append(f"{topic} {int(partition)} {int(offset)}")
    return "\n".join(lines) + "\n"


def parse_offset_checkpoint(text: str, location: str = "<text>") -> dict[TopicPartition, int]:
    """Parse checkpoint ``text`` into ``(topic, partition) → offset`` (Kafka
    ``CheckpointReadBuffer.read``): empty text, or a version line without a count line, is an
    empty checkpoint. Pure. Raises :class:`CheckpointFormatError` (naming ``location``) for a
    version other than 0, a non-integer version/count/partition/offset, an entry that is not
    three fields, or a number of entries different from the count line."""
    lines = text.splitlines()
    if not lines:
        return {}

    def integer(line: str) -> int:
        try:
            return int(line.strip())
        except ValueError:
            raise CheckpointFormatError(f"Malformed line in checkpoint file [{location}]: {line}") from None

    version = integer(lines[0])
    if version != OFFSET_CHECKPOINT_VERSION:
        raise CheckpointFormatError(
            f"Unrecognised version:{version}, expected version: {OFFSET_CHECKPOINT_VERSION} in checkpoint file at: {location}"
        )
    if len(lines) < 2:
        return {}
    expected = integer(lines[1])
    out: dict[TopicPartition, int] = {}
    n = 0
    for line in lines[2:]:
        parts = _WHITESPACE.split(line.strip())
        if len(parts) != 3:
            raise CheckpointFormatError(f"Malformed line in checkpoint file [{location}]: {line}")
        try:
            out[(parts[0], int(parts[1]))] = int(parts[2])
        except ValueError:
            raise CheckpointFormatError(f"Malformed line in checkpoint file [{location}]: {line}") from None
        n += 1
    if n != expected:
        raise CheckpointFormatError(f"Expected [{expected}] entries in checkpoint file [{location}], but found only [{n}]")
    return out


def restored_high_watermark(checkpointed: int | None, log_start_offset: int, log_end_offset: int) -> int:
    """A replica's high watermark (exclusive) when its log is opened on a cluster (Kafka
    ``Partition.createLog``: ``updateHighWatermark(checkpointed HW, or 0 if none)``, which
    ``UnifiedLog.updateHighWatermark`` clamps to ``[log start offset, log end offset]``). So it is
    ``min(checkpointed, log_end_offset)``, never below ``log_start_offset``; without a checkpoint
    (``None``: a crash before the first checkpoint, a lost file) the log start offset. The leader
    then raises it as its followers report their log end offsets. Pure; raises nothing."""
    hw = 0 if checkpointed is None else checkpointed
    return min(max(hw, log_start_offset), log_end_offset)


class OffsetCheckpointFile:
    """One checkpoint file at ``path`` (Kafka ``OffsetCheckpointFile``). Not thread-safe: callers
    serialise :meth:`write` calls."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Replace the file with ``offsets`` atomically (``<path>.tmp`` + fsync + rename +
        directory fsync), so a crash leaves the old or the new checkpoint, never a torn one.
        Raises ``OSError`` (disk full, permissions) and ``ValueError`` (see
        :func:`render_offset_checkpoint`)."""
        atomic_write(self.path, render_offset_checkpoint(offsets).encode())

    def read(self) -> dict[TopicPartition, int]:
        """The checkpointed offsets; ``{}`` when the file does not exist. Raises
        :class:`CheckpointFormatError` for a malformed file (also undecodable bytes) and
        ``OSError`` when it cannot be read."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CheckpointFormatError(f"checkpoint file [{self.path}] is not UTF-8: {exc}") from None
        return parse_offset_checkpoint(text, str(self.path))
