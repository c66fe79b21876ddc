"""Judge designs through the real SDK over real HTTP against the simulator: a pairwise job with a
position-biased judge, a 3-judge panel's spend, and a `--samples 5` job killed and resumed."""

from __future__ import annotations

import math
import re
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from adapters.checkpoint.reads import spend_by_judge, spend_from_store
from adapters.checkpoint.store import Store
from adapters.simulator.scenario import Scenario
from judgecore.decide.spend import answer_cost, price_for
from judgecore.results.outcomes import Usage

from .conftest import Served, outcomes_so_far, read_output, write_items

pytestmark = pytest.mark.integration

PAIRWISE_TEMPLATE = """Which assistant answered the user's question better?

[User Question]
{question}

[The Start of Assistant A's Answer]
{first}
[The End of Assistant A's Answer]

[The Start of Assistant B's Answer]
{second}
[The End of Assistant B's Answer]

Say "Winner: A", "Winner: B" or "Winner: tie", then why.
"""

GRADE_TEMPLATE = (
    "Question: {question}\nResponse: {response}\nGrade the response: 'Score: N' on a 1-10 scale.\n"
)


def completions(n: int) -> list[dict[str, object]]:
    """A completions file with its own field names: two systems' answers per question."""
    return [
        {
            "id": f"q{i}",
            "question": f"What is {i} times 7?",
            "model_a": f"It is {i * 7}.",
            "model_b": f"{i * 7}, because {i} sevens make {i * 7}.",
            "human": i % 5,
        }
        for i in range(n)
    ]


def test_a_pairwise_job_with_a_biased_judge_shows_the_position_consistency_the_knob_implies(
    tmp_path: Path, served: Callable[[Scenario], Served]
) -> None:
    """With a share P of answers naming the first position whatever the content, an item judged in
    both orders is consistent with probability 1 - P (the other order names the other answer)."""
    bias, n = 0.3, 400
    s = served(Scenario(position_bias=bias, batch_seconds=0.1))
    items = write_items(tmp_path / "pairs.jsonl", completions(n))
    (tmp_path / "pair.txt").write_text(PAIRWISE_TEMPLATE)
    state = tmp_path / "state"
    args = ["run", str(items), "--state", str(state), "--template", str(tmp_path / "pair.txt")]
    r = s.cli([*args, "--pairwise", "model_a,model_b", "--force-batch", "--poll-interval", "0.05"])
    assert 0 == r.returncode, r.stderr
    lines = read_output(state / "output.jsonl")
    assert n == len(lines)
    assert 2 * n == sum(len(b.custom_ids) for b in s.sim.batches)  # both orders of every item, once
    verdicts = [line["verdict"] for line in lines]
    assert all(["model_a", "model_b"] == [o["first"] for o in v["orders"]] for v in verdicts)
    consistency = sum(v["consistent"] for v in verdicts) / n
    # the share of n items each consistent with probability 1 - P: within 4 standard errors (0.092 at
    # n=400), which fails about once in 16,000 runs and still tells P=0.3 from no bias or from P=0.5
    assert abs((1 - bias) - consistency) <= 4 * math.sqrt(bias * (1 - bias) / n), consistency
    # two different answers: a consistent item names one of them; an inconsistent one is a tie
    assert all((v["winner"] != "tie") == v["consistent"] for v in verdicts)
    first_wins = sum(o["choice"] == o["first"] for v in verdicts for o in v["orders"]) / (2 * n)
    share = bias + (1 - bias) / 2  # an item's two orders may not be independent: n, not 2n, draws
    assert abs(share - first_wins) <= 4 * math.sqrt(share * (1 - share) / n), first_wins
    assert {"human"} == set(lines[0]["metadata"])  # the fields the template does not name


def test_a_three_judge_panel_records_per_judge_spend_that_sums_to_the_jobs_spend(
    tmp_path: Path, served: Callable[[Scenario], Served]
) -> None:
    judges = ("claude-haiku-4-5", "claude-sonnet-4-6", "claude-opus-4-6")
    s = served(Scenario())
    rows = [
        {"id": f"r{i}", "question": f"2+{i}?", "response": str(2 + i), "human_score": i % 4}
        for i in range(30)
    ]
    items = write_items(tmp_path / "graded.jsonl", rows)
    (tmp_path / "grade.txt").write_text(GRADE_TEMPLATE)
    (tmp_path / "verdict.json").write_text(orjson.dumps({"pattern": r"Score: (?P<score>\d+)"}).decode())
    state = tmp_path / "state"
    judge_flags = [w for j in judges for w in ("--judge", j)]
    r = s.cli(
        [
            "run",
            str(items),
            "--state",
            str(state),
            "--template",
            str(tmp_path / "grade.txt"),
            "--verdict",
            str(tmp_path / "verdict.json"),
            "--force-sync",
            *judge_flags,
        ]
    )
    assert 0 == r.returncode, r.stderr
    lines = read_output(state / "output.jsonl")
    assert 30 == len(lines)
    assert all(set(judges) == set(line["judges"]) for line in lines)
    # `text` and `model` are one judge's answer, and the line says whose (the first judge's)
    assert {judges[0]} == {line["text_judge"] for line in lines}
    assert all(line["model"].startswith(judges[0]) for line in lines)
    for line in lines:  # the verdict is the panel's median
        scores = sorted(v["score"] for v in line["judges"].values())
        assert {"score": scores[1]} == line["verdict"]
    # what the API billed, per model it was asked of: each judge answered every item once
    billed = s.sim.billed_by_model
    assert Counter({j: 30 for j in judges}) == Counter(m for m, _, _ in billed)
    fields = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")

    def cost(model: str, route: str, u: dict[str, int]) -> float:
        price = price_for(model)
        assert price is not None
        return answer_cost(Usage(**{f: int(u.get(f) or 0) for f in fields}), price, route)

    truth = {j: sum(cost(m, route, u) for m, route, u in billed if m == j) for j in judges}
    store = Store.open_readonly(state)
    try:
        per_judge = spend_by_judge(store)
        job = spend_from_store(store)
    finally:
        store.close()
    assert set(judges) == set(per_judge)
    for j in judges:
        spent = per_judge[j]
        assert spent is not None
        assert truth[j] == pytest.approx(spent.spent, rel=1e-9)
    assert job.spend_usd == pytest.approx(
        sum(p.spent for p in per_judge.values() if p is not None), rel=1e-12
    )
    assert len({round(t, 9) for t in truth.values()}) == 3  # each judge at its own prices


@pytest.mark.slow
def test_a_killed_and_resumed_samples_job_pays_for_each_request_once(
    tmp_path: Path, served: Callable[[Scenario], Served]
) -> None:
    n, k = 60, 5
    s = served(
        Scenario(batch_seconds=0.25, results_chunk_lines=20, results_line_delay=0.05, sample_spread=0.3)
    )
    rows = [{"id": f"r{i}", "question": f"2+{i}?", "response": str(2 + i)} for i in range(n)]
    items = write_items(tmp_path / "graded.jsonl", rows)
    (tmp_path / "grade.txt").write_text(GRADE_TEMPLATE)
    (tmp_path / "verdict.json").write_text(orjson.dumps({"pattern": r"Score: (?P<score>\d+)"}).decode())
    state = tmp_path / "state"
    args = [
        "run",
        str(items),
        "--state",
        str(state),
        "--template",
        str(tmp_path / "grade.txt"),
        "--verdict",
        str(tmp_path / "verdict.json"),
        "--samples",
        str(k),
        "--force-batch",
        "--max-batch-requests",
        "100",
        "--poll-interval",
        "0.05",
    ]
    first = s.spawn(args)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and first.poll() is None and len(s.sim.batches) < 3:
        time.sleep(0.02)
    assert first.poll() is None, first.stderr.read() if first.stderr else ""
    first.send_signal(signal.SIGKILL)  # with its sub-batches created and live on the API side
    first.wait(timeout=10)
    assert outcomes_so_far(state) < n * k

    r = s.cli(["run", "--state", str(state)])  # resumes the job as it was started
    assert 0 == r.returncode, r.stderr
    submitted = Counter(s.sim.submitted_custom_ids())
    assert n * k == len(submitted)
    assert {1} == set(submitted.values())  # no request paid for twice
    assert 3 == len(s.sim.batches)  # the resume polled the live sub-batches, it made none anew
    assert n * k == len(s.sim.billed)
    lines = read_output(state / "output.jsonl")
    assert n == len(lines)
    assert all(k == len(line["samples"]) for line in lines)
    assert all(line["status"] == "succeeded" and line["verdict"] is not None for line in lines)
    agreement = [line["agreement"] for line in lines]
    assert min(agreement) < 1.0  # the samples disagree (the knob), and the output says how much
    assert all(0.0 < a <= 1.0 for a in agreement)


def test_a_panel_stopped_by_its_budget_on_the_sync_route_counts_requests_not_items(
    tmp_path: Path, served: Callable[[Scenario], Served]
) -> None:
    """The budget line counts the requests left (two a item for a panel of two), so it says
    requests: it said `N items left pending` beside the run's `pending M` items."""
    s = served(Scenario())
    rows = [{"id": f"r{i}", "question": f"2+{i}?", "response": str(2 + i)} for i in range(10)]
    items = write_items(tmp_path / "graded.jsonl", rows)
    (tmp_path / "grade.txt").write_text(GRADE_TEMPLATE)
    state = tmp_path / "state"
    args = ["run", str(items), "--state", str(state), "--template", str(tmp_path / "grade.txt")]
    panel = ["--judge", "claude-haiku-4-5", "--judge", "claude-opus-4-6", "--force-sync"]
    r = s.cli([*args, *panel, "--budget", "0.0001"])
    assert 3 == r.returncode, r.stderr
    lines = [line for line in r.stderr.splitlines() if "left pending need" in line]
    assert 1 == len(lines), r.stderr
    assert "20 requests left pending" in lines[0], lines[0]
    assert "pending 10;" in r.stdout + r.stderr


def test_a_panel_started_without_max_tokens_resumes_with_the_default_it_had(
    tmp_path: Path, served: Callable[[Scenario], Served]
) -> None:
    """A job started without --max-tokens resumes with the max_tokens its manifest holds, though
    this judgecore's default differs (a panel with a judge that thinks: 16,000, where an older
    judgecore gave it 1,024): the rerun is the same job, not exit 2 telling the user to leave out
    a flag they left out."""
    s = served(Scenario())
    rows = [{"id": f"r{i}", "question": f"2+{i}?", "response": str(2 + i)} for i in range(4)]
    items = write_items(tmp_path / "graded.jsonl", rows)
    (tmp_path / "grade.txt").write_text(GRADE_TEMPLATE)
    state = tmp_path / "state"
    args = ["run", str(items), "--state", str(state), "--template", str(tmp_path / "grade.txt")]
    panel = ["--judge", "claude-sonnet-4-6", "--judge", "claude-fable-5", "--force-sync"]
    first = s.cli([*args, *panel, "--max-tokens", "1024"])
    assert first.returncode in (0, 3), first.stderr
    store = Store.open(state)  # as an older judgecore remembered it: started without --max-tokens
    try:
        kept = store.get_meta("invocation")
        kept["flags"]["max_tokens"] = None
        store.set_meta("invocation", kept)
    finally:
        store.close()
    sent = len(s.sim.message_requests())
    for again in (["run", "--state", str(state)], [*args, *panel]):
        r = s.cli(again)
        assert "another job" not in r.stderr and r.returncode in (0, 3), r.stderr
    assert sent == len(s.sim.message_requests()), "every request was final: nothing sent again"


def test_a_pairwise_job_whose_labels_miss_the_judges_words_says_so_per_item_and_counts_items(
    tmp_path: Path, served: Callable[[Scenario], Served]
) -> None:
    """The judge writes `Winner: A` (or B); the spec's labels say `1` and `2`. Every item is a miss whose
    message names the choice and the labels, and the closing warning (of `run` and of `summary`)
    counts items, which is what its figures are (each item folds two answers)."""
    s = served(Scenario())
    items = write_items(tmp_path / "pairs.jsonl", completions(5))
    (tmp_path / "pair.txt").write_text(PAIRWISE_TEMPLATE)
    spec = {"pattern": r"Winner: (?P<score>\w+)", "labels": {"first": "1", "second": "2", "tie": "tie"}}
    (tmp_path / "labels.json").write_text(orjson.dumps(spec).decode())
    state = tmp_path / "state"
    args = ["run", str(items), "--state", str(state), "--template", str(tmp_path / "pair.txt")]
    r = s.cli([*args, "--pairwise", "model_a,model_b", "--verdict", str(tmp_path / "labels.json")])
    assert 0 == r.returncode, r.stderr
    lines = read_output(state / "output.jsonl")
    assert {"miss"} == {line["status"] for line in lines}
    for line in lines:
        message = line["error"]["message"]
        assert re.match(r"the judge's choice '(A|B|tie)' is none of the verdict spec's labels", message)
    assert "warning: 5 of 5 items have no readable verdict" in r.stderr, r.stderr
    summary = s.cli(["summary", "--state", str(state)])
    assert "warning: 5 of 5 items have no readable verdict" in summary.stderr, summary.stderr


def test_a_panel_whose_unpriced_judge_answered_nothing_still_says_what_it_spent(
    tmp_path: Path, served: Callable[[Scenario], Served]
) -> None:
    """The API refused every request of a judge judgecore has no price for (an unknown model: the run
    stops, nothing of it billed); the other judge's answers were paid. The spend was `unknown`; it
    is what the priced judge's answers cost, the unpriced judge's $0."""
    s = served(Scenario(batch_seconds=0.1))
    rows = [{"id": f"r{i}", "question": f"2+{i}?", "response": str(2 + i)} for i in range(4)]
    items = write_items(tmp_path / "graded.jsonl", rows)
    (tmp_path / "grade.txt").write_text(GRADE_TEMPLATE)
    state = tmp_path / "state"
    args = ["run", str(items), "--state", str(state), "--template", str(tmp_path / "grade.txt")]
    panel = ["--judge", "claude-haiku-4-5", "--judge", "claude-nonexistent-9", "--allow-unknown-model"]
    r = s.cli([*args, *panel, "--force-batch", "--poll-interval", "0.05"])
    assert 4 == r.returncode, r.stderr  # the unknown model is a fatal configuration
    billed = [u for m, _, u in s.sim.billed_by_model]
    assert billed and {"claude-haiku-4-5"} == {m for m, _, _ in s.sim.billed_by_model}
    price = price_for("claude-haiku-4-5")
    assert price is not None
    fields = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    truth = sum(answer_cost(Usage(**{f: int(u.get(f) or 0) for f in fields}), price, "batch") for u in billed)
    store = Store.open_readonly(state)
    try:
        money = spend_from_store(store)
        per_judge = spend_by_judge(store)
    finally:
        store.close()
    assert money.spend_usd == pytest.approx(truth, rel=1e-9)
    assert per_judge["claude-nonexistent-9"] is not None and 0 == per_judge["claude-nonexistent-9"].spent
    assert "spend so far unknown" not in r.stderr
