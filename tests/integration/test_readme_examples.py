"""The README's pairwise example shows what its command prints against the simulator the README says
the line came from."""

from __future__ import annotations

import argparse
import re
import shlex

import orjson
import pytest

from adapters.simulator.cli import add_arguments, scenario_from_args
from adapters.simulator.logic import Simulator
from adapters.simulator.server import serve
from tests.integration.conftest import ROOT, cli_in_process, read_output

pytestmark = pytest.mark.integration

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_pairwise_example_prints_what_the_readme_shows(tmp_path):
    """The README showed q01 as an inconsistent tie, but its own plain simulator (the first job's)
    judges q01 consistently: the line came from a simulator with a position bias, which it did not
    say. It names the simulator's flags now, and they give the line shown."""
    flags = re.search(r"from a simulator started with `(--[^`]+)`", README)
    assert flags is not None, "the README says which simulator its pairwise line came from"
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    scenario = scenario_from_args(parser.parse_args(shlex.split(flags.group(1))))
    command = re.search(r"^uv run judgecore (run examples/answers.jsonl .*--pairwise .*)$", README, re.M)
    assert command is not None
    args = shlex.split(command.group(1).replace("/tmp/p", str(tmp_path / "p")))
    shown = re.search(r'^\{"id":"q01",.*?"verdict":(\{.*?\})\}$', README, re.M | re.S)
    assert shown is not None
    with serve(Simulator(scenario)) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "sk-test"}
        res = cli_in_process(args, env=env)
    assert 0 == res.returncode, res.stderr
    (q01,) = [r for r in read_output(tmp_path / "p" / "output.jsonl") if r["id"] == "q01"]
    assert orjson.loads(shown.group(1).replace("\n", "")) == q01["verdict"]
