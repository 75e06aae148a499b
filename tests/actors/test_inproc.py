"""The in-process actor system (:mod:`actors.inproc`): Thespian's ``simpleSystemBase`` run by one
host thread, asked from other threads; the host's own timers; the journal writer thread."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from thespian.actors import Actor, WakeupMessage

from actors.base import ShoalActor
from actors.inproc import InProcessActorSystem, ScheduleWakeup, hosted_in_process


class Echo(Actor):
    """Answers every tuple with itself and records on which thread it ran."""

    threads: set[str] = set()

    def receiveMessage(self, msg: Any, sender: Any) -> None:  # noqa: N802
        Echo.threads.add(threading.current_thread().name)
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


def test_asks_from_many_threads_are_answered_and_every_handler_runs_on_the_host_thread(host):
    echo = host.create(Echo)
    Echo.threads = set()
    results: list[tuple] = []
    lock = threading.Lock()

    def client(k: int) -> None:
        for i in range(50):
            r = host.ask(echo, (k, i), 10)
            with lock:
                results.append(r)
        host.release_thread()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(results) == sorted(("echo", k, i, True) for k in range(4) for i in range(50))
    assert Echo.threads == {"test-actors"}


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


def test_call_runs_on_the_host_thread_and_raises_the_functions_error(host):
    assert host.call(lambda asys: threading.current_thread().name) == "test-actors"
    with pytest.raises(ZeroDivisionError):
        host.call(lambda asys: 1 / 0)
    assert host.call(lambda asys: 42) == 42  # the host thread survived


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


def test_stop_runs_the_exit_function_on_the_host_thread_and_ends_the_thread():
    h = InProcessActorSystem("stopping").start()
    ran: list[str] = []
    h.stop(lambda asys: ran.append(threading.current_thread().name))
    assert ran == ["stopping"] and not h.running
    h.stop()  # idempotent
