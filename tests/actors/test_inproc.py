"""The in-process actor system (:mod:`actors.inproc`): Thespian's ``simpleSystemBase`` run under
one turn by the threads that hand it work and by its host thread; the host's own timers; the
journal writer thread."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any, Callable

import pytest
from thespian.actors import Actor, WakeupMessage

from actors.base import ShoalActor
from actors.inproc import InProcessActorSystem, ScheduleWakeup, hosted_in_process


class Echo(Actor):
    """Answers every tuple with itself; records on which threads it ran and, when a test sets
    ``Echo.turn`` (the system's turn), whether each handler ran holding it (``turn_held``)."""

    threads: set[str] = set()
    turn: Any = None
    turn_held: list[bool] = []

    def receiveMessage(self, msg: Any, sender: Any) -> None:  # noqa: N802
        Echo.threads.add(threading.current_thread().name)
        if Echo.turn is not None:
            Echo.turn_held.append(Echo.turn.locked())
        if isinstance(msg, tuple):
            self.send(sender, ("echo", *msg, hosted_in_process()))


class Silent(Actor):
    def receiveMessage(self, msg: Any, sender: Any) -> None:  # noqa: N802
        pass


class Sleeper(ShoalActor):
    """Asks the host's timer for wakeups (``schedule_wakeup``) and reports them to whoever asked."""

    def receiveMsg_tuple(self, msg: tuple, sender: Any) -> None:
        if msg[0] == "timer":
            self._timer_service = msg[1]
            self.send(sender, "ok")
        elif msg[0] == "sleep":
            self._client = sender
            for delay_ms in msg[1]:
                self.schedule_wakeup(timedelta(milliseconds=delay_ms), delay_ms)

    def on_wakeup(self, payload: Any) -> None:
        self.send(self._client, ("woke", payload, time.monotonic()))


@pytest.fixture()
def host():
    h = InProcessActorSystem("test-actors").start()
    yield h
    h.stop()


def test_asks_from_many_threads_are_answered_and_every_handler_runs_holding_the_turn(host):
    echo = host.create(Echo)
    Echo.threads, Echo.turn, Echo.turn_held = set(), host._turn, []  # noqa: SLF001 - white box: the turn
    results: list[tuple] = []
    lock = threading.Lock()

    def client(k: int) -> None:
        for i in range(50):
            r = host.ask(echo, (k, i), 10)
            with lock:
                results.append(r)
        host.release_thread()

    threads = [threading.Thread(target=client, args=(k,), name=f"client-{k}") for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    # every handler saw hosted_in_process() true, whichever thread held the turn
    assert sorted(results) == sorted(("echo", k, i, True) for k in range(4) for i in range(50))
    # Thespian serialises its own sends; the turn is what keeps the system on one thread at a time
    assert len(Echo.turn_held) == 200 and all(Echo.turn_held)
    Echo.turn = None
    assert Echo.threads and Echo.threads <= {"test-actors", "client-0", "client-1", "client-2", "client-3"}


def test_a_caller_runs_its_own_ask_when_the_turn_is_free(host):
    echo = host.create(Echo)
    Echo.threads = set()
    assert host.ask(echo, (1,), 5) == ("echo", 1, True)
    assert Echo.threads == {threading.current_thread().name}
    assert not hosted_in_process()  # the caller is back outside the system


def test_jobs_posted_while_another_thread_holds_the_turn_all_run_in_order_one_at_a_time(host):
    ran: list[tuple[int, int]] = []
    inside = [0, 0]  # now, most

    def job(k: int, i: int) -> Callable[[], None]:
        def run() -> None:
            assert host._turn.locked()  # noqa: SLF001 - whoever runs it holds the turn
            inside[0] += 1
            inside[1] = max(inside)
            time.sleep(0.0002)  # long enough for another thread to get the GIL: an overlap would show
            ran.append((k, i))
            inside[0] -= 1
        return run

    def poster(k: int) -> None:
        for i in range(500):
            host.post(job(k, i))

    threads = [threading.Thread(target=poster, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    deadline = time.monotonic() + 5  # no job is left queued: nothing else will be posted to run it
    while len(ran) < 3000 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(ran) == sorted((k, i) for k in range(6) for i in range(500))
    for k in range(6):  # each poster's jobs ran in the order it posted them
        assert [i for kk, i in ran if kk == k] == list(range(500))
    assert inside[1] == 1


def test_an_endpoint_given_back_is_reused_and_one_that_timed_out_is_dropped(host):
    echo, silent = host.create(Echo), host.create(Silent)
    assert host.ask(echo, (1,), 5) == ("echo", 1, True)
    first = host._local.ep  # noqa: SLF001 - white box: the endpoint pool
    host.release_thread()
    assert host.ask(echo, (2,), 5) == ("echo", 2, True)
    assert host._local.ep is first  # noqa: SLF001
    assert host.ask(silent, (3,), 0.2) is None and host.timeouts == 1
    assert host._local.ep is None  # noqa: SLF001 - a late reply must not answer the next ask
    assert host.ask(echo, (4,), 5) == ("echo", 4, True)


def test_call_returns_the_functions_result_and_raises_its_error(host):
    assert host.call(lambda asys: hosted_in_process()) is True
    with pytest.raises(ZeroDivisionError):
        host.call(lambda asys: 1 / 0)
    assert host.call(lambda asys: 42) == 42  # the system survived


def test_timer_wakeups_arrive_in_deadline_order_and_not_before_their_time(host):
    sleeper = host.create(Sleeper)
    assert host.ask(sleeper, ("timer", host.timer), 5) == "ok"
    t0 = time.monotonic()
    first = host.ask(sleeper, ("sleep", (300, 100, 200)), 5)
    assert first[0] == "woke" and first[1] == 100 and first[2] - t0 >= 0.1
    # the other two come to the same endpoint, in deadline order
    got = [first[1]]
    ep_queue = host._local.ep[1]  # noqa: SLF001
    for _ in range(2):
        msg = ep_queue.get(timeout=5)
        assert msg[2] - t0 >= msg[1] / 1000
        got.append(msg[1])
    assert got == [100, 200, 300]


def test_schedule_wakeup_without_a_timer_service_uses_thespians_wakeup_after():
    from thespian.actors import ActorSystem

    asys = ActorSystem("simpleSystemBase", transientUnique=True, logDefs=False)
    try:
        sleeper = asys.createActor(Sleeper)
        asys.tell(sleeper, ("sleep", (10,)))
        time.sleep(0.05)
        r = asys.listen(timedelta(seconds=1))
        assert r is not None and r[0] == "woke" and r[1] == 10
    finally:
        asys.shutdown()


def test_a_wakeup_message_is_thespians_own_type(host):
    seen: list[Any] = []

    class Probe(Actor):
        def receiveMessage(self, msg: Any, sender: Any) -> None:  # noqa: N802
            if isinstance(msg, WakeupMessage):
                seen.append(msg)
            elif msg == "arm":
                self.send(host.timer, ScheduleWakeup(0, "p"))
                self.send(sender, "armed")

    probe = host.create(Probe)
    assert host.ask(probe, "arm", 5) == "armed"
    deadline = time.monotonic() + 5
    while not seen and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen and seen[0].payload == "p"


def test_stop_runs_the_exit_function_in_the_system_and_ends_the_thread():
    h = InProcessActorSystem("stopping").start()
    ran: list[bool] = []
    h.stop(lambda asys: ran.append(hosted_in_process()))
    assert ran == [True] and not h.running
    h.post(lambda: ran.append(False))  # the system is shut down: a job posted now never runs
    assert ran == [True]
    h.stop()  # idempotent


def test_a_job_posted_while_the_turn_is_being_given_back_is_not_left_behind(host):
    """The race the drain's second look closes: thread B posts while thread A, done with the
    queue, still holds the turn. B cannot take the turn and returns; A must run B's job."""
    ran: list[str] = []
    real_turn = host._turn  # noqa: SLF001 - white box: the turn

    class Turn:
        armed = True

        def acquire(self, blocking: bool = True) -> bool:
            return real_turn.acquire(blocking)

        def release(self) -> None:
            if Turn.armed and threading.current_thread() is threading.main_thread():
                Turn.armed = False
                b = threading.Thread(target=host.post, args=(lambda: ran.append("b"),))
                b.start()
                b.join(5)  # B posted and returned: the turn was taken
            real_turn.release()

    real_wake = host._wake  # noqa: SLF001
    host._turn = Turn()  # noqa: SLF001
    host._wake = threading.Event()  # noqa: SLF001 - a fresh event the host thread does not wait on:
    # only the posting threads can run the job, as when the host thread is busy with timers
    try:
        host.post(lambda: ran.append("a"))
        deadline = time.monotonic() + 2
        while len(ran) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ran == ["a", "b"]
    finally:
        host._turn, host._wake = real_turn, real_wake  # noqa: SLF001
        real_wake.set()


def test_a_poster_runs_at_most_its_budget_and_the_host_thread_runs_the_rest(host):
    """A connection thread that posts while a backlog is queued runs POSTER_BUDGET jobs, not the
    whole backlog; the host thread takes the rest, in order."""
    ran: list[tuple[int, str]] = []
    with host._turn:  # noqa: SLF001 - hold the turn while the backlog is queued
        for i in range(3 * host.POSTER_BUDGET):
            host._jobs.append(lambda i=i: ran.append((i, threading.current_thread().name)))  # noqa: SLF001
    host.post(lambda: ran.append((-1, threading.current_thread().name)))
    deadline = time.monotonic() + 5
    while len(ran) < 3 * host.POSTER_BUDGET + 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [i for i, _ in ran] == [*range(3 * host.POSTER_BUDGET), -1]
    by_poster = [i for i, name in ran if name == threading.current_thread().name]
    assert 1 <= len(by_poster) <= host.POSTER_BUDGET
    assert {name for _, name in ran} <= {threading.current_thread().name, "test-actors"}


def test_a_posts_own_budget_bounds_what_its_thread_runs(host):
    """The journal writer hands each reply over with a budget of 1: one job of a backlog, not the
    backlog (its own thread has commits to run)."""
    ran: list[str] = []
    with host._turn:  # noqa: SLF001
        for _ in range(10):
            host._jobs.append(lambda: ran.append(threading.current_thread().name))  # noqa: SLF001
    host.tell(host.timer, "not for the timer", budget=1)
    deadline = time.monotonic() + 5
    while len(ran) < 10 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ran.count(threading.current_thread().name) == 1 and len(ran) == 10
