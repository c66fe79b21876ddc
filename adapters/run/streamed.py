"""The dry run of an input file on a fresh state dir, one request an item, in memory flat in the
file's size: its items read a chunk at a time and summed into the plan's totals
(`judgecore.decide.tally.PlanTally`), none of them kept, so a 10,000,000-item job is planned in about
the memory of a 1,000,000-item one: what it keeps to look for repeated ids (8 bytes an item,
`judgecore.job.seen.SeenIds`) goes to an unnamed temporary file past `HELD_HASHES` of them
(`adapters.files.spill`).

It prints what `adapters.run.dryrun.judge_dry_run` prints of the same file, and says what is wrong
with it as that does, in the same order: the first bad line, a repeated id (both its lines: the file
is read a second time for them, only when a repeat may be there), an item's max_tokens a model
refuses, a request too large for any sub-batch. A fresh state dir has no history, answers or spend,
so the route is decided from the item count alone and the estimate is the assumed one.
"""

from __future__ import annotations

import sys
from pathlib import Path

import attrs

from adapters.files.items_io import content_at, input_error, scan_items
from adapters.files.readers import InputKind
from adapters.files.spill import HashesOnDisk
from adapters.run.policy import job_policy
from adapters.run.result import JudgeResult
from adapters.run.settings import JobSettings, batch_caps
from adapters.usage import EXIT_OK, UsageError
from judgecore.decide.planning import EXPECTED_OUTPUT_TOKENS, Learned, plan_of_totals, request_templates
from judgecore.decide.prices import DEFAULT_PRICES
from judgecore.decide.tally import MaxTokensProblem, PlanTally
from judgecore.job.ids import covers_content
from judgecore.job.seen import SeenIds, first_repeat
from judgecore.job.texts import Unread
from judgecore.run.job._machine import History, JobRun
from judgecore.wire.models import max_tokens_problem, thinking_problem

#: the ids' hashes a dry run holds before it keeps them on disk (`adapters.files.spill`): 16 MB
HELD_HASHES = 1 << 21


def streams(settings: JobSettings, *, fresh: bool, count_tokens: bool) -> bool:
    """Whether a dry run of a file is planned as it is read (`streamed_dry_run`): on a fresh state dir
    (nothing to check the items against), one request an item, and no prompt to count (which holds
    the messages)."""
    return fresh and settings.plain and not count_tokens


def streamed_dry_run(
    path: Path,
    *,
    kind: InputKind | None,
    rubric: str | None,
    settings: JobSettings,
    job: str | None,
) -> JudgeResult:
    """The plan of `path`'s items (`kind`: its format, else told by its name) under `settings`, their
    custom_ids those of job key `job`: `judge_dry_run`'s, with no item kept (see the module)."""
    sync, batch = request_templates(
        model=settings.request_model,
        max_tokens=settings.max_tokens,
        rubric=rubric,
        output_config=settings.verdict.output_config() if settings.verdict is not None else None,
        thinking=settings.thinking,
    )
    caps = batch_caps(settings)
    learned = Learned()  # a fresh state dir: no answers to learn from
    tally = PlanTally(
        batch,
        job=job,
        max_requests=caps.requests,
        max_bytes=caps.bytes,
        output_per_answer=learned.output_per_answer(EXPECTED_OUTPUT_TOKENS),
        problem=_max_tokens_problem(settings),
    )
    seen = SeenIds()
    with HashesOnDisk() as disk:
        for chunk in scan_items(path, kind=kind):
            tally.add(chunk)
            seen.add(chunk.ids)
            if seen.held > HELD_HASHES:  # a plan of millions: their hashes kept on disk past these
                disk.keep(seen.take())
        repeats = seen.repeats(disk.buckets())
    if not tally.n:
        raise UsageError(f"{path}: the input has no items")
    if repeats:  # a repeated id, or two hashes that met: the file read again
        twice = first_repeat(((c.ids, c.lines) for c in scan_items(path, kind=kind)), repeats)
        if twice is not None:
            raise input_error(path, twice.line, twice.reason)
    warnings = settings.warnings()  # a retired model: exit 2 here, before anything is sent
    if tally.first_problem is not None:
        line, item_id, problem = tally.first_problem
        raise input_error(None, line, f"item {item_id!r}: {problem}")
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if settings.force != "sync" and tally.over(caps.bytes) and tally.largest_at is not None:
        # its custom_id, as the run names it: a `v3` key's covers its content, read again for it
        line = tally.largest_at[1]
        large = tally.too_large(
            caps.bytes, content=content_at(path, line, kind=kind) if covers_content(job) else None
        )
        assert large is not None
        raise input_error(None, large.line, large.reason)
    dry = JobRun.start(Unread(tally.n), History(), job_policy(settings)).dry_run()
    totals = tally.totals()
    if dry.route.path != "batch":  # sub-batches are the batch route's alone
        totals = attrs.evolve(totals, sub_batches=())
    p = plan_of_totals(
        totals,
        route=dry.route,
        template=sync if dry.route.path == "sync" else batch,
        rubric=rubric,
        max_batch_requests=caps.requests,
        max_batch_bytes=caps.bytes,
        prices=DEFAULT_PRICES,
        thinking=settings.thinking,
        warnings=settings.warnings(),
        learned=learned,
        budget=settings.budget,
    )
    return JudgeResult(exit_code=EXIT_OK, route=dry.route, counts={}, records={}, plan=p)


def _max_tokens_problem(settings: JobSettings) -> MaxTokensProblem:
    """What is wrong with an item's own max_tokens for any of the job's models (as the run checks it,
    `adapters.run.planning._checked_plan`: each model's limit, then its room for thinking)."""

    def problem(mt: int) -> str | None:
        for model in settings.models:
            if found := max_tokens_problem(model, mt):
                return found
            if settings.thinking is not None and (found := thinking_problem(model, settings.thinking, mt)):
                return found
        return None

    return problem
