"""How to start judgecore again the way this process was started: the resume command, and any
other judgecore command printed for the user to run."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

# The project this code runs from, when it runs from a source checkout (not an installed wheel).
_SOURCE_ROOT = Path(__file__).resolve().parents[2]
PROJECT: Path | None = _SOURCE_ROOT if (_SOURCE_ROOT / "pyproject.toml").is_file() else None


def launcher(
    *,
    argv0: str,
    executable: str,
    environ: Mapping[str, str],
    cwd: Path,
    project: Path | None,
    which: Callable[[str], str | None] = shutil.which,
) -> list[str]:
    """The words that start judgecore again the way this process was started, from `cwd`.

    `uv run` from a checkout gives `uv run [--project DIR] judgecore` (`--project`, not `--directory`,
    so relative paths in the arguments still mean what they meant); `python -m adapters.cli` gives the
    same interpreter; an installed `judgecore` gives `judgecore` when that is the one on PATH, else
    its full path.
    """
    start = Path(argv0)
    # `python -m adapters.cli` (adapters/cli/__main__.py; adapters/cli.py before it was a package) or
    # `python -m adapters` (adapters/__main__.py)
    as_module = (start.parent.name == "adapters" and start.name in ("cli.py", "__main__.py")) or (
        start.parent.parent.name == "adapters" and start.parent.name == "cli" and start.name == "__main__.py"
    )
    if "UV" in environ and project is not None:
        inside = cwd.resolve().is_relative_to(project.resolve())
        uv = ["uv", "run"] + ([] if inside else ["--project", str(project)])
        return uv + (["python", "-m", "adapters.cli"] if as_module else ["judgecore"])
    if as_module:
        on_path = which("python")
        python = (
            "python" if on_path and Path(on_path).absolute() == Path(executable).absolute() else executable
        )
        return [python, "-m", "adapters.cli"]
    if start.name == "judgecore":
        on_path = which("judgecore")
        same = on_path is not None and Path(on_path).absolute() == (cwd / start).absolute()
        return ["judgecore"] if same or start == Path("judgecore") else [str((cwd / start).absolute())]
    return ["judgecore"]  # called in-process (tests, another program): the console script's name


def command_line(argv: Sequence[str]) -> str:
    """`judgecore ARGV` as this process was started (see `launcher`), quoted for a POSIX shell: the
    resume command, or any other judgecore command to print, as it works where it is printed."""
    words = launcher(
        argv0=sys.argv[0], executable=sys.executable, environ=os.environ, cwd=Path.cwd(), project=PROJECT
    )
    return shlex.join([*words, *argv])
