"""What every command knows before it does any work: the exit statuses, the defaults its flags show,
and `UsageError` (exit 2).

Kept apart from `adapters.job` so that `judgecore --help` and a usage error need nothing else loaded;
`adapters.job` (and so `adapters`) exports the same names.
"""

from __future__ import annotations

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_MAX_TOKENS = 1024
#: The default max_tokens where the model thinks (`judgecore.models.THINKING_MAX_TOKENS`, for `--help`).
THINKING_MAX_TOKENS = 16_000

#: `judgecore.machine.ExitStatus`'s values, as plain ints: `--help` imports no core and no attrs
#: (tests/cli/test_start_up.py); tests/core/test_machine.py holds the two equal.
EXIT_OK = 0
EXIT_USAGE = 2
EXIT_PENDING = 3
EXIT_FATAL = 4


class UsageError(Exception):
    """Bad usage or bad input, detected before anything was sent (exit 2)."""
