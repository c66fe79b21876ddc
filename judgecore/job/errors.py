"""Typed errors of the core: each names what is wrong and who must fix it.

Expected failures of a *request* are values (`Outcome`); these exceptions are for bad *input*, caught by
the shell and turned into exit 2 before anything is sent.
"""

from __future__ import annotations


class JudgecoreError(Exception):
    """Base class of every error the core raises on purpose."""


class InputError(JudgecoreError):
    """A line of the input file is not a valid item. Carries the 1-based line number and the reason;
    the shell names the file (`FILE:LINE: reason`)."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


class DuplicateIdError(JudgecoreError):
    """Two items share an id, or two ids map to the same custom_id."""

    def __init__(self, item_id: str, first_line: int, line: int, *, custom_id: str | None = None) -> None:
        what = f"custom_id {custom_id!r} (from ids that differ)" if custom_id else f"id {item_id!r}"
        self.reason = f"duplicate {what}; first seen on line {first_line}"
        super().__init__(f"line {line}: {self.reason}")
        self.item_id = item_id
        self.first_line = first_line
        self.line = line
        self.custom_id = custom_id


class RequestTooLargeError(JudgecoreError):
    """One request is larger than a whole sub-batch may be: it can never be sent in a batch."""

    def __init__(
        self, item_id: str, custom_id: str, size: int, max_bytes: int, *, line: int | None = None
    ) -> None:
        self.reason = (
            f"item {item_id!r} (custom_id {custom_id}) serializes to {size:,} bytes, over the "
            f"{max_bytes:,}-byte sub-batch limit; shorten it or send it on the sync path"
        )
        super().__init__(self.reason if line is None else f"line {line}: {self.reason}")
        self.line = line
        self.item_id = item_id
        self.custom_id = custom_id
        self.size = size
        self.max_bytes = max_bytes
