"""One type per group id: the listener's single check that a group id is not used by another
group type (Kafka's ``GroupMetadataManager`` keeps every group in one map, so a group id has one
type: ``classic``/``consumer`` or ``share``).

- JoinGroup on a share group's id: INCONSISTENT_GROUP_PROTOCOL (``classicGroupJoin``: "Group
  exists but it's not a consumer group").
- ConsumerGroupHeartbeat joining (epoch 0) on a share group's id: GROUP_ID_NOT_FOUND ("Group <id> is
  not a consumer group.", ``getOrMaybeCreateConsumerGroup``).
- ShareGroupHeartbeat joining on a consumer group's id: GROUP_ID_NOT_FOUND ("Group <id> is not a
  share group.", ``getOrMaybeCreateShareGroup``).
- DescribeGroups, DeleteGroups and OffsetDelete route a share group's id to the share side.

Shoal keeps the two kinds in separate streams (``share-group:<id>``, ``consumer-group:<id>``),
so the check asks the event log for the one stream in question: a group exists when its stream
has events and does not end deleted (DeleteGroups frees the id, as in Kafka). Two requests that
create the same id as different types at the same instant can both pass (the streams are not
appended in one transaction); the next join of either type then sees the other.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from actors.base import event_log_for
from actors.consumer.group import consumer_group_in_log
from actors.share.limits import share_group_in_log

__all__ = ["GroupTypes"]

log = logging.getLogger("shoal.wire.group_types")


class GroupTypes:
    """Lookups of a group id's type in the event log of broker config ``cfg`` (``event.log.url``).
    Each lookup reads one stream's version and tail: no actor is started. Without an event log
    (unit tests of the wire with a fake backend) every id is free."""

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        self.cfg = dict(cfg)

    def _elog(self) -> Any:
        return event_log_for(self.cfg) if "event.log.url" in self.cfg else None

    def is_share_group(self, group: str) -> bool:
        """Whether ``group`` is an existing (not deleted) share group. A log that cannot be read
        answers ``False`` (logged): the request then goes to the consumer side, whose actor
        answers from its own stream."""
        try:
            elog = self._elog()
            return elog is not None and share_group_in_log(elog, group)
        except Exception:
            log.warning("share-group lookup of %r failed", group, exc_info=True)
            return False

    def is_consumer_group(self, group: str) -> bool:
        """Whether ``group`` is an existing (not deleted) classic or consumer-protocol group;
        ``False`` when the log cannot be read (logged)."""
        try:
            elog = self._elog()
            return elog is not None and consumer_group_in_log(elog, group)
        except Exception:
            log.warning("consumer-group lookup of %r failed", group, exc_info=True)
            return False
