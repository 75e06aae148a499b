"""``wire.quotas`` alone: Kafka's override format, per-address and broker-wide connection counts,
the request-slot bound, and a body read that grows only with the bytes that arrive."""

from __future__ import annotations

import socket
import threading
import tracemalloc

import pytest
from hypothesis import given, strategies as st

from wire.quotas import INT_MAX, READ_CHUNK, ConnectionQuotas, ListenerLimits, RequestSlots, parse_overrides, recv_body


def _ident(host: str) -> set[str]:
    return {host}


def test_overrides_split_at_the_last_colon_like_kafka_csv_map():
    assert parse_overrides("hostName:100, 127.0.0.1:200", _ident) == {"hostName": 100, "127.0.0.1": 200}
    assert parse_overrides("::1:3,fe80::2:0", _ident) == {"::1": 3, "fe80::2": 0}
    assert parse_overrides("", _ident) == {} and parse_overrides(None, _ident) == {}


@pytest.mark.parametrize("bad", ["host", ":5", "h:x", "h:-1"])
def test_malformed_overrides_are_refused(bad):
    with pytest.raises(ValueError):
        parse_overrides(bad, _ident)


def test_override_host_names_are_resolved():
    assert "127.0.0.1" in parse_overrides("localhost:7")


def test_limits_from_config_defaults_and_kafka_validation():
    d = ListenerLimits.from_config({})
    assert (d.connections.max_connections, d.connections.max_per_ip, d.requests.limit, d.max_request_bytes) == (INT_MAX, INT_MAX, 500, 104857600)
    lim = ListenerLimits.from_config({"max.connections": "3", "max.connections.per.ip": "0", "max.connections.per.ip.overrides": "10.0.0.1:2",
                                      "queued.max.requests": "7", "socket.request.max.bytes": "1024"})
    assert (lim.connections.max_for("10.0.0.1"), lim.connections.max_for("10.0.0.2"), lim.requests.limit, lim.max_request_bytes) == (2, 0, 7, 1024)
    with pytest.raises(ValueError, match="can be set to zero only if"):
        ListenerLimits.from_config({"max.connections.per.ip": "0"})
    for key, value in (("queued.max.requests", "0"), ("socket.request.max.bytes", "0"), ("max.connections", "-1"), ("max.connections", "x")):
        with pytest.raises(ValueError, match=key):
            ListenerLimits.from_config({key: value})


def test_per_ip_limit_refuses_without_counting_and_a_release_frees_a_place():
    q = ConnectionQuotas(max_per_ip=2, overrides={"10.0.0.9": 1})
    assert q.acquire("10.0.0.1") and q.acquire("10.0.0.1")
    assert not q.acquire("10.0.0.1")
    assert q.acquire("10.0.0.2")  # other addresses are not affected
    assert q.acquire("10.0.0.9") and not q.acquire("10.0.0.9")  # the override
    assert (q.count("10.0.0.1"), q.total, q.rejected) == (2, 4, 2)
    q.release("10.0.0.1")
    assert q.acquire("10.0.0.1")
    with pytest.raises(ValueError):
        q.release("10.9.9.9")


def test_broker_wide_limit_blocks_the_acceptor_until_a_connection_closes():
    q = ConnectionQuotas(max_connections=1)
    assert q.acquire("a")
    admitted = threading.Event()
    t = threading.Thread(target=lambda: q.acquire("b") and admitted.set())
    t.start()
    while q.waited == 0:  # the second accept is waiting for a slot
        t.join(0.01)
    assert not admitted.is_set() and q.total == 1
    q.release("a")
    t.join(10)
    assert admitted.is_set() and q.total == 1 and q.count("b") == 1


def test_a_waiting_acceptor_gives_up_when_the_listener_stops():
    q = ConnectionQuotas(max_connections=0)
    stopping = threading.Event()
    stopping.set()
    assert q.acquire("a", stopping) is False and q.total == 0


def test_request_slots_bound_requests_in_flight():
    slots = RequestSlots(2)
    assert slots.acquire() and slots.acquire()
    got = threading.Event()
    t = threading.Thread(target=lambda: slots.acquire() and got.set())
    t.start()
    while slots.waited == 0:
        t.join(0.01)
    assert not got.is_set() and slots.in_flight == 2
    slots.release()
    t.join(10)
    assert got.is_set() and slots.in_flight == 2
    stopping = threading.Event()
    stopping.set()
    assert slots.acquire(stopping) is False
    slots.release(), slots.release()
    with pytest.raises(ValueError):
        slots.release()


def test_recv_body_reads_exactly_and_reports_eof():
    a, b = socket.socketpair()
    with a, b:
        payload = bytes(range(256)) * 1000  # several chunks, more than a socket buffer
        sender = threading.Thread(target=b.sendall, args=(payload + b"next",))
        sender.start()
        assert recv_body(a, len(payload)) == payload
        sender.join(10)
        assert recv_body(a, 4) == b"next"
        b.sendall(b"0123456789")
        b.shutdown(socket.SHUT_WR)
        assert recv_body(a, 100) is None


def test_a_declared_100_mb_body_with_10_bytes_sent_costs_a_chunk_not_100_mb():
    a, b = socket.socketpair()
    with a, b:
        b.sendall(b"0123456789")
        b.shutdown(socket.SHUT_WR)
        tracemalloc.start()
        try:
            assert recv_body(a, 100 * 1024 * 1024) is None
            _cur, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 4 * READ_CHUNK


@given(
    per_ip=st.integers(0, 3),
    override=st.integers(0, 3),
    ops=st.lists(st.tuples(st.booleans(), st.sampled_from(["10.0.0.1", "10.0.0.2", "10.0.0.9"])), max_size=60),
)
def test_per_ip_counts_follow_a_model_and_never_exceed_the_limits(per_ip, override, ops):
    """Random accepts (True) and closes (False) against a dict model: an accept is admitted iff the
    address is below its limit; counts never exceed it; totals agree."""
    q = ConnectionQuotas(max_per_ip=per_ip, overrides={"10.0.0.9": override})
    model: dict[str, int] = {}
    for accept, ip in ops:
        limit = override if ip == "10.0.0.9" else per_ip
        if accept:
            admitted = q.acquire(ip)
            assert admitted == (model.get(ip, 0) < limit)
            if admitted:
                model[ip] = model.get(ip, 0) + 1
        elif model.get(ip, 0) > 0:
            q.release(ip)
            model[ip] -= 1
        assert q.count(ip) == model.get(ip, 0) <= limit
    assert q.total == sum(model.values())
