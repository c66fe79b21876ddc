"""The sync run as a machine: which item to send next, what each answer does to it, when the run is done.

Theory of operation. A `SyncRun` is a frozen value; the shell drives it with two calls, in the manner
of h11's `Connection`:

    run, actions = run.advance(now)   # (*Record | Say, *Launch, Wait | Done); `run` already reflects them
    run = run.on(Answered(...))       # an answer came back (success, HTTP error or connection failure)
    run, effects = run.effects()      # the rows and lines that answer queued, taken out at once

`advance` returns what to do now and the value that has done it, in the order of every machine
(`judgecore.run.vocab`): the effects queued (`Record`, `Say`: already out of the outbox), each
`Launch` that may leave now (already counted in flight, its pacing cost and budget bound reserved),
then `Wait` (until the next retry or pacing slot is due, or an answer comes) or `Done`. The shell
performs them (durable write, stderr line, send, sleep) and calls `advance` again; it owns no
decision. `effects` hands out the effects alone: the shell takes an answer and commits its rows in
the task that received it, without waiting for its loop to wake. Time (`now`) and the jitter draw (`Answered.u`) are arguments.

What the machine decides:

- *Order*: retries whose wait is over go first, oldest item first; then fresh items in input order.
- *Warm-up*: with `warm_up`, the first item goes alone and is resolved (final, or left pending) before
  any other leaves, so the rest read the prompt cache it wrote.
- *Pace*: the `Pacer` admits each launch (a 429 blocks every launch until its retry-after); the
  `Concurrency` caps requests in flight (a 429 halves it; successes win it back; a 5xx does neither).
- *Retries*: a 429 waits `retry-after` plus jitter, anything else retriable backs off with full jitter.
  Per item per run, at most `max_attempts` sends may end in a non-429 failure and `max_rate_limited`
  in a 429; past either the item is recorded as it last came back (`retry`: pending) for a rerun,
  which starts it with a fresh budget. Each recorded row carries the sends of this run that came back.
- *Stops*: a `fatal` outcome (authentication, permission, unknown model; an account state: on hold, a
  spend limit, billing, recorded as not final so its line says why it waits) stops at once, its item
  left pending; so does a
  connection that cannot be made on the run's first contact (before any HTTP answer), naming the
  endpoint; the breaker (`judgecore.decide.breaker`) trips on a job whose first final outcomes are all invalid
  (held INVALID_REQUEST rows are recorded when it closes, dropped when it trips). A budget
  (`judgecore.decide.spend`) that cannot admit the next launch waits for the answers in flight (each frees
  its bound and adds its real cost); only with nothing in flight does it stop launching: the rest
  stays pending and a `Say` says how much more it needs, from what the answers really cost
  (`Expect`).
- *Done*: nothing left to launch or wait for. `Done.exit_status` is 4 (stopped: fatal, unreachable,
  breaker), 3 (some of this run's items are left pending) or 0.

The parts: `_vocab` (the policy, the per-item values, the actions and the event) and `_machine`
(`SyncRun`: `start`, `advance`, `on`, `effects`).

Modules: `_vocab` (its policy, what it keeps per item, its actions and events), `_machine` (`SyncRun`).
May import: `judgecore.run.vocab`, `judgecore.decide`, `judgecore.results`, `judgecore.wire`, `judgecore.job`.
"""

from judgecore.results.outcomes import CONNECT_FAILED
from judgecore.run.sync._machine import SyncRun
from judgecore.run.sync._vocab import (
    MIN_WAIT,
    NOTE_WAIT,
    Action,
    Answered,
    Done,
    Effect,
    Flight,
    Launch,
    Record,
    Row,
    Say,
    SyncPolicy,
    Tally,
    Todo,
    Tries,
    Wait,
    exit_status,
)

__all__ = [
    "CONNECT_FAILED",
    "MIN_WAIT",
    "NOTE_WAIT",
    "Action",
    "Answered",
    "Done",
    "Effect",
    "Flight",
    "Launch",
    "Record",
    "Row",
    "Say",
    "SyncPolicy",
    "SyncRun",
    "Tally",
    "Todo",
    "Tries",
    "Wait",
    "exit_status",
]
