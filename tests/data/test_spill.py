"""A dry run's id hashes kept on disk (`adapters.files.spill`): in a file with no name, read back
bucket by bucket as kept, and nothing left behind in the temporary directory."""

from __future__ import annotations

import os
from array import array

import pytest

from adapters.files.spill import HashesOnDisk, unnamed_file


@pytest.mark.parametrize("o_tmpfile", [True, False])
def test_hashes_kept_on_disk_read_back_by_bucket_and_leave_no_file(tmp_path, monkeypatch, o_tmpfile):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    if not o_tmpfile:  # a system without O_TMPFILE: a file made and unlinked at once
        monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    with HashesOnDisk() as disk:
        assert disk.buckets() == []
        disk.keep([[array("d", [1.5, -2.0])], [], [array("d", [3.0])]])
        assert list(tmp_path.iterdir()) == []
        disk.keep([[array("d", [4.0])], [array("d", [5.0, 6.0])], []])
        read = [[list(part) for part in bucket] for bucket in disk.buckets()]
        assert read == [[[1.5, -2.0], [4.0]], [[5.0, 6.0]], [[3.0]]]
    assert list(tmp_path.iterdir()) == []
    f = unnamed_file()
    f.write(b"abc")
    f.seek(0)
    assert f.read() == b"abc" and list(tmp_path.iterdir()) == []
    f.close()
