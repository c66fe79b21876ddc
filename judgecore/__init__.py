"""judgecore: the pure decision core of LLM-judge runs through the Anthropic API.

Every function here takes and returns immutable values; nothing here touches the SDK, the clock, the
disk or the terminal (that is `adapters`). The packages, by concern, each importing only those below it
(the contracts in pyproject.toml, checked by `lint-imports`):

- `run`: the machines: the job (`run.job.JobRun`), the batch run (`run.batch.BatchRun`), the sync run
  (`run.sync.SyncRun`), the sub-batch lifecycle (`run.subbatch`) and the words they share (`run.vocab`)
- `summary`: a job's summary as a value and as text: statistics, reliability, group differences,
  examples, number formats, the dry-run plan's text
- `decide`: the run's single decisions: route, backoff, polling, rate limits, the breaker, resume,
  prices, spend and the budget, the plan, the checkpoint's journal
- `results`: what one answer means: its status and usage, its class, a batch result line, its
  verdict, its item's output line
- `wire`: what goes on the wire: requests (without messages), the create body's bytes, structured
  output schemas, sub-batch chunks, the model table
- `job`: what the user asked: items and their columns, custom_ids and id sets, designs and how an
  item's answers fold back into one verdict (`job.consensus`), the core's errors

This module imports nothing: a program imports each name from the module that defines it
(`from judgecore.decide.routing import route`), so that importing one module never loads the others.

Glossary (one name per idea, in code, CLI, output and docs):

- *item*: one input row, named by its `id`; the output has one line per item.
- *custom_id*: the API's name for one request of a job, derived from the job and the item
  (`ids.custom_id_for`), `^[a-zA-Z0-9_-]{1,64}$`; the checkpoint is keyed by it.
- *route*: how a job's requests travel, `"sync"` (Messages API, bounded concurrency) or `"batch"`
  (Message Batches); `routing.route` decides it.
- *sub-batch*: one Message Batch of a job, at most 8,000 requests and 250 MB (`chunking.chunk`).
- *round*: one pass of a batch run over every id neither final nor in flight; its sub-batches are
  created, polled and harvested before the next round offers what came back for retry.
- *send*: one request put on the wire (a sync call, or a request inside a created sub-batch).
- *attempt*: a send that came back with an answer or an error; an output line's `attempts` counts
  them across every run, `--max-attempts` bounds them per item per run.
"""
