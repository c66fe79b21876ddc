"""Whole runs through the CLI and the real SDK over real HTTP against the simulator.

Each test asserts on what a user sees (exit status, output lines, stderr) and on what the simulator
was actually sent (its request log), never on internals.
"""

from __future__ import annotations

import collections
import signal
import subprocess
import time
from pathlib import Path

import pytest

from adapters.simulator.scenario import Scenario
from tests.children import readable
from tests.integration.conftest import ROOT, RUBRIC, kept_ids_job, read_output, write_items

pytestmark = pytest.mark.integration

FAST_POLL = ["--poll-interval", "0.1"]


def _rubric(tmp_path: Path) -> Path:
    path = tmp_path / "rubric.txt"
    path.write_text(RUBRIC)
    return path


def test_examples_smoke_run_completes_on_the_sync_path(served, tmp_path):
    """The real smoke-run command of docs/install.md, pointed at the simulator, judges all 20 examples."""
    srv = served(Scenario(seed=1))
    out = tmp_path / "smoke.jsonl"
    res = srv.cli(
        [
            "run",
            str(ROOT / "examples/completions.jsonl"),
            "--rubric",
            str(ROOT / "examples/rubric.txt"),
            "--state",
            str(tmp_path / "smoke"),
            "--out",
            str(out),
        ]
    )
    assert 0 == res.returncode, res.stderr
    rows = read_output(out)
    assert [f"smoke-{i:02d}" for i in range(1, 21)] == [r["id"] for r in rows]
    assert {"succeeded"} == {r["status"] for r in rows}
    assert {"sync"} == {r["route"] for r in rows}
    assert {"pair": 0, "variant": "a"} == rows[0]["metadata"]
    assert 20 == len(srv.sim.message_requests())  # the probe's answer was kept, not re-sent
    assert not srv.sim.batches


def test_a_job_past_the_cap_runs_in_sub_batches_of_at_most_8000(served, tmp_path):
    """16,001 items: one probe on the sync path, the other 16,000 in two sub-batches filled exactly to
    the 8,000-request cap, each id sent exactly once. (The 90,000-item job of the headline is driven
    through the batch machine in tests/batch/test_batch_run.py; over real HTTP it took 43 s of the
    suite for what this one shows at the cap's edge; a third full sub-batch showed nothing more.)"""
    srv = served(Scenario(seed=2, batch_seconds=0.5))
    n = 2 * 8000 + 1
    items = write_items(tmp_path / "big.jsonl", [{"id": f"r{i}", "prompt": f"grade {i}"} for i in range(n)])
    # A child process: in this one, the run and the simulator's server thread share one GIL, and on a
    # loaded machine a large job ran 10% slower in-process than as a child, side by side.
    args = ["run", str(items), "--state", str(tmp_path / "s"), *FAST_POLL]
    res = srv.cli(args, timeout=280, process=True)
    assert 0 == res.returncode, res.stderr[-2000:]
    creates = srv.creates()
    assert [8000, 8000] == [len(c) for c in creates]
    sent = [cid for c in creates for cid in c]
    assert len(sent) == len(set(sent)) == n - 1
    rows = read_output(tmp_path / "s" / "output.jsonl")
    assert n == len(rows)
    assert collections.Counter({"succeeded": n}) == collections.Counter(r["status"] for r in rows)
    assert collections.Counter({"batch": n - 1, "sync": 1}) == collections.Counter(r["route"] for r in rows)


def test_never_ending_batch_ends_the_run_at_its_deadline_then_resumes(served, tmp_path):
    """A batch stuck in_progress is given up at expires_at + grace (exit 3); a rerun polls the same
    batch again instead of paying for a second one, and finishes once it has ended."""
    srv = served(Scenario(seed=3, never_end=True, expires_after=1.0, batch_seconds=0.3))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"n{i}", "prompt": f"grade {i}"} for i in range(50)])
    args = ["run", str(items), "--state", str(tmp_path / "s"), "--force-batch", "--grace", "0.5", *FAST_POLL]
    first = srv.cli(args, timeout=60)  # the timeout only stops a hang: exit 3 and "deadline" say why it ended
    assert 3 == first.returncode, first.stderr
    assert "deadline" in first.stderr
    # a rerun only waits again: the way to give up on the batch is named, with the job's state dir
    assert f"judgecore cancel --state {tmp_path / 's'}\nthen rerun" in first.stderr
    assert {"pending"} == {r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")}
    assert 1 == len(srv.creates())

    srv.sim.scenario = Scenario(seed=3, never_end=False, expires_after=1.0, batch_seconds=0.3)
    second = srv.cli(args, timeout=60)
    assert 0 == second.returncode, second.stderr
    assert 1 == len(srv.creates())  # the same batch, harvested: nothing paid twice
    assert {"succeeded"} == {r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")}


def test_mixed_terminal_states_get_follow_up_rounds_by_failure_class(served, tmp_path):
    srv = served(Scenario(seed=4, batch_seconds=0.2))
    markers = {
        "ok": "",
        "flaky": "[[sim:api_error]]",
        "expired": "[[sim:expired]]",
        "canceled": "[[sim:canceled]]",
        "invalid": "[[sim:invalid]]",
        "truncated": "[[sim:max_tokens]]",
        "toolong": "[[sim:context]]",
        "broken": "[[sim:api_error*]]",
    }
    rows = [
        {"id": f"{name}-{i}", "prompt": f"grade {i} {m}"} for i in range(3) for name, m in markers.items()
    ]
    rows += [{"id": f"ok-extra-{i}", "prompt": f"grade extra {i}"} for i in range(30)]
    items = write_items(tmp_path / "in.jsonl", rows)
    res = srv.cli(
        ["run", str(items), "--state", str(tmp_path / "s"), "--force-batch", *FAST_POLL], timeout=120
    )
    assert 3 == res.returncode, res.stderr  # the always-failing items stay pending
    out = {r["id"]: r for r in read_output(tmp_path / "s" / "output.jsonl")}
    expected = {
        "ok": ("succeeded", None, 1),
        "flaky": ("succeeded", None, 2),
        "expired": ("succeeded", None, 2),
        "canceled": ("succeeded", None, 2),
        "invalid": ("quarantined", "INVALID_REQUEST", 1),
        "truncated": ("miss", "MODEL_TRUNCATION", 1),
        "toolong": ("miss", "MODEL_CONTEXT", 1),
        "broken": ("pending", "INFRA_TRANSIENT", 3),
    }
    for name, (status, klass, attempts) in expected.items():
        for i in range(3):
            row = out[f"{name}-{i}"]
            got = (row["status"], row["error"]["class"] if row["error"] else None, row["attempts"])
            assert (status, klass, attempts) == got, (name, row)
    assert "Score:" in out["truncated-0"]["text"]  # a truncated answer keeps its text
    sends = collections.Counter(cid for c in srv.creates() for cid in c)
    assert {out[f"invalid-{i}"]["custom_id"] for i in range(3)} <= {c for c, n in sends.items() if n == 1}
    assert {3} == {sends[out[f"broken-{i}"]["custom_id"]] for i in range(3)}


def test_kill_9_mid_run_then_resume_sends_no_id_twice(served, tmp_path):
    srv = served(Scenario(seed=5, batch_seconds=2.0))
    # six sub-batches, three of them created before the kill (it was 3,000 items in sub-batches of
    # 500: the same six, each 2.5 times the cost to build, send and harvest)
    items = write_items(tmp_path / "in.jsonl", [{"id": f"k{i}", "prompt": f"grade {i}"} for i in range(1200)])
    args = [
        "run",
        str(items),
        "--state",
        str(tmp_path / "s"),
        "--force-batch",
        "--max-batch-requests",
        "200",
        *FAST_POLL,
    ]
    proc = srv.spawn(args)
    srv.wait_for(lambda: len(srv.creates()) >= 3)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    res = srv.cli(args, timeout=120)
    assert 0 == res.returncode, res.stderr
    sent = [cid for c in srv.creates() for cid in c]
    assert len(sent) == len(set(sent)) == 1200
    assert {"succeeded"} == {r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")}


def test_create_lost_in_transit_is_adopted_not_paid_twice(served, tmp_path):
    """The simulator persists the batch and then drops the connection: the client must find the
    orphan by listing batches instead of creating a second one."""
    srv = served(Scenario(seed=6, batch_seconds=0.2, create_faults={1: "persist_then_drop"}))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"o{i}", "prompt": f"grade {i}"} for i in range(40)])
    res = srv.cli(
        ["run", str(items), "--state", str(tmp_path / "s"), "--force-batch", *FAST_POLL], timeout=60
    )
    assert 0 == res.returncode, res.stderr
    assert 1 == len(srv.creates())
    assert {"succeeded"} == {r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")}


@pytest.mark.parametrize(
    ("sig", "code", "word"),
    [
        (signal.SIGINT, 130, "interrupted"),
        (signal.SIGTERM, 143, "terminated"),
        (signal.SIGHUP, 129, "hung up"),
    ],
)
def test_ctrl_c_leaves_a_resumable_state_and_prints_the_command(served, tmp_path, sig, code, word):
    """Ctrl-C (or a scheduler's SIGTERM, or a SIGHUP) mid-run: the output is written, the command that
    resumes is printed, and the rerun finishes by polling the same batch."""
    srv = served(Scenario(seed=7, never_end=True))  # it cannot finish before the signal lands
    items = write_items(tmp_path / "in.jsonl", [{"id": f"c{i}", "prompt": f"grade {i}"} for i in range(200)])
    args = ["run", str(items), "--state", str(tmp_path / "s"), "--force-batch", *FAST_POLL]
    proc = srv.spawn(args)
    srv.wait_for(lambda: srv.polls() >= 1)  # the batch is created and the client is polling it
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"the CLI ignored signal {sig!r}:\n{err}") from None
    assert code == proc.returncode, err
    assert f"{word}: the checkpoint in {tmp_path / 's'} is safe. Resume with:" in err and "--state" in err
    (batch_id,) = [b.id for b in srv.sim.batches]
    assert f"1 batch keeps running on the API side, billed as it finishes ({batch_id})" in err
    assert f"cancel --state {tmp_path / 's'}" in err  # the command that stops it
    assert {"pending"} == {r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")}
    srv.sim.scenario = Scenario(seed=7, batch_seconds=0.5)
    res = srv.cli(args, timeout=60)
    assert 0 == res.returncode, res.stderr
    assert 1 == len(srv.creates())


def test_a_terminal_that_hangs_up_mid_run_leaves_the_output_written(served, tmp_path):
    """The run's terminal goes away (an ssh session drops: the kernel sends SIGHUP, and every later
    write to the terminal fails): the run stops as it does on SIGTERM, exit 129, with the output
    written and the checkpoint safe, and the same command resumes it without a second create."""
    import fcntl
    import os
    import pty
    import sys
    import termios
    import threading

    srv = served(Scenario(seed=7, never_end=True))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"h{i}", "prompt": f"grade {i}"} for i in range(50)])
    args = ["run", str(items), "--state", str(tmp_path / "s"), "--force-batch", *FAST_POLL]
    master, slave = pty.openpty()

    def own_terminal() -> None:  # a login session's process: the pty is its controlling terminal
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(
        [sys.executable, "-m", "adapters.cli", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=srv.env(),
        cwd=ROOT,
        preexec_fn=own_terminal,
    )
    os.close(slave)
    stop = threading.Event()

    def drain() -> None:  # the terminal's reader: the live view never blocks on a full pty
        while not stop.is_set():
            if readable(master, 0.05):
                try:
                    os.read(master, 65536)
                except OSError:
                    return

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        srv.wait_for(lambda: srv.polls() >= 1)  # the batch is created and the run is polling it
    finally:
        stop.set()
        reader.join()
        os.close(master)  # the hang-up: SIGHUP to the session, EIO for every later write
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("the run did not stop when its terminal hung up") from None
    assert 129 == code
    assert {"pending"} == {r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")}
    srv.sim.scenario = Scenario(seed=7, batch_seconds=0.5)
    res = srv.cli(args, timeout=60)
    assert 0 == res.returncode, res.stderr
    assert 1 == len(srv.creates())
    assert {"succeeded"} == {r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")}


def test_a_run_under_nohup_goes_on_through_a_hangup(served, tmp_path):
    """`nohup judgecore run ...` asked for hangups to be ignored: a SIGHUP leaves the run going, and
    it finishes the job."""
    import sys

    srv = served(Scenario(seed=7, batch_seconds=1.5))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"n{i}", "prompt": f"grade {i}"} for i in range(30)])
    args = ["run", str(items), "--state", str(tmp_path / "s"), "--force-batch", *FAST_POLL]
    proc = subprocess.Popen(
        [sys.executable, "-m", "adapters.cli", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=srv.env(),
        cwd=ROOT,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),  # what nohup does
    )
    try:
        srv.wait_for(lambda: srv.polls() >= 1)  # the batch is created and the run is polling it
        proc.send_signal(signal.SIGHUP)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert 0 == proc.returncode, err
    assert "hung up" not in err
    assert {"succeeded"} == {r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")}


def test_sync_path_survives_429s_and_scores_misses(served, tmp_path):
    srv = served(Scenario(seed=8, sync_faults={3: "429", 5: "429", 6: "529", 9: "500", 12: "drop"}))
    rows = [{"id": f"s{i}", "prompt": f"grade {i}"} for i in range(30)]
    rows[10]["prompt"] += " [[sim:max_tokens]]"
    rows[11]["prompt"] += " [[sim:context]]"
    rows[12]["prompt"] += " [[sim:invalid]]"
    items = write_items(tmp_path / "in.jsonl", rows)
    res = srv.cli(["run", str(items), "--state", str(tmp_path / "s"), "--rubric", str(_rubric(tmp_path))])
    assert 0 == res.returncode, res.stderr
    out = {r["id"]: r for r in read_output(tmp_path / "s" / "output.jsonl")}
    assert ("miss", "MODEL_TRUNCATION") == (out["s10"]["status"], out["s10"]["error"]["class"])
    assert ("miss", "MODEL_CONTEXT") == (out["s11"]["status"], out["s11"]["error"]["class"])
    assert ("quarantined", "INVALID_REQUEST") == (out["s12"]["status"], out["s12"]["error"]["class"])
    assert 27 == sum(r["status"] == "succeeded" for r in out.values())
    assert {"sync"} == {r["route"] for r in out.values()}
    first_usage = out["s0"]["usage"]
    assert first_usage["cache_creation_input_tokens"] > 0  # the probe warmed the cache ...
    assert all(
        out[f"s{i}"]["usage"]["cache_read_input_tokens"] > 0 for i in (1, 2, 20, 29)
    )  # ... the rest read it


def test_bad_key_is_exit_4_with_one_line_reason_and_nothing_lost(served, tmp_path):
    srv = served(Scenario(seed=9))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"a{i}", "prompt": f"grade {i}"} for i in range(5)])
    res = srv.cli(["run", str(items), "--state", str(tmp_path / "s")], key="sk-bad")
    assert 4 == res.returncode, res.stderr
    assert "sk-bad" not in res.stderr + res.stdout
    assert any(line.startswith("error: fatal API configuration") for line in res.stderr.splitlines())
    assert {"pending"} == {r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")}
    assert len(srv.sim.log) <= 3  # stopped at once


def test_changed_item_under_same_id_is_exit_2_and_nothing_sent(served, tmp_path):
    srv = served(Scenario(seed=10))
    rows = [{"id": f"x{i}", "prompt": f"grade {i}"} for i in range(5)]
    items = write_items(tmp_path / "in.jsonl", rows)
    assert 0 == srv.cli(["run", str(items), "--state", str(tmp_path / "s")]).returncode
    sent_before = len(srv.sim.log)
    rows[3]["prompt"] = "something else"
    write_items(items, rows)
    res = srv.cli(["run", str(items), "--state", str(tmp_path / "s")])
    assert 2 == res.returncode
    assert f"error: {items}:4: content changed" in res.stderr and "'x3'" in res.stderr  # FILE:LINE first
    assert sent_before == len(srv.sim.log)


def test_rerun_of_a_finished_job_sends_nothing(served, tmp_path):
    srv = served(Scenario(seed=11, batch_seconds=0.2))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"d{i}", "prompt": f"grade {i}"} for i in range(20)])
    args = ["run", str(items), "--state", str(tmp_path / "s"), "--force-batch", *FAST_POLL]
    assert 0 == srv.cli(args).returncode
    before = len(srv.sim.log)
    assert 0 == srv.cli(args).returncode
    assert before == len(srv.sim.log)


def test_cancel_stops_live_batches_and_a_rerun_resumes(served, tmp_path):
    srv = served(Scenario(seed=12, never_end=True))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"z{i}", "prompt": f"grade {i}"} for i in range(30)])
    args = ["run", str(items), "--state", str(tmp_path / "s"), "--force-batch", *FAST_POLL]
    proc = srv.spawn(args)
    srv.wait_for(lambda: len(srv.creates()) >= 1)
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    res = srv.cli(["cancel", "--state", str(tmp_path / "s")])
    assert 0 == res.returncode, res.stderr
    assert srv.sim.batches[0].cancel_initiated_at is not None
    srv.sim.scenario = Scenario(seed=12)
    res = srv.cli(args, timeout=60)
    assert 0 == res.returncode, res.stderr
    assert {"succeeded"} == {r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")}


def test_a_cancel_that_fails_says_the_batch_still_runs_and_exits_non_zero(served, tmp_path):
    """A cancel refused (a revoked key) or that cannot reach the API said `cancel failed` as a warning,
    `canceled 0 live batches`, and exited 0: a script took the job for stopped while its batch ran on,
    billed. It is exit 4 naming the batch and the command to cancel again, which then cancels it."""
    srv = served(Scenario(seed=13, never_end=True, expires_after=0.5))  # a batch stuck past its deadline
    items = write_items(tmp_path / "in.jsonl", [{"id": f"k{i}", "prompt": f"grade {i}"} for i in range(10)])
    args = ["run", str(items), "--state", str(tmp_path / "s"), "--force-batch", "--grace", "0", *FAST_POLL]
    assert 3 == srv.cli(args).returncode
    (batch,) = srv.sim.batches
    srv.sim.scenario = Scenario(seed=13, never_end=True, reject_all_keys=True)
    res = srv.cli(["cancel", "--state", str(tmp_path / "s")])
    assert 4 == res.returncode, res.stderr
    assert (
        f"error: 1 live batch could not be canceled and keeps running, billed as it finishes ({batch.id})"
        in (res.stderr)
    )
    assert f"cancel --state {tmp_path / 's'}" in res.stderr
    assert srv.sim.batches[0].cancel_initiated_at is None
    srv.sim.scenario = Scenario(seed=13, never_end=True)
    res = srv.cli(["cancel", "--state", str(tmp_path / "s")])
    assert 0 == res.returncode, res.stderr
    assert srv.sim.batches[0].cancel_initiated_at is not None


def test_demo_runs_end_to_end_without_a_key(tmp_path):
    """`judgecore demo` with no key in the environment (in this process: what is tested is the
    command, not its start-up, which tests/cli/test_start_up.py covers)."""
    import os

    from tests.integration.conftest import cli_in_process

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "SERVED_"))}
    res = cli_in_process(["demo", "--n", "600", "--dir", str(tmp_path / "demo")], env=env, timeout=120)
    assert 0 == res.returncode, res.stderr[-3000:]
    assert "== summary ==" in res.stdout
    assert (tmp_path / "demo" / "batch_output.jsonl").exists()
    # the pairwise job: both orders of every item, and the position consistency it measured
    pairs = read_output(tmp_path / "demo" / "pairwise_output.jsonl")
    assert 200 == len(pairs)
    assert all(["answer_gpt", "answer_claude"] == [o["first"] for o in p["verdict"]["orders"]] for p in pairs)
    assert "position consistency" in res.stdout
    # the batch job's rubric is cached; the pairwise job's is too short to be: said so, not "0.0%"
    assert "hit rate 0.0%" not in res.stdout
    assert 1 == res.stdout.count("prompt cache: not used (its rubric is under the model's minimum")
    assert f"the judge report (open it in a browser): {tmp_path / 'demo' / 'report.html'}" in res.stdout
    assert "<svg" in (tmp_path / "demo" / "report.html").read_text()
    pairwise_page = (tmp_path / "demo" / "pairwise_report.html").read_text()
    assert "position consistency" in pairwise_page.lower()
    assert "No answer to quote yet" not in pairwise_page  # the pairwise report quotes the judge
    # the three-family panel: every line holds a Claude, an OpenAI and a served judge's answer, and
    # the report flags the one judge the simulator biased toward its own family (GPT), and only it
    panel = read_output(tmp_path / "demo" / "panel_output.jsonl")
    assert 250 == len(panel)
    judges = {"claude-sonnet-4-6", "openai:gpt-5-mini", "served:Qwen/Qwen3-32B"}
    assert all(set(line["judges"]) == judges for line in panel)
    panel_page = (tmp_path / "demo" / "panel_report.html").read_text()
    assert "Self-preference by author family" in panel_page
    assert 1 == panel_page.count("<tr class=flagged>")
    assert "<tr class=flagged><td>openai:gpt-5-mini</td>" in panel_page
    # the demo's own directory is run again: every item is final, nothing to do but the summary
    again = cli_in_process(["demo", "--n", "600", "--dir", str(tmp_path / "demo")], env=env, timeout=120)
    assert 0 == again.returncode, again.stderr[-3000:]


def test_state_files_are_private_and_never_hold_the_key(served, tmp_path):
    """Every checkpoint file is mode 0600 in a 0700 directory, and the API key appears nowhere:
    not in the state dir, not in the output, not on stdout or stderr."""
    import stat

    key = "sk-ant-test-DO-NOT-LEAK-4242"
    srv = served(Scenario(seed=13, batch_seconds=0.2))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"p{i}", "prompt": f"grade {i}"} for i in range(10)])
    state = tmp_path / "s"
    res = srv.cli(["run", str(items), "--state", str(state), "--force-batch", *FAST_POLL], key=key)
    assert 0 == res.returncode, res.stderr
    assert 0o700 == stat.S_IMODE(state.stat().st_mode)
    for path in state.iterdir():
        if path.name.startswith("judgecore.sqlite3"):
            assert 0o600 == stat.S_IMODE(path.stat().st_mode), path
        assert key.encode() not in path.read_bytes(), path
    assert key not in res.stdout + res.stderr


def _custom_ids_of(items: Path, job: str | None) -> dict[str, str]:
    """Each item id's custom_id in job `job` (which covers what each item asks: its messages)."""
    from judgecore.job.parsing import parse_items

    parsed = parse_items(items.read_bytes().splitlines(), job=job)
    return dict(zip(parsed.ids, parsed.custom_ids, strict=True))


def test_what_a_run_reads_back_from_its_checkpoint_is_each_items_messages(served, tmp_path):
    """A run keeps the items' messages in its checkpoint and reads back those it sends, holding none in
    memory: every batch request the simulator got, in every sub-batch and in the retry round, carries
    exactly its own item's messages (unicode, content blocks and a long text included)."""
    srv = served(Scenario(seed=11, batch_seconds=0.2, batch_mix={"succeeded": 0.6, "api_error": 0.4}))
    rows: list[dict] = []
    for i in range(40):
        if i % 3 == 0:
            msgs = [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": f"Q{i}: naïve café — 東京 {'x' * (i * 50)}"}],
                },
                {"role": "assistant", "content": f'answer {i} \u2028 "quoted"'},
                {"role": "user", "content": "Grade it."},
            ]
            rows.append({"id": f"m{i}", "messages": msgs})
        else:
            rows.append({"id": f"p{i}", "prompt": f"prompt {i} ✓ " * (1 + i % 4)})
    items = write_items(tmp_path / "in.jsonl", rows)
    args = ["run", str(items), "--state", str(tmp_path / "s"), "--force-batch", "--max-batch-requests", "7"]
    res = srv.cli([*args, *FAST_POLL], timeout=120)
    assert 0 == res.returncode, res.stderr
    cid_of = _custom_ids_of(items, kept_ids_job(tmp_path / "s"))
    want = {cid_of[r["id"]]: r.get("messages") or [{"role": "user", "content": r["prompt"]}] for r in rows}
    sent = [
        (cid, p["messages"]) for b in srv.sim.batches for cid, p in zip(b.custom_ids, b.params, strict=True)
    ]
    assert len(sent) > len(rows)  # the api_errors were sent again in a retry round
    assert len(srv.sim.batches) > 40 // 7
    for cid, messages in sent:
        assert want[cid] == messages, cid


def test_a_checkpoint_without_kept_messages_is_resumed_with_the_inputs(served, tmp_path):
    """A checkpoint that kept no messages (written before they were kept there, or cut off before
    they were) is resumed: the rerun keeps them from the input and sends the right ones."""
    import sqlite3

    srv = served(Scenario(seed=12, batch_seconds=0.2, batch_failures=1))
    rows = [{"id": f"r{i}", "prompt": f"grade answer {i}"} for i in range(12)]
    items = write_items(tmp_path / "in.jsonl", rows)
    args = ["run", str(items), "--state", str(tmp_path / "s"), "--force-batch", "--max-attempts", "1"]
    first = srv.cli([*args, *FAST_POLL], timeout=60)
    assert 3 == first.returncode, first.stderr  # every item's first answer is an api_error
    db = sqlite3.connect(tmp_path / "s" / "judgecore.sqlite3")
    with db:
        db.execute("DELETE FROM item_messages")
    db.close()
    res = srv.cli([*args, *FAST_POLL], timeout=60)
    assert 0 == res.returncode, res.stderr
    resent = [
        (cid, p["messages"])
        for b in srv.sim.batches[1:]
        for cid, p in zip(b.custom_ids, b.params, strict=True)
    ]
    cid_of = _custom_ids_of(items, kept_ids_job(tmp_path / "s"))
    assert {cid_of[r["id"]] for r in rows} == {cid for cid, _ in resent}
    for cid, messages in resent:
        assert [{"role": "user", "content": f"grade answer {cid[1:].split('-')[0]}"}] == messages
