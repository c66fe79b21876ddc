"""`--deadline` with an OpenAI judge (issues #39/#41): OpenAI's TPM counts input and output tokens, so
the sync route's time counts each request's input beside its output, against the TPM read from
`x-ratelimit-limit-tokens` (`Provider.route_limit`); an Anthropic job's figures (output tokens against
its OTPM) are unchanged. The run's start (`all_sync_reason`), the switch (`switch_plan`, `tokens_of`)
and the dry run (`dry_run_deadline`) each measured, with a fake clock's instants and no API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from adapters.checkpoint.store import Store
from adapters.run.deadline import (
    all_sync_reason,
    dry_run_deadline,
    input_each,
    start_tokens_each,
    watch_of,
)
from adapters.run.planning import plan_of, plan_the_job
from adapters.run.settings import JobSettings
from adapters.run.switch import switch_plan, tokens_of
from judgecore.decide.deadline import UseBatches, deadline_start
from judgecore.decide.planning import JobPlan, Learned
from judgecore.decide.ratelimit import LimitGroup, RateLimitReading
from judgecore.decide.routing import Route
from judgecore.job.items import Item
from judgecore.job.when import When
from judgecore.results.outcomes import Usage

NOW = 1_800_000_000.0
OPENAI = "openai:gpt-5-mini"
CLAUDE = "claude-sonnet-4-6"
MAX_TOKENS = 1_000
N = 1_000
#: each item's messages, about 3,000 tokens at ceil(bytes / 4): three times its output
CONTENT = "x" * (12_000 - len(orjson.dumps([{"role": "user", "content": ""}])))


def settings_of(model: str, *, deadline: float | None = NOW + 3 * 3600, **kw: object) -> JobSettings:
    return JobSettings(
        model=model,
        max_tokens=MAX_TOKENS,
        concurrency=256,  # the token bound, not the slots, is the sync route's time
        deadline=When(at=deadline) if deadline is not None else None,
        **kw,  # type: ignore[arg-type]
    )


def job_of(settings: JobSettings, n: int = N) -> JobPlan:
    items = [
        Item(id=f"i{k}", line=k + 1, messages_json=orjson.dumps([{"role": "user", "content": CONTENT}]))
        for k in range(n)
    ]
    return plan_the_job(items, rubric=None, settings=settings)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "state")
    yield s
    s.close()


def tpm_read(tpm: int) -> RateLimitReading:
    """What an OpenAI probe reads: `x-ratelimit-limit-tokens` and `-requests`."""
    return RateLimitReading(tokens=LimitGroup(limit=tpm), requests=LimitGroup(limit=30_000))


def seconds_for(tokens: float, limit: int) -> float:
    """The token bound of the sync route's time (`SyncPace.seconds`), at 95% of the limit."""
    return tokens / (0.95 * limit) * 60.0


def test_an_openai_job_starts_against_the_tpm_read_and_counts_input_tokens(store):
    """Its messages about three times its output: the sync route's time is about four times the
    output-only figure, at the TPM the probe read (not the one assumed)."""
    store.rate_limits = tpm_read(2_000_000)
    settings = settings_of(OPENAI)
    job = job_of(settings)
    each = start_tokens_each(settings, job, None, store)
    assert each == pytest.approx(4 * MAX_TOKENS, rel=0.01)
    watch = watch_of(settings, left=N, otpm_read=None, reading=store.rate_limits, tokens_each=each)
    assert watch is not None
    assert (2_000_000, "read", "TPM") == (watch.pace.otpm, watch.pace.otpm_source, watch.pace.limit_name)
    output_only = seconds_for(N * MAX_TOKENS, 2_000_000)
    assert watch.sync_seconds == pytest.approx(4 * output_only, rel=0.01)
    assert "TPM 2,000,000 (read)" in watch.needs()


def test_an_openai_job_whose_input_the_sync_route_cannot_carry_in_time_goes_all_sync(store):
    """A deadline the output alone would leave a batch window for: counted with its input at the TPM
    read, the job is too close for any batch, and the reason names the TPM."""
    store.rate_limits = tpm_read(400_000)
    output_only = seconds_for(N * MAX_TOKENS, 400_000)  # 158 s
    deadline = NOW + 2.5 * output_only * 1.25 + 60 + 120 + 300  # a window for the output alone
    settings = settings_of(OPENAI, deadline=deadline)
    job = job_of(settings)
    assert all_sync_reason(NOW, settings, left=N, otpm_read=None, reading=store.rate_limits) is None
    why = all_sync_reason(
        NOW,
        settings,
        left=N,
        otpm_read=None,
        reading=store.rate_limits,
        tokens_each=start_tokens_each(settings, job, None, store),
    )
    assert why is not None and "too close for any batch" in why
    assert "TPM 400,000 (read)" in why


def test_an_anthropic_job_starts_on_its_output_alone_at_its_otpm(store):
    """Anthropic's OTPM counts output only: its input, however large, adds nothing (the figures are
    those of before the fix)."""
    store.rate_limits = RateLimitReading(output_tokens=LimitGroup(limit=400_000))
    settings = settings_of(CLAUDE)
    each = start_tokens_each(settings, job_of(settings), "a rubric " * 1_000, store)
    assert each == MAX_TOKENS
    watch = watch_of(settings, left=N, otpm_read=400_000, reading=store.rate_limits, tokens_each=each)
    assert watch is not None
    assert ("OTPM", 400_000) == (watch.pace.limit_name, watch.pace.otpm)
    assert watch.sync_seconds == pytest.approx(seconds_for(N * MAX_TOKENS, 400_000))
    assert "OTPM 400,000 (read)" in watch.needs()


def test_the_switch_of_an_openai_job_is_earlier_by_its_input_at_the_tpm_read(store):
    store.rate_limits = tpm_read(2_000_000)
    openai = settings_of(OPENAI)
    plan = switch_plan(openai, job_of(openai), store)
    assert plan is not None
    assert (2_000_000, "read", "TPM") == (plan.pace.otpm, plan.pace.otpm_source, plan.pace.limit_name)
    assert plan.tokens_each == pytest.approx(4 * MAX_TOKENS, rel=0.01)
    claude = settings_of(CLAUDE)
    store.rate_limits = RateLimitReading(output_tokens=LimitGroup(limit=2_000_000))
    before = switch_plan(claude, job_of(claude), store)
    assert before is not None
    assert (2_000_000, "read", float(MAX_TOKENS)) == (
        before.pace.otpm,
        before.pace.otpm_source,
        before.tokens_each,
    )


def test_the_answers_teach_the_input_counted_cached_input_included():
    """Once answers exist, a request's input is their mean: uncached, cache writes and cache reads (a
    cached prompt still counts toward OpenAI's TPM); an Anthropic job counts none of it."""
    learned = Learned(
        answers=10,
        usage=Usage(input_tokens=5_000, output_tokens=800, cache_read_input_tokens=20_000),
    )
    assert 2_500.0 == input_each(settings_of(OPENAI), learned, prior=99_999.0)
    assert 99_999.0 == input_each(settings_of(OPENAI), Learned(), prior=99_999.0)
    assert 0.0 == input_each(settings_of(CLAUDE), learned, prior=99_999.0)


def test_the_switch_counts_the_rubric_sent_with_every_request(store):
    """Before any answer the input is the plan's call-free estimate: the rubric (kept in the
    checkpoint) with every request, and the mean request's messages."""
    settings = settings_of(OPENAI)
    job = job_of(settings)
    bare = tokens_of(settings, job, store)()
    store.rubric = "r" * 4_000  # 1,000 tokens
    assert tokens_of(settings, job, store)() == pytest.approx(bare + 1_000)


def _dry_run(model: str, rubric: str | None) -> dict[str, object]:
    settings = settings_of(model, deadline=None, otpm=400_000)
    job = job_of(settings)
    route = Route(path="batch", n=N, threshold=0, otpm=400_000, otpm_source="flag", forced=True, reason="")
    plan = plan_of(job, job.requests, route, rubric, settings)
    out = dry_run_deadline(NOW, settings_of(model, otpm=400_000), plan)
    assert out is not None
    return out


def test_the_dry_run_of_an_openai_job_counts_its_input_and_rubric():
    openai = _dry_run(OPENAI, None)
    assert openai["sync_seconds"] == pytest.approx(4 * seconds_for(N * MAX_TOKENS, 400_000), rel=0.01)
    with_rubric = _dry_run(OPENAI, "r" * 4_000)  # 1,000 tokens more per request, cached or not
    assert with_rubric["sync_seconds"] == pytest.approx(5 * seconds_for(N * MAX_TOKENS, 400_000), rel=0.01)
    assert with_rubric["latest_switch"] < openai["latest_switch"]


def test_the_dry_run_of_an_anthropic_job_is_unchanged():
    claude = _dry_run(CLAUDE, "r" * 4_000)
    assert claude["sync_seconds"] == pytest.approx(seconds_for(N * MAX_TOKENS, 400_000))
    needed = claude["sync_seconds"] * 1.25 + 60 + 120
    assert claude["latest_switch"] == pytest.approx(NOW + 3 * 3600 - needed)


def test_a_start_far_from_the_deadline_still_uses_batches_for_an_openai_job(store):
    """The input counted does not send everything sync: with room, the job keeps its batches."""
    store.rate_limits = tpm_read(2_000_000)
    settings = settings_of(OPENAI)
    each = start_tokens_each(settings, job_of(settings), None, store)
    watch = watch_of(settings, left=N, otpm_read=None, reading=store.rate_limits, tokens_each=each)
    assert watch is not None
    assert isinstance(deadline_start(NOW, watch), UseBatches)
    assert (
        all_sync_reason(NOW, settings, left=N, otpm_read=None, reading=store.rate_limits, tokens_each=each)
        is None
    )
