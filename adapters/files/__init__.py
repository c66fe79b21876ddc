"""The user's files: every input format read, inspect_ai logs in and out, items loaded, messages kept
and handed to the checkpoint, the output written, and every path checked before anything is sent.

May import: `adapters.checkpoint`, `adapters.usage`, `judgecore`.

Modules: `readers`, `cells` (a table cell as JSON; the optional extras), `inspect_log` (reads a log),
`inspect_export` (writes the verdicts back into one), `items_io`,
`messages`, `writers`, `output`, `paths`, `spill` (a dry run's id hashes kept on disk past a few
million).
"""
