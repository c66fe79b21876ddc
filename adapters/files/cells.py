"""The cells of the user's tables as JSON (a date or a decimal as its text), and the optional extra a
format needs. Both the readers and the inspect_ai log's reader and writer use them.

May import: `adapters.usage`, the standard library, orjson.
"""

from __future__ import annotations

import datetime
import decimal
import importlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from adapters.usage import UsageError


def need(module: str, extra: str, *, path: Path | str | None, what: str) -> ModuleType:
    """`module` imported, or `UsageError` naming the optional extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        where = f"{path}: " if path is not None else ""
        raise UsageError(
            f"{where}{what} needs the optional extra '{extra}' ({module} is not installed): "
            f"pip install 'judgecore[{extra}]'"
        ) from None


def dated(value: object) -> str:
    """A date or time orjson leaves aside (a pandas Timestamp) in ISO 8601, as orjson writes a
    `datetime`; a `Decimal` as its text; anything else stays not serializable (`TypeError`). The
    `default` of every input object's JSON (a table row's, and `judge()`'s objects)."""
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def _as_text(value: object) -> str:
    """A table cell JSON lacks as its text: `dated`, else `str` (a binary cell's `b'...'`)."""
    try:
        return dated(value)
    except TypeError:
        return str(value)


def object_line(obj: Mapping[str, Any]) -> bytes:
    """The JSON line of an input object (a value JSON lacks, a date or a decimal, as its text)."""
    return orjson.dumps(obj, default=_as_text, option=orjson.OPT_SERIALIZE_NUMPY)


def records_frame(records: Iterable[Mapping[str, Any]]) -> Any:
    """The records as a pandas DataFrame, one row per item, nested fields as Python dicts."""

    pd = need("pandas", "data", path=None, what="JudgeResult.to_pandas()")
    rows = [dict(r) for r in records]
    return pd.DataFrame.from_records(rows, columns=list(rows[0]) if rows else None)
