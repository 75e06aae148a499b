"""Frame fuzzer against a running daemon (issue 13): malformed frames over every advertised API
and version, interleaved with valid produce traffic; prints one JSON object.

The frames are built from valid requests of every (api key, version) the daemon advertises
(``tests/wire/kio_samples.py``: a minimal and a populated request of each), then:

* ``random``: a valid header followed by random bytes;
* ``truncated``: a valid request cut short (size prefix matching the cut; sometimes a size prefix
  promising more bytes than are ever sent);
* ``mutated``: one to four random bytes of a valid request replaced;
* ``oversized``: a huge length or count (``ff ff ff ff 0f``, int32 ``0x7fffffff`` …) inserted or
  written over a valid request at a random position — the shape of the issue's reproducer;
* ``size``: a frame size prefix outside ``1..socket.request.max.bytes`` (Kafka's
  ``InvalidReceiveException``);
* ``unsupported``: an advertised key with a version outside its range;
* ``valid``: the valid request itself.

Each connection carries one to four frames, sent at once; the fuzzer then half-closes the socket
and reads until the daemon closes it (or a 2 s timeout). A confluent-kafka Producer (acks=all)
produces records to a topic of its own during the whole run; afterwards a Consumer reads the
topic back and every acknowledged record must be there.

Figures: ``frames``, ``connections``, ``by_kind``, ``deaths`` (times the daemon process was found
dead; it is restarted on the same data and the run goes on; 0 expected), ``rss_start_kb`` /
``rss_end_kb`` of the listener process (the ``app.py run`` process; start = after a warm-up of
every valid request, end = after the run settles), ``valid_produced`` / ``valid_read_back``
(acknowledged records / of those, read back), ``seconds``, ``handler_errors`` (tracebacks of
handlers in the daemon's log: requests that passed the guard but made a handler fail — each
cost only its connection).

Run: ``.venv/bin/python bench/fuzz.py [--frames 100000] [--seed 1] [--workers 4]``.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

__all__ = ["FrameMaker", "fuzz_daemon", "rss_kb", "run_connections"]

_HUGE = [
    bytes.fromhex("ffffffff0f"),  # uvarint 2**32 - 1 (the reproducer)
    bytes.fromhex("ffffff7f"),  # uvarint 2**28 - 1
    bytes.fromhex("7fffffff"),  # int32 max
    bytes.fromhex("00ffffff"),  # int32 16M
    bytes.fromhex("80000000"),  # int32 min
    bytes.fromhex("7fff"),  # int16 max
    bytes.fromhex("fffe"),  # int16 -2
    bytes.fromhex("ffffffffff7f"),  # a 6-byte varint
]

KINDS = ("random", "truncated", "mutated", "oversized", "size", "unsupported", "valid")
_WEIGHTS = (15, 20, 27, 27, 3, 3, 5)


def rss_kb(pid: int) -> int:
    """Resident set size of process ``pid`` in KiB (``VmRSS`` of ``/proc/<pid>/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


class FrameMaker:
    """Builds fuzz frames (with their int32 size prefix) from valid requests of every version in
    ``supported`` (api key → (min, max), inclusive), deterministically from ``seed``."""

    def __init__(self, supported: dict[int, tuple[int, int]], seed: int, max_request_bytes: int = 104857600) -> None:
        from tests.wire.kio_samples import sample_frame

        self.rng = random.Random(seed)
        self.supported = dict(supported)
        self.max_request_bytes = max_request_bytes
        self.seeds: list[tuple[int, int, bytes]] = [
            (k, v, sample_frame(k, v, var, correlation_id=1)) for k, (lo, hi) in sorted(supported.items()) for v in range(lo, hi + 1) for var in (0, 1)
        ]

    def make(self) -> tuple[str, bytes]:
        """One ``(kind, framed bytes)``; ``kind`` is one of :data:`KINDS`."""
        r = self.rng
        kind = r.choices(KINDS, _WEIGHTS)[0]
        k, v, base = r.choice(self.seeds)
        if kind == "random":
            return kind, _framed(base[:8] + r.randbytes(r.randint(0, 64)))
        if kind == "truncated":
            cut = base[: r.randint(8, max(8, len(base) - 1))]
            if r.random() < 0.2:  # promise more than is sent: the daemon sees EOF mid-frame
                return kind, struct.pack(">i", len(base)) + cut
            return kind, _framed(cut)
        if kind == "mutated":
            b = bytearray(base)
            for _ in range(r.randint(1, 4)):
                b[r.randrange(8, len(b))] = r.randrange(256)
            return kind, _framed(bytes(b))
        if kind == "oversized":
            pos = r.randint(8, len(base))
            huge = r.choice(_HUGE)
            if r.random() < 0.5:
                b = base[:pos] + huge + base[pos:]
            else:
                b = base[:pos] + huge + base[pos + len(huge) :]
            return kind, _framed(b)
        if kind == "size":
            size = r.choice([0, -1, -(2**31), self.max_request_bytes + 1, 2**31 - 1])
            return kind, struct.pack(">i", size) + base
        if kind == "unsupported":
            lo, hi = self.supported[k]
            bad = r.choice([hi + 1, hi + 7, lo - 1 if lo > 0 else 200, 32767])
            return kind, _framed(struct.pack(">hh", k, bad) + base[4:])
        return kind, _framed(base)


def _framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _one_connection(port: int, frames: list[bytes], timeout_s: float) -> int:
    """Send ``frames`` on a fresh connection, half-close, read until EOF/timeout; returns the
    bytes received."""
    got = 0
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
            try:
                s.sendall(b"".join(frames))
                s.shutdown(socket.SHUT_WR)
            except OSError:
                return 0  # the daemon closed first (a bad frame)
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += len(chunk)
    except (OSError, socket.timeout):
        pass
    return got


def run_connections(port: int, maker: FrameMaker, frames: int, workers: int, alive: Callable[[], bool], timeout_s: float = 2.0) -> dict[str, Any]:
    """Send ``frames`` fuzz frames from ``workers`` threads, one to four per connection.
    ``alive()`` is polled between connections; the run stops early if it returns False.
    Returns ``{"frames", "connections", "by_kind", "bytes_received"}``."""
    lock = threading.Lock()
    stats: dict[str, Any] = {"frames": 0, "connections": 0, "by_kind": {k: 0 for k in KINDS}, "bytes_received": 0}
    stop = threading.Event()

    def batch() -> list[bytes] | None:
        with lock:
            left = frames - stats["frames"]
            if left <= 0 or stop.is_set():
                return None
            n = min(left, maker.rng.randint(1, 4))
            out = []
            for _ in range(n):
                kind, f = maker.make()
                stats["by_kind"][kind] += 1
                out.append(f)
            stats["frames"] += n
            stats["connections"] += 1
            return out

    def worker() -> None:
        while True:
            fs = batch()
            if fs is None:
                return
            got = _one_connection(port, fs, timeout_s)
            with lock:
                stats["bytes_received"] += got
            if not alive():
                stop.set()
                return

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return stats


class _ValidProducer:
    """A confluent-kafka Producer (acks=all) producing numbered records to ``topic`` until
    stopped; ``acked`` holds the values the broker acknowledged."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, interval_s: float = 0.005) -> None:
        self.bootstrap, self.topic, self.partitions, self.interval_s = bootstrap, topic, partitions, interval_s
        self.acked: set[bytes] = set()
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "_ValidProducer":
        self._thread.start()
        return self

    def _run(self) -> None:
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 2, "message.timeout.ms": 60000})

        def cb(err, msg):
            if err is None:
                self.acked.add(msg.value())

        while not self._stop.is_set():
            try:
                p.produce(self.topic, value=b"v%d" % self.sent, partition=self.sent % self.partitions, on_delivery=cb)
                self.sent += 1
            except BufferError:
                pass
            p.poll(self.interval_s)
        p.flush(60)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(90)


def read_back(bootstrap: str, topic: str, partitions: int, want: set[bytes], timeout_s: float = 60) -> set[bytes]:
    """Read ``topic`` from offset 0 with a confluent-kafka Consumer until every value of ``want``
    was seen or ``timeout_s`` passed; returns the values of ``want`` that were read."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "fuzz-read-back", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen: set[bytes] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while not want <= seen and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                seen.add(m.value())
    finally:
        c.close()
    return want & seen


def _settled_rss(pid: int, seconds: float = 6.0) -> int:
    """RSS once it has not fallen for ``seconds`` (longer than the daemon's default
    ``shoal.malloc.trim.interval.ms`` of 5 s, so a trim happened in the window: threads of closed
    connections have exited, freed heap pages went back to the OS); at most 45 s."""
    last = rss_kb(pid)
    deadline = time.monotonic() + 45
    stable_since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = rss_kb(pid)
        if now < last:
            stable_since = time.monotonic()
        last = now
        if time.monotonic() - stable_since >= seconds:
            break
    return last


def _warm_up(port: int, maker: FrameMaker) -> None:
    """Send every valid seed once (caches, schema modules, per-API paths), twice."""
    for _ in range(2):
        for _k, _v, f in maker.seeds:
            _one_connection(port, [_framed(f)], 2.0)


def fuzz_daemon(daemon: Any, frames: int, seed: int, workers: int = 4, topic: str = "fuzz-valid", partitions: int = 3, restart: Callable[[], Any] | None = None) -> dict[str, Any]:
    """Fuzz a started daemon (``tests.e2e.conftest.DaemonProcess``: ``.proc``, ``.port``,
    ``.bootstrap``, ``.log_path``). ``restart()`` (optional) restarts a dead daemon and returns
    it; without it the run stops at the first death. Returns the figures of the module doc."""
    from tests.e2e.helpers import create_topic
    from wire.dispatch import SUPPORTED

    create_topic(daemon.bootstrap, topic, partitions)
    maker = FrameMaker(SUPPORTED, seed)
    pid_start = daemon.proc.pid
    _warm_up(daemon.port, maker)
    rss_start = _settled_rss(daemon.proc.pid)
    log_start = daemon.log_path.stat().st_size if daemon.log_path.exists() else 0
    producer = _ValidProducer(daemon.bootstrap, topic, partitions).start()
    t0 = time.monotonic()
    deaths = 0
    totals: dict[str, Any] = {"frames": 0, "connections": 0, "by_kind": {k: 0 for k in KINDS}, "bytes_received": 0}
    while totals["frames"] < frames:
        st = run_connections(daemon.port, maker, frames - totals["frames"], workers, lambda: daemon.proc.poll() is None)
        for k in ("frames", "connections", "bytes_received"):
            totals[k] += st[k]
        for k, n in st["by_kind"].items():
            totals["by_kind"][k] += n
        if daemon.proc.poll() is not None:
            deaths += 1
            if restart is None:
                break
            daemon = restart()
    seconds = time.monotonic() - t0
    producer.stop()
    alive = daemon.proc.poll() is None
    rss_end = _settled_rss(daemon.proc.pid) if alive else None
    got = read_back(daemon.bootstrap, topic, partitions, producer.acked) if alive else set()
    log = daemon.log_path.read_bytes()[log_start:].decode(errors="replace") if daemon.log_path.exists() else ""
    return {
        **totals,
        "seconds": round(seconds, 1),
        "deaths": deaths,
        "same_pid": alive and daemon.proc.pid == pid_start,
        "rss_start_kb": rss_start,
        "rss_end_kb": rss_end,
        "rss_growth_pct": None if rss_end is None else round(100.0 * (rss_end - rss_start) / rss_start, 1),
        "valid_sent": producer.sent,
        "valid_produced": len(producer.acked),
        "valid_read_back": len(got),
        "handler_errors": log.count("handler for api_key="),
        "frame_errors_logged": log.count("malformed api_key="),
    }


def main() -> None:
    """Start a daemon on a temp dir, fuzz it, print the JSON figures."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--frames", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=4)
    args = ap.parse_args()
    from tests.e2e.conftest import DaemonProcess, free_port

    tmp = Path(tempfile.mkdtemp(prefix="shoal-bench-fuzz-"))
    port, admin_port = free_port(), free_port()
    made: list[DaemonProcess] = []

    def start() -> DaemonProcess:
        d = DaemonProcess(tmp / "data", port, admin_port, {})
        made.append(d)
        return d.start()

    def restart() -> DaemonProcess:
        made[-1].kill()  # the listener died: SIGKILL what is left of it, start again on the same data
        return start()

    d = start()
    try:
        out = fuzz_daemon(d, args.frames, args.seed, args.workers, restart=restart)
    finally:
        made[-1].stop()
        made[-1].assert_no_processes_left()
    print(json.dumps({"bench": "fuzz", "seed": args.seed, "workers": args.workers, **out}))


if __name__ == "__main__":
    main()
