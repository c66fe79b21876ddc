"""The plain install: without pandas, pyarrow, datasets and inspect_ai, judgecore imports, runs a
JSONL (or CSV) job, and a format that needs an extra is exit 2 naming it, with nothing sent."""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson
import pytest

from adapters.simulator.scenario import Scenario
from tests.integration.conftest import python_c, write_items

pytestmark = pytest.mark.integration

# A finder ahead of every other one refuses the extras' packages, as an install without them would.
WITHOUT_EXTRAS = """
import contextlib, io, json, sys

class Blocked:
    NAMES = ("pandas", "pyarrow", "datasets", "inspect_ai")

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.NAMES:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Blocked())
import judgecore, adapters
try:
    import pyarrow
except ImportError:
    pass
else:
    raise SystemExit("the blocker let pyarrow in")
from adapters.cli import main

for args in json.loads(sys.argv[1]):  # one command after another, as a shell would run them
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1 if exc.code else 0
    print(json.dumps([code, out.getvalue(), err.getvalue()]))
"""


def _plain(srv, commands: list[list[str]]) -> list[subprocess.CompletedProcess[str]]:
    """The commands run one after another in one interpreter that cannot import the extras (one
    start-up for them all: each start is 3-4 s of CPU)."""
    res = python_c(WITHOUT_EXTRAS, [orjson.dumps(commands).decode()], env=srv.env())
    assert 0 == res.returncode, res.stderr[-3000:]
    lines = res.stdout.splitlines()
    assert len(commands) == len(lines), res.stdout[-3000:]
    return [
        subprocess.CompletedProcess(args, *orjson.loads(line))
        for args, line in zip(commands, lines, strict=True)
    ]


def test_jsonl_and_csv_run_without_the_extras_and_other_formats_name_theirs(served, tmp_path):
    srv = served(Scenario(seed=21))
    items = write_items(tmp_path / "items.jsonl", [{"id": f"i{k}", "prompt": f"p{k}"} for k in range(5)])
    table = tmp_path / "items.csv"
    table.write_text("id,prompt\r\n00042,hello\r\n")
    (tmp_path / "items.parquet").write_bytes(b"PAR1")
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "state.json").write_text("{}")
    (tmp_path / "run.eval").write_bytes(b"PK")
    cases: list[tuple[list[str], str]] = [
        (["run", str(tmp_path / "items.parquet"), "--state", str(tmp_path / "p")], "reading Parquet"),
        (["run", str(tmp_path / "ds"), "--state", str(tmp_path / "d")], "reading a saved dataset"),
        (
            ["run", str(items), "--state", str(tmp_path / "o"), "--out", str(tmp_path / "o.parquet")],
            "writing Parquet",
        ),
    ]
    inspect_cases = [
        ["run", "--from-inspect", str(tmp_path / "run.eval"), "--state", str(tmp_path / "i")],
        ["export", "--state", str(tmp_path / "s"), "--to-inspect", str(tmp_path / "scored.eval")],
    ]
    jsonl, csv = _plain(
        srv,
        [
            ["run", str(items), "--state", str(tmp_path / "s"), "--force-sync"],
            [
                "run",
                str(table),
                "--state",
                str(tmp_path / "c"),
                "--force-sync",
                "--out",
                str(tmp_path / "c.csv"),
            ],
        ],
    )
    assert 0 == jsonl.returncode, jsonl.stderr
    assert 5 == len((tmp_path / "s" / "output.jsonl").read_bytes().splitlines())
    assert 0 == csv.returncode, csv.stderr
    assert "00042" in (tmp_path / "c.csv").read_text()

    sent = len(srv.sim.log)
    refused = _plain(srv, [*(args for args, _ in cases), *inspect_cases])
    for res, (_, what) in zip(refused, cases, strict=False):
        assert 2 == res.returncode, res.stderr
        assert f"{what} needs the optional extra 'data'" in res.stderr
        assert "pip install 'judgecore[data]'" in res.stderr
    for res in refused[len(cases) :]:
        assert 2 == res.returncode, res.stderr
        assert "needs the optional extra 'inspect'" in res.stderr
        assert "pip install 'judgecore[inspect]'" in res.stderr
    assert sent == len(srv.sim.log)
    assert not Path(tmp_path / "o.parquet").exists()
