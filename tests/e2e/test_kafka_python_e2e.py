"""kafka-python (the pure-Python client, pinned in the ``test`` extra) against the real daemon with
a classic consumer group: ``KafkaConsumer(group_id=…)`` at its own defaults (apart from the
bootstrap, the group, ``auto_offset_reset="earliest"`` and a poll timeout) reads back exactly what
was produced — values, partitions and offsets — commits, and after a daemon restart on the same
data dir a new consumer of the same group resumes after the committed offsets."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.e2e.helpers import create_topic, produce

pytestmark = [
    pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300),
    # kafka-python 3.0 loads its protocol schemas with importlib.resources' legacy calls
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning", "ignore:open_text is deprecated:DeprecationWarning"),
]


def _consumer(bootstrap: str, group: str, topic: str):
    from kafka import KafkaConsumer

    return KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                         enable_auto_commit=False)


def _read(c, n: int, timeout_s: float = 60) -> list[tuple[int, int, str]]:
    """Poll until ``n`` records came (or the timeout); (partition, offset, value) in order read."""
    out: list[tuple[int, int, str]] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < n and time.monotonic() < deadline:
        for recs in c.poll(timeout_ms=500).values():
            out += [(r.partition, r.offset, r.value.decode()) for r in recs]
    return out


def test_group_reads_back_exactly_and_resumes_after_restart(daemon_factory):
    from kafka import TopicPartition

    d = daemon_factory()
    topic, group = f"kp-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(d.bootstrap, topic, 3)
    values = [f"v{i}" for i in range(30)]
    acked = produce(d.bootstrap, topic, values)
    assert len(acked) == 30
    c = _consumer(d.bootstrap, group, topic)
    got = _read(c, 30)
    assert {v: (p, o) for p, o, v in got} == acked and len(got) == 30  # each record once, where it was written
    assert not _read(c, 1, 2)
    c.commit()
    committed = {p: c.committed(TopicPartition(topic, p)) for p in range(3)}
    assert committed == {p: sum(1 for pp, _ in acked.values() if pp == p) for p in range(3)}
    c.close()

    d.stop()
    d2 = daemon_factory(data_dir=d.data_dir)
    more = [f"w{i}" for i in range(6)]
    acked2 = produce(d2.bootstrap, topic, more)
    c2 = _consumer(d2.bootstrap, group, topic)
    got2 = _read(c2, 6)
    assert {v: (p, o) for p, o, v in got2} == acked2 and len(got2) == 6  # none of the 30 committed ones
    assert not _read(c2, 1, 2)
    c2.close()
