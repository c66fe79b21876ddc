"""A panel's lanes: a judge's lane is its provider, and for a served model its server (`lane_of`); each
lane has its own client (`clients_for`), built before anything is sent, and its own route: the batch
route for each lane whose provider has one and whose own request count says batch (`batch_lanes`),
the sync route for the others (`adapters.run.panels` sends each lane's requests on its route). The
job's route is decided from the same lanes (`route_lanes_of`: each lane's count and its provider's
policy, given to the job machine as values; `judgecore.decide.routing.route_lanes`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from adapters.providers.registry import provider_of
from judgecore.decide.routing import Lane, Route
from judgecore.wire.providers import parse_judge
from judgecore.wire.requests import Request, Requests


def lane_of(model: str) -> str:
    """The lane a judge's requests go on: its provider's name, a served model's with its URL."""
    if model.startswith("served:") and "@" not in model:  # a served judge's identity (no URL)
        return "served"
    judge = parse_judge(model)
    return f"served@{judge.url}" if judge.provider == "served" else judge.provider


def lanes(models: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The job's judges by lane, in the order the judges are given."""
    out: dict[str, list[str]] = {}
    for model in models:
        out.setdefault(lane_of(model), []).append(model)
    return {k: tuple(v) for k, v in out.items()}


def legacy_batch_lane(models: Sequence[str]) -> str | None:
    """The one lane an earlier version sent a panel's batches on (one batch machine a checkpoint):
    Anthropic's when it has judges, else the first lane whose provider has a batch route. What the
    sub-batches of a state dir it wrote belong to (they name no lane: `Store.name_lanes`)."""
    with_batch = [lane for lane, judges in lanes(models).items() if provider_of(judges[0]).batch]
    if not with_batch:
        return None
    return "anthropic" if "anthropic" in with_batch else with_batch[0]


def lane_counts(requests: Sequence[Request], default_model: str) -> dict[str, int]:
    """How many of `requests` each lane sends (a request without its own model asks `default_model`)."""
    cols = Requests.of(requests)
    by_model = Counter(m or default_model for m in cols.models)
    out: Counter[str] = Counter()
    for model, n in by_model.items():
        out[lane_of(model)] += n
    return dict(out)


def limits_read(request_model: str, route: Route | None) -> dict[str, int]:
    """The per-minute limit known for a lane (read by the probe, or `--otpm`): the request model's lane's,
    from the job's route; every other lane is routed at its provider's reference limit."""
    if route is None or route.otpm_source == "assumed" or route.otpm < 1:
        return {}
    return {lane_of(request_model): route.otpm}


def route_lanes_of(
    models: Sequence[str], counts: Mapping[str, int], request_model: str, *, threshold: int
) -> tuple[Lane, ...]:
    """A panel's lanes as the job machine routes them (`judgecore.decide.routing.route_lanes`): each
    with its own request count (`counts`), its provider's policy (`threshold` requests at its
    reference limit), the request model's lane the one the probe (or `--otpm`) reads the tier of;
    empty for a job of one lane (routed by its whole count, as before panels had lanes)."""
    by_lane = lanes(models)
    if len(by_lane) < 2:
        return ()
    probed = lane_of(request_model)
    return tuple(
        Lane(
            name=lane,
            n=counts.get(lane, 0),
            policy=provider_of(judges[0]).route_policy(threshold),
            probed=lane == probed,
        )
        for lane, judges in by_lane.items()
    )


def batch_lanes(
    models: Sequence[str],
    counts: Mapping[str, int],
    *,
    threshold: int,
    force: str | None = None,
    limits: Mapping[str, int] | None = None,
) -> frozenset[str]:
    """The lanes of a job that take their batch route: each lane whose provider has one and whose own
    request count (`counts`) is at least its provider's threshold (`threshold` requests at its
    reference limit, scaled by the limit read for it in `limits`, else its reference), as a job of
    that provider alone of that size is routed; every such lane with `force` "batch", none with "sync".
    The other lanes go sync (`adapters.run.panels`)."""
    out = set()
    for lane, judges in lanes(models).items():
        provider = provider_of(judges[0])
        if not provider.batch or force == "sync":
            continue
        limit = (limits or {}).get(lane) or provider.reference_limit
        if force == "batch" or counts.get(lane, 0) >= provider.route_policy(threshold).threshold(limit):
            out.add(lane)
    return frozenset(out)


def lane_of_unit(unit: str, models: Sequence[str]) -> str:
    """The lane of a sub-batch's `lane` as the checkpoint names it: a lane's name, or a judge's where
    its lane batches per judge (OpenAI's: `adapters.run.panels`)."""
    return unit if unit in lanes(models) else lane_of(unit)


def judge_routes(store: Any) -> tuple[tuple[str, str], ...]:
    """A panel across lanes, as its checkpoint holds it: each judge's route in words, as the run chose
    it, with its lane's sub-batches (`batch, 3 sub-batches on openai`); empty for a job of one lane."""
    judges = [str(j) for j in (store.manifest or {}).get("judges") or ()]
    if len(lanes(judges)) < 2 or (route := store.route) is None:
        return ()
    legacy = legacy_batch_lane(judges)
    on_batch = store.batch_lanes
    if on_batch is None:  # a dir an earlier version wrote: its one batch lane
        on_batch = [legacy] if legacy is not None and route.path == "batch" else []
    by_lane = lanes(judges)
    # a sub-batch's lane is a lane's name, or a judge's where its lane batches per judge (OpenAI's)
    subs = Counter(
        unit if unit in by_lane else lane_of(unit)  # `lane_of_unit`, the lanes made once
        for r in store.sub_batches()
        if (unit := r.lane or legacy) is not None
    )
    out = []
    for judge in judges:
        lane, name = lane_of(judge), provider_of(judge).name
        if name == "served":
            out.append((judge, "sync, self-hosted"))
        elif lane in on_batch:
            k = subs[lane]
            out.append((judge, f"batch, {k:,} sub-batch{'es' if k != 1 else ''} on {name}"))
        else:
            out.append((judge, "sync"))
    return tuple(out)


def clients_for(
    models: Sequence[str], request_model: str, client: Any, environ: Mapping[str, str]
) -> dict[str, Any]:
    """A client per lane, built before anything is sent (a missing key is exit 2, not a half-sent
    panel): `client` (given, or built) for the request model's lane, the others from `environ`."""
    out = {lane_of(request_model): client}
    for model in models:
        lane = lane_of(model)
        if lane not in out:
            out[lane] = provider_of(model).client(environ)
    return out


__all__ = [
    "batch_lanes",
    "clients_for",
    "judge_routes",
    "lane_counts",
    "lane_of",
    "lane_of_unit",
    "lanes",
    "legacy_batch_lane",
    "limits_read",
    "route_lanes_of",
]
