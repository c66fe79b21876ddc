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

Every batch is the core's `BatchSnapshot` (a batch that failed validation after its create carries
`refused`: none of it ran). `results(batch_id)` streams `(custom_id, Outcome)` (OpenAI: its output file,
then its error file); `discard(batch_id)` frees what a harvested batch left on the provider (OpenAI:
its input, output and error files; Anthropic: nothing).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from judgecore import BatchSnapshot, Outcome

if TYPE_CHECKING:
    from adapters.providers.anthropic.batch_api import CreateBody


@attrs.frozen
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


@attrs.frozen
class Upload:
    """What a create is made from: an uploaded file (`file_id`, recorded in the checkpoint before the
    create) or, for a provider whose create carries its body, the body itself (`file_id` None)."""

    file_id: str | None
    body: CreateBody | None = attrs.field(default=None, repr=False)


@attrs.frozen
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

    def results(self, batch_id: str) -> AsyncIterator[tuple[str, Outcome]]: ...

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


__all__ = ["JOB_KEY", "SUB_BATCH_KEY", "BatchMeta", "BatchPort", "Found", "OneCallCreate", "Upload"]
