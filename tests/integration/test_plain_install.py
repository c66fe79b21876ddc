"""The plain install: without pandas, pyarrow, datasets and inspect_ai, judgecore imports, runs a
JSONL (or CSV) job, and a format that needs an extra is exit 2 naming it, with nothing sent."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from adapters.simulator import Scenario
from tests.integration.conftest import ROOT, write_items

pytestmark = pytest.mark.integration

# A finder ahead of every other one refuses the extras' packages, as an install without them would.
WITHOUT_EXTRAS = """
import runpy, sys

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
runpy.run_module("adapters.cli", run_name="__main__", alter_sys=True)
"""


def _plain(srv, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRAS, *args],
        cwd=ROOT,
        env=srv.env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_jsonl_and_csv_run_without_the_extras_and_other_formats_name_theirs(served, tmp_path):
    srv = served(Scenario(seed=21))
    items = write_items(tmp_path / "items.jsonl", [{"id": f"i{k}", "prompt": f"p{k}"} for k in range(5)])
    res = _plain(srv, ["run", str(items), "--state", str(tmp_path / "s"), "--force-sync"])
    assert 0 == res.returncode, res.stderr
    assert 5 == len((tmp_path / "s" / "output.jsonl").read_bytes().splitlines())

    table = tmp_path / "items.csv"
    table.write_text("id,prompt\r\n00042,hello\r\n")
    res = _plain(
        srv,
        ["run", str(table), "--state", str(tmp_path / "c"), "--force-sync", "--out", str(tmp_path / "c.csv")],
    )
    assert 0 == res.returncode, res.stderr
    assert "00042" in (tmp_path / "c.csv").read_text()

    sent = len(srv.sim.log)
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
    for args, what in cases:
        res = _plain(srv, args)
        assert 2 == res.returncode, res.stderr
        assert f"{what} needs the optional extra 'data'" in res.stderr
        assert "pip install 'judgecore[data]'" in res.stderr
    for args in (
        ["run", "--from-inspect", str(tmp_path / "run.eval"), "--state", str(tmp_path / "i")],
        ["export", "--state", str(tmp_path / "s"), "--to-inspect", str(tmp_path / "scored.eval")],
    ):
        res = _plain(srv, args)
        assert 2 == res.returncode, res.stderr
        assert "needs the optional extra 'inspect'" in res.stderr
        assert "pip install 'judgecore[inspect]'" in res.stderr
    assert sent == len(srv.sim.log)
    assert not Path(tmp_path / "o.parquet").exists()
