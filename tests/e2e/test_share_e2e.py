"""End-to-end: the real daemon with confluent-kafka 2.16.1 clients (AdminClient, Producer,
ShareConsumer in separate processes, Consumer with assign()).

The shared daemon runs with short locks (2 s), a delivery-count limit of 3, 6 s share sessions
and fast tiering (see ``conftest.SHARED_OVERRIDES``), all inside Kafka's ranges.
"""

from __future__ import annotations

import collections
import os
import signal
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import SHARED_OVERRIDES, session_pids
from tests.e2e.helpers import create_topic, describe_share_group, list_offsets, produce, raw_request, read_log, set_group_config, share_members_reconciled, start_worker, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]


def _finish(procs, timeout_s: float = 120) -> None:
    for p in procs:
        try:
            p.wait(timeout_s)
        except Exception:
            p.kill()
            p.wait(10)


def test_share_groups_explicit_and_implicit_consumers_accept_every_record_once(shared_daemon, tmp_path: Path):
    """AdminClient creates a 3-partition topic, a Producer sends 10,000 records, and two
    ShareConsumers of one group consume them: one in explicit mode (accept most, release every
    50th until its 2nd delivery, reject every 97th), one in implicit mode. Every record is accepted
    exactly once or rejected; released records return with a higher delivery count; rejected
    ones never return."""
    bs = shared_daemon.bootstrap
    create_topic(bs, "orders", 3)
    set_group_config(bs, "workers", "share.auto.offset.reset", "earliest")
    # a group-level lock long enough that a slow CI machine never loses a lock before the commit
    set_group_config(bs, "workers", "share.record.lock.duration.ms", "30000")
    values = [f"v{i}" for i in range(10_000)]
    base = {"bootstrap": bs, "group": "workers", "topic": "orders", "idle_exit_s": 6, "max_s": 150}
    a, a_log = start_worker(tmp_path, "explicit", dict(base, mode="explicit", release_every=50, release_until=2, reject_every=97))
    b, b_log = start_worker(tmp_path, "implicit", dict(base, mode="implicit"))

    assert wait_for(lambda: share_members_reconciled(shared_daemon.port, "workers", 2), 30), "the two consumers did not both get partitions"
    acked = produce(bs, "orders", values)  # produced once both members hold partitions
    assert len(acked) == 10_000
    _finish([a, b])
    rows = [r for r in read_log(a_log) + read_log(b_log) if "v" in r]
    errors = [r for r in read_log(a_log) + read_log(b_log) if "err" in r or "commit_err" in r]
    assert not errors, errors[:5]
    by_value: dict[str, list[dict]] = collections.defaultdict(list)
    for r in rows:
        by_value[r["v"]].append(r)
    accepted = {v for v, rs in by_value.items() if sum(r["act"] in ("accept", "implicit") for r in rs) >= 1}
    rejected = {v for v, rs in by_value.items() if any(r["act"] == "reject" for r in rs)}
    assert all(sum(r["act"] in ("accept", "implicit") for r in rs) <= 1 for rs in by_value.values()), "a record was accepted twice"
    assert accepted | rejected == set(values)
    assert not (accepted & rejected)
    for v, rs in by_value.items():
        rs.sort(key=lambda r: r["dc"])
        for earlier, later in zip(rs, rs[1:]):
            assert earlier["act"] == "release", f"{v} delivered again after {earlier['act']}"
            assert later["dc"] > earlier["dc"], f"{v}: delivery count did not grow after release"
        assert (rs[0]["p"], rs[0]["o"]) == acked[v]
    released = [v for v, rs in by_value.items() if any(r["act"] == "release" for r in rs)]
    assert released, "the explicit consumer released nothing (it received too few records)"
    assert {r["act"] for r in read_log(b_log) if "act" in r} == {"implicit"}
    assert any(r["act"] == "accept" for r in read_log(a_log) if "act" in r)


def test_record_released_delivery_count_limit_times_is_archived(shared_daemon, tmp_path: Path):
    """A record released on every delivery is delivered ``group.share.delivery.count.limit``
    (3) times and then archived: never delivered again (SharePartitionTest
    testAcquisitionLockTimeoutForBatchesPostMaxDeliveryCount / release path)."""
    bs = shared_daemon.bootstrap
    create_topic(bs, "poison", 1)
    set_group_config(bs, "poisoned", "share.auto.offset.reset", "earliest")
    produce(bs, "poison", ["p0", "p1", "p2"], partitioner=lambda i: 0)
    w, w_log = start_worker(tmp_path, "poison", {"bootstrap": bs, "group": "poisoned", "topic": "poison", "mode": "explicit", "always_release": ["p1"], "idle_exit_s": 8, "max_s": 60})
    _finish([w])
    rows = [r for r in read_log(w_log) if r.get("v") == "p1"]
    assert [r["dc"] for r in rows] == [1, 2, 3]
    assert {r["v"] for r in read_log(w_log) if r.get("act") == "accept"} == {"p0", "p2"}


def test_killed_consumer_records_go_to_another_consumer_after_the_lock_duration(shared_daemon, tmp_path: Path):
    """A ShareConsumer process acquires records and is SIGKILLed; after
    ``group.share.record.lock.duration.ms`` (2 s) another consumer of the group gets them, with
    delivery count 2."""
    bs = shared_daemon.bootstrap
    create_topic(bs, "jobs", 1)
    set_group_config(bs, "crashers", "share.auto.offset.reset", "earliest")
    produce(bs, "jobs", [f"j{i}" for i in range(200)], partitioner=lambda i: 0)
    holder, h_log = start_worker(tmp_path, "holder", {"bootstrap": bs, "group": "crashers", "topic": "jobs", "mode": "explicit", "hold": True, "max_s": 60})
    assert wait_for(lambda: any("v" in r for r in read_log(h_log)), 30), holder.stdout.read1(4000) if holder.poll() is not None else "holder got nothing"
    held = {(r["p"], r["o"]) for r in read_log(h_log) if "v" in r}
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(10)
    t_killed = time.monotonic()
    taker, t_log = start_worker(tmp_path, "taker", {"bootstrap": bs, "group": "crashers", "topic": "jobs", "mode": "explicit", "idle_exit_s": 8, "max_s": 90})
    _finish([taker])
    got = {(r["p"], r["o"]): r for r in read_log(t_log) if "v" in r}
    assert held <= set(got), f"held records not redelivered: {sorted(held - set(got))[:5]}"
    assert all(got[k]["dc"] == 2 for k in held)
    assert all(r["dc"] == 1 for k, r in got.items() if k not in held)
    assert time.monotonic() - t_killed >= 2.0


def test_share_auto_offset_reset_earliest_versus_latest(shared_daemon):
    """``share.auto.offset.reset`` set with IncrementalAlterConfigs on the GROUP resource:
    ``earliest`` delivers records produced before the group first fetched, the default
    ``latest`` only later ones."""
    from confluent_kafka import ShareConsumer

    bs = shared_daemon.bootstrap
    create_topic(bs, "resets", 1)
    produce(bs, "resets", [f"before{i}" for i in range(10)], partitioner=lambda i: 0)
    set_group_config(bs, "early", "share.auto.offset.reset", "earliest")
    consumers = {g: ShareConsumer({"bootstrap.servers": bs, "group.id": g}) for g in ("early", "late")}
    seen: dict[str, list[str]] = {g: [] for g in consumers}
    try:
        for c in consumers.values():
            c.subscribe(["resets"])
        t0 = time.monotonic()
        while time.monotonic() - t0 < 4:  # both groups join and initialise their share-partition
            for g, c in consumers.items():
                seen[g] += [m.value().decode() for m in c.poll(0.2) if not m.error()]
        produce(bs, "resets", [f"after{i}" for i in range(10)], partitioner=lambda i: 0)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(sum(v.startswith("after") for v in seen[g]) >= 10 for g in consumers):
            for g, c in consumers.items():
                seen[g] += [m.value().decode() for m in c.poll(0.2) if not m.error()]
    finally:
        for c in consumers.values():
            c.close()
    assert sorted(seen["early"]) == sorted([f"before{i}" for i in range(10)] + [f"after{i}" for i in range(10)])
    assert sorted(seen["late"]) == sorted(f"after{i}" for i in range(10))


def test_assign_consumer_reads_every_record_including_the_remote_tier(shared_daemon):
    """A plain Consumer with ``assign()`` reads a topic from offset 0 after its first segments
    have been copied to the remote tier and deleted locally (ListOffsets -4 earliest-local > 0,
    -5 latest-tiered ≥ 0): the offsets below the local log start come from the remote tier."""
    from confluent_kafka import Consumer, TopicPartition

    bs = shared_daemon.bootstrap
    cfg = {"remote.storage.enable": "true", "segment.bytes": "16384", "local.retention.bytes": "1", "retention.bytes": "-1"}
    create_topic(bs, "tiered", 1, cfg)
    values = [f"t{i:05d}-" + "x" * 60 for i in range(4000)]
    acked = produce(bs, "tiered", values, partitioner=lambda i: 0, **{"batch.size": 4096})  # batches < segment.bytes
    assert len(acked) == len(values)
    assert wait_for(lambda: list_offsets(shared_daemon.port, "tiered", 0, -4)[1] > 0, 60), "nothing was tiered and deleted locally"
    err, tiered = list_offsets(shared_daemon.port, "tiered", 0, -5)
    assert err == 0 and tiered >= 0
    err, max_ts_offset = list_offsets(shared_daemon.port, "tiered", 0, -3)
    assert err == 0 and 0 <= max_ts_offset < len(values)
    assert list_offsets(shared_daemon.port, "tiered", 0, -2) == (0, 0)
    assert list_offsets(shared_daemon.port, "tiered", 0, -1) == (0, len(values))
    c = Consumer({"bootstrap.servers": bs, "group.id": "reader", "enable.auto.commit": False})
    c.assign([TopicPartition("tiered", 0, 0)])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < len(values) and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append((m.offset(), m.value().decode()))
    c.close()
    assert [v for _o, v in got] == values
    assert [o for o, _v in got] == list(range(len(values)))


def test_bad_frames_close_only_their_connection(shared_daemon):
    """Random, truncated, zero, negative and oversized frames and unknown API keys on raw
    sockets: the daemon answers (UNSUPPORTED_VERSION) or closes that connection, and a real
    client on another connection keeps working."""
    import struct

    from tests.e2e.helpers import admin

    port = shared_daemon.port
    for _ in range(20):
        rnd = os.urandom(64)
        resp = raw_request(port, struct.pack(">i", len(rnd)) + rnd)
        assert resp is None or struct.unpack(">ih", resp) == (struct.unpack_from(">i", rnd, 4)[0], 35)
    garbage_metadata = struct.pack(">hhih", 3, 12, 8, -1) + b"\xff" * 30  # known API, body garbage
    assert raw_request(port, struct.pack(">i", len(garbage_metadata)) + garbage_metadata) is None
    assert raw_request(port, struct.pack(">i", 0)) is None
    assert raw_request(port, struct.pack(">i", -5)) is None
    assert raw_request(port, struct.pack(">i", 200 * 1024 * 1024)) is None  # > socket.request.max.bytes
    hdr = struct.pack(">hhih", 3, 12, 9, -1)
    assert raw_request(port, struct.pack(">i", len(hdr) + 40) + hdr + b"\x01") is None  # truncated, then EOF
    unknown = struct.pack(">hhih", 999, 0, 42, -1)
    resp = raw_request(port, struct.pack(">i", len(unknown)) + unknown)
    assert resp is not None and struct.unpack(">ih", resp) == (42, 35)
    av = struct.pack(">hhih", 18, 99, 43, -1)
    resp = raw_request(port, struct.pack(">i", len(av)) + av)
    assert resp is not None and struct.unpack_from(">ih", resp) == (43, 35)
    md = admin(shared_daemon.bootstrap).list_topics(timeout=10)
    assert md.brokers and md.brokers[1].port == port


def test_daemon_sigkilled_mid_stream_restarts_without_losing_or_redelivering(daemon_factory, tmp_path: Path):
    """The daemon (every process of it) is SIGKILLed while a Producer (acks=all) is sending and a
    ShareConsumer holds acquired records, then restarted on the same data dir: every record
    acknowledged to the producer is there (assign() reads it), no accepted record is delivered
    again, and the records that were in flight come back after their lock expired (delivery
    count 2)."""
    import threading

    from confluent_kafka import Consumer, Producer, TopicPartition

    from tests.e2e.conftest import SHARED_OVERRIDES, session_pids

    d = daemon_factory(**SHARED_OVERRIDES)
    bs = d.bootstrap
    create_topic(bs, "durable", 3)
    set_group_config(bs, "survivors", "share.auto.offset.reset", "earliest")
    set_group_config(bs, "survivors", "share.record.lock.duration.ms", "6000")
    produce(bs, "durable", [f"a{i}" for i in range(3000)])
    w, w_log = start_worker(tmp_path, "before", {"bootstrap": bs, "group": "survivors", "topic": "durable", "mode": "explicit", "hold_after": 1000, "max_s": 60})
    assert wait_for(lambda: any(r.get("act") == "hold" for r in read_log(w_log)), 60), "the worker never held records"

    acked: set[str] = set()
    stop = threading.Event()

    def keep_producing() -> None:
        p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 2, "message.timeout.ms": 8000, "retries": 0})
        i = 0
        while not stop.is_set():
            try:
                p.produce("durable", value=f"b{i}".encode(), partition=i % 3, on_delivery=lambda err, m: err is None and acked.add(m.value().decode()))
                i += 1
            except BufferError:
                pass
            p.poll(0.001)
        p.flush(15)

    t = threading.Thread(target=keep_producing)
    t.start()
    assert wait_for(lambda: len(acked) >= 2000, 60)
    os.kill(w.pid, signal.SIGKILL)
    d.kill()  # the daemon and all its actor processes, mid-stream
    w.wait(10)
    stop.set()
    t.join(60)
    before = read_log(w_log)
    accepted = {(r["p"], r["o"]) for r in before if r.get("act") == "accept"}
    held = {(r["p"], r["o"]) for r in before if r.get("act") == "hold"}
    assert len(accepted) >= 1000 and held

    d2 = daemon_factory(data_dir=d.data_dir, port=d.port, **SHARED_OVERRIDES)
    c = Consumer({"bootstrap.servers": d2.bootstrap, "group.id": "checker", "enable.auto.commit": False})
    c.assign([TopicPartition("durable", p, 0) for p in range(3)])
    seen: set[str] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not ({f"a{i}" for i in range(3000)} | acked) <= seen:
        m = c.poll(0.5)
        if m is not None and not m.error():
            seen.add(m.value().decode())
    c.close()
    missing = ({f"a{i}" for i in range(3000)} | acked) - seen
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"

    w2, w2_log = start_worker(tmp_path, "after", {"bootstrap": d2.bootstrap, "group": "survivors", "topic": "durable", "mode": "explicit", "idle_exit_s": 12, "max_s": 120})
    _finish([w2])
    after = {(r["p"], r["o"]): r for r in read_log(w2_log) if "v" in r}
    assert not (accepted & set(after)), f"accepted records delivered again: {sorted(accepted & set(after))[:5]}"
    assert held <= set(after), f"in-flight records did not come back: {sorted(held - set(after))[:5]}"
    assert all(after[k]["dc"] == 2 for k in held)


def test_admin_views_of_share_groups_and_status(shared_daemon):
    """ListGroups (AdminClient, type filter), ShareGroupDescribe and DescribeShareGroupOffsets
    (raw kio requests: confluent-kafka has no share-group admin calls), DescribeConfigs on a
    GROUP resource, and ``app.py status`` with its counts — on the groups the tests above made."""
    import json
    import subprocess
    import sys

    from confluent_kafka.admin import ConfigResource, ResourceType
    from kio.schema.describe_share_group_offsets.v0.request import DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequestGroup
    from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest

    from tests.e2e.conftest import ROOT
    from tests.e2e.helpers import admin
    from wire.protocol import decode_response, encode_request, request_header

    a = admin(shared_daemon.bootstrap)
    # confluent-kafka 2.16's list_consumer_groups drops groups whose protocol type is not
    # "consumer"/"", so share groups are listed with a raw ListGroups v5 (type filter "share").
    assert not [g.group_id for g in a.list_consumer_groups(request_timeout=30).result(30).valid]
    from kio.schema.list_groups.v5.request import ListGroupsRequest

    resp = raw_request(shared_daemon.port, encode_request(request_header(16, 5, 4), ListGroupsRequest(states_filter=(), types_filter=("share",))))
    _cid, lg = decode_response(resp, 16, 5)
    ids = {g.group_id: g.group_state for g in lg.groups}
    assert {"workers", "poisoned", "crashers", "early", "late"} <= set(ids)
    assert all(g.group_type == "share" for g in lg.groups)
    res = a.describe_configs([ConfigResource(ResourceType.GROUP, "workers")], request_timeout=30)
    entries = list(res.values())[0].result(30)
    assert entries["share.auto.offset.reset"].value == "earliest"
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

    topic_res = ConfigResource(ResourceType.TOPIC, "orders", incremental_configs=[ConfigEntry("retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET)])
    for f in a.incremental_alter_configs([topic_res]).values():
        f.result(30)
    tcfg = list(a.describe_configs([ConfigResource(ResourceType.TOPIC, "orders")], request_timeout=30).values())[0].result(30)
    assert tcfg["retention.ms"].value == "86400000" and not tcfg["retention.ms"].is_default
    bcfg = list(a.describe_configs([ConfigResource(ResourceType.BROKER, "1")], request_timeout=30).values())[0].result(30)
    assert bcfg["num.partitions"].value == "1"

    port = shared_daemon.port
    resp = raw_request(port, encode_request(request_header(77, 1, 5), ShareGroupDescribeRequest(group_ids=("workers", "nope"), include_authorized_operations=False)))
    _cid, d = decode_response(resp, 77, 1)
    workers, nope = d.groups
    assert workers.error_code == 0 and workers.group_state == "Empty" and workers.group_epoch > 0
    assert nope.error_code != 0
    resp = raw_request(port, encode_request(request_header(90, 0, 6), DescribeShareGroupOffsetsRequest(groups=(DescribeShareGroupOffsetsRequestGroup(group_id="workers", topics=None),))))
    _cid, o = decode_response(resp, 90, 0)
    [g] = o.groups
    starts = {(t.topic_name, p.partition_index): p.start_offset for t in g.topics for p in t.partitions}
    assert set(starts) == {("orders", 0), ("orders", 1), ("orders", 2)}
    assert sum(starts.values()) == 10_000  # every record of the group is acknowledged or archived

    time.sleep(2.5)  # the status counts are refreshed every shoal.status.interval.ms (2 s)
    out = subprocess.run([sys.executable, str(ROOT / "app.py"), "status", "--json", "--data-dir", str(shared_daemon.data_dir)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    st = json.loads(out.stdout)
    assert st["ready"] and st["running"] and st["apis"] >= 16
    assert st["topics"] >= 5 and st["groups"] >= 5
    assert st["tiered_segments"] > 0
    assert "in_flight_records" in st and "members" in st


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_round_trip_through_share_and_assign_consumers(shared_daemon, codec):
    """Produce with each ``compression.type`` (and acks 0, 1, all across the codecs): the batches
    are validated and stored as sent; a ShareConsumer and an assign() Consumer decode them."""
    from confluent_kafka import Consumer, ShareConsumer, TopicPartition

    bs = shared_daemon.bootstrap
    topic = f"codec-{codec}"
    create_topic(bs, topic, 1)
    set_group_config(bs, f"g-{codec}", "share.auto.offset.reset", "earliest")
    acks = {"none": "all", "gzip": "1", "snappy": "all", "lz4": "1", "zstd": "all"}[codec]
    values = [f"{codec}-{i}-" + "y" * (i % 50) for i in range(500)]
    acked = produce(bs, topic, values, partitioner=lambda i: 0, **{"compression.type": codec, "acks": acks})
    assert set(acked) == set(values)
    if codec == "none":  # acks=0: nothing is acknowledged back, but the records are appended
        produce(bs, topic, ["zero-ack"], partitioner=lambda i: 0, **{"acks": "0"})
        values = values + ["zero-ack"]
    c = Consumer({"bootstrap.servers": bs, "group.id": "r", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < len(values) and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value().decode())
    c.close()
    assert got == values
    s = ShareConsumer({"bootstrap.servers": bs, "group.id": f"g-{codec}"})
    s.subscribe([topic])
    shared = []
    deadline = time.monotonic() + 30
    while len(shared) < len(values) and time.monotonic() < deadline:
        shared += [m.value().decode() for m in s.poll(0.5) if not m.error()]
    s.close()
    assert sorted(shared) == sorted(values)


def test_delete_topic_and_recreate_starts_empty(shared_daemon):
    """DeleteTopics removes the topic (Metadata no longer lists it) and its log; a topic created
    again with the same name starts at offset 0 (its old segments are gone)."""
    from tests.e2e.helpers import admin

    bs = shared_daemon.bootstrap
    create_topic(bs, "ephemeral", 2)
    a = admin(bs)
    produce(bs, "ephemeral", [f"e{i}" for i in range(20)], partitioner=lambda i: i % 2)
    assert list_offsets(shared_daemon.port, "ephemeral", 0, -1) == (0, 10)
    a.delete_topics(["ephemeral"], request_timeout=30)["ephemeral"].result(30)
    assert "ephemeral" not in a.list_topics(timeout=10).topics
    create_topic(bs, "ephemeral", 2)
    assert list_offsets(shared_daemon.port, "ephemeral", 0, -1) == (0, 0)
    assert list_offsets(shared_daemon.port, "ephemeral", 1, -1) == (0, 0)


def test_sigint_stops_the_daemon_cleanly(daemon_factory):
    """SIGINT (Ctrl-C) stops the daemon with exit code 0 and no Thespian process left behind
    (the harness checks the PIDs of every process of the daemon)."""
    d = daemon_factory()
    pids = d.all_pids()
    assert len(pids) >= 3  # the daemon, the Thespian admin and at least the journal/controller actors
    d.proc.send_signal(signal.SIGINT)
    assert d.proc.wait(30) == 0
    d.assert_no_processes_left()


def test_second_daemon_on_a_busy_admin_port_refuses_to_start(daemon_factory, tmp_path: Path):
    """A second daemon configured with the admin port of a running one exits with an error
    instead of joining that actor system (Thespian would silently attach to it)."""
    from tests.e2e.conftest import DaemonProcess, free_port

    d = daemon_factory()
    other = DaemonProcess(tmp_path / "other", free_port(), d.admin_port, {})
    with pytest.raises(RuntimeError, match="exited"):
        other.start(timeout_s=30)
    assert "admin port" in other.log_tail()
    other.assert_no_processes_left()
    from tests.e2e.helpers import admin

    assert admin(d.bootstrap).list_topics(timeout=10).brokers  # the first one is unaffected


def _admin_port_open(port: int) -> bool:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def test_sigkill_of_only_the_main_process_stops_its_whole_actor_system(daemon_factory):
    """SIGKILL of the daemon's main process alone (no cleanup code runs in it): the actor system's
    watchdog notices and shuts the system down, so every Thespian process of that daemon (admin,
    logger, journal, controller, RLMM and share-group actors) is gone within a bounded wait; the
    data dir then restarts with the same ports and serves the data."""
    d = daemon_factory()
    create_topic(d.bootstrap, "kept", 1)
    produce(d.bootstrap, "kept", ["k0", "k1"], partitioner=lambda i: 0)
    actors = d.actor_pids()
    assert d.session and len(actors) >= 4 and d.proc.pid not in actors
    os.kill(d.proc.pid, signal.SIGKILL)
    d.proc.wait(10)
    d.killed = True
    # polled, not slept: the watchdog checks every second (shoal.actor.system.watchdog.ms)
    assert wait_for(lambda: not d.all_pids(), 30, 0.05), f"left behind: {d.all_pids()}"
    assert not _admin_port_open(d.admin_port)
    d2 = daemon_factory(data_dir=d.data_dir, port=d.port, admin_port=d.admin_port)
    assert d2.session != d.session
    assert list_offsets(d2.port, "kept", 0, -1) == (0, 2)


@pytest.mark.parametrize("watchdog_ms", ["0", "1000"], ids=["restart-with-no-watchdog", "restart-racing-the-watchdog"])
def test_restart_right_after_a_sigkill_of_the_main_process_cleans_up_the_orphans(daemon_factory, watchdog_ms):
    """A daemon restarted on the same data dir (same ports) at once after its predecessor's main
    process was SIGKILLed: with the watchdog off the orphaned actor system is still complete and the
    new daemon shuts it down; with it on, the restart races the watchdog's own shutdown. Either
    way, when the new daemon is ready no process of the old actor system is left (it waited for
    the old session to empty, so old actors never run next to the new ones) and the data is served."""
    d = daemon_factory(**{"shoal.actor.system.watchdog.ms": watchdog_ms})
    create_topic(d.bootstrap, "kept", 1)
    produce(d.bootstrap, "kept", ["k0", "k1"], partitioner=lambda i: 0)
    old = d.session
    assert old and d.actor_pids()
    os.kill(d.proc.pid, signal.SIGKILL)
    d.proc.wait(10)
    d.killed = True
    if watchdog_ms == "0":
        assert d.actor_pids(), "without a watchdog the actor system outlives its daemon"
    d2 = daemon_factory(data_dir=d.data_dir, port=d.port, admin_port=d.admin_port)
    assert session_pids(old) == []
    assert d2.session != old and d2.actor_pids()
    assert list_offsets(d2.port, "kept", 0, -1) == (0, 2)


def test_share_auto_offset_reset_by_duration(shared_daemon):
    """``share.auto.offset.reset=by_duration:PT1H``: the share-partition starts at the first
    record not older than one hour (records produced with a CreateTime two hours ago are skipped)."""
    from confluent_kafka import Producer, ShareConsumer

    bs = shared_daemon.bootstrap
    create_topic(bs, "durations", 1)
    set_group_config(bs, "recent", "share.auto.offset.reset", "by_duration:PT1H")
    now_ms = int(time.time() * 1000)
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    for i in range(5):
        p.produce("durations", f"old{i}".encode(), partition=0, timestamp=now_ms - 2 * 3600 * 1000)
    p.flush(10)
    for i in range(5):
        p.produce("durations", f"new{i}".encode(), partition=0, timestamp=now_ms)
    p.flush(10)
    c = ShareConsumer({"bootstrap.servers": bs, "group.id": "recent"})
    c.subscribe(["durations"])
    got: list[str] = []
    deadline = time.monotonic() + 30
    while len(got) < 5 and time.monotonic() < deadline:
        got += [m.value().decode() for m in c.poll(0.3) if not m.error()]
    c.close()
    assert sorted(got) == [f"new{i}" for i in range(5)]


def _share_counts(d) -> dict:
    """The daemon's share-group counters from its status file (``shoal.status.json``)."""
    import json

    try:
        return json.loads((Path(d.data_dir) / "shoal.status.json").read_text()).get("counts", {})
    except (OSError, ValueError):
        return {}


def test_idle_share_group_passivates_and_rehydrates(daemon_factory):
    """An idle share group's actor saves a snapshot and exits (``shoal.share.group.passivate.ms``),
    nothing restarts it behind the client's back, and the next client request rehydrates it from
    snapshot + tail: records accepted before passivation are not delivered again, new ones are."""
    from confluent_kafka import ShareConsumer

    d = daemon_factory(**SHARED_OVERRIDES | {"shoal.share.group.passivate.ms": "3000"})
    bs = d.bootstrap
    create_topic(bs, "naps", 1)
    set_group_config(bs, "sleepers", "share.auto.offset.reset", "earliest")
    produce(bs, "naps", [f"a{i}" for i in range(20)], partitioner=lambda i: 0)

    def consume(expected: int) -> list[str]:
        c = ShareConsumer({"bootstrap.servers": bs, "group.id": "sleepers"})
        c.subscribe(["naps"])
        got: list[str] = []
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and len(got) < expected:
                got += [m.value().decode() for m in c.poll(0.3) if not m.error()]
            c.commit_sync()
            extra_until = time.monotonic() + 2  # nothing more may arrive
            while time.monotonic() < extra_until:
                got += [m.value().decode() for m in c.poll(0.3) if not m.error()]
            c.commit_sync()
        finally:
            c.close()
        return got

    assert sorted(consume(20)) == sorted(f"a{i}" for i in range(20))
    assert wait_for(lambda: _share_counts(d).get("group_passivations", 0) >= 1 and _share_counts(d).get("group_actors") == 0, 30), \
        f"the idle group's actor did not passivate: {_share_counts(d)}"
    time.sleep(2)  # and it is not restarted behind our back
    assert _share_counts(d).get("group_actors") == 0
    produce(bs, "naps", [f"b{i}" for i in range(10)], partitioner=lambda i: 0)
    assert sorted(consume(10)) == sorted(f"b{i}" for i in range(10))


def _init_producer_id(port: int) -> tuple[int, int, int]:
    """InitProducerId v4 without a transactional id over a raw socket: ``(error, id, epoch)``."""
    import datetime

    from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
    from kio.static.primitive import i16, i64

    from wire.protocol import decode_response, encode_request, request_header

    req = InitProducerIdRequest(transactional_id=None, transaction_timeout=datetime.timedelta(seconds=60), producer_id=i64(-1), producer_epoch=i16(-1))
    _, r = decode_response(raw_request(port, encode_request(request_header(22, 4, 5), req)), 22, 4)
    return int(r.error_code), int(r.producer_id), int(r.producer_epoch)


def test_idempotent_producer_and_producer_ids_across_a_restart(daemon_factory):
    """KIP-98: confluent-kafka with ``enable.idempotence`` (Java's default) gets a producer id from
    InitProducerId and every record lands once, offsets gap-free; producer ids come from blocks the
    controller persists, so a restarted daemon never hands out an id twice."""
    d = daemon_factory()
    create_topic(d.bootstrap, "idem", 2)
    acked = produce(d.bootstrap, "idem", [f"r{i}" for i in range(2000)], partitioner=lambda i: i % 2, **{"enable.idempotence": True})
    assert len(acked) == 2000
    for part in (0, 1):
        offsets = sorted(o for p, o in acked.values() if p == part)
        assert offsets == list(range(1000))  # each record once, no gap, no duplicate
        assert list_offsets(d.port, "idem", part, -1) == (0, 1000)
    err, first, epoch = _init_producer_id(d.port)
    assert err == 0 and epoch == 0 and first >= 1  # the producer above took an id already
    assert _init_producer_id(d.port)[1] == first + 1
    d.stop()
    d2 = daemon_factory(data_dir=d.data_dir, port=d.port)
    err, after, _ = _init_producer_id(d2.port)
    assert err == 0 and after >= 1000 > first  # a new block: the old block's ids are never reused


@pytest.mark.spark
def test_replay_verify_passes_on_a_live_daemons_log(daemon_factory):
    """Issue 7's acceptance on a log the daemon writes now (schema-v2 share events with outcomes):
    real ShareConsumers accept, release and reject records; after a clean stop ``app.py replay
    --engine python --engine duckdb --engine spark --verify`` finds the three engines and the
    actors' stored snapshots in agreement, share partitions included."""
    import json as _json
    import shutil
    import subprocess
    import sys

    from confluent_kafka import AcknowledgeType, ShareConsumer

    from tests.conftest import require

    require(shutil.which("java") is not None, "Java is not installed (Spark needs Java 17)")
    d = daemon_factory(**SHARED_OVERRIDES)
    create_topic(d.bootstrap, "audited", 2)
    set_group_config(d.bootstrap, "auditors", "share.auto.offset.reset", "earliest")
    produce(d.bootstrap, "audited", [f"a{i}" for i in range(60)], partitioner=lambda i: i % 2)
    c = ShareConsumer({"bootstrap.servers": d.bootstrap, "group.id": "auditors", "share.acknowledgement.mode": "explicit"})
    c.subscribe(["audited"])
    seen: collections.Counter[str] = collections.Counter()
    deadline = time.monotonic() + 60
    released = [f"a{i}" for i in range(3, 60, 10)]
    while time.monotonic() < deadline and (len(seen) < 60 or any(seen[v] < 2 for v in released)):
        for msg in c.poll(1.0):
            if msg.error():
                continue
            v = msg.value().decode()
            seen[v] += 1
            i = int(v[1:])
            kind = AcknowledgeType.RELEASE if i % 10 == 3 and seen[v] == 1 else AcknowledgeType.REJECT if i % 10 == 7 else AcknowledgeType.ACCEPT
            c.acknowledge(msg, kind)
        c.commit_sync()
    assert len(seen) == 60 and all(seen[v] == 2 for v in released)  # released ones came back
    # a few records still in flight when the consumer leaves: released on close, so the
    # share-partitions keep non-terminal ranges for the engines to agree on
    produce(d.bootstrap, "audited", [f"b{i}" for i in range(6)], partitioner=lambda i: i % 2)
    got = 0
    deadline = time.monotonic() + 30
    while got == 0 and time.monotonic() < deadline:
        got = sum(1 for msg in c.poll(1.0) if not msg.error())
    assert got > 0
    c.close()
    d.stop()
    url = f"sqlite:///{d.data_dir / 'events.db'}"
    r = subprocess.run(
        [sys.executable, "app.py", "replay", "--url", url, "--engine", "python", "--engine", "duckdb", "--engine", "spark", "--verify", "--json"],
        capture_output=True, text=True, timeout=600, cwd=str(Path(__file__).resolve().parents[2]),
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    summary = _json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["divergences"] == []
    for engine in ("python", "duckdb", "spark"):
        assert summary["engines"][engine]["tables"]["share_partitions"] == 2, summary["engines"][engine]
        assert summary["engines"][engine]["tables"]["share_ranges"] >= 1  # the records released on close


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_records_released_from_one_big_batch_come_back_alone_with_their_values(shared_daemon, codec):
    """1,000 records in one producer batch; the ShareConsumer (``max.poll.records=50``) RELEASEs
    every tenth on its first delivery. Each redelivery acquires a few records of that batch, and
    the broker sends the batch cut down to them (``wire/share_client.py`` ``_bytes_for``, a
    batch as the log cleaner rebuilds one): librdkafka must read those batches (offset gaps,
    the codec kept) and deliver each released record once more with its own value and delivery
    count 2, every record accepted exactly once."""
    from confluent_kafka import AcknowledgeType, ShareConsumer

    bs = shared_daemon.bootstrap
    topic = f"released-{codec}"
    create_topic(bs, topic, 1)
    set_group_config(bs, f"rel-{codec}", "share.auto.offset.reset", "earliest")
    values = [f"{codec}-{i:04d}-" + "z" * 60 for i in range(1000)]
    acked = produce(bs, topic, values, partitioner=lambda i: 0, **{"compression.type": codec, "linger.ms": 1000, "batch.size": 1_000_000})
    assert len({off for _p, off in acked.values()}) == 1000
    base = min(off for _p, off in acked.values())
    c = ShareConsumer({"bootstrap.servers": bs, "group.id": f"rel-{codec}", "share.acknowledgement.mode": "explicit", "max.poll.records": 50})
    c.subscribe([topic])
    deliveries: collections.Counter[int] = collections.Counter()
    accepted: collections.Counter[int] = collections.Counter()
    deadline = time.monotonic() + 60
    while len(accepted) < 1000 and time.monotonic() < deadline:
        for m in c.poll(0.5):
            if m.error():
                continue
            o = m.offset()
            deliveries[o] += 1
            assert m.value().decode() == values[o - base] and m.delivery_count() == deliveries[o]
            if (o - base) % 10 == 0 and m.delivery_count() == 1:
                c.acknowledge(m, AcknowledgeType.RELEASE)
            else:
                c.acknowledge(m, AcknowledgeType.ACCEPT)
                accepted[o] += 1
        c.commit_async()
    c.close()
    assert len(accepted) == 1000 and set(accepted.values()) == {1}
    assert {o for o, n in deliveries.items() if n == 2} == {base + i for i in range(0, 1000, 10)}
    assert set(deliveries.values()) == {1, 2}


def test_share_fetch_v2_record_limit_acquires_and_sends_only_max_records_and_renew_needs_v2(shared_daemon):
    """ShareFetch v2 (KIP-1206 ``ShareAcquireMode`` record_limit; KIP-1222 RENEW) on the wire, raw
    requests: from one 1,000-record producer batch, each fetch with MaxRecords 10 acquires 10
    records and its response carries those 10 records only (the batch cut down to them, with
    their own offsets and values). RENEW is an acknowledge type of v2: in a v1 ShareFetch it makes
    the partition's acknowledgement INVALID_REQUEST; a v2 ShareAcknowledge renews the lock and
    answers its duration (``AcquisitionLockTimeoutMs``)."""
    import datetime

    from kio.schema.share_acknowledge.v2 import request as ack2
    from kio.schema.share_fetch.v1 import request as fetch1
    from kio.schema.share_fetch.v2 import request as fetch2
    from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
    from kio.static.primitive import i8, i32

    from store.record_batch import iter_batches, iter_records
    from wire.cluster import BrokerChannel

    bs = shared_daemon.bootstrap
    topic, group = "record-limit", "record-limit-g"
    create_topic(bs, topic, 1)
    set_group_config(bs, group, "share.auto.offset.reset", "earliest")
    values = [f"rl-{i:04d}-" + "y" * 40 for i in range(1000)]  # a batch of ~55 KB: large enough to be cut
    acked = produce(bs, topic, values, partitioner=lambda i: 0, **{"linger.ms": 1000, "batch.size": 1_000_000})
    base = min(off for _p, off in acked.values())
    ch = BrokerChannel("127.0.0.1", int(bs.rsplit(":", 1)[1]), "record-limit-e2e", 15_000)
    member, epoch, tid = "m-record-limit-0000000001", 0, None
    deadline = time.monotonic() + 30
    while tid is None and time.monotonic() < deadline:
        r = ch.ask(76, 1, ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=i32(epoch), rack_id=None,
                                                     subscribed_topic_names=(topic,) if epoch == 0 else None))
        assert int(r.error_code) == 0, r
        epoch = int(r.member_epoch)
        if r.assignment is not None and r.assignment.topic_partitions:
            tid = r.assignment.topic_partitions[0].topic_id
        else:
            time.sleep(0.2)
    assert tid is not None

    def fetch(session: int, acks=(), version: int = 2):
        m = fetch2 if version == 2 else fetch1
        extra = {"share_acquire_mode": i8(1)} if version == 2 else {}
        parts = (m.FetchTopic(topic_id=tid, partitions=(m.FetchPartition(partition_index=i32(0), acknowledgement_batches=tuple(
            m.AcknowledgementBatch(first_offset=a, last_offset=z, acknowledge_types=(i8(t),)) for a, z, t in acks)),)),)
        r = ch.ask(78, version, m.ShareFetchRequest(group_id=group, member_id=member, share_session_epoch=i32(session),
                                                     max_wait=datetime.timedelta(milliseconds=2000), min_bytes=i32(1), max_bytes=i32(50 << 20),
                                                     max_records=i32(10), batch_size=i32(10), topics=parts if session == 0 or acks else (),
                                                     forgotten_topics_data=(), **extra))
        assert int(r.error_code) == 0, r
        [p] = [p for t in r.responses for p in t.partitions]
        return p

    got = []
    for session in range(3):
        p = fetch(session, [(a, z, 1) for a, z in got[-1:]])
        assert int(p.error_code) == 0 and int(p.acknowledge_error_code) == 0, p
        [a] = p.acquired_records
        assert (int(a.first_offset), int(a.last_offset)) == (base + 10 * session, base + 10 * session + 9)
        [h] = list(iter_batches(p.records))
        assert h.base_offset == base and h.records_count == 10  # the 1,000-record batch, cut down to the 10 acquired
        assert [(r.offset, r.value.decode()) for r in iter_records(p.records)] == [(base + 10 * session + i, values[10 * session + i]) for i in range(10)]
        got.append((int(a.first_offset), int(a.last_offset)))
    # RENEW needs v2: a v1 ShareFetch carrying it fails the partition's acknowledgement
    p = fetch(3, [(got[-1][0], got[-1][1], 4)], version=1)
    assert int(p.acknowledge_error_code) == 42  # INVALID_REQUEST
    # a v2 ShareAcknowledge renews the lock of the records still held and answers its duration
    r = ch.ask(79, 2, ack2.ShareAcknowledgeRequest(group_id=group, member_id=member, share_session_epoch=i32(4), is_renew_ack=True, topics=(
        ack2.AcknowledgeTopic(topic_id=tid, partitions=(ack2.AcknowledgePartition(partition_index=i32(0), acknowledgement_batches=(
            ack2.AcknowledgementBatch(first_offset=got[-1][0], last_offset=got[-1][1], acknowledge_types=(i8(4),)),)),)),)))
    assert int(r.error_code) == 0, r
    [pa] = [p for t in r.responses for p in t.partitions]
    assert int(pa.error_code) == 0, pa
    assert r.acquisition_lock_timeout.total_seconds() > 0
    ch.close()
