"""Panels across families: one job whose judges are Anthropic's, OpenAI's and served models, each
judge's requests sent on its own provider's client, on its sync route or (each lane whose own size
says batch) its batch route, into one checkpoint, under one budget.

A job's requests are grouped by *lane*: a provider, and for a served model its server (`lane_of`). A
job of one lane runs exactly as before (`adapters.run.operations`). A job of several:

- `sync_part`: one sync run per lane, each with its own client, port, request template, pacing
  (each provider's own headers; a served model's adaptive concurrency) and warm-up. Without a
  `--budget` the lanes run at once; with one, one after the other, each starting from the spend
  the checkpoint holds (one cap, never overrun by two runs reserving against it at once).
- `batch_part`: each lane whose provider has a batch route and whose own request count says batch
  (`lanes.batch_lanes`, as a job of that provider alone of that size is routed) runs its own batch
  machine, with its client, port, sub-batch caps, and its sub-batches named by lane in the checkpoint
  (numbered apart: `BatchRun.start`'s `sub_slot`), so a resume reconciles each lane's intents on
  its own provider only; the other lanes (too small, served) go on their sync routes at the same
  time (a batch's wait is long: the sync lanes are done meanwhile).

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
from adapters.run.lanes import (
    batch_lanes,
    lane_counts,
    lane_of,
    lane_of_unit,
    lanes,
    legacy_batch_lane,
    limits_read,
)
from adapters.run.operations import (
    Ports,
    requests_of,
    run_batch_part,
    run_sync_part,
)
from judgecore.run.job._vocab import BatchRan, RunSync, SyncRan
from judgecore.run.subbatch import IN_FLIGHT
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


def chosen_lanes(p: Ports) -> frozenset[str]:
    """The lanes that take their batch route (`lanes.batch_lanes`: each by its own request count and its
    provider's threshold), and any lane whose batches the checkpoint still holds in flight (harvested,
    never left behind)."""
    s = p.settings
    on_batch = batch_lanes(
        s.models,
        lane_counts(p.job.requests, s.request_model),
        threshold=s.sync_threshold,
        force=s.force,
        limits=limits_read(s.request_model, p.store.route),
    )
    live = {
        lane_of_unit(r.lane, s.models) for r in p.store.sub_batches(sorted(IN_FLIGHT)) if r.lane is not None
    }
    return on_batch | live


def _units(lane: str, reqs: list[Request], default: str) -> list[tuple[str, list[Request]]]:
    """A batch lane's batch machines: one for the lane, or one per judge where a provider's batch holds
    one model only (OpenAI's), each named by the judge (what its sub-batches' `lane` says)."""
    by_model: dict[str, list[Request]] = {}
    for r in reqs:
        by_model.setdefault(r.model or default, []).append(r)
    if len(by_model) < 2 or not provider_of(next(iter(by_model))).batch_one_model:
        return [(lane, reqs)]
    return sorted(by_model.items())


async def batch_part(p: Ports, ids: Set[str], *, switched: bool = False) -> BatchRan:
    """The batch route over `ids`: each lane that takes it runs its own batch machine (its client, port,
    sub-batch caps, and its own sub-batches in the checkpoint), the others their sync routes, all at
    the same time."""
    default = p.settings.request_model
    if not mixed(p) and (len(set(p.settings.models)) < 2 or not provider_of(default).batch_one_model):
        return await run_batch_part(p, ids, switched=switched)  # one lane, one machine
    by_lane = _split(p, ids)
    chosen = chosen_lanes(p) if mixed(p) else frozenset(by_lane)
    units = [u for lane in sorted(chosen & set(by_lane)) for u in _units(lane, by_lane[lane], default)]
    legacy = legacy_batch_lane(p.settings.models)
    if legacy is not None:  # a state dir an earlier version wrote: its sub-batches were that lane's
        p.store.name_lanes(legacy)
    p.store.batch_lanes = sorted({lane_of(reqs[0].model or default) for _, reqs in units})
    runs: list[Callable[[], Awaitable[Any]]] = []
    for k, (unit, reqs) in enumerate(units):
        model = reqs[0].model or default
        names = ", ".join(sorted({r.model or default for r in reqs}))
        p.emit(
            Notice(
                level="info",
                message=f"{provider_of(model).name} lane ({names}): {len(reqs):,} requests, batch",
            )
        )
        on_batch = attrs.evolve(p, client=p.clients[lane_of(model)])
        batch_ids = frozenset(r.custom_id for r in reqs)
        runs.append(
            partial(
                run_batch_part,
                on_batch,
                batch_ids,
                switched=switched,
                lane_model=model,
                lane=unit,
                slot=(k, len(units)),
            )
        )
    action = RunSync(ids=frozenset(), warm_up=True, contacted=False, otpm=None)
    probed_lane = lane_of(p.settings.request_model)
    for lane, reqs in by_lane.items():
        if lane not in chosen:
            runs.append(partial(_sync_lane, p, lane, reqs, action, probed_lane))
    ran = await _all(p, runs)
    fatal, budget = _merged(ran)
    stuck = tuple(s for r in ran if isinstance(r, BatchRan) for s in r.stuck)
    switched = any(isinstance(r, BatchRan) and r.switched for r in ran)
    # what is still in a live batch once every lane has ended (a lane's own figure, taken when it
    # ended, holds another lane's ids it was still harvesting)
    live = p.store.job_state().in_flight if switched else frozenset()
    return BatchRan(fatal=fatal, stuck=stuck, budget=budget, switched=switched, live=live)


__all__ = ["batch_part", "chosen_lanes", "mixed", "sync_part"]
