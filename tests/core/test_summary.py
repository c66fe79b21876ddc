"""The summary as a value: scored, unscored, refused and missing partition the items; the score is over
scored only."""

from __future__ import annotations

import itertools
import statistics

from hypothesis import given
from hypothesis import strategies as st

from judgecore.summary.job_summary import Money, render_summary, summarize

STATUS_CLASS = {
    "succeeded": None,
    "unparsed": "VERDICT_UNPARSED",
    "truncated": "MODEL_TRUNCATION",
    "quarantined": "INVALID_REQUEST",
    "pending": "PENDING",
    "refused": "MODEL_REFUSAL",
}


def record(kind: str, score: object, model: str, gold: object) -> dict:
    status = {"unparsed": "miss", "truncated": "miss", "refused": "miss"}.get(kind, kind)
    cls = STATUS_CLASS[kind]
    return {
        "status": status,
        "error": {"class": cls, "type": None, "message": "x"} if cls else None,
        "verdict": {"score": score} if kind == "succeeded" else None,
        "metadata": {"model": model, "gold": gold},
    }


records = st.lists(
    st.builds(
        record,
        st.sampled_from(sorted(STATUS_CLASS)),
        st.integers(1, 5),
        st.sampled_from(["a", "b", "c"]),
        st.one_of(st.none(), st.integers(1, 5)),
    ),
    max_size=60,
)


@given(records)
def test_scored_unscored_refused_and_missing_partition_the_items_and_the_mean_is_over_scored_only(rows):
    s = summarize(rows, score_field="score", by="model", reference="gold")
    o = s.overall
    assert len(rows) == o.n == o.scored + o.unscored + o.refusals + o.missing
    assert sum(1 for r in rows if r["error"] and r["error"]["class"] == "MODEL_REFUSAL") == o.refusals
    scored = [r["verdict"]["score"] for r in rows if r["verdict"]]
    assert len(scored) == o.scored
    if scored:
        assert statistics.fmean(scored) == o.score.mean  # type: ignore[union-attr]
    else:
        assert o.score is None
    assert sum(1 for r in rows if r["error"] and r["error"]["class"] == "VERDICT_UNPARSED") == dict(
        o.classes
    ).get("VERDICT_UNPARSED", 0)
    assert o.n == sum(g.n for _, g in s.groups) and o.scored == sum(g.scored for _, g in s.groups)
    assert sum(1 for r in rows if r["verdict"] and r["metadata"]["gold"] is not None) == o.reference.n  # type: ignore[union-attr]
    text = render_summary(s)
    refused = f", refused {o.refusals:,}" if o.refusals else ""
    assert f"scored {o.scored:,}, unscored {o.unscored:,}{refused}, missing {o.missing:,}" in text
    assert s.to_json()["refusals"] == o.refusals


def test_labels_get_shares_with_intervals_and_an_unweighted_kappa():
    rows = [record("succeeded", v, "a", g) for v, g in [("PASS", "PASS"), ("FAIL", "PASS"), ("PASS", "PASS")]]
    j = summarize(rows, score_field="score", reference="gold").to_json()
    assert {"PASS": 2, "FAIL": 1} == j["score"]["counts"]
    assert 2 / 3 == j["score"]["shares"]["PASS"] and 2 == len(j["score"]["ci95"]["PASS"])
    assert (2 / 3, None, [[0, 0], [1, 2]]) == (
        j["reference"]["agreement"],
        j["reference"]["kappa_weights"],
        j["reference"]["confusion"]["matrix"],
    )


def test_the_json_has_the_contract_keys():
    j = summarize([record("succeeded", 4, "a", 4)], score_field="score", money=Money(spend_usd=1.0)).to_json()
    keys = {"n", "counts", "classes", "scored", "unscored", "score", "groups", "reference"}
    keys |= {"spend_usd", "all_sync_usd", "estimate_usd"}
    assert keys <= set(j)
    assert ("numeric", 4.0, 1.0) == (j["score"]["kind"], j["score"]["mean"], j["spend_usd"])


def test_without_a_verdict_spec_nothing_is_scored_and_the_text_says_how_to_score():
    s = summarize([record("succeeded", 4, "a", 4)], score_field=None)
    assert (0, 1, None) == (s.overall.scored, s.overall.unscored, s.overall.score)
    assert "--verdict FILE" in render_summary(s)


@given(records)
def test_each_groups_row_of_the_text_adds_up_to_its_items(rows):
    """A refused item is neither scored nor unscored: the `--by` table had no column for it, so a
    group with a refusal read `c 100 99 0 0`."""
    s = summarize(rows, score_field="score", by="model")
    lines = render_summary(s).splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("  by model:"))
    for value, g in s.groups:
        row = next(line for line in lines[head + 2 :] if line.split()[0] == str(value))
        n, *parts = (int(w.replace(",", "")) for w in row.split()[1 : 6 if s.overall.refusals else 5])
        assert n == g.n == sum(parts), row


# -- at any number of groups ---------------------------------------------------------------------------


def scored(score: object, group: object) -> dict:
    return {"status": "succeeded", "error": None, "verdict": {"score": score}, "metadata": {"uid": group}}


def test_every_pair_is_compared_up_to_the_limit_and_none_above_it():
    """3,000 distinct values of `--by uid` printed 4.5 million lines of pairs (374 MB, 37 s): above
    `COMPARED_GROUPS` groups no pair is compared, in the text as in the JSON, and both say so."""
    from judgecore.summary.compare import COMPARED_GROUPS

    def groups(k: int) -> list[dict]:
        return [scored(1 + (i * 7 + j) % 5, f"g{i:04d}") for i in range(k) for j in range(3)]

    at_limit = summarize(groups(COMPARED_GROUPS), score_field="score", by="uid")
    assert COMPARED_GROUPS * (COMPARED_GROUPS - 1) // 2 == len(at_limit.differences)
    assert (0, None) == (at_limit.pairs_not_compared, at_limit.to_json()["differences_not_compared"])

    many = summarize(groups(3_000), score_field="score", by="uid")
    assert () == many.differences and 3_000 * 2_999 // 2 == many.pairs_not_compared
    text = render_summary(many)
    assert len(text.splitlines()) < 40, "a screenful, not a line per pair"
    assert "differences by uid: not compared: 3,000 groups make 4,498,500 pairs" in text
    j = many.to_json()
    assert [] == j["differences"] and 3_000 == len(j["groups"]), "--json lists every group"
    assert {"groups": 3_000, "pairs": 4_498_500, "compared_up_to": COMPARED_GROUPS} == j[
        "differences_not_compared"
    ]


@given(st.lists(st.integers(0, 40), min_size=1, max_size=40), st.integers(1, 25))
def test_the_text_shows_the_top_groups_by_items_and_says_how_many_are_left_out(sizes, top):
    """Above `top` groups, the table shows the `top` with the most items (ties in the groups' order),
    largest first, and a line counts the rest; at or below it, every group in its order."""
    rows = [scored(3, f"g{i:02d}") for i, n in enumerate(sizes) for _ in range(n)]
    if not rows:
        return
    s = summarize(rows, score_field="score", by="uid", top=top)
    present = [(f"g{i:02d}", n) for i, n in enumerate(sizes) if n]
    lines = render_summary(s).splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("  by uid:"))
    table = itertools.takewhile(lambda line: line.startswith("    "), lines[head + 2 :])
    shown = [line.split()[:2] for line in table]
    if len(present) <= top:
        assert [[g, f"{n:,}"] for g, n in present] == shown
        assert "left out" not in lines[head]
    else:
        expected = sorted(present, key=lambda gn: -gn[1])[:top]  # a stable sort: ties in their order
        assert [[g, f"{n:,}"] for g, n in expected] == shown
        left = len(present) - top
        assert f"the {top:,} with the most items are shown, {left:,} left out" in lines[head]
        assert "--top N" in lines[head] and "--json lists every group" in lines[head]
    assert len(present) == len(s.to_json()["groups"])


def test_the_markdown_shows_the_top_groups_and_says_the_rest_and_the_pairs_are_left_out():
    from judgecore.summary.text import render_markdown

    rows = [scored(2 + i % 3, f"g{i:03d}") for i in range(60) for _ in range(1 + (i == 41))]
    md = render_markdown(summarize(rows, score_field="score", by="uid", top=5))
    table = [line for line in md.splitlines() if line.startswith("| g")]
    assert 5 == len(table) and table[0].startswith("| g041 | 2 |"), "the largest group first"
    assert "60 groups: the 5 with the most items are shown, 55 left out" in md
    assert "Differences by uid: not compared: 60 groups make 1,770 pairs" in md
    assert "| comparison |" not in md


# -- intervals on the declared scale -------------------------------------------------------------------


def test_an_interval_reaching_past_the_declared_scale_is_cut_to_it_and_says_so():
    """Two items scored 1 and 5 on a 1-5 scale: Student's t gives 3.00 +- 25.41 ("-22.41 to 28.41"), an
    interval no mean of 1-5 scores can reach; it is cut to 1-5 and the text, JSON and Markdown say so."""
    from judgecore.summary.text import render_markdown

    rows = [scored(1, "a"), scored(5, "a"), scored(4, "b"), scored(4, "b"), scored(5, "b")]
    raw = summarize(rows, score_field="score", by="uid")
    assert raw.groups[0][1].score.ci95[0] < -22  # type: ignore[union-attr]
    s = summarize(rows, score_field="score", by="uid", scale=(1.0, 5.0))
    a = s.groups[0][1].score
    assert ((1.0, 5.0), True) == (a.ci95, a.ci95_clipped)  # type: ignore[union-attr]
    text = render_summary(s)
    assert "mean 3.00 (95% CI 1.00 to 5.00, clipped to the scale)" in text
    assert "-22.41" not in text
    (d,) = s.differences  # b - a: Welch's interval is wider than the scale's width, 4
    assert (-4.0, 4.0) == d.ci95 and d.ci95_clipped
    assert "-4.00 to +4.00, clipped to the scale" in text
    j = s.to_json()
    assert ([1.0, 5.0], True, [1.0, 5.0]) == (
        j["groups"][0]["score"]["ci95"],
        j["groups"][0]["score"]["ci95_clipped"],
        j["verdict"]["scale"],
    )
    assert "1.00 to 5.00, clipped to the scale" in render_markdown(s)


@given(st.lists(st.tuples(st.integers(0, 10), st.sampled_from("abc")), min_size=1, max_size=30))
def test_every_interval_of_a_mean_lies_on_the_scale_and_of_a_difference_within_its_width(rows):
    s = summarize([scored(v, g) for v, g in rows], score_field="score", by="uid", scale=(0.0, 10.0))
    for stats in [s.overall.score, *(g.score for _, g in s.groups)]:
        if stats is not None and stats.ci95 is not None:  # type: ignore[union-attr]
            lo, hi = stats.ci95  # type: ignore[union-attr]
            assert 0.0 <= lo <= stats.mean <= hi <= 10.0  # type: ignore[union-attr]
            assert stats.ci95_clipped or (lo, hi) == describe(stats)  # type: ignore[union-attr]
    for d in s.differences:
        if d.ci95 is not None:
            assert -10.0 <= d.ci95[0] <= d.estimate <= d.ci95[1] <= 10.0


def describe(stats: object) -> tuple[float, float]:
    """The unclipped interval of the scores behind `stats` (their histogram holds every value)."""
    from judgecore.summary.stats import mean_ci95

    values = [b.lo for b in stats.histogram for _ in range(b.n)]  # type: ignore[attr-defined]
    return mean_ci95(values)  # type: ignore[return-value]


def test_the_job_mean_says_its_scale_and_says_nothing_when_none_is_declared():
    rows = [scored(3, "a"), scored(4, "a")]
    assert "score        mean 3.50 on 1-5 (95% CI" in render_summary(
        summarize(rows, score_field="score", scale=(1.0, 5.0))
    )
    assert "score        mean 3.50 (95% CI" in render_summary(summarize(rows, score_field="score"))
