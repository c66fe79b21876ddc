"""The simulator itself: `Simulator.handle(SimRequest) -> SimResponse`, a deterministic state machine.

Theory of operation. The simulator holds all state (batches, prompt cache, rate-limit buckets, counters,
the request log) behind one lock, and reads time only from the injected `clock`. Every call to `handle`
reads the clock once, first advances every batch whose end time has passed (computing its results as of
that end time), then routes the request. Nothing runs in the background: a batch "ends" when someone
next talks to the simulator after its end time, with results identical to having ended on time.

Batch lifecycle: `in_progress` until `created_at +` its latency (`batch_seconds`, or a seeded draw of
`batch_latency` whose median it is: see latency.py) or `expires_at`, whichever is first (never, with
`never_end`); a cancel moves it to `canceling` and ends it `cancel_seconds` later. The share
of requests processed by the end is elapsed / latency, in a seeded order; the others become
`expired` (deadline) or `canceled` (cancel). A processed request's outcome comes from, in order: params
validation and model check (async errors, like the real API), a `[[sim:...]]` marker, then the seeded
`batch_mix` (first submission of that custom_id) or `batch_retry_mix` (later submissions).

With `lazy_batches`, a batch keeps its requests on disk and makes its results as they are fetched
(lazy.py): the same outcomes, counts and order, answers drawn per request shape.

Ids, answers, shuffles and fault draws are hashes of (seed, content, counters), so the same scenario,
seed, requests and clock give the same responses.
"""

from __future__ import annotations

import math
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import attrs
import orjson

from judgecore.values import frozen

from . import answers, selfpref
from . import designs as sim_designs
from .cache import PromptCache
from .latency import latency_at
from .lazy import Packed, Spill, pack, result_lines
from .openai_logic import OpenAISide, is_openai_path
from .ratelimit import RateLimiter
from .scenario import ACCOUNT_STATES, MODEL_THINKING, Scenario
from .wire import (
    ERROR_STATUS,
    LogEntry,
    RequestCtx,
    SimRequest,
    SimResponse,
    digest_int,
    draw,
    dumps,
    error_body,
    make_id,
    rfc3339,
    unit_float,
)

CUSTOM_ID_RE: Final = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_MESSAGES_BYTES: Final = 32_000_000
_BATCH_PATH: Final = re.compile(r"^/v1/messages/batches/([^/]+)$")
_BATCH_ACTION: Final = re.compile(r"^/v1/messages/batches/([^/]+)/(cancel|results)$")


#: The body fields `messages.count_tokens` takes (the SDK's `MessageCountTokensParams`).
COUNT_TOKENS_PARAMS = frozenset(
    {
        "messages",
        "model",
        "cache_control",
        "output_config",
        "speed",
        "system",
        "thinking",
        "tool_choice",
        "tools",
        "user_profile_id",
        "workspace_id",
    }
)


@frozen(kw_only=True)
class BatchView:
    """A read-only snapshot of one simulated batch, for tests."""

    id: str
    processing_status: str
    created_at: float
    expires_at: float
    ended_at: float | None
    cancel_initiated_at: float | None
    custom_ids: tuple[str, ...]
    attempts: tuple[int, ...]
    request_counts: Mapping[str, int]
    #: each request's `params` as the create sent them, in `custom_ids` order
    params: tuple[Any, ...]
    deleted: bool
    results: tuple[dict[str, Any], ...] | None


@attrs.define
class _Batch:
    id: str
    seq: int
    created_at: float
    expires_at: float
    custom_ids: tuple[str, ...]
    params: tuple[object, ...]
    attempts: tuple[int, ...]
    status: str = "in_progress"
    cancel_initiated_at: float | None = None
    ended_at: float | None = None
    results: tuple[dict[str, Any], ...] | None = None
    counts: dict[str, int] = attrs.field(factory=dict)
    deleted: bool = False
    result_fetches: int = 0
    #: the request count (a lazy batch keeps no per-request tuple: `Scenario.lazy_batches`)
    n: int = 0
    lazy: bool = False
    #: when and how a lazy batch's unprocessed requests were cut (`expired` or `canceled`)
    cut: tuple[float, str] = (math.inf, "expired")

    def view(self, spilled: tuple[Any, ...] | None = None) -> BatchView:
        """A snapshot; a lazy batch's `(custom_ids, params, attempts, results)` come in `spilled`."""
        custom_ids, params, attempts, results = spilled or (
            self.custom_ids,
            self.params,
            self.attempts,
            self.results,
        )
        return BatchView(
            id=self.id,
            processing_status=self.status,
            created_at=self.created_at,
            expires_at=self.expires_at,
            ended_at=self.ended_at,
            cancel_initiated_at=self.cancel_initiated_at,
            custom_ids=custom_ids,
            attempts=attempts,
            request_counts=dict(self.counts_json()),
            deleted=self.deleted,
            results=results,
            params=params,
        )

    def counts_json(self) -> dict[str, int]:
        if self.status != "ended":
            return {
                "processing": self.n,
                "succeeded": 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            }
        return {"processing": 0, **self.counts}


class Simulator:
    """A deterministic, in-memory Anthropic Messages + Message Batches API."""

    def __init__(self, scenario: Scenario | None = None, *, clock: Callable[[], float] = time.time) -> None:
        self.scenario = scenario or Scenario()
        self.clock = clock
        self._lock = threading.RLock()
        self._log: list[LogEntry] = []
        self._batches: dict[str, _Batch] = {}
        self._submissions: Counter[str] = Counter()
        self._sync_attempts: Counter[str] = Counter()
        self._cache = PromptCache(self.scenario.min_cacheable_tokens)
        s = self.scenario
        self._limiter = RateLimiter.create(
            s.rpm_limit, s.itpm_limit, s.otpm_limit, s.advertised_otpm, clock()
        )
        self._n_requests = 0
        self._n_messages = 0
        self._n_creates = 0
        self._billed: list[tuple[str, dict[str, Any]]] = []
        self._billed_models: list[str] = []  # the model of each entry of `_billed`
        #: The OpenAI wire (Chat Completions, Files, Batches, served models) on the same port.
        self.openai = OpenAISide(self)
        #: Where lazy batches keep their requests (`Scenario.lazy_batches`).
        self._spill = Spill() if self.scenario.lazy_batches else None

    # ------------------------------------------------------------------ queries for tests
    @property
    def log(self) -> tuple[LogEntry, ...]:
        with self._lock:
            return tuple(self._log)

    @property
    def billed(self) -> tuple[tuple[str, dict[str, Any]], ...]:
        """`(route, usage)` of every answer the simulated API billed: each sync message answered, each
        batch request that produced a message (billed when its batch ends, fetched or not)."""
        with self._lock:
            return tuple(self._billed)

    @property
    def billed_by_model(self) -> tuple[tuple[str, str, dict[str, Any]], ...]:
        """`(model, route, usage)` of every answer billed (`billed`, with the model each was asked of)."""
        with self._lock:
            return tuple((m, r, u) for m, (r, u) in zip(self._billed_models, self._billed, strict=True))

    @property
    def batches(self) -> tuple[BatchView, ...]:
        """Every batch ever created (deleted ones included), oldest first."""
        with self._lock:
            self._advance(self.clock())
            return tuple(self._view(b) for b in self._batches.values())

    def batch(self, batch_id: str) -> BatchView:
        with self._lock:
            self._advance(self.clock())
            return self._view(self._batches[batch_id])

    def submitted_custom_ids(self) -> tuple[str, ...]:
        """Every custom_id included in a created batch, in submission order, with repeats."""
        with self._lock:
            return tuple(cid for b in self._batches.values() for cid in self._view(b).custom_ids)

    def _view(self, b: _Batch) -> BatchView:
        if not b.lazy:
            return b.view()
        assert self._spill is not None
        packed = self._spill.get(b.seq)
        results = None
        if b.status == "ended":
            body = b"".join(self._lazy_lines(b))
            results = tuple(orjson.loads(line) for line in body.splitlines())
        return b.view(
            (
                tuple(r[0] for r in packed.rows),
                tuple(packed.params(r) for r in packed.rows),
                tuple(r[1] for r in packed.rows),
                results,
            )
        )

    def requests(self, method: str | None = None, path: str | None = None) -> tuple[LogEntry, ...]:
        """Log entries filtered by method and/or exact path."""
        return tuple(
            e for e in self.log if (method is None or e.method == method) and (path is None or e.path == path)
        )

    def message_requests(self) -> tuple[LogEntry, ...]:
        return self.requests("POST", "/v1/messages")

    # ------------------------------------------------------------------ entry point
    def handle(self, request: SimRequest) -> SimResponse:
        if request.path == "/_sim/stats":  # for a bench whose simulator runs in another process
            with self._lock:
                stats = {"requests": self._n_requests, "batches": len(self._batches)}
            return SimResponse(status=200, headers=(("content-type", "application/json"),), body=dumps(stats))
        with self._lock:
            now = self.clock()
            self._n_requests += 1
            rid = make_id("req_011", self.scenario.seed, "req", self._n_requests)
            if is_openai_path(path := _api_path(request.path), request):
                response, entry = self.openai.handle(request, path, now, rid)
                self._log.append(entry)
                return response
            self._advance(now)
            ctx = _Ctx(request, rid, now)
            response = self._route(ctx)
            headers = (
                ("request-id", rid),
                ("anthropic-organization-id", "00000000-0000-4000-8000-000000000000"),
                *response.headers,
            )
            if response.header("content-type") is None:
                headers = (("content-type", "application/json"), *headers)
            response = attrs.evolve(response, headers=headers)
            path = _api_path(request.path)
            self._log.append(
                LogEntry(
                    time=now,
                    method=request.method,
                    path=path,
                    status=0 if response.drop else response.status,
                    request_id=rid,
                    fault=ctx.fault,
                    batch_id=ctx.batch_id,
                    custom_ids=ctx.custom_ids,
                    digest=ctx.digest,
                    stream=ctx.stream,
                )
            )
            return response

    # ------------------------------------------------------------------ routing
    def _route(self, ctx: _Ctx) -> SimResponse:
        auth = self._authenticate(ctx)
        if auth is not None:
            return auth
        method, path = ctx.request.method.upper(), _api_path(ctx.request.path)
        if path == "/v1/messages" and method == "POST":
            return self._messages(ctx)
        if path == "/v1/messages/count_tokens" and method == "POST":
            return self._count_tokens(ctx)
        if path == "/v1/messages/batches":
            if method == "POST":
                return self._create_batch(ctx)
            if method == "GET":
                return self._list_batches(ctx)
        if m := _BATCH_PATH.match(path):
            if method == "GET":
                return self._retrieve(ctx, m.group(1))
            if method == "DELETE":
                return self._delete(ctx, m.group(1))
        if m := _BATCH_ACTION.match(path):
            if m.group(2) == "cancel" and method == "POST":
                return self._cancel(ctx, m.group(1))
            if m.group(2) == "results" and method == "GET":
                return self._results(ctx, m.group(1))
        return ctx.error("not_found_error", f"Not found: {method} {path}")

    @property
    def _hint(self) -> float | None:
        return self.scenario.error_retry_after_ms

    def _authenticate(self, ctx: _Ctx) -> SimResponse | None:
        key = ctx.request.header("x-api-key")
        auth = ctx.request.header("authorization")
        if key is None and auth is not None and auth.lower().startswith("bearer "):
            key = auth[7:].strip()
        s = self.scenario
        if not key:
            return ctx.error("authentication_error", "x-api-key header is required")
        if key == "sk-bad" or s.reject_all_keys or (s.valid_keys is not None and key not in s.valid_keys):
            return ctx.error("authentication_error", "invalid x-api-key")
        return None

    # ------------------------------------------------------------------ messages
    def _messages(self, ctx: _Ctx) -> SimResponse:
        s = self.scenario
        self._n_messages += 1
        number = self._n_messages
        if len(ctx.request.body) > MAX_MESSAGES_BYTES:
            return ctx.error("request_too_large", "Request exceeds the maximum allowed size")
        params = ctx.json_body()
        if params is None:
            return ctx.error("invalid_request_error", "Request body is not valid JSON")
        # `stream: true` is served as server-sent events (the same message, event by event).
        stream = ctx.stream = isinstance(params, dict) and params.pop("stream", None) is True
        problem = answers.validate_params(params)
        if problem is not None:
            return ctx.error("invalid_request_error", problem)
        ctx.digest = answers.content_digest(params)
        if params["model"] not in s.models:
            return ctx.error("not_found_error", f"model: {params['model']}")
        if (refused := self._account_refuses(ctx, "messages")) is not None:
            return refused
        if problem := answers.thinking_type_problem(params, _thinking(params)[1]):
            return ctx.error("invalid_request_error", problem)
        fault = dict(s.sync_faults).get(number) or draw(s.sync_fault_mix, s.seed, "sync-fault", number)
        if fault is not None:
            ctx.fault = fault
            return self._sync_fault(ctx, fault)
        plan = self._cache.plan(params, ctx.now)
        refused = self._limiter.check(plan.input_tokens + plan.creation_tokens, ctx.now)
        if refused is not None:
            which, wait = refused
            ctx.fault = "rate_limited"
            return self._rate_limited(
                ctx, f"This request would exceed your organization's rate limit of {which} per minute", wait
            )
        self._sync_attempts[ctx.digest] += 1
        forced = answers.forced_outcome(params, self._sync_attempts[ctx.digest])
        if forced == "invalid_request":
            return ctx.error("invalid_request_error", "messages: simulated invalid request")
        if forced == "context_overflow":
            return ctx.error("invalid_request_error", answers.context_overflow_message(params))
        if forced == "api_error":
            return ctx.error("api_error", "Internal server error", hint_ms=self._hint)
        if forced == "overloaded_error":
            return ctx.error("overloaded_error", "Overloaded", hint_ms=self._hint)
        if forced == "rate_limit_error":
            return self._rate_limited(ctx, "Simulated rate limit", s.retry_after)
        self._cache.commit(plan, ctx.now)
        message = self._message(
            params, plan.usage(), forced == "max_tokens", "standard", number, refuse=forced == "refusal"
        )
        self._limiter.charge(plan.input_tokens + plan.creation_tokens, message["usage"]["output_tokens"])
        self._billed.append(("sync", message["usage"]))
        self._billed_models.append(str(params["model"]))
        if stream:
            return ctx.sse(message, extra=self._ratelimit_headers(ctx))
        return ctx.ok(message, extra=self._ratelimit_headers(ctx))

    def _ratelimit_headers(self, ctx: _Ctx) -> list[tuple[str, str]]:
        return self._limiter.headers(ctx.now) if self.scenario.ratelimit_headers else []

    def _sync_fault(self, ctx: _Ctx, fault: str) -> SimResponse:
        if fault == "drop":
            return SimResponse(status=0, drop=True)
        if fault == "429":
            return self._rate_limited(ctx, "Simulated rate limit", self.scenario.retry_after)
        if fault == "529":
            return ctx.error("overloaded_error", "Overloaded", hint_ms=self._hint)
        if fault == "ramp":
            message = "This request would exceed your organization's ramp limit; retry after the wait given"
            return self._rate_limited(ctx, message, self.scenario.retry_after, "ramp_limit_exceeded")
        return ctx.error("api_error", "Internal server error", hint_ms=self._hint)

    def _account_refuses(self, ctx: _Ctx, where: str) -> SimResponse | None:
        """The account state's error, where the scenario says it answers (None: the account is fine).
        A spend limit's 429 carries no retry-after: waiting does not help."""
        s = self.scenario
        if s.account_state is None or where not in s.account_state_where:
            return None
        error_type, code, message = ACCOUNT_STATES[s.account_state]
        ctx.fault = s.account_state
        return ctx.error(error_type, message, error_code=code)

    def _rate_limited(
        self, ctx: _Ctx, message: str, wait: float, error_code: str | None = None
    ) -> SimResponse:
        s = self.scenario
        headers = [("retry-after", str(max(1, math.ceil(wait))))]
        if s.send_retry_after_ms:
            ms = wait * 1000
            if s.max_retry_after_ms is not None:
                ms = min(ms, s.max_retry_after_ms)
            headers.append(("retry-after-ms", f"{max(ms, 1.0):.0f}"))
        headers += self._ratelimit_headers(ctx)
        return ctx.error("rate_limit_error", message, extra=headers, error_code=error_code)

    def _message(
        self,
        params: Mapping[str, Any],
        usage: dict[str, Any],
        truncate: bool,
        tier: str,
        *salt: object,
        refuse: bool = False,
    ) -> dict[str, Any]:
        s = self.scenario
        reply = answers.answer(
            params,
            seed=s.seed,
            truncate=truncate,
            score_weights=dict(s.score_weights),
            unparseable_rate=s.unparseable_rate,
            thinks=answers.thinking_on(params, _thinking(params)[0]),
            out_of_range_rate=s.out_of_range_rate,
        )
        if s.position_bias or s.sample_spread or "Assistant A's Answer]" in answers.last_user_text(params):
            reply = sim_designs.shape(
                reply,
                params,
                seed=s.seed,
                position_bias=s.position_bias,
                sample_spread=s.sample_spread,
                salt=salt,
            )
        if s.self_preference:
            reply = selfpref.bias(reply, params, seed=s.seed, preference=dict(s.self_preference))
        content: list[dict[str, Any]] = []
        if reply.thinking is not None:  # the thinking block comes first, before the text
            sig = make_id("sig_", s.seed, "thinking", tier, *salt)
            content.append({"type": "thinking", "thinking": reply.thinking, "signature": sig})
        if reply.text or reply.thinking is None:
            content.append({"type": "text", "text": reply.text, "citations": None})
        stop_reason, stop_details, output_tokens = reply.stop_reason, None, reply.output_tokens
        if refuse or (
            s.refusal_rate > 0
            and unit_float(s.seed, "refusal", answers.content_digest(params)) < s.refusal_rate
        ):
            # A refusal: a normal answer (billed), stopped by the refusal, empty or partial.
            partial = reply.text[: max(1, len(reply.text) // 3)] if s.refusal_partial else ""
            content = [{"type": "text", "text": partial, "citations": None}] if partial else []
            output_tokens = answers.tokens_of_text(partial) if partial else 1
            stop_reason = "refusal"
            category = s.refusal_category
            stop_details = {
                "type": "refusal",
                "category": category,
                "explanation": None if category is None else f"This request was declined ({category}).",
            }
        return {
            "id": make_id("msg_01", s.seed, "msg", tier, *salt),
            "type": "message",
            "role": "assistant",
            "model": params["model"],
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "stop_details": stop_details,
            "container": None,
            "usage": {
                **usage,
                "output_tokens": output_tokens,
                "output_tokens_details": {"thinking_tokens": reply.thinking_tokens}
                if reply.thinking and stop_reason != "refusal"
                else None,
                "server_tool_use": None,
                "service_tier": tier,
                "inference_geo": None,
            },
        }

    def _count_tokens(self, ctx: _Ctx) -> SimResponse:
        params = ctx.json_body()
        if not isinstance(params, dict) or not isinstance(params.get("messages"), list):
            return ctx.error("invalid_request_error", "messages: Field required")
        if "model" not in params:
            return ctx.error("invalid_request_error", "model: Field required")
        # the SDK's `MessageCountTokensParams`: no max_tokens, no stream, no metadata, ...
        extra = sorted(set(params) - COUNT_TOKENS_PARAMS)
        if extra:
            return ctx.error("invalid_request_error", f"{extra[0]}: Extra inputs are not permitted")
        if params.get("model") not in self.scenario.models:
            return ctx.error("not_found_error", f"model: {params.get('model')}")
        return ctx.ok({"input_tokens": answers.count_input_tokens(params)})

    # ------------------------------------------------------------------ batches
    def _create_batch(self, ctx: _Ctx) -> SimResponse:
        s = self.scenario
        self._n_creates += 1
        fault = dict(s.create_faults).get(self._n_creates)
        ctx.fault = fault
        if len(ctx.request.body) > s.max_batch_bytes:
            return ctx.error(
                "request_too_large",
                f"Request exceeds the maximum allowed number of bytes ({s.max_batch_bytes}).",
            )
        if s.body_timeout_above is not None and len(ctx.request.body) > s.body_timeout_above:
            ctx.fault = "request_body_timeout"
            message = "The request body was not received in time. Send a smaller body, or send it faster."
            return ctx.error("invalid_request_error", message, error_code="request_body_timeout")
        if (refused := self._account_refuses(ctx, "creates")) is not None:
            return refused
        if fault == "500":
            return ctx.error("api_error", "Internal server error", hint_ms=self._hint)
        if fault == "429":
            return self._rate_limited(ctx, "Simulated batch rate limit", s.retry_after)
        if fault == "drop":
            return SimResponse(status=0, drop=True)
        body = ctx.json_body()
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list):
            return ctx.error("invalid_request_error", "requests: Field required")
        if not requests:
            return ctx.error("invalid_request_error", "requests: List should have at least 1 item")
        if len(requests) > s.max_batch_requests:
            return ctx.error(
                "invalid_request_error",
                f"requests: List should have at most {s.max_batch_requests} items",
            )
        n = len(requests)
        seen: set[str] = set()
        for i, item in enumerate(requests):
            if not isinstance(item, dict) or not isinstance(item.get("params"), dict):
                return ctx.error("invalid_request_error", f"requests.{i}.params: Field required")
            cid = item.get("custom_id")
            if not isinstance(cid, str) or not CUSTOM_ID_RE.match(cid):
                return ctx.error(
                    "invalid_request_error",
                    f"requests.{i}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'",
                )
            if cid in seen:
                return ctx.error(
                    "invalid_request_error",
                    f"requests.{i}.custom_id: duplicate custom_id {cid!r} in this batch",
                )
            seen.add(cid)
        seq = len(self._batches) + 1
        batch_id = make_id("msgbatch_01", s.seed, "batch", seq)
        tally: Counter[str] = Counter()
        if self._spill is not None:  # kept on disk, not in memory
            lazy = self._spill.submit([item["custom_id"] for item in requests])
            packed, tally = pack(
                requests, lazy, lambda p, cid, attempt: self._outcome(p, cid, attempt, batch_id)
            )
            self._spill.put(seq, packed)
            del packed
            custom_ids: tuple[str, ...] = ()
            params: tuple[object, ...] = ()
            attempts: tuple[int, ...] = ()
        else:
            custom_ids = tuple(item["custom_id"] for item in requests)
            params = tuple(item["params"] for item in requests)
            counted = []
            for cid in custom_ids:
                self._submissions[cid] += 1
                counted.append(self._submissions[cid])
            attempts = tuple(counted)
        del seen, requests, body
        batch = _Batch(
            id=batch_id,
            seq=seq,
            created_at=ctx.now,
            expires_at=ctx.now + s.expires_after,
            custom_ids=custom_ids,
            params=params,
            attempts=attempts,
            n=n,
            lazy=self._spill is not None,
            counts=dict(tally) if self._spill is not None else {},
        )
        self._batches[batch.id] = batch
        ctx.batch_id, ctx.custom_ids = batch.id, custom_ids
        if fault == "persist_then_500":
            return ctx.error("api_error", "Internal server error", hint_ms=self._hint)
        if fault == "persist_then_drop":
            return SimResponse(status=0, drop=True)
        if fault == "persist_then_stall":
            return SimResponse(status=0, drop=True, stall=s.create_stall_seconds)
        return ctx.ok(self._batch_json(batch, ctx))

    def _batch_json(self, b: _Batch, ctx: _Ctx) -> dict[str, Any]:
        ended = b.status == "ended"
        return {
            "id": b.id,
            "type": "message_batch",
            "processing_status": b.status,
            "request_counts": b.counts_json(),
            "created_at": rfc3339(b.created_at),
            "expires_at": rfc3339(b.expires_at),
            "ended_at": rfc3339(b.ended_at) if b.ended_at is not None else None,
            "cancel_initiated_at": (
                rfc3339(b.cancel_initiated_at) if b.cancel_initiated_at is not None else None
            ),
            "archived_at": None,
            "results_url": (f"{ctx.request.origin}/v1/messages/batches/{b.id}/results" if ended else None),
        }

    def _find(self, ctx: _Ctx, batch_id: str) -> _Batch | SimResponse:
        ctx.batch_id = batch_id
        b = self._batches.get(batch_id)
        if b is None or b.deleted:
            return ctx.error("not_found_error", f"Message batch {batch_id} not found")
        return b

    def _retrieve(self, ctx: _Ctx, batch_id: str) -> SimResponse:
        b = self._find(ctx, batch_id)
        return b if isinstance(b, SimResponse) else ctx.ok(self._batch_json(b, ctx))

    def _list_batches(self, ctx: _Ctx) -> SimResponse:
        raw_limit = ctx.request.param("limit")
        try:
            limit = 20 if raw_limit is None else int(raw_limit)
        except ValueError:
            return ctx.error("invalid_request_error", "limit: Input should be a valid integer")
        if not 1 <= limit <= 1000:
            return ctx.error("invalid_request_error", "limit: Input should be between 1 and 1000")
        live = sorted(
            (b for b in self._batches.values() if not b.deleted),
            key=lambda b: (b.created_at, b.seq),
            reverse=True,
        )
        ids = [b.id for b in live]
        after, before = ctx.request.param("after_id"), ctx.request.param("before_id")
        if after is not None and before is not None:
            return ctx.error("invalid_request_error", "Use only one of after_id and before_id")
        if after is not None:
            if after not in ids:
                return ctx.error("invalid_request_error", f"after_id: unknown id {after}")
            rest = live[ids.index(after) + 1 :]
            page, has_more = rest[:limit], len(rest) > limit
        elif before is not None:
            if before not in ids:
                return ctx.error("invalid_request_error", f"before_id: unknown id {before}")
            rest = live[: ids.index(before)]
            page, has_more = rest[-limit:], len(rest) > limit
        else:
            page, has_more = live[:limit], len(live) > limit
        return ctx.ok(
            {
                "data": [self._batch_json(b, ctx) for b in page],
                "has_more": has_more,
                "first_id": page[0].id if page else None,
                "last_id": page[-1].id if page else None,
            }
        )

    def _cancel(self, ctx: _Ctx, batch_id: str) -> SimResponse:
        b = self._find(ctx, batch_id)
        if isinstance(b, SimResponse):
            return b
        if b.status == "ended":
            return ctx.error("invalid_request_error", f"Message batch {batch_id} has already ended")
        if b.status == "in_progress":
            b.status = "canceling"
            b.cancel_initiated_at = ctx.now
        return ctx.ok(self._batch_json(b, ctx))

    def _delete(self, ctx: _Ctx, batch_id: str) -> SimResponse:
        b = self._find(ctx, batch_id)
        if isinstance(b, SimResponse):
            return b
        if b.status != "ended":
            return ctx.error(
                "invalid_request_error",
                f"Message batch {batch_id} is still processing; cancel it before deleting it",
            )
        b.deleted = True
        return ctx.ok({"id": b.id, "type": "message_batch_deleted"})

    def _results(self, ctx: _Ctx, batch_id: str) -> SimResponse:
        s = self.scenario
        b = self._find(ctx, batch_id)
        if isinstance(b, SimResponse):
            return b
        if b.status != "ended" or (b.results is None and not b.lazy):
            return ctx.error("invalid_request_error", f"Message batch {batch_id} has not finished processing")
        b.result_fetches += 1
        if b.lazy:  # made line by line as the client reads them (a cut: the first lines, then closed)
            cut_lines = s.results_drop_after_lines if b.result_fetches == 1 else None
            if cut_lines is not None and cut_lines < b.n:
                ctx.fault = "results_cut"
            else:
                cut_lines = None
            return SimResponse(
                status=200,
                headers=(("content-type", "application/binary"),),
                chunks=self._lazy_lines(b, cut_lines),
                cut_after=None if cut_lines is None else 0,
                pace=(max(1, s.results_chunk_lines), s.results_line_delay),
            )
        lines = [orjson.dumps(r) + b"\n" for r in b.results]
        body = b"".join(lines)
        cut = None
        if (
            s.results_drop_after_lines is not None
            and b.result_fetches == 1
            and s.results_drop_after_lines < len(lines)
        ):
            cut = sum(len(x) for x in lines[: s.results_drop_after_lines])
            ctx.fault = "results_cut"
        return SimResponse(
            status=200,
            headers=(("content-type", "application/binary"),),
            body=body,
            cut_after=cut,
            pace=(max(1, s.results_chunk_lines), s.results_line_delay),
        )

    # ------------------------------------------------------------------ batch processing
    def _advance(self, now: float) -> None:
        s = self.scenario
        for b in self._batches.values():
            if b.status == "ended":
                continue
            end = b.created_at + self._latency(b)
            end = math.inf if s.never_end else min(end, b.expires_at)
            cut_at, cut_kind = end, "expired"
            if b.cancel_initiated_at is not None:
                cancel_end = b.cancel_initiated_at + s.cancel_seconds
                if cancel_end < end:
                    end, cut_at, cut_kind = cancel_end, b.cancel_initiated_at, "canceled"
            if now >= end:
                self._finish(b, end, cut_at, cut_kind)

    def _latency(self, b: _Batch) -> float:
        """The batch's latency under the current scenario: `batch_seconds`, or its seeded draw."""
        s = self.scenario
        u = unit_float(s.seed, "latency", b.id)
        return latency_at(s.batch_latency, s.batch_seconds, s.batch_latency_shape, u)

    def _finish(self, b: _Batch, end: float, cut_at: float, cut_kind: str) -> None:
        if b.lazy:
            self._finish_lazy(b, end, cut_at, cut_kind)
            return
        s = self.scenario
        n, seconds = len(b.custom_ids), self._latency(b)
        if seconds <= 0 or cut_at >= b.created_at + seconds:
            done = n  # ran to completion (compared directly: (c + d) - c can round below d)
        else:
            done = min(n, math.floor(n * (cut_at - b.created_at) / seconds))
        order = sorted(range(n), key=lambda i: digest_int(s.seed, b.id, "order", b.custom_ids[i]))
        processed = set(order[:done])
        results: dict[int, dict[str, Any]] = {}
        for i in order:
            cid = b.custom_ids[i]
            if i not in processed:
                results[i] = {"custom_id": cid, "result": {"type": cut_kind}}
            else:
                results[i] = {"custom_id": cid, "result": self._batch_result(b, i, end)}
        shuffled = list(range(n))
        random.Random(digest_int(s.seed, b.id, "shuffle")).shuffle(shuffled)
        b.results = tuple(results[i] for i in shuffled)
        tally = Counter(r["result"]["type"] for r in b.results)
        b.counts = {k: tally.get(k, 0) for k in ("succeeded", "errored", "canceled", "expired")}
        b.status = "ended"
        b.ended_at = end

    def _finish_lazy(self, b: _Batch, end: float, cut_at: float, cut_kind: str) -> None:
        """A lazy batch ends: its outcomes were counted at its create; a batch cut short reads its
        requests back to count those processed before the cut."""
        b.status, b.ended_at, b.cut = "ended", end, (cut_at, cut_kind)
        tally = Counter(b.counts)  # as if every request were processed
        if not self._ran_out(b):
            assert self._spill is not None
            packed = self._spill.get(b.seq)
            processed = self._processed(b, packed)
            tally = Counter(
                (("succeeded" if isinstance(r[4], str) else r[4]["type"]) if processed(i) else cut_kind)
                for i, r in enumerate(packed.rows)
            )
        b.counts = {k: tally.get(k, 0) for k in ("succeeded", "errored", "canceled", "expired")}

    def _ran_out(self, b: _Batch) -> bool:
        """Whether a lazy batch processed every request before its cut."""
        seconds = self._latency(b)
        return seconds <= 0 or b.cut[0] >= b.created_at + seconds

    def _processed(self, b: _Batch, packed: Packed) -> Callable[[int], bool]:
        """Whether each request (by index) was processed before the batch's cut."""
        if self._ran_out(b):  # compared directly: (c + d) - c can round below d
            return lambda i: True
        s = self.scenario
        done = min(b.n, math.floor(b.n * (b.cut[0] - b.created_at) / self._latency(b)))
        rows = packed.rows
        order = sorted(range(b.n), key=lambda i: digest_int(s.seed, b.id, "order", rows[i][0]))
        return set(order[:done]).__contains__

    def _lazy_lines(self, b: _Batch, limit: int | None = None) -> Iterator[bytes]:
        """A lazy batch's results body, made a piece at a time (its first `limit` lines only)."""
        s = self.scenario
        assert self._spill is not None and b.ended_at is not None
        packed = self._spill.get(b.seq)
        shuffled = list(range(b.n))
        random.Random(digest_int(s.seed, b.id, "shuffle")).shuffle(shuffled)
        yield from result_lines(
            packed,
            shuffled,
            self._processed(b, packed),
            b.cut[1],
            seed=s.seed,
            batch_id=b.id,
            cache=PromptCache(s.min_cacheable_tokens),
            message=self._message,
            now=b.ended_at,
            variants_ok=not (
                s.position_bias
                or s.sample_spread
                or s.self_preference
                or s.refusal_rate
                or s.unparseable_rate
                or s.out_of_range_rate
            ),
            limit=limit,
        )

    def _batch_result(self, b: _Batch, i: int, now: float) -> dict[str, Any]:
        params, cid = b.params[i], b.custom_ids[i]
        outcome = self._outcome(params, cid, b.attempts[i], b.id)
        if isinstance(outcome, dict):
            return outcome
        assert isinstance(params, dict)
        plan = self._cache.plan(params, now)
        self._cache.commit(plan, now)
        message = self._message(
            params, plan.usage(), outcome == "max_tokens", "batch", b.id, cid, refuse=outcome == "refusal"
        )
        self._billed.append(("batch", message["usage"]))
        self._billed_models.append(str(params["model"]))
        return {"type": "succeeded", "message": message}

    def _outcome(self, params: object, cid: str, attempt: int, batch_id: str) -> str | dict[str, Any]:
        """A processed batch request's outcome: the kind of message it gets (`succeeded`, `max_tokens`,
        `refusal`), or its result when it gets none (errored, canceled, expired)."""
        s = self.scenario

        def errored(error_type: str, message: str, code: str | None = None) -> dict[str, Any]:
            rid = make_id("req_011", s.seed, "batchreq", batch_id, cid)
            return {"type": "errored", "error": error_body(error_type, message, rid, code)}

        problem = answers.validate_params(params)
        if problem is not None:
            return errored("invalid_request_error", problem)
        assert isinstance(params, dict)
        if params["model"] not in s.models:
            return errored("not_found_error", f"model: {params['model']}")
        if s.account_state is not None and "lines" in s.account_state_where:
            error_type, code, message = ACCOUNT_STATES[s.account_state]
            return errored(error_type, message, code)
        if problem := answers.thinking_type_problem(params, _thinking(params)[1]):
            return errored("invalid_request_error", problem)
        outcome = answers.forced_outcome(params, attempt)
        if outcome is None and attempt <= s.batch_failures:
            outcome = "api_error"
        if outcome is None:
            mix = s.batch_mix if attempt == 1 else s.batch_retry_mix
            outcome = draw(mix, s.seed, "batch", cid, attempt) or "succeeded"
        match outcome:
            case "succeeded" | "max_tokens" | "refusal":
                return outcome
            case "invalid_request":
                return errored("invalid_request_error", "messages: simulated invalid request")
            case "context_overflow":
                return errored("invalid_request_error", answers.context_overflow_message(params))
            case "api_error":
                return errored("api_error", "Internal server error")
            case "overloaded_error":
                return errored("overloaded_error", "Overloaded")
            case "rate_limit_error":
                return errored("rate_limit_error", "Rate limited")
            case "canceled" | "expired":
                return {"type": outcome}
        raise AssertionError(f"unknown outcome {outcome!r}")


def _api_path(path: str) -> str:
    """The `/v1/...` part of a path, so a base-path prefix in the client's base_url is accepted."""
    i = path.find("/v1/")
    path = path if i < 0 else path[i:]
    return path.rstrip("/") or "/"


@attrs.define
class _Ctx(RequestCtx):
    """A Messages API request's scratch: it may ask for a stream."""

    stream: bool = False

    def sse(self, message: dict[str, Any], *, extra: list[tuple[str, str]] | None = None) -> SimResponse:
        """`message` as the Messages API streams it: start, one text block in deltas, delta, stop."""
        texts = [b["text"] for b in message["content"] if b["type"] == "text"]
        text = "".join(texts)
        start = {
            **message,
            "content": [],
            "stop_reason": None,
            "usage": {**message["usage"], "output_tokens": 1},
        }
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": "", "citations": None}}),
            ("ping", {"type": "ping"}),
        ] if texts else [("message_start", {"type": "message_start", "message": start})]  # fmt: skip
        for i in range(0, len(text), 64):
            delta = {"type": "text_delta", "text": text[i : i + 64]}
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
            )
        usage = {k: message["usage"].get(k) for k in ("output_tokens", "input_tokens",
                 "cache_creation_input_tokens", "cache_read_input_tokens")}  # fmt: skip
        delta = {
            "stop_reason": message["stop_reason"],
            "stop_sequence": None,
            "stop_details": message.get("stop_details"),
            "container": None,
        }
        if texts:
            events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        events += [
            ("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}),
            ("message_stop", {"type": "message_stop"}),
        ]
        body = b"".join(
            b"event: " + name.encode() + b"\ndata: " + dumps(data) + b"\n\n" for name, data in events
        )
        headers = (("content-type", "text/event-stream"), *(extra or ()))
        return SimResponse(status=200, headers=headers, body=body)

    def error(
        self,
        error_type: str,
        message: str,
        *,
        extra: list[tuple[str, str]] | None = None,
        hint_ms: float | None = None,
        error_code: str | None = None,
    ) -> SimResponse:
        if hint_ms is not None and ERROR_STATUS[error_type] >= 500:
            extra = [*(extra or ()), ("retry-after-ms", f"{hint_ms:g}")]
        return SimResponse(
            status=ERROR_STATUS[error_type],
            headers=tuple(extra or ()),
            body=dumps(error_body(error_type, message, self.request_id, error_code)),
        )


_ANY_THINKING: Final = (False, frozenset(answers.THINKING_TYPES))


def _thinking(params: Mapping[str, Any]) -> tuple[bool, frozenset[str]]:
    """How the request's model thinks (`scenario.MODEL_THINKING`); a model a scenario adds beyond it
    thinks only when asked, and takes every type."""
    return MODEL_THINKING.get(str(params.get("model")), _ANY_THINKING)
