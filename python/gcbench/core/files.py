"""Writing files so that nothing is ever half there, and folders that belong to one run.

How it works, and why: docs/internals.md, `gcbench.core.files`.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import pathlib
import stat
import tempfile
from collections.abc import Callable
from typing import Any

import filelock

from .errors import UsageError

FILE_MODE = 0o644
LOCK_NAME = ".gcbench.lock"
DOCUMENT_LIMIT = 256 * 2**20  # the largest document gcbench reads (a 1,000,000-step result is ~60 MiB)


def describe_os_error(e: OSError) -> str:
    """`No space left on device`, `Permission denied`, ...: the reason without the noise."""
    return e.strerror or str(e)


def _finished_temp(path: pathlib.Path, data: bytes) -> str:
    """A temporary file beside `path` holding all of `data`, on disk, mode 0644."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        pathlib.Path(tmp).chmod(FILE_MODE)
    except BaseException:
        with contextlib.suppress(OSError):
            pathlib.Path(tmp).unlink()
        raise
    return tmp


def write_bytes(path: str | os.PathLike, data: bytes, *, follow_links: bool = True) -> pathlib.Path:
    """Write `data` to `path` atomically, mode 0644; a `UsageError` when it cannot be written.
    A symbolic link is written through: its target is replaced, the link stays a link
    (`follow_links=False`: the link itself is replaced by the file)."""
    path = pathlib.Path(path)
    if follow_links and path.is_symlink():
        path = pathlib.Path(os.path.realpath(path))
    tmp = None
    try:
        tmp = _finished_temp(path, data)
        pathlib.Path(tmp).replace(path)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {describe_os_error(e)}") from None
    finally:
        if tmp is not None and pathlib.Path(tmp).exists():
            pathlib.Path(tmp).unlink()
    return path


def write_new(path: str | os.PathLike, data: bytes) -> bool:
    """Write `data` to `path` only if no file is there, atomically and exclusively: the
    whole file appears at once (a hard link of a finished temporary file), and of two
    writers racing for one name exactly one wins. False when `path` exists already."""
    path = pathlib.Path(path)
    tmp = None
    try:
        tmp = _finished_temp(path, data)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    except OSError as e:
        raise UsageError(f"cannot write {path}: {describe_os_error(e)}") from None
    finally:
        if tmp is not None and pathlib.Path(tmp).exists():
            pathlib.Path(tmp).unlink()


def write_text(path: str | os.PathLike, text: str) -> pathlib.Path:
    # text from the command line may hold undecodable bytes (surrogates): shown escaped, never a crash
    data = text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="backslashreplace")
    return write_bytes(path, data.encode("utf-8", errors="backslashreplace"))


def sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, hex, read a MiB at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def json_bytes(doc, indent: int | None = 1) -> bytes:
    """`doc` as gcbench writes JSON (strict: no NaN or infinity). Integer numpy arrays among
    a document's top-level values (a measurement's per-step arrays) are written a block of
    steps at a time, never as one list of Python integers: about the file's size in memory,
    where the list took 20 times that (DESIGN.md)."""
    separators = (",", ":") if indent is None else None
    arrays = {k: v for k, v in doc.items() if _is_int_array(v)} if isinstance(doc, dict) else {}
    if not arrays:
        return json.dumps(doc, indent=indent, separators=separators, allow_nan=False).encode("utf-8")
    marks = {k: f"@@gcbench-array-{k}@@" for k in arrays}
    text = json.dumps({k: marks.get(k, v) for k, v in doc.items()}, indent=indent, separators=separators,
                      allow_nan=False)
    out, at = [], 0
    for k, mark in marks.items():
        i = text.index(json.dumps(mark), at)
        out.append(text[at:i].encode("utf-8"))
        out.append(_array_json(arrays[k]))
        at = i + len(json.dumps(mark))
    out.append(text[at:].encode("utf-8"))
    return b"".join(out)


def _is_int_array(value) -> bool:
    import numpy as np

    return isinstance(value, np.ndarray) and value.dtype.kind in "iu" and value.ndim in (1, 2)


def _array_json(arr, block: int = 65_536) -> bytes:
    """A 1-D or 2-D integer array as compact JSON, `block` rows at a time."""
    parts = [b"["]
    for start in range(0, len(arr), block):
        text = json.dumps(arr[start:start + block].tolist(), separators=(",", ":"))[1:-1]  # the C encoder
        parts.append((("," if start else "") + text).encode("ascii"))
    parts.append(b"]")
    return b"".join(parts)


def write_json(path: str | os.PathLike, doc, indent: int | None = 1) -> pathlib.Path:
    return write_bytes(path, json_bytes(doc, indent))


def read_text(path: str | os.PathLike, what: str = "file", limit: int = DOCUMENT_LIMIT) -> str:
    """A UTF-8 text file's content; a `UsageError` naming the file when it cannot be read,
    is not a regular file (a FIFO would block forever, a device never end) or is larger
    than `limit` bytes (a sparse or huge file is refused before it is read)."""
    path = pathlib.Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise UsageError(f"{path}: not a regular file, so not a {what}")
            if st.st_size > limit:
                raise UsageError(f"{path}: {st.st_size / 2**20:,.0f} MiB, over the {limit / 2**20:,.0f} MiB gcbench "
                                 f"reads of a {what}")
            data = f.read(limit + 1)
        if len(data) > limit:  # grew while read
            raise UsageError(f"{path}: over the {limit / 2**20:,.0f} MiB gcbench reads of a {what}")
        return data.decode("utf-8")
    except OSError as e:
        raise UsageError(f"cannot read {what} {path}: {describe_os_error(e)}") from None
    except UnicodeDecodeError as e:
        raise UsageError(
            f"{path}: not a UTF-8 text {what} (byte {e.start} is {e.object[e.start : e.start + 1]!r})"
        ) from None


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number gcbench writes")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object's pairs as a dict; a key given twice is refused (Python's json keeps the
    last silently, another reader may keep the first)."""
    doc = dict(pairs)
    if len(doc) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"the key {key!r} is given twice in one object")
            seen.add(key)
    return doc


# Whether this process is gcbench's own (the command line), whose collector `read_json` may
# pause: a large result's JSON makes hundreds of thousands of objects, and the collector ran
# 3,937 / 357 / 13 collections inside one json.loads of a 10^6-step result. In a user's
# process (`gcbench.load` beside their loop) the collector is theirs, and left alone.
PAUSE_COLLECTOR = [False]


def read_json(path: str | os.PathLike, what: str = "JSON file"):
    """A JSON document as gcbench writes it: strict (NaN and infinity are refused, one line)."""
    text = read_text(path, what)
    paused = PAUSE_COLLECTOR[0] and gc.isenabled()
    try:
        if paused:
            gc.disable()
        return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_no_duplicate_keys)
    except ValueError as e:
        if not isinstance(e, json.JSONDecodeError):
            raise UsageError(f"{path}: not a valid {what} ({e})") from None
        raise UsageError(f"{path}: not a valid {what} (invalid JSON: {e.msg} at line {e.lineno})") from None
    except RecursionError:
        raise UsageError(f"{path}: not a valid {what} (nested too deeply)") from None
    finally:
        if paused:
            gc.enable()


def check_header(doc, where: str, format_: str, what: str, newest: int | None = None,
                 versioned: bool = True) -> dict:
    """`doc`, read from `where`, when it is a gcbench document of `format_` (`what` names it
    for people) whose schema_version, where `newest` is given, this gcbench reads (a
    document of a kind older files wrote without one: `versioned` False, read as 0); a
    one-line error otherwise. The one check of a header every document gcbench reads has."""
    if not isinstance(doc, dict) or doc.get("format") != format_:
        raise UsageError(f"{where}: not a gcbench {what} (no \"format\": \"{format_}\")")
    if newest is not None:
        _check_version(doc, where, what, newest, versioned)
    return doc


def _check_version(doc: dict, where: str, what: str, newest: int, versioned: bool) -> None:
    """A document's schema_version: an integer from 1 (0 for a kind older files wrote
    without one) to the newest this gcbench reads."""
    version = doc.get("schema_version", None if versioned else 0)
    if not isinstance(version, int) or isinstance(version, bool):
        raise UsageError(f"{where}: gcbench {what} without an integer schema_version")
    if version < 1 and (versioned or "schema_version" in doc):
        raise UsageError(f"{where}: {what} schema_version {version} is none gcbench wrote (they begin at 1)")
    if version > newest:
        raise UsageError(f"{where}: {what} schema_version {version} is newer than this gcbench reads "
                         f"({newest}); upgrade gcbench to read it")


NAME_MAX, PATH_MAX = 255, 4096  # bytes: the longest name of one file, and of a whole path (Linux)


def check_path(path: str | os.PathLike, what: str) -> pathlib.Path:
    """`path`, where no part of it is longer than a file system takes; a one-line error
    otherwise (the system's own is a traceback from wherever the path is first used)."""
    path = pathlib.Path(path)
    longest = max((len(os.fsencode(part)) for part in path.parts), default=0)
    if longest > NAME_MAX:
        raise UsageError(f"{what} {str(path)[:60]}...: a name in it is {longest} bytes long, more than the "
                         f"{NAME_MAX} a file system takes")
    if len(os.fsencode(str(path.absolute()))) > PATH_MAX:
        raise UsageError(f"{what} {str(path)[:60]}...: longer than the {PATH_MAX} bytes a path may be")
    return path


def make_folder(path: str | os.PathLike, what: str = "output folder") -> pathlib.Path:
    """`path` as a folder that exists and can be written; a one-line error otherwise."""
    path = check_path(path, what)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{what} {path} exists and is not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create {what} {path}: {describe_os_error(e)}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path} cannot be written (permission denied)")
    return path


def process_alive(pid: int) -> bool:
    """Whether a process `pid` exists (someone else's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def owned_temp_prefix(kind: str) -> str:
    """`gcbench-KIND-PID-`: a prefix for temporary files and folders of this process, which
    `sweep_stale_temps` removes once the process is gone (even when it was killed with
    SIGKILL, when nothing of its own could clean up)."""
    return f"gcbench-{kind}-{os.getpid()}-"


def remove_own_temps() -> int:
    """Remove this process's own temporary files and folders (`owned_temp_prefix`, of every
    kind): what an interrupt left that landed between one's creation and the registration of
    its cleanup. For a process that is ending; return how many entries went."""
    import re

    pattern = re.compile(rf"^gcbench-[a-z][a-z-]*-{os.getpid()}-")
    return _remove_temps(lambda name: pattern.match(name) is not None)


def sweep_stale_temps(kind: str) -> int:
    """Remove what killed gcbench processes left in the temporary directory under
    `owned_temp_prefix(kind)`; return how many entries went."""
    import re

    pattern = re.compile(rf"^gcbench-{re.escape(kind)}-(\d+)-")

    def stale(name: str) -> bool:
        m = pattern.match(name)
        return m is not None and not process_alive(int(m.group(1)))

    return _remove_temps(stale)


def _remove_temps(chosen: Callable[[str], bool]) -> int:
    """Remove the entries of the temporary directory whose names `chosen` picks (a folder
    whole, a link or file itself); return how many went. What cannot be read or removed is
    left."""
    import shutil

    try:
        entries = list(pathlib.Path(tempfile.gettempdir()).iterdir())
    except OSError:
        return 0
    gone = 0
    for entry in entries:
        if not chosen(entry.name):
            continue
        with contextlib.suppress(OSError):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            gone += 1
    return gone


class FolderLock:
    """An exclusive, non-blocking lock on a folder (a `.gcbench.lock` file inside it).

    Use as a context manager; a folder already locked by another gcbench raises
    `UsageError` with `busy_message`. The lock goes with the process: a killed
    gcbench leaves no stale lock behind, and one that ends removes the lock file.
    """

    def __init__(self, folder: str | os.PathLike, busy_message: str):
        self.path = pathlib.Path(folder) / LOCK_NAME
        self.busy_message = busy_message
        self._lock: filelock.BaseFileLock | None = None

    def __enter__(self) -> FolderLock:
        lock = filelock.FileLock(self.path, timeout=0)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise UsageError(self.busy_message) from None
        except OSError as e:
            raise UsageError(f"cannot lock {self.path.parent}: {describe_os_error(e)}") from None
        self._lock = lock
        return self

    def __exit__(self, *exc) -> None:
        if self._lock is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()  # still held: a taker that opened it finds it gone and retries
            with contextlib.suppress(OSError):
                self._lock.release()
            self._lock = None


@contextlib.contextmanager
def updating(path: str | os.PathLike, timeout: float = 120.0):
    """Hold the update lock of one file (`.NAME.lock` beside it) while it is read, changed
    and written: writers in other threads or processes wait their turn, so none loses
    another's change (read-modify-write without it kept 4 of 5 concurrent saves). A lock
    not had in `timeout` seconds is a `UsageError` naming the lock file."""
    path = pathlib.Path(path)
    lock = filelock.FileLock(path.parent / f".{path.name}.lock", timeout=timeout)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise UsageError(f"{path} is being updated by another process (waited {timeout:.0f} s for "
                         f"{lock.lock_file})") from None
    except OSError as e:
        raise UsageError(f"cannot lock {path}: {describe_os_error(e)}") from None
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):
            pathlib.Path(lock.lock_file).unlink()  # still held: a taker that opened it finds it gone and retries
        lock.release()
