"""The batch run as a sans-I/O machine: given what the checkpoint holds, what to do next.

Theory of operation (in the manner of h11's `Connection`). `BatchRun` is a frozen value. The shell
builds it from the checkpoint (`BatchRun.start(checkpoint, requests=..., settings=..., now=...)`), then
loops: `run, actions = run.advance(now)` says what to do now, and `run = run.on(event)` takes each
answer. No I/O, no clock, no randomness here: `now` and every jitter draw `u` come in as arguments.

Two machines move each sub-batch, both tabled in `judgecore.run.subbatch`: the persistent lifecycle in
`TRANSITIONS` (intent, live, ended, harvested...: what the checkpoint records, by a `Record` effect),
and the in-run phase in `PHASES` (creating, unsure, listing, waiting, polling, harvesting, parked...:
what this run is doing with it, rebuilt from the state on every start). A move either table does not
hold raises `IllegalMove`; nothing else sets a state or a phase.

`advance` returns, in order, first the *effects* the shell performs at once and in order, before
anything else (`Record` a sub-batch's move, `Reject` a request too large for any batch, `Release`
held quarantines, `Begin` a round, `Say` a line on stderr), then the *operations* it may start
concurrently, each of which ends in one event: `Create(sub)` (write the intent, then POST: `Created` or
`CreateFailed`), `Reconcile(intents)` (list recent batches: `Listed` or `ListFailed`), `Poll(sub)`
(`Snapshot` or `PollFailed`), `Harvest(sub)` (stream and record its lines: `Harvested`), and last
`Wait(until)` (nothing can start before `until`; None: before an operation answers) or
`Done(exit_status, reason)` when the run is over: the vocabulary of every machine (`judgecore.run.vocab`).
An operation handed out moves its sub-batch to a `BUSY` phase, so it is never handed out twice.

The rules, each a bound or a promise of CONTRACT.md:
- rounds: a round offers every id that is neither final nor in flight (`diff_resume`), chunked; the
  next round starts once every sub-batch of the run is harvested or parked (stuck, unconfirmed,
  cut). `settings.max_attempts` bounds the rounds, so the sends per id, *per run*: a rerun gives
  every pending id a fresh budget;
- creates: at most `concurrency` in flight; a create that failed in a way that may have made a batch
  is never re-sent before a reconciliation says no batch was made, and no create is in flight while
  a reconciliation lists (a sibling's fresh batch is never mistaken for an orphan:
  `subbatch.no_create_while_listing`); each sub-batch has at most `create_attempts` creates and
  reconciliations; 413 splits it in halves (`after_create_error`);
- polling: `next_poll_action` against each batch's own deadline; overdue is `stuck` (ids pending, never
  resent while it may end); a 404 is `gone` (its ids are free: nothing can answer for them any more);
- harvest: one at a time, at most `harvest_attempts` streams per batch per run; the shell streams the
  lines through the breaker (`judgecore.decide.breaker`) and reports one `Harvested`;
- stopping: a fatal answer (authentication, permission, unknown model, an endpoint that cannot be
  reached on the run's first contact; an account state, whose ids stay pending, whether a create was
  refused with it or a harvested line carried it) halts the run: nothing new starts; a tripped breaker stops
  creating, harvests what is live, and ends with exit 4. Every loop is bounded, so a run always ends.

The parts: `_vocab` (settings, the checkpoint's view, actions and events), `_machine` (`BatchRun`:
building, `advance`, `on`), `_creating` (creates and reconciliation), `_harvesting` (polls and
harvests), `_sub` (a sub-batch as the run tracks it), `batching` (what to do after a failed
create; which listed batch is an orphan's), `gate` (which of a batch's lines are ours, and what the
breaker lets through), `harvest` (one harvest as a fold over its result lines) and `switching` (the
deadline's switch: when the run switches, and the run once it has: nothing created, live batches
canceled and harvested).

May import: `judgecore.run.subbatch`, `judgecore.run.vocab`, `judgecore.decide`, `judgecore.results`,
`judgecore.wire`, `judgecore.job`.
"""

from judgecore.results.outcomes import CONNECT_FAILED
from judgecore.run.batch._machine import BatchRun
from judgecore.run.batch._sub import Sub
from judgecore.run.batch._vocab import (
    Action,
    BatchSettings,
    Begin,
    Create,
    Created,
    CreateFailed,
    Done,
    Effect,
    Event,
    Harvest,
    Harvested,
    Listed,
    ListFailed,
    Operation,
    Poll,
    PollFailed,
    Reconcile,
    Record,
    Release,
    Say,
    Snapshot,
    Wait,
)
from judgecore.run.subbatch import Checkpoint, SubView

__all__ = [
    "CONNECT_FAILED",
    "Action",
    "BatchRun",
    "BatchSettings",
    "Begin",
    "Checkpoint",
    "Create",
    "CreateFailed",
    "Created",
    "Done",
    "Effect",
    "Event",
    "Harvest",
    "Harvested",
    "ListFailed",
    "Listed",
    "Operation",
    "Poll",
    "PollFailed",
    "Reconcile",
    "Record",
    "Release",
    "Say",
    "Snapshot",
    "Sub",
    "SubView",
    "Wait",
]
