"""The run's single decisions, each a pure function or a small value: the route, backoff, polling,
rate limits, the invalid-request breaker, what is left to do on resume, prices, spend and the budget,
the job's plan and the dry run's, the checkpoint's journal.

May import: `judgecore.results`, `judgecore.wire`, `judgecore.job`.

Modules: `routing`, `backoff`, `polling`, `ratelimit`, `retry_after` (the wait a response asks for), `breaker`, `resume`, `prices` (what tokens
cost, how money is written), `spend` (what answers cost, the budget's admission rule), `planning`
(the job's plan, the dry-run plan and its cost), `tally` (a plan's totals summed a chunk of items at a
time, none kept), `filesystems` (which journal a state dir allows), `deadline` (with `--deadline`: keep waiting, switch
the rest to the sync route, or end), `concurrency` (how many requests a served model without rate
limits can hold).
"""
