"""SCRAM credentials (KIP-554), pure: the credential type, the key derivation, the decider of
AlterUserScramCredentials, the describe query and the fold of the credential events.

Semantics from Apache Kafka (read from its source):

* ``org.apache.kafka.controller.ScramControlManager.alterCredentials``: one result per user; a
  user named twice in one request (deletion or upsertion) gets DUPLICATE_RESOURCE and none of
  its alterations applies; an empty user name is UNACCEPTABLE_CREDENTIAL; a mechanism type other
  than 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512) is UNSUPPORTED_SASL_MECHANISM; iterations outside
  ``[4096, 16384]`` (``ScramMechanism.minIterations``, ``ScramControlManager.MAX_ITERATIONS``)
  are UNACCEPTABLE_CREDENTIAL ("Too few iterations" / "Too many iterations"); deleting a
  credential that does not exist is RESOURCE_NOT_FOUND. Results list the accepted deletions,
  then the accepted upsertions, then the errors (Kafka uses hash maps there; we keep request
  order inside each group so results are deterministic).
* ``ScramControlManager.finishUpsertion`` / ``ScramFormatter``: the client sends ``salt`` and
  ``salted_password`` (``Hi(password, salt, iterations)``, RFC 5802); the controller stores
  ``stored_key = H(HMAC(salted_password, "Client Key"))`` and
  ``server_key = HMAC(salted_password, "Server Key")`` (:func:`derive_keys`, the one home of the
  derivation) and never the salted password (``UserScramCredentialRecord``). An empty salted
  password makes Java's HMAC key spec throw ``IllegalArgumentException("Empty key")``, which
  ``ApiError.fromThrowable`` answers as UNKNOWN_SERVER_ERROR: kept as is.
* ``org.apache.kafka.image.ScramImage.describe``: null or empty ``users`` describes every user
  with a credential; a user named twice gets DUPLICATE_RESOURCE, an unknown one
  RESOURCE_NOT_FOUND; a result carries each mechanism's type and iteration count only.

Events: :class:`events.controller.UserScramCredentialSet` and
:class:`events.controller.UserScramCredentialRemoved`; :func:`evolve` folds them into a
:class:`ScramState`, which the :class:`actors.controller.state.ControllerState` holds and
snapshots (salt and keys as base64, never a password).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from events.controller import UserScramCredentialRemoved, UserScramCredentialSet

__all__ = [
    "AlterUserScramCredentials",
    "AlterResult",
    "CredentialInfo",
    "DescribeResult",
    "MAX_ITERATIONS",
    "MECHANISMS",
    "MECHANISM_TYPES",
    "MIN_ITERATIONS",
    "ScramCredential",
    "ScramDeletion",
    "ScramState",
    "ScramUpsertion",
    "decide_alter",
    "derive_keys",
    "describe",
    "evolve",
]

#: Kafka's mechanism type ids (``org.apache.kafka.clients.admin.ScramMechanism``; 0 is UNKNOWN)
#: → mechanism names as SASL uses them.
MECHANISMS: dict[int, str] = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
#: mechanism name → type id.
MECHANISM_TYPES: dict[str, int] = {v: k for k, v in MECHANISMS.items()}
#: ``ScramMechanism.minIterations`` (both mechanisms).
MIN_ITERATIONS = 4096
#: ``ScramControlManager.MAX_ITERATIONS``.
MAX_ITERATIONS = 16384

_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
_DUPLICATE = "A user credential cannot be altered twice in the same request"
_DESCRIBE_DUPLICATE = "Cannot describe SCRAM credentials for the same user twice in a single request: "
_DESCRIBE_MISSING = "Attempt to describe a user credential that does not exist: "


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """A stored SCRAM credential (RFC 5802 §3; Kafka ``ScramCredential``): ``salt``,
    ``stored_key`` = H(ClientKey), ``server_key`` = HMAC(SaltedPassword, "Server Key") and the
    PBKDF2 ``iterations``. What a SASL SCRAM server needs to check a client's proof; the password
    cannot be recovered from it. ``repr`` hides the bytes (as Kafka's ``toString`` does)."""

    salt: bytes = field(repr=False)
    stored_key: bytes = field(repr=False)
    server_key: bytes = field(repr=False)
    iterations: int


def derive_keys(mechanism: str, salted_password: bytes) -> tuple[bytes, bytes]:
    """``(stored_key, server_key)`` of ``salted_password`` for ``mechanism`` ("SCRAM-SHA-256" or
    "SCRAM-SHA-512"): ``stored_key = H(HMAC(salted_password, "Client Key"))``,
    ``server_key = HMAC(salted_password, "Server Key")`` (RFC 5802 §3, Kafka
    ``ScramFormatter.storedKey/clientKey/serverKey``). Raises ``KeyError`` for another mechanism."""
    name = _HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", name).digest()
    stored_key = hashlib.new(name, client_key).digest()
    server_key = hmac.new(salted_password, b"Server Key", name).digest()
    return stored_key, server_key


# --- commands and results ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScramUpsertion:
    """Create or replace ``name``'s credential for ``mechanism`` (Kafka's type id: 1 SHA-256,
    2 SHA-512) from the client's ``salt`` and ``salted_password`` with ``iterations``
    (``AlterUserScramCredentialsRequest.ScramCredentialUpsertion``). The salted password is left
    out of ``repr`` so a logged command never shows it."""

    name: str
    mechanism: int
    iterations: int
    salt: bytes = field(repr=False)
    salted_password: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class ScramDeletion:
    """Delete ``name``'s credential for ``mechanism`` (type id)."""

    name: str
    mechanism: int


@dataclass(frozen=True, slots=True)
class AlterUserScramCredentials:
    """AlterUserScramCredentials (API 51): ``deletions`` and ``upsertions`` in request order."""

    deletions: tuple[ScramDeletion, ...] = ()
    upsertions: tuple[ScramUpsertion, ...] = ()


@dataclass(frozen=True, slots=True)
class AlterResult:
    """One user's outcome: ``error`` a Kafka error name or ``None``, with ``message``."""

    user: str
    error: str | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class CredentialInfo:
    """A described credential: ``mechanism`` type id and ``iterations`` (nothing secret)."""

    mechanism: int
    iterations: int


@dataclass(frozen=True, slots=True)
class DescribeResult:
    """One user's DescribeUserScramCredentials result: ``error``/``message`` or its ``infos``
    (ordered by mechanism type)."""

    user: str
    error: str | None = None
    message: str | None = None
    infos: tuple[CredentialInfo, ...] = ()


# --- state -----------------------------------------------------------------------------------------


class ScramState:
    """The credentials folded from the controller stream: ``credentials[(user, mechanism name)]``."""

    def __init__(self) -> None:
        self.credentials: dict[tuple[str, str], ScramCredential] = {}

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        """``user``'s credential for ``mechanism`` (a name, e.g. "SCRAM-SHA-512"), or ``None``."""
        return self.credentials.get((user, mechanism))

    def to_dict(self) -> list[dict[str, Any]]:
        """Snapshot form: one entry per credential, sorted by (user, mechanism); bytes as
        base64 text. Salt and keys are not passwords and cannot log a client in, but they allow
        an offline dictionary attack on a weak password: snapshots need the event log's protection."""
        return [
            {
                "user": u,
                "mechanism": m,
                "salt": base64.b64encode(c.salt).decode(),
                "stored_key": base64.b64encode(c.stored_key).decode(),
                "server_key": base64.b64encode(c.server_key).decode(),
                "iterations": c.iterations,
            }
            for (u, m), c in sorted(self.credentials.items())
        ]

    @classmethod
    def from_dict(cls, entries: Iterable[Mapping[str, Any]] | None) -> "ScramState":
        """Inverse of :meth:`to_dict` (``None``: a snapshot written before SCRAM, no credentials)."""
        st = cls()
        for e in entries or ():
            st.credentials[(e["user"], e["mechanism"])] = ScramCredential(
                base64.b64decode(e["salt"]), base64.b64decode(e["stored_key"]), base64.b64decode(e["server_key"]), int(e["iterations"])
            )
        return st


# --- decider ---------------------------------------------------------------------------------------


def _check_name_and_mechanism(name: str, mechanism: int) -> AlterResult | None:
    if not name:
        return AlterResult(name, "UNACCEPTABLE_CREDENTIAL", "Username must not be empty")
    if mechanism not in MECHANISMS:
        return AlterResult(name, "UNSUPPORTED_SASL_MECHANISM", "Unknown SCRAM mechanism")
    return None


def decide_alter(state: ScramState, cmd: AlterUserScramCredentials) -> tuple[list[Any], list[AlterResult]]:
    """Decide AlterUserScramCredentials on ``state`` (never mutated).

    Returns ``(events, results)``: a :class:`UserScramCredentialRemoved` per accepted deletion and
    a :class:`UserScramCredentialSet` (keys derived with :func:`derive_keys`, the salted password
    dropped) per accepted upsertion, to be appended atomically; and one :class:`AlterResult` per
    user — accepted deletions, accepted upsertions, then errors (DUPLICATE_RESOURCE,
    UNACCEPTABLE_CREDENTIAL, UNSUPPORTED_SASL_MECHANISM, RESOURCE_NOT_FOUND,
    UNKNOWN_SERVER_ERROR for an empty salted password). Kafka ``ScramControlManager.alterCredentials``."""
    deletions: dict[str, ScramDeletion] = {}
    upserts: dict[str, ScramUpsertion] = {}
    errors: dict[str, AlterResult] = {}
    for d in cmd.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = AlterResult(d.name, "DUPLICATE_RESOURCE", _DUPLICATE)
            continue
        bad = _check_name_and_mechanism(d.name, d.mechanism)
        if bad is None and (d.name, MECHANISMS[d.mechanism]) not in state.credentials:
            bad = AlterResult(d.name, "RESOURCE_NOT_FOUND", "Attempt to delete a user credential that does not exist")
        if bad is not None:
            errors[d.name] = bad
        else:
            deletions[d.name] = d
    for u in cmd.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upserts.pop(u.name, None) is not None:
            errors[u.name] = AlterResult(u.name, "DUPLICATE_RESOURCE", _DUPLICATE)
            continue
        bad = _check_name_and_mechanism(u.name, u.mechanism)
        if bad is None and u.iterations < MIN_ITERATIONS:
            bad = AlterResult(u.name, "UNACCEPTABLE_CREDENTIAL", "Too few iterations")
        elif bad is None and u.iterations > MAX_ITERATIONS:
            bad = AlterResult(u.name, "UNACCEPTABLE_CREDENTIAL", "Too many iterations")
        if bad is not None:
            errors[u.name] = bad
        else:
            upserts[u.name] = u
    events: list[Any] = []
    results: list[AlterResult] = []
    for d in deletions.values():
        events.append(UserScramCredentialRemoved(d.name, MECHANISMS[d.mechanism]))
        results.append(AlterResult(d.name))
    for u in upserts.values():
        if not u.salted_password:  # Java: new SecretKeySpec(empty) throws "Empty key"
            errors[u.name] = AlterResult(u.name, "UNKNOWN_SERVER_ERROR", "Empty key")
            continue
        mech = MECHANISMS[u.mechanism]
        stored_key, server_key = derive_keys(mech, u.salted_password)
        events.append(UserScramCredentialSet(u.name, mech, bytes(u.salt), stored_key, server_key, int(u.iterations)))
        results.append(AlterResult(u.name))
    results.extend(errors.values())
    return events, results


def describe(state: ScramState, users: Sequence[str] | None) -> list[DescribeResult]:
    """DescribeUserScramCredentials (API 50) on ``state``: ``users`` ``None`` or empty → every
    user with a credential (sorted by name); else one result per distinct name in request order,
    DUPLICATE_RESOURCE for a name given twice, RESOURCE_NOT_FOUND for a user without any
    credential. Kafka ``ScramImage.describe``."""
    by_user: dict[str, list[CredentialInfo]] = {}
    for (u, m), c in sorted(state.credentials.items(), key=lambda kv: (kv[0][0], MECHANISM_TYPES[kv[0][1]])):
        by_user.setdefault(u, []).append(CredentialInfo(MECHANISM_TYPES[m], c.iterations))
    if not users:
        return [DescribeResult(u, infos=tuple(infos)) for u, infos in by_user.items()]
    seen: dict[str, bool] = {}
    for u in users:
        seen[u] = u in seen
    out: list[DescribeResult] = []
    for u, dup in seen.items():
        if dup:
            out.append(DescribeResult(u, "DUPLICATE_RESOURCE", _DESCRIBE_DUPLICATE + u))
        elif u in by_user:
            out.append(DescribeResult(u, infos=tuple(by_user[u])))
        else:
            out.append(DescribeResult(u, "RESOURCE_NOT_FOUND", _DESCRIBE_MISSING + u))
    return out


# --- fold ------------------------------------------------------------------------------------------


def evolve(state: ScramState, event: Any) -> ScramState:
    """Apply a :class:`UserScramCredentialSet` (create or replace) or
    :class:`UserScramCredentialRemoved` (a missing credential is ignored: the decider never
    writes one) in place; returns ``state``. Other events are ignored."""
    if isinstance(event, UserScramCredentialSet):
        state.credentials[(event.user, event.mechanism)] = ScramCredential(event.salt, event.stored_key, event.server_key, event.iterations)
    elif isinstance(event, UserScramCredentialRemoved):
        state.credentials.pop((event.user, event.mechanism), None)
    return state
