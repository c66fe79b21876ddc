"""The real sync run machine (`judgecore.run.sync.SyncRun`) against a model of the API and the checkpoint.

Hypothesis drives the machine one step at a time. The API model answers any request in flight, in any
order, with any of: success, 429 with retry-after, 5xx, a dropped connection, an unreachable endpoint,
invalid, truncation, fatal; the clock only moves forward; the process can crash at any step (the
machine and everything in flight are lost, and a new machine is built from what was recorded, as the
shell builds it from the store). The laws are checked after every step.
"""

from __future__ import annotations

import math
from collections import Counter

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from judgecore.decide.backoff import BackoffPolicy
from judgecore.decide.breaker import Breaker, BreakerPolicy
from judgecore.decide.ratelimit import RateLimitReading
from judgecore.results.outcomes import FailureClass, RawResult, Status, classify
from judgecore.run.sync import (
    CONNECT_FAILED,
    Answered,
    Done,
    Launch,
    Record,
    Row,
    Say,
    SyncPolicy,
    SyncRun,
    Todo,
    Wait,
)

ANSWERS = {
    "success": RawResult(kind="succeeded", text="Score: 4", stop_reason="end_turn"),
    "truncated": RawResult(kind="succeeded", text="Score", stop_reason="max_tokens"),
    "invalid": RawResult(kind="http_error", status=400, error_type="invalid_request_error", message="bad"),
    "server": RawResult(kind="http_error", status=529, error_type="overloaded_error", message="busy"),
    "dropped": RawResult(kind="connection_error", message="Server disconnected"),
    "unreachable": RawResult(kind="connection_error", error_type=CONNECT_FAILED, message="cannot connect"),
    "fatal": RawResult(kind="http_error", status=401, error_type="authentication_error", message="bad key"),
    # a 429 that is a spend limit, not a rate: the run stops, nothing is recorded for the item
    "account": RawResult(
        kind="http_error",
        status=429,
        error_type="rate_limit_error",
        message="monthly cap",
        error_code="enforced_spend_limit_reached",
    ),
}
KINDS = sorted([*ANSWERS, "rate_limited"])


def rate_limited(seconds: float) -> RawResult:
    return RawResult(kind="http_error", status=429, error_type="rate_limit_error", retry_after=seconds)


class SyncRunLife(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 1_800_000_000.0
        self.recorded: list[Row] = []
        self.runs = 0

    @initialize(
        n=st.integers(1, 8),
        max_attempts=st.integers(1, 3),
        max_rate_limited=st.integers(1, 3),
        concurrency=st.integers(1, 4),
        warm_up=st.booleans(),
        k=st.integers(1, 4),
        paced=st.booleans(),
    )
    def setup(
        self,
        n: int,
        max_attempts: int,
        max_rate_limited: int,
        concurrency: int,
        warm_up: bool,
        k: int,
        paced: bool,
    ) -> None:
        self.ids = [f"c{i}" for i in range(n)]
        self.policy = SyncPolicy(
            max_attempts=max_attempts,
            max_rate_limited=max_rate_limited,
            concurrency=concurrency,
            warm_up=warm_up,
            backoff=BackoffPolicy(base=1.0, cap=8.0),
        )
        self.breaker_policy = BreakerPolicy(k=k)
        self.reading = RateLimitReading.for_otpm(60_000) if paced else None
        self.after_pending = False
        self.start_run()

    # -- the shell's part: build a run from the checkpoint -------------------------------------

    def finals(self) -> set[str]:
        return {r.custom_id for r in self.recorded if r.outcome.final}

    def start_run(self) -> None:
        done = self.finals()
        todos = tuple(Todo(custom_id=c, max_tokens=100) for c in self.ids if c not in done)
        prior = [r.outcome.failure for r in self.recorded if r.outcome.final]
        breaker = Breaker.start(len(self.ids), prior[: self.breaker_policy.k], self.breaker_policy)
        self.run = SyncRun.start(
            todos, policy=self.policy, now=self.now, breaker=breaker, reading=self.reading
        )
        self.runs += 1
        self.first_row_of_run = len(self.recorded)  # this run's rows: `self.recorded` from here
        self.flying: dict[str, int] = {}  # custom_id -> launches in flight (0 or 1)
        self.sends: Counter[str] = Counter()  # launches this run
        self.failures: Counter[str] = Counter()
        self.limited: Counter[str] = Counter()
        self.answers: Counter[str] = Counter()  # answers that came back this run
        self.blocked_until = -math.inf
        self.warm = todos[0].custom_id if self.policy.warm_up and todos else None
        self.warm_resolved = self.warm is None
        self.launched_other = False
        self.done: Done | None = None
        self.steps = 0
        self.launches = 0

    # -- rules ---------------------------------------------------------------------------------

    @precondition(lambda self: self.done is None)
    @rule()
    def step(self) -> None:
        self.steps += 1
        self.run, actions = self.run.advance(self.now)
        assert isinstance(actions[-1], Wait | Done), "advance ends with Wait or Done"
        for action in actions:
            self.last = action
            match action:
                case Launch(todo=todo):
                    cid = todo.custom_id
                    assert cid not in self.finals(), f"{cid} is final and was sent again"
                    assert cid not in self.flying, f"{cid} sent twice at once"
                    assert self.now >= self.blocked_until, "a launch before a 429's retry-after passed"
                    if self.warm is not None and cid != self.warm:
                        assert self.warm_resolved, "another launch before the warm-up was answered"
                    self.flying[cid] = 1
                    self.sends[cid] += 1
                    self.launches += 1
                    limit = self.policy.max_attempts + self.policy.max_rate_limited - 1
                    assert self.sends[cid] <= limit, f"{cid}: {self.sends[cid]} sends this run"
                    assert len(self.flying) <= self.policy.concurrency
                    assert len(self.run.in_flight) <= self.run.conc.limit, "a launch past the AIMD limit"
                case Wait(until=until):
                    assert until is None or until > self.now, "a wait that does not move time"
                    assert until is not None or self.flying, "a wait for answers with none in flight"
                case Record(rows=rows):
                    for row in rows:
                        assert row.custom_id not in self.finals()
                        assert self.answers[row.custom_id] == row.attempts, (
                            "a row's attempts: its run's answers"
                        )
                    self.recorded.extend(rows)
                case Say():
                    pass
                case Done(exit_status=status):
                    self.done = action
                    assert (status == 4) == self.run.stopped
                    if self.after_pending:
                        assert self.launches >= 1 or status == 0, "a rerun after exit 3 that did nothing"
                    if status == 3:
                        assert {c for c in self.ids if c not in self.finals()}, "exit 3 with nothing pending"
                    if status == 0:
                        assert set(self.ids) == self.finals(), "exit 0 with items not final"

    @precondition(lambda self: self.done is None and self.flying)
    @rule(data=st.data(), kind=st.sampled_from(KINDS), retry_after=st.sampled_from([None, 0.5, 3.0]))
    def answer(self, data: st.DataObject, kind: str, retry_after: float | None) -> None:
        cid = data.draw(st.sampled_from(sorted(self.flying)))
        if kind in ("fatal", "account") and data.draw(st.integers(0, 3)):
            kind = "success"  # fatal ends the run: keep it rare
        raw = rate_limited(retry_after or 1.0) if kind == "rate_limited" else ANSWERS[kind]
        self.deliver(cid, raw, data.draw(st.floats(0.0, 1.0, exclude_max=True)))

    def deliver(self, cid: str, raw: RawResult, u: float) -> None:
        """Answer `cid`'s request in flight (the model keeps its own count of each item's budget)."""
        outcome = classify(raw)
        del self.flying[cid]
        self.answers[cid] += 1
        if outcome.failure is FailureClass.RATE_LIMIT:
            self.limited[cid] += 1
            self.blocked_until = max(self.blocked_until, self.now + (outcome.retry_after or 0.0))
            exhausted = self.limited[cid] >= self.policy.max_rate_limited
        elif outcome.status is Status.RETRY:
            self.failures[cid] += 1
            exhausted = self.failures[cid] >= self.policy.max_attempts
        else:
            exhausted = True
        if cid == self.warm and exhausted:
            self.warm_resolved = True
        stopped = self.run.stopped
        self.run = self.run.on(
            Answered(custom_id=cid, outcome=outcome, reading=RateLimitReading(), now=self.now, u=u)
        )
        if outcome.account_state and not stopped:  # the first stop names the account state
            assert self.run.stop is not None and self.run.stop.startswith("the API refused the account")

    @rule(seconds=st.sampled_from([0.01, 0.5, 2.0, 10.0]))
    def advance(self, seconds: float) -> None:
        self.now += seconds

    @rule()
    def crash(self) -> None:
        """The process dies: the machine and its requests in flight are lost; the checkpoint stays."""
        self.after_pending = False
        self.start_run()

    @precondition(lambda self: self.done is not None)
    @rule()
    def rerun(self) -> None:
        self.after_pending = self.done is not None and self.done.exit_status == 3
        self.start_run()

    # -- laws ----------------------------------------------------------------------------------

    @invariant()
    def in_flight_within_the_concurrency_limit(self) -> None:
        assert len(self.run.in_flight) <= self.run.conc.ceiling
        assert {f.todo.custom_id for f in self.run.in_flight} == set(self.flying)

    @invariant()
    def no_final_id_is_waiting_to_be_sent(self) -> None:
        finals = self.finals()
        assert not {t.custom_id for t in self.run.todos[self.run.fresh :]} & finals

    @invariant()
    def an_account_state_is_never_recorded_final(self) -> None:
        """The API refused the account, not the item: the item stays pending, nothing quarantined."""
        account = [r for r in self.recorded if r.outcome.failure is FailureClass.ACCOUNT_STATE]
        assert not [r for r in account if r.outcome.final]

    @invariant()
    def a_tripped_breaker_recorded_no_invalid_request(self) -> None:
        """Not in the run that tripped it. An earlier run that ended with the breaker undecided recorded
        what it held (final, by design: `judgecore.decide.breaker`), and this run's breaker counted those."""
        if self.run.breaker.tripped:
            mine = [
                r
                for r in self.recorded[self.first_row_of_run :]
                if r.outcome.failure is FailureClass.INVALID_REQUEST
            ]
            assert not mine
            earlier = [r for r in self.recorded if r.outcome.failure is FailureClass.INVALID_REQUEST]
            assert len(earlier) < self.run.breaker.need, "a breaker tripped past as many quarantines"

    def teardown(self) -> None:
        """Each run ends in a bounded number of steps (drained with an API that answers at once, in a
        fixed cycle of answers); a rerun after exit 3 makes progress or ends with exit 0."""
        if not hasattr(self, "run"):
            return
        bound = 20 * len(self.ids) * (self.policy.max_attempts + self.policy.max_rate_limited) + 50
        script = ["server", "rate_limited", "success", "invalid", "dropped", "truncated"]
        for _ in range(4):
            steps = 0
            while self.done is None:
                steps += 1
                assert steps <= bound, "the run did not end in a bounded number of steps"
                self.step()
                if self.done is not None or not isinstance(self.last, Wait):
                    continue
                if self.flying:
                    cid = sorted(self.flying)[0]
                    kind = script[steps % len(script)]
                    raw = rate_limited(1.0) if kind == "rate_limited" else ANSWERS[kind]
                    self.deliver(cid, raw, 0.5)
                else:
                    assert self.last.until is not None
                    self.now = self.last.until
            if self.done.exit_status != 3:
                return
            self.rerun()


TestSyncRunLife = SyncRunLife.TestCase
