"""The interpreters of the machines (one loop, `interpreter`, over their one vocabulary): the job
(the Python API `judge`/`ajudge`) and its operations, the batch and sync paths, the dry run, the
job's plan and cost model, a run's settings, the clock, the events and their progress view, the
result a job ends with.

May import: `adapters.files`, `adapters.providers`, `adapters.checkpoint`, `adapters.usage`,
`judgecore`.

Modules: `job`, `operations`, `panels` (a panel across families: each lane on its own route), `lanes`
(a judge's lane and its client), `batch`, `batch_cancel` (`judgecore cancel`'s work), `sync`,
`sync_settings`, `interpreter` (the one loop that drives every machine), `dryrun` (the Python API's dry run: the
checkpoint read, then `dryrun_plan`), `dryrun_plan` (the dry run's plan, from what a checkpoint holds,
given), `streamed` (the dry run of a file on a fresh state dir, planned as it is read: memory flat
in its size), `policy` (the job machine's policy under a run's settings), `planning` (the job and its cost model; no checkpoint), `planning_run` (a run's side of it),
`settings`, `result`, `clock`, `events`, `progress`, `deadline` (`--deadline`: the all-sync start, the end of
the wait, the figures a dry run prints, the sync route's pace), `switch` (the deadline's switch).
"""
