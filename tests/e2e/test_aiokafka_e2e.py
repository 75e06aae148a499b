"""aiokafka (asyncio client, pinned in the ``test`` extra) against the real daemon with a classic
consumer group: ``AIOKafkaConsumer(group_id=…)`` at its own defaults (apart from the bootstrap,
the group and ``auto_offset_reset="earliest"``) reads back exactly what was produced — values,
partitions and offsets — commits, and after a daemon restart on the same data dir a new consumer
of the same group resumes after the committed offsets."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from tests.e2e.helpers import create_topic, produce

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]


async def _consume(bootstrap: str, group: str, topic: str, n: int, timeout_s: float = 60) -> tuple[list[tuple[int, int, str]], dict[int, int | None]]:
    """Join ``group``, read until ``n`` records came (or the timeout), wait 2 s more for any
    extra record, commit, and return (partition, offset, value) in order read plus the committed
    offset of every assigned partition (as ``committed()`` reads it back)."""
    from aiokafka import AIOKafkaConsumer

    c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                         enable_auto_commit=False)
    await c.start()
    try:
        out: list[tuple[int, int, str]] = []
        deadline = time.monotonic() + timeout_s
        while len(out) < n and time.monotonic() < deadline:
            for recs in (await c.getmany(timeout_ms=500)).values():
                out += [(r.partition, r.offset, r.value.decode()) for r in recs]
        extra_until = time.monotonic() + 2
        while time.monotonic() < extra_until:
            for recs in (await c.getmany(timeout_ms=200)).values():
                out += [(r.partition, r.offset, r.value.decode()) for r in recs]
        await c.commit()
        committed = {tp.partition: await c.committed(tp) for tp in c.assignment()}
        return out, committed
    finally:
        await c.stop()


def test_group_reads_back_exactly_and_resumes_after_restart(daemon_factory):
    d = daemon_factory()
    topic, group = f"aio-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(d.bootstrap, topic, 3)
    values = [f"v{i}" for i in range(30)]
    acked = produce(d.bootstrap, topic, values)
    assert len(acked) == 30
    got, committed = asyncio.run(_consume(d.bootstrap, group, topic, 30))
    assert {v: (p, o) for p, o, v in got} == acked and len(got) == 30  # each record once, where it was written
    assert committed == {p: sum(1 for pp, _ in acked.values() if pp == p) for p in range(3)}

    d.stop()
    d2 = daemon_factory(data_dir=d.data_dir)
    more = [f"w{i}" for i in range(6)]
    acked2 = produce(d2.bootstrap, topic, more)
    got2, committed2 = asyncio.run(_consume(d2.bootstrap, group, topic, 6))
    assert {v: (p, o) for p, o, v in got2} == acked2 and len(got2) == 6  # none of the 30 committed ones
    assert committed2 == {p: committed[p] + sum(1 for pp, _ in acked2.values() if pp == p) for p in range(3)}
