"""The dry-run plan: snapshots of its text and JSON for representative jobs, and the laws of its numbers."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import item_lists

from judgecore.decide.planning import estimate_tokens, plan, plan_job
from judgecore.decide.resume import JobState
from judgecore.decide.routing import RoutePolicy, route
from judgecore.job.errors import RequestTooLargeError
from judgecore.job.items import Item
from judgecore.job.parsing import parse_item
from judgecore.summary.plan_text import plan_json, render_plan
from judgecore.wire.chunking import chunk
from judgecore.wire.requests import RequestTemplate, build_requests

MODEL = "claude-sonnet-4-6"
# A fixed rubric of a few thousand characters (about 1,400 tokens: long enough to be cached).
RUBRIC = "".join(
    f"Criterion {n}: judge whether the answer is correct, complete and grounded in the question; "
    f"score 1-5 and justify briefly.\n"
    for n in range(1, 46)
)


def synthetic_items(n: int) -> list[Item]:
    """n items with prompts from a fixed pattern, of varied length."""
    return [
        Item(
            id=f"q{i:06d}-s{i % 7}",
            line=i + 1,
            messages_json=orjson.dumps(
                [{"role": "user", "content": f"Question {i}: " + "why is the sky blue? " * (1 + i % 40)}]
            ),
        )
        for i in range(n)
    ]


def dry_run(n: int, *, otpm: int | None = None, force=None):
    items = synthetic_items(n)
    r = route(n, policy=RoutePolicy(), otpm=otpm, force=force, otpm_source="flag")
    template = RequestTemplate.build(model=MODEL, max_tokens=1024, rubric=RUBRIC, path=r.path)
    requests = build_requests(items, template)
    subs = chunk(requests) if r.path == "batch" else ()
    return plan(
        requests,
        route=r,
        sub_batches=subs,
        template=template,
        rubric=RUBRIC,
        max_batch_requests=8000,
        max_batch_bytes=250_000_000,
    )


JOBS = {
    "90000_items_batch": {"n": 90_000},
    "1500_items_sync": {"n": 1_500},
    "5000_items_forced_sync": {"n": 5_000, "force": "sync"},
    "1500_items_otpm_100k_batch": {"n": 1_500, "otpm": 100_000},
}


@pytest.fixture(scope="module")
def plans():
    return {name: dry_run(**job) for name, job in JOBS.items()}


@pytest.mark.parametrize("job", list(JOBS))
def test_plan_text_is_stable(plans, job, snapshot):
    assert snapshot == render_plan(plans[job])


@pytest.mark.parametrize("job", list(JOBS))
def test_plan_json_is_stable(plans, job, snapshot):
    assert snapshot == orjson.dumps(plan_json(plans[job]), option=orjson.OPT_INDENT_2).decode()


@pytest.mark.parametrize("job", list(JOBS))
def test_plan_json_has_the_contract_keys(plans, job):
    doc = plan_json(plans[job])
    required = {
        "n",
        "threshold",
        "otpm",
        "otpm_source",
        "route",
        "reason",
        "sub_batches",
        "estimated_cost_usd",
    }
    assert required <= set(doc)
    assert doc["otpm_source"] in {"read", "flag", "assumed"}


def test_representative_jobs_route_as_the_issue_expects(plans):
    assert {
        "90000_items_batch": ("batch", 2000, 12),
        "1500_items_sync": ("sync", 2000, 0),
        "5000_items_forced_sync": ("sync", 2000, 0),
        "1500_items_otpm_100k_batch": ("batch", 500, 1),
    } == {name: (p.route.path, p.route.threshold, len(p.sub_batches)) for name, p in plans.items()}


@given(item_lists(min_size=1, max_size=30), st.sampled_from(["sync", "batch"]), st.integers(1, 10))
def test_batch_costs_half_of_sync_before_caching(its, path, max_requests):
    """With no rubric, the batch estimate is half the all-sync one (up to rounding)."""
    r = route(len(its), policy=RoutePolicy(), force=path)
    template = RequestTemplate.build(model=MODEL, max_tokens=100, rubric=None, path=path)
    requests = build_requests(its, template)
    subs = chunk(requests, max_requests=max_requests) if path == "batch" else ()
    p = plan(
        requests,
        route=r,
        sub_batches=subs,
        template=template,
        rubric=None,
        max_batch_requests=max_requests,
        max_batch_bytes=250_000_000,
    )
    factor = 0.5 if path == "batch" else 1.0
    assert pytest.approx(p.all_sync_cost_usd * factor, abs=1e-4) == p.estimated_cost_usd
    assert sum(estimate_tokens(q.message_size) for q in requests) == p.input_tokens
    assert [(len(sb.requests), sb.size) for sb in subs] == list(p.sub_batches)


def test_unknown_model_has_no_cost_estimate():
    template = RequestTemplate.build(model="claude-unknown", max_tokens=10, rubric=None, path="sync")
    requests = build_requests(synthetic_items(3), template)
    p = plan(
        requests,
        route=route(3, policy=RoutePolicy()),
        sub_batches=(),
        template=template,
        rubric=None,
        max_batch_requests=8000,
        max_batch_bytes=250_000_000,
    )
    assert (None, None) == (p.estimated_cost_usd, plan_json(p)["estimated_cost_usd"])
    assert "unknown: no price for claude-unknown" in render_plan(p)


# --- what is left: a dry run on a state dir with a history -------------------------------------------


def test_plan_of_what_is_left_counts_final_and_live_items_and_costs_only_the_rest(snapshot):
    """90,000 items of which 40,000 are final and 8,000 sit in a live batch: 42,000 to send."""
    items = synthetic_items(90_000)
    r = route(90_000, policy=RoutePolicy(), otpm=400_000)
    template = RequestTemplate.build(model=MODEL, max_tokens=1024, rubric=RUBRIC, path="batch")
    left = build_requests(items, template)[48_000:]
    p = plan(
        left,
        route=r,
        sub_batches=chunk(left),
        template=template,
        rubric=RUBRIC,
        max_batch_requests=8000,
        max_batch_bytes=250_000_000,
        final=40_000,
        live=8_000,
    )
    fresh = plan(
        left,
        route=r,
        sub_batches=chunk(left),
        template=template,
        rubric=RUBRIC,
        max_batch_requests=8000,
        max_batch_bytes=250_000_000,
    )
    assert (90_000, 40_000, 8_000, 42_000) == (p.n, p.final, p.live, p.to_send)
    assert fresh.estimated_cost_usd == p.estimated_cost_usd
    assert snapshot == render_plan(p)
    assert snapshot == orjson.dumps(plan_json(p), option=orjson.OPT_INDENT_2).decode()


def test_a_schema_verdict_plan_shows_the_schema_as_sent(snapshot):
    """The plan carries the verdict schema as every request carries it (bounds moved into the
    description, the object closed), in its text as one line and in its JSON as `output_schema`."""
    from judgecore.results.verdicts import spec_from_json

    spec = spec_from_json(
        {
            "schema": {
                "type": "object",
                "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}},
                "required": ["score"],
            }
        }
    )
    items = synthetic_items(30)
    r = route(30, policy=RoutePolicy(), otpm=400_000)
    template = RequestTemplate.build(
        model=MODEL, max_tokens=1024, rubric=RUBRIC, path="sync", output_config=spec.output_config()
    )
    requests = build_requests(items, template)
    p = plan(
        requests,
        route=r,
        sub_batches=(),
        template=template,
        rubric=RUBRIC,
        max_batch_requests=8000,
        max_batch_bytes=250_000_000,
    )
    assert spec.wire_schema == plan_json(p)["output_schema"]
    assert snapshot == render_plan(p)
    assert snapshot == orjson.dumps(plan_json(p), option=orjson.OPT_INDENT_2).decode()


# --- the job's plan, built once ----------------------------------------------------------------------


@given(item_lists(max_size=30), st.integers(1, 64_000), st.one_of(st.none(), st.text(max_size=200)))
def test_job_plan_holds_every_request_once_and_each_routes_template(its, max_tokens, rubric):
    job = plan_job(its, model=MODEL, max_tokens=max_tokens, rubric=rubric, max_batch_bytes=None)
    batch = RequestTemplate.build(model=MODEL, max_tokens=max_tokens, rubric=rubric, path="batch")
    sync = RequestTemplate.build(model=MODEL, max_tokens=max_tokens, rubric=rubric, path="sync")
    assert build_requests(its, batch) == job.requests
    assert (sync, batch) == (job.template("sync"), job.template("batch"))
    assert [i.custom_id for i in its] == [r.custom_id for r in job.requests]
    for i, r in zip(its, job.requests, strict=True):  # the size is the batch body's; sync: the same request
        body = r.body(job.batch_template, i.messages_json)
        assert r.size == len(body)
        assert orjson.loads(body)["params"]["messages"] == r.params(sync, i.messages_json)["messages"]


def test_job_plan_names_the_line_of_a_request_too_large_for_any_sub_batch():
    items = [
        parse_item(1, b'{"id": "small", "prompt": "x"}'),
        parse_item(4, orjson.dumps({"id": "huge", "prompt": "y" * 5000})),
    ]
    with pytest.raises(RequestTooLargeError) as err:
        plan_job(items, model=MODEL, max_tokens=10, rubric=None, max_batch_bytes=2000)
    assert (4, "huge") == (err.value.line, err.value.item_id)
    assert str(err.value).startswith("line 4: item 'huge'")
    plan_job(items, model=MODEL, max_tokens=10, rubric=None, max_batch_bytes=None)  # sync: no limit


@given(item_lists(min_size=1, max_size=20), st.data())
def test_a_job_is_finished_when_every_item_is_final_and_nothing_is_live(its, data):
    job = plan_job(its, model=MODEL, max_tokens=10, rubric=None, max_batch_bytes=None)
    cids = [i.custom_id for i in its]
    final = frozenset(data.draw(st.lists(st.sampled_from(cids), unique=True)))
    live = frozenset(data.draw(st.lists(st.sampled_from(cids), unique=True)))
    state = JobState(final=final, in_flight=live)
    assert (final == frozenset(cids) and not live) == job.finished(state)


# --- today's models: thinking on the wire and in the plan --------------------------------------------


def _plan_of(model: str, *, thinking=None, warnings=(), max_tokens: int = 16_000):
    from judgecore.wire.models import Thinking

    th = Thinking.parse(thinking) if thinking is not None else None
    template = RequestTemplate.build(
        model=model, max_tokens=max_tokens, rubric=None, path="sync", thinking=th.param() if th else None
    )
    requests = build_requests(synthetic_items(3), template)
    p = plan(
        requests,
        route=route(3, policy=RoutePolicy()),
        sub_batches=(),
        template=template,
        rubric=None,
        max_batch_requests=8000,
        max_batch_bytes=250_000_000,
        thinking=th,
        warnings=warnings,
    )
    return template, requests, p


def test_thinking_goes_on_the_wire_in_both_the_batch_body_and_the_sync_params():
    template, requests, _ = _plan_of("claude-sonnet-4-6", thinking="2048")
    messages = synthetic_items(3)[0].messages_json
    raw = requests[0].body(template, messages)
    body = orjson.loads(raw)
    assert {"type": "enabled", "budget_tokens": 2048} == body["params"]["thinking"]
    assert {"type": "enabled", "budget_tokens": 2048} == requests[0].params(template, messages)["thinking"]
    assert requests[0].message_size == len(messages)
    assert len(raw) == requests[0].size  # the size counts the thinking bytes


def test_a_plan_without_thinking_has_none_of_its_keys():
    _, _, p = _plan_of("claude-sonnet-4-6", max_tokens=1024)
    assert not {"thinking", "thinks", "warnings", "price_estimated"} & set(plan_json(p))
    assert "thinking" not in render_plan(p)


def test_a_thinking_models_plan_says_so_with_its_warnings_and_a_cost():
    _, _, p = _plan_of("claude-fable-5-2", warnings=("something to know",))
    j = plan_json(p)
    assert (True, True, ["something to know"]) == (j["thinks"], j["price_estimated"], j["warnings"])
    assert j["estimated_cost_usd"] is not None
    text = render_plan(p)
    assert "thinking     on (the model's default)" in text
    assert "prices are estimated by family" in text
    assert "  warning      something to know\n" in text


def _sync_plan(n: int, **kw):  # type: ignore[no-untyped-def]
    from judgecore.decide.routing import route as route_

    template = RequestTemplate.build(model=MODEL, max_tokens=1000, rubric=None, path="sync")
    requests = build_requests(synthetic_items(n), template)
    r = route_(n, policy=RoutePolicy(), force="sync")
    return plan(
        requests,
        route=r,
        sub_batches=(),
        template=template,
        rubric=None,
        max_batch_requests=8000,
        max_batch_bytes=250_000_000,
        **kw,
    )


def test_a_plan_learns_output_and_input_per_request_from_the_answers_in_the_checkpoint():
    from judgecore.decide.planning import EXPECTED_OUTPUT_TOKENS, Learned
    from judgecore.results.outcomes import Usage

    fresh = _sync_plan(50)
    assert EXPECTED_OUTPUT_TOKENS * 50 == fresh.output_tokens and "assumed" == fresh.basis
    per = fresh.input_tokens / 50
    seen = Learned(answers=10, usage=Usage(input_tokens=round(per * 2 * 10), output_tokens=400))
    learned = _sync_plan(50, learned=seen)
    assert (40, 40 * 50) == (learned.output_per_answer, learned.output_tokens)
    assert pytest.approx(fresh.input_tokens * 2, rel=0.01) == learned.input_tokens
    assert "learned from 10 answers" == learned.basis
    assert "answers of 40 tokens, the mean of 10 answers so far" in render_plan(learned)


def test_a_counted_prompt_scales_the_input_estimate_until_answers_teach_it():
    from judgecore.decide.planning import Learned

    fresh = _sync_plan(20)
    counted = _sync_plan(20, learned=Learned(counted=300, counted_estimate=100))
    assert 3 * fresh.input_tokens == pytest.approx(counted.input_tokens, abs=1)
    assert 300 == plan_json(counted)["estimated_tokens"]["counted_prompt"]


def test_budget_fit_covers_requests_at_their_mean_while_the_last_still_fits_at_its_bound():
    from judgecore.decide.planning import budget_fit

    assert (True, 10) == (lambda f: (f.fits, f.covers))(
        budget_fit(100.0, spent=0.0, per_request=1.0, n=10, max_bound=5.0)
    )
    f = budget_fit(10.0, spent=1.0, per_request=1.0, n=100, max_bound=5.0)
    assert (False, 5) == (f.fits, f.covers)  # 9 of room: 4 at their mean, then one while 5 is left
    assert 0 == budget_fit(10.0, spent=6.0, per_request=1.0, n=3, max_bound=5.0).covers


def test_a_dry_run_with_a_budget_says_whether_the_estimate_fits():
    est = _sync_plan(30).estimated_cost_usd
    assert est is not None
    fits = _sync_plan(30, budget=est * 10)
    short = _sync_plan(30, budget=est / 2)
    assert fits.budget is not None and fits.budget.fits
    assert short.budget is not None and not short.budget.fits and 0 < short.budget.covers < 30
    assert "does not cover the estimate: about" in render_plan(short)
    assert {"usd", "spent_usd", "fits", "covers"} == set(plan_json(short)["budget"])
