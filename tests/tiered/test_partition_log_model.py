"""Model-based test of store.log.log.PartitionLog (hypothesis state machine): random appends, rolls,
high-watermark moves, retention below an offset, clean reopens and crash reopens (no close, stale
checkpoint) against a plain list of records. After every step the log must answer reads and
ListOffsets exactly as the model says."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from store import record_batch as rb
from store.log.config import LogConfig
from store.log.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, PartitionLog

CONFIG = LogConfig(segment_bytes=700, index_interval_bytes=120)


class PartitionLogModel(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="shoal-plog-model-"))
        self.log = PartitionLog.open(self.dir, "m", 0, CONFIG)
        self.records: dict[int, bytes] = {}  # offset -> value
        self.batch_bases: list[int] = []
        self.start = 0
        self.end = 0
        self.epoch = 0

    def teardown(self):
        for s in self.log.segments():
            s.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(n=st.integers(1, 4), size=st.integers(0, 120), bump_epoch=st.booleans())
    def append(self, n, size, bump_epoch):
        if bump_epoch:
            self.epoch += 1
        values = [bytes([65 + (self.end + i) % 26]) * size + b"#%d" % (self.end + i) for i in range(n)]
        info = self.log.append_as_leader(rb.build_batch([(None, v) for v in values], base_timestamp=self.end), self.epoch, 0)
        assert info.first_offset == self.end and info.last_offset == self.end + n - 1
        for i, v in enumerate(values):
            self.records[self.end + i] = v
        self.batch_bases.append(self.end)
        self.end += n

    @rule()
    def roll(self):
        self.log.roll(0)

    @rule()
    def advance_high_watermark(self):
        self.log.update_high_watermark(self.log.log_end_offset)

    @precondition(lambda self: self.end > self.start)
    @rule(data=st.data())
    def delete_below(self, data):
        target = data.draw(st.integers(self.start, self.end))
        self.log.delete_segments_below(target)
        new_start = self.log.log_start_offset
        assert self.start <= new_start <= target
        for off in range(self.start, new_start):
            del self.records[off]
        self.start = new_start

    @precondition(lambda self: self.end > self.start)
    @rule(data=st.data())
    def truncate(self, data):
        target = data.draw(st.integers(self.start, self.end))
        # Kafka LogSegment#truncateTo: the batch holding ``target`` and everything after it go
        new_end = target if target >= self.end else max(b for b in self.batch_bases if b <= target)
        self.log.truncate_to(target)
        assert self.log.log_end_offset == new_end
        for off in [o for o in self.records if o >= new_end]:
            del self.records[off]
        self.batch_bases = [b for b in self.batch_bases if b < new_end]
        self.end = new_end

    @rule()
    def clean_reopen(self):
        self.log.close()
        self.log = PartitionLog.open(self.dir, "m", 0, CONFIG)

    @rule()
    def crash_reopen(self):
        for s in self.log.segments():  # no flush, no checkpoint: what a SIGKILL leaves
            s.close()
        self.log = PartitionLog.open(self.dir, "m", 0, CONFIG)

    @invariant()
    def offsets_agree(self):
        assert self.log.log_end_offset == self.end
        assert self.log.log_start_offset == self.start
        assert self.log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP).offset == self.start
        assert self.log.fetch_offset_by_timestamp(LATEST_TIMESTAMP, isolation_level=None).offset == self.end

    @invariant()
    def reads_agree(self):
        off = self.start
        while off < self.end:
            r = self.log.read(off, 300, max_offset=self.end)
            assert r.records, f"empty read at {off}"
            got = [(x.offset, x.value) for h in rb.iter_batches(r.records) for x in rb.iter_records(r.records, h.position)]
            assert got[0][0] <= off <= got[-1][0]
            for o, v in got:
                if o >= self.start:
                    assert self.records[o] == v
            off = got[-1][0] + 1


TestPartitionLogModel = PartitionLogModel.TestCase
TestPartitionLogModel.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)
