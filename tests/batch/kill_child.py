"""A child process for the kill -9 test: runs the batch path against a simulator over loopback HTTP.

Usage: python -m tests.batch.kill_child BASE_URL STATE_DIR N WRITE_GROUP
Exit status: 0 when every item is final, 3 when some are pending, 4 on a fatal stop.
"""

from __future__ import annotations

import asyncio
import random
import sys

import anthropic

from adapters.checkpoint.store import Store
from adapters.providers.anthropic.batch_api import AnthropicBatchApi
from adapters.run.batch import BatchSettings, run_batch
from adapters.run.clock import RealClock
from judgecore.decide.polling import PollPolicy
from tests.batch.fakes import TEMPLATE, bind, make_requests


async def main(base_url: str, state: str, n: int, group: int) -> int:
    requests = make_requests(n)
    store = Store.open(state)
    bind(store, requests)
    client = anthropic.AsyncAnthropic(api_key="sk-sim", base_url=base_url, max_retries=2)
    async with client:
        result = await run_batch(
            store=store,
            requests=requests,
            template=TEMPLATE,
            api=AnthropicBatchApi(client),
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
    sys.exit(asyncio.run(main(url, state_dir, count, write_group)))
