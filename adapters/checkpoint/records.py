"""The output records from the checkpoint: each item's latest row made into its output object (the one
constructor, `judgecore.results.output_line.record_of_row`, on both routes), folded per item under a multi-request design,
streamed in input order for the output file and the Python API, and rebuilt for `summary` and `export`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from adapters.checkpoint.store import Store
from judgecore.job.consensus import fold
from judgecore.job.designs import Design
from judgecore.job.items import Item, Items
from judgecore.results.output_line import LatestRow, OutputRecord, record_of_row
from judgecore.results.verdicts import VerdictSpec


def iter_records(
    store: Store,
    items: Sequence[Item],
    verdict: VerdictSpec | None = None,
    design: Design | None = None,
    *,
    watch: Callable[[Iterable[str]], Iterable[str]] | None = None,
) -> Iterator[dict[str, Any]]:
    """Every item's output object (see `_request_records`); under a multi-request `design`, each
    item's requests folded into its one line (`judgecore.job.consensus.fold`). `watch`: the items'
    custom_ids pass through it as they are read (the output's stamp hashes them on the way: a job's
    custom_ids are made from their digests at each read)."""
    records = _request_records(store, items, verdict, watch)
    if design is None or design.single:
        return records
    return fold_records(records, design, verdict)


def fold_records(
    records: Iterable[dict[str, Any]], design: Design, verdict: VerdictSpec | None
) -> Iterator[dict[str, Any]]:
    """Request records, an item's together in key order (as a design's items are), folded per item."""

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
    store: Store,
    items: Sequence[Item],
    verdict: VerdictSpec | None = None,
    watch: Callable[[Iterable[str]], Iterable[str]] | None = None,
) -> Iterator[OutputRecord]:
    """Every item's output object from the checkpoint, in input order, streamed in one pass.

    The checkpoint lists a job's items in the order they were first bound, which is the input's on
    every rerun of the same file; a row out of that order (items added or moved in the input) waits
    in a small buffer until its item comes. Items of the job that this input does not hold (a rerun
    on a part of the input) follow, in the job's order, with the metadata the checkpoint keeps. An
    item with no outcome yet is reported on the job's route (sync before one is decided); one that
    sits in a live batch names it. `verdict` reads each succeeded answer's verdict. Each record is
    made by the one constructor, `record_of_row`, from its row as the checkpoint reads it.
    """
    default_route = route.path if (route := store.route) is not None else "sync"
    waiting = store.waiting_batches()
    cols = Items.of(items)  # its columns: the messages (perhaps in the checkpoint only) are not read
    wanted: set[str] | None = None  # the job's custom_ids, made once a row comes out of order
    early: dict[str, tuple[Any, ...]] = {}
    rows = store.latest_rows()
    others: list[tuple[Any, ...]] = []  # the job's items this input does not hold (a subset of it)
    cids = cols.custom_ids if watch is None else watch(cols.custom_ids)
    for item_id, cid, metadata_json in zip(cols.ids, cids, cols.metadata_json, strict=True):
        row = early.pop(cid, None) if early else next(rows, None)
        if row is None or row[0] != cid:  # out of the input's order (or past the job's rows)
            if row is not None:
                wanted = wanted if wanted is not None else set(cols.custom_ids)
                if row[0] in wanted:
                    early[row[0]] = row
                else:
                    others.append(row)
                row = None
            for got in rows:
                if got[0] == cid:
                    row = got
                    break
                if wanted is None:
                    wanted = set(cols.custom_ids)
                if got[0] in wanted:
                    early[got[0]] = got
                else:
                    others.append(got)
            else:
                row = LatestRow(cid)
        yield record_of_row(
            row,
            item_id=item_id,
            metadata_json=metadata_json,
            default_route=default_route,
            waiting_in=waiting.get(cid) if waiting else None,
            verdict_spec=verdict,
        )
    # then every item of the job the input left out, in the job's order: the output is the job's
    for row in (*others, *rows):
        item_id, metadata = store.bound_item(row[0])
        yield record_of_row(
            row,
            item_id=item_id,
            metadata_json=metadata,
            default_route=default_route,
            waiting_in=waiting.get(row[0]) if waiting else None,
            verdict_spec=verdict,
        )


def collect_records(
    store: Store, items: Sequence[Item], verdict: VerdictSpec | None = None, design: Design | None = None
) -> dict[str, dict[str, Any]]:
    """Every item's output object, from the checkpoint, keyed by item id (input order kept)."""
    return {r["id"]: r for r in iter_records(store, items, verdict, design)}


def records_from_store(store: Store, verdict: VerdictSpec | None) -> list[OutputRecord]:
    """Every item's output object, as `run` writes it, from the checkpoint alone."""

    default_route = route.path if (route := store.route) is not None else "sync"
    waiting = store.waiting_batches()
    out = []
    for (cid, item_id, metadata), row in zip(store.item_rows(), store.latest_rows(), strict=True):
        assert cid == row[0], "items and outcomes are read in the same order"
        out.append(
            record_of_row(
                row,
                item_id=item_id,
                metadata_json=metadata,
                default_route=default_route,
                waiting_in=waiting.get(cid) if waiting else None,
                verdict_spec=verdict,
            )
        )
    design = store.design
    if (
        design is not None
    ):  # a multi-request job: each item's requests folded into its line, as the output has it
        return list(fold_records(out, design, verdict))
    return out
