"""The controller's share-group census (``actors.share.limits``) under ``simpleSystemBase``
(:class:`AdmitShareGroup`): an unknown group is admitted only by a request that may create it,
``group.share.max.groups`` bounds the groups that may be created, the census is rebuilt from the
log's ``share-group:`` streams after a restart, and a deleted group leaves it. The groups' actors
themselves run in the listener process (``actors.share.host``): the controller starts none."""

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
           "listeners": "PLAINTEXT://127.0.0.1:9093"}
    cfg.update(extra)
    ctl = asys.createActor(ControllerActor)
    assert isinstance(asys.ask(ctl, Configure(cfg, "controller", None), T), Configured)
    return ctl


def _counts(asys, ctl) -> dict:
    return asys.ask(ctl, StatusRequest(), T).counts


def test_an_unknown_group_is_admitted_only_by_a_request_that_may_create_it(asys, sqlite_url):
    ctl = _start(asys, sqlite_url)
    r = asys.ask(ctl, M.AdmitShareGroup("ghost", create=False), T)
    assert isinstance(r, Failure) and r.error == "GROUP_ID_NOT_FOUND" and r.message == "Share group ghost not found."
    assert asys.ask(ctl, M.AdmitShareGroup("ghost", create=True), T) == M.ShareGroupAdmitted("ghost")
    assert asys.ask(ctl, M.AdmitShareGroup("ghost", create=False), T) == M.ShareGroupAdmitted("ghost")
    assert _counts(asys, ctl)["children"] == 0 and _counts(asys, ctl)["share_groups"] == 1


def test_max_groups_refuses_the_group_one_too_many_but_not_existing_ones(asys, sqlite_url):
    ctl = _start(asys, sqlite_url, **{"group.share.max.groups": "2"})
    assert asys.ask(ctl, M.AdmitShareGroup("a"), T) == M.ShareGroupAdmitted("a")
    assert asys.ask(ctl, M.AdmitShareGroup("b"), T) == M.ShareGroupAdmitted("b")
    r = asys.ask(ctl, M.AdmitShareGroup("c"), T)
    assert isinstance(r, Failure) and r.error == "GROUP_MAX_SIZE_REACHED"
    # an existing group (its actor passivated, say) is admitted again at the limit
    assert asys.ask(ctl, M.AdmitShareGroup("a", create=False), T) == M.ShareGroupAdmitted("a")
    assert _counts(asys, ctl)["share_groups"] == 2


def test_census_survives_a_restart_from_the_share_group_streams(asys, sqlite_url):
    elog = open_event_log(sqlite_url)
    for g in ("old1", "old2"):
        elog.append(stream_id_for(g), [new_event(GroupConfigAltered(g, {}))], 0)
    elog.close()
    ctl = _start(asys, sqlite_url, **{"group.share.max.groups": "3"})
    assert _counts(asys, ctl)["share_groups"] == 2
    assert asys.ask(ctl, M.AdmitShareGroup("old1", create=False), T) == M.ShareGroupAdmitted("old1")
    assert asys.ask(ctl, M.AdmitShareGroup("new"), T) == M.ShareGroupAdmitted("new")
    r = asys.ask(ctl, M.AdmitShareGroup("newer"), T)
    assert isinstance(r, Failure) and r.error == "GROUP_MAX_SIZE_REACHED"


def test_share_groups_are_not_the_controllers_children_and_other_kinds_keep_their_rules(asys, sqlite_url):
    ctl = _start(asys, sqlite_url, **{"shoal.controller.child.counter": COUNTER, "group.share.max.groups": "1"})
    r = asys.ask(ctl, M.ChildLookup("share", "g"), T)
    assert isinstance(r, Failure) and "AdmitShareGroup" in r.message
    r = asys.ask(ctl, M.ChildLookup("counter", "x", create=False), T)
    assert isinstance(r, Failure) and r.error == "UNKNOWN_TOPIC_OR_PARTITION"
    for name in ("x", "y", "z"):  # the share limit does not apply to other kinds
        assert isinstance(asys.ask(ctl, M.ChildLookup("counter", name), T), M.ChildAddress)


def test_forgotten_group_leaves_the_census_and_deleted_streams_are_not_counted_after_a_restart(asys, sqlite_url):
    """DeleteGroups of a share group: ``ForgetShareGroup`` drops it from the census, so another
    group fits under ``group.share.max.groups`` and the deleted id is unknown to a request that
    may not create; after a restart a stream ending with ``ShareGroupDeleted`` (session audit
    events after it aside) is not counted, one used again after its deletion is."""
    from events.share_group import GroupEpochBumped, ShareGroupDeleted, ShareSessionClosed

    ctl = _start(asys, sqlite_url, **{"group.share.max.groups": "1"})
    assert asys.ask(ctl, M.AdmitShareGroup("a"), T) == M.ShareGroupAdmitted("a")
    assert isinstance(asys.ask(ctl, M.AdmitShareGroup("b"), T), Failure)
    assert asys.ask(ctl, M.ForgetShareGroup("a"), T) == M.ChildStopped("share", "a")
    r = asys.ask(ctl, M.AdmitShareGroup("a", create=False), T)
    assert isinstance(r, Failure) and r.error == "GROUP_ID_NOT_FOUND"
    assert asys.ask(ctl, M.AdmitShareGroup("b"), T) == M.ShareGroupAdmitted("b")
    asys.tell(ctl, ActorExitRequest())

    elog = open_event_log(sqlite_url)
    elog.append(stream_id_for("gone"), [new_event(GroupEpochBumped("gone", 1)), new_event(ShareGroupDeleted("gone")),
                                        new_event(ShareSessionClosed("gone", "m", "expired"))])
    elog.append(stream_id_for("back"), [new_event(ShareGroupDeleted("back")), new_event(GroupEpochBumped("back", 1))])
    ctl = _start(asys, sqlite_url, **{"group.share.max.groups": "10"})
    assert _counts(asys, ctl)["share_groups"] == 1  # "back" only ("a", "b" never wrote)
    assert isinstance(asys.ask(ctl, M.AdmitShareGroup("gone", create=False), T), Failure)
    assert asys.ask(ctl, M.AdmitShareGroup("back", create=False), T) == M.ShareGroupAdmitted("back")
