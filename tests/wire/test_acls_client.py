"""The listener's ACL side over a real ControllerActor (``simpleSystemBase``): the
:class:`wire.controller_client.ControllerClient` ACL methods, the :class:`wire.authz.Authorizer`
built by ``from_config`` over them (its cache holds this node's change before the call returns),
and a controller that is not ready (COORDINATOR_LOAD_IN_PROGRESS per entry, no exception)."""

from __future__ import annotations

from datetime import timedelta

from actors.controller.acls import AclBinding, AclBindingFilter
from actors.controller.actor import ControllerActor
from actors.controller.messages import AclsRequest
from actors.messages import NotReady
from tests.controller.test_actor import start
from tests.wire.gateways import CountingGateway
from wire import authz
from wire.controller_client import ControllerClient

ALICE_READ = AclBinding("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")


def test_authorizer_over_the_controller_client(asys, sqlite_url):
    ctl, _ = start(asys, sqlite_url)
    gw = CountingGateway(asys)
    client = ControllerClient(gw, ctl, {"shoal.authorizer.refresh.ms": "3600000"})
    a = authz.from_config({"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "shoal.authorizer.refresh.ms": "3600000"}, client)
    assert a is not None and len(a.acls()) == 0
    assert not a.authorize("User:alice", "h", "READ", "TOPIC", "orders")
    results = a.create_acls([ALICE_READ])
    assert [r.error for r in results] == [None]
    # in force at once, although the refresh interval is an hour
    assert a.authorize("User:alice", "h", "READ", "TOPIC", "orders")
    asks = gw.asks
    assert a.authorize("User:alice", "h", "DESCRIBE", "TOPIC", "orders") and gw.asks == asks  # served from the cache
    deleted = a.delete_acls([AclBindingFilter("TOPIC", "orders", "MATCH")])
    assert deleted[0].matched == (ALICE_READ,)
    assert not a.authorize("User:alice", "h", "READ", "TOPIC", "orders")


def test_a_controller_that_is_not_ready_gives_coordinator_load_in_progress(asys):
    ctl = asys.createActor(ControllerActor)  # never configured: answers NotReady
    assert asys.ask(ctl, AclsRequest(None), timedelta(seconds=5)) == NotReady("controller")
    client = ControllerClient(CountingGateway(asys), ctl, {})
    results, token = client.create_acls([ALICE_READ])
    assert token is None and [r.error for r in results] == ["COORDINATOR_LOAD_IN_PROGRESS"]
    results, token = client.delete_acls([AclBindingFilter()])
    assert token is None and [r.error for r in results] == ["COORDINATOR_LOAD_IN_PROGRESS"]
    # the authorizer fails closed until it can load
    a = authz.from_config({"authorizer.class.name": "x"}, client)
    assert a.acls() is None and not a.authorize("User:alice", "h", "READ", "TOPIC", "orders")
