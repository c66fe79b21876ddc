"""A job's messages and the checkpoint: a new job's input parsed with its messages kept in the checkpoint
as they are read (`load_input`, `kept_as_parsed`), the checkpoint a refused run made removed again
(`discard_unbound`), a source's messages handed to the checkpoint (`hand_to_checkpoint`), and read back
from it as a create body streams (`CheckpointMessages`). A run's module: a dry run keeps nothing, and
imports neither this module nor the store (`adapters.files.messages` holds what it needs)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

from adapters.checkpoint.fresh import STATE_FILES, holds_checkpoint
from adapters.checkpoint.statelock import LOCK_NAME, StateLock, StateLockedError
from adapters.checkpoint.store import Store
from adapters.files.items_io import load_items
from adapters.files.messages import InputMessages, JobInput, MessageSource
from adapters.files.readers import InputKind, input_kind
from judgecore.decide.planning import JobPlan
from judgecore.job.ids import covers_content
from judgecore.job.parsing import Keep
from judgecore.values import frozen


def load_input(
    path: Path,
    *,
    job: str | None = None,
    kind: InputKind | None = None,
    state_dir: Path | None = None,
) -> JobInput:
    """A run's input (the CLI's): its items parsed keeping each message's size and digest, not the
    messages, so no run holds its whole input in memory. With `state_dir` (a new job's)
    the parse keeps the messages in that checkpoint as it reads them: the file is read once
    (`adapters.files.messages.kept_as_parsed`); else (or where that keeps none) the run reads them from
    `path` again to keep them (`adapters.files.messages.InputMessages`)."""

    kind = kind or input_kind(path)
    made = state_dir is not None and not state_dir.exists()
    with kept_as_parsed(state_dir, job) as keep:
        items = load_items(path, hold_messages=False, job=job, kind=kind, keep=keep)
    # the digests held by the source, which drops them once the checkpoint keeps them (not the items)
    source = InputMessages(path, kind, digests=items.digests, made=state_dir if made else None)
    return JobInput(attrs.evolve(items, digests=None), source)


@contextlib.contextmanager
def kept_as_parsed(state_dir: Path | None, job: str | None) -> Iterator[Keep | None]:
    """What keeps a new job's messages in the checkpoint of `state_dir` as its input is parsed
    (`judgecore.job.parsing.parse_items(keep=...)`), so the file is read once: all of them committed
    in one transaction when the block ends, none when it raises (a bad line: exit 2, and the
    checkpoint, or the state dir, this made is removed again: `discard_unbound`). None when the dir is
    bound to a job already (a resume: its messages are kept already; `--add-items`' are read again at
    the hand-off, `hand_to_checkpoint`), when the job's custom_ids (`job`) do not cover their
    messages, or when another run holds the dir (its error is the run's own lock). A `v3` custom_id
    covers its messages, so the rows this keeps before the job is bound are the bound job's own."""
    if state_dir is None or not covers_content(job):
        yield None
        return
    made = not state_dir.exists()
    try:
        store = Store.open(state_dir, exclusive="run")
    except StateLockedError:
        yield None
        return
    try:
        if store.manifest is not None:
            store.close()
            yield None
            return
        with store.keeping_messages() as keep:
            yield keep
    except BaseException:
        store.close()
        discard_unbound(state_dir, made)
        raise
    store.close()


def discard_unbound(state_dir: Path, made: bool) -> None:
    """Remove the checkpoint of `state_dir` when no job is bound to it (a new job's input parsed,
    then refused with exit 2 before its bind): its files, and the dir when the parse `made` it, so a
    refused run leaves no state dir behind. A dir bound to a job is left as it is, and so is one
    another process holds (a run of its own, perhaps still parsing: its lock is taken first)."""
    if not holds_checkpoint(state_dir):
        return
    try:
        lock = StateLock.take(state_dir, "run")
    except StateLockedError:
        return
    try:
        store = Store.open_readonly(state_dir)
        try:
            bound = store.manifest is not None
        finally:
            store.close()
        if bound:
            return
        for name in (*STATE_FILES, LOCK_NAME):
            (state_dir / name).unlink(missing_ok=True)
    finally:
        lock.release()
    if made:
        with contextlib.suppress(OSError):  # something else was put there meanwhile: left
            state_dir.rmdir()


def hand_to_checkpoint(store: Store, job: JobPlan, source: MessageSource) -> None:
    """Keep the job's messages in `store` (those not kept yet), then empty `source`: from here on the
    run reads back the messages it sends (`CheckpointMessages`, `Store.messages_of`)."""
    missing = store.messages_missing_count()  # a count: a new job's ids are not listed in memory
    if missing:
        want = None if missing >= len(job.items) else frozenset(store.messages_missing())
        store.keep_messages(source.pairs(job.items, want))
    source.release()


#: Requests whose messages are read back from the checkpoint at a time while a create body streams.
HYDRATE_SLICE = 256


@frozen
class CheckpointMessages:
    """The messages of `custom_ids`, in order, read back from the checkpoint `HYDRATE_SLICE` at a
    time as they are iterated (so creates in flight hold a slice each, not a sub-batch's messages).
    Each iteration reads afresh: a create body may be streamed more than once."""

    store: Store = attrs.field(repr=False)
    custom_ids: Sequence[str] = attrs.field(repr=False)

    def __len__(self) -> int:
        return len(self.custom_ids)

    def __iter__(self) -> Iterator[bytes]:
        cids = self.custom_ids
        for k in range(0, len(cids), HYDRATE_SLICE):
            yield from self.store.messages_of(list(cids[k : k + HYDRATE_SLICE]))


__all__ = [
    "HYDRATE_SLICE",
    "CheckpointMessages",
    "discard_unbound",
    "hand_to_checkpoint",
    "kept_as_parsed",
    "load_input",
]
