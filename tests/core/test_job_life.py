"""A job's whole life, driven through the pure core only, against a tiny in-memory model of the API.

Rounds are submitted with `diff_resume` + `chunk`; live batches are polled with `next_poll_action` on a
fake clock that only moves forward; ended (or overdue) batches are harvested through `classify` of
randomly drawn results; retriable ids come back in later rounds until `max_attempts`. Results that stop
the run (`fatal`) are left out: they end the run rather than an item (see test_outcomes.py).
"""

from __future__ import annotations

import math
from collections import Counter

import attrs
import orjson
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from strategies import non_fatal_results

from judgecore import (
    BatchSnapshot,
    Harvest,
    Item,
    JobState,
    Overdue,
    PollPolicy,
    RawResult,
    RequestTemplate,
    Wait,
    build_requests,
    chunk,
    classify,
    diff_resume,
    next_poll_action,
)

# What the teardown's API answers, cycling per send: retriable first, so budgets really get spent.
SCRIPT = (
    RawResult(kind="errored", error_type="overloaded_error"),
    RawResult(kind="expired"),
    RawResult(kind="succeeded", text="4", stop_reason="end_turn"),
    RawResult(kind="errored", error_type="rate_limit_error", retry_after=30.0),
    RawResult(kind="succeeded", text="4", stop_reason="max_tokens"),
    RawResult(kind="errored", error_type="invalid_request_error", message="bad"),
)


class JobLife(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 1_700_000_000.0
        self.state = JobState()
        self.live: dict[str, tuple[BatchSnapshot, tuple[str, ...]]] = {}
        self.sends: Counter[str] = Counter()
        self.sent_after_final: list[str] = []
        self.batches_created = 0

    @initialize(
        n=st.integers(1, 25),
        max_attempts=st.integers(1, 4),
        max_requests=st.integers(1, 8),
        ttl=st.floats(60.0, 86_400.0),
        interval=st.floats(0.5, 600.0),
        grace=st.floats(0.0, 3_600.0),
    )
    def start(self, n, max_attempts, max_requests, ttl, interval, grace):
        items = [
            Item(
                id=f"q{i}-s{i % 3}",
                line=i + 1,
                messages_json=orjson.dumps([{"role": "user", "content": f"q{i}"}]),
            )
            for i in range(n)
        ]
        template = RequestTemplate.build(
            model="claude-sonnet-4-6", max_tokens=64, rubric="Rate 1-5.", path="batch"
        )
        self.requests = {r.custom_id: r for r in build_requests(items, template)}
        self.ids = tuple(self.requests)
        self.max_attempts = max_attempts
        self.max_requests = max_requests
        self.ttl = ttl
        self.policy = PollPolicy(interval=interval, grace=grace)

    # --- the shell's moves ------------------------------------------------------------------------

    @rule()
    def submit_round(self):
        """Resume: send what diff_resume says, chunked; live batches are polled, not resent."""
        diff = diff_resume(self.ids, self.state, max_attempts=self.max_attempts)
        assert frozenset(self.state.in_flight) == diff.poll
        assert not set(diff.submit) & self.state.final
        subs = chunk([self.requests[c] for c in diff.submit], max_requests=self.max_requests)
        assert list(diff.submit) == [c for sb in subs for c in sb.custom_ids]
        for sb in subs:
            batch_id = f"msgbatch_{self.batches_created:04d}"
            self.batches_created += 1
            snap = BatchSnapshot(
                id=batch_id, status="in_progress", created_at=self.now, expires_at=self.now + self.ttl
            )
            self.live[batch_id] = (snap, sb.custom_ids)
            self.sent_after_final += [c for c in sb.custom_ids if c in self.state.final]
            self.sends.update(sb.custom_ids)
            self.state = attrs.evolve(self.state, in_flight=self.state.in_flight | set(sb.custom_ids))

    @rule(data=st.data(), rtt=st.floats(0.01, 5.0))
    def poll_a_batch(self, data, rtt):
        """One poll: wait as told (then the retrieve takes `rtt`), or harvest, or give up on it."""
        if not self.live:
            return
        batch_id = data.draw(st.sampled_from(sorted(self.live)))
        self._poll_once(batch_id, rtt, data)

    @rule(data=st.data(), rtt=st.floats(0.01, 5.0))
    def wait_out_a_batch(self, data, rtt):
        """Poll one batch the API never ends: it is overdue within a bounded number of polls."""
        if not self.live:
            return
        batch_id = data.draw(st.sampled_from(sorted(self.live)))
        snap, _ = self.live[batch_id]
        remaining = max(0.0, snap.expires_at + self.policy.grace - self.now)
        bound = math.ceil(remaining / self.policy.interval) + 2
        for _ in range(bound):
            if not self._poll_once(batch_id, rtt, data):
                return
        raise AssertionError(f"batch {batch_id} still waiting after {bound} polls")

    @rule(seconds=st.floats(0.0, 2 * 86_400.0))
    def time_passes(self, seconds):
        """The process was away (or asleep); the clock only moves forward."""
        self.now += seconds

    # --- the API's moves --------------------------------------------------------------------------

    @rule(data=st.data(), status=st.sampled_from(["ended", "canceling"]))
    def api_moves_a_batch(self, data, status):
        if not self.live:
            return
        batch_id = data.draw(st.sampled_from(sorted(self.live)))
        snap, cids = self.live[batch_id]
        if snap.status != "ended":
            self.live[batch_id] = (attrs.evolve(snap, status=status, ended_at=self.now), cids)

    # --- helpers ----------------------------------------------------------------------------------

    def _poll_once(self, batch_id, rtt, data=None) -> bool:
        """Poll once; True while the batch is still being waited on."""
        snap, cids = self.live[batch_id]
        match next_poll_action(self.now, snap, self.policy):
            case Wait(seconds=seconds):
                assert 0.0 <= seconds <= self.policy.interval
                assert self.now + seconds <= snap.expires_at + self.policy.grace
                self.now += seconds + rtt
                return True
            case Harvest(batch_id=bid):
                assert "ended" == snap.status
                results = {c: (data.draw(non_fatal_results) if data else self._scripted(c)) for c in cids}
            case Overdue(batch_id=bid, deadline=deadline):
                assert self.now >= deadline
                assert snap.live
                # The final fetch finds it still not ended: none of its requests ran.
                results = {c: RawResult(kind="expired") for c in cids}
        assert batch_id == bid
        self._harvest(batch_id, results)
        return False

    def _scripted(self, cid):
        return SCRIPT[(self.sends[cid] + self.ids.index(cid)) % len(SCRIPT)]

    def _harvest(self, batch_id, results):
        _, cids = self.live.pop(batch_id)
        final, attempts = set(self.state.final), dict(self.state.attempts)
        for cid in cids:
            outcome = classify(results[cid])
            if outcome.final:
                final.add(cid)
            else:
                attempts[cid] = attempts.get(cid, 0) + 1
        self.state = JobState(
            final=frozenset(final), in_flight=self.state.in_flight - set(cids), attempts=attempts
        )

    # --- invariants -------------------------------------------------------------------------------

    @invariant()
    def no_id_is_in_two_sets(self):
        diff = diff_resume(self.ids, self.state, max_attempts=self.max_attempts)
        sets = [set(diff.submit), diff.poll, diff.final, diff.exhausted]
        assert len(self.ids) == sum(len(s) for s in sets)
        assert set(self.ids) == set().union(*sets)
        assert not self.state.final & self.state.in_flight

    @invariant()
    def live_batches_hold_exactly_the_in_flight_ids(self):
        in_batches = [c for _, cids in self.live.values() for c in cids]
        assert len(in_batches) == len(set(in_batches))
        assert set(self.state.in_flight) == set(in_batches)

    @invariant()
    def no_final_id_is_ever_resubmitted(self):
        assert [] == self.sent_after_final

    @invariant()
    def no_id_is_sent_more_than_max_attempts(self):
        assert all(n <= self.max_attempts for n in self.sends.values())

    def teardown(self):
        """However the job got here, finishing it takes a bounded number of rounds and polls."""
        if not hasattr(self, "ids"):
            return
        for _ in range(self.max_attempts + 1):
            diff = diff_resume(self.ids, self.state, max_attempts=self.max_attempts)
            if diff.done:
                break
            self.submit_round()
            for batch_id in sorted(self.live):
                snap, cids = self.live[batch_id]
                self.live[batch_id] = (attrs.evolve(snap, status="ended", ended_at=self.now), cids)
                assert not self._poll_once(batch_id, rtt=1.0)
            self.no_id_is_sent_more_than_max_attempts()
            self.no_final_id_is_ever_resubmitted()
        diff = diff_resume(self.ids, self.state, max_attempts=self.max_attempts)
        assert diff.done
        assert set(self.ids) == diff.final | diff.exhausted


TestJobLife = JobLife.TestCase
