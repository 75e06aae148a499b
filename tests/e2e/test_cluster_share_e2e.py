"""Share groups on a three-node cluster (issue 15): ShareConsumers read every partition, whichever
node leads it.

A share consumer sends ShareFetch and ShareAcknowledge for a partition to that partition's
leader (KIP-932), while the group's state lives with its coordinator node. Three ``app.py run``
daemons share one PostgreSQL event log; a 3-partition topic (RF 3, then RF 1) has its leaders spread over
the nodes, so at least one partition is led by a node that does not coordinate the group: its
share requests reach the coordinator only through forwarding (``wire/forwarding.py``, Kafka's
Envelope). With replication factor 1 (Kafka's ``default.replication.factor``) the coordinator
keeps no replica of those partitions and reads them from their leaders with Kafka's Fetch
(``wire/leader_reads.py``). Two confluent-kafka ShareConsumer processes of one group — one
explicit (releasing every 40th record once), one implicit — consume 3,000 records. Asserted:

* every record is accepted exactly once, at the partition and offset its delivery report gave,
  and records of every partition were delivered;
* a released record comes back with a higher delivery count;
* no consumer saw an error; the group has both members in ShareGroupDescribe.

Then the group's coordinator node is SIGKILLed (all its processes) while two ShareConsumers
drain 60,000 records, and restarted 5 s later: consumption goes on, every record is accepted,
and a record is accepted again only on a later delivery (a higher delivery count: its first
acknowledgement died with the coordinator; share groups deliver at least once, KIP-932).

Only properties are asserted; every wait is a generous bound.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.e2e.helpers import produce, read_log, set_group_config, share_members_reconciled, start_worker, wait_for
from tests.e2e.test_cluster_e2e import PARTITIONS, TOPIC, Cluster
from wire.cluster_view import coordinator_node

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(420)]

GROUP = "cluster-workers"


@pytest.mark.parametrize("rf", [3, 1], ids=["rf3-coordinator-holds-every-replica", "rf1-coordinator-reads-from-leaders"])
def test_share_consumers_read_partitions_led_by_every_node(daemon_factory, pg_url, tmp_path: Path, rf: int):
    cl = Cluster(daemon_factory, pg_url, tmp_path)
    assert wait_for(lambda: all((md := cl.metadata(n)) is not None and sorted(md.brokers) == [1, 2, 3] for n in (1, 2, 3)), 60)
    bs = cl.bootstrap()
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, rf)])[TOPIC].result(30)
    assert wait_for(lambda: all({p: len(v[2]) for p, v in cl.partitions(n).items()} == {p: rf for p in range(PARTITIONS)} for n in (1, 2, 3)), 60)
    states = cl.partitions()
    leaders = {p: v[0] for p, v in states.items()}
    coordinator = coordinator_node(GROUP, [1, 2, 3])
    elsewhere = [p for p, ld in leaders.items() if ld != coordinator]
    assert elsewhere, f"every partition is led by the coordinator {coordinator}: {leaders}; the test would not forward"
    if rf == 1:  # the coordinator keeps no replica of these: it reads them from their leaders (wire/leader_reads.py)
        assert all(coordinator not in states[p][1] for p in elsewhere), states

    set_group_config(bs, GROUP, "share.auto.offset.reset", "earliest")
    set_group_config(bs, GROUP, "share.record.lock.duration.ms", "30000")
    values = [f"v{i}" for i in range(3000)]
    base = {"bootstrap": bs, "group": GROUP, "topic": TOPIC, "idle_exit_s": 8, "max_s": 240}
    a, a_log = start_worker(tmp_path, "explicit", dict(base, mode="explicit", release_every=40, release_until=2))
    b, b_log = start_worker(tmp_path, "implicit", dict(base, mode="implicit"))
    try:
        assert wait_for(lambda: share_members_reconciled(cl.ports[coordinator][0], GROUP, 2), 60), "the two consumers did not both get partitions"
        acked = produce(bs, TOPIC, values)
        assert len(acked) == len(values)
        for p in (a, b):
            p.wait(300)
    finally:
        for p in (a, b):
            if p.poll() is None:
                p.kill()
                p.wait(10)

    logs = read_log(a_log) + read_log(b_log)
    errors = [r for r in logs if "err" in r or "commit_err" in r]
    assert not errors, errors[:5]
    by_value: dict[str, list[dict]] = collections.defaultdict(list)
    for r in logs:
        if "v" in r:
            by_value[r["v"]].append(r)
    accepted = {v for v, rs in by_value.items() if sum(r["act"] in ("accept", "implicit") for r in rs) == 1}
    twice = [v for v, rs in by_value.items() if sum(r["act"] in ("accept", "implicit") for r in rs) > 1]
    assert not twice, f"accepted more than once: {twice[:5]}"
    missing = sorted(set(values) - accepted, key=lambda v: int(v[1:]))
    assert not missing, f"{len(missing)} records never accepted, e.g. {missing[:5]} on partitions {sorted({acked[v][0] for v in missing})}"
    for v, rs in by_value.items():
        rs.sort(key=lambda r: r["dc"])
        assert (rs[0]["p"], rs[0]["o"]) == acked[v], f"{v} delivered at {(rs[0]['p'], rs[0]['o'])}, produced at {acked[v]}"
        for earlier, later in zip(rs, rs[1:]):
            assert earlier["act"] == "release" and later["dc"] > earlier["dc"], f"{v}: {rs}"
    assert {r["p"] for r in logs if "p" in r} == set(range(PARTITIONS))
    assert any(r["act"] == "release" for r in logs if "act" in r), "nothing was released"


def test_share_consumers_go_on_when_the_coordinator_node_is_sigkilled(daemon_factory, pg_url, tmp_path: Path):
    group = "failover-workers"
    cl = Cluster(daemon_factory, pg_url, tmp_path)
    assert wait_for(lambda: all((md := cl.metadata(n)) is not None and sorted(md.brokers) == [1, 2, 3] for n in (1, 2, 3)), 60)
    bs = cl.bootstrap()
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(30)
    assert wait_for(cl.all_in_sync, 60)
    coordinator = coordinator_node(group, [1, 2, 3])
    set_group_config(bs, group, "share.auto.offset.reset", "earliest")
    set_group_config(bs, group, "share.record.lock.duration.ms", "15000")
    values = [f"v{i}" for i in range(60_000)]
    acked = produce(bs, TOPIC, values)
    assert len(acked) == len(values)
    base = {"bootstrap": bs, "group": group, "topic": TOPIC, "idle_exit_s": 20, "max_s": 200, "conf": {"max.poll.records": 50}}
    procs = [start_worker(tmp_path, f"w{i}", dict(base, mode="explicit")) for i in range(2)]
    try:
        def deliveries() -> int:
            return sum(1 for _p, lg in procs for r in read_log(lg) if "v" in r)

        assert wait_for(lambda: deliveries() >= 5_000, 90, 0.05), "the consumers did not start"
        cl.kill(coordinator)
        killed_at = deliveries()
        assert killed_at < len(values), "everything was consumed before the kill: the test would prove nothing"
        import time

        time.sleep(5)
        cl.start(coordinator)
        for p, _lg in procs:
            p.wait(300)
    finally:
        for p, _lg in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)

    by_value: dict[str, list[dict]] = collections.defaultdict(list)
    for _p, lg in procs:
        for r in read_log(lg):
            if "v" in r:
                by_value[r["v"]].append(r)
    missing = sorted(set(values) - {v for v, rs in by_value.items() if any(r["act"] == "accept" for r in rs)}, key=lambda v: int(v[1:]))
    assert not missing, f"{len(missing)} records never accepted after the coordinator's SIGKILL (killed after {killed_at} deliveries), e.g. {missing[:5]}"
    for v, rs in by_value.items():
        dcs = [r["dc"] for r in rs]
        assert len(set(dcs)) == len(dcs), f"{v} delivered twice with the same delivery count: {rs}"
        first = min(rs, key=lambda r: r["dc"])
        assert (first["p"], first["o"]) == acked[v]
