"""Warm workers: one server per backend (`gcbench.worker_server`, forked from a base server
per interpreter) imports what its workers import, once, and forks a worker for each repeat:
a process of its own, started from the heap a fresh interpreter has once it has imported the
backend, without a second of imports. `ServerPool` keeps a run's servers (started together;
closed after their backend's last repeat, or kept for an invocation's later calls); what a
server cannot do is done the old way, a fresh interpreter, said once. What differs from a
fresh interpreter, and what was measured: docs/internals.md, "gcbench.running.warm_workers".
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time

from ..core import files

START_TIMEOUT_S = 300.0  # imports on a cold disk, under load: a server slower than this is not worth waiting for
PID_TIMEOUT_S = 30.0


class ServerFailed(Exception):
    """A worker server could not start or fork; `str()` is why."""


class ForkedWorker:
    """A worker forked by a `WorkerServer`, with what `runner.run_worker` uses of a
    `subprocess.Popen`: `pid`, `stdin`, `stdout`, `returncode`, `poll()`, `wait()`, `kill()`."""

    def __init__(self, server: WorkerServer, pid: int, stdin, stdout):
        self.server = server
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.exit_code(self.pid, wait=0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(["gcbench.worker_server"], timeout or 0.0)
            self.returncode = self.server.exit_code(self.pid, wait=0.1 if left is None else min(left, 0.1))
        return code

    def release(self) -> None:
        """Leave the worker to end on its own (its result is written): its server reaps it,
        and its exit code is not kept."""
        self.server.released(self.pid)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, signal.SIGKILL)


class WorkerServer:
    """One `gcbench.worker_server` process for `backend`, started with `python` and `env`;
    `data` (a cell's data path and seed) is loaded there before the repeats are forked.
    With `base` (a base server: `backend` None), forked from it instead of started."""

    def __init__(self, backend: str | None, python: str, env: dict, data: tuple[str | None, int] | None = None,
                 base: WorkerServer | None = None):
        self.backend = backend
        args = [] if backend is None else [backend]
        if data is not None:
            args += [str(data[1]), *([str(data[0])] if data[0] is not None else [])]
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        fd, err_name = tempfile.mkstemp(prefix=files.owned_temp_prefix("stderr"), suffix=".txt")
        self._err_path = pathlib.Path(err_name)
        self._proc: subprocess.Popen | ForkedWorker
        try:
            if base is not None:
                self._proc = base._fork_server(args, theirs.fileno(), fd)
            else:
                with open(fd, "w", closefd=False) as err:
                    self._proc = subprocess.Popen([python, "-m", "gcbench.worker_server", str(theirs.fileno()), *args],
                                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                                  pass_fds=[theirs.fileno()], env=env, start_new_session=True)
        finally:
            os.close(fd)
            theirs.close()
        self._buffer = b""
        self._exits: dict[int, int] = {}
        self._released: set[int] = set()
        self._forked: list[ForkedWorker] = []  # the servers asked of this base whose pid has not come yet
        self._ready = False

    @property
    def name(self) -> str:
        return f"the worker server for {self.backend}" if self.backend else "the base worker server"

    def _fork_server(self, args: list[str], sock_fd: int, err_fd: int) -> ForkedWorker:
        """Ask this base server for a backend's server (`args`: BACKEND [DATA_SEED
        [DATA_PATH]]) whose socket and standard error are `sock_fd` and `err_fd`, without
        waiting: the base answers once its imports are done (`_known`)."""
        try:
            socket.send_fds(self._sock, [f"server {' '.join(args)}\n".encode()], [sock_fd, err_fd])
        except OSError as e:
            raise ServerFailed(f"{self.name} could not be reached: {e}") from None
        proc = ForkedWorker(self, 0, None, None)
        self._forked.append(proc)
        return proc

    def _known(self, proc: ForkedWorker) -> None:
        """Wait for this base's answers until `proc` (one of its servers) has its pid."""
        self.wait_ready()
        while proc in self._forked:
            line = self._answer(PID_TIMEOUT_S)
            asked = self._forked.pop(0)
            if line is None or not line.startswith("pid "):
                raise ServerFailed(f"{self.name} answered {line!r} when asked for a server")
            asked.pid = int(line.split()[1])

    def wait_ready(self) -> None:
        """Wait for the server's imports (once); raise `ServerFailed` where it does not get there."""
        if self._ready:
            return
        if isinstance(self._proc, ForkedWorker) and self._proc.pid == 0:
            self._proc.server._known(self._proc)
        line = self._answer(START_TIMEOUT_S)
        if line != "ready":
            raise ServerFailed(f"{self.name} said {line!r} instead of 'ready'"
                               if line is not None else f"{self.name} was not ready in {START_TIMEOUT_S:g} s")
        self._ready = True

    def _why_dead(self) -> str:
        with contextlib.suppress(subprocess.TimeoutExpired):
            if self._proc.pid:  # not a server its base never forked
                self._proc.wait(timeout=1.0)
        tail = self._err_path.read_text(errors="replace").strip().splitlines()[-3:] if self._err_path.is_file() else []
        code = self._proc.returncode
        return f"{self.name} ended (exit code {code})" + \
            (f": {' / '.join(tail)}" if tail else "")

    def _line(self, timeout: float) -> str | None:
        """The server's next line; None where none came within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self._sock], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return None
            try:
                chunk = self._sock.recv(4096)
            except ConnectionResetError:  # it died with what we sent it unread
                chunk = b""
            if not chunk:
                raise ServerFailed(self._why_dead())
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()

    def _answer(self, timeout: float) -> str | None:
        """The server's next line that is not a worker's end (those are kept for
        `exit_code`); None where none came within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while (line := self._line(max(0.0, deadline - time.monotonic()))) is not None and self._kept_exit(line):
            pass
        return line

    def _kept_exit(self, line: str) -> bool:
        word, _, rest = line.partition(" ")
        if word != "exit":
            return False
        pid, code = map(int, rest.split())
        if pid in self._released:
            self._released.discard(pid)
        else:
            self._exits[pid] = code
        return True

    def released(self, pid: int) -> None:
        """`pid` is left to end on its own: its exit code, when it comes, is dropped."""
        if self._exits.pop(pid, None) is None:
            self._released.add(pid)

    def spawn(self, out_file: pathlib.Path, stderr) -> ForkedWorker:
        """Fork a worker that writes its result to `out_file` and its standard error to the
        open file `stderr`; its standard input and output are pipes, as `run_worker` has them."""
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        forked = False
        try:
            socket.send_fds(self._sock, [f"run {out_file}\n".encode()], [stdin_r, stdout_w, stderr.fileno()])
            line = self._answer(PID_TIMEOUT_S)
            if line is None or not line.startswith("pid "):
                raise ServerFailed(f"{self.name} answered {line!r}")
            forked = True
        except OSError as e:
            raise ServerFailed(f"{self.name} could not be reached: {e}") from None
        finally:
            os.close(stdin_r)  # the worker's ends: the server has its own copies now
            os.close(stdout_w)
            if not forked:
                os.close(stdin_w)
                os.close(stdout_r)
        return ForkedWorker(self, int(line.split()[1]), open(stdin_w, "w"), open(stdout_r))

    def exit_code(self, pid: int, wait: float) -> int | None:
        """`pid`'s exit code (as Popen's `returncode`), once the server has said it ended;
        where the server itself is gone, the worker died with it (SIGKILL)."""
        deadline = time.monotonic() + wait
        while pid not in self._exits:
            try:
                line = self._line(max(0.0, deadline - time.monotonic()))
            except ServerFailed:
                return -signal.SIGKILL
            if line is None:
                return None
            self._kept_exit(line)
        return self._exits.pop(pid)

    def close(self) -> None:
        """End the server (it kills any worker still running) and wait for it."""
        self.hang_up()
        try:
            if self._proc.pid:  # not a server its base never forked
                self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
        self._err_path.unlink(missing_ok=True)

    def hang_up(self) -> None:
        """Close the runner's end: the server ends (and kills any worker still running)."""
        with contextlib.suppress(OSError):
            self._sock.close()


class ServerPool:
    """The worker servers of one run: one per (backend, interpreter), started at its first
    repeat, closed after its last (`done`). A server that fails is not tried again in this
    run: its backend's repeats start fresh interpreters, and `log` says so once."""

    def __init__(self, log=print, enabled: bool = True, keep: bool = False, meanwhile=None):
        self.log = log
        self.enabled = enabled
        self.keep = keep  # an invocation's pool: its servers stay until it closes them, for its later calls
        # what the invoking process does once while its servers import (`gcbench run`: the
        # verdict's scipy.stats, 0.4 s that nothing would overlap after the last repeat)
        self.meanwhile = meanwhile
        self._servers: dict[tuple, WorkerServer] = {}
        self._bases: dict[tuple, WorkerServer] = {}  # by interpreter and environment
        self._failed: set[tuple] = set()

    def start(self, backend: str, python: str, env: dict, data: tuple[str | None, int] | None = None) -> None:
        """Start `backend`'s server without waiting for it: the runner starts every server
        its plan needs at once, before the first repeat. Each is forked from one base server
        per interpreter, which imports what they all import first (gcbench's worker, 0.5 s)
        once; where there is none, it is started alone. `data`: the data path and seed its
        repeats load (`WorkerServer`)."""
        key = (backend, python)
        if self.enabled and key not in self._failed and key not in self._servers:
            try:
                self._servers[key] = WorkerServer(backend, python, env, data, base=self._base(python, env))
            except (OSError, ServerFailed) as e:
                self.failed(backend, python, str(e))

    def _base(self, python: str, env: dict) -> WorkerServer | None:
        key = (python, tuple(sorted(env.items())))
        if key not in self._bases:
            try:
                self._bases[key] = WorkerServer(None, python, env)
            except OSError:
                return None  # each server then starts alone, and says so if it cannot either
        return self._bases[key]

    def wait_all(self) -> None:
        """Wait until every server started is ready (or has failed): no server imports
        beside a measured repeat."""
        if self.meanwhile is not None and self._servers:
            meanwhile, self.meanwhile = self.meanwhile, None
            meanwhile()
        for backend, python in list(self._servers):
            self.server(backend, python, {})

    def server(self, backend: str, python: str, env: dict,
               data: tuple[str | None, int] | None = None) -> WorkerServer | None:
        """`backend`'s server, started here if it was not, once its imports are done; None
        where it cannot be used."""
        self.start(backend, python, env, data)
        server = self._servers.get((backend, python))
        if server is None:
            return None
        try:
            server.wait_ready()
        except ServerFailed as e:
            self.failed(backend, python, str(e))
            return None
        return server

    def spawn(self, backend: str, python: str, env: dict, out_file: pathlib.Path, stderr,
              data: tuple[str | None, int] | None = None) -> ForkedWorker | None:
        """A worker for `backend` forked by its server (started here at its first repeat,
        loading `data`); None where there is no server to fork it: the caller starts a fresh
        interpreter."""
        server = self.server(backend, python, env, data)
        if server is None:
            return None
        try:
            return server.spawn(out_file, stderr)
        except ServerFailed as e:
            self.failed(backend, python, str(e))
            return None

    def failed(self, backend: str, python: str, why: str) -> None:
        """The server for `backend` cannot be used: close it and say so (once)."""
        key = (backend, python)
        self._failed.add(key)
        if (server := self._servers.pop(key, None)) is not None:
            server.close()
        first_line = why.splitlines()[0] if why else "no reason given"
        self.log(f"{backend}: each repeat starts a fresh interpreter instead of a forked worker ({first_line})")

    def done(self, backend: str, python: str) -> None:
        """`backend` has no repeat left in this call: its server ends, unless the pool is kept."""
        if self.keep:
            return
        if (server := self._servers.pop((backend, python), None)) is not None:
            server.close()

    def close(self) -> None:
        """End every server, all at once: each ends as its end of the socket closes; the
        base servers last, which say when the others have ended."""
        for group in (self._servers, self._bases):
            for server in group.values():
                server.hang_up()
            for server in group.values():
                server.close()
            group.clear()

    def __enter__(self) -> ServerPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def forks(language: str) -> bool:
    """Whether a backend's workers may be forked from a server: not Julia's (juliacall starts
    the Julia runtime and its threads when the backend is imported)."""
    return language != "julia" and sys.platform.startswith("linux")
