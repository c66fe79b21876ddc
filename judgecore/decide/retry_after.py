"""The wait a response's headers ask for (`retry-after-ms`, `retry-after` as seconds or as an HTTP date):
the one rule of both routes and both providers. Its own module because reading an HTTP date takes
`email.utils`, which only a run that sends needs (a dry run never reads a response).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC
from email.utils import parsedate_to_datetime


def retry_after(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds to wait that a response's headers ask for, or None: `retry-after-ms` (milliseconds)
    first, then `retry-after` as seconds, then as an HTTP date (read against `now`, epoch seconds).

    The one rule of both routes, the SDK's own order; only a wait above zero counts (a zero or a date
    in the past is no hint). Header names are matched case-insensitively.
    """
    lower = {str(k).lower(): str(v).strip() for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms:
        try:
            seconds = float(ms) / 1000.0
        except ValueError:
            seconds = math.nan
        if math.isfinite(seconds) and seconds > 0:
            return seconds
    value = lower.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - now
    return seconds if math.isfinite(seconds) and seconds > 0 else None


__all__ = ["retry_after"]
