"""The batch port over OpenAI's Files + Batch API: `OpenAIBatchApi`, and the port both providers fit.

OpenAI makes a batch in two calls: upload the sub-batch's JSONL (`POST /v1/files`, `purpose: "batch"`),
then create the batch from the file (`POST /v1/batches`). The contract wants the intent durable before
the upload, the file id after it, the batch id after the create, so a run killed anywhere neither uploads
nor creates twice. The port therefore has one operation per call, and a finder per call for the run that
comes back after a kill, so that the batch shell checkpoints between any two:

    intent(meta) ──► upload(body, meta) -> file_id ──► create(file_id, meta) -> OpenAIBatch ──► record
                      after a kill: find_upload(meta)       after a kill: find_batch(meta)

`BatchMeta` (the job's key and the sub-batch's) names both: the uploaded file by its filename
(`judgecore-<job>-<sub>.jsonl`; a file carries no metadata), the batch by its `metadata`
(`{"judgecore_job", "judgecore_sub_batch"}`). An upload is a no-op to repeat only if it is found: a run
that finds no upload uploads again (an upload is free; only a batch is billed), one that finds its file
creates from it, one that finds its batch adopts it.

`adapters.providers.openai.batch_port.OpenAIBatchPort` fits this wire to the batch port both providers
share (`adapters.providers.port.BatchPort`), which the batch shell talks to.

Each call is sent once (the SDK's retries off for upload and create: a call that failed in transit may
have made a file or a batch, and only the batch shell, after the finders, may send it again; the reads
keep the client's retries). A failed call raises `adapters.providers.anthropic.batch_api.BatchApiError` carrying the failure
as a `RawResult` (the same translation as the sync route's: `adapters.providers.openai.translate`).

The upload is streamed: the body is made from its pieces as the socket takes it, under the exact
`Content-Length` (`UploadBody.size`), never held whole (the SDK hands a file object to httpx's multipart
encoder, which reads it 64 KiB at a time). Results are streamed too, from the output file then the error
file, a line at a time, each translated straight to its `Outcome` and matched by its `custom_id`.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any, Final

import attrs
import httpx2
import openai
import orjson

from adapters.providers.openai.body import CHAT_COMPLETIONS
from adapters.providers.openai.sync import connection_result, status_error_result
from adapters.providers.openai.translate import OpenAIBatch, batch_of, line_result
from adapters.providers.port import JOB_KEY, SUB_BATCH_KEY, BatchApiError, BatchMeta, result_lines
from judgecore.results.outcomes import Outcome, RawResult, classify
from judgecore.run.batch.batching import CREATE_DEADLINE
from judgecore.values import frozen

_READ: Final = 1 << 16  # bytes read from a results file at a time


@frozen
class UploadBody:
    """A sub-batch's input file, `size` bytes, made afresh by `chunks()` on each read, never held."""

    chunks: Callable[[], Iterable[bytes]] = attrs.field(repr=False)
    size: int

    def __bytes__(self) -> bytes:
        return b"".join(self.chunks())


class _BodyReader(io.RawIOBase):
    """A read-only file object over an `UploadBody`: what httpx's multipart encoder reads. It can tell
    its length (a seek to the end and back, which is all `peek_filelike_length` does) and rewind (a seek
    to 0 starts the pieces again); it holds one piece at a time."""

    def __init__(self, body: UploadBody) -> None:
        super().__init__()
        self._body = body
        self._pos = 0
        self._pieces: Iterator[bytes] = iter(())
        self._rest = b""
        self.seek(0)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        size = self._body.size
        target = offset if whence == io.SEEK_SET else size + offset if whence == io.SEEK_END else None
        if target == 0:
            self._pieces, self._rest, self._pos = iter(self._body.chunks()), b"", 0
        elif target == size:
            self._pieces, self._rest, self._pos = iter(()), b"", size
        elif target != self._pos:
            raise io.UnsupportedOperation("an upload body rewinds to its start or seeks to its end only")
        return self._pos

    def read(self, n: int | None = -1) -> bytes:
        want = self._body.size - self._pos if n is None or n < 0 else n
        held, have = [self._rest], len(self._rest)
        while have < want:  # pieces are joined once per read, never re-copied as they come
            piece = next(self._pieces, None)
            if piece is None:
                break
            held.append(piece)
            have += len(piece)
        out = held[0] if len(held) == 1 else b"".join(held)
        chunk, self._rest = out[:want], out[want:]
        self._pos += len(chunk)
        if not chunk and self._pos != self._body.size:
            raise ValueError(f"the upload body ended at {self._pos:,} bytes, not its {self._body.size:,}")
        return chunk

    def readinto(self, buffer: Any) -> int:
        chunk = self.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


def _plain(model: Any) -> Any:
    """An SDK model as plain JSON (what the translation reads)."""
    return model.to_dict() if hasattr(model, "to_dict") else model


class OpenAIBatchApi:
    """The batch port over `openai.AsyncOpenAI` (see the module docstring).

    `call_deadline`: seconds an upload or a create may take in all before it is given up as a failure
    that may have made its file or batch (the SDK's timeouts are per read or write). `list_page`: the
    page size of the list calls."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        *,
        list_page: int = 100,
        call_deadline: float = CREATE_DEADLINE,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self._once = client.with_options(max_retries=0)
        self._list_page = list_page
        self._deadline = call_deadline
        self._now = now

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    def _error(self, exc: BaseException) -> BatchApiError:
        if isinstance(exc, openai.APIStatusError):
            return BatchApiError(status_error_result(exc, self._now()))
        return BatchApiError(connection_result(exc, self.base_url, "OPENAI_BASE_URL"))

    async def _once_within(self, call: Any, what: str) -> Any:
        try:
            return await asyncio.wait_for(call, self._deadline)
        except (openai.APIError, httpx2.TransportError) as exc:
            raise self._error(exc) from exc
        except TimeoutError as exc:  # may have made it: found by the finders before any resend
            message = f"the {what} call took more than {self._deadline:g} s"
            raise BatchApiError(
                RawResult(kind="connection_error", error_type="timeout", message=message)
            ) from exc

    async def upload(self, body: UploadBody, meta: BatchMeta) -> str:
        """Upload one sub-batch's input file (`purpose: "batch"`), streamed, once; its file id."""
        reader = _BodyReader(body)
        file = await self._once_within(
            self._once.files.create(file=(meta.filename, reader, "application/jsonl"), purpose="batch"),
            "upload",
        )
        return str(file.id)

    async def find_upload(self, meta: BatchMeta, since: float | None = None) -> str | None:
        """The newest uploaded batch file of this sub-batch (by filename), created at or after `since`."""
        try:
            async for file in self._client.files.list(purpose="batch", order="desc", limit=self._list_page):
                if since is not None and file.created_at < since:
                    return None
                if file.filename == meta.filename:
                    return str(file.id)
        except (openai.APIError, httpx2.TransportError) as exc:
            raise self._error(exc) from exc
        return None

    async def create(self, file_id: str, meta: BatchMeta) -> OpenAIBatch:
        """Create the batch of an uploaded file (`completion_window: "24h"`), once; the new batch."""
        batch = await self._once_within(
            self._once.batches.create(
                input_file_id=file_id,
                endpoint=CHAT_COMPLETIONS,
                completion_window="24h",
                metadata=meta.metadata(),
            ),
            "create",
        )
        return batch_of(_plain(batch))

    async def find_batch(self, meta: BatchMeta, since: float | None = None) -> OpenAIBatch | None:
        """The newest batch of this sub-batch (by metadata), created at or after `since`, or None."""
        async for batch in self.list_recent():
            if since is not None and batch.created_at < since:
                return None
            if meta.names(batch.metadata):
                return batch
        return None

    async def list_recent(self) -> AsyncIterator[OpenAIBatch]:
        """The project's batches, newest first; the caller stops when it has seen enough."""
        try:
            async for batch in self._client.batches.list(limit=self._list_page):
                yield batch_of(_plain(batch))
        except (openai.APIError, httpx2.TransportError) as exc:
            raise self._error(exc) from exc

    async def retrieve(self, batch_id: str) -> OpenAIBatch:
        try:
            return batch_of(_plain(await self._client.batches.retrieve(batch_id)))
        except (openai.APIError, httpx2.TransportError) as exc:
            raise self._error(exc) from exc

    async def cancel(self, batch_id: str) -> OpenAIBatch:
        try:
            return batch_of(_plain(await self._client.batches.cancel(batch_id)))
        except (openai.APIError, httpx2.TransportError) as exc:
            raise self._error(exc) from exc

    async def results(self, batch: OpenAIBatch | str) -> AsyncIterator[list[tuple[str, Outcome]]]:
        """`(custom_id, Outcome)` of every line of an ended batch's output file, then its error file,
        streamed, a list of them (each chunk's lines) at a time; a line's meaning is `classify(translate.line_result(line))`. Given its id, the batch
        is retrieved first (for the files it names)."""
        if isinstance(batch, str):
            batch = await self.retrieve(batch)
        for file_id in batch.result_files:
            async for pairs in self._lines(file_id):
                yield pairs

    async def _lines(self, file_id: str) -> AsyncIterator[list[tuple[str, Outcome]]]:
        try:
            async with (
                self._client.files.with_streaming_response.content(file_id) as response,
                contextlib.aclosing(result_lines(response.iter_bytes(_READ), _outcome)) as stream,
            ):
                async for lines in stream:
                    yield lines
        except (openai.APIError, httpx2.HTTPError, ValueError) as exc:  # cut mid-stream; a torn line
            raise self._error(exc) from exc

    async def delete_file(self, file_id: str) -> bool:
        """Delete one file (an uploaded input, a harvested output or error file); False if already gone."""
        try:
            await self._client.files.delete(file_id)
        except openai.NotFoundError:
            return False
        except (openai.APIError, httpx2.TransportError) as exc:
            raise self._error(exc) from exc
        return True

    async def discard(self, batch: OpenAIBatch) -> None:
        """Delete a harvested batch's files: its input, output and error files."""
        for file_id in (batch.input_file_id, *batch.result_files):
            if file_id:
                await self.delete_file(file_id)


def _outcome(line: bytes) -> tuple[str, Outcome]:
    custom_id, raw = line_result(orjson.loads(line))
    return custom_id, classify(raw)


__all__ = ["JOB_KEY", "SUB_BATCH_KEY", "BatchMeta", "OpenAIBatchApi", "UploadBody"]
