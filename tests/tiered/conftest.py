"""Every :class:`store.log.log.PartitionLog` a test of this directory opens is closed when the
test ends (tests and property examples that stop using a log without closing it left their
segment files open: about 800 descriptors over this directory, which pushed later tests of a
full run past ``select()``'s limit of 1024)."""

from __future__ import annotations

import pytest

from store.log.log import PartitionLog


@pytest.fixture(autouse=True)
def _close_partition_logs(monkeypatch):
    opened: list[PartitionLog] = []
    real_open = PartitionLog.open.__func__

    def tracking_open(cls, *args, **kwargs):
        log = real_open(cls, *args, **kwargs)
        opened.append(log)
        return log

    monkeypatch.setattr(PartitionLog, "open", classmethod(tracking_open))
    yield
    for log in opened:
        try:
            log.close()
        except Exception:  # noqa: BLE001 - a test may have removed the log's directory
            pass
