"""`judgecore run --model openai:MODEL` on the sync route: the CLI, the real `openai` SDK over real HTTP,
the simulator speaking OpenAI's wire. Output lines have the Anthropic jobs' shape; the taxonomy is the
one `classify` gives; a rerun pays nothing twice; bad names are exit 2 with nothing sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.simulator.openai_scenario import OpenAIScenario
from adapters.simulator.scenario import Scenario

from .conftest import Served, read_output, write_items

CHAT = "/v1/chat/completions"


def _env(s: Served, key: str = "sk-test") -> dict[str, str]:
    env = s.env()
    env.update(OPENAI_BASE_URL=f"{s.base_url}/v1", OPENAI_API_KEY=key)
    return env


def _run(s: Served, args: list[str], key: str = "sk-test"):
    from .conftest import cli_in_process

    return cli_in_process(["run", *args], env=_env(s, key))


def _chats(s: Served) -> int:
    return len(s.sim.requests("POST", CHAT))


def _items(tmp_path: Path, texts: list[str]) -> Path:
    rows = [{"id": f"i{k}", "messages": [{"role": "user", "content": t}]} for k, t in enumerate(texts)]
    return write_items(tmp_path / "items.jsonl", rows)


def _job(tmp_path: Path, items: Path, *extra: str) -> list[str]:
    rubric = tmp_path / "rubric.txt"
    rubric.write_text("Grade the answer. Output 'Score: N' then one sentence.\n")
    return [str(items), "--state", str(tmp_path / "S"), "--rubric", str(rubric), *extra]


def test_a_300_item_sync_job_succeeds_and_a_rerun_sends_nothing(served, tmp_path: Path) -> None:
    s = served(Scenario())
    items = _items(tmp_path, [f"answer number {k}" for k in range(300)])
    args = _job(tmp_path, items, "--model", "openai:gpt-5-mini", "--force-sync")
    first = _run(s, args)
    assert first.returncode == 0, first.stderr
    out = read_output(tmp_path / "S" / "output.jsonl")
    assert len(out) == 300 and {r["status"] for r in out} == {"succeeded"}
    assert {r["route"] for r in out} == {"sync"} and {r["model"] for r in out} == {"gpt-5-mini"}
    assert all(r["text"].startswith("Score:") and r["usage"]["output_tokens"] > 0 for r in out)
    assert "verdict" in out[0]
    sent = _chats(s)
    assert sent == 300  # each request paid once
    # the simulator is as strict as OpenAI (gpt-5 refuses `max_tokens`): every body was taken
    assert {e.status for e in s.sim.requests("POST", CHAT)} == {200}
    again = _run(s, args)
    assert again.returncode == 0, again.stderr
    assert _chats(s) == sent
    assert "spend so far $" in first.stderr + first.stdout


def test_below_the_threshold_the_job_goes_sync_without_force(served, tmp_path: Path) -> None:
    s = served(Scenario())
    items = _items(tmp_path, [f"answer {k}" for k in range(20)])
    res = _run(s, _job(tmp_path, items, "--model", "openai:gpt-5-mini"))
    assert res.returncode == 0, res.stderr
    out = read_output(tmp_path / "S" / "output.jsonl")
    assert [r["status"] for r in out] == ["succeeded"] * 20


def test_an_openai_job_is_routed_by_its_size_at_the_tpm_its_probe_reads(served, tmp_path: Path) -> None:
    """The threshold is `--sync-threshold` at 4,000,000 tokens per minute, scaled by the TPM read: at
    2,000,000 TPM a threshold of 30 is 15, so 20 requests go to batches; at 150,000,000 it is 1,125."""
    items = _items(tmp_path, [f"answer {k}" for k in range(20)])
    low = served(Scenario(batch_seconds=0.25, openai=OpenAIScenario(advertised_tpm=2_000_000)))
    args = [
        *_job(tmp_path, items, "--model", "openai:gpt-5-mini"),
        "--sync-threshold",
        "30",
        "--poll-interval",
        "0.05",
    ]
    res = _run(low, args)
    assert res.returncode == 0, res.stderr
    out = read_output(tmp_path / "S" / "output.jsonl")
    assert len(out) == 20 and {r["status"] for r in out} == {"succeeded"}
    assert "tokens/min limit 2,000,000" in res.stderr
    assert "threshold 15 at TPM 2,000,000 (read)" in res.stderr and low.sim.requests("POST", "/v1/batches")
    high = served(Scenario(openai=OpenAIScenario(advertised_tpm=150_000_000)))
    res = _run(high, [str(tmp_path / "S2") if a == str(tmp_path / "S") else a for a in args])
    assert res.returncode == 0, res.stderr
    assert "threshold 1,125 at TPM 150,000,000 (read)" in res.stderr
    assert not high.sim.requests("POST", "/v1/batches")


def test_truncation_refusal_and_context_overflow_are_misses(served, tmp_path: Path) -> None:
    s = served(Scenario())
    texts = ["fine [[sim:max_tokens]]", "please [[sim:refusal]]", "long [[sim:context]]", "plain"]
    res = _run(s, _job(tmp_path, _items(tmp_path, texts), "--model", "openai:gpt-5-mini", "--force-sync"))
    assert res.returncode == 0, res.stderr
    by_id = {r["id"]: r for r in read_output(tmp_path / "S" / "output.jsonl")}
    assert by_id["i0"]["status"] == "miss" and "MODEL_TRUNCATION" in str(by_id["i0"]["error"])
    assert by_id["i0"]["text"]  # the truncated text is kept
    assert by_id["i1"]["status"] == "miss" and "MODEL_REFUSAL" in str(by_id["i1"]["error"])
    assert by_id["i2"]["status"] == "miss" and "MODEL_CONTEXT" in str(by_id["i2"]["error"])
    assert by_id["i3"]["status"] == "succeeded"


def test_a_429_is_retried(served, tmp_path: Path) -> None:
    s = served(Scenario())
    texts = ["first [[sim:rate_limit]]", "second"]
    res = _run(s, _job(tmp_path, _items(tmp_path, texts), "--model", "openai:gpt-5-mini", "--force-sync"))
    assert res.returncode == 0, res.stderr
    out = read_output(tmp_path / "S" / "output.jsonl")
    assert [r["status"] for r in out] == ["succeeded", "succeeded"]
    assert out[0]["attempts"] == 2 and _chats(s) == 3


def test_a_bad_key_is_exit_4_and_no_key_is_printed(served, tmp_path: Path) -> None:
    s = served(Scenario())
    items = _items(tmp_path, ["one", "two"])
    res = _run(s, _job(tmp_path, items, "--model", "openai:gpt-5-mini", "--force-sync"), key="sk-bad")
    assert res.returncode == 4, res.stderr
    assert "sk-bad" not in res.stdout + res.stderr


@pytest.mark.parametrize(
    ("model", "says"),
    [
        ("opneai:gpt-5-mini", "the providers are anthropic:, openai:"),
        ("openai:gpt-9-ultra", "not a model OpenAI lists"),
    ],
)
def test_a_bad_judge_name_is_exit_2_with_nothing_sent(served, tmp_path: Path, model: str, says: str) -> None:
    s = served(Scenario())
    res = _run(s, _job(tmp_path, _items(tmp_path, ["one"]), "--model", model, "--force-sync"))
    assert res.returncode == 2, res.stderr
    assert says in res.stderr
    assert len(s.sim.log) == 0


def test_an_openai_dry_run_caps_a_sub_batch_at_190_mb_whatever_max_batch_bytes_says(
    served, tmp_path: Path
) -> None:
    s = served(Scenario())
    items = _items(tmp_path, [f"answer {k}" for k in range(30)])
    for extra in ([], ["--max-batch-bytes", "256000000", "--max-batch-requests", "50000"]):
        dry = _run(
            s, [*_job(tmp_path, items, "--model", "openai:gpt-5-mini", "--force-batch"), *extra, "--dry-run"]
        )
        assert dry.returncode == 0, dry.stderr
        assert "at most 8,000 requests and 190,000,000 bytes each" in dry.stdout
    dry = _run(
        s,
        [
            *_job(tmp_path, items, "--model", "openai:gpt-5-mini", "--force-batch"),
            "--max-batch-bytes",
            "1000000",
            "--dry-run",
        ],
    )
    assert "1,000,000 bytes each" in dry.stdout  # a smaller cap is the user's
    anthropic = _run(s, [*_job(tmp_path, items, "--force-batch"), "--dry-run"])
    assert "at most 8,000 requests and 250,000,000 bytes each" in anthropic.stdout
    assert len(s.sim.log) == 0


def test_the_dry_run_and_status_name_the_provider(served, tmp_path: Path) -> None:
    from .conftest import cli_in_process

    s = served(Scenario())
    args = _job(tmp_path, _items(tmp_path, ["one", "two"]), "--model", "openai:gpt-5-mini")
    dry = _run(s, [*args, "--dry-run"])
    assert dry.returncode == 0, dry.stderr
    assert "openai:gpt-5-mini" in dry.stdout and "TPM" in dry.stdout
    assert len(s.sim.log) == 0
    assert _run(s, args).returncode == 0
    status = cli_in_process(["status", "--state", str(tmp_path / "S")], env=_env(s))
    assert "judge: openai:gpt-5-mini (provider openai)" in status.stdout
