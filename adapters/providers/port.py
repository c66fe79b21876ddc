"""The batch port: the smallest set of calls both providers' batch APIs fit, what `adapters.run.batch`
talks to (it never branches on a provider).

A batch is made in two steps, each with a finder for the run that comes back after a kill:

    intent ──► upload(body, meta) -> Upload ──► [file id recorded] ──► create(upload, meta) -> batch ──► record
               after a kill: find_upload(meta, since)                   after a kill: find_batch(meta, since)

- OpenAI (`adapters.providers.openai.batch.OpenAIBatchApi`): the upload is `POST /v1/files` (the
  sub-batch's JSONL, named `judgecore-<job>-<sub>.jsonl`), its file id durable before the create; the
  create names the job and sub-batch in its `metadata`, so `find_batch` is exact.
- Anthropic (`adapters.providers.anthropic.batch_api.AnthropicBatchApi`): one call makes a batch. Its
  upload sends nothing and hands the body on (`Upload.file_id` None: nothing to record), `find_upload`
  finds nothing, `find_batch` cannot tell (`Found.conclusive` False): the batch shell reconciles by
  listing, as it always has.

No SDK is imported here (an OpenAI job never loads Anthropic's, nor the reverse): `BatchApiError` (a failed call, as a `RawResult`) and `CreateBody` (a
sub-batch's requests, template and messages) are what both ports share.

Every batch is the core's `BatchSnapshot` (a batch that failed validation after its create carries
`refused`: none of it ran). `results(batch_id)` streams `(custom_id, Outcome)`, a list of them at a time
(the lines of each piece of the file as it is read: a harvest takes them without an async step per
line; OpenAI: its output file, then its error file); `discard(batch_id)` frees what a harvested batch left on the provider (OpenAI:
its input, output and error files; Anthropic: nothing).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol

import attrs
import httpx2

from judgecore.decide.polling import BatchSnapshot
from judgecore.decide.ratelimit import RateLimitReading
from judgecore.results.outcomes import Outcome, RawResult
from judgecore.values import frozen
from judgecore.wire.chunking import body_size
from judgecore.wire.encoding import create_body, create_body_chunks
from judgecore.wire.requests import Request, RequestTemplate, sizes_of

#: The transport errors that mean no connection was ever made (the endpoint named, on either wire).
NEVER_CONNECTED = (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.UnsupportedProtocol, httpx2.InvalidURL)


class BatchApiError(Exception):
    """A batch API call failed; `raw` is the failure as the core sees it."""

    def __init__(self, raw: RawResult) -> None:
        super().__init__(f"{raw.kind} {raw.status or ''} {raw.error_type or ''}: {raw.message or ''}")
        self.raw = raw


async def result_lines(
    chunks: AsyncIterator[bytes], translate: Callable[[bytes], tuple[str, Outcome]]
) -> AsyncIterator[list[tuple[str, Outcome]]]:
    """A results file read as `chunks` of bytes, as its lines' `translate`s, one list per chunk (each
    port's `results`): the lines a chunk completes, blank ones skipped, the last one when the file
    ends. A line `translate` cannot read (`ValueError`: torn, not JSON) raises after the lines before
    it in its chunk are yielded, as a stream cut there would have given them."""
    rest = b""
    async for chunk in chunks:
        lines = (rest + chunk).split(b"\n") if rest else chunk.split(b"\n")
        rest = lines.pop()
        got: list[tuple[str, Outcome]] = []
        for line in lines:
            if line.strip():
                try:
                    got.append(translate(line))
                except ValueError:
                    if got:
                        yield got
                    raise
        if got:
            yield got
    if rest.strip():
        yield [translate(rest)]


def _body_size(body: CreateBody) -> int:
    return body_size(sizes_of(body.requests))


@frozen
class CreateBody:
    """What one sub-batch sends: its requests, the job's template and their messages. As Anthropic's
    create body, `{"requests":[...]}`: `size` bytes, made on demand, never held (OpenAI's upload makes
    its JSONL file from the same parts: `adapters.providers.openai.batch_port.upload_body`).

    `async for` (what the SDK sends) and `chunks()` yield it in pieces of about
    `judgecore.wire.chunking.CHUNK_BYTES`, each pass afresh; `bytes(body)` joins it whole (for a fake API).
    """

    requests: Sequence[Request] = attrs.field(repr=False)  # the SDK's debug log shows the repr
    template: RequestTemplate = attrs.field(repr=False)
    #: each request's serialized messages, in order, iterated afresh on each pass (the batch shell's
    #: are read back from the checkpoint a slice at a time: `adapters.files.checkpointed.CheckpointMessages`)
    messages: Iterable[bytes] = attrs.field(repr=False)
    size: int = attrs.field(default=attrs.Factory(_body_size, takes_self=True))
    #: the requests' custom_ids made already (a job's are made from their digests at each read, and the
    #: batch shell has made them for the intent); None: read from the requests
    custom_ids: Sequence[str] | None = attrs.field(default=None, repr=False, eq=False, kw_only=True)

    def chunks(self) -> Iterator[bytes]:
        return create_body_chunks(self.requests, self.template, self.messages, custom_ids=self.custom_ids)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks():
            yield chunk

    def __bytes__(self) -> bytes:
        return create_body(self.requests, self.template, self.messages)


@frozen
class BatchMeta:
    """Which job (a state dir's batch tag) and which of its sub-batches a file or a batch is."""

    job: str
    sub_batch: str

    @property
    def filename(self) -> str:
        return f"judgecore-{self.job}-{self.sub_batch}.jsonl"

    def metadata(self) -> dict[str, str]:
        return {JOB_KEY: self.job, SUB_BATCH_KEY: self.sub_batch}

    def names(self, metadata: Any) -> bool:
        """Whether a batch's `metadata` names this sub-batch."""
        return (
            isinstance(metadata, dict)
            and metadata.get(JOB_KEY) == self.job
            and metadata.get(SUB_BATCH_KEY) == self.sub_batch
        )


#: The metadata keys naming a batch's job and sub-batch.
JOB_KEY = "judgecore_job"
SUB_BATCH_KEY = "judgecore_sub_batch"


@frozen
class Upload:
    """What a create is made from: an uploaded file (`file_id`, recorded in the checkpoint before the
    create) or, for a provider whose create carries its body, the body itself (`file_id` None)."""

    file_id: str | None
    body: CreateBody | None = attrs.field(default=None, repr=False)


@frozen
class Found:
    """A finder's answer: the batch found (None: none), and whether the finder can tell at all (False:
    the provider names no batch; list and match instead)."""

    batch: BatchSnapshot | None
    conclusive: bool


class BatchPort(Protocol):
    """What the batch path needs from a provider's batch API (see the module docstring)."""

    async def upload(self, body: CreateBody, meta: BatchMeta) -> Upload: ...

    async def find_upload(self, meta: BatchMeta, since: float | None = None) -> Upload | None: ...

    async def create(self, upload: Upload, meta: BatchMeta) -> BatchSnapshot:
        """Make the batch once, no retry; the new batch."""
        ...

    async def find_batch(self, meta: BatchMeta, since: float | None = None) -> Found: ...

    async def retrieve(self, batch_id: str) -> BatchSnapshot: ...

    def list_recent(self) -> AsyncIterator[BatchSnapshot]:
        """The account's batches, newest first; the caller stops iterating when it has seen enough."""
        ...

    async def cancel(self, batch_id: str) -> BatchSnapshot: ...

    def results(self, batch_id: str) -> AsyncIterator[list[tuple[str, Outcome]]]:
        """The batch's result lines, in their order, a list of them at a time (never an empty one)."""
        ...

    async def discard(self, batch_id: str) -> None: ...


class OneCallCreate:
    """The port's upload half for a provider whose create carries its body (Anthropic's, a test's
    fake): nothing uploaded, nothing to find, no file to discard."""

    async def upload(self, body: CreateBody, meta: BatchMeta) -> Upload:
        return Upload(None, body)

    async def find_upload(self, meta: BatchMeta, since: float | None = None) -> Upload | None:
        return None

    async def find_batch(self, meta: BatchMeta, since: float | None = None) -> Found:
        return Found(None, conclusive=False)

    async def discard(self, batch_id: str) -> None:
        return None


#: A sync answer: the result, the rate-limit headers read with it, and the request id (if any).
Answer = tuple[RawResult, RateLimitReading, str | None]


class MessagesApi(Protocol):
    """What the sync path needs of a provider's sync API (`AnthropicMessagesApi`, `OpenAIChatApi`)."""

    async def create(self, params: dict[str, Any]) -> Answer: ...


__all__ = [
    "JOB_KEY",
    "NEVER_CONNECTED",
    "SUB_BATCH_KEY",
    "Answer",
    "BatchApiError",
    "BatchMeta",
    "BatchPort",
    "CreateBody",
    "Found",
    "MessagesApi",
    "OneCallCreate",
    "Upload",
    "result_lines",
]
