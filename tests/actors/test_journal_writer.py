"""The journal as a thread (:class:`actors.journal.JournalWriter`): appends that arrive while a
commit runs share the next transaction; each gets its own outcome; an append decided on a refused
one is refused; reads see every append queued before them; close commits what is queued."""

from __future__ import annotations

import queue
import threading

import pytest

from actors.journal import JournalWriter
from actors.messages import AppendEvents, AppendFailed, EventsAppended, ReadStream, SaveSnapshot, StreamPage
from events.codec import new_event
from events.share_group import ShareGroupDeleted
from store.event_log import NO_STREAM, AppendRequest, open_event_log


def _req(stream: str, expected: int) -> AppendRequest:
    return AppendRequest(stream, [new_event(ShareGroupDeleted(stream))], expected)


class HeldLog:
    """An EventLog whose first ``append_batch`` waits until released (a slow fsync), counting
    transactions."""

    def __init__(self, log) -> None:
        self.log = log
        self.release = threading.Event()
        self.entered = threading.Event()
        self.transactions: list[int] = []

    def append_batch(self, requests):
        if not self.transactions:
            self.entered.set()
            self.release.wait(10)
        self.transactions.append(len(requests))
        return self.log.append_batch(requests)

    def __getattr__(self, name):
        return getattr(self.log, name)


@pytest.fixture()
def elog(tmp_path):
    log = open_event_log(f"sqlite:///{tmp_path}/events.db")
    yield log
    log.close()


def _writer(log):
    replies: queue.SimpleQueue = queue.SimpleQueue()
    return JournalWriter(log, lambda to, reply: replies.put((to, reply))), replies


def test_appends_arriving_during_a_commit_share_the_next_transaction(elog):
    held = HeldLog(elog)
    w, replies = _writer(held)
    w.submit(AppendEvents(1, [_req("a", NO_STREAM)]), "A")
    assert held.entered.wait(5)
    for i, s in enumerate("bcde", start=2):
        w.submit(AppendEvents(i, [_req(s, NO_STREAM)]), s.upper())
    held.release.set()
    got = dict(replies.get(timeout=5) for _ in range(5))
    assert all(isinstance(r, EventsAppended) for r in got.values())
    assert held.transactions == [1, 4]  # one commit for the first, ONE for the four behind it
    w.close()


def test_each_append_gets_its_own_outcome_and_one_decided_on_a_refused_one_is_refused(elog):
    elog.append("x", [new_event(ShareGroupDeleted("x"))], NO_STREAM)
    held = HeldLog(elog)
    w, replies = _writer(held)
    w.submit(AppendEvents(1, [_req("warmup", NO_STREAM)]), "W")
    assert held.entered.wait(5)
    w.submit(AppendEvents(7, [_req("x", NO_STREAM)]), "P")  # conflict: x exists
    w.submit(AppendEvents(8, [_req("x", 1)], after=7), "P")  # decided on 7: refused although valid alone
    w.submit(AppendEvents(9, [_req("y", NO_STREAM)]), "Q")  # another writer: unaffected
    held.release.set()
    got = {}
    for _ in range(4):
        to, reply = replies.get(timeout=5)
        got[reply.correlation_id] = reply
    assert isinstance(got[7], AppendFailed) and got[7].error == "CONCURRENCY"
    assert isinstance(got[8], AppendFailed) and "was refused" in got[8].message
    assert isinstance(got[9], EventsAppended)
    assert elog.stream_version("x") == 1 and elog.stream_version("y") == 1
    w.close()


def test_a_read_sees_every_append_queued_before_it_and_snapshots_are_stored(elog):
    held = HeldLog(elog)
    w, replies = _writer(held)
    w.submit(AppendEvents(1, [_req("s", NO_STREAM)]), "A")
    assert held.entered.wait(5)
    w.submit(AppendEvents(2, [_req("s", 1)], after=1), "A")
    w.submit(SaveSnapshot("s", 2, b"snap"), "A")
    w.submit(ReadStream(3, "s", 1, 100, True), "A")
    held.release.set()
    out = [replies.get(timeout=5)[1] for _ in range(3)]
    page = out[-1]
    assert isinstance(page, StreamPage) and page.correlation_id == 3
    assert page.snapshot is not None and page.snapshot.stream_version == 2 and page.events == []
    w.close()


def test_close_commits_what_is_queued_and_later_appends_are_refused(elog):
    w, replies = _writer(elog)
    for i in range(20):
        w.submit(AppendEvents(i + 1, [_req(f"c{i}", NO_STREAM)]), "A")
    w.close()
    assert all(elog.stream_version(f"c{i}") == 1 for i in range(20))
    assert sum(isinstance(replies.get(timeout=1)[1], EventsAppended) for _ in range(20)) == 20
    w.submit(AppendEvents(99, [_req("late", NO_STREAM)]), "A")
    to, reply = replies.get(timeout=1)
    assert isinstance(reply, AppendFailed) and reply.error == "STORAGE"
