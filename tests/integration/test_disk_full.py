"""A disk that cannot take a run's writes: one line naming what could not be written, exit 1, and
nothing harvested lost (the rerun, once there is room, finishes without a second create)."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

import orjson
import pytest

from adapters.checkpoint.store.outcomes import OutcomeWriter
from adapters.simulator.scenario import Scenario
from adapters.usage import disk_fault
from tests.integration.conftest import write_items

pytestmark = pytest.mark.integration


def test_a_checkpoint_whose_disk_fills_at_the_harvest_says_so_and_the_rerun_finishes(
    served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The harvest's first commit meets a full database (SQLite's own SQLITE_FULL, made by capping
    the file at its size): the run used to end in a traceback. It now prints one line naming the
    state dir, exits 1, and the rerun harvests the same batch: every item succeeded, one create."""
    srv = served(Scenario(seed=5, batch_seconds=0.2))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"d{i}", "prompt": f"grade {i}"} for i in range(40)])
    state, out = tmp_path / "s", tmp_path / "out.jsonl"
    flush = OutcomeWriter.flush

    def full_disk(self: OutcomeWriter) -> None:
        (pages,) = self._conn.execute("PRAGMA page_count").fetchone()
        self._conn.execute(f"PRAGMA max_page_count={pages}")
        flush(self)

    monkeypatch.setattr(OutcomeWriter, "flush", full_disk)
    args = ["run", str(items), "--state", str(state), "--out", str(out), "--force-batch"]
    args += ["--poll-interval", "0.05"]
    res = srv.cli(args)
    assert 1 == res.returncode, res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: cannot write the checkpoint in {state}: database or disk is full"), last
    assert "rerun the same command" in last
    assert "Traceback" not in res.stderr
    assert not out.exists()

    monkeypatch.setattr(OutcomeWriter, "flush", flush)
    again = srv.cli(args)
    assert 0 == again.returncode, again.stderr
    lines = [orjson.loads(ln) for ln in out.read_bytes().splitlines()]
    assert ["succeeded"] * 40 == [ln["status"] for ln in lines]
    assert 1 == len(srv.creates())


def test_a_full_disk_under_the_output_names_the_output_file(tmp_path: Path):
    """The output's temp file is written under `--out`'s name: a write that fails names `--out`."""
    from adapters.files.writers import write_output_atomic

    out = tmp_path / "out.jsonl"

    def lines():
        yield b"{}\n"
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError) as caught:
        write_output_atomic(out, lines())
    assert [] == list(tmp_path.iterdir())  # no temp file left behind
    assert (
        f"cannot write {out}: No space left on device; nothing harvested is lost: make room there and rerun "
        "the same command" == disk_fault(caught.value, tmp_path / "s")
    )
    assert disk_fault(sqlite3.IntegrityError("UNIQUE constraint failed"), "s") is None
    assert disk_fault(OSError(errno.ENOENT, "No such file or directory", "x"), "s") is None
