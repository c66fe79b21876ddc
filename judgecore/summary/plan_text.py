"""The dry-run plan as text: the JSON object `--dry-run --json` prints, and the human-readable report."""

from __future__ import annotations

from typing import Any

from judgecore.decide.planning import Plan


def plan_json(p: Plan) -> dict[str, Any]:
    """The plan as the JSON object `--dry-run --json` prints (keys of CONTRACT.md and more); a job
    with a schema verdict adds `output_schema`, the schema as every request carries it."""
    out = {
        "n": p.n,
        "final": p.final,
        "live": p.live,
        "to_send": p.to_send,
        "threshold": p.route.threshold,
        "otpm": p.route.otpm,
        "otpm_source": p.route.otpm_source,
        "route": p.route.path,
        "forced": p.route.forced,
        "reason": p.route.reason,
        "model": p.model,
        "max_tokens": p.max_tokens,
        "sub_batches": [{"requests": r, "bytes": b} for r, b in p.sub_batches],
        "max_batch_requests": p.max_batch_requests,
        "max_batch_bytes": p.max_batch_bytes,
        "cache": {
            "breakpoint": p.cache.breakpoint,
            "ttl": p.cache.ttl,
            "rubric_tokens_est": p.cache.rubric_tokens,
            "min_cacheable_tokens": p.cache.min_tokens,
            "cached": p.cache.cached,
        },
        "estimated_tokens": {
            "input_uncached": p.input_tokens,
            "rubric_per_request": p.cache.rubric_tokens,
            "output": p.output_tokens,
            "output_per_answer_assumed": p.output_per_answer,
        },
        "estimated_cost_usd": p.estimated_cost_usd,
        "all_sync_cost_usd": p.all_sync_cost_usd,
    }
    # each only when it says something, so plans of jobs without them read as they did
    if p.thinking is not None:
        out["thinking"] = p.thinking
    if p.thinks:
        out["thinks"] = True
    if p.price_estimated:
        out["price_estimated"] = True
    if p.warnings:
        out["warnings"] = list(p.warnings)
    if p.output_schema_json is not None:
        out["output_schema"] = p.output_schema
    out["estimate_basis"] = p.basis
    if p.counted_tokens is not None:
        out["estimated_tokens"]["counted_prompt"] = p.counted_tokens  # type: ignore[index]
    if p.budget is not None:
        out["budget"] = {
            "usd": p.budget.budget,
            "spent_usd": round(p.budget.spent, 4),
            "fits": p.budget.fits,
            "covers": p.budget.covers,
        }
    if p.design is not None:
        out["items"] = p.items
        out["requests_per_item"] = p.per_item
        out["design"] = p.design
        if p.cost_by_judge:
            out["estimated_cost_by_judge_usd"] = dict(p.cost_by_judge)
        if p.route_by_judge:
            out["route_by_judge"] = dict(p.route_by_judge)
        if p.sub_batches_by_provider:
            out["sub_batches_by_provider"] = {
                name: {"sub_batches": k, "max_batch_requests": most, "max_batch_bytes": size}
                for name, k, most, size in p.sub_batches_by_provider
            }
    return out


_MAX_LISTED = 20


def render_plan(p: Plan) -> str:
    """The plan as stable, human-readable text (snapshot-tested)."""
    lines = [
        "judgecore dry run: nothing will be sent"
        + (" (one prompt counted by count_tokens: free, no message)" if p.counted_tokens is not None else ""),
        f"  items        {p.n:,}"
        + (
            f" (final {p.final:,}, live in batches {p.live:,}, to send {p.to_send:,})"
            if p.to_send != p.n
            else ""
        ),
        f"  route        {p.route.path}: {p.route.reason}",
        f"  model        {p.model} (max_tokens {p.max_tokens:,} unless an item sets its own)",
    ]
    if p.design is not None:
        lines[1] = f"  requests     {p.n:,}" + lines[1][len(f"  items        {p.n:,}") :]
        lines.insert(1, f"  items        {p.items or 0:,}, {p.per_item:,} request(s) each: {p.design}")
        if p.cost_by_judge:
            routes = dict(p.route_by_judge)

            def judge_words(m: str, c: float | None) -> str:
                cost = "no price" if c is None else f"est ${c:,.2f}"
                if m.startswith("served:"):
                    cost = "$0"
                return f"{m} ({routes[m]}, {cost})" if m in routes else f"{m} ({cost})"

            lines.append("  judges       " + ", ".join(judge_words(m, c) for m, c in p.cost_by_judge))
    if p.thinking is not None or p.thinks:
        how = f"--thinking {p.thinking}" if p.thinking is not None else "the model's default"
        state = "on" if p.thinks else "off"
        lines.append(f"  thinking     {state} ({how}); thinking tokens are output tokens, out of max_tokens")
    if p.route.path == "batch":
        if len(p.sub_batches_by_provider) > 1:  # each batch lane's, within its own provider's limits
            each = "; ".join(
                f"{name} {k:,}, at most {most:,} requests and {size:,} bytes each"
                for name, k, most, size in p.sub_batches_by_provider
            )
            lines.append(f"  sub-batches  {len(p.sub_batches):,} ({each})")
        else:
            lines.append(
                f"  sub-batches  {len(p.sub_batches):,} (at most {p.max_batch_requests:,} requests "
                f"and {p.max_batch_bytes:,} bytes each)"
            )
        for i, (reqs, size) in enumerate(p.sub_batches[:_MAX_LISTED]):
            lines.append(f"    #{i:<4} {reqs:>7,} requests {size:>15,} bytes")
        if len(p.sub_batches) > _MAX_LISTED:
            lines.append(f"    ... and {len(p.sub_batches) - _MAX_LISTED:,} more")
    c = p.cache
    if c.breakpoint is None:
        lines.append("  cache        none (no rubric)")
    elif c.cached:
        lines.append(
            f"  cache        breakpoint at the {c.breakpoint} (~{c.rubric_tokens:,} tokens, ttl {c.ttl})"
        )
    else:
        lines.append(
            f"  cache        not cached: rubric ~{c.rubric_tokens:,} tokens is under the "
            f"{c.min_tokens:,}-token minimum for {p.model}"
        )
    answers = (
        f"answers of {p.output_per_answer:,} tokens, the mean of {p.basis[len('learned from ') :]} so far"
        if p.basis.startswith("learned")
        else f"answers of about {p.output_per_answer:,} tokens"
    )
    lines.append(
        f"  tokens (est) input {p.input_tokens:,} + rubric {c.rubric_tokens:,} per request; "
        f"output {p.output_tokens:,} ({answers}"
        + ("; thinking not included, billed as output up to max_tokens)" if p.thinks else ")")
    )
    if p.counted_tokens is not None:
        lines.append(f"  counted      one prompt is {p.counted_tokens:,} input tokens (count_tokens)")
    if p.output_schema_json is not None:
        lines.append(
            "  verdict      schema sent in the API's subset (see --json output_schema); "
            "answers are validated against the full schema"
        )
    if p.estimated_cost_usd is None:
        unpriced = [m for m, c in p.cost_by_judge if c is None] or [p.model]  # a panel: the judges without
        lines.append(f"  cost (est)   unknown: no price for {', '.join(unpriced)}")
    else:
        lines.append(
            f"  cost (est)   ${p.estimated_cost_usd:,.2f} (all-sync: ${p.all_sync_cost_usd:,.2f})"
            + (f"; {p.model}'s prices are estimated by family" if p.price_estimated else "")
        )
    if p.budget is not None:
        b = p.budget
        so_far = f" (${b.spent:,.2f} spent so far)" if b.spent else ""
        if b.fits:
            lines.append(f"  budget       ${b.budget:,.2f} covers the estimate{so_far}")
        else:
            lines.append(
                f"  budget       ${b.budget:,.2f} does not cover the estimate{so_far}: about "
                f"{b.covers:,} of the {p.to_send:,} requests; a rerun with a larger --budget sends the rest"
            )
    lines.extend(f"  warning      {w}" for w in p.warnings)
    return "\n".join(lines) + "\n"
