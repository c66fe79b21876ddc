"""`judgecore summary`: a job's scores, failures and spend, from its checkpoint alone.

Read-only: the checkpoint is opened with SQLite's `mode=ro`, no API call is made, no key is needed and
the SDK is not imported. The output records are rebuilt from the checkpoint exactly as `run` writes them
(the same `judgecore.results.output_line.record_of_row`), with the verdict spec given by `--verdict` or else
the one the last run kept, so a pattern changed after the run re-scores every answer. The statistics are
the core's (`judgecore.summary.job_summary`); this module only reads and assembles."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import orjson

from adapters.checkpoint.reads import spend_by_model, spend_from_store
from adapters.checkpoint.records import records_from_store
from adapters.checkpoint.store import Store, SubBatchRow
from adapters.files.readers import read_verdict_file
from adapters.report.gather import Example, Provenance, answers_of, examples, provenance
from adapters.run.lanes import judge_routes
from adapters.usage import UsageError
from judgecore.results.verdicts import spec_from_json
from judgecore.summary.examples import ExampleGroup
from judgecore.summary.job_summary import TOP_GROUPS, Summary, metadata_key_problem, summarize
from judgecore.values import frozen


@frozen(kw_only=True)
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
    author: str | None = None,
    now: float | None = None,
    full: bool = True,
    top: int | None = None,
) -> JobReport:
    """Read a checkpoint and build its report; `UsageError` for no checkpoint or a bad verdict spec.
    `full`: also what only the HTML report shows (provenance, examples); `now`: the report's date
    (default: the clock now); `top`: the most groups shown (default `judgecore.summary.job_summary.TOP_GROUPS`)."""

    spec = read_verdict_file(verdict_path) if verdict_path is not None else None
    if not Store.exists(state_dir):
        raise UsageError(f"{state_dir}: no judgecore checkpoint here")
    store = Store.open_readonly(state_dir)
    try:
        if spec is None:
            kept = store.verdict
            spec = spec_from_json(kept, sendable=False) if kept else None
        records = records_from_store(store, spec)
        for flag, key in (("--by", by), ("--reference", reference), ("--author", author)):
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
            route_by_model=judge_routes(store),
            scale=spec.scale if spec else None,
            top=TOP_GROUPS if top is None else top,
            author=author,
        )
        return JobReport(
            state_dir=state_dir,
            summary=summary,
            model=(store.manifest or {}).get("model"),
            route=attrs.asdict(route) if (route := store.route) is not None else None,
            timeline=tuple(store.timeline()),
            sub_batches=tuple(store.sub_batches()),
            provenance=provenance(store, state_dir, records, time.time() if now is None else now)
            if full
            else None,
            examples=examples(store, records, spec.score if spec else None) if full else (),
            # an item's attempts are summed over its requests: a design's item was retried when they
            # exceed its answers
            retried=sum(1 for r in records if (r.get("attempts") or 0) > answers_of(r)),
            multi_request=(design := store.design) is not None and not design.single,
        )
    finally:
        store.close()


def summary_json(report: JobReport) -> bytes:
    return orjson.dumps(
        {"state": str(report.state_dir), "model": report.model, **report.summary.to_json()},
        option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS,
    )
