"""judgecore: the pure decision core of LLM-judge runs through the Anthropic API.

Every function here takes and returns immutable values; nothing here touches the SDK, the clock, the
disk or the terminal (that is `adapters`). The packages, by concern, each importing only those below it
(the contracts in pyproject.toml, checked by `lint-imports`):

- `run`: the machines: the job (`run.job.JobRun`), the batch run (`run.batch.BatchRun`), the sync run
  (`run.sync.SyncRun`), the sub-batch lifecycle (`run.subbatch`) and the words they share (`run.vocab`)
- `summary`: a job's summary as a value and as text: statistics, reliability, group differences,
  examples, number formats, the dry-run plan's text
- `decide`: the run's single decisions: route, backoff, polling, rate limits, the breaker, resume,
  prices, spend and the budget, the plan, the checkpoint's journal
- `results`: what one answer means: its status and usage, its class, a batch result line, its
  verdict, its item's output line
- `wire`: what goes on the wire: requests (without messages), the create body's bytes, structured
  output schemas, sub-batch chunks, the model table
- `job`: what the user asked: items and their columns, custom_ids and id sets, designs and how an
  item's answers fold back into one verdict (`job.consensus`), the core's errors

This module imports nothing at its top: a program imports each name from the module that defines it
(`from judgecore.decide.routing import route`), so that importing one module never loads the others;
the public names are also importable from the package itself (`_PUBLIC`), each loaded when first used.

Glossary (one name per idea, in code, CLI, output and docs):

- *item*: one input row, named by its `id`; the output has one line per item.
- *custom_id*: the API's name for one request of a job, derived from the job and the item
  (`ids.custom_id_for`), `^[a-zA-Z0-9_-]{1,64}$`; the checkpoint is keyed by it.
- *route*: how a job's requests travel, `"sync"` (Messages API, bounded concurrency) or `"batch"`
  (Message Batches); `routing.route` decides it.
- *sub-batch*: one Message Batch of a job, at most 8,000 requests and 250 MB (`chunking.chunk`).
- *round*: one pass of a batch run over every id neither final nor in flight; its sub-batches are
  created, polled and harvested before the next round offers what came back for retry.
- *send*: one request put on the wire (a sync call, or a request inside a created sub-batch).
- *attempt*: a send that came back with an answer or an error; an output line's `attempts` counts
  them across every run, `--max-attempts` bounds them per item per run.
"""

from __future__ import annotations

import importlib

#: The names a program may import from the package itself (`import judgecore; judgecore.spec_from_json(...)`,
#: as docs/python-api.md shows), each loaded from the module that defines it when first asked for: the
#: package's one hook (PEP 562), so that importing one of its modules still loads no other.
_PUBLIC: dict[str, str] = {
    "BackoffPolicy": "judgecore.decide.backoff",
    "BatchSnapshot": "judgecore.decide.polling",
    "Breaker": "judgecore.decide.breaker",
    "BreakerPolicy": "judgecore.decide.breaker",
    "BreakerState": "judgecore.decide.breaker",
    "CUSTOM_ID_RE": "judgecore.job.ids",
    "CachePlan": "judgecore.decide.planning",
    "DEFAULT_PRICES": "judgecore.decide.prices",
    "DecideRoute": "judgecore.decide.routing",
    "DuplicateIdError": "judgecore.job.errors",
    "FINAL_STATUSES": "judgecore.results.outcomes",
    "FailureClass": "judgecore.results.outcomes",
    "Harvest": "judgecore.decide.polling",
    "InputError": "judgecore.job.errors",
    "Item": "judgecore.job.items",
    "Items": "judgecore.job.items",
    "JobPlan": "judgecore.decide.planning",
    "JobState": "judgecore.decide.resume",
    "JudgecoreError": "judgecore.job.errors",
    "KeepRoute": "judgecore.decide.routing",
    "MAX_BYTES": "judgecore.wire.chunking",
    "MAX_REQUESTS": "judgecore.wire.chunking",
    "ModelPrice": "judgecore.decide.planning",
    "Outcome": "judgecore.results.outcomes",
    "Overdue": "judgecore.decide.polling",
    "Plan": "judgecore.decide.planning",
    "PollAction": "judgecore.decide.polling",
    "PollIn": "judgecore.decide.polling",
    "PollPolicy": "judgecore.decide.polling",
    "RawResult": "judgecore.results.outcomes",
    "Request": "judgecore.wire.requests",
    "RequestCounts": "judgecore.decide.polling",
    "RequestTemplate": "judgecore.wire.requests",
    "RequestTooLargeError": "judgecore.job.errors",
    "Requests": "judgecore.wire.requests",
    "ResumeDiff": "judgecore.decide.resume",
    "Route": "judgecore.decide.routing",
    "RouteDecision": "judgecore.decide.routing",
    "RoutePath": "judgecore.job.items",
    "RoutePolicy": "judgecore.decide.routing",
    "Status": "judgecore.results.outcomes",
    "SubBatch": "judgecore.wire.chunking",
    "Unscored": "judgecore.results.verdicts",
    "Usage": "judgecore.results.outcomes",
    "VERDICT_UNPARSED": "judgecore.results.verdicts",
    "Verdict": "judgecore.results.verdicts",
    "VerdictSpec": "judgecore.results.verdicts",
    "VerdictSpecError": "judgecore.results.verdicts",
    "Wait": "judgecore.run.vocab",
    "assign_custom_ids": "judgecore.job.ids",
    "backoff": "judgecore.decide.backoff",
    "body_size": "judgecore.wire.chunking",
    "build_requests": "judgecore.wire.requests",
    "cache_control_for": "judgecore.wire.requests",
    "check_unique": "judgecore.job.ids",
    "chunk": "judgecore.wire.chunking",
    "classify": "judgecore.results.outcomes",
    "create_body": "judgecore.wire.encoding",
    "custom_id_for": "judgecore.job.ids",
    "custom_ids_for": "judgecore.job.ids",
    "diff_resume": "judgecore.decide.resume",
    "estimate_tokens": "judgecore.decide.planning",
    "keep_or_redecide": "judgecore.decide.routing",
    "next_poll_action": "judgecore.decide.polling",
    "output_line": "judgecore.results.output_line",
    "output_record": "judgecore.results.output_line",
    "parse_item": "judgecore.job.parsing",
    "parse_items": "judgecore.job.parsing",
    "parse_verdict": "judgecore.results.verdicts",
    "plan": "judgecore.decide.planning",
    "plan_job": "judgecore.decide.planning",
    "plan_json": "judgecore.summary.plan_text",
    "render_plan": "judgecore.summary.plan_text",
    "route": "judgecore.decide.routing",
    "spec_from_json": "judgecore.results.verdicts",
}


def __getattr__(name: str) -> object:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'judgecore' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})


__all__ = sorted(_PUBLIC)
