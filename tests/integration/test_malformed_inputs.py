"""The kinds of failure `bench/fuzz_inputs.py` found, one test each: bad input is exit 2 with one line
naming FILE:LINE (or FILE:ROW, or the file at fault), no traceback, and not one request received by the
simulator (the runs give no `--otpm`, so a routing probe would be sent if the input were accepted)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import orjson
import pytest

from adapters.simulator.scenario import Scenario

from .conftest import ROOT, Served


def refused(served, args: list[str]) -> str:
    """The one error line of a `run` refused with exit 2 before anything was sent."""
    srv: Served = served(Scenario())
    done = srv.cli(["run", *args])
    assert 2 == done.returncode, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert 1 == len(errors), done.stderr
    assert () == srv.sim.log, "a request was sent on input that is refused"
    return errors[0]


def goods(n: int) -> list[bytes]:
    return [orjson.dumps({"id": f"g{i}", "prompt": f"grade {i}"}) for i in range(n)]


@pytest.mark.parametrize("where", ["metadata", "content"])
def test_a_line_nested_1000_deep_is_its_line_not_a_recursion_error(
    served, tmp_path: Path, where: str
) -> None:
    """Was a RecursionError traceback: the depth check walked the value by recursion."""
    nested = b"[" * 1000 + b"]" * 1000
    bad = (
        b'{"id": "x", "prompt": "p", "metadata": ' + nested + b"}"
        if where == "metadata"
        else b'{"id": "x", "messages": [{"role": "user", "content": ' + nested + b"}]}"
    )
    items = tmp_path / "items.jsonl"
    items.write_bytes(b"\n".join([*goods(250), bad]) + b"\n")
    line = refused(served, [str(items), "--state", str(tmp_path / "s")])
    assert f"{items}:251: item 'x': nested more than" in line


def test_a_csv_row_that_is_not_utf8_is_named_by_its_row(served, tmp_path: Path) -> None:
    """Was `FILE: not UTF-8 (... position 4045 ...)`, no row."""
    items = tmp_path / "items.csv"
    rows = b"".join(b"r%d,prompt %d\r\n" % (i, i) for i in range(250))
    items.write_bytes(b"\xef\xbb\xbfid,prompt\r\n" + rows + b"x,caf\xe9\r\nlast,p\r\n")
    line = refused(served, [str(items), "--state", str(tmp_path / "s")])
    assert f"{items}:252: not UTF-8" in line


def test_an_unclosed_quote_names_the_row_it_opens_not_the_end_of_the_file(served, tmp_path: Path) -> None:
    """Was the last line of the file (where the csv module ran out of data)."""
    items = tmp_path / "items.csv"
    items.write_text('id,prompt\nr1,p\nx,"unclosed\nr2,p\nr3,p\n', encoding="utf-8")
    line = refused(served, [str(items), "--state", str(tmp_path / "s")])
    assert f"{items}:3: not valid CSV" in line


@pytest.mark.parametrize("missing", ["{first}", "{second}"])
def test_a_pairwise_template_without_first_or_second_names_the_template(
    served, tmp_path: Path, missing: str
) -> None:
    """Was `error: with --pairwise, the template names ...`, naming no file."""
    items = tmp_path / "items.jsonl"
    items.write_bytes(b'{"id": "r1", "a": "x", "b": "y"}\n')
    template = tmp_path / "pair.txt"
    template.write_text("First: {first}\nSecond: {second}\n".replace(missing, "?"), encoding="utf-8")
    line = refused(
        served, [str(items), "--state", str(tmp_path / "s"), "--template", str(template), "--pairwise", "a,b"]
    )
    assert line.startswith(f"error: {template}: with --pairwise") and f"({missing} missing)" in line


@pytest.mark.parametrize("placeholder", ["{a[0]}", "{a.b}", "{a!x}"])
def test_a_placeholder_that_looks_inside_a_field_names_the_template(
    served, tmp_path: Path, placeholder: str
) -> None:
    """`{a[0]}` was accepted and sent (the first character of the field); `{a.b}` and `{a!x}` failed
    on the first row instead of naming the template."""
    items = tmp_path / "items.jsonl"
    items.write_bytes(b'{"id": "r1", "a": "xyz"}\n')
    template = tmp_path / "t.txt"
    template.write_text(f"Grade: {placeholder}", encoding="utf-8")
    line = refused(served, [str(items), "--state", str(tmp_path / "s"), "--template", str(template)])
    assert line.startswith(f"error: {template}: ") and line.endswith("(--template)")


@pytest.mark.parametrize("flag", ["--model", "--judge"])
def test_a_model_id_with_a_space_is_refused_before_the_probe(served, tmp_path: Path, flag: str) -> None:
    """Was a probe sent for `claude-sonnet-4-6 ` (a copy-paste's trailing space), then exit 4."""
    items = tmp_path / "items.jsonl"
    items.write_bytes(b"\n".join(goods(3)) + b"\n")
    line = refused(served, [str(items), "--state", str(tmp_path / "s"), f"{flag}=claude-sonnet-4-6 "])
    assert "'claude-sonnet-4-6 '" in line and "no spaces" in line


def test_the_campaign_finds_no_failure() -> None:
    """A short run of the campaign itself (seeded; its own simulator): every case refused as the
    contract says."""
    spec = importlib.util.spec_from_file_location("fuzz_inputs", ROOT / "bench" / "fuzz_inputs.py")
    assert spec is not None and spec.loader is not None
    fuzz = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = fuzz  # (its dataclasses look their module up)
    try:
        spec.loader.exec_module(fuzz)
    finally:
        del sys.modules[spec.name]
    assert 0 == fuzz.main(["--n", "80", "--seed", "19"])
