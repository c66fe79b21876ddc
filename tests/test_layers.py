"""One import direction and no import circles: the packages by concern stay readable from the top down.

The contracts are import-linter's, declared in pyproject.toml and run here (and by .ci/run) with
`lint-imports`; the circles are those `bench/import_cycles.py` prints.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_import_points_down_the_layers():
    done = _lint_imports(ROOT)
    assert 0 == done.returncode, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "planted", "contract"),
    [
        ("judgecore/job/items.py", "import adapters.run.job", "The core imports nothing of the shell"),
        ("judgecore/wire/requests.py", "from judgecore.decide import routing", "The core's layers"),
        ("adapters/checkpoint/jobkey.py", "from adapters.files import readers", "The shell's layers"),
        ("adapters/run/job.py", "from adapters.cli import parser", "The shell's layers"),
    ],
)
def test_a_backward_import_breaks_its_contract(tmp_path, module, planted, contract):
    for package in ("judgecore", "adapters"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{planted}  # planted\n", encoding="utf-8")
    done = _lint_imports(tmp_path)
    assert 1 == done.returncode, done.stdout + done.stderr
    broken = done.stdout.split("Broken contracts")[-1]
    assert contract in broken
    assert module.removesuffix(".py").replace("/", ".") in broken


def _import_cycles():
    spec = importlib.util.spec_from_file_location("import_cycles", ROOT / "bench" / "import_cycles.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_module_is_in_an_import_circle():
    """Counting imports inside functions too, the simulator's included."""
    cycles = _import_cycles()
    assert [] == cycles.cycles(cycles.graph(cycles.modules()))


def test_the_circle_finder_finds_a_planted_circle(tmp_path):
    cycles = _import_cycles()
    (tmp_path / "judgecore").mkdir()
    (tmp_path / "judgecore" / "__init__.py").write_text("")
    (tmp_path / "judgecore" / "a.py").write_text("def f():\n    from judgecore.b import g\n")
    (tmp_path / "judgecore" / "b.py").write_text("from judgecore import a\n")
    # a name in an annotation only: never imported, so no circle
    (tmp_path / "judgecore" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from judgecore.d import g\n"
    )
    (tmp_path / "judgecore" / "d.py").write_text("from judgecore import c\n")
    assert [["judgecore.a", "judgecore.b"]] == cycles.cycles(
        cycles.graph(cycles.modules(tmp_path, ["judgecore"]))
    )


def _unlisted_modules(package: Path) -> list[str]:
    """The modules and subpackages of `package` its docstring does not name."""
    import ast

    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    names = [p.stem for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")]
    names += [d.name for d in package.iterdir() if (d / "__init__.py").is_file()]
    return sorted(n for n in names if f"`{n}`" not in doc)


@pytest.mark.parametrize(
    "package",
    sorted(
        p.parent.relative_to(ROOT).as_posix()
        for top in ("judgecore", "adapters")
        for p in (ROOT / top).glob("**/__init__.py")
    ),
)
def test_every_package_docstring_names_its_modules(package: str):
    # A newcomer opens a package's __init__ first: it says what each module is for.
    assert [] == _unlisted_modules(ROOT / package), f"{package}/__init__.py's docstring does not name them"


def test_an_unnamed_module_is_found(tmp_path):
    (tmp_path / "__init__.py").write_text('"""Modules: `kept`."""\n')
    (tmp_path / "kept.py").write_text("")
    (tmp_path / "added.py").write_text("")
    assert ["added"] == _unlisted_modules(tmp_path)


def _deferred_imports():
    spec = importlib.util.spec_from_file_location("deferred_imports", ROOT / "bench" / "deferred_imports.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["deferred_imports"] = module  # attrs resolves the module of the class it makes
    spec.loader.exec_module(module)
    return module


def test_imports_stand_at_the_top_outside_the_dispatch_and_the_sdks():
    """An import inside a function (or under `if TYPE_CHECKING:`) anywhere but the CLI's command dispatch
    and each provider's SDK import fails, named by file:line."""
    deferred = _deferred_imports()
    edges = deferred.running_graph()
    outside = [str(site) for site in deferred.sites() if not deferred.allowed(site, edges)]
    assert [] == outside


@pytest.mark.parametrize(
    ("path", "source", "ok"),
    [
        ("adapters/cli/__init__.py", "def main():\n    from adapters.cli.status import cmd_status\n", True),
        ("adapters/cli/__init__.py", "def main():\n    import json\n", False),
        ("adapters/cli/run.py", "def cmd_run():\n    from adapters.run.job import ajudge\n", False),
        ("adapters/providers/anthropic/batch_api.py", "def client():\n    import anthropic\n", True),
        ("adapters/providers/openai/sync.py", "def client():\n    from openai import AsyncOpenAI\n", True),
        ("adapters/providers/openai/sync.py", "def client():\n    import anthropic\n", False),
        ("adapters/providers/registry.py", "def client():\n    import anthropic\n", False),
        (
            "adapters/providers/openai/connect.py",
            "def port():\n    from adapters.providers.openai.sync import OpenAIChatApi\n",
            True,
        ),
        (
            "adapters/providers/openai/sync.py",
            "def port():\n    from adapters.providers.openai.batch import OpenAIBatchApi\n",
            False,
        ),
        (
            "adapters/providers/openai/connect.py",
            "def port():\n    from adapters.providers.anthropic.sync_api import AnthropicMessagesApi\n",
            False,
        ),
        ("judgecore/job/ids.py", "class A:\n    def f(self):\n        import difflib\n", False),
        (
            "judgecore/job/ids.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import os\n",
            False,
        ),
        ("judgecore/job/ids.py", "import difflib\n\ndef f():\n    return difflib\n", True),
    ],
)
def test_a_deferred_import_is_found_where_it_stands(path, source, ok):
    deferred = _deferred_imports()
    found = list(deferred.sites_in(source, path))
    assert ok == all(deferred.allowed(site) for site in found)
    assert all(f"{path}:" in str(site) for site in found)


def test_a_type_checking_block_stands_only_where_its_import_would_close_a_circle():
    deferred = _deferred_imports()
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from judgecore.run.batch._machine import BatchRun\n"
    (site,) = deferred.sites_in(source, "judgecore/run/batch/_creating.py")
    circle = {"judgecore.run.batch._machine": {"judgecore.run.batch._creating"}}
    assert deferred.allowed(site, circle)
    assert not deferred.allowed(site, {"judgecore.run.batch._machine": set()})
