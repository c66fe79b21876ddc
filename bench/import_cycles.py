"""The import circles of judgecore and adapters: the strongly connected components of the first-party import
graph, counting every import that runs wherever it stands (at the top or inside a function), since a
circle closed by a deferred import is still a circle a reader must follow. Imports under
`if TYPE_CHECKING:` are not counted: they never run (a class and the helpers that take it may name each
other in annotations).

    uv run python bench/import_cycles.py        # prints each circle, exits 1 if there is one

An edge goes from a module to the module it names (`from a.b import c` names `a.b.c` when that is a
module, else `a.b`). The packages a dotted name passes through are not counted: importing
`judgecore.run.batch._vocab` runs `judgecore/run/batch/__init__.py`, but no reader follows that.
tests/test_layers.py asserts there is no circle.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("judgecore", "adapters")


def modules(root: Path = ROOT, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    """Every module of `packages` under `root`, by dotted name."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _absolute(name: str, is_package: bool, level: int, module: str | None) -> str:
    if not level:
        return module or ""
    base = name.split(".") if is_package else name.split(".")[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, *([module] if module else [])])


def _typing_only(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _running(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of `tree` except those under `if TYPE_CHECKING:` (the `else:` branch runs)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if _typing_only(node):
            assert isinstance(node, ast.If)
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


def graph(found: Mapping[str, Path]) -> dict[str, set[str]]:
    """Module -> the first-party modules it imports (anywhere in its file)."""

    def known(dotted: str) -> str | None:
        while dotted and dotted not in found:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    edges: dict[str, set[str]] = {name: set() for name in found}
    for name, path in found.items():
        is_package = path.name == "__init__.py"
        for node in _running(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(name, is_package, node.level, node.module)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in found else base for a in node.names]
            for target in targets:
                if (hit := known(target)) is not None and hit != name:
                    edges[name].add(hit)
    return edges


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def main() -> int:
    found = modules()
    circles = cycles(graph(found))
    for circle in circles:
        print(f"{len(circle)} modules: " + " ".join(circle))
    print(f"{len(circles)} import circles among {len(found)} modules")
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main())
