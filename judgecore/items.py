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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs
import orjson

from judgecore.errors import InputError
from judgecore.ids import assign_custom_ids

Path = Literal["sync", "batch"]

_ITEM_KEYS = frozenset({"id", "prompt", "messages", "max_tokens", "metadata"})
_ROLES = frozenset({"user", "assistant"})


@attrs.frozen
class Item:
    """One input line: an id, the conversation to judge, an optional max_tokens and opaque metadata.

    `messages_json` is the conversation serialized once with orjson (a plain `prompt` becomes one user
    turn); `metadata_json` is the metadata's bytes, carried to the output untouched (None when absent).
    """

    id: str
    line: int
    messages_json: bytes
    max_tokens: int | None = None
    metadata_json: bytes | None = None

    @property
    def digest(self) -> str:
        """A digest of what is sent for this item; a change under the same id is a resume conflict."""
        h = hashlib.sha256(self.messages_json)
        h.update(b"\x00" + str(self.max_tokens).encode())
        return h.hexdigest()[:32]


def _dumps(value: Any) -> bytes:
    """orjson bytes, copied to their exact size: orjson 3.13 leaves each result in a ~4 KiB
    allocation, which made 20,000 short items cost 80 MB instead of 2 MB."""
    return bytes(memoryview(orjson.dumps(value)))


def _fail(line: int, reason: str) -> InputError:
    return InputError(line, reason)


def parse_item(line: int, raw: bytes | str) -> Item | None:
    """Parse one input line into an `Item`; None for a blank line; `InputError` naming the line otherwise."""
    if not raw.strip():
        return None
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _fail(line, f"not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise _fail(line, f"expected a JSON object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - _ITEM_KEYS)
    if unknown:
        raise _fail(line, f"unknown field(s) {', '.join(unknown)}; extra data belongs under 'metadata'")
    item_id = obj.get("id")
    if not isinstance(item_id, str) or not item_id:
        raise _fail(line, "'id' must be a non-empty string")
    has_prompt, has_messages = "prompt" in obj, "messages" in obj
    if has_prompt == has_messages:
        raise _fail(line, f"item {item_id!r}: give exactly one of 'prompt' or 'messages'")
    if has_prompt:
        prompt = obj["prompt"]
        if not isinstance(prompt, str) or not prompt:
            raise _fail(line, f"item {item_id!r}: 'prompt' must be a non-empty string")
        messages: Any = [{"role": "user", "content": prompt}]
    else:
        messages = obj["messages"]
        _check_messages(line, item_id, messages)
    max_tokens = obj.get("max_tokens")
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
    ):
        raise _fail(line, f"item {item_id!r}: 'max_tokens' must be a positive integer")
    metadata_json = _dumps(obj["metadata"]) if "metadata" in obj else None
    return Item(
        id=item_id,
        line=line,
        messages_json=_dumps(messages),
        max_tokens=max_tokens,
        metadata_json=metadata_json,
    )


def _check_messages(line: int, item_id: str, messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise _fail(line, f"item {item_id!r}: 'messages' must be a non-empty list")
    for n, msg in enumerate(messages):
        where = f"item {item_id!r}: messages[{n}]"
        if not isinstance(msg, dict):
            raise _fail(line, f"{where} must be an object")
        if msg.get("role") not in _ROLES:
            raise _fail(line, f"{where}.role must be 'user' or 'assistant'")
        content = msg.get("content")
        if not (isinstance(content, str) and content) and not (isinstance(content, list) and content):
            raise _fail(line, f"{where}.content must be a non-empty string or list of blocks")


def parse_items(lines: Iterable[bytes | str]) -> tuple[Item, ...]:
    """Parse a whole JSONL file (an iterable of its lines); blank lines skipped, first error raised.

    Duplicate ids (and custom_id collisions) are reported with both line numbers.
    """
    items = tuple(item for n, raw in enumerate(lines, start=1) if (item := parse_item(n, raw)) is not None)
    assign_custom_ids((i.id for i in items), (i.line for i in items))
    return items


def cache_control_for(path: Path) -> dict[str, str]:
    """The rubric's cache marker: 5-minute on the sync path, 1 hour in batches (they outlive 5 minutes)."""
    return {"type": "ephemeral"} if path == "sync" else {"type": "ephemeral", "ttl": "1h"}


@attrs.frozen
class RequestTemplate:
    """What every request of a job shares, serialized once: model, default max_tokens, rubric block."""

    model: str
    max_tokens: int
    path: Path
    system_json: bytes | None
    output_config_json: bytes | None = None  # a verdict schema's `output_config`, serialized once
    _head: bytes = attrs.field(init=False, repr=False, eq=False)
    _tail_prefix: bytes = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(
            self, "_head", b'","params":{"model":' + orjson.dumps(self.model) + b',"max_tokens":'
        )
        system = b',"system":' + self.system_json if self.system_json is not None else b""
        if self.output_config_json is not None:
            system += b',"output_config":' + self.output_config_json
        object.__setattr__(self, "_tail_prefix", system + b',"messages":')

    @classmethod
    def build(
        cls,
        *,
        model: str,
        max_tokens: int,
        rubric: str | None,
        path: Path,
        output_config: Mapping[str, Any] | None = None,
    ) -> RequestTemplate:
        """The template for one route; the rubric becomes a system block list with its cache marker;
        `output_config` (a verdict schema's structured-output format) goes on every request."""
        system = None
        if rubric:
            block = {"type": "text", "text": rubric, "cache_control": cache_control_for(path)}
            system = orjson.dumps([block])
        oc = orjson.dumps(dict(output_config)) if output_config is not None else None
        return cls(model=model, max_tokens=max_tokens, path=path, system_json=system, output_config_json=oc)

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

    def pieces(self, template: RequestTemplate) -> tuple[bytes, ...]:
        """The pieces whose concatenation is `body(template)` (most are shared with every request)."""
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
        return template.params(self.max_tokens, self.messages_json)


def build_requests(items: Sequence[Item], template: RequestTemplate) -> tuple[Request, ...]:
    """Requests for `items`, in order, each with its exact serialized size (see `Request.body`)."""
    cids = assign_custom_ids((i.id for i in items), (i.line for i in items))
    fixed = template.fixed_size
    default_mt = template.max_tokens
    out = []
    for item, cid in zip(items, cids, strict=True):
        mt = item.max_tokens or default_mt
        size = fixed + len(cid) + len(str(mt)) + len(item.messages_json)
        out.append(Request(cid, item.id, mt, item.messages_json, size))
    return tuple(out)
