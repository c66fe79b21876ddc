"""The Message Batches port: the five calls the batch path makes, and their SDK implementation.

`AnthropicBatchApi` is Anthropic's `adapters.providers.port.BatchPort` (what `adapters.run.batch` talks
to; tests give it a recording fake) over an `AsyncAnthropic` client. This module is the edge: SDK objects and SDK exceptions
are translated here into core values (`BatchSnapshot`; `RawResult` through `adapters.providers.anthropic.sdk_results`, the
sync port's translation too; a results line's `Outcome` through the core's `line_outcome`), and never
cross into `judgecore`.
A failed call raises `BatchApiError` carrying the failure as a `RawResult` (`http_error` with status,
error type, message and retry-after; or `connection_error`).

Creates POST the exact bytes judgecore sized (so `--max-batch-bytes` is about the wire, not an
estimate), with the SDK's own retries off: a create that failed in transit may have made a batch, and
only the batch path, after reconciling, may decide to send it again. A create body (`CreateBody`) is
streamed: made from the requests' pieces as the socket takes it, under the exact `Content-Length`
the sizes give, so a create holds about `judgecore.wire.chunking.CHUNK_BYTES` of it at a time, never the
whole body (tens of MB for a sub-batch of 8,000 requests with a long rubric) nor a copy of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from datetime import datetime

import anthropic
import httpx2
from anthropic.types.messages import MessageBatch

from adapters.providers.anthropic.sdk_results import error_result, line_result, result_line
from adapters.providers.port import BatchApiError, BatchMeta, CreateBody, OneCallCreate, Upload, result_lines
from judgecore.decide.polling import BatchSnapshot, RequestCounts
from judgecore.results.outcomes import Outcome, RawResult
from judgecore.run.batch.batching import CREATE_DEADLINE

_CREATE_PATH = "/v1/messages/batches"
_READ = 1 << 16  # bytes read from a results file at a time


# -- translation at the edge --------------------------------------------------------------------


def _epoch(value: datetime | str | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value.timestamp()


def snapshot_from_sdk(batch: MessageBatch) -> BatchSnapshot:
    """A `BatchSnapshot` from the SDK's `MessageBatch` (times as epoch seconds)."""
    c = batch.request_counts
    counts = RequestCounts(
        processing=c.processing or 0,
        succeeded=c.succeeded or 0,
        errored=c.errored or 0,
        canceled=c.canceled or 0,
        expired=c.expired or 0,
    )
    created = _epoch(batch.created_at)
    expires = _epoch(batch.expires_at)
    return BatchSnapshot(
        id=batch.id,
        status=batch.processing_status,
        created_at=created if created is not None else 0.0,
        expires_at=expires if expires is not None else 0.0,
        counts=counts,
        ended_at=_epoch(batch.ended_at),
    )


#: A `RawResult` from one results line's `result` (the one translation, `adapters.providers.anthropic.sdk_results`).
raw_result_from_sdk = line_result


def raw_error_from_sdk(
    exc: BaseException, base_url: str | None = None, now: float | None = None
) -> RawResult:
    """The failure of one call as a `RawResult` (`adapters.providers.anthropic.sdk_results.error_result`): `http_error`
    with its status and error_code, or `connection_error` (`CONNECT_FAILED` naming `base_url` when no
    connection could be made)."""
    return error_result(exc, base_url=base_url, now=now)


# -- the SDK implementation ---------------------------------------------------------------------

_TRANSLATED = (anthropic.APIError,)


def body_of(upload: Upload | CreateBody) -> CreateBody:
    """The body a one-call create sends: the port's `Upload` holds it (a bare body is taken too)."""
    if isinstance(upload, Upload):
        assert upload.body is not None, "a one-call create is made from its body, not a file"
        return upload.body
    return upload


class AnthropicBatchApi(OneCallCreate):
    """The batch port over an `AsyncAnthropic` client (`adapters.providers.port`): its
    upload hands the body on, its finders leave adoption to the listing (`OneCallCreate`) (its base_url, key, timeouts and retry settings).

    Only creates have retries forced off; retrieve, list, cancel and results keep the client's (they are
    idempotent). `list_page` is the page size of the list endpoint. `create_deadline`: seconds a create
    call may take in all before it is given up as a failure that may have made a batch (the SDK's
    timeouts are per read or write, so a slow upload has no bound without it; the orphan window that
    reconciliation matches intents in assumes this one, `judgecore.run.batch.batching.CREATE_DEADLINE`).
    """

    def __init__(
        self,
        client: anthropic.AsyncAnthropic,
        *,
        list_page: int = 100,
        create_deadline: float = CREATE_DEADLINE,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self._list_page = list_page
        self._create_deadline = create_deadline
        self._now = now  # reads an HTTP-date retry-after against it

    @property
    def base_url(self) -> str:
        """The endpoint the client talks to (named when it cannot be reached)."""
        return str(self._client.base_url)

    def _error(self, exc: BaseException) -> BatchApiError:
        return BatchApiError(raw_error_from_sdk(exc, self.base_url, self._now()))

    async def create(self, upload: Upload | CreateBody, meta: BatchMeta | None = None) -> BatchSnapshot:
        body = body_of(upload)
        # Streamed under its exact length: h11 refuses a body that comes out longer or shorter than it,
        # and a Content-Length given keeps httpx from sending the body chunked.
        headers = {"Content-Type": "application/json", "Content-Length": str(body.size)}
        try:
            batch = await asyncio.wait_for(
                self._client.post(
                    _CREATE_PATH,
                    content=body,
                    cast_to=MessageBatch,
                    options={"max_retries": 0, "headers": headers},
                ),
                self._create_deadline,
            )
        except _TRANSLATED as exc:
            raise self._error(exc) from exc
        except TimeoutError as exc:  # may have made a batch: reconciled before any resend
            message = f"the create call took more than {self._create_deadline:g} s"
            raise BatchApiError(
                RawResult(kind="connection_error", error_type="timeout", message=message)
            ) from exc
        return snapshot_from_sdk(batch)

    async def retrieve(self, batch_id: str) -> BatchSnapshot:
        try:
            batch = await self._client.messages.batches.retrieve(batch_id)
        except _TRANSLATED as exc:
            raise self._error(exc) from exc
        return snapshot_from_sdk(batch)

    async def cancel(self, batch_id: str) -> BatchSnapshot:
        try:
            batch = await self._client.messages.batches.cancel(batch_id)
        except _TRANSLATED as exc:
            raise self._error(exc) from exc
        return snapshot_from_sdk(batch)

    async def list_recent(self) -> AsyncIterator[BatchSnapshot]:
        try:
            async for batch in self._client.messages.batches.list(limit=self._list_page):
                yield snapshot_from_sdk(batch)
        except _TRANSLATED as exc:
            raise self._error(exc) from exc

    async def results(self, batch_id: str) -> AsyncIterator[list[tuple[str, Outcome]]]:
        # The SDK's own `results` call (its retrieve for the results_url, auth, headers, retries) as a
        # streamed raw response: the body read in large chunks and split into lines here, each parsed
        # with orjson and translated by `result_line` straight to its `Outcome`, with no SDK model
        # built per line (the SDK's decoder reads 64 bytes at a time and validates a pydantic model
        # for every line). The lines of each chunk go out as one list: one async step a chunk.
        try:
            async with (
                self._client.messages.batches.with_streaming_response.results(batch_id) as response,
                contextlib.aclosing(result_lines(response.iter_bytes(_READ), result_line)) as stream,
            ):
                async for lines in stream:
                    yield lines
        except _TRANSLATED as exc:
            raise self._error(exc) from exc
        except (httpx2.HTTPError, ValueError) as exc:  # cut mid-stream; a torn last line
            raise self._error(exc) from exc
        except anthropic.AnthropicError as exc:  # "no results_url": not ended after all
            raise BatchApiError(RawResult(kind="connection_error", message=str(exc)[:500])) from exc
