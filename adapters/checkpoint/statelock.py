"""One run per state dir: an exclusive lock on `judgecore.lock`, held for a whole run (and a cancel).

Two processes writing one checkpoint would poll the same batch, harvest it twice and rewrite each
other's output. The lock is the kernel's (`flock`, which Linux maps onto POSIX locks over NFS), so a
process that dies, by kill -9 or a power cut of its node, holds nothing: the next run takes it over
with no stale-lock guessing. The file names its holder (host, pid, command, since when) for the one
line that refuses a second run; nothing in it is secret. It is created mode 0600, and no other code
of a process that may hold it opens it (closing any other descriptor of the file would drop a POSIX
lock on NFS): `running_holder` reads it for `status`, whose process never takes the lock.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import os
from pathlib import Path

import orjson

LOCK_NAME = "judgecore.lock"


def _host() -> str:
    """This machine's name, as `socket.gethostname()` gives it (the kernel's node name) without loading
    `socket` (13 M instructions, a tenth of what a fresh dry run adds to bc825e4's start-up)."""
    return os.uname().nodename


class StateLockedError(Exception):
    """Another process holds the state dir."""


class StateLock:
    """An exclusive lock on a state dir; `release()` (or process exit) gives it up."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def take(cls, state_dir: Path, command: str) -> StateLock:
        """Take the lock without waiting; `StateLockedError` naming the holder when it is held."""
        path = state_dir / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _holder(fd)
            os.close(fd)
            raise StateLockedError(
                f"--state {state_dir}: another judgecore {holder} is using this state dir; "
                "wait for it to finish (or stop it) and run again: two runs on one checkpoint would "
                "harvest the same batches twice"
            ) from None
        stamp = {
            "host": _host(),
            "pid": os.getpid(),
            "command": command,
            "since": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, orjson.dumps(stamp) + b"\n", 0)
        return cls(fd, path)

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None


def _holder(fd: int) -> str:
    """`run (pid 4242 on node17, since 2026-12-01T10:00:00+00:00)`, from the lock file's stamp."""
    try:
        stamp = orjson.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, orjson.JSONDecodeError):
        stamp = {}
    if not isinstance(stamp, dict) or "pid" not in stamp:
        return "process"
    if stamp["pid"] == os.getpid() and stamp.get("host") == _host():
        # two `judge()` calls of one program (threads, tasks): the pid alone reads as another program
        return f"{_described(stamp)}, a judge() call of this very process (another thread or task),"
    return _described(stamp)


def _described(stamp: dict[str, object]) -> str:
    """A lock stamp as the lines that name its holder say it: `run (pid 4242 on node17, since ...)`."""
    return (
        f"{stamp.get('command', 'run')} (pid {stamp['pid']} on {stamp.get('host', '?')}, "
        f"since {stamp.get('since', '?')})"
    )


def running_holder(state_dir: Path) -> str | None:
    """The run holding `state_dir`, told from its lock file's stamp without touching the lock (for
    `status`, which must never make a starting run find the lock taken): a stamp of this host whose
    process is alive and started before the stamp (not a reused pid), or one of another host (which
    cannot be checked from here). None for a released lock (its stamp is cleared), a dead process (a
    kill -9 leaves its stamp), or no lock file."""
    try:
        raw = (state_dir / LOCK_NAME).read_bytes()
        stamp = orjson.loads(raw) if raw.strip() else None
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(stamp, dict) or not isinstance(stamp.get("pid"), int):
        return None
    if stamp.get("host") == _host() and not _alive_since(stamp["pid"], stamp.get("since")):
        return None
    return _described(stamp)


def _alive_since(pid: int, since: object) -> bool:
    """Whether `pid` is a live process that started no later than `since` (the stamp's ISO time, to
    the second), so the one that wrote it: a pid reused by a later process is not. Where /proc cannot
    tell a start time, alive is all that is known."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, another user's
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        if fields[0] in ("Z", "X"):  # killed, not yet reaped by its parent
            return False
        ticks = int(fields[19])  # field 22 of stat, starttime: clock ticks after boot
        boot = next(
            int(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
        started = boot + ticks / os.sysconf("SC_CLK_TCK")
        stamped = datetime.datetime.fromisoformat(str(since)).timestamp()
    except (OSError, ValueError, IndexError, StopIteration):
        return True
    return started <= stamped + 1.0
