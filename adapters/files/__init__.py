"""The user's files: every input format read, inspect_ai logs in and out, items loaded, messages kept
and handed to the checkpoint, the output written, and every path checked before anything is sent.

May import: `adapters.checkpoint`, `adapters.usage`, `judgecore`.

Modules: `readers`, `cells` (a table cell as JSON; the optional extras; records as a DataFrame), `inspect_log` (reads a log),
`inspect_export` (writes the verdicts back into one), `items_io`,
`messages` (where a job's messages are held; no checkpoint), `checkpointed` (their hand-off to the
checkpoint and read-back, a run's input loaded), `writers`, `output`, `paths`, `spill` (a dry run's
id hashes kept on disk past a few million).
"""
