"""Producer ids for InitProducerId (KIP-98), handed out from blocks the controller allocates.

The broker half of Kafka's ``RPCProducerIdManager``: the controller persists each block
(``controller.ProducerIdsAllocated``, 1000 ids) before handing it over, so an id is never given
twice, across restarts included; this manager gives the ids of its current block one by one and
asks for a new block when it runs out. Ids left in a block when the daemon stops are skipped, as
in Kafka.
"""

from __future__ import annotations

import threading
from typing import Callable

__all__ = ["ProducerIdManager", "ProducerIdsUnavailable"]


class ProducerIdsUnavailable(RuntimeError):
    """No block could be allocated; ``error`` is the Kafka error name to answer with."""

    def __init__(self, error: str, message: str = "") -> None:
        super().__init__(message or error)
        self.error = error


class ProducerIdManager:
    """Thread-safe producer-id source.

    ``allocate_block()`` returns ``(first_producer_id, block_size)`` of a new persisted block or
    raises :class:`ProducerIdsUnavailable` (e.g. the controller is recovering)."""

    def __init__(self, allocate_block: Callable[[], tuple[int, int]]) -> None:
        self._allocate_block = allocate_block
        self._lock = threading.Lock()
        self._next = 0
        self._end = 0  # exclusive

    def next_producer_id(self) -> int:
        """A producer id never handed out before (int64 >= 0). Raises
        :class:`ProducerIdsUnavailable` when a new block is needed and cannot be had."""
        with self._lock:
            if self._next >= self._end:
                first, size = self._allocate_block()
                if first < 0 or size <= 0:
                    raise ProducerIdsUnavailable("UNKNOWN_SERVER_ERROR", f"bad producer id block {first}+{size}")
                self._next, self._end = first, first + size
            pid = self._next
            self._next += 1
            return pid
