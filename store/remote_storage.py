"""The remote tier: Kafka's ``RemoteStorageManager`` interface and the embedded local-directory
implementation (the default; ``<shoal.data.dir>/remote/``).

Interface: Kafka ``storage/api/.../remote/storage/RemoteStorageManager.java`` (KIP-405), with
Python names: :meth:`RemoteStorageManager.copy_log_segment_data`,
:meth:`~RemoteStorageManager.fetch_log_segment`, :meth:`~RemoteStorageManager.fetch_index`,
:meth:`~RemoteStorageManager.delete_log_segment_data`; ``LogSegmentData`` and ``IndexType`` as in
Kafka. Errors are ``events.rlmm_errors.RemoteStorageException`` /
``RemoteResourceNotFoundException`` (the same classes the RLMM raises).

Layout of :class:`LocalDirectoryRemoteStorageManager` (modelled on Kafka's test
``LocalTieredStorage``/``RemoteLogSegmentFileset``)::

    <root>/<topic>-<partition>-<topicId>/                      one directory per partition
        <startOffset:020d>-<segmentId>/                        one directory per *complete* segment
            segment.log  offset.index  time.index  producer.snapshot  txn.index  leader_epoch.checkpoint
        .staging-<segmentId>/                                  an upload in progress (never "complete")
        .deleting-<segmentId>/                                 a delete in progress

Atomicity: an upload writes every file into the staging directory, fsyncs each, renames the
staging directory to its final name (one atomic ``rename``) and fsyncs the partition directory.
A crash therefore leaves either no segment directory or a complete one; staging leftovers are
removed by :meth:`LocalDirectoryRemoteStorageManager.cleanup_incomplete`. Deletion renames the
segment directory away first (atomic), then removes it, so a half-deleted segment never looks
complete either.
"""

from __future__ import annotations

import io
import os
import shutil
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import BinaryIO, Optional

from events.rlmm_errors import RemoteResourceNotFoundException, RemoteStorageException
from events.rlmm_types import RemoteLogSegmentMetadata, TopicIdPartition, uuid_from_kafka_str, uuid_to_kafka_str

__all__ = [
    "IndexType",
    "LogSegmentData",
    "RemoteStorageManager",
    "LocalDirectoryRemoteStorageManager",
    "RemoteStorageException",
    "RemoteResourceNotFoundException",
]


class IndexType(Enum):
    """Kafka ``RemoteStorageManager.IndexType``."""

    OFFSET = "offset.index"
    TIMESTAMP = "time.index"
    PRODUCER_SNAPSHOT = "producer.snapshot"
    TRANSACTION = "txn.index"
    LEADER_EPOCH = "leader_epoch.checkpoint"


@dataclass(frozen=True, slots=True)
class LogSegmentData:
    """What is uploaded for one segment (Kafka ``LogSegmentData``): paths of the segment's
    ``.log``, offset index and time index; optional transaction index and producer snapshot
    paths (Shoal keeps neither, so they are usually None); and the leader-epoch checkpoint
    content as bytes (the leader-epoch entries up to the segment's end)."""

    log_segment: Path
    offset_index: Path
    time_index: Path
    transaction_index: Optional[Path]
    producer_snapshot_index: Optional[Path]
    leader_epoch_index: bytes


class RemoteStorageManager(ABC):
    """Kafka's ``RemoteStorageManager`` (KIP-405): stores segment data and indexes in the remote
    tier. Implementations must make ``copy_log_segment_data`` all-or-nothing as seen by fetches,
    and ``delete_log_segment_data`` idempotent."""

    @abstractmethod
    def copy_log_segment_data(
        self, remote_log_segment_metadata: RemoteLogSegmentMetadata, log_segment_data: LogSegmentData
    ) -> Optional[bytes]:
        """Copy the segment and its indexes. Returns custom metadata bytes to be stored with
        COPY_SEGMENT_FINISHED, or None. Raises :class:`RemoteStorageException` on failure (the
        caller then deletes whatever was written)."""

    @abstractmethod
    def fetch_log_segment(
        self,
        remote_log_segment_metadata: RemoteLogSegmentMetadata,
        start_position: int,
        end_position: Optional[int] = None,
    ) -> BinaryIO:
        """A stream of the segment's bytes from ``start_position`` to ``end_position``
        (**inclusive**, as Kafka's javadoc says) or to the end. Raises
        :class:`RemoteResourceNotFoundException` if the segment is absent,
        :class:`RemoteStorageException` for other failures, ``ValueError`` for a negative start
        or ``end < start``."""

    @abstractmethod
    def fetch_index(self, remote_log_segment_metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> BinaryIO:
        """A stream of one index of the segment. Raises :class:`RemoteResourceNotFoundException`
        if the segment or that (optional) index is absent."""

    @abstractmethod
    def delete_log_segment_data(self, remote_log_segment_metadata: RemoteLogSegmentMetadata) -> None:
        """Delete the segment and its indexes; succeeds if they are already gone (idempotent).
        Raises :class:`RemoteStorageException` on failure."""

    def close(self) -> None:  # pragma: no cover - nothing to release by default
        """Release resources (Kafka ``Closeable``)."""


class _BoundedFile(io.RawIOBase):
    """A read-only raw stream over ``[start, end)`` of an open file descriptor (uses pread, so
    several streams may share nothing but the path)."""

    def __init__(self, path: Path, start: int, end: int):
        self._fd = os.open(path, os.O_RDONLY)
        self._pos = start
        self._end = end

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = min(len(b), self._end - self._pos)
        if n <= 0:
            return 0
        data = os.pread(self._fd, n, self._pos)
        b[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        super().close()


def _fsync_path(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _copy_file(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` in the kernel where possible (``copy_file_range``/``sendfile``)
    and fsync the result."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        size = os.fstat(fin.fileno()).st_size
        copied = 0
        try:
            while copied < size:
                n = os.copy_file_range(fin.fileno(), fout.fileno(), size - copied)
                if n == 0:
                    break
                copied += n
        except OSError:
            fin.seek(copied)
            fout.seek(copied)
            shutil.copyfileobj(fin, fout, 1024 * 1024)
            copied = size
        fout.flush()
        os.fsync(fout.fileno())


class LocalDirectoryRemoteStorageManager(RemoteStorageManager):
    """The embedded remote tier: a local directory (see the module docstring for the layout and
    the atomicity argument). ``fsync=False`` skips fsyncs (tests of logic only)."""

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = True):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._fsync = fsync

    # ----------------------------------------------------------------- paths
    def partition_dir(self, tp: TopicIdPartition) -> Path:
        """``<root>/<topic>-<partition>-<topicId>``."""
        return self.root / f"{tp.topic}-{tp.partition}-{uuid_to_kafka_str(tp.topic_id)}"

    def segment_dir(self, metadata: RemoteLogSegmentMetadata) -> Path:
        """The final directory of a complete segment."""
        sid = metadata.remote_log_segment_id
        return self.partition_dir(sid.topic_id_partition) / f"{metadata.start_offset:020d}-{uuid_to_kafka_str(sid.id)}"

    def _staging_dir(self, metadata: RemoteLogSegmentMetadata) -> Path:
        sid = metadata.remote_log_segment_id
        return self.partition_dir(sid.topic_id_partition) / f".staging-{uuid_to_kafka_str(sid.id)}"

    # ----------------------------------------------------------------- RSM interface
    def copy_log_segment_data(
        self, remote_log_segment_metadata: RemoteLogSegmentMetadata, log_segment_data: LogSegmentData
    ) -> Optional[bytes]:
        """Upload into a staging directory, fsync, rename into place, fsync the partition
        directory. Returns None (no custom metadata). Copying a segment id that is already
        complete is a no-op (retries are safe). Raises :class:`RemoteStorageException` wrapping
        any ``OSError``; the staging directory is removed on failure."""
        md = remote_log_segment_metadata
        final = self.segment_dir(md)
        if final.is_dir():
            return None
        staging = self._staging_dir(md)
        try:
            staging.parent.mkdir(parents=True, exist_ok=True)
            if staging.exists():
                shutil.rmtree(staging)
            staging.mkdir()
            d = log_segment_data
            files: list[tuple[Path | None, str]] = [
                (d.log_segment, "segment.log"),
                (d.offset_index, IndexType.OFFSET.value),
                (d.time_index, IndexType.TIMESTAMP.value),
                (d.transaction_index, IndexType.TRANSACTION.value),
                (d.producer_snapshot_index, IndexType.PRODUCER_SNAPSHOT.value),
            ]
            for src, name in files:
                if src is None:
                    continue
                if self._fsync:
                    _copy_file(Path(src), staging / name)
                else:
                    shutil.copyfile(src, staging / name)
            with open(staging / IndexType.LEADER_EPOCH.value, "wb") as f:
                f.write(d.leader_epoch_index)
                if self._fsync:
                    f.flush()
                    os.fsync(f.fileno())
            if self._fsync:
                _fsync_path(staging)
            os.rename(staging, final)
            if self._fsync:
                _fsync_path(final.parent)
        except OSError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            raise RemoteStorageException(f"copy of {md.remote_log_segment_id} failed: {exc}") from exc
        return None

    def _require(self, md: RemoteLogSegmentMetadata) -> Path:
        d = self.segment_dir(md)
        if not d.is_dir():
            raise RemoteResourceNotFoundException(f"No remote segment data for {md.remote_log_segment_id}")
        return d

    def fetch_log_segment(
        self,
        remote_log_segment_metadata: RemoteLogSegmentMetadata,
        start_position: int,
        end_position: Optional[int] = None,
    ) -> BinaryIO:
        """Buffered stream over ``[start_position, end_position]`` (inclusive) of the segment."""
        if start_position < 0:
            raise ValueError(f"start_position must be non-negative, got {start_position}")
        if end_position is not None and end_position < start_position:
            raise ValueError(f"end_position {end_position} < start_position {start_position}")
        path = self._require(remote_log_segment_metadata) / "segment.log"
        try:
            size = path.stat().st_size
            end = size if end_position is None else min(size, end_position + 1)
            return io.BufferedReader(_BoundedFile(path, min(start_position, size), end))
        except FileNotFoundError as exc:
            raise RemoteResourceNotFoundException(str(exc)) from exc
        except OSError as exc:
            raise RemoteStorageException(str(exc)) from exc

    def fetch_index(self, remote_log_segment_metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> BinaryIO:
        """Buffered stream of the whole index file."""
        path = self._require(remote_log_segment_metadata) / IndexType(index_type).value
        try:
            return io.BufferedReader(_BoundedFile(path, 0, path.stat().st_size))
        except FileNotFoundError as exc:
            raise RemoteResourceNotFoundException(f"{index_type} index not found for {remote_log_segment_metadata.remote_log_segment_id}") from exc
        except OSError as exc:
            raise RemoteStorageException(str(exc)) from exc

    def delete_log_segment_data(self, remote_log_segment_metadata: RemoteLogSegmentMetadata) -> None:
        """Rename the segment directory (and any staging one) away, then remove it."""
        md = remote_log_segment_metadata
        try:
            for d in (self.segment_dir(md), self._staging_dir(md)):
                if d.exists():
                    self._remove_dir(d)
        except OSError as exc:
            raise RemoteStorageException(f"delete of {md.remote_log_segment_id} failed: {exc}") from exc

    # ----------------------------------------------------------------- Shoal extensions
    def list_segments(self, tp: TopicIdPartition) -> dict[uuid.UUID, int]:
        """Complete segments present for ``tp``: segment id → start offset (used by the
        RemoteLogManager's restart reconciliation to find data without metadata)."""
        out: dict[uuid.UUID, int] = {}
        d = self.partition_dir(tp)
        if not d.is_dir():
            return out
        for p in d.iterdir():
            if p.name.startswith(".") or not p.is_dir() or len(p.name) < 22:
                continue
            start, _, sid = p.name.partition("-")
            try:
                out[uuid_from_kafka_str(sid)] = int(start)
            except Exception:
                continue
        return out

    def delete_segment_by_id(self, tp: TopicIdPartition, segment_id: uuid.UUID) -> bool:
        """Remove a complete segment directory found by id alone (orphan cleanup). Returns
        True if something was removed."""
        d = self.partition_dir(tp)
        name_suffix = "-" + uuid_to_kafka_str(segment_id)
        removed = False
        if d.is_dir():
            for p in d.iterdir():
                if p.name.endswith(name_suffix) and not p.name.startswith("."):
                    self._remove_dir(p)
                    removed = True
        return removed

    def _remove_dir(self, d: Path) -> None:
        """Remove a segment directory so that no reader ever sees it half-deleted: rename it to
        ``.deleting-<random>`` (atomic), fsync the parent, then remove the renamed tree (a crash
        in between leaves a ``.deleting-`` leftover for :meth:`cleanup_incomplete`). Raises
        ``OSError``."""
        doomed = d.parent / f".deleting-{uuid.uuid4().hex}"
        os.rename(d, doomed)
        if self._fsync:
            _fsync_path(d.parent)
        shutil.rmtree(doomed)

    def cleanup_incomplete(self, tp: TopicIdPartition | None = None) -> int:
        """Remove staging and half-deleted directories left by a crash: of partition ``tp``
        only (a partition's leader repairs its own: on a cluster the others' uploads in progress
        share the directory), or of every partition (``None``). Returns how many were removed."""
        n = 0
        if not self.root.is_dir():
            return 0
        for part in [self.partition_dir(tp)] if tp is not None else list(self.root.iterdir()):
            if not part.is_dir():
                continue
            for p in part.iterdir():
                if p.name.startswith(".staging-") or p.name.startswith(".deleting-"):
                    shutil.rmtree(p, ignore_errors=True)
                    n += 1
        return n

    def delete_partition(self, tp: TopicIdPartition) -> None:
        """Remove the partition directory entirely (after every segment was deleted)."""
        shutil.rmtree(self.partition_dir(tp), ignore_errors=True)

    def partition_ids(self) -> list[str]:
        """Names of the partition directories present (for diagnostics)."""
        return sorted(p.name for p in self.root.iterdir() if p.is_dir()) if self.root.is_dir() else []
