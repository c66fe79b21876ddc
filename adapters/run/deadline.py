"""A run's deadline, as the shell measures it: the `Watch` of `judgecore.decide.deadline` built from
the settings and the checkpoint, and the start's decision (batches, or this run all sync)."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import repeat
from operator import add, floordiv
from typing import Any

import attrs

from adapters.checkpoint.reads import learned_from_store
from adapters.checkpoint.store import Store
from adapters.providers.registry import provider_of
from adapters.run.settings import JobSettings
from judgecore.decide.deadline import (
    AllSync,
    Pile,
    SyncPace,
    Unfinished,
    Watch,
    clock_time,
    deadline_figures,
    deadline_start,
)
from judgecore.decide.planning import JobPlan, Learned, Plan, estimate_tokens
from judgecore.decide.ratelimit import RateLimitReading, concurrency_for
from judgecore.job.when import When


def sync_pace(
    settings: JobSettings, *, otpm_read: int | None, reading: RateLimitReading | None = None
) -> SyncPace:
    """The sync route's pace as a run will have it: the token limit the job's provider is paced by
    (`--otpm`, else the tier read: Anthropic's OTPM, OpenAI's TPM, as `Provider.route_limit` reads it;
    else the one assumed), the RPM when read, and the concurrency it runs at (`--concurrency`, else the
    tier's: `concurrency_for` the stored reading, else for the limit alone, as the sync part does)."""

    provider = provider_of(settings.request_model)
    read = (
        otpm_read
        if otpm_read is not None
        else (provider.route_limit(reading) if reading is not None else None)
    )
    if settings.otpm is not None:
        otpm, source = settings.otpm, "flag"
    elif read:
        otpm, source = int(read), "read"
    else:
        otpm, source = settings.route_policy.assumed_otpm, "assumed"
    if reading is None:
        reading = RateLimitReading.for_otpm(otpm)
    rpm = reading.requests.limit
    return SyncPace(
        otpm=otpm,
        otpm_source=source,  # type: ignore[arg-type]
        rpm=int(rpm) if rpm else None,
        concurrency=settings.concurrency or concurrency_for(reading),
        limit_name=provider.limit_name,
    )


def counts_input(settings: JobSettings) -> bool:
    """Whether the job's provider's token limit counts a request's input tokens too (OpenAI's TPM)."""

    return provider_of(settings.request_model).limit_counts_input


def input_prior(settings: JobSettings, job: JobPlan, rubric: str | None) -> float:
    """A request's input tokens before any answer, for a provider whose limit counts them (0 for one
    whose limit counts output alone): the plan's call-free estimate (`estimate_tokens`, ceil(bytes / 4))
    of the rubric, sent with every request (cached input counts toward OpenAI's TPM), and of the mean
    request's messages. One pass over the requests' message sizes."""
    n = len(job.requests)
    if not n or not counts_input(settings):
        return 0.0

    messages = sum(map(floordiv, map(add, job.requests.message_sizes, repeat(3)), repeat(4)))
    return (estimate_tokens(len(rubric.encode())) if rubric else 0) + messages / n


def input_each(settings: JobSettings, learned: Learned, prior: float) -> float:
    """A request's input tokens as the provider's limit counts them: 0 when it counts output alone;
    else the mean over the job's answers so far of their input (uncached, cache writes and reads), or
    `prior` (`input_prior`) before any answer."""
    if not counts_input(settings):
        return 0.0
    if not learned.answers:
        return prior
    u = learned.usage
    return (u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens) / learned.answers


def start_tokens_each(settings: JobSettings, job: JobPlan, rubric: str | None, store: Store) -> float:
    """What a request not final takes of the sync route's token limit at a run's start: `max_tokens`
    of output (the most it can: the sync route's time is not underestimated), plus its input for a
    provider whose limit counts it (`input_each`). No checkpoint read without a deadline."""
    most = float(settings.max_tokens)
    if settings.deadline is None or not counts_input(settings):
        return most

    return most + input_each(settings, learned_from_store(store), input_prior(settings, job, rubric))


def watch_of(
    settings: JobSettings,
    *,
    left: int,
    otpm_read: int | None,
    reading: RateLimitReading | None = None,
    tokens_each: float | None = None,
) -> Watch | None:
    """The watch of a run with `left` requests not final (None: no deadline). Each is expected to
    take `tokens_each` of the limit (default `max_tokens` output tokens: the most it can, so the sync
    route's time is not underestimated; a TPM provider's callers add the input, `start_tokens_each`);
    the pace is `sync_pace`'s."""
    if settings.deadline is None or settings.deadline.at is None:
        return None
    each = float(settings.max_tokens) if tokens_each is None else tokens_each
    return Watch(
        deadline=settings.deadline.at,
        unfinished=Unfinished(unsent=Pile.of(left, each)),
        pace=sync_pace(settings, otpm_read=otpm_read, reading=reading),
    )


def all_sync_reason(
    now: float,
    settings: JobSettings,
    *,
    left: int,
    otpm_read: int | None,
    reading: RateLimitReading | None = None,
    tokens_each: float | None = None,
) -> str | None:
    """Why this run goes all sync (a deadline too close for any batch), or None: it may use batches.
    A forced route is the user's: a deadline does not override it. `reading`: the stored one (its
    limit read when `otpm_read` is None); `tokens_each`: as `watch_of` takes it."""
    watch = watch_of(settings, left=left, otpm_read=otpm_read, reading=reading, tokens_each=tokens_each)
    if watch is None or settings.force is not None or left == 0:
        return None
    start = deadline_start(now, watch)
    return start.reason if isinstance(start, AllSync) else None


def dry_run_deadline(now: float, settings: JobSettings, plan: Plan) -> dict[str, Any] | None:
    """What `--dry-run` shows of a deadline (None: none given): the latest switch time, the sync
    route's time with its margin, the all-batch cost and the most the deadline can add to it. Each request
    takes `max_tokens` of output, plus, for a provider whose limit counts input, the plan's input per
    request (its messages' uncached input and the rubric, cached or not)."""
    if settings.deadline is None:
        return None
    at = settings.deadline.resolve(now)
    resolved = attrs.evolve(settings, deadline=When(at=at))
    each = float(settings.max_tokens)
    if plan.to_send and counts_input(settings):  # the plan's input: its messages, and the rubric each
        each += (plan.input_tokens + plan.cache.rubric_tokens * plan.to_send) / plan.to_send
    watch = watch_of(resolved, left=plan.to_send, otpm_read=None, tokens_each=each)
    assert watch is not None
    batch = plan.route.path == "batch"
    fig = deadline_figures(
        now,
        watch,
        all_batch_usd=plan.estimated_cost_usd if batch else None,
        all_sync_usd=plan.all_sync_cost_usd,
    )
    return {
        "deadline": fig.deadline,
        "latest_switch": fig.latest_switch,
        "sync_seconds": fig.sync_seconds,
        "needed_seconds": fig.needed_seconds,
        "all_sync_from_start": fig.all_sync_from_start or not batch,
        "all_batch_usd": fig.all_batch_usd,
        "most_added_usd": fig.most_added_usd,
    }


def render_deadline(d: Mapping[str, Any]) -> str:
    """The dry run's deadline lines (text)."""
    line = f"  deadline     {clock_time(d['deadline'])}"
    if d["latest_switch"] is None or d["all_sync_from_start"]:
        return f"{line}: this run goes on the sync route (too close for any batch, or not a batch job)\n"
    usd = "unknown" if d["all_batch_usd"] is None else f"${d['all_batch_usd']:,.2f}"
    most = "unknown" if d["most_added_usd"] is None else f"${d['most_added_usd']:,.2f}"
    return (
        f"{line}: switch to the sync route at {clock_time(d['latest_switch'])} at the latest "
        f"(it needs about {d['needed_seconds'] / 60:,.1f} min for everything, margin included)\n"
        f"               all-batch {usd}; the deadline adds at most {most} (everything on the sync route)\n"
    )
