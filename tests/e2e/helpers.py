"""Client-side helpers for the end-to-end tests (confluent-kafka 2.16.1 and raw sockets)."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent


def admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap: str, name: str, partitions: int, config: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import NewTopic

    a = admin(bootstrap)  # keep the client alive until the futures resolve
    fs = a.create_topics([NewTopic(name, partitions, config=config or {})], request_timeout=30)
    fs[name].result(30)


def set_group_config(bootstrap: str, group: str, key: str, value: str) -> None:
    """IncrementalAlterConfigs SET on the GROUP resource (AdminClient)."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    r = ConfigResource(ResourceType.GROUP, group, incremental_configs=[ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
    a = admin(bootstrap)
    for f in a.incremental_alter_configs([r]).values():
        f.result(30)


def outcomes(futures: dict[Any, Any], on_success: Callable[[Any], Any] = lambda result: None, timeout_s: float = 30) -> dict[Any, Any]:
    """Wait for each future of an AdminClient call (``key → future``, as ``create_acls`` or
    ``alter_user_scram_credentials`` return them); return ``key → on_success(result)`` (``None``
    by default) for those that succeeded and ``key →`` the Kafka error code
    (``KafkaError.code()``) for those that raised ``KafkaException``. Other errors propagate."""
    from confluent_kafka import KafkaException

    out: dict[Any, Any] = {}
    for key, fut in futures.items():
        try:
            out[key] = on_success(fut.result(timeout_s))
        except KafkaException as exc:
            out[key] = exc.args[0].code()
    return out


def upsert_scram_credentials(bootstrap: str, users: dict[str, str], mechanisms: tuple[str, ...] = ("SCRAM-SHA-256", "SCRAM-SHA-512"), iterations: int = 4096) -> None:
    """AlterUserScramCredentials (KIP-554) through AdminClient: for each ``user: password`` and
    mechanism, an upsertion with ``iterations``; one request per mechanism, since Kafka's
    ``ScramControlManager`` refuses two changes of one user in one request (DUPLICATE_RESOURCE).
    Raises the first per-user error."""
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    a = admin(bootstrap)
    for m in mechanisms:
        info = ScramCredentialInfo(getattr(ScramMechanism, m.replace("-", "_")), iterations)
        for f in a.alter_user_scram_credentials([UserScramCredentialUpsertion(u, info, pw.encode()) for u, pw in users.items()]).values():
            f.result(30)


def produce(bootstrap: str, topic: str, values: list[str], partitioner=None, **conf: Any) -> dict[str, tuple[int, int]]:
    """Produce ``values`` (acks=all); returns value → (partition, offset) of every acknowledged
    record. ``partitioner(i)`` picks the partition of the i-th value (default: i % 3)."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all", **conf})
    acked: dict[str, tuple[int, int]] = {}

    def cb(err, msg):
        if err is None:
            acked[msg.value().decode()] = (msg.partition(), msg.offset())

    for i, v in enumerate(values):
        while True:
            try:
                p.produce(topic, value=v.encode(), partition=(partitioner(i) if partitioner else i % 3), on_delivery=cb)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    p.flush(60)
    return acked


def group_consumer(bootstrap: str, group: str, **conf: Any) -> Any:
    """A confluent-kafka ``Consumer`` of ``group`` reading from the earliest offset, without
    auto-commit (``conf`` adds or overrides, e.g. ``{"group.protocol": "consumer"}``)."""
    from confluent_kafka import Consumer

    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, **conf})


def poll_records(c: Any, n: int, timeout_s: float = 60) -> list[tuple[int, int, str]]:
    """Poll confluent-kafka consumer ``c`` until ``n`` records came (or ``timeout_s`` passed):
    ``(partition, offset, value)`` in the order read."""
    out: list[tuple[int, int, str]] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < n and time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is None or msg.error():
            continue
        out.append((msg.partition(), msg.offset(), msg.value().decode()))
    return out


def read_back_commit_restart(daemon_factory: Any, make_consumer: Callable[[str, str], Any], prefix: str,
                             while_open: Callable[[Any, str], None] = lambda d, group: None) -> None:
    """The read-back scenario of a confluent-kafka group consumer (``make_consumer(bootstrap,
    group)``): 30 records on 3 partitions read back exactly (values, partitions, offsets) and
    nothing more; a synchronous commit stores each partition's end; ``while_open(daemon, group)``
    checks more while the member is still in the group; then the daemon restarts on the same data
    dir and a new member of the group reads only the 6 records produced after the restart."""
    import uuid

    from confluent_kafka import TopicPartition

    d = daemon_factory()
    topic, group = f"{prefix}-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(d.bootstrap, topic, 3)
    values = [f"v{i}" for i in range(30)]
    acked = produce(d.bootstrap, topic, values)
    assert len(acked) == 30
    c = make_consumer(d.bootstrap, group)
    c.subscribe([topic])
    got = poll_records(c, 30)
    assert sorted(v for _, _, v in got) == sorted(values)
    assert {v: (p, o) for p, o, v in got} == acked  # exactly what was written, where it was written
    assert not poll_records(c, 1, 2)  # nothing more
    c.commit(asynchronous=False)
    committed = {tp.partition: tp.offset for tp in c.committed([TopicPartition(topic, p) for p in range(3)], timeout=30)}
    assert committed == {p: sum(1 for pp, _ in acked.values() if pp == p) for p in range(3)}
    while_open(d, group)
    c.close()

    # restart on the same data dir: the group's offsets come back from its event stream
    d.stop()
    d2 = daemon_factory(data_dir=d.data_dir)
    more = [f"w{i}" for i in range(6)]
    produce(d2.bootstrap, topic, more)
    c2 = make_consumer(d2.bootstrap, group)
    c2.subscribe([topic])
    got2 = poll_records(c2, 6)
    assert sorted(v for _, _, v in got2) == sorted(more)  # none of the 30 committed ones again
    assert not poll_records(c2, 1, 2)
    c2.close()


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """partition → ``group``'s committed offset on ``topic`` (-1001, librdkafka's INVALID, where
    none): OffsetFetch through a confluent-kafka Consumer that does not join the group."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return {tp.partition: tp.offset for tp in c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)}
    finally:
        c.close()


def start_worker(tmp: Path, name: str, spec: dict[str, Any]) -> tuple[subprocess.Popen, Path]:
    """Start ``share_worker.py`` with ``spec``; returns (process, path of its JSON-lines log)."""
    out = tmp / f"{name}.jsonl"
    spec = dict(spec, out=str(out))
    proc = subprocess.Popen([sys.executable, str(HERE / "share_worker.py"), json.dumps(spec)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return proc, out


def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            pass  # a torn last line of a SIGKILLed worker
    return rows


def read_partition(bootstrap: str, topic: str, n: int, partition: int = 0, timeout_s: float = 90) -> list[tuple[int, str]]:
    """Read ``topic``-``partition`` from offset 0 with a fresh confluent-kafka Consumer until ``n``
    records came (or ``timeout_s`` passed); returns ``[(offset, value as text)]``."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, partition, 0)])
    got: list[tuple[int, str]] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append((m.offset(), m.value().decode()))
    c.close()
    return got


def wait_for(pred, timeout_s: float, interval_s: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(interval_s)
    return pred()


def raw_request(port: int, payload: bytes, read: bool = True, timeout_s: float = 5) -> bytes | None:
    """Send ``payload`` (already framed or not) on a fresh connection; return the first response
    frame's payload, or ``None`` if the daemon closed the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
        s.sendall(payload)
        if not read:
            return None
        try:
            return read_frame(s)
        except (ConnectionError, socket.timeout):
            return None


def read_frame(s: socket.socket) -> bytes | None:
    """Read one Kafka frame (4-byte big-endian size, then that many bytes) from ``s``; return
    its payload without the size, or ``None`` if the peer closed the connection first (an orderly
    close or a reset). Other socket errors and timeouts propagate."""
    head = _recv(s, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    return _recv(s, size)


def readable(s: socket.socket, timeout_s: float) -> bool:
    """Whether ``s`` has bytes to read (or was closed) within ``timeout_s`` (``poll``, not
    ``select``: a long test run's descriptors pass 1024)."""
    import select

    p = select.poll()
    p.register(s, select.POLLIN)
    return bool(p.poll(timeout_s * 1000))


def _recv(s: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        try:
            chunk = s.recv(n - len(buf))
        except ConnectionResetError:  # closed by the listener with data unread
            return None
        if not chunk:
            return None
        buf += chunk
    return buf


def describe_share_group(port: int, group: str) -> Any:
    """ShareGroupDescribe v1 over a raw socket (confluent-kafka has no share-group admin call):
    the kio ``DescribedGroup``."""
    from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest

    from wire.protocol import decode_response, encode_request, request_header

    resp = raw_request(port, encode_request(request_header(77, 1, 78), ShareGroupDescribeRequest(group_ids=(group,), include_authorized_operations=False)))
    assert resp is not None, "no ShareGroupDescribe response"
    return decode_response(resp, 77, 1)[1].groups[0]


def share_members_reconciled(port: int, group: str, members: int) -> bool:
    """True when ShareGroupDescribe on ``port`` shows ``group`` with exactly ``members`` members,
    each holding partitions and each at the group's assignment epoch: every member has been sent
    the current target assignment in a heartbeat response. Until then a member that joined first
    may still fetch partitions the target has moved to another member (Kafka does not check a
    ShareFetch against the assignment), so a test that needs each consumer to see its own
    partitions waits for this before it produces."""
    g = describe_share_group(port, group)
    return (g.error_code == 0 and len(g.members) == members
            and all(mb.assignment.topic_partitions and mb.member_epoch == g.assignment_epoch for mb in g.members))


def list_offsets(port: int, topic: str, partition: int, timestamp: int, version: int = 9) -> tuple[int, int]:
    """ListOffsets over a raw socket (for -4 earliest-local / -5 latest-tiered, which
    confluent-kafka's AdminClient cannot ask). Returns ``(error_code, offset)``."""
    from kio.schema.list_offsets.v9.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
    from kio.static.primitive import i8, i32, i64

    from wire.protocol import decode_response, encode_request, request_header

    body = ListOffsetsRequest(replica_id=i32(-1), isolation_level=i8(0), topics=(ListOffsetsTopic(name=topic, partitions=(ListOffsetsPartition(partition_index=i32(partition), timestamp=i64(timestamp)),)),))
    resp = raw_request(port, encode_request(request_header(2, version, 77), body))
    assert resp is not None, "no ListOffsets response"
    _cid, r = decode_response(resp, 2, version)
    p = r.topics[0].partitions[0]
    return int(p.error_code), int(p.offset)
