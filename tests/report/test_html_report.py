"""The HTML report: self-contained, and rendered by a real headless Chromium with no network."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.server import serve
from tests.integration.conftest import ROOT, cli_in_process

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (apt-get install chromium)")

# No network for the page: every host resolves to nothing and every request goes to a closed loopback
# port; Chromium's own background services are turned off.
OFFLINE = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--proxy-server=127.0.0.1:9",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--enable-logging=stderr",
    "--v=0",
]


def _chromium(page: Path, tmp: Path, *extra: str) -> tuple[str, str, set[str]]:
    """(DOM after load, console lines, URLs the browser tried to fetch)."""
    netlog = tmp / f"{page.stem}.netlog.json"
    res = subprocess.run(
        [
            CHROMIUM,
            *OFFLINE,
            f"--user-data-dir={tmp / 'profile'}",
            f"--log-net-log={netlog}",
            *extra,
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert 0 == res.returncode, res.stderr[-2000:]
    console = [line for line in res.stderr.splitlines() if ":CONSOLE" in line]
    tried = (
        set(re.findall(r'"url":"([^"]+)"', netlog.read_text(errors="replace"))) if netlog.exists() else set()
    )
    return res.stdout, "\n".join(console), tried


#: The job's API key: never in the checkpoint, so never in a report or an example.
KEY = "sk-ant-api03-NEVER-IN-A-REPORT-4242"


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    """A finished job's checkpoint: a pattern verdict, three groups, unparseable answers, truncations,
    refusals."""
    import anthropic

    from adapters.files.items_io import items_from_objects
    from adapters.run.job import ajudge
    from adapters.run.settings import JobSettings
    from judgecore.results.verdicts import spec_from_json

    root = tmp_path_factory.mktemp("job")
    rows = [
        {
            "id": f"i{k}",
            "prompt": f"answer #{k}"
            + (" [[sim:max_tokens]]" if k % 29 == 0 else "")
            + (" [[sim:refusal]]" if k % 31 == 7 else ""),
            "metadata": {"model": ["alpha", "beta", "gamma"][k % 3], "gold": 1 + k % 5},
        }
        for k in range(90)
    ]
    scenario = Scenario(
        seed=4, batch_seconds=0.2, unparseable_rate=0.1, score_weights={"2": 1, "3": 2, "4": 3}
    )
    settings = JobSettings(
        force="batch",
        max_batch_requests=40,
        poll_interval=0.05,
        verdict=spec_from_json({"pattern": r"^Score: (?P<score>\d+)"}),
    )

    async def run(base_url: str) -> None:
        async with anthropic.AsyncAnthropic(base_url=base_url, api_key=KEY, max_retries=0) as client:
            await ajudge(
                items_from_objects(rows),
                rubric="Grade on a 1-5 scale; end with 'Score: N'.",
                state_dir=root / "state",
                settings=settings,
                client=client,
            )

    with serve(Simulator(scenario)) as server:
        asyncio.run(run(server.base_url))
    return root / "state"


def _write_report(state: Path, out: Path) -> subprocess.CompletedProcess[str]:
    args = ["summary", "--state", str(state), "--by", "model", "--reference", "gold", "--html", str(out)]
    return cli_in_process(args, env={k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")})


@pytest.fixture(scope="module")
def report(job, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    res = _write_report(job, out)
    assert 0 == res.returncode, res.stderr
    return out


def test_the_report_is_one_file_with_inline_plots_and_nothing_to_fetch(report):
    page = report.read_text()
    assert 6 <= page.count("<svg")
    assert [] == re.findall(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)
    assert [] == [x for x in ("<script", "<link", "@import") if x in page]
    assert "VERDICT_UNPARSED" in page and "<td>alpha</td>" in page
    # refusals are counted apart from other misses: a column of the items table, a class of their own
    assert "<th>refused</th>" in page and "MODEL_REFUSAL" in page


# The test's own probe, added to a copy of the page (the report has no script): every <details> opened,
# then the page's width against the window's, each element whose content is wider than its box (cut
# off, or behind a scrollbar), and the section headings, logged as one console line.
PROBE = """<script>
document.querySelectorAll("details").forEach((d) => { d.open = true; });
const cut = [...document.querySelectorAll("body *")]
  .filter((e) => !(e instanceof SVGElement) && e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0)
  .map((e) => e.tagName + "." + e.className);
console.log("JUDGECORE-PROBE " + JSON.stringify({
  sw: document.documentElement.scrollWidth, iw: window.innerWidth, cut: cut,
  h2: [...document.querySelectorAll("h2")].map((h) => h.textContent)}));
</script></body>"""

SECTIONS = ["Results", "The judge's own words", "Provenance", "Run health"]


@needs_chromium
@pytest.mark.parametrize("width", [1280, 800])
def test_the_report_renders_offline_at_1280_and_800_px_with_nothing_cut_off(report, tmp_path, width):
    """One render per width: no console message, no horizontal scroll, nothing cut off, every section."""
    _probed(report.read_text(), tmp_path, width, f"report-{width}.png")


def _probed(page: str, tmp_path: Path, width: int, keep_as: str) -> None:
    """`page` rendered by Chromium at `width`: no console message, no horizontal scroll, nothing cut
    off, every section, nothing fetched."""
    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("</body>", PROBE))
    shot = tmp_path / "report.png"
    _, console, tried = _chromium(probed, tmp_path, f"--window-size={width},900", f"--screenshot={shot}")
    lines = console.splitlines()
    probe = [line for line in lines if "JUDGECORE-PROBE" in line]
    assert [] == [line for line in lines if "JUDGECORE-PROBE" not in line]
    assert 1 == len(probe)
    seen = orjson.loads(
        re.search(r'JUDGECORE-PROBE (\{.*\})", source', probe[0]).group(1).replace('\\"', '"')
    )
    assert width == seen["iw"]
    assert seen["sw"] <= width, f"horizontal scroll: the page is {seen['sw']} px wide"
    assert [] == seen["cut"]
    assert SECTIONS == seen["h2"]
    assert set() == {u for u in tried if u in page}
    assert shot.stat().st_size > 10_000
    keep = ROOT / ".screenshots"
    if keep.is_dir():  # `mkdir .screenshots` to look at the last one
        shutil.copy(shot, keep / keep_as)


@needs_chromium
def test_the_browser_check_sees_a_console_error_and_a_fetch(tmp_path):
    """The checks above can fail: a page that errs and fetches is caught by both."""
    page = tmp_path / "bad.html"
    page.write_text(
        '<!doctype html><script>console.error("boom")</script><img src="http://example.com/x.png">'
    )
    _, console, tried = _chromium(page, tmp_path)
    assert "boom" in console
    assert "http://example.com/x.png" in tried


def test_help_run_and_status_import_neither_matplotlib_nor_jsonschema():
    code = (
        "import sys, adapters.cli, adapters.run.job, adapters.report.job_report, judgecore; "
        "print(sorted(m for m in ('matplotlib', 'jsonschema', 'anthropic') if m in sys.modules))"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert [] == orjson.loads(res.stdout.replace("'", '"'))


def test_a_label_score_and_a_job_with_no_answer_yet_still_render():
    from adapters.report.job_report import JobReport
    from adapters.report.page import render_html
    from judgecore.summary.job_summary import summarize

    def rec(status, verdict, gold):
        error = None if status == "succeeded" else {"class": "PENDING", "type": None, "message": "x"}
        return {"status": status, "error": error, "verdict": verdict, "metadata": {"gold": gold, "m": "a<b>"}}

    rows = [
        rec("succeeded", {"v": "PASS"}, "PASS"),
        rec("succeeded", {"v": "FAIL"}, "PASS"),
        rec("pending", None, "FAIL"),
    ]
    summary = summarize(rows, score_field="v", verdict_kind="pattern", by="m", reference="gold")
    page = render_html(
        JobReport(state_dir=Path("s"), summary=summary, model=None, route=None, timeline=(), sub_batches=())
    )
    assert "No answer recorded yet." in page and "a&lt;b&gt;" in page and "a<b>" not in page
    # the score panel, the distributions, the confusion heatmap, where the items went; no spend plot
    assert 4 == page.count("<svg")
    empty = summarize([rec("pending", None, None)], score_field=None)
    assert "<svg" in render_html(
        JobReport(state_dir=Path("s"), summary=empty, model=None, route=None, timeline=(), sub_batches=())
    )


def test_a_job_with_items_pending_says_so_above_its_figures_and_a_finished_one_does_not():
    """The figures of an unfinished job are over what is answered so far: the page says so first,
    with the command that resumes it."""
    from adapters.report.job_report import JobReport
    from adapters.report.page import render_html
    from judgecore.summary.job_summary import summarize

    def page(statuses):
        rows = [
            {"status": st, "error": None, "verdict": {"score": 3} if st == "succeeded" else None}
            for st in statuses
        ]
        summary = summarize(rows, score_field="score", verdict_kind="pattern")
        state = Path("runs/half done")
        return render_html(
            JobReport(state_dir=state, summary=summary, model=None, route=None, timeline=(), sub_batches=())
        )

    unfinished = page(["succeeded"] + ["pending"] * 3)
    callout = unfinished.index("<b>Not finished:</b> 3 of 4 items are still pending")
    assert callout < unfinished.index("Overall mean score"), "the warning comes before the figures"
    assert "judgecore run --state &#x27;runs/half done&#x27;" in unfinished  # quoted for a shell
    assert "Not finished" in page(["pending"]), "also when nothing has a score yet"
    assert "Not finished" not in page(["succeeded", "succeeded"])


def test_examples_are_the_same_for_the_same_checkpoint_and_quote_only_the_checkpoint(job, report):
    """Seeded by the job's own key: two reports show the same items, each quoting the item's own prompt
    and answer; the API key is in neither the page nor the checkpoint."""
    from adapters.checkpoint.records import records_from_store
    from adapters.checkpoint.store import Store
    from adapters.report.job_report import job_report
    from judgecore.results.verdicts import spec_from_json

    first, second = job_report(job, by="model"), job_report(job, by="model")
    assert first.examples == second.examples
    groups = {g.key for g, _ in first.examples}
    assert {"VERDICT_UNPARSED", "MODEL_REFUSAL", "MODEL_TRUNCATION"} <= groups
    store = Store.open_readonly(job)
    try:
        records = {
            r["custom_id"]: r
            for r in records_from_store(store, spec_from_json({"pattern": r"^Score: (?P<score>\d+)"}))
        }
    finally:
        store.close()
    for g, shown in first.examples:
        assert 1 <= len(shown) <= 2
        for e in shown:
            r = records[e.custom_id]
            assert (r["text"] or "").startswith(e.text.removesuffix(" …"))
            assert e.prompt.startswith(f"answer #{r['id'][1:]}")
            if g.kind == "score":
                assert g.key == str(r["verdict"]["score"])
            else:
                assert g.key == r["error"]["class"]
    page = report.read_text()
    assert KEY not in page
    assert all(KEY.encode() not in f.read_bytes() for f in job.rglob("*") if f.is_file())


def test_provenance_names_the_rubric_versions_and_what_was_judged(job, report):
    import importlib.metadata

    from adapters.checkpoint.store import Store

    page = report.read_text()
    assert "Grade on a 1-5 scale; end with &#x27;Score: N&#x27;." in page
    assert importlib.metadata.version("anthropic") in page and "anthropic SDK" in page
    store = Store.open_readonly(job)
    try:
        assert store.items_digest() in page
    finally:
        store.close()
    assert "(started from the Python API)" in page  # no invocation to reproduce from
    # and no `judgecore run --state DIR` to resume it by: that command refuses a job started from
    # Python (it has no command line to resume); the report named it all the same
    assert "judgecore run --state" not in page
    assert f"call judge() again with the same items, rubric and settings, and state_dir={job}" in page


def test_one_number_format_for_a_figure_across_text_markdown_json_and_the_page(job, report):
    from adapters.report.job_report import job_report, summary_json
    from judgecore.summary import numfmt as figures
    from judgecore.summary.job_summary import render_summary
    from judgecore.summary.text import render_markdown

    r = job_report(job, by="model", reference="gold", full=False)
    mean = figures.score(r.summary.overall.score.mean)
    agreement = figures.share(r.summary.overall.reference.agreement)
    for text in (render_summary(r.summary), render_markdown(r.summary), report.read_text()):
        assert mean in text and agreement in text
    data = orjson.loads(summary_json(r))
    assert figures.FORMATS == data["formats"]
    assert 3 == len(data["differences"])  # alpha-beta, alpha-gamma, beta-gamma
    assert all(k not in data for k in ("samples", "pairwise", "panel"))  # a job without judge designs


def test_summary_markdown_prints_the_headline_tables(job):
    res = cli_in_process(
        ["summary", "--state", str(job), "--by", "model", "--reference", "gold", "--markdown"], env={}
    )
    assert 0 == res.returncode, res.stderr
    assert res.stdout.startswith("### job in ")
    assert "| model | items | scored | score | 95% CI |" in res.stdout
    assert "| beta - alpha |" in res.stdout and "Agreement with the reference `gold`" in res.stdout
    both = cli_in_process(["summary", "--state", str(job), "--json", "--markdown"], env={})
    assert 2 == both.returncode and "choose one" in both.stderr


def _design_records():
    rows = []
    for k in range(12):
        a, b = ("x", "y")
        first, second = ("x", "x") if k % 3 else ("x", "y")  # every third item: the orders disagree
        winner = first if first == second else "tie"
        rows.append(
            {
                "id": f"i{k}",
                "custom_id": f"c{k}",
                "status": "succeeded",
                "error": None,
                "text": "Winner: A",
                "metadata": {"m": "p" if k % 2 else "q"},
                "verdict": {
                    "score": winner,
                    "winner": winner,
                    "consistent": first == second,
                    "orders": [{"first": a, "choice": first}, {"first": b, "choice": second}],
                },
                "samples": [
                    {"status": "succeeded", "text": "t", "verdict": {"score": v}}
                    for v in (k % 5, k % 5, (k + 1) % 5)
                ],
                "agreement": 2 / 3,
                "judges": {
                    "m-one": {"score": k % 5},
                    "m-two": {"score": (k * 2) % 5},
                    "m-three": {"score": k % 4},
                },
            }
        )
    return rows


def test_design_figures_appear_in_the_text_markdown_and_page_only_when_the_records_carry_them():
    from adapters.report.job_report import JobReport
    from adapters.report.page import render_html
    from judgecore.summary.job_summary import render_summary, summarize
    from judgecore.summary.text import render_markdown

    s = summarize(_design_records(), score_field="score", verdict_kind="pattern", by="m")
    p = s.designs.pairwise
    assert ("x", "y", 12, 8) == (p.a, p.b, p.items, p.consistent)
    assert pytest.approx((8 + 4 / 2) / 12) == p.win_rate_a
    text, markdown = render_summary(s), render_markdown(s)
    page = render_html(
        JobReport(state_dir=Path("s"), summary=s, model=None, route=None, timeline=(), sub_batches=())
    )
    for out in (text, markdown, page):
        assert "win rate of x over y (ties split)" in out and "position consistency" in out
        assert "Krippendorff" in out and "score by m-two" in out
    assert "<h2>Judge designs</h2>" in page
    # a pairwise verdict without the score field is scored by its winner, a label
    bare = [
        {**r, "verdict": {k: v for k, v in r["verdict"].items() if k != "score"}} for r in _design_records()
    ]
    labels = summarize(bare, score_field="score").overall.score
    assert {"x": 8, "tie": 4} == dict(labels.counts)
    plain = summarize(
        [{**r, "samples": None, "judges": None, "verdict": {"score": 3}} for r in _design_records()],
        score_field="score",
    )
    assert not plain.designs.any
    assert "Judge designs" not in render_html(
        JobReport(state_dir=Path("s"), summary=plain, model=None, route=None, timeline=(), sub_batches=())
    )


def test_a_sync_only_timeline_is_shown_only_when_it_says_something():
    from judgecore.summary.health import timeline_says_something

    assert not timeline_says_something(sub_batches=0, answered_at=[1.0, 2.0, 3.0], retried=0)
    assert timeline_says_something(sub_batches=0, answered_at=[1.0, 2.0, 3.0], retried=1)
    assert timeline_says_something(sub_batches=0, answered_at=[1.0, 200.0], retried=0)  # stopped, resumed
    assert timeline_says_something(sub_batches=2, answered_at=[], retried=0)


def test_a_whole_mean_reads_at_the_width_of_its_neighbours():
    """Two groups with means 5 and 5.4: the text, the Markdown and the page write `5.00` beside `5.40`,
    never a bare `5` in a column of two-decimal means."""
    from adapters.report.job_report import JobReport
    from adapters.report.page import render_html
    from judgecore.summary.job_summary import render_summary, summarize
    from judgecore.summary.text import render_markdown

    def row(i, group, score):
        return {
            "id": f"i{i}",
            "status": "succeeded",
            "error": None,
            "verdict": {"score": score},
            "metadata": {"g": group},
        }

    records = [row(i, "a", 5) for i in range(5)] + [
        row(10 + i, "b", s) for i, s in enumerate([5, 5, 6, 5, 6])
    ]
    s = summarize(records, score_field="score", verdict_kind="pattern", by="g")
    page = render_html(
        JobReport(state_dir=Path("s"), summary=s, model=None, route=None, timeline=(), sub_batches=())
    )
    for out in (render_summary(s), render_markdown(s), page):
        assert "5.00" in out and "5.40" in out


def _many_groups(groups: int, *, top: int | None = None) -> str:
    """The page of a job `--by uid` over `groups` groups of one to three items, scores on a 1-5 scale."""
    from adapters.report.job_report import JobReport
    from adapters.report.page import render_html
    from judgecore.summary.job_summary import summarize

    rows = [
        {
            "status": "succeeded",
            "error": None,
            "verdict": {"score": 1 + (g * 7 + k) % 5},
            "metadata": {"uid": f"u{g:05d}"},
        }
        for g in range(groups)
        for k in range(1 + g % 3)
    ]
    extra = {} if top is None else {"top": top}
    s = summarize(rows, score_field="score", verdict_kind="schema", by="uid", scale=(1.0, 5.0), **extra)
    return render_html(
        JobReport(state_dir=Path("s"), summary=s, model=None, route=None, timeline=(), sub_batches=())
    )


def test_a_report_over_many_groups_shows_the_largest_and_says_what_it_left_out():
    """`--html` over 3,000 groups wrote nothing in 150 s (every pair drawn in a table, every group
    plotted): the page shows the 20 groups with the most items, says how many it left out, compares no
    pair, and stays small (`bench/summary_groups.py` times it at 10,000 groups)."""
    page = _many_groups(600)
    table = re.search(r'<table class="groups">.*?</table>', page, re.S).group(0)
    names = re.findall(r"<tr><td>([^<]*)</td>", table)
    assert "all" == names[0] and 21 == len(names)
    assert {f"u{g:05d}" for g in range(2, 60, 3)} == set(names[1:]), "the 20 first groups of three items"
    assert "600 groups: the 20 with the most items are shown, 580 left out" in page
    assert "--json lists every group" in page
    assert "second minus first" not in page and "179,700 pairs" in page
    assert "By uid: 600 groups, too many to compare every pair (179,700); the table shows the 20" in page
    assert 20 == page.count("<span class=lg>"), "one legend entry a group shown"
    assert len(page) < 500_000
    assert "Overall mean score: <b>" in page and "</b> on 1-5 (95% CI" in page


def test_a_table_longer_than_a_plot_says_the_plot_draws_its_first_groups():
    from adapters.report.plots import MOST_GROUPS, MOST_PANELS

    page = _many_groups(100, top=50)
    assert 51 == len(
        re.findall(r"<tr><td>", re.search(r'<table class="groups">.*?</table>', page, re.S).group(0))
    )
    assert MOST_GROUPS == page.count("<span class=lg>")
    assert f"The plot draws the first {MOST_GROUPS} groups of the table." in page
    assert f"The plot draws the first {MOST_PANELS} groups of the table." in page


@needs_chromium
def test_a_report_over_hundreds_of_groups_renders_with_nothing_cut_off(tmp_path):
    _probed(_many_groups(600), tmp_path, 1280, "report-many-groups.png")
