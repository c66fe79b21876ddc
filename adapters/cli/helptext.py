"""The command line's help text: the description and each command's epilog (what it does, its exit
status, examples), kept apart from the grammar in `adapters.cli.parser`."""

from __future__ import annotations

DESCRIPTION = """\
Run LLM-judge scoring (rubric, alignment, refusal grading of stored completions) through the Anthropic
API at any size, without ever wedging. Small jobs go straight to the Messages API with bounded
concurrency and a warm prompt cache; large ones go to the Message Batches API (half price) in
sub-batches of at most 8,000 requests, each wait bounded by the batch's own expires_at.
Every run checkpoints to --state DIR: rerun the same command to resume; nothing is paid for twice.

Start here:  judgecore demo           (a whole job against a local simulator; no key, no network)
Then:        judgecore run items.jsonl --state runs/job1 --rubric rubric.txt --dry-run
"""


RUN_EPILOG = """\
input (JSONL, one object a line, blank lines ignored):
  {"id": "q17-s3", "prompt": "text of the user turn"}
  {"id": "q18-s1", "messages": [{"role": "user", "content": "..."}], "max_tokens": 512, "metadata": {...}}
  also .jsonl.gz, .csv, .parquet, a datasets save_to_disk directory (columns id, prompt or messages,
  max_tokens; every other column is metadata), or --from-inspect LOG (an inspect_ai eval log)

output (one line per item, input order; default STATE/output.jsonl; .csv or .parquet by --out's
  extension): id, custom_id, status (succeeded | miss | quarantined | pending), route, text, stop_reason, model, usage, error,
  batch_id, attempts, metadata, verdict (with --verdict; a verdict that cannot be read is a miss
  of class VERDICT_UNPARSED, its text kept); a refusal is a miss of class MODEL_REFUSAL, never
  scored, its line carrying stop_details (the refusal's category and explanation); with a judge
  design, samples, agreement (--samples) and judges (--judge), one line per item still

exit status:
  0  every item is final (succeeded, miss or quarantined)
  1  a local fault: the disk under the checkpoint or the output is full, read-only or failing; nothing
     harvested is lost: make room and rerun the same command
  2  bad usage or bad input (a path, a flag value, an input line); nothing was sent
  3  some items are pending: rerun the same command to resume (a --budget stop: a line starting
     `budget: stopped`, and the command to resume with the budget the rest needs)
  4  fatal API configuration (authentication, permission, unknown model, an endpoint that cannot be
     reached, every request invalid), or the API refused the account (on hold, a spend limit,
     billing: nothing quarantined, rerun once fixed)
  130 interrupted (Ctrl-C), 143 terminated (SIGTERM), 129 hung up (SIGHUP: the terminal went
      away): the checkpoint is safe and the output written with unfinished items pending; rerun
      the same command to resume

credentials come from ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another endpoint); the key is
never printed, logged or written to disk.

examples:
  judgecore run items.jsonl --state runs/j1 --rubric rubric.txt --dry-run          # the plan and its cost
  judgecore run items.jsonl --state runs/j1 --rubric rubric.txt                    # run (or resume)
  judgecore run items.jsonl --state runs/j1 --rubric rubric.txt --force-sync       # same-day critical run
  judgecore status --state runs/j1
  judgecore run items.jsonl --state runs/j2 --rubric rubric.txt --verdict verdict.json   # with scores
  judgecore summary --state runs/j2 --html report.html                             # scores and spend
  judgecore run answers.jsonl --state runs/p --template pairwise.txt --pairwise answer_a,answer_b
  judgecore run answers.jsonl --state runs/p3 --template grade.txt --verdict score.json \\
      --judge claude-haiku-4-5 --judge claude-sonnet-4-6 --judge claude-opus-4-6 --samples 3   # a panel
"""


STATUS_EPILOG = """\
exit status: 0 every item is final; 3 some items are pending (the line `resume with:` gives the
command); 2 no checkpoint in DIR.

examples:
  judgecore status --state runs/j1
  judgecore status --state runs/j1 --json     # counts, route, spend, the resume command
"""

CANCEL_EPILOG = """\
exit status:
  0  every live batch was asked to cancel (or had ended already)
  2  no checkpoint in DIR, or a run is using it (stop that run: its Ctrl-C keeps the checkpoint safe)
  3  a cancel failed for a transient cause; the batch still runs: the same command again cancels it
  4  the API refused the key or could not be reached; the batch still runs: fix it, cancel again

credentials come from ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL), as for `run`.

example:
  judgecore cancel --state runs/j1     # then `judgecore run --state runs/j1` resumes the rest
"""

EXPORT_EPILOG = """\
exit status: 0 the log was written; 2 bad usage (no checkpoint in DIR, no log to read, OUT is a file
the job reads); nothing is sent.

example:
  judgecore run --from-inspect logs/run.eval --state runs/i1 --rubric rubric.txt
  judgecore export --state runs/i1 --to-inspect logs/run-judged.eval && inspect view
"""

SIMULATOR_EPILOG = """\
point judgecore (or any program using the anthropic SDK) at it through the SDK's own environment;
any key works:
  judgecore simulator --port 8765 &
  export ANTHROPIC_BASE_URL=http://127.0.0.1:8765 ANTHROPIC_API_KEY=sk-sim
  judgecore run items.jsonl --state runs/sim1 --rubric rubric.txt
the same port speaks OpenAI's wire to the openai SDK (chat completions, files, batches):
  export OPENAI_BASE_URL=http://127.0.0.1:8765/v1 OPENAI_API_KEY=sk-sim
and answers its --served-model names as a vLLM server does (base URL http://127.0.0.1:8765/v1).

examples:
  judgecore simulator --port 8765 --batch-seconds 30          # batches take 30 s to end
  judgecore simulator --port 8765 --sync-429-rate 0.1         # one sync request in ten is a 429
  judgecore simulator --port 8765 --never-end --expires-after 60   # a batch that wedges
  judgecore simulator --openai-tpm 200000 --openai-429-rate 0.05  # OpenAI limits and 429s
  judgecore simulator --openai-enqueued-token-limit 50000     # big OpenAI batches fail validation
  judgecore simulator --served-latency 0.2 --served-slots 16 --served-max-queued 32   # a loaded vLLM
  judgecore simulator --self-preference gpt=0.8               # GPT judges favour GPT-written answers
"""


SUMMARY_EPILOG = """\
scored, unscored and missing come first: the score's statistics are over the scored items only.
  scored     the verdict has a score
  unscored   the model answered but there is no score (VERDICT_UNPARSED, MODEL_TRUNCATION, ...)
  missing    no answer to read (quarantined, pending)

exit status: 0 the summary was printed (and --html written); 2 bad usage (no checkpoint in DIR, a bad
verdict spec, an --html FILE the job reads). Nothing is sent.

examples:
  judgecore summary --state runs/j1
  judgecore summary --state runs/j1 --by model --reference gold --html report.html
  judgecore summary --state runs/j1 --verdict new-pattern.json --json     # re-read the answers
  judgecore summary --state runs/j1 --by model --markdown                 # tables to paste
  judgecore summary --state runs/j1 --by uid --top 50                     # the 50 largest of many groups
"""
