"""Items: what the user asked to judge, as values.

An `Item` is one parsed input line (`judgecore.job.parsing`). `Items` are a job's items as columns, one
tuple per field, in input order; their messages are held (a tuple of bytes) or not (None: the shell
keeps them, in the input file or the checkpoint, and reads them back for what it sends). Either way
an `Items` holds immutable data only. The requests built from them are `judgecore.wire.requests`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal, overload

import attrs

from judgecore.job.columns import Sparse
from judgecore.job.ids import (
    check_unique,
    covers_content,
    custom_id_for,
    custom_id_lengths,
    custom_ids_for,
    job_custom_ids,
    sha256,
    valid_job_key,
)
from judgecore.job.ints import Ints, counted, records
from judgecore.job.texts import Keyed, LazyTexts, Texts, texts_of
from judgecore.values import frozen

RoutePath = Literal["sync", "batch"]


@frozen
class Item:
    """One input line: an id, the conversation to judge, an optional max_tokens and opaque metadata.

    `messages_json` is the conversation serialized once with orjson (a plain `prompt` becomes one user
    turn); `metadata_json` is the metadata's bytes, carried to the output untouched (None when absent).
    `custom_id` is derived from the id once, when the item is parsed (`judgecore.job.ids`: the `v1` id; a
    job's `Items.for_job` derives its own).
    """

    id: str
    line: int
    messages_json: bytes
    max_tokens: int | None = None
    metadata_json: bytes | None = None
    custom_id: str = attrs.field(
        default=attrs.Factory(lambda self: custom_id_for(self.id), takes_self=True), eq=False
    )

    @property
    def digest(self) -> str:
        """A digest of what is sent for this item; a change under the same id is a resume conflict."""
        return _digest(self.messages_json, self.max_tokens)


def _digest(messages_json: bytes, max_tokens: int | None) -> str:
    return raw_digest(messages_json, max_tokens).hex()


def raw_digest(messages_json: bytes, max_tokens: int | None) -> bytes:
    """The 16 bytes of an item's digest (`Item.digest` is their hex)."""
    h = sha256(messages_json)
    h.update(b"\x00" + str(max_tokens).encode())
    return h.digest()[:DIGEST_BYTES]


DIGEST_BYTES = 16


class MessagesNotHeldError(LookupError):
    """A job's messages were read from items that do not hold them."""


def _not_held() -> MessagesNotHeldError:
    return MessagesNotHeldError("the items do not hold their messages (parsed with hold_messages=False)")


class CustomIds(LazyTexts):
    """A job's custom_ids, `custom_ids_for(ids, job=job, contents=contents)`, derived when first read:
    a `Texts` equal to the derived one, for a job whose custom_ids may never be read (a dry run on a
    fresh state dir: its plan needs their lengths only).

    One value read by its position is derived alone (`custom_id_for`); any other read of the values
    (iterating, a slice, an equality, a lookup) derives them all, once. Their count is the ids', and
    their lengths (`lengths`) are told by the ids alone (`judgecore.job.ids.custom_id_lengths`: in C
    when each id is its own prefix, the usual case). A job whose ids cover each request's content
    (`judgecore.job.ids.covers_content`) needs `contents` for its values, not for their lengths."""

    __slots__ = ("_contents", "_ids", "_job")

    _ids: Texts
    _job: str | None
    _contents: bytes | None

    def __init__(self, ids: Sequence[str], job: str | None, contents: bytes | None = None) -> None:
        texts = Texts.of(ids)
        valid_job_key(job)  # a bad key is a `ValueError` now, as `custom_ids_for` would raise it
        object.__setattr__(self, "_ids", texts)
        object.__setattr__(self, "_job", job)
        object.__setattr__(self, "_contents", contents)

    def _values(self) -> Sequence[str]:
        return custom_ids_for(self._ids, job=self._job, contents=self._contents)

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, k: int) -> str: ...
    @overload
    def __getitem__(self, k: slice) -> Texts: ...
    def __getitem__(self, k: int | slice) -> str | Texts:
        if isinstance(k, slice) or self.made:
            return super().__getitem__(k)
        item_id, c = self._ids[k], self._contents  # an IndexError here for a k out of range
        k %= len(self._ids)
        content = (
            c[k * DIGEST_BYTES : (k + 1) * DIGEST_BYTES]
            if c is not None and covers_content(self._job)
            else None
        )
        return custom_id_for(item_id, job=self._job, content=content)

    def lengths(self) -> Iterator[int]:
        """The length of each custom_id, told by the ids (none derived: a `v3` key's need contents)."""
        return super().lengths() if self.made else custom_id_lengths(self._ids)


def _sizes_of(self: Items) -> Ints:
    if self.messages_json is None:
        raise ValueError("Items without their messages need their message_sizes")
    return Ints(map(len, self.messages_json))


@frozen(eq=False, repr=False)
class Items(Sequence[Item]):
    """A job's items as columns, in input order: one tuple per field instead of one object per item.

    It is a `Sequence[Item]` (an `Item` is built when one is read; `MessagesNotHeldError` when the
    messages are not held); the columns serve the bulk work (requests, sizes, output) without an
    object per item, which keeps a big job's memory to its bytes. Two `Items` are equal when their
    columns are; an `Items` is not equal to a tuple of `Item`s (compare `tuple(items)`).
    """

    ids: Texts = attrs.field(converter=Texts.of)
    #: each item's line in its file: a `range` when they count up by one (no blank line between)
    lines: range | Ints = attrs.field(converter=counted)
    #: each item's serialized messages; None: not held (the shell keeps them)
    messages_json: tuple[bytes, ...] | None
    max_tokens: Sparse[int] = attrs.field(converter=Sparse.of)
    metadata_json: Sparse[bytes] = attrs.field(converter=Sparse.of)
    #: each item's custom_id: usually the `Keyed` column of the ids and their digests a parse makes
    #: (`judgecore.job.ids.job_custom_ids`: 15 bytes an item), else held (`Texts`)
    custom_ids: Texts | Keyed = attrs.field(converter=texts_of)
    #: the byte length of each item's serialized messages
    message_sizes: Ints = attrs.field(
        default=attrs.Factory(_sizes_of, takes_self=True), converter=Ints.of, kw_only=True
    )
    #: each item's `raw_digest`, `DIGEST_BYTES` apiece, when its messages are not held (None: from them)
    digests: bytes | None = attrs.field(default=None, kw_only=True)
    #: the job key the custom_ids were derived with (`judgecore.job.ids.job_key`; None: `v1` ids)
    job: str | None = attrs.field(default=None, kw_only=True)
    #: each request's model, for a panel (`judgecore.job.designs`); None: every request asks the job's model
    models: tuple[str | None, ...] | None = attrs.field(default=None, kw_only=True)

    @classmethod
    def of(cls, items: Iterable[Item]) -> Items:
        """The columns of `items` (already `Items`: itself)."""
        if isinstance(items, Items):
            return items
        its = tuple(items)
        return cls(
            tuple(i.id for i in its),
            [i.line for i in its],
            tuple(i.messages_json for i in its),
            tuple(i.max_tokens for i in its),
            tuple(i.metadata_json for i in its),
            tuple(i.custom_id for i in its),
        )

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def holds_messages(self) -> bool:
        return self.messages_json is not None

    def without_messages(self) -> Items:
        """The same items, their messages not held (their digests kept, for the checkpoint's binding)."""
        if self.messages_json is None:
            return self
        return attrs.evolve(self, messages_json=None, digests=self.digests or b"".join(self.raw_digests()))

    def messages(self) -> tuple[bytes, ...]:
        """The held messages, one per item; `MessagesNotHeldError` when they are not held."""
        if self.messages_json is None:
            raise _not_held()
        return self.messages_json

    def for_job(self, job: str | None) -> Items:
        """The same items with the custom_ids of job `job` (itself when they are already)."""
        if job == self.job:
            return self
        if covers_content(job) and self.messages_json is None and self.digests is None:
            # neither messages nor digests (a dry run's plan on a fresh state dir): their lengths only
            check_unique(self.ids, self.ids, self.lines)
            return attrs.evolve(self, custom_ids=CustomIds(self.ids, job), job=job)
        contents = b"".join(self.raw_digests()) if covers_content(job) else None
        cids = job_custom_ids(self.ids, job=job, contents=contents)
        check_unique(self.ids, cids, self.lines)
        return attrs.evolve(self, custom_ids=cids, job=job)

    def raw_digests(self) -> Iterator[bytes]:
        """Each item's `raw_digest`, in order (`MessagesNotHeldError` when neither they nor the
        messages are held)."""
        if self.digests is not None:
            return records(self.digests, DIGEST_BYTES)
        return map(raw_digest, self.messages(), self.max_tokens)

    def bindings(self, digests: Iterable[bytes] | None = None) -> Iterator[tuple[str, str, str]]:
        """`(custom_id, id, digest)` of each item, in order: what the checkpoint binds and checks.
        `digests`: each item's `raw_digest`, when held elsewhere (None: the items' own)."""
        raw = self.raw_digests() if digests is None else digests
        return zip(self.custom_ids, self.ids, map(bytes.hex, raw), strict=True)

    def digest_at(self, k: int) -> bytes:
        """The `raw_digest` of item `k`."""
        if self.digests is not None:
            return self.digests[k * DIGEST_BYTES : (k + 1) * DIGEST_BYTES]
        return raw_digest(self.messages()[k], self.max_tokens[k])

    @overload
    def __getitem__(self, k: int) -> Item: ...
    @overload
    def __getitem__(self, k: slice) -> Items: ...
    def __getitem__(self, k: int | slice) -> Item | Items:
        if isinstance(k, slice):
            d = self.digests
            w = DIGEST_BYTES
            return Items(
                self.ids[k],
                self.lines[k],
                None if self.messages_json is None else self.messages_json[k],
                self.max_tokens[k],
                self.metadata_json[k],
                self.custom_ids[k],
                message_sizes=self.message_sizes[k],
                digests=None
                if d is None
                else b"".join(d[i * w : (i + 1) * w] for i in range(len(self.ids))[k]),
                job=self.job,
                models=None if self.models is None else self.models[k],
            )
        return Item(
            self.ids[k],
            self.lines[k],
            self.messages()[k],
            self.max_tokens[k],
            self.metadata_json[k],
            self.custom_ids[k],
        )

    def __iter__(self) -> Iterator[Item]:
        return map(
            Item,
            self.ids,
            self.lines,
            self.messages(),
            self.max_tokens,
            self.metadata_json,
            self.custom_ids,
        )

    def _key(self) -> tuple[Any, ...]:
        return (
            self.ids,
            self.lines,
            self.messages_json,
            self.max_tokens,
            self.metadata_json,
            self.custom_ids,
            self.message_sizes,
            self.digests,
            self.job,
            self.models,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Items):
            return NotImplemented
        return self is other or self._key() == other._key()

    def __hash__(self) -> int:  # equal items have equal custom_ids and max_tokens
        return hash((self.custom_ids, self.max_tokens))

    def __repr__(self) -> str:  # the ids only: the messages may be long, or not held
        return f"Items({len(self)} items: {list(self.ids[:5])!r}{' ...' if len(self) > 5 else ''})"
