"""RLMM partition actors start on first use (issue 14, memory): a daemon without tiered topics runs
none of the ``remote.log.metadata.topic.num.partitions`` RLMM actor processes; a tiered topic
starts the ones its partitions hash to; after a restart, the remote tier is still read back in
full (the actor of each metadata partition recovers before it is asked anything)."""

from __future__ import annotations

import pytest

from tests.e2e.helpers import create_topic, list_offsets, produce, read_partition, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]

TIERED = {"remote.storage.enable": "true", "segment.bytes": "16384", "local.retention.bytes": "1", "retention.bytes": "-1"}


def test_rlmm_actors_start_on_first_use_and_the_remote_tier_survives_a_restart(daemon_factory, tmp_path):
    data = tmp_path / "data"
    overrides = {"log.dirs": str(tmp_path / "logs"), "remote.log.manager.task.interval.ms": "500"}
    d = daemon_factory(data_dir=data, **overrides)
    idle = len(d.actor_pids())
    create_topic(d.bootstrap, "plain", 3)
    assert len(d.actor_pids()) == idle  # no tiered partition: no RLMM actor process
    create_topic(d.bootstrap, "tiered", 1, TIERED)
    assert wait_for(lambda: len(d.actor_pids()) == idle + 1, 30), "the tiered partition's RLMM actor did not start"
    values = [f"t{i:05d}-" + "x" * 60 for i in range(3000)]
    assert len(produce(d.bootstrap, "tiered", values, partitioner=lambda i: 0, **{"batch.size": 4096})) == len(values)
    assert wait_for(lambda: list_offsets(d.port, "tiered", 0, -4)[1] > 0, 60), "nothing was tiered and deleted locally"
    assert d.stop() == 0
    d.assert_no_processes_left()

    again = daemon_factory(data_dir=data, **overrides)
    got = read_partition(again.bootstrap, "tiered", len(values), timeout_s=60)
    assert [v for _o, v in got] == values
    assert [o for o, _v in got] == list(range(len(values)))
