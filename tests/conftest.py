"""Shared pytest configuration: hypothesis settings profiles.

Choose a profile with the environment variable `JUDGECORE_HYPOTHESIS_PROFILE`:

- `default` (when unset): quick, 60 examples per property; what `uv run pytest` runs.
- `thorough`: 2,000 examples per property, for a long run before a release:
  `JUDGECORE_HYPOTHESIS_PROFILE=thorough uv run pytest tests/core -q`.
- `ci` (when unset and `CI` is set, as `.ci/run` runs): the default's examples, derandomized, so a
  landing is judged on the same examples every time; new examples are explored by the default and
  thorough profiles, on developers' machines, where a failure is saved and replayed.

Neither profile has a per-example deadline: timings on a shared 2-core machine are too noisy for one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Under PYTHONDONTWRITEBYTECODE=1 (set in many containers, this project's CI machine among them)
# pytest rewrote and compiled every test module again at each run: 5 s of CPU of each run. In the
# project's virtual environment the bytecode is kept, as the `judgecore` command keeps its own
# (adapters.keep_bytecode); outside one the setting is left as the user made it.
if sys.dont_write_bytecode and sys.prefix != sys.base_prefix:
    sys.dont_write_bytecode = False

settings.register_profile(
    "default",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(
    os.environ.get("JUDGECORE_HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "default")
)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """How many workers `-n auto` (pyproject's addopts) starts: xdist's own count, one per core, for the
    suite or a folder of it; none for test files or tests named one by one, which run in this process
    (two workers' start-up, about 3 s of CPU each, would cost more than they save)."""
    if any(Path(str(arg).split("::")[0]).is_dir() for arg in config.args):
        return None
    return 0
