"""ACLs (pure): bindings, filters, an indexed :class:`AclSet`, the authorization rules and the
deciders of CreateAcls / DeleteAcls.

Semantics are Kafka's KRaft ones, read from its source:

* matching a binding against a filter: ``ResourcePatternFilter.matches`` and
  ``AccessControlEntryFilter.matches`` (``clients/.../common/resource``, ``.../common/acl``);
  a filter's pattern type ``MATCH`` matches LITERAL bindings of the same name, the LITERAL
  wildcard ``"*"`` and PREFIXED bindings whose name is a prefix of the filter's name; ``ANY``
  matches any pattern type of exactly that name; a ``None`` name, principal or host matches all;
* authorization: ``StandardAuthorizerData.authorize`` / ``findAclRule`` / ``findResult``:
  super users are allowed everything; an ACL applies when its pattern covers the resource
  (LITERAL same name, LITERAL ``"*"``, PREFIXED prefix), its principal is the caller's or
  ``"User:*"``, its host the caller's or ``"*"``; a DENY that applies for the operation (or ALL)
  wins; an ALLOW for the operation (or ALL) allows, and an ALLOW of READ, WRITE, DELETE or ALTER
  also allows DESCRIBE, an ALLOW of ALTER_CONFIGS also allows DESCRIBE_CONFIGS (DENY implies
  nothing); when no ACL at all exists on a matching pattern (any principal, any operation) the
  answer is ``allow.everyone.if.no.acl.found`` (default false), otherwise denied;
* creation: ``AclControlManager.validateNewAcl`` plus ``AclApis.handleCreateAcls``
  (INVALID_REQUEST for resource type UNKNOWN/ANY, pattern type other than LITERAL/PREFIXED,
  operation UNKNOWN/ANY, permission other than ALLOW/DENY, an empty name, a CLUSTER name other
  than ``kafka-cluster``, a principal without ``type:``); creating an existing ACL succeeds and
  writes nothing;
* deletion: ``AclControlManager.deleteAcls`` / ``validateFilter`` (a filter with an UNKNOWN
  element is INVALID_REQUEST); each filter reports every ACL it matched, an ACL matched by
  several filters is deleted once.

Everything here is plain Python: no clock, no I/O, no actors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

from events.controller import AclBinding, AclsCreated, AclsDeleted

__all__ = [
    "AclBinding",
    "AclBindingFilter",
    "AclCreateResult",
    "AclDeleteResult",
    "AclSet",
    "CLUSTER_NAME",
    "CreateAcls",
    "DeleteAcls",
    "OPERATIONS",
    "PATTERN_TYPES",
    "PERMISSIONS",
    "RESOURCE_TYPES",
    "WILDCARD",
    "WILDCARD_PRINCIPAL",
    "decide_create_acls",
    "decide_delete_acls",
    "describe",
    "evolve",
    "filter_matches",
    "parse_super_users",
    "validate_binding",
]

#: Kafka ``ResourceType`` codes → names (``org.apache.kafka.common.resource.ResourceType``).
RESOURCE_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN", 7: "USER"}
#: Kafka ``PatternType`` codes → names.
PATTERN_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
#: Kafka ``AclOperation`` codes → names.
OPERATIONS = {
    0: "UNKNOWN",
    1: "ANY",
    2: "ALL",
    3: "READ",
    4: "WRITE",
    5: "CREATE",
    6: "DELETE",
    7: "ALTER",
    8: "DESCRIBE",
    9: "CLUSTER_ACTION",
    10: "DESCRIBE_CONFIGS",
    11: "ALTER_CONFIGS",
    12: "IDEMPOTENT_WRITE",
    13: "CREATE_TOKENS",
    14: "DESCRIBE_TOKENS",
    15: "TWO_PHASE_COMMIT",
}
#: Kafka ``AclPermissionType`` codes → names.
PERMISSIONS = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}

#: names → codes (the wire encodes codes)
RESOURCE_TYPE_CODES = {v: k for k, v in RESOURCE_TYPES.items()}
PATTERN_TYPE_CODES = {v: k for k, v in PATTERN_TYPES.items()}
OPERATION_CODES = {v: k for k, v in OPERATIONS.items()}
PERMISSION_CODES = {v: k for k, v in PERMISSIONS.items()}

#: ``ResourcePattern.WILDCARD_RESOURCE`` and ``AclEntry.WILDCARD_HOST``
WILDCARD = "*"
#: ``Acl.WILDCARD_PRINCIPAL_STRING``: an ACL for every principal
WILDCARD_PRINCIPAL = "User:*"
#: ``Resource.CLUSTER_NAME``: the only name of the CLUSTER resource
CLUSTER_NAME = "kafka-cluster"

#: ``StandardAuthorizerData.IMPLIES_DESCRIBE`` / ``IMPLIES_DESCRIBE_CONFIGS`` (ALLOW ACLs only)
_IMPLIES = {"DESCRIBE": frozenset({"DESCRIBE", "READ", "WRITE", "DELETE", "ALTER"}), "DESCRIBE_CONFIGS": frozenset({"DESCRIBE_CONFIGS", "ALTER_CONFIGS"})}


def parse_super_users(value: str | None) -> frozenset[str]:
    """Kafka's ``super.users``: principals separated by semicolons (``"User:admin;User:ops"``),
    blanks ignored. Returns the set of principal strings."""
    return frozenset(p.strip() for p in (value or "").split(";") if p.strip())


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Kafka's ``AclBindingFilter``: ``resource_type`` (ANY matches all), ``resource_name``
    (``None`` matches all), ``pattern_type`` (ANY, MATCH, LITERAL, PREFIXED), ``principal`` and
    ``host`` (``None`` matches all), ``operation`` and ``permission`` (ANY matches all). Any field
    UNKNOWN makes the filter invalid (INVALID_REQUEST)."""

    resource_type: str = "ANY"
    resource_name: str | None = None
    pattern_type: str = "ANY"
    principal: str | None = None
    host: str | None = None
    operation: str = "ANY"
    permission: str = "ANY"

    def is_unknown(self) -> bool:
        """True if any enum is UNKNOWN (``ResourcePatternFilter.isUnknown`` / ``AccessControlEntryFilter.isUnknown``)."""
        return "UNKNOWN" in (self.resource_type, self.pattern_type, self.operation, self.permission)


def pattern_matches(f: AclBindingFilter, b: AclBinding) -> bool:
    """Kafka's ``ResourcePatternFilter.matches``: does filter ``f``'s resource part match ``b``'s pattern?"""
    if f.resource_type != "ANY" and f.resource_type != b.resource_type:
        return False
    if f.pattern_type not in ("ANY", "MATCH") and f.pattern_type != b.pattern_type:
        return False
    if f.resource_name is None:
        return True
    if f.pattern_type == "ANY" or f.pattern_type == b.pattern_type:
        return f.resource_name == b.resource_name
    if b.pattern_type == "LITERAL":
        return f.resource_name == b.resource_name or b.resource_name == WILDCARD
    if b.pattern_type == "PREFIXED":
        return f.resource_name.startswith(b.resource_name)
    return False


def entry_matches(f: AclBindingFilter, b: AclBinding) -> bool:
    """Kafka's ``AccessControlEntryFilter.matches``: principal, host (``None`` = any), operation and
    permission (ANY = any) compared as given (``"User:*"`` in a filter is the literal wildcard ACL only)."""
    return (
        (f.principal is None or f.principal == b.principal)
        and (f.host is None or f.host == b.host)
        and (f.operation == "ANY" or f.operation == b.operation)
        and (f.permission == "ANY" or f.permission == b.permission)
    )


def filter_matches(f: AclBindingFilter, b: AclBinding) -> bool:
    """Kafka's ``AclBindingFilter.matches``: both the pattern and the entry part match."""
    return pattern_matches(f, b) and entry_matches(f, b)


def validate_binding(b: AclBinding) -> str | None:
    """``None`` if ``b`` may be created, else the INVALID_REQUEST message (Kafka's
    ``AclApis.handleCreateAcls`` checks, then ``AclControlManager.validateNewAcl``, in that order)."""
    if b.resource_type == "CLUSTER" and b.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not b.resource_name:
        return "Invalid empty resource name"
    if b.resource_type in ("UNKNOWN", "ANY") or b.resource_type not in RESOURCE_TYPE_CODES:
        return f"Invalid resourceType {b.resource_type}"
    if b.pattern_type not in ("LITERAL", "PREFIXED"):
        return f"Invalid patternType {b.pattern_type}"
    if b.operation in ("UNKNOWN", "ANY") or b.operation not in OPERATION_CODES:
        return f"Invalid operation {b.operation}"
    if b.permission not in ("ALLOW", "DENY"):
        return f"Invalid permissionType {b.permission}"
    if ":" not in b.principal:
        return f"Could not parse principal from `{b.principal}` (no colon is present separating the principal type from the principal name)"
    return None


class AclSet:
    """The current ACLs, indexed for :meth:`authorize`: per resource type, LITERAL bindings by
    name (the wildcard ``"*"`` among them) and PREFIXED bindings by prefix, with the set of
    prefix lengths present so that a lookup costs one dict probe per distinct prefix length.
    Mutated only by :func:`evolve` (events); ``len`` counts ACLs; iteration is in sorted order.
    :meth:`matching_resource` memoizes its answer per resource (at most :data:`MEMO_SIZE`
    resources; cleared by every change), so a listener asking about the same topics and groups
    again pays one dict probe. ``changes`` counts the effective adds and removes since this
    object was made (not evented state: the controller names its ACL set by it)."""

    __slots__ = ("_all", "_literal", "_prefixed", "_prefix_lengths", "_memo", "changes")

    #: resources whose matching ACLs are memoized at a time (the memo is cleared when full)
    MEMO_SIZE = 10_000

    def __init__(self, acls: Iterable[AclBinding] = ()) -> None:
        self._all: set[AclBinding] = set()
        self._literal: dict[tuple[str, str], list[AclBinding]] = {}
        self._prefixed: dict[tuple[str, str], list[AclBinding]] = {}
        self._prefix_lengths: dict[str, dict[int, int]] = {}
        self._memo: dict[tuple[str, str], tuple[AclBinding, ...]] = {}
        self.changes = 0
        for b in acls:
            self.add(b)

    def __len__(self) -> int:
        return len(self._all)

    def __contains__(self, b: object) -> bool:
        return b in self._all

    def __iter__(self) -> Iterator[AclBinding]:
        return iter(sorted(self._all))

    def add(self, b: AclBinding) -> bool:
        """Add ``b``; returns False if it was already present."""
        if b in self._all:
            return False
        self._memo.clear()
        self.changes += 1
        self._all.add(b)
        key = (b.resource_type, b.resource_name)
        if b.pattern_type == "PREFIXED":
            self._prefixed.setdefault(key, []).append(b)
            lengths = self._prefix_lengths.setdefault(b.resource_type, {})
            lengths[len(b.resource_name)] = lengths.get(len(b.resource_name), 0) + 1
        else:
            self._literal.setdefault(key, []).append(b)
        return True

    def remove(self, b: AclBinding) -> bool:
        """Remove ``b``; returns False if it was absent."""
        if b not in self._all:
            return False
        self._memo.clear()
        self.changes += 1
        self._all.discard(b)
        key = (b.resource_type, b.resource_name)
        index = self._prefixed if b.pattern_type == "PREFIXED" else self._literal
        lst = index[key]
        lst.remove(b)
        if not lst:
            del index[key]
        if b.pattern_type == "PREFIXED":
            lengths = self._prefix_lengths[b.resource_type]
            n = len(b.resource_name)
            lengths[n] -= 1
            if not lengths[n]:
                del lengths[n]
        return True

    def matching_resource(self, resource_type: str, name: str) -> tuple[AclBinding, ...]:
        """Every ACL whose pattern covers resource ``(resource_type, name)``: LITERAL ``name``,
        LITERAL ``"*"``, PREFIXED prefixes of ``name`` (the set ``findAclRule`` scans)."""
        key = (resource_type, name)
        found = self._memo.get(key)
        if found is None:
            found = tuple(self._scan(resource_type, name))
            if len(self._memo) >= self.MEMO_SIZE:
                self._memo.clear()
            self._memo[key] = found
        return found

    def _scan(self, resource_type: str, name: str) -> list[AclBinding]:
        out = list(self._literal.get((resource_type, name), ()))
        if name != WILDCARD:
            out.extend(self._literal.get((resource_type, WILDCARD), ()))
        for n in self._prefix_lengths.get(resource_type, {}):
            if n <= len(name):
                out.extend(self._prefixed.get((resource_type, name[:n]), ()))
        return out

    def authorize(
        self,
        principal: str,
        host: str,
        operation: str,
        resource_type: str,
        name: str,
        super_users: frozenset[str] = frozenset(),
        allow_if_no_acl: bool = False,
    ) -> bool:
        """May ``principal`` (``"User:alice"``) from ``host`` (IP address text) do ``operation``
        on ``(resource_type, name)``? Kafka's ``StandardAuthorizerData.authorize`` (rules in the
        module docstring). ``super_users``: ``super.users``; ``allow_if_no_acl``:
        ``allow.everyone.if.no.acl.found``."""
        if principal in super_users:
            return True
        has_acls = False
        allowed = False
        for acl in self.matching_resource(resource_type, name):
            has_acls = True
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.host != WILDCARD and acl.host != host:
                continue
            if acl.operation != "ALL":
                if acl.permission == "ALLOW":
                    implied = _IMPLIES.get(operation)
                    if implied is not None:
                        if acl.operation not in implied:
                            continue
                    elif acl.operation != operation:
                        continue
                elif acl.operation != operation:
                    continue
            if acl.permission == "DENY":
                return False
            allowed = True
        if allowed:
            return True
        return allow_if_no_acl and not has_acls

    def authorize_by_resource_type(
        self,
        principal: str,
        host: str,
        operation: str,
        resource_type: str,
        super_users: frozenset[str] = frozenset(),
        allow_if_no_acl: bool = False,
    ) -> bool:
        """May ``principal`` from ``host`` do ``operation`` on at least one resource of
        ``resource_type``? Kafka's default ``Authorizer.authorizeByResourceType`` (KIP-679; the
        ``StandardAuthorizer`` does not override it), used by InitProducerId (WRITE on any topic):

        1. allowed if :meth:`authorize` allows the LITERAL resource named ``"hardcode"`` (so super
           users are allowed, and with ``allow_if_no_acl`` so is everyone when no ACL covers that
           name — an ACL on another resource of the type does not count);
        2. else, over the ACLs of the type whose principal is the caller's or ``"User:*"``, host
           the caller's or ``"*"`` and operation ``operation`` or ALL (no implied operations): a
           DENY on the LITERAL wildcard denies; an ALLOW on the LITERAL wildcard allows; else
           allowed if some ALLOW pattern is not dominated by a DENY — a LITERAL allow by a LITERAL
           deny of the same name, any allow by a PREFIXED deny whose name is a prefix of the allow's
           name; else denied."""
        if self.authorize(principal, host, operation, resource_type, "hardcode", super_users, allow_if_no_acl):
            return True
        deny: dict[str, set[str]] = {"LITERAL": set(), "PREFIXED": set()}
        allow: dict[str, set[str]] = {"LITERAL": set(), "PREFIXED": set()}
        wildcard_allow = False
        for b in self._all:
            if b.resource_type != resource_type:
                continue
            if b.host != host and b.host != WILDCARD:
                continue
            if b.principal != principal and b.principal != WILDCARD_PRINCIPAL:
                continue
            if b.operation != operation and b.operation != "ALL":
                continue
            if b.pattern_type not in deny:
                continue
            if b.permission == "DENY":
                if b.pattern_type == "LITERAL" and b.resource_name == WILDCARD:
                    return False
                deny[b.pattern_type].add(b.resource_name)
            elif b.permission == "ALLOW":
                if b.pattern_type == "LITERAL" and b.resource_name == WILDCARD:
                    wildcard_allow = True
                else:
                    allow[b.pattern_type].add(b.resource_name)
        if wildcard_allow:
            return True
        for ptype, names in allow.items():
            for name in names:
                if ptype == "LITERAL" and name in deny["LITERAL"]:
                    continue
                if not any(name[:i] in deny["PREFIXED"] for i in range(1, len(name) + 1)):
                    return True
        return False

    def matching(self, f: AclBindingFilter) -> list[AclBinding]:
        """Every ACL matching filter ``f`` (:func:`filter_matches`), sorted."""
        return sorted(b for b in self._all if filter_matches(f, b))

    def to_list(self) -> list[dict[str, str]]:
        """The ACLs as JSON-able dicts, sorted (snapshots)."""
        return [
            {
                "resource_type": b.resource_type,
                "resource_name": b.resource_name,
                "pattern_type": b.pattern_type,
                "principal": b.principal,
                "host": b.host,
                "operation": b.operation,
                "permission": b.permission,
            }
            for b in self
        ]

    @classmethod
    def from_list(cls, rows: Iterable[dict[str, str]]) -> "AclSet":
        """Inverse of :meth:`to_list`."""
        return cls(AclBinding(**r) for r in rows)


# --- commands and deciders ----------------------------------------------------------------------


@dataclass(frozen=True)
class CreateAcls:
    """CreateAcls: ``creations`` in request order (enums by name; an unknown code arrives as
    ``"UNKNOWN"``)."""

    creations: tuple[AclBinding, ...]


@dataclass(frozen=True)
class DeleteAcls:
    """DeleteAcls: ``filters`` in request order."""

    filters: tuple[AclBindingFilter, ...]


@dataclass(frozen=True)
class AclCreateResult:
    """One creation's outcome: ``error`` a Kafka error name (``None`` = success) and ``message``."""

    error: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class AclDeleteResult:
    """One filter's outcome: ``error``/``message`` for the filter, else the ``matched`` ACLs
    (sorted) that were deleted."""

    error: str | None = None
    message: str | None = None
    matched: tuple[AclBinding, ...] = ()


def decide_create_acls(acls: AclSet, cmd: CreateAcls) -> tuple[list[AclsCreated], list[AclCreateResult]]:
    """Decide CreateAcls against ``acls``: per creation, INVALID_REQUEST with Kafka's message
    (:func:`validate_binding`) or success. Returns ``([AclsCreated(new ACLs)] or [], results in
    request order)``; ACLs that already exist, or appear twice, are created once."""
    results: list[AclCreateResult] = []
    new: dict[AclBinding, None] = {}
    for b in cmd.creations:
        msg = validate_binding(b)
        if msg is not None:
            results.append(AclCreateResult("INVALID_REQUEST", msg))
            continue
        if b not in acls:
            new[b] = None
        results.append(AclCreateResult())
    return ([AclsCreated(tuple(new))] if new else []), results


def decide_delete_acls(acls: AclSet, cmd: DeleteAcls) -> tuple[list[AclsDeleted], list[AclDeleteResult]]:
    """Decide DeleteAcls: per filter, INVALID_REQUEST ("Unknown patternFilter." / "Unknown
    entryFilter.") or the ACLs it matches. Returns ``([AclsDeleted(all matched, sorted)] or [],
    results in request order)``. An ACL matched by several filters is listed under each of them
    and deleted once: Kafka's KRaft ``AclControlManager.deleteAcls`` runs every filter over the
    same ACLs (``deleteAclsForFilter``) and collects the removal records in a set."""
    results: list[AclDeleteResult] = []
    gone: set[AclBinding] = set()
    for f in cmd.filters:
        if "UNKNOWN" in (f.resource_type, f.pattern_type):
            results.append(AclDeleteResult("INVALID_REQUEST", "Unknown patternFilter."))
            continue
        if "UNKNOWN" in (f.operation, f.permission):
            results.append(AclDeleteResult("INVALID_REQUEST", "Unknown entryFilter."))
            continue
        matched = tuple(acls.matching(f))
        gone.update(matched)
        results.append(AclDeleteResult(None, None, matched))
    return ([AclsDeleted(tuple(sorted(gone)))] if gone else []), results


def evolve(acls: AclSet, event: AclsCreated | AclsDeleted) -> AclSet:
    """Apply an ACL event to ``acls`` in place and return it."""
    if isinstance(event, AclsCreated):
        for b in event.acls:
            acls.add(b)
    elif isinstance(event, AclsDeleted):
        for b in event.acls:
            acls.remove(b)
    return acls


def describe(acls: AclSet, f: AclBindingFilter) -> dict[tuple[str, str, str], list[AclBinding]]:
    """DescribeAcls: the ACLs matching ``f`` grouped by resource pattern ``(resource_type,
    resource_name, pattern_type)`` (Kafka's ``DescribeAclsResponse.aclsResources``), sorted."""
    out: dict[tuple[str, str, str], list[AclBinding]] = {}
    for b in acls.matching(f):
        out.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(b)
    return out

