"""A job's summary: the statistics of its scores, what a judge design buys, group differences, the
summary as a value and as text, the examples the report quotes, how each figure is written, the
dry-run plan as text, the run's health.

May import: `judgecore.decide`, `judgecore.results`, `judgecore.wire`, `judgecore.job`.

Modules: `stats`, `reliability`, `compare`, `job_summary` (`Summary`, `summarize`), `text` (the
summary's headline and lines), `numfmt` (one rule per kind of figure), `examples`, `plan_text`,
`health`, `selfpref` (a panel's self-preference by the answers' author family).
"""
