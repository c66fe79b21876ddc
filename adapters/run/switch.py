"""The deadline's switch, performed: the decision is the core's (`judgecore.run.batch.switching`); this
module records it, says it, and cancels the live batches through the batch port (`BatchPort.cancel`:
any provider's batch route whose port cancels the way Anthropic's does, keeping what completed).

A panel's batch lanes each have their own switcher (their own port); the first to switch records it,
and the others follow at their next step, each canceling its own lane's batches through its own
provider.

Order, for a kill anywhere: the switch is written in the checkpoint (`store.switch`) before the first
cancel; a run that finds it there resumes the switch: it creates nothing, cancels
what is still live, polls the canceled batches to their end and harvests them, and the job sends the
rest on the sync route (`History.switched`). What a canceled batch completed is recorded by its harvest, so never resent;
an item is sent on the sync route only once no live batch holds it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs

from adapters.checkpoint.reads import learned_from_store
from adapters.checkpoint.store import Store
from adapters.providers.port import BatchApiError, BatchPort
from adapters.run.clock import Clock
from adapters.run.deadline import input_each, input_prior, sync_pace
from adapters.run.events import Emit, Notice
from adapters.run.planning import plan_of
from adapters.run.settings import JobSettings
from judgecore.decide.deadline import Switch, clock_time
from judgecore.decide.planning import JobPlan
from judgecore.decide.routing import Route
from judgecore.run.batch import BatchRun
from judgecore.run.batch.switching import (
    SwitchPlan,
    cancel_answered,
    switch_due,
    switching,
    to_cancel,
    wake_by,
)


def switch_plan(
    settings: JobSettings, job: JobPlan, store: Store, tokens: Callable[[], float] | None = None
) -> SwitchPlan | None:
    """What the run's switch is measured against (None: no deadline, or a forced route): the token
    limit (`--otpm`, else the tier read: Anthropic's OTPM, OpenAI's TPM; else the one assumed) and the
    RPM read; the concurrency the sync route will run at (`--concurrency`, else the tier's); what each
    request takes of the limit (`tokens`, the run's `tokens_of`, which it asks again as answers come;
    made here when not given)."""

    if settings.deadline is None or settings.deadline.at is None or settings.force is not None:
        return None
    pace = sync_pace(settings, otpm_read=None, reading=store.rate_limits)
    return SwitchPlan(
        deadline=settings.deadline.at,
        pace=pace,
        tokens_each=(tokens or tokens_of(settings, job, store))(),
        sync_usd_each=_sync_usd_each(settings, job),
    )


def tokens_of(settings: JobSettings, job: JobPlan, store: Store) -> Callable[[], float]:
    """What a request is expected to take of the sync route's token limit, asked again as answers come
    (`tokens_each`); the input estimate before any answer (`input_prior`) is made at the first ask,
    and once."""

    prior: list[float] = []

    def ask() -> float:
        if not prior:
            prior.append(input_prior(settings, job, store.rubric))
        return tokens_each(settings, store, input_prior=prior[0])

    return ask


def tokens_each(settings: JobSettings, store: Store, *, input_prior: float = 0.0) -> float:
    """A request's expected output tokens: the mean of the job's answers so far (never over
    `max_tokens`), or `max_tokens` before any answer; plus, for a provider whose limit counts input
    (OpenAI's TPM), its input tokens: the answers' mean, or `input_prior` before any answer
    (`adapters.run.deadline.input_each`)."""

    most = settings.max_tokens
    learned = learned_from_store(store)
    output = float(min(most, learned.output_per_answer(most)))
    return output + input_each(settings, learned, input_prior)


def _sync_usd_each(settings: JobSettings, job: JobPlan) -> float | None:
    """One request's estimated cost at the sync price (None: no price known)."""

    if not len(job.requests):
        return None
    route = Route(
        path="sync", n=len(job.requests), threshold=0, otpm=0, otpm_source="assumed", forced=True, reason=""
    )
    try:
        plan = plan_of(job, job.requests, route, None, attrs.evolve(settings, budget=None), chunked=False)
    except (KeyError, ValueError):
        return None
    return plan.per_request_usd


#: Seconds between two refreshes of the expected output tokens from the answers harvested so far.
REFRESH_SECONDS = 60.0


@attrs.define
class Switcher:
    """The switch of one batch part: asked after every move of the run (`step`), and for the latest
    time the shell may sleep to (`wake`). `resumed`: a recorded switch is resumed from the start.
    `tokens`: what a request's output is expected to be now (the answers harvested teach it), asked
    again every `REFRESH_SECONDS` while the run has not switched (None: the plan's figure is kept)."""

    store: Store
    api: BatchPort
    clock: Clock
    emit: Emit
    plan: SwitchPlan | None
    tokens: Callable[[], float] | None = None
    asked: set[int] = attrs.field(factory=set)
    refreshed: float = attrs.field(default=-math.inf)

    def start(self, run: BatchRun, *, resumed: bool) -> BatchRun:
        if not resumed:
            return run
        self.emit(
            Notice(
                level="info", message="deadline: resuming the switch to the sync route an earlier run made"
            )
        )
        return switching(run)

    def wake(self, run: BatchRun) -> float | None:
        return None if self.plan is None else wake_by(run, self.plan)

    async def step(self, run: BatchRun) -> BatchRun:
        """Switch when the core says so now; then cancel each live batch once (its answer recorded)."""
        if not run.switched and self.plan is not None and self.store.switch is not None:
            # another batch lane of the panel switched (it recorded the switch): this lane follows
            run = switching(run)
        if not run.switched and self.plan is not None:
            now = self.clock.now()
            if self.tokens is not None and now >= self.refreshed + REFRESH_SECONDS:
                self.plan, self.refreshed = attrs.evolve(self.plan, tokens_each=self.tokens()), now
            sw = switch_due(run, now, self.plan)
            if sw is not None:
                run = self._switch(run, sw)
        for s in to_cancel(run):
            if s.sub_id in self.asked:
                continue
            self.asked.add(s.sub_id)
            assert s.snap is not None
            try:
                await self.api.cancel(s.snap.id)
            except BatchApiError as exc:
                run = cancel_answered(run, s.sub_id, exc.raw, self.clock.now())
            else:
                run = cancel_answered(run, s.sub_id, None, self.clock.now())
        return run

    def _switch(self, run: BatchRun, sw: Switch) -> BatchRun:
        """Record the switch (before any cancel), say it in one line, and make the run switch."""
        record: dict[str, Any] = {
            "at": sw.at,
            "latest_switch": sw.latest_switch,
            "reason": sw.reason,
            "extra_usd": sw.extra_usd,
        }
        self.store.switch = record
        live = len(to_cancel(switching(run)))
        extra = "unknown (no price known)" if sw.extra_usd is None else f"at most ${sw.extra_usd:,.2f}"
        self.emit(
            Notice(
                level="warning",
                message=(
                    f"deadline: switching to the sync route at {clock_time(sw.at)}: canceling {live} live "
                    f"batch{'es' if live != 1 else ''} ({sw.after_cancel:,} requests; what they completed "
                    f"is kept) and sending the rest sync; why: {sw.reason}; extra cost {extra}"
                ),
            )
        )
        return switching(run)
