"""Child processes for the tests whose subject is a process boundary (kill -9, Ctrl-C, SIGTERM, a lock
held by another process), started in milliseconds instead of seconds.

A fresh `python -m adapters.cli` spends 3-4 s of CPU importing the SDK before it does anything; a
dozen such children were a minute of the suite. Here one server process imports the SDK and the run
paths once, and every child is a fork of it: a real process of its own (its own pid, signals, file
locks and exit status, stdout and stderr in files), which then runs the module as `python -m MODULE
ARGS...` would, with the given environment and working directory, and exits as the interpreter does.

`start(module, args, env=..., cwd=...)` returns a `Child`, with the parts of `subprocess.Popen` the
tests use: `pid`, `returncode`, `poll()`, `wait(timeout)`, `send_signal(sig)`, `kill()`,
`communicate(timeout)` (the text of stdout and stderr) and `stderr.read()`.

The server runs as `python -m tests.children PRELOAD...`: single-threaded, so a fork of it is safe; it
forks a supervisor per child, which forks the child, tells the test its pid, waits for it and tells
its exit status. It ends when the test process that started it closes its stdin.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import runpy
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]

#: What the children import anyway: the SDK (most of a start-up) and the run paths. Not the module a
#: child runs: `runpy` warns on stderr when it is already imported.
PRELOAD = (
    "anthropic",
    "adapters.run.job",
    "adapters.run.batch",
    "adapters.providers.anthropic.batch_api",
    "adapters.run.sync",
    "adapters.checkpoint.store",
    "tests.batch.fakes",
    "openai",
    "adapters.providers.openai.batch_port",
)


# -- the test's side ---------------------------------------------------------------------------------


def readable(source: Any, timeout: float | None) -> bool:
    """Whether `source` (a socket, a file descriptor) can be read within `timeout` seconds (None: at
    all): poll(2), not select(2), which fails with "filedescriptor out of range" once a process holds
    more than 1,024 descriptors (FD_SETSIZE), as a long test session's worker may."""
    poller = select.poll()
    poller.register(source, select.POLLIN)
    return bool(poller.poll(None if timeout is None else max(0.0, timeout) * 1000))


class _Text:
    """What `Popen.stderr.read()` gives, read from the child's file."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def read(self) -> str:
        return self._path.read_text(errors="replace")


class Child:
    def __init__(self, conn: socket.socket, out: Path, err: Path, args: Sequence[str]) -> None:
        self._conn = conn
        self._buf = b""
        self.args = list(args)
        self.stdout = _Text(out)
        self.stderr = _Text(err)
        self.returncode: int | None = None
        self.pid = int(self._line(timeout=60))

    def _line(self, timeout: float | None) -> bytes:
        while b"\n" not in self._buf:
            if not readable(self._conn, timeout):
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            chunk = self._conn.recv(4096)
            if not chunk:
                raise RuntimeError("the fork server hung up")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = int(self._line(timeout))
            self._conn.close()
        return self.returncode

    def poll(self) -> int | None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.wait(timeout=0)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        self.wait(timeout)
        return self.stdout.read(), self.stderr.read()


class _Server:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="judgecore-children-"))
        self.path = self.dir / "server.sock"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.children", str(self.path), *PRELOAD],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"},
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
        )
        self.count = 0

    def connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        for _ in range(3000):  # the server is ready once it listens: at most a minute on a busy machine
            try:
                sock.connect(str(self.path))
                return sock
            except (FileNotFoundError, ConnectionRefusedError):
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the fork server exited with {self.proc.returncode}") from None
                select.select([], [], [], 0.02)
        raise RuntimeError("the fork server did not start")

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


_server: _Server | None = None


def start(
    module: str, args: Sequence[str], *, env: Mapping[str, str], cwd: Path = ROOT, sigint: bool = True
) -> Child:
    """`python -m MODULE ARGS` as a fork of the preloaded server. `sigint=True` gives the child Python's
    own SIGINT handler, as a terminal's foreground job has it (a shell without job control starts a
    background `pytest ... &` with SIGINT ignored, and a child would inherit that)."""
    global _server
    if _server is None:
        _server = _Server()
        atexit.register(_server.close)
    _server.count += 1
    out = _server.dir / f"{_server.count}.out"
    err = _server.dir / f"{_server.count}.err"
    conn = _server.connect()
    request = {
        "module": module,
        "args": list(args),
        "env": dict(env),
        "cwd": str(cwd),
        "out": str(out),
        "err": str(err),
        "sigint": sigint,
    }
    conn.sendall(orjson.dumps(request) + b"\n")
    return Child(conn, out, err, ["python", "-m", module, *args])


# -- the server's side -------------------------------------------------------------------------------


def _read_request(conn: socket.socket) -> dict:
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        buf += chunk
    return orjson.loads(buf)


def _serve(path: str) -> tuple[dict, socket.socket] | None:
    """Fork a supervisor per request; returns only in a child about to run (with its request)."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the supervisors are reaped by the kernel
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    while True:
        ready, _, _ = select.select([listener, sys.stdin], [], [])
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1):
            listener.close()
            return None  # the test process has ended
        if listener not in ready:
            continue
        conn, _ = listener.accept()
        if os.fork() == 0:  # the supervisor
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            request = _read_request(conn)
            pid = os.fork()
            if pid == 0:  # the child
                return request, conn
            conn.sendall(f"{pid}\n".encode())
            _, status = os.waitpid(pid, 0)
            with contextlib.suppress(OSError):
                conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
            os._exit(0)
        conn.close()


def _become(request: dict, conn: socket.socket) -> None:
    """Turn this fork into `python -m MODULE ARGS` with the request's environment and streams."""
    import random

    conn.close()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler if request["sigint"] else signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    for fd, name in ((1, "out"), (2, "err")):
        f = os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(f, fd)
        os.close(f)
    os.close(null)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    random.seed()  # not the server's sequence, the same in every child
    sys.argv = ["-m", *request["args"]]


def main() -> None:
    path, *preload = sys.argv[1:]
    for name in preload:
        importlib.import_module(name)
    forked = _serve(path)
    if forked is None:
        return
    request, conn = forked
    _become(request, conn)
    sys.modules.pop(request["module"], None)  # as in a fresh `python -m`: run as __main__ only
    runpy.run_module(request["module"], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
