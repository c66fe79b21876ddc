"""OpenAI's wire (and any OpenAI-compatible server's): Chat Completions, Files and the Batch API.

- `translate`, `body`, `schema`: pure (no SDK): OpenAI's answers, errors, headers and batches in the
  core's values; the request body and the batch input line; the strict structured-output schema.
- `sync_template`: the sync route's request template (what the sync run asks `params` of).
- `sync`: `OpenAIChatApi`, the sync port; `batch`: `OpenAIBatchApi`, the Files + Batch wire;
  `batch_port`: `OpenAIBatchPort`, that wire as `adapters.providers.port.BatchPort` (the JSONL input
  file made from the job's requests, every batch as the core's snapshot, files discarded). Only these
  three import the `openai` SDK, an optional extra: `missing_extra()` says what to install when it is
  absent. `connect` builds the client and the ports when a run connects (the one module that loads
  `sync`, `batch_port` and `sync_template`: the registry names a provider without loading them).
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Final

#: judgecore's caps of one sub-batch's input file (OpenAI's: 50,000 lines, 200 MB): what the registry
#: clamps `--max-batch-requests` / `--max-batch-bytes` to, and what `body` chunks by.
MAX_LINES: Final = 8_000
MAX_FILE_BYTES: Final = 190_000_000

#: What a plain install is told when an OpenAI or served judge is asked for.
INSTALL_HINT = "OpenAI and served judges need the openai extra: pip install 'judgecore[openai]'"


def missing_extra() -> str | None:
    """`INSTALL_HINT` when the `openai` SDK is not installed, else None (nothing is imported)."""
    return INSTALL_HINT if find_spec("openai") is None else None
