"""The dry run of the Python API (`judge_dry_run`, `judge(..., dry_run=True)`): the plan of what a run
would do (`adapters.run.dryrun_plan`), with what the job's checkpoint holds read first, read-only
(`kept_figures`): nothing sent, nothing written, no event loop. The CLI's dry run of a new job reads
no checkpoint and imports neither this module nor the store."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from adapters.checkpoint.fresh import holds_checkpoint
from adapters.checkpoint.jobkey import ids_job_for
from adapters.checkpoint.reads import history_from_store, learned_from_store, spend_from_store
from adapters.checkpoint.store import ContentConflictError, StateMismatchError, Store
from adapters.files.messages import JobInput
from adapters.providers.registry import provider_of
from adapters.run.dryrun_plan import conflict_message, dry_run_plan
from adapters.run.planning import check_arguments, job_of
from adapters.run.result import JudgeResult
from adapters.run.settings import JobSettings
from adapters.usage import UsageError
from judgecore.decide.planning import JobPlan, Learned
from judgecore.job.items import Item
from judgecore.run.job._machine import History


def judge_dry_run(
    items: Sequence[Item] | Iterable[Mapping[str, Any]] | JobInput,
    *,
    rubric: str | None,
    state_dir: Path | str,
    settings: JobSettings = JobSettings(),
    count_tokens: bool = False,
    client: Any = None,
    environ: Mapping[str, str] | None = None,
    source: str | None = None,
) -> JudgeResult:
    """What `judge(..., dry_run=True)` returns (the plan, nothing sent, nothing written), without an
    event loop: a dry run awaits nothing, so `judgecore run --dry-run` does not import asyncio.
    `count_tokens`: count one prompt's real input tokens with the API (`client`, a sync
    `anthropic.Anthropic`; None: built from the environment) to scale the estimate."""
    check_arguments(
        items, rubric=rubric, state_dir=state_dir, settings=settings, client=client, async_client=False
    )
    job = job_of(items, rubric=rubric, settings=settings, state_dir=Path(state_dir), key_of=ids_job_for)
    return dry_run_of(
        job,
        rubric=rubric,
        settings=settings,
        state_dir=Path(state_dir),
        count_tokens=count_tokens,
        client=client,
        environ=environ,
        source=source,
    )


def dry_run_of(
    job: JobPlan,
    *,
    rubric: str | None,
    settings: JobSettings,
    state_dir: Path,
    count_tokens: bool = False,
    client: Any = None,
    environ: Mapping[str, str] | None = None,
    source: str | None = None,
) -> JudgeResult:
    """`dry_run_plan` of `job`, from what the checkpoint in `state_dir` holds if it holds one
    (`kept_figures`: checked as the run checks it, an error naming a line of `source`, the file the
    items were read from)."""
    kept: dict[str, Any] = {}
    if holds_checkpoint(state_dir):
        history, learned, spent = kept_figures(
            state_dir, job, rubric=rubric, settings=settings, source=source
        )
        kept = {"history": history, "learned": learned, "spent": spent}
    return dry_run_plan(
        job,
        rubric=rubric,
        settings=settings,
        count_tokens=count_tokens,
        client=client,
        environ=environ,
        **kept,
    )


def kept_figures(
    state_dir: Path, job: JobPlan, *, rubric: str | None, settings: JobSettings, source: str | None = None
) -> tuple[History, Learned, float]:
    """What the checkpoint in `state_dir` (opened read-only) says of `job` for its dry run: the history
    its machine starts from, what its answers taught the estimate, and the spend so far; checked as the
    run checks it first (another job's manifest, an item changed under its id: exit 2, naming the
    item's line in `source`)."""
    store = Store.open_readonly(state_dir)
    try:
        store.check_job(settings.manifest(rubric), job.items.bindings(), ids_job=job.items.job)
        history = history_from_store(store, provider_of(settings.request_model).route_limit)
        return history, learned_from_store(store), spend_from_store(store).spend_usd or 0.0
    except ContentConflictError as exc:
        raise UsageError(conflict_message(exc, job.items, source)) from None
    except StateMismatchError as exc:
        raise UsageError(str(exc)) from None
    finally:
        store.close()
