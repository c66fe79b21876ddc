"""A job's messages: where the shell keeps them, hands them to the checkpoint, and reads them back.

The serialized messages are most of a job's bytes (a judge prompt carries the completion it grades).
The core's values never hold them for a run: the requests carry ids, sizes and max_tokens only, and
a run's items their digests (`JobPlan.without_messages`). A new job's input file is read once: its
parse hands each block's messages to the checkpoint as it reads them (`kept_as_parsed`). The shell
holds a `MessageSource` for what is not kept that way: the input file, to be read again
(`InputMessages`: the items a resume adds, a path given to the Python API), or the messages a
design built (`HeldMessages`). Once the job is bound, `hand_to_checkpoint` keeps those still
missing in the checkpoint (`Store.keep_messages`) and empties the source; from there on the run
reads back those of what it sends: a create body a slice at a time
as it streams (`CheckpointMessages`), a sync request as it is launched. What a run holds per item is
then its ids and sizes, whatever its prompts' length.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

import attrs

from adapters.checkpoint.statelock import LOCK_NAME, StateLock, StateLockedError
from adapters.checkpoint.store import Store
from adapters.checkpoint.store.schema import STATE_FILES, holds_checkpoint
from adapters.files.readers import InputKind, input_lines
from judgecore.decide.planning import JobPlan
from judgecore.job.ids import covers_content
from judgecore.job.ints import records
from judgecore.job.items import DIGEST_BYTES, Items, raw_digest
from judgecore.job.parsing import Keep, iter_line_messages
from judgecore.values import frozen


class MessageSource(Protocol):
    """Where a run's messages are until its checkpoint keeps them."""

    def pairs(self, items: Items, want: frozenset[str] | None) -> Iterator[tuple[str, bytes]]:
        """`(custom_id, messages_json)` of the items in `want` (all: None), in the items' order."""
        ...

    def digests(self, items: Items) -> Iterator[bytes]:
        """Each item's `judgecore.job.items.raw_digest`, in the items' order: what the checkpoint binds."""
        ...

    def release(self) -> None:
        """The checkpoint has them: drop what is held."""
        ...


class HeldMessages:
    """Messages held in memory, one per item in the items' order, until `release` (the checkpoint has
    them). The shell's only mutable holder of a job's messages: the core's values never point here."""

    __slots__ = ("_values",)

    def __init__(self, values: Sequence[bytes]) -> None:
        self._values: Sequence[bytes] | None = values

    @property
    def released(self) -> bool:
        return self._values is None

    def pairs(self, items: Items, want: frozenset[str] | None) -> Iterator[tuple[str, bytes]]:
        if self._values is None:
            raise RuntimeError("the messages were released already (the checkpoint keeps them)")
        pairs = zip(items.custom_ids, self._values, strict=True)
        return pairs if want is None else (p for p in pairs if p[0] in want)

    def digests(self, items: Items) -> Iterator[bytes]:
        return items.raw_digests()  # the items keep theirs (`Items.without_messages`)

    def release(self) -> None:
        self._values = None


@attrs.define
class InputMessages:
    """The messages of items parsed from `path` without holding them (`parse_items(...,
    hold_messages=False)`): `pairs` reads them from the file again, each checked against the digest
    taken when the file was parsed.

    The digests (`DIGEST_BYTES` an item) are held here, not by the items, when the source is made with
    them (`load_input`): the run binds its checkpoint with them and checks the file read again
    against them, then `release` drops them (the checkpoint keeps them), whoever still holds the
    items. Made without them, the items' own are read (`Items.raw_digests`)."""

    path: Path
    kind: InputKind | None = None  # the input's format (`adapters.files.readers`): read again the same way
    #: the state dir its parse made to keep the messages in (`kept_as_parsed`): removed again by
    #: `discard_unbound` if the run is refused before its job is bound
    made: Path | None = attrs.field(default=None, eq=False, repr=False, kw_only=True)
    _digests: bytes | None = attrs.field(default=None, eq=False, repr=False, kw_only=True)
    _released: bool = attrs.field(default=False, eq=False, repr=False, init=False)

    def digests(self, items: Items) -> Iterator[bytes]:
        """Each item's digest, as the file was parsed (`RuntimeError` once released)."""
        d = self._digests
        if d is None:
            if self._released:
                raise RuntimeError("the digests were released already (the checkpoint keeps them)")
            return items.raw_digests()

        return records(d, DIGEST_BYTES)

    @property
    def held_digests(self) -> bytes | None:
        """The digests held (one `bytes`, `DIGEST_BYTES` an item), or None (the items' own are read)."""
        return self._digests

    def pairs(self, items: Items, want: frozenset[str] | None) -> Iterator[tuple[str, bytes]]:
        """`InputChangedError` at the first line that no longer holds the item parsed from it."""

        k = -1
        ids, cids = iter(items.ids), iter(items.custom_ids)  # each read in C, in step with the lines
        digests = self.digests(items)
        with contextlib.closing(input_lines(self.path, self.kind)) as f:
            for k, (line, item_id, messages, max_tokens) in enumerate(iter_line_messages(f)):
                if (
                    k >= len(items)
                    or item_id != next(ids)
                    or raw_digest(messages, max_tokens) != next(digests)
                ):
                    raise InputChangedError(self.path, line)
                cid = next(cids)
                if want is None or cid in want:
                    yield cid, messages
        if k + 1 != len(items):
            raise InputChangedError(self.path, None)

    def release(self) -> None:
        self._digests = None
        self._released = True


class InputChangedError(Exception):
    """The input file changed between its parse and the read of its messages."""

    def __init__(self, path: Path, line: int | None) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: the input changed while the run read it; nothing was sent: run again")


@frozen
class JobInput:
    """A job's items without their messages, and where the messages are: what the CLI loads for a run
    (`adapters.files.items_io.load_input`), so no copy of the messages outlives their hand-off."""

    items: Items
    messages: MessageSource

    def bindings(self) -> Iterator[tuple[str, str, str]]:
        """`(custom_id, id, digest)` of each item, in order: what the checkpoint binds and checks (the
        digests from `messages`, which may hold them for the items)."""
        return self.items.bindings(self.messages.digests(self.items))


def joined_digests(source: MessageSource, items: Items) -> bytes:
    """Each item's digest (`source.digests(items)`) in one `bytes`, `DIGEST_BYTES` apiece: the
    digests an `InputMessages` holds as they are (a join of its records would make an object and a
    list slot per item on the way: 73 MB at 1,000,000 items, the peak of a run; issue 42)."""
    if isinstance(source, InputMessages) and source.held_digests is not None:
        return source.held_digests
    return b"".join(source.digests(items))


def split_messages(items: Items) -> JobInput:
    """`items` as a `JobInput`: the same items without their messages, held by a `HeldMessages`."""
    return JobInput(items.without_messages(), HeldMessages(items.messages()))


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
    "HeldMessages",
    "InputChangedError",
    "InputMessages",
    "JobInput",
    "MessageSource",
    "discard_unbound",
    "hand_to_checkpoint",
    "kept_as_parsed",
    "split_messages",
]
