"""inspect_ai eval logs in and out: `--from-inspect LOG` and `judgecore export --to-inspect OUT`.

Logs are read and written only with inspect_ai's own log API (`inspect_ai.log.read_eval_log`,
`write_eval_log`), never parsed by hand, so both `.eval` and `.json` logs of any inspect_ai version
that reads them work.

In: one item per sample and epoch, in the log's order (`sample_object`):
- `id`: `"<sample id>:<epoch>"` (`item_id`), stable for the log's sample and epoch;
- `prompt`: the sample's input and the completion being judged, in the default layout of
  `judge_prompt` (`Question:` / `Response:`, then `Reference answer:` when the sample has a target);
- `metadata`: the sample's own metadata, then `input`, `output` (the completion), `target`,
  `sample_id` and `epoch` (these five win over a metadata key of the same name).

Out: the original log with one score per sample, named `judgecore` (`score_of`): its value is the
verdict's score field (the verdict itself when it has no such field); its explanation is the judge's
text; its metadata holds the verdict, the item's status, custom_id and error. A sample whose item has
no verdict (a miss, a pending item, a job without `--verdict`) gets inspect_ai's unscored score
(`Score.unscored`: a NaN value that metrics skip, reason `grader_failed`), text and status kept.
The log's results list the `judgecore` score with the mean of the numeric values.
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from adapters.checkpoint.records import records_from_store
from adapters.checkpoint.store import Store
from adapters.files.cells import need, object_line
from adapters.files.paths import publish
from adapters.usage import UsageError
from judgecore.results.verdicts import spec_from_json

SCORE_NAME = "judgecore"
T = TypeVar("T")


def _log_api(path: Path | str | None) -> Any:
    return need("inspect_ai.log", "inspect", path=path, what="an inspect_ai log")


def _off_loop(fn: Callable[[], T]) -> T:
    """`fn()` in a worker thread: inspect_ai's sync log API re-enters a running asyncio loop with
    nest_asyncio, which a run's own loop (the second read of the input) must not be patched by."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn).result()


def read_log(path: Path) -> Any:
    """The `EvalLog` at `path`, samples included; `UsageError` when it cannot be read as one."""
    api = _log_api(path)
    try:
        return _off_loop(lambda: api.read_eval_log(str(path)))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file (--from-inspect)") from None
    except Exception as exc:  # inspect_ai raises whatever its reader met (zip, JSON, validation)
        raise UsageError(f"{path}: not an inspect_ai eval log ({type(exc).__name__}: {exc})") from None


def item_id(sample_id: int | str, epoch: int) -> str:
    """The item id of a sample's epoch."""
    return f"{sample_id}:{epoch}"


def _text(value: Any) -> str:
    """A sample's input (text, or chat messages) as text: each message as `role: text`."""
    if isinstance(value, str):
        return value
    return "\n\n".join(f"{m.role}: {m.text}" for m in value)


def judge_prompt(input_text: str, output: str, target: str) -> str:
    """The default user turn for a sample: its input, the completion, and its target when it has one."""
    prompt = f"Question:\n{input_text}\n\nResponse:\n{output}"
    return prompt + f"\n\nReference answer:\n{target}" if target else prompt


def sample_object(sample: Any) -> dict[str, Any]:
    """The input object of one `EvalSample` (see the module docstring)."""
    input_text = _text(sample.input)
    output = sample.output.completion if sample.output is not None else ""
    target = sample.target if isinstance(sample.target, str) else "\n".join(sample.target)
    metadata = {
        **(sample.metadata or {}),
        "input": input_text,
        "output": output,
        "target": sample.target,
        "sample_id": sample.id,
        "epoch": sample.epoch,
    }
    return {
        "id": item_id(sample.id, sample.epoch),
        "prompt": judge_prompt(input_text, output, target),
        "metadata": metadata,
    }


def inspect_lines(path: Path) -> Iterator[bytes]:
    """The JSON lines of a log's samples (`adapters.files.readers.input_lines` for `--from-inspect`)."""
    log = read_log(path)
    for sample in log.samples or ():
        yield object_line(sample_object(sample))


def score_of(record: Mapping[str, Any], score_field: str | None) -> Any:
    """The inspect_ai `Score` of one output record (see the module docstring)."""
    Score = need("inspect_ai.scorer", "inspect", path=None, what="an inspect_ai score").Score

    verdict = record.get("verdict")
    metadata = {
        "verdict": verdict,
        "status": record["status"],
        "custom_id": record["custom_id"],
        "error": record.get("error"),
    }
    if verdict is None:
        return Score.unscored(reason="grader_failed", explanation=record.get("text"), metadata=metadata)
    field = score_field or "score"
    value = verdict.get(field, verdict) if isinstance(verdict, dict) else verdict
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if v is None or isinstance(v, (str, int, float, bool))}
    return Score(value=value, explanation=record.get("text"), metadata=metadata)


def export_to_inspect(state: Path, out: Path, *, log_path: Path | None = None) -> tuple[int, int]:
    """Write the log the job in `state` was read from (`log_path`, else the one it remembers), with
    each sample's score, to `out` (`.eval` or `.json`, atomically). Returns (scored, samples)."""

    api = _log_api(f"--to-inspect {out}")
    if out.suffix not in (".eval", ".json"):
        raise UsageError(f"--to-inspect {out}: an inspect_ai log is named .eval or .json")
    if not Store.exists(state):
        raise UsageError(f"{state}: no judgecore checkpoint here")
    store = Store.open_readonly(state)
    try:
        kept = store.verdict
        spec = spec_from_json(kept, sendable=False) if kept else None
        records = {r["id"]: r for r in records_from_store(store, spec)}
        remembered = store.inspect_log
    finally:
        store.close()
    source = log_path or (Path(remembered) if remembered else None)
    if source is None:
        raise UsageError(f"{state}: the job was not read from an inspect_ai log; give --from-inspect LOG")
    log = read_log(source)
    missing = []
    values: list[float] = []
    for sample in log.samples or ():
        record = records.get(item_id(sample.id, sample.epoch))
        if record is None:
            missing.append(item_id(sample.id, sample.epoch))
            continue
        score = score_of(record, spec.score if spec else None)
        sample.scores = {**(sample.scores or {}), SCORE_NAME: score}
        v = score.value
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            values.append(float(v))
    if missing:
        raise UsageError(
            f"{source}: {len(missing)} sample(s) are not in the job in {state} (first: {missing[0]!r}); "
            "was the job run on this log?"
        )
    log.results = _results(log, values)
    _write_atomic(api, log, out)
    return len(values), len(log.samples or ())


def _results(log: Any, values: list[float]) -> Any:
    """The log's results with the `judgecore` score and its mean (the original scores kept)."""
    api = _log_api(None)
    EvalMetric, EvalResults, EvalScore = api.EvalMetric, api.EvalResults, api.EvalScore
    n = len(log.samples or ())
    metrics = {"mean": EvalMetric(name="mean", value=sum(values) / len(values))} if values else {}
    ours = EvalScore(
        name=SCORE_NAME,
        scorer=SCORE_NAME,
        scored_samples=len(values),
        unscored_samples=n - len(values),
        metrics=metrics,
    )
    old = log.results
    if old is None:
        return EvalResults(total_samples=n, completed_samples=n, scores=[ours])
    kept = [s for s in old.scores if s.name != SCORE_NAME]
    return old.model_copy(update={"scores": [*kept, ours]})


def _write_atomic(api: Any, log: Any, out: Path) -> None:
    """`write_eval_log` to a temp file beside `out`, then rename over it (never over a checkpoint),
    with the mode the umask gives a new file (`adapters.files.paths.publish`)."""

    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.stem}.", suffix=out.suffix, dir=out.parent)
    Path(tmp).unlink()  # inspect_ai writes the file itself
    fmt = out.suffix.lstrip(".")
    try:
        _off_loop(lambda: api.write_eval_log(log, tmp, format=fmt))
        publish(tmp, out, "--to-inspect")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)
