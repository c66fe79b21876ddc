"""Parsing input lines into items: what a valid input line is (`parse_item`, `parse_items`), checked
once, in one pass, so that whatever is accepted can be sent and written out after paying."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from itertools import compress, islice, repeat
from operator import add, is_, is_not, or_, truth
from typing import Any

import orjson

from judgecore.job.columns import Sparse, SparseBuilder
from judgecore.job.conversations import check_messages, message_blocks
from judgecore.job.errors import InputError
from judgecore.job.ids import (
    ID_DIGEST_BYTES,
    check_unique,
    covers_content,
    custom_ids_of_digests,
    digests_for,
    distinct_hashes,
)
from judgecore.job.ints import IntsBuilder, LinesBuilder, records
from judgecore.job.items import DIGEST_BYTES, CustomIds, Item, Items, raw_digest
from judgecore.job.nesting import MAX_DEPTH, brackets, depth, most_brackets, too_deep
from judgecore.job.texts import Keyed, Texts, TextsBuilder
from judgecore.values import frozen

_ITEM_KEYS = frozenset({"id", "prompt", "messages", "max_tokens", "metadata"})

#: The largest input line: the Messages API takes at most 32 MB per request.
MAX_LINE_BYTES = 32_000_000


def _dumps(value: Any) -> bytes:
    """orjson bytes, copied to their exact size: orjson 3.13 leaves each result in a ~4 KiB
    allocation, which made 20,000 short items cost 80 MB instead of 2 MB."""
    return bytes(memoryview(orjson.dumps(value)))


def _fail(line: int, reason: str) -> InputError:
    return InputError(line, reason)


_Fields = tuple[str, int, bytes, "int | None", "bytes | None"]
#: what takes a parsed block's messages (`parse_items(keep=...)`): its custom_ids and messages, in order
Keep = Callable[[Sequence[str], Sequence[bytes]], None]


def _parse_fields(line: int, raw: bytes | str) -> _Fields | None:
    """One line's fields, validated in one pass (see `parse_item`); None for a blank line."""
    if len(raw) > MAX_LINE_BYTES:
        raise _too_long(line, raw)
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if not raw.strip():
            return None
        raise _fail(line, f"not valid JSON ({exc})") from None
    return _fields_of(line, raw, obj)


def _too_long(line: int, raw: bytes | str) -> InputError:
    return _fail(
        line, f"the line is {len(raw):,} bytes, over the {MAX_LINE_BYTES:,}-byte limit of one request"
    )


def _fields_of(line: int, raw: bytes | str, obj: Any, *, hold: bool = True) -> _Fields:
    """The fields of one parsed line `obj` (its text `raw`), validated (`hold=False`: messages_json
    is not kept, so it is not copied to its exact size, see `_dumps`)."""
    if type(obj) is not dict:
        raise _fail(line, f"expected a JSON object, got {type(obj).__name__}")
    if not obj.keys() <= _ITEM_KEYS:
        unknown = sorted(set(obj) - _ITEM_KEYS)
        raise _fail(
            line,
            f"unknown field(s) {', '.join(unknown)}; extra data belongs under 'metadata', "
            "or give --template FILE to build the prompt from the row's fields",
        )
    item_id = obj.get("id")
    if type(item_id) is not str or not item_id:
        raise _fail(line, "'id' must be a non-empty string")
    # Only metadata and message blocks can nest: a line of a prompt alone needs no look at all, nor
    # one with too few brackets to nest that deep (counted in C).
    if (
        ("metadata" in obj or "messages" in obj)
        and (raw.count(b"[") + raw.count(b"{") if type(raw) is bytes else brackets(raw)) > MAX_DEPTH
        and depth(obj) > MAX_DEPTH
    ):
        raise _fail(line, f"item {item_id!r}: nested more than {MAX_DEPTH} levels deep")
    prompt = obj.get("prompt")
    messages = obj.get("messages")
    if (prompt is None) == (messages is None):
        has = "neither; a table's empty cell is none" if prompt is None else "both"
        raise _fail(line, f"item {item_id!r}: give exactly one of 'prompt' or 'messages' (it has {has})")
    if prompt is not None:
        if type(prompt) is not str or not prompt:
            raise _fail(line, f"item {item_id!r}: 'prompt' must be a non-empty string")
        messages_json = _PROMPT_HEAD + orjson.dumps(prompt) + _PROMPT_TAIL
    else:
        check_messages(line, item_id, messages)
        messages_json = _dumps(messages) if hold else orjson.dumps(messages)
    max_tokens = obj.get("max_tokens")
    if max_tokens is not None and (type(max_tokens) is not int or max_tokens < 1):
        raise _fail(line, f"item {item_id!r}: 'max_tokens' must be a positive integer")
    metadata_json = _dumps(obj["metadata"]) if "metadata" in obj else None
    return item_id, line, messages_json, max_tokens, metadata_json


_PROMPT_HEAD = b'[{"role":"user","content":'
_PROMPT_TAIL = b"}]"


def parse_item(line: int, raw: bytes | str) -> Item | None:
    """Parse one input line into an `Item`; None for a blank line; `InputError` naming the line otherwise.

    Whatever is accepted can be sent and written to the output: nesting is at most `MAX_DEPTH` levels
    and a line at most `MAX_LINE_BYTES`; `messages` has the shape the Messages API takes (see
    `judgecore.job.conversations.check_messages`).
    """
    fields = _parse_fields(line, raw)
    return None if fields is None else Item(*fields)


#: Lines validated at a time by `_block_columns`: a block's parsed objects are held together, so
#: this bounds the memory of a parse, not its result.
BLOCK_LINES = 128
#: how many ids a parse holds as `str`s before it moves them (and their custom_ids) into the columns
CHUNK_IDS = 16_384


class _Columns:
    """The columns `parse_items` fills, a block of lines at a time (private to one call), each as
    narrow as it goes: a parse's peak is about its result, not 8 bytes per item per column."""

    __slots__ = (
        "digest_bytes",
        "digests",
        "hold",
        "ids",
        "keep_metadata",
        "lines",
        "max_tokens",
        "messages",
        "metadata",
        "n",
        "sizes",
        "spool",
    )

    def __init__(self, *, hold: bool, digests: bool, spool: bool = False, metadata: bool = True) -> None:
        self.hold, self.digests = hold, digests and not hold
        self.keep_metadata = metadata  # False: each line's metadata checked, not kept (`parse_chunks`)
        #: the messages of the ids not flushed yet, for `parse_items`'s `keep` (None: none kept)
        self.spool: list[bytes] | None = [] if spool else None
        self.n = 0  # the items so far
        self.ids: list[str] = []
        self.lines = LinesBuilder()
        self.messages: list[bytes] = []
        self.sizes = IntsBuilder()
        self.digest_bytes = bytearray()
        self.max_tokens: SparseBuilder[int] = SparseBuilder()
        self.metadata: SparseBuilder[bytes] = SparseBuilder()

    def add(self, f: _Fields) -> None:
        """One item's fields (`_fields_of`)."""
        n = self.n
        self.ids.append(f[0])
        self.lines.append(f[1])
        self.sizes.append(len(f[2]))
        if f[3] is not None:
            self.max_tokens.put(n, f[3])
        if f[4] is not None and self.keep_metadata:
            self.metadata.put(n, f[4])
        self.n = n + 1
        if self.hold:
            self.messages.append(f[2])
        elif self.digests:
            self.digest_bytes += raw_digest(f[2], f[3])
        if self.spool is not None:
            self.spool.append(f[2])


def parse_items(
    lines: Iterable[bytes | str],
    *,
    hold_messages: bool = True,
    digests: bool = True,
    job: str | None = None,
    lazy_ids: bool = False,
    keep: Keep | None = None,
) -> Items:
    """Parse a whole JSONL file (an iterable of its lines); blank lines skipped, first error raised.

    Each line is parsed once, straight into the columns of an `Items`, and each custom_id's digest
    made once, a chunk of ids at a time (see `judgecore.job.ids`): the custom_ids are the ids and their
    digests (`judgecore.job.texts.Keyed`, usually), 15 bytes an item. Duplicate ids (and custom_id collisions) are
    reported with both line numbers. A block of lines is validated a column at a time
    (`_block_columns`); a block it does not vouch for (a blank line, a content block, a bad line) is
    parsed line by line (`_fields_of`), which names the first bad line: either way the same rules.

    `hold_messages=False` keeps each item's messages' size and digest, not the messages (most of a
    job's bytes): their column is None, and whoever needs them reads them again
    (`iter_line_messages`), checked against the digests. With `digests=False` too, only the sizes are
    kept (a plan needs no more), unless the job's custom_ids cover each item's digest (a `v3` key,
    `judgecore.job.ids.covers_content`: then the digests are kept). `job` is the job key the custom_ids
    are derived with (`judgecore.job.ids.job_key`; None: the `v1` ids of a state dir bound before job
    keys).

    `lazy_ids=True` (a dry run on a fresh state dir, which keeps nothing): the custom_ids are derived
    when first read (`judgecore.job.items.CustomIds`), and a repeated id is told by the ids' own hashes.
    Only a custom_id collision of distinct ids (two equal 120-bit digests) goes unlooked-for: nothing
    of the job is ever kept under those custom_ids by a dry run.

    `keep` (a run's, with `hold_messages=False` and a `v3` job key): each block's custom_ids and
    messages are handed to it as the block is parsed, `(custom_ids, messages_json)` in the items'
    order, so a run's checkpoint keeps its messages from this one read of its input (the parse holds a
    block's at a time). A `v3` custom_id covers its messages, so what is kept under one never differs.
    """
    content = covers_content(job)  # each custom_id covers its item's digest: kept to derive them
    if keep is not None and (hold_messages or lazy_ids or not content):
        raise ValueError("keep= takes the messages of a run's parse: hold_messages=False, a v3 job key")
    cols = _Columns(hold=hold_messages, digests=digests or (content and not lazy_ids), spool=keep is not None)
    ids, id_digests, hashes = TextsBuilder(), bytearray(), array("q")
    rows = iter(lines)
    first = 1

    def contents(start: int, stop: int) -> bytes | None:  # items start..stop's digests, if ids need them
        if not content:
            return None
        if cols.hold:
            return b"".join(map(raw_digest, cols.messages[start:stop], cols.max_tokens.window(start, stop)))
        return bytes(cols.digest_bytes[start * DIGEST_BYTES : stop * DIGEST_BYTES]) if cols.digests else None

    def flush() -> None:  # a chunk's ids and their custom_ids' digests: no list of all of them
        chunk = cols.ids
        ids.extend(chunk)
        if lazy_ids or content:  # a `v3` id covers its content: equal ids may have distinct digests
            hashes.extend(map(hash, chunk))
        if not lazy_ids:  # equal custom_ids have equal digests: distinct digests, distinct custom_ids
            made = digests_for(chunk, job=job, contents=contents(cols.n - len(chunk), cols.n))
            id_digests.extend(made)
            if keep is not None and cols.spool is not None and chunk:
                keep(custom_ids_of_digests(chunk, made), cols.spool)
                cols.spool = []
        cols.ids = []

    while block := list(islice(rows, BLOCK_LINES)):
        if not _block_columns(cols, block, first):
            _line_by_line(cols, block, first)
        first += len(block)
        if keep is not None or len(cols.ids) >= CHUNK_IDS:  # kept: a block's messages at a time
            flush()
    flush()
    # the ids' hashes looked at and dropped, then each column built in turn: one copy at a time on top
    ids_distinct = distinct_hashes(hashes)
    del hashes[:]
    n, lines, sizes = cols.n, cols.lines.build(), cols.sizes.build()
    max_tokens, metadata = cols.max_tokens.build(n), cols.metadata.build(n)
    item_ids = ids.build()  # (its parts dropped)
    lazy_contents = contents(0, n) if lazy_ids else None
    digest_hashes: Iterator[int] = iter(())
    digests = None
    if cols.digests:
        digests = bytes(cols.digest_bytes)
        cols.digest_bytes.clear()
    messages = tuple(cols.messages) if hold_messages else None
    cols.messages.clear()
    if lazy_ids:
        custom_ids: Texts | Keyed = CustomIds(item_ids, job, lazy_contents)
    else:
        raw = bytes(id_digests)
        id_digests.clear()
        custom_ids = custom_ids_of_digests(item_ids, raw)
        # equal custom_ids have equal digests: distinct digests, distinct custom_ids (hashed now)
        digest_hashes = map(hash, records(raw, ID_DIGEST_BYTES))
    # a `v3` id covers its content: equal ids may have distinct digests, so the ids are looked at too
    if not (ids_distinct and distinct_hashes(digest_hashes)):
        check_unique(item_ids, item_ids if lazy_ids else custom_ids, lines)  # a repeat, or hashes colliding
    return Items(
        item_ids,
        lines,
        messages,
        max_tokens,
        metadata,
        custom_ids,
        message_sizes=sizes,
        digests=digests,
        job=job,
    )


@frozen
class ParsedChunk:
    """A run of a file's items as `parse_chunks` hands them over, then forgets them: their ids, lines,
    messages' serialized sizes and the max_tokens they give (positions from 0 in the chunk)."""

    ids: Sequence[str]
    lines: Sequence[int]
    message_sizes: Sequence[int]
    max_tokens: Sparse[int]


def parse_chunks(lines: Iterable[bytes | str], *, chunk_ids: int = CHUNK_IDS) -> Iterator[ParsedChunk]:
    """`parse_items` of the lines (with `hold_messages=False, digests=False`) a chunk of about
    `chunk_ids` items at a time, none of them kept: what a plan that keeps only totals reads (a dry
    run on a fresh state dir, in memory flat in the file's size). The same rules, the same first bad
    line raised; a repeated id is the caller's to look for (each chunk's ids are handed over)."""
    rows = iter(lines)
    first = 1
    cols = _Columns(hold=False, digests=False, metadata=False)
    while block := list(islice(rows, BLOCK_LINES)):
        if not _block_columns(cols, block, first):
            _line_by_line(cols, block, first)
        first += len(block)
        if cols.n >= chunk_ids:
            yield _chunk_of(cols)
            cols = _Columns(hold=False, digests=False, metadata=False)
    if cols.n:
        yield _chunk_of(cols)


def _chunk_of(cols: _Columns) -> ParsedChunk:
    n = cols.n
    return ParsedChunk(cols.ids, cols.lines.build(), cols.sizes.handed_over(), cols.max_tokens.build(n))


def _line_by_line(cols: _Columns, block: list[bytes | str], first: int) -> None:
    """The lines of `block` (the first being line `first`) one at a time: blank lines skipped, the
    first bad one raised."""
    sizes_only = not cols.hold and not cols.digests
    head_tail = len(_PROMPT_HEAD) + len(_PROMPT_TAIL)
    loads, dumps, decode_error = orjson.loads, orjson.dumps, orjson.JSONDecodeError
    for n, raw in enumerate(block, start=first):
        if len(raw) > MAX_LINE_BYTES:
            raise _too_long(n, raw)
        try:
            obj = loads(raw)
        except decode_error as exc:
            if not raw.strip():
                continue
            raise _fail(n, f"not valid JSON ({exc})") from None
        # the usual line, `{"id": "...", "prompt": "..."}`, in one test; every other goes the long way
        if sizes_only and type(obj) is dict and len(obj) == 2:
            item_id, prompt = obj.get("id"), obj.get("prompt")
            if type(item_id) is str and item_id and type(prompt) is str and prompt:
                cols.ids.append(item_id)
                cols.lines.append(n)
                cols.sizes.append(len(dumps(prompt)) + head_tail)
                cols.n += 1
                continue
        cols.add(_fields_of(n, raw, obj, hold=cols.hold or cols.spool is not None))


_NONE = type(None)
#: what a line's `prompt` adds to its serialized text (one user turn)
_HEAD_TAIL = len(_PROMPT_HEAD) + len(_PROMPT_TAIL)
_ABSENT = object()  # a key not in the line (`"metadata": null` is metadata, kept as `null`)


def _block_columns(cols: _Columns, block: list[bytes | str], first: int) -> bool:
    """Validate `block` (the first being line `first`) a column at a time, each check one C-level pass
    over the block (`map` of a builtin), and add its items to `cols`: the same rules as `_fields_of`
    and `judgecore.job.conversations.check_messages` line by line, stated over columns. False (nothing added) when the block
    is not plainly valid, for `_line_by_line` to name its first bad line, or skip its blank ones."""
    try:  # the whole block within one line's limit: no line is over it (one copy in C, no pass)
        short = len(b"".join(block) if type(block[0]) is bytes else "".join(block)) <= MAX_LINE_BYTES
    except TypeError:  # bytes and text mixed
        short = False
    if not short and max(map(len, block)) > MAX_LINE_BYTES:
        return False
    try:
        objs = list(map(orjson.loads, block))
        ids = list(map(dict.get, objs, repeat("id")))  # `dict.get` of anything but an object: TypeError
        "".join(ids)  # every id a string: anything else (None: no id) is a TypeError
    except (orjson.JSONDecodeError, TypeError):  # a blank line, a bad one, or one that is no object
        return False
    if "" in ids:
        return False
    prompts = list(map(dict.get, objs, repeat("prompt")))
    messages = list(map(dict.get, objs, repeat("messages")))
    # exactly one of the two on each line: no messages where a prompt is, and messages where none is
    is_prompt = list(map(is_not, prompts, repeat(None)))
    if list(map(is_, messages, repeat(None))) != is_prompt:
        return False
    texts = list(compress(prompts, is_prompt))
    convs = list(filter(None, messages))  # a conversation that is empty (or any falsy value) is not kept
    if len(texts) + len(convs) != len(objs) or "" in texts or not set(map(type, convs)) <= {list}:
        return False
    try:
        joined = "".join(texts)  # every prompt a string
    except TypeError:
        return False
    content_blocks = False  # whether a message's content is a list of blocks (which may nest deep)
    if convs:
        content_blocks = message_blocks(convs)
        if content_blocks is None:
            return False
    max_tokens = list(map(dict.get, objs, repeat("max_tokens")))
    given_max_tokens = max_tokens.count(None) != len(max_tokens)
    if given_max_tokens:  # some line gives one
        mt_types = set(map(type, max_tokens))
        if not mt_types <= {_NONE, int} or (int in mt_types and min(filter(_not_none, max_tokens)) < 1):
            return False
    given = list(map(dict.get, objs, repeat("metadata"), repeat(_ABSENT)))
    has_metadata = list(map(is_not, given, repeat(_ABSENT)))
    # no key but the item's: each line has its id, its prompt or messages, and the max_tokens and
    # metadata it gives, so as many keys in all as those tell only when no line has another (or one
    # given as null); else each line's keys are looked at
    known = 2 * len(objs) + len(max_tokens) - max_tokens.count(None) + has_metadata.count(True)
    if sum(map(len, objs)) != known and not all(map(_ITEM_KEYS.issuperset, objs)):
        return False
    # each given metadata copied to its exact size (`_dumps`), put in its line's place below
    try:
        dumped = list(map(orjson.dumps, compress(given, has_metadata)))
        if cols.keep_metadata:
            dumped = list(map(bytes, map(memoryview, dumped)))
    except TypeError:  # nested past what orjson serializes (254 levels): too deep, named line by line
        return False
    # only metadata and content blocks can nest: those lines are looked at, and only when one of them
    # opens more than `MAX_DEPTH` arrays and objects is each walked (`too_deep`). With no content
    # blocks a line nests one level deeper than its metadata, which opens as many as its bytes do.
    if content_blocks:
        look = list(map(or_, has_metadata, map(truth, messages)))
        deep = most_brackets(list(compress(block, look))) > MAX_DEPTH
    else:
        look = has_metadata
        deep = bool(dumped) and most_brackets(dumped) + 1 > MAX_DEPTH
    if deep and any(map(too_deep, compress(block, look), compress(objs, look))):
        return False
    at = cols.n
    if dumped and cols.keep_metadata:
        cols.metadata.put_many(compress(range(at, at + len(objs)), has_metadata), dumped)
    if given_max_tokens:
        cols.max_tokens.put_many(
            compress(range(at, at + len(objs)), map(is_not, max_tokens, repeat(None))),
            filter(_not_none, max_tokens),
        )
    cols.ids += ids
    cols.lines.add_run(first, len(block))
    cols.n = at + len(objs)
    dumps = orjson.dumps
    if not cols.hold and not cols.digests:  # the sizes alone, each a C-level pass
        # a prompt's serialized size is its length and its quotes when none of the block's prompts
        # has a character to escape or to encode in more than a byte (told by serializing them once)
        if joined.isascii() and len(dumps(joined)) == len(joined) + 2:
            prompt_sizes = map(add, map(len, texts), repeat(_HEAD_TAIL + 2))
        else:
            prompt_sizes = map(add, map(len, map(dumps, texts)), repeat(_HEAD_TAIL))
        if not convs:
            cols.sizes.extend(list(prompt_sizes))
        elif not texts:
            cols.sizes.extend(list(map(len, map(dumps, convs))))
        else:  # both kinds: each kind's sizes, taken in the lines' order (no `null` serialized)
            messages_sizes = map(len, map(dumps, convs))
            cols.sizes.extend(list(map(next, map((messages_sizes, prompt_sizes).__getitem__, is_prompt))))
        return True
    enc = _dumps if cols.hold or cols.spool is not None else dumps
    head, tail = _PROMPT_HEAD, _PROMPT_TAIL
    mjs = [
        head + dumps(p) + tail if p is not None else enc(m) for p, m in zip(prompts, messages, strict=True)
    ]
    cols.sizes.extend(list(map(len, mjs)))
    if cols.hold:
        cols.messages += mjs
    elif cols.digests:
        cols.digest_bytes += b"".join(map(raw_digest, mjs, max_tokens))
    if cols.spool is not None:
        cols.spool += mjs
    return True


_not_none = partial(is_not, None)


def iter_line_messages(lines: Iterable[bytes | str]) -> Iterator[tuple[int, str, bytes, int | None]]:
    """`(line, id, messages_json, max_tokens)` of each item of a JSONL file, in order, validated as
    `parse_items` does: the messages of items parsed with `hold_messages=False`, read again."""
    for n, raw in enumerate(lines, start=1):
        f = _parse_fields(n, raw)
        if f is not None:
            yield n, f[0], f[2], f[3]
