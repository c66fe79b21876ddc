"""Items and requests: what the user asked to judge, and the exact bytes that go on the wire for it.

An `Item` is one parsed input line. A `Request` is an item made ready to send: its custom_id, the
serialized messages, and `size`, the exact byte length of its `{"custom_id", "params"}` object as it
will be sent in a batch create body. The shared part of every request (model, rubric system block) is
serialized once in a `RequestTemplate`; `Request.body(template)` joins the pieces, byte for byte what
`orjson.dumps({"custom_id": ..., "params": {...}})` would give, without re-serializing the rubric
100,000 times.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, overload

import attrs
import orjson

from judgecore.errors import InputError
from judgecore.ids import check_unique, custom_id_for, custom_ids_for

RoutePath = Literal["sync", "batch"]
#: The old name of `RoutePath` (a route is not a filesystem path); kept so older imports still work.
Path = RoutePath

_ITEM_KEYS = frozenset({"id", "prompt", "messages", "max_tokens", "metadata"})
_MESSAGE_KEYS = frozenset({"role", "content"})
_ROLES = frozenset({"user", "assistant"})

#: The deepest nesting an input line may have (the line's object is level 1). orjson refuses to
#: serialize past 254 levels, and the output line and the request body each add a level or two: a
#: limit checked at parse time means whatever is accepted can be sent and written out after paying.
MAX_DEPTH = 64
#: The largest input line: the Messages API takes at most 32 MB per request.
MAX_LINE_BYTES = 32_000_000


@attrs.frozen
class Item:
    """One input line: an id, the conversation to judge, an optional max_tokens and opaque metadata.

    `messages_json` is the conversation serialized once with orjson (a plain `prompt` becomes one user
    turn); `metadata_json` is the metadata's bytes, carried to the output untouched (None when absent).
    `custom_id` is derived from the id once, when the item is parsed (`judgecore.ids`: the `v1` id; a
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
    h = hashlib.sha256(messages_json)
    h.update(b"\x00" + str(max_tokens).encode())
    return h.digest()[:DIGEST_BYTES]


DIGEST_BYTES = 16


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
    job's bytes): their column is `Unheld`, and whoever needs them reads them again
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
    column: Sequence[bytes] = tuple(messages) if hold_messages else Unheld(len(ids))
    return Items(
        tuple(ids),
        line_nos,
        column,
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


class MessagesNotHeldError(LookupError):
    """A job's messages were read from a column that does not hold them."""


class Unheld(Sequence[bytes]):
    """The messages column of items parsed without their messages: its length, and an error on a
    read (`MessagesNotHeldError`)."""

    __slots__ = ("_n",)

    def __init__(self, n: int) -> None:
        self._n = n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, k: int) -> bytes: ...
    @overload
    def __getitem__(self, k: slice) -> Sequence[bytes]: ...
    def __getitem__(self, k: int | slice) -> bytes | Sequence[bytes]:
        if isinstance(k, slice):
            return Unheld(len(range(self._n)[k]))
        raise MessagesNotHeldError("the items were parsed without their messages (hold_messages=False)")


def _column_eq(a: Sequence[Any], b: object) -> bool:
    """A column-backed sequence equals any sequence (tuple, list, another view) of equal elements."""
    if isinstance(b, (str, bytes)) or not isinstance(b, Sequence):
        return NotImplemented  # type: ignore[return-value]
    return len(a) == len(b) and all(x == y for x, y in zip(a, b, strict=True))


@attrs.frozen(eq=False, repr=False)
class Items(Sequence[Item]):
    """A job's items as columns, in input order: one tuple per field instead of one object per item.

    It is a `Sequence[Item]` (an `Item` is built when one is read); the columns serve the bulk work
    (requests, sizes, output) without an object per item, which keeps a big job's memory to its bytes.
    It equals any sequence of the same items, a tuple of `Item`s included.
    """

    ids: tuple[str, ...]
    lines: Sequence[int]
    messages_json: Sequence[bytes]
    max_tokens: tuple[int | None, ...]
    metadata_json: tuple[bytes | None, ...]
    custom_ids: tuple[str, ...]
    #: the byte length of each item's serialized messages
    message_sizes: Sequence[int] = attrs.field(
        default=attrs.Factory(lambda self: array("q", map(len, self.messages_json)), takes_self=True),
        kw_only=True,
    )
    #: each item's `raw_digest`, `DIGEST_BYTES` apiece, when its messages are not held (None: from them)
    digests: bytes | None = attrs.field(default=None, kw_only=True)
    #: the job key the custom_ids were derived with (`judgecore.ids.job_key`; None: `v1` ids)
    job: str | None = attrs.field(default=None, kw_only=True)
    #: each request's model, for a panel (`judgecore.designs`); None: every request asks the job's model
    models: tuple[str | None, ...] | None = attrs.field(default=None, kw_only=True)

    @classmethod
    def of(cls, items: Iterable[Item]) -> Items:
        """The columns of `items` (already `Items`: itself)."""
        if isinstance(items, Items):
            return items
        its = tuple(items)
        return cls(
            tuple(i.id for i in its),
            array("q", [i.line for i in its]),
            tuple(i.messages_json for i in its),
            tuple(i.max_tokens for i in its),
            tuple(i.metadata_json for i in its),
            tuple(i.custom_id for i in its),
        )

    def __len__(self) -> int:
        return len(self.ids)

    def for_job(self, job: str | None) -> Items:
        """The same items with the custom_ids of job `job` (itself when they are already)."""
        if job == self.job:
            return self
        cids = custom_ids_for(self.ids, job=job)
        check_unique(self.ids, cids, self.lines)
        return attrs.evolve(self, custom_ids=cids, job=job)

    def bindings(self) -> Iterator[tuple[str, str, str]]:
        """`(custom_id, id, digest)` of each item, in order: what the checkpoint binds and checks."""
        if self.digests is not None:
            d, w = self.digests, DIGEST_BYTES
            hexes: Iterable[str] = (d[k : k + w].hex() for k in range(0, len(d), w))
        else:
            hexes = map(_digest, self.messages_json, self.max_tokens)
        return zip(self.custom_ids, self.ids, hexes, strict=True)

    def digest_at(self, k: int) -> bytes:
        """The `raw_digest` of item `k`."""
        if self.digests is not None:
            return self.digests[k * DIGEST_BYTES : (k + 1) * DIGEST_BYTES]
        return raw_digest(self.messages_json[k], self.max_tokens[k])

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
                self.messages_json[k],
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
            self.messages_json[k],
            self.max_tokens[k],
            self.metadata_json[k],
            self.custom_ids[k],
        )

    def __iter__(self) -> Iterator[Item]:
        return map(
            Item,
            self.ids,
            self.lines,
            self.messages_json,
            self.max_tokens,
            self.metadata_json,
            self.custom_ids,
        )

    def __eq__(self, other: object) -> bool:
        return _column_eq(self, other)

    def __hash__(self) -> int:
        return hash((self.custom_ids, self.max_tokens))

    def with_message_column(self, column: Sequence[bytes]) -> Items:
        """The same items reading their messages from `column` (the same values, kept elsewhere)."""
        return attrs.evolve(self, messages_json=column)

    def __repr__(self) -> str:  # the ids only: the messages may not be held (`Unheld`)
        return f"Items({len(self)} items: {list(self.ids[:5])!r}{' ...' if len(self) > 5 else ''})"


def cache_control_for(path: RoutePath) -> dict[str, str]:
    """The rubric's cache marker: 5-minute on the sync path, 1 hour in batches (they outlive 5 minutes)."""
    return {"type": "ephemeral"} if path == "sync" else {"type": "ephemeral", "ttl": "1h"}


@attrs.frozen
class RequestTemplate:
    """What every request of a job shares, serialized once: model, default max_tokens, rubric block,
    and the optional `output_config` and `thinking` parameters."""

    model: str
    max_tokens: int
    path: RoutePath
    system_json: bytes | None
    output_config_json: bytes | None = None  # a verdict schema's `output_config`, serialized once
    thinking_json: bytes | None = None  # the SDK's `thinking` parameter (`--thinking`), serialized once
    _head: bytes = attrs.field(init=False, repr=False, eq=False)
    _tail_prefix: bytes = attrs.field(init=False, repr=False, eq=False)
    _other_models: dict[str, RequestTemplate] = attrs.field(init=False, repr=False, eq=False, factory=dict)

    def with_model(self, model: str) -> RequestTemplate:
        """The same template asking `model` (a panel's judge); itself for its own model. Built once
        per model and kept (a cache: the value does not change)."""
        if model == self.model:
            return self
        other = self._other_models.get(model)
        if other is None:
            other = attrs.evolve(self, model=model)
            self._other_models[model] = other
        return other

    def __attrs_post_init__(self) -> None:
        object.__setattr__(
            self, "_head", b'","params":{"model":' + orjson.dumps(self.model) + b',"max_tokens":'
        )
        system = b',"system":' + self.system_json if self.system_json is not None else b""
        if self.output_config_json is not None:
            system += b',"output_config":' + self.output_config_json
        if self.thinking_json is not None:
            system += b',"thinking":' + self.thinking_json
        object.__setattr__(self, "_tail_prefix", system + b',"messages":')

    @classmethod
    def build(
        cls,
        *,
        model: str,
        max_tokens: int,
        rubric: str | None,
        path: RoutePath,
        output_config: Mapping[str, Any] | None = None,
        thinking: Mapping[str, Any] | None = None,
    ) -> RequestTemplate:
        """The template for one route; the rubric becomes a system block list with its cache marker;
        `output_config` (a verdict schema's structured-output format) and `thinking` (the SDK's
        `thinking` parameter, e.g. `{"type": "adaptive"}`) go on every request."""
        system = None
        if rubric:
            block = {"type": "text", "text": rubric, "cache_control": cache_control_for(path)}
            system = orjson.dumps([block])
        oc = orjson.dumps(dict(output_config)) if output_config is not None else None
        th = orjson.dumps(dict(thinking)) if thinking is not None else None
        return cls(
            model=model,
            max_tokens=max_tokens,
            path=path,
            system_json=system,
            output_config_json=oc,
            thinking_json=th,
        )

    @property
    def fixed_size(self) -> int:
        """Bytes every request body carries besides its custom_id, max_tokens digits and messages."""
        return len(b'{"custom_id":"') + len(self._head) + len(self._tail_prefix) + len(b"}}")

    def params(self, item_max_tokens: int | None, messages_json: bytes) -> dict[str, Any]:
        """The Messages API params of one request, as a dict (the sync path hands it to the SDK)."""
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": item_max_tokens or self.max_tokens,
        }
        if self.system_json is not None:
            params["system"] = orjson.loads(self.system_json)
        if self.output_config_json is not None:
            params["output_config"] = orjson.loads(self.output_config_json)
        if self.thinking_json is not None:
            params["thinking"] = orjson.loads(self.thinking_json)
        params["messages"] = orjson.loads(messages_json)
        return params


@attrs.frozen
class Request:
    """One item ready to send: custom_id, its serialized messages, and its exact size on the wire."""

    custom_id: str
    item_id: str
    max_tokens: int
    messages_json: bytes
    size: int
    #: a panel's judge (`judgecore.designs`); None: the template's model
    model: str | None = None

    def pieces(self, template: RequestTemplate) -> tuple[bytes, ...]:
        """The pieces whose concatenation is `body(template)` (most are shared with every request)."""
        if self.model is not None:
            template = template.with_model(self.model)
        return (
            b'{"custom_id":"',
            self.custom_id.encode("ascii"),
            template._head,
            str(self.max_tokens).encode("ascii"),
            template._tail_prefix,
            self.messages_json,
            b"}}",
        )

    def body(self, template: RequestTemplate) -> bytes:
        """The exact `{"custom_id":...,"params":{...}}` bytes of this request in a batch create body."""
        return b"".join(self.pieces(template))

    def params(self, template: RequestTemplate) -> dict[str, Any]:
        """The Messages API params of this request (for the sync path)."""
        if self.model is not None:
            template = template.with_model(self.model)
        return template.params(self.max_tokens, self.messages_json)


@attrs.frozen(eq=False, repr=False)
class Requests(Sequence[Request]):
    """Requests as columns: a `Sequence[Request]` over the columns of a job's `Items` (shared, not
    copied) and their sizes, in the order of `positions` (a `Request` is built when one is read).

    A slice or a `select` is another view of the same columns, so a job's sub-batches, rounds and
    queues cost a position per request, never an object. It equals any sequence of equal requests.

    Everything but the messages is read from the columns (`custom_ids`, `item_ids`, `sizes`,
    `max_tokens`, `message_sizes`): the messages column may be one the shell fills only for the
    requests it sends (`hydrated`), and building a `Request` is the one read of it.
    """

    _cids: Sequence[str]
    _ids: Sequence[str]
    _max_tokens: Sequence[int]
    _messages: Sequence[bytes]
    _sizes: Sequence[int]
    positions: Sequence[int] = attrs.field(
        default=attrs.Factory(lambda self: range(len(self._cids)), takes_self=True)
    )
    _msg_sizes: Sequence[int] = attrs.field(
        default=attrs.Factory(lambda self: array("q", map(len, self._messages)), takes_self=True),
        kw_only=True,
    )
    #: each request's model, for a panel; None: every request asks the template's model
    _models: Sequence[str | None] | None = attrs.field(default=None, kw_only=True)

    @classmethod
    def of(cls, requests: Iterable[Request]) -> Requests:
        """The columns of `requests` (already `Requests`: itself)."""
        if isinstance(requests, Requests):
            return requests
        rs = tuple(requests)
        models = tuple(r.model for r in rs)
        return cls(
            tuple(r.custom_id for r in rs),
            tuple(r.item_id for r in rs),
            array("q", [r.max_tokens for r in rs]),
            tuple(r.messages_json for r in rs),
            array("q", [r.size for r in rs]),
            models=models if any(m is not None for m in models) else None,
        )

    def _view(self, positions: Sequence[int]) -> Requests:
        return attrs.evolve(self, positions=positions)

    def _whole(self) -> bool:
        p = self.positions
        return isinstance(p, range) and p.start == 0 and p.step == 1 and p.stop == len(self._cids)

    def _column(self, column: Sequence[Any]) -> Sequence[Any]:
        return column if self._whole() else [column[p] for p in self.positions]

    @property
    def custom_ids(self) -> Sequence[str]:
        return self._column(self._cids)

    @property
    def sizes(self) -> Sequence[int]:
        return self._column(self._sizes)

    @property
    def max_tokens(self) -> Sequence[int]:
        return self._column(self._max_tokens)

    @property
    def item_ids(self) -> Sequence[str]:
        return self._column(self._ids)

    @property
    def models(self) -> Sequence[str | None]:
        """Each request's model (a panel's judge; None: the template's), from the column."""
        if self._models is None:
            return [None] * len(self)
        return self._column(self._models)

    @property
    def message_sizes(self) -> Sequence[int]:
        """The byte length of each request's serialized messages."""
        return self._column(self._msg_sizes)

    @property
    def messages_json(self) -> Sequence[bytes]:
        return self._column(self._messages)

    @property
    def message_column(self) -> Sequence[bytes]:
        """The whole messages column this view reads (all of the job's, not only the view's)."""
        return self._messages

    def hydrated(self, messages: Sequence[bytes]) -> Requests:
        """These requests, in this order, with `messages` (one per request) as their messages: a
        compact copy of the view, for the shell that reads messages back for the requests it sends."""
        if len(messages) != len(self):
            raise ValueError(f"{len(messages)} messages for {len(self)} requests")
        return Requests(
            tuple(self.custom_ids),
            tuple(self.item_ids),
            array("q", self.max_tokens),
            tuple(messages),
            array("q", self.sizes),
            msg_sizes=array("q", self.message_sizes),
            models=None if self._models is None else tuple(self._column(self._models)),
        )

    def with_message_column(self, column: Sequence[bytes]) -> Requests:
        """The same view reading its messages from `column` (the same values, kept elsewhere)."""
        return attrs.evolve(self, messages=column)

    def bound_inputs(self, position: int) -> tuple[int, int]:
        """`(size, max_tokens)` of the request at `position` of the columns: what bounds its cost."""
        return self._sizes[position], self._max_tokens[position]

    def select(self, custom_ids: Iterable[str], index: Mapping[str, int] | None = None) -> Requests:
        """The view of these requests, in the order given (`index`: `position_index()`, when kept)."""
        at = self.position_index() if index is None else index
        return self._view(array("q", [at[c] for c in custom_ids]))

    def only(self, keep: Iterable[str] | frozenset[str]) -> Requests:
        """The view of the requests whose custom_id is in `keep`, in this order."""
        keep = keep if isinstance(keep, (set, frozenset)) else frozenset(keep)
        cids = self._cids
        return self._view(array("q", [p for p in self.positions if cids[p] in keep]))

    def position_index(self) -> dict[str, int]:
        """custom_id -> its position in the columns, for the requests of this view."""
        cids = self._cids
        return {cids[p]: p for p in self.positions}

    def __len__(self) -> int:
        return len(self.positions)

    @overload
    def __getitem__(self, k: int) -> Request: ...
    @overload
    def __getitem__(self, k: slice) -> Requests: ...
    def __getitem__(self, k: int | slice) -> Request | Requests:
        if isinstance(k, slice):
            return self._view(self.positions[k])
        return self.at(self.positions[k])

    def at(self, position: int) -> Request:
        """The request at `position` of the columns (see `position_index`)."""
        p = position
        model = None if self._models is None else self._models[p]
        return Request(
            self._cids[p], self._ids[p], self._max_tokens[p], self._messages[p], self._sizes[p], model
        )

    def __iter__(self) -> Iterator[Request]:
        if self._whole():
            if self._models is not None:
                cols = (self._cids, self._ids, self._max_tokens, self._messages, self._sizes, self._models)
                return map(Request, *cols)
            return map(Request, self._cids, self._ids, self._max_tokens, self._messages, self._sizes)
        return map(self.at, self.positions)

    def __eq__(self, other: object) -> bool:
        return _column_eq(self, other)

    def __hash__(self) -> int:
        return hash(tuple(self.custom_ids))

    def __repr__(self) -> str:  # the custom_ids only: the messages may not be held
        cids = list(self.custom_ids[:5])
        return f"Requests({len(self)} requests: {cids!r}{' ...' if len(self) > 5 else ''})"


def build_requests(items: Sequence[Item], template: RequestTemplate) -> Requests:
    """Requests for `items`, in order, each with its exact serialized size (see `Request.body`).

    The size is the request's bytes in a batch create body of `template`'s model and rubric; the
    sync path sends the same request with `params(sync_template)` and never reads the size. The
    requests share the items' columns (see `Requests`)."""
    cols = Items.of(items)
    fixed = template.fixed_size
    default_mt = template.max_tokens
    dd = len(str(default_mt))
    mts = array("q", [m or default_mt for m in cols.max_tokens])
    msg_sizes = cols.message_sizes
    sizes = array(
        "q",
        [
            fixed + len(c) + (len(str(m)) if m else dd) + j
            for c, m, j in zip(cols.custom_ids, cols.max_tokens, msg_sizes, strict=True)
        ],
    )
    models = cols.models
    if models is not None:  # a panel: each request's body names its own model
        own = len(orjson.dumps(template.model))
        extra = {m: len(orjson.dumps(m)) - own for m in set(models) if m is not None}
        sizes = array("q", [s + extra[m] if m is not None else s for s, m in zip(sizes, models, strict=True)])
    return Requests(
        cols.custom_ids, cols.ids, mts, cols.messages_json, sizes, msg_sizes=msg_sizes, models=models
    )


@attrs.frozen(eq=False, repr=False)
class RequestIndex(Mapping[str, Request]):
    """The requests of a run by custom_id, over the columns of a `Requests` with no object per request
    (one is built when read). `select` of ids in column order (a round's, always) walks the columns;
    the position of each id is kept only once one is looked up by id (a budget's bounds)."""

    requests: Requests
    _at: dict[str, int] = attrs.field(init=False, factory=dict)

    @classmethod
    def of(cls, requests: Iterable[Request] | Mapping[str, Request]) -> RequestIndex:
        """The index of `requests` (a `Requests`, any iterable of `Request`, or a mapping of them)."""
        if isinstance(requests, RequestIndex):
            return requests
        if isinstance(requests, Mapping):
            requests = requests.values()
        return cls(Requests.of(requests))

    def _positions(self) -> dict[str, int]:
        if not self._at and self.requests:
            self._at.update(self.requests.position_index())  # a cache: the value does not change
        return self._at

    def __getitem__(self, custom_id: str) -> Request:
        return self.requests.at(self._positions()[custom_id])

    def bound_inputs(self, custom_id: str) -> tuple[int, int]:
        """`(size, max_tokens)` of one request, read from the columns (not its messages)."""
        return self.requests.bound_inputs(self._positions()[custom_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self.requests.custom_ids)

    def __len__(self) -> int:
        return len(self.requests)

    def __contains__(self, custom_id: object) -> bool:
        return custom_id in self._positions()

    def select(self, custom_ids: Sequence[str]) -> Requests:
        """The requests of these custom_ids, in the order given, as a view."""
        view = self.requests.only(frozenset(custom_ids))
        if len(view) == len(custom_ids) and all(map(str.__eq__, view.custom_ids, custom_ids)):
            return view
        return self.requests.select(custom_ids, self._positions())

    def __repr__(self) -> str:
        return f"RequestIndex({len(self)} requests)"


def custom_ids_of(requests: Iterable[Request]) -> tuple[str, ...]:
    """The custom_ids of `requests`, in order (from the column of a `Requests` view, no objects)."""
    if isinstance(requests, Requests):
        return tuple(requests.custom_ids)
    return tuple(r.custom_id for r in requests)


def item_ids_of(requests: Iterable[Request]) -> tuple[str, ...]:
    """The item ids of `requests`, in order (from the column of a `Requests` view, no objects)."""
    if isinstance(requests, Requests):
        return tuple(requests.item_ids)
    return tuple(r.item_id for r in requests)


def sizes_of(requests: Iterable[Request]) -> Sequence[int]:
    """The sizes of `requests`, in order (from the column of a `Requests` view, no objects)."""
    if isinstance(requests, Requests):
        return requests.sizes
    return [r.size for r in requests]
