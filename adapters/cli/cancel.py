"""`judgecore cancel`: cancel a job's live batches, so an abandoned run stops costing money."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from adapters.checkpoint.statelock import StateLockedError
from adapters.checkpoint.store import Store
from adapters.cli.relaunch import command_line
from adapters.cli.status import _existing_state
from adapters.providers.registry import Provider, provider_of
from adapters.run.batch_cancel import CancelReport, cancel_job
from adapters.run.clock import RealClock
from adapters.run.lanes import lanes, legacy_batch_lane
from adapters.run.progress import PlainProgress, plural
from adapters.usage import EXIT_FATAL, EXIT_OK, EXIT_PENDING, UsageError
from judgecore.results.outcomes import RawResult, Status, classify


def cmd_cancel(ns: argparse.Namespace) -> int:

    _existing_state(ns.state)
    judges = _judges_of_job(ns.state)
    try:
        store = Store.open(ns.state, exclusive="cancel")  # not while a run uses the state dir
    except StateLockedError as exc:
        raise UsageError(str(exc)) from None
    try:
        if (legacy := legacy_batch_lane(judges)) is not None:  # a dir an earlier version wrote
            store.name_lanes(legacy)
        # each lane's batches are canceled through that lane's own provider (its key, its port)
        held = {r.lane for r in store.sub_batches(LIVE_STATES) if r.lane is not None}
        ports = []
        for lane in sorted(held):
            provider = _provider_of_lane(judges, lane)
            if provider.batch_port is not None:  # no batch route: nothing of its can be in a batch
                ports.append((lane, provider.batch_port(provider.client(os.environ), True)))
        report = CancelReport(())
        for lane, api in ports:
            got = asyncio.run(
                cancel_job(store=store, api=api, clock=RealClock(), emit=PlainProgress(), lane=lane)
            )
            report = CancelReport(report.canceled + got.canceled, report.failed + got.failed)
    finally:
        store.close()
    n = len(report.canceled)
    print(
        f"canceled {plural(n, 'live batch', 'live batches')}; a later run with --state {ns.state} resumes the rest",
        file=sys.stderr,
    )
    if not report.failed:
        return EXIT_OK
    return _not_canceled(ns, report.failed)


#: The sub-batch states `cancel_job` acts on.
LIVE_STATES = ("live", "stuck", "intent")


def _judges_of_job(state: Path) -> list[str]:
    """The job's judges as its manifest names them (its model, for a job of one judge; Anthropic's
    for a state dir with no manifest yet)."""
    store = Store.open_readonly(state)
    try:
        manifest = store.manifest or {}
    finally:
        store.close()
    return [str(j) for j in manifest.get("judges") or [manifest.get("model") or "claude"]]


def _provider_of_lane(judges: Sequence[str], lane: str) -> Provider:
    """The provider of a lane of the job (a lane no judge names: the provider it is named for)."""
    return provider_of(lanes(judges).get(lane, (lane,))[0])


def _not_canceled(ns: argparse.Namespace, failed: Sequence[tuple[str, RawResult]]) -> int:
    """The batches whose cancel failed keep running, billed as they finish: one error line, and exit 4
    when the API refused the key or could not be reached (fix it first), 3 when the failure was
    transient (the same command again cancels them)."""

    fatal = any(raw.status is None or classify(raw).status is Status.FATAL for _, raw in failed)
    ids = ", ".join(batch_id for batch_id, _ in failed[:3]) + (
        f" and {len(failed) - 3:,} more" if len(failed) > 3 else ""
    )
    keeps = "keeps" if len(failed) == 1 else "keep"
    fix = "fix the key or the endpoint (its provider's API key and base URL), then " if fatal else ""
    print(
        f"error: {plural(len(failed), 'live batch', 'live batches')} could not be canceled and {keeps} "
        f"running, billed as {'it finishes' if len(failed) == 1 else 'they finish'} ({ids}); "
        f"{fix}cancel again with:\n  {command_line(['cancel', '--state', str(ns.state)])}",
        file=sys.stderr,
    )
    return EXIT_FATAL if fatal else EXIT_PENDING
