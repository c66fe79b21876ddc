"""`judgecore cancel`: cancel a job's live batches, so an abandoned run stops costing money."""

from __future__ import annotations

import argparse
import os
import sys

from adapters.cli.status import _existing_state
from adapters.usage import EXIT_OK, UsageError


def cmd_cancel(ns: argparse.Namespace) -> int:
    import asyncio

    from adapters.batch import cancel_job
    from adapters.batch_api import AnthropicBatchApi
    from adapters.clock import RealClock
    from adapters.job import _default_client
    from adapters.progress import PlainProgress, plural
    from adapters.statelock import StateLockedError
    from adapters.store import Store

    _existing_state(ns.state)
    client = _default_client(os.environ)
    try:
        store = Store.open(ns.state, exclusive="cancel")  # not while a run uses the state dir
    except StateLockedError as exc:
        raise UsageError(str(exc)) from None
    try:
        canceled = asyncio.run(
            cancel_job(store=store, api=AnthropicBatchApi(client), clock=RealClock(), emit=PlainProgress())
        )
    finally:
        store.close()
    n = len(canceled)
    print(
        f"canceled {plural(n, 'live batch', 'live batches')}; a later run with --state {ns.state} resumes the rest",
        file=sys.stderr,
    )
    return EXIT_OK
