"""`judgecore cancel`'s work: every live batch of a job (of one lane of a panel) canceled through its
provider's batch port, and recorded (the next `run` harvests what they completed and resends the rest)."""

from __future__ import annotations

import attrs

from adapters.checkpoint.store import Store
from adapters.providers.port import BatchApiError, BatchPort
from adapters.run.clock import Clock
from adapters.run.events import Emit, Notice
from judgecore.results.outcomes import RawResult
from judgecore.run.batch.batching import after_cancel_error
from judgecore.run.subbatch import SubEvent, SubState, next_state

__all__ = ["CancelReport", "cancel_job"]


@attrs.frozen
class CancelReport:
    """What `cancel_job` did: the batch ids it asked to cancel, and each batch whose cancel failed
    (still live, still billed), with the failure as the core sees it."""

    canceled: tuple[str, ...]
    failed: tuple[tuple[str, RawResult], ...] = ()


async def cancel_job(
    *, store: Store, api: BatchPort, clock: Clock, emit: Emit, lane: str | None = None
) -> CancelReport:
    """Cancel every live (or stuck) batch of the job (of `lane` only, when given: `api` is that lane's
    provider's port) and record it; returns the batch ids canceled, and those whose cancel failed.

    A batch that has already ended is marked for harvest instead; the next `run` harvests, polls the
    canceling batches to their end, and resends whatever was not processed.
    """
    canceled: list[str] = []
    failed: list[tuple[str, RawResult]] = []

    def say(level: str, message: str) -> None:
        emit(Notice(level=level, message=message))

    for r in store.sub_batches((SubState.LIVE, SubState.STUCK, SubState.INTENT), lane=lane):
        state = SubState(r.state)
        if r.batch_id is None:
            say(
                "warning",
                f"sub-batch {r.sub_id}: create never confirmed; the next run reconciles it (cancel it then)",
            )
            continue
        try:
            await api.cancel(r.batch_id)
        except BatchApiError as exc:
            answer = after_cancel_error(state, r.batch_id, exc.raw.status, str(exc))
            if answer.state is not None:
                store.set_state(r.sub_id, answer.state, answer.note)
            else:
                failed.append((r.batch_id, exc.raw))
            say(answer.level, answer.text)
            continue
        note = f"cancel requested at {clock.now():.0f}"
        store.set_state(r.sub_id, next_state(state, SubEvent.CANCEL_REQUESTED), note)
        say("info", f"batch {r.batch_id} ({r.n:,} requests): cancel requested")
        canceled.append(r.batch_id)
    return CancelReport(tuple(canceled), tuple(failed))
