"""Hypothesis property tests of the share-partition state machine: random interleavings of
produce / acquire / acknowledge (valid and invalid, RENEW included) / lock timeout / member release /
log-start-offset moves keep the invariants:

* a record is never handed to a member while another holds it (acquire only takes AVAILABLE or
  never-seen offsets) and every ACQUIRED record has one owner and a lock deadline;
* delivery count ≤ ``group.share.delivery.count.limit``;
* the share-partition start offset never decreases;
* replaying the events rebuilds the live state exactly (``replay(events) == live``), also through
  the JSON log codec;
* the events' outcomes are truthful: folding only their outcome fields last-writer-wins
  (:func:`fold_outcomes`, the Python twin of the SQL projection's fold) gives the live cache
  offset by offset and the live start and end offsets;
* a request that fails produces no event and changes nothing; a request produces at most one event.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from actors.share.errors import ShareError
from actors.share.partition import RecordState, SharePartition, replay
from actors.share.state_store import ShareStateStore
from events.codec import decode_event, new_event

MEMBERS = ("m1", "m2", "m3")


def fold_outcomes(events) -> tuple[int, int, dict[int, tuple]]:
    """``(start offset, end offset, {offset: (state, delivery count, member or None, lock
    deadline)})`` from the outcome fields of a share-partition's events alone, last writer wins:
    an initialisation starts over from its state batches, every other event overwrites the
    offsets of its ``outcome`` ranges, and offsets below the greatest ``evicted_below`` since the
    last initialisation are gone (the SQL fold in ``projections/domains/share.py`` does the same)."""
    start = end = 0
    offsets: dict[int, tuple] = {}
    cut = None
    for ev in events:
        assert ev.start_offset_after is not None, f"event without outcome: {ev!r}"
        if type(ev).__name__ == "SharePartitionInitialized":
            offsets = {o: (st, dc, None, None) for f, l_, st, dc in ev.state_batches for o in range(f, l_ + 1)}
            cut = None
        else:
            prev_last = None
            for r in ev.outcome:
                assert r.first_offset <= r.last_offset and (prev_last is None or prev_last < r.first_offset), "ascending, disjoint"
                prev_last = r.last_offset
                for o in range(r.first_offset, r.last_offset + 1):
                    offsets[o] = (r.state, r.delivery_count, r.member_id, r.lock_deadline_ms)
        if ev.evicted_below is not None:
            assert cut is None or ev.evicted_below >= cut, "the eviction offset never decreases"
            cut = ev.evicted_below
        start, end = ev.start_offset_after, ev.end_offset_after
    if cut is not None:
        offsets = {o: v for o, v in offsets.items() if o >= cut}
    return start, end, offsets
TOPIC = "9d2b8c1e-0000-4000-8000-00000000000a"


class SharePartitionMachine(RuleBasedStateMachine):
    @initialize(
        mdc=st.integers(2, 4),
        max_in_flight=st.sampled_from([8, 30, 200]),
        lock_ms=st.sampled_from([100, 1000]),
        start=st.integers(0, 5),
    )
    def setup(self, mdc, max_in_flight, lock_ms, start):
        self.mdc, self.max_in_flight, self.lock_ms = mdc, max_in_flight, lock_ms
        self.sp = SharePartition("g", TOPIC, 0, delivery_count_limit=mdc, max_in_flight_records=max_in_flight)
        self.events: list = []
        self.now = 0
        self.log_start = start
        self.log: list[tuple[int, int]] = []  # log batches (base, last)
        self.leo = start
        self._record(self.sp.initialize(start, 0, []))
        self.prev_start = self.sp.start_offset

    # ------------------------------------------------------------------ helpers

    def _record(self, events):
        assert len(events) <= 1, "one event per request per partition at most"
        self.events += events

    def _all_states(self):
        for b in self.sp.cached_batches():
            for o in range(b.first_offset, b.last_offset + 1):
                yield o, self.sp.record_state(o)

    def _held_by(self, member):
        return [o for o, s in self._all_states() if s[0] == RecordState.ACQUIRED and s[2] == member]

    # ------------------------------------------------------------------ rules

    @rule(sizes=st.lists(st.integers(1, 7), min_size=1, max_size=3), gaps=st.lists(st.integers(0, 2), min_size=3, max_size=3))
    def produce(self, sizes, gaps=(0, 0, 0)):
        """Append log batches; a gap before a batch models offsets compaction removed."""
        for n, gap in zip(sizes, gaps):
            self.leo += gap
            self.log.append((self.leo, self.leo + n - 1))
            self.leo += n

    @rule(
        member=st.sampled_from(MEMBERS),
        max_records=st.integers(1, 25),
        nbatches=st.integers(1, 4),
        dt=st.integers(0, 50),
        batch_size=st.sampled_from([None, None, 1, 3, 8]),
    )
    def acquire(self, member, max_records, nbatches, dt, batch_size):
        self.now += dt
        nfo = self.sp.next_fetch_offset()
        fetched = [b for b in self.log if b[1] >= max(nfo, self.log_start)][:nbatches]
        if not fetched:  # nothing to read: produce a little first, so acquisitions are common
            self.produce([1 + (max_records % 5), 3], [max_records % 2, 0, 0])
            fetched = [b for b in self.log if b[1] >= max(nfo, self.log_start)][:nbatches]
        before = {o: s for o, s in self._all_states()}
        events, acquired = self.sp.decide_acquire(member, fetched, max_records, self.now, self.lock_ms, batch_size=batch_size)
        # an event without acquisitions only archives records compacted out of the log
        assert bool(events) == bool(acquired) or (events and not acquired and events[0].stale_ranges)
        for ev in events:
            for f, l_ in ev.stale_ranges:
                assert l_ < fetched[0][0]
                for o in range(f, l_ + 1):
                    assert self.sp.record_state(o)[0] == RecordState.AVAILABLE
        for a in acquired:
            assert fetched[0][0] <= a.first_offset <= a.last_offset <= fetched[-1][1]
            for o in range(a.first_offset, a.last_offset + 1):
                prior = before.get(o)
                assert prior is None or prior[0] == RecordState.AVAILABLE, f"offset {o} acquired while {prior}"
                assert a.delivery_count == (1 if prior is None else prior[1] + 1)
        for ev in events:
            self.sp.apply(ev)
        self._record(events)
        for a in acquired:
            for o in range(a.first_offset, a.last_offset + 1):
                s = self.sp.record_state(o)
                if s is not None:  # may already be pruned only if terminal, never while ACQUIRED
                    assert s[0] == RecordState.ACQUIRED and s[2] == member and s[1] == a.delivery_count

    @rule(
        member=st.sampled_from(MEMBERS),
        types=st.lists(st.sampled_from([0, 1, 2, 3, 4]), min_size=1, max_size=3),
        split=st.integers(0, 3),
        valid=st.sampled_from([True, True, True, False]),
        junk=st.tuples(st.integers(0, 60), st.integers(0, 8), st.sampled_from([0, 1, 2, 3, 4, 7])),
        dt=st.integers(0, 50),
    )
    def acknowledge(self, member, types, split, valid, junk, dt):
        self.now += dt
        if valid:  # acknowledge as a member that holds records, when there is one
            holders = [m for m in MEMBERS if self._held_by(m)]
            if holders:
                member = holders[split % len(holders)]
        held = self._held_by(member)
        if valid and held:
            # contiguous runs of held offsets, one ack batch per run, types cycling
            runs: list[list[int]] = []
            for o in held:
                if runs and runs[-1][-1] + 1 == o:
                    runs[-1].append(o)
                else:
                    runs.append([o])
            batches = []
            for i, run in enumerate(runs[: split + 1]):
                if len(run) > 1 and (i + split) % 2:
                    batches.append((run[0], run[-1], [types[(o - run[0]) % len(types)] for o in run]))
                else:
                    batches.append((run[0], run[-1], [types[i % len(types)]]))
        else:
            f, n, t = junk
            batches = [(f, f + n, [t])]
        before = self.sp.snapshot()
        try:
            events = self.sp.decide_acknowledge(member, batches, self.now, self.lock_ms)
        except ShareError as err:
            assert err.error_name in ("INVALID_RECORD_STATE", "INVALID_REQUEST")
            assert self.sp.snapshot() == before, "a failed request must not change the state"
            return
        assert self.sp.snapshot() == before, "deciders are pure"
        for ev in events:
            self.sp.apply(ev)
        self._record(events)

    @rule(member=st.sampled_from(MEMBERS), max_records=st.integers(0, 25), types=st.lists(st.sampled_from([1, 2, 3, 4]), min_size=1, max_size=2), dt=st.integers(0, 50))
    def share_fetch(self, member, max_records, types, dt):
        """A ShareFetch: piggybacked acknowledgements of what the member holds, then an acquire —
        one event at most, decided without touching the live state."""
        self.now += dt
        held = self._held_by(member)
        acks = []
        for o in held[:6]:
            if acks and acks[-1][1] + 1 == o:
                acks[-1] = (acks[-1][0], o, acks[-1][2])
            else:
                acks.append((o, o, [types[len(acks) % len(types)]]))
        before = self.sp.snapshot()
        reads = []

        def read_log(offset):
            reads.append(offset)
            if not [b for b in self.log if b[1] >= max(offset, self.log_start)]:
                self.produce([3, 2], [1, 0, 0])
            return [b for b in self.log if b[1] >= max(offset, self.log_start)][:3]

        d = self.sp.decide_share_fetch(member, acks, read_log, max_records, self.now, self.lock_ms)
        assert self.sp.snapshot() == before, "deciders are pure"
        assert len(reads) <= 1 and (d.fetch_offset is None) == (not reads)
        for ev in d.events:
            self.sp.apply(ev)
        self._record(d.events)
        for a in d.acquired:
            for o in range(a.first_offset, a.last_offset + 1):
                s = self.sp.record_state(o)
                assert s is not None and s[0] == RecordState.ACQUIRED and s[2] == member and s[1] == a.delivery_count

    @rule(dt=st.integers(0, 1500))
    def tick(self, dt):
        self.now += dt
        deadline = self.sp.next_lock_deadline_ms()
        events = self.sp.decide_expire_locks(self.now)
        assert bool(events) == (deadline is not None and deadline <= self.now)
        for ev in events:
            self.sp.apply(ev)
        self._record(events)
        nd = self.sp.next_lock_deadline_ms()
        assert nd is None or nd > self.now

    @rule(member=st.sampled_from(MEMBERS), decrement=st.booleans())
    def release(self, member, decrement):
        events = self.sp.decide_release_member(member, decrement_delivery_count=decrement)
        for ev in events:
            self.sp.apply(ev)
        self._record(events)

    @rule(go=st.integers(0, 4))
    def restart(self, go):
        """A restart through the share coordinator's durable form: write the state, replay the
        records, read it back and initialise a new partition from it (locks do not survive)."""
        if go:
            return
        store = ShareStateStore(1)
        for ev in store.decide_write_share_partition(self.sp):
            store.apply(ev)
        result, _ = store.read(self.sp.group_id, TOPIC, 0, leader_epoch=1)
        again = SharePartition("g", TOPIC, 0, delivery_count_limit=self.mdc, max_in_flight_records=self.max_in_flight)
        events = again.initialize(result.start_offset, result.state_epoch, result.state_batches)
        assert again.start_offset >= self.sp.start_offset
        for o, (state, dc, _m, _d) in self._all_states():
            if o < again.start_offset:
                continue
            back = again.record_state(o)
            if back is None:  # only terminal records may be dropped from the front
                assert state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
                continue
            if state == RecordState.ACQUIRED:  # the in-flight delivery did not happen
                expected, dc = RecordState.AVAILABLE, dc - 1
            else:
                expected = state
            assert (back[0], back[1], back[2], back[3]) == (expected, dc, "", None)
        self.sp = again
        self.events = events

    @precondition(lambda self: self.leo > self.log_start)
    @rule(step=st.integers(1, 4), go=st.integers(0, 3))
    def move_log_start(self, step, go):
        if go:  # rarer than the other rules: retention does not run on every request
            return
        self.log_start = min(self.leo, self.log_start + step)
        self.log = [b for b in self.log if b[1] >= self.log_start]
        self._record(self.sp.update_log_start_offset(self.log_start))

    # ------------------------------------------------------------------ invariants

    @invariant()
    def record_invariants(self):
        if not hasattr(self, "sp"):
            return
        for o, (state, dc, member, deadline) in self._all_states():
            assert 0 <= dc <= self.mdc, f"delivery count {dc} at {o} over the limit {self.mdc}"
            if state == RecordState.ACQUIRED:
                assert member and deadline is not None
                assert dc >= 1
            else:
                assert member == "" and deadline is None
            if state == RecordState.AVAILABLE:
                assert o >= self.sp.start_offset, f"AVAILABLE record {o} below the start offset"
        assert self.sp.next_fetch_offset() >= self.sp.start_offset

    @invariant()
    def start_offset_monotonic(self):
        if not hasattr(self, "sp"):
            return
        assert self.sp.start_offset >= self.prev_start
        self.prev_start = self.sp.start_offset
        batches = self.sp.cached_batches()
        for a, b in zip(batches, batches[1:]):
            assert a.last_offset < b.first_offset

    @invariant()
    def exploded_batches_are_maximal_runs(self):
        """An exploded batch's per-offset states are runs that cover it exactly, with no two
        neighbours equal (so their number is bounded by the state changes inside the batch)."""
        if not hasattr(self, "sp"):
            return
        for b in self.sp.cached_batches():
            if b.runs is None:
                continue
            assert b.runs[0].first == b.first_offset and b.runs[-1].last == b.last_offset
            for x, y in zip(b.runs, b.runs[1:]):
                assert x.first <= x.last and x.last + 1 == y.first
                assert x.as_tuple() != y.as_tuple(), f"equal neighbouring runs {x!r} {y!r}"

    @invariant()
    def replay_equals_live(self):
        if not hasattr(self, "sp"):
            return
        rebuilt = replay(self.events, "g", TOPIC, 0, delivery_count_limit=self.mdc, max_in_flight_records=self.max_in_flight)
        assert rebuilt.snapshot() == self.sp.snapshot()

    @invariant()
    def outcomes_fold_to_live(self):
        if not hasattr(self, "sp"):
            return
        start, end, offsets = fold_outcomes(self.events)
        live = {o: (int(s[0]), s[1], s[2] or None, s[3]) for o, s in self._all_states()}
        assert (start, end) == (self.sp.start_offset, self.sp.end_offset)
        assert offsets == live

    def teardown(self):
        if not hasattr(self, "sp"):
            return
        # through the log codec too: JSON bytes back to the same events, same fold
        decoded = []
        for ev in self.events:
            ne = new_event(ev)
            decoded.append(decode_event(ne.event_type, ne.schema_version, ne.data))
        assert decoded == self.events
        rebuilt = replay(decoded, "g", TOPIC, 0, delivery_count_limit=self.mdc, max_in_flight_records=self.max_in_flight)
        assert rebuilt == self.sp


SharePartitionMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_share_partition_state_machine = SharePartitionMachine.TestCase
