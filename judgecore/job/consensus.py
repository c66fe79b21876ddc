"""How an item's answers fold back into one verdict: the median or the majority of its samples and
judges, a pairwise item's two orders as one vote, and the one output line of an item (`fold`).

The fold reads each request's answer by its key (`judgecore.job.designs.RequestKey`), never by arrival,
so a complete set of answers gives the same line whatever order it came in.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from judgecore.job.designs import (
    DEFAULT_LABELS,
    FIRST,
    SECOND,
    TAG_SEP,
    TIE,
    Design,
    RequestKey,
    judge_identity,
)

Scalar = int | float | str | bool


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def consensus(values: Sequence[Any]) -> Any:
    """The median of `values` when all are numbers, else the majority (ties: the first seen); None
    for no values. `values` come in sample (or judge) order, never in arrival order."""
    vs = [v for v in values if v is not None]
    if not vs:
        return None
    if all(_is_number(v) for v in vs):
        m = statistics.median(vs)
        return int(m) if float(m).is_integer() and all(isinstance(v, int) for v in vs) else m
    counts: dict[Any, int] = {}
    for v in vs:
        k = _hashable(v)
        counts[k] = counts.get(k, 0) + 1
    best = max(counts.values())
    return next(v for v in vs if counts[_hashable(v)] == best)


def _hashable(v: Any) -> Any:
    return orjson.dumps(v, option=orjson.OPT_SORT_KEYS) if isinstance(v, (dict, list)) else v


def position_of(choice: Any, labels: Mapping[str, str]) -> str | None:
    """`first`, `second` or `tie` for the judge's word (matched without regard to case), else None."""
    if choice is None:
        return None
    word = str(choice).strip().lower()
    for position in (FIRST, SECOND, TIE):
        if str(labels.get(position, DEFAULT_LABELS[position])).strip().lower() == word:
            return position
    return None


def pairwise_vote(design: Design, choices: Sequence[Any], labels: Mapping[str, str]) -> dict[str, Any] | None:
    """One judge's pairwise verdict from its two orders' choices (order 0 then 1): orders that agree
    name the winner, orders that disagree are a tie, not consistent (Zheng et al. 2023). None unless
    both orders have a choice the labels map."""
    assert design.pairwise is not None
    a, b = design.pairwise
    orders = []
    for order, choice in enumerate(choices):
        first, second = (a, b) if order == 0 else (b, a)
        pos = position_of(choice, labels)
        if pos is None:
            return None
        orders.append({"first": first, "choice": first if pos == FIRST else second if pos == SECOND else TIE})
    c0, c1 = orders[0]["choice"], orders[1]["choice"]
    consistent = c0 == c1
    return {"winner": c0 if consistent else TIE, "consistent": consistent, "orders": orders}


def merge_pairwise(votes: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """Several pairwise verdicts (samples or judges, in their order) as one: the majority winner,
    consistent only when every one is, and every order they saw."""
    vs = [v for v in votes if v is not None]
    if not vs:
        return None
    if len(vs) == 1:
        return vs[0]
    return {
        "winner": consensus([v["winner"] for v in vs]),
        "consistent": all(v["consistent"] for v in vs),
        "orders": [o for v in vs for o in v["orders"]],
    }


_USAGE_SUMMED = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _sum_usage(usages: Iterable[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    total: dict[str, Any] = {}
    seen = False
    for u in usages:
        if not u:
            continue
        seen = True
        for k, v in u.items():
            if _is_number(v):
                total[k] = total.get(k, 0) + v
    if not seen:
        return None
    return {k: total.get(k, 0) for k in _USAGE_SUMMED} | {
        k: v for k, v in total.items() if k not in _USAGE_SUMMED
    }


def fold(
    design: Design,
    records: Mapping[RequestKey, Mapping[str, Any]],
    *,
    score: str | None,
    labels: Mapping[str, str] = DEFAULT_LABELS,
) -> dict[str, Any]:
    """One item's output line from its requests' output objects, by key (`records` has every key of
    the design). `score`: the verdict spec's score field (None: no verdicts). The line is `pending`
    while any request is; `id`, `metadata`, `route`, `batch_id` and `text` are the first request's (a
    panel's line names its judge: `text_judge`);
    `attempts` and `usage` are summed over the requests."""
    keys = design.request_keys()
    rs = [records[k] for k in keys]
    first = rs[0]
    item_id = str(first["id"]).rsplit(TAG_SEP, 1)[0] if not design.single else first["id"]

    def value(r: Mapping[str, Any]) -> Any:
        v = r.get("verdict")
        if score is None or v is None or r["status"] != "succeeded":
            return None
        return v.get(score)

    # votes: one per (judge, sample), each a verdict value (pairwise: a pairwise verdict)
    judges = design.judges or (None,)
    votes: dict[str | None, list[Any]] = {j: [] for j in judges}
    sample_entries: list[dict[str, Any]] = []
    for j in judges:
        for s in range(design.samples):
            if design.pairwise is not None:
                pair = [records[RequestKey(judge=j, sample=s, order=o)] for o in (0, 1)]
                vote = pairwise_vote(design, [value(r) for r in pair], labels) if score is not None else None
                status = _pair_status([r["status"] for r in pair], vote is not None or score is None)
                entry = {"status": status, "text": [r["text"] for r in pair], "verdict": vote}
            else:
                r = records[RequestKey(judge=j, sample=s)]
                vote = value(r)
                entry = {"status": r["status"], "text": r["text"], "verdict": r.get("verdict")}
            if design.judges:
                entry = {"judge": j, **entry}
            votes[j].append(vote)
            sample_entries.append(entry)

    def combine(vs: Sequence[Any]) -> Any:
        return merge_pairwise(vs) if design.pairwise is not None else consensus(vs)

    per_judge = {j: combine(votes[j]) for j in judges}
    overall = combine([per_judge[j] for j in judges]) if design.judges else per_judge[None]

    def wrap(v: Any) -> Any:
        if v is None or design.pairwise is not None:
            return v
        return {score: v}

    statuses = [r["status"] for r in rs]
    if "pending" in statuses:
        status = "pending"
    elif overall is not None or (score is None and "succeeded" in statuses):
        status = "succeeded"
    else:
        status = next((st for st in statuses if st != "succeeded"), "miss")
    if status == "pending":  # nothing is decided until every request of the item is final
        overall, per_judge = None, dict.fromkeys(judges)
    lead = next((r for r in rs if r["status"] == status), first) if status != "succeeded" else first
    error = None if status == "succeeded" else lead["error"]
    if status == "miss" and error is None:
        error = {
            "class": "VERDICT_UNPARSED",
            "type": "design",
            "message": _why_no_verdict(design, rs, score, labels),
        }
    out: dict[str, Any] = {
        "id": item_id,
        "custom_id": first["custom_id"],
        "status": status,
        "route": first["route"],
        "text": first["text"],
        "stop_reason": first["stop_reason"],
        "model": first["model"],
        "usage": _sum_usage(r["usage"] for r in rs),
        "error": error,
        "batch_id": first["batch_id"],
        "attempts": sum(int(r["attempts"] or 0) for r in rs),
        "metadata": first["metadata"],
        "verdict": wrap(overall),
    }
    if error is not None and lead.get("stop_details") is not None:  # a refusal: why the model declined
        out["stop_details"] = lead["stop_details"]
    if design.samples > 1:
        out["samples"] = sample_entries
        all_votes = [v for j in judges for v in votes[j] if v is not None]
        if overall is None or not all_votes:
            out["agreement"] = None
        else:
            target = overall["winner"] if design.pairwise is not None else overall
            got = [v["winner"] if design.pairwise is not None else v for v in all_votes]
            out["agreement"] = sum(1 for v in got if v == target) / len(got)
    if design.judges:
        out["judges"] = {judge_identity(str(j)): wrap(per_judge[j]) for j in judges}
        # whose answer the line's `text`, `stop_reason` and `model` are: the first judge's (its first
        # sample, first order), while `verdict` is the panel's and `judges` each judge's
        out["text_judge"] = judge_identity(str(design.judges[0]))
    return out


def _why_no_verdict(
    design: Design, rs: Sequence[Mapping[str, Any]], score: str | None, labels: Mapping[str, str]
) -> str:
    """Why an item whose requests all answered has no verdict: the first answer's verdict that lacks
    the score field, or (pairwise) whose choice the labels do not map, else that none has one."""
    for r in rs:
        v = r.get("verdict")
        if r["status"] != "succeeded" or not isinstance(v, Mapping) or score is None:
            continue
        if v.get(score) is None:
            has = ", ".join(repr(k) for k in v) or "none"
            return f"no answer's verdict has the score field {score!r} (its fields: {has})"
        if design.pairwise is not None and position_of(v[score], labels) is None:
            words = ", ".join(
                f"{position} {labels.get(position, DEFAULT_LABELS[position])!r}"
                for position in (FIRST, SECOND, TIE)
            )
            return (
                f"the judge's choice {v[score]!r} is none of the verdict spec's labels ({words}; "
                'matched without regard to case: set "labels" to the words the judge writes)'
            )
    return "no request of the item has a verdict"


def _pair_status(statuses: Sequence[str], readable: bool) -> str:
    if "pending" in statuses:
        return "pending"
    if readable and all(st == "succeeded" for st in statuses):
        return "succeeded"
    return next((st for st in statuses if st != "succeeded"), "miss")
