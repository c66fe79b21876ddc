"""The core stays pure: no module under judgecore/ imports the SDK, HTTP, the clock, the OS, chance or adapters."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import judgecore

BANNED = frozenset({"anthropic", "httpx", "httpx2", "time", "os", "random", "pathlib", "adapters"})
CORE = Path(judgecore.__file__).parent
MODULES = sorted(CORE.rglob("*.py"))


def imported_roots(source: str) -> set[str]:
    """Top-level names of every module an import statement (anywhere in the file) brings in."""
    roots = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__":
            roots |= {a.value.split(".")[0] for a in node.args[:1] if isinstance(a, ast.Constant)}
    return roots


def test_the_core_has_modules_to_check():
    assert {"chunking.py", "ids.py", "jobrun.py", "machine.py", "polling.py", "resume.py", "routing.py"} <= {
        m.name for m in MODULES
    }


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.name)
def test_core_module_imports_nothing_impure(module):
    assert set() == imported_roots(module.read_text(encoding="utf-8")) & BANNED


@pytest.mark.parametrize(
    "source",
    [
        "import os",
        "import os.path",
        "from time import monotonic",
        "import random as r",
        "def f():\n    import anthropic",
        "from adapters.store import Store",
        "from pathlib import Path",
        "import httpx2",
        "__import__('time')",
    ],
)
def test_the_checker_catches_each_banned_form(source):
    assert imported_roots(source) & BANNED


#: Calls that read the clock, the environment or the disk whatever module they come from (a `datetime`
#: import is allowed for arithmetic on values given in; `datetime.now()` is not).
IMPURE_CALLS = frozenset({"now", "utcnow", "today", "getenv", "open", "input", "print"})


def impure_calls(source: str) -> set[str]:
    """Names of calls to the clock, the environment, files or the terminal anywhere in `source`."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name in IMPURE_CALLS:
                found.add(name)
    return found


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.name)
def test_core_module_reads_no_clock_environment_file_or_terminal(module):
    assert set() == impure_calls(module.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "source",
    ["datetime.now()", "datetime.datetime.utcnow()", "date.today()", "open('f')", "print(1)", "getenv('X')"],
)
def test_the_call_checker_catches_each_impure_call(source):
    assert impure_calls(source)
