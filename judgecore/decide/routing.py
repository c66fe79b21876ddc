"""Routing: does a job go through the Messages API now, or the Message Batches API at half price?

Below the threshold, a batch's tail (up to 24 hours) costs more than the discount saves; at or above it,
the sync path would spend the org's shared rate limit for hours. The threshold scales with the tier:
`base x OTPM / reference`, so a low tier sends even small jobs to batches.

A job's route is decided once and kept for its reruns, but only once it is *known*: forced, or decided
from a tier that was read (a probe) or given (`--otpm`). A route decided on the assumed tier (the probe
was refused with a 401, or its answer carried no rate-limit headers) is *provisional*: the next run
decides it again, from the tier it reads, as long as nothing was answered on it (`keep_or_redecide`).

A panel across providers has a lane per provider (`Lane`), each with its own request count and its own
provider's policy: its job goes to batches when any lane's own count reaches its own threshold
(`route_lanes`), and each lane then takes its own route inside the batch part (a lane under its
threshold goes sync there); the whole job's count against one provider's threshold decides nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias

import attrs

from judgecore.job.items import RoutePath

OtpmSource = Literal["read", "flag", "assumed"]


@attrs.frozen(kw_only=True)
class RoutePolicy:
    """2,000 requests at 400,000 output tokens per minute; the OTPM assumed when none is known."""

    base_threshold: int = 2000
    reference_otpm: int = 400_000
    assumed_otpm: int = 400_000
    #: a provider whose batch route is not built: its jobs go sync whatever their size
    sync_only: str | None = None
    #: what the per-minute limit the threshold scales by is called: Anthropic's output tokens per
    #: minute (`OTPM`); OpenAI's tokens per minute (`TPM`, input and output together), whose
    #: reference and assumed figures are the provider's (`adapters.providers.registry`)
    limit_name: str = "OTPM"

    def threshold(self, otpm: int) -> int:
        """The request count at and above which a job goes to batches; never below 1."""
        return max(1, self.base_threshold * otpm // self.reference_otpm)


@attrs.frozen(kw_only=True)
class Route:
    """The routing decision, with what it was based on and a one-line reason for the user."""

    path: RoutePath
    n: int
    threshold: int
    otpm: int
    otpm_source: OtpmSource
    forced: bool
    reason: str

    @property
    def known(self) -> bool:
        """Forced, or decided from a tier that was read or given: kept for every rerun of the job."""
        return self.forced or self.otpm_source != "assumed"


def route(
    n: int,
    *,
    policy: RoutePolicy,
    otpm: int | None = None,
    force: RoutePath | None = None,
    otpm_source: Literal["read", "flag"] = "read",
) -> Route:
    """Route `n` requests: sync when `n < threshold`, batch otherwise; `force` overrides and says so.

    `otpm` is the output-tokens-per-minute limit, read from a probe response (`otpm_source="read"`) or
    given with `--otpm` (`"flag"`); None means unknown, and `policy.assumed_otpm` is used ("assumed").
    """
    if n < 0:
        raise ValueError(f"request count must be >= 0, got {n}")
    if otpm is not None and otpm < 1:
        raise ValueError(f"OTPM must be >= 1, got {otpm}")
    source: OtpmSource = otpm_source if otpm is not None else "assumed"
    used = otpm if otpm is not None else policy.assumed_otpm
    threshold = policy.threshold(used)
    natural: RoutePath = "sync" if n < threshold else "batch"
    tier = f"{policy.limit_name} {used:,} ({source})"
    if force is not None:
        path: RoutePath = force
        # what the size alone would do, so a forced route says what it changed (or that it changed nothing)
        sized = "so it would by size too" if natural == force else f"by size it would go {natural}"
        reason = f"--force-{force}; {sized}"
    elif policy.sync_only is not None:
        path = "sync"
        why = (
            "served judges are sync only (a server has no batch API)"
            if policy.sync_only == "served"
            else f"{policy.sync_only}: judges have no batch route yet"
        )
        reason = f"{n:,} request{'' if n == 1 else 's'}; {why}"
    else:
        path = natural
        cmp = "<" if path == "sync" else ">="
        reason = f"{n:,} request{'' if n == 1 else 's'} {cmp} threshold {threshold:,} at {tier}"
    return Route(
        path=path,
        n=n,
        threshold=threshold,
        otpm=used,
        otpm_source=source,
        forced=force is not None,
        reason=reason,
    )


@attrs.frozen(kw_only=True)
class Lane:
    """A lane of a panel as routing sees it, given by the shell: its name (a provider's, a served
    model's with its URL), how many of the job's requests it sends, its provider's routing policy, and
    whether the job's tier (read by the probe, or `--otpm`) is its own (the request model's lane);
    every other lane is routed at its policy's assumed limit."""

    name: str
    n: int
    policy: RoutePolicy
    probed: bool = False


def route_lanes(
    lanes: Sequence[Lane],
    *,
    n: int,
    otpm: int | None = None,
    force: RoutePath | None = None,
    otpm_source: Literal["read", "flag"] = "read",
) -> Route:
    """Route a job of several lanes (`n` requests in all): batch when any lane's own count is at or
    above its own threshold (`route` of that lane alone), else sync; `force` overrides and says so.
    The reason names the lane whose count decided (the first that batches; with none, every lane's
    count under its threshold). The route's tier (`otpm`, its source) is the probed lane's, as the
    batch part reads it back (`adapters.run.lanes.limits_read`); its threshold is the deciding
    lane's (batch) or the probed lane's (sync). One lane: `route` of it, as a job of one provider."""
    if not lanes:
        raise ValueError("a job routed by its lanes needs at least one lane")
    probed = next((lane for lane in lanes if lane.probed), lanes[0])
    if len(lanes) == 1:
        return route(n, policy=probed.policy, otpm=otpm, force=force, otpm_source=otpm_source)
    each = [
        (
            lane,
            route(lane.n, policy=lane.policy, otpm=otpm if lane is probed else None, otpm_source=otpm_source),
        )
        for lane in lanes
    ]
    own = next(r for lane, r in each if lane is probed)
    deciding = next(((lane, r) for lane, r in each if r.path == "batch"), None)
    natural: RoutePath = "sync" if deciding is None else "batch"
    if deciding is not None:
        lane, r = deciding
        why = f"{lane.name} lane: {r.reason}; each lane on its own count"
    else:
        why = "each lane under its own threshold: " + "; ".join(
            f"{lane.name} lane: {r.reason}" for lane, r in each
        )
    if force is not None:
        sized = (
            "so it would by its lanes' counts too"
            if natural == force
            else f"by its lanes' counts it would go {natural}"
        )
        path: RoutePath = force
        reason = f"--force-{force}; {sized}"
    else:
        path, reason = natural, why
    return Route(
        path=path,
        n=n,
        threshold=(deciding[1] if deciding is not None else own).threshold,
        otpm=own.otpm,
        otpm_source=own.otpm_source,
        forced=force is not None,
        reason=reason,
    )


def lanes_say_batch(lanes: Sequence[Lane], stored: Route) -> bool:
    """Whether a panel's lanes, at their counts now, would batch on the tier `stored` was decided on
    (what a sync route decided for a smaller job asks of its lanes once the job grows)."""
    otpm = stored.otpm if stored.otpm_source != "assumed" else None
    source: Literal["read", "flag"] = "flag" if stored.otpm_source == "flag" else "read"
    n = sum(lane.n for lane in lanes)
    return route_lanes(lanes, n=n, otpm=otpm, otpm_source=source).path == "batch"


@attrs.frozen
class KeepRoute:
    """Run on the job's stored route (its `n` brought up to date with the input)."""

    route: Route


@attrs.frozen
class DecideRoute:
    """Decide the route now (forced, from `--otpm`, or from a probe), and say why."""

    why: str


RouteDecision: TypeAlias = KeepRoute | DecideRoute


def keep_or_redecide(
    stored: Route | None,
    *,
    n: int,
    force: RoutePath | None,
    answered: bool,
    lanes_batch: bool | None = None,
) -> RouteDecision:
    """Whether a run keeps the job's stored route or decides it again.

    `stored` is the route recorded by an earlier run (None: none yet); `n` the job's request count now;
    `force` this run's `--force-*`; `answered` whether anything of the job was answered already (a
    final outcome recorded, or a batch created). With a force, the stored route is kept only when it
    was forced to the same path. Without one, a sync route decided for a job under the threshold is
    decided again once the job has grown past it (new items joined; a kept route is recorded with
    the new count, so this happens at the first run that sees the growth, before anything new is
    sent on the old route); else a known route (see `Route.known`) is kept, and so is a provisional
    one something was answered on; a provisional route nothing was answered on is decided again.
    A panel's growth is its lanes' (`lanes_batch`: whether they say batch now, `lanes_say_batch`;
    None for a job of one lane): its sync route is decided again once it grew and a lane reached
    its own threshold.
    """
    if stored is None:
        return DecideRoute("no route recorded yet")
    if force is not None:
        if stored.forced and stored.path == force:
            return KeepRoute(_with_n(stored, n))
        return DecideRoute(f"forced to {force} by this run")
    if lanes_batch is not None:
        if not stored.forced and stored.path == "sync" and stored.n < n and lanes_batch:
            return DecideRoute(
                f"the job grew from {stored.n:,} to {n:,} requests since its route was decided, and a "
                "lane's own count reached its threshold"
            )
    elif not stored.forced and stored.path == "sync" and stored.n < stored.threshold <= n:
        return DecideRoute(
            f"the job grew from {stored.n:,} to {n:,} requests since its route was decided, past the "
            f"threshold ({stored.threshold:,})"
        )
    if stored.known or answered:
        return KeepRoute(_with_n(stored, n))
    return DecideRoute(
        f"the route recorded ({stored.path}) was decided on an assumed tier and nothing was answered on it"
    )


def _with_n(stored: Route, n: int) -> Route:
    return stored if stored.n == n else attrs.evolve(stored, n=n)
