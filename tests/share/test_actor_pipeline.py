"""The ShareGroupActor's pipelined persistence (``ShareGroupActor._commit``) through a journal
the test holds back (``simpleSystemBase``): requests are decided while earlier appends are in
flight, each reply leaves only once every append issued before it is durable, and a refused
append fails every reply held behind it and reloads the durable state, so no answer ever reports
a decision that is not in the log."""

from __future__ import annotations

from typing import Any

from freezegun import freeze_time
from thespian.actors import Actor

from actors.messages import AppendEvents, AppendFailed, Configure, Configured, EventsAppended
from actors.share import messages as m
from actors.share.actor import ShareGroupActor
from events.codec import decode_recorded
from events.share_group import stream_id_for
from store.event_log import ConcurrencyError, EventLog, open_event_log

G, T = "pipe", "TOPIC-ID"
TIMEOUT = 5


class HeldJournal(Actor):
    """A journal that keeps every ``AppendEvents`` until told: ``("release",)`` appends them in
    order to the real log (a refused one is answered ``AppendFailed``, as the JournalActor does),
    ``("fail-first",)`` refuses the oldest with a storage error and then releases the rest,
    ``("held",)`` answers how many are waiting. Reads (recovery) and snapshots go straight to the
    log."""

    def receiveMessage(self, msg: Any, sender: Any) -> None:
        from actors.messages import ReadStream, SaveSnapshot, StreamPage

        if isinstance(msg, Configure):
            self.log = open_event_log(msg.config["event.log.url"])
            self.held: list[tuple[AppendEvents, Any]] = []
            self.send(sender, Configured("journal", 0))
        elif isinstance(msg, AppendEvents):
            self.held.append((msg, sender))
        elif isinstance(msg, ReadStream):
            if not getattr(self, "reads_ok", True):
                self.send(sender, AppendFailed(msg.correlation_id, "STORAGE", "read failed"))
                return
            snap, events, last = self.log.read_page(msg.stream_id, msg.from_version, msg.limit, msg.with_snapshot)
            self.send(sender, StreamPage(msg.correlation_id, snap, events, last))
        elif isinstance(msg, SaveSnapshot):
            self.log.save_snapshot(msg.stream_id, msg.stream_version, msg.state, msg.position)
        elif isinstance(msg, tuple) and msg and msg[0] == "reads":
            self.reads_ok = msg[1]
            self.send(sender, "ok")
        elif msg == ("held",):
            self.send(sender, len(self.held))
        elif msg in (("release",), ("fail-first",)):
            held, self.held = self.held, []
            if msg == ("fail-first",) and held:
                first, to = held.pop(0)
                self.send(to, AppendFailed(first.correlation_id, "STORAGE", "disk full"))
            for am, to in held:
                try:
                    self.send(to, EventsAppended(am.correlation_id, self.log.append_batch(am.requests)))
                except ConcurrencyError as exc:
                    self.send(to, AppendFailed(am.correlation_id, "CONCURRENCY", str(exc)))
            self.send(sender, len(held))


def _setup(asys, url, **extra):
    j = asys.createActor(HeldJournal)
    assert isinstance(asys.ask(j, Configure({"event.log.url": url}, "journal"), TIMEOUT), Configured)
    a = asys.createActor(ShareGroupActor)
    config = {"event.log.url": url, "shoal.share.group.append.path": "journal", **extra}
    assert isinstance(asys.ask(a, Configure(config, G, j), TIMEOUT), Configured)
    return j, a


def _join_and_open(asys, j, a, member):
    asys.tell(a, m.ShareGroupHeartbeatCmd(G, member, 0, subscribed_topic_names=("foo",), topics={"foo": (T, 1)}))
    asys.ask(j, ("release",), TIMEOUT)
    r = asys.listen(TIMEOUT)
    assert isinstance(r, m.ShareGroupHeartbeatReply) and r.error == "NONE", r
    asys.tell(a, m.ShareFetchCmd(G, member, 0, (m.ShareFetchPartition(T, 0, log_start_offset=0, high_watermark=0),)))
    asys.ask(j, ("release",), TIMEOUT)
    r = asys.listen(TIMEOUT)
    assert isinstance(r, m.ShareFetchReply) and r.error == "NONE", r


def _fetch(member: str, first: int, last: int) -> m.ShareFetchCmd:
    p = m.ShareFetchPartition(T, 0, fetch_offset=first, log_batches=((first, last),), log_start_offset=0, high_watermark=last + 1)
    return m.ShareFetchCmd(G, member, 1, (p,), 500)


def _types(url: str) -> list[str]:
    return [decode_recorded(e).event_type for e in open_event_log(url).read_stream(stream_id_for(G))]


@freeze_time("2026-01-01 00:00:00")
def test_requests_are_decided_while_appends_are_in_flight_and_answered_once_durable(asys, sqlite_url):
    j, a = _setup(asys, sqlite_url)
    _join_and_open(asys, j, a, "m1")
    _join_and_open(asys, j, a, "m2")
    # two fetches of different members, the second decided on the first's (not yet durable) acquisition
    asys.tell(a, _fetch("m1", 0, 9))
    asys.tell(a, _fetch("m2", 0, 19))
    assert asys.ask(j, ("held",), TIMEOUT) == 2  # both decided and sent: the actor did not wait
    assert asys.listen(0.2) is None  # nothing answered before the appends are durable
    assert asys.ask(j, ("release",), TIMEOUT) == 2
    replies = [asys.listen(TIMEOUT), asys.listen(TIMEOUT)]
    acquired = sorted(r.partitions[0].acquired for r in replies)
    assert acquired == [((0, 9, 1),), ((10, 19, 1),)]  # m2 got only what m1's decision left
    assert _types(sqlite_url).count("share.ShareFetchProcessed") == 2


@freeze_time("2026-01-01 00:00:00")
def test_a_refused_append_fails_every_reply_held_behind_it_and_reloads(asys, sqlite_url):
    j, a = _setup(asys, sqlite_url)
    _join_and_open(asys, j, a, "m1")
    _join_and_open(asys, j, a, "m2")
    before = _types(sqlite_url)
    state_before = asys.ask(a, m.GetShareGroupState(G), TIMEOUT).state
    asys.tell(a, _fetch("m1", 0, 9))
    asys.tell(a, _fetch("m2", 0, 19))
    assert asys.ask(j, ("held",), TIMEOUT) == 2
    asys.ask(j, ("fail-first",), TIMEOUT)  # the first is refused; the second then conflicts on its expected version
    replies = [asys.listen(TIMEOUT), asys.listen(TIMEOUT)]
    assert all(isinstance(r, m.ShareFetchReply) for r in replies), replies
    assert sorted(r.error for r in replies) == ["UNKNOWN_SERVER_ERROR", "UNKNOWN_SERVER_ERROR"]
    assert _types(sqlite_url) == before  # neither decision is in the log
    # the actor reloaded the durable state (share sessions are dropped, as after a restart), so a
    # new session acquires from 0 again
    assert asys.ask(a, m.GetShareGroupState(G), TIMEOUT).state == state_before
    asys.tell(a, m.ShareFetchCmd(G, "m1", 0, (m.ShareFetchPartition(T, 0, fetch_offset=0, log_batches=((0, 9),), log_start_offset=0, high_watermark=10),)))
    asys.ask(j, ("release",), TIMEOUT)
    r = asys.listen(TIMEOUT)
    assert r.error == "NONE" and r.partitions[0].acquired == ((0, 9, 1),), r


def test_timers_are_rearmed_after_a_reload_that_had_to_be_retried(asys, sqlite_url):
    """A refused append whose reload cannot read the log leaves the group not ready for
    RELOAD_RETRY_MS; a lock-expiry wakeup arriving then is dropped, and once the reload succeeds
    the timer is armed again, so the acquisition lock still expires without any request."""
    import time

    from actors.messages import StatusRequest

    cfg = {"group.share.record.lock.duration.ms": "1000", "group.share.min.record.lock.duration.ms": "1000"}
    j, a = _setup(asys, sqlite_url, **cfg)
    _join_and_open(asys, j, a, "m1")
    asys.tell(a, _fetch("m1", 0, 9))
    asys.ask(j, ("release",), TIMEOUT)
    r = asys.listen(TIMEOUT)
    assert r.error == "NONE" and r.partitions[0].acquired == ((0, 9, 1),), r
    asys.tell(a, m.ShareFetchCmd(G, "m1", 2, (m.ShareFetchPartition(T, 0, fetch_offset=10, log_batches=((10, 19),),
                                                                       log_start_offset=0, high_watermark=20),), 500))
    assert asys.ask(j, ("held",), TIMEOUT) == 1
    asys.ask(j, ("reads", False), TIMEOUT)
    asys.ask(j, ("fail-first",), TIMEOUT)  # refused; the reload's read fails and is retried
    assert asys.listen(TIMEOUT).error == "UNKNOWN_SERVER_ERROR"

    def wait(seconds: float) -> None:
        end = time.time() + seconds
        while time.time() < end:
            asys.listen(0.1)

    wait(1.6)  # the 1000 ms lock timer fires while the group is not ready
    asys.ask(j, ("reads", True), TIMEOUT)
    wait(1.0)  # the next retry reloads
    assert asys.ask(a, StatusRequest(), TIMEOUT).ready
    wait(2.5)
    counts = asys.ask(a, StatusRequest(), TIMEOUT).counts
    assert counts["in_flight_records"] == 0, counts  # the locks of 0-9 expired


def test_direct_mode_a_storage_error_fails_only_that_request(asys, sqlite_url, monkeypatch):
    """Directly (no journal) the append comes first and the state evolves only once it is
    durable: a storage error fails that request and changes nothing else; the other members'
    share sessions stay open."""
    a = asys.createActor(ShareGroupActor)
    assert isinstance(asys.ask(a, Configure({"event.log.url": sqlite_url}, G, None), TIMEOUT), Configured)
    for mem in ("m1", "m2"):
        r = asys.ask(a, m.ShareGroupHeartbeatCmd(G, mem, 0, subscribed_topic_names=("foo",), topics={"foo": (T, 1)}), TIMEOUT)
        assert r.error == "NONE", r
        r = asys.ask(a, m.ShareFetchCmd(G, mem, 0, (m.ShareFetchPartition(T, 0, log_start_offset=0, high_watermark=0),)), TIMEOUT)
        assert r.error == "NONE", r
    real, calls = EventLog.append_batch, {"n": 0}

    def flaky(self, requests):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError("disk I/O error")
        return real(self, requests)

    monkeypatch.setattr(EventLog, "append_batch", flaky)
    r = asys.ask(a, _fetch("m1", 0, 9), TIMEOUT)
    assert r.error == "UNKNOWN_SERVER_ERROR"
    r = asys.ask(a, _fetch("m2", 0, 9), TIMEOUT)
    assert r.error == "NONE" and r.partitions[0].acquired == ((0, 9, 1),), r  # m1's failed fetch acquired nothing
