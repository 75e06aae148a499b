"""Handlers for the data-plane APIs: Produce (0), Fetch (1), ListOffsets (2).

Record bytes go from the request straight to the partition log and from segment files straight
into the response (the backend's ``produce``/``fetch`` run in the listener's process); no actor
sees them. Semantics from Kafka's ``KafkaApis.handleProduceRequest`` / ``handleFetchRequest`` /
``handleListOffsetRequest`` for a single node that leads every partition.
"""

from __future__ import annotations

import time
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i16, i32, i64

from wire.backend import Backend
from wire.entities import NO_THROTTLE, build, duration_ms, error_code, nested, response_class
from wire.protocol import DecodedRequest, Deferred
from wire.quotas import parked

__all__ = ["fetch", "list_offsets", "offset_for_leader_epoch", "produce"]


def produce(req: DecodedRequest, backend: Backend, defer: bool = False) -> Any:
    """Produce: append each partition's RecordBatches (validated by the backend: magic 2, CRC,
    lengths, offsets, codec). Returns ``None`` for ``acks=0`` (Kafka sends no response) and
    INVALID_REQUIRED_ACKS for acks outside {-1, 0, 1}. Transactional produce is refused with
    INVALID_REQUEST (Shoal has no transactions). With ``acks=-1`` every partition is appended
    first, then the request waits until the high watermarks cover the records or the request's
    ``timeout_ms`` (counted from now) passes (Kafka ``ReplicaManager.appendRecords`` +
    ``DelayedProduce``: REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    NOT_LEADER_OR_FOLLOWER). With ``defer`` that wait is the returned
    :class:`wire.protocol.Deferred`'s (the listener completes it while the connection's next
    requests are read, :mod:`wire.server`); without, it happens here, outside the request's
    ``queued.max.requests`` slot (:func:`parked`)."""
    body = req.body
    acks = int(body.acks)
    cls = response_class(0, req.api_version)
    results: list[list[tuple[Any, Any]]] = []  # per topic: (partition, ProduceResult-like tuple)
    pending: list[tuple[str, int, int]] = []
    where: list[tuple[int, int]] = []
    for t in body.topic_data:
        row = []
        for p in t.partition_data:
            if acks not in (-1, 0, 1):
                row.append((p, ("INVALID_REQUIRED_ACKS", -1, -1, -1, None)))
            elif body.transactional_id is not None:
                row.append((p, ("INVALID_REQUEST", -1, -1, -1, "transactions are not supported")))
            else:
                r = backend.produce(t.name, int(p.index), bytes(p.records or b""), acks)
                if r.error is None and r.required_offset >= 0:
                    pending.append((t.name, int(p.index), r.required_offset))
                    where.append((len(results), len(row)))
                row.append((p, (r.error, r.base_offset, r.log_append_time_ms, r.log_start_offset, r.message)))
        results.append(row)
    if acks == 0:
        return None
    if not pending:
        return _produce_response(cls, body, results)
    deadline = time.monotonic() + duration_ms(body.timeout, 30000) / 1000

    def complete() -> Any:
        with parked():  # the request leaves queued.max.requests while it waits in the purgatory
            errors = backend.await_replication(pending, max(0, round((deadline - time.monotonic()) * 1000)))
        for (ti, pi), err in zip(where, errors):
            if err is not None:
                p, (_e, base, lat, lso, _m) = results[ti][pi]
                results[ti][pi] = (p, (err, base, lat, lso, None))
        return _produce_response(cls, body, results)

    return Deferred(complete) if defer else complete()


def _produce_response(cls: type, body: Any, results: list[list[tuple[Any, Any]]]) -> Any:
    topics = []
    for t, row in zip(body.topic_data, results):
        parts = []
        for p, (res_err, base, lat, lso, msg) in row:
            parts.append(
                nested(
                    cls,
                    "PartitionProduceResponse",
                    index=p.index,
                    error_code=error_code(res_err),
                    base_offset=i64(base),
                    log_append_time=_ms_to_tz(lat),
                    log_start_offset=i64(lso),
                    record_errors=(),
                    error_message=msg,
                )
            )
        topics.append(nested(cls, "TopicProduceResponse", name=t.name, partition_responses=tuple(parts)))
    return build(cls, responses=tuple(topics), throttle_time=NO_THROTTLE)


def init_producer_id(req: DecodedRequest, backend: Backend) -> Any:
    """InitProducerId (v0-5) for idempotent producers: a new producer id with epoch 0 (KIP-98).
    As Kafka's ``KafkaApis.handleInitProducerIdRequest``: a producer id without an epoch (or the
    reverse) is INVALID_REQUEST; a transactional id is answered UNSUPPORTED_VERSION (Shoal has no
    transaction coordinator)."""
    body = req.body
    cls = response_class(22, req.api_version)
    pid = int(getattr(body, "producer_id", -1))
    epoch = int(getattr(body, "producer_epoch", -1))
    if (pid == -1) != (epoch == -1):
        err, new_pid, new_epoch = "INVALID_REQUEST", -1, -1
    else:
        err, new_pid, new_epoch = backend.init_producer_id(body.transactional_id, pid, epoch)
    return build(cls, throttle_time=NO_THROTTLE, error_code=error_code(err), producer_id=i64(new_pid), producer_epoch=i16(new_epoch))


def _ms_to_tz(ms: int) -> Any:
    if ms is None or ms < 0:
        return None
    import datetime

    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)


def fetch(req: DecodedRequest, backend: Backend) -> Any:
    """Fetch (sessionless: ``session_id`` 0). Reads each partition from its fetch offset up to
    ``partition_max_bytes`` and the request's ``max_bytes`` overall (at least one batch is
    returned even if larger, KIP-74). With fewer than ``min_bytes`` available it long-polls up
    to ``max_wait`` for new records, unless it asks for no partition or any partition has an
    error: then it is answered at once (Kafka's ``ReplicaManager.fetchMessages``: no
    ``DelayedFetch`` for ``fetchInfos.isEmpty`` or ``errorReadingData``). While it waits it holds
    no ``queued.max.requests`` slot (:func:`wire.quotas.parked`; a ``DelayedFetch`` is in
    purgatory, not in the request queue). Offsets below the log start or beyond the end give
    OFFSET_OUT_OF_RANGE.

    Every partition carries a record set, empty (size 0) when there is nothing to return, never
    null (size -1): Kafka's log reads always give one (``MemoryRecords.EMPTY`` for no new data
    and for read errors, ``ReplicaManager.readFromLocalLog``), and librdkafka before 2.x drops
    the whole response on a null one ("invalid MessageSetSize -1"; issue 16). Kafka leaves it
    null only for partitions it rejects before reading (``FetchResponse.partitionResponse``);
    Shoal sends empty there too, which every client reads as no records. Aborted transactions are
    an empty list under READ_COMMITTED and null under READ_UNCOMMITTED, as Kafka sends them."""
    body = req.body
    cls = response_class(1, req.api_version)
    deadline = time.monotonic() + body.max_wait.total_seconds()
    committed = int(getattr(body, "isolation_level", 0)) == 1  # READ_COMMITTED (v4+)
    replica_id = int(getattr(body, "replica_id", -1))  # >= 0: a follower's fetch (v4-v14)
    # the long poll waits on the partitions it reads only (Kafka's DelayedFetch watch keys)
    keys = [(t.topic, int(p.partition)) for t in body.topics for p in t.partitions]
    while True:
        seen = backend.data_version(keys)  # before reading: a change after this ends the wait
        budget = int(body.max_bytes)
        total = 0
        asked = 0  # partitions in the request
        errors = 0  # partitions answered with an error
        topics = []
        for t in body.topics:
            parts = []
            for p in t.partitions:
                exhausted = total > 0 and budget <= 0  # the response's max_bytes is reached
                limit = max(1, min(int(p.partition_max_bytes), budget)) if total else int(p.partition_max_bytes)
                r = backend.fetch(t.topic, int(p.partition), int(p.fetch_offset), limit, replica_id, int(getattr(p, "current_leader_epoch", -1)))
                asked += 1
                errors += r.error is not None
                data = b"" if exhausted else r.records
                total += len(data)
                budget -= len(data)
                parts.append(
                    nested(
                        cls,
                        "PartitionData",
                        partition_index=p.partition,
                        error_code=error_code(r.error),
                        high_watermark=i64(r.high_watermark),
                        last_stable_offset=i64(r.high_watermark),
                        log_start_offset=i64(r.log_start_offset),
                        # Kafka: [] under READ_COMMITTED (LocalLog.read includeAbortedTxns), null
                        # under READ_UNCOMMITTED; Shoal has no transactions, so never any entries
                        aborted_transactions=() if committed and r.error is None else None,
                        preferred_read_replica=i32(-1),
                        records=data if data else b"",  # empty, never null (see docstring)
                    )
                )
            topics.append(nested(cls, "FetchableTopicResponse", topic=t.topic, partitions=tuple(parts)))
        remaining = deadline - time.monotonic()
        if total >= int(body.min_bytes) or remaining <= 0 or asked == 0 or errors:
            break
        with parked():  # the request leaves queued.max.requests while it long-polls
            backend.wait_for_data(int(remaining * 1000), seen)
        if time.monotonic() >= deadline:
            continue  # one last read after the wait
    return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, session_id=i32(0), responses=tuple(topics))


def list_offsets(req: DecodedRequest, backend: Backend) -> Any:
    """ListOffsets: -2 earliest, -1 latest, -3 max-timestamp (v7+), -4 earliest-local (v8+),
    -5 latest-tiered (v9+), otherwise the first offset with timestamp ≥ the given one."""
    cls = response_class(2, req.api_version)
    topics = []
    for t in req.body.topics:
        parts = []
        for p in t.partitions:
            res = backend.list_offset(t.name, int(p.partition_index), int(p.timestamp))
            err, offset, ts = res[:3]
            # a 4th element is the offset's leader epoch (KIP-320); backends without one answer 0
            epoch = int(res[3]) if len(res) > 3 else (0 if err is None else -1)
            parts.append(
                nested(
                    cls,
                    "ListOffsetsPartitionResponse",
                    partition_index=p.partition_index,
                    error_code=error_code(err),
                    timestamp=i64(ts),
                    offset=i64(offset),
                    leader_epoch=i32(epoch if err is None else -1),
                )
            )
        topics.append(nested(cls, "ListOffsetsTopicResponse", name=t.name, partitions=tuple(parts)))
    return build(cls, throttle_time=NO_THROTTLE, topics=tuple(topics))


def offset_for_leader_epoch(req: DecodedRequest, backend: Backend) -> Any:
    """OffsetForLeaderEpoch (API 23, v2-v4; KIP-101, KIP-279, KIP-320): per partition the end
    offset (exclusive) of the requested leader epoch, or of the largest epoch below it, from the
    leader's epoch cache, after the ``current_leader_epoch`` checks (FENCED_LEADER_EPOCH,
    UNKNOWN_LEADER_EPOCH) and NOT_LEADER_OR_FOLLOWER on a non-leader (Kafka
    ``KafkaApis.handleOffsetForLeaderEpochRequest`` → ``Partition.lastOffsetForLeaderEpoch``).
    Unknown partitions get UNKNOWN_TOPIC_OR_PARTITION; errors carry epoch and offset -1."""
    cls = response_class(23, req.api_version)
    topics = []
    for t in req.body.topics:
        parts = []
        for p in t.partitions:
            err, epoch, end = backend.offset_for_leader_epoch(t.topic, int(p.partition), int(p.current_leader_epoch), int(p.leader_epoch))
            parts.append(
                nested(cls, "EpochEndOffset", error_code=error_code(err), partition=p.partition, leader_epoch=i32(epoch), end_offset=i64(end))
            )
        topics.append(nested(cls, "OffsetForLeaderTopicResult", topic=t.topic, partitions=tuple(parts)))
    return build(cls, throttle_time=NO_THROTTLE, topics=tuple(topics))
