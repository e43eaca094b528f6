"""Work a whole test session shares, done once however the session is spread over
pytest-xdist workers (pytest-xdist's documented recipe: the workers' base temporary folders
share a parent, and a lock there lets the first worker do it while the others wait)."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable

import filelock


def shared_folder(tmp_path_factory) -> pathlib.Path:
    """A folder every worker of this session sees."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once_per_session(tmp_path_factory, name: str, make: Callable[[pathlib.Path], None]) -> pathlib.Path:
    """`make(folder)` once per session, whichever worker asks first; the folder it filled. A
    `make` that raises leaves nothing done: the next worker to ask tries again (and fails the
    same way, in its own tests)."""
    root = shared_folder(tmp_path_factory)
    folder, done = root / name, root / f"{name}.done"
    with filelock.FileLock(str(root / f"{name}.lock")):
        if not done.is_file():
            make(folder)
            done.write_text(str(os.getpid()))
    return folder
