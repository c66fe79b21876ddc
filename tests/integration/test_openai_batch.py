"""`judgecore run --model openai:MODEL` on the batch route: the CLI, the real `openai` SDK over real HTTP,
the simulator speaking OpenAI's Files + Batch wire. One upload and one batch per sub-batch, each paid
once; a failed batch is sent again smaller; an expired or cancelled batch keeps what it completed;
harvested files are deleted unless `--keep-files`; each taxonomy row on the batch wire."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from pathlib import Path

import orjson

from adapters.simulator.openai_scenario import OpenAIScenario
from adapters.simulator.scenario import Scenario

from .conftest import Served, read_output, write_items

FILES, BATCHES = "/v1/files", "/v1/batches"


def _env(s: Served) -> dict[str, str]:
    env = s.env()
    env.update(OPENAI_BASE_URL=f"{s.base_url}/v1", OPENAI_API_KEY="sk-test")
    return env


def _run(s: Served, args: list[str]):
    from .conftest import cli_in_process

    return cli_in_process(["run", *args], env=_env(s))


def _items(tmp_path: Path, texts: list[str]) -> Path:
    rows = [{"id": f"i{k}", "messages": [{"role": "user", "content": t}]} for k, t in enumerate(texts)]
    return write_items(tmp_path / "items.jsonl", rows)


def _job(tmp_path: Path, n: int, *extra: str, texts: list[str] | None = None) -> list[str]:
    rubric = tmp_path / "rubric.txt"
    rubric.write_text("Grade the answer. Output 'Score: N' then one sentence.\n")
    items = _items(tmp_path, texts if texts is not None else [f"answer number {k}" for k in range(n)])
    return [
        str(items),
        "--state",
        str(tmp_path / "S"),
        "--rubric",
        str(rubric),
        "--model",
        "openai:gpt-5-mini",
        "--force-batch",
        "--poll-interval",
        "0.05",
        *extra,
    ]


def _uploads(s: Served) -> int:
    return len([e for e in s.sim.requests("POST", FILES) if e.status == 200])


def _creates(s: Served) -> int:
    return len([e for e in s.sim.requests("POST", BATCHES) if e.status == 200])


def _sent_ids(s: Served) -> Counter[str]:
    """custom_ids by how many batches that ran (not failed) held them."""
    return Counter(cid for b in s.sim.openai.batches() if b.status != "failed" for cid in b.custom_ids)


def _fast(**openai: object) -> Scenario:
    return Scenario(batch_seconds=0.25, openai=OpenAIScenario(**openai))  # type: ignore[arg-type]


def test_a_batch_job_end_to_end_one_upload_one_batch_each_and_a_rerun_sends_nothing(
    served, tmp_path: Path
) -> None:
    s = served(_fast())
    args = _job(tmp_path, 120, "--max-batch-requests", "50")
    first = _run(s, args)
    assert first.returncode == 0, first.stderr
    out = read_output(tmp_path / "S" / "output.jsonl")
    assert len(out) == 120 and {r["status"] for r in out} == {"succeeded"}
    assert {r["route"] for r in out} == {"batch"} and {r["model"] for r in out} == {"gpt-5-mini"}
    assert all(r["text"].startswith("Score:") for r in out)
    assert (_uploads(s), _creates(s)) == (3, 3)  # 50 + 50 + 20
    assert set(_sent_ids(s).values()) == {1} and len(_sent_ids(s)) == 120
    batches = s.sim.openai.batches()
    tags = {b.metadata["judgecore_job"] for b in batches if b.metadata}
    assert len(tags) == 1 and sorted(b.metadata["judgecore_sub_batch"] for b in batches if b.metadata) == [
        "1",
        "2",
        "3",
    ]
    again = _run(s, args)
    assert again.returncode == 0, again.stderr
    assert (_uploads(s), _creates(s)) == (3, 3)


def test_harvested_files_are_deleted_and_kept_with_keep_files(served, tmp_path: Path) -> None:
    s = served(_fast())
    assert _run(s, _job(tmp_path, 10)).returncode == 0
    files = s.sim.openai.files.values()
    assert files and all(f.deleted for f in files)  # input, output (and error) files all gone

    kept = served(_fast())
    other = tmp_path / "kept"
    other.mkdir()
    res = _run(kept, _job(other, 10, "--keep-files"))
    assert res.returncode == 0, res.stderr
    files = list(kept.sim.openai.files.values())
    assert len(files) >= 2 and not any(f.deleted for f in files)


def test_a_failed_batch_sends_its_requests_again_in_smaller_sub_batches(served, tmp_path: Path) -> None:
    """`token_limit_exceeded` after the create: nothing of it ran; its halves run, each id paid once."""
    s = served(_fast(batch_fail={1: "token_limit_exceeded"}))
    res = _run(s, _job(tmp_path, 40))
    assert res.returncode == 0, res.stderr
    out = read_output(tmp_path / "S" / "output.jsonl")
    assert {r["status"] for r in out} == {"succeeded"} and len(out) == 40
    batches = s.sim.openai.batches()
    assert [b.status for b in batches] == ["failed", "completed", "completed"]
    assert [len(b.custom_ids) for b in batches[1:]] == [20, 20]
    assert set(_sent_ids(s).values()) == {1}
    assert "failed validation" in res.stderr and "token_limit_exceeded" in res.stderr


def test_an_expired_batch_keeps_its_output_and_resends_what_its_error_file_says_expired(
    served, tmp_path: Path
) -> None:
    """Each batch expires with 3 of its lines done: those are kept (the output file), the rest (the error
    file's `batch_expired`) go in the next round's batch; none done is ever sent again."""
    s = served(Scenario(batch_seconds=4.0, expires_after=0.5))
    res = _run(s, _job(tmp_path, 30, "--grace", "5"))
    assert res.returncode == 3, res.stderr  # three rounds (--max-attempts 3), 21 left pending
    out = {r["id"]: r for r in read_output(tmp_path / "S" / "output.jsonl")}
    assert Counter(r["status"] for r in out.values()) == {"succeeded": 9, "pending": 21}
    batches = s.sim.openai.batches()
    assert [b.status for b in batches] == ["expired"] * 3
    for before, after in pairwise(batches):
        assert before.output_file_id and before.error_file_id  # both files read
        done = {
            orjson.loads(x)["custom_id"] for x in s.sim.openai.file_bytes(before.output_file_id).splitlines()
        }
        expired = [orjson.loads(x) for x in s.sim.openai.file_bytes(before.error_file_id).splitlines()]
        assert {e["error"]["code"] for e in expired} == {"batch_expired"}
        assert len(done) == 3 and not done & set(after.custom_ids)
        assert set(after.custom_ids) == {e["custom_id"] for e in expired}


def test_each_taxonomy_row_on_the_batch_wire(served, tmp_path: Path) -> None:
    """Lines of the output and the error file, each classified as on the sync route: length, refusal,
    context overflow are misses sent once; another 400 is quarantined; 429, 500 and 503 lines are
    retried in the next round and succeed."""
    s = served(_fast())
    texts = [
        "fine [[sim:max_tokens]]",
        "please [[sim:refusal]]",
        "long [[sim:context]]",
        "plain",
        "odd [[sim:invalid]]",
        "busy [[sim:rate_limit]]",
        "broken [[sim:api_error]]",
        "full [[sim:overloaded]]",
    ]
    res = _run(s, _job(tmp_path, 0, texts=texts))
    assert res.returncode == 0, res.stderr
    by_id = {r["id"]: r for r in read_output(tmp_path / "S" / "output.jsonl")}
    got = {k: (r["status"], (r.get("error") or {}).get("class")) for k, r in by_id.items()}
    assert got == {
        "i0": ("miss", "MODEL_TRUNCATION"),
        "i1": ("miss", "MODEL_REFUSAL"),
        "i2": ("miss", "MODEL_CONTEXT"),
        "i3": ("succeeded", None),
        "i4": ("quarantined", "INVALID_REQUEST"),
        "i5": ("succeeded", None),
        "i6": ("succeeded", None),
        "i7": ("succeeded", None),
    }
    assert by_id["i0"]["text"]  # a truncated answer keeps its text
    assert {r["route"] for r in by_id.values()} == {"batch"}
    sent = _sent_ids(s)
    assert sorted(sent.values()) == [1, 1, 1, 1, 1, 2, 2, 2]  # only the 429 / 500 / 503 lines went again


def test_content_filter_on_the_batch_wire_is_a_refusal_miss(served, tmp_path: Path) -> None:
    s = served(Scenario(batch_seconds=0.25, openai=OpenAIScenario(content_filter_rate=1.0)))
    res = _run(s, _job(tmp_path, 3))
    assert res.returncode == 0, res.stderr
    out = read_output(tmp_path / "S" / "output.jsonl")
    assert {(r["status"], r["error"]["class"], r["error"]["type"]) for r in out} == {
        ("miss", "MODEL_REFUSAL", "content_filter")
    }


def test_a_refused_key_on_the_batch_route_is_fatal_and_uploads_nothing(served, tmp_path: Path) -> None:
    from .conftest import cli_in_process

    s = served(_fast())
    env = _env(s)
    env["OPENAI_API_KEY"] = "sk-bad"
    res = cli_in_process(["run", *_job(tmp_path, 5)], env=env)
    assert res.returncode == 4, res.stderr
    assert _uploads(s) == 0 and _creates(s) == 0
    out = read_output(tmp_path / "S" / "output.jsonl")
    assert {r["status"] for r in out} == {"pending"}


def test_a_cancelled_batch_keeps_what_it_completed_and_a_rerun_sends_only_the_rest(
    served, tmp_path: Path
) -> None:
    """`judgecore cancel` on an OpenAI job cancels its live batch through the OpenAI port; the next run
    harvests what it completed (its output file) and sends only the cancelled rest."""
    from .conftest import cli_in_process

    s = served(Scenario(batch_seconds=2.0, cancel_seconds=0.05))
    args = _job(tmp_path, 40)
    first = _run(s, [*args, "--deadline", "1s"])
    assert first.returncode == 3, first.stderr  # the deadline left the batch live, its ids pending
    cancel = cli_in_process(["cancel", "--state", str(tmp_path / "S")], env=_env(s))
    assert cancel.returncode == 0, cancel.stderr
    assert "canceled 1 live batch" in cancel.stderr
    again = _run(s, args)
    assert again.returncode == 0, again.stderr
    out = read_output(tmp_path / "S" / "output.jsonl")
    assert {r["status"] for r in out} == {"succeeded"} and len(out) == 40
    first_batch, *rest = s.sim.openai.batches()
    assert first_batch.status == "cancelled"
    done = {
        orjson.loads(x)["custom_id"]
        for x in s.sim.openai.file_bytes(first_batch.output_file_id or "").splitlines()
    }
    assert 0 < len(done) < 40
    resent = Counter(c for b in rest for c in b.custom_ids)
    assert not done & set(resent) and len(done) + len(resent) == 40 and set(resent.values()) == {1}
