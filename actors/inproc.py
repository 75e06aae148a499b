"""Thespian actors hosted in this process: a ``simpleSystemBase`` actor system run by one thread.

The daemon's actors live in Thespian's ``multiprocTCPBase`` (one process per actor): isolation, at
the price of a pickled TCP round trip per message — 1.5–3 ms on the 2-core machines Shoal is
measured on, several times the whole latency budget of a share consumer (issue 14). The actors on
the request path of every ShareFetch and ShareAcknowledge (the share-group actors) are therefore
hosted in the listener process instead, in Thespian's own in-process base: the same actor classes,
the same ``receiveMsg_<Type>`` handlers and ``send``/``createActor`` semantics as under the tests'
``simpleSystemBase``, with messages passed as objects (never pickled).

:class:`InProcessActorSystem` owns that system and its host thread. ``simpleSystemBase`` is
single-threaded, so the system runs under one lock, *the turn*: every handler runs while its thread
holds the turn, one message at a time, so an actor's state needs no lock of its own. A thread that
hands the system work runs it itself when the turn is free (it takes the turn, runs every job
queued, gives the turn back), and leaves it to the turn's holder otherwise; the host thread runs the
timers and whatever is left. A ShareFetch thus costs its connection thread no hand-off to the host
thread and back, and the journal writer that commits its events runs the reply on its own thread:
two thread wake-ups per ask instead of four (on 2 cores, p50 of produce → deliver at 1,000
records/s 2.2–2.7 ms instead of 2.7–3.0 in alternating 30 s runs). Other threads talk to it
through:

* :meth:`InProcessActorSystem.ask` / :meth:`~InProcessActorSystem.tell`: a caller thread's message
  is handed to the system, sent from that thread's own reply endpoint (an actor whose received
  messages go to the caller's queue), and the reply awaited with a real timeout. Endpoints are
  pooled: a connection thread that ends gives its endpoint back; one whose ask timed out is
  dropped (a late reply must not answer the next request).
* :meth:`InProcessActorSystem.post`: run a function in the system, after the functions posted
  before it (how other threads — the journal writer — deliver replies into the system).

Timers: ``simpleSystemBase`` scans every pending ``wakeupAfter`` on every message (measured: 2.7 µs
per pending wakeup per message, 0.5 ms per message with 200 share groups), and fires them only
while some thread sends. Hosted actors therefore ask the host for their wakeups instead
(:class:`ScheduleWakeup` to :attr:`InProcessActorSystem.timer`, see
:meth:`actors.base.ShoalActor.schedule_wakeup`): the host keeps one heap of deadlines, waits on it
between messages, and delivers Thespian's own :class:`~thespian.actors.WakeupMessage` to the actor
when a deadline passes — nothing polls.

Layering: this is the actor runtime (``actors/``); it knows no domain. :mod:`actors.share.host`
hosts the share groups in it.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import logging
import queue
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable

from thespian.actors import Actor, ActorExitRequest, ActorSystem, WakeupMessage

__all__ = ["Forward", "InProcessActorSystem", "ScheduleWakeup", "hosted_in_process"]

log = logging.getLogger("shoal.actors.inproc")

_HOSTED = threading.local()


def hosted_in_process() -> bool:
    """Whether the calling thread runs an :class:`InProcessActorSystem` now: it is the system's
    host thread, or holds the system's turn to run its jobs (its actors share the process with
    the listener: they must not freeze its heap, :func:`actors.base.freeze_inherited_heap`)."""
    return bool(getattr(_HOSTED, "host", False))


@dataclass(frozen=True, slots=True)
class ScheduleWakeup:
    """To :attr:`InProcessActorSystem.timer`: deliver ``WakeupMessage(delay, payload)`` to the
    sender once ``delay_ms`` (ms, ≥ 0) have passed. Cannot be cancelled (as ``wakeupAfter``)."""

    delay_ms: int
    payload: Any = None


@dataclass(frozen=True, slots=True)
class _Bind:
    """Host-internal: hand an endpoint its reply queue, or the timer its host (objects, never
    copied by ``simpleSystemBase``)."""

    target: Any


@dataclass(frozen=True, slots=True)
class Forward:
    """To a caller's endpoint (:meth:`InProcessActorSystem.ask_via`): send ``msg`` to ``to`` as
    the endpoint, so that the reply comes back to the caller."""

    to: Any
    msg: Any


class _Endpoint(Actor):
    """A caller thread's reply endpoint: forwards :class:`Forward` messages as itself and puts
    everything else it receives (the replies) into the caller's queue."""

    def __init__(self) -> None:
        super().__init__()
        self._queue: queue.SimpleQueue | None = None

    def receiveMessage(self, msg: Any, sender: Any) -> None:  # noqa: N802 (Thespian's name)
        if isinstance(msg, Forward):
            self.send(msg.to, msg.msg)
        elif isinstance(msg, _Bind):
            self._queue = msg.target
        elif isinstance(msg, ActorExitRequest):
            self._queue = None
        elif self._queue is not None:
            self._queue.put(msg)


class _Timer(Actor):
    """The address hosted actors send :class:`ScheduleWakeup` to; it runs in the system and
    pushes the deadline onto its host's heap."""

    def __init__(self) -> None:
        super().__init__()
        self._host: InProcessActorSystem | None = None

    def receiveMessage(self, msg: Any, sender: Any) -> None:  # noqa: N802
        if isinstance(msg, _Bind):
            self._host = msg.target
        elif isinstance(msg, ScheduleWakeup) and self._host is not None:
            self._host._schedule(sender, max(0, int(msg.delay_ms)), msg.payload)  # noqa: SLF001 - the system's own heap


class InProcessActorSystem:
    """A Thespian ``simpleSystemBase`` actor system run by one thread of this process (see the
    module doc). ``name`` names the thread. Use :meth:`start` first; :meth:`stop` at the end."""

    def __init__(self, name: str = "shoal-actors") -> None:
        self.name = name
        self._jobs: collections.deque[Callable[[], None]] = collections.deque()
        self._wake = threading.Event()
        #: the turn: held by whichever thread runs the system (its jobs, its due timers)
        self._turn = threading.Lock()
        #: the system was shut down: posted jobs are no longer run
        self._closed = False
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._asys: Any = None
        #: (due monotonic s, seq, target address, delay ms, payload): the hosted actors' wakeups
        self._timers: list[tuple[float, int, Any, int, Any]] = []
        self._seq = itertools.count()
        self._local = threading.local()
        self._free_endpoints: list[tuple[Any, queue.SimpleQueue]] = []
        self._pool_lock = threading.Lock()
        self.timer: Any = None
        #: messages handed to the system and asks answered (for status and the benchmarks)
        self.asks = 0
        self.timeouts = 0

    # ------------------------------------------------------------------ lifecycle
    def start(self, timeout_s: float = 10.0) -> "InProcessActorSystem":
        """Start the host thread and its system (with the timer). Returns ``self``; raises
        ``RuntimeError`` if the thread does not come up within ``timeout_s``."""
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name=self.name, daemon=True)
        self._thread.start()
        if not ready.wait(timeout_s):
            raise RuntimeError(f"{self.name}: the in-process actor system did not start")
        self.timer = self.call(lambda asys: self._new_timer(asys), timeout_s)
        return self

    def _new_timer(self, asys: Any) -> Any:
        addr = asys.createActor(_Timer)
        asys.tell(addr, _Bind(self))
        return addr

    def stop(self, exit_actors: Callable[[Any], None] | None = None, timeout_s: float = 10.0) -> None:
        """Run ``exit_actors(asys)`` in the system (e.g. ask the top actors to exit and save
        their snapshots), then stop the thread. Idempotent."""
        if self._thread is None or self._stopping:
            return
        if exit_actors is not None:
            try:
                self.call(exit_actors, timeout_s)
            except Exception:  # best effort: the events are the truth
                log.warning("%s: stopping the hosted actors failed", self.name, exc_info=True)
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout_s)

    @property
    def running(self) -> bool:
        """Whether the host thread runs."""
        return self._thread is not None and self._thread.is_alive() and not self._stopping

    def _run(self, ready: threading.Event) -> None:
        _HOSTED.host = True
        self._asys = ActorSystem("simpleSystemBase", transientUnique=True, logDefs=False)
        ready.set()
        timers = self._timers
        while not self._stopping:
            timeout = None
            if timers:
                timeout = max(0.0, timers[0][0] - time.monotonic())
            self._wake.wait(timeout)
            self._wake.clear()
            if timers and timers[0][0] <= time.monotonic():
                with self._turn:
                    now = time.monotonic()
                    while timers and timers[0][0] <= now:
                        _due, _seq, target, delay_ms, payload = heapq.heappop(timers)
                        self._safely(lambda t=target, d=delay_ms, p=payload: self._asys.tell(t, WakeupMessage(timedelta(milliseconds=d), p)))
            self._drain(blocking=True)
        with self._turn:
            self._closed = True
            try:
                self._asys.shutdown()
            except Exception:  # pragma: no cover
                log.debug("%s: shutdown of the simple system failed", self.name, exc_info=True)

    #: the most jobs a thread that posted runs in one go before it leaves the rest to the host
    #: thread (a connection thread serves its own client, not the whole system's backlog)
    POSTER_BUDGET = 64

    def _drain(self, blocking: bool, budget: int | None = None) -> int:
        """Run the posted jobs, in order, holding the turn; ``blocking``: wait for the turn (the
        host thread) rather than leave the jobs to the thread that holds it; ``budget``: run at
        most that many. Returns how many this thread ran. After giving the turn back it looks
        again, so a job posted while the turn was being given back is not left behind: this
        thread or the next holder runs it."""
        jobs = self._jobs
        limit = float("inf") if budget is None else budget
        ran = 0
        while jobs and not self._closed and ran < limit and self._turn.acquire(blocking):
            was_host = getattr(_HOSTED, "host", False)
            _HOSTED.host = True
            try:
                while jobs and not self._closed and ran < limit:
                    self._safely(jobs.popleft())
                    ran += 1
            finally:
                _HOSTED.host = was_host
                self._turn.release()
        return ran

    def _safely(self, job: Callable[[], None]) -> None:
        try:
            job()
        except Exception:  # a job must never stop the thread that runs it
            log.exception("%s: a job failed", self.name)

    def _schedule(self, target: Any, delay_ms: int, payload: Any) -> None:
        """(holding the turn) Deliver ``WakeupMessage(delay, payload)`` to ``target`` in
        ``delay_ms``; the host thread runs it when due."""
        entry = (time.monotonic() + delay_ms / 1000, next(self._seq), target, delay_ms, payload)
        heapq.heappush(self._timers, entry)
        if self._timers[0] is entry:
            self._wake.set()  # the host thread sleeps until the earliest deadline: a new earliest one

    # ------------------------------------------------------------------ talking to the system
    def post(self, job: Callable[[], None], budget: int | None = None) -> None:
        """Run ``job()`` in the system, after the jobs posted before it (any thread). When no
        thread holds the turn, the calling thread takes it and runs queued jobs, at most
        ``budget`` (default :attr:`POSTER_BUDGET`), before returning; the holder of the turn, or
        the host thread, runs the rest. A job that raises is logged. A job must not wait for
        another job (it would wait for its own turn)."""
        self._jobs.append(job)
        self._drain(blocking=False, budget=self.POSTER_BUDGET if budget is None else budget)
        if self._jobs:
            self._wake.set()  # the turn is taken or the budget spent: the host thread runs the rest

    def call(self, fn: Callable[[Any], Any], timeout_s: float = 30.0) -> Any:
        """Run ``fn(asys)`` in the system and return its result (re-raising its exception).
        Raises ``TimeoutError`` after ``timeout_s``. Never call it from a handler or a job."""
        box: queue.SimpleQueue = queue.SimpleQueue()

        def job() -> None:
            try:
                box.put((True, fn(self._asys)))
            except BaseException as exc:  # handed to the caller
                box.put((False, exc))

        self.post(job)
        try:
            ok, value = box.get(timeout=timeout_s)
        except queue.Empty:
            raise TimeoutError(f"{self.name}: no answer within {timeout_s}s") from None
        if not ok:
            raise value
        return value

    def create(self, actor_class: Any, timeout_s: float = 30.0) -> Any:
        """Create a top-level actor of ``actor_class`` in the system; returns its address."""
        return self.call(lambda asys: asys.createActor(actor_class), timeout_s)

    def tell(self, addr: Any, msg: Any, budget: int | None = None) -> None:
        """Send ``msg`` to ``addr`` without waiting (from any thread; the sender is the system);
        ``budget``: as :meth:`post`'s."""
        self.post(lambda: self._asys.tell(addr, msg), budget)

    def _endpoint(self) -> tuple[Any, queue.SimpleQueue]:
        ep = getattr(self._local, "ep", None)
        if ep is None:
            with self._pool_lock:
                ep = self._free_endpoints.pop() if self._free_endpoints else None
            if ep is None:
                q: queue.SimpleQueue = queue.SimpleQueue()

                def make(asys: Any) -> Any:
                    addr = asys.createActor(_Endpoint)
                    asys.tell(addr, _Bind(q))
                    return addr

                ep = (self.call(make), q)
            self._local.ep = ep
        return ep

    def ask(self, addr: Any, msg: Any, timeout_s: float) -> Any:
        """Send ``msg`` to ``addr`` from the calling thread's endpoint and return the reply, or
        ``None`` when none comes within ``timeout_s`` (the endpoint is then dropped). Never call
        it from a handler or a job (it would wait for itself)."""
        return self.ask_via(lambda asys, endpoint: asys.tell(endpoint, Forward(addr, msg)), timeout_s)

    def ask_via(self, send: Callable[[Any, Any], None], timeout_s: float) -> Any:
        """Run ``send(asys, endpoint)`` in the system — it tells the calling thread's
        ``endpoint`` a :class:`Forward` (the request, or an answer of its own) — and return the
        first message the endpoint receives, or ``None`` after ``timeout_s`` (the endpoint is then
        dropped). For routing decided in the system (:mod:`actors.share.host`)."""
        ep_addr, q = self._endpoint()
        self.post(lambda: send(self._asys, ep_addr))
        try:
            reply = q.get(timeout=timeout_s)
        except queue.Empty:
            self.timeouts += 1
            self._local.ep = None
            self.post(lambda: self._asys.tell(ep_addr, ActorExitRequest()))
            return None
        self.asks += 1
        return reply

    def release_thread(self) -> None:
        """The calling thread is done (its connection closed): its endpoint goes back to the pool."""
        ep = getattr(self._local, "ep", None)
        if ep is not None:
            self._local.ep = None
            with self._pool_lock:
                self._free_endpoints.append(ep)
