"""Judge designs in the core: an item's requests (ids, partition, stability) and the fold of their
answers into the item's verdict (majority, median, the pairwise rule; independent of arrival)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import orjson
import pytest
import strategies as S
from hypothesis import given, settings
from hypothesis import strategies as st

from judgecore.job.consensus import consensus, fold, pairwise_vote
from judgecore.job.designs import (
    Design,
    DesignError,
    RequestKey,
    design_items,
    expand_item,
    expand_templated,
    item_of_request,
)
from judgecore.job.errors import InputError
from judgecore.job.ids import CUSTOM_ID_RE
from judgecore.job.parsing import parse_items

JOB = "abcdefghijklmnop"


def _rows(design: Design, ids: list[str]) -> list[Any]:
    if design.template is not None:
        return [
            expand_templated(
                design, n, {"id": i, "question": f"q {n}", "a": f"x{n}", "b": f"y{n}", "model": "m"}
            )
            for n, i in enumerate(ids, start=1)
        ]
    lines = [orjson.dumps({"id": i, "prompt": f"answer {n}"}) for n, i in enumerate(ids, start=1)]
    return [
        expand_item(design, it.id, it.line, it.messages_json, it.max_tokens, it.metadata_json)
        for it in parse_items(lines)
    ]


def test_a_one_request_design_keeps_todays_custom_ids_and_messages() -> None:
    """No flags: the same custom_ids and bytes as a job without designs, so old state dirs resume."""
    ids = ["q1", "run 3:item#9", "mmlu/x/0042"]
    lines = [orjson.dumps({"id": i, "prompt": f"answer {n}"}) for n, i in enumerate(ids, start=1)]
    today = parse_items(lines, job=JOB)
    items = design_items(Design(), _rows(Design(), ids), job=JOB)
    assert today.custom_ids == items.custom_ids
    assert tuple(today.messages_json) == tuple(items.messages_json)
    assert today.ids == items.ids


@settings(max_examples=40)
@given(design=S.designs(), ids=st.lists(S.item_ids, min_size=1, max_size=6, unique=True))
def test_any_designs_requests_are_unique_ids_partitioned_exactly_into_the_items(
    design: Design, ids: list[str]
) -> None:
    """Every request has its own valid custom_id; item k owns exactly the k-th run of `per_item`
    requests, one per key of the design, and each request id names its item and key back."""
    items = design_items(design, _rows(design, ids), job=JOB)
    per = design.per_item
    assert len(ids) * per == len(items)
    assert len(set(items.custom_ids)) == len(items)
    assert all(CUSTOM_ID_RE.fullmatch(c) for c in items.custom_ids)
    for k, item_id in enumerate(ids):
        owned = items.ids[k * per : (k + 1) * per]
        back = [item_of_request(design, r) for r in owned]
        assert [(item_id, key) for key in design.request_keys()] == back
    if design.judges:
        assert items.models == tuple(k.judge for k in design.request_keys()) * len(ids)


def test_request_ids_are_the_same_in_another_process() -> None:
    """A custom_id is a function of (job, item, judge, sample, order): a fresh interpreter agrees."""
    design = Design(template="{first} / {second} {q}", samples=3, pairwise=("a", "b"), judges=("j1", "j2"))
    rows = [expand_templated(design, 1, {"id": "item é/1", "q": "?", "a": "x", "b": "y"})]
    here = design_items(design, rows, job=JOB).custom_ids
    code = (
        "from judgecore.job.designs import *\n"
        "d = Design(template='{first} / {second} {q}', samples=3, pairwise=('a','b'), judges=('j1','j2'))\n"
        "r = [expand_templated(d, 1, {'id': 'item é/1', 'q': '?', 'a': 'x', 'b': 'y'})]\n"
        f"print('\\n'.join(design_items(d, r, job={JOB!r}).custom_ids))\n"
    )
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert list(here) == there.split()
    assert 12 == len(set(here))


# -- the fold -------------------------------------------------------------------------------------


def _record(key: RequestKey, status: str, value: Any, n: int) -> dict[str, Any]:
    return {
        "id": f"q1#{n}",
        "custom_id": f"c{n}",
        "status": status,
        "route": "batch",
        "text": f"answer {n}",
        "stop_reason": "end_turn",
        "model": key.judge or "m",
        "usage": {"input_tokens": 10, "output_tokens": n},
        "error": None if status != "pending" else {"class": "PENDING", "type": None, "message": "x"},
        "batch_id": None,
        "attempts": 1,
        "metadata": {"k": 1},
        "verdict": None if value is None else {"score": value},
    }


_values = st.one_of(st.none(), st.integers(1, 5), st.sampled_from(["A", "B", "tie", "PASS", "FAIL"]))


@settings(max_examples=60)
@given(design=S.designs(), data=st.data())
def test_the_fold_of_a_complete_set_of_answers_does_not_depend_on_their_arrival(
    design: Design, data: Any
) -> None:
    keys = design.request_keys()
    answers = {
        k: _record(k, data.draw(st.sampled_from(["succeeded", "succeeded", "miss"])), data.draw(_values), n)
        for n, k in enumerate(keys)
    }
    arrival = data.draw(st.permutations(keys))
    in_order = fold(design, answers, score="score")
    as_arrived = fold(design, {k: answers[k] for k in arrival}, score="score")
    assert in_order == as_arrived
    assert in_order["status"] != "pending"
    assert len(keys) == in_order["attempts"]
    assert sum(range(len(keys))) == in_order["usage"]["output_tokens"]


def test_an_item_is_pending_with_no_verdict_until_every_request_is_final() -> None:
    design = Design(samples=3)
    keys = design.request_keys()
    answers = {k: _record(k, "succeeded", 4, n) for n, k in enumerate(keys)}
    answers[keys[2]] = _record(keys[2], "pending", None, 2)
    line = fold(design, answers, score="score")
    assert ("pending", None, None) == (line["status"], line["verdict"], line["agreement"])


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["PASS", "FAIL", "FAIL"], "FAIL"),
        (["PASS", "FAIL"], "PASS"),  # a tie goes to the label seen first in sample order
        (["FAIL", "PASS", "PASS", "FAIL"], "FAIL"),
        ([3, 5, 4], 4),
        ([3, 4], 3.5),
        ([None, 2, None], 2),
        ([None, None], None),
    ],
)
def test_consensus_is_the_majority_label_or_the_median_number(values: list[Any], expected: Any) -> None:
    assert expected == consensus(values)


def test_samples_carry_each_answer_and_the_agreement_with_the_verdict() -> None:
    design = Design(samples=4)
    keys = design.request_keys()
    answers = {
        k: _record(k, "succeeded", v, n)
        for n, (k, v) in enumerate(zip(keys, ["B", "A", "A", "B"], strict=True))
    }
    line = fold(design, answers, score="score")
    assert {"score": "B"} == line["verdict"]  # two each: the first seen wins
    assert 0.5 == line["agreement"]
    assert ["B", "A", "A", "B"] == [s["verdict"]["score"] for s in line["samples"]]
    assert "judges" not in line


PAIR = Design(template="{first}|{second}", pairwise=("gpt", "claude"))


@pytest.mark.parametrize(
    ("choices", "winner", "consistent"),
    [
        (["A", "B"], "gpt", True),  # A first: A (gpt); B first: B (gpt again)
        (["B", "A"], "claude", True),
        (["tie", "TIE"], "tie", True),
        (["A", "A"], "tie", False),  # the first position both times: a position, not an answer
        (["B", "B"], "tie", False),
        (["A", "tie"], "tie", False),
    ],
)
def test_the_pairwise_rule_names_a_winner_only_when_both_orders_agree(
    choices: list[str], winner: str, consistent: bool
) -> None:
    vote = pairwise_vote(PAIR, choices, {"first": "A", "second": "B", "tie": "tie"})
    assert vote is not None
    assert (winner, consistent) == (vote["winner"], vote["consistent"])
    assert ["gpt", "claude"] == [o["first"] for o in vote["orders"]]


def test_pairwise_labels_map_the_judges_own_words() -> None:
    vote = pairwise_vote(PAIR, ["2", "1"], {"first": "1", "second": "2", "tie": "draw"})
    assert vote is not None and ("claude", True) == (vote["winner"], vote["consistent"])
    assert None is pairwise_vote(PAIR, ["2", "maybe"], {"first": "1", "second": "2", "tie": "draw"})


def test_a_panel_maps_each_judge_to_its_verdict_and_takes_the_median() -> None:
    design = Design(judges=("j1", "j2", "j3"))
    keys = design.request_keys()
    answers = {k: _record(k, "succeeded", v, n) for n, (k, v) in enumerate(zip(keys, [2, 5, 4], strict=True))}
    line = fold(design, answers, score="score")
    assert {"j1": {"score": 2}, "j2": {"score": 5}, "j3": {"score": 4}} == line["judges"]
    assert {"score": 4} == line["verdict"]


def test_a_panel_line_names_the_judge_whose_text_and_model_it_carries() -> None:
    """`verdict` is the panel's; `text`, `model` and `stop_reason` are one answer's: the line says whose."""
    design = Design(judges=("j2", "j1"), samples=2)
    keys = design.request_keys()
    answers = {k: _record(k, "succeeded", 3, n) for n, k in enumerate(keys)}
    line = fold(design, answers, score="score")
    assert ("j2", "j2", "answer 0") == (line["text_judge"], line["model"], line["text"])
    assert "text_judge" not in fold(Design(samples=2), _plain_answers(), score="score")


def _plain_answers() -> dict[RequestKey, dict[str, Any]]:
    keys = Design(samples=2).request_keys()
    return {k: _record(k, "succeeded", 3, n) for n, k in enumerate(keys)}


# -- templates ------------------------------------------------------------------------------------


def test_a_template_fills_the_rows_fields_and_the_rest_is_metadata() -> None:
    design = Design(template="Q: {question}\nA: {response} {{not a field}}")
    row = expand_templated(
        design, 7, {"id": "r1", "question": "2+2?", "response": 4, "model": "gpt", "human": 3}
    )
    ((rid, messages),) = row.requests
    assert "r1" == rid
    assert [{"role": "user", "content": "Q: 2+2?\nA: 4 {not a field}"}] == orjson.loads(messages)
    assert {"model": "gpt", "human": 3} == orjson.loads(row.metadata_json or b"null")


def test_a_row_without_a_field_the_template_names_is_an_error_naming_its_line() -> None:
    design = Design(template="Q: {question}\nA: {response}")
    with pytest.raises(InputError) as exc:
        expand_templated(design, 12, {"id": "r1", "question": "?"})
    assert 12 == exc.value.line
    assert "response" in exc.value.reason


def test_pairwise_fills_both_orders() -> None:
    row = expand_templated(PAIR, 1, {"id": "p", "gpt": "x", "claude": "y"})
    texts = [orjson.loads(m)[0]["content"] for _, m in row.requests]
    assert ["x|y", "y|x"] == texts
    assert ["p#ab", "p#ba"] == [r for r, _ in row.requests]


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"samples": 0}, "--samples"),
        ({"samples": 21}, "--samples"),
        ({"pairwise": ("a", "b")}, "--template"),
        ({"template": "{a} {b}", "pairwise": ("a", "b")}, "{first}"),
        ({"template": "{}"}, "name a field"),
        ({"template": "{a"}, "not a valid template"),
        ({"judges": ("j", "j")}, "twice"),
        ({"template": "{first}{second}", "pairwise": ("a", "a")}, "two different"),
    ],
)
def test_a_design_that_cannot_run_is_refused_with_the_reason(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(DesignError, match=words.replace("{", r"\{").replace("}", r"\}")):
        Design(**kwargs)


def test_a_pair_whose_choices_the_labels_do_not_map_says_so_not_that_nothing_answered() -> None:
    """Both orders answered and their verdicts were read, but the judge wrote `A` where the spec's
    labels say `1`: the miss names the choice and the labels (it said 'no request of the item has a
    verdict', sending the user to look for failed requests)."""
    keys = PAIR.request_keys()
    answers = {k: _record(k, "succeeded", "A", n) for n, k in enumerate(keys)}
    line = fold(PAIR, answers, score="score", labels={"first": "1", "second": "2", "tie": "tie"})
    assert ("miss", "VERDICT_UNPARSED") == (line["status"], line["error"]["class"])
    assert (
        "the judge's choice 'A' is none of the verdict spec's labels (first '1', second '2'"
        in (line["error"]["message"])
    )


def test_samples_whose_verdicts_lack_the_score_field_say_which_fields_they_have() -> None:
    design = Design(samples=2)
    keys = design.request_keys()
    answers = {k: {**_record(k, "succeeded", None, n), "verdict": {"grade": 4}} for n, k in enumerate(keys)}
    line = fold(design, answers, score="score")
    assert "miss" == line["status"]
    assert "no answer's verdict has the score field 'score' (its fields: 'grade')" == line["error"]["message"]


def test_an_item_missed_by_a_refusal_carries_the_refusals_stop_details() -> None:
    """A plain job's refused line carries `stop_details` (failures.md); a design's item whose line
    reports a request's refusal dropped them, keeping only the class."""
    keys = PAIR.request_keys()
    details = {"type": "refusal", "category": "cyber", "explanation": "declined"}
    refused = {
        **_record(keys[1], "miss", None, 1),
        "stop_reason": "refusal",
        "error": {"class": "MODEL_REFUSAL", "type": "cyber", "message": "declined"},
        "stop_details": details,
    }
    answers = {keys[0]: _record(keys[0], "succeeded", "A", 0), keys[1]: refused}
    line = fold(PAIR, answers, score="score")
    assert ("miss", "MODEL_REFUSAL") == (line["status"], line["error"]["class"])
    assert details == line["stop_details"]
    fine = fold(
        PAIR,
        {k: _record(k, "succeeded", v, n) for n, (k, v) in enumerate(zip(keys, "AB", strict=True))},
        score="score",
    )
    assert "stop_details" not in fine
