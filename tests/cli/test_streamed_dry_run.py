"""`judgecore run --dry-run` on a fresh state dir plans the file as it reads it, keeping none of its
items (`adapters.run.streamed`): what it prints, and what it says of a bad file (its exit status,
its error naming the file and the line), is what the plan of the items held prints and says."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import adapters.cli.run as cli_run
from adapters.cli import main
from adapters.run import streamed
from judgecore.job import seen as seen_module

RUBRIC = "Grade strictly: is the answer correct and complete? Score 1-5.\n" * 40


def _rows(n: int) -> list[dict]:
    out: list[dict] = []
    for i in range(n):
        r: dict = {"id": f"q{i:04d}" if i % 9 else f"odd id {i}"}
        if i % 3:
            r["prompt"] = f"Question {i}: " + ("why is the sky blue? " if i % 4 else "pourquoi? é ") * (
                1 + i % 11
            )
        else:
            r["messages"] = [
                {"role": "user", "content": f"Question {i}"},
                {"role": "assistant", "content": "Rayleigh. " * (1 + i % 5)},
                {"role": "user", "content": [{"type": "text", "text": "Grade the answer above."}]},
            ]
        if i % 5 == 0:
            r["metadata"] = {"n": i, "tags": ["a", "b"]}
        if i % 13 == 0:
            r["max_tokens"] = 50 + i
        out.append(r)
    return out


def _write(path: Path, lines: list[dict | str]) -> Path:
    path.write_bytes(b"".join((x.encode() if isinstance(x, str) else orjson.dumps(x)) + b"\n" for x in lines))
    return path


def _both(monkeypatch, capsys, argv: list[str]) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """The CLI's exit status, stdout and stderr, streamed and then with the items held."""
    calls: list[Path] = []
    real = streamed.streamed_dry_run

    def spy(path, **kw):
        calls.append(path)
        return real(path, **kw)

    monkeypatch.setattr(cli_run, "streamed_dry_run", spy)
    code = main(argv)
    flowing = (code, *capsys.readouterr())
    assert len(calls) == 1, "the dry run of a fresh state dir is planned as the file is read"
    monkeypatch.setattr(cli_run, "streams", lambda *a, **k: False)
    code = main(argv)
    held = (code, *capsys.readouterr())
    return flowing, held


@pytest.mark.parametrize(
    "extra",
    [
        [],
        ["--json"],
        ["--json", "--max-batch-requests", "17", "--max-batch-bytes", "9000"],
        ["--force-sync", "--json"],
        ["--force-batch", "--budget", "0.02", "--json"],
        ["--sync-threshold", "50", "--model", "claude-haiku-4-5", "--max-tokens", "300"],
        ["--thinking", "2048", "--max-tokens", "4096", "--json"],
    ],
)
def test_the_plan_read_as_it_goes_is_the_plan_of_the_items_held(tmp_path, monkeypatch, capsys, extra):
    items = _write(tmp_path / "in.jsonl", [*_rows(40), "", *_rows(120)[41:]])
    (tmp_path / "r.txt").write_text(RUBRIC)
    argv = ["run", str(items), "--state", str(tmp_path / "s"), "--rubric", str(tmp_path / "r.txt")]
    flowing, held = _both(monkeypatch, capsys, [*argv, "--dry-run", *extra])
    assert flowing == held
    if "--thinking" in extra:  # item 'odd id 0' asks max_tokens 50, under the thinking budget
        assert flowing[0] == 2 and "in.jsonl:1: item 'odd id 0': " in flowing[2], flowing[2]
    else:
        assert flowing[0] == 0 and "119" in flowing[1].replace(",", "")
    assert not (tmp_path / "s").exists()


def _bad(tmp_path: Path, rows: list[dict | str]) -> list[str]:
    items = _write(tmp_path / "in.jsonl", rows)
    return ["run", str(items), "--state", str(tmp_path / "s"), "--dry-run"]


@pytest.mark.parametrize(
    ("rows", "said"),
    [
        # a repeated id: the file and both lines (the file read again for the first one's)
        (
            [*_rows(30), "", {"id": "q0007", "prompt": "again"}, *_rows(50)[31:]],
            "in.jsonl:32: duplicate id 'q0007'; first seen on line 8",
        ),
        # a bad line after a repeat: the bad line first, as a parse of the whole file finds it
        (
            [{"id": "a", "prompt": "x"}, {"id": "a", "prompt": "y"}, *_rows(20), "{not json"],
            "in.jsonl:23: not valid JSON",
        ),
        # an item's max_tokens over the model's limit: its line
        (
            [*_rows(10), {"id": "big", "prompt": "x", "max_tokens": 10**6}, {"id": "z", "prompt": "x"}],
            "in.jsonl:11: item 'big': max_tokens 1,000,000 is above",
        ),
        # blank lines only
        (["", "  "], "in.jsonl: the input has no items"),
    ],
)
def test_a_bad_file_is_told_as_the_items_held_tell_it(tmp_path, monkeypatch, capsys, rows, said):
    flowing, held = _both(monkeypatch, capsys, _bad(tmp_path, rows))
    assert flowing == held
    assert flowing[0] == 2 and said in flowing[2]


def test_a_request_too_large_for_any_sub_batch_is_named_by_its_line(tmp_path, monkeypatch, capsys):
    rows: list[dict | str] = [{"id": "s1", "prompt": "x"}, {"id": "h1", "prompt": "y" * 5000}]
    rows += [{"id": "h2", "prompt": "y" * 5000}, {"id": "k", "prompt": "x", "max_tokens": 5}]
    argv = [*_bad(tmp_path, rows), "--force-batch", "--max-batch-bytes", "2000"]
    code = main(argv)
    flowing = (code, *capsys.readouterr())
    # what the run says of it, before anything is sent (its custom_id covers its content)
    code = main([*(a for a in argv if a != "--dry-run")])
    ran = (code, *capsys.readouterr())
    assert flowing[0] == ran[0] == 2 and flowing[2] == ran[2]
    assert "in.jsonl:2: item 'h1' (custom_id h1-" in flowing[2]


def test_ids_hashes_kept_on_disk_past_a_bound_find_a_repeat_as_well(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(streamed, "HELD_HASHES", 64)  # the hashes leave memory every few chunks
    monkeypatch.setattr(seen_module, "_BATCH", 50)
    monkeypatch.setattr(seen_module, "_FIRST_BATCH", 50)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    rows: list[dict | str] = [{"id": f"k{i}", "prompt": "x"} for i in range(20_000)]
    items = _write(tmp_path / "in.jsonl", rows)
    argv = ["run", str(items), "--state", str(tmp_path / "s"), "--dry-run", "--json"]
    flowing, held = _both(monkeypatch, capsys, argv)
    assert flowing == held and flowing[0] == 0
    rows[19_990] = {"id": "k3", "prompt": "again"}
    _write(tmp_path / "in.jsonl", rows)
    monkeypatch.setattr(cli_run, "streams", streamed.streams)
    flowing, held = _both(monkeypatch, capsys, argv)
    assert flowing == held
    assert flowing[0] == 2 and "in.jsonl:19991: duplicate id 'k3'; first seen on line 4" in flowing[2]
    assert list((tmp_path / "tmp").iterdir()) == []
