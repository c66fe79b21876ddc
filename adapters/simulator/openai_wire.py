"""OpenAI's wire formats as pure functions: error bodies (OpenAI's and vLLM's), duration strings,
multipart uploads, the Chat Completions request checks (as strict as OpenAI: reasoning models refuse
`max_tokens` and `temperature` other than 1; a strict `json_schema` must keep to OpenAI's subset), and
the translation of a chat request into the params the simulated judge (`answers`) reads."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs
import orjson

from .openai_scenario import is_reasoning_model

#: The body fields `chat.completions.create` takes (openai 3.60, `CompletionCreateParamsBase`, plus
#: `stream`); anything else is a 400 "Unrecognized request argument".
CHAT_PARAMS: Final = frozenset(
    {
        "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
        "max_completion_tokens", "max_tokens", "messages", "metadata", "modalities", "model", "moderation",
        "n", "parallel_tool_calls", "prediction", "presence_penalty", "prompt_cache_key",
        "prompt_cache_options", "prompt_cache_retention", "reasoning_effort", "response_format",
        "safety_identifier", "seed", "service_tier", "stop", "store", "stream", "stream_options",
        "temperature", "tool_choice", "tools", "top_logprobs", "top_p", "user", "verbosity",
        "web_search_options",
    }
)  # fmt: skip

#: The endpoints `batches.create` takes (openai 3.60 `BatchCreateParams`); the simulator runs the first.
BATCH_ENDPOINTS: Final = (
    "/v1/chat/completions",
    "/v1/responses",
    "/v1/embeddings",
    "/v1/completions",
    "/v1/moderations",
    "/v1/images/generations",
    "/v1/images/edits",
)

_ROLES: Final = ("system", "developer", "user", "assistant", "tool")
_SCHEMA_NAME: Final = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
#: Keywords outside OpenAI's strict subset (structured-outputs guide: composition other than anyOf,
#: conditionals and pattern-keyed properties are not supported).
_UNSUPPORTED: Final = ("allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas",
                       "patternProperties", "unevaluatedProperties")  # fmt: skip


@attrs.frozen
class Problem:
    """A 400 (or other status) the request earns: OpenAI's error object fields."""

    message: str
    code: str | None = None
    param: str | None = None
    status: int = 400
    type: str = "invalid_request_error"


def error_body(p: Problem) -> dict[str, object]:
    """OpenAI's envelope: `{"error": {"message", "type", "param", "code"}}` (code a string or null)."""
    return {"error": {"message": p.message, "type": p.type, "param": p.param, "code": p.code}}


#: vLLM's error type for each status (`vllm/entrypoints/openai/engine/protocol.py` names them after
#: the HTTP reason).
_VLLM_TYPES: Final = {400: "BadRequestError", 401: "Unauthorized", 404: "NotFoundError", 429: "TooManyRequests",
                      500: "InternalServerError", 503: "ServiceUnavailableError"}  # fmt: skip


def vllm_error_body(p: Problem) -> dict[str, object]:
    """vLLM's envelope: `{"error": {"message", "type", "param", "code": <int HTTP status>}}`."""
    return {"error": {"message": p.message, "type": _VLLM_TYPES.get(p.status, "BadRequestError"),
                      "param": p.param, "code": p.status}}  # fmt: skip


def go_duration(seconds: float) -> str:
    """A duration as OpenAI's `x-ratelimit-reset-*` headers write it (Go's style): `12ms`, `1s`,
    `1.5s`, `6m0s`, `1h2m3s`."""
    if seconds <= 0:
        return "0s"
    if seconds < 1:
        ms = round(seconds * 1000, 3)
        return f"{ms:g}ms" if ms >= 1 else "1ms"
    total = round(seconds, 3)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:.3f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{int(hours)}h{int(minutes)}m{text}"
    if minutes:
        return f"{int(minutes)}m{text}"
    return text


@attrs.frozen
class Part:
    name: str
    filename: str | None
    data: bytes


def multipart(content_type: str | None, body: bytes) -> tuple[Part, ...] | None:
    """The parts of a `multipart/form-data` body, or None when it is not one."""
    if not content_type or not content_type.lower().startswith("multipart/form-data"):
        return None
    m = re.search(r'boundary="?([^";]+)"?', content_type)
    if m is None:
        return None
    delimiter = b"--" + m.group(1).encode()
    parts: list[Part] = []
    pos = body.find(delimiter)
    while pos >= 0:
        start = pos + len(delimiter)
        if body[start : start + 2] == b"--":
            break
        start += 2  # CRLF
        end = body.find(b"\r\n" + delimiter, start)
        if end < 0:
            return None
        chunk = body[start:end]
        head, sep, data = chunk.partition(b"\r\n\r\n")
        if not sep:
            return None
        disposition = ""
        for line in head.decode("utf-8", "replace").split("\r\n"):
            if line.lower().startswith("content-disposition:"):
                disposition = line
        name = re.search(r'\bname="([^"]*)"', disposition)
        filename = re.search(r'\bfilename="([^"]*)"', disposition)
        parts.append(Part(name.group(1) if name else "", filename.group(1) if filename else None, data))
        pos = end + 2
    return tuple(parts)


def message_text(content: object) -> str:
    """The text of a chat message's content (a string, or a list of `{"type": "text"}` parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text"
        )
    return ""


def chat_problem(body: object, *, reasoning: bool | None = None) -> Problem | None:
    """Why `body` is not a Chat Completions request OpenAI would take, or None (the model's existence is
    checked apart). `reasoning` overrides the model's own kind (served models are never reasoning)."""
    if not isinstance(body, Mapping):
        return Problem("We could not parse the JSON body of your request.", "invalid_json")
    for key in body:
        if key not in CHAT_PARAMS:
            return Problem(f"Unrecognized request argument supplied: {key}", "unknown_parameter", key)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return Problem("Missing required parameter: 'model'.", "missing_required_parameter", "model")
    messages = body.get("messages")
    if messages is None:
        return Problem("Missing required parameter: 'messages'.", "missing_required_parameter", "messages")
    if not isinstance(messages, list) or not messages:
        return Problem(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty "
            "array instead.",
            "empty_array",
            "messages",
        )
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in _ROLES:
            return Problem(
                f"Invalid value: '{message.get('role') if isinstance(message, Mapping) else message}'. "
                "Supported values are: 'system', 'assistant', 'user', 'tool', 'function', and 'developer'.",
                "invalid_value",
                f"messages[{i}].role",
            )
        if not isinstance(message.get("content"), str | list) and message.get("role") != "assistant":
            return Problem(
                f"Missing required parameter: 'messages[{i}].content'.",
                "missing_required_parameter",
                f"messages[{i}].content",
            )
    if body.get("stream"):
        return Problem("The simulator does not stream chat completions.", "unsupported_value", "stream")
    if body.get("n", 1) != 1:
        return Problem("The simulator answers n=1 only.", "unsupported_value", "n")
    reasoning = is_reasoning_model(model) if reasoning is None else reasoning
    if reasoning and "max_tokens" in body:
        return Problem(
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
            "'max_completion_tokens' instead.",
            "unsupported_parameter",
            "max_tokens",
        )
    temperature = body.get("temperature")
    if reasoning and temperature is not None and temperature != 1:
        return Problem(
            f"Unsupported value: 'temperature' does not support {temperature} with this model. Only the "
            "default (1) value is supported.",
            "unsupported_value",
            "temperature",
        )
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            return Problem(
                f"Invalid '{key}': integer below minimum value. Expected a value >= 1, but got {value} "
                "instead.",
                "integer_below_min_value",
                key,
            )
    return response_format_problem(body.get("response_format"))


def response_format_problem(fmt: object) -> Problem | None:
    """Why a `response_format` is refused, or None: a `json_schema` needs a name and a schema, and a
    strict one must keep to OpenAI's subset."""
    if fmt is None:
        return None
    if not isinstance(fmt, Mapping) or fmt.get("type") not in ("text", "json_object", "json_schema"):
        return Problem(
            "Invalid value for 'response_format.type': expected one of 'text', 'json_object' or 'json_schema'.",
            "invalid_value",
            "response_format.type",
        )
    if fmt["type"] != "json_schema":
        return None
    spec = fmt.get("json_schema")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
        return Problem(
            "Missing required parameter: 'response_format.json_schema.name'.",
            "missing_required_parameter",
            "response_format.json_schema.name",
        )
    name = spec["name"]
    if not _SCHEMA_NAME.match(name):
        return Problem(
            "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string "
            "that matches the pattern '^[a-zA-Z0-9_-]+$'.",
            "invalid_value",
            "response_format.json_schema.name",
        )
    schema = spec.get("schema")
    if not isinstance(schema, Mapping):
        return Problem(f"Invalid schema for response_format '{name}': schema must be an object.",
                       "invalid_json_schema", "response_format")  # fmt: skip
    if spec.get("strict") is not True:
        return None
    why = strict_schema_problem(schema)
    if why is None:
        return None
    return Problem(
        f"Invalid schema for response_format '{name}': {why}", "invalid_json_schema", "response_format"
    )


def strict_schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why a schema is outside OpenAI's strict subset, worded as OpenAI words it, or None: the root is
    an object; every object has `additionalProperties: false` and lists all its properties in
    `required`; no `allOf`, `not`, conditionals or pattern-keyed properties."""
    if schema.get("type") != "object":
        return f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{schema.get('type')}\"'."
    return _strict(schema, ())


def _strict(node: object, where: tuple[str, ...]) -> str | None:
    if not isinstance(node, Mapping):
        return None
    context = f"In context={where!r}, " if where else "In context=(), "
    for key in _UNSUPPORTED:
        if key in node:
            return f"{context}'{key}' is not permitted."
    kinds = node.get("type")
    is_object = kinds == "object" or (isinstance(kinds, list) and "object" in kinds) or "properties" in node
    if is_object:
        if node.get("additionalProperties") is not False:
            return f"{context}'additionalProperties' is required to be supplied and to be false."
        props = node.get("properties") or {}
        required = node.get("required")
        missing = [k for k in props if not isinstance(required, list) or k not in required]
        if missing:
            return (
                f"{context}'required' is required to be supplied and to be an array including every key "
                f"in properties. Missing '{missing[0]}'."
            )
        for key, sub in props.items():
            if why := _strict(sub, (*where, "properties", key)):
                return why
    if (why := _strict(node.get("items"), (*where, "items"))) is not None:
        return why
    for i, sub in enumerate(node.get("anyOf") or ()):
        if why := _strict(sub, (*where, "anyOf", str(i))):
            return why
    for defs in ("$defs", "definitions"):
        for key, sub in (node.get(defs) or {}).items():
            if why := _strict(sub, (*where, defs, key)):
                return why
    return None


#: max_tokens the judge is given when a request names none (the answers are short anyway).
UNBOUNDED: Final = 100_000


def answer_params(body: Mapping[str, Any]) -> dict[str, Any]:
    """The chat request as the Messages-shaped params `answers` reads: system and developer messages
    as the system text, the rest as user/assistant turns, the token cap, a json_schema as the output
    format (so the same item gets the same kind of answer on either wire)."""
    system = [
        message_text(m.get("content")) for m in body["messages"] if m.get("role") in ("system", "developer")
    ]
    turns = [
        {
            "role": "assistant" if m.get("role") == "assistant" else "user",
            "content": message_text(m.get("content")),
        }
        for m in body["messages"]
        if m.get("role") not in ("system", "developer")
    ]
    cap = body.get("max_completion_tokens") or body.get("max_tokens") or UNBOUNDED
    params: dict[str, Any] = {"model": body["model"], "max_tokens": int(cap), "messages": turns}
    if system:
        params["system"] = "\n".join(system)
    fmt = body.get("response_format")
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        params["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    return params


def prompt_units(body: Mapping[str, Any]) -> list[tuple[bytes, int]]:
    """The prompt as (canonical bytes, tokens) per message, in order: each message's text at
    ceil(bytes / 4) tokens plus 3 of framing (as `answers` counts the Anthropic wire)."""

    out = []
    for m in body["messages"]:
        text = message_text(m.get("content"))
        key = orjson.dumps({"role": m.get("role"), "content": m.get("content")}, option=orjson.OPT_SORT_KEYS)
        out.append((key, math.ceil(len(text.encode()) / 4) + 3))
    return out
