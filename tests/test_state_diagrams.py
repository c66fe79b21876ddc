"""docs/design.md's state diagrams are the machines' tables: a changed `TRANSITIONS`, `PHASES` or
`MOVES` fails here until `uv run python bench/state_diagrams.py` regenerates them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from judgecore.run.job import MOVES
from judgecore.run.subbatch import PHASES, TRANSITIONS

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def diagrams():
    spec = importlib.util.spec_from_file_location("state_diagrams", ROOT / "bench" / "state_diagrams.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["state_diagrams"] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules["state_diagrams"]


def test_the_committed_diagrams_are_what_the_tables_generate(diagrams):
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    assert diagrams.BEGIN in text, "docs/design.md has no generated diagrams: run bench/state_diagrams.py"
    assert text == diagrams.regenerated(text), (
        "the tables changed: run `uv run python bench/state_diagrams.py`"
    )


def test_every_move_of_every_table_is_an_edge(diagrams):
    section = diagrams.section()
    for table in (TRANSITIONS, PHASES, MOVES):
        for (source, trigger), target in table.items():
            edge = f"{diagrams._name(source)} --> {diagrams._name(target)} : {diagrams._name(trigger)}"
            assert edge in section


def test_a_changed_table_changes_the_docs(diagrams, monkeypatch):
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    (source, trigger), _ = next(iter(TRANSITIONS.items()))
    changed = {**TRANSITIONS, (source, trigger): source}
    monkeypatch.setattr(diagrams, "TRANSITIONS", changed)
    assert text != diagrams.regenerated(text)
