"""A job's messages: where the shell holds them until the checkpoint keeps them (`adapters.files.
checkpointed` hands them to it and reads them back; this module imports no checkpoint, so a dry run,
which keeps none, loads neither it nor SQLite).

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

from adapters.files.readers import InputKind, input_lines
from judgecore.job.ints import records
from judgecore.job.items import DIGEST_BYTES, Items, raw_digest
from judgecore.job.parsing import iter_line_messages
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
    (`adapters.files.checkpointed.load_input`), so no copy of the messages outlives their hand-off."""

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


__all__ = [
    "HeldMessages",
    "InputChangedError",
    "InputMessages",
    "JobInput",
    "MessageSource",
    "split_messages",
]
