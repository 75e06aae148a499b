"""Group commit in ``ConsumerGroupActor`` (``EventSourcedActor.batchable`` / ``receive_batch``)
under ``simpleSystemBase``, with a journal that holds appends until told to release them: the
OffsetCommits (and Heartbeats) stashed while an append is in flight are decided together and
written as ONE append, each requester gets its own per-partition result once it is durable, a
refused append fails every one of them, a JoinGroup between them keeps its place, and the
outcome (replies and stream) is the one of deciding the same requests one at a time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from thespian.actors import ActorSystem

from actors.consumer import messages as m
from actors.consumer.actor import ConsumerGroupActor
from actors.consumer.classic import (
    CommitPartition,
    HeartbeatResult,
    JoinGroupResult,
    OffsetCommitResult,
    SyncGroupResult,
)
from actors.journal import JournalActor
from actors.messages import AppendEvents, AppendFailed, Configure, Configured, Failure
from events.codec import decode_recorded
from events.consumer_group import (
    ClassicGroupMetadataRecorded,
    OffsetsCommitted,
    stream_id_for,
)
from store.event_log import open_event_log

G = "gc"
TIMEOUT = 10
LISTEN = 0.3
PROTOS = (("range", b"meta"),)


# ---------------------------------------------------------------------------- a holding journal


@dataclass(frozen=True)
class Hold:
    """To :class:`HoldingJournal`: keep every AppendEvents from now on until :class:`Release`."""


@dataclass(frozen=True)
class Release:
    """To :class:`HoldingJournal`: append the held AppendEvents (in arrival order) and stop
    holding; the next ``fail_next`` AppendEvents after them are refused with ``AppendFailed``
    (``error``) instead of being written."""

    fail_next: int = 0
    error: str = "STORAGE"


@dataclass(frozen=True)
class AppendCounts:
    """To :class:`HoldingJournal` → :class:`AppendCounts`: ``events`` holds, for every
    AppendEvents received since :class:`Hold`, its number of events (in arrival order)."""

    events: tuple[int, ...] = ()


class HoldingJournal(JournalActor):
    """A JournalActor (configure it with ``event.log.journal.max.batch`` 1: each AppendEvents is
    its own transaction) that can hold appends in flight, refuse some, and count them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._holding = False
        self._held: list[tuple[AppendEvents, Any]] = []
        self._fail_next = 0
        self._error = "STORAGE"
        self._counts: list[int] | None = None

    def receiveMsg_Hold(self, msg: Hold, sender: Any) -> None:
        self._holding = True
        self._counts = []

    def receiveMsg_Release(self, msg: Release, sender: Any) -> None:
        self._holding = False
        held, self._held = self._held, []
        for append, asker in held:
            super().receiveMsg_AppendEvents(append, asker)
        self._fail_next, self._error = msg.fail_next, msg.error

    def receiveMsg_AppendCounts(self, msg: AppendCounts, sender: Any) -> None:
        self.send(sender, AppendCounts(tuple(self._counts or ())))

    def receiveMsg_AppendEvents(self, msg: AppendEvents, sender: Any) -> None:
        if self._counts is not None:
            self._counts.append(sum(len(r.events) for r in msg.requests))
        if self._holding:
            self._held.append((msg, sender))
        elif self._fail_next > 0:
            self._fail_next -= 1
            self.send(sender, AppendFailed(msg.correlation_id, self._error, "refused by the test"))
        else:
            super().receiveMsg_AppendEvents(msg, sender)


# ---------------------------------------------------------------------------- helpers


def start(asys: ActorSystem, url: str, journal: bool = True) -> tuple[Any, Any]:
    """A configured group actor (through a HoldingJournal unless ``journal`` is false) → (actor, journal)."""
    cfg = {"event.log.url": url, "group.initial.rebalance.delay.ms": "0", "event.log.journal.max.batch": 1}
    j = None
    if journal:
        j = asys.createActor(HoldingJournal)
        assert isinstance(asys.ask(j, Configure(cfg, "journal"), TIMEOUT), Configured)
    a = asys.createActor(ConsumerGroupActor)
    assert isinstance(asys.ask(a, Configure(cfg, G, j), TIMEOUT), Configured)
    return a, j


def join_cmd(mid: str = "") -> m.JoinGroupCmd:
    return m.JoinGroupCmd(G, mid, None, "consumer", PROTOS, 10000, 20000, "client", "127.0.0.1", 9)


def stable_member(asys: ActorSystem, a: Any) -> str:
    """Join one member and sync generation 1 → its member id."""
    mid = asys.ask(a, join_cmd(), TIMEOUT).member_id
    j = asys.ask(a, join_cmd(mid), TIMEOUT)
    assert isinstance(j, JoinGroupResult) and j.error is None and j.generation == 1
    s = asys.ask(a, m.SyncGroupCmd(G, mid, None, 1, "consumer", "range", ((mid, b"all"),)), TIMEOUT)
    assert isinstance(s, SyncGroupResult) and s.error is None
    return mid


def commit(mid: str, generation: int, partition: int, offset: int, metadata: str = "") -> m.OffsetCommitCmd:
    return m.OffsetCommitCmd(G, mid, None, generation, (CommitPartition("t", partition, offset, 3, metadata),), 8)


def replies(asys: ActorSystem, n: int) -> list[Any]:
    """The next ``n`` replies to the test. (``simpleSystemBase.listen`` runs the actors until its
    timeout even when a reply is already queued; a short one keeps the members' 10 s sessions.)"""
    out = [asys.listen(LISTEN) for _ in range(n)]
    assert all(r is not None for r in out), out
    return out


def stream(url: str) -> list[Any]:
    return [decode_recorded(e) for e in open_event_log(url).read_stream(stream_id_for(G))]


def committed(url: str) -> list[tuple[str, int, int, tuple[tuple[int, int], ...]]]:
    """The stream's OffsetsCommitted as (member, generation, ((partition, offset), …)) rows."""
    return [(e.member_id, e.generation, tuple((o.partition, o.offset) for o in e.offsets))
            for e in stream(url) if isinstance(e, OffsetsCommitted)]


# ---------------------------------------------------------------------------- tests


def test_commits_stashed_behind_an_append_are_written_as_one(asys: ActorSystem, tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    a, j = start(asys, url)
    mid = stable_member(asys, a)
    asys.tell(j, Hold())
    asys.tell(a, commit(mid, 1, 0, 10))  # its append is now in flight (held)
    # stashed meanwhile: four commits, a heartbeat, one stale commit and one with too much metadata
    asys.tell(a, commit(mid, 1, 1, 11))
    asys.tell(a, commit(mid, 1, 2, 12))
    asys.tell(a, m.HeartbeatCmd(G, mid, None, 1))
    asys.tell(a, commit(mid, 0, 3, 99))  # generation 0: ILLEGAL_GENERATION, stores nothing
    asys.tell(a, m.OffsetCommitCmd(G, mid, None, 1, (CommitPartition("t", 3, 13), CommitPartition("t", 4, 14, -1, "x" * 5000)), 8))
    asys.tell(a, commit(mid, 1, 0, 20))  # the same partition again: the later commit wins
    assert asys.ask(j, AppendCounts(), TIMEOUT) == AppendCounts((1,))  # only the first is in flight
    asys.tell(j, Release())
    got = replies(asys, 7)
    assert got == [
        OffsetCommitResult((("t", 0, None),)),
        OffsetCommitResult((("t", 1, None),)),
        OffsetCommitResult((("t", 2, None),)),
        HeartbeatResult(None),
        OffsetCommitResult((("t", 3, "ILLEGAL_GENERATION"),)),
        OffsetCommitResult((("t", 3, None), ("t", 4, "OFFSET_METADATA_TOO_LARGE"))),
        OffsetCommitResult((("t", 0, None),)),
    ]
    # the first commit alone, then the six stashed requests' four OffsetsCommitted in ONE append
    assert asys.ask(j, AppendCounts(), TIMEOUT) == AppendCounts((1, 4))
    assert committed(url) == [
        (mid, 1, ((0, 10),)), (mid, 1, ((1, 11),)), (mid, 1, ((2, 12),)), (mid, 1, ((3, 13),)), (mid, 1, ((0, 20),))]
    f = asys.ask(a, m.OffsetFetchCmd(G, None), TIMEOUT)
    assert [(o.partition, o.offset, o.leader_epoch) for o in f.offsets] == [(0, 20, 3), (1, 11, 3), (2, 12, 3), (3, 13, -1)]
    # the version moved by the whole batch: the next commit appends at the exact expected version
    assert asys.ask(a, commit(mid, 1, 1, 21), TIMEOUT) == OffsetCommitResult((("t", 1, None),))
    assert [e.stream_version for e in open_event_log(url).read_stream(stream_id_for(G))] == list(range(1, len(stream(url)) + 1))


def test_a_refused_batch_fails_every_request_in_it(asys: ActorSystem, tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    a, j = start(asys, url)
    mid = stable_member(asys, a)
    asys.tell(j, Hold())
    asys.tell(a, commit(mid, 1, 0, 10))
    for p in (1, 2, 3):
        asys.tell(a, commit(mid, 1, p, 10 + p))
    asys.tell(j, Release(fail_next=1))  # the first append is written, the batch after it refused
    got = replies(asys, 4)
    assert got[0] == OffsetCommitResult((("t", 0, None),))
    assert all(isinstance(r, Failure) and r.error == "COORDINATOR_NOT_AVAILABLE" for r in got[1:]), got
    assert asys.ask(j, AppendCounts(), TIMEOUT) == AppendCounts((1, 3))
    # nothing of the refused batch was stored or applied; the group goes on
    assert committed(url) == [(mid, 1, ((0, 10),))]
    assert [(o.partition, o.offset) for o in asys.ask(a, m.OffsetFetchCmd(G, None), TIMEOUT).offsets] == [(0, 10)]
    assert asys.ask(a, commit(mid, 1, 1, 11), TIMEOUT) == OffsetCommitResult((("t", 1, None),))
    assert committed(url)[-1] == (mid, 1, ((1, 11),))


def _interleaved(mid: str) -> list[Any]:
    """Commits at generation 1, the leader's rejoin (generation 2) and sync, then commits at
    generation 1 (now stale) and 2, and a heartbeat of the new generation."""
    return [
        commit(mid, 1, 1, 11),
        commit(mid, 1, 2, 12),
        join_cmd(mid),
        m.SyncGroupCmd(G, mid, None, 2, "consumer", "range", ((mid, b"all"),)),
        commit(mid, 1, 3, 13),
        commit(mid, 2, 4, 14),
        m.HeartbeatCmd(G, mid, None, 2),
        commit(mid, 2, 1, 21),
    ]


def test_a_join_between_commits_keeps_its_place_and_matches_one_at_a_time(asys: ActorSystem, tmp_path) -> None:
    # one at a time, through the direct log (no stash, no batch): the reference outcome
    ref_url = f"sqlite:///{tmp_path}/ref.db"
    ref, _ = start(asys, ref_url, journal=False)
    ref_mid = stable_member(asys, ref)
    expected = [asys.ask(ref, asys_msg, TIMEOUT) for asys_msg in [commit(ref_mid, 1, 0, 10), *_interleaved(ref_mid)]]

    url = f"sqlite:///{tmp_path}/events.db"
    a, j = start(asys, url)
    mid = stable_member(asys, a)
    asys.tell(j, Hold())
    asys.tell(a, commit(mid, 1, 0, 10))
    for cmd in _interleaved(mid):
        asys.tell(a, cmd)
    asys.tell(j, Release())
    got = replies(asys, 9)

    def norm(rs: list[Any], member: str) -> list[Any]:
        return [repr(r).replace(member, "<member>") for r in rs]

    assert norm(got, mid) == norm(expected, ref_mid)
    assert [r.partitions[0][2] for r in got if isinstance(r, OffsetCommitResult)] == [None, None, None, "ILLEGAL_GENERATION", None, None]
    assert isinstance(got[3], JoinGroupResult) and got[3].generation == 2
    # appends: the first commit; the two commits before the join together; the join; the sync;
    # the two generation-2 commits (and the stale one and the heartbeat, which store nothing) together
    # appends: the first commit; the two commits before the join together; (the join stores
    # nothing: a generation is recorded when its assignment is, at the sync) the sync; the two
    # generation-2 commits together (the stale commit and the heartbeat store nothing)
    assert asys.ask(j, AppendCounts(), TIMEOUT) == AppendCounts((1, 2, 1, 2))
    types = [type(e).__name__ for e in stream(url)]
    assert types == [type(e).__name__ for e in stream(ref_url)]
    assert types[-6:] == ["OffsetsCommitted", "OffsetsCommitted", "OffsetsCommitted", "ClassicGroupMetadataRecorded",
                          "OffsetsCommitted", "OffsetsCommitted"]
    assert [(g, offs) for _m, g, offs in committed(url)] == [(g, offs) for _m, g, offs in committed(ref_url)]
    assert [e.generation for e in stream(url) if isinstance(e, ClassicGroupMetadataRecorded)][-1] == 2


def test_a_simple_group_is_created_by_its_first_commit_before_the_next_is_decided(asys: ActorSystem, tmp_path) -> None:
    """Generation -1 commits stashed behind a DeleteGroups: the group does not exist when they
    are decided, and the first one creates it only once its offsets are durable — so the batch
    ends after it and the rest are decided on the created group (a generation-0 commit then gets
    UNKNOWN_MEMBER_ID, as one at a time, not GROUP_ID_NOT_FOUND)."""
    from actors.consumer.classic import DeleteGroupResult

    url = f"sqlite:///{tmp_path}/events.db"
    a, j = start(asys, url)
    assert asys.ask(a, commit("", -1, 0, 1), TIMEOUT) == OffsetCommitResult((("t", 0, None),))
    asys.tell(j, Hold())
    asys.tell(a, m.DeleteGroupCmd(G))  # in flight: the group is forgotten once durable
    asys.tell(a, m.OffsetCommitCmd(G, "", None, -1, (CommitPartition("t", 1, 2),), 9))
    asys.tell(a, m.OffsetCommitCmd(G, "", None, -1, (CommitPartition("t", 2, 3),), 9))
    asys.tell(a, m.OffsetCommitCmd(G, "m", None, 0, (CommitPartition("t", 3, 4),), 9))
    asys.tell(j, Release())
    got = replies(asys, 4)
    assert got[0] == DeleteGroupResult(None)
    assert [r.partitions for r in got[1:]] == [(("t", 1, None),), (("t", 2, None),), (("t", 3, "UNKNOWN_MEMBER_ID"),)]
    counts = asys.ask(j, AppendCounts(), TIMEOUT).events
    assert len(counts) == 3 and counts[1:] == (1, 1)  # the delete; the creating commit; the next one
    assert [offs for _m, _g, offs in committed(url)][-2:] == [((1, 2),), ((2, 3),)]
    assert asys.ask(a, m.DescribeGroupCmd(G), TIMEOUT).state == "Empty"


def test_a_batch_refused_on_a_version_conflict_is_not_coordinator_and_the_group_recovers(asys: ActorSystem, tmp_path) -> None:
    url = f"sqlite:///{tmp_path}/events.db"
    a, j = start(asys, url)
    mid = stable_member(asys, a)
    asys.tell(j, Hold())
    asys.tell(a, commit(mid, 1, 0, 10))
    asys.tell(a, commit(mid, 1, 1, 11))
    asys.tell(a, commit(mid, 1, 2, 12))
    asys.tell(j, Release(fail_next=1, error="CONCURRENCY"))
    got = replies(asys, 3)
    assert got[0] == OffsetCommitResult((("t", 0, None),))
    assert [(type(r), r.error) for r in got[1:]] == [(Failure, "NOT_COORDINATOR")] * 2
    # recovered from the stream: the member and the durable offset are there, the refused ones not
    assert [(o.partition, o.offset) for o in asys.ask(a, m.OffsetFetchCmd(G, None), TIMEOUT).offsets] == [(0, 10)]
    assert asys.ask(a, commit(mid, 1, 1, 11), TIMEOUT) == OffsetCommitResult((("t", 1, None),))
    assert committed(url) == [(mid, 1, ((0, 10),)), (mid, 1, ((1, 11),))]


def test_consumer_protocol_commits_are_batched_and_checked_against_the_member_epoch(asys: ActorSystem, tmp_path) -> None:
    """KIP-848 group: OffsetCommit checks the member epoch (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID)
    per request inside the batch; the accepted ones are one append."""
    from actors.consumer.modern import ConsumerHeartbeatResult

    url = f"sqlite:///{tmp_path}/events.db"
    a, j = start(asys, url)
    image = (("t", "00000000-0000-0000-0000-0000000000aa", 4),)
    hb = m.ConsumerGroupHeartbeatCmd(G, "a", 0, None, None, 30000, ("t",), None, (), "client", "127.0.0.1", image, 1)
    r = asys.ask(a, hb, TIMEOUT)
    assert isinstance(r, ConsumerHeartbeatResult) and r.error is None and r.member_epoch == 1
    asys.tell(j, Hold())
    asys.tell(a, m.OffsetCommitCmd(G, "a", None, 1, (CommitPartition("t", 0, 10),), 9))
    asys.tell(a, m.OffsetCommitCmd(G, "a", None, 1, (CommitPartition("t", 1, 11),), 9))
    asys.tell(a, m.OffsetCommitCmd(G, "a", None, 0, (CommitPartition("t", 2, 12),), 9))
    asys.tell(a, m.OffsetCommitCmd(G, "b", None, 1, (CommitPartition("t", 3, 13),), 9))
    asys.tell(a, m.OffsetCommitCmd(G, "a", None, 1, (CommitPartition("t", 3, 13),), 9))
    asys.tell(j, Release())
    got = replies(asys, 5)
    assert [r.partitions[0][2] for r in got] == [None, None, "STALE_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID", None]
    assert asys.ask(j, AppendCounts(), TIMEOUT) == AppendCounts((1, 2))
    assert [offs for _m, _g, offs in committed(url)] == [((0, 10),), ((1, 11),), ((3, 13),)]
    f = asys.ask(a, m.OffsetFetchCmd(G, None), TIMEOUT)
    assert [(o.partition, o.offset) for o in f.offsets] == [(0, 10), (1, 11), (3, 13)]
