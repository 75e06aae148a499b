"""The controller's domain events (stream ``controller``).

Every decision the :class:`actors.controller.actor.ControllerActor` takes about cluster metadata and
storage collections is one of these events, appended before the reply leaves. The fold of the
stream is :func:`actors.controller.state.evolve` (topics, configs, partitions, frontiers, holds).

Conventions:

* A *frontier* (``since``, ``upper``, ``implied``, a hold's offset) is ``int | None``: the
  single-element antichain ``{n}`` over Kafka offsets, or ``None`` for the empty antichain ``{}``
  (sealed upper / dropped since). "Closed" is never encoded as a large number
  (reference ``controller.md`` §5.1, point 1).
* Events carry whole batches (all hold deltas of one command, all upper advances of one report),
  never one event per record or per offset.
* Policies are plain dicts (``{"kind": "lag_writes", "lag": 10, "max_granularity": 1}``) decoded by
  :func:`actors.controller.frontiers.policy_from_dict`, so the DuckDB/Spark folds can read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from events.base import DomainEvent, domain_event

__all__ = [
    "BrokerConfigsAltered",
    "CollectionSpec",
    "CollectionsCreated",
    "CollectionsDropRequested",
    "FrontierUpdate",
    "HoldChange",
    "ImpliedCapability",
    "PartitionChanged",
    "PartitionSpec",
    "PolicyChange",
    "ReadHoldsChanged",
    "ReadPoliciesSet",
    "SegmentInfo",
    "TopicConfigsAltered",
    "TopicCreated",
    "TopicDeleted",
    "WriteFrontiersAdvanced",
    "STREAM_ID",
]

#: The controller's event stream.
STREAM_ID = "controller"


# --- cluster metadata ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """One partition as created: ``replicas`` in assignment order (``replicas[0]`` is the
    preferred leader), ``isr``, ``leader`` (broker id, -1 = none), ``leader_epoch`` and
    ``partition_epoch`` (KRaft's ``PartitionRegistration`` fields)."""

    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0


@domain_event("controller.TopicCreated")
@dataclass(frozen=True, slots=True)
class TopicCreated(DomainEvent):
    """A topic was created (Kafka's ``TopicRecord`` + ``PartitionRecord``s + ``ConfigRecord``s).

    ``topic_id`` is the UUID in canonical hex form (never reused); ``configs`` holds only the
    explicitly set topic overrides (source DYNAMIC_TOPIC_CONFIG)."""

    topic_id: str
    name: str
    partitions: tuple[PartitionSpec, ...]
    configs: dict[str, str]


@domain_event("controller.TopicDeleted")
@dataclass(frozen=True, slots=True)
class TopicDeleted(DomainEvent):
    """A topic was deleted (Kafka's ``RemoveTopicRecord``). Its name may be reused at once; its
    id never is. Its collections are dropped (since → ``{}``) once their read holds drain."""

    topic_id: str
    name: str


@domain_event("controller.TopicConfigsAltered")
@dataclass(frozen=True, slots=True)
class TopicConfigsAltered(DomainEvent):
    """Topic overrides changed: ``set`` key → new value, ``deleted`` keys reverted to their
    default (Kafka's ``ConfigRecord`` with a null value)."""

    topic_id: str
    name: str
    set: dict[str, str]
    deleted: tuple[str, ...]


@domain_event("controller.BrokerConfigsAltered")
@dataclass(frozen=True, slots=True)
class BrokerConfigsAltered(DomainEvent):
    """Dynamic broker configs changed. ``broker`` is the resource name: ``""`` for the cluster-wide
    default (DYNAMIC_DEFAULT_BROKER_CONFIG) or a broker id (DYNAMIC_BROKER_CONFIG)."""

    broker: str
    set: dict[str, str]
    deleted: tuple[str, ...]


@domain_event("controller.PartitionChanged")
@dataclass(frozen=True, slots=True)
class PartitionChanged(DomainEvent):
    """A partition's leadership or ISR changed (Kafka's ``PartitionChangeRecord``): the new
    ``leader`` (-1 = none), ``isr``, ``leader_epoch`` and ``partition_epoch`` after the change.
    ``reason``: ``"election"``, ``"preferred"``, ``"isr_shrink"``, ``"isr_expand"``,
    ``"broker_failed"``, ``"leader_update"``."""

    topic_id: str
    partition: int
    leader: int
    isr: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int
    reason: str


# --- storage collections ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """A log segment as reported by a partition log: offsets ``[base_offset, next_offset)``
    (``next_offset`` exclusive), ``size_bytes`` and the largest record timestamp in ms. A
    reporter lists every segment oldest first, the active one last: Kafka's ``retention.bytes``
    compares the size of the whole log, active segment included (``UnifiedLog#size``), and
    an active segment wholly below the high watermark may itself breach retention."""

    base_offset: int
    next_offset: int
    size_bytes: int
    max_timestamp_ms: int


@dataclass(frozen=True, slots=True)
class CollectionSpec:
    """A new collection: ``since``/``upper`` frontiers (offsets; ``None`` = ``{}``), its read
    ``policy`` (dict form) and the ids it depends on (each holds its dependency's since)."""

    collection_id: str
    since: int | None
    upper: int | None
    policy: dict[str, Any]
    dependencies: tuple[str, ...] = ()


@domain_event("controller.CollectionsCreated")
@dataclass(frozen=True, slots=True)
class CollectionsCreated(DomainEvent):
    """Collections were registered (Materialize ``create_collections``). Each starts with read
    capabilities ``{since: 1}`` (the implied capability) plus one hold on each dependency."""

    collections: tuple[CollectionSpec, ...]


@dataclass(frozen=True, slots=True)
class FrontierUpdate:
    """One collection's new ``upper`` and the ``implied`` capability its read policy derives
    from it (recorded, so the fold needs no clock); ``segments`` when reported (else None)."""

    collection_id: str
    upper: int | None
    implied: int | None
    segments: tuple[SegmentInfo, ...] | None = None


@domain_event("controller.WriteFrontiersAdvanced")
@dataclass(frozen=True, slots=True)
class WriteFrontiersAdvanced(DomainEvent):
    """Uppers advanced (high watermarks committed; ``None`` = sealed) and the implied read
    capabilities moved with them (Materialize ``update_write_frontiers``)."""

    updates: tuple[FrontierUpdate, ...]


@dataclass(frozen=True, slots=True)
class ImpliedCapability:
    """A collection's new implied capability (``None`` = released)."""

    collection_id: str
    implied: int | None


@dataclass(frozen=True, slots=True)
class PolicyChange:
    """A collection's new read policy (dict form) and the implied capability it yields now
    (``implied`` equals the old one when the policy would move it backwards)."""

    collection_id: str
    policy: dict[str, Any]
    implied: int | None


@domain_event("controller.ReadPoliciesSet")
@dataclass(frozen=True, slots=True)
class ReadPoliciesSet(DomainEvent):
    """Read policies changed or were re-evaluated at a later time (retention by time):
    Materialize ``set_read_policies``. ``at_ms`` is the decision time."""

    changes: tuple[PolicyChange, ...]
    at_ms: int


class HoldChange(NamedTuple):
    """Add ``delta`` (±, never 0) holds at ``offset`` on ``collection_id``. A named tuple (JSON:
    ``[collection_id, offset, delta]``) rather than a nested dataclass because hold updates are
    the controller's hot path (see ``bench/controller.py``)."""

    collection_id: str
    offset: int
    delta: int


@domain_event("controller.ReadHoldsChanged")
@dataclass(frozen=True, slots=True)
class ReadHoldsChanged(DomainEvent):
    """``holder``'s read holds changed by ``changes`` (a consolidated ChangeBatch; Materialize
    ``update_read_capabilities``). Validated before it was written: no count goes negative and
    no positive hold lies below its collection's since."""

    holder: str
    changes: tuple[HoldChange, ...]


@domain_event("controller.CollectionsDropRequested")
@dataclass(frozen=True, slots=True)
class CollectionsDropRequested(DomainEvent):
    """Drop requested (policy ``ValidFrom({})``): the implied capability is released. A collection
    disappears (since ``{}``) once every other hold on it has drained."""

    collection_ids: tuple[str, ...]

