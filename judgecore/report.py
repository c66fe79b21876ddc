"""The output line of one item: the same shape on both routes (see CONTRACT.md, "Output")."""

from __future__ import annotations

from typing import Any

import orjson

from judgecore.items import Item, Path
from judgecore.outcomes import Outcome, Usage


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
    route: Path,
    batch_id: str | None,
    attempts: int,
    pending_reason: str | None = None,
) -> dict[str, Any]:
    """One output object. An item whose latest outcome is not final (or that has none) is `pending`."""
    status = str(outcome.status) if outcome is not None and outcome.final else "pending"
    error = None
    if outcome is not None and outcome.failure is not None:
        error = {
            "class": str(outcome.failure),
            "type": outcome.error_type or outcome.stop_reason,
            "message": outcome.error_message or outcome.reason,
        }
    elif status == "pending":
        error = {
            "class": "PENDING",
            "type": None,
            "message": pending_reason or "not finished yet; rerun the same command to resume",
        }
    if status == "pending" and error is not None and pending_reason:
        error["message"] = f"{error['message']}; {pending_reason}"
    return {
        "id": item.id,
        "custom_id": custom_id,
        "status": status,
        "route": route,
        "text": outcome.text if outcome else None,
        "stop_reason": outcome.stop_reason if outcome else None,
        "model": outcome.model if outcome else None,
        "usage": usage_json(outcome.usage if outcome else None),
        "error": error,
        "batch_id": batch_id,
        "attempts": attempts,
        "metadata": orjson.loads(item.metadata_json) if item.metadata_json else None,
    }


def output_line(record: dict[str, Any]) -> bytes:
    """One JSONL line (newline included)."""
    return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
