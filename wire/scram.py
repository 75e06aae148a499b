"""Handlers for SCRAM credential management (KIP-554): DescribeUserScramCredentials (50) and
AlterUserScramCredentials (51), both v0 (the only version Kafka defines).

Each handler takes ``(request, backend)`` — a :class:`wire.protocol.DecodedRequest` and a
:class:`wire.backend.Backend` — and returns the kio response. The rules live in the pure decider
(:mod:`actors.controller.scram`, Kafka's ``ScramControlManager`` and ``ScramImage.describe``);
these handlers only translate. Mechanisms travel as Kafka's type ids (1 SCRAM-SHA-256,
2 SCRAM-SHA-512).

Authorization: with an authorizer configured, Kafka's ``KafkaApis`` requires DESCRIBE on the
CLUSTER resource for 50 (else the whole response is CLUSTER_AUTHORIZATION_FAILED) and ALTER on
CLUSTER for 51 (every user's result CLUSTER_AUTHORIZATION_FAILED). That check belongs to the
authorizer (``wire/authz.py``), which runs before these handlers.
"""

from __future__ import annotations

from typing import Any

from kio.static.primitive import i8, i32

from actors.controller.scram import ScramDeletion, ScramUpsertion
from wire.backend import Backend
from wire.entities import NO_THROTTLE, build, error_code, nested, response_class
from wire.protocol import DecodedRequest

__all__ = ["alter_user_scram_credentials", "describe_user_scram_credentials"]


def describe_user_scram_credentials(req: DecodedRequest, backend: Backend) -> Any:
    """DescribeUserScramCredentials: ``users`` null or empty describes every user with a
    credential; per user its mechanisms and iteration counts (never salts or keys), or
    RESOURCE_NOT_FOUND / DUPLICATE_RESOURCE. A controller that cannot answer gives the top-level
    error (e.g. COORDINATOR_LOAD_IN_PROGRESS) and no results."""
    cls = response_class(50, req.api_version)
    users = req.body.users
    names = None if users is None else [u.name for u in users]
    err, msg, results = backend.describe_user_scram_credentials(names)
    out = tuple(
        nested(
            cls,
            "DescribeUserScramCredentialsResult",
            user=r.user,
            error_code=error_code(r.error),
            error_message=r.message,
            credential_infos=tuple(nested(cls, "CredentialInfo", mechanism=i8(i.mechanism), iterations=i32(i.iterations)) for i in r.infos),
        )
        for r in results
    )
    return build(cls, throttle_time=NO_THROTTLE, error_code=error_code(err), error_message=msg, results=out)


def alter_user_scram_credentials(req: DecodedRequest, backend: Backend) -> Any:
    """AlterUserScramCredentials: one controller message for the whole request; one result per
    user (accepted deletions, accepted upsertions, then errors). The salted passwords go to the
    controller, which stores only the derived keys."""
    cls = response_class(51, req.api_version)
    body = req.body
    deletions = [ScramDeletion(d.name, int(d.mechanism)) for d in body.deletions]
    upsertions = [ScramUpsertion(u.name, int(u.mechanism), int(u.iterations), bytes(u.salt), bytes(u.salted_password)) for u in body.upsertions]
    results = backend.alter_user_scram_credentials(deletions, upsertions) if deletions or upsertions else []
    out = tuple(nested(cls, "AlterUserScramCredentialsResult", user=r.user, error_code=error_code(r.error), error_message=r.message) for r in results)
    return build(cls, throttle_time=NO_THROTTLE, results=out)

