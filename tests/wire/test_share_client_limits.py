"""ShareClient and bounded share groups (``actors.share.limits``): which requests may create a
group, what the wire answers when the controller refuses, and that describes, DescribeConfigs,
ListGroups and status never start an actor of a group that does not run."""

from __future__ import annotations

import pytest

from actors.messages import StatusReply, StatusRequest
from actors.share import messages as m
from actors.share.host import GroupNotRunning
from actors.share.limits import admit_share_group
from wire.controller_client import GroupRefused
from wire.share_client import ShareClient
from wire.waits import WaitSet


class CensusController:
    """The controller's census rules (the real pure decision), recording the admissions asked."""

    def __init__(self, known=(), max_groups=10):
        self.known = set(known)
        self.max_groups = max_groups
        self.lookups: list[tuple[str, bool]] = []

    def cached_topics(self, names=None):
        return []

    def admit_share_group(self, group, create=True):
        self.lookups.append((group, create))
        refusal = admit_share_group(group, self.known, create, self.max_groups)
        if refusal is not None:
            raise GroupRefused(refusal.error, refusal.message)
        self.known.add(group)

    def share_groups(self):
        return sorted(self.known)

    def forget_share_group(self, group):
        self.known.discard(group)

    def names_by_id(self):
        return {}


class Gateway:
    """A stand-in :class:`actors.share.host.ShareGroupHost`: the groups in ``live`` run and answer
    ``reply(msg)``; any other answers :class:`GroupNotRunning` until started."""

    def __init__(self, reply, live=()):
        self.reply = reply
        self.live = set(live)
        self.sent: list[tuple[str, object]] = []
        self.on_records_freed = lambda group, parts: None

    def ask(self, group, msg, timeout_s=None):
        if group not in self.live:
            return GroupNotRunning(group)
        self.sent.append((group, msg))
        return self.reply(msg)

    def running(self, group):
        return group in self.live

    def start_group(self, group, timeout_s=None):
        self.live.add(group)
        return None

    def stop_group(self, group, timeout_s=None):
        self.live.discard(group)
        return True


class NoLogs:
    """No partition logs (these requests name no partition): only the purgatory's wait set."""

    def __init__(self) -> None:
        self.waits = WaitSet()


def _never(msg):
    raise AssertionError(f"no actor should be asked: {msg!r}")


def test_describe_and_offsets_of_an_unknown_group_are_not_found_without_creating():
    ctl = CensusController()
    sc = ShareClient(Gateway(_never), ctl, NoLogs(), {})
    assert sc.describe("ghost") == {"error": "GROUP_ID_NOT_FOUND", "message": "Share group ghost not found."}
    assert sc.offsets("ghost", None) == ("GROUP_ID_NOT_FOUND", "Share group ghost not found.", [])
    assert ctl.lookups == [("ghost", False), ("ghost", False)] and not ctl.known


def test_describe_configs_of_an_unknown_group_answers_broker_defaults_without_an_actor():
    ctl = CensusController()
    sc = ShareClient(Gateway(_never), ctl, NoLogs(), {"group.share.record.lock.duration.ms": "20000"})
    err, msg, entries = sc.describe_configs("ghost", None)
    assert err is None and not ctl.known
    by_name = {e.name: e for e in entries}
    assert by_name["share.record.lock.duration.ms"].value == "20000"
    assert by_name["share.session.timeout.ms"].value == "45000"
    assert all(e.is_default and e.source == 5 for e in entries)
    err, _msg, only = sc.describe_configs("ghost", ["share.auto.offset.reset"])
    assert [(e.name, e.value) for e in only] == [("share.auto.offset.reset", "latest")]
    assert sc.describe_configs("", None)[0] == "INVALID_REQUEST"


def test_only_a_joining_heartbeat_may_create_and_a_full_broker_refuses_it():
    ctl = CensusController(known={"a"}, max_groups=1)
    gw = Gateway(lambda msg: m.ShareGroupHeartbeatReply("NONE", "", msg.member_id or "m", 1, 5000, None))
    sc = ShareClient(gw, ctl, NoLogs(), {})
    r = sc.heartbeat("ghost", "m1", 3, None, ["t"], "c", "h")
    assert (r.error, r.message) == ("GROUP_ID_NOT_FOUND", "Share group ghost not found.")
    r = sc.heartbeat("new", "m1", 0, None, ["t"], "c", "h")
    assert r.error == "GROUP_MAX_SIZE_REACHED" and "group.share.max.groups" in r.message
    assert ctl.lookups == [("ghost", False), ("new", True)] and gw.sent == []
    assert sc.heartbeat("a", "m1", 0, None, ["t"], "c", "h").error is None  # existing group: admitted


def test_only_a_new_share_session_may_create_and_past_the_limit_it_gets_the_refusal():
    ctl = CensusController(known={"a"}, max_groups=1)
    sc = ShareClient(Gateway(_never), ctl, NoLogs(), {})
    assert sc.fetch("new", "m1", 0, [], [], [], 10, 0).error == "GROUP_MAX_SIZE_REACHED"
    assert sc.alter_configs("new", [("share.record.lock.duration.ms", 0, "20000")], False)[0] == "GROUP_MAX_SIZE_REACHED"
    assert ctl.lookups == [("new", True), ("new", True)]


def test_share_fetch_and_acknowledge_in_a_group_that_does_not_exist_get_the_no_session_answer():
    ctl = CensusController()
    sc = ShareClient(Gateway(_never), ctl, NoLogs(), {})
    r = sc.fetch("ghost", "m1", 4, [], [], [], 10, 0)
    assert (r.error, r.message) == ("SHARE_SESSION_NOT_FOUND", "Share session not found for member m1.")
    assert sc.fetch("ghost", "m1", -1, [], [], [], 10, 0).error == "SHARE_SESSION_NOT_FOUND"
    assert sc.acknowledge("ghost", "m1", 2, []).error == "SHARE_SESSION_NOT_FOUND"
    assert sc.acknowledge("ghost", "m1", 0, []).error == "INVALID_SHARE_SESSION_EPOCH"
    assert all(not create for _g, create in ctl.lookups) and not ctl.known


def test_list_groups_and_status_ask_only_running_actors():
    ctl = CensusController(known={"idle", "busy"})

    def reply(msg):
        if isinstance(msg, m.DescribeShareGroup):
            return m.ShareGroupDescription("busy", "NONE", "", "Stable", 1, 1, "simple", ())
        assert isinstance(msg, StatusRequest)
        return StatusReply("busy", True, {"members": 2, "in_flight_records": 7})

    gw = Gateway(reply, live={"busy"})
    sc = ShareClient(gw, ctl, NoLogs(), {})
    assert sc.list_groups() == [("busy", "share", "Stable"), ("idle", "share", "Empty")]
    assert sc.status() == {"groups": 2, "group_actors": 1, "members": 2, "in_flight_records": 7, "group_passivations": 0}
    assert {group for group, _ in gw.sent} == {"busy"}
    assert ctl.lookups == [] and gw.live == {"busy"}  # nothing was admitted, so nothing was started


@pytest.mark.parametrize("error", ["GROUP_ID_NOT_FOUND", "GROUP_MAX_SIZE_REACHED"])
def test_group_refused_carries_error_and_message(error):
    exc = GroupRefused(error, "text")
    assert (exc.error, exc.message) == (error, "text") and error in str(exc)


def test_an_invalid_join_is_refused_before_any_lookup_so_it_creates_no_group():
    ctl = CensusController()
    sc = ShareClient(Gateway(_never), ctl, NoLogs(), {})
    r = sc.heartbeat("new", "m1", 0, None, None, "c", "h")
    assert (r.error, r.message) == ("INVALID_REQUEST", "SubscribedTopicNames must be set in first request.")
    assert sc.heartbeat("new", "", 0, None, ["t"], "c", "h").error == "INVALID_REQUEST"
    assert sc.heartbeat("", "m1", 0, None, ["t"], "c", "h").error == "INVALID_REQUEST"
    assert ctl.lookups == [] and not ctl.known


def test_a_running_group_that_does_not_answer_is_listed_unknown():
    from actors.messages import NotReady

    ctl = CensusController(known={"busy"})
    sc = ShareClient(Gateway(lambda msg: NotReady("busy"), live={"busy"}), ctl, NoLogs(), {})
    assert sc.list_groups() == [("busy", "share", "Unknown")]
    assert sc.status() == {"groups": 1, "group_actors": 0, "members": 0, "in_flight_records": 0, "group_passivations": 0}


def test_validate_only_alter_configs_of_an_unknown_group_validates_without_creating():
    # a full broker: a create would be refused, so success proves no slot was taken
    ctl = CensusController(known={"a"}, max_groups=1)
    sc = ShareClient(Gateway(_never), ctl, NoLogs(), {"group.share.max.record.lock.duration.ms": "60000"})
    assert sc.alter_configs("ghost", [("share.record.lock.duration.ms", 0, "20000"), ("share.isolation.level", 1, None)], True) == (None, None)
    err, msg = sc.alter_configs("ghost", [("share.record.lock.duration.ms", 0, "70000")], True)
    assert (err, msg) == ("INVALID_CONFIG", "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms")
    assert sc.alter_configs("ghost", [("no.such.key", 0, "1")], True) == ("INVALID_CONFIG", "Unknown group config name: no.such.key")
    assert ctl.lookups == [("ghost", False)] * 3 and ctl.known == {"a"}
    # without validate_only the same change may create the group (and here meets the limit)
    assert sc.alter_configs("ghost", [("share.record.lock.duration.ms", 0, "20000")], False)[0] == "GROUP_MAX_SIZE_REACHED"


def test_validate_only_alter_configs_of_an_existing_group_asks_its_actor():
    ctl = CensusController(known={"g"})
    gw = Gateway(lambda msg: m.GroupConfigsAltered("g", "NONE", "", {"share.record.lock.duration.ms": "20000"}))
    sc = ShareClient(gw, ctl, NoLogs(), {})
    assert sc.alter_configs("g", [("share.record.lock.duration.ms", 0, "20000")], True) == (None, None)
    assert ctl.lookups == [("g", False)]  # not running: admitted as an existing group, then started
    assert [(group, type(msg).__name__, msg.validate_only) for group, msg in gw.sent] == [("g", "AlterGroupConfigs", True)]
