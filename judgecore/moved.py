"""Names a module held before it was split by idea, still importable from it.

`__getattr__ = moved(__name__, {name: new_module})` at a module's end answers an old import of a name
by loading the module it lives in now, on first use (the new module may import the old one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def moved(module: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `module` that finds each name of `homes` in the module named there."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        return getattr(import_module(home), name)

    return __getattr__
