"""The one table of knobs (`judgecore.job.knobs`): its ranges hold the defaults, refuse what is outside
them, and are the ones the docs list; an unknown `JUDGECORE_*` name is told with the nearest."""

from __future__ import annotations

import difflib
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.run.settings import JobSettings
from adapters.run.sync_settings import SyncSettings
from judgecore.job.knobs import BY_ENV, BY_NAME, KNOBS, Knob, KnobError, env_values, unknown_env
from judgecore.job.near import closest
from judgecore.wire.models import MODELS, unknown_model_problem

RANGED = [k for k in KNOBS if k.kind != "text"]


@pytest.mark.parametrize("knob", RANGED, ids=[k.name for k in RANGED])
def test_every_default_is_in_its_knobs_range(knob: Knob) -> None:
    """A knob's default fits its own range (a range that refused the default would refuse every run)."""
    fields = {**attrs.fields_dict(JobSettings), **attrs.fields_dict(SyncSettings)}
    default = fields[knob.name].default if knob.name in fields else None
    if isinstance(default, int | float) and not isinstance(default, bool):
        assert knob.problem(default) is None


@given(knob=st.sampled_from(RANGED), data=st.data())
def test_a_value_in_range_parses_to_itself_and_one_outside_is_refused(
    knob: Knob, data: st.DataObject
) -> None:
    lo = knob.lo if knob.lo is not None else -1e12
    hi = knob.hi if knob.hi is not None else 1e12
    if knob.kind == "int":
        inside = data.draw(st.integers(int(lo) + (1 if knob.lo_open else 0), int(hi)))
        assert inside == knob.parse(f" {inside} ")
        with pytest.raises(KnobError, match="must be a whole number"):
            knob.parse(str(int(hi) + 1))
    else:
        inside = data.draw(st.floats(lo, hi, exclude_min=knob.lo_open))
        assert inside == knob.parse(repr(inside))
        with pytest.raises(KnobError, match="finite"):
            knob.parse("nan")
    if knob.lo is not None:
        with pytest.raises(KnobError, match=">"):
            knob.parse(str(int(knob.lo) - 1))


def test_the_environment_is_read_by_the_same_table_and_names_the_variable() -> None:
    assert {"concurrency": 8, "backoff_base": 0.5} == env_values(
        {"JUDGECORE_MAX_CONCURRENCY": "8", "JUDGECORE_BACKOFF_BASE": "0.5", "JUDGECORE_PACING_BURST": " "}
    )
    with pytest.raises(KnobError, match=r"^JUDGECORE_MAX_CONCURRENCY='0': must be .* \(as --concurrency\)$"):
        env_values({"JUDGECORE_MAX_CONCURRENCY": "0"})
    with pytest.raises(ValueError, match="JUDGECORE_PROGRESS_INTERVAL='-1'"):
        SyncSettings.from_env({"JUDGECORE_PROGRESS_INTERVAL": "-1"})
    with pytest.raises(ValueError, match="--concurrency must be a whole number >= 1"):
        SyncSettings(concurrency=0)  # was taken as "from the tier"


def test_an_unknown_variable_is_told_with_the_nearest_known_one() -> None:
    said = unknown_env(
        {
            "JUDGECORE_MAX_CONCURENCY": "4",
            "JUDGECORE_HYPOTHESIS_PROFILE": "ci",
            "JUDGECORE_FS_TYPE": "nfs",
            "HOME": "/",
        }
    )
    assert (
        "JUDGECORE_MAX_CONCURENCY is not a judgecore variable and is ignored; did you mean JUDGECORE_MAX_CONCURRENCY?",
    ) == said


def test_docs_knobs_lists_every_variable_with_its_range() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs/knobs.md").read_text(encoding="utf-8")
    for env, knob in BY_ENV.items():
        row = next((line for line in doc.splitlines() if line.startswith(f"| `{env}` |")), None)
        assert row is not None, env
        if knob.kind != "text":
            hi = f"{int(knob.hi):,}" if knob.hi is not None and float(knob.hi).is_integer() else str(knob.hi)
            assert hi in row, (env, row)
    for flag in ("--concurrency", "--max-attempts", "--max-batch-requests", "--sync-threshold"):
        hi = BY_NAME[flag.removeprefix("--").replace("-", "_")].hi
        assert hi is not None and f"to {int(hi):,}" in doc.split(f"| `{flag} N`", 1)[1].split("\n", 1)[0]


@settings(max_examples=300)
@given(
    word=st.text(alphabet="ABCDE_", max_size=12),
    known=st.lists(st.text(alphabet="ABCDE_", max_size=12), max_size=6),
    cutoff=st.sampled_from([0.0, 0.5, 0.6, 0.8, 1.0]),
)
def test_the_nearest_known_name_is_difflibs(word: str, known: list[str], cutoff: float) -> None:
    """The hint's nearest name is the one `difflib.get_close_matches` gives (its similarity and its
    ties), though the command no longer loads difflib to give it."""
    want = difflib.get_close_matches(word, known, n=1, cutoff=cutoff)
    assert (want[0] if want else None) == closest(word, tuple(known), cutoff=cutoff)


def test_the_nearest_of_real_names() -> None:
    known = (*BY_ENV, "JUDGECORE_HYPOTHESIS_PROFILE")
    for typo in ("JUDGECORE_MAX_CONCURENCY", "JUDGECORE_HYPOTESIS_PROFILE", "JUDGECORE_POLL", "JUDGECORE_X"):
        want = difflib.get_close_matches(typo, known, n=1, cutoff=0.8)
        assert (want[0] if want else None) == closest(typo, known, cutoff=0.8)
    assert closest("JUDGECORE_MAX_CONCURENCY", known, cutoff=0.8) == "JUDGECORE_MAX_CONCURRENCY"


def test_an_unknown_model_is_told_with_difflibs_nearest_id() -> None:
    """The model table's hint (`unknown_model_problem`) names the id difflib would (cutoff 0.75)."""
    for typo in ("claude-sonet-4-6", "claude-haiku", "zzz", "claude-hiaku-4-5", "claude-opus-4-7-x"):
        want = difflib.get_close_matches(typo, list(MODELS), n=1, cutoff=0.75)
        said = unknown_model_problem(typo)
        assert said is not None
        assert (f"did you mean {want[0]}?" in said) if want else ("did you mean" not in said), (typo, said)
    assert "did you mean claude-sonnet-4-6?" in (unknown_model_problem("claude-sonet-4-6") or "")
