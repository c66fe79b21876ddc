"""Parsing input lines into items: what a valid input line is (`parse_item`, `parse_items`), checked
once, in one pass, so that whatever is accepted can be sent and written out after paying."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from judgecore.errors import InputError
from judgecore.ids import check_unique, custom_ids_for
from judgecore.items import Item, Items, raw_digest

_ITEM_KEYS = frozenset({"id", "prompt", "messages", "max_tokens", "metadata"})
_MESSAGE_KEYS = frozenset({"role", "content"})
_ROLES = frozenset({"user", "assistant"})

#: The deepest nesting an input line may have (the line's object is level 1). orjson refuses to
#: serialize past 254 levels, and the output line and the request body each add a level or two: a
#: limit checked at parse time means whatever is accepted can be sent and written out after paying.
MAX_DEPTH = 64
#: The largest input line: the Messages API takes at most 32 MB per request.
MAX_LINE_BYTES = 32_000_000


def _dumps(value: Any) -> bytes:
    """orjson bytes, copied to their exact size: orjson 3.13 leaves each result in a ~4 KiB
    allocation, which made 20,000 short items cost 80 MB instead of 2 MB."""
    return bytes(memoryview(orjson.dumps(value)))


def _fail(line: int, reason: str) -> InputError:
    return InputError(line, reason)


def _depth(value: Any) -> int:
    """Nesting depth of a JSON value: a scalar is 0, `[]` and `{}` are 1. Walked with a stack, not
    by recursion: a line may nest as deep as the JSON parser allows (1,024 levels), deeper than
    Python's recursion limit."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        v, d = pop()
        if isinstance(v, dict):
            v = v.values()
        elif not isinstance(v, list):
            continue
        d += 1
        if d > deepest:
            deepest = d
        for child in v:
            if isinstance(child, dict | list):
                push((child, d))
    return deepest


def _brackets(raw: bytes | str) -> int:
    """How many arrays and objects a line opens: only a line with more than `MAX_DEPTH` of them can
    nest that deep, so the walk of `_depth` is skipped for nearly every line (a count runs in C)."""
    if isinstance(raw, str):
        return raw.count("[") + raw.count("{")
    return raw.count(b"[") + raw.count(b"{")


_Fields = tuple[str, int, bytes, "int | None", "bytes | None"]


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
        and (raw.count(b"[") + raw.count(b"{") if type(raw) is bytes else _brackets(raw)) > MAX_DEPTH
        and _depth(obj) > MAX_DEPTH
    ):
        raise _fail(line, f"item {item_id!r}: nested more than {MAX_DEPTH} levels deep")
    prompt = obj.get("prompt")
    messages = obj.get("messages")
    if (prompt is None) == (messages is None):
        raise _fail(line, f"item {item_id!r}: give exactly one of 'prompt' or 'messages'")
    if prompt is not None:
        if type(prompt) is not str or not prompt:
            raise _fail(line, f"item {item_id!r}: 'prompt' must be a non-empty string")
        messages_json = _PROMPT_HEAD + orjson.dumps(prompt) + _PROMPT_TAIL
    else:
        _check_messages(line, item_id, messages)
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
    `_check_messages`).
    """
    fields = _parse_fields(line, raw)
    return None if fields is None else Item(*fields)


def _check_messages(line: int, item_id: str, messages: Any) -> None:
    """Roles `user`/`assistant`; content a non-empty string or a non-empty list of blocks, each an
    object with a string `type` (a `text` block with a string `text`; block types the API may add
    later pass through untouched); no other key on a message."""
    if type(messages) is not list or not messages:
        raise _fail(line, f"item {item_id!r}: 'messages' must be a non-empty list")
    for n, msg in enumerate(messages):
        # the usual message, `{"role": ..., "content": "text"}`, in one test
        role = msg.get("role") if type(msg) is dict else None
        if type(role) is str and role in _ROLES and len(msg) == 2:
            content = msg.get("content")
            if type(content) is str and content:
                continue
        if type(msg) is not dict:
            raise _bad_message(line, item_id, n, " must be an object")
        if not msg.keys() <= _MESSAGE_KEYS:
            extra = ", ".join(sorted(set(msg) - _MESSAGE_KEYS))
            raise _bad_message(
                line, item_id, n, f" has unknown key(s) {extra}; a message has only 'role' and 'content'"
            )
        if type(role) is not str or role not in _ROLES:
            raise _bad_message(line, item_id, n, ".role must be 'user' or 'assistant'")
        content = msg.get("content")
        if type(content) is str and content:
            continue
        if type(content) is not list or not content:
            raise _bad_message(line, item_id, n, ".content must be a non-empty string or list of blocks")
        for k, block in enumerate(content):
            if type(block) is not dict or type(block.get("type")) is not str or not block["type"]:
                raise _bad_message(line, item_id, n, f".content[{k}] must be an object with a string 'type'")
            if block["type"] == "text" and type(block.get("text")) is not str:
                raise _bad_message(line, item_id, n, f".content[{k}] is a text block without a string 'text'")


def _bad_message(line: int, item_id: str, n: int, what: str) -> InputError:
    return _fail(line, f"item {item_id!r}: messages[{n}]{what}")


def parse_items(
    lines: Iterable[bytes | str], *, hold_messages: bool = True, digests: bool = True, job: str | None = None
) -> Items:
    """Parse a whole JSONL file (an iterable of its lines); blank lines skipped, first error raised.

    Each line is parsed once, straight into the columns of an `Items`, and each custom_id derived once
    for the whole file at a time (see `judgecore.ids`). Duplicate ids (and custom_id collisions) are
    reported with both line numbers.

    `hold_messages=False` keeps each item's messages' size and digest, not the messages (most of a
    job's bytes): their column is None, and whoever needs them reads them again
    (`iter_line_messages`), checked against the digests. With `digests=False` too, only the sizes are
    kept (a plan needs no more). `job` is the job key the custom_ids are derived with
    (`judgecore.ids.job_key`; None: the `v1` ids of a state dir bound before job keys).
    """
    ids: list[str] = []
    line_nos = array("q")
    messages: list[bytes] = []
    sizes = array("q")
    digest_bytes = bytearray()
    sizes_only = not hold_messages and not digests
    head_tail = len(_PROMPT_HEAD) + len(_PROMPT_TAIL)
    max_tokens: list[int | None] = []
    metadata: list[bytes | None] = []
    add_id, add_line, add_messages = ids.append, line_nos.append, messages.append
    add_max, add_meta = max_tokens.append, metadata.append
    add_size = sizes.append
    loads, dumps, decode_error = orjson.loads, orjson.dumps, orjson.JSONDecodeError
    head, tail = _PROMPT_HEAD, _PROMPT_TAIL
    for n, raw in enumerate(lines, start=1):
        if len(raw) > MAX_LINE_BYTES:
            raise _too_long(n, raw)
        try:
            obj = loads(raw)
        except decode_error as exc:
            if not raw.strip():
                continue
            raise _fail(n, f"not valid JSON ({exc})") from None
        # the usual line, `{"id": "...", "prompt": "..."}`, in one test; every other goes the long way
        if type(obj) is dict and len(obj) == 2:
            item_id, prompt = obj.get("id"), obj.get("prompt")
            if type(item_id) is str and item_id and type(prompt) is str and prompt:
                add_id(item_id)
                add_line(n)
                add_max(None)
                add_meta(None)
                if sizes_only:
                    add_size(len(dumps(prompt)) + head_tail)
                    continue
                mj = head + dumps(prompt) + tail
                add_size(len(mj))
                if hold_messages:
                    add_messages(mj)
                else:
                    digest_bytes += raw_digest(mj, None)
                continue
        f = _fields_of(n, raw, obj, hold=hold_messages)
        add_id(f[0])
        add_line(n)
        add_size(len(f[2]))
        add_max(f[3])
        add_meta(f[4])
        if hold_messages:
            add_messages(f[2])
        elif not sizes_only:
            digest_bytes += raw_digest(f[2], f[3])
    cids = custom_ids_for(ids, job=job)
    check_unique(ids, cids, line_nos)
    return Items(
        tuple(ids),
        line_nos,
        tuple(messages) if hold_messages else None,
        tuple(max_tokens),
        tuple(metadata),
        cids,
        message_sizes=sizes,
        digests=None if hold_messages or sizes_only else bytes(digest_bytes),
        job=job,
    )


def iter_line_messages(lines: Iterable[bytes | str]) -> Iterator[tuple[int, str, bytes, int | None]]:
    """`(line, id, messages_json, max_tokens)` of each item of a JSONL file, in order, validated as
    `parse_items` does: the messages of items parsed with `hold_messages=False`, read again."""
    for n, raw in enumerate(lines, start=1):
        f = _parse_fields(n, raw)
        if f is not None:
            yield n, f[0], f[2], f[3]
