"""OpenAI's batch route as the batch port (`adapters.providers.port.BatchPort`): `OpenAIBatchPort` over
`OpenAIBatchApi` (the wire), so the batch shell talks to it as to Anthropic's.

What it adds to the wire: the sub-batch's input file made from the job's requests (`upload`: the
`CreateBody`'s requests, template and checkpointed messages become Chat Completions batch lines,
`adapters.providers.openai.body`, streamed, never held whole), every batch as the core's
`BatchSnapshot` (a `failed` one `refused`), and `discard` (the input, output and error files of a
harvested batch deleted, unless `keep_files`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator

import openai

from adapters.providers.openai.batch import OpenAIBatchApi, UploadBody
from adapters.providers.openai.body import OpenAITemplate
from adapters.providers.openai.sync_template import openai_template
from adapters.providers.port import BatchMeta, CreateBody, Found, Upload
from judgecore.decide.polling import BatchSnapshot
from judgecore.results.outcomes import Outcome
from judgecore.wire.chunking import CHUNK_BYTES


def upload_body(body: CreateBody) -> UploadBody:
    """A sub-batch's JSONL input file from its create body's parts: sized by one pass over its lines,
    then streamed afresh on each read (the messages read back from the checkpoint as it goes)."""
    template = openai_template(body.template)
    size = sum(map(len, _lines(template, body)))
    return UploadBody(lambda: _pieces(template, body), size)


def _lines(template: OpenAITemplate, body: CreateBody) -> Iterator[bytes]:
    requests = body.requests
    for r in requests:
        if r.model is not None and r.model != body.template.model:
            raise ValueError(
                f"one OpenAI batch file names one model: {r.model!r} is not {body.template.model!r}"
            )
    yield from template.lines(((r.custom_id, r.max_tokens) for r in requests), body.messages)


def _pieces(template: OpenAITemplate, body: CreateBody) -> Iterable[bytes]:
    """The lines' pieces joined into chunks of about `CHUNK_BYTES` (what the upload reads)."""
    held: list[bytes] = []
    size = 0
    for piece in _lines(template, body):
        held.append(piece)
        size += len(piece)
        if size >= CHUNK_BYTES:
            yield b"".join(held)
            held, size = [], 0
    if held:
        yield b"".join(held)


class OpenAIBatchPort:
    """The batch port over `OpenAIBatchApi` (see the module docstring). `keep_files`: `discard` leaves
    a harvested batch's files on the account (`--keep-files`)."""

    def __init__(self, api: OpenAIBatchApi, *, keep_files: bool = False) -> None:
        self.api = api
        self.keep_files = keep_files

    @classmethod
    def over(cls, client: openai.AsyncOpenAI, *, keep_files: bool = False) -> OpenAIBatchPort:
        return cls(OpenAIBatchApi(client), keep_files=keep_files)

    async def upload(self, body: CreateBody, meta: BatchMeta) -> Upload:
        return Upload(await self.api.upload(upload_body(body), meta))

    async def find_upload(self, meta: BatchMeta, since: float | None = None) -> Upload | None:
        found = await self.api.find_upload(meta, since)
        return None if found is None else Upload(found)

    async def create(self, upload: Upload, meta: BatchMeta) -> BatchSnapshot:
        assert upload.file_id is not None, "an OpenAI batch is made from an uploaded file"
        return (await self.api.create(upload.file_id, meta)).snapshot()

    async def find_batch(self, meta: BatchMeta, since: float | None = None) -> Found:
        found = await self.api.find_batch(meta, since)
        return Found(None if found is None else found.snapshot(), conclusive=True)

    async def retrieve(self, batch_id: str) -> BatchSnapshot:
        return (await self.api.retrieve(batch_id)).snapshot()

    async def list_recent(self) -> AsyncIterator[BatchSnapshot]:
        async for batch in self.api.list_recent():
            yield batch.snapshot()

    async def cancel(self, batch_id: str) -> BatchSnapshot:
        return (await self.api.cancel(batch_id)).snapshot()

    async def results(self, batch_id: str) -> AsyncIterator[list[tuple[str, Outcome]]]:
        async for pairs in self.api.results(batch_id):
            yield pairs

    async def discard(self, batch_id: str) -> None:
        if not self.keep_files:
            await self.api.discard(await self.api.retrieve(batch_id))


__all__ = ["OpenAIBatchPort", "upload_body"]
