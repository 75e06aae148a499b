"""The passivation protocol with a parent: the group actor exits when idle; the parent re-creates
it and sends ``Configure`` before forwarding the next request, and the group rehydrates from its
snapshot. Also the actor under ``multiprocTCPBase`` (messages really pickled, one process each)."""

from __future__ import annotations

import os
from typing import Any

from freezegun import freeze_time
from thespian.actors import ActorTypeDispatcher, ChildActorExited

from actors.messages import Configure, Configured, NotReady, StatusRequest
from actors.share import messages as m
from actors.share.actor import ShareGroupActor

G = "grp"
T = "TOPIC-ID"

os.environ.setdefault("THESPIAN_BASE_IPADDR", "127.0.0.1")  # multiproc bases in sandboxes and CI


class GroupParent(ActorTypeDispatcher):
    """A minimal stand-in for the controller: one child per group, created on demand."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.config: dict = {}
        self.child = None
        self.created = 0
        self.exited = 0
        self.pending: list = []

    def receiveMsg_dict(self, msg: dict, sender: Any) -> None:
        self.config = msg
        self.send(sender, "ok")

    def receiveMsg_str(self, msg: str, sender: Any) -> None:
        if msg == "counts":
            self.send(sender, {"created": self.created, "exited": self.exited, "live": self.child is not None})

    def receiveMsg_ChildActorExited(self, msg: ChildActorExited, sender: Any) -> None:
        if msg.childAddress == self.child:
            self.child = None
            self.exited += 1

    def receiveMsg_Configured(self, msg: Configured, sender: Any) -> None:
        pending, self.pending = self.pending, []
        for req, client in pending:
            self.send(self.child, _Forward(req, client))

    def receiveUnrecognizedMessage(self, msg: Any, sender: Any) -> None:
        if isinstance(msg, _Reply):
            self.send(msg.client, msg.reply)
            return
        if self.child is None:
            self.child = self.createActor(_RelayingGroupActor)
            self.created += 1
            self.pending.append((msg, sender))
            self.send(self.child, Configure(self.config, G))
            return
        self.send(self.child, _Forward(msg, sender))


class _Forward:
    def __init__(self, req: Any, client: Any) -> None:
        self.req, self.client = req, client


class _Reply:
    def __init__(self, reply: Any, client: Any) -> None:
        self.reply, self.client = reply, client


class _RelayingGroupActor(ShareGroupActor):
    """The real actor, with replies relayed through the parent (what a controller would do)."""

    def receiveMsg__Forward(self, msg: _Forward, sender: Any) -> None:
        self._client = msg.client
        self._relay_to = sender
        self.receiveMessage(msg.req, _RelayAddress(sender, msg.client))

    def send(self, target: Any, msg: Any) -> None:
        if isinstance(target, _RelayAddress):
            super().send(target.parent, _Reply(msg, target.client))
        else:
            super().send(target, msg)


class _RelayAddress:
    def __init__(self, parent: Any, client: Any) -> None:
        self.parent, self.client = parent, client

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _RelayAddress) and (self.parent, self.client) == (other.parent, other.client)

    def __hash__(self) -> int:
        return hash(id(self.parent))


def test_parent_recreates_a_passivated_group_which_rehydrates(asys, sqlite_url):
    with freeze_time("2026-01-01 00:00:00") as ft:
        parent = asys.createActor(GroupParent)
        asys.ask(parent, {"event.log.url": sqlite_url, "shoal.share.group.passivate.ms": "1000"}, 5)
        r = asys.ask(parent, m.ShareGroupHeartbeatCmd(G, "m1", 0, subscribed_topic_names=("foo",), topics={"foo": (T, 1)}), 5)
        assert r.member_epoch == 1
        r = asys.ask(parent, m.ShareGroupHeartbeatCmd(G, "m1", -1), 5)
        assert r.member_epoch == -1
        before = asys.ask(parent, m.GetShareGroupState(G), 5)
        ft.tick(5)
        asys.ask(parent, "counts", 5)  # lets the idle wakeup fire: the child snapshots and exits
        counts = asys.ask(parent, "counts", 5)
        assert counts == {"created": 1, "exited": 1, "live": False}
        # the next request re-creates the child, which rehydrates before answering
        after = asys.ask(parent, m.GetShareGroupState(G), 5)
        assert after.state == before.state and after.stream_version == before.stream_version
        assert asys.ask(parent, "counts", 5)["created"] == 2


def test_group_actor_under_multiproc_tcp_base(mp_asys, sqlite_url):
    a = mp_asys.createActor(ShareGroupActor)
    assert isinstance(mp_asys.ask(a, m.DescribeShareGroup(G), 10), NotReady)
    conf = mp_asys.ask(a, Configure({"event.log.url": sqlite_url}, G), 20)
    assert isinstance(conf, Configured), conf
    r = mp_asys.ask(a, m.ShareGroupHeartbeatCmd(G, "m1", 0, subscribed_topic_names=("foo",), topics={"foo": (T, 1)}), 10)
    assert (r.error, r.member_epoch, r.assignment) == ("NONE", 1, ((T, (0,)),))
    r = mp_asys.ask(a, m.ShareFetchCmd(G, "m1", 0, (m.ShareFetchPartition(T, 0, high_watermark=0),)), 10)
    r = mp_asys.ask(a, m.ShareFetchCmd(G, "m1", 1, (m.ShareFetchPartition(T, 0, fetch_offset=0, log_batches=((0, 99),), high_watermark=100),)), 10)
    assert r.partitions[0].acquired == ((0, 99, 1),)
    st = mp_asys.ask(a, StatusRequest(), 10)
    assert st.ready and st.counts["partitions"] == 1
