"""The controller's share-group census (``actors.share.limits``) under ``simpleSystemBase``: a
lookup without ``create`` starts no child for an unknown group, ``group.share.max.groups`` bounds
the groups a lookup may create, and the census is rebuilt from the log's ``share-group:`` streams
after a restart. The ``share`` kind is pointed at the test CounterActor so no ShareGroupActor runs."""

from __future__ import annotations

from datetime import timedelta

from thespian.actors import ActorExitRequest

from actors.controller import messages as M
from actors.controller.actor import ControllerActor
from actors.messages import Configure, Configured, Failure, StatusRequest
from events.codec import new_event
from events.share_group import GroupConfigAltered, stream_id_for
from store.event_log import open_event_log

T = timedelta(seconds=10)
COUNTER = "tests.controller.child_actor.CounterActor"


def _start(asys, url: str, **extra: str):
    cfg = {"event.log.url": url, "node.id": "1", "log.retention.check.interval.ms": "0",
           "listeners": "PLAINTEXT://127.0.0.1:9093", "shoal.controller.child.share": COUNTER}
    cfg.update(extra)
    ctl = asys.createActor(ControllerActor)
    assert isinstance(asys.ask(ctl, Configure(cfg, "controller", None), T), Configured)
    return ctl


def _children(asys, ctl) -> int:
    return asys.ask(ctl, StatusRequest(), T).counts["children"]


def test_lookup_without_create_of_an_unknown_group_starts_nothing(asys, sqlite_url):
    ctl = _start(asys, sqlite_url)
    r = asys.ask(ctl, M.ChildLookup("share", "ghost", create=False), T)
    assert isinstance(r, Failure) and r.error == "GROUP_ID_NOT_FOUND" and r.message == "Share group ghost not found."
    assert _children(asys, ctl) == 0
    # once created, the same lookup without create finds it
    assert isinstance(asys.ask(ctl, M.ChildLookup("share", "ghost", create=True), T), M.ChildAddress)
    assert isinstance(asys.ask(ctl, M.ChildLookup("share", "ghost", create=False), T), M.ChildAddress)
    assert _children(asys, ctl) == 1


def test_max_groups_refuses_the_group_one_too_many_but_not_existing_ones(asys, sqlite_url):
    ctl = _start(asys, sqlite_url, **{"group.share.max.groups": "2"})
    assert isinstance(asys.ask(ctl, M.ChildLookup("share", "a"), T), M.ChildAddress)
    assert isinstance(asys.ask(ctl, M.ChildLookup("share", "b"), T), M.ChildAddress)
    r = asys.ask(ctl, M.ChildLookup("share", "c"), T)
    assert isinstance(r, Failure) and r.error == "GROUP_MAX_SIZE_REACHED"
    assert isinstance(asys.ask(ctl, M.ChildLookup("share", "a"), T), M.ChildAddress)
    # a passivated (stopped) group still exists: it is started again even at the limit
    assert asys.ask(ctl, M.StopChild("share", "a"), T) == M.ChildStopped("share", "a")
    assert isinstance(asys.ask(ctl, M.ChildLookup("share", "a", create=False), T), M.ChildAddress)
    st = asys.ask(ctl, StatusRequest(), T).counts
    assert st["children"] == 2 and st["share_groups"] == 2


def test_census_survives_a_restart_from_the_share_group_streams(asys, sqlite_url):
    elog = open_event_log(sqlite_url)
    for g in ("old1", "old2"):
        elog.append(stream_id_for(g), [new_event(GroupConfigAltered(g, {}))], 0)
    elog.close()
    ctl = _start(asys, sqlite_url, **{"group.share.max.groups": "3"})
    assert asys.ask(ctl, StatusRequest(), T).counts["share_groups"] == 2
    assert _children(asys, ctl) == 0  # the census is read from the log; no actor is started
    assert isinstance(asys.ask(ctl, M.ChildLookup("share", "old1", create=False), T), M.ChildAddress)
    assert isinstance(asys.ask(ctl, M.ChildLookup("share", "new"), T), M.ChildAddress)
    r = asys.ask(ctl, M.ChildLookup("share", "newer"), T)
    assert isinstance(r, Failure) and r.error == "GROUP_MAX_SIZE_REACHED"


def test_other_kinds_keep_their_lookup_rules(asys, sqlite_url):
    ctl = _start(asys, sqlite_url, **{"shoal.controller.child.counter": COUNTER, "group.share.max.groups": "1"})
    r = asys.ask(ctl, M.ChildLookup("counter", "x", create=False), T)
    assert isinstance(r, Failure) and r.error == "UNKNOWN_TOPIC_OR_PARTITION"
    for name in ("x", "y", "z"):  # the share limit does not apply to other kinds
        assert isinstance(asys.ask(ctl, M.ChildLookup("counter", name), T), M.ChildAddress)


def test_forgotten_group_leaves_the_census_and_deleted_streams_are_not_counted_after_a_restart(asys, sqlite_url):
    """DeleteGroups of a share group: ``ForgetShareGroup`` drops it from the census and stops its
    actor, so another group fits under ``group.share.max.groups`` and the deleted id is unknown to a
    lookup without create; after a restart a stream ending with ``ShareGroupDeleted`` (session
    audit events after it aside) is not counted, one used again after its deletion is."""
    from events.share_group import GroupEpochBumped, ShareGroupDeleted, ShareSessionClosed

    ctl = _start(asys, sqlite_url, **{"group.share.max.groups": "1"})
    assert isinstance(asys.ask(ctl, M.ChildLookup("share", "a"), T), M.ChildAddress)
    assert isinstance(asys.ask(ctl, M.ChildLookup("share", "b"), T), Failure)
    assert asys.ask(ctl, M.ForgetShareGroup("a"), T) == M.ChildStopped("share", "a")
    assert _children(asys, ctl) == 0
    r = asys.ask(ctl, M.ChildLookup("share", "a", create=False), T)
    assert isinstance(r, Failure) and r.error == "GROUP_ID_NOT_FOUND"
    assert isinstance(asys.ask(ctl, M.ChildLookup("share", "b"), T), M.ChildAddress)
    asys.tell(ctl, ActorExitRequest())

    elog = open_event_log(sqlite_url)
    elog.append(stream_id_for("gone"), [new_event(GroupEpochBumped("gone", 1)), new_event(ShareGroupDeleted("gone")),
                                        new_event(ShareSessionClosed("gone", "m", "expired"))])
    elog.append(stream_id_for("back"), [new_event(ShareGroupDeleted("back")), new_event(GroupEpochBumped("back", 1))])
    ctl = _start(asys, sqlite_url, **{"group.share.max.groups": "10"})
    assert asys.ask(ctl, StatusRequest(), T).counts["share_groups"] == 1  # "back" only ("a", "b" never wrote)
    assert isinstance(asys.ask(ctl, M.ChildLookup("share", "gone", create=False), T), Failure)
    assert isinstance(asys.ask(ctl, M.ChildLookup("share", "back", create=False), T), M.ChildAddress)
