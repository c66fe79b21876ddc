"""The `judgecore` command ends its process without the interpreter's teardown (`adapters.cli.command`,
issue 21): what it printed still reaches a pipe whole, and its exit status is the command's own."""

from __future__ import annotations

import gc
import io
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import adapters.cli as cli

ROOT = Path(__file__).resolve().parents[2]


class _Exited(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


class _GonePipe(io.StringIO):
    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def _command(monkeypatch: pytest.MonkeyPatch, code: int) -> int:
    monkeypatch.setattr(cli, "main", lambda **_: code)
    monkeypatch.setattr(cli.os, "_exit", lambda c: (_ for _ in ()).throw(_Exited(c)))
    collecting = gc.isenabled()
    try:
        with pytest.raises(_Exited) as exc:
            cli.command()
    finally:  # the command turns the collector off for its start; this main is not the one to turn it on
        if collecting:
            gc.enable()
    return exc.value.code


def test_the_exit_status_is_mains(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _command(monkeypatch, 0) == 0
    assert _command(monkeypatch, 3) == 3


def test_a_reader_gone_before_the_last_flush_exits_120_as_python_would(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stdout", _GonePipe())
    assert _command(monkeypatch, 0) == 120
    assert _command(monkeypatch, 2) == 2  # the command's own failure is not hidden by it


def test_a_pipe_gets_every_byte_and_the_status(tmp_path: Path) -> None:
    # stdout to a pipe is block-buffered (PYTHONUNBUFFERED unset): a dry run's plan, and a usage
    # error's message, sit in the buffer until the command flushes them
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    items = tmp_path / "items.jsonl"
    items.write_bytes(
        b"".join(orjson.dumps({"id": f"i{n}", "prompt": "grade it"}) + b"\n" for n in range(3000))
    )
    (tmp_path / "rubric.txt").write_text("Score 1-5.")
    args = ["run", str(items), "--rubric", str(tmp_path / "rubric.txt"), "--state", str(tmp_path / "s")]
    res = subprocess.run(
        [sys.executable, "-m", "adapters.cli", *args, "--dry-run", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    assert orjson.loads(res.stdout)["n"] == 3000
    bad = subprocess.run(
        [sys.executable, "-m", "adapters.cli", "status", "--state", str(tmp_path / "nothing-here")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert "no judgecore checkpoint here" in bad.stderr


def test_a_reader_gone_while_the_command_writes_exits_120_without_a_traceback(tmp_path: Path) -> None:
    """Was: `judgecore status --state S | head -5` ended in a `BrokenPipeError` traceback."""
    items = tmp_path / "items.jsonl"
    items.write_bytes(b"".join(orjson.dumps({"id": f"i{n}", "prompt": "grade"}) + b"\n" for n in range(50)))
    args = ["run", str(items), "--state", str(tmp_path / "s"), "--dry-run"]
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first write
    try:
        res = subprocess.run(
            [sys.executable, "-m", "adapters.cli", *args],
            cwd=ROOT,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    finally:
        os.close(write)
    assert 120 == res.returncode
    assert "Traceback" not in res.stderr and "" == res.stderr
