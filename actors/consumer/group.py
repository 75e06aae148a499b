"""One group id, one type: the fold that switches a ``consumer-group:<id>`` stream between the
classic decider (:class:`actors.consumer.classic.ClassicGroup`) and the consumer-protocol decider
(:class:`actors.consumer.modern.ModernGroup`) (reference §1, §6).

- A consumer-protocol record (types 3-8) on a classic group converts it: only an empty classic
  group (or one holding only committed offsets) is ever converted, so nothing but the offsets is
  carried over (Kafka tombstones the empty classic group and creates the consumer group).
- The group-epoch tombstone of a consumer group (``ModernGroup.delete_records``) turns the id back
  into an empty classic group with the offsets (Kafka's conversion of an empty consumer group on
  JoinGroup, scenario #47).

The actor (recovery and live conversions) and the Python projection fold both use :func:`evolve`.
"""

from __future__ import annotations

from typing import Any

from actors.consumer.classic import ClassicConfig, ClassicGroup
from actors.consumer.modern import ModernConfig, ModernGroup
from events.consumer_group import CONSUMER_GROUP_RECORDS, ConsumerGroupDeleted, ConsumerGroupEpochRecorded, stream_id_for

__all__ = ["classic_from", "consumer_group_in_log", "evolve", "is_empty_classic", "modern_from"]


def is_empty_classic(g: ClassicGroup) -> bool:
    """Whether a classic group may become a consumer group: never recorded, or Empty with no
    members (committed offsets only)."""
    return not g.exists or (g.state == "Empty" and not g.members)


def modern_from(g: ClassicGroup, config: ModernConfig | None = None, id_factory: Any = None) -> ModernGroup:
    """A new consumer group for the id of the empty classic group ``g``, keeping its offsets."""
    m = ModernGroup(g.group_id, config, id_factory)
    m.offsets = dict(g.offsets)
    return m


def classic_from(g: ModernGroup, config: ClassicConfig | None = None, id_factory: Any = None) -> ClassicGroup:
    """An empty classic group for the id of the deleted consumer group ``g``, keeping its offsets."""
    c = ClassicGroup(g.group_id, config, id_factory)
    c.offsets = dict(g.offsets)
    c.exists = True
    return c


def evolve(group: Any, ev: Any, classic_config: ClassicConfig | None = None, modern_config: ModernConfig | None = None) -> Any:
    """Fold ``ev`` into ``group`` and return the group (a new object when the type changes)."""
    if isinstance(group, ClassicGroup) and isinstance(ev, CONSUMER_GROUP_RECORDS):
        group = modern_from(group, modern_config)
    group.apply(ev)
    if isinstance(group, ModernGroup) and isinstance(ev, ConsumerGroupEpochRecorded) and ev.tombstone:
        group = classic_from(group, classic_config)
    return group


def consumer_group_in_log(elog: Any, group_id: str) -> bool:
    """Whether consumer group ``group_id`` (classic or consumer protocol) exists in the event log
    (:class:`store.event_log.EventLog`): its stream ``consumer-group:<id>`` has events and its last
    event is not ``ConsumerGroupDeleted`` (DeleteGroups frees the id, as Kafka's group tombstone does)."""
    sid = stream_id_for(group_id)
    end = elog.stream_version(sid)
    if end <= 0:
        return False
    last = elog.read_stream(sid, end, end)
    return not (last and last[-1].event_type == ConsumerGroupDeleted.event_type)
