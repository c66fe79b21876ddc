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

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from adapters.files.cells import need, object_line
from adapters.usage import UsageError

SCORE_NAME = "judgecore"
T = TypeVar("T")


def _log_api(path: Path | str | None) -> Any:
    return need("inspect_ai.log", "inspect", path=path, what="an inspect_ai log")


def _off_loop(fn: Callable[[], T]) -> T:
    """`fn()` in a worker thread: inspect_ai's sync log API re-enters a running asyncio loop with
    nest_asyncio, which a run's own loop (the second read of the input) must not be patched by. What
    `fn` raises is raised here. (A thread, not `concurrent.futures`, which loads `logging` for every
    input read, `--from-inspect` or not.)"""
    done: list[T] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            done.append(fn())
        except BaseException as exc:
            failed.append(exc)

    worker = threading.Thread(target=work, name="inspect-log")
    worker.start()
    worker.join()
    if failed:
        raise failed[0]
    return done[0]


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
