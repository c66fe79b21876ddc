"""`judgecore --version`: judgecore's version and the SDK's and Python's it runs with, read from the
installed packages' metadata (neither package is imported). The parser loads this module only when
`--version` is given: `importlib.metadata` is a tenth of a dry run's start."""

from __future__ import annotations

import importlib.metadata
import platform


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def version_line() -> str:
    """What `--version` prints."""
    return f"judgecore {_version('judgecore')} (anthropic {_version('anthropic')}, Python {platform.python_version()})"


__all__ = ["version_line"]
