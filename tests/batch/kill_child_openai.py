"""A child process for the OpenAI kill -9 tests: runs the batch path through the OpenAI batch port
(`OpenAIBatchPort`, the real `openai` SDK) against a simulator over loopback HTTP.

Usage: python -m tests.batch.kill_child_openai BASE_URL STATE_DIR N WRITE_GROUP [TEXT_EVERY_OTHER]
(`TEXT_EVERY_OTHER`: appended to every other item's text, e.g. `[[sim:context]]` for error-file lines.)
Exit status: 0 when every item is final, 3 when some are pending, 4 on a fatal stop.
"""

from __future__ import annotations

import asyncio
import random
import sys

import openai
import orjson

from adapters.checkpoint.store import Store
from adapters.providers.openai.batch_port import OpenAIBatchPort
from adapters.run.batch import BatchSettings, run_batch
from adapters.run.clock import RealClock
from judgecore.decide.polling import PollPolicy
from judgecore.job.parsing import parse_items
from judgecore.wire.requests import RequestTemplate, build_requests

TEMPLATE = RequestTemplate.build(
    model="openai:gpt-5-mini", max_tokens=256, rubric="Grade 1-10.", path="batch"
)


def job(n: int, every_other: str = ""):  # type: ignore[no-untyped-def]
    lines = [
        orjson.dumps(
            {"id": f"q{i}", "prompt": f"answer {i}" + (f" {every_other}" if every_other and i % 2 else "")}
        )
        for i in range(n)
    ]
    items = parse_items(lines)
    return items, tuple(build_requests(items, TEMPLATE))


async def main(base_url: str, state: str, n: int, group: int, every_other: str) -> int:
    items, requests = job(n, every_other)
    store = Store.open(state)
    store.bind_job(
        {"model": TEMPLATE.model, "max_tokens": TEMPLATE.max_tokens},
        ((r.custom_id, r.item_id, "d-" + r.custom_id[-8:]) for r in requests),
    )
    store.keep_messages(zip(items.custom_ids, items.messages(), strict=True))
    client = openai.AsyncOpenAI(api_key="sk-sim", base_url=f"{base_url}/v1", max_retries=2)
    async with client:
        result = await run_batch(
            store=store,
            requests=requests,
            template=TEMPLATE,
            api=OpenAIBatchPort.over(client),
            clock=RealClock(),
            settings=BatchSettings(poll=PollPolicy(interval=0.1, grace=5.0), write_group=group),
            emit=lambda e: print(e, file=sys.stderr),
            rng=random.Random(),
        )
    store.close()
    if result.fatal:
        return 4
    return 3 if result.pending else 0


if __name__ == "__main__":
    url, state_dir, count, write_group = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    extra = sys.argv[5] if len(sys.argv) > 5 else ""
    sys.exit(asyncio.run(main(url, state_dir, count, write_group, extra)))
