"""Hypothesis through the actor: random interleavings of heartbeats, fetches with piggy-backed
acknowledgements, standalone acknowledgements, session closes, leaves, clock jumps and
passivation followed by rehydration. Invariants:
no request fails unexpectedly, the actor's live state equals a fresh recovery from the log
(replay == live: the pure fold of the whole stream, the structured snapshot round trip, and a
fresh actor recovering from snapshot + tail), member epochs never decrease, no member above the max size."""

from __future__ import annotations

import shutil
import tempfile

from freezegun import freeze_time
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from thespian.actors import ActorSystem

from actors.messages import Configure, Configured
from actors.share import messages as m
from actors.share.actor import ShareGroupActor, ShareGroupState
from actors.share.config import BrokerShareConfig
from events.codec import decode_recorded
from events.share_group import stream_id_for
from store.event_log import open_event_log

G, T = "prop", "TOPIC"
MEMBERS = ("m1", "m2", "m3")
ALLOWED = {"NONE", "INVALID_RECORD_STATE", "INVALID_REQUEST", "SHARE_SESSION_NOT_FOUND", "INVALID_SHARE_SESSION_EPOCH",
           "UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH", "GROUP_MAX_SIZE_REACHED", "UNKNOWN_TOPIC_OR_PARTITION",
           "GROUP_ID_NOT_FOUND"}

step = st.one_of(
    st.tuples(st.just("join"), st.sampled_from(MEMBERS), st.just(0)),
    st.tuples(st.just("hb"), st.sampled_from(MEMBERS), st.just(0)),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS), st.just(0)),
    st.tuples(st.just("fetch"), st.sampled_from(MEMBERS), st.integers(1, 30)),
    st.tuples(st.just("ack"), st.sampled_from(MEMBERS), st.sampled_from((1, 2, 3, 4))),
    st.tuples(st.just("close"), st.sampled_from(MEMBERS), st.just(0)),
    st.tuples(st.just("tick"), st.just(""), st.integers(1, 40_000)),
    st.tuples(st.just("passivate"), st.just(""), st.just(0)),
)


PROLOGUE = [("join", "m1", 0), ("join", "m2", 0), ("fetch", "m1", 10), ("fetch", "m2", 10), ("fetch", "m1", 10)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=40))
def test_actor_interleavings_keep_invariants_and_replay_equals_live(steps):
    steps = PROLOGUE + steps
    d = tempfile.mkdtemp()
    url = f"sqlite:///{d}/events.db"
    config = {"event.log.url": url, "group.share.max.size": "10", "shoal.share.group.snapshot.every.events": "7"}
    try:
        with freeze_time("2026-01-01 00:00:00") as ft:
            asys = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
            try:
                a = asys.createActor(ShareGroupActor)
                assert isinstance(asys.ask(a, Configure(config, G), 5), Configured)
                epochs: dict[str, int] = {}
                sess: dict[str, int] = {}
                held: dict[str, list[tuple[int, int]]] = {}
                hw = 0
                for kind, member, arg in steps:
                    if kind == "tick":
                        ft.tick(arg / 1000)
                        continue
                    if kind == "passivate":
                        # snapshot + exit, then a new actor rehydrates: the same durable state;
                        # share sessions are broker memory and are gone (clients re-open them)
                        before = asys.ask(a, m.GetShareGroupState(G), 5)
                        asys.tell(a, m.Passivate(G))
                        a = asys.createActor(ShareGroupActor)
                        assert isinstance(asys.ask(a, Configure(config, G), 5), Configured)
                        after = asys.ask(a, m.GetShareGroupState(G), 5)
                        assert (after.stream_version, after.state) == (before.stream_version, before.state)
                        sess.clear()
                        continue
                    if kind == "join":
                        r = asys.ask(a, m.ShareGroupHeartbeatCmd(G, member, 0, subscribed_topic_names=("t",), topics={"t": (T, 1)}), 5)
                    elif kind == "hb":
                        r = asys.ask(a, m.ShareGroupHeartbeatCmd(G, member, epochs.get(member, 1)), 5)
                    elif kind == "leave":
                        r = asys.ask(a, m.ShareGroupHeartbeatCmd(G, member, -1), 5)
                    elif kind in ("fetch", "ack", "close"):
                        epoch = sess.get(member, 0)
                        if kind == "close":
                            epoch = -1
                        acks = tuple((f, l_, (arg if kind == "ack" else 1,)) for f, l_ in held.get(member, ()))
                        if kind == "ack":
                            r = asys.ask(a, m.ShareAcknowledgeCmd(G, member, epoch if epoch else 1, (
                                m.ShareAcknowledgePartition(T, 0, acks),)), 5)
                        else:
                            parts = (m.ShareFetchPartition(T, 0, acknowledgement_batches=acks if epoch else (),
                                                           fetch_offset=hw, log_batches=((hw, hw + arg - 1),) if arg else (),
                                                           high_watermark=hw + (arg or 0)),)
                            r = asys.ask(a, m.ShareFetchCmd(G, member, epoch, parts, 500), 5)
                    assert r is not None, (kind, member)
                    assert r.error in ALLOWED, r
                    if isinstance(r, m.ShareGroupHeartbeatReply) and r.error == "NONE":
                        if r.member_epoch == -1:
                            epochs.pop(member, None)
                        else:
                            assert r.member_epoch >= epochs.get(member, 0)
                            epochs[member] = r.member_epoch
                    if isinstance(r, (m.ShareFetchReply, m.ShareAcknowledgeReply)):
                        if r.error == "NONE":
                            sess[member] = 0 if epoch == -1 else (1 if epoch == 0 else epoch + 1)
                            held[member] = []
                        elif r.error in ("SHARE_SESSION_NOT_FOUND", "INVALID_SHARE_SESSION_EPOCH"):
                            sess[member] = 0
                    if isinstance(r, m.ShareFetchReply) and r.error == "NONE":
                        for p in r.partitions:
                            held[member] = [(f, l_) for f, l_, _ in p.acquired]
                            if p.acquired:
                                hw = max(hw, max(l_ for _, l_, _ in p.acquired) + 1)
                            elif kind == "fetch" and p.refetch_from is None and arg:
                                hw += arg
                    desc = asys.ask(a, m.DescribeShareGroup(G), 5)
                    assert len(desc.members) <= 10
                live = asys.ask(a, m.GetShareGroupState(G), 5)
                event(f"share-partitions: {len(live.state['partitions'])}, members: {len(live.state['membership']['members'])}")
                event(f"stream version > 10: {live.stream_version > 10}")
            finally:
                asys.shutdown()
            # the pure fold of the whole stream (no snapshot) is exactly the live state, and the
            # structured snapshot encoding round-trips it
            folded = ShareGroupState(G, BrokerShareConfig.from_config(config))
            for rec in open_event_log(url).read_stream(stream_id_for(G)):
                folded.apply(decode_recorded(rec))
            assert folded.to_dict() == live.state
            again_state = ShareGroupState.loads(folded.dumps(), G, BrokerShareConfig.from_config(config))
            assert again_state.to_dict() == live.state
            # a fresh actor system recovering from the same log reaches exactly the live state
            s2 = ActorSystem("simpleSystemBase", logDefs=False, transientUnique=True)
            try:
                b = s2.createActor(ShareGroupActor)
                assert isinstance(s2.ask(b, Configure(config, G), 5), Configured)
                again = s2.ask(b, m.GetShareGroupState(G), 5)
                assert again.stream_version == live.stream_version
                assert again.state == live.state
            finally:
                s2.shutdown()
    finally:
        shutil.rmtree(d, ignore_errors=True)
