"""Plain progress (off a terminal: logs, CI, pipes): one line per change, and a heartbeat per live batch."""

from __future__ import annotations

import io
import re

import attrs

from adapters.run.events import BatchCreated, BatchPolled, RoundStarted, SyncProgress
from adapters.run.progress import PlainProgress

T0 = 1_000_000.0
DEADLINE = T0 + 86_400 + 1_800


def lines_of(stream: io.StringIO) -> list[str]:
    """The printed lines without their `[HH:MM:SS] ` stamp."""
    return [re.sub(r"^\[\d\d:\d\d:\d\d\] ", "", line) for line in stream.getvalue().splitlines()]


def polled(now: float, status: str = "in_progress") -> BatchPolled:
    return BatchPolled(
        sub_id=1, batch_id="msgbatch_1", status=status, n=8000, deadline=DEADLINE, now=now, created_at=T0
    )


def test_a_live_batch_gets_a_heartbeat_line_at_most_every_minute():
    """Was: nothing between "created" and "ended", hours of silence in a log."""
    out = io.StringIO()
    progress = PlainProgress(out)
    for second in range(0, 3 * 60 + 1, 5):  # polled every 5 s for three minutes
        progress(polled(T0 + second))
    expected = [
        "sub-batch 1: msgbatch_1 in_progress for 0s, 24h30m to deadline",
        "sub-batch 1: msgbatch_1 in_progress for 1m00s, 24h29m to deadline",
        "sub-batch 1: msgbatch_1 in_progress for 2m00s, 24h28m to deadline",
        "sub-batch 1: msgbatch_1 in_progress for 3m00s, 24h27m to deadline",
    ]
    assert expected == lines_of(out)


def test_each_live_batch_has_its_own_heartbeat():
    out = io.StringIO()
    progress = PlainProgress(out)
    for now in (T0, T0 + 30, T0 + 61):
        for sub in (1, 2):
            progress(
                BatchPolled(
                    sub_id=sub, batch_id=f"b{sub}", status="in_progress", n=5, deadline=DEADLINE, now=now
                )
            )
    assert 4 == len(lines_of(out))


def test_an_ended_batch_says_ended_with_its_age_and_no_deadline():
    """Was: "ended, overdue to deadline"."""
    out = io.StringIO()
    PlainProgress(out)(polled(T0 + 3_700, status="ended"))
    assert ["sub-batch 1: msgbatch_1 ended after 1h01m"] == lines_of(out)


def test_a_batch_polled_long_after_it_ended_says_how_long_it_ran():
    """Was: a resume seven hours later said "ended after 7h00m" of a batch that ran an hour."""
    out = io.StringIO()
    PlainProgress(out)(attrs.evolve(polled(T0 + 7 * 3600, status="ended"), ended_at=T0 + 3_700))
    assert ["sub-batch 1: msgbatch_1 ended after 1h01m"] == lines_of(out)


def test_counts_are_plural_only_when_they_are_more_than_one():
    """Was: "1 requests" and "sub-batch(es)"."""
    out = io.StringIO()
    progress = PlainProgress(out)
    progress(RoundStarted(round=1, n=1, sub_batches=1))
    progress(BatchCreated(sub_id=1, batch_id="b", n=1, expires_at=T0 + 3600, now=T0, created_at=T0))
    progress(RoundStarted(round=2, n=9, sub_batches=2))
    assert [
        "round 1: 1 request in 1 sub-batch",
        "sub-batch 1: created b (1 request), expires in 1h00m",
        "round 2: 9 requests in 2 sub-batches",
    ] == lines_of(out)


def _sync(**kw) -> SyncProgress:
    base = {"retries": 0, "rate_limited": 0, "in_flight": 0, "concurrency": 8, "output_tokens": 0}
    return SyncProgress(**(base | kw))


def test_sync_progress_counts_the_whole_job_including_what_an_earlier_run_did():
    """Was: "sync: 0/39 done" for a 40-item job whose first item an earlier run answered."""
    out = io.StringIO()
    PlainProgress(out)(_sync(done=0, total=39, earlier=1, succeeded=0, pending=0, elapsed=0.0))
    assert lines_of(out)[0].startswith("sync: 1/40 done (1 before this run; this run: 0 succeeded);")


def test_the_probes_answer_is_this_runs_and_not_in_the_rate():
    """Was: "sync: 1/20 done (1 before this run; this run: 0 succeeded)" for the probe of this run."""
    out = io.StringIO()
    PlainProgress(out)(_sync(done=11, total=40, probed=1, succeeded=11, pending=0, elapsed=2.0))
    assert lines_of(out)[0].startswith("sync: 11/40 done (11 succeeded); 5.0/s,")


def test_sync_progress_says_done_and_succeeded_apart():
    """Was: "50/50 done" when none succeeded."""
    out = io.StringIO()
    PlainProgress(out)(_sync(done=50, total=50, succeeded=0, pending=50, retries=100, elapsed=10.0))
    assert lines_of(out)[0].startswith("sync: 50/50 done (0 succeeded, 50 pending); 5.0/s, 100 retries,")


def test_sync_progress_from_an_emitter_that_gives_no_breakdown_still_reads_true():
    out = io.StringIO()
    PlainProgress(out)(_sync(done=3, total=4, retries=1, elapsed=1.0))
    assert lines_of(out)[0].startswith("sync: 3/4 done; 3.0/s, 1 retry, 0 429s")
