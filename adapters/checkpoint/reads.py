"""What a run, `status` and `summary` read of a job from its checkpoint besides the output records: the
spend so far (per judge, per model), the budget seeded with it, what the answers taught the estimate,
the counts with the kept verdict spec applied, and the history the job's machine starts from."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from adapters.checkpoint.store import Store
from judgecore.decide.planning import Learned
from judgecore.decide.ratelimit import RateLimitReading
from judgecore.decide.spend import Budget, Money, Spend, price_for, spend_of
from judgecore.results.outcomes import Usage
from judgecore.results.verdicts import Unscored, parse_verdict, spec_from_json
from judgecore.run.job._machine import History


def spend_from_store(store: Store) -> Money:
    """Spend so far (every billed answer in the checkpoint), all-sync, and the kept estimate."""
    manifest = store.manifest or {}
    estimate = (store.estimate or {}).get("estimated_cost_usd")
    if manifest.get("judges"):  # a panel: each answer at its own judge's prices
        by_judge = spend_by_judge(store)
        if any(v is None for v in by_judge.values()):
            return Money(estimate_usd=estimate)
        spent = sum(v.spent for v in by_judge.values() if v is not None)
        all_sync = sum(v.all_sync for v in by_judge.values() if v is not None)
        return Money(spend_usd=spent, all_sync_usd=all_sync, estimate_usd=estimate)
    price = price_for(str(manifest.get("model", "")))
    if price is None:
        return Money(estimate_usd=estimate)
    spend = spend_of(store.usage_by_route(), price)
    return Money(spend_usd=spend.spent, all_sync_usd=spend.all_sync, estimate_usd=estimate)


def spend_by_model(store: Store) -> list[tuple[str, float | None]]:
    """US dollars per judge, from every billed answer in the checkpoint: a panel's judges each at their
    own prices (`spend_by_judge`, None for a judge with no price), or the job's one model."""
    if by_judge := spend_by_judge(store):
        return [(judge, s.spent if s is not None else None) for judge, s in by_judge.items()]
    model = (store.manifest or {}).get("model")
    return [(str(model), spend_from_store(store).spend_usd)] if model else []


def learned_from_store(store: Store) -> Learned:
    """What the checkpoint's answers say about the rest of the job (`judgecore.decide.planning.Learned`):
    how many were billed and their usage summed, over both routes."""
    sums = [u for _route, u in store.usage_by_route()]
    total = Usage(
        input_tokens=sum(u.input_tokens or 0 for u in sums),
        output_tokens=sum(u.output_tokens or 0 for u in sums),
        cache_creation_input_tokens=sum(u.cache_creation_input_tokens or 0 for u in sums),
        cache_read_input_tokens=sum(u.cache_read_input_tokens or 0 for u in sums),
    )
    return Learned(answers=store.billed_answers() if sums else 0, usage=total)


def spend_by_judge(store: Store) -> dict[str, Spend | None]:
    """A panel's spend per judge (each answer at the prices of the judge it was sent to; None for a
    judge without prices that has been billed), every judge of the job listed; an empty dict for a
    job without a panel."""
    manifest = store.manifest or {}
    judges = list(manifest.get("judges") or ())
    usage = store.usage_by_judge(judges)
    out: dict[str, Spend | None] = {}
    for judge in judges:
        price = price_for(judge)
        billed = usage.get(judge, [])
        if price is None:  # unknown only once it has been billed: a judge that answered nothing cost 0
            out[judge] = None if billed else Spend(spent=0.0, all_sync=0.0, answers=0)
        else:
            out[judge] = spend_of(billed, price)
    return out


def budget_from_store(store: Store, cap: float | None) -> Budget:
    """A run's `Budget`, seeded with the job's spend so far (every billed answer in the checkpoint,
    earlier runs included). Without a price for the job's model only `cap=None` makes sense (the CLI
    refuses `--budget` then), and the spend so far counts as 0."""
    manifest = store.manifest or {}
    if manifest.get("judges"):
        return Budget(cap=cap, spent=spend_from_store(store).spend_usd or 0.0)
    price = price_for(str(manifest.get("model", "")))
    return Budget(cap=cap, spent=store.spent_usd(price) if price is not None else 0.0)


def counts_with_verdicts(store: Store, counts: Mapping[str, int]) -> dict[str, int]:
    """`counts` (by stored status) with the kept verdict spec applied, as the output reports them: a
    succeeded answer whose verdict cannot be read counts as a miss. Unchanged for a job without one."""
    kept = store.verdict
    out = dict(counts)
    if not kept:
        return out
    spec = spec_from_json(kept, sendable=False)
    unread = sum(1 for text in store.succeeded_texts() if isinstance(parse_verdict(text, spec), Unscored))
    out["succeeded"] = out.get("succeeded", 0) - unread
    out["miss"] = out.get("miss", 0) + unread
    return out


def _otpm(reading: RateLimitReading) -> int | None:
    return reading.otpm


def history_from_store(store: Store, limit_of: Callable[[RateLimitReading], int | None] = _otpm) -> History:
    """What the checkpoint says about the job before this run acts. `limit_of`: the limit the job's
    provider routes by, from the stored reading (Anthropic's OTPM; OpenAI's TPM: `Provider.route_limit`)."""
    reading = store.rate_limits
    limit = limit_of(reading) if reading is not None else None
    state = store.job_state()
    return History(
        stored=store.route,
        otpm_read=int(limit) if limit else None,
        final=state.final,
        in_flight=state.in_flight,
        any_batch=bool(store.sub_batches()),
        switched=bool(store.switch),
    )
