"""Handlers for the ACL APIs: DescribeAcls (29), CreateAcls (30), DeleteAcls (31).

Each handler takes ``(request, authorizer)`` — a :class:`wire.protocol.DecodedRequest` and the
listener's :class:`wire.authz.Authorizer`, or ``None`` when ``authorizer.class.name`` is empty —
and returns the kio response for the request's version. Semantics of Kafka's ``AclApis``:

* no authorizer: SECURITY_DISABLED ("No Authorizer is configured.") for every creation / filter,
  or for the whole DescribeAcls response;
* the caller needs ALTER on the cluster for CreateAcls/DeleteAcls and DESCRIBE on the cluster for
  DescribeAcls, else CLUSTER_AUTHORIZATION_FAILED (every entry, or the response);
* versions 1-3 are served (Kafka 4 removed v0, KIP-896), so every binding and filter carries a
  pattern type;
* codes outside Kafka's enums decode as UNKNOWN (then INVALID_REQUEST, see
  :mod:`actors.controller.acls`).

One CreateAcls / DeleteAcls request is one controller message; DescribeAcls reads the
authorizer's cache (current for this node's own changes, see :mod:`wire.authz`).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from actors.controller.acls import (
    OPERATION_CODES,
    OPERATIONS,
    PATTERN_TYPE_CODES,
    PATTERN_TYPES,
    PERMISSION_CODES,
    PERMISSIONS,
    RESOURCE_TYPE_CODES,
    RESOURCE_TYPES,
    AclBinding,
    AclBindingFilter,
    CLUSTER_NAME,
    describe,
)
from wire.authz import Authorizer
from wire.entities import NO_THROTTLE, build, error_code, nested, response_class
from wire.protocol import DecodedRequest

__all__ = ["create_acls", "delete_acls", "describe_acls"]

_DISABLED = "No Authorizer is configured."
_CLUSTER_DENIED = "Cluster authorization failed."


def _name(table: dict[int, str], code: Any) -> str:
    return table.get(int(code), "UNKNOWN")


def _filter(req: DecodedRequest, f: Any) -> AclBindingFilter:
    return AclBindingFilter(
        _name(RESOURCE_TYPES, f.resource_type_filter),
        f.resource_name_filter,
        _name(PATTERN_TYPES, f.pattern_type_filter),
        f.principal_filter,
        f.host_filter,
        _name(OPERATIONS, f.operation),
        _name(PERMISSIONS, f.permission_type),
    )


def _cluster_ok(authorizer: Authorizer, operation: str) -> bool:
    return authorizer.check(operation, "CLUSTER", CLUSTER_NAME)


def create_acls(req: DecodedRequest, authorizer: Authorizer | None) -> Any:
    """CreateAcls: one result per creation, in order (NONE, INVALID_REQUEST with Kafka's message,
    CLUSTER_AUTHORIZATION_FAILED, SECURITY_DISABLED)."""
    cls = response_class(30, req.api_version)
    creations = req.body.creations

    def all_failed(error: str, message: str) -> Any:
        return build(cls, throttle_time=NO_THROTTLE, results=tuple(nested(cls, "AclCreationResult", error_code=error_code(error), error_message=message) for _ in creations))

    if authorizer is None:
        return all_failed("SECURITY_DISABLED", _DISABLED)
    if not _cluster_ok(authorizer, "ALTER"):
        return all_failed("CLUSTER_AUTHORIZATION_FAILED", _CLUSTER_DENIED)
    bindings = [
        AclBinding(
            _name(RESOURCE_TYPES, c.resource_type),
            c.resource_name,
            _name(PATTERN_TYPES, c.resource_pattern_type),
            c.principal,
            c.host,
            _name(OPERATIONS, c.operation),
            _name(PERMISSIONS, c.permission_type),
        )
        for c in creations
    ]
    results = authorizer.create_acls(bindings) if bindings else []
    return build(cls, throttle_time=NO_THROTTLE, results=tuple(nested(cls, "AclCreationResult", error_code=error_code(r.error), error_message=r.message) for r in results))


def _binding_fields(b: AclBinding) -> dict[str, Any]:
    return {
        "resource_type": i8(RESOURCE_TYPE_CODES[b.resource_type]),
        "resource_name": b.resource_name,
        "pattern_type": i8(PATTERN_TYPE_CODES[b.pattern_type]),
        "principal": b.principal,
        "host": b.host,
        "operation": i8(OPERATION_CODES[b.operation]),
        "permission_type": i8(PERMISSION_CODES[b.permission]),
    }


def delete_acls(req: DecodedRequest, authorizer: Authorizer | None) -> Any:
    """DeleteAcls: one result per filter with the ACLs it matched (and deleted)."""
    cls = response_class(31, req.api_version)
    filters = req.body.filters

    def all_failed(error: str, message: str) -> Any:
        return build(cls, throttle_time=NO_THROTTLE, filter_results=tuple(nested(cls, "DeleteAclsFilterResult", error_code=error_code(error), error_message=message, matching_acls=()) for _ in filters))

    if authorizer is None:
        return all_failed("SECURITY_DISABLED", _DISABLED)
    if not _cluster_ok(authorizer, "ALTER"):
        return all_failed("CLUSTER_AUTHORIZATION_FAILED", _CLUSTER_DENIED)
    results = authorizer.delete_acls([_filter(req, f) for f in filters]) if filters else []
    out = []
    for r in results:
        matched = tuple(nested(cls, "DeleteAclsMatchingAcl", error_code=ErrorCode.none, error_message=None, **_binding_fields(b)) for b in r.matched)
        out.append(nested(cls, "DeleteAclsFilterResult", error_code=error_code(r.error), error_message=r.message, matching_acls=matched))
    return build(cls, throttle_time=NO_THROTTLE, filter_results=tuple(out))


def describe_acls(req: DecodedRequest, authorizer: Authorizer | None) -> Any:
    """DescribeAcls: the ACLs matching the request's filter, grouped by resource pattern;
    INVALID_REQUEST for a filter with an UNKNOWN element."""
    cls = response_class(29, req.api_version)

    def failed(error: str, message: str) -> Any:
        return build(cls, throttle_time=NO_THROTTLE, error_code=error_code(error), error_message=message, resources=())

    if authorizer is None:
        return failed("SECURITY_DISABLED", "No Authorizer is configured on the broker")
    if not _cluster_ok(authorizer, "DESCRIBE"):
        return failed("CLUSTER_AUTHORIZATION_FAILED", _CLUSTER_DENIED)
    f = _filter(req, req.body)
    if f.is_unknown():
        return failed("INVALID_REQUEST", "DescribeAclsRequest contains UNKNOWN elements")
    acls = authorizer.acls()
    if acls is None:
        return failed("COORDINATOR_LOAD_IN_PROGRESS", "ACLs are not loaded yet")
    resources = []
    for (rtype, rname, ptype), bindings in sorted(describe(acls, f).items()):
        descs = tuple(
            nested(cls, "AclDescription", principal=b.principal, host=b.host, operation=i8(OPERATION_CODES[b.operation]), permission_type=i8(PERMISSION_CODES[b.permission]))
            for b in bindings
        )
        resources.append(nested(cls, "DescribeAclsResource", resource_type=i8(RESOURCE_TYPE_CODES[rtype]), resource_name=rname, pattern_type=i8(PATTERN_TYPE_CODES[ptype]), acls=descs))
    return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, resources=tuple(resources))
