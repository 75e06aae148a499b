"""kafkajs 2.2 (Node; ``tests/e2e/js``, installed by ``make test`` with ``npm ci``) against the
real daemon: a producer and a ``groupId`` consumer at kafkajs's own defaults (auto-commit included)
read back exactly what was produced — values, partitions and offsets — commit, and after a daemon
restart on the same data dir a new consumer of the same group reads only the newer records.

The Node script (``tests/e2e/js/group_client.js``) prints one JSON line the test checks. Without
Node or the installed package the test is skipped with the reason, except under ``CI=true``
(then it fails, :func:`tests.conftest.require`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.conftest import require
from tests.e2e.helpers import create_topic

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(300)]

JS = Path(__file__).resolve().parent / "js"


def _run(spec: dict) -> dict:
    node = shutil.which("node")
    require(node is not None, "Node.js is not installed (kafkajs runs on it)")
    require((JS / "node_modules" / "kafkajs").is_dir(), "kafkajs is not installed: `make js-deps` (npm ci in tests/e2e/js)")
    r = subprocess.run([node, str(JS / "group_client.js"), json.dumps(spec)], capture_output=True, text=True, timeout=150)
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _read_back(out: dict) -> dict[str, tuple[int, int]]:
    """value → (partition, offset) of what the consumer read; a value read twice fails."""
    got: dict[str, tuple[int, int]] = {}
    for p, o, v in out["consumed"]:
        assert v not in got, f"{v} read twice"
        got[v] = (p, o)
    return got


def test_kafkajs_group_reads_back_exactly_and_resumes_after_restart(daemon_factory):
    d = daemon_factory()
    topic, group = f"js-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(d.bootstrap, topic, 3)
    values = [f"v{i}" for i in range(30)]
    out = _run({"bootstrap": d.bootstrap, "topic": topic, "group": group, "produce": values, "partitions": 3, "consume": 30})
    produced = {v: tuple(po) for v, po in out["produced"].items()}
    assert sorted(produced) == sorted(values)
    assert {po for po in produced.values()} == {(p, o) for p in range(3) for o in range(10)}
    assert _read_back(out) == produced  # each record once, where it was written
    assert {int(p): o for p, o in out["committed"].items()} == {0: 10, 1: 10, 2: 10}

    d.stop()
    d2 = daemon_factory(data_dir=d.data_dir)
    more = [f"w{i}" for i in range(6)]
    out2 = _run({"bootstrap": d2.bootstrap, "topic": topic, "group": group, "produce": more, "partitions": 3, "consume": 6})
    produced2 = {v: tuple(po) for v, po in out2["produced"].items()}
    assert {po for po in produced2.values()} == {(p, o) for p in range(3) for o in (10, 11)}
    assert _read_back(out2) == produced2  # only the records after the committed offsets
    assert {int(p): o for p, o in out2["committed"].items()} == {0: 12, 1: 12, 2: 12}
