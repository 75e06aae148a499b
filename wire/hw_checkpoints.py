"""The high-watermark checkpoints of a cluster node (Kafka ``ReplicaManager.highWatermarkCheckpoints``
and ``checkpointHighWatermarks``): each replica's high watermark is written to the
``replication-offset-checkpoint`` file of the log dir every
``replica.high.watermark.checkpoint.interval.ms`` and on a clean shutdown, and a replica's log
opened after a restart starts from ``min(checkpointed HW, log end offset)`` instead of its log end
offset. So records above the last committed offset that the node had appended (as leader with
``acks=1``, or as a follower) are not served to consumers after a restart before the ISR has them.

Only a node of a cluster uses it (:class:`wire.logs.LogRegistry` with ``hw_checkpoints``): on a
single node every append is committed at once (ISR = {this node}) and the log end offset is the
high watermark, as before.

A malformed checkpoint file is ignored with a warning, as if absent: every replica then starts at
its log start offset and its leader raises the HW as the ISR reports, which never exposes an
uncommitted record; refusing to start (Kafka marks the log dir offline) would turn a damaged
small file into an outage with no safety gained. The next checkpoint replaces the file.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Mapping

from store.log.log import PartitionLog, log_dir_name
from store.log.offset_checkpoint import REPLICATION_OFFSET_CHECKPOINT, CheckpointFormatError, OffsetCheckpointFile, restored_high_watermark

__all__ = ["HighWatermarkCheckpoints"]

log = logging.getLogger("shoal.wire.hw_checkpoints")

Key = tuple[str, int]


class HighWatermarkCheckpoints:
    """The ``replication-offset-checkpoint`` file of the log dir ``log_dirs`` (Kafka
    ``ReplicaManager.highWatermarkCheckpoints``, one ``OffsetCheckpointFile`` per log dir).

    The file is read once, at construction; :meth:`restore` applies it to each log as it is
    opened, :meth:`checkpoint` writes the open logs' high watermarks together with the entries of
    partitions not opened since the start (logs open lazily here, unlike Kafka's ``LogManager``,
    so an entry must survive until its log is opened). Thread-safe."""

    def __init__(self, log_dirs: str | Path) -> None:
        self.log_dirs = Path(log_dirs)
        self.file = OffsetCheckpointFile(self.log_dirs / REPLICATION_OFFSET_CHECKPOINT)
        self._lock = threading.Lock()
        #: checkpointed HWs of partitions whose log has not been opened since the start
        self._pending: dict[Key, int] = {}
        #: every checkpointed HW read at start (what :meth:`restore` uses)
        self._loaded: dict[Key, int] = {}
        try:
            loaded = self.file.read()
        except (CheckpointFormatError, OSError) as exc:
            log.warning("ignoring the high watermark checkpoint %s (%s): every replica starts at its log start offset", self.file.path, exc)
            loaded = {}
        # entries of partitions without a log directory (deleted while this node was down) are dropped
        self._loaded = {k: v for k, v in loaded.items() if (self.log_dirs / log_dir_name(*k)).is_dir()}
        self._pending = dict(self._loaded)

    def checkpointed(self, topic: str, partition: int) -> int | None:
        """The high watermark (exclusive offset) the file held for ``topic``-``partition`` at
        start, ``None`` if none."""
        return self._loaded.get((topic, partition))

    def restore(self, lg: PartitionLog) -> int:
        """Set ``lg``'s high watermark, just opened, to :func:`restored_high_watermark` of its
        checkpoint (Kafka ``Partition.createLog``); returns it. Raises nothing."""
        key = (lg.topic, lg.partition)
        with self._lock:
            cp = self._loaded.get(key)
            self._pending.pop(key, None)
        hw = restored_high_watermark(cp, lg.log_start_offset, lg.log_end_offset)
        if cp is None:
            log.info("no checkpointed high watermark for %s-%d: it starts at %d", lg.topic, lg.partition, hw)
        return lg.update_high_watermark(hw)

    def forget(self, topic: str) -> None:
        """Drop the entries of deleted ``topic`` (a topic re-created with its name starts empty;
        Kafka's checkpoint loses a deleted partition's entry with its log). Raises nothing."""
        with self._lock:
            for k in [k for k in self._pending if k[0] == topic]:
                del self._pending[k]
            for k in [k for k in self._loaded if k[0] == topic]:
                del self._loaded[k]

    def checkpoint(self, logs: Mapping[Key, PartitionLog]) -> dict[Key, int]:
        """Write the high watermark of every log of ``logs`` (the open logs) plus the entries of
        partitions not opened since the start (Kafka ``ReplicaManager.checkpointHighWatermarks``).
        Returns what was written. Raises ``OSError`` when the file cannot be written (the previous
        checkpoint stays intact)."""
        with self._lock:
            offsets = dict(self._pending)
            for key, lg in logs.items():
                offsets[key] = lg.high_watermark
                self._pending.pop(key, None)
            self.file.write(offsets)
        return offsets
