"""adapters.checkpoint.reads and adapters.report.job_report over a checkpoint: spend and the budget's seed, verdict-aware
counts, read-only."""

from __future__ import annotations

import math
import re

import attrs
import pytest

from adapters.checkpoint.reads import budget_from_store, counts_with_verdicts, spend_from_store
from adapters.checkpoint.records import records_from_store
from adapters.checkpoint.store import OutcomeRow, Store
from adapters.report.job_report import job_report
from judgecore.decide.prices import DEFAULT_PRICES
from judgecore.decide.spend import spend_of
from judgecore.results.outcomes import Outcome, Status, Usage
from judgecore.results.verdicts import VerdictSpecError, spec_from_json

SONNET = DEFAULT_PRICES["claude-sonnet-4-6"]


def _checkpoint(tmp_path):
    state = tmp_path / "s"
    store = Store.open(state)
    store.bind_job({"model": "claude-sonnet-4-6"}, [("c1", "a", "d"), ("c2", "b", "d"), ("c3", "c", "d")])
    store.record_metadata([("c1", b'{"m": 1}'), ("c2", None)])
    store.set_meta("verdict", {"pattern": r"Score: (?P<score>\d)", "score": "score"})

    def answer(text, usage):
        return Outcome(status=Status.SUCCEEDED, failure=None, reason="ok", text=text, usage=usage)

    store.record_outcomes(
        [
            OutcomeRow(
                custom_id="c1",
                outcome=answer("Score: 4", Usage(input_tokens=1000, output_tokens=50)),
                route="sync",
                at=1.0,
            ),
            OutcomeRow(
                custom_id="c2",
                outcome=answer("no verdict", Usage(input_tokens=2000, cache_read_input_tokens=900)),
                route="batch",
                at=2.0,
                sub_id=1,
            ),
        ]
    )
    store.close()
    return state


def test_the_budget_starts_from_every_billed_answer_in_the_checkpoint(tmp_path):
    store = Store.open_readonly(_checkpoint(tmp_path))
    try:
        budget, money = budget_from_store(store, 1.0), spend_from_store(store)
        one_by_one = spend_of(store.answers(), SONNET)
    finally:
        store.close()
    assert 2 == one_by_one.answers
    assert math.isclose(one_by_one.spent, budget.spent) and budget.spent == money.spend_usd
    assert math.isclose(1.0 - budget.spent, budget.left)


def test_counts_and_records_read_verdicts_from_the_checkpoint_alone(tmp_path):
    store = Store.open_readonly(_checkpoint(tmp_path))
    try:
        counts = counts_with_verdicts(store, store.counts())
        records = records_from_store(store, spec_from_json(store.get_meta("verdict")))
    finally:
        store.close()
    assert {"succeeded": 1, "miss": 1, "quarantined": 0, "pending": 1} == counts
    assert [("succeeded", {"score": 4}, {"m": 1}), ("miss", None, None), ("pending", None, None)] == [
        (r["status"], r["verdict"], r["metadata"]) for r in records
    ]


def test_a_kept_schema_the_transform_refuses_still_reads_the_answers_of_an_old_checkpoint(tmp_path):
    """A checkpoint made when schemas were sent verbatim may keep one no request can carry now (an
    untyped property): its answers are read all the same, with no error."""
    state = tmp_path / "s"
    store = Store.open(state)
    store.bind_job({"model": "claude-sonnet-4-6"}, [("c1", "a", "d")])
    schema = {
        "type": "object",
        "properties": {"score": {"type": "integer"}, "why": {}},
        "required": ["score"],
    }
    store.set_meta("verdict", {"schema": schema, "score": "score"})
    store.record_outcomes(
        [
            OutcomeRow(
                custom_id="c1",
                outcome=Outcome(
                    status=Status.SUCCEEDED, failure=None, reason="ok", text='{"score": 3, "why": [1]}'
                ),
                route="sync",
                at=1.0,
            )
        ]
    )
    store.close()
    store = Store.open_readonly(state)
    try:
        counts = counts_with_verdicts(store, store.counts())
    finally:
        store.close()
    assert 1 == counts["succeeded"]
    overall = job_report(state).summary.overall
    assert (1, 0) == (overall.scored, overall.unscored)
    with pytest.raises(VerdictSpecError, match="cannot be sent"):  # a new run could not send it
        spec_from_json({"schema": schema})


@pytest.mark.parametrize(("flag", "key"), [("--by", "modle"), ("--reference", "humanscore")])
def test_a_metadata_key_no_item_has_is_exit_2_listing_the_keys_there_are(tmp_path, capsys, flag, key):
    """`--by modle` used to print a one-row `(none)` table, and `--reference humanscore` an agreement of
    `-`, both exit 0: a typo of a key is now exit 2 naming the keys the metadata holds."""
    from adapters.cli import main

    state = _checkpoint(tmp_path)
    assert 2 == main(["summary", "--state", str(state), flag, key])
    err = capsys.readouterr().err.strip().splitlines()
    assert [f"error: {flag} {key}: no item's metadata has the key {key!r} (keys in the metadata: m)"] == err
    assert 0 == main(["summary", "--state", str(state), flag, "m"])  # a key some item has is fine


def test_most_answers_unreadable_is_a_warning_at_the_top_of_summary(tmp_path, capsys):
    from adapters.cli import main
    from judgecore.summary.job_summary import unreadable_warning

    state = _checkpoint(tmp_path)  # one answer of two is readable: no warning
    assert 0 == main(["summary", "--state", str(state)])
    assert "warning" not in capsys.readouterr().err
    store = Store.open(state)
    store.set_meta("verdict", {"pattern": r"Verdict: (?P<score>\w+)", "score": "score"})  # reads neither
    store.close()
    assert 0 == main(["summary", "--state", str(state)])
    err = capsys.readouterr().err
    assert "warning: 2 of 2 answers have no readable verdict (VERDICT_UNPARSED)" in err
    assert unreadable_warning(1, 1) is None and unreadable_warning(0, 0) is None


def test_a_panels_spend_per_judge_bills_each_answer_at_its_models_price_and_reaches_the_json(tmp_path):
    """Each answer is billed at the price of the judge it was sent to (the model an answer names may
    be a dated id of that alias); `summary --json` gives each judge of a panel its spend."""
    import orjson

    from adapters.checkpoint.reads import spend_by_model
    from adapters.report.job_report import summary_json

    state = tmp_path / "s"
    store = Store.open(state)
    panel = {"model": "claude-sonnet-4-6", "judges": ["claude-sonnet-4-6", "claude-haiku-4-5"]}
    store.bind_job(panel, [("c1", "a#claude-sonnet-4-6", "d"), ("c2", "a#claude-haiku-4-5", "d")])
    store.set_meta("verdict", {"pattern": r"Score: (?P<score>\d)", "score": "score"})

    def answer(model, tokens):
        usage = Usage(input_tokens=tokens, output_tokens=tokens // 10)
        return Outcome(
            status=Status.SUCCEEDED, failure=None, reason="ok", text="Score: 3", usage=usage, model=model
        )

    store.record_outcomes(
        [
            OutcomeRow(custom_id="c1", outcome=answer("claude-sonnet-4-6", 1000), route="sync", at=1.0),
            OutcomeRow(
                custom_id="c2", outcome=answer("claude-haiku-4-5-20251001", 3000), route="sync", at=2.0
            ),
        ]
    )
    try:
        per_model = dict(spend_by_model(store))
    finally:
        store.close()
    assert {"claude-haiku-4-5", "claude-sonnet-4-6"} == set(per_model)
    haiku = spend_of(
        [("sync", Usage(input_tokens=3000, output_tokens=300))], DEFAULT_PRICES["claude-haiku-4-5"]
    )
    assert pytest.approx(haiku.spent) == per_model["claude-haiku-4-5"]
    sonnet = spend_of([("sync", Usage(input_tokens=1000, output_tokens=100))], SONNET)
    assert pytest.approx(sonnet.spent) == per_model["claude-sonnet-4-6"]
    report = job_report(state, full=False)
    assert dict(report.summary.spend_by_model) == per_model
    # a panel's records: the JSON gives each judge its spend
    from judgecore.summary.job_summary import summarize

    rows = [
        {
            "status": "succeeded",
            "error": None,
            "verdict": {"score": 3},
            "judges": {m: {"score": 3} for m in per_model},
        }
    ]
    s = summarize(rows, score_field="score", spend_by_model=per_model.items())
    data = orjson.loads(summary_json(attrs.evolve(report, summary=s)))
    assert per_model == {j["model"]: j["spend_usd"] for j in data["panel"]["judges"]}


def _many_groups_checkpoint(tmp_path, groups: int):
    """A finished job `--by uid` over `groups` groups (group k holds k % 4 + 1 items), answered as
    structured outputs on the 1-5 scale its schema declares."""
    state = tmp_path / "many"
    store = Store.open(state)
    ids = [(f"c{g}-{k}", g) for g in range(groups) for k in range(g % 4 + 1)]
    store.bind_job({"model": "claude-sonnet-4-6"}, [(cid, cid, "d") for cid, _ in ids])
    store.record_metadata([(cid, b'{"uid": "u%03d"}' % g) for cid, g in ids])
    score = {"type": "integer", "minimum": 1, "maximum": 5}
    store.set_meta(
        "verdict", {"schema": {"type": "object", "properties": {"score": score}}, "score": "score"}
    )
    store.record_outcomes(
        OutcomeRow(
            custom_id=cid,
            outcome=Outcome(
                status=Status.SUCCEEDED, failure=None, reason="ok", text=f'{{"score": {1 + i % 5}}}'
            ),
            route="sync",
            at=1.0,
        )
        for i, (cid, _) in enumerate(ids)
    )
    store.close()
    return state


def test_summary_top_n_shows_the_n_largest_groups_and_json_lists_every_group_on_the_specs_scale(
    tmp_path, capsys
):
    import orjson

    from adapters.cli import main

    state = _many_groups_checkpoint(tmp_path, 30)
    assert 0 == main(["summary", "--state", str(state), "--by", "uid", "--top", "5"])
    out = capsys.readouterr().out
    rows = [line.split()[:2] for line in out.splitlines() if line.startswith("    u")]
    assert [["u003", "4"], ["u007", "4"], ["u011", "4"], ["u015", "4"], ["u019", "4"]] == rows
    assert "by uid: 30 groups: the 5 with the most items are shown, 25 left out" in out
    assert re.search(r"score        mean \d\.\d\d on 1-5 \(95% CI", out), "the scale the schema declares"
    assert "clipped to the scale" in out  # a group of two items: Student's t reaches past 1-5
    assert 0 == main(["summary", "--state", str(state), "--by", "uid", "--json"])
    j = orjson.loads(capsys.readouterr().out)
    assert (30, [1.0, 5.0], 435) == (
        len(j["groups"]),
        j["verdict"]["scale"],
        j["differences_not_compared"]["pairs"],
    )
    assert all(
        1.0 <= g["score"]["ci95"][0] <= g["score"]["ci95"][1] <= 5.0
        for g in j["groups"]
        if g["score"]["ci95"]
    )


@pytest.mark.parametrize(
    ("top", "says"),
    [("0", "must be >= 1, got '0'"), ("-3", "must be >= 1, got '-3'"), ("many", "expected a whole number")],
)
def test_summary_top_must_be_a_whole_number_of_groups(tmp_path, capsys, top, says):
    from adapters.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["summary", "--state", str(_checkpoint(tmp_path)), "--by", "m", "--top", top])
    assert 2 == exit_.value.code
    err = capsys.readouterr().err
    assert "--top" in err
    assert says in err
