"""Panels across families: one job whose judges are Anthropic's, OpenAI's and served models, each
judge's requests sent on its own provider's client and sync port (one lane on its batch route when
the job's size says batch), into one checkpoint, under one budget.

A job's requests are grouped by *lane*: a provider, and for a served model its server (`lane_of`). A
job of one lane runs exactly as before (`adapters.run.operations`). A job of several:

- `sync_part`: one sync run per lane, each with its own client, port, request template, pacing
  (each provider's own headers; a served model's adaptive concurrency) and warm-up. Without a
  `--budget` the lanes run at once; with one, one after the other, each starting from the spend
  the checkpoint holds (one cap, never overrun by two runs reserving against it at once).
- `batch_part`: one lane takes the batch route (`lanes.batch_lane`: Anthropic's when the panel has
  Claude judges; one batch machine per checkpoint), the others their sync routes at the same time (a
  batch's wait is long: the sync lanes are done meanwhile).

Every answer is recorded by custom_id in the one checkpoint, so a run killed anywhere and resumed
sends only what no lane recorded; the panel's verdict is folded from the checkpoint as for any panel.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence, Set
from functools import partial
from typing import Any

import attrs

from adapters.providers.registry import provider_of
from adapters.run.events import Notice
from adapters.run.lanes import batch_lane, lane_of, lanes
from adapters.run.operations import (
    Ports,
    requests_of,
    run_batch_part,
    run_sync_part,
)
from judgecore.run.job._vocab import BatchRan, RunSync, SyncRan
from judgecore.wire.requests import Request


def _split(p: Ports, ids: Set[str]) -> dict[str, list[Request]]:
    """The requests of `ids` by lane (a request without its own model asks the job's)."""
    default = p.settings.request_model
    out: dict[str, list[Request]] = {}
    for r in requests_of(p.job, ids):
        out.setdefault(lane_of(r.model or default), []).append(r)
    return out


def mixed(p: Ports) -> bool:
    return len(lanes(p.settings.models)) > 1


async def _sync_lane(
    p: Ports, lane: str, requests: list[Request], action: RunSync, probed_lane: str
) -> SyncRan:
    """One lane's sync run over its requests (`run_sync_part` on the lane's client)."""
    model = requests[0].model or p.settings.request_model
    names = ", ".join(sorted({r.model or p.settings.request_model for r in requests}))
    p.emit(
        Notice(
            level="info",
            message=f"{provider_of(model).name} lane ({names}): {len(requests):,} requests, sync",
        )
    )
    return await run_sync_part(p, action, lane=(requests, model, p.clients[lane]), probed=lane == probed_lane)


async def _all(p: Ports, runs: list[Callable[[], Awaitable[Any]]]) -> list[Any]:
    """The lanes' runs: at once without a budget, one after the other with one (see the docstring)."""
    if p.settings.budget is None:
        return list(await asyncio.gather(*(run() for run in runs)))
    return [await run() for run in runs]


def _merged(ran: Sequence[SyncRan | BatchRan]) -> tuple[str | None, float | None]:
    fatal = next((r.fatal for r in ran if r.fatal), None)
    budgets = [r.budget for r in ran if r.budget is not None]
    return fatal, (max(budgets) if budgets else None)


async def sync_part(p: Ports, action: RunSync) -> SyncRan:
    """The sync route over the action's ids: one run per lane (see the module docstring)."""
    if not mixed(p):
        return await run_sync_part(p, action)
    probed_lane = lane_of(p.settings.request_model)
    by_lane = _split(p, action.ids)
    runs = [partial(_sync_lane, p, lane, reqs, action, probed_lane) for lane, reqs in by_lane.items()]
    ran: list[SyncRan] = await _all(p, runs)
    fatal, budget = _merged(ran)
    rate = next((r.cache_hit_rate for r in ran if r.cache_hit_rate is not None), None)
    return SyncRan(fatal=fatal, cache_hit_rate=rate, budget=budget)


async def batch_part(p: Ports, ids: Set[str], *, switched: bool = False) -> BatchRan:
    """The batch route over `ids`: the lanes with a batch route on it, the others on their sync
    routes, at the same time."""
    if not mixed(p):
        return await run_batch_part(p, ids, switched=switched)
    by_lane = _split(p, ids)
    default = p.settings.request_model
    chosen = batch_lane(p.settings.models)  # one batch machine per checkpoint: the others go sync meanwhile
    batched = {chosen} & set(by_lane)
    runs: list[Callable[[], Awaitable[Any]]] = []
    if batched:
        (lane,) = batched
        batch_ids = frozenset(r.custom_id for r in by_lane[lane])
        on_batch = attrs.evolve(p, client=p.clients[lane])
        model = by_lane[lane][0].model or default
        runs.append(partial(run_batch_part, on_batch, batch_ids, switched=switched, lane_model=model))
    action = RunSync(ids=frozenset(), warm_up=True, contacted=False, otpm=None)
    probed_lane = lane_of(p.settings.request_model)
    for lane, reqs in by_lane.items():
        if lane not in batched:
            runs.append(partial(_sync_lane, p, lane, reqs, action, probed_lane))
    ran = await _all(p, runs)
    fatal, budget = _merged(ran)
    stuck = tuple(s for r in ran if isinstance(r, BatchRan) for s in r.stuck)
    return BatchRan(fatal=fatal, stuck=stuck, budget=budget)


__all__ = ["batch_part", "mixed", "sync_part"]
