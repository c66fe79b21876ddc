"""The checkpoint: a job's durable state under `--state DIR`, in one SQLite database in WAL mode.

Why SQLite and not a JSONL journal: the output is a join (every input item, in input order, with its
latest outcome) and `status` is a handful of counts; SQLite answers both with a query over an index
instead of replaying a journal into memory, so memory stays flat however long the job. WAL mode with
`synchronous=FULL` makes each commit durable (fsync) while readers never block. A batch harvest commits
its lines in groups (`OutcomeWriter`, `refetchable=True`) that survive a process crash at once but are
not fsynced each, since lines lost to a power cut can be fetched again; the FULL commit that marks the
batch harvested fsyncs them all.

Write order (the promises of CONTRACT.md, "The checkpoint"):
1. the job manifest (model, rubric digest, settings that change requests) and every item's custom_id and
   content digest, before anything is sent;
2. an *intent* (its sub-batch's custom_ids) before the batch create call;
3. the batch id and `expires_at` right after the create call returns;
4. each harvested outcome, committed before it counts as done.

A crash between 2 and 3 leaves an intent with no batch id: an *orphan*, which the batch path reconciles
by listing recent batches before it ever resubmits those ids. The database file, its WAL and its shared
memory file are created mode 0600 in a directory of mode 0700; no credential is ever stored.

Modules, one idea each: `schema` (the tables, the in-flight view, migrations), `connection` (opening:
file modes, journal, lock, read-only), `binding` (the manifest and the items a dir is bound to), `meta`
(the job's metadata as typed fields: `store.route`, `store.rate_limits`, `store.deadline`, ...),
`messages` (the items' kept messages), `subbatches` (sub-batch records), `outcomes` (recording outcomes;
each item's latest), `resume` (what a run resumes from) and `usage` (what the summary and the report
read: metadata, usage, spend, the timeline).

May import: `adapters.usage`, `judgecore`.
"""

from __future__ import annotations

from adapters.checkpoint.fresh import DB_NAME
from adapters.checkpoint.store.binding import Binding, ContentConflictError, StateMismatchError
from adapters.checkpoint.store.connection import Connection, filesystem_type
from adapters.checkpoint.store.messages import KeptMessages
from adapters.checkpoint.store.outcomes import TALLY, OutcomeRow, Outcomes, OutcomeWriter
from adapters.checkpoint.store.resume import Resume
from adapters.checkpoint.store.schema import SCHEMA_VERSION
from adapters.checkpoint.store.subbatches import SubBatches, SubBatchRow
from adapters.checkpoint.store.usage import Usages

__all__ = [
    "DB_NAME",
    "SCHEMA_VERSION",
    "TALLY",
    "ContentConflictError",
    "OutcomeRow",
    "OutcomeWriter",
    "StateMismatchError",
    "Store",
    "SubBatchRow",
    "filesystem_type",
]


class Store(Binding, KeptMessages, SubBatches, Outcomes, Resume, Usages, Connection):
    """The checkpoint of one job. Open with `Store.open(state_dir)`; close when done."""
