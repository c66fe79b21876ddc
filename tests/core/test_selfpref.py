"""Self-preference of a panel's judges, held to a straightforward pandas + scipy computation on generated
data; model families by name."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgecore.summary.job_summary import render_summary, summarize
from judgecore.summary.selfpref import family_of, self_preference

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

CLAUDE, GPT, QWEN = "claude-sonnet-4-6", "openai:gpt-5-mini", "served:Qwen/Qwen3-32B@http://gpu01:8000/v1"
JUDGES = (CLAUDE, GPT, QWEN)
#: authors, with their family written by hand (the oracle does not call `family_of`)
AUTHORS = {
    "claude-3-5-haiku": "anthropic",
    "gpt-4o-mini": "openai",
    "o3-mini": "openai",
    "Qwen/Qwen2.5-7B-Instruct": "qwen",
    "meta-llama/Llama-3.1-8B-Instruct": "llama",
}
JUDGE_FAMILY = {CLAUDE: "anthropic", GPT: "openai", QWEN: "qwen"}


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("claude-sonnet-4-6", "anthropic"),
        ("anthropic:claude-opus-4-1", "anthropic"),
        ("openai:gpt-5-mini", "openai"),
        ("gpt-4o", "openai"),
        ("o1", "openai"),
        ("o3-mini", "openai"),
        ("o4-mini-2025-04-16", "openai"),
        ("served:Qwen/Qwen3-32B@http://gpu01:8000/v1", "qwen"),
        ("served:meta-llama/Llama-3.3-70B-Instruct@http://10.0.0.5:8000/v1", "llama"),
        ("served:openai/gpt-oss-120b@http://gpu02:30000/v1", "openai"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mistral"),
        ("google/gemma-3-27b-it", "gemma"),
        ("deepseek-ai/DeepSeek-V3", "deepseek"),
        ("QwQ-32B", "qwen"),
        ("served:my-finetune@http://localhost:8000/v1", "my-finetune"),
        ("some-lab/unknown-7b", "some-lab/unknown-7b"),
        ("omni-model", "omni-model"),
    ],
)
def test_a_model_name_has_a_family(name, family):
    assert family == family_of(name)


def _record(author: str | None, scores: dict[str, float | None]) -> dict:
    return {
        "id": "x",
        "status": "succeeded",
        "metadata": {"model": author} if author is not None else {},
        "judges": {j: ({"score": s} if s is not None else None) for j, s in scores.items()},
        "verdict": {"score": 5},
    }


score_or_none = st.one_of(st.none(), st.integers(1, 10))
rows = st.lists(
    st.tuples(st.sampled_from(sorted(AUTHORS)), score_or_none, score_or_none, score_or_none),
    min_size=2,
    max_size=60,
)


def _oracle(data):
    """The figures for each judge, with pandas (row-wise means) and scipy (Welch's t interval)."""
    import pandas as pd
    from scipy import stats

    frame = pd.DataFrame(data, columns=["author", *JUDGES])
    frame["family"] = frame["author"].map(AUTHORS)
    # the baseline: answers by a family no judge belongs to (llama here), if two were scored twice
    neutral = ((frame["family"] == "llama") & (frame[list(JUDGES)].notna().sum(axis=1) >= 2)).sum() >= 2
    out = {}
    for judge in JUDGES:
        others = [j for j in JUDGES if j != judge]
        rest = frame[others].astype(float)
        usable = frame[judge].notna() & rest.notna().any(axis=1)
        sub = frame[usable]
        lean = sub[judge].astype(float) - rest[usable].mean(axis=1, skipna=True)
        mine = sub["family"] == JUDGE_FAMILY[judge]
        own = lean[mine]
        other = lean[sub["family"] == "llama"] if neutral else lean[~mine]
        ci = None
        if len(own) >= 2 and len(other) >= 2:
            if own.std() == 0 and other.std() == 0:
                d = own.mean() - other.mean()
                ci = (d, d)
            else:
                r = stats.ttest_ind(own, other, equal_var=False).confidence_interval(0.95)
                ci = (r.low, r.high)
        out[judge] = {
            "n_own": len(own),
            "n_other": len(other),
            "own_mean": sub.loc[mine, judge].astype(float).mean() if len(own) else None,
            "others_on_own": rest[usable][mine].mean(axis=1).mean() if len(own) else None,
            "difference": own.mean() - other.mean() if len(own) and len(other) else None,
            "ci95": ci,
            "baseline": "neutral" if neutral else "other families",
        }
    return out


def _close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


@FAST
@given(rows)
def test_each_judge_s_self_preference_matches_pandas_and_scipy(data):
    records = [_record(a, dict(zip(JUDGES, s, strict=True))) for a, *s in data]
    got = self_preference(records, "score")
    expected = _oracle(data)
    if got is None:  # no item with two scores
        assert all(e["n_own"] + e["n_other"] == 0 for e in expected.values())
        return
    by_judge = {j.judge: j for j in got.judges}
    assert set(JUDGES) == set(by_judge)
    for judge, e in expected.items():
        j = by_judge[judge]
        assert JUDGE_FAMILY[judge] == j.family
        assert (e["n_own"], e["n_other"], e["baseline"]) == (j.n_own, j.n_other, j.baseline)
        for key in ("own_mean", "others_on_own", "difference"):
            assert _close(e[key], getattr(j, key)), key
        if e["ci95"] is None:
            assert j.ci95 is None
        else:
            assert j.ci95 is not None
            assert _close(e["ci95"][0], j.ci95[0]) and _close(e["ci95"][1], j.ci95[1])
            assert (e["ci95"][0] > 0 or e["ci95"][1] < 0) == j.flagged


def _panel(bias: float, n: int = 300, seed: int = 5) -> list[dict]:
    """Answers by three families; every judge scores quality plus noise; the Qwen judge adds `bias` to
    its own family's answers, and the Claude judge is harsher by 1 on everything."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        author = sorted(AUTHORS)[i % len(AUTHORS)]
        quality = rng.uniform(3, 8)
        scores = {j: quality + rng.gauss(0, 0.7) for j in JUDGES}
        scores[CLAUDE] -= 1.0
        if AUTHORS[author] == "qwen":
            scores[QWEN] += bias
        out.append(_record(author, {j: round(s) for j, s in scores.items()}))
    return out


def _mean_differences(bias: float, seeds: range) -> tuple[dict[str, float], dict[str, int]]:
    diffs: dict[str, list[float]] = {j: [] for j in JUDGES}
    flags = dict.fromkeys(JUDGES, 0)
    for seed in seeds:
        got = self_preference(_panel(bias=bias, seed=seed), "score")
        assert got is not None
        for j in got.judges:
            assert j.difference is not None
            diffs[j.judge].append(j.difference)
            flags[j.judge] += j.flagged
    return {j: sum(d) / len(d) for j, d in diffs.items()}, flags


def test_a_judge_that_favours_its_family_is_flagged_in_every_panel_and_no_other_judge_echoes_it():
    """The Qwen judge adds 1.5 to Qwen answers: flagged in each of 40 generated panels, its difference
    1.5 on average. Against the neutral (Llama) answers, the harsh Claude judge and the fair GPT judge
    show no echo of it (near 0) and are flagged only as often as a 95% interval allows by chance."""
    mean, flags = _mean_differences(1.5, range(40))
    assert 40 == flags[QWEN]
    assert abs(1.5 - mean[QWEN]) < 0.1
    assert abs(mean[CLAUDE]) < 0.08 and abs(mean[GPT]) < 0.08
    assert flags[CLAUDE] + flags[GPT] <= 8  # of 80, 5% expected


def test_without_neutral_answers_the_baseline_is_the_other_families_and_echoes_the_bias():
    """No Llama answers: the baseline is every other family's, and Qwen's bias echoes in the others'
    figures as the module's docstring says: bias / 2 times the share of their baseline Qwen wrote."""
    diffs: dict[str, list[float]] = {j: [] for j in JUDGES}
    for seed in range(40):
        records = [r for r in _panel(bias=1.5, seed=seed) if not r["metadata"]["model"].startswith("meta")]
        got = self_preference(records, "score")
        assert got is not None and {"other families"} == {j.baseline for j in got.judges}
        for j in got.judges:
            diffs[j.judge].append(j.difference)
    mean = {j: sum(d) / len(d) for j, d in diffs.items()}
    assert abs(1.5 - mean[QWEN]) < 0.1
    # of each 4 answers, 1 is Claude's, 2 OpenAI's, 1 Qwen's: Qwen wrote 1 of Claude's 3 baseline
    # answers and 1 of GPT's 2
    assert abs(0.75 / 3 - mean[CLAUDE]) < 0.08
    assert abs(0.75 / 2 - mean[GPT]) < 0.08


def test_a_harsh_judge_without_a_bias_is_flagged_only_by_chance():
    """No bias, the Claude judge a point harsher on everything: every difference near 0, and a judge
    flagged about as often as a 95% interval allows (5% of 120; at most 12 here)."""
    mean, flags = _mean_differences(0.0, range(40))
    assert all(abs(d) < 0.08 for d in mean.values())
    assert sum(flags.values()) <= 12


def test_nothing_without_a_panel_authors_or_numbers():
    one_judge = [_record("gpt-4o", {GPT: 5}) for _ in range(5)]
    no_author = [_record(None, {GPT: 5, CLAUDE: 4}) for _ in range(5)]
    labels = [{**_record("gpt-4o", {}), "judges": {GPT: {"score": "good"}, CLAUDE: {"score": "bad"}}}] * 5
    assert self_preference(one_judge, "score") is None
    assert self_preference(no_author, "score") is None
    assert self_preference(labels, "score") is None


def test_author_key_names_another_metadata_field():
    records = _panel(bias=1.5)
    for r in records:
        r["metadata"] = {"generator": r["metadata"]["model"]}
    assert self_preference(records, "score") is None
    got = self_preference(records, "score", "generator")
    assert got is not None and "generator" == got.author_key


def test_the_summary_shows_it_in_text_and_json_only_for_a_panel_with_authors():
    s = summarize(_panel(bias=1.5), score_field="score", verdict_kind="number")
    entry = {j["judge"]: j for j in s.to_json()["self_preference"]["judges"]}
    assert {"family", "n_own", "n_other", "difference", "ci95", "flagged"} <= set(entry[QWEN])
    assert entry[QWEN]["flagged"]
    text = render_summary(s)
    assert "self-preference" in text
    flagged_lines = [ln for ln in text.splitlines() if "SELF-PREFERENCE" in ln]
    assert {j for j, e in entry.items() if e["flagged"]} == {
        ln.split(" (")[0].strip() for ln in flagged_lines
    }
    single = summarize([_record("gpt-4o", {GPT: 5})] * 3, score_field="score")
    assert "self_preference" not in single.to_json()
    assert "self-preference" not in render_summary(single)
