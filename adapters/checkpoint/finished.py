"""The finished-job record: a rerun of a job that is finished and unchanged answers in constant time.

A run that ends with every item final (exit 0) keeps, in the checkpoint's meta, what it depended on
and the closing lines it printed: its invocation (INPUT, `--out`, every flag), the identity of every
file it read (INPUT and each flag's file: device, inode, size, mtime and ctime, in nanoseconds), the
output file as it left it (size, mtime), and the newest outcome row of the checkpoint. A rerun whose
invocation, files, output and checkpoint are all exactly those prints the same closing lines and
exits 0 without reading the input or the checkpoint's rows: its wall time does not grow with the job.

Anything else takes the whole path, which reads and checks everything (a changed item under its id is
exit 2 with nothing sent): a file edited, touched, replaced or copied over (its ctime moves even when
a tool keeps its mtime), a directory as INPUT (its files are not stat'ed here), an output file edited
or gone, an outcome recorded since (by any command), a flag changed. A run that starts the whole
path clears the record first, so a run killed part way leaves none behind.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from adapters.checkpoint.store import Store

__all__ = ["FinishedKey", "clear", "lines_if_finished", "remember"]

_META = "finished"

#: What a finished run depended on: its invocation and the files it read, as `key` gives it.
FinishedKey = dict[str, Any]


def _identity(path: Path) -> list[int] | None:
    """A regular file's identity and version; None for anything else (a directory, nothing)."""
    try:
        st = path.stat()
    except OSError:
        return None
    if not path.is_file():
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def key(invocation: dict[str, Any], files: Iterable[Path]) -> FinishedKey | None:
    """The key of a run started with `invocation` that reads `files` (INPUT first); None when one of
    them is not a regular file (a saved dataset's directory: its content is not told by a stat)."""
    stats = {}
    for f in files:
        ident = _identity(f)
        if ident is None:
            return None
        stats[str(f.resolve())] = ident
    return {"invocation": invocation, "files": stats}


def lines_if_finished(state: Path, want: FinishedKey, out: Path) -> Sequence[str] | None:
    """The closing lines of the finished run this one repeats exactly, or None (take the whole path)."""

    if not Store.exists(state):
        return None
    store = Store.open_readonly(state)
    try:
        kept = store.finished
        if not kept or kept.get("key") != want or kept.get("out") != _identity(out):
            return None
        if kept.get("rows") != store.last_outcome_row():
            return None
        return list(kept["lines"])
    finally:
        store.close()


def clear(state: Path) -> None:
    """Forget the record (a run is about to take the whole path)."""

    if not Store.exists(state):
        return
    store = Store.open(state)
    try:
        if store.finished is not None:
            store.finished = None
    finally:
        store.close()


def remember(state: Path, done: FinishedKey, out: Path, lines: Sequence[str]) -> None:
    """Keep the record of a run that finished the job (exit 0) and printed `lines` at its end."""

    store = Store.open(state)
    try:
        record = {"key": done, "out": _identity(out), "rows": store.last_outcome_row(), "lines": list(lines)}
        store.finished = record
    finally:
        store.close()


def files_of(values: Iterable[object]) -> list[Path]:
    """The files among a run's flag values (a rubric, a verdict schema...), each once, in order."""
    seen: list[Path] = []
    for v in values:
        if isinstance(v, Path) and v not in seen and v.is_file():
            seen.append(v)
    return seen
