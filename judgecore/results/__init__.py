"""What one answer means: where its item stands and what it used (`status`), its class and what happens
next (`outcomes`), a batch result line (`resultlines`), the verdict read from its text (`verdicts`),
and its item's output line (`output_line`, the same on both routes).

May import: `judgecore.wire`, `judgecore.job`.
"""
