"""The machines: sans-I/O values that say what to do next and take what happened (h11's shape). The
shell (`adapters.run`) performs what they ask.

May import: `judgecore.decide`, `judgecore.results`, `judgecore.wire`, `judgecore.job`.

Modules: `job` (the whole job: `JobRun`), `batch` (the batch run: `BatchRun`, with the harvest's
`gate` and `harvest` fold and `batching`, what to do after a failed create), `sync` (the sync run:
`SyncRun`), `subbatch` (a sub-batch's lifecycle as a table of moves), `vocab` (the words every machine
shares: `advance(now)` ending in `Wait` or `Done`, how a run ends, its exit status).
"""
