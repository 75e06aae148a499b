"""A node's metadata image (:class:`wire.cluster.ClusterMetadata`) carries each topic's effective
configs: a replica opening the log of a partition its image just gained takes them from there
(the controller client's cache may not know the topic yet: a follower then opened a tiered
topic's log with the broker defaults — 1 GiB segments, no remote storage), and a config change
made through any node reaches every node's open logs (``on_config_change``).

The controller stream is written here by the controller's pure decider, as the active controller
would, to a SQLite event log the image folds (``poll``)."""

from __future__ import annotations

import pytest

from actors.controller import state as S
from actors.controller import topics as tp
from events.codec import new_event
from events.controller import STREAM_ID
from store.event_log import open_event_log
from wire.cluster import ClusterMetadata


class Controller:
    """The active controller's side: decide, append to the controller stream, fold."""

    def __init__(self, elog) -> None:
        self.elog = elog
        self.state = S.ControllerState(static_config={"log.segment.bytes": "2097152", "remote.log.storage.system.enable": "true"})

    def run(self, cmd) -> None:
        d = S.decide(self.state, cmd, 0)
        assert d.events, d.reply
        self.elog.append(STREAM_ID, [new_event(e) for e in d.events])
        for e in d.events:
            S.apply(self.state, e)

    def create(self, name: str, **configs: str) -> None:
        tid = tp.new_topic_id(set(self.state.topics.used_ids))
        self.run(tp.CreateTopics((tp.CreatableTopic(name, 1, configs=tuple(configs.items())),), False, ((name, tid),)))

    def alter(self, name: str, key: str, value: str) -> None:
        self.run(tp.IncrementalAlterConfigs((tp.AlterConfigResource("TOPIC", name, ((key, "SET", value),)),)))


def test_the_image_gives_a_new_topics_configs_and_tells_of_changes(tmp_path):
    elog = open_event_log(f"sqlite:///{tmp_path / 'events.db'}")
    ctl = Controller(elog)
    image = ClusterMetadata({"log.segment.bytes": "2097152"}, 1, elog)
    changed: list[list[str]] = []
    image.on_config_change(lambda names: changed.append(sorted(names)))

    ctl.create("tiered", **{"remote.storage.enable": "true", "segment.bytes": "16384"})
    ctl.create("plain")
    image.poll()
    cfg = image.topic_config("tiered")
    assert (cfg["remote.storage.enable"], cfg["segment.bytes"]) == ("true", "16384")
    assert image.topic_config("plain")["segment.bytes"] == "2097152"  # the broker's log.segment.bytes
    assert changed == []  # new topics are not changes

    ctl.alter("plain", "retention.ms", "1000")
    image.poll()
    assert image.topic_config("plain")["retention.ms"] == "1000"
    assert changed == [["plain"]]
    with pytest.raises(KeyError):
        image.topic_config("missing")
