"""One type per group id (``wire.group_types.GroupTypes``): an id is a share or a consumer group
while its own stream has events and does not end deleted; DeleteGroups frees the id."""

from __future__ import annotations

from events.codec import new_event
from events.consumer_group import (
    CommittedOffset,
    ConsumerGroupDeleted,
    DeletedOffset,
    OffsetsCommitted,
    OffsetsDeleted,
)
from events.consumer_group import stream_id_for as consumer_stream
from events.share_group import GroupEpochBumped, ShareGroupDeleted
from events.share_group import stream_id_for as share_stream
from store.event_log import open_event_log
from wire.group_types import GroupTypes


def _types(tmp_path):
    url = f"sqlite:///{tmp_path}/events.db"
    return GroupTypes({"event.log.url": url}), open_event_log(url)


def test_consumer_group_ids(tmp_path):
    types, elog = _types(tmp_path)
    assert not types.is_consumer_group("g")  # no stream
    elog.append(consumer_stream("g"), [new_event(OffsetsCommitted("g", "", -1, (CommittedOffset("t", 0, 5, -1, "", 0),)))])
    assert types.is_consumer_group("g") and not types.is_share_group("g")
    elog.append(consumer_stream("g"), [new_event(OffsetsDeleted("g", (DeletedOffset("t", 0),))), new_event(ConsumerGroupDeleted("g"))])
    assert not types.is_consumer_group("g")  # deleted: the id is free for a share group
    elog.append(consumer_stream("g"), [new_event(OffsetsCommitted("g", "", -1, (CommittedOffset("t", 0, 6, -1, "", 0),)))])
    assert types.is_consumer_group("g")  # used again


def test_share_group_ids(tmp_path):
    types, elog = _types(tmp_path)
    assert not types.is_share_group("s")
    elog.append(share_stream("s"), [new_event(GroupEpochBumped("s", 1))])
    assert types.is_share_group("s") and not types.is_consumer_group("s")
    elog.append(share_stream("s"), [new_event(ShareGroupDeleted("s"))])
    assert not types.is_share_group("s")  # deleted: the id is free


def test_without_an_event_log_every_id_is_free():
    types = GroupTypes({})
    assert not types.is_share_group("g") and not types.is_consumer_group("g")
