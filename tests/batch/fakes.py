"""A recording fake of the Message Batches API, driven by a FakeClock, for the batch path's unit tests.

It keeps its batches (their custom_ids, creation time, end time) and answers the five `BatchApi` calls;
every call is appended to `calls`, every create's exact bytes to `bodies`. Faults are scripted per create
call (1-based): "500", "429", "persist_then_500", "drop", "persist_then_drop", "401", "400", "crash"
(persists, then raises `Crash`: a kill between the create and the write of its id).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable, Sequence

import attrs
import orjson

from adapters.checkpoint.store import Store
from adapters.providers.anthropic.batch_api import BatchApiError, CreateBody, body_of
from adapters.providers.port import BatchMeta, OneCallCreate, Upload
from adapters.run.clock import FakeClock
from judgecore.decide.polling import BatchSnapshot, RequestCounts
from judgecore.job.parsing import parse_items
from judgecore.results.outcomes import Outcome, RawResult, Usage, classify
from judgecore.wire.requests import Request, RequestTemplate, build_requests

# result kind for a (custom_id, attempt) -> RawResult
Outcomer = Callable[[str, int], RawResult]


class Crash(BaseException):
    """The process dies here (not an Exception: nothing may catch it)."""


def ok(_cid: str, _attempt: int) -> RawResult:
    return RawResult(
        kind="succeeded",
        text="score: 7",
        stop_reason="end_turn",
        model="claude-opus-4-8",
        usage=Usage(input_tokens=10, output_tokens=3),
    )


RESULTS: dict[str, RawResult] = {
    "succeeded": ok("", 1),
    "max_tokens": attrs.evolve(ok("", 1), stop_reason="max_tokens"),
    "invalid_request": RawResult(kind="errored", error_type="invalid_request_error", message="messages: bad"),
    "context_overflow": RawResult(
        kind="errored", error_type="invalid_request_error", message="prompt is too long: 300000 tokens"
    ),
    "api_error": RawResult(kind="errored", error_type="api_error", message="Internal server error"),
    "overloaded_error": RawResult(kind="errored", error_type="overloaded_error", message="Overloaded"),
    "rate_limit_error": RawResult(kind="errored", error_type="rate_limit_error", message="Rate limited"),
    "auth": RawResult(kind="errored", error_type="authentication_error", message="invalid x-api-key"),
    "canceled": RawResult(kind="canceled"),
    "expired": RawResult(kind="expired"),
}


@attrs.define
class FakeBatch:
    id: str
    custom_ids: tuple[str, ...]
    attempts: tuple[int, ...]
    created_at: float
    expires_at: float
    end_at: float | None
    cancel_at: float | None = None
    fetches: int = 0


def _http(status: int, error_type: str, message: str, retry_after: float | None = None) -> BatchApiError:
    return BatchApiError(
        RawResult(
            kind="http_error", status=status, error_type=error_type, message=message, retry_after=retry_after
        )
    )


class FakeBatchApi(OneCallCreate):
    """A recording, scriptable `BatchApi`."""

    def __init__(
        self,
        clock: FakeClock,
        *,
        outcome: Outcomer = ok,
        batch_seconds: float | None = 120.0,
        expires_after: float = 86_400.0,
        create_faults: dict[int, str] | None = None,
        max_body_bytes: int | None = None,
        shuffle: bool = True,
        extra_lines: Sequence[tuple[str, RawResult]] = (),
        duplicate_every: int = 0,
        cut_after_lines: int | None = None,
        cut_fetches: int = 1,
        retrieve_fails: bool = False,
        crash_after_lines: int | None = None,
    ) -> None:
        self.clock = clock
        self.outcome = outcome
        self.batch_seconds = batch_seconds
        self.expires_after = expires_after
        self.create_faults = dict(create_faults or {})
        self.max_body_bytes = max_body_bytes
        self.shuffle = shuffle
        self.extra_lines = tuple(extra_lines)
        self.duplicate_every = duplicate_every
        self.cut_after_lines = cut_after_lines
        self.cut_fetches = cut_fetches
        self.retrieve_fails = retrieve_fails
        self.crash_after_lines = crash_after_lines
        self.batches: dict[str, FakeBatch] = {}
        self.calls: list[tuple[str, str]] = []
        self.bodies: list[bytes] = []
        self.submissions: dict[str, int] = {}
        self._creates = 0

    # -- what tests assert on ---------------------------------------------------------------

    def sent_ids(self) -> list[str]:
        """Every custom_id in a batch that exists server-side, with repeats (what the user pays for)."""
        return [c for b in self.batches.values() for c in b.custom_ids]

    def count(self, name: str) -> int:
        return sum(1 for c, _ in self.calls if c == name)

    # -- the port -------------------------------------------------------------------------------

    def _status(self, b: FakeBatch) -> str:
        now = self.clock.now()
        if b.cancel_at is not None:
            return "ended" if now >= b.cancel_at + 1.0 else "canceling"
        if b.end_at is not None and now >= b.end_at:
            return "ended"
        return "in_progress"

    def _snap(self, b: FakeBatch) -> BatchSnapshot:
        status = self._status(b)
        n = len(b.custom_ids)
        counts = RequestCounts(succeeded=n) if status == "ended" else RequestCounts(processing=n)
        return BatchSnapshot(
            id=b.id, status=status, created_at=b.created_at, expires_at=b.expires_at, counts=counts
        )  # type: ignore[arg-type]

    def _persist(self, body: bytes) -> FakeBatch:
        reqs = orjson.loads(body)["requests"]
        cids = tuple(r["custom_id"] for r in reqs)
        attempts = []
        for c in cids:
            self.submissions[c] = self.submissions.get(c, 0) + 1
            attempts.append(self.submissions[c])
        now = self.clock.now()
        b = FakeBatch(
            id=f"msgbatch_{len(self.batches) + 1:04d}",
            custom_ids=cids,
            attempts=tuple(attempts),
            created_at=now,
            expires_at=now + self.expires_after,
            end_at=None if self.batch_seconds is None else now + self.batch_seconds,
        )
        self.batches[b.id] = b
        return b

    async def create(self, create: CreateBody | Upload, meta: BatchMeta | None = None) -> BatchSnapshot:
        create = body_of(create)
        body = b"".join([chunk async for chunk in create])  # read as the SDK sends it
        assert create.size == len(body), "the body is not the length its Content-Length says"
        self._creates += 1
        self.calls.append(("create", str(self._creates)))
        self.bodies.append(body)
        fault = self.create_faults.get(self._creates)
        if self.max_body_bytes is not None and len(body) > self.max_body_bytes:
            raise _http(413, "request_too_large", "Request exceeds the maximum allowed number of bytes")
        match fault:
            case "500":
                raise _http(500, "api_error", "Internal server error")
            case "429":
                raise _http(429, "rate_limit_error", "slow down", retry_after=2.0)
            case "401":
                raise _http(401, "authentication_error", "invalid x-api-key")
            case "400":
                raise _http(400, "invalid_request_error", "requests: bad")
            case "drop":
                raise BatchApiError(RawResult(kind="connection_error", message="Server disconnected"))
        b = self._persist(body)
        match fault:
            case "persist_then_500":
                raise _http(500, "api_error", "Internal server error")
            case "persist_then_drop":
                raise BatchApiError(RawResult(kind="connection_error", message="Server disconnected"))
            case "crash":
                raise Crash()
        return self._snap(b)

    async def retrieve(self, batch_id: str) -> BatchSnapshot:
        self.calls.append(("retrieve", batch_id))
        if self.retrieve_fails:
            raise BatchApiError(RawResult(kind="connection_error", message="Connection error."))
        b = self.batches.get(batch_id)
        if b is None:
            raise _http(404, "not_found_error", f"{batch_id} not found")
        return self._snap(b)

    async def list_recent(self) -> AsyncIterator[BatchSnapshot]:
        self.calls.append(("list", ""))
        for b in sorted(self.batches.values(), key=lambda b: b.created_at, reverse=True):
            yield self._snap(b)

    async def cancel(self, batch_id: str) -> BatchSnapshot:
        self.calls.append(("cancel", batch_id))
        b = self.batches[batch_id]
        if self._status(b) == "ended":
            raise _http(400, "invalid_request_error", f"{batch_id} has already ended")
        b.cancel_at = self.clock.now()
        return self._snap(b)

    async def results(self, batch_id: str) -> AsyncIterator[list[tuple[str, Outcome]]]:
        self.calls.append(("results", batch_id))
        b = self.batches[batch_id]
        status = self._status(b)
        if status != "ended":
            raise BatchApiError(RawResult(kind="connection_error", message="No results_url: not ended"))
        b.fetches += 1
        order = list(range(len(b.custom_ids)))
        if self.shuffle:
            random.Random(batch_id).shuffle(order)
        canceled = b.cancel_at is not None
        for n, i in enumerate(order):
            if (
                self.cut_after_lines is not None
                and b.fetches <= self.cut_fetches
                and n == self.cut_after_lines
            ):
                raise BatchApiError(RawResult(kind="connection_error", message="peer closed connection"))
            if self.crash_after_lines is not None and n == self.crash_after_lines:
                raise Crash()
            cid = b.custom_ids[i]
            raw = RESULTS["canceled"] if canceled else self.outcome(cid, b.attempts[i])
            yield [(cid, classify(raw))]  # a list of one line: a cut lands between any two lines
            if self.duplicate_every and n % self.duplicate_every == 0:
                yield [
                    (cid, classify(RESULTS["api_error"]))
                ]  # a contradicting duplicate: must not be trusted
        for cid, raw in self.extra_lines:
            yield [(cid, classify(raw))]


# -- job helpers ------------------------------------------------------------------------------------

TEMPLATE = RequestTemplate.build(model="claude-opus-4-8", max_tokens=256, rubric="Grade 1-10.", path="batch")


#: the messages of every request `make_requests` made, by custom_id (the requests hold none: `bind`
#: keeps them in the checkpoint, where the batch shell reads them back)
MESSAGES: dict[str, bytes] = {}


def make_requests(n: int, *, prefix: str = "q", template: RequestTemplate = TEMPLATE) -> tuple[Request, ...]:
    lines = [orjson.dumps({"id": f"{prefix}{i}", "prompt": f"answer {i}"}) for i in range(n)]
    items = parse_items(lines)
    MESSAGES.update(zip(items.custom_ids, items.messages(), strict=True))
    return tuple(build_requests(items, template))


def messages_of(requests: Sequence[Request]) -> list[bytes]:
    """The messages of requests `make_requests` made, in order (what the encoder is given)."""
    return [MESSAGES[r.custom_id] for r in requests]


def bind(store: Store, requests: Sequence[Request]) -> None:
    """Bind the job of `requests` and keep their messages, as a run does before it sends."""
    store.bind_job(
        {"model": TEMPLATE.model, "max_tokens": TEMPLATE.max_tokens},
        ((r.custom_id, r.item_id, "d-" + r.custom_id[-8:]) for r in requests),
    )
    store.keep_messages((r.custom_id, MESSAGES[r.custom_id]) for r in requests)


def by_kind(table: dict[str, str], default: str = "succeeded") -> Outcomer:
    """An outcomer from `{custom_id: kind}` on the first attempt; later attempts succeed."""

    def outcome(cid: str, attempt: int) -> RawResult:
        return RESULTS[table.get(cid, default)] if attempt == 1 else RESULTS["succeeded"]

    return outcome
