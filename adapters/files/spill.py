"""Hashes a dry run looks for repeated ids with, kept on disk past a few million (`HashesOnDisk`): a
plan of any size holds a bounded part of them (`judgecore.job.seen.SeenIds.take`), in an unnamed
temporary file that is gone when closed (or when the process ends), never in the state dir."""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any


def unnamed_file() -> IO[bytes]:
    """A new file of the temporary directory (`TMPDIR`, else `/tmp`) that has no name: gone when it is
    closed, or when the process ends however it ends. Made with `os` alone (`tempfile` loads `random`
    and `shutil`, which a dry run does not import): `O_TMPFILE` where the system has it, else a file
    made exclusively (0600) and unlinked at once."""
    where = os.environ.get("TMPDIR") or "/tmp"
    if hasattr(os, "O_TMPFILE"):
        try:
            return os.fdopen(os.open(where, os.O_TMPFILE | os.O_RDWR, 0o600), "w+b")
        except OSError:  # a file system without it
            pass
    while True:
        path = Path(where) / f"judgecore-ids-{os.getpid()}-{os.urandom(8).hex()}"
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        except FileExistsError:
            continue
        path.unlink()
        return os.fdopen(fd, "w+b")


class HashesOnDisk:
    """Each bucket's hashes (`SeenIds.take`'s), appended to one temporary file made when first kept,
    and read back a bucket at a time (`buckets`). Close it (a context manager) when done."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._runs: list[list[tuple[int, int]]] = []  # per bucket: (offset, how many) of each part

    def __enter__(self) -> HashesOnDisk:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def keep(self, buckets: Sequence[Sequence[array[float]]]) -> None:
        """Append each bucket's parts to the file (made now, the first time)."""
        if self._file is None:
            self._file = unnamed_file()
            self._runs = [[] for _ in buckets]
        f = self._file
        for runs, parts in zip(self._runs, buckets, strict=True):
            for part in parts:
                runs.append((f.tell(), len(part)))
                part.tofile(f)

    def buckets(self) -> list[Iterator[array[float]]]:
        """Each bucket's parts as read back (lazily, one bucket when it is iterated); empty when none
        was kept."""
        return [self._read(runs) for runs in self._runs]

    def _read(self, runs: list[tuple[int, int]]) -> Iterator[array[float]]:
        assert self._file is not None
        for offset, n in runs:
            self._file.seek(offset)
            part: array[float] = array("d")
            part.fromfile(self._file, n)
            yield part

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
