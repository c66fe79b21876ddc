"""The headline of a summary, written out: group differences, agreement with the reference per group, and
what the judge designs buy; as text lines (`judgecore summary`) and as Markdown tables (`--markdown`).

Every figure is written by the one rule of `judgecore.summary.numfmt`, as on the HTML report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from judgecore.summary import numfmt as fig
from judgecore.summary.compare import COMPARED_GROUPS, Difference
from judgecore.summary.reliability import Designs
from judgecore.summary.selfpref import HEAD, table_rows
from judgecore.summary.stats import LabelStats, NumericStats, wilson_ci95

if TYPE_CHECKING:
    from judgecore.summary.job_summary import Group, Summary


_name = fig.label  # one rule for a value written as a label (`judgecore.summary.numfmt`)

#: After an interval cut to the scale the verdict spec declares (`judgecore.summary.job_summary`).
CLIPPED = ", clipped to the scale"


def difference_text(d: Difference) -> tuple[str, str, str]:
    """(what is compared, the difference, its interval), written by the figures' rule."""
    what = f"{_name(d.second)} - {_name(d.first)}"
    if d.kind == "share":
        return f"{what} ({d.label})", fig.points(d.estimate), fig.interval(d.ci95, "points")
    clipped = CLIPPED if d.ci95_clipped else ""
    return what, fig.difference(d.estimate), fig.interval(d.ci95, "difference") + clipped


def score_text(stats: NumericStats | LabelStats | None) -> tuple[str, str]:
    """(the score, its 95% interval): the mean for numbers, the most frequent label's share for labels."""
    if isinstance(stats, NumericStats):
        return fig.score(stats.mean), fig.interval(stats.ci95, "score") + (
            CLIPPED if stats.ci95_clipped else ""
        )
    if isinstance(stats, LabelStats):
        label, c = stats.counts[0]
        return f"{label} {fig.share(c / stats.n)}", fig.interval(wilson_ci95(c, stats.n), "share")
    return fig.MISSING, fig.MISSING


def _of(some: int, every: int, what: str) -> str:
    """`278 of 300 items` (the figure is over `some`), or `300 items` when it is over every one."""
    return f"{some:,} {what}" if some == every else f"{some:,} of {every:,} {what}"


def design_rows(
    d: Designs,
    spend: Sequence[tuple[str, float | None]] = (),
    routes: Sequence[tuple[str, str]] = (),
) -> list[tuple[str, str, str, str]]:
    """(design, figure, value, 95% interval or detail) for every design the records carry; `spend`:
    US dollars per model, shown per judge of a panel."""
    rows: list[tuple[str, str, str, str]] = []
    if (s := d.samples) is not None:
        rows.append(
            (
                "samples",
                "mean agreement of the samples",
                fig.share(s.mean_agreement),
                _of(s.agreement_items, s.items, "items"),
            )
        )
        rows.append(
            (
                "samples",
                f"Krippendorff's alpha ({s.level})",
                fig.coefficient(s.alpha),
                _of(s.scored_samples, s.samples, "samples"),
            )
        )
    if (p := d.pairwise) is not None:
        rows.append(
            (
                "pairwise",
                f"win rate of {p.a} over {p.b} (ties split)",
                fig.share(p.win_rate_a),
                fig.interval(p.win_rate_a_ci95, "share"),
            )
        )
        rows.append(
            (
                "pairwise",
                "position consistency",
                fig.share(p.consistency),
                fig.interval(p.consistency_ci95, "share"),
            )
        )
        rows.append(
            (
                "pairwise",
                "first-position win share",
                fig.share(p.first_position_share),
                fig.interval(p.first_position_ci95, "share"),
            )
        )
    if (q := d.panel) is not None:
        spent, route = dict(spend), dict(routes)
        for j in q.judges:
            value, ci = score_text(j.score)
            rows.append(("panel", f"score by {j.model}", value, ci))
            if j.model in spent:
                paid = "$0 (self-hosted)" if j.model.startswith("served:") else fig.usd(spent[j.model])
                how = f"; {route[j.model]}" if j.model in route else ""
                rows.append(("panel", f"spend by {j.model}", paid, f"{j.n:,} verdicts{how}"))
        name = (
            "Cohen's kappa" + (" (quadratic)" if q.weights else "")
            if q.statistic == "cohen_kappa"
            else (f"Krippendorff's alpha ({q.level})")
        )
        rows.append(
            ("panel", f"agreement between judges: {name}", fig.coefficient(q.agreement), f"{q.items:,} items")
        )
    return rows


def _reference_rows(s: Summary) -> list[tuple[str, Group]]:
    rows = [("all", s.overall)] + [(_name(v), g) for v, g in s.shown_groups]
    return [(n, g) for n, g in rows if g.reference is not None]


def not_compared(s: Summary) -> str:
    """Why no pair of groups is compared: too many groups for every pair to mean anything."""
    return (
        f"not compared: {s.compared_groups:,} groups make {fig.count(s.pairs_not_compared)} pairs (every "
        f"pair is compared up to {COMPARED_GROUPS} groups); each group's own 95% interval is in its row, "
        "and --json lists every group"
    )


def left_out(s: Summary) -> str:
    """How many groups a table leaves out, and how to see them."""
    return (
        f"{len(s.groups):,} groups: the {len(s.shown_groups):,} with the most items are shown, "
        f"{s.groups_left_out:,} left out (--top N shows N; --json lists every group)"
    )


def headline_lines(s: Summary) -> list[str]:
    """The text summary's lines for the differences, per-group agreement and designs (none when the
    job has none of them)."""
    lines: list[str] = []
    if s.differences:
        lines.append(f"  differences by {s.by} (second - first, 95% CI; n: scored items behind it)")
        for d in s.differences:
            what, value, ci = difference_text(d)
            lines.append(
                f"    {what[:40]:<40} {value:>10}  ({ci}; n {d.n:,}, {fig.share(d.share_of_items)} of items)"
            )
    elif s.pairs_not_compared:
        lines.append(f"  differences by {s.by}: {not_compared(s)}")
    if s.reference_key is not None and s.groups:
        lines.append(f"  reference {s.reference_key!r} by {s.by}")
        for name, g in _reference_rows(s)[1:]:
            r = g.reference
            assert r is not None
            lines.append(
                f"    {name[:20]:<20} agreement {fig.share(r.agreement)} "
                f"(95% CI {fig.interval(r.agreement_ci95, 'share')}), kappa {fig.coefficient(r.kappa)}, n {r.n:,}"
            )
    for design, what, value, detail in design_rows(s.designs, s.spend_by_model, s.route_by_model):
        lines.append(f"  {design:<12} {what}: {value} ({detail})")
    return lines


def _md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def cell(x: str) -> str:
        return x.replace("|", "\\|")

    right = ["---"] + ["---:"] * (len(head) - 1)
    return [
        "| " + " | ".join(cell(h) for h in head) + " |",
        "| " + " | ".join(right) + " |",
        *("| " + " | ".join(cell(c) for c in r) + " |" for r in rows),
    ]


def render_markdown(s: Summary, *, title: str = "judgecore summary") -> str:
    """The headline tables as Markdown: scores per group, differences, agreement, designs, spend."""
    o = s.overall
    out = [f"### {title}", ""]
    out.append(
        f"{o.n:,} items: {o.scored:,} scored, {o.unscored:,} unscored, {o.refusals:,} refused, {o.missing:,} missing "
        "(scores are over the scored items only)."
    )
    out.append("")
    rows = [("all", o)] + [(_name(v), g) for v, g in s.shown_groups]
    head = [s.by or "group", "items", "scored", "score", "95% CI"]
    out += _md_table(head, [[n, fig.count(g.n), fig.count(g.scored), *score_text(g.score)] for n, g in rows])
    if s.groups_left_out:
        out += ["", f"By {s.by}: {left_out(s)}."]
    if o.score is not None and s.scale is not None:
        out += ["", f"Scores are on {fig.scale(s.scale)}, the scale the verdict spec declares."]
    if s.pairs_not_compared:
        out += ["", f"Differences by {s.by}: {not_compared(s)}."]
    if s.differences:
        out += ["", f"Differences by {s.by} (second - first):", ""]
        body = []
        for d in s.differences:
            what, value, ci = difference_text(d)
            body.append([what, value, ci, fig.count(d.n), fig.share(d.share_of_items)])
        out += _md_table(["comparison", "difference", "95% CI", "scored items", "share of items"], body)
    if s.reference_key is not None and (ref := _reference_rows(s)):
        out += ["", f"Agreement with the reference `{s.reference_key}`:", ""]
        body = []
        for name, g in ref:
            r = g.reference
            assert r is not None
            body.append(
                [
                    name,
                    fig.count(r.n),
                    fig.share(r.agreement),
                    fig.interval(r.agreement_ci95, "share"),
                    fig.coefficient(r.kappa),
                ]
            )
        out += _md_table(["group", "pairs", "agreement", "95% CI", "kappa"], body)
    if design := design_rows(s.designs, s.spend_by_model, s.route_by_model):
        out += ["", "Judge designs:", ""]
        out += _md_table(["design", "figure", "value", "95% CI / n"], [list(r) for r in design])
    if s.self_preference is not None:
        out += ["", f"Self-preference (authors: `{s.self_preference.author_key}`):", ""]
        out += _md_table(HEAD, table_rows(s.self_preference))
    m = s.money
    out += [
        "",
        f"Spend {fig.usd(m.spend_usd)} (all-sync {fig.usd(m.all_sync_usd)}; estimated {fig.usd(m.estimate_usd)}).",
    ]
    return "\n".join(out) + "\n"
