"""Laws of `judgecore.run.batch.batching`: what follows a failed create, and which listed batch is an orphan's."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from judgecore.decide.backoff import BackoffPolicy
from judgecore.decide.polling import BatchSnapshot, RequestCounts
from judgecore.results.outcomes import RawResult, Status
from judgecore.run.batch.batching import (
    Fatal,
    GiveUp,
    Intent,
    OrphanWindow,
    Reject,
    RetryCreate,
    Split,
    after_create_error,
    match_orphans,
    orphan_groups,
    split_halves,
)

POLICY = BackoffPolicy(base=1.0, cap=60.0)

errors = st.one_of(
    st.builds(
        RawResult,
        kind=st.just("http_error"),
        status=st.sampled_from([400, 401, 403, 404, 408, 409, 413, 429, 500, 502, 503, 529]),
        error_type=st.sampled_from([None, "api_error", "invalid_request_error", "rate_limit_error"]),
        message=st.sampled_from([None, "x", "prompt is too long"]),
        retry_after=st.one_of(st.none(), st.floats(0, 100)),
    ),
    st.builds(RawResult, kind=st.just("connection_error"), message=st.just("dropped")),
)


@given(
    errors,
    st.integers(0, 10),
    st.integers(1, 10_000),
    st.integers(1, 8),
    st.floats(0, 1, exclude_max=True),
)
def test_after_create_error_never_retries_past_the_budget(
    error: RawResult, attempt: int, n: int, max_attempts: int, u: float
) -> None:
    d = after_create_error(error, attempt=attempt, n=n, max_attempts=max_attempts, policy=POLICY, u=u)
    if error.status == 413:
        assert isinstance(d, Split if n > 1 else Reject)
    elif isinstance(d, RetryCreate):
        assert attempt + 1 < max_attempts
        assert d.delay >= 0
    if isinstance(d, Fatal):
        assert d.outcome.status is Status.FATAL
    if isinstance(d, GiveUp) and d.maybe_created:
        assert error.status is None or error.status in (408, 409, 429) or error.status >= 500


def test_transient_create_errors_retry_and_refusals_give_up_as_not_created() -> None:
    e500 = RawResult(kind="http_error", status=500, error_type="api_error")
    e400 = RawResult(kind="http_error", status=400, error_type="invalid_request_error")
    e401 = RawResult(kind="http_error", status=401, error_type="authentication_error")
    kw = {"n": 10, "max_attempts": 3, "policy": POLICY, "u": 0.5}
    assert isinstance(after_create_error(e500, attempt=0, **kw), RetryCreate)
    assert GiveUp is type(after_create_error(e500, attempt=2, **kw))
    assert after_create_error(e500, attempt=2, **kw).maybe_created  # type: ignore[union-attr]
    assert not after_create_error(e400, attempt=0, **kw).maybe_created  # type: ignore[union-attr]
    assert isinstance(after_create_error(e401, attempt=0, **kw), Fatal)


@given(st.lists(st.integers(), max_size=50))
def test_split_halves_is_an_order_preserving_partition(items: list[int]) -> None:
    a, b = split_halves(items)
    assert items == [*a, *b]
    assert abs(len(a) - len(b)) <= 1


T0 = 1_800_000_000.0


def snap(i: int, n: int, created: float) -> BatchSnapshot:
    return BatchSnapshot(
        id=f"b{i}",
        status="in_progress",
        created_at=created,
        expires_at=created + 86400,
        counts=RequestCounts(processing=n),
    )


intents_st = st.lists(
    st.builds(lambda n, dt: (n, dt), st.integers(1, 3), st.floats(0, 2000)), min_size=1, max_size=6
)
listed_st = st.lists(st.builds(lambda n, dt: (n, dt), st.integers(1, 3), st.floats(-600, 3000)), max_size=10)


@given(intents_st, listed_st, st.sets(st.integers(0, 9), max_size=3))
def test_match_orphans_adopts_each_batch_once_never_a_claimed_one_only_on_size_and_window(
    raw_intents: list[tuple[int, float]], raw_listed: list[tuple[int, float]], claimed_idx: set[int]
) -> None:
    intents = [Intent(sub_id=i + 1, n=n, intent_at=T0 + dt) for i, (n, dt) in enumerate(raw_intents)]
    listed = [snap(i, n, T0 + dt) for i, (n, dt) in enumerate(raw_listed)]
    claimed = frozenset(f"b{i}" for i in claimed_idx)
    window = OrphanWindow(window=900.0, skew=300.0)
    out = match_orphans(intents, listed, claimed=claimed, window=window)
    by_sub = {i.sub_id: i for i in intents}
    assert len({a.batch.id for a in out}) == len(out)
    assert len({a.sub_id for a in out}) == len(out)
    for a in out:
        intent = by_sub[a.sub_id]
        assert a.batch.id not in claimed
        assert a.batch.counts.total == intent.n
        assert intent.intent_at - 300.0 <= a.batch.created_at <= intent.intent_at + 900.0
    # maximal: an unadopted intent has no fitting batch left over
    taken = {a.batch.id for a in out} | claimed
    for intent in intents:
        if intent.sub_id not in {a.sub_id for a in out}:
            assert not [
                b
                for b in listed
                if b.id not in taken
                and b.counts.total == intent.n
                and intent.intent_at - 300.0 <= b.created_at <= intent.intent_at + 900.0
            ]


def test_equal_sized_orphans_that_both_fit_form_one_group() -> None:
    intents = [Intent(sub_id=4, n=10, intent_at=T0), Intent(sub_id=5, n=10, intent_at=T0 + 1)]
    listed = [snap(1, 10, T0 + 2), snap(2, 10, T0 + 2), snap(3, 7, T0 + 2)]
    out = match_orphans(intents, listed, claimed=frozenset(), window=OrphanWindow())
    assert [(4, "b1", 4), (5, "b2", 4)] == [(a.sub_id, a.batch.id, a.group) for a in out]


def test_a_lone_orphan_is_not_grouped_and_listing_can_stop_below_the_oldest_intent() -> None:
    intents = [Intent(sub_id=1, n=10, intent_at=T0)]
    out = match_orphans(intents, [snap(1, 10, T0 + 5)], claimed=frozenset(), window=OrphanWindow())
    assert [(1, "b1", None)] == [(a.sub_id, a.batch.id, a.group) for a in out]
    assert T0 - 300.0 == OrphanWindow(skew=300.0).oldest(intents)


@given(intents_st, listed_st, st.sets(st.tuples(st.integers(1, 6), st.integers(0, 9)), max_size=12))
def test_a_batch_shown_to_hold_other_requests_is_never_adopted_nor_grouped_for_that_intent(
    raw_intents: list[tuple[int, float]], raw_listed: list[tuple[int, float]], shown: set[tuple[int, int]]
) -> None:
    """`foreign[sub_id]`: batches whose results' first custom_id is none of the intent's (another job's,
    in the workspace-wide listing): never adopted for it, never a reason to group it with another."""
    intents = [Intent(sub_id=i + 1, n=n, intent_at=T0 + dt) for i, (n, dt) in enumerate(raw_intents)]
    listed = [snap(i, n, T0 + dt) for i, (n, dt) in enumerate(raw_listed)]
    foreign: dict[int, frozenset[str]] = {}
    for sub_id, b in shown:
        foreign[sub_id] = foreign.get(sub_id, frozenset()) | {f"b{b}"}
    window = OrphanWindow(window=900.0, skew=300.0)
    out = match_orphans(intents, listed, claimed=frozenset(), window=window, foreign=foreign)
    assert all(a.batch.id not in foreign.get(a.sub_id, ()) for a in out)
    every_fit_foreign = {
        i.sub_id
        for i in intents
        if all(b.id in foreign.get(i.sub_id, ()) for b in listed if b.counts.total == i.n)
    }
    groups = orphan_groups(intents, listed, claimed=frozenset(), window=window, foreign=foreign)
    assert not every_fit_foreign & {a.sub_id for a in out}
    assert not every_fit_foreign & set(groups)


def test_a_batch_shown_to_hold_one_intents_ids_is_adopted_though_another_fits_both() -> None:
    # Two creates of equal size made batches the run never heard of, at the same instant. b2 has
    # ended and its first result line names an id of sub-batch 1 (so it is no batch of sub-batch 2);
    # b1 is still running and could be either's. Pairing sub-batch 1 with b1 (the earliest) would
    # leave b2 behind and sub-batch 1's ids to be sent and paid for again.
    intents = [Intent(sub_id=1, n=2, intent_at=T0), Intent(sub_id=2, n=2, intent_at=T0)]
    listed = [snap(1, 2, T0), snap(2, 2, T0)]
    out = match_orphans(
        intents, listed, claimed=frozenset(), window=OrphanWindow(), foreign={2: frozenset({"b2"})}
    )
    assert [(1, "b2", 1), (2, "b1", 1)] == [(a.sub_id, a.batch.id, a.group) for a in out]


@given(
    st.lists(st.floats(0, 1200), min_size=1, max_size=4),
    st.lists(st.floats(-300, 1500), max_size=4),
    st.sets(st.tuples(st.integers(1, 4), st.integers(0, 3)), max_size=8),
)
def test_match_orphans_pairs_as_many_intents_as_any_pairing_could(
    intent_at: list[float], created: list[float], foreign_pairs: set[tuple[int, int]]
) -> None:
    intents = [Intent(sub_id=i + 1, n=5, intent_at=T0 + dt) for i, dt in enumerate(intent_at)]
    listed = [snap(i, 5, T0 + dt) for i, dt in enumerate(created)]
    foreign = {s: frozenset(f"b{b}" for t, b in foreign_pairs if t == s) for s, _ in foreign_pairs}
    window = OrphanWindow(window=900.0, skew=300.0)
    out = match_orphans(intents, listed, claimed=frozenset(), window=window, foreign=foreign)

    def fits(i: Intent, b: BatchSnapshot | None) -> bool:
        return (
            b is not None
            and i.intent_at - 300.0 <= b.created_at <= i.intent_at + 900.0
            and b.id not in foreign.get(i.sub_id, frozenset())
        )

    slots: list[BatchSnapshot | None] = [*listed, *[None] * len(intents)]
    best = max(
        sum(1 for i, b in zip(intents, chosen, strict=True) if fits(i, b))
        for chosen in itertools.permutations(slots, len(intents))
    )
    assert best == len(out)
    assert all(fits(next(i for i in intents if i.sub_id == a.sub_id), a.batch) for a in out)
