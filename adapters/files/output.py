"""What a run writes besides its outcomes: the output file, streamed from the checkpoint in input order
and written atomically, the records for the Python API, and what `summary` and `status` read later
(the items' metadata, the verdict spec, the dry-run's estimate of the job on its route)."""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from adapters.checkpoint.records import iter_records
from adapters.checkpoint.store import TALLY, Store
from adapters.files.writers import write_records
from judgecore.job.designs import Design
from judgecore.job.items import Item, Items
from judgecore.results.verdicts import VerdictSpec
from judgecore.values import frozen


@frozen(kw_only=True)
class Written:
    counts: Mapping[str, int]
    records: Mapping[str, dict[str, Any]]
    #: the answers the verdict spec could not read (`VERDICT_UNPARSED` misses)
    unparsed: int = 0


def write_output(
    store: Store,
    items: Sequence[Item],
    out: Path | None,
    *,
    keep: bool,
    verdict: VerdictSpec | None = None,
    reuse: bool = False,
    design: Design | None = None,
) -> Written:
    """Stream the checkpoint into the output file (when `out`), counting statuses; keep the records
    in memory only when asked (the Python API returns them; the CLI has the file).

    With `reuse` (a job whose items were all final before this run) an output file that is exactly
    the one the last run wrote from this checkpoint is left as it is: same path, size and mtime, no
    outcome recorded since, the items in the same order, the same verdict spec (see `_output_stamp`).
    """
    if reuse and not keep and out is not None:
        kept = store.output or {}
        if kept.get("stamp") is not None and kept["stamp"] == _output_stamp(store, items, out, verdict):
            return Written(counts=kept["counts"], records={}, unparsed=kept.get("unparsed", 0))
    counts = dict.fromkeys(TALLY, 0)
    records: dict[str, dict[str, Any]] = {}
    unparsed = 0

    # the items' order hashed for the output's stamp as the records read their custom_ids, not by a
    # walk of its own after (a job's custom_ids are made from their digests at each read: 0.3 CPU s
    # at 720,000 items)
    order = hashlib.blake2b(digest_size=16)

    def rows() -> Iterator[dict[str, Any]]:
        nonlocal unparsed
        watch = (lambda ids: _hashing(ids, order)) if out is not None else None
        for r in iter_records(store, items, verdict, design, watch=watch):
            counts[r["status"]] += 1
            if r["error"] is not None and r["error"]["class"] == "VERDICT_UNPARSED":
                unparsed += 1
            if keep:
                records[r["id"]] = r
            yield r

    if out is not None:
        write_records(out, rows())  # in the format of its extension
        stamp = _output_stamp(store, items, out, verdict, order=order.hexdigest())
        store.output = {"stamp": stamp, "counts": counts, "unparsed": unparsed}
    else:
        for _ in rows():
            pass
    return Written(counts=counts, records=records, unparsed=unparsed)


def _order_digest(custom_ids: Iterable[str], chunk: int = 16_384) -> str:
    """The blake2b-128 of the custom_ids joined by newlines, hashed `chunk` ids at a time: the digest
    of the whole joined text without ever holding it (72 MB at 1,000,000 items, as text and bytes)."""
    h = hashlib.blake2b(digest_size=16)
    deque(_hashing(custom_ids, h, chunk), maxlen=0)
    return h.hexdigest()


def _hashing(custom_ids: Iterable[str], h: Any, chunk: int = 16_384) -> Iterator[str]:
    """`custom_ids`, each `chunk` of them hashed into `h` (joined by newlines) as they pass: once all
    are read, `h` holds `_order_digest`'s digest of them."""
    ids = iter(custom_ids)
    sep = ""
    while part := list(islice(ids, chunk)):
        h.update((sep + "\n".join(part)).encode())
        sep = "\n"
        yield from part


def _output_stamp(
    store: Store, items: Sequence[Item], out: Path, verdict: VerdictSpec | None, order: str | None = None
) -> dict[str, Any] | None:
    """What an output file written from this checkpoint depends on, and the file as it stands; None
    when there is no file. `order`: the items' `_order_digest`, when made already."""
    try:
        st = out.stat()
    except OSError:
        return None
    if order is None:
        order = _order_digest(Items.of(items).custom_ids)
    return {
        "out": str(out.resolve()),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "rows": store.last_outcome_row(),
        "order": order,
        "verdict": verdict.to_json() if verdict is not None else None,
    }


__all__ = ["write_output"]
