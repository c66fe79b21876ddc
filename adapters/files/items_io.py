"""A job's items in: an input file or Python objects parsed into items (`FILE:LINE: reason` on the
first bad one), checked against the settings, and the job's plan built from them."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from adapters.checkpoint.jobkey import holds_checkpoint, ids_job_for
from adapters.files.readers import (
    dated,
    frame_lines,
    input_kind,
    input_lines,
    is_frame,
    native,
    templated_rows,
)
from adapters.run.settings import JobSettings
from adapters.usage import UsageError
from judgecore.decide.planning import JobPlan, plan_job
from judgecore.job.errors import DuplicateIdError, InputError, RequestTooLargeError
from judgecore.job.ids import check_unique
from judgecore.job.items import Item, Items
from judgecore.job.parsing import parse_item
from judgecore.wire.models import max_tokens_problem, thinking_problem

if TYPE_CHECKING:
    from adapters.files.messages import JobInput, MessageSource
    from adapters.files.readers import InputKind
    from judgecore.job.designs import Design


def check_arguments(
    items: object,
    *,
    rubric: object,
    state_dir: object,
    settings: object,
    out: object = None,
    progress: object = None,
    client: object = None,
    async_client: bool = True,
) -> None:
    """The Python API's arguments, checked before anything is read, written or sent: a `TypeError`
    naming the argument and what it takes (an `AttributeError` deep in the run said neither, and a
    `progress` that was no callable failed only after the first request had gone)."""

    def refuse(name: str, takes: str, value: object, hint: str = "") -> TypeError:
        return TypeError(f"{name} must be {takes}, got {type(value).__name__}{hint}")

    messages = sys.modules.get("adapters.files.messages")  # a `JobInput` (the CLI's) is made by it
    given = isinstance(items, os.PathLike) or (messages is not None and isinstance(items, messages.JobInput))
    if not given and (items is None or isinstance(items, Mapping) or not hasattr(items, "__iter__")):
        hint = ": one dict is one item, give a list of them" if isinstance(items, Mapping) else ""
        raise refuse(
            "items", "a sequence of dicts shaped like input lines, a DataFrame or a path", items, hint
        )
    if rubric is not None and not isinstance(rubric, str):
        hint = " (read the file: Path(...).read_text())" if isinstance(rubric, os.PathLike) else ""
        raise refuse("rubric", "the rubric's text (a str) or None", rubric, hint)
    if rubric is not None and not rubric.strip():  # as `--rubric FILE` of a blank file is refused
        raise UsageError("rubric is empty (or only whitespace); give rubric=None for a job without one")
    if not isinstance(state_dir, str | os.PathLike):
        raise refuse("state_dir", "a path (str or os.PathLike)", state_dir)
    if not isinstance(settings, JobSettings):
        raise refuse(
            "settings", "an adapters.JobSettings", settings, " (JobSettings(**...) takes its fields)"
        )
    if out is not None and not isinstance(out, str | os.PathLike):
        raise refuse("out", "a path (str or os.PathLike) or None", out)
    if progress is not None and not callable(progress):
        raise refuse("progress", "a callable taking each event, or None", progress)
    if client is not None:
        sync = any(c.__name__ == "SyncAPIClient" for c in type(client).__mro__)
        if not hasattr(client, "messages") or (async_client and sync):
            takes = "an anthropic.AsyncAnthropic (judge() sends concurrently) or None"
            raise refuse("client", takes if async_client else "an anthropic.Anthropic or None", client)


def input_error(source: Path | str | None, line: int | None, reason: str) -> UsageError:
    """The one place `FILE:LINE: reason` is assembled (`line N: reason` with no file)."""
    if line is None:
        return UsageError(f"{source}: {reason}" if source is not None else reason)
    return UsageError(f"{source}:{line}: {reason}" if source is not None else f"line {line}: {reason}")


@contextlib.contextmanager
def bulk_allocation() -> Iterator[None]:
    """No cyclic garbage collection while a job's items and requests are built: they are hundreds of
    thousands of acyclic objects, and each collection pass would walk all those made so far (about a
    third of the time of parsing 100,000 lines)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_items(
    path: Path,
    *,
    hold_messages: bool = True,
    digests: bool = True,
    job: str | None = None,
    kind: InputKind | None = None,
    lazy_ids: bool = False,
) -> Items:
    """Parse an input file (JSONL, CSV, Parquet, a saved dataset, an inspect_ai log: `kind`, else by
    its name; see `adapters.files.readers`); `UsageError` with `FILE:LINE: reason` on the first bad row.

    `hold_messages=False`: the items keep each message's size and digest, not the messages (a dry
    run's plan needs no more; to run them, `load_input` says where their messages are).
    `digests=False` as well (a dry run on a fresh state dir): only the sizes are kept. `job`: the
    job key of the custom_ids (`adapters.checkpoint.store.ids_job_for`); `lazy_ids=True` (a dry run on a fresh
    state dir, whose key is drawn for it alone): they are derived only if read
    (`judgecore.job.parsing.parse_items`)."""
    from judgecore.job.parsing import parse_items

    kind = kind or input_kind(path)
    with _reading(path), contextlib.closing(input_lines(path, kind)) as lines, bulk_allocation():
        items = parse_items(lines, hold_messages=hold_messages, digests=digests, job=job, lazy_ids=lazy_ids)
    if not items:
        raise UsageError(f"{path}: the input has no items")
    return items


def load_input(path: Path, *, job: str | None = None, kind: InputKind | None = None) -> JobInput:
    """A run's input (the CLI's): its items parsed keeping each message's size and digest, not the
    messages; the run reads them from `path` again to keep them in its checkpoint
    (`adapters.files.messages.InputMessages`), so no run holds its whole input in memory."""
    from adapters.files.messages import InputMessages, JobInput

    kind = kind or input_kind(path)
    items = load_items(path, hold_messages=False, job=job, kind=kind)
    # the digests held by the source, which drops them once the checkpoint keeps them (not the items)
    return JobInput(attrs.evolve(items, digests=None), InputMessages(path, kind, digests=items.digests))


def load_design_input(
    path: Path, design: Design, *, job: str | None, kind: InputKind | None = None
) -> JobInput:
    """`load_design_items` for a run: the requests' messages are built, so they are held, by the
    shell alone (`adapters.files.messages.HeldMessages`), until the run's checkpoint keeps them."""
    from adapters.files.messages import split_messages

    return split_messages(load_design_items(path, design, job=job, kind=kind))


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[None]:
    """Reading `path`'s items: what goes wrong becomes one `UsageError` naming the file (and the line)."""
    try:
        yield
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (InputError, DuplicateIdError) as exc:
        raise input_error(path, exc.line, exc.reason) from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 ({exc})") from None


def load_design_items(path: Path, design: Design, *, job: str | None, kind: InputKind | None = None) -> Items:
    """The requests of a multi-request or templated job read from `path` (`judgecore.job.designs`): each
    row expanded into its requests, their messages held (a design's prompts are built, not read
    back from the file); `UsageError` with `FILE:LINE: reason` on the first bad row."""
    kind = kind or input_kind(path)
    with (
        _reading(path),
        contextlib.closing(input_lines(path, kind)) as lines,
        bulk_allocation(),
        templated_rows(),
    ):
        items = design_items_of(design, enumerate(lines, start=1), job=job)
    if not items:
        raise UsageError(f"{path}: the input has no items")
    return items


def design_items_of(design: Design, lines: Iterable[tuple[int, bytes | str]], *, job: str | None) -> Items:
    """`judgecore.job.designs.design_items` of numbered JSON lines (blank lines skipped)."""
    from judgecore.job.designs import expand_item, expand_templated

    def rows() -> Iterator[Any]:
        for n, raw in lines:
            if design.template is not None:
                if not raw.strip():
                    continue
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    raise InputError(n, f"not valid JSON ({exc})") from None
                if type(obj) is dict and type(obj.get("metadata")) is dict:  # a table's other columns
                    meta = obj.pop("metadata")
                    obj = {**meta, **obj}
                yield expand_templated(design, n, obj)
            else:
                item = parse_item(n, raw)
                if item is not None:
                    yield expand_item(
                        design, item.id, n, item.messages_json, item.max_tokens, item.metadata_json
                    )

    from judgecore.job.designs import design_items

    return design_items(design, rows(), job=job)


def _line_of(n: int, obj: object) -> bytes:
    """Item `n` (1-based) as the JSON line the parser reads; numpy scalars and arrays (what a
    DataFrame's cells hold) are numbers and lists. `InputError` for an object no line could be."""
    if not isinstance(obj, Mapping):
        raise InputError(n, f"expected a dict shaped like an input line, got {type(obj).__name__}")
    option = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
    try:
        return orjson.dumps(dict(obj), default=dated, option=option)
    except TypeError:  # e.g. a numpy array of objects (a list cell of `DataFrame.to_dict("records")`)
        try:
            return orjson.dumps(native(dict(obj)), default=dated, option=option)
        except TypeError as exc:
            raise InputError(n, f"not JSON-serializable: {exc}") from None


def items_from_objects(objects: Iterable[Mapping[str, Any] | Item]) -> tuple[Item, ...]:
    """Items from Python objects shaped like input lines (or `Item`s), or from the rows of a pandas
    DataFrame (`adapters.files.readers.row_object`), validated as the CLI would."""
    out: list[Item] = []
    try:
        rows: Iterable[Mapping[str, Any] | Item | bytes] = (
            frame_lines(objects) if is_frame(objects) else objects
        )
        for n, obj in enumerate(rows, start=1):
            if isinstance(obj, Item):
                out.append(obj)
                continue
            item = parse_item(n, obj if isinstance(obj, bytes) else _line_of(n, obj))
            if item is not None:
                out.append(item)
        check_unique([i.id for i in out], [i.custom_id for i in out], [i.line for i in out])
    except (InputError, DuplicateIdError) as exc:
        raise input_error(None, exc.line, exc.reason) from None
    return tuple(out)


def _design_objects(design: Design, objects: Iterable[Mapping[str, Any]]) -> Items:
    """The requests of a design from Python objects (or a DataFrame's rows), as from a file."""
    try:
        with templated_rows():
            rows: Iterable[Any] = frame_lines(objects) if is_frame(objects) else objects
            numbered = (
                (n, obj if isinstance(obj, bytes) else _line_of(n, obj))
                for n, obj in enumerate(rows, start=1)
            )
            return design_items_of(design, numbered, job=None)
    except (InputError, DuplicateIdError) as exc:
        raise input_error(None, exc.line, exc.reason) from None


def job_of(
    items: Sequence[Item] | Iterable[Mapping[str, Any]] | JobInput,
    *,
    rubric: str | None,
    settings: JobSettings,
    state_dir: Path,
) -> JobPlan:
    """The job's items, checked against the settings, with the custom_ids of the job `state_dir`
    holds (or of a new one), and its plan, built once (a dry run: the items keep their messages when
    they hold them, for `--count-tokens`)."""
    # a `JobInput` is made by `adapters.files.messages`: a dry run of a file's items never imports it
    messages = sys.modules.get("adapters.files.messages")
    if messages is not None and isinstance(items, messages.JobInput):
        given = items
        items = given.items
        if not items.holds_messages and items.digests is None:  # the source holds them (`load_input`)
            items = attrs.evolve(items, digests=b"".join(given.messages.digests(items)))
    return _checked_plan(_items_of(items, rubric, settings, state_dir), rubric=rubric, settings=settings)


def run_job_of(
    items: Sequence[Item] | Iterable[Mapping[str, Any]] | JobInput,
    *,
    rubric: str | None,
    settings: JobSettings,
    state_dir: Path,
) -> tuple[JobPlan, MessageSource]:
    """`job_of` for a run: the plan holds no messages, and the source says where they are until the
    run hands them to its checkpoint (`adapters.files.messages.hand_to_checkpoint`)."""
    from adapters.files.messages import JobInput, split_messages

    design = settings.design
    if isinstance(items, str | os.PathLike):  # a path: its messages read again, never held
        # the custom_ids derived once, with the job's key (as the CLI does), not once more in `_items_of`
        path, job = Path(items), ids_job_for(state_dir, settings.manifest(rubric))
        single = design.single and design.template is None
        items = load_input(path, job=job) if single else load_design_input(path, design, job=job)
    if isinstance(items, JobInput):
        cols, source = _items_of(items.items, rubric, settings, state_dir), items.messages
    else:
        cols = _items_of(items, rubric, settings, state_dir)
        if not cols.holds_messages:
            raise UsageError(
                "the items do not hold their messages (loaded with hold_messages=False): "
                "load the input with adapters.files.items_io.load_input to run it"
            )
        split = split_messages(cols)
        cols, source = split.items, split.messages
    return _checked_plan(cols, rubric=rubric, settings=settings), source


def _items_of(
    items: Sequence[Item] | Iterable[Mapping[str, Any]],
    rubric: str | None,
    settings: JobSettings,
    state_dir: Path,
) -> Items:
    """The job's items as columns, with the custom_ids of the job `state_dir` holds (or a new one's)."""
    plain = settings.plain
    if isinstance(items, str | os.PathLike):  # a path: the file's items, read as the CLI reads it
        items = (
            load_items(Path(items)) if plain else load_design_items(Path(items), settings.design, job=None)
        )
    if not isinstance(items, Items) and not plain:
        items = _design_objects(settings.design, items)  # type: ignore[arg-type]
    if not isinstance(items, Items):  # a tuple may hold dicts as well as `Item`s: each is checked
        items = items_from_objects(items)  # type: ignore[arg-type]
    cols = Items.of(items)
    if cols.job is None or holds_checkpoint(state_dir):  # the CLI derived a new dir's key already
        try:
            cols = cols.for_job(ids_job_for(state_dir, settings.manifest(rubric)))
        except DuplicateIdError as exc:
            raise input_error(None, exc.line, exc.reason) from None
    return cols


def _checked_plan(items: Items, *, rubric: str | None, settings: JobSettings) -> JobPlan:
    """The plan of `items`, checked against the settings first (exit 2 before anything is sent)."""
    if not items:
        raise UsageError("the input has no items")
    warnings = settings.warnings()  # a retired model: exit 2 here, before anything is sent
    given = items.max_tokens
    for k, mt in enumerate(given if given.count(None) != len(given) else ()):  # () : none given
        if mt is None:
            continue
        for model in settings.models:
            if problem := max_tokens_problem(model, mt):
                raise input_error(None, items.lines[k], f"item {items.ids[k]!r}: {problem}")
            if settings.thinking is not None and (problem := thinking_problem(model, settings.thinking, mt)):
                raise input_error(None, items.lines[k], f"item {items.ids[k]!r}: {problem}")
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    with bulk_allocation():
        return plan_the_job(items, rubric=rubric, settings=settings)


def plan_the_job(items: Sequence[Item], *, rubric: str | None, settings: JobSettings) -> JobPlan:
    """The job's plan, once; an item too large for any sub-batch (when batches are possible) is a
    `UsageError` naming its line, before anything is sent."""
    try:
        return plan_job(
            items,
            model=settings.request_model,
            max_tokens=settings.max_tokens,
            rubric=rubric,
            max_batch_bytes=None if settings.force == "sync" else settings.max_batch_bytes,
            output_config=settings.verdict.output_config() if settings.verdict is not None else None,
            thinking=settings.thinking,
        )
    except RequestTooLargeError as exc:
        raise input_error(None, exc.line, exc.reason) from None


__all__ = [
    "bulk_allocation",
    "design_items_of",
    "input_error",
    "items_from_objects",
    "job_of",
    "load_design_input",
    "load_design_items",
    "load_input",
    "load_items",
    "plan_the_job",
    "run_job_of",
]
