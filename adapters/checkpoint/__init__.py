"""A state dir: the checkpoint (one SQLite database), every read of it, the job key its custom_ids are
derived with, the one-run lock, and the finished-job record.

May import: `adapters.usage`, `judgecore`.

Modules: `store` (the checkpoint itself, package), `reads` (spend, budget, what answers taught the
estimate, verdict counts, the job machine's history), `records` (the output records rebuilt from
it), `jobkey`, `fresh` (what is known of a state dir without opening its checkpoint: whether it
holds one, its files' names, a new job's key; no SQLite), `statelock`, `finished`.
"""
