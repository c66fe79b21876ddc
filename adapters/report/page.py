"""The report as one self-contained HTML page: no script, no font, no external resource.

Order (issue 20): the results first (the score per group with its interval, the differences, agreement
with the reference, and beside them who judged it how and one answer quoted), then what the judge
designs buy, the judge's own words, provenance, and the run's health last. The layout holds from 800 px
to 1280 px and wider without a horizontal scroll, and prints to PDF (print CSS).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from adapters.files.paths import publish
from adapters.report import sections
from adapters.report.job_report import JobReport
from judgecore.summary.health import timeline_says_something

CSS = """
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.2em auto; max-width: 1200px; color: #222; padding: 0 1em; }
h1 { font-size: 1.45em; margin: 0 0 0.15em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1em; margin: 1.1em 0 0.4em; }
.meta, .note { color: #555; } .note { font-size: 0.92em; }
.lead { font-size: 1.05em; margin: 0.3em 0; }
.warn { background: #fff7e6; border: 1px solid #f0c36d; border-radius: 6px; padding: 0.45em 0.8em; margin: 0.3em 0 0.6em; }
.top { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 1.2em; align-items: start; }
.who, .quote { background: #f6f7f9; border: 1px solid #e2e4e8; border-radius: 6px; padding: 0.5em 0.8em; }
.who h3, .quote h3 { margin-top: 0.2em; }
.wrap { max-width: 100%; }
table { border-collapse: collapse; margin: 0.5em 0; max-width: 100%; }
th, td { border: 1px solid #ddd; padding: 0.22em 0.55em; text-align: right; overflow-wrap: anywhere; }
th { background: #f4f4f4; } td:first-child, th:first-child { text-align: left; }
table.kv th { text-align: left; white-space: nowrap; vertical-align: top; } table.kv td { text-align: left; }
figure { margin: 0.6em 0; } svg { max-width: 100%; height: auto; } figure.heat svg { max-width: 520px; }
pre { background: #f7f7f7; padding: 0.6em; font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere; margin: 0.2em 0 0.6em; }
code { font-size: 12px; overflow-wrap: anywhere; }
details { margin: 0.4em 0; border: 1px solid #e2e4e8; border-radius: 5px; padding: 0.3em 0.7em; }
summary { cursor: pointer; font-weight: 600; }
.ex { border-top: 1px dashed #ddd; padding-top: 0.3em; } .exid { margin: 0.3em 0; color: #555; }
.cap { margin: 0.2em 0 0; font-size: 0.85em; color: #666; text-transform: uppercase; letter-spacing: 0.03em; }
.sw { display: inline-block; width: 0.8em; height: 0.8em; border-radius: 2px; margin-right: 0.3em; vertical-align: -0.05em; }
.legend .lg { margin-right: 1em; white-space: nowrap; }
table.selfpref th, table.selfpref td:not(:first-child) { overflow-wrap: normal; } tr.flagged td { background: #fff1f0; } td.flag { color: #b00020; font-weight: 700; white-space: nowrap; }
nav { font-size: 0.92em; margin: 0.3em 0 0.8em; } nav a { margin-right: 0.9em; }
@media (max-width: 900px) { .top { grid-template-columns: minmax(0, 1fr); } }
@media print {
  body { max-width: none; margin: 0; font-size: 11px; } nav { display: none; }
  h2 { break-after: avoid; } figure, table, .ex, .who, .quote { break-inside: avoid; }
  details { border: none; padding: 0; } summary { list-style: none; }
  details::details-content { content-visibility: visible; display: block; }  /* printed open */
  pre { font-size: 9.5px; }
}
"""


def render_html(report: JobReport) -> str:
    """The report as one HTML document (no script, no external resource)."""
    s = report.summary
    esc = sections.esc
    p = report.provenance
    title = f"Judge report: {s.score_field or 'answers'}" + (f" by {s.by}" if s.by else "")
    meta = (
        f"{esc(report.state_dir)} &middot; judged by {esc(', '.join(p.models) if p else report.model)}"
        f" &middot; {sections.fig.count(s.overall.n)} items"
        + (f" &middot; {esc(p.first_answer)}" if p and p.first_answer else "")
    )
    designs = sections.designs(report)
    show = timeline_says_something(
        sub_batches=len(report.sub_batches),
        answered_at=[t[0] for t in report.timeline],
        retried=report.retried,
    )
    nav = ["results", *(["designs"] if designs else []), "words", "provenance", "health"]
    names = {
        "results": "Results",
        "designs": "Judge designs",
        "words": "The judge's own words",
        "provenance": "Provenance",
        "health": "Run health",
    }
    parts = [
        f"<h1>{esc(title)}</h1><p class=meta>{meta}</p>",
        "<nav>" + "".join(f"<a href='#{k}'>{names[k]}</a>" for k in nav) + "</nav>",
        f"<section id=results><h2>{names['results']}</h2>",
        f"<div class=top><div>{sections.headline(report)}{sections.results(report)}</div>"
        f"<div>{sections.who(report)}{sections.first_quote(report)}</div></div>",
        sections.results_more(report),
        "</section>",
    ]
    if designs:
        parts.append(f"<section id=designs><h2>{names['designs']}</h2>{designs}</section>")
    parts.append(f"<section id=words><h2>{names['words']}</h2>{sections.examples(report)}</section>")
    parts.append(
        f"<section id=provenance><h2>{names['provenance']}</h2>{sections.provenance(report)}</section>"
    )
    parts.append(f"<section id=health><h2>{names['health']}</h2>{sections.health(report, show)}</section>")
    body = "\n".join(parts)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{CSS}</style></head>
<body>
{body}
</body></html>
"""


def write_html_report(path: Path, report: JobReport) -> None:
    """Write the report to `path` atomically (a temp file in the same directory, then a rename; never
    over a checkpoint), with the mode the umask gives a new file (`adapters.files.paths.publish`)."""

    text = render_html(report)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        publish(tmp, path, "--html")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
