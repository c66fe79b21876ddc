"""A refused cancel (`judgecore.run.batch.batching.after_cancel_error`): 400 or 409 means the batch had already
ended; anything else leaves the batch as it is."""

from __future__ import annotations

import pytest

from judgecore.run.batch.batching import after_cancel_error
from judgecore.run.subbatch import SubEvent, SubState, next_state


@pytest.mark.parametrize("status", [400, 409])
@pytest.mark.parametrize("state", [SubState.LIVE, SubState.STUCK])
def test_a_cancel_refused_with_400_or_409_marks_the_batch_ended_for_the_next_run(status, state):
    answer = after_cancel_error(state, "msgbatch_1", status, "invalid_request_error")
    assert next_state(state, SubEvent.ALREADY_ENDED) == answer.state
    assert ("info", "batch msgbatch_1 had already ended; the next run harvests it") == (
        answer.level,
        answer.text,
    )


@pytest.mark.parametrize("status", [None, 401, 404, 429, 500])
def test_any_other_refused_cancel_is_a_warning_and_moves_nothing(status):
    answer = after_cancel_error(SubState.LIVE, "msgbatch_1", status, "boom")
    assert (None, "warning", "batch msgbatch_1: cancel failed: boom") == (
        answer.state,
        answer.level,
        answer.text,
    )
