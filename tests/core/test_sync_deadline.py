"""The sync run machine with a deadline (`SyncPolicy.deadline`): from the deadline nothing more is
sent, the answers in flight are still taken, the rest is left pending (exit 3); no wait reaches past it."""

from __future__ import annotations

from judgecore.run.sync import Done, Launch, Wait
from judgecore.run.vocab import ExitStatus
from tests.core.test_syncrun import OK, T0, answer, drain, limited, start


def test_from_the_deadline_nothing_more_is_sent_and_what_is_left_is_pending():
    run, actions = drain(start(3, warm_up=True, deadline=T0 + 5), T0)
    assert [Launch] == [type(a) for a in actions if isinstance(a, Launch)]  # the warm-up alone, before it
    run = answer(run, "c0", OK, T0 + 6)  # its answer comes after the deadline: taken, recorded
    run, actions = drain(run, T0 + 6)
    assert not any(isinstance(a, Launch) for a in actions)
    done = actions[-1]
    assert isinstance(done, Done) and done.exit_status is ExitStatus.PENDING


def test_a_retry_due_after_the_deadline_waits_only_until_the_deadline():
    run, _ = drain(start(1, warm_up=False, deadline=T0 + 5), T0)
    run = answer(run, "c0", limited(60.0), T0 + 1)
    run, actions = drain(run, T0 + 1)
    wait = actions[-1]
    assert isinstance(wait, Wait) and wait.until == T0 + 5
    run, actions = drain(run, T0 + 5)
    assert isinstance(actions[-1], Done) and actions[-1].exit_status is ExitStatus.PENDING


def test_without_a_deadline_the_run_sends_everything():
    run, actions = drain(start(3, warm_up=False), T0)
    assert 3 == sum(isinstance(a, Launch) for a in actions)
    del run
