"""The report's self-preference table: shown for a panel whose items name their authors, the flagged
judge's row marked, rendered by a real headless Chromium at 800 px with nothing cut off."""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import orjson

from adapters.report.job_report import JobReport
from adapters.report.page import render_html
from judgecore.summary.job_summary import summarize
from tests.integration.conftest import ROOT
from tests.report.test_html_report import PROBE, _chromium, needs_chromium

JUDGES = ("claude-sonnet-4-6", "openai:gpt-5-mini", "served:Qwen/Qwen3-32B@http://gpu01:8000/v1")
WRITERS = ("claude-3-5-haiku", "gpt-4o-mini", "Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct")


def _records(with_authors: bool = True) -> list[dict]:
    """240 answers by four families; the served Qwen judge adds 2 points to Qwen's answers."""
    rng = random.Random(11)
    out = []
    for i in range(240):
        writer = WRITERS[i % 4]
        quality = rng.uniform(3, 8)
        judges = {}
        for j in JUDGES:
            s = quality + rng.gauss(0, 0.6) + (2 if "Qwen" in j and "Qwen" in writer else 0)
            judges[j] = {"score": max(1, min(10, round(s)))}
        out.append(
            {
                "id": f"a{i}",
                "status": "succeeded",
                "error": None,
                "text": "Score: 5",
                "metadata": {"model": writer} if with_authors else {"topic": "x"},
                "judges": judges,
                "verdict": {"score": sorted(v["score"] for v in judges.values())[1]},
            }
        )
    return out


def _page(records: list[dict]) -> str:
    s = summarize(records, score_field="score", verdict_kind="pattern")
    return render_html(
        JobReport(state_dir=Path("s"), summary=s, model=None, route=None, timeline=(), sub_batches=())
    )


def test_the_table_marks_the_flagged_judge_and_is_absent_without_authors():
    page = _page(_records())
    assert "<h3>Self-preference by author family</h3>" in page
    flagged = re.findall(r"<tr class=flagged><td>([^<]+)</td>", page)
    assert [JUDGES[2]] == flagged
    assert "SELF-PREFERENCE</td>" in page
    assert "Self-preference" not in _page(_records(with_authors=False))


@needs_chromium
def test_the_table_renders_offline_at_800_px_with_nothing_cut_off(tmp_path):
    """At the narrowest width the report holds (the 1280 px render is the report test's)."""
    width = 800
    probed = tmp_path / "selfpref.html"
    page = _page(_records())
    probed.write_text(page.replace("</body>", PROBE))
    shot = tmp_path / "selfpref.png"
    dom, console, tried = _chromium(probed, tmp_path, f"--window-size={width},1400", f"--screenshot={shot}")
    lines = console.splitlines()
    assert [] == [line for line in lines if "JUDGECORE-PROBE" not in line]
    [probe] = [line for line in lines if "JUDGECORE-PROBE" in line]
    seen = orjson.loads(re.search(r'JUDGECORE-PROBE (\{.*\})", source', probe).group(1).replace('\\"', '"'))
    assert seen["sw"] <= width, f"horizontal scroll: the page is {seen['sw']} px wide"
    assert [] == seen["cut"]
    assert "SELF-PREFERENCE" in dom
    assert set() == {u for u in tried if u in page}  # the page fetches nothing (Chromium's own pings aside)
    keep = ROOT / ".screenshots"
    if keep.is_dir():  # `mkdir .screenshots` to look at the last one
        shutil.copy(shot, keep / f"selfpref-{width}.png")
