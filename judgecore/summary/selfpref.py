"""Self-preference: does a judge of a panel rate its own family's answers higher than the other judges do?

Where items name the model that wrote the answer (`metadata.model`, or `metadata[KEY]` with
`--author KEY`), and a panel of two or more judges scored them with numbers:

- a model's *family* is `family_of(name)`: `claude*` and `anthropic:*` are `anthropic`; `gpt*`,
  `o1*`/`o3*`/`o4*`, `chatgpt*` and `openai:*` are `openai`; `served:MODEL@URL` is MODEL's family; an
  open model is its family by the prefix of its name or of its organisation (`Qwen/Qwen3-32B`: `qwen`;
  `meta-llama/Llama-3.1-8B`: `llama`; also `mistral`, `gemma`, `gemini` -> `google`, `deepseek`, `phi`);
  any other name is its own family (the name without a provider prefix or URL);
- for judge J of family F, on each item i whose author is known and that J and at least one other
  judge scored: `d_i = score_J(i) - the mean of the other judges' scores of i` (J's lean on that answer);
- J's self-preference is `mean(d_i)` over items whose author's family is F (*own*) minus `mean(d_i)`
  over the *baseline* items: the answers by families no judge of the panel belongs to (*neutral*),
  when there are at least two; else every answer not by F (*other families*). Subtracting J's lean on
  the baseline takes out a judge that is harsher or more lenient than the panel on everything, so
  what is left is the lean it keeps for its own family;
- its 95% interval is Welch's (the difference of two independent means, Student's t on the
  Welch-Satterthwaite degrees of freedom, `judgecore.summary.compare.welch_ci95`): analytic, nothing to seed;
- *flagged* when the interval excludes zero (either side: a judge may also disfavour its own family).

Why neutral answers make the baseline: a judge K that favours its own family raises the other judges'
mean on K's family's answers, so on those answers every other judge's lean drops by K's bias /
(judges - 1). With K's family's answers in J's baseline, J would show that drop as a self-preference
of its own (an *echo*: a panel of three, K biased by 2 points on a third of J's baseline, gives J
+0.33). Answers by a family no judge belongs to carry no judge's bias, so the difference on them is
J's own bias alone. Without two such answers the baseline is every other family's (`baseline`
says which), and a flagged judge with the largest difference is the source of the others' echoes.

Beside it, what a reader checks first: J's mean score on its own family's answers, and the other
judges' mean on the same answers. None where a figure is undefined (no own-family item, fewer than two
items a side for the interval). Label verdicts are not scored here (a difference of labels has no mean).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from judgecore.summary import numfmt as fig
from judgecore.summary.compare import welch_ci95
from judgecore.values import frozen

DEFAULT_AUTHOR_KEY = "model"

#: (pattern on a model name, lower case, without organisation; family): the first that matches wins
_BY_NAME: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), f)
    for p, f in (
        (r"^claude", "anthropic"),
        (r"^(gpt|chatgpt|text-davinci|davinci)", "openai"),
        (r"^o[134](-|$)", "openai"),
        (r"^(qwen|qwq)", "qwen"),
        (r"^(llama|meta-llama|codellama)", "llama"),
        (r"^(mistral|mixtral|ministral|codestral|magistral|devstral)", "mistral"),
        (r"^gemma", "gemma"),
        (r"^gemini", "google"),
        (r"^deepseek", "deepseek"),
        (r"^phi", "phi"),
        (r"^grok", "xai"),
        (r"^command", "cohere"),
    )
)
#: an open model's organisation on Hugging Face, when its name alone says nothing
_BY_ORG = {
    "anthropic": "anthropic",
    "openai": "openai",
    "qwen": "qwen",
    "meta-llama": "llama",
    "mistralai": "mistral",
    "deepseek-ai": "deepseek",
    "microsoft": "phi",
    "google": "gemma",
}
_PROVIDERS = {"anthropic": "anthropic", "openai": "openai"}


def family_of(name: str) -> str:
    """The family of the model `name` (a judge's name as given, or an author's)."""
    text = name.strip()
    provider, colon, rest = text.partition(":")
    if colon and provider.lower() in _PROVIDERS:
        return _PROVIDERS[provider.lower()]
    if colon and provider.lower() == "served":
        text = rest.partition("@")[0]  # served:MODEL@URL: the family of MODEL
    org, slash, model = text.rpartition("/")
    bare = (model if slash else text).lower()
    for pattern, family in _BY_NAME:
        if pattern.search(bare):
            return family
    if slash and (family := _BY_ORG.get(org.lower().rpartition("/")[2])) is not None:
        return family
    return text


@frozen(kw_only=True)
class SelfPreference:
    """One judge's self-preference (see the module's docstring for each figure)."""

    judge: str
    family: str
    n_own: int
    n_other: int
    #: the judge's mean score on its own family's answers, and the other judges' mean on the same answers
    own_mean: float | None
    others_on_own: float | None
    #: mean(d_i) on own-family items minus mean(d_i) on the baseline items
    difference: float | None
    ci95: tuple[float, float] | None
    #: "neutral" (answers by families no judge belongs to) or "other families"
    baseline: str = "neutral"

    @property
    def flagged(self) -> bool:
        """The interval excludes zero."""
        return self.ci95 is not None and (self.ci95[0] > 0 or self.ci95[1] < 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "family": self.family,
            "n_own": self.n_own,
            "n_other": self.n_other,
            "own_mean": self.own_mean,
            "others_on_own": self.others_on_own,
            "difference": self.difference,
            "ci95": list(self.ci95) if self.ci95 else None,
            "flagged": self.flagged,
            "baseline": self.baseline,
        }


@frozen(kw_only=True)
class SelfPreferences:
    """Every judge's self-preference, and the metadata key that named the authors."""

    author_key: str
    judges: tuple[SelfPreference, ...]
    interval: str = "welch"

    def to_json(self) -> dict[str, Any]:
        return {
            "author_key": self.author_key,
            "interval": self.interval,
            "judges": [j.to_json() for j in self.judges],
        }


def _score(verdict: Any, field: str | None) -> float | None:
    """A judge's numeric score of an item (None: no verdict, or not a number)."""
    value = verdict.get(field) if isinstance(verdict, Mapping) and field is not None else verdict
    return float(value) if type(value) in (int, float) else None


def self_preference(
    records: Sequence[Mapping[str, Any]], field: str | None, author_key: str = DEFAULT_AUTHOR_KEY
) -> SelfPreferences | None:
    """Each judge's self-preference; None unless a panel of two or more judges gave numeric scores to
    items whose `metadata[author_key]` names their author."""
    rows: list[tuple[str, dict[str, float]]] = []  # (author's family, judge -> score)
    judges: set[str] = set()
    for r in records:
        panel, meta = r.get("judges"), r.get("metadata")
        if not isinstance(panel, Mapping) or type(meta) is not dict:
            continue
        author = meta.get(author_key)
        if not isinstance(author, str) or not author.strip():
            continue
        scores = {str(j): s for j, v in panel.items() if (s := _score(v, field)) is not None}
        judges.update(str(j) for j in panel)
        if len(scores) >= 2:
            rows.append((family_of(author), scores))
    if len(judges) < 2 or not rows:
        return None
    panel_families = {family_of(j) for j in judges}
    neutral = sum(1 for f, _ in rows if f not in panel_families) >= 2
    out = []
    for judge in sorted(judges):
        family = family_of(judge)
        own: list[float] = []
        other: list[float] = []
        own_scores: list[float] = []
        others_scores: list[float] = []
        for author_family, scores in rows:
            if judge not in scores:
                continue
            rest = [s for j, s in scores.items() if j != judge]
            lean = scores[judge] - statistics.fmean(rest)
            if author_family == family:
                own.append(lean)
                own_scores.append(scores[judge])
                others_scores.append(statistics.fmean(rest))
            elif not neutral or author_family not in panel_families:
                other.append(lean)
        both = bool(own) and bool(other)
        out.append(
            SelfPreference(
                judge=judge,
                family=family,
                n_own=len(own),
                n_other=len(other),
                own_mean=statistics.fmean(own_scores) if own_scores else None,
                others_on_own=statistics.fmean(others_scores) if others_scores else None,
                difference=statistics.fmean(own) - statistics.fmean(other) if both else None,
                ci95=welch_ci95(other, own) if both else None,
                baseline="neutral" if neutral else "other families",
            )
        )
    return SelfPreferences(author_key=author_key, judges=tuple(out))


# -- written out (text, Markdown, the HTML report), by the figures' one rule ---------------------------

HEAD = (
    "judge",
    "family",
    "own items",
    "its mean",
    "others' mean",
    "baseline items",
    "self-preference",
    "95% CI",
    "flag",
)


def table_rows(sp: SelfPreferences) -> list[tuple[str, ...]]:
    """One row per judge, every figure written as `judgecore.summary.numfmt` writes it (`HEAD` names them)."""
    out = []
    for j in sp.judges:
        out.append(
            (
                j.judge,
                j.family,
                fig.count(j.n_own),
                fig.score(j.own_mean),
                fig.score(j.others_on_own),
                fig.count(j.n_other),
                fig.difference(j.difference),
                fig.interval(j.ci95, "difference"),
                FLAG if j.flagged else "",
            )
        )
    return out


FLAG = "SELF-PREFERENCE"


def text_lines(sp: SelfPreferences) -> list[str]:
    """The text summary's lines: what is measured, then one line per judge."""
    out = [
        f"  self-preference (authors: metadata[{sp.author_key!r}]; a judge's lean on its own family's answers "
        "minus its lean on the baseline's (answers by families no judge belongs to, if any), against the "
        "other judges' mean; Welch 95% CI)"
    ]
    for j, row in zip(sp.judges, table_rows(sp), strict=True):
        judge, family, n_own, own_mean, others, n_other, diff, ci, flag = row
        if j.n_own == 0:
            out.append(f"    {judge} ({family}): no answer by its family ({n_other} by others)")
            continue
        out.append(
            f"    {judge} ({family}): {own_mean} on its family's {n_own} answers, the others {others}; "
            f"self-preference {diff} (95% CI {ci}; baseline: {n_other} answers, {j.baseline})"
            + (f"  {flag}" if flag else "")
        )
    return out
