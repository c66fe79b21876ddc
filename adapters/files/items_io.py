"""A job's items in: an input file or Python objects parsed into items (`FILE:LINE: reason` on the
first bad one), checked against the settings, and the job's plan built from them."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from adapters.files.cells import dated
from adapters.files.messages import JobInput, split_messages
from adapters.files.readers import (
    InputKind,
    frame_lines,
    input_kind,
    input_lines,
    is_frame,
    native,
    templated_rows,
)
from adapters.usage import UsageError
from judgecore.job.designs import Design, design_items, expand_item, expand_templated
from judgecore.job.errors import DuplicateIdError, InputError
from judgecore.job.ids import check_unique
from judgecore.job.items import Item, Items, raw_digest
from judgecore.job.parsing import Keep, ParsedChunk, iter_line_messages, parse_chunks, parse_item, parse_items


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
    keep: Keep | None = None,
) -> Items:
    """Parse an input file (JSONL, CSV, Parquet, a saved dataset, an inspect_ai log: `kind`, else by
    its name; see `adapters.files.readers`); `UsageError` with `FILE:LINE: reason` on the first bad row.

    `hold_messages=False`: the items keep each message's size and digest, not the messages (a dry
    run's plan needs no more; to run them, `adapters.files.checkpointed.load_input` says where their messages are).
    `digests=False` as well (a dry run on a fresh state dir): only the sizes are kept. `job`: the
    job key of the custom_ids (`adapters.checkpoint.jobkey.ids_job_for`); `lazy_ids=True` (a dry run on a fresh
    state dir, which keeps nothing): they are derived only if read
    (`judgecore.job.parsing.parse_items`). `keep`: what takes each block's custom_ids and messages
    as they are parsed (a run's checkpoint, `adapters.files.checkpointed.kept_as_parsed`)."""

    kind = kind or input_kind(path)
    with _reading(path), contextlib.closing(input_lines(path, kind)) as lines, bulk_allocation():
        items = parse_items(
            lines, hold_messages=hold_messages, digests=digests, job=job, lazy_ids=lazy_ids, keep=keep
        )
    if not items:
        raise UsageError(f"{path}: the input has no items")
    return items


def scan_items(path: Path, *, kind: InputKind | None = None) -> Iterator[ParsedChunk]:
    """The items of an input file (as `load_items` reads it, with the same errors), a chunk at a
    time, none kept (`judgecore.job.parsing.parse_chunks`): a plan's that keeps only totals."""
    kind = kind or input_kind(path)
    with _reading(path), contextlib.closing(input_lines(path, kind)) as lines:
        yield from parse_chunks(lines)


def content_at(path: Path, line: int, *, kind: InputKind | None = None) -> bytes | None:
    """The content digest (`judgecore.job.items.raw_digest`) of the item on `line` of an input file,
    read again (None: no item there)."""
    kind = kind or input_kind(path)
    with _reading(path), contextlib.closing(input_lines(path, kind)) as lines:
        for n, _, messages_json, max_tokens in iter_line_messages(lines):
            if n == line:
                return raw_digest(messages_json, max_tokens)
    return None


def load_design_input(
    path: Path, design: Design, *, job: str | None, kind: InputKind | None = None
) -> JobInput:
    """`load_design_items` for a run: the requests' messages are built, so they are held, by the
    shell alone (`adapters.files.messages.HeldMessages`), until the run's checkpoint keeps them."""

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


def design_objects(design: Design, objects: Iterable[Mapping[str, Any]]) -> Items:
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


__all__ = [
    "bulk_allocation",
    "design_items_of",
    "design_objects",
    "input_error",
    "items_from_objects",
    "load_design_input",
    "load_design_items",
    "load_items",
]
