"""The Python API: `judge()` runs a job from eval code without the CLI, and resumes like the CLI."""

from __future__ import annotations

import asyncio

import pytest

from adapters.run.clock import FakeClock
from adapters.run.dryrun import judge_dry_run
from adapters.run.job import judge
from adapters.run.settings import JobSettings
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.transport import sim_client
from adapters.usage import UsageError


def _items(n: int) -> list[dict]:
    return [{"id": f"e{i}", "prompt": f"grade answer {i}", "metadata": {"row": i}} for i in range(n)]


def test_judge_returns_records_keyed_by_item_id(tmp_path):
    sim = Simulator(Scenario(seed=1))
    result = judge(
        _items(12), rubric="Be strict. " * 50, state_dir=tmp_path / "s", client=sim_client(sim, max_retries=0)
    )
    assert 0 == result.exit_code
    assert [f"e{i}" for i in range(12)] == list(result.records)
    assert {"succeeded"} == {r["status"] for r in result.records.values()}
    assert {"row": 3} == result.records["e3"]["metadata"]
    assert result.records["e3"]["text"].startswith("Score:")
    assert "sync" == result.route.path


def test_judge_on_the_batch_path_with_a_fake_clock_needs_no_real_waiting(tmp_path):
    """A batch that takes an hour of simulated time finishes instantly on a fake clock."""
    clock = FakeClock()
    sim = Simulator(Scenario(seed=2, batch_seconds=3600.0), clock=clock.now)
    settings = JobSettings(force="batch", max_batch_requests=10)
    result = judge(
        _items(25),
        rubric=None,
        state_dir=tmp_path / "s",
        settings=settings,
        client=sim_client(sim, max_retries=0),
        clock=clock,
    )
    assert 0 == result.exit_code
    assert 3 == len(sim.batches)
    assert {"batch"} == {r["route"] for r in result.records.values()}
    assert all(r["batch_id"] and r["batch_id"].startswith("msgbatch_") for r in result.records.values())


def test_judge_rerun_resends_nothing(tmp_path):
    sim = Simulator(Scenario(seed=3))
    client = sim_client(sim, max_retries=0)
    judge(_items(5), rubric=None, state_dir=tmp_path / "s", client=client)
    before = len(sim.log)
    again = judge(_items(5), rubric=None, state_dir=tmp_path / "s", client=sim_client(sim, max_retries=0))
    assert 0 == again.exit_code
    assert before == len(sim.log)


def test_judge_rejects_bad_items_before_sending(tmp_path):
    sim = Simulator(Scenario(seed=4))
    with pytest.raises(UsageError, match="line 2: item 'b': give exactly one of 'prompt' or 'messages'"):
        judge(
            [{"id": "a", "prompt": "x"}, {"id": "b"}],
            rubric=None,
            state_dir=tmp_path / "s",
            client=sim_client(sim),
        )
    assert not sim.log


def test_judge_takes_a_tuple_of_dicts_and_items_alike(tmp_path):
    """A tuple is as good as a list: its dicts are checked like input lines (a tuple of dicts was an
    AttributeError traceback), and parsed `Item`s pass as they are."""
    from judgecore.job.parsing import parse_item

    sim = Simulator(Scenario(seed=5))
    mixed = ({"id": "a", "prompt": "x"}, parse_item(2, '{"id": "b", "prompt": "y"}'))
    result = judge(mixed, rubric=None, state_dir=tmp_path / "s", client=sim_client(sim, max_retries=0))
    assert ["a", "b"] == list(result.records)
    with pytest.raises(UsageError, match="line 2: item 'b': give exactly one"):
        judge_dry_run(({"id": "a", "prompt": "x"}, {"id": "b"}), rubric=None, state_dir=tmp_path / "t")


def test_judge_refuses_a_state_dir_of_another_job(tmp_path):
    sim = Simulator(Scenario(seed=5))
    judge(_items(3), rubric="A", state_dir=tmp_path / "s", client=sim_client(sim, max_retries=0))
    with pytest.raises(UsageError, match="another job"):
        judge(_items(3), rubric="B", state_dir=tmp_path / "s", client=sim_client(sim, max_retries=0))


def test_judge_dry_run_plans_as_judge_does_and_needs_no_event_loop(tmp_path):
    """`judge_dry_run` (what `judgecore run --dry-run` calls) returns what `judge(..., dry_run=True)`
    does, sends and writes nothing, and can be called inside a running event loop too."""
    settings = JobSettings(force="batch", max_batch_requests=5)
    expected = judge(
        _items(12), rubric="Be strict.", state_dir=tmp_path / "s", settings=settings, dry_run=True
    )

    async def in_a_running_loop():
        return judge_dry_run(_items(12), rubric="Be strict.", state_dir=tmp_path / "s", settings=settings)

    actual = asyncio.run(in_a_running_loop())
    assert expected == actual
    assert (12, 3) == (actual.plan.n, len(actual.plan.sub_batches))
    assert not (tmp_path / "s").exists()


def test_judge_takes_a_path_and_reads_it_as_the_cli_does(tmp_path):
    """A path (str or Path) given to the Python API was a raw ValueError traceback; it is the file's
    items, read and checked as `judgecore run` reads them."""
    from pathlib import Path as _Path

    from adapters.run.dryrun import judge_dry_run

    path = tmp_path / "in.jsonl"
    path.write_text('{"id": "a", "prompt": "x"}\n{"id": "b", "prompt": "y"}\n')
    for given in (str(path), _Path(path)):
        result = judge_dry_run(given, rubric=None, state_dir=tmp_path / "s")
        assert result.plan is not None and 2 == result.plan.n


def test_numpy_values_in_metadata_are_numbers_and_a_non_dict_row_names_its_position(tmp_path):
    """A numpy integer in metadata (what a DataFrame holds) was a raw TypeError; a row that is not a
    dict was a raw ValueError. The first is a number, the second a UsageError naming the row."""
    import numpy as np

    from adapters.run.dryrun import judge_dry_run
    from adapters.usage import UsageError

    rows = [{"id": "a", "prompt": "x", "metadata": {"n": np.int64(3), "v": np.float32(0.5)}}]
    result = judge_dry_run(rows, rubric=None, state_dir=tmp_path / "s")
    assert result.plan is not None and 1 == result.plan.n
    from adapters.files.items_io import items_from_objects

    assert b'{"n":3,"v":0.5}' == items_from_objects(rows)[0].metadata_json
    with pytest.raises(UsageError, match=r"line 2: expected a dict shaped like an input line, got str"):
        judge_dry_run([{"id": "a", "prompt": "x"}, "just a string"], rubric=None, state_dir=tmp_path / "t")


def test_a_path_given_to_the_python_api_has_its_custom_ids_derived_once_with_the_jobs_key(
    tmp_path, monkeypatch
):
    """`judge("items.jsonl")` parses the file with the state dir's job key, as the CLI does: no second
    pass over every id to derive them again (twice the work and a tuple of them all at 270,000 items)."""
    import orjson

    import judgecore.job.items
    from adapters.checkpoint.store import Store
    from adapters.run.planning_run import run_job_of

    path = tmp_path / "items.jsonl"
    path.write_bytes(
        b"".join(orjson.dumps({"id": f"q{n}", "prompt": f"grade {n}"}) + b"\n" for n in range(5))
    )

    def again(*args, **kwargs):
        raise AssertionError("the custom_ids were derived a second time")

    monkeypatch.setattr(judgecore.job.items, "custom_ids_for", again)
    job, _ = run_job_of(path, rubric="Score 1-5.", settings=JobSettings(), state_dir=tmp_path / "s")
    assert job.items.job is not None  # the new job's own key, not the `v1` ids
    assert not Store.exists(tmp_path / "s")  # reading the key made no state dir


def test_an_item_changed_under_its_id_names_its_row_and_sends_nothing(tmp_path):
    """Rows given to the Python API have no file: the error names the row by its number."""
    sim = Simulator(Scenario(seed=2))
    rows = _items(3)
    assert 0 == judge(rows, rubric=None, state_dir=tmp_path / "s", client=sim_client(sim)).exit_code
    sent = len(sim.log)
    rows[1] = {**rows[1], "prompt": "something else"}
    with pytest.raises(UsageError, match=r"^line 2: content changed since it was checkpointed for id 'e1'"):
        judge(rows, rubric=None, state_dir=tmp_path / "s", client=sim_client(sim))
    with pytest.raises(UsageError, match=r"^line 2: content changed"):
        judge_dry_run(rows, rubric=None, state_dir=tmp_path / "s")
    assert sent == len(sim.log)


@pytest.mark.parametrize(
    ("given", "match"),
    [
        ({"items": None}, "items must be a sequence of dicts .*, got NoneType"),
        ({"items": {"id": "a", "prompt": "x"}}, "one dict is one item, give a list of them"),
        ({"rubric": "PATH"}, r"rubric must be the rubric's text \(a str\) or None, got PosixPath"),
        ({"state_dir": None}, r"state_dir must be a path \(str or os.PathLike\), got NoneType"),
        (
            {"settings": {"model": "claude-sonnet-4-6"}},
            "settings must be an adapters.api.JobSettings, got dict",
        ),
        ({"out": 3}, "out must be a path .*, got int"),
        ({"progress": 1}, "progress must be a callable taking each event, or None, got int"),
        ({"client": "SYNC"}, "client must be an anthropic.AsyncAnthropic .*, got Anthropic"),
    ],
)
def test_a_wrong_argument_is_a_type_error_naming_it_before_anything_is_sent(tmp_path, given, match):
    """A wrong argument was an AttributeError or a TypeError from deep in the run naming neither the
    argument nor what it takes (`'PosixPath' object has no attribute 'encode'`); `progress=1` failed
    only once the first request had been sent, and a sync `anthropic.Anthropic` sent one request and
    ended with exit 4 (`object APIResponse can't be used in 'await' expression`)."""
    sim = Simulator(Scenario(seed=6))
    (tmp_path / "rubric.txt").write_text("Be strict.")
    args = {
        "items": _items(3),
        "rubric": None,
        "state_dir": tmp_path / "s",
        "client": sim_client(sim, max_retries=0),
        **given,
    }
    if args["rubric"] == "PATH":
        args["rubric"] = tmp_path / "rubric.txt"
    if args["client"] == "SYNC":
        args["client"] = sim_client(sim, async_=False)
    with pytest.raises(TypeError, match=match):
        judge(**args)
    assert not sim.log
    if not {"client", "out", "progress"} & set(given):  # the arguments `judge_dry_run` takes too
        with pytest.raises(TypeError, match=match):
            judge_dry_run(**{k: v for k, v in args.items() if k != "client"})


@pytest.mark.parametrize(
    ("given", "error", "match"),
    [
        (
            {"force": "fast"},
            ValueError,
            r"JobSettings\(force=...\) must be 'sync', 'batch' or None, got 'fast'",
        ),
        ({"max_tokens": "512"}, TypeError, r"JobSettings\(max_tokens=...\) must be a whole number .*'512'"),
        ({"concurrency": 0.5}, TypeError, r"JobSettings\(concurrency=...\) must be a whole number"),
        ({"poll_interval": "60"}, TypeError, r"JobSettings\(poll_interval=...\) must be a number of seconds"),
        ({"model": 3}, TypeError, r"JobSettings\(model=...\) must be a model id"),
        ({"judges": "claude-haiku-4-5"}, ValueError, "takes a sequence of model ids.*not one string"),
    ],
)
def test_a_job_setting_of_the_wrong_kind_is_refused_naming_it(given, error, match):
    """`force="fast"` was taken as a route (`Route(path='fast')`) and the job sent; `judges="model"`
    was a panel of the id's letters (`--judge names a model twice (c, l, a, u, ...)`); a number given as
    a str failed comparing it (`'>=' not supported between instances of 'str' and 'int'`)."""
    with pytest.raises(error, match=match):
        JobSettings(**given)


def test_the_result_keeps_the_runs_warnings_when_no_progress_callback_is_given(tmp_path):
    """A budget that stopped a `judge()` run said why (`budget: ... rerun with --budget X`) only to a
    `progress` callback: without one, the caller got exit 3 and records saying `rerun the same command
    to resume`, which a rerun with the same budget never does. `result.warnings` keeps the line."""
    sim = Simulator(Scenario(seed=7))
    items = [{"id": f"b{i}", "prompt": f"grade answer {i} " * 40} for i in range(30)]
    result = judge(
        items,
        rubric=None,
        state_dir=tmp_path / "s",
        settings=JobSettings(budget=0.02, force="sync"),
        client=sim_client(sim, max_retries=0),
    )
    assert 3 == result.exit_code
    assert 0 < result.counts["pending"] < 30
    (line,) = [w for w in result.warnings if w.startswith("budget: ")]
    assert f"{result.counts['pending']} items left pending" in line
    assert "rerun with --budget " in line


@pytest.mark.filterwarnings("ignore:The model:DeprecationWarning")  # the SDK warns of it too
def test_the_results_warnings_name_a_deprecated_model(tmp_path):
    """The deprecation of the job's model is one of the run's warnings, in the result as on stderr."""
    import datetime

    sim = Simulator(Scenario(seed=8, models=frozenset({"claude-opus-4-5"})))
    settings = JobSettings(model="claude-opus-4-5", today=datetime.date(2026, 12, 1))
    result = judge(
        _items(2), rubric=None, state_dir=tmp_path / "s", settings=settings, client=sim_client(sim)
    )
    assert 0 == result.exit_code
    assert any("claude-opus-4-5" in w and "2027-01-22" in w for w in result.warnings), result.warnings


@pytest.mark.parametrize("rubric", ["", " \n\t"])
def test_a_blank_rubric_is_refused_before_anything_is_sent_as_the_cli_refuses_it(tmp_path, rubric):
    """`judgecore run --rubric FILE` of a blank file is exit 2, but `judge(rubric=" \\n")` sent every
    request with a system block of whitespace alone (which the API refuses: a blank text block), and
    `rubric=""` ran the job with no rubric at all, unsaid."""
    sim = Simulator(Scenario(seed=9))
    with pytest.raises(UsageError, match="rubric is empty"):
        judge(_items(3), rubric=rubric, state_dir=tmp_path / "s", client=sim_client(sim))
    with pytest.raises(UsageError, match="rubric is empty"):
        judge_dry_run(_items(3), rubric=rubric, state_dir=tmp_path / "s")
    assert not sim.log


def test_a_progress_callback_that_raises_stops_the_run_and_keeps_the_answers_in_flight(tmp_path):
    """A `progress` callback that raised unwound the run from inside its step: the requests in flight,
    sent and billed, were cancelled and the rerun sent them again. It now stops the run as a Ctrl-C
    does (the answers in flight waited for and kept), then its exception propagates out of `judge()`."""
    from collections import Counter

    import anthropic
    import httpx2
    import orjson

    from adapters.run.events import SyncProgress
    from tests.sync.conftest import ok

    sent: list[str] = []
    gate = asyncio.Event()

    async def handler(request: httpx2.Request) -> httpx2.Response:
        prompt = orjson.loads(request.content)["messages"][-1]["content"]
        sent.append(prompt)
        if len(sent) > 1:  # the first is answered at once, the next ones wait for the callback
            await gate.wait()
        return ok()

    def client() -> anthropic.AsyncAnthropic:
        transport = httpx2.MockTransport(handler)
        return anthropic.AsyncAnthropic(
            api_key="sk-test",
            base_url="http://mock.local",
            http_client=httpx2.AsyncClient(transport=transport, base_url="http://mock.local"),
        )

    def raising(event: object) -> None:
        if isinstance(event, SyncProgress) and event.done >= 1 and event.in_flight >= 3:
            gate.set()  # their answers come back after the callback failed
            raise RuntimeError("the callback failed")

    settings = JobSettings(force="sync", concurrency=4)
    environ = {"JUDGECORE_PROGRESS_INTERVAL": "0"}  # an event at every step
    args = {"rubric": None, "state_dir": tmp_path / "s", "settings": settings, "environ": environ}
    with pytest.raises(RuntimeError, match="the callback failed"):
        judge(_items(12), client=client(), progress=raising, **args)
    assert 4 <= len(sent)
    result = judge(_items(12), client=client(), **args)
    assert 0 == result.exit_code
    assert [] == [p for p, n in Counter(sent).items() if n > 1], "a request sent twice"


def test_a_path_given_as_items_is_never_overwritten_by_out(tmp_path):
    """`judge("items.jsonl", out="items.jsonl")` replaced the user's input with the output (the CLI
    refuses `--out INPUT`): it is a UsageError now, the input left as it was, nothing sent."""
    sim = Simulator(Scenario(seed=10))
    path = tmp_path / "items.jsonl"
    path.write_text('{"id": "a", "prompt": "x"}\n{"id": "b", "prompt": "y"}\n')
    before = path.read_bytes()
    for given in (str(path), path):
        with pytest.raises(UsageError, match="is the input file"):
            judge(given, rubric=None, state_dir=tmp_path / "s", out=path, client=sim_client(sim))
    assert before == path.read_bytes()
    assert not sim.log


def test_run_state_alone_on_a_job_started_from_python_says_why_it_cannot_resume_it(tmp_path, capsys):
    """`judgecore run --state DIR` on a job `judge()` ran said the dir `holds no job started by this
    judgecore`: a user who had just run a job there could not tell what was wrong."""
    from adapters.cli import main

    sim = Simulator(Scenario(seed=11))
    judge(_items(2), rubric=None, state_dir=tmp_path / "s", client=sim_client(sim, max_retries=0))
    assert 2 == main(["run", "--state", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert "holds a job started from the Python API" in err
    assert "give INPUT and the flags again, or call judge() again with that state_dir" in err
    assert 2 == main(["run", "--state", str(tmp_path / "none")])
    assert "holds no job to resume" in capsys.readouterr().err


def test_status_of_a_pending_job_started_from_python_says_how_to_resume_it(tmp_path, capsys):
    """`judgecore status` printed a job's resume command only for a job the CLI started: one `judge()`
    left pending said nothing of how to go on."""
    from adapters.cli import main

    sim = Simulator(Scenario(seed=12))
    items = [*_items(2), {"id": "flaky", "prompt": "grade [[sim:api_error*]]"}]
    result = judge(
        items,
        rubric=None,
        state_dir=tmp_path / "s",
        settings=JobSettings(max_attempts=1, force="sync"),
        client=sim_client(sim, max_retries=0),
    )
    assert 3 == result.exit_code
    assert 3 == main(["status", "--state", str(tmp_path / "s")])
    out = capsys.readouterr().out
    assert (
        f"resume: call judge() again with the same items, rubric and settings, and state_dir={tmp_path / 's'}"
        in out
    )


def test_two_judge_calls_of_one_process_on_one_state_dir_say_it_is_this_process(tmp_path):
    """A second `judge()` on a state dir another thread's `judge()` was using named `another judgecore
    run (pid N ...)`, N being the caller's own pid: it reads as some other program holding the dir."""
    import os

    from adapters.checkpoint.store import Store

    sim = Simulator(Scenario(seed=13))
    first = Store.open(tmp_path / "s", exclusive="run")  # what a judge() call in another thread holds
    try:
        with pytest.raises(UsageError, match=rf"pid {os.getpid()} .*a judge\(\) call of this very process"):
            judge(_items(2), rubric=None, state_dir=tmp_path / "s", client=sim_client(sim))
    finally:
        first.close()
    assert not sim.log


def test_items_parsed_one_request_an_item_are_refused_by_a_panel_before_anything_is_sent(tmp_path):
    # Items parsed without the design would be judged by the first judge only, and the output could
    # not fold them: refused at once, saying what to pass instead; the path itself is taken.
    from adapters.files.items_io import load_items

    path = tmp_path / "in.jsonl"
    path.write_text("".join(f'{{"id": "q{i}", "prompt": "grade {i}"}}\n' for i in range(3)))
    sim = Simulator(Scenario(seed=3))
    panel = JobSettings(judges=("claude-sonnet-4-6", "claude-haiku-4-5"))
    with pytest.raises(UsageError, match=r"ask 2 requests an item .* pass the input's path"):
        judge(load_items(path), rubric="R", state_dir=tmp_path / "s", settings=panel, client=sim_client(sim))
    assert not sim.log
    res = judge(path, rubric="R", state_dir=tmp_path / "s", settings=panel, client=sim_client(sim))
    assert {"claude-sonnet-4-6", "claude-haiku-4-5"} == set(res.records["q0"]["judges"])


def test_the_documented_imports_work_and_the_command_does_not_load_the_run():
    # docs/python-api.md: `from adapters import JobSettings, judge`, `judgecore.spec_from_json(...)`;
    # the `judgecore` command's modules are the same package's, and a dry run must not load the run.
    import subprocess
    import sys

    code = (
        "import sys, adapters.cli, judgecore\n"
        "assert 'adapters.api' not in sys.modules and 'adapters.run.job' not in sys.modules\n"
        "from adapters import JobSettings, judge, UsageError\n"
        "from judgecore import *\n"
        "import judgecore\n"
        "missing = [n for n in judgecore.__all__ if n not in globals()]\n"
        "assert not missing, missing\n"
        "assert judgecore.spec_from_json({'pattern': '^Score: (?P<score>\\\\d+)'}) is not None\n"
        "print(judge.__module__, JobSettings.__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "adapters.run.job adapters.run.settings" == out.strip()
