"""`judgecore summary`: a job's scores, failures and spend, from its checkpoint alone.

Read-only: the checkpoint is opened with SQLite's `mode=ro`, no API call is made, no key is needed and
the SDK is not imported. The output records are rebuilt from the checkpoint exactly as `run` writes them
(the same `adapters.files.output.row_record`), with the verdict spec given by `--verdict` or else the one the
last run kept, so a pattern changed after the run re-scores every answer. The statistics are the core's
(`judgecore.summary.job_summary`); this module only reads and prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from adapters.checkpoint.store import Store, SubBatchRow
from adapters.usage import UsageError
from judgecore.decide.planning import Learned
from judgecore.decide.spend import Budget, Money, Spend, price_for, spend_of
from judgecore.results.outcomes import Usage
from judgecore.results.verdicts import Unscored, VerdictSpec, VerdictSpecError, parse_verdict, spec_from_json

if TYPE_CHECKING:
    from adapters.report.gather import Example, Provenance
    from judgecore.summary.examples import ExampleGroup
    from judgecore.summary.job_summary import Summary

# The statistics (`judgecore.summary.job_summary`, `statistics`) and the output records (`adapters.run.job`) are
# imported by `job_report` alone: `status` and a run use the spend and the verdict counts of this
# module, not the summary.


def read_verdict_file(path: Path) -> VerdictSpec:
    """The verdict spec in `path`; a `UsageError` naming the file when it cannot be used."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file (--verdict)") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        return spec_from_json(raw)
    except VerdictSpecError as exc:
        raise UsageError(f"{path}: bad verdict spec: {exc}") from None


def spend_from_store(store: Store) -> Money:
    """Spend so far (every billed answer in the checkpoint), all-sync, and the kept estimate."""
    manifest = store.get_meta("manifest") or {}
    estimate = (store.get_meta("estimate") or {}).get("estimated_cost_usd")
    if manifest.get("judges"):  # a panel: each answer at its own judge's prices
        by_judge = spend_by_judge(store)
        if any(v is None for v in by_judge.values()):
            return Money(estimate_usd=estimate)
        spent = sum(v.spent for v in by_judge.values() if v is not None)
        all_sync = sum(v.all_sync for v in by_judge.values() if v is not None)
        return Money(spend_usd=spent, all_sync_usd=all_sync, estimate_usd=estimate)
    price = price_for(str(manifest.get("model", "")))
    if price is None:
        return Money(estimate_usd=estimate)
    spend = spend_of(store.usage_by_route(), price)
    return Money(spend_usd=spend.spent, all_sync_usd=spend.all_sync, estimate_usd=estimate)


def spend_by_model(store: Store) -> list[tuple[str, float | None]]:
    """US dollars per judge, from every billed answer in the checkpoint: a panel's judges each at their
    own prices (`spend_by_judge`, None for a judge with no price), or the job's one model."""
    if by_judge := spend_by_judge(store):
        return [(judge, s.spent if s is not None else None) for judge, s in by_judge.items()]
    model = (store.get_meta("manifest") or {}).get("model")
    return [(str(model), spend_from_store(store).spend_usd)] if model else []


def learned_from_store(store: Store) -> Learned:
    """What the checkpoint's answers say about the rest of the job (`judgecore.decide.planning.Learned`):
    how many were billed and their usage summed, over both routes."""
    sums = [u for _route, u in store.usage_by_route()]
    total = Usage(
        input_tokens=sum(u.input_tokens or 0 for u in sums),
        output_tokens=sum(u.output_tokens or 0 for u in sums),
        cache_creation_input_tokens=sum(u.cache_creation_input_tokens or 0 for u in sums),
        cache_read_input_tokens=sum(u.cache_read_input_tokens or 0 for u in sums),
    )
    return Learned(answers=store.billed_answers() if sums else 0, usage=total)


def spend_by_judge(store: Store) -> dict[str, Spend | None]:
    """A panel's spend per judge (each answer at the prices of the judge it was sent to; None for a
    judge without prices that has been billed), every judge of the job listed; an empty dict for a
    job without a panel."""
    manifest = store.get_meta("manifest") or {}
    judges = list(manifest.get("judges") or ())
    usage = store.usage_by_judge(judges)
    out: dict[str, Spend | None] = {}
    for judge in judges:
        price = price_for(judge)
        billed = usage.get(judge, [])
        if price is None:  # unknown only once it has been billed: a judge that answered nothing cost 0
            out[judge] = None if billed else Spend(spent=0.0, all_sync=0.0, answers=0)
        else:
            out[judge] = spend_of(billed, price)
    return out


def budget_from_store(store: Store, cap: float | None) -> Budget:
    """A run's `Budget`, seeded with the job's spend so far (every billed answer in the checkpoint,
    earlier runs included). Without a price for the job's model only `cap=None` makes sense (the CLI
    refuses `--budget` then), and the spend so far counts as 0."""
    manifest = store.get_meta("manifest") or {}
    if manifest.get("judges"):
        return Budget(cap=cap, spent=spend_from_store(store).spend_usd or 0.0)
    price = price_for(str(manifest.get("model", "")))
    return Budget(cap=cap, spent=store.spent_usd(price) if price is not None else 0.0)


def counts_with_verdicts(store: Store, counts: Mapping[str, int]) -> dict[str, int]:
    """`counts` (by stored status) with the kept verdict spec applied, as the output reports them: a
    succeeded answer whose verdict cannot be read counts as a miss. Unchanged for a job without one."""
    kept = store.get_meta("verdict")
    out = dict(counts)
    if not kept:
        return out
    spec = spec_from_json(kept, sendable=False)
    unread = sum(1 for text in store.succeeded_texts() if isinstance(parse_verdict(text, spec), Unscored))
    out["succeeded"] = out.get("succeeded", 0) - unread
    out["miss"] = out.get("miss", 0) + unread
    return out


def records_from_store(store: Store, verdict: VerdictSpec | None) -> list[dict[str, Any]]:
    """Every item's output object, as `run` writes it, from the checkpoint alone."""
    from adapters.files.output import row_record

    default_route = (store.get_meta("route") or {}).get("path", "sync")
    waiting = store.waiting_batches()
    out = []
    for (cid, item_id, metadata), row in zip(store.item_rows(), store.latest_rows(), strict=True):
        assert cid == row[0], "items and outcomes are read in the same order"
        out.append(
            row_record(item_id, metadata, row, default_route=default_route, waiting=waiting, verdict=verdict)
        )
    kept = store.get_meta("design")
    if kept:  # a multi-request job: each item's requests folded into its line, as the output has it
        from adapters.files.output import fold_records
        from judgecore.job.designs import Design

        return list(fold_records(out, Design.from_json(kept), verdict))
    return out


@attrs.frozen(kw_only=True)
class JobReport:
    """What `summary` shows and the HTML report draws: the summary and the run's timeline."""

    state_dir: Path
    summary: Summary
    model: str | None
    route: Mapping[str, Any] | None
    timeline: tuple[tuple[float, str, int | None, str], ...]
    sub_batches: tuple[SubBatchRow, ...]
    #: what the HTML report adds: who judged how (`adapters.report.gather`), and the judge's own words
    provenance: Provenance | None = None
    examples: tuple[tuple[ExampleGroup, tuple[Example, ...]], ...] = ()
    #: items sent more than once (a retry, a resumed run)
    retried: int = 0
    #: a judge design's job: each item folds several requests' answers
    multi_request: bool = False


def job_report(
    state_dir: Path,
    *,
    verdict_path: Path | None = None,
    by: str | None = None,
    reference: str | None = None,
    now: float | None = None,
    full: bool = True,
) -> JobReport:
    """Read a checkpoint and build its report; `UsageError` for no checkpoint or a bad verdict spec.
    `full`: also what only the HTML report shows (provenance, examples); `now`: the report's date
    (default: the clock now)."""
    import time

    from adapters.report.gather import answers_of, examples, provenance
    from judgecore.summary.job_summary import metadata_key_problem, summarize

    spec = read_verdict_file(verdict_path) if verdict_path is not None else None
    if not Store.exists(state_dir):
        raise UsageError(f"{state_dir}: no judgecore checkpoint here")
    store = Store.open_readonly(state_dir)
    try:
        if spec is None:
            kept = store.get_meta("verdict")
            spec = spec_from_json(kept, sendable=False) if kept else None
        records = records_from_store(store, spec)
        for flag, key in (("--by", by), ("--reference", reference)):
            if key is not None and (problem := metadata_key_problem(records, key, flag)):
                raise UsageError(problem)
        summary = summarize(
            records,
            score_field=spec.score if spec else None,
            verdict_kind=spec.kind if spec else None,
            by=by,
            reference=reference,
            money=spend_from_store(store),
            spend_by_model=spend_by_model(store),
        )
        return JobReport(
            state_dir=state_dir,
            summary=summary,
            model=(store.get_meta("manifest") or {}).get("model"),
            route=store.get_meta("route"),
            timeline=tuple(store.timeline()),
            sub_batches=tuple(store.sub_batches()),
            provenance=provenance(store, state_dir, records, time.time() if now is None else now)
            if full
            else None,
            examples=examples(store, records, spec.score if spec else None) if full else (),
            # an item's attempts are summed over its requests: a design's item was retried when they
            # exceed its answers
            retried=sum(1 for r in records if (r.get("attempts") or 0) > answers_of(r)),
            multi_request=_multi_request(store.get_meta("design")),
        )
    finally:
        store.close()


def _multi_request(kept: Any) -> bool:
    if not kept:
        return False
    from judgecore.job.designs import Design

    return not Design.from_json(kept).single


def summary_json(report: JobReport) -> bytes:
    return orjson.dumps(
        {"state": str(report.state_dir), "model": report.model, **report.summary.to_json()},
        option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS,
    )
