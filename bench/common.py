"""What the daemon benchmarks (``bench/e2e.py``, ``bench/security.py``, ``bench/group_limits.py``)
share: the producer they run in a separate process. Free ports come from the e2e harness
(``tests.e2e.conftest.free_port``), whose ``DaemonProcess`` they all start."""

from __future__ import annotations

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
