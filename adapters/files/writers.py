"""Output writers: the output records as JSON Lines, CSV or Parquet, chosen by `--out`'s extension.

Every writer is atomic as the JSONL one always was (`adapters.files.writers.write_output_atomic`: a temp file
in the same directory, fsync, rename), and writes the same records (CONTRACT.md's output shape), in
input order, one row per item:

- `.jsonl` (and any other name, as before): one JSON object a line; `.jsonl.gz`: the same,
  gzip-compressed (as INPUT reads it). Any other name ending `.gz` is refused (`adapters.files.paths.output_problem`).
- `.csv`: a header of the record's fields (and `stop_details`, which only a refused answer's record
  carries: an empty cell for the others); a nested field (`usage`, `error`, `metadata`, `verdict`)
  is its JSON text, a null an empty cell, a number or a boolean its JSON text.
- `.parquet`: one column per field; nested fields are structs (lists stay lists). A column whose
  values have no one Arrow type (a metadata key holding a number in one row and text in another),
  or an empty object Parquet cannot store, is written as JSON text instead.
"""

from __future__ import annotations

import csv
import io
import os
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from adapters.files.cells import need
from adapters.files.paths import output_kind, private_file, publish
from judgecore.results.output_line import output_line


def write_records(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Write the output `records` to `path` atomically, in the format of its extension."""

    match output_kind(path):
        case "jsonl":
            write_output_atomic(path, (output_line(r if type(r) is dict else dict(r)) for r in records))
        case "jsonl.gz":
            lines = (output_line(r if type(r) is dict else dict(r)) for r in records)
            write_output_atomic(path, gzipped(lines))
        case "csv":
            write_output_atomic(path, csv_lines(records))
        case "parquet":
            write_output_atomic(path, [parquet_bytes(records)])


def gzipped(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """`chunks` as one gzip stream, compressed as they come."""

    z = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31: the gzip format
    for chunk in chunks:
        if out := z.compress(chunk):
            yield out
    yield z.flush()


def cell(value: Any) -> str:
    """One CSV cell of an output field: text as it is, null empty, anything else its JSON text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


#: Output fields only some records carry (a refused answer's `stop_details`), after the field they
#: follow: a table has a column for each whether or not the first record carries it.
OPTIONAL_FIELDS: tuple[tuple[str, str], ...] = (("stop_details", "verdict"),)


def _with_optional(fields: list[str]) -> list[str]:
    """`fields` (one record's) with every optional field the records may carry, in its place."""
    out = [f for f in fields if f not in dict(OPTIONAL_FIELDS)]
    for name, after in OPTIONAL_FIELDS:
        if after in out:
            out.insert(out.index(after) + 1, name)
    return out


def csv_lines(records: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
    """The records as UTF-8 CSV (CRLF line ends, as the csv module and spreadsheets write), streamed:
    the header is the first record's fields, with a column for each optional field (`OPTIONAL_FIELDS`:
    an empty cell where a record has none)."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    fields: list[str] | None = None
    for r in records:
        if fields is None:
            fields = _with_optional(list(r))
            writer.writerow(fields)
        elif _with_optional(list(r)) != fields:
            raise ValueError(f"record {r.get('id')!r} has fields {list(r)}, not {fields}")
        writer.writerow([cell(r.get(f)) for f in fields])
        yield buf.getvalue().encode()
        buf.seek(0)
        buf.truncate()


def records_table(records: Iterable[Mapping[str, Any]]) -> Any:
    """The records as a `pyarrow.Table`: one column per field, nested fields as structs (see the
    module docstring for the columns written as JSON text)."""

    pa = need("pyarrow", "data", path=None, what="writing Parquet")
    rows = list(records)
    fields = _with_optional(list(rows[0])) if rows else []
    columns = {}
    for f in fields:
        values = [r.get(f) for r in rows]
        try:
            arr = pa.array(values)
            if not _storable(arr.type, pa):
                raise TypeError(f"{f}: {arr.type} cannot be stored in Parquet")
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            arr = pa.array([None if v is None else orjson.dumps(v).decode() for v in values], pa.string())
        columns[f] = arr
    return pa.table(columns)


def parquet_bytes(records: Iterable[Mapping[str, Any]]) -> bytes:
    """The records as the bytes of a Parquet file."""

    pq = need("pyarrow.parquet", "data", path=None, what="writing Parquet")
    buf = io.BytesIO()
    pq.write_table(records_table(records), buf)
    return buf.getvalue()


def _storable(t: Any, pa: Any) -> bool:
    """Whether Parquet can store Arrow type `t` (not a struct without fields, at any depth)."""
    if pa.types.is_struct(t):
        return t.num_fields > 0 and all(_storable(t.field(k).type, pa) for k in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _storable(t.value_type, pa)
    return True


def write_output_atomic(path: Path, lines: Iterable[bytes]) -> None:
    """Write JSONL to a temp file in the same directory, fsync, then rename over `path` (never over a
    checkpoint: `adapters.files.paths.publish`), with the mode the umask gives a new file."""

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = private_file(path.parent, f".{path.name}.", ".tmp")
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as f:
            for line in lines:
                f.write(line)
            f.flush()
            os.fsync(f.fileno())
        publish(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is None:  # a write or fsync of the temp file
            exc.filename = str(path)
        raise
