"""The report's plots: matplotlib (the SVG backend), inline SVG with text as paths (no font needed).

One colour per group across every plot (`colours`): a group keeps its colour in the score panel, the
distributions and the differences; the whole job is drawn in `ALL`. Categories keep one order (the
summary's group order; score values ascending). matplotlib takes seconds to import: it is imported
here only, when a report is written.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import matplotlib
import matplotlib.pyplot as plt

from judgecore.summary import numfmt as fig
from judgecore.summary.compare import Difference
from judgecore.summary.job_summary import Agreement, Group
from judgecore.summary.stats import LabelStats, NumericStats, wilson_ci95

#: The most groups the score panel draws (a row each) and the distributions (a small panel each, which
#: matplotlib lays out slowly: a second a handful): the table may show more (`--top`).
MOST_GROUPS = 20
MOST_PANELS = 8

PALETTE = ("#3b6ea5", "#e07b39", "#5a9e5a", "#b34b4b", "#8a6bb8", "#8c6d46", "#d17fb5", "#2a9d9d", "#b8a230")
ALL = "#444444"


def colours(groups: Sequence[Any]) -> dict[str, str]:
    """Each group's colour, by its position in the summary's group order (the same on every plot)."""
    return {str(g): PALETTE[i % len(PALETTE)] for i, g in enumerate(groups)}


def _plt() -> Any:

    matplotlib.use("svg", force=True)

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


def svg(fig_: Any, name: str) -> str:
    plt = _plt()
    plt.rcParams["svg.hashsalt"] = f"judgecore-{name}"
    buf = io.StringIO()
    fig_.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig_)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def score_panel(rows: Sequence[tuple[str, Group, str]], field: str) -> str | None:
    """The score of each group with its 95% interval (numbers: the mean; labels: each label's share)."""
    shown = [(n, g, c) for n, g, c in rows if g.score is not None]
    if not shown:
        return None
    plt = _plt()
    first = shown[0][1].score
    if isinstance(first, NumericStats):
        fig_, ax = plt.subplots(figsize=(5.4, 0.34 * len(shown) + 0.9))
        for y, (_name, g, colour) in enumerate(reversed(shown)):
            s = g.score
            assert isinstance(s, NumericStats)
            if s.ci95:
                ax.plot(s.ci95, [y, y], color=colour, linewidth=2.4, solid_capstyle="butt")
            ax.plot([s.mean], [y], "o", color=colour, markersize=6)
            ax.text(s.ci95[1] if s.ci95 else s.mean, y, f"  {fig.score(s.mean)}", va="center", fontsize=8)
        ax.set_yticks(range(len(shown)), [n for n, _, _ in reversed(shown)])
        ax.set_xlabel(f"mean {field} with its 95% interval")
        ax.margins(x=0.15)
    else:
        labels = [k for k, _ in first.counts] if isinstance(first, LabelStats) else []
        fig_, ax = plt.subplots(figsize=(5.4, 0.3 * len(shown) * max(1, len(labels)) + 0.9))

        y = 0
        ticks = []
        for name, g, colour in reversed(shown):
            s = g.score
            assert isinstance(s, LabelStats)
            counts = dict(s.counts)
            for label in reversed(labels):
                c = counts.get(label, 0)
                ci = wilson_ci95(c, s.n)
                if ci:
                    ax.plot(ci, [y, y], color=colour, linewidth=2.4)
                ax.plot([c / s.n], [y], "o", color=colour)
                ticks.append(f"{name}: {label}")
                y += 1
        ax.set_yticks(range(len(ticks)), ticks)
        ax.set_xlabel("share with its 95% Wilson interval")
        ax.set_xlim(0, 1)
    ax.set_title(f"{field} by group", fontsize=9)
    fig_.tight_layout()
    return svg(fig_, "score-panel")


def differences_panel(diffs: Sequence[Difference], colour_of: dict[str, str], limit: int = 30) -> str | None:
    """Each pair's difference with its 95% interval, a line at 0; the marker in the second group's colour."""
    shown = list(diffs)[:limit]
    if not shown:
        return None
    plt = _plt()
    fig_, ax = plt.subplots(figsize=(5.4, 0.3 * len(shown) + 0.9))
    names = []
    for y, d in enumerate(reversed(shown)):
        colour = colour_of.get(str(d.second), ALL)
        if d.ci95:
            ax.plot(d.ci95, [y, y], color=colour, linewidth=2.2)
        ax.plot([d.estimate], [y], "o", color=colour)
        names.append(f"{d.second} - {d.first}" + (f" ({d.label})" if d.label else ""))
    ax.axvline(0, color="#888888", linewidth=0.8, linestyle="--")
    ax.set_yticks(range(len(shown)), names)
    kind = "shares" if shown[0].kind == "share" else "means"
    ax.set_xlabel(f"difference of {kind} with its 95% interval")
    ax.set_title("differences between groups", fontsize=9)
    fig_.tight_layout()
    return svg(fig_, "differences")


def distributions(rows: Sequence[tuple[str, Group, str]]) -> str | None:
    """Each group's distribution of scores, one small panel a group, in the group's colour, one x axis."""
    shown = [(n, g.score, c) for n, g, c in rows if g.score is not None]
    if not shown:
        return None
    plt = _plt()
    cols = min(4, len(shown))
    nrows = -(-len(shown) // cols)
    fig_, axes = plt.subplots(nrows, cols, figsize=(2.7 * cols, 2.0 * nrows), squeeze=False, sharex=True)
    for ax in axes.flat[len(shown) :]:
        ax.set_visible(False)
    labels = sorted({k for _, s, _ in shown if isinstance(s, LabelStats) for k, _ in s.counts})
    for ax, (name, stats, colour) in zip(axes.flat, shown, strict=False):
        if isinstance(stats, NumericStats):
            discrete = all(b.lo == b.hi for b in stats.histogram)
            widths = 0.8 if discrete else [b.hi - b.lo for b in stats.histogram]
            ax.bar(
                [b.lo for b in stats.histogram],
                [b.n for b in stats.histogram],
                width=widths,
                align="center" if discrete else "edge",
                color=colour,
            )
            ax.axvline(stats.mean, color="black", linewidth=1)
        elif isinstance(stats, LabelStats):
            counts = dict(stats.counts)
            ax.bar(labels, [counts.get(k, 0) for k in labels], color=colour)
            ax.tick_params(axis="x", labelrotation=30)
        ax.set_title(f"{name} (n={stats.n:,})", fontsize=8)
    fig_.tight_layout()
    return svg(fig_, "distributions")


def heatmap(r: Agreement, key: str) -> str | None:
    """The confusion matrix as a heatmap with each cell's count (rows: the reference, columns: the judge)."""
    if not r.labels:
        return None
    plt = _plt()
    k = len(r.labels)
    size = min(6.0, 1.2 + 0.42 * k)
    fig_, ax = plt.subplots(figsize=(size + 0.8, size))
    top = max((c for row in r.matrix for c in row), default=0) or 1
    im = ax.imshow(r.matrix, cmap="Blues", vmin=0, vmax=top)
    names = [str(v) for v in r.labels]
    ax.set_xticks(range(k), names)
    ax.set_yticks(range(k), names)
    for i, row in enumerate(r.matrix):
        for j, c in enumerate(row):
            ax.text(
                j,
                i,
                f"{c:,}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if c > top * 0.6 else "black",
            )
    ax.set_xlabel("judge")
    ax.set_ylabel(f"reference ({key})")
    ax.set_title("confusion matrix (diagonal: agreement)", fontsize=9)
    fig_.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    fig_.tight_layout()
    return svg(fig_, "heatmap")


def where_plot(g: Group) -> str:
    plt = _plt()
    names = ["scored", "unscored", "refused", "missing", *(k for k, _ in g.classes)]
    values = [g.scored, g.unscored, g.refusals, g.missing, *(v for _, v in g.classes)]
    tones = ["#5a9e5a", "#e07b39", "#8e6bb3", "#b34b4b", *(["#7f7f7f"] * len(g.classes))]
    fig_, ax = plt.subplots(figsize=(6.0, 0.36 * len(names) + 0.8))
    ax.barh(names[::-1], values[::-1], color=tones[::-1])
    for y, v in enumerate(values[::-1]):
        ax.text(v, y, f" {v:,}", va="center", fontsize=8)
    ax.set_xlabel("items")
    ax.set_title("where the items went (failure classes in grey)", fontsize=9)
    fig_.tight_layout()
    return svg(fig_, "where")


def spend_plot(spend: float | None, all_sync: float | None, estimate: float | None) -> str | None:
    pairs = [
        (k, v) for k, v in (("spent", spend), ("all-sync", all_sync), ("estimate", estimate)) if v is not None
    ]
    if not pairs:
        return None
    plt = _plt()
    fig_, ax = plt.subplots(figsize=(5.0, 0.4 * len(pairs) + 0.8))
    ax.barh([k for k, _ in pairs][::-1], [v for _, v in pairs][::-1], color="#7f7f7f")
    for y, (_, v) in enumerate(pairs[::-1]):
        ax.text(v, y, f" {fig.usd(v)}", va="center", fontsize=8)
    ax.set_xlabel("US dollars")
    ax.set_title("spend, against all-sync and the dry-run's estimate", fontsize=9)
    ax.margins(x=0.2)
    fig_.tight_layout()
    return svg(fig_, "spend")


def timeline_plot(
    timeline: Sequence[tuple[float, str, int | None, str]], sub_batches: Sequence[Any]
) -> str | None:
    if not timeline:
        return None
    plt = _plt()
    t0 = min([timeline[0][0], *(s.intent_at for s in sub_batches)])
    lines: dict[str, list[float]] = {}
    for at, route, sub_id, _status in timeline:
        key = f"sub-batch #{sub_id}" if sub_id is not None else f"{route} route"
        lines.setdefault(key, []).append(at - t0)
    fig_, ax = plt.subplots(figsize=(7.2, 2.8))
    for i, (key, times) in enumerate(sorted(lines.items())):
        times.sort()
        ax.step(times, range(1, len(times) + 1), where="post", color=PALETTE[i % len(PALETTE)], label=key)
    for s in sub_batches:
        ax.axvline(s.intent_at - t0, color="#7f7f7f", linewidth=0.6, linestyle=":")
        if s.created_at is not None:
            ax.axvline(s.created_at - t0, color="#7f7f7f", linewidth=0.6)
    ax.set_xlabel("seconds since the first send (dotted: a sub-batch's intent; solid: its create)")
    ax.set_ylabel("answers recorded")
    ax.set_title("timeline", fontsize=9)
    if len(lines) <= 12:
        ax.legend(fontsize=7, frameon=False, loc="upper left")
    fig_.tight_layout()
    return svg(fig_, "timeline")
