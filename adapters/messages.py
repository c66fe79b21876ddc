"""A job's messages, held in memory only until the run has them in its checkpoint.

The serialized messages are most of a job's bytes (a judge prompt carries the completion it grades). A
run needs them only for the requests it is sending, so once the job is bound the shell keeps them in
the checkpoint (`Store.keep_messages`), empties the `MessageBox` the job's columns read them from,
and reads back those of each slice of requests it sends (`hydrate`). What a run holds per item is then
its ids and sizes, whatever its prompts' length.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, overload

from judgecore.items import Items, Request, Requests, Unheld, iter_line_messages, raw_digest

if TYPE_CHECKING:
    from adapters.readers import InputKind
    from adapters.store import Store
    from judgecore.planning import JobPlan


class MessageBox(Sequence[bytes]):
    """The messages column of a job's `Items` and `Requests`: the values until `release`, then an
    `Unheld` column (a read raises `MessagesNotHeldError`; the shell reads them back with `hydrate`)."""

    __slots__ = ("_values",)

    def __init__(self, values: Sequence[bytes]) -> None:
        self._values = values

    @property
    def released(self) -> bool:
        return isinstance(self._values, Unheld)

    def release(self) -> None:
        """Drop the values (the checkpoint has them)."""
        self._values = Unheld(len(self._values))

    def __len__(self) -> int:
        return len(self._values)

    @overload
    def __getitem__(self, k: int) -> bytes: ...
    @overload
    def __getitem__(self, k: slice) -> Sequence[bytes]: ...
    def __getitem__(self, k: int | slice) -> bytes | Sequence[bytes]:
        return self._values[k]

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._values)


class InputMessages(MessageBox):
    """The messages of items parsed from `path` without holding them (`parse_items(...,
    hold_messages=False)`): released from the start; `pairs` reads them from the file again, each
    checked against the digest taken when the file was parsed."""

    __slots__ = ("kind", "path")

    def __init__(self, path: Path, n: int, *, kind: InputKind | None = None) -> None:
        super().__init__(Unheld(n))
        self.path = path
        self.kind = kind  # the input's format (`adapters.readers`): read again through the same reader

    def pairs(self, items: Items, want: frozenset[str] | None) -> Iterator[tuple[str, bytes]]:
        """`(custom_id, messages_json)` of the items in `want` (all: None), read from the file again;
        `InputChangedError` at the first line that no longer holds the item parsed from it."""
        k = -1
        from adapters.readers import input_lines

        with contextlib.closing(input_lines(self.path, self.kind)) as f:
            for k, (line, item_id, messages, max_tokens) in enumerate(iter_line_messages(f)):
                if (
                    k >= len(items)
                    or item_id != items.ids[k]
                    or raw_digest(messages, max_tokens) != items.digest_at(k)
                ):
                    raise InputChangedError(self.path, line)
                cid = items.custom_ids[k]
                if want is None or cid in want:
                    yield cid, messages
        if k + 1 != len(items):
            raise InputChangedError(self.path, None)


class InputChangedError(Exception):
    """The input file changed between its parse and the read of its messages."""

    def __init__(self, path: Path, line: int | None) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: the input changed while the run read it; nothing was sent: run again")


def boxed(items: Items) -> Items:
    """`items` reading their messages from a `MessageBox` (the same one when they already do)."""
    if isinstance(items.messages_json, MessageBox):
        return items
    return items.with_message_column(MessageBox(items.messages_json))


def hand_to_checkpoint(store: Store, job: JobPlan) -> None:
    """Keep the job's messages in `store` (those not kept yet), then empty the box the job reads them
    from, if it has one: from here on the run reads back the messages it sends (`hydrate`)."""
    box = job.items.messages_json
    missing = store.messages_missing()
    if missing:
        want = None if len(missing) >= len(job.items) else frozenset(missing)
        if isinstance(box, InputMessages):
            store.keep_messages(box.pairs(job.items, want))
        else:
            pairs = zip(job.items.custom_ids, box, strict=True)
            store.keep_messages(pair for pair in pairs if want is None or pair[0] in want)
    if isinstance(box, MessageBox):
        box.release()


def hydrate(store: Store, requests: Requests) -> Requests:
    """`requests` (a view) with their messages: from memory while the job still holds them, else
    read back from the checkpoint."""
    box = requests.message_column
    if isinstance(box, MessageBox) and box.released:
        return requests.hydrated(store.messages_of(list(requests.custom_ids)))
    return requests


#: Requests whose messages are read back from the checkpoint at a time while a create body streams.
HYDRATE_SLICE = 256


class Hydrating(Sequence[Request]):
    """`requests` as a create body streams them: their messages read back from the checkpoint
    `HYDRATE_SLICE` requests at a time (so creates in flight hold a slice each, not a sub-batch's
    messages); from memory while the job still holds them. Each iteration reads afresh."""

    __slots__ = ("_requests", "_store")

    def __init__(self, store: Store, requests: Requests) -> None:
        self._store, self._requests = store, requests

    @property
    def requests(self) -> Requests:
        return self._requests

    def __len__(self) -> int:
        return len(self._requests)

    @overload
    def __getitem__(self, k: int) -> Request: ...
    @overload
    def __getitem__(self, k: slice) -> Sequence[Request]: ...
    def __getitem__(self, k: int | slice) -> Request | Sequence[Request]:
        if isinstance(k, slice):
            return Hydrating(self._store, self._requests[k])
        return hydrate(self._store, self._requests[k : k + 1 or None])[0]

    def __iter__(self) -> Iterator[Request]:
        reqs = self._requests
        for k in range(0, len(reqs), HYDRATE_SLICE):
            yield from hydrate(self._store, reqs[k : k + HYDRATE_SLICE])
