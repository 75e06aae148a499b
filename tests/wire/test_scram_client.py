"""The listener's SCRAM side over a real ControllerActor (``simpleSystemBase``): the
:class:`wire.controller_client.ControllerClient` credential cache that the SASL SCRAM server reads
(``ShoalBackend.scram_credential``), and the DescribeUserScramCredentials (50) /
AlterUserScramCredentials (51) handlers driven with kio requests through that client.

The cache contract: a credential altered through this client is in force for the very next
lookup whatever ``shoal.wire.scram.refresh.ms`` is; a change that reached the controller by
another path (another node) shows once the cache is older than ``shoal.wire.scram.refresh.ms``
(0 here: every lookup reads through). No test measures time."""

from __future__ import annotations

from datetime import timedelta

import pytest
from kio.schema.alter_user_scram_credentials.v0 import request as alter_v0
from kio.schema.describe_user_scram_credentials.v0 import request as describe_v0
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i32

from actors.controller import messages as M
from actors.controller import scram as sc
from tests.controller.test_actor import start
from tests.wire.gateways import CountingGateway
from tests.scram_helpers import scram_exchange, upsertion
from wire.controller_client import ControllerClient
from wire.protocol import DecodedRequest
from wire.scram import alter_user_scram_credentials, describe_user_scram_credentials

T = timedelta(seconds=10)


class _Backend:
    """The ShoalBackend SCRAM methods, as thin as the real ones: straight to the client."""

    def __init__(self, client: ControllerClient):
        self.alter_user_scram_credentials = client.alter_user_scram_credentials
        self.describe_user_scram_credentials = client.describe_user_scram_credentials
        self.scram_credential = client.scram_credential


def _upsert(name: str, password: str, mechanism: int = 1, iterations: int = 4096, salt: bytes = b"NaCl-and-more") -> sc.ScramUpsertion:
    return upsertion(name, password, mechanism, iterations, salt)


@pytest.fixture
def controller(asys, sqlite_url):
    ctl, _ = start(asys, sqlite_url)
    return asys, ctl


def test_credential_altered_through_this_client_authenticates_at_once(controller):
    asys, ctl = controller
    gw = CountingGateway(asys)
    client = ControllerClient(gw, ctl, {"shoal.wire.scram.refresh.ms": "3600000"})
    assert client.scram_credential("alice", "SCRAM-SHA-256") is None  # loads the (empty) table
    asks = gw.asks
    assert client.scram_credential("alice", "SCRAM-SHA-256") is None and gw.asks == asks  # served from the cache
    res = client.alter_user_scram_credentials([], [_upsert("alice", "first password")])
    assert [(r.user, r.error) for r in res] == [("alice", None)]
    cred = client.scram_credential("alice", "SCRAM-SHA-256")
    assert scram_exchange(cred, "SCRAM-SHA-256", "alice", "first password")
    assert not scram_exchange(cred, "SCRAM-SHA-256", "alice", "second password")
    assert client.scram_credential("alice", "SCRAM-SHA-512") is None
    # a password change through this client: the old password stops working at once
    client.alter_user_scram_credentials([], [_upsert("alice", "second password", salt=b"a-fresh-salt-of-16")])
    cred = client.scram_credential("alice", "SCRAM-SHA-256")
    assert scram_exchange(cred, "SCRAM-SHA-256", "alice", "second password")
    assert not scram_exchange(cred, "SCRAM-SHA-256", "alice", "first password")
    client.alter_user_scram_credentials([sc.ScramDeletion("alice", 1)], [])
    assert client.scram_credential("alice", "SCRAM-SHA-256") is None


def test_change_made_elsewhere_shows_after_the_refresh_interval(controller):
    asys, ctl = controller
    stale = ControllerClient(CountingGateway(asys), ctl, {"shoal.wire.scram.refresh.ms": "3600000"})
    fresh = ControllerClient(CountingGateway(asys), ctl, {"shoal.wire.scram.refresh.ms": "0"})
    assert stale.scram_credential("bob", "SCRAM-SHA-512") is None
    assert fresh.scram_credential("bob", "SCRAM-SHA-512") is None
    # another node's listener alters the credential (straight to the controller)
    r = asys.ask(ctl, M.AlterUserScramCredentialsRequest((), (_upsert("bob", "pw", 2, 8192),)), T)
    assert r.results[0].error is None
    assert stale.scram_credential("bob", "SCRAM-SHA-512") is None  # within its refresh interval
    cred = fresh.scram_credential("bob", "SCRAM-SHA-512")
    assert cred is not None and cred.iterations == 8192 and scram_exchange(cred, "SCRAM-SHA-512", "bob", "pw")
    stale.invalidate_scram_credentials()
    assert stale.scram_credential("bob", "SCRAM-SHA-512") == cred


def test_controller_not_answering_fails_closed(controller):
    asys, ctl = controller

    class Down:
        def ask(self, addr, msg, timeout_s):
            from wire.gateway import ActorTimeout

            raise ActorTimeout("down")

    client = ControllerClient(Down(), ctl, {})
    assert client.scram_credential("alice", "SCRAM-SHA-256") is None
    assert [(r.user, r.error) for r in client.alter_user_scram_credentials([], [_upsert("alice", "pw")])] == [("alice", "COORDINATOR_LOAD_IN_PROGRESS")]
    assert client.describe_user_scram_credentials(None)[0] == "COORDINATOR_LOAD_IN_PROGRESS"


def _req(api_key: int, body) -> DecodedRequest:
    return DecodedRequest(api_key, 0, 7, "test-client", None, body)


def test_handlers_answer_kafka_shapes(controller):
    asys, ctl = controller
    backend = _Backend(ControllerClient(CountingGateway(asys), ctl, {}))
    up = _upsert("carol", "pw", 2, 4096)
    body = alter_v0.AlterUserScramCredentialsRequest(
        deletions=(alter_v0.ScramCredentialDeletion(name="nobody", mechanism=i8(1)),),
        upsertions=(
            alter_v0.ScramCredentialUpsertion(name=up.name, mechanism=i8(2), iterations=i32(4096), salt=up.salt, salted_password=up.salted_password),
            alter_v0.ScramCredentialUpsertion(name="dave", mechanism=i8(5), iterations=i32(4096), salt=b"s", salted_password=b"p"),
        ),
    )
    resp = alter_user_scram_credentials(_req(51, body), backend)
    assert [(r.user, r.error_code, r.error_message) for r in resp.results] == [
        ("carol", ErrorCode.none, None),
        ("nobody", ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist"),
        ("dave", ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"),
    ]
    resp = describe_user_scram_credentials(_req(50, describe_v0.DescribeUserScramCredentialsRequest(users=None)), backend)
    assert resp.error_code == ErrorCode.none
    assert [(r.user, [(int(i.mechanism), int(i.iterations)) for i in r.credential_infos]) for r in resp.results] == [("carol", [(2, 4096)])]
    users = tuple(describe_v0.UserName(name=n) for n in ("carol", "x", "x", "y"))
    resp = describe_user_scram_credentials(_req(50, describe_v0.DescribeUserScramCredentialsRequest(users=users)), backend)
    assert [(r.user, r.error_code) for r in resp.results] == [
        ("carol", ErrorCode.none),
        ("x", ErrorCode.duplicate_resource),
        ("y", ErrorCode.resource_not_found),
    ]
    assert alter_user_scram_credentials(_req(51, alter_v0.AlterUserScramCredentialsRequest(deletions=(), upsertions=())), backend).results == ()
