"""Input readers: every format judgecore reads, turned into the JSON lines the core already parses.

Theory of operation. The core has one parser (`judgecore.job.parsing.parse_items`): one JSON object a line,
each line numbered from 1 as it is read. Every reader here yields exactly such lines, one per row of
its format, so every rule (ids, `prompt` / `messages`, `max_tokens`, nesting, duplicates) and every
error message stays one implementation, and the number in `FILE:N: reason` is the row's place:

| format | N is |
| --- | --- |
| `.jsonl`, `.jsonl.gz` | the line (blank lines count and are skipped) |
| `.csv` | the CSV row, the header being row 1 (the line, unless a quoted cell spans lines) |
| `.parquet`, a `datasets.save_to_disk` directory | the row, the first being row 1 |
| an inspect_ai log (`--from-inspect`) | the sample's place in the log, epochs in order |

A reader yields `b""` for a row that is not an item (the CSV header, a blank CSV line): the parser
skips blank lines, so the numbering stays the format's own. A tabular row becomes an input object by
one function, `row_object` (the `--template` design will replace it there). Readers stream: a
Parquet file is read a row group slice at a time, a saved dataset through its memory map.

The second read of a run (`adapters.files.messages.InputMessages`, which keeps the messages in the
checkpoint) goes through `input_lines` again, so both reads see the same rows.
"""

from __future__ import annotations

import contextlib
import contextvars
import csv
import gzip
import math
import sys
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Literal

import orjson

from adapters.files.cells import need, object_line
from adapters.files.inspect_log import inspect_lines
from adapters.usage import UsageError
from judgecore.job.errors import InputError
from judgecore.job.parsing import MAX_LINE_BYTES
from judgecore.results.verdicts import VerdictSpec, VerdictSpecError, spec_from_json

InputKind = Literal["jsonl", "jsonl.gz", "csv", "parquet", "dataset", "inspect"]

#: how INPUT's name ends -> its format
SUFFIXES: Mapping[str, InputKind] = {
    ".jsonl": "jsonl",
    ".jsonl.gz": "jsonl.gz",
    ".csv": "csv",
    ".parquet": "parquet",
}
#: the file every `datasets.save_to_disk` directory holds (a `DatasetDict` holds `dataset_dict.json`)
_DATASET_MARKS = ("state.json", "dataset_dict.json")
#: the columns of a tabular row that are fields of the item; every other column is its metadata
ITEM_COLUMNS = ("id", "prompt", "messages", "max_tokens")
#: the longest CSV cell read, in characters: a JSON line's limit (the API's request limit)
MAX_CELL = MAX_LINE_BYTES
#: rows converted to Python at a time from a Parquet file or a dataset (bounds the memory of a read)
BATCH_ROWS = 2048

KNOWN = ".jsonl, .jsonl.gz, .csv, .parquet, or a directory written by datasets' save_to_disk"


def input_kind(path: Path) -> InputKind:
    """The format of INPUT `path`, by its name (a directory: a saved dataset); `UsageError` for
    any other."""
    if path.is_dir():
        if any((path / mark).is_file() for mark in _DATASET_MARKS):
            return "dataset"
        raise UsageError(
            f"{path}: is a directory, but not one written by datasets' save_to_disk (INPUT is {KNOWN})"
        )
    name = path.name.lower()
    for suffix, kind in sorted(SUFFIXES.items(), key=lambda kv: -len(kv[0])):
        if name.endswith(suffix):
            return kind
    shown = "".join(path.suffixes[-2:]) or "no extension"
    raise UsageError(f"{path}: unknown input format ({shown}); INPUT is {KNOWN}")


def input_lines(path: Path, kind: InputKind | None = None) -> Iterator[bytes]:
    """INPUT `path` as JSON lines, one per row of its format, numbered as the module docstring says.
    `InputError` names a bad row; `UsageError` a file that cannot be read at all."""
    kind = kind or input_kind(path)
    if kind == "jsonl":  # the file itself: each line read in C, with no generator in between
        return _past_bom(path.open("rb"))
    return _format_lines(path, kind)


_BOM = b"\xef\xbb\xbf"


def _past_bom(f: IO[bytes]) -> IO[bytes]:
    """`f` past a UTF-8 byte order mark at its start (as some Windows editors write one), else at its
    start: JSON text has none, but the mark is no content, as in a CSV."""
    if f.read(len(_BOM)) != _BOM:
        f.seek(0)
    return f


def _format_lines(path: Path, kind: InputKind) -> Iterator[bytes]:
    """`input_lines` of every format but JSONL."""
    match kind:
        case "jsonl.gz":
            with gzip.open(path, "rb") as f:
                try:
                    yield from _past_bom(f)
                except (gzip.BadGzipFile, EOFError, zlib.error) as exc:  # zlib's: damaged data
                    raise UsageError(
                        f"{path}: not a gzip file, or a damaged or truncated one ({exc})"
                    ) from None
        case "csv":
            yield from _csv_lines(path)
        case "parquet":
            yield from _parquet_lines(path)
        case "dataset":
            yield from _dataset_lines(path)
        case "inspect":
            yield from inspect_lines(path)


def row_object(row: Mapping[str, Any]) -> dict[str, Any]:
    """The input object of one tabular row (CSV, Parquet, a dataset, a DataFrame): the columns `id`,
    `prompt`, `messages` (JSON text, or a list) and `max_tokens` are the item's fields, every other
    column goes into its `metadata` under its own name. An empty or null `prompt`, `messages` or
    `max_tokens` cell is absent; an integer id is its decimal text; `max_tokens` text of digits is
    its number. What is left wrong is the parser's to reject (with the row's number)."""
    obj: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    for key, value in row.items():
        if key not in ITEM_COLUMNS:
            metadata[str(key)] = None if _is_nan(value) else value
        elif key == "id":
            obj["id"] = str(value) if type(value) is int else value
        elif value is None or value == "" or _is_nan(value):
            continue
        elif key == "messages" and isinstance(value, str):
            try:
                obj["messages"] = orjson.loads(value)
            except orjson.JSONDecodeError as exc:
                raise ValueError(f"the 'messages' cell is not valid JSON ({exc})") from None
        elif key == "max_tokens":
            obj["max_tokens"] = _whole_number(value)
        else:
            obj[key] = value
    if metadata:
        obj["metadata"] = metadata
    return obj


def rows_as_lines(rows: Iterable[Mapping[str, Any]], *, first: int = 1) -> Iterator[bytes]:
    """Tabular rows (numbered from `first`) as JSON lines; `InputError` naming a bad cell's row."""
    for n, row in enumerate(rows, start=first):
        try:
            yield object_line(row_object(row))
        except (ValueError, TypeError, orjson.JSONEncodeError) as exc:
            raise InputError(n, str(exc)) from None


def _whole_number(value: Any) -> Any:
    """`max_tokens` from a cell: digits (CSV text) or an integral float (a pandas column with gaps)
    become an int; anything else is left for the parser to reject."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if type(value) is float and value.is_integer():
        return int(value)
    return value


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


#: True while rows are read for a `--template` (judgecore.job.designs): a row is `id` plus any fields
_TEMPLATED: contextvars.ContextVar[bool] = contextvars.ContextVar("templated", default=False)


@contextlib.contextmanager
def templated_rows() -> Iterator[None]:
    """Read tables as rows for a template: no `prompt` or `messages` column needed."""
    token = _TEMPLATED.set(True)
    try:
        yield
    finally:
        _TEMPLATED.reset(token)


def _check_columns(names: Iterable[str], line: int, *, repeat: str = "the columns repeat") -> None:
    """A table needs an `id` column and a `prompt` or `messages` one (`InputError` at `line`); under a
    template (`templated_rows`) only the `id` column. No column may be named twice (a row's dict would
    keep the last cell alone): `repeat` begins the reason that names them."""
    have = list(names)
    if len(set(have)) != len(have):
        dup = sorted({h for h in have if have.count(h) > 1})
        raise InputError(line, f"{repeat} {', '.join(map(repr, dup))}")
    listed = ", ".join(map(repr, have)) or "none"
    if "id" not in have:
        raise InputError(line, f"no 'id' column (the columns are {listed})")
    if _TEMPLATED.get():
        return
    if "prompt" not in have and "messages" not in have:
        raise InputError(line, f"no 'prompt' or 'messages' column (the columns are {listed})")


def _csv_lines(path: Path) -> Iterator[bytes]:
    """A CSV file (header row, UTF-8, a byte order mark and CRLF accepted; every cell text). Bytes
    that are not UTF-8 are read as lone surrogates (`surrogateescape`), so the row that holds them is
    the one named; a csv error names the row it happened in (where an unclosed quote opened)."""

    # a cell may be as long as a JSON line (the csv module refuses one over 131,072 characters); only
    # ever raised, so that a read still under way elsewhere in the process never sees it lowered
    if csv.field_size_limit() < MAX_CELL:
        csv.field_size_limit(MAX_CELL)
    with path.open("r", encoding="utf-8-sig", errors="surrogateescape", newline="") as f:
        reader = csv.reader(f, strict=True)
        n = 1  # the row being read
        try:
            header = next(reader, None)
            if header is None:
                return
            _check_utf8(header, 1)
            _check_columns(header, 1, repeat="the header repeats column(s)")
            yield b""  # the header is row 1
            width = len(header)
            n = 2
            for cells in reader:
                if not cells:
                    yield b""  # a blank line, skipped and counted
                    n += 1
                    continue
                _check_utf8(cells, n)
                if cells[0].startswith("\ufeff"):  # past the file's start (`utf-8-sig` skips that one)
                    raise InputError(
                        n,
                        "a byte order mark begins the row (two files joined?); only the file's start may hold one",
                    )
                if len(cells) != width:
                    raise InputError(n, f"the row has {len(cells)} cells; the header has {width}")
                yield from rows_as_lines((dict(zip(header, cells, strict=True)),), first=n)
                n += 1
        except csv.Error as exc:
            raise InputError(n, f"not valid CSV ({exc})") from None


def _check_utf8(cells: list[str], row: int) -> None:
    """`InputError` at `row` for a cell holding bytes that are not UTF-8 (read as lone surrogates)."""
    text = "".join(cells)
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start].encode("utf-8", "surrogateescape")
        raise InputError(row, f"not UTF-8 (byte 0x{bad.hex()} in the row)") from None


def _parquet_lines(path: Path) -> Iterator[bytes]:
    """A Parquet file, `BATCH_ROWS` rows converted at a time."""
    pq = need("pyarrow.parquet", "data", path=path, what="reading Parquet")
    pa = need("pyarrow", "data", path=path, what="reading Parquet")
    try:
        pf = pq.ParquetFile(path, memory_map=True)
    except (pa.ArrowInvalid, OSError) as exc:
        raise UsageError(f"{path}: not a Parquet file ({exc})") from None
    _check_columns(pf.schema_arrow.names, 1)
    n = 1
    batches = pf.iter_batches(batch_size=BATCH_ROWS, use_threads=False)
    while True:
        try:
            batch = next(batches, None)
        except (pa.ArrowException, OSError) as exc:  # a damaged page: pyarrow's OSError or ArrowInvalid
            raise InputError(n, f"the Parquet data cannot be read from this row on ({exc})") from None
        if batch is None:
            break
        rows = batch.to_pylist()
        yield from rows_as_lines(rows, first=n)
        n += len(rows)


def _dataset_lines(path: Path) -> Iterator[bytes]:
    """A directory written by `datasets.Dataset.save_to_disk` (one split), read through its memory map."""
    datasets = need("datasets", "data", path=path, what="reading a saved dataset")
    state = path / "state.json"
    if state.is_file() and orjson.loads(state.read_bytes()).get("_data_files") == []:
        return  # a dataset of no rows has no data file (and `load_from_disk` fails on it)
    try:
        ds = datasets.load_from_disk(str(path))
    except (FileNotFoundError, ValueError, OSError) as exc:
        raise UsageError(f"{path}: not a dataset written by save_to_disk ({exc})") from None
    if isinstance(ds, datasets.DatasetDict):
        splits = ", ".join(ds.keys())
        raise UsageError(
            f"{path}: holds several splits ({splits}); give one split's directory, e.g. {path}/<split>"
        )
    _check_columns(ds.column_names, 1)
    if not ds.num_rows:
        return  # (`Dataset.iter` fails on an empty dataset)
    n = 1
    for batch in ds.iter(batch_size=BATCH_ROWS):
        names = list(batch)
        rows = [dict(zip(names, values, strict=True)) for values in zip(*batch.values(), strict=True)]
        yield from rows_as_lines(rows, first=n)
        n += len(rows)


def frame_lines(frame: Any) -> Iterator[bytes]:
    """The JSON lines of a pandas DataFrame's rows (`row_object` of each; row 1 is the first)."""
    columns = [str(c) for c in frame.columns]
    try:
        _check_columns(columns, 1, repeat="columns named twice:")
    except InputError as exc:
        raise InputError(1, f"the DataFrame has {exc.reason}") from None
    rows = (
        dict(zip(columns, (native(v) for v in values), strict=True))
        for values in frame.itertuples(index=False, name=None)
    )
    yield from rows_as_lines(rows)


def native(value: Any) -> Any:
    """A pandas / numpy cell as the Python value (`pd.NA` and `NaT` as None): a numpy scalar its
    value, a numpy array (how pandas holds a Parquet list column's cells) a list, at any depth."""
    if type(value).__module__.startswith("numpy") and hasattr(value, "tolist"):
        value = value.tolist()  # a scalar's value; an array's list, of any size (never its element)
    if isinstance(value, list | tuple):
        return [native(v) for v in value]
    if isinstance(value, dict):
        return {k: native(v) for k, v in value.items()}
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    return value


def is_frame(obj: object) -> bool:
    """Whether `obj` is a pandas DataFrame (without importing pandas when it is not loaded)."""

    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


def read_verdict_file(path: Path) -> VerdictSpec:
    """The verdict spec in `path`; a `UsageError` naming the file when it cannot be used."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file (--verdict)") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        return spec_from_json(raw)
    except VerdictSpecError as exc:
        raise UsageError(f"{path}: bad verdict spec: {exc}") from None
