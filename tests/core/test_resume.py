"""diff_resume: what is left to do on a resume."""

from __future__ import annotations

import pytest
from hypothesis import given
from strategies import jobs_and_states

from judgecore.decide.resume import JobState, diff_resume
from judgecore.results.outcomes import FailureClass

INVALID = FailureClass.INVALID_REQUEST


@given(jobs_and_states())
def test_every_id_lands_in_exactly_one_set(case):
    ids, state, max_attempts = case
    d = diff_resume(ids, state, max_attempts=max_attempts)
    sets = [frozenset(d.submit), d.poll, d.final, d.exhausted]
    assert set(ids) == frozenset().union(*sets)
    assert len(set(ids)) == sum(len(s) for s in sets)
    assert len(d.submit) == len(set(d.submit))


@given(jobs_and_states())
def test_final_ids_are_never_resubmitted_nor_polled(case):
    ids, state, max_attempts = case
    d = diff_resume(ids, state, max_attempts=max_attempts)
    assert set(ids) & state.final == d.final
    assert not (set(d.submit) | d.poll | d.exhausted) & state.final


@given(jobs_and_states())
def test_in_flight_ids_are_polled_not_resent(case):
    ids, state, max_attempts = case
    d = diff_resume(ids, state, max_attempts=max_attempts)
    assert (set(ids) & state.in_flight) - state.final == d.poll


@given(jobs_and_states())
def test_retriable_ids_are_resubmitted_until_the_budget_is_spent(case):
    ids, state, max_attempts = case
    d = diff_resume(ids, state, max_attempts=max_attempts)
    for cid in d.submit:
        assert state.attempts.get(cid, 0) < max_attempts
    for cid in d.exhausted:
        assert state.attempts.get(cid, 0) >= max_attempts


@given(jobs_and_states())
def test_submit_keeps_input_order(case):
    ids, state, max_attempts = case
    d = diff_resume(ids, state, max_attempts=max_attempts)
    first_pos = {}
    for n, cid in enumerate(ids):
        first_pos.setdefault(cid, n)
    assert sorted(d.submit, key=first_pos.__getitem__) == list(d.submit)


@given(jobs_and_states())
def test_diff_resume_is_idempotent(case):
    """Applied to the state it describes, it gives the same answer."""
    ids, state, max_attempts = case
    d = diff_resume(ids, state, max_attempts=max_attempts)
    again = diff_resume(
        ids, JobState(final=d.final, in_flight=d.poll, attempts=state.attempts), max_attempts=max_attempts
    )
    assert d == again
    assert d == diff_resume(ids, state, max_attempts=max_attempts)


@given(jobs_and_states())
def test_done_means_nothing_to_send_or_wait_for(case):
    ids, state, max_attempts = case
    d = diff_resume(ids, state, max_attempts=max_attempts)
    assert (not d.submit and not d.poll) == d.done


def test_fresh_job_submits_everything_in_order():
    d = diff_resume(["c", "a", "b"], JobState())
    assert (("c", "a", "b"), frozenset(), frozenset(), frozenset()) == (
        d.submit,
        d.poll,
        d.final,
        d.exhausted,
    )


def test_a_retried_id_comes_back_until_max_attempts_then_is_exhausted():
    ids = ["a"]
    assert ("a",) == diff_resume(ids, JobState(attempts={"a": 2}), max_attempts=3).submit
    d = diff_resume(ids, JobState(attempts={"a": 3}), max_attempts=3)
    assert ((), frozenset({"a"})) == (d.submit, d.exhausted)


def test_max_attempts_below_one_is_refused():
    with pytest.raises(ValueError):
        diff_resume([], JobState(), max_attempts=0)


def test_job_state_attempts_cannot_be_changed_in_place():
    source = {"a": 1}
    state = JobState(attempts=source)
    source["a"] = 9
    assert 1 == state.attempts["a"]
    with pytest.raises(TypeError):
        state.attempts["a"] = 2  # type: ignore[index]
