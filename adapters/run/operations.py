"""What each operation of the job's machine does (`judgecore.run.job._machine`): connect, probe, run the batch
part, run the sync part; and the checkpoint's `History` the machine starts from. Each part returns its
event; none decides anything the machine did not say."""

from __future__ import annotations

import contextlib
import gc
import importlib
import random
import sys
from collections.abc import Mapping, Sequence, Set
from typing import Any

import attrs

from adapters.checkpoint.reads import budget_from_store
from adapters.checkpoint.store import Store
from adapters.files.checkpointed import hand_to_checkpoint
from adapters.files.items_io import bulk_allocation
from adapters.files.messages import InputChangedError, MessageSource
from adapters.providers.port import BatchPort
from adapters.providers.registry import PROVIDERS, provider_of
from adapters.run.batch import BatchSettings, run_batch
from adapters.run.clock import Clock
from adapters.run.events import Emit
from adapters.run.lanes import clients_for, lane_of
from adapters.run.planning_run import expect_now
from adapters.run.settings import JobSettings, batch_caps, price_of
from adapters.run.switch import Switcher, switch_plan, tokens_of
from adapters.run.sync import SyncSettings, probe, run_sync
from adapters.run.sync_settings import sync_settings_for
from adapters.usage import UsageError
from judgecore.decide.planning import JobPlan
from judgecore.decide.polling import PollPolicy
from judgecore.decide.ratelimit import RateLimitReading
from judgecore.decide.spend import Budget
from judgecore.job.idsets import Picked
from judgecore.job.ints import Ints
from judgecore.run.job._vocab import BatchRan, Probed, RunSync, SyncRan
from judgecore.values import frozen
from judgecore.wire.requests import Request, Requests


@frozen(kw_only=True)
class Ports:
    """What a part of the run needs from the shell, built once the machine says the run will send."""

    store: Store
    job: JobPlan
    settings: JobSettings
    sync_settings: SyncSettings
    client: Any
    clock: Clock
    emit: Emit
    rng: random.Random
    #: a client per lane of a panel across families (`adapters.run.panels.lane_of`), `client` among them
    clients: Mapping[str, Any] = attrs.field(factory=dict)
    #: the clients `connect` built (not a caller's own `client`): the run closes them (`close_owned`)
    owned: tuple[Any, ...] = ()


def connect(
    store: Store,
    job: JobPlan,
    messages: MessageSource,
    settings: JobSettings,
    client: Any,
    clock: Clock,
    emit: Emit,
    rng: random.Random,
    environ: Mapping[str, str],
) -> Ports:
    """The run will send: its sync knobs, its client, and the messages handed from `messages` to the
    checkpoint (the run reads back what it sends: none held in memory)."""

    provider = provider_of(settings.request_model)
    if not all(m in sys.modules for m in provider.sdk_modules):
        # The SDK's first import (the provider's port modules import it): its pydantic models are
        # hundreds of thousands of objects, as long-lived as its modules, and no garbage. The
        # collector's passes would walk them again and again (333 passes, about 0.1 CPU s), then twice
        # more once it is on again (about 0.19 s): it is paused for the import, and what is alive then
        # is frozen (`gc.freeze`, as the run's own items are: `adapters.run.job.ajudge`, when it froze
        # them, gives every frozen object back at its end). Only the job's provider's SDK is imported.
        with bulk_allocation():
            for module in provider.sdk_modules:
                with contextlib.suppress(ImportError):  # an extra not installed: its client says so
                    importlib.import_module(module)

            gc.freeze()
    try:
        sync_settings = sync_settings_for(settings, environ)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    given = client
    client = client or provider.client(environ)
    clients = clients_for(settings.models, settings.request_model, client, environ)
    owned = tuple(c for c in {id(c): c for c in clients.values()}.values() if c is not given)
    try:
        hand_to_checkpoint(store, job, messages)
    except InputChangedError as exc:
        raise UsageError(str(exc)) from None
    return Ports(
        store=store,
        job=job,
        settings=settings,
        sync_settings=sync_settings,
        client=client,
        clock=clock,
        emit=emit,
        rng=rng,
        clients=clients,
        owned=owned,
    )


async def close_owned(p: Ports) -> None:
    """Close the clients the run built (a caller's own `client` stays the caller's): their pools'
    sockets would otherwise stay open until the process ends, one or two a run, in a program that
    runs job after job (`judge()` in a loop, a test suite) until `select()` runs out of descriptors."""
    for c in p.owned:
        with contextlib.suppress(Exception):  # a close that fails loses nothing: the run has ended
            await c.close()


def budget_now(store: Store, settings: JobSettings) -> Budget | None:
    """The `--budget` cap as it stands now: the job's spend so far in the checkpoint (earlier runs and
    this run's earlier phases, the probe included) against the cap; None without a cap."""
    if settings.budget is None:
        return None

    return budget_from_store(store, settings.budget)


async def probe_one(p: Ports, custom_id: str) -> Probed:
    """Send one item alone: the sync run machine limited to it, its answer recorded, and the reading
    of its rate-limit headers kept."""

    first = p.job.requests.select([custom_id])[0]
    model = first.model or p.settings.request_model
    provider = provider_of(model)
    api = provider.sync_api(p.clients.get(lane_of(model), p.client), p.sync_settings.request_timeout)
    settings = for_provider(p.sync_settings, provider.name)
    result = await probe(
        store=p.store,
        api=api,
        request=first,
        template=provider.sync_template(p.job.sync_template.with_model(model)),
        clock=p.clock,
        settings=settings,
        emit=p.emit,
        rng=p.rng,
        budget=budget_now(p.store, p.settings),
        price=price_of(p.settings),
        expect=expect_now(p.store, p.job, p.settings, "sync"),
    )
    p.store.rate_limits = result.reading
    outcome = result.outcome
    if result.fatal is not None or outcome is None:
        return Probed(item_id=first.item_id, fatal=result.fatal)
    otpm = provider.route_limit(result.reading)  # what routing scales by: OTPM, or OpenAI's TPM
    return Probed(
        item_id=first.item_id,
        status=outcome.status,
        reason=outcome.reason,
        otpm=int(otpm) if otpm else None,
    )


def for_provider(settings: SyncSettings, provider: str) -> SyncSettings:
    """The sync knobs for one provider's judges: a served model publishes no rate limits, so its
    concurrency adapts (`SyncSettings.adaptive`)."""
    return attrs.evolve(settings, adaptive=True) if provider == "served" else settings


def requests_of(job: JobPlan, ids: Set[str]) -> Requests:
    """The job's requests of `ids`, in the job's order: a view by position when `ids` is a `Picked`
    of the job's custom_ids (no set of ids is built), else by id."""
    reqs = job.requests
    if isinstance(ids, Picked) and len(ids.column) == len(reqs):
        whole = ids.positions
        if isinstance(whole, range) and len(whole) == len(reqs):
            return reqs
        return attrs.evolve(reqs, positions=Ints([reqs.positions[k] for k in whole]))
    return reqs.only(frozenset(ids))


async def run_batch_part(
    p: Ports,
    ids: Set[str],
    *,
    switched: bool = False,
    lane_model: str | None = None,
    lane: str | None = None,
    slot: tuple[int, int] = (0, 1),
) -> BatchRan:
    """The batch machine over `ids` of the job, through its provider's batch port, its sub-batches
    within the provider's limits (`batch_caps`), with the deadline's switch (`adapters.run.switch`;
    `switched`: an earlier run made it, and this part resumes it). `lane_model`: a judge of the panel
    lane this part runs (its provider's port, with `p.client` that lane's client; default: the job's
    request model); `lane`: what its sub-batches are named in the checkpoint (default: the judge's
    lane), its batch machine seeing only those, numbered in `slot` (the k-th of m batch machines
    running at once: `BatchRun.start`'s `sub_slot`)."""

    s = p.settings
    judge = lane_model or s.request_model
    make_port = provider_of(judge).batch_port
    if make_port is None:
        raise UsageError(
            f"--model {judge}: this provider has no batch route; add --force-sync to judge on the sync route"
        )
    caps = batch_caps(s, judge)
    api = make_port(p.client, s.keep_files)
    if lane is None:  # one lane: a state dir an earlier version wrote named none; they are its
        lane = lane_of(judge)
        p.store.name_lanes(lane)
    res = await run_batch(
        store=p.store,
        requests=requests_of(p.job, ids),
        template=p.job.batch_template.with_model(judge),
        api=api,
        clock=p.clock,
        settings=BatchSettings(
            max_batch_requests=caps.requests,
            max_batch_bytes=caps.bytes,
            poll=PollPolicy(interval=s.poll_interval, grace=s.grace),
            max_attempts=s.max_attempts,
            deadline=s.deadline.at if s.deadline is not None else None,
        ),
        emit=p.emit,
        rng=p.rng,
        total=len(p.job.requests),
        budget=budget_now(p.store, s),
        price=price_of(s),
        expect=expect_now(p.store, p.job, s, "batch"),
        switcher=switcher_of(p, api),
        resumed_switch=switched,
        lane=lane,
        sub_slot=slot,
        count=False,  # the job counts its items as it writes the output
    )
    return BatchRan(
        fatal=res.fatal or None,
        stuck=tuple(res.stuck),
        budget=res.rerun_budget,
        switched=res.switched,
        live=p.store.job_state().in_flight if res.switched else frozenset(),
    )


def switcher_of(p: Ports, api: BatchPort) -> Switcher:
    """The batch part's switch, measured against the run's deadline (none: it only resumes one)."""

    tokens = tokens_of(p.settings, p.job, p.store)
    plan = switch_plan(p.settings, p.job, p.store, tokens)
    return Switcher(
        store=p.store,
        api=api,
        clock=p.clock,
        emit=p.emit,
        plan=plan,
        tokens=tokens if plan is not None else None,
    )


async def run_sync_part(
    p: Ports,
    action: RunSync,
    *,
    lane: tuple[Sequence[Request], str, Any] | None = None,
    probed: bool = True,
) -> SyncRan:
    """The sync machine over the action's ids, paced by the stored reading (or `--otpm`). `lane`: a
    panel lane's (requests, a judge of it, its client) instead of the action's ids on the job's
    client; `probed`: whether the probe went on this lane (its reading, warm-up and contact count for
    that lane only; another lane starts cold, paced by its own headers)."""

    requests, model, client = lane or (requests_of(p.job, action.ids), p.settings.request_model, p.client)
    reading = p.store.rate_limits if probed else None
    if probed and reading is None and action.otpm is not None:
        reading = RateLimitReading.for_otpm(action.otpm)
    provider = provider_of(model)
    single = lane is None and (p.settings.plain or p.settings.design.single)
    res = await run_sync(
        store=p.store,
        requests=requests,
        template=provider.sync_template(p.job.sync_template.with_model(model)),
        api=provider.sync_api(client, p.sync_settings.request_timeout),
        clock=p.clock,
        settings=for_provider(p.sync_settings, provider.name),
        emit=p.emit,
        rng=p.rng,
        reading=reading,
        warm_up=action.warm_up if probed else True,
        contacted=action.contacted if probed else False,
        probed=action.probed if probed else None,
        budget=budget_now(p.store, p.settings),
        price=price_of(p.settings),
        expect=expect_now(p.store, p.job, p.settings, "sync"),
        noun="item" if single else "request",
    )
    return SyncRan(fatal=res.fatal or None, cache_hit_rate=res.cache_hit_rate, budget=res.rerun_budget)


def default_client(environ: Mapping[str, str]) -> Any:
    """Anthropic's client from the environment (`adapters.providers.registry`)."""
    return PROVIDERS["anthropic"].client(environ)


__all__ = ["Ports", "connect", "default_client", "probe_one", "run_batch_part", "run_sync_part"]
