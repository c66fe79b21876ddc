"""The README is a guide of at most 12 KB, and every relative link in it and in `docs/` resolves: to a
file that exists and, for a `#fragment`, to a heading of that file (GitHub's anchor for it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {anchor(h) for h in re.findall(r"^#+ (.*)$", text, flags=re.M)}


def relative_links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def test_anchor_is_githubs():
    assert "models-output-limits-prices-thinking-lifecycle" == anchor(
        "Models: output limits, prices, thinking, lifecycle"
    )
    assert "the-checkpoint---state-dir" == anchor("The checkpoint (`--state DIR`)")


def test_the_readme_is_at_most_12_kb():
    assert len((ROOT / "README.md").read_bytes()) <= 12 * 1024


def test_the_readme_links_every_docs_page():
    """No reference page is an orphan: the README links each one."""
    linked = {(ROOT / t.split("#")[0]).resolve() for t in relative_links(ROOT / "README.md")}
    assert set() == {p.name for p in PAGES[1:] if p.resolve() not in linked}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path):
    """Each relative link names an existing file, and its anchor (if any) a heading there."""
    broken = []
    for target in relative_links(page):
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        missing = not dest.exists()
        if missing or (fragment and (dest.suffix != ".md" or fragment not in anchors(dest))):
            broken.append(target)
    assert [] == broken


def test_the_readmes_first_commands_are_the_demo_and_the_test_command_ci_runs():
    """The quick start is `uv run judgecore demo` and `uv run pytest`, the command `.ci/run` runs."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = FENCE.search(readme)
    assert first_block is not None
    assert ["uv run judgecore demo", "uv run pytest"] == first_block.group(0).splitlines()[1:-1]
    ci = (ROOT / ".ci/run").read_text(encoding="utf-8").splitlines()
    assert '"${uv[@]}" run pytest' in ci


def test_the_python_api_page_says_where_its_client_comes_from():
    """The Python API page never said that `judge()` builds its client from ANTHROPIC_API_KEY and
    ANTHROPIC_BASE_URL, so a user with only the repo could not point its example at the simulator."""
    text = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    assert "ANTHROPIC_BASE_URL=http://127.0.0.1:8765" in text
    assert "judgecore simulator --port 8765" in text
    assert "ANTHROPIC_API_KEY" in text


def test_the_install_page_says_how_to_install_judgecore_into_another_project():
    """docs/install.md told only how to install the command (`uv tool install`), not how an eval
    repository gets the Python API into its own environment, nor what the plain install brings."""
    text = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    assert 'uv add "judgecore @ PATH/TO/CLONE"' in text
    assert 'uv pip install "PATH/TO/CLONE[data,inspect]"' in text
    declared = re.search(r"^dependencies = \[(.*?)^\]", (ROOT / "pyproject.toml").read_text(), re.M | re.S)
    assert declared is not None
    for name in re.findall(r'^\s*"([a-z0-9_-]+)', declared.group(1), re.M):
        assert name in text, f"the plain install's {name} is not named"
