"""The summary as a value: scored, unscored, refused and missing partition the items; the score is over
scored only."""

from __future__ import annotations

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
