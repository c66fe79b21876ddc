"""The judge report: one self-contained HTML file (`judgecore summary --html FILE`, and the demo).

Everything is inside the file: the summary's tables, and plots drawn by matplotlib (the SVG backend)
embedded as inline SVG with their text turned into paths, so the file opens offline with no font, script
or network. matplotlib takes seconds to import, so it is imported here only, when a report is written.

Plots: the score's distribution (overall, and per `--by` group), where the items went (scored, unscored,
missing, failure classes), spend against all-sync and the estimate, and the run's timeline (answers over
time per sub-batch and on the sync route, with each sub-batch's intent and create marked).
"""

from __future__ import annotations

import html
import io
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from adapters.summary import JobReport
from judgecore.stats import LabelStats, NumericStats
from judgecore.summary import Group, render_summary

_PALETTE = ("#3b6ea5", "#e07b39", "#5a9e5a", "#b34b4b", "#8a6bb8", "#8c6d46", "#d17fb5", "#7f7f7f")


def _plt() -> Any:
    import matplotlib

    matplotlib.use("svg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "svg.fonttype": "path",
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "figure.dpi": 96,
        }
    )
    return plt


def _svg(fig: Any, name: str) -> str:
    plt = _plt()
    plt.rcParams["svg.hashsalt"] = f"judgecore-{name}"
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def _score_plot(groups: Sequence[tuple[str, Group]]) -> str | None:
    plt = _plt()
    shown = [(name, g.score) for name, g in groups if g.score is not None]
    if not shown:
        return None
    cols = min(3, len(shown))
    rows = -(-len(shown) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.6 * rows), squeeze=False)
    for ax in axes.flat[len(shown) :]:
        ax.set_visible(False)
    for i, (ax, (name, stats)) in enumerate(zip(axes.flat, shown, strict=False)):
        color = _PALETTE[i % len(_PALETTE)]
        if isinstance(stats, NumericStats):
            discrete = all(b.lo == b.hi for b in stats.histogram)
            if discrete:
                ax.bar(
                    [b.lo for b in stats.histogram], [b.n for b in stats.histogram], width=0.8, color=color
                )
            else:
                ax.bar(
                    [b.lo for b in stats.histogram],
                    [b.n for b in stats.histogram],
                    width=[b.hi - b.lo for b in stats.histogram],
                    align="edge",
                    color=color,
                    edgecolor="white",
                )
            ax.axvline(stats.mean, color="black", linewidth=1)
            if stats.ci95:
                ax.axvspan(stats.ci95[0], stats.ci95[1], color="black", alpha=0.12, linewidth=0)
            ax.set_title(f"{name}: mean {stats.mean:.2f} (n={stats.n})", fontsize=9)
            ax.set_xlabel("score")
        elif isinstance(stats, LabelStats):
            labels = [k for k, _ in stats.counts]
            ax.bar(labels, [c for _, c in stats.counts], color=color)
            ax.set_title(f"{name} (n={stats.n})", fontsize=9)
            ax.tick_params(axis="x", labelrotation=30)
        ax.set_ylabel("items")
    fig.tight_layout()
    return _svg(fig, "scores")


def _where_plot(g: Group) -> str:
    plt = _plt()
    names = ["scored", "unscored", "refused", "missing", *(k for k, _ in g.classes)]
    values = [g.scored, g.unscored, g.refusals, g.missing, *(v for _, v in g.classes)]
    colors = ["#5a9e5a", "#e07b39", "#8e6bb3", "#b34b4b", *(["#7f7f7f"] * len(g.classes))]
    fig, ax = plt.subplots(figsize=(6.4, 0.45 * len(names) + 0.8))
    ax.barh(names[::-1], values[::-1], color=colors[::-1])
    for y, v in enumerate(values[::-1]):
        ax.text(v, y, f" {v:,}", va="center", fontsize=8)
    ax.set_xlabel("items")
    ax.set_title("where the items went (failure classes in grey)", fontsize=9)
    fig.tight_layout()
    return _svg(fig, "where")


def _spend_plot(spend: float | None, all_sync: float | None, estimate: float | None) -> str | None:
    pairs = [
        (k, v) for k, v in (("spent", spend), ("all-sync", all_sync), ("estimate", estimate)) if v is not None
    ]
    if not pairs:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.0, 2.2))
    ax.barh(
        [k for k, _ in pairs][::-1],
        [v for _, v in pairs][::-1],
        color=["#7f7f7f", "#e07b39", "#3b6ea5"][-len(pairs) :],
    )
    for y, (_, v) in enumerate(pairs[::-1]):
        ax.text(v, y, f" ${v:,.4f}", va="center", fontsize=8)
    ax.set_xlabel("US dollars")
    ax.set_title("spend, against all-sync and the dry-run's estimate", fontsize=9)
    fig.tight_layout()
    return _svg(fig, "spend")


def _timeline_plot(report: JobReport) -> str | None:
    if not report.timeline:
        return None
    plt = _plt()
    t0 = min([report.timeline[0][0], *(s.intent_at for s in report.sub_batches)])
    lines: dict[str, list[float]] = {}
    names = {s.sub_id: f"sub-batch #{s.sub_id}" for s in report.sub_batches}
    for at, route, sub_id, _status in report.timeline:
        key = names.get(sub_id, f"sub-batch #{sub_id}") if sub_id is not None else f"{route} route"
        lines.setdefault(key, []).append(at - t0)
    fig, ax = plt.subplots(figsize=(7.2, 2.8))
    for i, (key, times) in enumerate(sorted(lines.items())):
        times.sort()
        ax.step(times, range(1, len(times) + 1), where="post", color=_PALETTE[i % len(_PALETTE)], label=key)
    for s in report.sub_batches:
        ax.axvline(s.intent_at - t0, color="#7f7f7f", linewidth=0.6, linestyle=":")
        if s.created_at is not None:
            ax.axvline(s.created_at - t0, color="#7f7f7f", linewidth=0.6)
    ax.set_xlabel("seconds since the first send (dotted: a sub-batch's intent; solid: its create)")
    ax.set_ylabel("answers recorded")
    ax.set_title("timeline", fontsize=9)
    if len(lines) <= 12:
        ax.legend(fontsize=7, frameon=False, loc="upper left")
    fig.tight_layout()
    return _svg(fig, "timeline")


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    th = "".join(f"<th>{html.escape(str(h))}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _cell(c: Any) -> str:
    if c is None:
        return "-"
    if isinstance(c, float):
        return f"{c:,.4f}".rstrip("0").rstrip(".") if abs(c) < 1e6 else f"{c:,.0f}"
    if isinstance(c, int):
        return f"{c:,}"
    return str(c)


def _score_cells(g: Group) -> list[Any]:
    s = g.score
    if isinstance(s, NumericStats):
        ci = f"{s.ci95[0]:.2f} to {s.ci95[1]:.2f}" if s.ci95 else None
        return [s.mean, ci, s.median, s.sd]
    if isinstance(s, LabelStats):
        return [", ".join(f"{k} {c / s.n:.0%}" for k, c in s.counts), None, None, None]
    return [None, None, None, None]


def render_html(report: JobReport) -> str:
    """The report as one HTML document (no script, no external resource)."""
    s = report.summary
    o = s.overall
    parts = [
        f"<h1>judgecore report</h1><p class=meta>{html.escape(str(report.state_dir))} &middot; model "
        f"{html.escape(str(report.model))} &middot; route {html.escape(str((report.route or {}).get('path', '-')))}"
        f" &middot; verdict {html.escape(str(s.verdict_kind or 'none'))}"
        f"{' (score field ' + html.escape(repr(s.score_field)) + ')' if s.score_field else ''}</p>",
        "<h2>Items</h2>",
        _table(
            ["items", "scored", "unscored", "refused", "missing", *(k for k, _ in o.counts)],
            [[o.n, o.scored, o.unscored, o.refusals, o.missing, *(v for _, v in o.counts)]],
        ),
        "<p class=note>The score below is over the scored items only; unscored (the model answered, no "
        "verdict), refused (the judge declined to answer: MODEL_REFUSAL, a miss counted apart) and "
        "missing (quarantined or pending) items are never folded into it.</p>",
    ]
    if o.classes:
        parts.append(_table(["failure class", "items"], list(o.classes)))
    where = _where_plot(o)
    parts.append(f"<figure>{where}</figure>")
    parts.append("<h2>Score</h2>")
    rows = [["all", o.n, o.scored, o.unscored, o.missing, *_score_cells(o)]]
    rows += [[v, g.n, g.scored, g.unscored, g.missing, *_score_cells(g)] for v, g in s.groups]
    parts.append(
        _table(
            ["group", "items", "scored", "unscored", "missing", "mean / shares", "95% CI", "median", "sd"],
            rows,
        )
    )
    plot = _score_plot([("all", o), *((f"{s.by}={v}", g) for v, g in s.groups)])
    if plot:
        parts.append(f"<figure>{plot}</figure>")
    if s.reference_key is not None and o.reference is not None:
        r = o.reference
        parts.append(f"<h2>Against the reference {html.escape(repr(s.reference_key))}</h2>")
        parts.append(
            _table(
                ["pairs", "agreement", "kappa", "weights", "pearson", "spearman"],
                [[r.n, r.agreement, r.kappa, r.kappa_weights or "unweighted", r.pearson, r.spearman]],
            )
        )
        if r.labels:
            parts.append("<p class=note>Confusion matrix: rows are the reference, columns the judge.</p>")
            parts.append(
                _table(
                    ["", *map(str, r.labels)],
                    [[str(v), *row] for v, row in zip(r.labels, r.matrix, strict=True)],
                )
            )
    m = s.money
    parts.append("<h2>Spend</h2>")
    parts.append(
        _table(
            ["spent (USD)", "all-sync (USD)", "estimate (USD)"],
            [[m.spend_usd, m.all_sync_usd, m.estimate_usd]],
        )
    )
    plot = _spend_plot(m.spend_usd, m.all_sync_usd, m.estimate_usd)
    if plot:
        parts.append(f"<figure>{plot}</figure>")
    parts.append("<h2>Timeline</h2>")
    plot = _timeline_plot(report)
    parts.append(f"<figure>{plot}</figure>" if plot else "<p>No answer recorded yet.</p>")
    parts.append(f"<h2>As text</h2><pre>{html.escape(render_summary(s))}</pre>")
    body = "\n".join(parts)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>judgecore report</title>
<style>
body {{ font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1000px; color: #222; padding: 0 1em; }}
h1 {{ font-size: 1.5em; margin-bottom: 0.2em; }} h2 {{ font-size: 1.15em; margin-top: 1.8em; border-bottom: 1px solid #ddd; }}
.meta, .note {{ color: #555; }} table {{ border-collapse: collapse; margin: 0.6em 0; }}
th, td {{ border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }} th {{ background: #f4f4f4; }}
td:first-child, th:first-child {{ text-align: left; }} figure {{ margin: 0.8em 0; }} svg {{ max-width: 100%; height: auto; }}
pre {{ background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 12px; }}
</style></head>
<body>
{body}
</body></html>
"""


def write_html_report(path: Path, report: JobReport) -> None:
    """Write the report to `path` atomically (a temp file in the same directory, then a rename)."""
    text = render_html(report)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
