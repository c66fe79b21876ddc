"""Data in and out, end to end: every input format and every output format through the CLI and the
real SDK over HTTP to the simulator, and an inspect_ai log made by inspect_ai itself, judged and
written back."""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from adapters.simulator.scenario import Scenario
from tests.data.tables import FORMATS, rows, write
from tests.integration.conftest import read_output

pytestmark = pytest.mark.integration

PATTERN = {"pattern": r"^Score: (?P<score>\d+)"}
OUTPUTS = ("out.jsonl", "out.csv", "out.parquet")


def _read_back(path: Path) -> list[dict[str, Any]]:
    """An output file as records again (CSV: nested fields parsed from their JSON text, empty = null)."""
    if path.suffix == ".jsonl":
        return read_output(path)
    if path.suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as f:
            out = []
            for r in csv.DictReader(f):
                rec: dict[str, Any] = {}
                for k, v in r.items():
                    if k == "stop_details" and v == "":
                        continue  # a column for the records that carry it (refusals): none here
                    if v == "":
                        rec[k] = None
                    elif k in (
                        "id",
                        "custom_id",
                        "status",
                        "route",
                        "text",
                        "stop_reason",
                        "model",
                        "batch_id",
                    ):
                        rec[k] = v
                    else:
                        rec[k] = orjson.loads(v)
                out.append(rec)
            return out
    import pyarrow.parquet as pq

    rows = pq.read_table(path).to_pylist()
    for r in rows:  # as in CSV: a column for the records that carry it (refusals), null elsewhere
        if "stop_details" in r and r["stop_details"] is None:
            del r["stop_details"]
    return rows


def test_every_format_is_the_same_job_and_every_writer_writes_its_rows(served, tmp_path):
    """The 200 rows as JSONL are judged once; the same rows as gzip, CSV, Parquet and a saved
    dataset, run on the same state dir, are the same items (a changed digest would be exit 2) and
    send nothing; each output format reads back to the same records."""
    srv = served(Scenario(seed=11, batch_seconds=0.2))
    items = rows(200)
    verdict = tmp_path / "verdict.json"
    verdict.write_bytes(orjson.dumps(PATTERN))
    state = tmp_path / "s"
    first = write(tmp_path / "items", "jsonl", items)
    base = ["--state", str(state), "--verdict", str(verdict), "--force-batch", "--poll-interval", "0.1"]
    res = srv.cli(["run", str(first), *base, "--out", str(tmp_path / "out.jsonl")])
    assert 0 == res.returncode, res.stderr
    expected = read_output(tmp_path / "out.jsonl")
    assert 200 == len(expected) and {"succeeded"} == {r["status"] for r in expected}
    assert [r["id"] for r in items] == [r["id"] for r in expected]
    assert all(r["verdict"] is not None for r in expected)
    sent = len(srv.sim.log)
    for kind in FORMATS[1:]:
        path = write(tmp_path / f"items-{kind.replace('.', '-')}", kind, items)
        for name in OUTPUTS:
            out = tmp_path / kind / name
            res = srv.cli(["run", str(path), *base, "--out", str(out)])
            assert 0 == res.returncode, (kind, name, res.stderr)
            assert expected == _read_back(out), (kind, name)
    assert sent == len(srv.sim.log)  # nothing was sent again: the same custom_ids, the same bodies


def test_the_first_sub_batch_of_each_format_carries_the_same_bodies(served, tmp_path):
    """On fresh state dirs (each its own job key), every format's batch params are byte-identical."""
    srv = served(Scenario(seed=12, batch_seconds=0.1))
    items = rows(40)
    params = {}
    for kind in FORMATS:
        path = write(tmp_path / f"items-{kind.replace('.', '-')}", kind, items)
        state = tmp_path / f"s-{kind}"
        res = srv.cli(["run", str(path), "--state", str(state), "--force-batch", "--poll-interval", "0.1"])
        assert 0 == res.returncode, res.stderr
        params[kind] = [orjson.dumps(p, option=orjson.OPT_SORT_KEYS) for p in srv.sim.batches[-1].params]
    assert 40 == len(params["jsonl"])
    assert all(params["jsonl"] == p for p in params.values())


MAKE_LOG = """
import sys
from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.solver import generate

samples = [
    Sample(id=f"q{k}", input=f"What is {k} + {k}?", target=str(2 * k), metadata={"level": k % 2})
    for k in range(3)
]
outputs = []
for k in range(6):
    out = ModelOutput.from_content(model="mockllm/model", content=f"It is {k}.")
    # usage given: mockllm would otherwise count tokens with tiktoken, which downloads its tables
    out.usage = ModelUsage(input_tokens=8, output_tokens=4, total_tokens=12)
    outputs.append(out)
model = get_model("mockllm/model", custom_outputs=outputs)
[log] = inspect_eval(
    Task(dataset=samples, solver=generate()), model=model, epochs=2, score=False,
    log_dir=sys.argv[1], display="none",
)
assert log.status == "success", log.error
print(log.location)
"""


@pytest.fixture(scope="module")
def inspect_log(tmp_path_factory) -> Path:
    """A log made by inspect_ai itself (its mockllm model, no scorer), once for the module: in a child
    process, so that inspect_ai's eval leaves nothing of its own set up in this one."""
    import subprocess

    logs = tmp_path_factory.mktemp("inspect") / "logs"
    made = subprocess.run(
        [sys.executable, "-c", MAKE_LOG, str(logs)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert 0 == made.returncode, made.stderr
    return Path(made.stdout.strip().splitlines()[-1].removeprefix("file://"))


@pytest.mark.slow
@pytest.mark.parametrize("fmt", [".eval", ".json"])
def test_an_inspect_log_is_judged_and_written_back_with_a_score_per_sample(
    served, tmp_path, fmt, inspect_log
):
    """inspect_ai runs its mockllm model with no scorer; judgecore judges every sample and epoch,
    `export` writes the log back, and inspect_ai reads a judgecore score on each sample."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log_path = inspect_log
    if fmt == ".json":  # the same log in inspect_ai's other format
        json_path = tmp_path / "log.json"
        write_eval_log(read_eval_log(str(log_path)), str(json_path), format="json")
        log_path = json_path
    assert all(not s.scores for s in read_eval_log(str(log_path)).samples)

    srv = served(Scenario(seed=13, batch_seconds=0.1))
    verdict = tmp_path / "verdict.json"
    verdict.write_bytes(orjson.dumps(PATTERN))
    state = tmp_path / "s"
    run = [
        "run",
        "--from-inspect",
        str(log_path),
        "--state",
        str(state),
        "--verdict",
        str(verdict),
        "--force-batch",
        "--poll-interval",
        "0.1",
    ]
    res = srv.cli(run)
    assert 0 == res.returncode, res.stderr
    records = read_output(state / "output.jsonl")
    assert [f"q{k}:{e}" for k in range(3) for e in (1, 2)] == sorted(r["id"] for r in records)
    first = next(r for r in records if r["id"] == "q1:1")
    assert {"level": 1, "input": "What is 1 + 1?", "target": "2", "sample_id": "q1", "epoch": 1} == {
        k: v for k, v in first["metadata"].items() if k != "output"
    }
    assert first["metadata"]["output"].startswith("It is ")
    [batch] = srv.sim.batches
    prompt = batch.params[batch.custom_ids.index(first["custom_id"])]["messages"][0]["content"]
    assert (
        prompt
        == f"Question:\nWhat is 1 + 1?\n\nResponse:\n{first['metadata']['output']}\n\nReference answer:\n2"
    )

    sent = len(srv.sim.log)
    again = srv.cli(run)
    assert 0 == again.returncode, again.stderr
    assert sent == len(srv.sim.log)  # a rerun of the judge job sends nothing

    out = tmp_path / f"scored{fmt}"
    res = srv.cli(["export", "--state", str(state), "--to-inspect", str(out)])
    assert 0 == res.returncode, res.stderr
    scored = read_eval_log(str(out))
    by_id = {r["id"]: r for r in records}
    assert 6 == len(scored.samples)
    for sample in scored.samples:
        record = by_id[f"{sample.id}:{sample.epoch}"]
        score = sample.scores["judgecore"]
        assert record["verdict"]["score"] == score.value
        assert record["text"] == score.explanation
        assert record["verdict"] == score.metadata["verdict"]
        assert sample.output.completion == record["metadata"]["output"]  # the original run is kept
    [ours] = [s for s in scored.results.scores if s.name == "judgecore"]
    values = [by_id[f"{s.id}:{s.epoch}"]["verdict"]["score"] for s in scored.samples]
    assert pytest.approx(sum(values) / len(values)) == ours.metrics["mean"].value
