"""The report's sections as HTML: results first, then the judge's own words, provenance, run health.

Every figure is written by `judgecore.summary.numfmt` (the rule the text summary and `--markdown` follow), and
every string from the checkpoint is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import orjson

from adapters.report import plots
from adapters.report.gather import resume_command
from adapters.report.job_report import JobReport
from judgecore.summary import numfmt as fig
from judgecore.summary import selfpref
from judgecore.summary.compare import Difference
from judgecore.summary.job_summary import Group, render_summary
from judgecore.summary.selfpref import SelfPreferences
from judgecore.summary.stats import NumericStats
from judgecore.summary.text import design_rows, difference_text, left_out, not_compared, score_text


def esc(x: Any) -> str:
    return html.escape(str(x))


def table(head: Sequence[str], rows: Sequence[Sequence[str]], *, cls: str = "") -> str:
    """A table of already-written figures (strings), escaped."""
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    c = f' class="{cls}"' if cls else ""
    return f"<div class=wrap><table{c}><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>"


def _swatch(colour: str) -> str:
    return f'<span class=sw style="background:{colour}"></span>'


def group_rows(report: JobReport) -> list[tuple[str, Group, str]]:
    """The job, then the groups the report shows (`Summary.shown_groups`), each with its colour."""
    s = report.summary
    shown = s.shown_groups
    colour_of = plots.colours([str(v) for v, _ in shown])
    return [("all", s.overall, plots.ALL)] + [(str(v), g, colour_of[str(v)]) for v, g in shown]


def _plotted(rows: list[tuple[str, Group, str]], most: int) -> tuple[list[tuple[str, Group, str]], str]:
    """The rows a plot draws (the job and at most `most` groups), and a note when it draws fewer than
    the table shows."""
    if len(rows) - 1 <= most:
        return rows, ""
    return rows[: most + 1], f"<p class=note>The plot draws the first {most} groups of the table.</p>"


def _best_difference(diffs: Sequence[Difference]) -> Difference | None:
    """The difference the headline quotes: the largest in size (for labels, among the shares)."""
    return max(diffs, key=lambda d: abs(d.estimate), default=None)


def _unfinished(report: JobReport) -> str:
    """A job with items still pending says so above its figures, which are over what is answered."""
    o = report.summary.overall
    pending = dict(o.counts).get("pending", 0)
    if not pending:
        return ""
    resume = report.provenance.resume if report.provenance else resume_command(report.state_dir)
    return (
        f"<p class=warn><b>Not finished:</b> {fig.count(pending)} of {fig.count(o.n)} items are still "
        "pending, so every figure here is over the items answered so far. Resume with "
        f"<code>{esc(resume)}</code>, then write the report again.</p>"
    )


def headline(report: JobReport) -> str:
    """The question the job answers, in a sentence or two."""
    s = report.summary
    o = s.overall
    field = esc(s.score_field or "score")
    unfinished = _unfinished(report)
    if o.score is None:
        return f"{unfinished}<p class=lead>No item has a score yet.</p>"
    value, ci = score_text(o.score)
    what = "mean" if isinstance(o.score, NumericStats) else "most frequent"
    on = ""
    if isinstance(o.score, NumericStats):
        on = (
            f" on {esc(fig.scale(s.scale))}"
            if s.scale is not None
            else f" (the verdict spec declares no scale; scores range {fig.score(o.score.min)} to "
            f"{fig.score(o.score.max)})"
        )
    out = [unfinished]
    if (p := s.designs.pairwise) is not None:  # the question a pairwise job asks comes first
        out.append(
            f"<p class=lead>{esc(p.a)} over {esc(p.b)}: win rate <b>{fig.share(p.win_rate_a)}</b> "
            f"(95% CI {fig.interval(p.win_rate_a_ci95, 'share')}, ties split); the verdict held in both "
            f"orders for <b>{fig.share(p.consistency)}</b> of the items (position consistency), and the "
            f"first position won {fig.share(p.first_position_share)} of the orders.</p>"
        )
    out += [
        f"<p class=lead>Overall {what} {field}: <b>{esc(value)}</b>{on} (95% CI {esc(ci)}) over "
        f"{fig.count(o.scored)} scored items of {fig.count(o.n)}.</p>"
    ]
    scored = [(v, g) for v, g in s.groups if g.score is not None]
    if s.pairs_not_compared:
        shown = (
            f"; the table shows the {len(s.shown_groups):,} with the most items" if s.groups_left_out else ""
        )
        out.append(
            f"<p class=lead>By {esc(s.by)}: {fig.count(len(s.groups))} groups, too many to compare every "
            f"pair ({fig.count(s.pairs_not_compared)}){shown}.</p>"
        )
    elif isinstance(o.score, NumericStats) and len(scored) >= 2:
        top = max(scored, key=lambda vg: vg[1].score.mean)  # type: ignore[union-attr]
        low = min(scored, key=lambda vg: vg[1].score.mean)  # type: ignore[union-attr]
        d = next(
            (d for d in s.differences if {str(d.first), str(d.second)} == {str(top[0]), str(low[0])}), None
        )
        if d is not None:
            sign = 1 if str(d.second) == str(top[0]) else -1
            lo, hi = (d.ci95[0] * sign, d.ci95[1] * sign) if d.ci95 else (None, None)
            ci_d = fig.interval((min(lo, hi), max(lo, hi)), "difference") if lo is not None else fig.MISSING
            clear = lo is not None and hi is not None and min(lo, hi) > 0
            caveat = "" if clear else ", an interval that includes no difference"
            out.append(
                f"<p class=lead>By {esc(s.by)}: <b>{esc(top[0])}</b> scored {fig.difference(d.estimate * sign)} "
                f"over <b>{esc(low[0])}</b> (95% CI {esc(ci_d)}{caveat}; {fig.count(d.n)} scored items, "
                f"{fig.share(d.share_of_items)} of the two groups' items).</p>"
            )
            if len(scored) > 2:
                out.append(
                    f"<p class=note>The highest and the lowest of {len(scored)} groups: the widest of "
                    f"{len(s.differences)} comparisons, each with its own 95% interval (no correction for "
                    "multiple comparisons; every pair is listed below).</p>"
                )
    elif (d := _best_difference(s.differences)) is not None:
        what, value, ci = difference_text(d)
        out.append(
            f"<p class=lead>Largest difference by {esc(s.by)}: {esc(what)} {esc(value)} (95% CI {esc(ci)}).</p>"
        )
    if s.reference_key is not None and o.reference is not None:
        r = o.reference
        out.append(
            f"<p class=lead>Agreement with the reference {esc(s.reference_key)}: <b>{fig.share(r.agreement)}</b> "
            f"(95% CI {fig.interval(r.agreement_ci95, 'share')}), kappa {fig.coefficient(r.kappa)} over "
            f"{fig.count(r.n)} items.</p>"
        )
    return "".join(out)


def _span(first: str | None, last: str | None) -> str:
    if first is None:
        return "-"
    return first if first == last else f"{first} to {last}"


def who(report: JobReport) -> str:
    """Who judged it how: a short box beside the headline."""
    p = report.provenance
    s = report.summary
    models = ", ".join(p.models) if p else str(report.model)
    spec = s.verdict_kind or "none"
    rows = [
        ("judge", models),
        ("verdict", f"{spec}, score field {s.score_field}" if s.score_field else spec),
        ("route", str((report.route or {}).get("path", "-"))),
        ("answered", _span(p.first_answer, p.last_answer) if p else "-"),
        ("spend", fig.usd(s.money.spend_usd)),
    ]
    if p and p.rubric:
        words = " ".join(p.rubric.split())
        rows.append(
            ("rubric", words[:140] + ("…" if len(words) > 140 else "") + " (in full under Provenance)")
        )
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f"<div class=who><h3>Who judged it, how</h3><table class=kv>{body}</table></div>"


def results(report: JobReport) -> str:
    """The score table and panel (the top's left column, under the headline)."""
    s = report.summary
    rows = group_rows(report)
    ref = s.reference_key is not None
    head = [s.by or "group", "items", "scored", "score", "95% CI"] + (["agreement", "kappa"] if ref else [])
    body = []
    for name, g, _colour in rows:
        value, ci = score_text(g.score)
        line = [name, fig.count(g.n), fig.count(g.scored), value, ci]
        if ref:
            r = g.reference
            line += [
                fig.share(r.agreement) if r else fig.MISSING,
                fig.coefficient(r.kappa) if r else fig.MISSING,
            ]
        body.append(line)
    parts = [table(head, body, cls="groups")]
    if s.groups_left_out:
        parts.append(f"<p class=note>By {esc(s.by)}: {esc(left_out(s))}.</p>")
    drawn, note = _plotted(rows, plots.MOST_GROUPS)
    legend = "".join(f"<span class=lg>{_swatch(c)}{esc(n)}</span>" for n, _, c in drawn[1:])
    if legend:
        parts.append(f"<p class=legend>{legend}</p>")
    panel = plots.score_panel(drawn, s.score_field or "score")
    if panel:
        parts.append(f"<figure>{panel}</figure>{note}")
    return "".join(parts)


def results_more(report: JobReport) -> str:
    """The rest of the results: differences, distributions, agreement with the reference."""
    s = report.summary
    rows = group_rows(report)
    ref = s.reference_key is not None
    parts: list[str] = []
    if s.differences:
        parts.append(f"<h3>Differences between groups ({esc(s.by)}; second minus first)</h3>")
        drows = []
        for d in s.differences:
            what, value, ci = difference_text(d)
            drows.append([what, value, ci, fig.count(d.n), fig.share(d.share_of_items)])
        parts.append(table(["comparison", "difference", "95% CI", "scored items", "share of items"], drows))
        plot = plots.differences_panel(s.differences, plots.colours([str(v) for v, _ in s.groups]))
        if plot:
            parts.append(f"<figure>{plot}</figure>")
        parts.append(
            "<p class=note>Numbers: the difference of means with Welch's interval; labels: the difference of "
            "shares with Newcombe's interval. The share of items is the scored items behind the difference "
            "over all items of the two groups.</p>"
        )
    elif s.pairs_not_compared:
        parts.append(f"<h3>Differences between groups ({esc(s.by)})</h3>")
        parts.append(f"<p class=note>{esc(not_compared(s)[0].upper() + not_compared(s)[1:])}.</p>")
    drawn, note = _plotted(rows, plots.MOST_PANELS)
    dist = plots.distributions(drawn)
    if dist:
        parts.append(f"<h3>Distributions</h3><figure>{dist}</figure>{note}")
    if ref and s.overall.reference is not None:
        r = s.overall.reference
        parts.append(f"<h3>Against the reference {esc(s.reference_key)}</h3>")
        parts.append(
            table(
                ["pairs", "agreement", "95% CI", "kappa", "weights", "pearson", "spearman"],
                [
                    [
                        fig.count(r.n),
                        fig.share(r.agreement),
                        fig.interval(r.agreement_ci95, "share"),
                        fig.coefficient(r.kappa),
                        r.kappa_weights or "unweighted",
                        fig.coefficient(r.pearson),
                        fig.coefficient(r.spearman),
                    ]
                ],
            )
        )
        plot = plots.heatmap(r, str(s.reference_key))
        if plot:
            parts.append(f"<figure class=heat>{plot}</figure>")
    return "".join(parts)


def designs(report: JobReport) -> str | None:
    rows = design_rows(report.summary.designs, report.summary.spend_by_model, report.summary.route_by_model)
    if not rows:
        return None
    out = [table(["design", "figure", "value", "95% CI / n"], [list(r) for r in rows])]
    if (sp := report.summary.self_preference) is not None:
        out.append(self_preference(sp))
    return "".join(out)


def self_preference(sp: SelfPreferences) -> str:
    """The panel's self-preference table, a flagged judge's row marked (`judgecore.summary.selfpref`)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in selfpref.HEAD)
    body = []
    for j, row in zip(sp.judges, selfpref.table_rows(sp), strict=True):
        cells = "".join(f"<td>{esc(c)}</td>" for c in row[:-1])
        flag = f"<td class=flag>{esc(row[-1])}</td>" if j.flagged else "<td></td>"
        body.append(f"<tr{' class=flagged' if j.flagged else ''}>{cells}{flag}</tr>")
    return (
        f"<h3>Self-preference by author family</h3><p class=note>Authors from metadata[{esc(repr(sp.author_key))}]. "
        "A judge's self-preference is its lean on its own family's answers (its score minus the other "
        "judges' mean) less its lean on the baseline answers: those by families no judge belongs to "
        f"({'used here' if sp.judges and sp.judges[0].baseline == 'neutral' else 'none here, so every other family'}); "
        "flagged when the 95% interval (Welch) excludes zero.</p>"
        f"<div class=wrap><table class=selfpref><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody>"
        "</table></div>"
    )


def _verdict(v: Any) -> str:
    return "-" if v is None else orjson.dumps(v).decode()


def examples(report: JobReport) -> str:
    if not report.examples:
        return "<p>No answer to quote yet.</p>"
    out = [
        "<p class=note>A few items per score value and per failure class, chosen by a seed kept in the "
        "checkpoint (the same checkpoint shows the same items): the prompt as sent (cut), what the judge "
        "wrote, and the verdict read from it.</p>"
    ]
    for g, shown in report.examples:
        title = f"score {g.key}" if g.kind == "score" else g.key
        items = []
        for e in shown:
            items.append(
                f"<div class=ex><p class=exid>{esc(e.item_id)} &middot; {esc(e.status)}"
                f"{' &middot; ' + esc(e.error_class) if e.error_class else ''}</p>"
                f"<p class=cap>prompt</p><pre>{esc(e.prompt or '(not kept)')}</pre>"
                f"<p class=cap>the judge wrote{f' ({_one_of(e.answers)})' if e.answers > 1 else ''}</p>"
                f"<pre>{esc(e.text or '(no text)')}</pre>"
                f"<p class=cap>verdict</p><pre>{esc(_verdict(e.verdict))}</pre></div>"
            )
        out.append(
            f"<details><summary>{esc(title)}: {fig.count(g.total)} items, {len(shown)} shown</summary>"
            + "".join(items)
            + "</details>"
        )
    return "".join(out)


def _one_of(answers: int) -> str:
    """What a quoted answer is of an item whose verdict folds several answers."""
    return f"one of the item's {answers} answers; its score folds them all"


def first_quote(report: JobReport) -> str:
    """One answer, quoted above the fold: the first example of the score nearest the median (a
    typical answer), or of the most frequent label."""
    scored = [(g, shown) for g, shown in report.examples if g.kind == "score" and shown]
    if not scored:
        return ""
    stats = report.summary.overall.score
    if isinstance(stats, NumericStats):

        def off(gs: tuple[Any, Any]) -> float:
            try:
                return abs(float(gs[0].key) - stats.median)
            except ValueError:
                return float("inf")

        g, shown = min(scored, key=off)
    else:
        g, shown = max(scored, key=lambda gs: gs[0].total)
    e = shown[0]
    one_of = f"<p class=note>{_one_of(e.answers).capitalize()}.</p>" if e.answers > 1 else ""
    return (
        f"<div class=quote><h3>What the judge wrote (item {esc(e.item_id)}, score {esc(g.key)})</h3>"
        f"{one_of}<pre>{esc(e.text)}</pre><p class=note>More examples per score and failure below, in "
        "<a href='#words'>the judge's own words</a>.</p></div>"
    )


def provenance(report: JobReport) -> str:
    p = report.provenance
    if p is None:
        return "<p>Not recorded.</p>"
    m = report.summary.money
    rows = [
        ("report written", p.generated),
        ("answers recorded", _span(p.first_answer, p.last_answer)),
        ("judgecore", p.judgecore_version),
        ("anthropic SDK", p.sdk_version),
        ("model(s)", ", ".join(p.models)),
        *((f"setting: {k}", _verdict(v) if not isinstance(v, str) else v) for k, v in p.settings),
        ("verdict spec", _verdict(p.verdict_spec)),
        ("rubric sha256", str(p.manifest.get("rubric_sha256") or "-")),
        ("input", p.input_path or "(given to the Python API: no path)"),
        ("input sha256", p.input_sha256 or "(the file is not where the job read it)"),
        ("items sha256", p.items_sha256),
        ("state dir", str(report.state_dir)),
        ("reproduce (a new --state starts afresh)", p.reproduce or "(started from the Python API)"),
        ("resume", p.resume),
        (
            "spend",
            f"{fig.usd(m.spend_usd)} (all-sync {fig.usd(m.all_sync_usd)}; estimated {fig.usd(m.estimate_usd)})",
        ),
        *((f"spend: {model}", fig.usd(usd)) for model, usd in report.summary.spend_by_model),
    ]
    body = "".join(f"<tr><th>{esc(k)}</th><td><code>{esc(v)}</code></td></tr>" for k, v in rows)
    rubric = (
        f"<details><summary>The rubric, in full ({fig.count(len(p.rubric))} characters)</summary>"
        f"<pre>{esc(p.rubric)}</pre></details>"
        if p.rubric
        else "<p>The rubric is not in this checkpoint (a run before judgecore kept it, or none).</p>"
    )
    return f"<div class=wrap><table class=kv>{body}</table></div>{rubric}"


def health(report: JobReport, show_timeline: bool) -> str:
    s = report.summary
    o = s.overall
    parts = [
        table(
            ["items", "scored", "unscored", "refused", "missing", *(k for k, _ in o.counts)],
            [
                [
                    fig.count(x)
                    for x in (o.n, o.scored, o.unscored, o.refusals, o.missing, *(v for _, v in o.counts))
                ]
            ],
        ),
        "<p class=note>The score is over the scored items only; unscored (the model answered, no verdict), "
        "refused (the judge declined to answer: MODEL_REFUSAL, a miss counted apart) and missing "
        "(quarantined or pending) items are never folded into it.</p>",
    ]
    if o.classes:
        parts.append(table(["failure class", "items"], [[k, fig.count(v)] for k, v in o.classes]))
    parts.append(f"<figure>{plots.where_plot(o)}</figure>")
    m = s.money
    parts.append("<h3>Spend</h3>")
    parts.append(
        table(
            ["spent", "all-sync", "estimate"],
            [[fig.usd(m.spend_usd), fig.usd(m.all_sync_usd), fig.usd(m.estimate_usd)]],
        )
    )
    plot = plots.spend_plot(m.spend_usd, m.all_sync_usd, m.estimate_usd)
    if plot:
        parts.append(f"<figure>{plot}</figure>")
    parts.append("<h3>Timeline</h3>")
    plot = plots.timeline_plot(report.timeline, report.sub_batches) if show_timeline else None
    if plot:
        parts.append(f"<figure>{plot}</figure>")
    elif report.timeline:
        parts.append("<p>Sync only, in one run, with no retries: every answer came back in turn.</p>")
    else:
        parts.append("<p>No answer recorded yet.</p>")
    parts.append(
        f"<details><summary>As text (judgecore summary)</summary><pre>{esc(render_summary(s))}</pre></details>"
    )
    return "".join(parts)
