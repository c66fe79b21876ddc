"""A job's summary as a value: built from its output records, rendered as text or JSON.

Every item is counted in exactly one of four: `scored` (its verdict has a score), `unscored` (the model
answered but there is no score: `VERDICT_UNPARSED`, truncation, context overflow, or no verdict spec),
`refused` (the judge declined to answer: `MODEL_REFUSAL`, a miss counted apart from the others, so a
refusal-grading job tells the judge refusing from a graded completion that refuses), and `missing` (no
answer to read: quarantined or still pending). They are shown first and never folded into
an average: the score's statistics are over the scored items only. A score is numeric when every scored
value is a number, else a label. `--by KEY` repeats the summary per value of `metadata[KEY]`;
`--reference KEY` compares the score with `metadata[KEY]`.

At any number of groups (a `--by uid` may have 10,000): `--json` lists every group, but the text,
`--markdown` and the HTML report show at most `top` of them (`TOP_GROUPS` unless `--top N`), the ones
with the most items, with a line saying how many were left out; and every pair of groups is compared
only up to `COMPARED_GROUPS` groups (10,000 groups are 49,995,000 pairs), in every output.

On a scale the verdict spec declares (`VerdictSpec.scale`: a schema's `minimum`/`maximum` or numeric
`enum`), every interval of a mean is cut to the scale and of a difference to its width, and says so; the
headline mean says its scale.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from judgecore.decide.spend import Money  # the summary's spend line (`status` prints it without a summary)
from judgecore.results.outcomes import FailureClass
from judgecore.summary import numfmt as fig
from judgecore.summary.compare import COMPARED_GROUPS, Difference, differences
from judgecore.summary.numfmt import FORMATS
from judgecore.summary.reliability import Designs, designs_of
from judgecore.summary.selfpref import SelfPreferences, self_preference, text_lines
from judgecore.summary.stats import (
    LabelStats,
    NumericStats,
    cohen_kappa,
    confusion,
    describe_labels,
    describe_numeric,
    pearson,
    spearman,
    wilson_ci95,
)
from judgecore.summary.text import CLIPPED, headline_lines, left_out

STATUSES = ("succeeded", "miss", "quarantined", "pending")
_REFUSED = str(FailureClass.MODEL_REFUSAL)
_UNKNOWN_MONEY = Money()
NO_VALUE = "(none)"

#: The most groups the text, `--markdown` and the HTML report show (`--top N` changes it): above it, the
#: groups with the most items (ties in the groups' order), and a line saying how many were left out.
TOP_GROUPS: Final = 20


@attrs.frozen(kw_only=True)
class Agreement:
    """The score against a reference label in each item's metadata, over the scored items that have one."""

    n: int
    agreement: float | None
    agreement_ci95: tuple[float, float] | None
    kappa: float | None
    kappa_weights: str | None  # "quadratic" for numbers, None (unweighted) for labels
    labels: tuple[Any, ...]
    matrix: tuple[tuple[int, ...], ...]
    pearson: float | None
    spearman: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "agreement": self.agreement,
            "agreement_ci95": list(self.agreement_ci95) if self.agreement_ci95 else None,
            "kappa": self.kappa,
            "kappa_weights": self.kappa_weights,
            "confusion": {"labels": list(self.labels), "matrix": [list(r) for r in self.matrix]},
            "pearson": self.pearson,
            "spearman": self.spearman,
        }


@attrs.frozen(kw_only=True)
class Group:
    """The summary of a set of items (the whole job, or one `--by` group)."""

    n: int
    counts: tuple[tuple[str, int], ...]
    classes: tuple[tuple[str, int], ...]
    scored: int
    unscored: int
    missing: int
    score: NumericStats | LabelStats | None
    reference: Agreement | None
    #: answers the judge refused (`MODEL_REFUSAL`): neither scored nor unscored
    refusals: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "counts": dict(self.counts),
            "classes": dict(self.classes),
            "scored": self.scored,
            "unscored": self.unscored,
            "refusals": self.refusals,
            "missing": self.missing,
            "score": self.score.to_json() if self.score is not None else None,
            "reference": self.reference.to_json() if self.reference is not None else None,
        }


@attrs.frozen(kw_only=True)
class Summary:
    """The whole summary: the job, its groups, what it cost."""

    overall: Group
    score_field: str | None
    verdict_kind: str | None
    by: str | None
    groups: tuple[tuple[Any, Group], ...]
    reference_key: str | None
    money: Money
    #: with `--by` and two or more groups: every pair's difference (`judgecore.summary.compare`)
    differences: tuple[Difference, ...] = ()
    #: what the judge designs the records carry buy (`judgecore.summary.reliability`)
    designs: Designs = attrs.field(factory=Designs)
    #: US dollars per answering model (None: no price), as the checkpoint bills them: a panel's spend per judge
    spend_by_model: tuple[tuple[str, float | None], ...] = ()
    #: a panel across providers: each judge's route in words, with its lane's sub-batches
    route_by_model: tuple[tuple[str, str], ...] = ()
    #: the score's scale as the verdict spec declares it (`VerdictSpec.scale`); None: not declared
    scale: tuple[float, float] | None = None
    #: the most groups the text, `--markdown` and the report show
    top: int = TOP_GROUPS
    #: the pairs of groups not compared (more than `COMPARED_GROUPS` groups); 0 when every pair was
    pairs_not_compared: int = 0

    @property
    def shown_groups(self) -> tuple[tuple[Any, Group], ...]:
        """The groups the text and the report show: all of them in their order, or, above `top`, the
        `top` with the most items (ties in their order)."""
        if len(self.groups) <= self.top:
            return self.groups
        order = sorted(range(len(self.groups)), key=lambda i: (-self.groups[i][1].n, i))
        return tuple(self.groups[i] for i in order[: self.top])

    @property
    def compared_groups(self) -> int:
        """The groups whose pairs are compared, or would be: those with a value (not `NO_VALUE`)."""
        return sum(1 for v, _ in self.groups if v != NO_VALUE)

    @property
    def groups_left_out(self) -> int:
        return max(0, len(self.groups) - self.top)

    #: a panel's self-preference by author family (`judgecore.summary.selfpref`), where the items name their authors
    self_preference: SelfPreferences | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.overall.to_json(),
            "verdict": {
                "kind": self.verdict_kind,
                "score_field": self.score_field,
                "scale": list(self.scale) if self.scale else None,
            },
            "by": self.by,
            "groups": [{"value": v, **g.to_json()} for v, g in self.groups] if self.by else None,
            "reference_key": self.reference_key,
            "spend_usd": self.money.spend_usd,
            "all_sync_usd": self.money.all_sync_usd,
            "estimate_usd": self.money.estimate_usd,
            "differences": [d.to_json() for d in self.differences] if self.by else None,
            "differences_not_compared": {
                "groups": self.compared_groups,
                "pairs": self.pairs_not_compared,
                "compared_up_to": COMPARED_GROUPS,
            }
            if self.pairs_not_compared
            else None,
            **self._designs_json(),
            **({"self_preference": self.self_preference.to_json()} if self.self_preference else {}),
            "formats": FORMATS,
        }

    def _designs_json(self) -> dict[str, Any]:
        out = self.designs.to_json()
        if "panel" in out:
            spend = dict(self.spend_by_model)
            for judge in out["panel"]["judges"]:
                judge["spend_usd"] = spend.get(judge["model"])
        return out


def _number(v: Any) -> bool:
    return type(v) in (int, float)  # exact types: a bool is a label, and this runs per item


_label = fig.label  # one rule for a value written as a label (`judgecore.summary.numfmt`)


def score_of(record: Mapping[str, Any], field: str | None) -> Any:
    """The item's score: `verdict[field]`; for a pairwise verdict without it, the winner (a label)."""
    verdict = record.get("verdict")
    if field is None or verdict is None:
        return None
    value = verdict.get(field)
    if value is None and "winner" in verdict and "orders" in verdict:
        return verdict["winner"]
    return value


def _metadata(record: Mapping[str, Any], key: str) -> Any:
    meta = record.get("metadata")
    return meta.get(key) if type(meta) is dict else None


def agreement(reference: Sequence[Any], judged: Sequence[Any]) -> Agreement:
    """Agreement, kappa, confusion matrix and (numbers on both sides) correlations."""
    numeric = all(_number(v) for v in (*reference, *judged))
    if numeric:
        ref, jud = [float(v) for v in reference], [float(v) for v in judged]
        ref_l: list[Any] = [int(v) if v.is_integer() else v for v in ref]
        jud_l: list[Any] = [int(v) if v.is_integer() else v for v in jud]
    else:
        ref_l, jud_l = [_label(v) for v in reference], [_label(v) for v in judged]
    n = len(ref_l)
    same = sum(a == b for a, b in zip(ref_l, jud_l, strict=True))
    labels, matrix = confusion(ref_l, jud_l)
    return Agreement(
        n=n,
        agreement=same / n if n else None,
        agreement_ci95=wilson_ci95(same, n),
        kappa=cohen_kappa(ref_l, jud_l, weighted=numeric),
        kappa_weights="quadratic" if numeric else None,
        labels=labels,
        matrix=matrix,
        pearson=pearson(ref, jud) if numeric else None,
        spearman=spearman(ref, jud) if numeric else None,
    )


def group_of(
    records: Sequence[Mapping[str, Any]],
    *,
    score_field: str | None,
    reference: str | None,
    scale: tuple[float, float] | None = None,
) -> Group:
    """The summary of `records` (output objects, CONTRACT.md's shape); `scale`: the score's declared
    scale, which the mean's interval is cut to."""
    counts = Counter(r["status"] for r in records)
    classes = Counter(r["error"]["class"] for r in records if r.get("error"))
    scores = [(score_of(r, score_field), r) for r in records]
    scored = [(s, r) for s, r in scores if s is not None]
    missing = sum(1 for r in records if r["status"] in ("quarantined", "pending"))
    refusals = classes.get(_REFUSED, 0)
    values = [s for s, _ in scored]
    stats: NumericStats | LabelStats | None
    if values and all(_number(v) for v in values):
        numeric = describe_numeric([float(v) for v in values])
        stats = numeric.clipped_to(scale) if numeric is not None else None
    else:
        stats = describe_labels([_label(v) for v in values])
    ref = None
    if reference is not None:
        pairs = [(m, s) for s, r in scored if (m := _metadata(r, reference)) is not None]
        ref = agreement([m for m, _ in pairs], [s for _, s in pairs])
    return Group(
        n=len(records),
        counts=tuple((k, counts.get(k, 0)) for k in STATUSES),
        classes=tuple(sorted(classes.items(), key=lambda kv: (-kv[1], kv[0]))),
        scored=len(scored),
        unscored=len(records) - len(scored) - missing - refusals,
        missing=missing,
        score=stats,
        reference=ref,
        refusals=refusals,
    )


def metadata_key_problem(records: Sequence[Mapping[str, Any]], key: str, flag: str) -> str | None:
    """Why `flag KEY` (`--by`, `--reference`) cannot be right: no item's metadata has `key`; the line
    names the keys that exist (a typo such as `--by modle` would otherwise print a table of one
    `(none)` row, exit 0). None when some item has it."""
    seen: dict[str, None] = {}
    for r in records:
        meta = r.get("metadata")
        if type(meta) is dict:
            if key in meta:
                return None
            seen.update(dict.fromkeys(k for k in meta if k not in seen))
    have = ", ".join(sorted(seen)[:20]) if seen else "none: the items carry no metadata"
    return f"{flag} {key}: no item's metadata has the key {key!r} (keys in the metadata: {have})"


def unreadable_warning(unparsed: int, scored: int, *, noun: str = "answers") -> str | None:
    """A warning line when most answers came back but had no readable verdict (the verdict spec and the
    rubric's answer format disagree); None when most were read (or there were none). `noun`: what the
    counts count ("items" for a design's, whose items fold several answers each)."""
    answered = scored + unparsed
    if answered == 0 or unparsed * 2 <= answered:
        return None
    return (
        f"{unparsed:,} of {answered:,} {noun} have no readable verdict (VERDICT_UNPARSED): the --verdict "
        "spec does not match what the judge writes; check it against a few answers' text"
    )


def summarize(
    records: Iterable[Mapping[str, Any]],
    *,
    score_field: str | None,
    verdict_kind: str | None = None,
    by: str | None = None,
    reference: str | None = None,
    money: Money = _UNKNOWN_MONEY,
    spend_by_model: Iterable[tuple[str, float | None]] = (),
    scale: tuple[float, float] | None = None,
    top: int = TOP_GROUPS,
    author: str | None = None,
    route_by_model: Iterable[tuple[str, str]] = (),
) -> Summary:
    """The summary of a job from its output records (`score_field` None: no verdict spec, nothing scored).
    `scale`: the score's declared scale (intervals are cut to it); `top`: the most groups shown;
    `author`: the metadata key naming the model that wrote each answer (default `model`)."""
    rows = list(records)
    groups: list[tuple[Any, Group]] = []
    scored_by: list[tuple[Any, list[Any], int]] = []
    if by is not None:
        buckets: dict[str, tuple[Any, list[Mapping[str, Any]]]] = {}
        for r in rows:
            v = _metadata(r, by)
            key = NO_VALUE if v is None else _label(v)
            buckets.setdefault(key, (NO_VALUE if v is None else v, []))[1].append(r)
        for key in sorted(buckets, key=lambda k: (k == NO_VALUE, k)):
            value, members = buckets[key]
            groups.append(
                (value, group_of(members, score_field=score_field, reference=reference, scale=scale))
            )
            if key != NO_VALUE:
                values = [s for r in members if (s := score_of(r, score_field)) is not None]
                scored_by.append((value, values, len(members)))
    overall = group_of(rows, score_field=score_field, reference=reference, scale=scale)
    numeric = isinstance(overall.score, NumericStats)
    compared = len(scored_by) <= COMPARED_GROUPS
    if not numeric and compared:
        scored_by = [(g, [_label(v) for v in vs], n) for g, vs, n in scored_by]
    width = scale[1] - scale[0] if scale is not None else None
    return Summary(
        overall=overall,
        score_field=score_field,
        verdict_kind=verdict_kind,
        by=by,
        groups=tuple(groups),
        reference_key=reference,
        money=money,
        differences=differences(scored_by, numeric=numeric, width=width)
        if compared and len(scored_by) >= 2
        else (),
        designs=designs_of(rows, score_field),
        spend_by_model=tuple(spend_by_model),
        route_by_model=tuple(route_by_model),
        scale=scale,
        top=top,
        pairs_not_compared=0 if compared else len(scored_by) * (len(scored_by) - 1) // 2,
        self_preference=self_preference(rows, score_field, author)
        if author
        else self_preference(rows, score_field),
    )


# -- text ----------------------------------------------------------------------------------------------


_f = fig.score  # the one rule for every figure (`judgecore.summary.numfmt`)
_usd = fig.usd


def _score_line(
    stats: NumericStats | LabelStats | None,
    scale: tuple[float, float] | None = None,
    *,
    says_scale: bool = False,
) -> str:
    """The score's figures; `says_scale`: the mean says the scale it is on (the job's line)."""
    if stats is None:
        return "no scored item"
    if isinstance(stats, NumericStats):
        clipped = CLIPPED if stats.ci95_clipped else ""
        ci = f" (95% CI {_f(stats.ci95[0])} to {_f(stats.ci95[1])}{clipped})" if stats.ci95 else ""
        on = f" on {fig.scale(scale)}" if says_scale and scale is not None else ""
        return (
            f"mean {_f(stats.mean)}{on}{ci}, median {_f(stats.median)}, sd {_f(stats.sd)}, "
            f"range {_f(stats.min)} to {_f(stats.max)}, quartiles {_f(stats.q1)} to {_f(stats.q3)}"
        )
    parts = []
    for label, c in stats.counts:
        ci = wilson_ci95(c, stats.n)
        parts.append(
            f"{label} {c} ({fig.share(c / stats.n)}, 95% CI {fig.interval(ci, 'share')})" if ci else label
        )
    return ", ".join(parts)


def render_summary(s: Summary, *, title: str = "judgecore summary") -> str:
    """The summary as text: counts and unscored first, then the score, groups, reference and spend."""
    o = s.overall
    if s.score_field is None:
        verdict = "no verdict spec (run with --verdict FILE, or pass it to summary, to score answers)"
    else:
        verdict = f"{s.verdict_kind}, score field {s.score_field!r}"
    lines = [
        f"{title}: {o.n:,} items; verdict: {verdict}",
        "  status       " + ", ".join(f"{k} {v:,}" for k, v in o.counts),
    ]
    if o.classes:
        lines.append("  classes      " + ", ".join(f"{k} {v:,}" for k, v in o.classes))
    refused = f", refused {o.refusals:,}" if o.refusals else ""
    lines.append(
        f"  scored {o.scored:,}, unscored {o.unscored:,}{refused}, missing {o.missing:,} "
        f"(the score is over the {o.scored:,} scored items only)"
    )
    if o.refusals:
        lines.append(
            f"  refusals     {o.refusals:,} (the judge declined to answer: MODEL_REFUSAL, a miss "
            "counted apart; see each line's stop_details)"
        )
    lines.append("  score        " + _score_line(o.score, s.scale, says_scale=True))
    if isinstance(o.score, NumericStats) and o.score.histogram:
        top = max(b.n for b in o.score.histogram)
        for b in o.score.histogram:
            label = _f(b.lo) if b.lo == b.hi else f"{_f(b.lo)}-{_f(b.hi)}"
            bar = "#" * max(1 if b.n else 0, round(30 * b.n / top))
            lines.append(f"    {label:>11} {b.n:>7,} {bar}")
    if s.by is not None:
        shown = s.shown_groups
        lines.append(f"  by {s.by}: {left_out(s)}" if s.groups_left_out else f"  by {s.by}:")
        # refusals are counted apart (neither scored nor unscored): a column of their own when there
        # are any, so each row's columns add up to its n
        refusals = o.refusals > 0
        lines.append(
            f"    {'value':<20} {'n':>7} {'scored':>7} {'unscored':>8}"
            + (f" {'refused':>7}" if refusals else "")
            + f" {'missing':>7}  score"
        )
        for value, g in shown:
            lines.append(
                f"    {_label(value)[:20]:<20} {g.n:>7,} {g.scored:>7,} {g.unscored:>8,}"
                + (f" {g.refusals:>7,}" if refusals else "")
                + f" {g.missing:>7,}  "
                + _score_line(g.score, s.scale)
            )
    if s.reference_key is not None and o.reference is not None:
        r = o.reference
        weights = " (quadratic-weighted)" if r.kappa_weights else ""
        lines.append(
            f"  reference {s.reference_key!r}: {r.n:,} scored items have one; agreement "
            f"{fig.share(r.agreement)}, kappa {fig.coefficient(r.kappa)}{weights}"
            + (
                f", pearson {fig.coefficient(r.pearson)}, spearman {fig.coefficient(r.spearman)}"
                if r.kappa_weights
                else ""
            )
        )
        if r.labels:
            lines.append("    confusion (rows: reference, columns: judge)")
            head = "".join(f"{_label(v)[:8]:>9}" for v in r.labels)
            lines.append(f"    {'':>10}{head}")
            for v, row in zip(r.labels, r.matrix, strict=True):
                lines.append(f"    {_label(v)[:10]:>10}" + "".join(f"{c:>9,}" for c in row))
    lines.extend(headline_lines(s))
    if s.self_preference is not None:
        lines.extend(text_lines(s.self_preference))
    m = s.money
    lines.append(
        f"  spend        {_usd(m.spend_usd)} (all-sync would have cost {_usd(m.all_sync_usd)}; "
        f"estimated {_usd(m.estimate_usd)})"
    )
    return "\n".join(lines) + "\n"
