"""The output line of one item: the same shape on both routes (see CONTRACT.md, "Output").

The line is built from the checkpoint: the item, its latest outcome, and (with `--verdict`) the verdict
read from the answer's text. A succeeded answer whose verdict cannot be read is reported as a `miss` of
class `VERDICT_UNPARSED` with its text kept; the stored outcome stays `succeeded`, so it is never resent,
and a pattern changed later re-reads it. An item that is not final is `pending`: its error is its last
failure (a transient one: it will be sent again), or, with no answer yet, the class `PENDING` saying
where it waits (`batch_id` then names the live batch that holds it). A refusal is a `miss` of class
`MODEL_REFUSAL` (`error.type` its category), never scored, its text kept; only such a line carries
`stop_details` (`{"type": "refusal", "category": ..., "explanation": ...}`), so every other line has the
shape it had before refusals were read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, TypeAlias

import orjson

from judgecore.job.items import Item, RoutePath
from judgecore.results.outcomes import FINAL_STATUSES, Outcome, StopDetails, Usage
from judgecore.results.verdicts import VERDICT_UNPARSED, Unscored, VerdictSpec, parse_verdict

_FINAL = frozenset(s.value for s in FINAL_STATUSES)

#: The `error.class` of a pending item that has no answer yet (not a failure: it has not run).
PENDING = "PENDING"


#: The four usage counts of an output line, in their order.
USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")

#: One item's output object: `id`, `custom_id`, `status`, `route`, `text`, `stop_reason`, `model`,
#: `usage`, `error`, `batch_id`, `attempts`, `metadata`, `verdict` (and `stop_details` for a refusal);
#: made only by `record_of_row`, whatever it is written to (a JSONL line, a table, the summary).
OutputRecord: TypeAlias = dict[str, Any]


class LatestRow(NamedTuple):
    """An item's latest outcome as the checkpoint holds it, its columns by name (the store's
    `latest_rows` gives plain tuples of these columns in this order: `record_of_row` reads either).
    `usage` and `stop_details` are their JSON text; `status` None: no outcome yet."""

    custom_id: str
    status: str | None = None
    failure: str | None = None
    reason: str | None = None
    text: str | None = None
    stop_reason: str | None = None
    model: str | None = None
    usage: str | None = None
    error_type: str | None = None
    error_message: str | None = None
    retry_after: float | None = None
    route: str | None = None
    batch_id: str | None = None
    attempts: int = 0
    error_code: str | None = None
    stop_details: str | None = None

    @classmethod
    def of_outcome(
        cls, custom_id: str, outcome: Outcome | None, *, route: str, batch_id: str | None, attempts: int
    ) -> LatestRow:
        """The row the checkpoint keeps for `outcome` (None: no outcome yet)."""
        if outcome is None:
            return cls(custom_id, route=route, batch_id=batch_id, attempts=attempts)
        o = outcome
        u = usage_json(o.usage)
        return cls(
            custom_id,
            str(o.status),
            None if o.failure is None else str(o.failure),
            o.reason,
            o.text,
            o.stop_reason,
            o.model,
            None if u is None else orjson.dumps(u).decode(),
            o.error_type,
            o.error_message,
            o.retry_after,
            route,
            batch_id,
            attempts,
            o.error_code,
            None if o.stop_details is None else orjson.dumps(o.stop_details.to_json()).decode(),
        )


def usage_json(usage: Usage | None) -> dict[str, int] | None:
    if usage is None:
        return None
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
    }


def _usage(text: str) -> dict[str, int]:
    """A stored usage's JSON object as `usage_json` makes it (its four counts, in their order)."""
    u = orjson.loads(text)
    return u if tuple(u) == USAGE_KEYS else {k: u.get(k, 0) for k in USAGE_KEYS}


def _stop_details(text: str) -> dict[str, Any] | None:
    """Stored stop details as `StopDetails.to_json()` writes them (None when they are not an object)."""
    details = StopDetails.from_json(orjson.loads(text))
    return None if details is None else details.to_json()


def record_of_row(
    row: Sequence[Any],
    *,
    item_id: str,
    metadata_json: bytes | None,
    default_route: RoutePath,
    waiting_in: str | None = None,
    verdict_spec: VerdictSpec | None = None,
) -> OutputRecord:
    """An item's output object from its checkpoint row (a `LatestRow`, or a tuple of its columns): the
    one way an output record is made, on both routes, for the output file, the Python API, `summary`,
    `export` and the report. An item whose latest outcome is not final (or that has none) is
    `pending`; `waiting_in` is the live batch holding a pending item (it becomes its `batch_id`);
    `default_route` is the job's route, for an item that has none yet; `verdict_spec` reads a
    succeeded answer's verdict."""
    (
        custom_id,
        status,
        failure,
        reason,
        text,
        stop_reason,
        model,
        usage,
        error_type,
        error_message,
        _retry_after,
        route,
        batch_id,
        attempts,
        _error_code,
        details,
    ) = row
    error = None
    verdict = None
    if status not in _FINAL:
        status = "pending"
        if failure is None:
            where = f"waiting in batch {waiting_in}" if waiting_in else "not answered yet"
            error = {"class": PENDING, "type": None, "message": f"{where}; rerun the same command to resume"}
        if waiting_in:
            batch_id = waiting_in
    if failure is not None:
        error = {"class": failure, "type": error_type or stop_reason, "message": error_message or reason}
    if verdict_spec is not None and status == "succeeded":
        parsed = parse_verdict(text, verdict_spec)
        if isinstance(parsed, Unscored):
            status = "miss"
            error = {"class": VERDICT_UNPARSED, "type": verdict_spec.kind, "message": parsed.reason}
        else:
            verdict = parsed.as_dict()
    record: OutputRecord = {
        "id": item_id,
        "custom_id": custom_id,
        "status": status,
        "route": route or default_route,
        "text": text,
        "stop_reason": stop_reason,
        "model": model,
        "usage": _usage(usage) if usage else None,
        "error": error,
        "batch_id": batch_id,
        "attempts": attempts,
        "metadata": orjson.loads(metadata_json) if metadata_json else None,
        "verdict": verdict,
    }
    if details and (stop := _stop_details(details)) is not None:  # a refusal: why the model declined
        record["stop_details"] = stop
    return record


def output_record(
    item: Item,
    custom_id: str,
    outcome: Outcome | None,
    *,
    route: RoutePath,
    batch_id: str | None,
    attempts: int,
    verdict_spec: VerdictSpec | None = None,
    waiting_in: str | None = None,
) -> OutputRecord:
    """One output object of `item` and its latest `outcome` (see `record_for`)."""
    return record_for(
        item.id,
        custom_id,
        item.metadata_json,
        outcome,
        route=route,
        batch_id=batch_id,
        attempts=attempts,
        verdict_spec=verdict_spec,
        waiting_in=waiting_in,
    )


def record_for(
    item_id: str,
    custom_id: str,
    metadata_json: bytes | None,
    outcome: Outcome | None,
    *,
    route: RoutePath,
    batch_id: str | None,
    attempts: int,
    verdict_spec: VerdictSpec | None = None,
    waiting_in: str | None = None,
) -> OutputRecord:
    """One output object from an `Outcome`: `record_of_row` of the row the checkpoint keeps for it."""
    row = LatestRow.of_outcome(custom_id, outcome, route=route, batch_id=batch_id, attempts=attempts)
    return record_of_row(
        row,
        item_id=item_id,
        metadata_json=metadata_json,
        default_route=route,
        waiting_in=waiting_in,
        verdict_spec=verdict_spec,
    )


def output_line(record: dict[str, Any]) -> bytes:
    """One JSONL line (newline included)."""
    return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
