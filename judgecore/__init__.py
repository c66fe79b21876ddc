"""judgecore: the pure decision core of LLM-judge runs through the Anthropic API.

Every function here takes and returns immutable values; nothing here touches the SDK, the clock, the
disk or the terminal (that is `adapters`). The modules read like the list of decisions judgecore makes:

- `parsing`, `items`: what a valid input line is; a job's items as columns (their messages held or not)
- `requests`: what each item sends (ids, sizes, max_tokens: never the messages), and the exact bytes
  the wire encoder makes of it given its messages
- `columns`: the immutable integer columns the values above are made of
- `ids`: the custom_id of an item
- `routing`: sync or batch, and whether a job's recorded route is kept
- `chunking`: how a job splits into sub-batches (from the sizes alone)
- `encoding`: the bytes of a create body, from the requests and the messages the shell gives it
- `batching`: what to do after a failed batch create, and which listed batch is an orphan of ours
- `subbatch`: a sub-batch's lifecycle, as a table of legal moves; which states hold ids in flight
- `batchrun`: the batch run as a machine: given the checkpoint, what to do next, and what each answer means
- `syncrun`: the sync run as a machine: which item to send next, what each answer does to it, when it is done
- `harvesting`: which of a batch's result lines are ours, and what the breaker lets through
- `harvestfold`: one harvest as a fold: what each result line means, and what of it to record
- `resultlines`: what one line of a batch's results file says, as its `Outcome`
- `polling`: how long to wait for a batch, and when to stop waiting
- `outcomes`: what one result means
- `backoff`: how long to wait before a retry
- `ratelimit`: what the rate-limit headers say, and how fast the sync path may send
- `resume`: what is left to do
- `breaker`: when a run of invalid requests means a broken job
- `planning`, `plan_text`: the job's plan (its requests, built once), the dry-run plan and its cost, as
  values and as text
- `report`: the output line of an item
- `verdicts`: what a judge's answer concluded (a JSON Schema or a regex)
- `designs`: how many requests an item asks (a judge design), and the requests a row expands into
- `folding`: how an item's answers fold back into one verdict and one output line
- `spend`: what answers cost, and the budget's admission rule
- `stats`, `summary`: the statistics of a job's scores, and a job's summary as a value

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

from importlib import import_module
from typing import TYPE_CHECKING, Any

# `backoff` names a module and the function in it: the package's `backoff` is the function, bound here
# before any import of the module `judgecore.decide.backoff` can make the package's attribute the module.
from judgecore.decide.backoff import BackoffPolicy, backoff

if TYPE_CHECKING:
    from judgecore.decide.breaker import Breaker, BreakerPolicy, BreakerState, breaker_tripped
    from judgecore.decide.planning import (
        DEFAULT_PRICES,
        CachePlan,
        JobPlan,
        ModelPrice,
        Plan,
        estimate_tokens,
        plan,
        plan_job,
    )
    from judgecore.decide.polling import (
        BatchSnapshot,
        Harvest,
        Overdue,
        PollAction,
        PollPolicy,
        RequestCounts,
        Wait,
        next_poll_action,
        next_wake,
    )
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
    from judgecore.summary.plan_text import plan_json, render_plan
    from judgecore.wire.chunking import MAX_BYTES, MAX_REQUESTS, SubBatch, body_size, chunk
    from judgecore.wire.encoding import create_body
    from judgecore.wire.requests import Request, Requests, RequestTemplate, build_requests, cache_control_for

# Each name is loaded from its module on first use (PEP 562), so a program that needs a few decisions
# (`judgecore run --dry-run` needs items, ids, planning and routing) does not pay for importing them all.
# The module of every exported name (`backoff`'s are imported above):
_EXPORTS: dict[str, tuple[str, ...]] = {
    "judgecore.decide.backoff": ("BackoffPolicy", "backoff"),
    "judgecore.decide.breaker": ("Breaker", "BreakerPolicy", "BreakerState", "breaker_tripped"),
    "judgecore.wire.chunking": ("MAX_BYTES", "MAX_REQUESTS", "SubBatch", "body_size", "chunk"),
    "judgecore.wire.encoding": ("create_body",),
    "judgecore.job.errors": ("DuplicateIdError", "InputError", "JudgecoreError", "RequestTooLargeError"),
    "judgecore.job.ids": (
        "CUSTOM_ID_RE",
        "assign_custom_ids",
        "check_unique",
        "custom_id_for",
        "custom_ids_for",
    ),
    "judgecore.job.items": ("Item", "Items", "RoutePath"),
    "judgecore.job.parsing": ("parse_item", "parse_items"),
    "judgecore.wire.requests": (
        "Request",
        "RequestTemplate",
        "Requests",
        "build_requests",
        "cache_control_for",
    ),
    "judgecore.results.outcomes": (
        "FINAL_STATUSES",
        "FailureClass",
        "Outcome",
        "RawResult",
        "Status",
        "Usage",
        "classify",
    ),
    "judgecore.decide.planning": (
        "DEFAULT_PRICES",
        "CachePlan",
        "JobPlan",
        "ModelPrice",
        "Plan",
        "estimate_tokens",
        "plan",
        "plan_job",
    ),
    "judgecore.summary.plan_text": ("plan_json", "render_plan"),
    "judgecore.decide.polling": (
        "BatchSnapshot",
        "Harvest",
        "Overdue",
        "PollAction",
        "PollPolicy",
        "RequestCounts",
        "Wait",
        "next_poll_action",
        "next_wake",
    ),
    "judgecore.results.output_line": ("output_line", "output_record"),
    "judgecore.decide.resume": ("JobState", "ResumeDiff", "diff_resume"),
    "judgecore.decide.routing": (
        "DecideRoute",
        "KeepRoute",
        "Route",
        "RouteDecision",
        "RoutePolicy",
        "keep_or_redecide",
        "route",
    ),
    "judgecore.results.verdicts": (
        "VERDICT_UNPARSED",
        "Unscored",
        "Verdict",
        "VerdictSpec",
        "VerdictSpecError",
        "parse_verdict",
        "spec_from_json",
    ),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'judgecore' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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
    "breaker_tripped",
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
    "next_wake",
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
