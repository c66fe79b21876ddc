"""One exit status per idea: the shell's plain ints (kept apart so `--help` imports no core) are the
core's `ExitStatus`, and every machine ends with the one `Done`."""

from __future__ import annotations

from adapters import cli, usage
from judgecore.run import batch as batchrun
from judgecore.run import sync as syncrun
from judgecore.run.job import _machine as jobrun
from judgecore.run.vocab import Done, ExitStatus, Say


def test_the_shells_exit_statuses_are_the_cores():
    assert {
        "OK": usage.EXIT_OK,
        "USAGE": usage.EXIT_USAGE,
        "PENDING": usage.EXIT_PENDING,
        "FATAL": usage.EXIT_FATAL,
        "INTERRUPTED": cli.EXIT_INTERRUPTED,
        "TERMINATED": cli.EXIT_TERMINATED,
        "HUNG_UP": cli.EXIT_HUNG_UP,
    } == {s.name: int(s) for s in ExitStatus}


def test_every_machine_ends_with_the_one_done_and_speaks_with_the_one_say():
    assert batchrun.Done is syncrun.Done is Done is jobrun.Done
    assert batchrun.Say is syncrun.Say is Say is jobrun.Say
