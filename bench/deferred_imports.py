"""The imports that do not stand at the top of their module: those inside a function (deferred: run
when the function is first called) and the `if TYPE_CHECKING:` blocks (never run), in judgecore and
adapters, each as file:line.

    uv run python bench/deferred_imports.py            # counts, and every site outside the allowed places
    uv run python bench/deferred_imports.py --all      # every site, allowed or not

A deferred import is allowed in two places only (issue 38, item 2), and tests/test_layers.py holds
every other site to none:

- the CLI's command dispatch: `adapters/cli/__init__.py` loads the module of the command it runs, and
  `adapters/cli/parser.py` the module of an option or a command's options, when it is used (the
  simulator's options, `--version`'s line);
- each provider's SDK: `import anthropic` in `adapters/providers/anthropic/`, `import openai` in
  `adapters/providers/openai/` (an optional extra, and the heaviest import of a run), and in the
  provider's `connect` module, which builds its client and ports, the provider's own modules that
  import its SDK (the registry names a provider without loading them: a dry run never does).

One more is named, not a place but a library: `jsonschema`, in `judgecore/results/verdicts.py`, where a
`--verdict` schema is checked and an answer validated against it. Its import is 355 M instructions
(callgrind, `python -c "import jsonschema.validators"` less `python -c pass`): as much as a whole dry
run at bc825e4, for a flag most jobs do not give.

An `if TYPE_CHECKING:` block is allowed only where the real import would close an import circle (a
class and the helpers that take it name each other in annotations): one of the modules it names
imports, at run time, the module the block stands in (bench/import_cycles.py's graph).

Every other import stands at the top of its module: what a command does not need, its modules do not
import (the dry run's module graph is kept small by where code lives, not by deferring).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import ModuleType

import attrs

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("judgecore", "adapters")
DISPATCH = ("adapters/launch.py", "adapters/cli/__init__.py", "adapters/cli/parser.py")
#: (file, library): a library whose import alone would double a dry run, deferred to its one use
HEAVY = {("judgecore/results/verdicts.py", "jsonschema")}
SDK_OF = {"adapters/providers/anthropic/": "anthropic", "adapters/providers/openai/": "openai"}


@attrs.frozen
class Site:
    """One import that is not at the top of its module."""

    path: str  # relative to the checkout, with `/`
    line: int
    kind: str  # "function" (inside a def) or "type-checking" (an `if TYPE_CHECKING:` block)
    modules: tuple[str, ...]  # the absolute module names it imports (`from . import x`: the package's)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}: {', '.join(self.modules)}"


def _typing_only(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _modules_of(node: ast.Import | ast.ImportFrom, path: str) -> tuple[str, ...]:
    if isinstance(node, ast.Import):
        return tuple(alias.name for alias in node.names)
    if not node.level:
        return (node.module or "",)
    package = path.removesuffix(".py").split("/")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return (".".join([*base, *([node.module] if node.module else [])]),)


def sites_in(source: str, path: str) -> Iterator[Site]:
    """Every import of `source` (the module at `path`) inside a function, and every TYPE_CHECKING block."""

    def walk(node: ast.AST, in_function: bool) -> Iterator[Site]:
        for child in ast.iter_child_nodes(node):
            if _typing_only(child):
                assert isinstance(child, ast.If)
                imported = tuple(
                    m
                    for stmt in ast.walk(child)
                    if isinstance(stmt, ast.Import | ast.ImportFrom)
                    for m in _modules_of(stmt, path)
                )
                yield Site(path, child.lineno, "type-checking", imported)
                for stmt in child.orelse:
                    yield from walk(stmt, in_function)
                continue
            if in_function and isinstance(child, ast.Import | ast.ImportFrom):
                yield Site(path, child.lineno, "function", _modules_of(child, path))
            yield from walk(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    yield from walk(ast.parse(source), False)


def sites(root: Path = ROOT, packages: Iterable[str] = PACKAGES) -> list[Site]:
    """Every such site of `packages` under `root`, in file order."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            found.extend(sites_in(path.read_text(encoding="utf-8"), relative))
    return found


def _import_cycles() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "import_cycles", Path(__file__).with_name("import_cycles.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def running_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the first-party modules it imports at run time (bench/import_cycles.py)."""
    cycles = _import_cycles()
    return cycles.graph(cycles.modules(root))


def _module_of(path: str) -> str:
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _reaches(edges: Mapping[str, set[str]], start: str, goal: str) -> bool:
    seen, stack = {start}, [start]
    while stack:
        node = stack.pop()
        if node == goal:
            return True
        for child in edges.get(node, ()):
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return False


def allowed(site: Site, edges: Mapping[str, set[str]] | None = None) -> bool:
    """A deferred import in one of the two allowed places, or a TYPE_CHECKING block whose real import
    would close a circle in `edges` (the run-time import graph; None: no circle is known)."""
    if site.kind == "type-checking":
        here = _module_of(site.path)
        return edges is not None and any(_reaches(edges, m, here) for m in site.modules)
    if all((site.path, m.split(".")[0]) in HEAVY for m in site.modules):
        return True
    if site.path in DISPATCH:
        return all(m.split(".")[0] == "adapters" for m in site.modules)
    for folder, sdk in SDK_OF.items():
        if site.path.startswith(folder):
            own = folder.rstrip("/").replace("/", ".")
            connect = site.path == f"{folder}connect.py"
            return all(m.split(".")[0] == sdk or (connect and m.startswith(f"{own}.")) for m in site.modules)
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="list the allowed sites too")
    args = parser.parse_args()
    found = sites()
    edges = running_graph()
    outside = [s for s in found if not allowed(s, edges)]
    for site in found if args.all else outside:
        print(site)
    functions = sum(s.kind == "function" for s in found)
    blocks = sum(s.kind == "type-checking" for s in found)
    print(
        f"{functions} imports inside functions ({functions - sum(s.kind == 'function' for s in outside)} "
        f"allowed), {blocks} TYPE_CHECKING blocks; {len(outside)} outside the allowed places"
    )
    return 1 if outside else 0


if __name__ == "__main__":
    sys.exit(main())
