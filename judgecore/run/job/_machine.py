"""The whole job as a machine: probe, keep or decide the route, run the batch part, run the sync part,
write the output, done.

Theory of operation. `JobRun.start(custom_ids, history, policy)` takes the job's custom_ids (input
order), what the checkpoint said before this run acted (`History`) and this run's flags
(`JobPolicy`). The shell then loops, as over every machine (`judgecore.run.vocab`): `advance(now)`
returns the machine and the actions to perform now; an operation (`Probe`, `RunBatch`, `RunSync`,
`WriteOutput`) is answered with its event through `on(event)`; the effects (`RecordRoute`,
`Estimate`, `Connect`, `Say`) are performed in the order given, before the operation that follows
them; the last action is `Wait(None)` (until the operation out answers) or `Done`, which ends the loop.

The phases: `MOVES` (a missing key is an illegal move) holds the event that answers each operation
(PROBING -Probed-> RUNNING, BATCH -BatchRan-> RUNNING, SYNC -SyncRan-> OUTPUT, WRITING -Wrote-> DONE);
its diagram in docs/design.md is generated from the table (`bench/state_diagrams.py`). The moves
`advance` decides on its own: START to PROBING (decided again, no tier known: probe first), to RUNNING
(kept, or decided from a force, --otpm or a reading) or to OUTPUT (every item final: nothing to send);
RUNNING to BATCH (the batch route, or live batches) or to SYNC (the sync route, or after the deadline's
switch, unless the batch part stopped); OUTPUT to WRITING.

The decisions it makes, each once for the run and the dry run alike: when to probe (neither a force
nor `--otpm`, no reading stored, the route decided again); route precedence (force > `--otpm` >
the tier read > the tier assumed); which ids go to which part (the batch route sends every id; the
sync route polls the ids live in batches first and sends the rest); the probe's send (a probe that
came back retriable spent its item's send for this run: the sync part leaves it out); the warm-up
(not when the probe's answer wrote the prompt cache); and the exit status (4 on a stop, 3 when items
are left pending, else 0).
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from typing import assert_never

import attrs

from judgecore.decide.routing import (
    DecideRoute,
    KeepRoute,
    Lane,
    Route,
    RoutePolicy,
    keep_or_redecide,
    lanes_say_batch,
    route,
    route_lanes,
)
from judgecore.job.idsets import Picked
from judgecore.job.items import RoutePath
from judgecore.job.texts import Keyed, Texts, texts_of
from judgecore.results.status import FINAL_STATUSES, Status
from judgecore.run.job._vocab import (
    MOVES,
    Action,
    BatchRan,
    Connect,
    Estimate,
    Event,
    Phase,
    Probe,
    Probed,
    RecordRoute,
    RunBatch,
    RunSync,
    SyncRan,
    WriteOutput,
    Wrote,
)
from judgecore.run.vocab import Done, ExitStatus, Say, Wait


@attrs.frozen(kw_only=True)
class History:
    """What the checkpoint says about a job before this run acts: its stored route, the tier last
    read (output tokens per minute), the final ids, the ids live in batches, and whether any batch
    of the job was created."""

    stored: Route | None = None
    otpm_read: int | None = None
    final: frozenset[str] = frozenset()
    in_flight: frozenset[str] = frozenset()
    any_batch: bool = False
    #: a run made the deadline's switch (`adapters.run.switch`): what is not final goes sync
    switched: bool = False

    @property
    def answered(self) -> bool:
        """Something of the job was answered (a final outcome) or may be (a batch was created)."""
        return bool(self.final) or self.any_batch


@attrs.frozen(kw_only=True)
class JobPolicy:
    """This run's flags that bear on the route: `--force-*`, `--otpm`, `--sync-threshold`."""

    force: RoutePath | None = None
    otpm: int | None = None
    route_policy: RoutePolicy = attrs.Factory(RoutePolicy)
    #: a panel across providers: its lanes, each with its own count and policy (`Lane`), the route
    #: decided by them (`route_lanes`: batch when any lane's own count says so); empty (or one lane):
    #: the job's count against `route_policy`
    lanes: tuple[Lane, ...] = ()
    #: this run alone goes on the sync route, for this reason (a deadline too close for any batch:
    #: `judgecore.decide.deadline.AllSync`); the route is said, never recorded as the job's
    all_sync: str | None = None


class IllegalJobMove(Exception):
    """An event the machine was not waiting for (a bug of the interpreter)."""


@attrs.frozen(kw_only=True)
class DryRunPlan:
    """What the run would do, as the dry run tells it: the route, the ids left to send, and how many
    items are final or live in a batch (counted, not sent)."""

    route: Route
    left: Set[str]
    final: int
    live: int


@attrs.frozen(kw_only=True)
class JobRun:
    """The job's run; see the module docstring."""

    #: the job's custom_ids in input order, as one immutable column (`judgecore.job.texts.Texts`, or the
    #: `Keyed` one of the item ids and their digests a parse makes)
    custom_ids: Texts | Keyed = attrs.field(converter=texts_of)
    history: History
    policy: JobPolicy
    phase: Phase = Phase.START
    route: Route | None = None
    fatal: str | None = None
    stuck: tuple[str, ...] = ()
    cache_hit_rate: float | None = None
    #: the `--budget` a rerun needs to send what the cap left pending (None: no cap stopped a part)
    rerun_budget: float | None = None
    batch_ran: bool = False
    #: the batch part switched to the sync route (this run, or resumed); `live`: ids it left in a
    #: live batch (never sent on the sync route while there)
    switched: bool = False
    live: frozenset[str] = frozenset()
    #: this run's probe was answered and wrote the prompt cache; the API was contacted; the id whose
    #: per-run send the probe spent (it came back retriable).
    warmed: bool = False
    contacted: bool = False
    spent: str | None = None
    #: the final status this run's probe gave its item (None: it made nothing final)
    probed: Status | None = None
    exit_status: ExitStatus | None = None
    #: the id the probe is out with; effects the last event queued for the next `advance`.
    probing: str | None = None
    queued: tuple[Action, ...] = ()

    @classmethod
    def start(cls, custom_ids: Sequence[str], history: History, policy: JobPolicy) -> JobRun:
        return cls(custom_ids=texts_of(custom_ids), history=history, policy=policy)

    # -- the decisions, shared by the run and the dry run ---------------------------------------

    @property
    def finished(self) -> bool:
        """Every item final and no batch of the job still live: nothing to send or poll."""
        h = self.history
        return not h.in_flight and all(c in h.final for c in self.custom_ids)

    def _decision(self) -> KeepRoute | DecideRoute:
        h, lanes = self.history, self.policy.lanes
        return keep_or_redecide(
            h.stored,
            n=len(self.custom_ids),
            force=self.policy.force,
            answered=h.answered,
            lanes_batch=lanes_say_batch(lanes, h.stored) if len(lanes) > 1 and h.stored else None,
        )

    def route_now(self, otpm_read: int | None) -> Route:
        """A route decided in this run: forced, from `--otpm`, or from the tier read; with none of
        them, on the assumed tier. A panel's lanes each by their own count (`route_lanes`)."""
        p, n = self.policy, len(self.custom_ids)
        if len(p.lanes) > 1:
            if p.force is not None or p.otpm is not None:
                return route_lanes(p.lanes, n=n, force=p.force, otpm=p.otpm, otpm_source="flag")
            return route_lanes(p.lanes, n=n, otpm=otpm_read)
        if p.force is not None:
            return route(n, policy=p.route_policy, force=p.force, otpm=p.otpm, otpm_source="flag")
        if p.otpm is not None:
            return route(n, policy=p.route_policy, otpm=p.otpm, otpm_source="flag")
        return route(n, policy=p.route_policy, otpm=otpm_read)

    def probe_id(self) -> str | None:
        """The item the probe sends, when this run decides its route with no tier known: the first
        one not final."""
        p, h = self.policy, self.history
        if p.force is not None or p.otpm is not None or h.otpm_read is not None:
            return None
        return next((c for c in self.custom_ids if c not in h.final), None)

    def dry_run(self) -> DryRunPlan:
        """The plan the run would follow, never probing: the route kept, or decided from a force,
        `--otpm`, the reading stored or the assumed tier; what is left to send."""
        match self._decision():
            case KeepRoute(route=kept):
                chosen = kept
            case DecideRoute():
                chosen = self.route_now(self.history.otpm_read)
        if self.history.switched:  # an earlier run's deadline switched the rest to the sync route
            chosen = attrs.evolve(
                chosen, path="sync", reason="the rest after an earlier run's deadline switch"
            )
        final, live = self.history.final, self.history.in_flight
        if not final and not live:  # a fresh job: every id is left, and no set of them is built
            every = Picked(self.custom_ids, range(len(self.custom_ids)))
            return DryRunPlan(route=chosen, left=every, final=0, live=0)
        ids = frozenset(self.custom_ids)  # a job's custom_ids are distinct: set algebra counts them
        done = ids & final
        return DryRunPlan(
            route=chosen,
            left=ids.difference(final, live),
            final=len(done),
            live=len((ids & live) - done),
        )

    # -- the machine ----------------------------------------------------------------------------

    def advance(self, now: float = 0.0) -> tuple[JobRun, tuple[Action, ...]]:
        """What to do now: the effects queued by the last event, then the next operation, then `Done`,
        or `Wait(None)`: nothing more until the operation out answers (`now` is unused today: no part
        of the job's own plan waits on the clock)."""
        del now
        run, actions = attrs.evolve(self, queued=())._next()
        actions = self.queued + actions
        if not actions or not isinstance(actions[-1], Done):
            actions += (Wait(None),)
        return run, actions

    def _next(self) -> tuple[JobRun, tuple[Action, ...]]:

        match self.phase:
            case Phase.START:
                return self._begin()
            case Phase.RUNNING:
                return self._run_parts()
            case Phase.OUTPUT:
                return attrs.evolve(self, phase=Phase.WRITING), (WriteOutput(reuse=self.finished),)
            case Phase.DONE:
                assert self.exit_status is not None
                return self, (Done(self.exit_status, self.fatal),)
            case Phase.PROBING | Phase.BATCH | Phase.SYNC | Phase.WRITING:
                return self, ()  # an operation is out: its event comes first
            case _:  # pragma: no cover
                assert_never(self.phase)

    def _begin(self) -> tuple[JobRun, tuple[Action, ...]]:

        if self.finished:
            say = Say("info", "every item is final already: nothing to send")
            return _then((say,), attrs.evolve(self, phase=Phase.OUTPUT, route=self.history.stored)._next())
        out: list[Action] = [Connect()]
        if (why := self.policy.all_sync) is not None:
            n = len(self.custom_ids)
            chosen = route(n, policy=self.policy.route_policy, force="sync", otpm=self.policy.otpm)
            said = (Say("warning", f"route: sync for this run only ({why})"), Estimate(chosen))
            return _then((*out, *said), attrs.evolve(self, phase=Phase.RUNNING, route=chosen)._run_parts())
        match self._decision():
            case KeepRoute(route=kept):
                out.append(Estimate(kept))
                return _then(tuple(out), attrs.evolve(self, phase=Phase.RUNNING, route=kept)._run_parts())
            case DecideRoute(why=why):
                if self.history.stored is not None:
                    out.append(Say("info", f"route decided again: {why}"))
        first = self.probe_id()
        if first is not None:
            out.append(Probe(first))
            return attrs.evolve(self, phase=Phase.PROBING, probing=first), tuple(out)
        chosen = self.route_now(self.history.otpm_read)
        return _then(
            (*out, *_decided(chosen)), attrs.evolve(self, phase=Phase.RUNNING, route=chosen)._run_parts()
        )

    def _run_parts(self) -> tuple[JobRun, tuple[Action, ...]]:

        assert self.route is not None
        if self.fatal is not None:
            return attrs.evolve(self, phase=Phase.OUTPUT)._next()
        resumed = self.history.switched  # an earlier run switched: its batches are canceled, the rest sync
        sync = self.route.path == "sync" or resumed
        every = self.custom_ids
        if not self.batch_ran:
            live = self.history.in_flight
            ids = (
                Picked.where(every, (c in live for c in every)) if sync else Picked(every, range(len(every)))
            )
            if ids:
                return attrs.evolve(self, phase=Phase.BATCH, batch_ran=True), (RunBatch(ids, resumed),)
        if not sync and not self.switched:
            return attrs.evolve(self, phase=Phase.OUTPUT)._next()
        spent, held = self.spent, self.live
        ids = (
            Picked(every, range(len(every)))
            if spent is None and not held
            else Picked.where(every, (c != spent and c not in held for c in every))
        )
        run_sync = RunSync(
            ids=ids,
            warm_up=not self.warmed,
            contacted=self.contacted or self.switched,  # the batch part was answered before it switched
            otpm=self.policy.otpm,
            probed=self.probed,
        )
        return attrs.evolve(self, phase=Phase.SYNC, batch_ran=True), (run_sync,)

    def on(self, event: Event) -> JobRun:
        """The answer to the operation out; see `MOVES`."""

        nxt = MOVES.get((self.phase, type(event)))
        if nxt is None:
            raise IllegalJobMove(f"{type(event).__name__} while {self.phase}: no operation awaits it")
        run = attrs.evolve(self, phase=nxt)
        match event:
            case Probed():
                return run._probed(event)
            case BatchRan(fatal=fatal, stuck=stuck, budget=budget, switched=switched, live=live):
                return attrs.evolve(
                    run,
                    fatal=fatal,
                    stuck=stuck,
                    rerun_budget=budget or run.rerun_budget,
                    switched=switched,
                    live=live if switched else frozenset(),
                )
            case SyncRan(fatal=fatal, cache_hit_rate=rate, budget=budget):
                return attrs.evolve(
                    run, fatal=fatal, cache_hit_rate=rate, rerun_budget=budget or run.rerun_budget
                )
            case Wrote(pending=pending):
                return attrs.evolve(run, exit_status=exit_status(run.fatal, pending))
            case _:  # pragma: no cover
                assert_never(event)

    def _probed(self, event: Probed) -> JobRun:
        """The probe's answer decides the route, on the tier it read (or the assumed one). A stop
        still records the route, on the assumed tier, and the run goes to its output."""
        if event.fatal is not None or event.status is None:
            chosen = self.route_now(None)
            return attrs.evolve(self, route=chosen, fatal=event.fatal, queued=_decided(chosen))
        what = (
            "answered"
            if event.status in FINAL_STATUSES
            else f"came back {event.reason}; it will be sent again"
        )
        otpm = event.otpm or None
        rp = self.policy.route_policy
        words = "output tokens/min" if rp.limit_name == "OTPM" else "tokens/min"
        tier = (
            f"{words} limit {otpm:,}"
            if otpm
            else f"no tier reading, so {rp.assumed_otpm:,} {rp.limit_name} is assumed"
        )
        if not otpm and rp.sync_only == "served":
            tier = "a served model publishes no rate limits: its concurrency adapts to the server"
        chosen = self.route_now(otpm)
        return attrs.evolve(
            self,
            route=chosen,
            warmed=event.status is Status.SUCCEEDED,
            contacted=True,
            probed=event.status if event.status in FINAL_STATUSES else None,
            spent=self.probing if event.status is Status.RETRY else None,
            queued=(Say("info", f"probe: {event.item_id} {what}; {tier}"), *_decided(chosen)),
        )


def _then(
    first: tuple[Action, ...], step: tuple[JobRun, tuple[Action, ...]]
) -> tuple[JobRun, tuple[Action, ...]]:
    run, actions = step
    return run, first + actions


def _decided(chosen: Route) -> tuple[Action, ...]:
    """What a route decided in this run asks: say it, record it, keep its estimate."""

    return (Say("info", f"route: {chosen.path} ({chosen.reason})"), RecordRoute(chosen), Estimate(chosen))


def exit_status(fatal: str | None, pending: int) -> ExitStatus:
    """4 on a stop, 3 when items are left pending, else 0."""
    if fatal is not None:
        return ExitStatus.FATAL
    return ExitStatus.PENDING if pending else ExitStatus.OK


__all__ = ["DryRunPlan", "History", "IllegalJobMove", "JobPolicy", "JobRun", "exit_status"]
