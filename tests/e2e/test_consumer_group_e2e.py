"""Classic consumer groups on a real daemon (``app.py run``) with confluent-kafka's
``Consumer(group.id=…).subscribe()``: records produced are read back exactly, a second member
triggers a rebalance after which the two members own disjoint partitions covering the topic, and
committed offsets survive a daemon restart on the same data dir."""

from __future__ import annotations

import time
import uuid

from tests.e2e.helpers import create_topic, group_consumer, poll_records, produce, read_back_commit_restart


consumer = group_consumer
read = poll_records


def test_subscribe_reads_back_exactly_and_commits_survive_restart(daemon_factory):
    read_back_commit_restart(daemon_factory, consumer, "cg")


def test_second_member_rebalances_to_disjoint_partitions(daemon_factory):
    d = daemon_factory()
    topic, group = f"cg-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(d.bootstrap, topic, 4)
    a = consumer(d.bootstrap, group)
    a.subscribe([topic])
    deadline = time.monotonic() + 60
    while len(a.assignment()) < 4 and time.monotonic() < deadline:
        a.poll(0.2)
    assert len(a.assignment()) == 4
    b = consumer(d.bootstrap, group)
    b.subscribe([topic])
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        a.poll(0.1)
        b.poll(0.1)
        pa = {tp.partition for tp in a.assignment()}
        pb = {tp.partition for tp in b.assignment()}
        if pa and pb and not pa & pb and pa | pb == {0, 1, 2, 3}:
            break
    pa = {tp.partition for tp in a.assignment()}
    pb = {tp.partition for tp in b.assignment()}
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
    # b leaves (LeaveGroup on close): a gets every partition well before b's session (45 s) ends
    b.close()
    left_at = time.monotonic()
    while time.monotonic() - left_at < 30 and len(a.assignment()) < 4:
        a.poll(0.2)
    assert {tp.partition for tp in a.assignment()} == {0, 1, 2, 3}
    a.close()


_MEMBER_SCRIPT = """
import sys, time
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "auto.offset.reset": "earliest",
              "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
c.subscribe([sys.argv[3]])
while True:
    msg = c.poll(0.2)
    if msg is not None and not msg.error():
        c.commit(message=msg, asynchronous=False)  # committed before it is reported read
        print("READ", msg.partition(), msg.offset(), msg.value().decode(), flush=True)
    if c.assignment():
        print("ASSIGNED", sorted(tp.partition for tp in c.assignment()), flush=True)
"""


def test_killed_member_is_removed_after_its_session_and_the_survivor_resumes_from_its_commits(daemon_factory, tmp_path):
    """A member process that read and committed its partitions' records is SIGKILLed (no
    LeaveGroup): after its session timeout the survivor owns every partition and reads the records
    produced after the kill exactly once, starting at the killed member's committed offsets."""
    import signal
    import subprocess
    import sys

    from confluent_kafka import TopicPartition

    d = daemon_factory()
    topic, group = f"cg-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(d.bootstrap, topic, 4)
    script = tmp_path / "member.py"
    script.write_text(_MEMBER_SCRIPT)
    out = tmp_path / "member.out"
    with open(out, "w") as fh:
        proc = subprocess.Popen([sys.executable, str(script), d.bootstrap, group, topic], stdout=fh, stderr=subprocess.STDOUT)

    def member_read() -> list[tuple[int, int, str]]:
        return [(int(p), int(o), v) for line in out.read_text().splitlines() if line.startswith("READ ")
                for _, p, o, v in [line.split(" ", 3)]]

    read_by_a: list[tuple[int, int, str]] = []

    def poll_a() -> None:
        msg = a.poll(0.2)
        if msg is not None and not msg.error():
            a.commit(message=msg, asynchronous=False)
            read_by_a.append((msg.partition(), msg.offset(), msg.value().decode()))

    try:
        a = consumer(d.bootstrap, group, **{"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
        a.subscribe([topic])
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            poll_a()
            pa = {tp.partition for tp in a.assignment()}
            if pa and len(pa) < 4 and "ASSIGNED" in out.read_text():
                break
        pa = {tp.partition for tp in a.assignment()}
        assert pa and len(pa) < 4, (pa, out.read_text())  # the partitions are shared
        before = [f"b{i}" for i in range(40)]
        produce(d.bootstrap, topic, before, partitioner=lambda i: i % 4)
        deadline = time.monotonic() + 60
        while len(read_by_a) + len(member_read()) < 40 and time.monotonic() < deadline:
            poll_a()
        killed_read = member_read()
        assert sorted(v for _, _, v in read_by_a + killed_read) == sorted(before), out.read_text()
        assert killed_read and {p for p, _, _ in killed_read}.isdisjoint(pa)  # the member read (and committed) its own
    finally:
        proc.send_signal(signal.SIGKILL)  # no LeaveGroup: only the session timeout removes it
        proc.wait(10)
    after = [f"k{i}" for i in range(8)]
    acked = produce(d.bootstrap, topic, after, partitioner=lambda i: i % 4)
    read_by_a.clear()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (len(a.assignment()) < 4 or len(read_by_a) < 8):
        poll_a()
    assert {tp.partition for tp in a.assignment()} == {0, 1, 2, 3}
    settle = time.monotonic() + 2
    while time.monotonic() < settle:
        poll_a()
    # exactly the records produced after the kill, each once, where they were written: nothing
    # before the killed member's committed offsets is read again
    assert sorted(read_by_a) == sorted((p, o, v) for v, (p, o) in acked.items()), read_by_a
    committed = {tp.partition: tp.offset for tp in a.committed([TopicPartition(topic, p) for p in range(4)], timeout=30)}
    assert committed == {p: 12 for p in range(4)}
    a.close()
