"""Path checks: every file and directory a run will read or write, checked before anything is sent.

Each check returns the problem as a one-line message naming the flag (or None when the path is fine);
the CLI and `ajudge` raise it as a `UsageError` (exit 2). Checks never create anything except, for
`--out` and `--state`, a probe file that is removed at once in the directory that will hold them
(the honest test of "writable", which permission bits alone cannot give: root, read-only mounts).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Literal

from adapters.checkpoint.fresh import STATE_FILES
from adapters.files.cells import need
from adapters.usage import UsageError

#: every file judgecore keeps in a state dir besides its outputs (the checkpoint's and the run lock)
_KEPT_NAMES = frozenset((*STATE_FILES, "judgecore.lock"))
#: the first 16 bytes of every SQLite database file (a checkpoint is one)
SQLITE_HEADER = b"SQLite format 3\x00"

_NAME_MAX = 255
_PATH_MAX = 4096


def _too_long(path: Path) -> str | None:
    text = os.fsencode(path)
    if len(text) >= _PATH_MAX:
        return f"the path is too long ({len(text):,} bytes)"
    longest = max((len(os.fsencode(part)) for part in path.parts), default=0)
    if longest > _NAME_MAX:
        return f"the path is too long (a name of {longest:,} bytes; at most {_NAME_MAX})"
    return None


def _first_existing(path: Path) -> Path:
    """`path` or its nearest ancestor that exists (the cwd for a relative path with none)."""
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():
            return candidate
    return Path.cwd()


def private_file(directory: Path, prefix: str, suffix: str = "") -> tuple[int, str]:
    """A new file in `directory`, opened read-write, mode 0600, under a name no file had: its
    descriptor and absolute path. What `tempfile.mkstemp` does, without loading `tempfile` and
    `random` at every command's start (10 M instructions, a tenth of what a dry run adds to bc825e4's)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    where = Path(directory).absolute()
    for _ in range(100):
        name = str(where / f"{prefix}{os.urandom(6).hex()}{suffix}")
        try:
            return os.open(name, flags, 0o600), name
        except FileExistsError:
            continue
    raise FileExistsError(17, "no unused name for a temporary file", str(where))  # 17: EEXIST


def _can_create_in(directory: Path) -> bool:
    """Whether a file can be created in `directory`, by creating one and removing it."""

    try:
        fd, tmp = private_file(directory, ".judgecore-probe-")
    except OSError:
        return False
    os.close(fd)
    with contextlib.suppress(OSError):
        Path(tmp).unlink()
    return True


def directory_problem(path: Path, flag: str, *, probe: bool) -> str | None:
    """The problem with a directory that will be created if missing (None when it can be)."""
    if problem := _too_long(path):
        return f"{flag} {path}: {problem}"
    base = _first_existing(path)
    if not base.is_dir():
        if base == path:
            return f"{flag} {path}: exists and is not a directory"
        return f"{flag} {path}: cannot be created under {base}, which is a file"
    if probe and not _can_create_in(base):
        what = "is not writable" if base == path else f"cannot be created ({base} is not writable)"
        return f"{flag} {path}: {what}"
    return None


def input_problem(path: Path, flag: str) -> str | None:
    """The problem with a file to read (INPUT, `--rubric`), or None."""
    if problem := _too_long(path):
        return f"{path}: {problem} ({flag})"
    if path.is_dir():
        return f"{path}: is a directory, not a file ({flag})"
    if not path.exists():
        return f"{path}: no such file ({flag})"
    if not os.access(path, os.R_OK):
        return f"{path}: not readable ({flag})"
    return None


def state_problem(state: Path, *, create: bool) -> str | None:
    """The problem with `--state DIR` for a run (`create`: it may be made; probed for writing)."""
    return directory_problem(state, "--state", probe=create)


def existing_state_problem(state: Path) -> str | None:
    """The problem with `--state DIR` for `status` / `cancel`, which need a checkpoint already there."""
    if problem := _too_long(state):
        return f"--state {state}: {problem}"
    if state.exists() and not state.is_dir():
        return f"--state {state}: exists and is not a directory"
    return None


def _same(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return a.samefile(b)
    except OSError:
        return False
    return a.resolve() == b.resolve()


def out_problem(
    out: Path, *, inputs: tuple[Path, ...] = (), state: Path | None = None, flag: str = "--out"
) -> str | None:
    """The problem with `--out FILE` (or another file a command writes, named by `flag`: `--html`,
    `--to-inspect`): a directory, under a file, not writable, or a file the run reads (INPUT, the
    rubric) or owns (the checkpoint's files); None when the output can be written there."""
    if problem := _too_long(out):
        return f"{flag} {out}: {problem}"
    if out.is_dir():
        return f"{flag} {out}: is a directory; give a file name"
    if problem := checkpoint_problem(out, flag):
        return problem
    for path in inputs:
        if _same(out, path):
            return f"{flag} {out}: is the input file {path}; the output would overwrite it"
    if state is not None:
        if _same(out, state):
            return f"{flag} {out}: is the --state directory"
        for name in STATE_FILES:
            if _same(out, state / name):
                return f"{flag} {out}: is one of the checkpoint's own files in {state}"
    if out.exists() and not os.access(out, os.W_OK):
        return f"{flag} {out}: not writable"
    parent = out.parent
    base = _first_existing(parent)
    if not base.is_dir():
        return f"{flag} {out}: cannot be written under {base}, which is a file"
    if not _can_create_in(base):
        return f"{flag} {out}: not writable ({base} does not let files be created)"
    return None


def checkpoint_problem(path: Path, flag: str) -> str | None:
    """Why `path` must not be written over: it is a checkpoint's file (any job's, by its name) or a
    SQLite database (what a checkpoint is, whatever its name); None when it is neither. Whatever
    judgecore writes (an output, a report, an export) never replaces a checkpoint."""
    names = {path.name}
    with contextlib.suppress(OSError, RuntimeError):
        names.add(path.resolve().name)
    if names & _KEPT_NAMES:
        return f"{flag} {path}: is a judgecore checkpoint's file; judgecore never writes over one (give another file name)"
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError:  # none there (or unreadable: then not ours to judge)
        return None
    if head == SQLITE_HEADER:
        return (
            f"{flag} {path}: is a SQLite database (a judgecore checkpoint is one); judgecore never "
            "writes over one (give another file name)"
        )
    return None


def shared_mode() -> int:
    """The mode a new output or report gets: `0o666` less the process's umask, as `open()` would
    make it (a temp file from `private_file` is 0600 whatever the umask). The checkpoint and the
    run lock are made 0600 by their own code."""
    try:  # Linux tells the umask without changing it (4.7+)
        with Path("/proc/self/status").open("rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)  # elsewhere: read by setting it, and set back at once
    os.umask(mask)
    return 0o666 & ~mask


def publish(tmp: Path | str, path: Path, flag: str = "--out") -> None:
    """Rename the finished temp file `tmp` over `path`, with the mode an output gets (`shared_mode`);
    refused (`UsageError`, the temp file removed) when `path` is a checkpoint (`checkpoint_problem`),
    checked again here for a file that became one after the command's first checks."""
    if problem := checkpoint_problem(path, flag):
        Path(tmp).unlink(missing_ok=True)
        raise UsageError(problem)
    Path(tmp).chmod(shared_mode())
    Path(tmp).replace(path)


def path_to_keep(state: Path, path: Path) -> str:
    """How the checkpoint in `state` remembers a path it was started with (`--out`, INPUT): relative
    to the state dir when it lies inside it (so it moves with a moved or copied dir), else absolute
    (a relative path resolved against the directory the command ran in)."""
    absolute = path.resolve()
    try:
        return absolute.relative_to(state.resolve()).as_posix()
    except ValueError:
        return str(absolute)


def kept_path(state: Path, kept: str) -> Path:
    """A path the checkpoint in `state` remembers (`path_to_keep`), as it is now: one inside the
    state dir is found under the dir's own path, wherever the dir is today."""
    path = Path(kept)
    return path if path.is_absolute() else state / path


OutputKind = Literal["jsonl", "jsonl.gz", "csv", "parquet"]


def output_kind(path: Path) -> OutputKind:
    """The format `--out path` is written in, by its extension (JSONL unless `.jsonl.gz`, `.csv` or
    `.parquet`)."""
    name = path.name.lower()
    if name.endswith(".jsonl.gz"):
        return "jsonl.gz"
    if name.endswith(".csv"):
        return "csv"
    if name.endswith(".parquet"):
        return "parquet"
    return "jsonl"


def output_problem(path: Path) -> str | None:
    """Why `--out path` cannot be written (a gzip name of a format other than JSON Lines, or a
    format whose extra this install lacks), or None; checked before anything is sent."""

    if path.name.lower().endswith(".gz") and output_kind(path) != "jsonl.gz":
        return (
            f"--out {path}: a compressed output is named .jsonl.gz (CSV and Parquet are written uncompressed)"
        )
    if output_kind(path) == "parquet":
        try:
            need("pyarrow", "data", path=f"--out {path}", what="writing Parquet")
        except UsageError as exc:
            return str(exc)
    return None
