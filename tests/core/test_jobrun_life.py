"""The job machine's whole life (`judgecore.run.job._machine.JobRun`), pure: runs, crashes and reruns.

The checkpoint is a small in-memory model of what the shell keeps for the machine (the stored route,
the tier last read, the final ids, the ids live in batches, whether a batch was made); the probe
answers as the API does (200 with a tier, 200 with no rate-limit headers, 429 with or without a tier,
401); the batch and sync parts finish some ids at random and may leave batches live. A run may crash
between any two actions, the probe's answer and the route's record included; a finished run may be run
again. The laws, checked at every step: a route decided on an assumed tier is never kept once a tier
is read (unless something was answered on it, which `keep_or_redecide` keeps on purpose); the probe
sends once a run and its spent send is not sent again by the sync part; the dry run's plan is what the
run then does when no probe can change the tier.
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from judgecore.decide.routing import Route, RoutePolicy, route
from judgecore.results.outcomes import Status
from judgecore.run.job._machine import Done, History, IllegalJobMove, JobPolicy, JobRun, Say
from judgecore.run.job._vocab import (
    BatchRan,
    Connect,
    Estimate,
    Probe,
    Probed,
    RecordRoute,
    RunBatch,
    RunSync,
    SyncRan,
    WriteOutput,
    Wrote,
)
from judgecore.run.vocab import ExitStatus, Wait

#: What the probe may meet: (HTTP-like answer, the status it classifies as, the tier its headers say).
PROBE_ANSWERS = {
    "200": (Status.SUCCEEDED, 80_000),
    "200 no headers": (Status.SUCCEEDED, None),
    "429": (Status.RETRY, 2_000_000),
    "429 no headers": (Status.RETRY, None),
    "401": (None, None),
}


@attrs.define
class Checkpoint:
    stored: Route | None = None
    otpm_read: int | None = None
    final: set[str] = attrs.Factory(set)
    live: set[str] = attrs.Factory(set)
    any_batch: bool = False

    def history(self) -> History:
        return History(
            stored=self.stored,
            otpm_read=self.otpm_read,
            final=frozenset(self.final),
            in_flight=frozenset(self.live),
            any_batch=self.any_batch,
        )


class JobRunLife(RuleBasedStateMachine):
    @initialize(
        n=st.integers(1, 12),
        threshold=st.integers(1, 12),
        force=st.sampled_from([None, None, None, "sync", "batch"]),
        otpm=st.sampled_from([None, None, None, 100_000, 1_600_000]),
    )
    def new_job(self, n: int, threshold: int, force: str | None, otpm: int | None) -> None:
        self.ids = tuple(f"c{i}" for i in range(n))
        self.cp = Checkpoint()
        self.policy = JobPolicy(force=force, otpm=otpm, route_policy=RoutePolicy(base_threshold=threshold))
        self.exits: list[ExitStatus] = []
        self._begin()

    def _begin(self) -> None:
        history = self.cp.history()
        self.run = JobRun.start(self.ids, history, self.policy)
        self.history = history
        self.dry = self.run.dry_run()
        self.pending: list = []
        self.probes = 0
        self.spent: str | None = None
        self.read_now = history.otpm_read
        self.recorded: list[Route] = []
        self.given: set[str] = set()
        self.done = False

    # -- performing -------------------------------------------------------------------------------

    def _perform(self, action, data) -> None:
        match action:
            case Connect() | Estimate() | Say():
                pass
            case RecordRoute(route=chosen):
                self.cp.stored = chosen
                self.recorded.append(chosen)
            case Probe(custom_id=cid):
                self.probes += 1
                answer = data.draw(st.sampled_from(sorted(PROBE_ANSWERS)), label="probe answer")
                status, tier = PROBE_ANSWERS[answer]
                self.cp.otpm_read = tier  # the shell keeps the reading, whatever the answer
                self.read_now = tier
                if status is Status.SUCCEEDED:
                    self.cp.final.add(cid)
                if status is Status.RETRY:
                    self.spent = cid
                self.pending.append(
                    Probed(item_id=cid, fatal="401: invalid x-api-key")
                    if status is None
                    else Probed(item_id=cid, status=status, reason="rate_limited", otpm=tier)
                )
            case RunBatch(ids=ids):
                self.given |= ids
                self.cp.any_batch = True
                stuck = data.draw(st.booleans(), label="a batch left live")
                for c in sorted(ids - self.cp.final):
                    if stuck and data.draw(st.booleans(), label="still live"):
                        self.cp.live.add(c)
                    else:
                        self.cp.live.discard(c)
                        if data.draw(st.booleans(), label="final"):
                            self.cp.final.add(c)
                self.pending.append(BatchRan(stuck=("b1",) if stuck else ()))
            case RunSync(ids=ids):
                self.given |= ids
                assert self.spent is None or self.spent not in ids, "the probe's spent send was sent again"
                for c in sorted(ids - self.cp.final):
                    if data.draw(st.booleans(), label="final"):
                        self.cp.final.add(c)
                self.pending.append(SyncRan())
            case WriteOutput():
                self.pending.append(Wrote(pending=sum(1 for c in self.ids if c not in self.cp.final)))
            case Done(exit_status=status):
                self.exits.append(status)
                self.done = True

    # -- rules ------------------------------------------------------------------------------------

    @precondition(lambda self: not self.done)
    @rule(data=st.data())
    def step(self, data) -> None:
        """Answer the operation out, if any, then perform what the machine asks next."""
        if self.pending:
            self.run = self.run.on(self.pending.pop(0))
        self.run, actions = self.run.advance(0.0)
        assert isinstance(actions[-1], Wait | Done), "advance ends with one Wait or Done"
        assert not any(isinstance(a, Wait | Done) for a in actions[:-1])
        assert self.pending == []
        for action in actions:
            self._perform(action, data)

    @rule()
    def crash(self) -> None:
        """The process dies between two actions (the probe's answer and the route's record included)
        and the job is run again from what the checkpoint holds."""
        self._begin()

    @precondition(lambda self: self.done)
    @rule()
    def rerun(self) -> None:
        """The same job run again after it exited (0, 3 or 4)."""
        self._begin()

    # -- invariants -------------------------------------------------------------------------------

    @invariant()
    def the_probe_sends_once_a_run(self) -> None:
        assert self.probes <= 1

    @invariant()
    def a_route_decided_with_a_tier_read_is_not_assumed(self) -> None:
        if self.policy.force is None and self.policy.otpm is None:
            for chosen in self.recorded:
                assert (chosen.otpm_source == "assumed") == (self.read_now is None)

    @invariant()
    def an_assumed_route_nothing_was_answered_on_is_not_kept_once_a_tier_is_read(self) -> None:
        h = self.history
        stale = h.stored is not None and h.stored.otpm_source == "assumed" and not h.stored.forced
        decided = self.run.route is not None
        if stale and decided and h.otpm_read is not None and not h.answered and self.policy.force is None:
            assert self.run.route.otpm_source != "assumed"

    @invariant()
    def the_dry_run_plans_what_the_run_does(self) -> None:
        if self.run.route is None or self.probes:
            return
        assert self.dry.route == self.run.route
        if self.done:
            sent = self.given - self.history.final - self.history.in_flight
            assert self.dry.left == sent

    @invariant()
    def the_exit_status_says_how_the_run_ended(self) -> None:
        if self.done:
            status = self.exits[-1]
            if status is ExitStatus.OK:
                assert all(c in self.cp.final for c in self.ids)
            elif status is ExitStatus.PENDING:
                assert any(c not in self.cp.final for c in self.ids)
            else:
                assert ExitStatus.FATAL == status and self.run.fatal is not None


TestJobRunLife = JobRunLife.TestCase


# -- a few lives told whole --------------------------------------------------------------------------


def _drive(run: JobRun, answers: dict[type, object]) -> list:
    """Run to `Done`, answering each operation from `answers`; every action, in order."""
    seen: list = []
    while True:
        run, actions = run.advance(0.0)
        seen += actions
        ops = [a for a in actions if isinstance(a, Probe | RunBatch | RunSync | WriteOutput)]
        if any(isinstance(a, Done) for a in actions):
            return seen
        assert 1 == len(ops)
        run = run.on(answers[type(ops[0])])


IDS = tuple(f"c{i}" for i in range(5))
ANSWERS = {RunBatch: BatchRan(), RunSync: SyncRan(), WriteOutput: Wrote(pending=0)}


def test_a_new_job_probes_its_first_item_then_routes_on_the_tier_read():
    run = JobRun.start(IDS, History(), JobPolicy())
    seen = _drive(run, {**ANSWERS, Probe: Probed(item_id="a", status=Status.SUCCEEDED, otpm=1_000)})
    assert Probe("c0") == seen[1]
    chosen = next(a.route for a in seen if isinstance(a, RecordRoute))
    assert ("batch", "read") == (chosen.path, chosen.otpm_source)  # 5 >= 2000 * 1k / 400k
    assert [RunBatch(frozenset(IDS))] == [a for a in seen if isinstance(a, RunBatch)]
    assert Done(ExitStatus.OK, None) == seen[-1]


def test_a_probe_that_came_back_retriable_spends_its_items_send_for_this_run():
    run = JobRun.start(IDS, History(), JobPolicy())
    seen = _drive(run, {**ANSWERS, Probe: Probed(item_id="a", status=Status.RETRY, reason="rate_limited")})
    (sync,) = [a for a in seen if isinstance(a, RunSync)]
    assert (frozenset(IDS) - {"c0"}, True, True) == (sync.ids, sync.warm_up, sync.contacted)


def test_a_probe_that_answered_warmed_the_cache_so_the_sync_part_does_not_warm_up():
    run = JobRun.start(IDS, History(), JobPolicy())
    seen = _drive(run, {**ANSWERS, Probe: Probed(item_id="a", status=Status.SUCCEEDED)})
    (sync,) = [a for a in seen if isinstance(a, RunSync)]
    assert (frozenset(IDS), False) == (sync.ids, sync.warm_up)


def test_a_fatal_probe_records_the_assumed_route_and_writes_the_output_with_exit_4():
    run = JobRun.start(IDS, History(), JobPolicy())
    seen = _drive(run, {**ANSWERS, Probe: Probed(item_id="a", fatal="401: invalid x-api-key")})
    assert not [a for a in seen if isinstance(a, RunBatch | RunSync)]
    assert "assumed" == next(a.route for a in seen if isinstance(a, RecordRoute)).otpm_source
    assert Done(ExitStatus.FATAL, "401: invalid x-api-key") == seen[-1]


@pytest.mark.parametrize(
    ("policy", "source"),
    [(JobPolicy(force="sync", otpm=10), "flag"), (JobPolicy(otpm=10), "flag"), (JobPolicy(), "read")],
)
def test_a_force_or_otpm_or_a_stored_reading_routes_with_no_probe(policy, source):
    run = JobRun.start(IDS, History(otpm_read=4_000_000), policy)
    seen = _drive(run, ANSWERS)
    assert not [a for a in seen if isinstance(a, Probe)]
    assert source == next(a.route for a in seen if isinstance(a, RecordRoute)).otpm_source


def test_on_the_sync_route_live_batches_are_polled_first_and_a_batch_stop_skips_the_sync_part():
    kept = route(5, policy=RoutePolicy(), otpm=400_000)
    history = History(stored=kept, in_flight=frozenset({"c3"}), any_batch=True)
    seen = _drive(JobRun.start(IDS, history, JobPolicy()), {**ANSWERS, RunBatch: BatchRan(fatal="stop")})
    assert [RunBatch(frozenset({"c3"}))] == [a for a in seen if isinstance(a, RunBatch)]
    assert not [a for a in seen if isinstance(a, RunSync | RecordRoute)]
    assert Done(ExitStatus.FATAL, "stop") == seen[-1]


def test_a_job_all_final_sends_nothing_and_may_reuse_its_output():
    kept = route(5, policy=RoutePolicy(), otpm=400_000)
    run = JobRun.start(IDS, History(stored=kept, final=frozenset(IDS)), JobPolicy())
    seen = _drive(run, ANSWERS)
    assert [Say("info", "every item is final already: nothing to send"), WriteOutput(reuse=True)] == seen[:2]
    assert Done(ExitStatus.OK, None) == seen[-1]


def test_items_left_pending_exit_3():
    kept = route(5, policy=RoutePolicy(), otpm=400_000)
    seen = _drive(JobRun.start(IDS, History(stored=kept), JobPolicy()), {**ANSWERS, WriteOutput: Wrote(2)})
    assert Done(ExitStatus.PENDING, None) == seen[-1]


def test_an_event_no_operation_awaits_is_an_illegal_move():
    with pytest.raises(IllegalJobMove, match="SyncRan while start"):
        JobRun.start(IDS, History(), JobPolicy()).on(SyncRan())


def test_a_batch_part_that_switched_sends_the_rest_on_the_sync_route_but_not_what_a_batch_still_holds():
    run = JobRun.start(IDS, History(otpm_read=1_000), JobPolicy())
    switched = BatchRan(switched=True, live=frozenset({"c3"}))
    seen = _drive(run, {**ANSWERS, RunBatch: switched})
    assert [RunBatch(frozenset(IDS))] == [a for a in seen if isinstance(a, RunBatch)]
    (sync,) = [a for a in seen if isinstance(a, RunSync)]
    assert frozenset(IDS) - {"c3"} == sync.ids  # still in a live (canceling) batch: never on both routes
    assert "batch" == next(a.route for a in seen if isinstance(a, RecordRoute)).path  # the job's route stays


def test_a_rerun_after_a_switch_resumes_it_on_the_live_batches_then_sends_the_rest_sync():
    stored = route(len(IDS), policy=RoutePolicy(), otpm=1_000)
    assert "batch" == stored.path
    history = History(
        stored=stored, otpm_read=1_000, any_batch=True, in_flight=frozenset({"c1", "c2"}), switched=True
    )
    seen = _drive(JobRun.start(IDS, history, JobPolicy()), {**ANSWERS, RunBatch: BatchRan(switched=True)})
    (batch,) = [a for a in seen if isinstance(a, RunBatch)]
    assert (frozenset({"c1", "c2"}), True) == (
        batch.ids,
        batch.switched,
    )  # cancel and harvest, create nothing
    (sync,) = [a for a in seen if isinstance(a, RunSync)]
    assert frozenset(IDS) == sync.ids


def test_without_a_switch_a_batch_job_has_no_sync_part():
    run = JobRun.start(IDS, History(otpm_read=1_000), JobPolicy())
    seen = _drive(run, ANSWERS)
    assert not [a for a in seen if isinstance(a, RunSync)]
    assert not [a for a in seen if isinstance(a, RunBatch) and a.switched]


def test_the_dry_run_after_a_switch_plans_the_rest_on_the_sync_route():
    stored = route(len(IDS), policy=RoutePolicy(), otpm=1_000)
    history = History(stored=stored, otpm_read=1_000, any_batch=True, final=frozenset({"c0"}), switched=True)
    plan = JobRun.start(IDS, history, JobPolicy()).dry_run()
    assert ("sync", frozenset(IDS) - {"c0"}) == (plan.route.path, plan.left)
