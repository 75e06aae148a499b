"""Share requests on a cluster: ShareFetch (78) and ShareAcknowledge (79) — and the group config
requests, DescribeConfigs (32) and IncrementalAlterConfigs (44) on GROUP resources — forwarded
to the group's coordinator in Kafka's Envelope (API 58, KIP-590).

A share consumer sends ShareFetch and ShareAcknowledge for a partition to that partition's
leader (KIP-932). In Kafka the leader holds the share-partition (``SharePartitionManager``) and
persists its state through the share coordinator. In Shoal a share group's state is one event
stream folded by one ``ShareGroupActor``, which runs on the group's coordinator node
(:func:`wire.cluster_view.coordinator_node`). So a node that gets a share request for a group
it does not coordinate forwards it, as it came from the client (header, body), inside an
``EnvelopeRequest`` (``request_data``; ``request_principal``: the client's principal as
``User:<name>`` UTF-8; ``client_host_address``: the client's IPv4/IPv6 address bytes) to the
coordinator, over a pooled :class:`wire.cluster.BrokerChannel` (:class:`wire.cluster.ChannelPool`), and returns the inner response
(``EnvelopeResponse.response_data``) to the client unchanged. The coordinator runs the inner
request with the client's principal (ACLs are checked there) and keys the client's share session
by the member *and* the forwarding node (a client keeps one session per broker,
:mod:`actors.share.sessions`); it acquires from its own replica of each partition, up to that
replica's high watermark, or — keeping none — from the partition's leader with Fetch
(:meth:`wire.logs.LogRegistry.share_read`, :mod:`wire.leader_reads`).

Deviations from Kafka: Envelope is a broker→controller request there (KIP-590); here it also
carries share requests broker→coordinator. Its principal is ``User:<name>`` text, not Kafka's
serialized ``KafkaPrincipal``. The forwarding node's id travels in the Envelope's header
``client_id`` (``shoal-forward-<node id>``). A coordinator without a replica of the partition reads
it over the network from its leader (:mod:`wire.leader_reads`), where Kafka's share-partition
leader reads its own log.

Only nodes of a cluster serve Envelope; with an authorizer on it needs CLUSTER_ACTION on the
cluster, as Kafka's ``ControllerApis.handleEnvelopeRequest`` requires.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Any, Callable

from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.schema.envelope.v0.response import EnvelopeResponse
from kio.schema.errors import ErrorCode

from actors.controller.acls import CLUSTER_NAME
from wire.authz import allowed
from wire.cluster import ChannelPool, RpcError
from wire.entities import error_code
from wire.protocol import DecodedRequest, UnsupportedRequest, FrameError, decode_request, encode_request, encode_response, frame, request_header
from wire.quotas import parked

__all__ = ["ENVELOPE_VERSION", "FORWARDED_APIS", "ForwardedConnection", "ShareForwarder", "serve_envelope"]

log = logging.getLogger("shoal.wire.forwarding")

ENVELOPE_VERSION = 0
#: the APIs a node forwards to a group's coordinator: ShareFetch, ShareAcknowledge, and
#: DescribeConfigs / IncrementalAlterConfigs naming only GROUP resources of one group (group
#: configs live with the group's actor; Kafka sends them to its controller)
FORWARDED_APIS = frozenset({78, 79, 32, 44})
_CONFIG_APIS = frozenset({32, 44})
_GROUP_RESOURCE = 32  # Kafka's ConfigResource.Type.GROUP
_CLIENT_ID_PREFIX = "shoal-forward-"


class ForwardedConnection:
    """The client's side of a forwarded request, as the coordinator's handlers see it (Kafka's
    ``RequestContext`` rebuilt from the envelope): ``principal``, ``peer`` (client host, 0),
    ``listener`` and ``security_protocol`` of the envelope's connection, and ``forwarded_by``
    (the forwarding node's id; the share handlers key the client's session by it)."""

    def __init__(self, principal: str, peer: tuple[str, int], listener: Any, security_protocol: Any, forwarded_by: int) -> None:
        self.principal = principal
        self.peer = peer
        self.listener = listener
        self.security_protocol = security_protocol
        self.forwarded_by = forwarded_by
        self.data: dict = {}
        self.requests = 0


def _group_of(request: DecodedRequest) -> str | None:
    """The group a forwardable request is about; ``None`` when it is not about exactly one group
    (a config request naming other resource types, or several groups)."""
    if request.api_key in _CONFIG_APIS:
        resources = tuple(getattr(request.body, "resources", ()) or ())
        names = {str(r.resource_name) for r in resources if int(r.resource_type) == _GROUP_RESOURCE}
        if len(names) != 1 or any(int(r.resource_type) != _GROUP_RESOURCE for r in resources):
            return None
        return names.pop()
    return str(getattr(request.body, "group_id", "") or "")


def _host_bytes(peer: Any) -> bytes:
    try:
        return ipaddress.ip_address(peer[0]).packed
    except (ValueError, TypeError, IndexError):
        return b""


def _host_text(raw: bytes | None) -> str:
    try:
        return str(ipaddress.ip_address(bytes(raw or b"")))
    except ValueError:
        return ""


class ShareForwarder:
    """The forwarding side. ``node_id``: this node; ``coordinator(group)`` the coordinating node's
    id (-1 when no node is live); ``endpoint(node)`` its inter-broker ``(host, port)`` or
    ``None``; ``timeout_ms``: how long a forwarded request may take beyond its own ``MaxWaitMs``.
    Channels to each node are pooled (one request in flight per channel; a long-polling ShareFetch
    holds its channel, so the pool grows to the number of forwarded requests in flight)."""

    def __init__(self, node_id: int, coordinator: Callable[[str], int], endpoint: Callable[[int], tuple[str, int] | None],
                 timeout_ms: int = 30_000) -> None:
        self.node_id = node_id
        self._coordinator = coordinator
        self._endpoint = endpoint
        self.timeout_ms = timeout_ms
        self.pool = ChannelPool(f"{_CLIENT_ID_PREFIX}{node_id}", timeout_ms)

    def target(self, request: DecodedRequest) -> int | None:
        """The node to forward ``request`` to, or ``None`` to serve it here (not a share request,
        this node coordinates its group, or no coordinator is known)."""
        if request.api_key not in FORWARDED_APIS:
            return None
        group = _group_of(request)
        if group is None:
            return None
        node = self._coordinator(group)
        return node if node >= 0 and node != self.node_id else None

    def forward(self, request: DecodedRequest, conn: Any, node: int) -> bytes | None:
        """Send ``request`` to ``node`` in an Envelope and return the inner response frame for the
        client, or ``None`` when the node cannot be reached or refuses the envelope (the caller
        answers the request itself then: NOT_COORDINATOR). Blocks for as long as the forwarded
        long poll (``MaxWaitMs``) plus the round trip; holds no ``queued.max.requests`` slot
        meanwhile (:func:`wire.quotas.parked`)."""
        ep = self._endpoint(node)
        if ep is None:
            return None
        inner = encode_request(request_header(request.api_key, request.api_version, request.correlation_id, request.client_id), request.body)[4:]
        env = EnvelopeRequest(request_data=inner, request_principal=str(getattr(conn, "principal", "") or "").encode(),
                              client_host_address=_host_bytes(getattr(conn, "peer", None)))
        max_wait = getattr(request.body, "max_wait", None)  # ShareFetch's MaxWaitMs (a timedelta)
        wait_ms = int(max_wait.total_seconds() * 1000) if max_wait is not None else 0
        try:
            with parked():
                resp = self.pool.ask(ep, 58, ENVELOPE_VERSION, env, timeout_ms=self.timeout_ms + max(0, wait_ms))
        except RpcError as exc:
            log.info("forwarding %s of group %s to node %d failed: %s", request.api_key, _group_of(request), node, exc)
            return None
        if not isinstance(resp, EnvelopeResponse) or int(resp.error_code.value) or resp.response_data is None:
            log.info("node %d refused a forwarded request: %s", node, getattr(resp, "error_code", resp))
            return None
        return frame(bytes(resp.response_data))

    def close(self) -> None:
        """Close the pooled channels."""
        self.pool.close()


def serve_envelope(req: DecodedRequest, conn: Any, supported: dict[int, tuple[int, int]], handle: Callable[[DecodedRequest, Any], Any],
                   authorizer: Any = None) -> EnvelopeResponse:
    """The coordinator's side: Envelope (API 58) → the inner share request run by ``handle`` (the
    dispatcher) with a :class:`ForwardedConnection`; its response, encoded, in
    ``response_data``. Errors (no inner response): CLUSTER_AUTHORIZATION_FAILED without
    CLUSTER_ACTION; INVALID_REQUEST for an inner request that does not decode, is not a share
    request (or group config request), or comes without a forwarding node id; UNSUPPORTED_VERSION for an inner version this
    node does not serve."""
    body = req.body
    if authorizer is not None and not allowed(authorizer, "CLUSTER_ACTION", "CLUSTER", CLUSTER_NAME):
        return EnvelopeResponse(response_data=None, error_code=error_code("CLUSTER_AUTHORIZATION_FAILED"))
    client_id = str(req.client_id or "")
    try:
        via = int(client_id[len(_CLIENT_ID_PREFIX):]) if client_id.startswith(_CLIENT_ID_PREFIX) else -1
    except ValueError:
        via = -1
    try:
        inner = decode_request(bytes(body.request_data), supported)
    except UnsupportedRequest:
        return EnvelopeResponse(response_data=None, error_code=ErrorCode.unsupported_version)
    except FrameError:
        return EnvelopeResponse(response_data=None, error_code=ErrorCode.invalid_request)
    if inner.api_key not in FORWARDED_APIS or via < 0:
        return EnvelopeResponse(response_data=None, error_code=ErrorCode.invalid_request)
    principal = bytes(body.request_principal or b"").decode("utf-8", "replace") or getattr(conn, "principal", "User:ANONYMOUS")
    fconn = ForwardedConnection(principal, (_host_text(body.client_host_address), 0), getattr(conn, "listener", None),
                                getattr(conn, "security_protocol", None), via)
    out = handle(inner, fconn)
    data = out if isinstance(out, (bytes, bytearray)) else encode_response(inner.correlation_id, out)
    return EnvelopeResponse(response_data=bytes(data[4:]), error_code=ErrorCode.none)
