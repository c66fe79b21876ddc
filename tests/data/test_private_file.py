"""`private_file`, the temp file the output writer and the path probes make: mode 0600, a fresh name."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from adapters.files.paths import private_file


def test_each_private_file_is_new_0600_and_named_absolutely(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    old = os.umask(0)
    try:
        made = [private_file(Path(), ".out.jsonl.", ".tmp") for _ in range(20)]
    finally:
        os.umask(old)
    for fd, _ in made:
        os.close(fd)
    names = [name for _, name in made]
    assert 20 == len(set(names))
    for name in names:
        path = Path(name)
        assert path.is_absolute() and tmp_path == path.parent
        assert path.name.startswith(".out.jsonl.") and path.name.endswith(".tmp")
        assert 0o600 == stat.S_IMODE(path.stat().st_mode)


def test_a_private_file_never_opens_an_existing_name(tmp_path, monkeypatch):
    taken = tmp_path / ".p-000000000000"
    taken.write_bytes(b"kept")
    draws = iter([bytes(6), bytes([1] * 6)])
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))
    fd, name = private_file(tmp_path, ".p-")
    os.close(fd)
    assert str(tmp_path / ".p-010101010101") == name
    assert b"kept" == taken.read_bytes()
