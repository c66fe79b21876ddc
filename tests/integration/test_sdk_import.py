"""A run imports the SDK once, at its first API call, and without the collector's passes over it."""

from __future__ import annotations

import pytest

from adapters.simulator.scenario import Scenario
from tests.integration.conftest import python_c, write_items

pytestmark = pytest.mark.integration

# `adapters.cli.main` in a child whose collector is on (as in a program that calls it), counting the
# collection passes that start while the SDK's package is being imported.
_CHILD = r"""
import gc, sys
passes, walked = [], [0]

def counted(phase, info):
    sdk = sys.modules.get("anthropic")
    if phase != "start" or sdk is None:
        return
    if getattr(sdk.__spec__, "_initializing", False):
        passes.append(info["generation"])
    else:  # how many objects a pass after the import walks: the generations it collects
        walk = sum(len(gc.get_objects(generation=g)) for g in range(info["generation"] + 1))
        walked[0] = max(walked[0], walk)

gc.callbacks.append(counted)
from adapters.cli import main
code = main(sys.argv[1:])
print("anthropic" in sys.modules, len(passes), gc.isenabled(), walked[0])
sys.exit(code)
"""


def test_a_run_imports_the_sdk_with_no_collection_pass_over_its_models(served, tmp_path):
    """The SDK's import is most of a small job's CPU (its pydantic models: hundreds of thousands of
    objects, none of them garbage); a collection pass during it walks them all again (hundreds of
    passes, about 0.1 s), and so would the first passes after it (about 0.19 s). A run makes it
    with the collector paused, freezes what it made, and turns the collector on again after."""
    srv = served(Scenario(seed=1))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"q{i}", "prompt": f"answer {i}"} for i in range(3)])
    res = python_c(_CHILD, ["run", str(items), "--state", str(tmp_path / "s")], env=srv.env())
    assert 0 == res.returncode, res.stderr[-2000:]
    sdk, passes, enabled, walked = res.stdout.strip().splitlines()[-1].split()
    assert ("True", "0", "True") == (sdk, passes, enabled)
    # the SDK's objects (hundreds of thousands) are frozen with it: no later pass walks them
    assert int(walked) < 50_000, walked
