"""Where an item stands after an outcome (`Status`), and the token usage of one answer (`Usage`): the
names the plan, the job machine and the settings read, apart from the classification of results
(`judgecore.results.outcomes`, which gives them too), so a dry run imports none of its tables.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any, Final

import attrs

from judgecore.values import frozen


class Status(StrEnum):
    """Where an item stands after one outcome. The first three are final."""

    SUCCEEDED = "succeeded"
    MISS = "miss"
    QUARANTINED = "quarantined"
    RETRY = "retry"
    FATAL = "fatal"


FINAL_STATUSES = frozenset({Status.SUCCEEDED, Status.MISS, Status.QUARANTINED})


#: How the one line naming an account state begins (`stop_line`); the CLI prints it as it is.
ACCOUNT_REFUSED: Final = "the API refused the account"


@frozen(kw_only=True)
class Usage:
    """Token counts of one answer (the four the cost and cache reports need)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    @classmethod
    def of(
        cls,
        input_tokens: int,
        output_tokens: int,
        cache_creation_input_tokens: int,
        cache_read_input_tokens: int,
    ) -> Usage:
        """`Usage(...)` by position, for a value made once per result line: equal to the keyword-built
        one, its slots set directly (see `_setters`)."""
        u = _new(cls)
        s_in, s_out, s_write, s_read = _USAGE_SETTERS
        s_in(u, input_tokens)
        s_out(u, output_tokens)
        s_write(u, cache_creation_input_tokens)
        s_read(u, cache_read_input_tokens)
        return u


def _setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """The `__set__` of each of a frozen attrs class's slots, in field order. A hot value (one per result
    line) is built as `object.__new__` and these: what the generated `__init__` does, without parsing
    keywords and going through `object.__setattr__` by name for each field. Only for classes with no
    validators, converters or factories, whose every slot the builder sets."""
    fields = attrs.fields(cls)
    assert all(f.validator is None and f.converter is None for f in fields), cls
    return tuple(cls.__dict__[f.name].__set__ for f in fields)


_new = object.__new__
_USAGE_SETTERS = _setters(Usage)
