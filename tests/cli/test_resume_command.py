"""The printed resume command starts judgecore the way it was started, from where it was printed."""

from __future__ import annotations

from pathlib import Path

from adapters.cli.relaunch import launcher

PROJECT = Path("/home/u/judgecore")
VENV_PY = "/home/u/judgecore/.venv/bin/python"


def which(table: dict[str, str]):
    return table.get


def test_uv_run_from_inside_the_project_is_uv_run_judgecore():
    words = launcher(
        argv0="/home/u/judgecore/.venv/bin/judgecore",
        executable=VENV_PY,
        environ={"UV": "/usr/bin/uv"},
        cwd=PROJECT / "examples",
        project=PROJECT,
        which=which({}),
    )
    assert ["uv", "run", "judgecore"] == words


def test_uv_run_from_elsewhere_names_the_project_and_keeps_the_cwd():
    """`--project`, not `--directory`: relative paths in the arguments keep their meaning."""
    words = launcher(
        argv0="/home/u/judgecore/.venv/bin/judgecore",
        executable=VENV_PY,
        environ={"UV": "/usr/bin/uv"},
        cwd=Path("/data/evals"),
        project=PROJECT,
        which=which({}),
    )
    assert ["uv", "run", "--project", str(PROJECT), "judgecore"] == words


def test_uv_run_python_dash_m_is_resumed_the_same_way():
    words = launcher(
        argv0="/home/u/judgecore/adapters/cli.py",
        executable=VENV_PY,
        environ={"UV": "/usr/bin/uv"},
        cwd=Path("/data"),
        project=PROJECT,
        which=which({}),
    )
    assert ["uv", "run", "--project", str(PROJECT), "python", "-m", "adapters.cli"] == words


def test_python_dash_m_uses_python_when_it_is_the_same_interpreter_on_path():
    words = launcher(
        argv0="/home/u/judgecore/adapters/__main__.py",
        executable=VENV_PY,
        environ={},
        cwd=PROJECT,
        project=PROJECT,
        which=which({"python": VENV_PY}),
    )
    assert ["python", "-m", "adapters.cli"] == words


def test_python_dash_m_names_the_interpreter_when_python_on_path_is_another():
    words = launcher(
        argv0="/home/u/judgecore/adapters/cli.py",
        executable=VENV_PY,
        environ={},
        cwd=PROJECT,
        project=PROJECT,
        which=which({"python": "/usr/bin/python"}),
    )
    assert [VENV_PY, "-m", "adapters.cli"] == words


def test_an_installed_judgecore_on_path_is_judgecore():
    script = "/home/u/.local/bin/judgecore"
    words = launcher(
        argv0=script,
        executable="/home/u/.local/share/uv/tools/judgecore/bin/python",
        environ={},
        cwd=Path("/data"),
        project=None,
        which=which({"judgecore": script}),
    )
    assert ["judgecore"] == words


def test_a_judgecore_not_on_path_is_named_by_its_full_path():
    """The issue's case: a uv-only setup where `judgecore` is not on PATH."""
    words = launcher(
        argv0="/home/u/judgecore/.venv/bin/judgecore",
        executable=VENV_PY,
        environ={},
        cwd=Path("/data"),
        project=PROJECT,
        which=which({}),
    )
    assert ["/home/u/judgecore/.venv/bin/judgecore"] == words
