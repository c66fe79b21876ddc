"""A job's plan in the shell: the items checked against the settings and planned (`job_of`), and the
cost model of a run on a route (`plan_of`, which the dry run prints and a run keeps as its estimate).
It reads no checkpoint (the job key of one is given: `KeyOf`); a run's side of the plan, which does,
is `adapters.run.planning_run`."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from adapters.checkpoint.fresh import holds_checkpoint
from adapters.files.items_io import (
    bulk_allocation,
    design_objects,
    input_error,
    items_from_objects,
    load_design_items,
    load_items,
)
from adapters.files.messages import JobInput
from adapters.providers.registry import provider_of
from adapters.run.lanes import batch_lanes, lane_counts, lane_of, lanes, limits_read
from adapters.run.settings import BatchCaps, JobSettings, batch_caps
from adapters.usage import UsageError
from judgecore.decide.planning import JobPlan, Learned, Plan, plan, plan_job
from judgecore.decide.prices import DEFAULT_PRICES
from judgecore.decide.routing import Route
from judgecore.job.designs import Design, item_of_request
from judgecore.job.errors import DuplicateIdError, RequestTooLargeError
from judgecore.job.items import Item, Items
from judgecore.wire.chunking import chunk
from judgecore.wire.models import max_tokens_problem, thinking_problem
from judgecore.wire.requests import Request, Requests

#: The key a job's custom_ids are derived with, of its state dir and manifest: `adapters.checkpoint.jobkey.
#: ids_job_for` (which reads a checkpoint) or `adapters.checkpoint.fresh.fresh_key_of` (a dir holding none)
KeyOf = Callable[[Path, Mapping[str, Any]], str | None]


def check_arguments(
    items: object,
    *,
    rubric: object,
    state_dir: object,
    settings: object,
    out: object = None,
    progress: object = None,
    client: object = None,
    async_client: bool = True,
) -> None:
    """The Python API's arguments, checked before anything is read, written or sent: a `TypeError`
    naming the argument and what it takes (an `AttributeError` deep in the run said neither, and a
    `progress` that was no callable failed only after the first request had gone)."""

    def refuse(name: str, takes: str, value: object, hint: str = "") -> TypeError:
        return TypeError(f"{name} must be {takes}, got {type(value).__name__}{hint}")

    messages = sys.modules.get("adapters.files.messages")  # a `JobInput` (the CLI's) is made by it
    given = isinstance(items, os.PathLike) or (messages is not None and isinstance(items, messages.JobInput))
    if not given and (items is None or isinstance(items, Mapping) or not hasattr(items, "__iter__")):
        hint = ": one dict is one item, give a list of them" if isinstance(items, Mapping) else ""
        raise refuse(
            "items", "a sequence of dicts shaped like input lines, a DataFrame or a path", items, hint
        )
    if rubric is not None and not isinstance(rubric, str):
        hint = " (read the file: Path(...).read_text())" if isinstance(rubric, os.PathLike) else ""
        raise refuse("rubric", "the rubric's text (a str) or None", rubric, hint)
    if rubric is not None and not rubric.strip():  # as `--rubric FILE` of a blank file is refused
        raise UsageError("rubric is empty (or only whitespace); give rubric=None for a job without one")
    if not isinstance(state_dir, str | os.PathLike):
        raise refuse("state_dir", "a path (str or os.PathLike)", state_dir)
    if not isinstance(settings, JobSettings):
        raise refuse(
            "settings", "an adapters.api.JobSettings", settings, " (JobSettings(**...) takes its fields)"
        )
    if out is not None and not isinstance(out, str | os.PathLike):
        raise refuse("out", "a path (str or os.PathLike) or None", out)
    if progress is not None and not callable(progress):
        raise refuse("progress", "a callable taking each event, or None", progress)
    if client is not None:
        sync = any(c.__name__ == "SyncAPIClient" for c in type(client).__mro__)
        if not hasattr(client, "messages") or (async_client and sync):
            takes = "an anthropic.AsyncAnthropic (judge() sends concurrently) or None"
            raise refuse("client", takes if async_client else "an anthropic.Anthropic or None", client)


def job_of(
    items: Sequence[Item] | Iterable[Mapping[str, Any]] | JobInput,
    *,
    rubric: str | None,
    settings: JobSettings,
    state_dir: Path,
    key_of: KeyOf,
) -> JobPlan:
    """The job's items, checked against the settings, with the custom_ids of the job `state_dir`
    holds (or of a new one: `key_of`, as `items_of` takes it), and its plan, built once (a dry run: the items keep their messages when
    they hold them, for `--count-tokens`)."""
    # a `JobInput` is made by `adapters.files.messages`: a dry run of a file's items never imports it
    messages = sys.modules.get("adapters.files.messages")
    if messages is not None and isinstance(items, messages.JobInput):
        given = items
        items = given.items
        if not items.holds_messages and items.digests is None:  # the source holds them (`load_input`)
            items = attrs.evolve(items, digests=messages.joined_digests(given.messages, items))
    return checked_plan(
        items_of(items, rubric, settings, state_dir, key_of), rubric=rubric, settings=settings
    )


def items_of(
    items: Sequence[Item] | Iterable[Mapping[str, Any]],
    rubric: str | None,
    settings: JobSettings,
    state_dir: Path,
    key_of: KeyOf,
) -> Items:
    """The job's items as columns, with the custom_ids of the job `state_dir` holds (or a new one's):
    `key_of(state_dir, manifest)`, the key they are derived with (`adapters.checkpoint.jobkey.ids_job_for`,
    which reads the checkpoint; `adapters.checkpoint.fresh.fresh_key_of` for a dir that holds none)."""
    plain = settings.plain
    if isinstance(items, str | os.PathLike):  # a path: the file's items, read as the CLI reads it
        items = (
            load_items(Path(items)) if plain else load_design_items(Path(items), settings.design, job=None)
        )
    if not isinstance(items, Items) and not plain:
        items = design_objects(settings.design, items)  # type: ignore[arg-type]
    elif (
        isinstance(items, Items)
        and not settings.design.single
        and len(items)
        and item_of_request(settings.design, items.ids[0]) is None  # parsed one request an item
    ):
        raise UsageError(
            f"the settings ask {settings.design.per_item} requests an item (a panel, samples or "
            "pairwise), but these items were parsed one request an item: pass the input's path or "
            "its rows, or items read with load_design_items(path, settings.design)"
        )
    if not isinstance(items, Items):  # a tuple may hold dicts as well as `Item`s: each is checked
        items = items_from_objects(items)  # type: ignore[arg-type]
    cols = Items.of(items)
    if cols.job is None or holds_checkpoint(state_dir):  # the CLI derived a new dir's key already
        try:
            cols = cols.for_job(key_of(state_dir, settings.manifest(rubric)))
        except DuplicateIdError as exc:
            raise input_error(None, exc.line, exc.reason) from None
    return cols


def checked_plan(items: Items, *, rubric: str | None, settings: JobSettings) -> JobPlan:
    """The plan of `items`, checked against the settings first (exit 2 before anything is sent)."""
    if not items:
        raise UsageError("the input has no items")
    warnings = settings.warnings()  # a retired model: exit 2 here, before anything is sent
    given = items.max_tokens
    for k, mt in enumerate(given if given.count(None) != len(given) else ()):  # () : none given
        if mt is None:
            continue
        for model in settings.models:
            if problem := max_tokens_problem(model, mt):
                raise input_error(None, items.lines[k], f"item {items.ids[k]!r}: {problem}")
            if settings.thinking is not None and (problem := thinking_problem(model, settings.thinking, mt)):
                raise input_error(None, items.lines[k], f"item {items.ids[k]!r}: {problem}")
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    with bulk_allocation():
        return plan_the_job(items, rubric=rubric, settings=settings)


def plan_the_job(items: Sequence[Item], *, rubric: str | None, settings: JobSettings) -> JobPlan:
    """The job's plan, once; an item too large for any sub-batch (when batches are possible) is a
    `UsageError` naming its line, before anything is sent."""
    try:
        return plan_job(
            items,
            model=settings.request_model,
            max_tokens=settings.max_tokens,
            rubric=rubric,
            max_batch_bytes=None if settings.force == "sync" else batch_caps(settings).bytes,
            output_config=settings.verdict.output_config() if settings.verdict is not None else None,
            thinking=settings.thinking,
        )
    except RequestTooLargeError as exc:
        raise input_error(None, exc.line, exc.reason) from None


def plan_of(
    job: JobPlan,
    requests: Sequence[Request],
    chosen: Route,
    rubric: str | None,
    settings: JobSettings,
    *,
    final: int = 0,
    live: int = 0,
    learned: Learned | None = None,
    spent: float = 0.0,
    chunked: bool = True,
) -> Plan:
    """The plan of sending `requests` of `job` on `chosen` (chunked into sub-batches on the batch
    route, unless `chunked` is False), with `final` and `live` items counted, not sent: what the dry
    run prints and a run's estimate. `learned` (the checkpoint's answers, a counted prompt) teaches
    the estimate; `settings.budget` is checked against it, with the job's `spent` so far."""
    design = settings.design
    panel = not settings.plain and bool(design.judges)
    on_batch = _batch_judges(job, settings, chosen) if panel else frozenset()
    caps = batch_caps(settings, min(on_batch) if on_batch else None)
    subs: tuple[Any, ...] = ()
    by_provider: list[tuple[str, int, int, int]] = []
    if chosen.path == "batch" and chunked and not panel:
        subs = tuple(chunk(requests, max_requests=caps.requests, max_bytes=caps.bytes))
    elif chosen.path == "batch" and chunked:
        # each batch lane's sub-batches hold its own requests, within its own provider's limits
        cols = Requests.of(requests)
        units = [
            group
            for lane_judges in lanes(sorted(on_batch)).values()
            # a provider whose batch names one model (OpenAI's) batches each judge on its own
            for group in (
                [(j,) for j in lane_judges] if provider_of(lane_judges[0]).batch_one_model else [lane_judges]
            )
        ]
        for lane_judges in units:
            mine = frozenset(lane_judges)
            own = batch_caps(settings, lane_judges[0])
            batched = cols.only(
                frozenset(c for c, m in zip(cols.custom_ids, cols.models, strict=True) if m in mine)
            )
            made = tuple(chunk(batched, max_requests=own.requests, max_bytes=own.bytes))
            subs += made
            name = provider_of(lane_judges[0]).name
            k = sum(n for p, n, _, _ in by_provider if p == name)  # a provider batching per judge: summed
            by_provider = [e for e in by_provider if e[0] != name]
            by_provider.append((name, k + len(made), own.requests, own.bytes))
    whole = _plan(
        job,
        requests,
        chosen,
        subs,
        rubric,
        settings,
        final=final,
        live=live,
        learned=learned,
        spent=spent,
        caps=caps,
    )
    if not settings.plain and not design.single:
        by_judge: list[tuple[str, float | None]] = []
        sync_costs: list[float | None] = []
        if design.judges:
            template = job.template(chosen.path)
            cols = Requests.of(requests)
            models = cols.models
            routes = _judge_routes(design.judges, chosen, on_batch)
            for judge in design.judges:
                mine = cols.only(
                    frozenset(c for c, m in zip(cols.custom_ids, models, strict=True) if m == judge)
                )
                own = (
                    chosen
                    if chosen.path == "sync" or judge in on_batch
                    else attrs.evolve(chosen, path="sync")
                )
                p = plan(
                    mine,
                    route=own,
                    sub_batches=(),
                    template=template.with_model(judge),
                    rubric=rubric,
                    max_batch_requests=caps.requests,
                    max_batch_bytes=caps.bytes,
                    prices=DEFAULT_PRICES,
                    thinking=settings.thinking,
                    learned=learned,
                )
                by_judge.append((judge, p.estimated_cost_usd))
                sync_costs.append(p.all_sync_cost_usd)
            known = [c for _, c in by_judge]
            # each judge's figure is rounded to 4 places (`plan`), and so is their sum (no 0.15230000000000002)
            cost = None if any(c is None for c in known) else round(sum(c for c in known if c is not None), 4)
            all_sync = (
                None
                if any(c is None for c in sync_costs)
                else round(sum(c for c in sync_costs if c is not None), 4)
            )
            whole = attrs.evolve(
                whole, estimated_cost_usd=cost, all_sync_cost_usd=all_sync, model=", ".join(design.judges)
            )
        return attrs.evolve(
            whole,
            items=len(job.items) // design.per_item,
            per_item=design.per_item,
            design=_design_words(design),
            cost_by_judge=tuple(by_judge),
            route_by_judge=routes if design.judges else (),
            sub_batches_by_provider=tuple(by_provider),
        )
    return whole


def _batch_judges(job: JobPlan, settings: JobSettings, chosen: Route) -> frozenset[str]:
    """The judges whose lanes take their batch route when the job's route is batch (`lanes.batch_lanes`:
    each lane by its own request count, as `adapters.run.panels` sends them); the others go sync."""

    judges = settings.design.judges
    on = batch_lanes(
        judges,
        lane_counts(job.requests, settings.request_model),
        threshold=settings.sync_threshold,
        force=settings.force,
        limits=limits_read(settings.request_model, chosen),
    )
    return frozenset(j for j in judges if lane_of(j) in on)


def _judge_routes(
    judges: Sequence[str], chosen: Route, on_batch: frozenset[str]
) -> tuple[tuple[str, str], ...]:
    """A panel across providers: each judge's route in words (`adapters.run.panels` sends them so:
    `on_batch`, the judges whose lanes batch); empty for a panel of one provider (its route is the job's)."""

    if len(lanes(judges)) < 2:
        return ()
    out = []
    for judge in judges:
        provider = provider_of(judge)
        if provider.name == "served":
            out.append((judge, "sync, self-hosted"))
        elif judge in on_batch:
            out.append((judge, chosen.path))
        elif provider.batch:  # its provider has a batch route, but its lane is too small for it
            out.append((judge, "sync" if chosen.path == "sync" else "sync (too few requests for a batch)"))
        else:
            out.append((judge, "sync" if chosen.path == "sync" else "sync (no batch route built)"))
    return tuple(out)


def _design_words(design: Design) -> str:
    parts = []
    if design.samples > 1:
        parts.append(f"{design.samples} samples")
    if design.pairwise is not None:
        parts.append(f"{design.pairwise[0]} vs {design.pairwise[1]} in both orders")
    if design.judges:
        parts.append(f"a panel of {len(design.judges)} judges")
    return " x ".join(parts) or "one request"


def _plan(
    job: JobPlan,
    requests: Sequence[Request],
    chosen: Route,
    subs: Any,
    rubric: str | None,
    settings: JobSettings,
    *,
    final: int,
    live: int,
    learned: Learned | None,
    spent: float,
    caps: BatchCaps | None = None,
) -> Plan:
    caps = caps or batch_caps(settings)
    return plan(
        requests,
        route=chosen,
        sub_batches=subs,
        template=job.template(chosen.path),
        rubric=rubric,
        max_batch_requests=caps.requests,
        max_batch_bytes=caps.bytes,
        prices=DEFAULT_PRICES,
        final=final,
        live=live,
        thinking=settings.thinking,
        warnings=settings.warnings(),
        learned=learned,
        budget=settings.budget,
        spent=spent,
    )
