"""What a request to OpenAI carries: the Chat Completions body and the Batch API's input line. Pure.

A body is `{"model", "max_completion_tokens", "response_format"?, "messages"}`, its messages the rubric
as the system message **first** (so OpenAI's automatic prompt cache, above 1,024 tokens, serves the same
prefix to every request of a job), then the item's own. `max_completion_tokens`, never `max_tokens` (which
gpt-5 and the o-series refuse), and no `temperature` (they take only the default): a body asks the same
of every model. A batch input line is `{"custom_id", "method": "POST", "url": "/v1/chat/completions",
"body"}` and a newline.

Like `judgecore.wire.requests`, the shared part (model, rubric, response format) is serialized once in an
`OpenAITemplate`; a line is joined from pieces, byte for byte what `orjson.dumps` gives, and its length
is known from the sizes alone (`line_size`), so sub-batches are cut (`sub_batches`: at most
`MAX_LINES` lines and `MAX_FILE_BYTES` bytes, judgecore's defaults under OpenAI's 50,000 and 200 MB)
without building them.

An item's messages are judgecore's (Anthropic's shape): a message whose content is a string is the same
on both wires and is sent as it is (the usual case: `chat_messages` returns the very bytes); content
blocks become Chat Completions content parts (text; an image as an `image_url`, base64 as a data URL);
any other block cannot be sent to OpenAI (`UnsendableMessageError`, naming the block's type).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

import attrs
import orjson

from adapters.providers.openai import MAX_FILE_BYTES, MAX_LINES
from adapters.providers.openai.schema import response_format
from judgecore.values import frozen

#: The endpoint of every line of a sub-batch (the batch's `endpoint`).
CHAT_COMPLETIONS: Final = "/v1/chat/completions"


class UnsendableMessageError(ValueError):
    """An item's message that the Chat Completions wire cannot carry (one line naming the block)."""


def _part(block: Any) -> dict[str, Any]:
    kind = block.get("type") if isinstance(block, Mapping) else None
    if kind == "text" and isinstance(block.get("text"), str):
        return {"type": "text", "text": block["text"]}
    if kind == "image" and isinstance(block.get("source"), Mapping):
        source = block["source"]
        if source.get("type") == "base64":
            url = f"data:{source.get('media_type')};base64,{source.get('data')}"
            return {"type": "image_url", "image_url": {"url": url}}
        if source.get("type") == "url" and isinstance(source.get("url"), str):
            return {"type": "image_url", "image_url": {"url": source["url"]}}
    raise UnsendableMessageError(
        f"a content block of type {kind!r} cannot be sent to an OpenAI-compatible model (text and images only)"
    )


def chat_messages(messages_json: bytes) -> bytes:
    """An item's serialized messages as Chat Completions takes them: the same bytes when every content
    is a string; else with each content block made a content part (see the module docstring)."""
    if b'"content":[' not in messages_json:  # no list of blocks (a JSON string cannot hold this unescaped)
        return messages_json
    messages = orjson.loads(messages_json)
    if all(isinstance(m.get("content"), str) for m in messages):
        return messages_json
    return orjson.dumps(
        [
            m
            if isinstance(m.get("content"), str)
            else {"role": m["role"], "content": [_part(b) for b in m["content"]]}
            for m in messages
        ]
    )


@frozen
class OpenAITemplate:
    """What every request of a job to one OpenAI (or served) model shares, serialized once."""

    model: str
    max_completion_tokens: int
    #: `{"role": "system", "content": rubric}` serialized, or None without a rubric
    system_json: bytes | None = None
    #: the `response_format` parameter serialized, or None without a verdict schema
    response_format_json: bytes | None = None
    _head: bytes = attrs.field(init=False, repr=False, eq=False)
    _middle: bytes = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        head = b'{"model":' + orjson.dumps(self.model) + b',"max_completion_tokens":'
        middle = b""
        if self.response_format_json is not None:
            middle += b',"response_format":' + self.response_format_json
        middle += b',"messages":['
        if self.system_json is not None:
            middle += self.system_json + b","
        object.__setattr__(self, "_head", head)
        object.__setattr__(self, "_middle", middle)

    @classmethod
    def build(
        cls,
        *,
        model: str,
        max_completion_tokens: int,
        rubric: str | None,
        schema: Mapping[str, Any] | None = None,
    ) -> OpenAITemplate:
        """The template of one judge: the rubric as the system message, a verdict schema (the user's,
        whole) as a strict `response_format`."""
        system = orjson.dumps({"role": "system", "content": rubric}) if rubric else None
        fmt = orjson.dumps(response_format(schema)) if schema is not None else None
        return cls(model, max_completion_tokens, system, fmt)

    def pieces(self, max_tokens: int | None, messages_json: bytes) -> tuple[bytes, ...]:
        """The pieces whose concatenation is the body; `messages_json` already `chat_messages`."""
        mt = max_tokens or self.max_completion_tokens
        return (self._head, str(mt).encode("ascii"), self._middle, messages_json[1:], b"}")

    def body(self, max_tokens: int | None, messages_json: bytes) -> bytes:
        """The exact bytes of one Chat Completions body."""
        return b"".join(self.pieces(max_tokens, messages_json))

    def params(self, max_tokens: int | None, messages_json: bytes) -> dict[str, Any]:
        """The body as the SDK's keyword arguments (`chat.completions.create(**params)`, the sync route)."""
        return orjson.loads(self.body(max_tokens, chat_messages(messages_json)))

    @property
    def fixed_size(self) -> int:
        """Bytes every line carries besides its custom_id, max_tokens digits and messages."""
        return (
            len(_LINE_HEAD)
            + len(_LINE_MIDDLE)
            + len(self._head)
            + len(self._middle)
            - 1
            + len(b"}")
            + len(b"}\n")
        )

    def line_pieces(self, custom_id: str, max_tokens: int | None, messages_json: bytes) -> Iterator[bytes]:
        """The pieces of one batch input line, its newline included."""
        yield _LINE_HEAD
        yield custom_id.encode("ascii")
        yield _LINE_MIDDLE
        yield from self.pieces(max_tokens, messages_json)
        yield b"}\n"

    def line(self, custom_id: str, max_tokens: int | None, messages_json: bytes) -> bytes:
        """One batch input line (`messages_json` already `chat_messages`), newline included."""
        return b"".join(self.line_pieces(custom_id, max_tokens, messages_json))

    def line_size(self, custom_id: str, max_tokens: int | None, messages_size: int) -> int:
        """The byte length of `line(...)`, from the sizes alone (`messages_size`: of the messages as sent)."""
        mt = max_tokens or self.max_completion_tokens
        return self.fixed_size + len(custom_id) + len(str(mt)) + messages_size

    def lines(self, requests: Iterable[tuple[str, int | None]], messages: Iterable[bytes]) -> Iterator[bytes]:
        """A sub-batch's input file in pieces, made as they are read (`requests`: `(custom_id,
        max_tokens)`; `messages`: each one's serialized messages, in order, read one at a time)."""
        for (custom_id, max_tokens), mj in zip(requests, messages, strict=True):
            yield from self.line_pieces(custom_id, max_tokens, chat_messages(mj))


_LINE_HEAD: Final = b'{"custom_id":"'
_LINE_MIDDLE: Final = b'","method":"POST","url":' + orjson.dumps(CHAT_COMPLETIONS) + b',"body":'


class LineTooLargeError(ValueError):
    """One request's line is over a sub-batch's byte cap on its own."""


def sub_batches(
    sizes: Sequence[int], *, max_lines: int = MAX_LINES, max_bytes: int = MAX_FILE_BYTES
) -> list[range]:
    """Consecutive ranges of the lines (by their byte `sizes`, in order), each at most `max_lines` lines
    and `max_bytes` bytes, each as full as those allow. `LineTooLargeError` for a line over `max_bytes`."""
    if max_lines < 1 or max_bytes < 1:
        raise ValueError(f"caps must be >= 1, got {max_lines} lines and {max_bytes} bytes")
    out: list[range] = []
    start, held = 0, 0
    for i, size in enumerate(sizes):
        if size > max_bytes:
            raise LineTooLargeError(f"request {i} is {size:,} bytes, over a sub-batch's {max_bytes:,}")
        if i > start and (i - start >= max_lines or held + size > max_bytes):
            out.append(range(start, i))
            start, held = i, 0
        held += size
    if start < len(sizes):
        out.append(range(start, len(sizes)))
    return out


__all__ = [
    "CHAT_COMPLETIONS",
    "MAX_FILE_BYTES",
    "MAX_LINES",
    "LineTooLargeError",
    "OpenAITemplate",
    "UnsendableMessageError",
    "chat_messages",
    "sub_batches",
]
