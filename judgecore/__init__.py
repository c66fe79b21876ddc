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

This module re-exports the names a program uses (below); each lives in the module named by its import.

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

from judgecore.decide.backoff import BackoffPolicy, backoff
from judgecore.decide.breaker import Breaker, BreakerPolicy, BreakerState
from judgecore.decide.planning import CachePlan, JobPlan, ModelPrice, Plan, estimate_tokens, plan, plan_job
from judgecore.decide.polling import (
    BatchSnapshot,
    Harvest,
    Overdue,
    PollAction,
    PollIn,
    PollPolicy,
    RequestCounts,
    next_poll_action,
)
from judgecore.decide.prices import DEFAULT_PRICES
from judgecore.decide.resume import JobState, ResumeDiff, diff_resume
from judgecore.decide.routing import (
    DecideRoute,
    KeepRoute,
    Route,
    RouteDecision,
    RoutePolicy,
    keep_or_redecide,
    route,
)
from judgecore.job.errors import DuplicateIdError, InputError, JudgecoreError, RequestTooLargeError
from judgecore.job.ids import CUSTOM_ID_RE, assign_custom_ids, check_unique, custom_id_for, custom_ids_for
from judgecore.job.items import Item, Items, RoutePath
from judgecore.job.parsing import parse_item, parse_items
from judgecore.results.outcomes import (
    FINAL_STATUSES,
    FailureClass,
    Outcome,
    RawResult,
    Status,
    Usage,
    classify,
)
from judgecore.results.output_line import output_line, output_record
from judgecore.results.verdicts import (
    VERDICT_UNPARSED,
    Unscored,
    Verdict,
    VerdictSpec,
    VerdictSpecError,
    parse_verdict,
    spec_from_json,
)
from judgecore.run.vocab import Wait
from judgecore.summary.plan_text import plan_json, render_plan
from judgecore.wire.chunking import MAX_BYTES, MAX_REQUESTS, SubBatch, body_size, chunk
from judgecore.wire.encoding import create_body
from judgecore.wire.requests import Request, Requests, RequestTemplate, build_requests, cache_control_for

__all__ = [
    "CUSTOM_ID_RE",
    "DEFAULT_PRICES",
    "FINAL_STATUSES",
    "MAX_BYTES",
    "MAX_REQUESTS",
    "VERDICT_UNPARSED",
    "BackoffPolicy",
    "BatchSnapshot",
    "Breaker",
    "BreakerPolicy",
    "BreakerState",
    "CachePlan",
    "DecideRoute",
    "DuplicateIdError",
    "FailureClass",
    "Harvest",
    "InputError",
    "Item",
    "Items",
    "JobPlan",
    "JobState",
    "JudgecoreError",
    "KeepRoute",
    "ModelPrice",
    "Outcome",
    "Overdue",
    "Plan",
    "PollAction",
    "PollIn",
    "PollPolicy",
    "RawResult",
    "Request",
    "RequestCounts",
    "RequestTemplate",
    "RequestTooLargeError",
    "Requests",
    "ResumeDiff",
    "Route",
    "RouteDecision",
    "RoutePath",
    "RoutePolicy",
    "Status",
    "SubBatch",
    "Unscored",
    "Usage",
    "Verdict",
    "VerdictSpec",
    "VerdictSpecError",
    "Wait",
    "assign_custom_ids",
    "backoff",
    "body_size",
    "build_requests",
    "cache_control_for",
    "check_unique",
    "chunk",
    "classify",
    "create_body",
    "custom_id_for",
    "custom_ids_for",
    "diff_resume",
    "estimate_tokens",
    "keep_or_redecide",
    "next_poll_action",
    "output_line",
    "output_record",
    "parse_item",
    "parse_items",
    "parse_verdict",
    "plan",
    "plan_job",
    "plan_json",
    "render_plan",
    "route",
    "spec_from_json",
]
