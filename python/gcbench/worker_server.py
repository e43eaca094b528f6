"""The entry point of a worker server (`running.warm_workers` holds the other end):

    python -m gcbench.worker_server FD [BACKEND [DATA_SEED [DATA_PATH]]]

FD is its end of a Unix socket pair. It imports what BACKEND's workers import, says `ready`,
and for each `run OUT_FILE` with three descriptors (the worker's standard streams) forks
`gcbench.child`, answering `pid N`, then `exit N CODE`. Without BACKEND, a base server forks
a backend's server for each `server BACKEND [...]` with two (its socket, its standard
error). It ends, with its children, when the runner closes its end. docs/internals.md,
"gcbench.running.warm_workers"; an entry point like `child`, above every layer.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import sys
import traceback
import warnings
from collections.abc import Callable

from . import child
from .measuring import worker
from .measuring.worker import PARENT_ENV, die_with_parent

MESSAGE_BYTES = 4096


class _Forked(BaseException):
    """Raised in a forked child to leave its server's loop: the child's work (`work`) runs at
    the module's top, once the loop's frames and all they held are gone (`_top`), so that a
    forked worker's heap holds nothing of the loop that forked it."""

    def __init__(self, work: Callable[[], int]):
        super().__init__()
        self.work = work


def _fork(sock: socket.socket, fds: list[int], others: list[int], body: Callable[[list[int]], int]) -> int:
    """Fork; here, close `fds` (the child's now) and return its pid. In the child: its own
    session and process group (the runner stops it with everything it started), none of
    the server's descriptors but `fds` (`others`: those of its other children), then
    `body(fds)` at the module's top (`_Forked`), never a return into the server's loop."""
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():  # 3.12+: "multi-threaded, use of fork()": BLAS's idle pool, which forks safely
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    try:
        os.setsid()
        sock.close()
        for fd in others:
            os.close(fd)
        os.environ[PARENT_ENV] = str(os.getppid())  # it dies with this server (a fork keeps no parent-death signal)
    except BaseException:  # whatever happens, never return into the server's loop
        with contextlib.suppress(Exception):
            traceback.print_exc()
        child.leave(1)
    raise _Forked(lambda: body(fds))


def _fork_worker(sock: socket.socket, out_file: str, fds: list[int], others: list[int]) -> int:
    """Fork a worker whose standard streams are `fds` and which writes `out_file`."""
    def body(streams: list[int]) -> int:
        for target, fd in zip((0, 1, 2), streams, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        worker.STARTED_AS = "forked"
        return child.main([out_file])  # child.settle() makes the pages it shares with this server its own

    return _fork(sock, fds, others, body)


def _fork_server(sock: socket.socket, args: str, fds: list[int], others: list[int]) -> int:
    """Fork a backend's server (`args`: BACKEND [DATA_SEED [DATA_PATH]]) whose socket and
    standard error are `fds`."""
    def body(ends: list[int]) -> int:
        theirs, err = ends
        os.dup2(err, 2)
        os.close(err)
        return main([str(theirs), *args.split(" ", 2)])  # a data path may hold spaces

    return _fork(sock, fds, others, body)


REQUESTS = {"run": (3, _fork_worker), "server": (2, _fork_server)}  # what a server forks, by its request


def serve(sock: socket.socket, request: str = "run") -> None:
    """Fork a worker (`request` "run") or a backend's server ("server") for each request on
    `sock` and report its end, until `sock` closes."""
    workers: dict[int, int | None] = {}  # pid -> its pidfd (None where the kernel has none)
    server = os.getpid()  # a child leaving the loop (`_Forked`) does not end its siblings
    try:
        while True:
            watched: list[socket.socket | int] = [sock, *(fd for fd in workers.values() if fd is not None)]
            timeout = None if all(fd is not None for fd in workers.values()) else 0.02
            ready, _, _ = select.select(watched, [], [], timeout)
            if sock in ready and not _answer(sock, request, workers):
                return
            _reap(sock, workers)
    # the runner is gone: it closed its end with our `exit` lines unread (a reset), or before an answer
    except (BrokenPipeError, ConnectionResetError):
        return
    finally:
        for pid in workers if os.getpid() == server else ():
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _answer(sock: socket.socket, request: str, workers: dict[int, int | None]) -> bool:
    """Read one message from the runner and fork what it asks for (a child leaves through
    `_Forked`); False where the runner is gone or done with us."""
    want, fork = REQUESTS[request]
    message, fds, _, _ = socket.recv_fds(sock, MESSAGE_BYTES, 3)
    command, _, args = message.decode().strip().partition(" ")
    if not message or command != request or len(fds) != want or not args:
        for fd in fds:
            os.close(fd)
        if message:
            sock.sendall(f"error expected '{request} ...' with {want} file descriptors\n".encode())
        return bool(message)
    pid = fork(sock, args, fds, [fd for fd in workers.values() if fd is not None])
    workers[pid] = _pidfd(pid)
    sock.sendall(f"pid {pid}\n".encode())
    return True


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux 5.3+: the loop polls instead
        return None


def _reap(sock: socket.socket, workers: dict[int, int | None]) -> None:
    for pid in list(workers):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            continue
        fd = workers.pop(pid)
        if fd is not None:
            os.close(fd)
        sock.sendall(f"exit {pid} {os.waitstatus_to_exitcode(status)}\n".encode())


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not 1 <= len(argv) <= 4 or not argv[0].isdigit() or (len(argv) > 2 and not argv[2].isdigit()):
        print("usage: python -m gcbench.worker_server FD [BACKEND [DATA_SEED [DATA_PATH]]]", file=sys.stderr)
        return 2
    sock = socket.socket(fileno=int(argv[0]))
    parent = os.environ.get(PARENT_ENV)
    die_with_parent(int(parent) if parent and parent.isdigit() else None)
    if len(argv) == 1:  # a base server: what every backend's server imports first is imported above
        sock.sendall(b"ready\n")
        serve(sock, "server")
        return 0
    worker.preload(argv[1])
    if len(argv) > 2:  # as a fresh worker does: its backend, then its data
        worker.preload_data(argv[3] if len(argv) > 3 else None, int(argv[2]))
    sock.sendall(b"ready\n")
    serve(sock)
    return 0


def _top() -> int:
    """`main`, and in a child it forks (a backend's server, a worker: `_Forked`), that
    child's work, once the frames of the loop that forked it have let go of what they held."""
    work: Callable[[], int] = main
    while True:
        try:
            return work()
        except _Forked as forked:
            work = forked.work


if __name__ == "__main__":
    code = 1
    try:
        code = _top()
    except BaseException:  # said on its standard error (the runner's log of it), then the same exit
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)  # no teardown of JAX's modules: nothing is left to do, and it took 0.3 s
