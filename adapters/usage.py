"""What every command knows before it does any work: the exit statuses, the defaults its flags show,
and `UsageError` (exit 2).

Kept apart from `adapters.run.job` so that `judgecore --help` and a usage error need nothing else loaded;
`adapters.run.job` (and so `adapters`) exports the same names.
"""

from __future__ import annotations

import errno

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_MAX_TOKENS = 1024
#: The default max_tokens where the model thinks (`judgecore.wire.models.THINKING_MAX_TOKENS`, for `--help`).
THINKING_MAX_TOKENS = 16_000

#: How a job started from the Python API resumes (`status`, the report): `judgecore run --state DIR`
#: alone refuses it, since its checkpoint keeps no command line to resume by.
PYTHON_RESUME = "call judge() again with the same items, rubric and settings, and state_dir={state}"

#: `judgecore.run.vocab.ExitStatus`'s values, as plain ints: `--help` imports no core and no attrs
#: (tests/cli/test_start_up.py); tests/core/test_machine.py holds the two equal.
EXIT_OK = 0
EXIT_USAGE = 2
EXIT_PENDING = 3
EXIT_FATAL = 4
#: A local fault: a disk that cannot take the checkpoint's or the output's writes (not a core status:
#: nothing in the job decides it).
EXIT_LOCAL = 1

#: What a full, read-only or failing disk raises: the OS's errnos, and SQLite's result codes
#: (`sqlite3.Error.sqlite_errorname`, extended codes such as SQLITE_IOERR_WRITE included).
_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO})
_SQLITE_DISK = ("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY")
#: What SQLite raises for a checkpoint it cannot read as one: not a database, a damaged one, one it
#: cannot open
_SQLITE_UNREADABLE = ("SQLITE_NOTADB", "SQLITE_CORRUPT", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")


class UsageError(Exception):
    """Bad usage or bad input, detected before anything was sent (exit 2)."""


def disk_fault(exc: BaseException, state: object = None) -> str | None:
    """One line for an exception that says the disk under the checkpoint (in `state`) or under a file
    being written cannot take its writes (full, read-only, failing), or None for any other exception.
    Nothing harvested is lost to such a fault: each result is committed before it counts, so the
    rerun finds it, and the output is replaced only by a whole new file."""
    name = getattr(exc, "sqlite_errorname", None)
    if isinstance(name, str) and name.startswith(_SQLITE_DISK):
        where = f"the checkpoint in {state}" if state is not None else "the checkpoint"
        return f"cannot write {where}: {exc}; nothing harvested is lost: make room there and rerun the same command"
    if isinstance(exc, OSError) and exc.errno in _DISK_ERRNOS:
        where = exc.filename if exc.filename is not None else state if state is not None else "a file"
        reason = exc.strerror or str(exc)
        return f"cannot write {where}: {reason}; nothing harvested is lost: make room there and rerun the same command"
    return None


def checkpoint_fault(exc: BaseException, state: object = None) -> str | None:
    """One line for an exception that says the checkpoint in `state` cannot be read as one (a file
    that is not a database, a damaged one, one that cannot be opened, one of another program's that
    lacks the checkpoint's tables), or None for any other exception: the command ends with it (exit
    2), never with a traceback."""
    if type(exc).__module__ != "sqlite3":
        return None
    name = getattr(exc, "sqlite_errorname", None)
    foreign = type(exc).__name__ == "OperationalError" and str(exc).startswith("no such table")
    if not foreign and not (isinstance(name, str) and name.startswith(_SQLITE_UNREADABLE)):
        return None
    where = f"{state}/judgecore.sqlite3" if state is not None else "the checkpoint"
    return (
        f"--state {state}: the checkpoint {where} cannot be read ({exc}): it is damaged or not a judgecore "
        "checkpoint; restore it from a copy, or point --state at a new directory"
    )
