"""`status` tells the last run's deadline: the time left to it, or that it has passed."""

from __future__ import annotations

from adapters.cli.status import _deadline_line

AT = 1_796_313_600.0  # 2026-12-03 16:00:00 UTC


def test_the_time_left_to_a_deadline_still_ahead():
    assert _deadline_line(AT, AT - 2700) == "deadline of the last run: 2026-12-03 16:00:00 UTC (45 min left)"
    assert _deadline_line(AT, AT - 90).endswith("(90 s left)")
    assert _deadline_line(AT, AT - 3 * 3600).endswith("(3.0 h left)")


def test_a_deadline_passed_says_so_and_that_a_rerun_has_none():
    assert "(passed; a rerun has none unless given one)" in _deadline_line(AT, AT + 1)
