"""KIP-848 consumer groups on a real daemon (``app.py run``) with confluent-kafka's
``Consumer({"group.protocol": "consumer"})``: records produced are read back exactly and the
committed offsets survive a daemon restart; a second member makes the group rebalance to two
disjoint sets of partitions covering the topic; a member process SIGKILLed loses its partitions
to the survivor after the session timeout (lowered through the daemon's overrides)."""

from __future__ import annotations

import time
import uuid

from tests.e2e.helpers import create_topic, produce

#: a short consumer session so the SIGKILL test does not wait 45 s (inside Kafka's bounds once
#: the minimums are lowered with it)
FAST = {
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "6000",
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
}


def consumer(bootstrap: str, group: str, **conf):
    from confluent_kafka import Consumer

    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False, **conf})


def read(c, n: int, timeout_s: float = 60) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < n and time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is None or msg.error():
            continue
        out.append((msg.partition(), msg.offset(), msg.value().decode()))
    return out


def describe(bootstrap: str, group: str):
    from tests.e2e.helpers import admin

    a = admin(bootstrap)
    return a.describe_consumer_groups([group], request_timeout=30)[group].result(30)


def test_consumer_protocol_reads_back_exactly_and_commits_survive_restart(daemon_factory):
    d = daemon_factory()
    topic, group = f"cp-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(d.bootstrap, topic, 3)
    values = [f"v{i}" for i in range(30)]
    acked = produce(d.bootstrap, topic, values)
    assert len(acked) == 30
    c = consumer(d.bootstrap, group)
    c.subscribe([topic])
    got = read(c, 30)
    assert {v: (p, o) for p, o, v in got} == acked  # exactly what was written, where it was written
    assert not read(c, 1, 2)
    c.commit(asynchronous=False)
    from confluent_kafka import TopicPartition

    committed = {tp.partition: tp.offset for tp in c.committed([TopicPartition(topic, p) for p in range(3)], timeout=30)}
    assert committed == {p: sum(1 for pp, _ in acked.values() if pp == p) for p in range(3)}
    desc = describe(d.bootstrap, group)
    assert str(getattr(desc.type, "name", desc.type)).upper() == "CONSUMER"
    assert len(desc.members) == 1
    from tests.e2e.helpers import admin

    adm = admin(d.bootstrap)  # kept alive until the future resolves
    res = adm.list_consumer_groups(request_timeout=30).result(30)
    listed = {g.group_id: g for g in res.valid}
    assert group in listed, (res.valid, res.errors, [(g.group_id, g.type, g.state) for g in res.valid])
    assert str(getattr(listed[group].type, "name", listed[group].type)).upper() == "CONSUMER"
    c.close()

    d.stop()
    d2 = daemon_factory(data_dir=d.data_dir)
    more = [f"w{i}" for i in range(6)]
    produce(d2.bootstrap, topic, more)
    c2 = consumer(d2.bootstrap, group)
    c2.subscribe([topic])
    got2 = read(c2, 6)
    assert sorted(v for _, _, v in got2) == sorted(more)  # none of the 30 committed ones again
    assert not read(c2, 1, 2)
    c2.close()


def _owned(c) -> set[int]:
    return {tp.partition for tp in c.assignment()}


def test_second_member_rebalances_to_disjoint_partitions(daemon_factory):
    d = daemon_factory()
    topic, group = f"cp-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(d.bootstrap, topic, 4)
    a = consumer(d.bootstrap, group)
    a.subscribe([topic])
    deadline = time.monotonic() + 60
    while len(_owned(a)) < 4 and time.monotonic() < deadline:
        a.poll(0.1)
    assert _owned(a) == {0, 1, 2, 3}
    b = consumer(d.bootstrap, group)
    b.subscribe([topic])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        a.poll(0.05)
        b.poll(0.05)
        pa, pb = _owned(a), _owned(b)
        if pa and pb and not pa & pb and pa | pb == {0, 1, 2, 3}:
            break
    pa, pb = _owned(a), _owned(b)
    assert pa and pb and not pa & pb and pa | pb == {0, 1, 2, 3}, (pa, pb)
    values = [f"x{i}" for i in range(40)]
    produce(d.bootstrap, topic, values, partitioner=lambda i: i % 4)
    got: dict[str, list[tuple[int, int, str]]] = {"a": [], "b": []}
    deadline = time.monotonic() + 60
    while len(got["a"]) + len(got["b"]) < 40 and time.monotonic() < deadline:
        for name, c in (("a", a), ("b", b)):
            msg = c.poll(0.2)
            if msg is not None and not msg.error():
                got[name].append((msg.partition(), msg.offset(), msg.value().decode()))
    assert sorted(v for r in got.values() for _, _, v in r) == sorted(values)
    assert {p for p, _, _ in got["a"]} <= pa and {p for p, _, _ in got["b"]} <= pb
    desc = describe(d.bootstrap, group)
    assert len(desc.members) == 2
    # b leaves (heartbeat at epoch -1 on close): a gets every partition back at once
    b.close()
    left_at = time.monotonic()
    while time.monotonic() - left_at < 30 and len(_owned(a)) < 4:
        a.poll(0.1)
    assert _owned(a) == {0, 1, 2, 3}
    a.close()


_MEMBER_SCRIPT = """
import sys
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "group.protocol": "consumer",
              "auto.offset.reset": "earliest"})
c.subscribe([sys.argv[3]])
while True:
    c.poll(0.2)
    if c.assignment():
        print("ASSIGNED", sorted(tp.partition for tp in c.assignment()), flush=True)
"""


def test_killed_member_loses_its_partitions_after_the_session(daemon_factory, tmp_path):
    import signal
    import subprocess
    import sys

    d = daemon_factory(**FAST)
    topic, group = f"cp-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(d.bootstrap, topic, 4)
    script = tmp_path / "member.py"
    script.write_text(_MEMBER_SCRIPT)
    out = tmp_path / "member.out"
    with open(out, "w") as fh:
        proc = subprocess.Popen([sys.executable, str(script), d.bootstrap, group, topic], stdout=fh, stderr=subprocess.STDOUT)
    try:
        a = consumer(d.bootstrap, group)
        a.subscribe([topic])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            a.poll(0.1)
            pa = _owned(a)
            if pa and len(pa) < 4 and "ASSIGNED" in out.read_text():
                break
        pa = _owned(a)
        assert pa and len(pa) < 4, (pa, out.read_text())
    finally:
        proc.send_signal(signal.SIGKILL)  # no leave heartbeat: only the session timeout fences it
        proc.wait(10)
    killed_at = time.monotonic()
    deadline = killed_at + 60
    while time.monotonic() < deadline and len(_owned(a)) < 4:
        a.poll(0.1)
    assert _owned(a) == {0, 1, 2, 3}
    assert time.monotonic() - killed_at >= 4  # not before the session (6 s) runs out
    values = [f"k{i}" for i in range(8)]
    produce(d.bootstrap, topic, values, partitioner=lambda i: i % 4)
    assert sorted(v for _, _, v in read(a, 8)) == sorted(values)
    a.close()
