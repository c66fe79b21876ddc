"""The same rows written in every input format judgecore reads (tests only)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import orjson

FORMATS = ("jsonl", "jsonl.gz", "csv", "parquet", "dataset")


def rows(n: int = 200) -> list[dict[str, Any]]:
    """Input objects with what a CSV must keep: leading zeros, commas, quotes, newlines, non-ASCII."""
    out = []
    for k in range(n):
        row: dict[str, Any] = {"id": f"{k:05d}", "prompt": f'Answer #{k}: "yes, no"\nor «maybe», {k}'}
        if k % 4 == 0:
            row["max_tokens"] = 64 + k
        row["metadata"] = {"topic": f"t{k % 3}", "code": f"{k:04d}", "note": "" if k % 5 else 'a, "b"\r\nc'}
        out.append(row)
    return out


def flat(row: dict[str, Any]) -> dict[str, Any]:
    """A row as table columns: the metadata's keys become columns of their own."""
    return {
        "id": row["id"],
        "prompt": row["prompt"],
        "max_tokens": row.get("max_tokens"),
        **row["metadata"],
    }


def write(path: Path, kind: str, items: list[dict[str, Any]]) -> Path:
    """`items` written at `path` (its name gets the format's extension) in format `kind`."""
    if kind == "jsonl":
        path = path.with_suffix(".jsonl")
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in items))
    elif kind == "jsonl.gz":
        import gzip

        path = path.with_suffix(".jsonl.gz")
        path.write_bytes(gzip.compress(b"".join(orjson.dumps(r) + b"\n" for r in items)))
    elif kind == "csv":
        path = path.with_suffix(".csv")
        table = [flat(r) for r in items]
        # as a spreadsheet writes it: a byte order mark, CRLF line ends, quotes where needed
        with path.open("w", encoding="utf-8-sig", newline="") as f:
            w = csv.DictWriter(f, list(table[0]), lineterminator="\r\n")
            w.writeheader()
            w.writerows({k: "" if v is None else v for k, v in r.items()} for r in table)
    elif kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = path.with_suffix(".parquet")
        pq.write_table(pa.Table.from_pylist([flat(r) for r in items]), path, row_group_size=64)
    elif kind == "dataset":
        import datasets

        datasets.disable_progress_bars()
        datasets.Dataset.from_list([flat(r) for r in items]).save_to_disk(str(path))
    else:
        raise ValueError(kind)
    return path
