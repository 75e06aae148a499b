"""The base actors and the JournalActor: persist-before-reply, stashing, group commit,
conflicts, unknown messages, and recovery by replay."""

from __future__ import annotations

import pickle
import threading
from datetime import timedelta

import pytest
from thespian.actors import ActorExitRequest, ActorSystem

from actors.journal import JournalActor
from actors.messages import (
    AppendEvents,
    AppendFailed,
    ReadStream,
    SaveSnapshot,
    StreamPage,
    Configure,
    Configured,
    EventsAppended,
    Failure,
    NotReady,
    Passivating,
    StatusReply,
    StatusRequest,
)
from events import new_event
from store.event_log import NO_STREAM, AppendRequest, Snapshot, open_event_log
from tests.actors.counter_actor import Add, Added, CounterActor
from tests.events.sample import Noted

T = timedelta(seconds=10)


def test_messages_pickle_round_trip() -> None:
    req = AppendRequest("s", [new_event(Noted(1))], NO_STREAM)
    for msg in [
        Configure({"event.log.url": "sqlite:///x"}, "n", None),
        Configured("n", 3, 4),
        NotReady("n"),
        Passivating("g"),
        Failure("INVALID_REQUEST", "m", {"a": 1}),
        AppendEvents(1, [req]),
        AppendFailed(1, "CONCURRENCY", "m"),
        ReadStream(2, "s", 1, 100, True),
        StreamPage(2, Snapshot("s", 3, 9, 1000, b"state"), [], 12),
        SaveSnapshot("s", 3, b"state", 9),
        StatusRequest(),
        StatusReply("n", True, {"x": 1}),
        Add(3, 2),
        Added(3, 1),
    ]:
        assert pickle.loads(pickle.dumps(msg)) == msg


def test_direct_persist_then_reply_and_recover(asys: ActorSystem, sqlite_url: str) -> None:
    cfg = {"event.log.url": sqlite_url}
    counter = asys.createActor(CounterActor)
    assert asys.ask(counter, Configure(cfg, "c1"), T) == Configured("c1", 0, 0)
    assert asys.ask(counter, Add(2), T) == Added(2, 1)
    assert asys.ask(counter, Add(5), T) == Added(7, 2)
    # a version conflict is refused and nothing is stored
    reply = asys.ask(counter, Add(1, expected_version=0), T)
    assert isinstance(reply, Failure) and reply.error == "CONCURRENCY"
    # a rejected command becomes no event
    assert isinstance(asys.ask(counter, Add(-1), T), Failure)
    asys.tell(counter, ActorExitRequest())
    again = asys.createActor(CounterActor)
    assert asys.ask(again, Configure(cfg, "c1"), T).events_replayed == 2
    assert asys.ask(again, Add(1), T) == Added(8, 3)
    log = open_event_log(sqlite_url)
    assert [r.decode().amount for r in log.read_stream("counter:c1")] == [2, 5, 1]


def test_unknown_message_is_answered_not_fatal(asys: ActorSystem, sqlite_url: str) -> None:
    counter = asys.createActor(CounterActor)
    asys.ask(counter, Configure({"event.log.url": sqlite_url}, "c"), T)
    reply = asys.ask(counter, "what is this", T)
    assert isinstance(reply, Failure) and reply.error == "INVALID_REQUEST"
    assert asys.ask(counter, Add(1), T) == Added(1, 1)


def test_persist_through_the_journal(asys: ActorSystem, sqlite_url: str) -> None:
    cfg = {"event.log.url": sqlite_url, "event.log.journal.max.batch": 1}
    journal = asys.createActor(JournalActor)
    assert isinstance(asys.ask(journal, Configure(cfg, "journal"), T), Configured)
    a = asys.createActor(CounterActor)
    b = asys.createActor(CounterActor)
    asys.ask(a, Configure(cfg, "a", journal), T)
    asys.ask(b, Configure(cfg, "b", journal), T)
    assert asys.ask(a, Add(1), T) == Added(1, 1)
    assert asys.ask(b, Add(10), T) == Added(10, 1)
    assert asys.ask(a, Add(2), T) == Added(3, 2)
    reply = asys.ask(a, Add(1, expected_version=0), T)
    assert isinstance(reply, Failure) and reply.error == "CONCURRENCY"
    assert asys.ask(journal, StatusRequest(), T).counts["batches"] == 4


def test_journal_answers_each_message_alone_when_one_conflicts(asys: ActorSystem, sqlite_url: str) -> None:
    """The group commit must not let one refused append sink the others in its batch."""
    cfg = {"event.log.url": sqlite_url, "event.log.journal.max.batch": 3}
    journal = asys.createActor(JournalActor)
    asys.ask(journal, Configure(cfg), T)
    ok1 = AppendEvents(1, [AppendRequest("x", [new_event(Noted(1))], NO_STREAM)])
    bad = AppendEvents(2, [AppendRequest("x", [new_event(Noted(2))], NO_STREAM)])  # x exists by then
    ok2 = AppendEvents(3, [AppendRequest("y", [new_event(Noted(3))], NO_STREAM)])
    asys.tell(journal, ok1)
    asys.tell(journal, bad)
    replies = [asys.ask(journal, ok2, T)]
    replies += [asys.listen(timedelta(seconds=1)) for _ in range(2)]
    by_id = {r.correlation_id: r for r in replies if r is not None}
    assert isinstance(by_id[1], EventsAppended) and isinstance(by_id[3], EventsAppended)
    assert isinstance(by_id[2], AppendFailed) and by_id[2].error == "CONCURRENCY"
    log = open_event_log(sqlite_url)
    assert [r.decode().n for r in log.read_all()] == [1, 3]


@pytest.mark.parametrize("max_batch", [3, 1])
def test_journal_refuses_an_append_decided_on_a_refused_one(asys: ActorSystem, sqlite_url: str, max_batch: int) -> None:
    """A pipelined append names the append it was decided on (``after``): when that one is
    refused, so is it, even though its own expected version matches (another writer appended
    exactly as many events as the refused one carried), and so is the next one decided on it.
    In one group commit (max batch 3) and in separate ones (max batch 1) alike."""
    log = open_event_log(sqlite_url)
    log.append("s", [new_event(Noted(0))], NO_STREAM)  # another writer: the stream is at version 1
    journal = asys.createActor(JournalActor)
    asys.ask(journal, Configure({"event.log.url": sqlite_url, "event.log.journal.max.batch": max_batch}), T)
    a = AppendEvents(1, [AppendRequest("s", [new_event(Noted(1))], NO_STREAM)])  # decided on an empty stream
    b = AppendEvents(2, [AppendRequest("s", [new_event(Noted(2))], 1)], after=1)  # decided on a's state
    c = AppendEvents(3, [AppendRequest("s", [new_event(Noted(3))], 2)], after=2)
    other = AppendEvents(4, [AppendRequest("t", [new_event(Noted(4))], NO_STREAM)])
    for msg in (a, b, c):
        asys.tell(journal, msg)
    replies = [asys.ask(journal, other, T)] + [asys.listen(timedelta(seconds=1)) for _ in range(3)]
    by_id = {r.correlation_id: r for r in replies if r is not None}
    assert [by_id[i].error for i in (1, 2, 3)] == ["CONCURRENCY"] * 3
    assert isinstance(by_id[4], EventsAppended)
    assert [r.decode().n for r in open_event_log(sqlite_url).read_stream("s")] == [0]


def test_group_commit_across_actor_processes(sqlite_url: str, mp_asys: ActorSystem) -> None:
    """multiprocTCPBase: three counter processes append concurrently through one JournalActor;
    every append is stored exactly once, in order per stream, and the journal counted its
    transactions (at most one per append, fewer when appends arrived together)."""
    asys = mp_asys
    cfg = {"event.log.url": sqlite_url, "event.log.journal.linger.ms": 2}
    journal = asys.createActor("actors.journal.JournalActor")
    assert isinstance(asys.ask(journal, Configure(cfg), T), Configured)
    counters = [asys.createActor("tests.actors.counter_actor.CounterActor") for _ in range(3)]
    for i, c in enumerate(counters):
        assert isinstance(asys.ask(c, Configure(cfg, f"m{i}", journal), T), Configured)
    replies: list = []

    def drive(i: int) -> None:
        with asys.private() as s:
            for _ in range(40):
                replies.append(s.ask(counters[i], Add(1), T))

    threads = [threading.Thread(target=drive, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(isinstance(r, Added) for r in replies), replies[:3]
    log = open_event_log(sqlite_url)
    for i in range(3):
        assert log.stream_version(f"counter:m{i}") == 40
    batches = asys.ask(journal, StatusRequest(), T).counts["batches"]
    assert 0 < batches <= 120


def test_event_log_inherited_through_fork_gets_its_own_connections(sqlite_url: str) -> None:
    """Thespian forks actor processes from their parent actor: a child that asks for the
    process's event log gets the inherited one with a fresh pool (the parent's SQLite connections
    must not be used across fork), and both processes keep appending."""
    import os

    from actors.base import event_log_for

    cfg = {"event.log.url": sqlite_url}
    parent_log = event_log_for(cfg)
    parent_log.append("p", [new_event(Noted(1))])
    parent_pool = parent_log.engine.pool
    pid = os.fork()
    if pid == 0:  # child: report through the exit status
        code = 1
        try:
            child_log = event_log_for(cfg)
            ok = child_log is parent_log and child_log.engine.pool is not parent_pool
            child_log.append("c", [new_event(Noted(2))])
            code = 0 if ok else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert parent_log.engine.pool is parent_pool  # the parent's pool is untouched
    parent_log.append("p", [new_event(Noted(3))])
    assert [e.stream_id for e in parent_log.read_all()] == ["p", "c", "p"]
