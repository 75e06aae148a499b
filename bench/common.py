"""What the daemon benchmarks (``bench/e2e.py``, ``bench/security.py``, ``bench/group_limits.py``)
share: the producer they run in a separate process. Free ports come from the e2e harness
(``tests.e2e.conftest.free_port``), whose ``DaemonProcess`` they all start."""

from __future__ import annotations

import socket
import struct
from pathlib import Path
from typing import Any

__all__ = ["PRODUCER", "KafkaConnection", "pss_kb"]


def pss_kb(pids: list[int]) -> int:
    """Sum of ``Pss`` (kB: proportional set size, shared pages divided among their sharers) in
    ``/proc/<pid>/smaps_rollup`` over ``pids``; a process that is gone counts 0."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
        except OSError:
            pass
    return total


class KafkaConnection:
    """One raw, blocking Kafka connection to ``127.0.0.1:port`` (TCP_NODELAY), for benchmarks
    that time the broker's side of single requests. :meth:`ask` sends one request and returns the
    decoded response body."""

    def __init__(self, port: int, client_id: str = "shoal-bench", timeout_s: float = 60) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self.cid = 0

    def ask(self, api: int, version: int, body: Any) -> Any:
        """Send request ``body`` (a kio request entity) as API ``api`` version ``version`` and
        return the response body. Raises ``ConnectionError`` when the daemon closes the
        connection, ``TimeoutError`` past the timeout."""
        from wire.protocol import decode_response, encode_request, request_header

        self.cid += 1
        self.sock.sendall(encode_request(request_header(api, version, self.cid, self.client_id), body))
        (size,) = struct.unpack(">i", self._recv(4))
        return decode_response(self._recv(size), api, version)[1]

    def _recv(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by the daemon")
            buf += chunk
        return bytes(buf)


PRODUCER = r"""
import json, sys, time
from confluent_kafka import Producer
conf, topic, n = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
opts = sys.argv[4:]
connect_first = "connect-first" in opts
partitions = int(next((o.split("=", 1)[1] for o in opts if o.startswith("partitions=")), 3))
p = Producer({**conf, "acks": "all", "linger.ms": 5, "batch.size": 1000000, "queue.buffering.max.messages": 1000000})
payload = b"x" * 100
if connect_first:
    p.list_topics(timeout=30)  # connect and authenticate before the clock starts
t = time.perf_counter()
for i in range(n):
    while True:
        try:
            p.produce(topic, payload, partition=i % partitions); break
        except BufferError:
            p.poll(0.01)
left = p.flush(120)
print(n / (time.perf_counter() - t) if left == 0 else -1)
"""
"""A confluent-kafka Producer as a ``python -c`` script: argv is the client configuration (JSON:
``bootstrap.servers`` and any security keys), the topic, the number of records (100 bytes each;
acks=all, linger 5 ms), then optionally ``connect-first`` (fetch metadata, so connecting and
authenticating happen before the clock starts) and ``partitions=N`` (the topic's partitions,
written round-robin; 3 by default). Prints records per second, or -1 when the flush left records
undelivered after 120 s."""
