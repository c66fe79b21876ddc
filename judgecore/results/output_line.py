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

from typing import Any

import orjson

from judgecore.job.items import Item, RoutePath
from judgecore.results.outcomes import FINAL_STATUSES, Outcome, Usage
from judgecore.results.verdicts import VERDICT_UNPARSED, Unscored, VerdictSpec, parse_verdict

_FINAL = frozenset(s.value for s in FINAL_STATUSES)

#: The `error.class` of a pending item that has no answer yet (not a failure: it has not run).
PENDING = "PENDING"


def usage_json(usage: Usage | None) -> dict[str, int] | None:
    if usage is None:
        return None
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
    }


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
) -> dict[str, Any]:
    """One output object (see `record_for`)."""
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
) -> dict[str, Any]:
    """One output object. An item whose latest outcome is not final (or that has none) is `pending`;
    `waiting_in` is the live batch holding a pending item (it becomes its `batch_id`)."""
    if outcome is None:
        return record_of(
            item_id, custom_id, metadata_json, None, None, None, None, None, None, None, None, None, None,
            route=route, batch_id=batch_id, attempts=attempts, verdict_spec=verdict_spec, waiting_in=waiting_in,
        )  # fmt: skip
    o = outcome
    return record_of(
        item_id,
        custom_id,
        metadata_json,
        str(o.status),
        None if o.failure is None else str(o.failure),
        o.reason,
        o.text,
        o.stop_reason,
        o.model,
        usage_json(o.usage),
        o.error_type,
        o.error_message,
        None if o.stop_details is None else o.stop_details.to_json(),
        route=route,
        batch_id=batch_id,
        attempts=attempts,
        verdict_spec=verdict_spec,
        waiting_in=waiting_in,
    )


def record_of(
    item_id: str,
    custom_id: str,
    metadata_json: bytes | None,
    status: str | None,
    failure: str | None,
    reason: str | None,
    text: str | None,
    stop_reason: str | None,
    model: str | None,
    usage: dict[str, int] | None,
    error_type: str | None,
    error_message: str | None,
    stop_details: dict[str, Any] | None,
    *,
    route: RoutePath,
    batch_id: str | None,
    attempts: int,
    verdict_spec: VerdictSpec | None = None,
    waiting_in: str | None = None,
) -> dict[str, Any]:
    """`record_for` from an outcome's fields as plain values (`status` None: no outcome yet), as the
    checkpoint holds them: the output is written from its columns without an `Outcome` per item.
    `usage` is `usage_json`'s object, `stop_details` `StopDetails.to_json()`'s."""
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
    record: dict[str, Any] = {
        "id": item_id,
        "custom_id": custom_id,
        "status": status,
        "route": route,
        "text": text,
        "stop_reason": stop_reason,
        "model": model,
        "usage": usage,
        "error": error,
        "batch_id": batch_id,
        "attempts": attempts,
        "metadata": orjson.loads(metadata_json) if metadata_json else None,
        "verdict": verdict,
    }
    if stop_details is not None:  # a refusal: why the model declined
        record["stop_details"] = stop_details
    return record


def output_line(record: dict[str, Any]) -> bytes:
    """One JSONL line (newline included)."""
    return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
