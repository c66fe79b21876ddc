"""The CLI's behaviour that needs no API at all: dry runs, bad input, bad usage, status."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import orjson
import pytest

from adapters.checkpoint.store import OutcomeRow, Store
from adapters.cli import main
from adapters.files.items_io import load_items
from adapters.run.settings import JobSettings
from judgecore.decide.routing import RoutePolicy, route
from judgecore.job.ids import custom_id_for
from judgecore.results.outcomes import Outcome, Status


def _write(path: Path, rows: list[dict | str]) -> Path:
    with path.open("w") as f:
        for row in rows:
            f.write(row if isinstance(row, str) else orjson.dumps(row).decode())
            f.write("\n")
    return path


@pytest.fixture
def job(tmp_path: Path) -> tuple[Path, Path]:
    items = _write(
        tmp_path / "items.jsonl", [{"id": f"q{i}", "prompt": f"grade answer {i}"} for i in range(30)]
    )
    rubric = tmp_path / "rubric.txt"
    rubric.write_text("Grade strictly. " * 400)
    return items, rubric


def test_dry_run_prints_plan_and_sends_nothing(job, tmp_path, capsys, monkeypatch):
    """A dry run needs no key, writes no state, and prints the route and the cost."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    items, rubric = job
    state = tmp_path / "state"
    assert 0 == main(["run", str(items), "--state", str(state), "--rubric", str(rubric), "--dry-run"])
    out = capsys.readouterr().out
    assert "nothing will be sent" in out
    assert "route        sync: 30 requests < threshold 2,000" in out
    assert not state.exists()


def test_dry_run_json_has_contract_keys(job, capsys):
    items, rubric = job
    code = main(
        [
            "run",
            str(items),
            "--rubric",
            str(rubric),
            "--dry-run",
            "--json",
            "--force-batch",
            "--max-batch-requests",
            "7",
        ]
    )
    plan = orjson.loads(capsys.readouterr().out)
    assert 0 == code
    for key in (
        "n",
        "threshold",
        "otpm",
        "otpm_source",
        "route",
        "reason",
        "sub_batches",
        "estimated_cost_usd",
    ):
        assert key in plan
    assert "batch" == plan["route"]
    assert [7, 7, 7, 7, 2] == [sb["requests"] for sb in plan["sub_batches"]]
    assert "assumed" == plan["otpm_source"]


def test_dry_run_with_otpm_flag_scales_the_threshold(job, capsys):
    items, rubric = job
    assert 0 == main(["run", str(items), "--rubric", str(rubric), "--dry-run", "--json", "--otpm", "4000"])
    plan = orjson.loads(capsys.readouterr().out)
    assert (20, "flag", "batch") == (plan["threshold"], plan["otpm_source"], plan["route"])


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "not valid JSON"),
        ('{"prompt": "x"}', "'id' must be a non-empty string"),
        ('{"id": "a", "prompt": "x", "messages": [{"role": "user", "content": "y"}]}', "exactly one of"),
        ('{"id": "a", "prompt": "x", "max_tokens": 0}', "'max_tokens' must be a positive integer"),
        ('{"id": "a", "prompt": "x", "max_token": 5}', "unknown field(s) max_token"),
        ('{"id": "q1", "prompt": "again"}', "duplicate id 'q1'; first seen on line 1"),
    ],
)
def test_bad_input_line_is_exit_2_naming_file_and_line(tmp_path, capsys, line, reason):
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": "q1", "prompt": "ok"}\n\n' + line + "\n")
    assert 2 == main(["run", str(path), "--state", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert f"{path}:3:" in err
    assert reason in err
    assert not (tmp_path / "s").exists()


def test_missing_key_is_exit_2_and_nothing_sent(job, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    items, rubric = job
    assert 2 == main(["run", str(items), "--state", str(tmp_path / "s"), "--rubric", str(rubric)])
    assert "ANTHROPIC_API_KEY is not set" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--json"], "--json goes with --dry-run"),
        (["--poll-interval", "0"], "--poll-interval must be > 0"),
        (["--max-batch-requests", "100001"], "--max-batch-requests must be a whole number at most 100,000"),
        (["--max-attempts", "0"], "--max-attempts must be a whole number >= 1 and at most 100"),
    ],
)
def test_bad_flags_are_exit_2(job, tmp_path, capsys, extra, message):
    items, _rubric = job
    try:
        code = main(["run", str(items), "--state", str(tmp_path / "s"), *extra])
    except SystemExit as exc:  # a value out of its range is refused as the flag is parsed
        code = exc.code
    assert 2 == code
    assert message in capsys.readouterr().err


def test_run_without_state_is_exit_2(job, capsys):
    items, _ = job
    assert 2 == main(["run", str(items)])
    assert "--state DIR is required" in capsys.readouterr().err


def test_item_too_large_for_any_sub_batch_is_exit_2_before_sending(tmp_path, capsys):
    path = _write(
        tmp_path / "in.jsonl", [{"id": "small", "prompt": "x"}, {"id": "huge", "prompt": "y" * 5000}]
    )
    assert 2 == main(
        ["run", str(path), "--state", str(tmp_path / "s"), "--force-batch", "--max-batch-bytes", "2000"]
    )
    err = capsys.readouterr().err
    assert f"{path}:2:" in err and "'huge'" in err


def test_status_of_missing_checkpoint_is_exit_2(tmp_path, capsys):
    assert 2 == main(["status", "--state", str(tmp_path / "nowhere")])
    assert "no judgecore checkpoint" in capsys.readouterr().err


def test_status_reads_counts_without_api(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    store = Store.open(tmp_path / "s")
    store.bind_job({"model": "m"}, [("c1", "i1", "d1"), ("c2", "i2", "d2")])
    store.close()
    assert 3 == main(["status", "--state", str(tmp_path / "s"), "--json"])
    info = orjson.loads(capsys.readouterr().out)
    assert {"succeeded": 0, "miss": 0, "quarantined": 0, "pending": 2} == info["counts"]


def test_help_teaches_the_commands(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert 0 == exc.value.code
    out = capsys.readouterr().out
    for word in ("run", "status", "cancel", "demo", "simulator", "judgecore demo"):
        assert word in out


@pytest.mark.parametrize("command", ["run", "status", "summary", "export", "cancel", "simulator"])
def test_each_commands_help_says_its_exit_status_and_shows_an_example(capsys, command):
    """`status`, `cancel`, `export` and `summary --help` said nothing of their exit status (a script
    could not tell `status`'s 3 from a failure), `run --help` left out exit 1 (a full disk) and
    `simulator --help` never said how to point judgecore at it."""
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert 0 == exc.value.code
    out = capsys.readouterr().out
    assert f"judgecore {command} " in out.partition("example")[2]  # an example of the command itself
    expected = {
        "run": ("exit status", "  1  a local fault", "  3  some items are pending"),
        "status": ("exit status", "3 some items are pending"),
        "summary": ("exit status", "2 bad usage"),
        "export": ("exit status", "2 bad usage"),
        "cancel": ("exit status", "  4  the API refused the key", "  3  a cancel failed"),
        "simulator": ("export ANTHROPIC_BASE_URL=http://127.0.0.1:8765",),
    }[command]
    for text in expected:
        assert text in out
    if command != "simulator":
        assert re.search(r"\n  --state DIR +\w", out), "the flag says what it is"


# --- a dry run on an existing state dir plans what the run would do --------------------------------


def _checkpoint(state: Path, items: Path, rubric: Path) -> Store:
    """A state dir bound to the job in `items`, as a first run leaves it before sending anything."""
    parsed = load_items(items)
    store = Store.open(state)
    store.bind_job(
        JobSettings().manifest(rubric.read_text()), ((i.custom_id, i.id, i.digest) for i in parsed)
    )
    return store


def _dry(items: Path, rubric: Path, state: Path, *extra: str) -> list[str]:
    return ["run", str(items), "--state", str(state), "--rubric", str(rubric), "--dry-run", *extra]


def _files(state: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(state.iterdir())}


def test_dry_run_on_a_force_batch_state_dir_plans_batch(job, tmp_path, capsys):
    """The route a first run recorded (--force-batch) is the one the rerun keeps: the plan says batch."""
    items, rubric = job
    store = _checkpoint(tmp_path / "s", items, rubric)
    forced = route(30, policy=RoutePolicy(), force="batch")
    store.set_meta("route", attrs.asdict(forced))
    store.close()
    assert 0 == main(_dry(items, rubric, tmp_path / "s", "--json"))
    plan = orjson.loads(capsys.readouterr().out)
    assert ("batch", True, [30]) == (
        plan["route"],
        plan["forced"],
        [sb["requests"] for sb in plan["sub_batches"]],
    )


def test_dry_run_on_a_provisional_route_plans_what_the_tier_now_says(job, tmp_path, capsys):
    """A route decided on the assumed tier with nothing answered is decided again: with `--otpm 4000`
    (threshold 20) the 30-item job the first run sent sync now plans batch, as the run would."""
    items, rubric = job
    store = _checkpoint(tmp_path / "s", items, rubric)
    store.set_meta("route", attrs.asdict(route(30, policy=RoutePolicy())))
    store.close()
    assert 0 == main(_dry(items, rubric, tmp_path / "s", "--json", "--otpm", "4000"))
    plan = orjson.loads(capsys.readouterr().out)
    assert ("batch", "flag", 20) == (plan["route"], plan["otpm_source"], plan["threshold"])


def test_dry_run_on_another_jobs_state_dir_is_exit_2_naming_the_field(job, tmp_path, capsys):
    items, rubric = job
    store = _checkpoint(tmp_path / "s", items, rubric)
    first = next(iter(load_items(items))).custom_id
    store.record_intent(round=1, custom_ids=[first], n_bytes=100, at=0.0)  # a batch may exist: answered
    store.close()
    before = _files(tmp_path / "s")
    assert 2 == main(_dry(items, rubric, tmp_path / "s", "--model", "claude-haiku-4-5"))
    err = capsys.readouterr().err
    assert "another job" in err and "model" in err
    assert before == _files(tmp_path / "s")


def test_dry_run_on_a_state_dir_whose_job_never_was_answered_plans_the_new_job(job, tmp_path, capsys):
    """A job that received no answer (its first send refused) holds nothing to keep: the corrected
    command on the same --state is not "another job"; the dry run says so and changes nothing."""
    items, rubric = job
    _checkpoint(tmp_path / "s", items, rubric).close()
    before = _files(tmp_path / "s")
    assert 0 == main(_dry(items, rubric, tmp_path / "s", "--model", "claude-haiku-4-5"))
    err = capsys.readouterr().err
    assert "never received an answer" in err and "--model claude-haiku-4-5" in err
    assert before == _files(tmp_path / "s")


def test_dry_run_with_an_item_changed_under_its_id_is_exit_2_naming_the_id(job, tmp_path, capsys):
    items, rubric = job
    _checkpoint(tmp_path / "s", items, rubric).close()
    rows = [orjson.loads(line) for line in items.read_bytes().splitlines()]
    rows[7]["prompt"] = "something else entirely"
    _write(items, rows)
    assert 2 == main(_dry(items, rubric, tmp_path / "s"))
    err = capsys.readouterr().err
    assert f"error: {items}:8: content changed" in err and "'q7'" in err  # the dry run names FILE:LINE too


def test_dry_run_plans_only_what_is_left_and_writes_nothing(job, tmp_path, capsys):
    """Items final are counted, not planned; the state dir is opened read-only: no file changes,
    no WAL appears."""
    items, rubric = job
    store = _checkpoint(tmp_path / "s", items, rubric)
    store.set_meta("route", attrs.asdict(route(30, policy=RoutePolicy(), otpm=400_000)))
    done = Outcome(status=Status.SUCCEEDED, failure=None, reason="ok", text="Score: 4")
    store.record_outcomes(
        OutcomeRow(custom_id=custom_id_for(f"q{i}"), outcome=done, route="sync", at=1.0) for i in range(12)
    )
    store.close()
    before = _files(tmp_path / "s")
    assert 0 == main(_dry(items, rubric, tmp_path / "s", "--json"))
    plan = orjson.loads(capsys.readouterr().out)
    assert (30, 12, 0, 18) == (plan["n"], plan["final"], plan["live"], plan["to_send"])
    assert "read" == plan["otpm_source"]
    assert before == _files(tmp_path / "s")
    assert 0 == main(_dry(items, rubric, tmp_path / "s"))
    assert "items        30 (final 12, live in batches 0, to send 18)" in capsys.readouterr().out
