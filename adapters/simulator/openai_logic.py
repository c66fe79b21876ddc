"""The OpenAI side of the simulator: Chat Completions, Files and Batches (and served, vLLM-like models),
as a deterministic state machine that `Simulator.handle` hands every `/v1/chat/completions`,
`/v1/files...` and `/v1/batches...` request to, under its lock and with its clock reading.

Theory of operation, as on the Anthropic side: nothing runs in the background; each call first advances
every batch whose next transition time has passed (computing its results as of that time), then routes.

Batch lifecycle (times from `created_at`): `validating` until `validating_seconds`, then `failed` (the
file breaks a rule: a line without `custom_id`, a duplicate `custom_id`, a body for another model than
the first line's, a url other than the batch's endpoint, over `max_file_lines` lines or
`max_file_bytes` bytes; or the model's enqueued prompt tokens would pass `enqueued_token_limit`:
`token_limit_exceeded`; or `batch_fail` names it) or `in_progress` until `batch_seconds`, `finalizing`
for `finalizing_seconds`, then `completed`. A batch whose work is not done at `expires_at` is `expired`:
the share of lines processed by then is kept, the rest written to the error file as `batch_expired`. A
cancel makes it `cancelling`, then `cancelled` `cancel_seconds` later, keeping what was processed at
the cancel (the rest: `batch_cancelled` lines). Lines come out in a seeded order, not the input's.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs
import orjson

from . import answers, selfpref
from . import designs as sim_designs
from .openai_scenario import OpenAIScenario, context_window
from .openai_wire import (
    BATCH_ENDPOINTS,
    Problem,
    answer_params,
    chat_problem,
    error_body,
    go_duration,
    multipart,
    prompt_units,
    vllm_error_body,
)
from .ratelimit import Bucket
from .scenario import Scenario
from .wire import LogEntry, RequestCtx, SimRequest, SimResponse, digest_int, draw, dumps, unit_float

if TYPE_CHECKING:  # a circle: the Anthropic side's simulator holds this one
    from .logic import Simulator

_FILE: Final = re.compile(r"^/v1/files/([^/]+)$")
_FILE_CONTENT: Final = re.compile(r"^/v1/files/([^/]+)/content$")
_BATCH: Final = re.compile(r"^/v1/batches/([^/]+)$")
_BATCH_CANCEL: Final = re.compile(r"^/v1/batches/([^/]+)/cancel$")
_CONTENT_FILTER: Final = re.compile(r"\[\[sim:content_filter\]\]")
_PREFIXES: Final = ("/v1/chat/completions", "/v1/files", "/v1/batches")
_MODEL: Final = re.compile(r"^/v1/models/(.+)$")
_PURPOSES: Final = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")
REFUSAL_TEXT: Final = "I'm sorry, but I can't help with that request."
#: OpenAI's in-memory prompt cache keeps a prefix this long after its last use (`"24h"` retention: a day).
CACHE_TTL: Final = 600.0
LIVE: Final = ("validating", "in_progress", "finalizing", "cancelling")


def is_openai_path(path: str, request: SimRequest) -> bool:
    """An OpenAI request: its endpoints, and `/v1/models` asked without `anthropic-version` (the Anthropic
    SDK always sends it; that side answers its own `/v1/models` requests)."""
    if path.startswith(_PREFIXES):
        return True
    return (path == "/v1/models" or path.startswith("/v1/models/")) and request.header(
        "anthropic-version"
    ) is None


@attrs.define
class _File:
    id: str
    seq: int
    created_at: float
    filename: str
    purpose: str
    data: bytes
    deleted: bool = False
    fetches: int = 0
    #: an output or error file: the first fetch may be cut (`results_drop_after_lines`)
    output: bool = False

    def json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.data),
            "created_at": int(self.created_at),
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }


@attrs.define
class OpenAIBatch:
    """One simulated batch (read it through `OpenAISide.batch`; do not change it)."""

    id: str
    seq: int
    created_at: float
    expires_at: float
    input_file_id: str
    endpoint: str
    metadata: dict[str, str] | None
    data: bytes
    status: str = "validating"
    model: str | None = None
    lines: tuple[dict[str, Any], ...] = ()
    custom_ids: tuple[str, ...] = ()
    attempts: tuple[int, ...] = ()
    prompt_tokens: int = 0
    errors: list[dict[str, Any]] | None = None
    in_progress_at: float | None = None
    finalizing_at: float | None = None
    completed_at: float | None = None
    failed_at: float | None = None
    expired_at: float | None = None
    cancelling_at: float | None = None
    cancelled_at: float | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    counts: dict[str, int] = attrs.field(factory=lambda: {"total": 0, "completed": 0, "failed": 0})
    usage: dict[str, int] = attrs.field(factory=lambda: {"input": 0, "cached": 0, "output": 0})


class OpenAISide:
    """The OpenAI wire's state; `Simulator` owns one and calls `handle` under its lock."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.files: dict[str, _File] = {}
        self._batches: dict[str, OpenAIBatch] = {}
        self._cache: dict[bytes, float] = {}
        self._buckets: tuple[Bucket | None, Bucket | None] | None = None
        self._served_ends: list[float] = []
        self._attempts: Counter[str] = Counter()
        self._submissions: Counter[str] = Counter()
        self._n = Counter[str]()
        #: (model, route, usage) of every answer billed
        self.billed: list[tuple[str, str, dict[str, Any]]] = []

    @property
    def s(self) -> Scenario:
        return self.sim.scenario

    @property
    def o(self) -> OpenAIScenario:
        return self.sim.scenario.openai

    # ------------------------------------------------------------------ queries for tests
    def batches(self) -> tuple[OpenAIBatch, ...]:
        with self.sim._lock:
            self._advance(self.sim.clock())
            return tuple(self._batches.values())

    def batch(self, batch_id: str) -> OpenAIBatch:
        with self.sim._lock:
            self._advance(self.sim.clock())
            return self._batches[batch_id]

    def file_bytes(self, file_id: str) -> bytes:
        with self.sim._lock:
            return self.files[file_id].data

    # ------------------------------------------------------------------ entry point
    def handle(self, request: SimRequest, path: str, now: float, rid: str) -> tuple[SimResponse, LogEntry]:
        self._advance(now)
        ctx = _OCtx(request, rid, now)
        response = self._route(ctx, request.method.upper(), path)
        head: tuple[tuple[str, str], ...] = ()
        if not ctx.served:
            head = (("x-request-id", rid), ("openai-organization", "org-sim"), ("openai-version", "2020-10-01"),
                    ("openai-processing-ms", str(int(response.stall * 1000))))  # fmt: skip
        if response.header("content-type") is None:
            head = (("content-type", "application/json"), *head)
        response = attrs.evolve(response, headers=(*head, *response.headers))
        entry = LogEntry(
            time=now,
            method=request.method,
            path=path,
            status=0 if response.drop else response.status,
            request_id=rid,
            fault=ctx.fault,
            batch_id=ctx.batch_id,
            custom_ids=ctx.custom_ids,
            digest=ctx.digest,
        )
        return response, entry

    def _route(self, ctx: _OCtx, method: str, path: str) -> SimResponse:
        if path == "/v1/chat/completions" and method == "POST":
            return self._chat(ctx)
        if (denied := self._authenticate(ctx)) is not None:
            return denied
        if path == "/v1/files":
            if method == "POST":
                return self._upload(ctx)
            if method == "GET":
                files = sorted(self._live_files(ctx), key=lambda f: (f.created_at, f.seq))
                return self._list(ctx, files, default=10_000, most=10_000)
        if m := _FILE.match(path):
            if method == "GET":
                f = self._file(ctx, m.group(1))
                return f if isinstance(f, SimResponse) else ctx.ok(f.json())
            if method == "DELETE":
                f = self._file(ctx, m.group(1))
                if isinstance(f, SimResponse):
                    return f
                f.deleted = True
                return ctx.ok({"id": f.id, "object": "file", "deleted": True})
        if (m := _FILE_CONTENT.match(path)) and method == "GET":
            return self._content(ctx, m.group(1))
        if path == "/v1/batches":
            if method == "POST":
                return self._create(ctx)
            if method == "GET":
                batches = sorted(self._batches.values(), key=lambda b: (b.created_at, b.seq))
                return self._list(ctx, batches, default=20, most=100)
        if (m := _BATCH.match(path)) and method == "GET":
            b = self._find(ctx, m.group(1))
            return b if isinstance(b, SimResponse) else ctx.ok(self._batch_json(b))
        if (m := _BATCH_CANCEL.match(path)) and method == "POST":
            return self._cancel(ctx, m.group(1))
        if path == "/v1/models" and method == "GET":
            models = sorted(self.o.models | self.o.served_models)
            return ctx.ok({"object": "list", "data": [self._model_json(m) for m in models]})
        if (m := _MODEL.match(path)) and method == "GET":
            if m.group(1) not in self.o.models | self.o.served_models:
                return ctx.error(_model_not_found(m.group(1)))
            return ctx.ok(self._model_json(m.group(1)))
        return ctx.error(Problem(f"Invalid URL ({method} {path})", status=404))

    def _model_json(self, model: str) -> dict[str, Any]:
        """A model as `GET /v1/models` lists it (a served model as vLLM lists it, owned by `vllm`)."""
        if model in self.o.served_models:
            return {"id": model, "object": "model", "created": 1_796_000_000, "owned_by": "vllm", "root": model,
                    "parent": None, "max_model_len": self.o.served_context}  # fmt: skip
        return {"id": model, "object": "model", "created": 1_700_000_000, "owned_by": "system"}

    def _authenticate(self, ctx: _OCtx) -> SimResponse | None:
        auth = ctx.request.header("authorization") or ""
        key = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
        s = self.s
        if not key:
            return ctx.error(Problem(
                "You didn't provide an API key. You need to provide your API key in an Authorization header "
                "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", status=401))  # fmt: skip
        if key == "sk-bad" or s.reject_all_keys or (s.valid_keys is not None and key not in s.valid_keys):
            # OpenAI echoes a masked key; the simulator names none (no key is ever printed).
            return ctx.error(Problem("Incorrect API key provided. You can find your API key at "
                                     "https://platform.openai.com/account/api-keys.", "invalid_api_key", status=401))  # fmt: skip
        return None

    # ------------------------------------------------------------------ chat completions
    def _chat(self, ctx: _OCtx) -> SimResponse:
        s, o = self.s, self.o
        body = ctx.json_body()
        model = body.get("model") if isinstance(body, dict) else None
        if isinstance(model, str) and model in o.served_models:
            return self._served_chat(ctx, body)
        if (denied := self._authenticate(ctx)) is not None:
            return denied
        self._n["chat"] += 1
        number = self._n["chat"]
        if (problem := chat_problem(body)) is not None:
            return ctx.error(problem)
        assert isinstance(body, dict)
        if body["model"] not in o.models:
            return ctx.error(_model_not_found(body["model"]))
        params = answer_params(body)
        ctx.digest = answers.content_digest(params)
        fault = dict(o.chat_faults).get(number) or draw(o.chat_fault_mix, s.seed, "openai-chat-fault", number)
        if fault is not None:
            ctx.fault = fault
            return self._chat_fault(ctx, fault, body["model"])
        input_tokens = sum(t for _, t in prompt_units(body))
        if input_tokens > context_window(body["model"]):
            return ctx.error(_context_exceeded(body["model"], input_tokens))
        cost = input_tokens + int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
        if (refused := self._admit(ctx, body["model"], cost)) is not None:
            return refused
        self._attempts[ctx.digest] += 1
        forced = answers.forced_outcome(params, self._attempts[ctx.digest])
        if forced is not None and (line := self._forced_error(forced, params)) is not None:
            return ctx.error(line, extra=self._ratelimit_headers(ctx))
        completion = self._completion(body, params, ctx.now, forced, "sync", number)
        self.billed.append((body["model"], "sync", completion["usage"]))
        return ctx.ok(completion, extra=self._ratelimit_headers(ctx))

    def _forced_error(self, forced: str, params: Mapping[str, Any]) -> Problem | None:
        """The error a marker's outcome answers with (None: it does not apply on this route)."""
        model = str(params["model"])
        match forced:
            case "invalid_request":
                return Problem("Invalid 'messages': simulated invalid request.", "invalid_value", "messages")
            case "context_overflow":
                return _context_exceeded(
                    model, max(answers.count_input_tokens(params), context_window(model) + 1)
                )
            case "api_error":
                return _server_error(500)
            case "overloaded_error":
                return _server_error(503)
            case "rate_limit_error":
                return Problem(f"Rate limit reached for {model} (simulated).", "rate_limit_exceeded",
                               status=429, type="requests")  # fmt: skip
        return None

    def _chat_fault(self, ctx: _OCtx, fault: str, model: str) -> SimResponse:
        s = self.s
        if fault == "drop":
            return SimResponse(status=0, drop=True)
        if fault == "429":
            return self._rate_limited(ctx, model, "requests", s.retry_after)
        if fault == "insufficient_quota":
            return ctx.error(Problem(
                "You exceeded your current quota, please check your plan and billing details. For more "
                "information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
                "insufficient_quota", status=429, type="insufficient_quota"))  # fmt: skip
        hint = s.error_retry_after_ms
        extra = [("retry-after-ms", f"{hint:g}")] if hint is not None else []
        return ctx.error(_server_error(int(fault)), extra=extra)

    def _buckets_now(self, now: float) -> tuple[Bucket | None, Bucket | None]:
        if self._buckets is None:
            o = self.o
            self._buckets = (
                None if o.rpm_limit is None else Bucket.full(o.rpm_limit, now),
                None if o.tpm_limit is None else Bucket.full(o.tpm_limit, now),
            )
        for bucket in self._buckets:
            if bucket is not None:
                bucket.refill(now)
        return self._buckets

    def _admit(self, ctx: _OCtx, model: str, cost: int) -> SimResponse | None:
        rpm, tpm = self._buckets_now(ctx.now)
        if rpm is not None and rpm.level < 1:
            ctx.fault = "rate_limited"
            return self._rate_limited(ctx, model, "requests", rpm.wait_for(1))
        if tpm is not None and tpm.level < min(cost, tpm.limit):
            ctx.fault = "rate_limited"
            return self._rate_limited(ctx, model, "tokens", tpm.wait_for(cost), cost)
        if rpm is not None:
            rpm.level -= 1
        if tpm is not None:
            tpm.level -= cost
        return None

    def _ratelimit_headers(self, ctx: _OCtx) -> list[tuple[str, str]]:
        o = self.o
        rpm, tpm = self._buckets_now(ctx.now)
        out = []
        for name, bucket, advertised in (
            ("requests", rpm, o.advertised_rpm),
            ("tokens", tpm, o.advertised_tpm),
        ):
            limit = advertised if bucket is None else bucket.limit
            remaining = limit if bucket is None else max(0, math.floor(bucket.level))
            reset = 0.0 if bucket is None else bucket.wait_for(bucket.limit)
            out += [(f"x-ratelimit-limit-{name}", str(limit)), (f"x-ratelimit-remaining-{name}", str(remaining)),
                    (f"x-ratelimit-reset-{name}", go_duration(reset))]  # fmt: skip
        return out

    def _rate_limited(
        self, ctx: _OCtx, model: str, which: str, wait: float, requested: int = 1
    ) -> SimResponse:
        s = self.s
        unit = "tokens per min (TPM)" if which == "tokens" else "requests per min (RPM)"
        message = (
            f"Rate limit reached for {model} in organization org-sim on {unit}: Requested {requested}. "
            f"Please try again in {go_duration(wait)}. Visit https://platform.openai.com/account/rate-limits "
            "to learn more."
        )
        headers = [("retry-after", str(max(1, math.ceil(wait))))]
        if s.send_retry_after_ms:
            ms = wait * 1000 if s.max_retry_after_ms is None else min(wait * 1000, s.max_retry_after_ms)
            headers.append(("retry-after-ms", f"{max(ms, 1.0):.0f}"))
        headers += self._ratelimit_headers(ctx)
        return ctx.error(Problem(message, "rate_limit_exceeded", status=429, type=which), extra=headers)

    def _cached_tokens(self, body: Mapping[str, Any], units: list[tuple[bytes, int]], now: float) -> int:
        """Prompt tokens served from the cache: the longest earlier prompt prefix (at a message boundary,
        1,024 tokens or more, in steps of 128) still alive; this prompt's prefixes are (re)written."""
        ttl = 86_400.0 if body.get("prompt_cache_retention") == "24h" else CACHE_TTL
        running = hashlib.sha256(str(body["model"]).encode())
        tokens = hit = 0
        minimum = self.s.min_cacheable_tokens
        for key, n in units:
            running.update(len(key).to_bytes(8, "big") + key)
            tokens += n
            if tokens < minimum:
                continue
            digest = running.digest()
            if self._cache.get(digest, -math.inf) > now:
                hit = tokens
            self._cache[digest] = now + ttl
        if len(self._cache) > 4096:
            for k in [k for k, exp in self._cache.items() if exp <= now]:
                del self._cache[k]
        return hit // 128 * 128

    def _completion(
        self,
        body: Mapping[str, Any],
        params: Mapping[str, Any],
        now: float,
        forced: str | None,
        tier: str,
        *salt: object,
        cached: int | None = None,
    ) -> dict[str, Any]:
        s, o = self.s, self.o
        reply = answers.answer(
            params,
            seed=s.seed,
            truncate=forced == "max_tokens",
            score_weights=dict(s.score_weights),
            unparseable_rate=s.unparseable_rate,
            out_of_range_rate=s.out_of_range_rate,
        )
        if s.position_bias or s.sample_spread or "Assistant A's Answer]" in answers.last_user_text(params):
            reply = sim_designs.shape(reply, params, seed=s.seed, position_bias=s.position_bias,
                                      sample_spread=s.sample_spread, salt=salt)  # fmt: skip
        if s.self_preference:
            reply = selfpref.bias(reply, params, seed=s.seed, preference=dict(s.self_preference))
        digest = answers.content_digest(params)
        text: str | None = reply.text
        refusal = None
        finish = "length" if reply.stop_reason == "max_tokens" else "stop"
        output = reply.output_tokens
        if forced == "refusal" or (
            s.refusal_rate > 0 and unit_float(s.seed, "refusal", digest) < s.refusal_rate
        ):
            text, refusal, finish, output = None, REFUSAL_TEXT, "stop", answers.tokens_of_text(REFUSAL_TEXT)
        elif _CONTENT_FILTER.search(answers.last_user_text(params)) or (
            o.content_filter_rate > 0 and unit_float(s.seed, "content_filter", digest) < o.content_filter_rate
        ):
            text, finish, output = None, "content_filter", 1
        units = prompt_units(body)
        prompt = sum(t for _, t in units)
        if cached is None:
            cached = self._cached_tokens(body, units, now)
        return {
            "id": _oid("chatcmpl-", s.seed, "chat", tier, *salt, length=29),
            "object": "chat.completion",
            "created": int(now),
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": refusal, "annotations": []},
                    "logprobs": None,
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": output,
                "total_tokens": prompt + output,
                "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": 0,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            },
            "service_tier": "default",
            "system_fingerprint": None,
        }

    # ------------------------------------------------------------------ served (vLLM)
    def _served_chat(self, ctx: _OCtx, body: dict[str, Any]) -> SimResponse:
        s, o = self.s, self.o
        ctx.served = True
        if o.served_api_key is not None:
            auth = ctx.request.header("authorization") or ""
            if auth != f"Bearer {o.served_api_key}":
                return SimResponse(status=401, body=dumps({"error": "Unauthorized"}))
        self._n["served"] += 1
        number = self._n["served"]
        if (problem := chat_problem(body, reasoning=False)) is not None:
            return ctx.error(problem)
        params = answer_params(body)
        ctx.digest = answers.content_digest(params)
        fault = dict(o.chat_faults).get(number) or draw(o.chat_fault_mix, s.seed, "openai-chat-fault", number)
        if fault is not None:
            ctx.fault = fault
            if fault == "drop":
                return SimResponse(status=0, drop=True)
            status = 429 if fault in ("429", "insufficient_quota") else int(fault)
            return ctx.error(Problem("The server is overloaded (simulated)." if status != 500 else
                                     "Internal server error (simulated).", status=status))  # fmt: skip
        input_tokens = sum(t for _, t in prompt_units(body))
        cap = body.get("max_completion_tokens") or body.get("max_tokens")
        self._attempts[ctx.digest] += 1
        forced = answers.forced_outcome(params, self._attempts[ctx.digest])
        if (
            overflow := _served_overflow(o.served_context, input_tokens, cap, forced, ctx.digest)
        ) is not None:
            return ctx.error(overflow)
        if forced is not None and (line := self._forced_error(forced, params)) is not None:
            return ctx.error(line)
        self._served_ends = [t for t in self._served_ends if t > ctx.now]
        depth = len(self._served_ends) + 1
        if o.served_max_queued is not None and depth > o.served_slots + o.served_max_queued:
            ctx.fault = "queue_full"
            return ctx.error(Problem(
                f"The server is overloaded: {depth - 1 - o.served_slots} requests are waiting "
                f"(--max-num-queued-reqs {o.served_max_queued}).", status=503))  # fmt: skip
        latency = o.served_latency * max(1.0, depth / o.served_slots)
        self._served_ends.append(ctx.now + latency)
        completion = self._completion(body, params, ctx.now, forced, "served", number, cached=0)
        completion["service_tier"] = None
        completion["usage"]["prompt_tokens_details"] = None
        self.billed.append((body["model"], "served", completion["usage"]))
        return attrs.evolve(ctx.ok(completion), stall=latency)

    # ------------------------------------------------------------------ files
    def _live_files(self, ctx: _OCtx) -> list[_File]:
        purpose = ctx.request.param("purpose")
        return [f for f in self.files.values() if not f.deleted and (purpose is None or f.purpose == purpose)]

    def _file(self, ctx: _OCtx, file_id: str) -> _File | SimResponse:
        f = self.files.get(file_id)
        if f is None or f.deleted:
            return ctx.error(Problem(f"No such File object: {file_id}", param="id", status=404))
        return f

    def _new_file(self, now: float, filename: str, purpose: str, data: bytes, output: bool = False) -> _File:
        seq = len(self.files) + 1
        f = _File(_oid("file-", self.s.seed, "file", seq, length=22), seq, now, filename, purpose, data,
                  output=output)  # fmt: skip
        self.files[f.id] = f
        return f

    def _upload(self, ctx: _OCtx) -> SimResponse:
        self._n["upload"] += 1
        fault = dict(self.o.upload_faults).get(self._n["upload"])
        ctx.fault = fault
        if (early := _early_fault(ctx, fault, self.s.error_retry_after_ms, self)) is not None:
            return early
        parts = multipart(ctx.request.header("content-type"), ctx.request.body)
        if parts is None:
            return ctx.error(Problem("Expected a multipart/form-data body.", "invalid_value"))
        fields = {p.name: p for p in parts}
        purpose = fields["purpose"].data.decode() if "purpose" in fields else None
        if purpose is None:
            return ctx.error(
                Problem("Missing required parameter: 'purpose'.", "missing_required_parameter", "purpose")
            )
        if purpose not in _PURPOSES:
            return ctx.error(
                Problem(f"Invalid value for 'purpose': '{purpose}'.", "invalid_value", "purpose")
            )
        upload = fields.get("file")
        if upload is None or upload.filename is None:
            return ctx.error(
                Problem("Missing required parameter: 'file'.", "missing_required_parameter", "file")
            )
        if purpose == "batch" and not upload.filename.endswith(".jsonl"):
            return ctx.error(
                Problem("Invalid file format for Batch API. Must be .jsonl", "invalid_value", "file")
            )
        f = self._new_file(ctx.now, upload.filename, purpose, upload.data)
        if fault is not None and fault.startswith("persist_then_"):
            return _late_fault(ctx, fault, self)
        return ctx.ok(f.json())

    def _content(self, ctx: _OCtx, file_id: str) -> SimResponse:
        s = self.s
        f = self._file(ctx, file_id)
        if isinstance(f, SimResponse):
            return f
        f.fetches += 1
        cut = None
        if f.output and f.fetches == 1 and s.results_drop_after_lines is not None:
            lines = f.data.split(b"\n")
            if s.results_drop_after_lines < len(lines) - 1:
                cut = sum(len(x) + 1 for x in lines[: s.results_drop_after_lines])
                ctx.fault = "results_cut"
        return SimResponse(status=200, headers=(("content-type", "application/octet-stream"),), body=f.data,
                           cut_after=cut, pace=(max(1, s.results_chunk_lines), s.results_line_delay))  # fmt: skip

    def _list(self, ctx: _OCtx, items: list[Any], *, default: int, most: int) -> SimResponse:
        """A cursor page, newest first unless `order=asc` (files; batches always newest first)."""
        raw = ctx.request.param("limit")
        try:
            limit = default if raw is None else int(raw)
        except ValueError:
            return ctx.error(Problem("Invalid 'limit': expected an integer.", "invalid_type", "limit"))
        if not 1 <= limit <= most:
            return ctx.error(
                Problem(f"Invalid 'limit': expected a value between 1 and {most}.", "invalid_value", "limit")
            )
        if ctx.request.param("order") != "asc":
            items = items[::-1]
        after = ctx.request.param("after")
        if after is not None:
            ids = [x.id for x in items]
            if after not in ids:
                return ctx.error(
                    Problem(f"Invalid 'after': no object with id {after}.", "invalid_value", "after")
                )
            items = items[ids.index(after) + 1 :]
        page = items[:limit]
        data = [x.json() if isinstance(x, _File) else self._batch_json(x) for x in page]
        return ctx.ok({"object": "list", "data": data, "first_id": page[0].id if page else None,
                       "last_id": page[-1].id if page else None, "has_more": len(items) > limit})  # fmt: skip

    # ------------------------------------------------------------------ batches
    def _create(self, ctx: _OCtx) -> SimResponse:
        s = self.s
        self._n["create"] += 1
        fault = dict(self.o.create_faults).get(self._n["create"])
        ctx.fault = fault
        if (early := _early_fault(ctx, fault, s.error_retry_after_ms, self)) is not None:
            return early
        body = ctx.json_body()
        if not isinstance(body, dict):
            return ctx.error(Problem("We could not parse the JSON body of your request.", "invalid_json"))
        for key in ("input_file_id", "endpoint", "completion_window"):
            if key not in body:
                return ctx.error(
                    Problem(f"Missing required parameter: '{key}'.", "missing_required_parameter", key)
                )
        if body["completion_window"] != "24h":
            return ctx.error(Problem(f"Invalid value: '{body['completion_window']}'. Supported values are: '24h'.",
                                     "invalid_value", "completion_window"))  # fmt: skip
        if body["endpoint"] not in BATCH_ENDPOINTS:
            return ctx.error(Problem(f"Invalid value: '{body['endpoint']}'. Supported values are: "
                                     + ", ".join(f"'{e}'" for e in BATCH_ENDPOINTS) + ".", "invalid_value", "endpoint"))  # fmt: skip
        if body["endpoint"] != "/v1/chat/completions":
            return ctx.error(
                Problem("The simulator runs /v1/chat/completions batches only.", "invalid_value", "endpoint")
            )
        metadata = body.get("metadata")
        if (problem := _metadata_problem(metadata)) is not None:
            return ctx.error(problem)
        f = self.files.get(str(body["input_file_id"]))
        if f is None or f.deleted:
            return ctx.error(
                Problem(f"No such File object: {body['input_file_id']}", param="input_file_id", status=404)
            )
        if f.purpose != "batch":
            return ctx.error(Problem(f"File {f.id} has purpose '{f.purpose}'; a batch's input file must have "
                                     "purpose 'batch'.", "invalid_value", "input_file_id"))  # fmt: skip
        seq = len(self._batches) + 1
        b = OpenAIBatch(
            id=_oid("batch_", s.seed, "openai-batch", seq, length=32),
            seq=seq,
            created_at=ctx.now,
            expires_at=ctx.now + s.expires_after,
            input_file_id=f.id,
            endpoint=body["endpoint"],
            metadata=dict(metadata) if metadata else None,
            data=f.data,
        )
        self._batches[b.id] = b
        ctx.batch_id = b.id
        if fault is not None and fault.startswith("persist_then_"):
            return _late_fault(ctx, fault, self)
        return ctx.ok(self._batch_json(b))

    def _find(self, ctx: _OCtx, batch_id: str) -> OpenAIBatch | SimResponse:
        ctx.batch_id = batch_id
        b = self._batches.get(batch_id)
        if b is None:
            return ctx.error(Problem(f"No batch found with id '{batch_id}'.", param="batch_id", status=404))
        return b

    def _cancel(self, ctx: _OCtx, batch_id: str) -> SimResponse:
        b = self._find(ctx, batch_id)
        if isinstance(b, SimResponse):
            return b
        if b.status not in ("validating", "in_progress", "cancelling"):
            return ctx.error(Problem(f"Cannot cancel a batch with status '{b.status}'.", status=409),
                             extra=[("x-should-retry", "false")])  # fmt: skip
        if b.status != "cancelling":
            b.status, b.cancelling_at = "cancelling", ctx.now
        return ctx.ok(self._batch_json(b))

    def _batch_json(self, b: OpenAIBatch) -> dict[str, Any]:
        def t(x: float | None) -> int | None:
            return None if x is None else int(x)

        u = b.usage
        return {
            "id": b.id,
            "object": "batch",
            "endpoint": b.endpoint,
            "model": b.model,
            "errors": None if b.errors is None else {"object": "list", "data": b.errors},
            "input_file_id": b.input_file_id,
            "completion_window": "24h",
            "status": b.status,
            "output_file_id": b.output_file_id,
            "error_file_id": b.error_file_id,
            "created_at": int(b.created_at),
            "in_progress_at": t(b.in_progress_at),
            "expires_at": int(b.expires_at),
            "finalizing_at": t(b.finalizing_at),
            "completed_at": t(b.completed_at),
            "failed_at": t(b.failed_at),
            "expired_at": t(b.expired_at),
            "cancelling_at": t(b.cancelling_at),
            "cancelled_at": t(b.cancelled_at),
            "request_counts": dict(b.counts),
            "metadata": b.metadata,
            "usage": {
                "input_tokens": u["input"],
                "input_tokens_details": {"cached_tokens": u["cached"]},
                "output_tokens": u["output"],
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": u["input"] + u["output"],
            },
        }

    # ------------------------------------------------------------------ batch processing
    def _advance(self, now: float) -> None:
        for b in self._batches.values():
            if b.status == "validating" and b.cancelling_at is None:
                at = b.created_at + self.o.validating_seconds
                if now >= at:
                    self._validate(b, at)
            if b.status in ("in_progress", "finalizing", "cancelling"):
                self._step(b, now)

    def _work_end(self, b: OpenAIBatch) -> float:
        s = self.s
        start = b.in_progress_at if b.in_progress_at is not None else b.created_at
        return math.inf if s.never_end else max(start, b.created_at + s.batch_seconds)

    def _released_at(self, b: OpenAIBatch) -> float:
        """When a validated batch's prompt tokens leave the model's queue (as planned now)."""
        for at in (b.completed_at, b.expired_at, b.cancelled_at, b.failed_at):
            if at is not None:
                return at
        if b.cancelling_at is not None:
            return b.cancelling_at + self.s.cancel_seconds
        return min(self._work_end(b), b.expires_at)

    def _validate(self, b: OpenAIBatch, at: float) -> None:
        o = self.o
        errors, lines, model = _validate_file(b.data, b.endpoint, o)
        forced = dict(o.batch_fail).get(b.seq)
        if not errors and forced == "invalid_request":
            errors = [_batch_error("invalid_request", "The batch was refused (simulated).")]
        if not errors:
            tokens = sum(sum(t for _, t in prompt_units(line["body"])) if isinstance(line["body"].get("messages"), list)
                         else 0 for line in lines)  # fmt: skip
            queued = sum(
                other.prompt_tokens
                for other in self._batches.values()
                if other is not b
                and other.model == model
                and other.in_progress_at is not None
                and other.failed_at is None
                and other.in_progress_at <= at < self._released_at(other)
            )
            limit = o.enqueued_token_limit
            if forced == "token_limit_exceeded" or (limit is not None and queued + tokens > limit):
                shown = f"{limit:,}" if limit is not None else "2,000,000"
                errors = [_batch_error(
                    "token_limit_exceeded",
                    f"Enqueued token limit reached for {model} in organization org-sim. Limit: {shown} enqueued "
                    "tokens. Please try again once some in_progress batches have been completed.")]  # fmt: skip
            b.prompt_tokens = tokens
        b.model = model
        if errors:
            b.status, b.failed_at, b.errors = "failed", at, errors
            return
        b.lines = tuple(lines)
        b.custom_ids = tuple(str(line["custom_id"]) for line in lines)
        attempts = []
        for line in lines:
            self._submissions[str(line["custom_id"])] += 1
            attempts.append(self._submissions[str(line["custom_id"])])
        b.attempts = tuple(attempts)
        b.status, b.in_progress_at = "in_progress", at
        b.counts = {"total": len(lines), "completed": 0, "failed": 0}

    def _step(self, b: OpenAIBatch, now: float) -> None:
        s, o = self.s, self.o
        work_end = self._work_end(b)
        if b.cancelling_at is not None:
            cancel_end = b.cancelling_at + s.cancel_seconds
            if b.in_progress_at is None or (cancel_end < work_end and cancel_end <= b.expires_at):
                if now >= cancel_end:
                    self._finish(b, b.cancelling_at, "batch_cancelled")
                    b.status, b.cancelled_at = "cancelled", cancel_end
                return
        if b.expires_at < work_end + o.finalizing_seconds:
            if now >= b.expires_at:
                self._finish(b, b.expires_at, "batch_expired")
                b.status, b.expired_at = "expired", b.expires_at
            return
        if now >= work_end and b.status in ("in_progress", "cancelling"):
            b.status, b.finalizing_at = "finalizing", work_end
        if now >= work_end + o.finalizing_seconds and b.status == "finalizing":
            self._finish(b, work_end, "batch_expired")
            b.status, b.completed_at = "completed", work_end + o.finalizing_seconds

    def _finish(self, b: OpenAIBatch, cut_at: float, cut_code: str) -> None:
        """Compute the batch's lines as of `cut_at`: those processed by then answered, the rest
        `cut_code`; write the output and error files."""
        s = self.s
        n = len(b.lines)
        start = b.in_progress_at if b.in_progress_at is not None else b.created_at
        span = self._work_end(b) - start
        if b.in_progress_at is None:
            done = 0
        elif span <= 0 or cut_at >= start + span:
            done = n
        else:
            done = min(n, max(0, math.floor(n * (cut_at - start) / span)))
        cids = b.custom_ids
        order = sorted(range(n), key=lambda i: digest_int(s.seed, b.id, "order", cids[i]))
        processed = set(order[:done])
        shuffled = list(range(n))
        random.Random(digest_int(s.seed, b.id, "shuffle")).shuffle(shuffled)
        good: list[bytes] = []
        bad: list[bytes] = []
        for i in shuffled:
            line = b.lines[i]
            cid = str(line["custom_id"])
            lid = _oid("batch_req_", s.seed, b.id, cid, length=32)
            if i not in processed:
                message = ("This request could not be executed before the completion window expired."
                           if cut_code == "batch_expired" else "This request was not executed: the batch was cancelled.")  # fmt: skip
                record = {
                    "id": lid,
                    "custom_id": cid,
                    "response": None,
                    "error": {"code": cut_code, "message": message},
                }
                bad.append(orjson.dumps(record) + b"\n")
                continue
            status, payload = self._line_result(b, i, cut_at)
            rid = _oid("req_", s.seed, "openai-batchreq", b.id, cid, length=32)
            record = {"id": lid, "custom_id": cid,
                      "response": {"status_code": status, "request_id": rid, "body": payload}, "error": None}  # fmt: skip
            (good if status == 200 else bad).append(orjson.dumps(record) + b"\n")
            if status == 200:
                usage = payload["usage"]
                b.usage["input"] += usage["prompt_tokens"]
                b.usage["cached"] += usage["prompt_tokens_details"]["cached_tokens"]
                b.usage["output"] += usage["completion_tokens"]
        b.counts = {"total": n, "completed": len(good), "failed": len(bad)}
        if good:
            b.output_file_id = self._new_file(cut_at, f"batch_{b.id}_output.jsonl", "batch_output",
                                              b"".join(good), output=True).id  # fmt: skip
        if bad:
            b.error_file_id = self._new_file(cut_at, f"batch_{b.id}_error.jsonl", "batch_output",
                                             b"".join(bad), output=True).id  # fmt: skip

    def _line_result(self, b: OpenAIBatch, i: int, now: float) -> tuple[int, dict[str, Any]]:
        s = self.s
        body = b.lines[i]["body"]
        cid, attempt = str(b.lines[i]["custom_id"]), b.attempts[i]
        if (problem := chat_problem(body)) is not None:
            return problem.status, error_body(problem)
        if body["model"] not in self.o.models:
            return 404, error_body(_model_not_found(body["model"]))
        params = answer_params(body)
        input_tokens = answers.count_input_tokens(params)
        if input_tokens > context_window(body["model"]):
            return 400, error_body(_context_exceeded(body["model"], input_tokens))
        outcome = answers.forced_outcome(params, attempt)
        if outcome is None and attempt <= s.batch_failures:
            outcome = "api_error"
        if outcome is None:
            mix = s.batch_mix if attempt == 1 else s.batch_retry_mix
            outcome = draw(mix, s.seed, "batch", cid, attempt) or "succeeded"
        if outcome in ("canceled", "expired"):
            outcome = "succeeded"  # a line's own fate is its batch's, on this wire
        if outcome not in ("succeeded", "max_tokens", "refusal"):
            problem = self._forced_error(outcome, params)
            assert problem is not None
            return problem.status, error_body(problem)
        completion = self._completion(body, params, now, outcome, "batch", b.id, cid)
        self.billed.append((body["model"], "batch", completion["usage"]))
        return 200, completion


def _validate_file(
    data: bytes, endpoint: str, o: OpenAIScenario
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str | None]:
    """(errors, lines, model) of a batch input file, as OpenAI's validation reads it."""
    if len(data) > o.max_file_bytes:
        return (
            [
                _batch_error(
                    "file_too_large", f"The input file is larger than the {o.max_file_bytes:,}-byte limit."
                )
            ],
            [],
            None,
        )
    raw = [x for x in data.split(b"\n") if x.strip()]
    if not raw:
        return [_batch_error("empty_file", "The input file is empty.")], [], None
    if len(raw) > o.max_file_lines:
        return [_batch_error("too_many_requests", f"The input file has {len(raw):,} requests; a batch takes at "
                             f"most {o.max_file_lines:,}.")], [], None  # fmt: skip
    errors: list[dict[str, Any]] = []
    lines: list[dict[str, Any]] = []
    seen: set[str] = set()
    model: str | None = None
    for n, text in enumerate(raw, start=1):
        try:
            line = orjson.loads(text)
        except orjson.JSONDecodeError:
            errors.append(_batch_error("invalid_json_line", "This line is not valid JSON.", None, n))
            continue
        if not isinstance(line, dict):
            errors.append(_batch_error("invalid_json_line", "This line is not a JSON object.", None, n))
            continue
        cid = line.get("custom_id")
        if cid is None:
            errors.append(
                _batch_error(
                    "missing_required_parameter", "Missing required parameter: 'custom_id'.", "custom_id", n
                )
            )
            continue
        if not isinstance(cid, str) or not cid:
            errors.append(
                _batch_error(
                    "invalid_type", "Invalid 'custom_id': expected a non-empty string.", "custom_id", n
                )
            )
            continue
        if cid in seen:
            errors.append(_batch_error("duplicate_custom_id", f"The custom_id '{cid}' is used by more than one "
                                       "request; each request needs a unique custom_id.", "custom_id", n))  # fmt: skip
            continue
        seen.add(cid)
        if line.get("method") != "POST":
            errors.append(
                _batch_error("invalid_method", "Invalid 'method': only 'POST' is supported.", "method", n)
            )
            continue
        if line.get("url") != endpoint:
            errors.append(_batch_error("invalid_url", f"The url '{line.get('url')}' does not match the batch's "
                                       f"endpoint '{endpoint}'.", "url", n))  # fmt: skip
            continue
        body = line.get("body")
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            errors.append(
                _batch_error(
                    "missing_required_parameter", "Missing required parameter: 'body.model'.", "body.model", n
                )
            )
            continue
        if model is None:
            model = body["model"]
            if model not in o.models:
                errors.append(_batch_error("model_not_found", f"The model '{model}' does not exist or you do not "
                                           "have access to it.", "body.model", n))  # fmt: skip
        elif body["model"] != model:
            errors.append(_batch_error("mismatched_model", f"The model '{body['model']}' differs from the file's "
                                       f"first model '{model}': a batch file may target one model only.", "body.model", n))  # fmt: skip
            continue
        lines.append(line)
    return errors, lines, model


def _batch_error(
    code: str, message: str, param: str | None = None, line: int | None = None
) -> dict[str, Any]:
    return {"code": code, "message": message, "param": param, "line": line}


def _metadata_problem(metadata: object) -> Problem | None:
    if metadata is None:
        return None
    if not isinstance(metadata, dict) or len(metadata) > 16:
        return Problem("Invalid 'metadata': at most 16 key-value pairs.", "invalid_value", "metadata")
    for k, v in metadata.items():
        if len(k) > 64 or not isinstance(v, str) or len(v) > 512:
            return Problem(f"Invalid 'metadata.{k[:64]}': keys are at most 64 characters, values strings of at "
                           "most 512.", "invalid_value", "metadata")  # fmt: skip
    return None


def _model_not_found(model: str) -> Problem:
    return Problem(f"The model `{model}` does not exist or you do not have access to it.", "model_not_found",
                   status=404)  # fmt: skip


def _context_exceeded(model: str, tokens: int) -> Problem:
    return Problem(
        f"This model's maximum context length is {context_window(model)} tokens. However, your messages "
        f"resulted in {tokens} tokens. Please reduce the length of the messages.",
        "context_length_exceeded",
        "messages",
    )


def _server_error(status: int) -> Problem:
    if status == 503:
        return Problem(
            "The engine is currently overloaded, please try again later.", status=503, type="server_error"
        )
    return Problem("The server had an error while processing your request. Sorry about that!", status=status,
                   type="server_error")  # fmt: skip


#: vLLM's three context-overflow wordings (providers-facts B): input alone too long; input plus the
#: completion too long (older vLLM); `max_tokens` too large (newer vLLM).
def _served_overflow(
    window: int, tokens: int, cap: int | None, forced: str | None, digest: str
) -> Problem | None:
    completion = int(cap or 0)
    if forced == "context_overflow":
        which = int(digest[:8], 16) % 3
        tokens = max(tokens, window + 1) if which == 0 else tokens
        completion = max(completion, window - tokens + 1)
    elif tokens > window:
        which = 0
    elif tokens + completion > window:
        which = 2
    else:
        return None
    if which == 0:
        message = (f"This model's maximum context length is {window} tokens. However, your request has {tokens} "
                   "input tokens. Please reduce the length of the input messages.")  # fmt: skip
    elif which == 1:
        message = (f"This model's maximum context length is {window} tokens. However, you requested "
                   f"{tokens + completion} tokens ({tokens} in the messages, {completion} in the completion). "
                   "Please reduce the length of the messages or completion.")  # fmt: skip
    else:
        message = (f"'max_tokens' or 'max_completion_tokens' is too large: {completion}. This model's maximum "
                   f"context length is {window} tokens and your request has {tokens} input tokens "
                   f"({completion} > {window} - {tokens}). (parameter=max_tokens, value={completion})")  # fmt: skip
    return Problem(message, param="max_tokens" if which == 2 else None)


def _early_fault(ctx: _OCtx, fault: str | None, hint: float | None, side: OpenAISide) -> SimResponse | None:
    if fault == "500":
        return ctx.error(
            _server_error(500), extra=[("retry-after-ms", f"{hint:g}")] if hint is not None else None
        )
    if fault == "429":
        return side._rate_limited(ctx, "batch", "requests", side.s.retry_after)
    if fault == "drop":
        return SimResponse(status=0, drop=True)
    if fault == "stall":  # held, then dropped, nothing made (a run killed while it waits made nothing)
        return SimResponse(status=0, drop=True, stall=side.s.create_stall_seconds)
    return None


def _late_fault(ctx: _OCtx, fault: str, side: OpenAISide) -> SimResponse:
    """The object exists; the answer is lost (a 500, a dropped connection, or one held, then dropped)."""
    if fault == "persist_then_500":
        return _early_fault(ctx, "500", side.s.error_retry_after_ms, side) or SimResponse(status=500)
    if fault == "persist_then_drop":
        return SimResponse(status=0, drop=True)
    return SimResponse(status=0, drop=True, stall=side.s.create_stall_seconds)


def _oid(prefix: str, *parts: object, length: int) -> str:
    """An id like OpenAI's (`batch_...`, `file-...`, `chatcmpl-...`), derived from `parts` (hex: cheaper
    than `wire.make_id`'s alphabet, which a 50,000-line batch would call 150,000 times)."""
    return prefix + hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:length]


@attrs.define
class _OCtx(RequestCtx):
    """A Chat Completions, Files or Batches request's scratch: a served model's errors are vLLM's."""

    served: bool = False

    def error(self, problem: Problem, *, extra: list[tuple[str, str]] | None = None) -> SimResponse:
        body = vllm_error_body(problem) if self.served else error_body(problem)
        return SimResponse(status=problem.status, headers=tuple(extra or ()), body=dumps(body))
