"""An intent of an earlier run whose upload the provider holds and whose batch it proved absent (a kill
between the upload and the create) is created from that upload by the batch machine: a `Create` like
any other, its failure a `CreateFailed` (classified, backed off, within the sub-batch's create
attempts), never a new upload and never a new sub-batch of the same ids."""

from __future__ import annotations

from judgecore.decide.polling import BatchSnapshot
from judgecore.results.outcomes import RawResult
from judgecore.run import batch as br
from judgecore.run.batch import BatchSettings
from judgecore.run.subbatch import Checkpoint, SubState, SubView

from .fakes import make_requests

REQS = make_requests(3)
IDS = tuple(r.custom_id for r in REQS)


def _start(attempts: int = 3) -> br.BatchRun:
    intent = SubView(sub_id=1, round=1, n=3, intent_at=0.0, state=SubState.INTENT, ids=IDS)
    return br.BatchRun.start(
        Checkpoint(subs=(intent,), top_sub=1),
        requests=REQS,
        settings=BatchSettings(create_attempts=attempts),
        now=10.0,
    )


def _ops(run: br.BatchRun, now: float) -> tuple[br.BatchRun, list[br.Action]]:
    run, actions = run.advance(now)
    return run, [a for a in actions if isinstance(a, br.Create | br.Reconcile | br.Poll | br.Harvest)]


def _reconciled(run: br.BatchRun, now: float) -> tuple[br.BatchRun, list[br.Action]]:
    """Advance to the reconciliation, and answer it: the upload is there, no batch."""
    run, ops = _ops(run, now)
    assert [type(o) for o in ops] == [br.Reconcile], ops
    run = run.on(br.Listed((), True, now, (), (), uploaded=(1,)))
    return _ops(run, now)


def _snap(now: float) -> BatchSnapshot:
    return BatchSnapshot(id="batch_1", status="in_progress", created_at=now, expires_at=now + 86_400)


def test_a_found_upload_is_created_by_the_machine_and_a_failed_create_is_retried_after_a_check():
    run, ops = _reconciled(_start(), 10.0)
    assert [(type(o), o.sub_id) for o in ops] == [(br.Create, 1)]  # the same sub-batch, not a new one
    assert ops[0].written  # its intent is on disk: restamped, not written again
    run = run.on(
        br.CreateFailed(1, RawResult(kind="http_error", status=500, error_type="api_error"), 10.0, 0.5)
    )
    assert run.subs[1].state is SubState.INTENT  # it may have made a batch: checked before another create
    later = 10.0 + 3600.0
    run, ops = _reconciled(run, later)  # the check finds the upload and no batch again
    assert [(type(o), o.sub_id) for o in ops] == [(br.Create, 1)]
    run = run.on(br.Created(1, _snap(later), later))
    assert run.subs[1].state is SubState.LIVE
    assert run.next_sub == 2  # no sub-batch was made for its ids


def test_a_found_uploads_creates_are_bounded_and_its_ids_stay_pending_for_a_rerun():
    run, now = _start(attempts=2), 10.0
    creates = 0
    for _ in range(10):
        run, actions = run.advance(now)
        ops = [a for a in actions if isinstance(a, br.Create | br.Reconcile)]
        if not ops:
            break
        for op in ops:
            if isinstance(op, br.Reconcile):
                run = run.on(br.Listed((), True, now, (), (), uploaded=(1,)))
            else:
                creates += 1
                run = run.on(
                    br.CreateFailed(
                        1, RawResult(kind="http_error", status=503, error_type="overloaded"), now, 0.5
                    )
                )
        now += 3600.0
    assert creates == 2  # the sub-batch's create attempts, no more
    assert run.subs[1].state is SubState.INTENT  # left for a rerun, which finds the upload again
    assert run.next_sub == 2  # never sent again in a new sub-batch (a new upload)


def test_a_refused_create_from_a_found_upload_is_not_split_it_leaves_the_ids_pending():
    run, _ = _reconciled(_start(), 10.0)
    run = run.on(
        br.CreateFailed(
            1, RawResult(kind="http_error", status=413, error_type="request_too_large"), 10.0, 0.5
        )
    )
    assert run.subs[1].state is SubState.FAILED  # nothing was made: its ids are free
    assert run.queue == ()  # an earlier run's intent: this run holds none of its requests to split
