"""Idempotent-producer state of one partition: duplicate detection and sequence checks.

The partition-side half of KIP-98's idempotent producer, as Kafka's ``ProducerStateManager`` /
``ProducerAppendInfo`` / ``ProducerStateEntry`` keep it (``storage/.../internals/log``):

* per producer id, the current producer epoch and the metadata of the last
  :data:`BATCHES_TO_RETAIN` batches (first/last sequence, first/last offset);
* a client batch whose epoch is the current one and whose sequence range equals one of those
  batches is a **duplicate** (a retry whose first attempt was written): it is not written again,
  and the Produce response gets the offsets of the original
  (``ProducerStateEntry.findDuplicateBatch``);
* an epoch below the current one is fenced: ``INVALID_PRODUCER_EPOCH``
  (``ProducerAppendInfo.checkProducerEpoch``);
* with the current epoch the first sequence must follow the last one (``lastSeq + 1``, wrapping
  from ``Integer.MAX_VALUE`` to 0); a new epoch must start at sequence 0 unless the producer had no
  epoch here yet; a producer with no state here (never seen, or expired) may start anywhere:
  otherwise ``OUT_OF_ORDER_SEQUENCE_NUMBER`` (``ProducerAppendInfo.checkSequence``).

State is rebuilt from the batch headers in the log when the partition opens (the headers carry
producer id, epoch and base sequence), so it survives a restart; producers idle for
``producer.id.expiration.ms`` are forgotten (``ProducerStateManager.removeExpiredProducers``).
Pure Python with the clock as an argument; the caller (``PartitionLog``) holds the partition lock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Protocol

__all__ = [
    "BATCHES_TO_RETAIN",
    "BatchMetadata",
    "DuplicateBatch",
    "InvalidProducerEpochError",
    "OutOfOrderSequenceError",
    "ProducerStateEntry",
    "ProducerStateManager",
    "last_sequence",
]

#: Kafka ``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``: duplicates are found among this many batches
BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
_INT32_MAX = 2**31 - 1


class OutOfOrderSequenceError(ValueError):
    """A batch's first sequence does not follow the producer's last one (error
    OUT_OF_ORDER_SEQUENCE_NUMBER, 45)."""


class InvalidProducerEpochError(ValueError):
    """A batch's producer epoch is older than the one this partition has seen (error
    INVALID_PRODUCER_EPOCH, 47): a newer instance of the producer fenced this one."""


class _Header(Protocol):
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_offset_delta: int


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    """The batch's last sequence number: ``base + delta`` wrapping past ``Integer.MAX_VALUE`` to
    0 (Kafka ``DefaultRecordBatch.incrementSequence``)."""
    if base_sequence > _INT32_MAX - last_offset_delta:
        return last_offset_delta - (_INT32_MAX - base_sequence) - 1
    return base_sequence + last_offset_delta


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """One written batch of a producer: sequences and offsets both inclusive."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int


@dataclass(frozen=True, slots=True)
class DuplicateBatch:
    """The answer to a retried batch: the offsets (inclusive) it was written at the first time."""

    first_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerStateEntry:
    """One producer's state on this partition: ``epoch`` and its last batches (oldest first);
    ``last_seen_ms`` is wall-clock ms of its last write (for expiry)."""

    producer_id: int
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCHES_TO_RETAIN))
    last_seen_ms: int = 0

    @property
    def last_seq(self) -> int:
        """The last sequence written, or -1 (NO_SEQUENCE) when none is retained."""
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> DuplicateBatch | None:
        """The retained batch with exactly this epoch and sequence range, if any."""
        if epoch != self.epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return DuplicateBatch(b.first_offset, b.last_offset)
        return None


class ProducerStateManager:
    """The producers of one partition (see the module docstring).

    ``expiration_ms``: Kafka's ``producer.id.expiration.ms`` (default one day).
    """

    def __init__(self, expiration_ms: int = 86_400_000) -> None:
        self.expiration_ms = expiration_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        self._last_expiry_check_ms = 0

    def check(self, headers: Iterable[_Header]) -> DuplicateBatch | None:
        """Validate the idempotent batches of one Produce partition before anything is written.

        Returns the :class:`DuplicateBatch` of the first batch that duplicates a retained one (the
        request is then not written; Kafka answers the whole partition with it), else ``None``.
        Raises :class:`InvalidProducerEpochError` or :class:`OutOfOrderSequenceError`; batches
        without a producer id (``-1``) are not checked. Does not change the state (see
        :meth:`record`)."""
        pending: dict[int, tuple[int, int]] = {}  # pid → (epoch, last seq) after earlier batches of this request
        for h in headers:
            pid = h.producer_id
            if pid < 0:
                continue
            first = h.base_sequence
            last = last_sequence(first, h.last_offset_delta)
            entry = self.producers.get(pid)
            if pid not in pending and entry is not None:
                dup = entry.find_duplicate(h.producer_epoch, first, last)
                if dup is not None:
                    return dup
            cur_epoch, cur_last = pending.get(pid, (entry.epoch, entry.last_seq) if entry is not None else (NO_PRODUCER_EPOCH, NO_SEQUENCE))
            if h.producer_epoch < cur_epoch:
                raise InvalidProducerEpochError(
                    f"epoch of producer {pid} is {h.producer_epoch}, which is smaller than the last seen epoch {cur_epoch}"
                )
            if h.producer_epoch != cur_epoch:
                if first != 0 and cur_epoch != NO_PRODUCER_EPOCH:
                    raise OutOfOrderSequenceError(
                        f"invalid sequence number for new epoch of producer {pid}: {h.producer_epoch} (request epoch), "
                        f"{first} (seq. number), {cur_epoch} (current producer epoch)"
                    )
            elif not _in_sequence(cur_last, first):
                raise OutOfOrderSequenceError(
                    f"out of order sequence number for producer {pid}: {first} (incoming seq. number), "
                    f"{cur_last} (current end sequence number)"
                )
            pending[pid] = (h.producer_epoch, last)
        return None

    def record(self, headers: Iterable[_Header], now_ms: int) -> None:
        """Remember the batches just written (``headers`` carry their assigned base offsets as
        ``base_offset``) or found in the log at recovery; a new epoch drops the older batches."""
        for h in headers:
            pid = h.producer_id
            if pid < 0:
                continue
            entry = self.producers.get(pid)
            if entry is None:
                entry = self.producers[pid] = ProducerStateEntry(pid)
            if h.producer_epoch != entry.epoch:
                entry.epoch = h.producer_epoch
                entry.batches.clear()
            first_offset = h.base_offset  # type: ignore[attr-defined]
            entry.batches.append(
                BatchMetadata(h.base_sequence, last_sequence(h.base_sequence, h.last_offset_delta), first_offset, first_offset + h.last_offset_delta)
            )
            entry.last_seen_ms = max(entry.last_seen_ms, now_ms)

    def expire(self, now_ms: int, check_interval_ms: int = 60_000) -> int:
        """Forget producers idle for longer than ``expiration_ms`` (checked at most every
        ``check_interval_ms``); returns how many were removed."""
        if now_ms - self._last_expiry_check_ms < check_interval_ms:
            return 0
        self._last_expiry_check_ms = now_ms
        dead = [pid for pid, e in self.producers.items() if now_ms - e.last_seen_ms > self.expiration_ms]
        for pid in dead:
            del self.producers[pid]
        return len(dead)

    def truncate_head(self, log_start_offset: int) -> None:
        """Forget batches below the new log start offset, and producers left with none (Kafka
        ``ProducerStateManager.truncateHead``: retention or DeleteRecords removed them)."""
        for pid in list(self.producers):
            entry = self.producers[pid]
            kept = [b for b in entry.batches if b.last_offset >= log_start_offset]
            if not kept:
                del self.producers[pid]
            elif len(kept) != len(entry.batches):
                entry.batches.clear()
                entry.batches.extend(kept)
