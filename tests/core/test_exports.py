"""`judgecore` loads each exported name from its module on first use (PEP 562): the names are those of
the modules, the same ones a type checker sees, and one name loads only the modules it needs."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import judgecore

ROOT = Path(__file__).resolve().parents[2]


def _in_fresh_interpreter(code: str) -> object:
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return orjson.loads(res.stdout)


def test_every_export_is_its_modules_own_object():
    for name in judgecore.__all__:
        module = importlib.import_module(judgecore._MODULE_OF[name])
        assert getattr(module, name) is getattr(judgecore, name), name


def test_the_lazy_table_matches_the_imports_a_type_checker_reads():
    """The imports (`if TYPE_CHECKING:` and eager), the table `__getattr__` loads from, and `__all__`
    agree."""
    tree = ast.parse(Path(judgecore.__file__).read_text(encoding="utf-8"))
    imports = [node for node in tree.body if isinstance(node, ast.ImportFrom)]
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            imports += node.body
    static = {}
    for imp in imports:
        assert isinstance(imp, ast.ImportFrom) and imp.module is not None
        if imp.module.startswith("judgecore."):
            static |= {alias.name: imp.module for alias in imp.names}
    assert static == judgecore._MODULE_OF
    assert sorted(static) == sorted(judgecore.__all__)


def test_one_name_loads_only_the_modules_it_needs():
    loaded = _in_fresh_interpreter(
        "import sys, json; from judgecore import custom_id_for; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('judgecore'))))"
    )
    assert [
        "judgecore",
        "judgecore.decide",
        "judgecore.decide.backoff",
        "judgecore.job",
        "judgecore.job.errors",
        "judgecore.job.ids",
    ] == loaded


def test_backoff_is_the_function_whichever_module_imports_it_first():
    """`judgecore.decide.backoff` is a module too: importing it first (as the batch machine does) leaves the
    package's `backoff` the function."""
    kinds = _in_fresh_interpreter(
        "import json, judgecore.run.batch, judgecore; from judgecore import backoff; "
        "print(json.dumps([type(backoff).__name__, type(judgecore.backoff).__name__]))"
    )
    assert ["function", "function"] == kinds


def test_dir_and_star_import_list_every_export_before_any_is_loaded():
    names, star, loaded = _in_fresh_interpreter(
        "import sys, json, judgecore; names = dir(judgecore); ns = {}; "
        "loaded = sorted(m for m in sys.modules if m.startswith('judgecore.')); "
        "exec('from judgecore import *', ns); "
        "print(json.dumps([names, sorted(k for k in ns if k != '__builtins__'), loaded]))"
    )
    assert ["judgecore.decide", "judgecore.decide.backoff"] == loaded
    assert set(judgecore.__all__) <= set(names)
    assert sorted(judgecore.__all__) == star


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'judgecore' has no attribute 'nothing_here'"):
        judgecore.nothing_here  # noqa: B018
