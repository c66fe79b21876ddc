"""`judgecore export --to-inspect OUT`: a job's verdicts written back into the inspect_ai log it was read
from, as a `judgecore` score per sample (see `adapters.files.inspect_log`, which reads such logs).
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from adapters.checkpoint.records import records_from_store
from adapters.checkpoint.store import Store
from adapters.files.cells import need
from adapters.files.inspect_log import SCORE_NAME, _log_api, _off_loop, item_id, read_log
from adapters.files.paths import publish
from adapters.usage import UsageError
from judgecore.results.verdicts import spec_from_json


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
