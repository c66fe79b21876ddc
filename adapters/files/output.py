"""What a run writes besides its outcomes: the output file, streamed from the checkpoint in input order
and written atomically, the records for the Python API, and what `summary` and `status` read later
(the items' metadata, the verdict spec, the dry-run's estimate of the job on its route)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from adapters.checkpoint.store import TALLY, Store
from adapters.run.settings import JobSettings
from judgecore.decide.planning import JobPlan
from judgecore.decide.routing import Route
from judgecore.job.items import Item, Items
from judgecore.moved import moved
from judgecore.results.outcomes import StopDetails
from judgecore.results.output_line import record_of  # per output line: not imported in the loop

if TYPE_CHECKING:
    from judgecore.job.designs import Design
    from judgecore.results.verdicts import VerdictSpec


def write_output_atomic(path: Path, lines: Iterable[bytes]) -> None:
    """Write JSONL to a temp file in the same directory, fsync, then rename over `path`."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as f:
            for line in lines:
                f.write(line)
            f.flush()
            os.fsync(f.fileno())
        Path(tmp).replace(path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename is None:  # a write or fsync of the temp file
            exc.filename = str(path)
        raise


def iter_records(
    store: Store, items: Sequence[Item], verdict: VerdictSpec | None = None, design: Design | None = None
) -> Iterator[dict[str, Any]]:
    """Every item's output object (see `_request_records`); under a multi-request `design`, each
    item's requests folded into its one line (`judgecore.job.consensus.fold`)."""
    records = _request_records(store, items, verdict)
    if design is None or design.single:
        return records
    return fold_records(records, design, verdict)


def fold_records(
    records: Iterable[dict[str, Any]], design: Design, verdict: VerdictSpec | None
) -> Iterator[dict[str, Any]]:
    """Request records, an item's together in key order (as a design's items are), folded per item."""
    from judgecore.job.consensus import fold

    keys = design.request_keys()
    per = len(keys)
    score = verdict.score if verdict is not None else None
    labels = verdict.label_map if verdict is not None else {}
    group: list[dict[str, Any]] = []
    for r in records:
        group.append(r)
        if len(group) == per:
            yield fold(design, dict(zip(keys, group, strict=True)), score=score, labels=labels)
            group = []
    if group:  # pragma: no cover - a design's items always come in whole groups
        raise AssertionError(f"{len(group)} request(s) left over from an item of {per}")


def _request_records(
    store: Store, items: Sequence[Item], verdict: VerdictSpec | None = None
) -> Iterator[dict[str, Any]]:
    """Every item's output object from the checkpoint, in input order, streamed in one pass.

    The checkpoint lists a job's items in the order they were first bound, which is the input's on
    every rerun of the same file; a row out of that order (items added or moved in the input) waits
    in a small buffer until its item comes. An item with no outcome yet is reported on the job's
    route (sync before one is decided); one that sits in a live batch names it. `verdict` reads each
    succeeded answer's verdict.
    """
    default_route = (store.get_meta("route") or {}).get("path", "sync")
    waiting = store.waiting_batches()
    cols = Items.of(items)  # its columns: the messages (perhaps in the checkpoint only) are not read
    wanted: set[str] | None = None  # the job's custom_ids, made once a row comes out of order
    early: dict[str, tuple[Any, ...]] = {}
    rows = store.latest_rows()
    for item_id, cid, metadata_json in zip(cols.ids, cols.custom_ids, cols.metadata_json, strict=True):
        row = early.pop(cid, None) if early else None
        if row is None:
            for got in rows:
                if got[0] == cid:
                    row = got
                    break
                if wanted is None:
                    wanted = set(cols.custom_ids)
                if got[0] in wanted:
                    early[got[0]] = got
            else:
                row = (cid, *_NO_OUTCOME)
        yield row_record(
            item_id, metadata_json, row, default_route=default_route, waiting=waiting, verdict=verdict
        )


#: A `Store.latest_rows()` row's columns after the custom_id for an item with no outcome recorded.
_NO_OUTCOME = (None,) * 12 + (0, None, None)
_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def row_record(
    item_id: str,
    metadata_json: bytes | None,
    row: Sequence[Any],
    *,
    default_route: str,
    waiting: Mapping[str, str],
    verdict: VerdictSpec | None,
) -> dict[str, Any]:
    """One output object from the checkpoint's row for an item (a `Store.latest_rows()` tuple), read
    from its columns (no `Outcome` is built); an item not final yet names the live batch it waits in."""
    usage, details = row[7], row[15]
    return record_of(
        item_id,
        row[0],
        metadata_json,
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        _usage(usage) if usage else None,
        row[8],
        row[9],
        _stop_details(details) if details else None,
        route=row[11] or default_route,
        batch_id=row[12],
        attempts=row[13],
        verdict_spec=verdict,
        waiting_in=waiting.get(row[0]) if waiting else None,
    )


def _usage(text: str) -> dict[str, int]:
    """A stored usage's JSON object as `usage_json` makes it (its four counts, in their order)."""
    u = orjson.loads(text)
    return u if tuple(u) == _USAGE_KEYS else {k: u.get(k, 0) for k in _USAGE_KEYS}


def _stop_details(text: str) -> dict[str, Any] | None:
    """Stored stop details as `StopDetails.to_json()` writes them (None when they are not an object)."""
    details = StopDetails.from_json(orjson.loads(text))
    return None if details is None else details.to_json()


def collect_records(
    store: Store, items: Sequence[Item], verdict: VerdictSpec | None = None, design: Design | None = None
) -> dict[str, dict[str, Any]]:
    """Every item's output object, from the checkpoint, keyed by item id (input order kept)."""
    return {r["id"]: r for r in iter_records(store, items, verdict, design)}


@attrs.frozen(kw_only=True)
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
        kept = store.get_meta("output") or {}
        if kept.get("stamp") is not None and kept["stamp"] == _output_stamp(store, items, out, verdict):
            return Written(counts=kept["counts"], records={}, unparsed=kept.get("unparsed", 0))
    counts = dict.fromkeys(TALLY, 0)
    records: dict[str, dict[str, Any]] = {}
    unparsed = 0

    def rows() -> Iterator[dict[str, Any]]:
        nonlocal unparsed
        for r in iter_records(store, items, verdict, design):
            counts[r["status"]] += 1
            if r["error"] is not None and r["error"]["class"] == "VERDICT_UNPARSED":
                unparsed += 1
            if keep:
                records[r["id"]] = r
            yield r

    if out is not None:
        from adapters.files.writers import write_records

        write_records(out, rows())  # in the format of its extension
        stamp = _output_stamp(store, items, out, verdict)
        store.set_meta("output", {"stamp": stamp, "counts": counts, "unparsed": unparsed})
    else:
        for _ in rows():
            pass
    return Written(counts=counts, records=records, unparsed=unparsed)


def _order_digest(custom_ids: Iterable[str], chunk: int = 16_384) -> str:
    """The blake2b-128 of the custom_ids joined by newlines, hashed `chunk` ids at a time: the digest
    of the whole joined text without ever holding it (72 MB at 1,000,000 items, as text and bytes)."""
    h = hashlib.blake2b(digest_size=16)
    ids = iter(custom_ids)
    sep = ""
    while part := list(islice(ids, chunk)):
        h.update((sep + "\n".join(part)).encode())
        sep = "\n"
    return h.hexdigest()


def _output_stamp(
    store: Store, items: Sequence[Item], out: Path, verdict: VerdictSpec | None
) -> dict[str, Any] | None:
    """What an output file written from this checkpoint depends on, and the file as it stands; None
    when there is no file."""
    try:
        st = out.stat()
    except OSError:
        return None
    order = _order_digest(Items.of(items).custom_ids)
    return {
        "out": str(out.resolve()),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "rows": store.last_outcome_row(),
        "order": order,
        "verdict": verdict.to_json() if verdict is not None else None,
    }


def record_for_summary(store: Store, job: JobPlan, settings: JobSettings) -> None:
    """What `judgecore summary` needs from the checkpoint alone: each item's metadata and the verdict
    spec of this run (a pattern may change between runs; the latest is what `summary` applies)."""
    meta = job.items.metadata_json
    store.record_metadata(
        zip(job.items.custom_ids, meta, strict=True), any_given=meta.count(None) != len(meta)
    )
    store.set_meta("verdict", settings.verdict.to_json() if settings.verdict is not None else None)
    design = settings.design
    if not design.single:  # what `summary` needs to fold the checkpoint's requests into items
        store.set_meta("design", design.to_json())


def record_estimate(
    store: Store, job: JobPlan, chosen: Route, rubric: str | None, settings: JobSettings
) -> None:
    """Keep the estimate of the whole job on its route, for `status` and `summary` to show beside what
    was spent: the dry run's on a fresh job, learned from the checkpoint's answers on a rerun."""
    from adapters.run.dryrun import plan_of
    from adapters.run.summary import learned_from_store

    p = plan_of(job, job.requests, chosen, rubric, settings, learned=learned_from_store(store))
    store.set_meta(
        "estimate", {"estimated_cost_usd": p.estimated_cost_usd, "all_sync_cost_usd": p.all_sync_cost_usd}
    )


__all__ = [
    "collect_records",
    "iter_records",
    "record_estimate",
    "record_for_summary",
    "row_record",
    "write_output",
    "write_output_atomic",
]

#: `plan_of`, which lives with the dry run now (`adapters.run.dryrun`), for older imports
__getattr__ = moved(__name__, {"plan_of": "adapters.run.dryrun"})
